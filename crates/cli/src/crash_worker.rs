//! Hidden test helper for the crash-recovery test: runs transactions
//! forever and reports each one on stdout *before* and *after* commit:
//!
//! ```text
//! begin <i> <inc> <k>…         about to commit transaction i (adds inc to each
//!                              counter k, inserts log row i, deletes log row i-3)
//! ok <i>                       transaction i is durable (acknowledged)
//! ```
//!
//! Most transactions increment three random counters by 1 on the host;
//! every fifth adds 1000 to a third of the counters with one UPDATE on the
//! device (update NDP) next to its host statements. Every fourth does the
//! same work and rolls back, so its effects must never appear. The engine
//! runs with a small delta buffer and WAL limit so flushes and checkpoints
//! happen during the run, and garbage collection runs all the time: the
//! background worker past a low threshold, and a VACUUM (every other one
//! FULL) every seventh transaction.
//!
//! Update-NDP transactions that commit run with `ndp_logging = extended`
//! and `ndp_lock_violation = on`, and also update every row of a `wide`
//! table (so that moving their overflow log takes a while). Meanwhile a
//! READ COMMITTED session waits to add 1 to one of the counters the job
//! changes: it takes the lock while the NDP transaction commits (lock
//! violation), writes on its version, inserts `deps` row i and commits
//! after it:
//!
//! ```text
//! dbegin <i> <k>               the dependent of transaction i is about to commit
//! dok <i>                      … and is durable
//! ```
//!
//! A second session holds a REPEATABLE READ snapshot across ~40
//! transactions and re-reads it every few: GC must never take a version
//! it sees (`violation …` on stdout, exit code 3).
//!
//! ```text
//! vacuum                       a VACUUM finished
//! violation <what>             the old snapshot's view changed
//! ```

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use rand_like::Lcg;

use ndpdb_formats::Value;
use ndpdb_host::{Config, Database, Result};
use ndpdb_sql::Session;

mod rand_like {
    /// A tiny deterministic generator (the worker needs no quality).
    pub struct Lcg(pub u64);
    impl Lcg {
        pub fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }
}

/// A REPEATABLE READ snapshot kept across transactions, and what it saw.
struct OldSnapshot {
    s: Session,
    seen: Option<(String, i64)>,
}

impl OldSnapshot {
    fn new(db: Database) -> OldSnapshot {
        OldSnapshot {
            s: Session::new(db),
            seen: None,
        }
    }

    /// The snapshot's view of both tables, as text.
    fn view(&mut self) -> Result<String> {
        let mut text = String::new();
        for q in [
            "SELECT k, v FROM counters ORDER BY k",
            "SELECT id, length(payload) FROM log ORDER BY id",
        ] {
            if let Some(ndpdb_sql::Output::Rows { rows, .. }) = self.s.execute(q)?.pop() {
                for r in rows {
                    for v in r {
                        text.push_str(&v.to_pg_text().unwrap_or_default());
                        text.push(' ');
                    }
                    text.push('\n');
                }
            }
        }
        Ok(text)
    }

    /// Re-reads the snapshot; `Err(what)` if its view changed. Every
    /// ~40 transactions it starts over with a new snapshot.
    fn check(&mut self, i: i64) -> Result<std::result::Result<(), String>> {
        let view = self.view_or_begin(i)?;
        match &self.seen {
            Some((v, since)) if *v != view => Ok(Err(format!(
                "a snapshot taken before transaction {since} changed by transaction {i}"
            ))),
            Some((_, since)) if i - since >= 40 => {
                self.s.execute("COMMIT")?;
                self.seen = None;
                Ok(Ok(()))
            }
            _ => Ok(Ok(())),
        }
    }

    fn view_or_begin(&mut self, i: i64) -> Result<String> {
        if self.seen.is_none() {
            self.s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")?;
            let v = self.view()?;
            self.seen = Some((v.clone(), i));
            return Ok(v);
        }
        self.view()
    }
}

/// Rows of the table every committing update-NDP transaction rewrites.
const WIDE_ROWS: i64 = 2000;

/// A READ COMMITTED transaction adding 1 to counter `k`, started while
/// transaction `i`'s update job holds that row.
struct Dependent(std::thread::JoinHandle<Result<()>>);

impl Dependent {
    fn start(db: &Database, i: i64, k: i64) -> Result<Dependent> {
        let mut s = Session::new(db.clone());
        let handle = std::thread::spawn(move || -> Result<()> {
            s.execute("BEGIN ISOLATION LEVEL READ COMMITTED")?;
            s.execute(&format!("UPDATE counters SET v = v + 1 WHERE k = {k}"))?;
            s.execute(&format!("INSERT INTO deps VALUES ({i}, {k})"))?;
            let stdout = std::io::stdout();
            {
                let mut out = stdout.lock();
                writeln!(out, "dbegin {i} {k}").ok();
                out.flush().ok();
            }
            s.execute("COMMIT")?;
            let mut out = stdout.lock();
            writeln!(out, "dok {i}").ok();
            out.flush().ok();
            Ok(())
        });
        // Until it waits for the lock (or has finished, on a busy machine).
        let t0 = std::time::Instant::now();
        while db.lock_waiters() == 0
            && !handle.is_finished()
            && t0.elapsed() < std::time::Duration::from_secs(5)
        {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        Ok(Dependent(handle))
    }

    fn join(self) -> Result<()> {
        self.0.join().unwrap_or_else(|_| {
            Err(ndpdb_host::Error::new(
                ndpdb_formats::SqlState::INTERNAL_ERROR,
                "the dependent session panicked",
            ))
        })
    }
}

pub fn run(dir: &Path, seed: u64, ceph_conf: Option<&Path>) -> Result<ExitCode> {
    let config = Config {
        delta_buffer_bytes: 64 << 10,
        checkpoint_wal_bytes: 512 << 10,
        buffer_pool_bytes: 1 << 20,
        autovacuum_naptime: std::time::Duration::from_millis(10),
        autovacuum_threshold: 20,
        autovacuum_scale_factor: 0.05,
        ..Config::default()
    };
    let db = match ceph_conf {
        None => ndpdb_embedded::open_with(dir, config)?,
        Some(conf) => ndpdb_embedded::open_rados(dir, config, conf, "ndpdb")?,
    };
    let mut s = Session::new(db.clone());
    let mut old = OldSnapshot::new(db.clone());
    s.execute(
        "CREATE TABLE IF NOT EXISTS counters (k INT PRIMARY KEY, v BIGINT NOT NULL);
         CREATE TABLE IF NOT EXISTS log (id BIGINT PRIMARY KEY, payload TEXT);
         CREATE TABLE IF NOT EXISTS deps (id BIGINT PRIMARY KEY, k INT NOT NULL);
         CREATE TABLE IF NOT EXISTS wide (w INT PRIMARY KEY, v BIGINT NOT NULL, pad TEXT)",
    )?;
    if let Some(ndpdb_sql::Output::Rows { rows, .. }) =
        s.execute("SELECT count(*) FROM wide")?.pop()
    {
        if rows[0][0].as_i64() == Some(0) {
            let pad = "w".repeat(400);
            let vals: Vec<String> = (0..WIDE_ROWS)
                .map(|w| format!("({w}, 0, '{pad}')"))
                .collect();
            s.execute(&format!("INSERT INTO wide VALUES {}", vals.join(", ")))?;
        }
    }
    let start: i64 = match s.execute("SELECT max(id) FROM log")?.pop() {
        Some(ndpdb_sql::Output::Rows { rows, .. }) => match rows.first().and_then(|r| r.first()) {
            Some(Value::BigInt(m)) => m + 1,
            _ => 0,
        },
        _ => 0,
    };
    let upsert = s.prepare("UPDATE counters SET v = v + 1 WHERE k = $1")?;
    let insert_counter = s.prepare("INSERT INTO counters VALUES ($1, 1)")?;
    let insert_log = s.prepare("INSERT INTO log VALUES ($1, $2)")?;
    let delete_log = s.prepare("DELETE FROM log WHERE id = $1")?;
    let mut rng = Lcg(seed ^ 0x9E3779B97F4A7C15);
    let stdout = std::io::stdout();
    for i in start.. {
        if i % 7 == 6 {
            s.execute(if i % 14 == 6 { "VACUUM FULL" } else { "VACUUM" })?;
            let mut out = stdout.lock();
            writeln!(out, "vacuum").ok();
            out.flush().ok();
        }
        if i % 3 == 0 {
            if let Err(what) = old.check(i)? {
                let mut out = stdout.lock();
                writeln!(out, "violation {what}").ok();
                out.flush().ok();
                return Ok(ExitCode::from(3));
            }
        }
        let mut keys: Vec<i64> = (0..3).map(|_| (rng.next() % 40) as i64).collect();
        let rollback = rng.next().is_multiple_of(4);
        let on_device = i % 5 == 4;
        let inc = if on_device { 1000 } else { 1 };
        s.execute("BEGIN")?;
        if on_device {
            let r = (rng.next() % 3) as i64;
            // The rows the device will change: those this snapshot sees.
            keys = match s
                .execute(&format!(
                    "SELECT k FROM counters WHERE k % 3 = {r} ORDER BY k"
                ))?
                .pop()
            {
                Some(ndpdb_sql::Output::Rows { rows, .. }) => {
                    rows.iter().filter_map(|r| r[0].as_i64()).collect()
                }
                _ => Vec::new(),
            };
            s.execute("SET ndp = on")?;
            if !rollback {
                s.execute("SET ndp_logging = extended")?;
                s.execute("SET ndp_lock_violation = on")?;
                s.execute("UPDATE wide SET v = v + 1")?;
            }
            s.execute(&format!(
                "UPDATE counters SET v = v + 1000 WHERE k % 3 = {r}"
            ))?;
            s.execute("SET ndp = off")?;
            s.execute("SET ndp_logging = basic")?;
        } else {
            for k in &keys {
                let out = s.execute_prepared(&upsert, &[Value::Int(*k as i32)])?;
                if out.tag() == "UPDATE 0" {
                    s.execute_prepared(&insert_counter, &[Value::Int(*k as i32)])?;
                }
            }
        }
        let pad = "x".repeat(100 + (rng.next() % 1500) as usize);
        s.execute_prepared(&insert_log, &[Value::BigInt(i), Value::Text(pad)])?;
        if i >= 3 {
            s.execute_prepared(&delete_log, &[Value::BigInt(i - 3)])?;
        }
        if rollback {
            s.execute("ROLLBACK")?;
            continue;
        }
        // The dependent: queued behind the job's lock on a row it changed.
        let dependent = match (on_device, keys.first()) {
            (true, Some(&k)) => Some(Dependent::start(&db, i, k)?),
            _ => None,
        };
        {
            let mut out = stdout.lock();
            let ks: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            writeln!(out, "begin {i} {inc} {}", ks.join(" ")).ok();
            out.flush().ok();
        }
        s.execute("COMMIT")?;
        {
            let mut out = stdout.lock();
            writeln!(out, "ok {i}").ok();
            out.flush().ok();
        }
        if let Some(d) = dependent {
            d.join()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
