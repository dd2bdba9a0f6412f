//! Lock latency of the shared lock table (DESIGN.md §7, §12; update NDP
//! §8, cache-coherent SLT §4): acquire + release of one tuple lock on the
//! host side and the device side, uncontended and with rising contention
//! from the other side, next to the host lock table alone and a plain
//! mutex-protected hash map, all in one run.
//!
//! Contention comes from a background thread of the other side that locks
//! random keys of a hot set (holding each for about a microsecond) while
//! the measured thread locks keys of the same hot set: the smaller the
//! set, the more often the measured request queues behind it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ndpdb_formats::{JobId, TableId, TxId, Vid};
use ndpdb_host::mvcc::locks::LockTable;
use ndpdb_host::Result;
use ndpdb_slt::{DeviceTag, LockKey, SharedLockTable, Slot};

/// Ops per timed batch (one sample = a batch's mean).
const BATCH: u64 = 64;
/// Buckets of the SLT under test (as the engine's default).
const BUCKETS: usize = 1 << 16;
/// Hot-set sizes for the contention levels (None = disjoint keys).
pub const HOT_SETS: [Option<u64>; 4] = [None, Some(4096), Some(256), Some(16)];

/// One measured configuration.
#[derive(Clone, Debug)]
pub struct LatencyRow {
    /// Where the table lives: `in-process`, `shm` (mapped by a device
    /// process and this one), `tcp` (the device's memory, reached by
    /// sync-plane messages), or `postgres`.
    pub link: &'static str,
    pub variant: &'static str,
    pub side: &'static str,
    /// Keys shared with the background thread (None: uncontended).
    pub hot_keys: Option<u64>,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub ops: u64,
    /// Measured requests that had to wait for the other side.
    pub waited: u64,
}

impl LatencyRow {
    pub const CSV_HEADER: &'static str = "link,variant,side,hot_keys,p50_ns,p99_ns,ops,waited";

    pub fn csv(&self) -> String {
        format!(
            "{},{},{},{},{:.1},{:.1},{},{}",
            self.link,
            self.variant,
            self.side,
            self.hot_keys.map_or("none".to_string(), |h| h.to_string()),
            self.p50_ns,
            self.p99_ns,
            self.ops,
            self.waited
        )
    }

    /// A host-side row without contention.
    pub fn host_uncontended(
        link: &'static str,
        variant: &'static str,
        (p50_ns, p99_ns): (f64, f64),
        ops: u64,
    ) -> LatencyRow {
        LatencyRow {
            link,
            variant,
            side: "host",
            hot_keys: None,
            p50_ns,
            p99_ns,
            ops,
            waited: 0,
        }
    }

    pub fn contention(&self) -> String {
        self.hot_keys
            .map_or("uncontended".to_string(), |h| format!("hot set {h}"))
    }
}

/// Times `ops` calls of `op` in batches; returns (p50, p99) of batch means.
pub(crate) fn time_ops(ops: u64, mut op: impl FnMut(u64)) -> (f64, f64) {
    let mut samples = Vec::with_capacity((ops / BATCH) as usize + 1);
    let mut i = 0;
    // Warm-up.
    for _ in 0..BATCH * 4 {
        op(i);
        i += 1;
    }
    while i < ops + BATCH * 4 {
        let t = Instant::now();
        for _ in 0..BATCH {
            op(i);
            i += 1;
        }
        samples.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99))
}

pub(crate) fn key(v: u64) -> LockKey {
    (TableId(1), Vid(v))
}

/// Keys for the measured thread: the hot set, or its own range.
fn pick(rng: &mut SmallRng, hot: Option<u64>, i: u64) -> LockKey {
    match hot {
        Some(h) => key(rng.gen_range(0..h)),
        None => key(1_000_000 + i % 100_000),
    }
}

fn hold_briefly() {
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(1) {
        std::hint::spin_loop();
    }
}

/// A background thread of one side locking keys of the hot set.
struct Background {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    fn start(
        hot: Option<u64>,
        device: bool,
        lt: Arc<LockTable>,
        slt: Arc<SharedLockTable>,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let Some(h) = hot else {
            return Background { stop, handle: None };
        };
        let s = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("slt-background".into())
            .spawn(move || {
                let mut rng = SmallRng::seed_from_u64(99);
                let tag = DeviceTag::for_job(JobId(40_000));
                let mut tx = 1u64 << 40;
                while !s.load(Ordering::Relaxed) {
                    let k = key(rng.gen_range(0..h));
                    if device {
                        if slt.acquire_device(k, tag, Duration::from_secs(10)).is_ok() {
                            hold_briefly();
                            let _ = lt.release_device(k, tag);
                        }
                    } else {
                        tx += 1;
                        if lt.acquire(TxId(tx), k, None).is_ok() {
                            hold_briefly();
                            lt.release_all(TxId(tx), &[k]);
                        }
                    }
                }
            });
        Background {
            stop,
            handle: spawned.ok(),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Runs every configuration with `ops` measured operations each.
pub fn run(ops: u64, mut log: impl FnMut(&LatencyRow)) -> Result<Vec<LatencyRow>> {
    let mut rows = Vec::new();
    let mut push = |row: LatencyRow, rows: &mut Vec<LatencyRow>| {
        log(&row);
        rows.push(row);
    };
    let new_slt = || {
        SharedLockTable::in_process(BUCKETS)
            .map(Arc::new)
            .map_err(|e| ndpdb_host::Error::new(e.sqlstate(), e.to_string()))
    };

    // Uncontended baselines.
    {
        let slt = new_slt()?;
        let (p50, p99) = time_ops(ops, |i| {
            let idx = slt.index(key(i % 100_000));
            let _ = slt.enqueue_index(idx, Slot::Host);
            let _ = slt.remove_host_entry_index(idx, 0);
        });
        push(
            LatencyRow {
                link: "in-process",
                variant: "slt alone (2 CAS)",
                side: "host",
                hot_keys: None,
                p50_ns: p50,
                p99_ns: p99,
                ops,
                waited: 0,
            },
            &mut rows,
        );
        let map: Mutex<HashMap<LockKey, u64>> = Mutex::new(HashMap::new());
        let (p50, p99) = time_ops(ops, |i| {
            let k = key(i % 100_000);
            map.lock().entry(k).or_insert(i);
            map.lock().remove(&k);
        });
        push(
            LatencyRow {
                link: "in-process",
                variant: "mutex hash map",
                side: "host",
                hot_keys: None,
                p50_ns: p50,
                p99_ns: p99,
                ops,
                waited: 0,
            },
            &mut rows,
        );
        let hlt = LockTable::new();
        let (p50, p99) = time_ops(ops, |i| {
            let k = key(i % 100_000);
            let _ = hlt.acquire(TxId(i + 1), k, None);
            hlt.release_all(TxId(i + 1), &[k]);
        });
        push(
            LatencyRow {
                link: "in-process",
                variant: "hlt alone",
                side: "host",
                hot_keys: None,
                p50_ns: p50,
                p99_ns: p99,
                ops,
                waited: 0,
            },
            &mut rows,
        );
    }

    // The integrated table, host side and device side, per contention level.
    for hot in HOT_SETS {
        let slt = new_slt()?;
        let lt = Arc::new(LockTable::with_slt(slt.clone()));
        {
            let _bg = Background::start(hot, true, lt.clone(), slt.clone());
            let mut rng = SmallRng::seed_from_u64(1);
            let mut waited = 0;
            let (p50, p99) = time_ops(ops, |i| {
                let k = pick(&mut rng, hot, i);
                let tx = TxId(i + 1);
                if let Ok(ndpdb_host::mvcc::locks::Acquired::AfterWait) = lt.acquire(tx, k, None) {
                    waited += 1;
                }
                lt.release_all(tx, &[k]);
            });
            push(
                LatencyRow {
                    link: "in-process",
                    variant: "slt + hlt (integrated)",
                    side: "host",
                    hot_keys: hot,
                    p50_ns: p50,
                    p99_ns: p99,
                    ops,
                    waited,
                },
                &mut rows,
            );
        }
        {
            let _bg = Background::start(hot, false, lt.clone(), slt.clone());
            let mut rng = SmallRng::seed_from_u64(2);
            let tag = DeviceTag::for_job(JobId(7));
            let mut waited = 0;
            let (p50, p99) = time_ops(ops, |i| {
                let k = pick(&mut rng, hot, i);
                let grant = slt.acquire_device(k, tag, Duration::from_secs(10));
                if grant == Ok(ndpdb_slt::DeviceGrant::AfterWait) {
                    waited += 1;
                }
                if grant.is_ok() {
                    // The release a device lock gets at its job's end.
                    let _ = lt.release_device(k, tag);
                }
            });
            push(
                LatencyRow {
                    link: "in-process",
                    variant: "slt (device PE)",
                    side: "device",
                    hot_keys: hot,
                    p50_ns: p50,
                    p99_ns: p99,
                    ops,
                    waited,
                },
                &mut rows,
            );
        }
    }
    Ok(rows)
}

/// The two host-side rows every link gets, over `slt`: the SLT alone
/// (enqueue and remove a host entry: two compare-and-swaps) and the
/// integrated lock table's acquire + release, uncontended.
pub fn host_rows(link: &'static str, slt: Arc<SharedLockTable>, ops: u64) -> Vec<LatencyRow> {
    let row = |variant, p50_p99| LatencyRow::host_uncontended(link, variant, p50_p99, ops);
    let alone = time_ops(ops, |i| {
        let idx = slt.index(key(i % 100_000));
        let _ = slt.enqueue_index(idx, Slot::Host);
        let _ = slt.remove_host_entry_index(idx, 0);
    });
    let lt = LockTable::with_slt(slt.clone());
    let integrated = time_ops(ops, |i| {
        let (k, tx) = (key(i % 100_000), TxId(i + 1));
        let _ = lt.acquire(tx, k, None);
        lt.release_all(tx, &[k]);
    });
    vec![
        row("slt alone (2 CAS)", alone),
        row("slt + hlt (integrated)", integrated),
    ]
}

/// PostgreSQL's lock manager as a client reaches it: one prepared
/// `SELECT pg_advisory_lock($1), pg_advisory_unlock($1)` per operation
/// (a round trip over the connection plus statement execution).
pub fn postgres_row(conninfo: &str, ops: u64) -> Result<LatencyRow> {
    let mut client =
        postgres::Client::connect(conninfo, postgres::NoTls).map_err(crate::target::wire_error)?;
    let stmt = client
        .prepare("SELECT pg_advisory_lock($1), pg_advisory_unlock($1)")
        .map_err(crate::target::wire_error)?;
    let mut failed = None;
    let p50_p99 = time_ops(ops, |i| {
        if let Err(e) = client.query(&stmt, &[&((i % 100_000) as i64)]) {
            failed.get_or_insert(e);
        }
    });
    if let Some(e) = failed {
        return Err(crate::target::wire_error(e));
    }
    Ok(LatencyRow::host_uncontended(
        "postgres",
        "advisory lock + unlock (client round trip)",
        p50_p99,
        ops,
    ))
}

/// A lock entry kept in a RADOS object, as a device on another machine
/// would keep the shared lock table: a 16-byte queue word per key,
/// acquired and released with one compare-and-write each (update NDP
/// §5.1's CAS, done by the OSD holding the object, over the network).
pub fn rados_row(pool: &ndpdb_rados::Pool, ops: u64) -> Result<LatencyRow> {
    const KEYS: u64 = 1_000;
    let oid = format!("ndpdb.bench.slt.{}", std::process::id());
    let rados = |e: ndpdb_rados::Error| {
        ndpdb_host::Error::new(ndpdb_formats::SqlState::IO_ERROR, e.to_string())
    };
    pool.write_full(&oid, &vec![0u8; KEYS as usize * 16])
        .map_err(rados)?;
    let mut failed = None;
    let p50_p99 = time_ops(ops, |i| {
        let at = (i % KEYS) * 16;
        let mut held = [0u8; 16];
        held[..8].copy_from_slice(&(i + 1).to_le_bytes());
        let result = pool
            .compare_and_write(&oid, at, &[0u8; 16], &held)
            .and_then(|ok| {
                ok.then_some(()).ok_or(ndpdb_rados::Error::Mismatch {
                    oid: oid.clone(),
                    offset: at,
                })?;
                pool.compare_and_write(&oid, at, &held, &[0u8; 16])
            });
        if let Err(e) = result {
            failed.get_or_insert(e);
        }
    });
    let _ = pool.remove(&oid);
    if let Some(e) = failed {
        return Err(rados(e));
    }
    Ok(LatencyRow::host_uncontended(
        "rados",
        "lock object (2 compare-and-writes)",
        p50_p99,
        ops,
    ))
}

/// Writes `slt.csv`, `summary.txt` and the plots into `out`.
pub fn write(out: &Path, rows: &[LatencyRow], header: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(out)?;
    let mut csv = String::from(LatencyRow::CSV_HEADER);
    csv.push('\n');
    let mut summary = format!("{header}\n");
    for r in rows {
        let _ = writeln!(csv, "{}", r.csv());
        let _ = writeln!(summary, "{}", describe(r));
    }
    std::fs::write(out.join("slt.csv"), csv)?;
    let note = match plots(out, rows) {
        Ok(true) => format!("plots: {}/*.png", out.display()),
        Ok(false) => "plots skipped: no TrueType font found (CSV written)".to_string(),
        Err(e) => format!("plots failed: {e} (CSV written)"),
    };
    let _ = writeln!(summary, "{note}");
    std::fs::write(out.join("summary.txt"), summary)?;
    Ok(out.to_path_buf())
}

pub fn describe(r: &LatencyRow) -> String {
    format!(
        "{:<10} {:<24} {:<6} {:<16} acquire+release p50 {:>10.1} ns  p99 {:>11.1} ns  waited {:>5.2} %",
        r.link,
        r.variant,
        r.side,
        r.contention(),
        r.p50_ns,
        r.p99_ns,
        r.waited as f64 * 100.0 / (r.ops + 4 * BATCH).max(1) as f64
    )
}

fn plots(out: &Path, rows: &[LatencyRow]) -> Result<bool, String> {
    use crate::plot::{bar_chart, line_chart, Series};
    let uncontended: Vec<&LatencyRow> = rows
        .iter()
        .filter(|r| r.hot_keys.is_none() && r.link == "in-process")
        .collect();
    let cats: Vec<String> = uncontended
        .iter()
        .map(|r| format!("{} ({}, {})", r.variant, r.side, r.link))
        .collect();
    let values: Vec<Vec<f64>> = uncontended.iter().map(|r| vec![r.p50_ns]).collect();
    if !bar_chart(
        &out.join("slt-uncontended.png"),
        "Tuple lock acquire + release, uncontended",
        "ns (median)",
        &cats,
        &["p50"],
        &values,
    )? {
        return Ok(false);
    }
    // One host lock per link (a lock object on RADOS), with PostgreSQL's
    // lock manager beside it.
    let across: Vec<&LatencyRow> = rows
        .iter()
        .filter(|r| {
            r.variant == "slt + hlt (integrated)" || r.link == "postgres" || r.link == "rados"
        })
        .filter(|r| r.hot_keys.is_none())
        .collect();
    if across.iter().any(|r| r.link != "in-process") {
        let cats: Vec<String> = across
            .iter()
            .map(|r| match r.link {
                "postgres" => "PostgreSQL (advisory)".to_string(),
                l => format!("ndpdb ({l})"),
            })
            .collect();
        let values: Vec<Vec<f64>> = across.iter().map(|r| vec![r.p50_ns / 1000.0]).collect();
        bar_chart(
            &out.join("slt-links.png"),
            "Host tuple lock acquire + release by where the lock table lives",
            "µs (median)",
            &cats,
            &["p50"],
            &values,
        )?;
    }
    // Contention levels on an ordinal axis: 0 = none, then shrinking hot sets.
    let series = |variant: &str| Series {
        label: variant.to_string(),
        points: rows
            .iter()
            .filter(|r| r.variant == variant && r.link == "in-process")
            .filter_map(|r| {
                HOT_SETS
                    .iter()
                    .position(|h| *h == r.hot_keys)
                    .map(|x| (x as f64, r.p50_ns))
            })
            .collect(),
    };
    line_chart(
        &out.join("slt-contention.png"),
        "Lock latency with rising contention from the other side (0 = none, 1 = 4096 hot keys, 2 = 256, 3 = 16)",
        "contention level",
        "ns (median)",
        &[series("slt + hlt (integrated)"), series("slt (device PE)")],
    )?;
    Ok(true)
}
