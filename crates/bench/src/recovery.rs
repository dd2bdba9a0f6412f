//! `recovery` (update NDP §8.3.8, Fig. 24): a YCSB table is loaded and
//! checkpointed, one full-table UPDATE runs, the engine crashes, and the
//! time to recover is measured — for ndpdb with the update on the device
//! under each NDP logging mode, and for PostgreSQL with the same SQL.
//!
//! ```text
//!  load N rows ─► checkpoint ─► UPDATE … SET field1 (timed) ─► crash ─► open (timed) ─► check
//!  ndpdb:      ndp = on, ndp_logging = off | basic | extended; crash = no flush, no checkpoint
//!  PostgreSQL: pg_ctl stop -m immediate, then pg_ctl start -w
//! ```
//!
//! ndpdb's recovery re-applies the update's ΔMaps from End-NDP (the pages
//! are on the device); PostgreSQL replays a heap tuple per row. The update
//! runs at READ COMMITTED on both ([`ISOLATION`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Error, NdpLogging, Result};
use ndpdb_sql::Session;

use crate::isolation::Level;
use crate::target::Backend;
use crate::ycsb;

/// The isolation level of the update.
pub const ISOLATION: Level = Level::ReadCommitted;

/// The report's isolation line.
pub fn isolation_line() -> String {
    crate::isolation::line(&format!(
        "{ISOLATION} (the UPDATE, on every target); {} (the ndpdb load)",
        Level::RepeatableRead
    ))
}

/// One measured run.
#[derive(Clone, Debug)]
pub struct RecoveryRun {
    /// `ndpdb (basic)`, `PostgreSQL`, …
    pub label: String,
    pub load: Duration,
    pub update: Duration,
    pub recover: Duration,
    /// Log bytes the update wrote (WAL, plus overflow logs for ndpdb).
    pub log_bytes: i64,
    pub overflow_bytes: i64,
}

/// The value the update writes (distinct per run, so that the check after
/// recovery can only pass if the update survived).
fn new_value(tag: &str) -> String {
    format!("recovered-{tag}")
}

fn update_sql(tag: &str) -> String {
    format!("UPDATE {} SET field1 = '{}'", ycsb::TABLE, new_value(tag))
}

fn check_sql(tag: &str) -> String {
    format!(
        "SELECT count(*) FROM {} WHERE field1 = '{}'",
        ycsb::TABLE,
        new_value(tag)
    )
}

fn lost(label: &str, found: i64, records: u64) -> Error {
    Error::new(
        SqlState::DATA_CORRUPTED,
        format!("{label}: after recovery {found} of {records} rows carry the committed update"),
    )
}

/// ndpdb, the update on the device under `logging`, in a fresh `dir`.
pub fn ndpdb(
    dir: &Path,
    config: &Config,
    records: u64,
    logging: NdpLogging,
) -> Result<RecoveryRun> {
    let label = format!("ndpdb ({})", logging.name());
    let _ = std::fs::remove_dir_all(dir);
    let config = Config {
        // No GC between the update and the crash: recovery sees the update only.
        autovacuum: false,
        ..config.clone()
    };
    let db = ndpdb_embedded::open_with(dir, config.clone())?;
    let load = ycsb::load(&db, records, 10, 100, true)?;
    db.checkpoint()?;
    let mut s = Session::new(db.clone());
    s.execute(&ISOLATION.set_sql())?;
    s.execute("SET ndp = on")?;
    s.execute(&format!("SET ndp_logging = {}", logging.name()))?;
    let (wal0, ovf0) = (db.stat("wal.bytes"), db.stat("ndp.overflow_bytes"));
    let t = Instant::now();
    s.execute(&update_sql(logging.name()))?;
    let update = t.elapsed();
    let overflow_bytes = db.stat("ndp.overflow_bytes") - ovf0;
    let log_bytes = db.stat("wal.bytes") - wal0 + overflow_bytes;
    drop(s);
    db.close_like_a_crash();
    let t = Instant::now();
    let db = ndpdb_embedded::open_with(dir, config)?;
    let recover = t.elapsed();
    let mut s = Session::new(db.clone());
    let found = count(&mut s, &check_sql(logging.name()))?;
    if found != records as i64 {
        return Err(lost(&label, found, records));
    }
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
    Ok(RecoveryRun {
        label,
        load,
        update,
        recover,
        log_bytes,
        overflow_bytes,
    })
}

fn count(s: &mut Session, sql: &str) -> Result<i64> {
    match s.execute(sql)?.pop() {
        Some(ndpdb_sql::Output::Rows { rows, .. }) => rows
            .first()
            .and_then(|r| r.first())
            .and_then(|v| v.to_pg_text())
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| Error::new(SqlState::INTERNAL_ERROR, "count(*) without a number")),
        _ => Err(Error::new(
            SqlState::INTERNAL_ERROR,
            "count(*) without rows",
        )),
    }
}

/// How the benchmark crashes and restarts PostgreSQL: a `pg_ctl` for the
/// cluster behind `$NDPDB_POSTGRES` (scripts/postgres-baseline.sh sets
/// `$NDPDB_POSTGRES_CTL`).
pub struct PgCtl(pub PathBuf);

impl PgCtl {
    pub fn from_env() -> Option<PgCtl> {
        std::env::var_os("NDPDB_POSTGRES_CTL").map(|p| PgCtl(PathBuf::from(p)))
    }

    fn run(&self, args: &[&str]) -> Result<()> {
        let out = Command::new(&self.0).args(args).output().map_err(|e| {
            Error::new(
                SqlState::IO_ERROR,
                format!("could not run {}: {e}", self.0.display()),
            )
        })?;
        if !out.status.success() {
            return Err(Error::new(
                SqlState::IO_ERROR,
                format!(
                    "{} {}: {}",
                    self.0.display(),
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ));
        }
        Ok(())
    }
}

/// PostgreSQL through `backend`, crashed and restarted with `ctl`.
pub fn postgres(backend: &Backend, ctl: &PgCtl, records: u64) -> Result<RecoveryRun> {
    let label = "PostgreSQL".to_string();
    let mut conn = backend.connect()?;
    let load = ycsb::load_wire(&mut conn, records, 10, 100, true)?;
    conn.batch(&format!("VACUUM ANALYZE {}", ycsb::TABLE))?;
    conn.batch("CHECKPOINT")?;
    let lsn = |c: &mut crate::target::Conn| {
        c.query_i64("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
    };
    ISOLATION.apply(&mut conn)?;
    let wal0 = lsn(&mut conn)?;
    let t = Instant::now();
    conn.batch(&update_sql("postgres"))?;
    let update = t.elapsed();
    let log_bytes = lsn(&mut conn)? - wal0;
    drop(conn);
    ctl.run(&["stop", "-m", "immediate"])?;
    let t = Instant::now();
    ctl.run(&["start", "-w", "-t", "3600"])?;
    let recover = t.elapsed();
    let mut conn = backend.connect()?;
    let found = conn.query_i64(&check_sql("postgres"))?;
    if found != records as i64 {
        return Err(lost(&label, found, records));
    }
    conn.batch(&format!("DROP TABLE {}", ycsb::TABLE))?;
    Ok(RecoveryRun {
        label,
        load,
        update,
        recover,
        log_bytes,
        overflow_bytes: 0,
    })
}

/// `recovery.csv`: one line per run.
pub fn csv(runs: &[RecoveryRun]) -> String {
    let mut s = String::from("run,target,load_s,update_s,recover_s,log_bytes,overflow_bytes\n");
    for (i, r) in runs.iter().enumerate() {
        s.push_str(&format!(
            "{},{},{:.3},{:.3},{:.3},{},{}\n",
            i,
            r.label,
            r.load.as_secs_f64(),
            r.update.as_secs_f64(),
            r.recover.as_secs_f64(),
            r.log_bytes,
            r.overflow_bytes
        ));
    }
    s
}
