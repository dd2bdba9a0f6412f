//! NDP invocations and job status: what the host hands the device and
//! what comes back (DESIGN.md §4–§5, DANSEN §3, update-aware NDP §3).
//!
//! ```text
//!  host                                   device
//!  NDP_SHARED {delta pages, ΔVID}  ──data──►  cached for one job (pass-along)
//!  NDP_CALL {snapshot, table, schema,
//!            filter, op, params, PEs}  ─ctl─►  job: PEs walk VID ranges
//!  NDP_STATUS {job, wait}          ◄─ctl──   running | done | failed + counters
//!  NDP_RESULT {job}                ◄─data─   result region (rows), job freed
//! ```
//!
//! The pipeline is the same bytecode the host runs: a filter program over
//! the table row, then either a projection to some columns or a (grouped)
//! aggregation whose per-PE partials the device merges before returning.

use ndpdb_formats::agg::AggSpec;
use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::delta_maps::{decode_pages, encode_pages, DeltaMaps};
use ndpdb_formats::expr::{decode_value, encode_value, Program};
use ndpdb_formats::ids::{JobId, Lpn, Ppn, RecId, TableId, TxId, Vid};
use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_formats::types::DataType;
use ndpdb_formats::value::Value;
use ndpdb_formats::visibility::Snapshot;
use ndpdb_formats::{Error, Result};

/// The unflushed part of the shared state, passed along with a call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SharedState {
    /// Delta-buffer pages of the table (no PPN yet).
    pub pages: Vec<(Lpn, Vec<u8>)>,
    /// ΔVID overlay of the table: newer heads than the device's VID map.
    pub vids: Vec<(Vid, RecId)>,
}

impl SharedState {
    /// Bytes [`SharedState::encode`] writes.
    pub fn encoded_len(&self) -> usize {
        8 + self.pages.iter().map(|(_, p)| 8 + p.len()).sum::<usize>() + 16 * self.vids.len()
    }

    pub fn encode(&self, w: &mut Writer) {
        w.u32(self.pages.len() as u32);
        for (l, p) in &self.pages {
            w.u64(l.0).raw(p);
        }
        w.u32(self.vids.len() as u32);
        for (v, r) in &self.vids {
            w.u64(v.0).u64(r.raw());
        }
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<SharedState> {
        let n = r.count(8 + PAGE_SIZE)?;
        let mut pages = Vec::with_capacity(n);
        for _ in 0..n {
            let l = Lpn(r.u64()?);
            pages.push((l, r.take(PAGE_SIZE)?.to_vec()));
        }
        let n = r.count(16)?;
        let mut vids = Vec::with_capacity(n);
        for _ in 0..n {
            vids.push((Vid(r.u64()?), RecId::from_raw(r.u64()?)));
        }
        Ok(SharedState { pages, vids })
    }
}

/// What the device does with each visible, qualifying row.
#[derive(Clone, Debug, PartialEq)]
pub enum NdpOp {
    /// Return these columns of every row (positions in the table row).
    Scan { columns: Vec<u32> },
    /// Group by `groups` and compute `aggs`; rows are `[groups…, aggs…]`.
    Aggregate {
        groups: Vec<Program>,
        aggs: Vec<AggSpec>,
    },
    /// Update NDP: a new version of every row with `sets` applied (column,
    /// program over the old row, ending in a cast to the column's type),
    /// created by the snapshot's TxId in the invocation's own pages. A
    /// NULL in a `not_null` column fails the job with 23502.
    Update {
        sets: Vec<(u32, Program)>,
        not_null: Vec<u32>,
    },
    /// Update NDP: a tombstone for every row.
    Delete,
    /// In-storage SELECT … FOR UPDATE: lock every row in the SLT and
    /// return these columns of it plus its VID (BIGINT, last); the job
    /// reports each locked version
    /// (`ModifyResult::locked_versions`) so a following UPDATE of the same
    /// rows needs no second visibility walk.
    LockRows { columns: Vec<u32> },
    /// Version garbage collection (DESIGN.md §8a): with `horizon` the
    /// oldest snapshot still in use, every version behind the first one
    /// created below it is garbage. Pages of the table whose versions all
    /// predate the horizon and of which at most `max_live_percent` % of
    /// the slots are still needed become victims: their needed versions
    /// (each the whole needed chain of its tuple) are copied into the
    /// invocation's pages with the chain cut, and tuples whose newest
    /// version is a tombstone visible to everyone lose their VID-map
    /// entry. Nothing is overwritten; the host validates and applies.
    ///
    /// With `cost_limit` > 0 the job pauses `cost_delay_us` each time its
    /// work adds up to `cost_limit` (PostgreSQL's vacuum cost model: a
    /// page read costs 1, a page written 20), so that background
    /// collection leaves the CPUs to the foreground.
    Gc {
        horizon: TxId,
        max_live_percent: u8,
        cost_delay_us: u32,
        cost_limit: u32,
    },
}

impl NdpOp {
    /// Whether the operation creates versions.
    pub fn modifies(&self) -> bool {
        matches!(self, NdpOp::Update { .. } | NdpOp::Delete)
    }

    /// Whether the operation takes SLT locks.
    pub fn locks(&self) -> bool {
        self.modifies() || matches!(self, NdpOp::LockRows { .. })
    }

    /// Whether a started job must run to its end: it writes pages or
    /// takes locks that only its result hands back to the host.
    pub fn runs_to_end(&self) -> bool {
        self.locks() || matches!(self, NdpOp::Gc { .. })
    }
}

/// One NDP_CALL.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    /// The reader's snapshot (carries the invoking TxId).
    pub snapshot: Snapshot,
    pub table: TableId,
    pub types: Vec<DataType>,
    /// VIDs `0..vid_count` are walked.
    pub vid_count: u64,
    pub filter: Option<Program>,
    pub op: NdpOp,
    pub params: Vec<Value>,
    /// Processing elements to use (0 = the device's default).
    pub pes: u16,
    /// Read pages ahead of the walk.
    pub preload: bool,
    /// Handle returned by NDP_SHARED for this call's shared state.
    pub shared: u64,
    /// Pages pre-allocated for new versions (update NDP), exclusively
    /// this invocation's: (LPN, PPN) pairs nobody else references.
    pub space: Vec<(Lpn, Ppn)>,
    /// How long a PE waits for one tuple lock before the job fails (ms).
    pub lock_timeout_ms: u64,
    /// The SLT slot value of the invoking transaction's jobs (update NDP;
    /// unique among running transactions, so two statements of one
    /// transaction share their locks).
    pub lock_tag: u16,
    /// If not empty: the tuples to change and the versions to change,
    /// locked by an earlier SELECT … FOR UPDATE of this transaction — no
    /// scan and no visibility walk; `filter` (if any) is evaluated on
    /// each target version.
    pub targets: Vec<(Vid, RecId)>,
    /// NDP pipelines: if not 0, the targets are the stage an earlier
    /// statement of this transaction left on the device under this handle
    /// (its locked or new versions); the stage is consumed.
    pub stage: u64,
    /// NDP pipelines: keep this job's output — the versions SELECT … FOR
    /// UPDATE locked, or the versions an UPDATE created — on the device as
    /// a stage for the next statement (`ModifyResult::stage`).
    pub keep: bool,
    /// READ COMMITTED: a tuple with a newer committed version than the
    /// one read is not a conflict; the device locks it, leaves it to the
    /// host (`ModifyResult::stale`), which re-checks it on the newest
    /// version as PostgreSQL does.
    pub read_committed: bool,
    /// Update jobs: report the pages written so far in each status
    /// (`JobStatus::unloaded`), so that the host can move them to an
    /// overflow log while the job runs (extended NDP logging).
    pub report_pages: bool,
    /// Update and lock jobs: the SLT buckets (sorted indexes) the invoking
    /// transaction holds through host-shared entries — the tuple locks
    /// it took on the host. A job queued there would wait for its own
    /// transaction, so it does not queue: it certifies and changes such a
    /// tuple as any other and reports it in `ModifyResult::host_locks`,
    /// and the host takes the tuple's lock in its own lock table before
    /// it validates the job's ΔVID.
    pub host_buckets: Vec<u32>,
}

impl Invocation {
    pub fn encode(&self, w: &mut Writer) {
        self.snapshot.encode(w);
        w.u32(self.table.0);
        w.u32(self.types.len() as u32);
        for t in &self.types {
            t.encode(w);
        }
        w.u64(self.vid_count);
        match &self.filter {
            Some(p) => {
                w.u8(1);
                p.encode(w);
            }
            None => {
                w.u8(0);
            }
        }
        match &self.op {
            NdpOp::Scan { columns } => {
                w.u8(1).u32(columns.len() as u32);
                for c in columns {
                    w.u32(*c);
                }
            }
            NdpOp::Aggregate { groups, aggs } => {
                w.u8(2).u32(groups.len() as u32);
                for g in groups {
                    g.encode(w);
                }
                w.u32(aggs.len() as u32);
                for a in aggs {
                    a.encode(w);
                }
            }
            NdpOp::Update { sets, not_null } => {
                w.u8(3).u32(sets.len() as u32);
                for (c, p) in sets {
                    w.u32(*c);
                    p.encode(w);
                }
                w.u32(not_null.len() as u32);
                for c in not_null {
                    w.u32(*c);
                }
            }
            NdpOp::Delete => {
                w.u8(4);
            }
            NdpOp::LockRows { columns } => {
                w.u8(5).u32(columns.len() as u32);
                for c in columns {
                    w.u32(*c);
                }
            }
            NdpOp::Gc {
                horizon,
                max_live_percent,
                cost_delay_us,
                cost_limit,
            } => {
                w.u8(6)
                    .u64(horizon.0)
                    .u8(*max_live_percent)
                    .u32(*cost_delay_us)
                    .u32(*cost_limit);
            }
        }
        w.u32(self.params.len() as u32);
        for p in &self.params {
            encode_value(p, w);
        }
        w.u16(self.pes).bool(self.preload).u64(self.shared);
        encode_pages(&self.space, w);
        w.u64(self.lock_timeout_ms)
            .u16(self.lock_tag)
            .bool(self.read_committed)
            .bool(self.report_pages);
        encode_versions(&self.targets, w);
        w.u64(self.stage).bool(self.keep);
        w.u32(self.host_buckets.len() as u32);
        for b in &self.host_buckets {
            w.u32(*b);
        }
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<Invocation> {
        let snapshot = Snapshot::decode(r)?;
        let table = TableId(r.u32()?);
        let n = r.count(1)?;
        let mut types = Vec::with_capacity(n);
        for _ in 0..n {
            types.push(DataType::decode(r)?);
        }
        let vid_count = r.u64()?;
        if vid_count > ndpdb_formats::ids::MAX_VID {
            return Err(Error::corrupted("VID count out of range"));
        }
        let filter = match r.u8()? {
            0 => None,
            1 => Some(Program::decode(r)?),
            t => return Err(Error::corrupted(format!("filter tag {t}"))),
        };
        let op = match r.u8()? {
            1 => {
                let n = r.count(4)?;
                let mut columns = Vec::with_capacity(n);
                for _ in 0..n {
                    let c = r.u32()?;
                    if c as usize >= types.len() {
                        return Err(Error::corrupted("projected column out of range"));
                    }
                    columns.push(c);
                }
                NdpOp::Scan { columns }
            }
            2 => {
                let n = r.count(1)?;
                let mut groups = Vec::with_capacity(n);
                for _ in 0..n {
                    groups.push(Program::decode(r)?);
                }
                let n = r.count(1)?;
                let mut aggs = Vec::with_capacity(n);
                for _ in 0..n {
                    aggs.push(AggSpec::decode(r)?);
                }
                NdpOp::Aggregate { groups, aggs }
            }
            3 => {
                let n = r.count(5)?;
                let mut sets = Vec::with_capacity(n);
                for _ in 0..n {
                    let c = r.u32()?;
                    if c as usize >= types.len() {
                        return Err(Error::corrupted("SET column out of range"));
                    }
                    sets.push((c, Program::decode(r)?));
                }
                let n = r.count(4)?;
                let mut not_null = Vec::with_capacity(n);
                for _ in 0..n {
                    let c = r.u32()?;
                    if c as usize >= types.len() {
                        return Err(Error::corrupted("NOT NULL column out of range"));
                    }
                    not_null.push(c);
                }
                NdpOp::Update { sets, not_null }
            }
            4 => NdpOp::Delete,
            5 => {
                let n = r.count(4)?;
                let mut columns = Vec::with_capacity(n);
                for _ in 0..n {
                    let c = r.u32()?;
                    if c as usize >= types.len() {
                        return Err(Error::corrupted("locked column out of range"));
                    }
                    columns.push(c);
                }
                NdpOp::LockRows { columns }
            }
            6 => NdpOp::Gc {
                horizon: TxId(r.u64()?),
                max_live_percent: r.u8()?.min(100),
                // At most a second per pause.
                cost_delay_us: r.u32()?.min(1_000_000),
                cost_limit: r.u32()?,
            },
            t => return Err(Error::corrupted(format!("NDP op tag {t}"))),
        };
        let n = r.count(1)?;
        let mut params = Vec::with_capacity(n);
        for _ in 0..n {
            params.push(decode_value(r)?);
        }
        Ok(Invocation {
            snapshot,
            table,
            types,
            vid_count,
            filter,
            op,
            params,
            pes: r.u16()?,
            preload: r.bool()?,
            shared: r.u64()?,
            space: decode_pages(r)?,
            lock_timeout_ms: r.u64()?,
            lock_tag: r.u16()?,
            read_committed: r.bool()?,
            report_pages: r.bool()?,
            targets: decode_versions(r)?,
            stage: r.u64()?,
            keep: r.bool()?,
            // Absent in Start-NDP records written before the field (an
            // invocation is the last thing in its bytes).
            host_buckets: if r.is_empty() {
                Vec::new()
            } else {
                let n = r.count(4)?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(r.u32()?);
                }
                v
            },
        })
    }
}

fn encode_versions(v: &[(Vid, RecId)], w: &mut Writer) {
    w.u32(v.len() as u32);
    for (vid, rid) in v {
        w.u64(vid.0).u64(rid.raw());
    }
}

fn decode_versions(r: &mut Reader<'_>) -> Result<Vec<(Vid, RecId)>> {
    let n = r.count(16)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let vid = Vid(r.u64()?);
        if vid.0 >= ndpdb_formats::ids::MAX_VID {
            return Err(Error::corrupted("target VID out of range"));
        }
        v.push((vid, RecId::from_raw(r.u64()?)));
    }
    Ok(v)
}

/// What an update-NDP job leaves for the host (its result region).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModifyResult {
    /// Rows the job modified.
    pub rows: u64,
    pub delta: DeltaMaps,
    /// Tuples the job holds SLT locks on (also when it failed): the host
    /// releases them at commit or abort.
    pub locked: Vec<Vid>,
    /// READ COMMITTED: locked tuples whose head had moved past the version
    /// read; no new version was made, the host redoes them.
    pub stale: Vec<Vid>,
    /// Pre-allocated pages left unused, back to the host's free list.
    pub unused: Vec<(Lpn, Ppn)>,
    /// SELECT … FOR UPDATE: each locked tuple and the version locked.
    pub locked_versions: Vec<(Vid, RecId)>,
    /// GC: pages none of whose versions is needed once every ΔVID out of
    /// them is applied (the host frees those whose ΔVIDs all validate).
    pub victims: Vec<(Lpn, Ppn)>,
    /// GC: versions on the victim pages that no snapshot needs.
    pub garbage_versions: u64,
    /// GC: page space the table's needed versions take (per page, its
    /// size times the share of its slots still needed).
    pub live_bytes: u64,
    /// NDP pipelines: the handle of the stage the job left on the device
    /// (`Invocation::keep`), 0 if it kept none.
    pub stage: u64,
    /// Tuples the job changed (or, SELECT … FOR UPDATE, chose to lock)
    /// in buckets of `Invocation::host_buckets`, without an SLT lock of
    /// its own: the host locks them for the invoking transaction (which
    /// already shares their buckets) before it validates.
    pub host_locks: Vec<Vid>,
    /// GC: pages of the table read, and pages not read because the last
    /// run found them settled and none of their heads moved since.
    pub pages_scanned: u64,
    pub pages_skipped: u64,
}

impl ModifyResult {
    pub fn encode(&self, w: &mut Writer) {
        w.u64(self.rows);
        self.delta.encode(w);
        for list in [&self.locked, &self.stale] {
            w.u32(list.len() as u32);
            for v in list {
                w.u64(v.0);
            }
        }
        encode_pages(&self.unused, w);
        encode_versions(&self.locked_versions, w);
        encode_pages(&self.victims, w);
        w.u64(self.garbage_versions)
            .u64(self.live_bytes)
            .u64(self.stage);
        w.u32(self.host_locks.len() as u32);
        for v in &self.host_locks {
            w.u64(v.0);
        }
        w.u64(self.pages_scanned).u64(self.pages_skipped);
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<ModifyResult> {
        let rows = r.u64()?;
        let delta = DeltaMaps::decode(r)?;
        let vid_list = |r: &mut Reader<'_>| -> Result<Vec<Vid>> {
            let n = r.count(8)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(Vid(r.u64()?));
            }
            Ok(v)
        };
        let locked = vid_list(r)?;
        let stale = vid_list(r)?;
        Ok(ModifyResult {
            rows,
            delta,
            locked,
            stale,
            unused: decode_pages(r)?,
            locked_versions: decode_versions(r)?,
            victims: decode_pages(r)?,
            garbage_versions: r.u64()?,
            live_bytes: r.u64()?,
            stage: r.u64()?,
            host_locks: vid_list(r)?,
            pages_scanned: r.u64()?,
            pages_skipped: r.u64()?,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum JobState {
    Running,
    Done,
    /// SQLSTATE and message.
    Failed(String, String),
    /// An update job ran out of pre-allocated pages and waits for more
    /// (NDP_SPACE).
    NeedSpace,
}

/// A scan fanned out over the objects of a distributed store (RADOS):
/// each object's share ran in the storage daemon holding it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FanOut {
    /// Objects called.
    pub objects: u64,
    /// Bytes the objects returned.
    pub reply_bytes: u64,
    /// Version chains an object handed back (they went on in another
    /// object), walked on the device engine.
    pub deferred: u64,
}

/// NDP_STATUS: the job's state and its counters.
#[derive(Clone, Debug, PartialEq)]
pub struct JobStatus {
    pub job: JobId,
    pub state: JobState,
    /// Rows in the result region.
    pub result_rows: u64,
    pub result_bytes: u64,
    /// Tuples (VIDs) each PE walked.
    pub pe_tuples: Vec<u64>,
    /// Busy time of each PE in µs.
    pub pe_micros: Vec<u64>,
    /// Pages read from the device store (not from the passed-along state).
    pub pages_read: u64,
    /// Wall time of the job on the device in µs.
    pub device_micros: u64,
    /// Time the PEs spent taking SLT locks (summed over PEs), in µs.
    pub lock_micros: u64,
    /// Pages the scan kernels ran on, and those of them whose zone maps
    /// ruled out every row.
    pub pages_filtered: u64,
    pub pages_pruned: u64,
    /// Page bytes the PEs read (see `PipelineState::bytes_touched`).
    pub bytes_touched: u64,
    /// With `Invocation::report_pages`: pages the job has written since
    /// the last status (final: a job never rewrites a page).
    pub unloaded: Vec<(Lpn, Ppn)>,
    pub fan_out: FanOut,
}

impl JobStatus {
    pub fn encode(&self, w: &mut Writer) {
        w.u64(self.job.0);
        match &self.state {
            JobState::Running => {
                w.u8(0);
            }
            JobState::Done => {
                w.u8(1);
            }
            JobState::Failed(code, msg) => {
                w.u8(2).str(code).str(msg);
            }
            JobState::NeedSpace => {
                w.u8(3);
            }
        }
        w.u64(self.result_rows).u64(self.result_bytes);
        w.u32(self.pe_tuples.len() as u32);
        for (t, us) in self.pe_tuples.iter().zip(&self.pe_micros) {
            w.u64(*t).u64(*us);
        }
        w.u64(self.pages_read)
            .u64(self.device_micros)
            .u64(self.lock_micros)
            .u64(self.pages_filtered)
            .u64(self.pages_pruned)
            .u64(self.bytes_touched);
        encode_pages(&self.unloaded, w);
        w.u64(self.fan_out.objects)
            .u64(self.fan_out.reply_bytes)
            .u64(self.fan_out.deferred);
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<JobStatus> {
        let job = JobId(r.u64()?);
        let state = match r.u8()? {
            0 => JobState::Running,
            1 => JobState::Done,
            2 => JobState::Failed(r.str()?.to_string(), r.str()?.to_string()),
            3 => JobState::NeedSpace,
            t => return Err(Error::corrupted(format!("job state {t}"))),
        };
        let result_rows = r.u64()?;
        let result_bytes = r.u64()?;
        let n = r.count(16)?;
        let (mut pe_tuples, mut pe_micros) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for _ in 0..n {
            pe_tuples.push(r.u64()?);
            pe_micros.push(r.u64()?);
        }
        Ok(JobStatus {
            job,
            state,
            result_rows,
            result_bytes,
            pe_tuples,
            pe_micros,
            pages_read: r.u64()?,
            device_micros: r.u64()?,
            lock_micros: r.u64()?,
            pages_filtered: r.u64()?,
            pages_pruned: r.u64()?,
            bytes_touched: r.u64()?,
            unloaded: decode_pages(r)?,
            fan_out: FanOut {
                objects: r.u64()?,
                reply_bytes: r.u64()?,
                deferred: r.u64()?,
            },
        })
    }
}

pub use ndpdb_formats::rows::{decode_rows, encode_rows, MAX_ZERO_WIDTH_ROWS};

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::agg::AggFunc;
    use ndpdb_formats::delta_maps::DeltaVid;
    use ndpdb_formats::expr::Op;

    #[test]
    fn rows_of_no_columns_round_trip() {
        // `SELECT 1 FROM t` projects no stored column on the device.
        let rows = vec![Vec::new(); 8];
        let mut w = Writer::new();
        encode_rows(&rows, &mut w);
        let bytes = w.into_inner();
        assert_eq!(decode_rows(&mut Reader::new(&bytes)).unwrap(), rows);
        let mut huge = u32::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&0u32.to_le_bytes());
        assert!(decode_rows(&mut Reader::new(&huge)).is_err());
    }

    #[test]
    fn invocation_and_status_round_trip() {
        let inv = Invocation {
            snapshot: Snapshot {
                txid: TxId(9),
                xmin: TxId(5),
                xmax: TxId(10),
                in_flight: vec![TxId(5), TxId(7)],
            },
            table: TableId(3),
            types: vec![DataType::Int, DataType::Text],
            vid_count: 1000,
            filter: Some(Program {
                consts: vec![Value::Int(3)],
                ops: vec![Op::Column(0), Op::Const(0), Op::Gt],
            }),
            op: NdpOp::Aggregate {
                groups: vec![Program {
                    consts: vec![],
                    ops: vec![Op::Column(1)],
                }],
                aggs: vec![AggSpec {
                    func: AggFunc::Sum,
                    distinct: false,
                    arg: Some(Program {
                        consts: vec![],
                        ops: vec![Op::Column(0)],
                    }),
                    result_ty: DataType::BigInt,
                    extra: vec![],
                    order: vec![],
                    filtered: false,
                }],
            },
            params: vec![Value::Text("x".into())],
            pes: 2,
            preload: true,
            shared: 17,
            space: vec![(Lpn(100), Ppn(200)), (Lpn(101), Ppn(207))],
            lock_timeout_ms: 1000,
            lock_tag: 77,
            read_committed: true,
            report_pages: true,
            targets: vec![(Vid(5), RecId::new(Lpn(9), 1))],
            stage: 12,
            keep: true,
            host_buckets: vec![4, 9000],
        };
        let mut w = Writer::new();
        inv.encode(&mut w);
        let bytes = w.into_inner();
        assert_eq!(Invocation::decode(&mut Reader::new(&bytes)).unwrap(), inv);
        // A Start-NDP record written before host buckets existed ends
        // before them and decodes without any.
        let legacy = bytes.len() - 4 - 4 * inv.host_buckets.len();
        let old = Invocation::decode(&mut Reader::new(&bytes[..legacy])).unwrap();
        assert_eq!(
            old,
            Invocation {
                host_buckets: Vec::new(),
                ..inv.clone()
            }
        );
        for cut in (0..bytes.len()).filter(|&c| c != legacy) {
            assert!(Invocation::decode(&mut Reader::new(&bytes[..cut])).is_err());
        }
        let st = JobStatus {
            job: JobId(4),
            state: JobState::Failed("XX001".into(), "bad page".into()),
            result_rows: 1,
            result_bytes: 2,
            pe_tuples: vec![5, 6],
            pe_micros: vec![7, 8],
            pages_read: 9,
            device_micros: 10,
            lock_micros: 11,
            pages_filtered: 12,
            pages_pruned: 13,
            bytes_touched: 14,
            unloaded: vec![(Lpn(3), Ppn(4))],
            fan_out: FanOut {
                objects: 15,
                reply_bytes: 16,
                deferred: 17,
            },
        };
        let mut w = Writer::new();
        st.encode(&mut w);
        assert_eq!(
            JobStatus::decode(&mut Reader::new(w.as_slice())).unwrap(),
            st
        );
        let rows = vec![
            vec![Value::Int(1), Value::Null],
            vec![Value::Int(2), Value::Text("a".into())],
        ];
        let mut w = Writer::new();
        encode_rows(&rows, &mut w);
        assert_eq!(decode_rows(&mut Reader::new(w.as_slice())).unwrap(), rows);

        let m = ModifyResult {
            rows: 2,
            delta: DeltaMaps {
                l2p: vec![(Lpn(100), Ppn(200))],
                vids: vec![DeltaVid {
                    vid: Vid(3),
                    pred: RecId::new(Lpn(1), 2),
                    new: RecId::new(Lpn(100), 0),
                }],
            },
            locked: vec![Vid(3), Vid(4)],
            stale: vec![Vid(4)],
            unused: vec![(Lpn(101), Ppn(207))],
            locked_versions: vec![(Vid(3), RecId::new(Lpn(1), 2))],
            victims: vec![(Lpn(1), Ppn(9))],
            garbage_versions: 40,
            live_bytes: 8192,
            stage: 3,
            host_locks: vec![Vid(8)],
            pages_scanned: 12,
            pages_skipped: 30,
        };
        let mut w = Writer::new();
        m.encode(&mut w);
        let bytes = w.into_inner();
        assert_eq!(ModifyResult::decode(&mut Reader::new(&bytes)).unwrap(), m);
        for cut in 0..bytes.len() {
            assert!(ModifyResult::decode(&mut Reader::new(&bytes[..cut])).is_err());
        }
        let upd = Invocation {
            op: NdpOp::Update {
                sets: vec![(
                    1,
                    Program {
                        consts: vec![Value::Text("y".into())],
                        ops: vec![Op::Const(0)],
                    },
                )],
                not_null: vec![0],
            },
            ..inv.clone()
        };
        let mut w = Writer::new();
        upd.encode(&mut w);
        assert_eq!(
            Invocation::decode(&mut Reader::new(w.as_slice())).unwrap(),
            upd
        );
        let gc = Invocation {
            op: NdpOp::Gc {
                horizon: TxId(77),
                max_live_percent: 50,
                cost_delay_us: 2000,
                cost_limit: 200,
            },
            ..inv.clone()
        };
        let mut w = Writer::new();
        gc.encode(&mut w);
        assert_eq!(
            Invocation::decode(&mut Reader::new(w.as_slice())).unwrap(),
            gc
        );
    }
}
