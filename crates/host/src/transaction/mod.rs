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
//! an abort simply drops the set and releases the locks.
//!
//! ```text
//!  mod.rs           the Transaction, BEGIN, session settings, sequences
//!  read.rs          reads: by VID, by key, scans (own writes first)
//!  write.rs         locks, certification, UPDATE / DELETE / FOR UPDATE on the host
//!  insert.rs        INSERT (ON CONFLICT)
//!  device_work.rs   the transaction's update-NDP work: parts, SLT tag, stage
//!  end.rs           the end: overflow logs, lock violation, commit, abort
//!  savepoint.rs, serializable.rs, unique.rs, foreign_key.rs, key_order.rs
//! ```

pub(crate) mod commit;
mod device_work;
mod end;
mod foreign_key;
mod insert;
mod key_order;
mod read;
mod savepoint;
mod serializable;
mod unique;
mod write;

pub use insert::{Inserted, OnConflict};
pub use savepoint::SavepointId;

use ndpdb_formats::record::{RecordHeader, RecordView};
use ndpdb_formats::{RecId, SqlState, TableId, TxId, Value, Vid};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::db::{Database, TableState};
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::mvcc::locks::{LockKey, LockWait};
use crate::mvcc::snapshot::Snapshot;
use crate::ndp::statement_pipeline::PipelineStage;
use crate::ndp::{Dependencies, NdpPart};

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
    /// (`crate::mvcc::ssi`): every execution is serializable.
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

    /// Whether the transaction changed any row, on the host or through
    /// the device (an NDP UPDATE or DELETE).
    pub fn changed_rows(&self) -> bool {
        self.has_writes() || !self.ndp_parts.is_empty()
    }

    pub(crate) fn wrote_table(&self, table: TableId) -> bool {
        self.order.iter().any(|(t, _)| *t == table)
            || self
                .ndp_parts
                .iter()
                .any(|p| p.table == table && !p.result.delta.vids.is_empty())
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
}
