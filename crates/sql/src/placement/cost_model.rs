//! The `auto` placement cost model (DESIGN.md §9, in the spirit of
//! hybridNDP): compare the host running the scan — moving every page it
//! does not hold over the link, then evaluating every row — with the
//! device evaluating rows on its PEs and moving only the result.
//!
//! ```text
//!  host   = (1 − resident) · pages · (page / link_bw + latency)  +  rows · host_row_cost
//!  device = call_overhead + rows · device_row_cost / PEs
//!           + result_rows · returned_row_cost + result_bytes / link_bw
//! ```
//!
//! Row widths come from the schema (variable-width columns are assumed
//! 32 bytes), result sizes from a default selectivity of 1/3 for a
//! filtered scan (1 without a filter) and 1,000 groups for a grouped
//! aggregate. A row the device returns costs more than the host reading
//! it itself (encoded on the device, decoded into values on the host),
//! so a scan that keeps most rows stays on the host, and one whose
//! result is an aggregate goes to the device. The constants take the
//! link's bandwidth and per-request latency from the active link preset
//! (every host miss is one request of one page).

use ndpdb_formats::page::PAGE_SIZE;
use ndpdb_host::database::TableState;
use ndpdb_host::Database;
use ndpdb_link::ndp::NdpOp;

/// Bandwidth assumed for an unthrottled (in-process) link.
const UNTHROTTLED_BYTES_PER_SEC: f64 = 4.0e9;
/// Per-row costs of the scan core (docs/BENCHMARKS.md, "The cost model's
/// constants"): an aggregate over a host scan, and over one PE.
const HOST_ROW_NS: f64 = 100.0;
const DEVICE_ROW_NS: f64 = 50.0;
/// A row the device returns for the host to go on with, beyond what the
/// host's own scan pays for it (encoding, the link, decoding).
const RETURNED_ROW_NS: f64 = 700.0;
/// Per written row (update NDP).
const HOST_WRITE_NS: f64 = 5000.0;
const DEVICE_WRITE_NS: f64 = 1500.0;
const CALL_OVERHEAD_US: f64 = 300.0;
const FILTER_SELECTIVITY: f64 = 1.0 / 3.0;
const GROUPS: f64 = 1000.0;
/// Tables smaller than this stay on the host.
const MIN_ROWS: u64 = 10_000;

#[derive(Clone, Debug)]
pub struct Estimate {
    pub rows: u64,
    pub table_bytes: f64,
    pub resident: f64,
    pub result_bytes: f64,
    pub host_us: f64,
    pub device_us: f64,
    pub pes: u16,
}

impl Estimate {
    pub fn device_wins(&self) -> bool {
        self.rows >= MIN_ROWS && self.device_us < self.host_us
    }

    pub fn describe(&self) -> String {
        format!(
            "auto: est. rows {}, table {:.1} MB ({:.0}% in host buffer pool), result {:.1} kB; cost host {:.0} µs vs device {:.0} µs on {} PEs",
            self.rows,
            self.table_bytes / 1e6,
            self.resident * 100.0,
            self.result_bytes / 1e3,
            self.host_us,
            self.device_us,
            self.pes
        )
    }
}

fn width(ts: &TableState, cols: Option<&[u32]>) -> f64 {
    let w = |t: &ndpdb_formats::DataType| t.fixed_width().unwrap_or(32) as f64;
    match cols {
        Some(c) => c.iter().map(|&i| w(&ts.types[i as usize])).sum::<f64>() + 4.0,
        None => ts.types.iter().map(w).sum::<f64>() + 32.0,
    }
}

/// The pages `ts` takes, estimated from its rows and column widths.
pub fn table_pages(ts: &TableState) -> f64 {
    (ts.vids.vid_count() as f64 * width(ts, None) / PAGE_SIZE as f64).max(1.0)
}

/// The two costs of running `op` over `ts` (`filtered`: the scan has a
/// filter; without one every row comes back).
pub fn estimate(db: &Database, ts: &TableState, op: &NdpOp, filtered: bool, pes: u16) -> Estimate {
    let rows = ts.vids.vid_count();
    let selectivity = if filtered { FILTER_SELECTIVITY } else { 1.0 };
    let table_pages = table_pages(ts);
    let resident_pages = db.stat("buffer.resident_pages") as f64;
    let resident = (resident_pages / table_pages).min(1.0);
    let result_bytes = match op {
        NdpOp::Scan { columns } | NdpOp::LockRows { columns } => {
            rows as f64 * selectivity * width(ts, Some(columns))
        }
        NdpOp::Aggregate { groups, aggs } => {
            let g = if groups.is_empty() { 1.0 } else { GROUPS };
            g * 24.0 * (groups.len() + aggs.len()) as f64
        }
        // ΔVID entries (24 B) and ΔL2P entries come back.
        NdpOp::Update { .. } | NdpOp::Delete => rows as f64 * selectivity * 26.0,
        // GC is never placed: it always runs on the device.
        NdpOp::Gc { .. } => rows as f64 * 24.0,
    };
    // Writing a version: on the host lock + certify + encode + WAL redo
    // of the whole record; on the device lock + encode into its own page.
    let written = if op.modifies() {
        rows as f64 * selectivity
    } else {
        0.0
    };
    // Rows the host goes on with (an update's ΔMaps entries are not rows).
    let returned = match op {
        NdpOp::Scan { .. } | NdpOp::LockRows { .. } => rows as f64 * selectivity,
        _ => 0.0,
    };
    let pes = if pes == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get()) as u16
    } else {
        pes
    };
    let model = db.link_model();
    let bw = model.bytes_per_sec.unwrap_or(UNTHROTTLED_BYTES_PER_SEC);
    let latency_us = model.latency.as_secs_f64() * 1e6;
    let link_us = |bytes: f64| bytes / bw * 1e6;
    let missing_pages = (1.0 - resident) * table_pages;
    let host_us = missing_pages * (link_us(PAGE_SIZE as f64) + latency_us)
        + rows as f64 * HOST_ROW_NS / 1e3
        + written * HOST_WRITE_NS / 1e3;
    let device_us = CALL_OVERHEAD_US
        + 4.0 * latency_us
        + rows as f64 * DEVICE_ROW_NS / 1e3 / pes as f64
        + written * DEVICE_WRITE_NS / 1e3 / pes as f64
        + returned * RETURNED_ROW_NS / 1e3
        + link_us(result_bytes);
    Estimate {
        rows,
        table_bytes: rows as f64 * width(ts, None),
        resident,
        result_bytes,
        host_us,
        device_us,
        pes,
    }
}
