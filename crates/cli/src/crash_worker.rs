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
//! happen during the run.

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

pub fn run(dir: &Path, seed: u64) -> Result<ExitCode> {
    let config = Config {
        delta_buffer_bytes: 64 << 10,
        checkpoint_wal_bytes: 512 << 10,
        buffer_pool_bytes: 1 << 20,
        ..Config::default()
    };
    let db = Database::open_with(dir, config)?;
    let mut s = Session::new(db);
    s.execute(
        "CREATE TABLE IF NOT EXISTS counters (k INT PRIMARY KEY, v BIGINT NOT NULL);
         CREATE TABLE IF NOT EXISTS log (id BIGINT PRIMARY KEY, payload TEXT)",
    )?;
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
            s.execute(&format!(
                "UPDATE counters SET v = v + 1000 WHERE k % 3 = {r}"
            ))?;
            s.execute("SET ndp = off")?;
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
        {
            let mut out = stdout.lock();
            let ks: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            writeln!(out, "begin {i} {inc} {}", ks.join(" ")).ok();
            out.flush().ok();
        }
        s.execute("COMMIT")?;
        let mut out = stdout.lock();
        writeln!(out, "ok {i}").ok();
        out.flush().ok();
    }
    Ok(ExitCode::SUCCESS)
}
