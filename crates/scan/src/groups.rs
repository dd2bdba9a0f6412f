//! Partial aggregates by group key, and their merge: what every worker of
//! a scan hands back (a device PE, a host scan thread) and how the
//! statement combines them into its result rows.
//!
//! ```text
//!  worker 1: Groups {key → (group values, Accs)} ─┐
//!  worker 2: Groups …                             ├─► merge_groups ─► rows
//!  worker n: Groups …                             ┘   [group values…, aggregates…]
//! ```
//!
//! The row path (`pipeline.rs`) and the page path's GROUP BY
//! (`group_page.rs`) fold into the same map, keyed by
//! [`Value::key_bytes`](ndpdb_formats::Value::key_bytes).

use std::collections::HashMap;

use ndpdb_formats::agg::{Acc, AggSpec};
use ndpdb_formats::{Result, Value};

/// Partial aggregates by group key, as workers produce them.
pub type Groups = HashMap<Vec<u8>, (Vec<Value>, Vec<Acc>)>;

/// Merges workers' partial aggregates and finishes them: rows of
/// `[group values…, aggregates…]`, one per group (one row without GROUP BY
/// even when no row qualified), groups in order of first appearance.
pub fn merge_groups(
    parts: impl IntoIterator<Item = Groups>,
    grouped: bool,
    aggs: &[AggSpec],
) -> Result<Vec<Vec<Value>>> {
    let mut merged: Groups = HashMap::new();
    let mut order: Vec<Vec<u8>> = Vec::new();
    for g in parts {
        for (key, (gv, accs)) in g {
            match merged.get_mut(&key) {
                Some((_, mine)) => {
                    for ((m, a), spec) in mine.iter_mut().zip(accs).zip(aggs) {
                        m.merge(spec, a)?;
                    }
                }
                None => {
                    order.push(key.clone());
                    merged.insert(key, (gv, accs));
                }
            }
        }
    }
    if merged.is_empty() && !grouped {
        order.push(Vec::new());
        merged.insert(
            Vec::new(),
            (Vec::new(), aggs.iter().map(Acc::new).collect()),
        );
    }
    let mut rows = Vec::with_capacity(order.len());
    for key in order {
        let Some((mut row, accs)) = merged.remove(&key) else {
            continue;
        };
        for (a, spec) in accs.into_iter().zip(aggs) {
            row.push(a.finish(spec)?);
        }
        rows.push(row);
    }
    Ok(rows)
}
