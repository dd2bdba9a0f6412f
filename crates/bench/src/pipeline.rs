//! NDP pipelines (update NDP §4.1): one REPEATABLE READ transaction that
//! locks a share of the YCSB table, updates it and deletes part of what it
//! updated — run as a device pipeline, with the pipeline broken (the
//! DELETE on the host, as before pipelines existed), host-only, and on
//! PostgreSQL. Every transaction rolls back, so the table stays as loaded.
//!
//! ```text
//!  BEGIN ISOLATION LEVEL REPEATABLE READ
//!  SELECT ycsb_key … WHERE p FOR UPDATE      device: stage of locked versions
//!  UPDATE … SET field8 = 'p' WHERE p         device: over the stage → new stage
//!  DELETE … WHERE p AND ycsb_key % 2 = 0     device: over the UPDATE's versions
//!  ROLLBACK
//! ```

use std::time::{Duration, Instant};

use ndpdb_host::Result;

use crate::target::Backend;
use crate::ycsb::TABLE;

/// How the transaction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// ndpdb, every statement on the device (`ndp = on`).
    DevicePipeline,
    /// ndpdb, FOR UPDATE and UPDATE on the device, the DELETE on the host.
    HostDelete,
    /// ndpdb, `ndp = off`.
    HostOnly,
    /// PostgreSQL.
    Postgres,
}

impl Variant {
    pub fn label(self) -> &'static str {
        match self {
            Variant::DevicePipeline => "ndpdb, device pipeline",
            Variant::HostDelete => "ndpdb, device FOR UPDATE + UPDATE, host DELETE",
            Variant::HostOnly => "ndpdb, host only",
            Variant::Postgres => "PostgreSQL",
        }
    }
}

/// One variant's figures: the transaction's duration in each round.
pub struct PipelineRun {
    pub variant: Variant,
    pub runs: Vec<Duration>,
}

impl PipelineRun {
    pub fn median(&self) -> Duration {
        let mut r = self.runs.clone();
        r.sort();
        r.get(r.len() / 2).copied().unwrap_or_default()
    }
}

/// The transaction of `variant` over `selectivity` % of the rows.
pub fn script(variant: Variant, selectivity: u32) -> String {
    let p = format!("ycsb_key % 100 < {selectivity}");
    let (setup, before_delete) = match variant {
        Variant::DevicePipeline => ("SET ndp = on; ", ""),
        Variant::HostDelete => ("SET ndp = on; ", "SET ndp = off; "),
        Variant::HostOnly => ("SET ndp = off; ", ""),
        Variant::Postgres => ("", ""),
    };
    format!(
        "{setup}BEGIN ISOLATION LEVEL REPEATABLE READ; \
         SELECT ycsb_key FROM {TABLE} WHERE {p} FOR UPDATE; \
         UPDATE {TABLE} SET field8 = 'p' WHERE {p}; \
         {before_delete}DELETE FROM {TABLE} WHERE {p} AND ycsb_key % 2 = 0; \
         ROLLBACK"
    )
}

/// Runs each variant `rounds` times on `backend`, alternating.
pub fn run(
    backend: &Backend,
    variants: &[Variant],
    selectivity: u32,
    rounds: usize,
    mut log: impl FnMut(&str),
) -> Result<Vec<PipelineRun>> {
    let mut out: Vec<PipelineRun> = variants
        .iter()
        .map(|&variant| PipelineRun {
            variant,
            runs: Vec::new(),
        })
        .collect();
    let mut conn = backend.connect()?;
    for round in 1..=rounds {
        for r in &mut out {
            let t = Instant::now();
            conn.batch(&script(r.variant, selectivity))?;
            let took = t.elapsed();
            log(&format!(
                "pipeline round {round}: {:<48} {:>9.1} ms",
                r.variant.label(),
                took.as_secs_f64() * 1e3
            ));
            r.runs.push(took);
        }
    }
    Ok(out)
}

/// `variant,round,ms` lines.
pub fn csv(runs: &[PipelineRun]) -> String {
    let mut s = String::from("variant,round,ms\n");
    for r in runs {
        for (i, t) in r.runs.iter().enumerate() {
            s.push_str(&format!(
                "{},{},{:.3}\n",
                r.variant.label(),
                i + 1,
                t.as_secs_f64() * 1e3
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_host_delete_variant_turns_ndp_off_mid_transaction() {
        let s = script(Variant::HostDelete, 10);
        let begin = s.find("BEGIN").unwrap();
        let off = s.find("SET ndp = off").unwrap();
        assert!(off > s.find("UPDATE").unwrap() && off < s.find("DELETE").unwrap());
        assert!(s.find("SET ndp = on").unwrap() < begin);
        assert!(!script(Variant::Postgres, 10).contains("ndp"));
        assert!(script(Variant::DevicePipeline, 10).ends_with("ROLLBACK"));
    }
}
