//! One CH-benCHmark run from start to end: load, every experiment, the
//! baselines, then `chbench.csv`, `ratios.csv`, the charts and a log line
//! per figure.
//!
//! ```text
//!  load_all ─► presets ─► links ─► fan_out ─► server, PostgreSQL
//!      ─► yardsticks (memory) ─► sweeps ─► CSV, ratios, plots ─► rm db
//! ```

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use ndpdb_host::Result;

use super::baselines::{
    against_postgres, postgres_query_sum, ratios, server_query_sum, yardsticks, Yardsticks,
};
use super::experiments::{fan_out, links, load_all, presets, sweeps};
use super::measure::Measurement;
use super::options::ChOptions;
use super::plots::plots;

/// Loads the table and runs every measurement; writes CSV and a summary.
pub fn run(opts: &ChOptions, mut log: impl FnMut(&str)) -> Result<Vec<Measurement>> {
    std::fs::create_dir_all(&opts.out)?;
    let dir = opts.out.join("db");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let rados_dir = opts.out.join("db-rados");
    load_all(opts, &dir, &rados_dir, &mut log)?;
    let mut all = presets(opts, &dir, &mut log)?;
    all.extend(links(opts, &dir, &rados_dir, &mut log)?);
    all.extend(fan_out(opts, &rados_dir, &mut log)?);
    if opts.server {
        server_query_sum(&dir, &opts.base, &mut log)?;
    }
    let postgres = match &opts.postgres {
        Some(conninfo) => Some(postgres_query_sum(conninfo, opts.rows, &mut log)?),
        None => None,
    };
    if let Some(pg) = &postgres {
        against_postgres(&all, pg, &mut log);
    }
    let memory_rate = yardsticks(&all, &mut log)?;
    if opts.sweeps {
        all.extend(sweeps(opts, &dir, &mut log)?);
    }
    write_results(opts, &all, postgres.as_ref(), memory_rate, &mut log)?;
    std::fs::remove_dir_all(&dir)?;
    Ok(all)
}

/// `chbench.csv` (every measurement), `ratios.csv` (the headline
/// figures) and the charts, under `opts.out`.
fn write_results(
    opts: &ChOptions,
    all: &[Measurement],
    postgres: Option<&(Duration, String)>,
    memory_rate: Option<Yardsticks>,
    log: &mut impl FnMut(&str),
) -> Result<()> {
    let out: &Path = &opts.out;
    let mut csv = String::from(Measurement::CSV_HEADER);
    csv.push('\n');
    for m in all {
        let _ = writeln!(csv, "{}", m.csv());
    }
    std::fs::write(out.join("chbench.csv"), csv)?;
    let headline = ratios(all, postgres, memory_rate);
    let mut csv = String::from("metric,value\n");
    for (k, v) in &headline {
        let _ = writeln!(csv, "{k},{v:.3}");
    }
    std::fs::write(out.join("ratios.csv"), csv)?;
    log(&format!(
        "ratios: {}",
        headline
            .iter()
            .map(|(k, v)| format!("{k} {v:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    match plots(out, all, postgres.map(|p| p.0)) {
        Ok(true) => log(&format!("plots: {}/*.png", out.display())),
        Ok(false) => log("plots skipped: no TrueType font found (CSV written)"),
        Err(e) => log(&format!("plots failed: {e} (CSV written)")),
    }
    Ok(())
}
