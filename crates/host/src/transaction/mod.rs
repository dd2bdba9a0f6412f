//! Transactions: reads at a snapshot, writes into a private write set,
//! tuple locks, certification, commit and abort (DESIGN.md §3).
//!
//! A write locks the tuple in the HLT first, then *certifies* that the
//! version the statement read is still the VID-map head:
//!
//! ```text
//!   lock (table, vid) ──► head == version read? ──yes──► write new version
//!                                │ no (a newer version committed meanwhile)
//!                   SNAPSHOT ────┴──── READ COMMITTED
//!             40001 serialization      re-read the newest committed version,
//!             failure                  re-evaluate WHERE on it, write or skip
//! ```
//!
//! New versions stay in the write set until commit (own reads see them);
//! an abort simply drops the set and releases the locks. The end of a
//! transaction — overflow logs, lock violation, commit, abort — is
//! [`end`].

mod end;
mod foreign_key;
mod insert;
mod key_order;
mod savepoint;
mod serializable;
mod unique;

pub use insert::{Inserted, OnConflict};
pub use savepoint::SavepointId;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::page::{PageBuf, PAGE_SIZE};
use ndpdb_formats::record::{encode_record, RecordHeader, RecordView, FLAG_TOMBSTONE};
use ndpdb_formats::{RecId, SqlState, TableId, TxId, Value, Vid};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::db::{prefetch_heads, visible_head_row_in, Database, TableState};
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::locks::{Acquired, LockKey, LockMode, LockWait};
use crate::ndp::statement_pipeline::PipelineStage;
use crate::ndp::{own_heads, Dependencies, NdpPart};
use crate::stats::EngineCounters;
use crate::txn::{Snapshot, Visible};

/// A session's last value per sequence name, with the sequence of that
/// name that gave it, shared with its transactions.
pub type SessionSequences = std::sync::Arc<
    parking_lot::Mutex<std::collections::HashMap<String, (crate::sequence::Incarnation, i64)>>,
>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// One snapshot for the whole transaction (REPEATABLE READ is the same).
    Snapshot,
    /// A fresh snapshot for every statement.
    ReadCommitted,
    /// Snapshot isolation plus SSI's rw-antidependency tracking
    /// (`crate::ssi`): every execution is serializable.
    Serializable,
}

impl Isolation {
    /// One snapshot for the whole transaction (REPEATABLE READ and
    /// SERIALIZABLE).
    pub fn one_snapshot(self) -> bool {
        self != Isolation::ReadCommitted
    }
}

/// Computes an UPDATE's new row from the row it applies to; `None` skips it.
pub type UpdateFn<'a> = dyn FnMut(&[Value]) -> Result<Option<Vec<Value>>> + 'a;

/// What a write did.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOutcome {
    /// The tuple was written (or locked); carries the row it was applied to.
    Done(Vec<Value>),
    /// The tuple vanished or no longer qualifies (READ COMMITTED re-check).
    Skipped,
}

/// A tuple this transaction wrote: the new version's record (its row is
/// decoded from there when the transaction reads it back).
#[derive(Clone)]
struct WriteEntry {
    pred: RecId,
    tombstone: bool,
    record: Vec<u8>,
}

impl WriteEntry {
    fn row(&self, ts: &TableState) -> Result<Vec<Value>> {
        Ok(RecordView::parse(&self.record)?.decode(&ts.types)?)
    }
}

/// The current state of a locked tuple.
enum Current {
    Own(Vec<Value>),
    Committed(RecId, Vec<Value>),
    Gone,
}

pub struct Transaction {
    db: Database,
    /// The session's last `nextval` per sequence (`currval`).
    session_sequences: Option<SessionSequences>,
    id: TxId,
    /// When it began, in µs since 1970-01-01 00:00:00 UTC
    /// (`current_timestamp`).
    started_micros: i64,
    isolation: Isolation,
    /// `READ ONLY` (SSI: a read-only transaction can appear to run first).
    read_only: bool,
    /// Registered with SSI (SERIALIZABLE, from its first statement).
    serializable: bool,
    snapshot: Snapshot,
    writes: FxHashMap<(TableId, Vid), WriteEntry>,
    order: Vec<(TableId, Vid)>,
    /// Tuple locks held in the HLT/SLT (released at commit or abort).
    locks: FxHashSet<LockKey>,
    /// Savepoints, oldest first, and what undoes the work since them.
    savepoints: Vec<savepoint::Mark>,
    undo: Vec<savepoint::Undo>,
    lock_log: Vec<LockKey>,
    statements: u64,
    finished: bool,
    /// Update-NDP statements waiting for commit.
    ndp_parts: Vec<NdpPart>,
    /// Heads those statements moved (own reads see the new versions).
    ndp_heads: FxHashMap<(TableId, Vid), RecId>,
    /// Tuples this transaction's jobs hold SLT locks on, and their buckets.
    ndp_locked: FxHashSet<LockKey>,
    ndp_buckets: FxHashSet<usize>,
    /// The SLT tag all of this transaction's update jobs lock with.
    ndp_tag: Option<ndpdb_slt::DeviceTag>,
    /// The rows the last in-storage SELECT … FOR UPDATE locked.
    /// NDP pipelines: what the last NDP statement left for the next.
    stage: Option<PipelineStage>,
    /// Basic NDP logging (Start-NDP / End-NDP records) for update jobs.
    ndp_logging: crate::ndp::NdpLogging,
    /// `SET ndp_lock_violation`: waiters may take this transaction's SLT
    /// locks while it moves its overflow logs.
    lock_violation: bool,
    /// Violable transactions whose versions this one wrote on.
    dependencies: Dependencies,
    /// Overflow logs of this transaction's update jobs, written while the
    /// jobs ran, by Start-NDP LSN; finished at commit.
    overflow_streams: Vec<(ndpdb_formats::Lsn, crate::ndp::overflow_log::OverflowWriter)>,
    /// Cancellation and statement timeout of the session running this.
    interrupt: Option<Interrupt>,
    /// Threads a host scan runs on.
    host_workers: usize,
    /// Lock and deadlock timeouts of the session running this.
    lock_wait: LockWait,
    /// FOREIGN KEY checks and actions on (off while TRUNCATE empties a
    /// closed set of tables).
    fk_checks: bool,
    /// The constraints that refer to a table, looked up once.
    fk_refs: FxHashMap<TableId, foreign_key::Referencing>,
}

impl Database {
    pub fn begin(&self, isolation: Isolation) -> Result<Transaction> {
        self.inner.check_ok()?;
        let id = self.inner.txm.begin();
        self.begin_as(id, isolation)
    }

    /// A transaction with the TxId `id` (begun by the caller).
    pub(crate) fn begin_as(&self, id: TxId, isolation: Isolation) -> Result<Transaction> {
        let snapshot = self.inner.txm.snapshot(id);
        let started_micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        Ok(Transaction {
            db: self.clone(),
            session_sequences: None,
            id,
            started_micros,
            isolation,
            read_only: false,
            serializable: false,
            snapshot,
            writes: FxHashMap::default(),
            order: Vec::new(),
            locks: FxHashSet::default(),
            savepoints: Vec::new(),
            undo: Vec::new(),
            lock_log: Vec::new(),
            statements: 0,
            finished: false,
            ndp_parts: Vec::new(),
            ndp_heads: FxHashMap::default(),
            ndp_locked: FxHashSet::default(),
            ndp_buckets: FxHashSet::default(),
            ndp_tag: None,
            stage: None,
            ndp_logging: crate::ndp::NdpLogging::Basic,
            lock_violation: false,
            dependencies: Default::default(),
            overflow_streams: Vec::new(),
            interrupt: None,
            host_workers: crate::config::DEFAULT_HOST_WORKERS,
            lock_wait: LockWait {
                timeout: self.inner.config.lock_timeout,
                deadlock_timeout: self.inner.config.deadlock_timeout,
            },
            fk_checks: true,
            fk_refs: FxHashMap::default(),
        })
    }
}

impl Transaction {
    /// When the transaction began, in µs since 1970-01-01 00:00:00 UTC:
    /// `current_timestamp` / `now()` for all its statements.
    pub fn started_micros(&self) -> i64 {
        self.started_micros
    }

    pub fn id(&self) -> TxId {
        self.id
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    pub fn has_writes(&self) -> bool {
        !self.writes.is_empty()
    }

    pub(crate) fn wrote_table(&self, table: TableId) -> bool {
        self.order.iter().any(|(t, _)| *t == table)
            || self
                .ndp_parts
                .iter()
                .any(|p| p.table == table && !p.result.delta.vids.is_empty())
    }

    /// `ndp_logging`: without NDP log records (`off`) an update job's
    /// changes are durable only once the checkpoint that follows its
    /// commit has merged them into the device's maps (the papers'
    /// no-logging baseline); `extended` moves each job's overflow log to
    /// the host before the commit record.
    pub fn set_ndp_logging(&mut self, logging: crate::ndp::NdpLogging) {
        self.ndp_logging = logging;
    }

    /// `ndp_lock_violation` (update NDP §5.4): with extended logging,
    /// waiting transactions may take this transaction's device locks while
    /// its overflow logs move, and commit only after it.
    pub fn set_lock_violation(&mut self, on: bool) {
        self.lock_violation = on;
    }

    pub(crate) fn ndp_logging(&self) -> crate::ndp::NdpLogging {
        self.ndp_logging
    }

    pub(crate) fn set_stage(&mut self, stage: PipelineStage) {
        self.stage = Some(stage);
    }

    pub(crate) fn stage(&self) -> Option<&PipelineStage> {
        self.stage.as_ref()
    }

    pub(crate) fn take_stage(&mut self) -> Option<PipelineStage> {
        self.stage.take()
    }

    /// Whether this transaction wrote `table` on the host (not through
    /// update NDP).
    pub(crate) fn host_wrote(&self, table: TableId) -> bool {
        self.order.iter().any(|(t, _)| *t == table)
    }

    /// Drops a failed update job's work: its pages, and the locks it took
    /// on buckets no earlier job of this transaction holds.
    pub(crate) fn discard_failed(&self, part: &NdpPart) {
        let inner = &self.db.inner;
        if part.result.stage != 0 {
            // Device memory only; the statement fails anyway.
            let _ = inner.release_stages(&[part.result.stage]);
        }
        inner.free_space(&part.result.delta.l2p);
        inner.free_space(&part.result.unused);
        let own: Vec<ndpdb_formats::Vid> = match inner.locks.slt() {
            Some(slt) => part
                .result
                .locked
                .iter()
                .filter(|v| !self.ndp_buckets.contains(&slt.index((part.table, **v))))
                .copied()
                .collect(),
            None => Vec::new(),
        };
        inner.release_job_locks(part.table, part.tag, &own);
    }

    /// The SLT buckets this transaction holds through its host tuple
    /// locks (its host-shared entries; sorted): an update or lock job of
    /// it must not queue there, behind its own transaction
    /// (`Invocation::host_buckets`). Buckets its jobs hold with its tag
    /// are not among them (its host locks there are HLT-only).
    pub(crate) fn host_lock_buckets(&self) -> Vec<u32> {
        let Some(slt) = self.db.inner.locks.slt() else {
            return Vec::new();
        };
        let mut buckets: Vec<u32> = self
            .locks
            .iter()
            .map(|k| slt.index(*k))
            .filter(|b| !self.ndp_buckets.contains(b))
            .map(|b| b as u32)
            .collect();
        buckets.sort_unstable();
        buckets.dedup();
        buckets
    }

    /// Locks the tuples an update or lock job of this transaction left to
    /// the host (`ModifyResult::host_locks`: they share buckets with its
    /// host locks), as a host statement would — waiting for a member of
    /// its own host group that holds one of them.
    pub(crate) fn lock_tuples(&mut self, table: TableId, vids: &[Vid]) -> Result<()> {
        for vid in vids {
            self.lock((table, *vid))?;
        }
        Ok(())
    }

    /// This transaction's SLT tag (taken at its first update-NDP statement).
    pub(crate) fn ndp_tag(&mut self) -> Result<ndpdb_slt::DeviceTag> {
        self.check_device_work()?;
        if let Some(t) = self.ndp_tag {
            return Ok(t);
        }
        let t = self.db.inner.ndp_tags.lock().alloc_tag().ok_or_else(|| {
            Error::new(
                SqlState::INSUFFICIENT_RESOURCES,
                "too many concurrent transactions with update-NDP statements",
            )
        })?;
        self.db.inner.locks.set_device_owner(t, Some(self.id));
        self.ndp_tag = Some(t);
        Ok(t)
    }

    /// Fails (40001) once the device this transaction's update jobs ran
    /// on has restarted: their versions and tuple locks are gone.
    pub(crate) fn check_device_work(&self) -> Result<()> {
        match self.ndp_tag {
            Some(t) if self.db.inner.locks.tag_is_stale(t) => Err(Error::new(
                SqlState::SERIALIZATION_FAILURE,
                "could not serialize access due to a device restart",
            )
            .with_detail(
                "The device restarted after this transaction's update NDP ran on it: its new versions and tuple locks are lost. The transaction might succeed if retried.",
            )),
            _ => Ok(()),
        }
    }

    /// Records a successful update-NDP statement.
    pub(crate) fn add_ndp_part(&mut self, part: NdpPart) {
        self.ndp_heads.extend(own_heads(&part));
        self.ndp_locked
            .extend(part.result.locked.iter().map(|v| (part.table, *v)));
        if let Some(slt) = self.db.inner.locks.slt() {
            self.ndp_buckets.extend(
                part.result
                    .locked
                    .iter()
                    .map(|v| slt.index((part.table, *v))),
            );
        }
        self.ndp_parts.push(part);
    }

    /// The chain head this transaction reads for a tuple: its own
    /// update-NDP version if it has one, else the shared VID map's.
    pub(crate) fn head_of(&self, ts: &TableState, vid: Vid) -> RecId {
        match self.ndp_heads.get(&(ts.id, vid)) {
            Some(r) => *r,
            None => ts.vids.head(vid),
        }
    }

    /// Called at the start of every statement. As in PostgreSQL, the
    /// snapshot is taken by the first statement (not at BEGIN); READ
    /// COMMITTED takes a new one for every statement.
    pub fn begin_statement(&mut self) {
        if self.statements == 0 && self.isolation == Isolation::Serializable {
            self.ssi_register();
        } else if self.statements == 0 || self.isolation == Isolation::ReadCommitted {
            self.snapshot = self.db.inner.txm.snapshot(self.id);
        }
        self.statements += 1;
    }

    /// Statements run so far.
    pub fn statements(&self) -> u64 {
        self.statements
    }

    /// Sets the isolation level; PostgreSQL allows this only before the
    /// first statement, which the caller enforces.
    pub fn set_isolation(&mut self, isolation: Isolation) {
        self.isolation = isolation;
    }

    /// `READ ONLY`: set before the first statement, like the isolation.
    pub fn set_read_only(&mut self, read_only: bool) {
        self.read_only = read_only;
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    fn decode(ts: &TableState, bytes: &[u8]) -> Result<(RecordHeader, Vec<Value>)> {
        let view = RecordView::parse(bytes)?;
        Ok((view.header, view.decode(&ts.types)?))
    }

    /// The visible version of a tuple: `(version RecId, row)`. Rows written
    /// by this transaction come back with `RecId::NULL`.
    pub fn get(&self, ts: &TableState, vid: Vid) -> Result<Option<(RecId, Vec<Value>)>> {
        if let Some(e) = self.writes.get(&(ts.id, vid)) {
            return Ok(match e.tombstone {
                true => None,
                false => Some((RecId::NULL, e.row(ts)?)),
            });
        }
        let head = self.head_of(ts, vid);
        if head.is_null() {
            return Ok(None);
        }
        if let Some(row) = self.db.inner.read_visible_head_row(head, &self.snapshot)? {
            if row.as_ref().is_some_and(|r| r.len() != ts.types.len()) {
                return Err(Error::from(ndpdb_formats::Error::corrupted(format!(
                    "{head} has a row of another width than its table"
                ))));
            }
            return Ok(row.map(|r| (head, r)));
        }
        match self.db.inner.read_visible(head, &self.snapshot)? {
            Visible::Version(rid, bytes) => Ok(Some((rid, Self::decode(ts, &bytes)?.1))),
            _ => Ok(None),
        }
    }

    /// Point lookup through the primary-key index.
    pub fn get_by_key(
        &self,
        ts: &TableState,
        key: &[Value],
    ) -> Result<Option<(Vid, RecId, Vec<Value>)>> {
        let Some(pk) = ts.pk.get() else {
            return Err(Error::new(
                SqlState::INTERNAL_ERROR,
                "table has no primary key",
            ));
        };
        let refs: Vec<&Value> = key.iter().collect();
        let encoded = crate::pk_index::encode_key(&refs);
        self.ssi_read_key(ts.id, key.len(), &encoded)?;
        let Some(vid) = pk.get(&encoded)? else {
            return Ok(None);
        };
        Ok(self.get(ts, vid)?.map(|(rid, row)| (vid, rid, row)))
    }

    /// Sets the lock and deadlock timeouts (PostgreSQL's `lock_timeout`
    /// and `deadlock_timeout`) for the statements from now on.
    pub fn set_lock_wait(&mut self, wait: LockWait) {
        self.lock_wait = wait;
    }

    pub(crate) fn deadlock_timeout(&self) -> std::time::Duration {
        self.lock_wait.deadlock_timeout
    }

    /// How long a PE may wait for one tuple lock: the lock timeout, else
    /// the bound on waits among device jobs only (see `Config::ndp_lock_wait`).
    pub(crate) fn ndp_lock_wait_ms(&self) -> u64 {
        self.lock_wait
            .timeout
            .unwrap_or(self.db.inner.config.ndp_lock_wait)
            .as_millis() as u64
    }

    /// The session's sequence values, kept across its transactions.
    pub fn set_session_sequences(&mut self, values: SessionSequences) {
        self.session_sequences = Some(values);
    }

    /// `nextval(name)`, remembered for `currval` in the session.
    pub fn nextval(&mut self, name: &str) -> Result<i64> {
        let (v, incarnation) = self.db.nextval(name)?;
        if let Some(s) = &self.session_sequences {
            s.lock().insert(name.to_string(), (incarnation, v));
        }
        Ok(v)
    }

    /// `setval(name, value, called)`; a called value is `currval` too.
    pub fn setval(&mut self, name: &str, value: i64, called: bool) -> Result<i64> {
        let (v, incarnation) = self.db.setval(name, value, called)?;
        if let (true, Some(s)) = (called, &self.session_sequences) {
            s.lock().insert(name.to_string(), (incarnation, v));
        }
        Ok(v)
    }

    /// `currval(name)`: this session's last value of the sequence.
    /// A sequence dropped and made again under the same name has no
    /// value in the session until its own first `nextval`.
    pub fn currval(&self, name: &str) -> Result<i64> {
        let Some(now) = self.db.sequence_incarnation(name) else {
            return Err(Error::new(
                SqlState::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            ));
        };
        self.session_sequences
            .as_ref()
            .and_then(|s| s.lock().get(name).copied())
            .filter(|(incarnation, _)| *incarnation == now)
            .map(|(_, v)| v)
            .ok_or_else(|| {
                Error::new(
                    SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!("currval of sequence \"{name}\" is not yet defined in this session"),
                )
            })
    }

    /// Lets `interrupt` cancel or time out this transaction's statements.
    pub fn set_interrupt(&mut self, interrupt: Interrupt) {
        self.interrupt = Some(interrupt);
    }

    /// `Err(57014)` if the running statement was canceled or timed out.
    pub fn check_interrupt(&self) -> Result<()> {
        match &self.interrupt {
            Some(i) => i.check(),
            None => Ok(()),
        }
    }

    /// This transaction's own version of a tuple, if it wrote one:
    /// `Some(None)` for a tuple it deleted.
    pub(crate) fn own_version(
        &self,
        ts: &TableState,
        vid: Vid,
    ) -> Result<Option<Option<Vec<Value>>>> {
        if self.writes.is_empty() {
            return Ok(None);
        }
        match self.writes.get(&(ts.id, vid)) {
            None => Ok(None),
            Some(e) if e.tombstone => Ok(Some(None)),
            Some(e) => Ok(Some(Some(e.row(ts)?))),
        }
    }

    /// The head an update-NDP statement of this transaction moved, if any.
    pub(crate) fn own_head(&self, table: TableId, vid: Vid) -> Option<RecId> {
        if self.ndp_heads.is_empty() {
            return None;
        }
        self.ndp_heads.get(&(table, vid)).copied()
    }

    pub(crate) fn snapshot_ref(&self) -> &Snapshot {
        &self.snapshot
    }

    pub(crate) fn db_inner(&self) -> &crate::db::Engine {
        &self.db.inner
    }

    /// Threads a host scan runs on (`SET host_workers`).
    pub fn set_host_workers(&mut self, n: usize) {
        self.host_workers = n.clamp(1, 64);
    }

    pub fn host_workers(&self) -> usize {
        self.host_workers
    }

    /// Visits every tuple visible to this transaction, in VID order;
    /// `visit` returns `false` to stop.
    pub fn scan(
        &self,
        ts: &TableState,
        visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_columns(ts, None, visit)
    }

    /// [`Transaction::scan`] of a caller that reads only the columns
    /// marked in `wanted`: the others may come as NULL, not decoded.
    pub fn scan_columns(
        &self,
        ts: &TableState,
        wanted: Option<&[bool]>,
        visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<bool>,
    ) -> Result<()> {
        self.ssi_read(crate::ssi::Target::Table(ts.id))?;
        self.scan_rows(ts, wanted, visit)
    }

    /// [`Transaction::scan`] of a caller that only uses the rows whose
    /// first primary-key columns equal `prefix` (SERIALIZABLE locks that
    /// prefix instead of the table).
    pub fn scan_key_prefix(
        &self,
        ts: &TableState,
        prefix: &[Value],
        wanted: Option<&[bool]>,
        visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<bool>,
    ) -> Result<()> {
        self.read_key_prefix(ts, prefix)?;
        self.scan_rows(ts, wanted, visit)
    }

    fn scan_rows(
        &self,
        ts: &TableState,
        wanted: Option<&[bool]>,
        mut visit: impl FnMut(Vid, RecId, Vec<Value>) -> Result<bool>,
    ) -> Result<()> {
        let n = ts.vids.vid_count();
        let table = ts.id;
        let inner = &self.db.inner;
        let mut heads = Vec::with_capacity(1024);
        let mut pages = FxHashMap::default();
        let mut last_page = None;
        let mut from = 0;
        while from < n {
            let to = (from + 1024).min(n);
            self.check_interrupt()?;
            ts.vids.heads_range(from, to, &mut heads);
            // The chunk's device pages in one message; a head the snapshot
            // sees is decoded straight from its page.
            prefetch_heads(inner, &heads, &mut pages)?;
            // The chunk's pages with their columns looked up once each;
            // consecutive heads on one page (the common case) find it
            // without a lookup.
            let mut decoding: Vec<ndpdb_formats::page::PageColumns<'_>> = Vec::new();
            let mut by_page: FxHashMap<*const u8, usize> = FxHashMap::default();
            let mut last: Option<(ndpdb_formats::Lpn, Option<usize>)> = None;
            for (i, head) in heads.iter().enumerate() {
                let vid = Vid(from + i as u64);
                if !self.writes.is_empty() {
                    if let Some(e) = self.writes.get(&(table, vid)) {
                        if !e.tombstone && !visit(vid, RecId::NULL, e.row(ts)?)? {
                            return Ok(());
                        }
                        continue;
                    }
                }
                let head = if self.ndp_heads.is_empty() {
                    *head
                } else {
                    self.head_of(ts, vid)
                };
                if head.is_null() {
                    continue;
                }
                let lpn = head.lpn();
                let at = match last {
                    Some((l, at)) if l == lpn => at,
                    _ => {
                        let page = inner.l2p.get(lpn).and_then(|p| pages.get(&p));
                        let at = match page {
                            Some(page) => {
                                let bytes: &[u8] = page;
                                Some(match by_page.entry(bytes.as_ptr()) {
                                    std::collections::hash_map::Entry::Occupied(e) => *e.get(),
                                    std::collections::hash_map::Entry::Vacant(e) => {
                                        let view = ndpdb_formats::page::PageRef::parse(bytes)?;
                                        decoding.push(view.columns_for(wanted)?);
                                        *e.insert(decoding.len() - 1)
                                    }
                                })
                            }
                            None => None,
                        };
                        last = Some((lpn, at));
                        at
                    }
                };
                let on_page = match at.and_then(|i| decoding.get(i)) {
                    Some(columns) => visible_head_row_in(columns, head, &self.snapshot)?,
                    None => None,
                };
                if let Some(row) = on_page {
                    if let Some(row) = row {
                        if row.len() != ts.types.len() {
                            return Err(Error::from(ndpdb_formats::Error::corrupted(format!(
                                "{head} has a row of another width than its table"
                            ))));
                        }
                        if !visit(vid, head, row)? {
                            return Ok(());
                        }
                    }
                    continue;
                }
                if let Visible::Version(rid, bytes) =
                    self.db
                        .inner
                        .read_visible_with(head, &self.snapshot, &mut last_page)?
                {
                    let (_, row) = Self::decode(ts, &bytes)?;
                    if !visit(vid, rid, row)? {
                        return Ok(());
                    }
                }
            }
            from = to;
        }
        Ok(())
    }

    fn lock(&mut self, key: LockKey) -> Result<()> {
        if self.ndp_locked.contains(&key) {
            // One of this transaction's update jobs holds it.
            return Ok(());
        }
        let inner = &self.db.inner;
        // A key sharing an SLT bucket with a tuple one of this
        // transaction's update jobs locked: that bucket is already ours.
        let use_slt = match inner.locks.slt() {
            Some(slt) if !self.ndp_buckets.is_empty() => {
                !self.ndp_buckets.contains(&slt.index(key))
            }
            _ => true,
        };
        self.lock_as(key, LockMode::Exclusive, use_slt)
    }

    /// Locks relation name `name` for a CREATE or DROP of it, held to the
    /// end of this transaction ([`crate::locks::relation_name_key`]):
    /// another transaction's CREATE of the name waits until this one
    /// ends, then finds the name taken or free.
    pub fn lock_relation_name(&mut self, name: &str) -> Result<()> {
        self.lock_as(
            crate::locks::relation_name_key(name),
            LockMode::Exclusive,
            false,
        )
    }

    /// Takes `key` in `mode` (HLT only unless `use_slt`), held to the end.
    fn lock_as(&mut self, key: LockKey, mode: LockMode, use_slt: bool) -> Result<()> {
        let inner = &self.db.inner;
        match inner.locks.acquire_mode(
            self.id,
            key,
            mode,
            self.lock_wait,
            use_slt,
            self.interrupt.as_ref(),
        ) {
            Ok(Acquired::Immediately) => {}
            Ok(Acquired::AfterWait) => EngineCounters::inc(&inner.counters.lock_waits),
            Err(e) => {
                if e.code == SqlState::DEADLOCK_DETECTED {
                    EngineCounters::inc(&inner.counters.deadlocks);
                }
                return Err(e);
            }
        }
        if self.locks.insert(key) {
            self.note_lock(key);
        }
        Ok(())
    }

    /// Locks a tuple read at version `seen` and certifies it (see module docs).
    /// `seen_row`: the version `seen` already decoded (by the scan that
    /// found it), so that an unmoved head is not read again.
    fn lock_and_certify(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        seen_row: Option<Vec<Value>>,
    ) -> Result<Current> {
        let key = (ts.id, vid);
        if let Some(e) = self.writes.get(&key) {
            return Ok(if e.tombstone {
                Current::Gone
            } else {
                Current::Own(e.row(ts)?)
            });
        }
        self.lock(key)?;
        let head = self.head_of(ts, vid);
        if head == seen {
            if let Some(row) = seen_row {
                return Ok(Current::Committed(head, row));
            }
            let bytes = self.db.inner.fetch(head)?;
            let (_, row) = Self::decode(ts, &bytes)?;
            return Ok(Current::Committed(head, row));
        }
        if head.is_null() {
            return match self.isolation {
                Isolation::Snapshot | Isolation::Serializable => {
                    EngineCounters::inc(&self.db.inner.counters.serialization_failures);
                    Err(Error::serialization())
                }
                Isolation::ReadCommitted => Ok(Current::Gone),
            };
        }
        let bytes = self.db.inner.fetch(head)?;
        let (h, row) = Self::decode(ts, &bytes)?;
        // A transaction committing with lock violation wrote the head.
        let violable = self.db.inner.violable_eot(h.creator);
        match self.isolation {
            Isolation::Snapshot | Isolation::Serializable => {
                // Garbage collection may have moved the version read: a
                // head this snapshot sees has no newer committed version.
                if self.snapshot.sees(h.creator) && !h.is_tombstone() {
                    return Ok(Current::Committed(head, row));
                }
                let counters = &self.db.inner.counters;
                EngineCounters::inc(&counters.serialization_failures);
                if violable.is_some() {
                    // Failed while that transaction commits, not after it.
                    EngineCounters::inc(&counters.ndp_violation_early_aborts);
                }
                Err(Error::serialization())
            }
            Isolation::ReadCommitted => {
                if let Some(eot) = violable {
                    // This one commits after it, or not at all.
                    self.dependencies.add(eot);
                }
                Ok(if h.is_tombstone() {
                    Current::Gone
                } else {
                    Current::Committed(head, row)
                })
            }
        }
    }

    /// Locks and certifies; `(predecessor, current row)` or `None` if gone.
    /// Rows of this transaction keep the predecessor of their first write.
    fn lock_for_write(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        seen_row: Option<Vec<Value>>,
    ) -> Result<Option<(RecId, Vec<Value>)>> {
        Ok(match self.lock_and_certify(ts, vid, seen, seen_row)? {
            Current::Gone => None,
            Current::Own(row) => Some((RecId::NULL, row)),
            Current::Committed(head, row) => Some((head, row)),
        })
    }

    fn check_row(&self, ts: &TableState, row: &[Value]) -> Result<()> {
        let cols = &ts.meta().schema.columns;
        if row.len() != cols.len() {
            return Err(Error::new(
                SqlState::SYNTAX_ERROR,
                format!("row has {} values for {} columns", row.len(), cols.len()),
            ));
        }
        for (c, v) in cols.iter().zip(row) {
            if v.is_null() && !c.nullable {
                return Err(Error::new(
                    SqlState::NOT_NULL_VIOLATION,
                    format!(
                        "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                        c.name, ts.meta().name
                    ),
                ));
            }
        }
        Ok(())
    }

    fn put(
        &mut self,
        ts: &TableState,
        vid: Vid,
        pred: RecId,
        row: &[Value],
        tombstone: bool,
    ) -> Result<()> {
        let key = (ts.id, vid);
        let pred = self.writes.get(&key).map_or(pred, |e| e.pred);
        if tombstone && pred.is_null() {
            // Inserted and deleted by this transaction: nothing to write.
            self.note_undo(key);
            self.writes.remove(&key);
            return Ok(());
        }
        let header = RecordHeader {
            creator: self.id,
            pred,
            vid,
            flags: if tombstone { FLAG_TOMBSTONE } else { 0 },
        };
        // Sized for the row up front: a bulk UPDATE encodes a million.
        let approx = row.iter().map(|v| match v {
            Value::Text(t) => t.len() + 4,
            Value::Bytea(b) => b.len() + 4,
            _ => 16,
        });
        let mut w = Writer::with_capacity(64 + approx.sum::<usize>());
        encode_record(&header, &ts.types, row, &mut w)?;
        let record = w.into_inner();
        let needed = PageBuf::bytes_for_one(&ts.types, &record)?;
        if needed > PAGE_SIZE {
            return Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("row is too big: size {needed}, maximum size {PAGE_SIZE}"),
            ));
        }
        if !self.writes.contains_key(&key) {
            self.ssi_write_row(ts, vid, row)?;
            self.order.push(key);
        }
        self.note_undo(key);
        self.writes.insert(
            key,
            WriteEntry {
                pred,
                tombstone,
                record,
            },
        );
        if !tombstone {
            ts.index_row(row, vid);
        }
        Ok(())
    }

    /// Updates the tuple read at version `seen`. `apply` gets the row the
    /// update applies to (under READ COMMITTED possibly a newer one) and
    /// returns the new row, or `None` if the row no longer qualifies.
    pub fn update(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        apply: &mut UpdateFn<'_>,
    ) -> Result<WriteOutcome> {
        self.update_read(ts, vid, seen, None, apply)
    }

    /// [`Transaction::update`] with the whole row of version `seen` as the
    /// caller's scan decoded it: when the head has not moved, the version
    /// is not read again (a bulk UPDATE's scan has long evicted its page).
    pub fn update_read(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        seen_row: Option<Vec<Value>>,
        apply: &mut UpdateFn<'_>,
    ) -> Result<WriteOutcome> {
        let Some((pred, row)) = self.lock_for_write(ts, vid, seen, seen_row)? else {
            return Ok(WriteOutcome::Skipped);
        };
        let Some(new_row) = apply(&row)? else {
            return Ok(WriteOutcome::Skipped);
        };
        self.check_row(ts, &new_row)?;
        if ts.pk.get().is_some() && ts.pk_key(&row) != ts.pk_key(&new_row) {
            // The key names the VID: a key change is delete + insert.
            self.put(ts, vid, pred, &row, true)?;
            self.insert_unchecked(ts, new_row.clone())?;
        } else {
            self.check_unique(ts, vid, Some(&row), &new_row)?;
            self.put(ts, vid, pred, &new_row, false)?;
        }
        self.check_references(ts, Some(&row), &new_row)?;
        self.on_referenced_change(ts, &row, Some(&new_row))?;
        Ok(WriteOutcome::Done(new_row))
    }

    /// Deletes the tuple read at version `seen` (writes a tombstone).
    /// `recheck` re-evaluates the predicate on a newer version (READ COMMITTED).
    pub fn delete(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        recheck: &mut dyn FnMut(&[Value]) -> Result<bool>,
    ) -> Result<WriteOutcome> {
        self.delete_read(ts, vid, seen, None, recheck)
    }

    /// [`Transaction::delete`] with the whole row of version `seen` (see
    /// [`Transaction::update_read`]).
    pub fn delete_read(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        seen_row: Option<Vec<Value>>,
        recheck: &mut dyn FnMut(&[Value]) -> Result<bool>,
    ) -> Result<WriteOutcome> {
        let Some((pred, row)) = self.lock_for_write(ts, vid, seen, seen_row)? else {
            return Ok(WriteOutcome::Skipped);
        };
        if !recheck(&row)? {
            return Ok(WriteOutcome::Skipped);
        }
        self.put(ts, vid, pred, &row, true)?;
        self.on_referenced_change(ts, &row, None)?;
        Ok(WriteOutcome::Done(row))
    }

    /// SELECT … FOR UPDATE: locks and certifies the tuple; returns the row
    /// as locked.
    pub fn lock_row(
        &mut self,
        ts: &TableState,
        vid: Vid,
        seen: RecId,
        recheck: &mut dyn FnMut(&[Value]) -> Result<bool>,
    ) -> Result<WriteOutcome> {
        let row = match self.lock_and_certify(ts, vid, seen, None)? {
            Current::Gone => return Ok(WriteOutcome::Skipped),
            Current::Own(row) | Current::Committed(_, row) => row,
        };
        Ok(if recheck(&row)? {
            WriteOutcome::Done(row)
        } else {
            WriteOutcome::Skipped
        })
    }
}
