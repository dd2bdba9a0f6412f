//! The measurements of a CH-benCHmark run, one function per experiment,
//! in the order `run` makes them:
//!
//! ```text
//!  load        the order lines, embedded (and once more into RADOS)
//!  presets     Query-SUM and Query-UDF, NDP off/on, per link preset
//!  links       Query-SUM over a device process (unix, tcp, rados)
//!  fan_out     Query-SUM in the OSDs, by page objects in flight
//!  sweeps      NVM latency × preloader; selectivity; projectivity
//! ```
//!
//! Each returns its [`Measurement`]s and logs one line per measurement.

use std::path::Path;

use ndpdb_embedded::process::LinkKind;
use ndpdb_host::{Config, NvmProfile, Result};
use ndpdb_link::LinkModel;

use super::measure::{measure, measure_on, measure_with, spinner, Measurement, RUNS};
use super::options::ChOptions;
use super::order_line::{date_cutoff, load, query_udf, QUERY_SUM};

/// Loads the order lines into `dir`, and with the `rados` link once more
/// into `rados_dir`, a database whose device store is in RADOS.
pub(super) fn load_all(
    opts: &ChOptions,
    dir: &Path,
    rados_dir: &Path,
    log: &mut impl FnMut(&str),
) -> Result<()> {
    {
        let db = ndpdb_embedded::open_with(dir, opts.base.clone())?;
        let t = load(&db, opts.rows, true)?;
        log(&format!(
            "loaded {} order lines in {:.1} s",
            opts.rows,
            t.as_secs_f64()
        ));
    }
    if opts.links.contains(&LinkKind::Rados) {
        if rados_dir.exists() {
            std::fs::remove_dir_all(rados_dir)?;
        }
        let bin = std::env::current_exe()?;
        let db = ndpdb_embedded::process::open_over(
            rados_dir,
            opts.base.clone(),
            LinkKind::Rados,
            &bin,
        )?;
        let before = ndpdb_rados::counters();
        let t = load(&db, opts.rows, true)?;
        let moved = ndpdb_rados::counters().since(&before);
        log(&format!(
            "loaded {} order lines into RADOS in {:.1} s ({} B written to objects)",
            opts.rows,
            t.as_secs_f64(),
            moved.written_bytes
        ));
    }
    Ok(())
}

/// Query-SUM and Query-UDF with NDP off and on under each link preset,
/// against the in-process device.
pub(super) fn presets(
    opts: &ChOptions,
    dir: &Path,
    log: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let mut all = Vec::new();
    for preset in &opts.presets {
        let config = Config {
            link: *preset,
            ..opts.base.clone()
        };
        for (label, sql) in [
            ("query-sum", QUERY_SUM.to_string()),
            ("query-udf", query_udf(5)),
        ] {
            for ndp in [false, true] {
                let on_off = if ndp { "on" } else { "off" };
                let spin = spinner(format!("{label} {} ndp {on_off}", preset.name));
                // Host-only scans run their workers unpinned (PostgreSQL's
                // parallel workers are not pinned either).
                let m = if ndp {
                    measure(dir, &config, label, &sql, ndp)?
                } else {
                    crate::pin::unpinned(|| measure(dir, &config, label, &sql, ndp))?
                };
                spin.finish_and_clear();
                let device = if ndp {
                    format!(
                        "  device {:.1} ms, {:.2} M tuples/s per PE, {:.0} MB/s of pages and {:.0} MB/s read per PE",
                        m.device_micros as f64 / 1e3,
                        m.tuples_per_pe_second() / 1e6,
                        m.scan_bytes_per_pe_second() / 1e6,
                        m.touched_bytes_per_pe_second() / 1e6
                    )
                } else {
                    String::new()
                };
                log(&format!(
                    "{label}  {:<12} ndp {:<3} {}  data to host {:>12} B  misses {:>7}  result {}{device}",
                    preset.name,
                    on_off,
                    m.timing(),
                    m.data_to_host,
                    m.host_misses,
                    m.result
                ));
                all.push(m);
            }
        }
    }
    Ok(all)
}

/// Query-SUM with NDP off and on over each link to a device in its own
/// process (the base preset); over `rados`, the database in `rados_dir`.
pub(super) fn links(
    opts: &ChOptions,
    dir: &Path,
    rados_dir: &Path,
    log: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let mut all = Vec::new();
    for &link in opts.links.iter().filter(|l| **l != LinkKind::InProcess) {
        let at = if link == LinkKind::Rados {
            rados_dir
        } else {
            dir
        };
        for ndp in [false, true] {
            let bin = std::env::current_exe()?;
            let db = ndpdb_embedded::process::open_over(at, opts.base.clone(), link, &bin)?;
            // What the opening read (the maps) is not the query's.
            let before = ndpdb_rados::counters();
            let label = format!("query-sum@{}", link.name());
            let m = measure_on(&db, &opts.base, &label, &[], QUERY_SUM, ndp)?;
            drop(db);
            let moved = ndpdb_rados::counters().since(&before);
            let from_rados = if link == LinkKind::Rados {
                format!(
                    "  from RADOS per run: {:>12} B read, {:>9} B of object-class replies ({} calls)",
                    moved.read_bytes / RUNS as u64,
                    moved.reply_bytes / RUNS as u64,
                    moved.calls / RUNS as u64
                )
            } else {
                String::new()
            };
            log(&format!(
                "query-sum  {:<12} ndp {:<3} {}  data to host {:>12} B  link messages {:>7}  result {}{from_rados}",
                link.name(),
                if ndp { "on" } else { "off" },
                m.timing(),
                m.data_to_host,
                m.control_messages,
                m.result
            ));
            all.push(m);
        }
    }
    Ok(all)
}

/// Query-SUM with NDP on over the pages in RADOS, calling each count of
/// page objects at once (only with the `rados` link).
pub(super) fn fan_out(
    opts: &ChOptions,
    rados_dir: &Path,
    log: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let mut all = Vec::new();
    if !opts.links.contains(&LinkKind::Rados) {
        return Ok(all);
    }
    for &in_flight in &opts.fan_out {
        let config = Config {
            rados_objects_in_flight: in_flight,
            ..opts.base.clone()
        };
        let bin = std::env::current_exe()?;
        let db =
            ndpdb_embedded::process::open_over(rados_dir, config.clone(), LinkKind::Rados, &bin)?;
        let before = ndpdb_rados::counters();
        let label = format!("fan-out-{in_flight}");
        let m = measure_on(&db, &config, &label, &[], QUERY_SUM, true)?;
        drop(db);
        let moved = ndpdb_rados::counters().since(&before);
        log(&format!(
            "query-sum  rados  {in_flight:>4} objects in flight  {}  {} B of replies per run  result {}",
            m.timing(),
            moved.reply_bytes / RUNS as u64,
            m.result
        ));
        all.push(m);
    }
    Ok(all)
}

/// The papers' Experiment 3 (NVM latency with and without preloader),
/// then the selectivity and projectivity sweeps under the last preset.
pub(super) fn sweeps(
    opts: &ChOptions,
    dir: &Path,
    log: &mut impl FnMut(&str),
) -> Result<Vec<Measurement>> {
    let mut all = Vec::new();
    for nvm in NvmProfile::ALL {
        let config = Config {
            device_nvm: nvm,
            ..opts.base.clone()
        };
        for preload in [false, true] {
            let on_off = if preload { "on" } else { "off" };
            let m = measure_with(
                dir,
                &config,
                &format!("preload-{on_off}-{}", nvm.name),
                &[&format!("SET ndp_preload = {on_off}")],
                QUERY_SUM,
                true,
            )?;
            log(&format!(
                "nvm {:<4} preloader {on_off:<3}  device {:>8.1} ms  {:.2} M tuples/s per PE",
                nvm.name,
                m.device_micros as f64 / 1e3,
                m.tuples_per_pe_second() / 1e6
            ));
            all.push(m);
        }
    }
    let config = Config {
        link: opts
            .presets
            .last()
            .copied()
            .unwrap_or(LinkModel::UNTHROTTLED),
        ..opts.base.clone()
    };
    for pct in [0u32, 10, 25, 50, 75, 100] {
        let sql = format!(
            "SELECT sum(ol_amount) FROM order_line WHERE ol_delivery_d < '{}'",
            date_cutoff(pct)
        );
        for ndp in [false, true] {
            let m = measure(dir, &config, &format!("selectivity-{pct}"), &sql, ndp)?;
            log(&format!(
                "selectivity {pct:>3}% ndp {:<3} {:>9.1} ms",
                if ndp { "on" } else { "off" },
                m.elapsed.as_secs_f64() * 1e3
            ));
            all.push(m);
        }
    }
    let cols = [
        "ol_o_id",
        "ol_d_id",
        "ol_w_id",
        "ol_number",
        "ol_i_id",
        "ol_supply_w_id",
        "ol_delivery_d",
        "ol_quantity",
        "ol_amount",
        "ol_dist_info",
    ];
    for k in [1usize, 2, 5, 10] {
        let sql = format!(
            "SELECT {} FROM order_line WHERE ol_delivery_d < '{}'",
            cols[..k].join(", "),
            date_cutoff(10)
        );
        for ndp in [false, true] {
            let m = measure(dir, &config, &format!("projectivity-{k}"), &sql, ndp)?;
            log(&format!(
                "projectivity {k:>2} columns ndp {:<3} {:>9.1} ms  data to host {:>12} B",
                if ndp { "on" } else { "off" },
                m.elapsed.as_secs_f64() * 1e3,
                m.data_to_host
            ));
            all.push(m);
        }
    }
    Ok(all)
}
