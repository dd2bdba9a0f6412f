//! What ndpdb's figures are set beside: Query-SUM through ndpdb's own wire
//! server, the same rows and query in PostgreSQL, and one thread reading
//! memory as fast as it can (the yardsticks a PE's scan is judged
//! against); then the headline ratios of a run.
//!
//! ```text
//!  measurements ─┬─ PostgreSQL (COPY, VACUUM ANALYZE, RUNS) ─► "… × faster"
//!                ├─ memory_rate.rs: sequential and page-span read rates
//!                └─► ratios.csv: query_sum_*_ms, *_over_*, per-PE rates
//! ```

use std::path::Path;
use std::time::Duration;

use ndpdb_host::{Config, Result};

use crate::memory_rate::{page_spans_read_rate, query_sum_spans, sequential_read_rate};
use crate::target::{endpoint, wire_error, Target};

use super::measure::{measure_wire, Measurement, ISOLATION, RUNS};
use super::order_line::{load_wire, QUERY_SUM, TABLE};

/// Query-SUM through the wire: a server on the loaded database (fresh
/// buffer pool, the base link preset), `SET ndp = off` then `on`.
pub(super) fn server_query_sum(
    dir: &Path,
    config: &Config,
    log: &mut impl FnMut(&str),
) -> Result<()> {
    let server = endpoint(
        &Target::NdpdbServer(None),
        config.clone(),
        Some(dir.to_path_buf()),
    )?;
    let mut client = server.connect()?;
    client
        .batch_execute(&ISOLATION.set_sql())
        .map_err(wire_error)?;
    for ndp in ["off", "on"] {
        client
            .batch_execute(&format!("SET ndp = {ndp}"))
            .map_err(wire_error)?;
        let (times, result) = measure_wire(&mut client, QUERY_SUM, 1)?;
        log(&format!(
            "query-sum  {:<12} ndp {ndp:<3} {:>9.1} ms  through the ndpdb server (wire protocol)  result {result}",
            config.link.name,
            times[0].as_secs_f64() * 1e3
        ));
    }
    Ok(())
}

/// The PostgreSQL column: the same order lines loaded through COPY, then
/// Query-SUM [`RUNS`] times (PostgreSQL's defaults: parallel workers on;
/// the first run after the load and VACUUM ANALYZE, as cold as PostgreSQL
/// gets without a restart). Returns the median time and the result.
pub(super) fn postgres_query_sum(
    conninfo: &str,
    rows: u64,
    log: &mut impl FnMut(&str),
) -> Result<(Duration, String)> {
    let mut client = postgres::Client::connect(conninfo, postgres::NoTls).map_err(wire_error)?;
    client
        .batch_execute(&ISOLATION.set_sql())
        .map_err(wire_error)?;
    let t = load_wire(&mut client, rows, true)?;
    client
        .batch_execute(&format!("VACUUM ANALYZE {TABLE}"))
        .map_err(wire_error)?;
    log(&format!(
        "PostgreSQL: loaded {rows} order lines through COPY in {:.1} s",
        t.as_secs_f64()
    ));
    let (times, result) = measure_wire(&mut client, QUERY_SUM, RUNS)?;
    let mut sorted = times.clone();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    log(&format!(
        "query-sum  PostgreSQL   runs {} ms, median {:.1} ms  result {result}",
        times
            .iter()
            .map(|t| format!("{:.1}", t.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(" / "),
        median.as_secs_f64() * 1e3
    ));
    Ok((median, result))
}

/// "PostgreSQL 3.20× faster" or "ndpdb 2.10× faster" for PostgreSQL's time
/// over ndpdb's.
fn verdict(postgres_over_ndpdb: f64) -> String {
    if postgres_over_ndpdb >= 1.0 {
        format!("{postgres_over_ndpdb:.2}× faster than PostgreSQL")
    } else {
        format!("PostgreSQL {:.2}× faster", 1.0 / postgres_over_ndpdb)
    }
}

/// Each unthrottled Query-SUM of ndpdb set beside PostgreSQL's median.
pub(super) fn against_postgres(
    all: &[Measurement],
    postgres: &(Duration, String),
    log: &mut impl FnMut(&str),
) {
    let (pg, result) = postgres;
    for m in all
        .iter()
        .filter(|m| m.label == "query-sum" && m.preset == "unthrottled")
    {
        let same = if m.result == *result {
            "same result"
        } else {
            "RESULT DIFFERS"
        };
        log(&format!(
            "query-sum  ndpdb {} (ndp {}) is {} ({same}: {})",
            if m.ndp { "NDP" } else { "host only" },
            if m.ndp { "on" } else { "off" },
            verdict(pg.as_secs_f64() / m.elapsed.as_secs_f64().max(1e-9)),
            m.result
        ));
    }
}

/// The memory rates a PE's scan is judged against (`crate::memory_rate`).
#[derive(Clone, Copy)]
pub(super) struct Yardsticks {
    sequential: f64,
    page_spans: f64,
}

/// The yardsticks: one thread reading as many bytes as a PE scanned,
/// front to back and as the spans of each page a Query-SUM reads.
pub(super) fn yardsticks(
    all: &[Measurement],
    log: &mut impl FnMut(&str),
) -> Result<Option<Yardsticks>> {
    let Some(m) = all
        .iter()
        .find(|m| m.label == "query-sum" && m.ndp && m.pages_read > 0)
    else {
        return Ok(None);
    };
    let bytes = m.pages_read as usize * ndpdb_formats::page::PAGE_SIZE;
    let rate = sequential_read_rate(bytes);
    let (spans_rate, _) = page_spans_read_rate(m.pages_read as usize, &query_sum_spans()?);
    log(&format!(
        "device scan per PE: {:.0} MB/s of whole pages ({:.0}% of one thread summing {:.0} MB of memory at {:.0} MB/s); {:.0} MB/s of the bytes it read ({:.0}%)",
        m.scan_bytes_per_pe_second() / 1e6,
        100.0 * m.scan_bytes_per_pe_second() / rate.max(1.0),
        bytes as f64 / 1e6,
        rate / 1e6,
        m.touched_bytes_per_pe_second() / 1e6,
        100.0 * m.touched_bytes_per_pe_second() / rate.max(1.0),
    ));
    log(&format!(
        "memory alone, reading only those spans of each page: {:.0} MB/s ({:.0}% of the sequential rate); the PE reaches {:.0}% of it",
        spans_rate / 1e6,
        100.0 * spans_rate / rate.max(1.0),
        100.0 * m.touched_bytes_per_pe_second() / spans_rate.max(1.0),
    ));
    Ok(Some(Yardsticks {
        sequential: rate,
        page_spans: spans_rate,
    }))
}

/// The headline figures (`ratios.csv`: `metric,value`).
pub(super) fn ratios(
    all: &[Measurement],
    postgres: Option<&(Duration, String)>,
    memory_rate: Option<Yardsticks>,
) -> Vec<(&'static str, f64)> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let find = |label: &str, ndp: bool| all.iter().find(|m| m.label == label && m.ndp == ndp);
    let mut out = Vec::new();
    let (sum_on, sum_off) = (find("query-sum", true), find("query-sum", false));
    if let Some((pg, _)) = postgres {
        out.push(("query_sum_postgres_ms", ms(*pg)));
    }
    if let Some(m) = sum_on {
        out.push(("query_sum_ndp_ms", ms(m.elapsed)));
    }
    if let Some(m) = sum_off {
        out.push(("query_sum_host_ms", ms(m.elapsed)));
    }
    if let Some((pg, _)) = postgres {
        if let Some(m) = sum_on {
            out.push((
                "query_sum_postgres_over_ndp",
                ms(*pg) / ms(m.elapsed).max(1e-9),
            ));
        }
        if let Some(m) = sum_off {
            out.push((
                "query_sum_postgres_over_host",
                ms(*pg) / ms(m.elapsed).max(1e-9),
            ));
        }
    }
    if let Some(m) = sum_on {
        out.push(("pe_tuples_per_s", m.tuples_per_pe_second()));
        out.push(("pe_bytes_touched_per_s", m.touched_bytes_per_pe_second()));
        out.push(("pe_page_bytes_per_s", m.scan_bytes_per_pe_second()));
    }
    if let Some(r) = memory_rate {
        out.push(("memory_read_bytes_per_s", r.sequential));
        out.push(("page_spans_read_bytes_per_s", r.page_spans));
    }
    if let Some(m) = find("query-udf", true) {
        out.push(("query_udf_pe_tuples_per_s", m.tuples_per_pe_second()));
    }
    out
}
