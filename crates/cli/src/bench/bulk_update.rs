//! `ndpdb bench bulk-update`: does a host-only full-table UPDATE scale
//! linearly? YCSB tables of each size are loaded in turn, sizes
//! alternating round by round in one process, and one full-table UPDATE
//! (`ndp = off`, one transaction) is timed on each; the ratios of every
//! size to the smallest come from the same round.

use std::process::ExitCode;
use std::time::Instant;

use ndpdb_bench::isolation::Level;
use ndpdb_bench::mixed::update_sql;
use ndpdb_bench::ycsb;
use ndpdb_host::{Config, Result};
use ndpdb_sql::Session;

/// The isolation level of the timed transaction.
const ISOLATION: Level = Level::ReadCommitted;

#[derive(clap::Args, Clone, Debug)]
pub struct BulkUpdateArgs {
    /// Table sizes, comma separated; the first is the reference.
    #[arg(long, value_delimiter = ',', default_values_t = [100_000u64, 400_000])]
    records: Vec<u64>,
    #[arg(long, default_value_t = 3)]
    rounds: u32,
}

pub fn run(a: BulkUpdateArgs) -> Result<ExitCode> {
    println!(
        "settings: YCSB tables of {:?} rows × 10 fields × 100 B, each loaded fresh; one full-table UPDATE of field9 on the host (ndp = off) in one transaction, statement and commit timed; {} rounds, sizes alternating",
        a.records, a.rounds
    );
    println!(
        "{}",
        ndpdb_bench::isolation::line(&format!(
            "{ISOLATION} (the UPDATE's transaction); {} (the load)",
            Level::RepeatableRead
        ))
    );
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); a.records.len()];
    for round in 1..=a.rounds {
        let mut times = Vec::new();
        for &n in &a.records {
            let dir = tempfile::tempdir()?;
            let db = ndpdb_embedded::open_with(dir.path(), Config::default())?;
            ycsb::load(&db, n, 10, 100, true)?;
            db.checkpoint()?;
            let mut s = Session::new(db.clone());
            s.execute(&ISOLATION.set_sql())?;
            s.execute("SET ndp = off")?;
            let t = Instant::now();
            s.execute("BEGIN")?;
            s.execute(&update_sql(100))?;
            let statement = t.elapsed();
            s.execute("COMMIT")?;
            let total = t.elapsed();
            println!(
                "round {round}: {n:>9} rows  update {:>7.2} s (statement {:.2} s, commit {:.2} s)",
                total.as_secs_f64(),
                statement.as_secs_f64(),
                (total - statement).as_secs_f64()
            );
            times.push(total.as_secs_f64());
        }
        for (i, t) in times.iter().enumerate() {
            ratios[i].push(t / times[0]);
        }
    }
    for (i, n) in a.records.iter().enumerate().skip(1) {
        let mut r = ratios[i].clone();
        r.sort_by(|x, y| x.total_cmp(y));
        let list: Vec<String> = ratios[i].iter().map(|x| format!("{x:.2}×")).collect();
        println!(
            "{n} rows vs {} rows ({}× the rows): {} (median {:.2}×)",
            a.records[0],
            *n as f64 / a.records[0] as f64,
            list.join(", "),
            r[r.len() / 2]
        );
    }
    Ok(ExitCode::SUCCESS)
}
