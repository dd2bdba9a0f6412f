//! `ndpdb bench statements`: how long a server takes to answer — or
//! refuse — statements of pathological shape, beside PostgreSQL.
//!
//! ```text
//!  for round in 1..=runs:            targets in turn, the first one
//!    for statement in the set:       alternating each round
//!      for target:  connect ─ simple Query ─ answer or SQLSTATE ─ time
//!  report: per statement and target, the median time and the outcome
//! ```
//!
//! The set is what a client can send to keep a server's core busy:
//! CASE nested 10,000 deep (240 KB; PostgreSQL's parser stack gives out at
//! 2,000), a 10 MB chain of additions (deeper than any server plans), a
//! 12 MB select list (PostgreSQL allows 1,664 entries) and a 10 MB `IN`
//! list that both answer. A statement's time is from sending its Query to
//! the end of the answer, over a fresh connection each.

use std::time::{Duration, Instant};

use crate::target::{wire_code, Endpoint};
use ndpdb_host::Result;

/// One statement of the set.
pub struct Shape {
    pub name: &'static str,
    pub sql: String,
}

/// The statements timed.
pub fn shapes() -> Vec<Shape> {
    let n = 10_000;
    let in_list = (0..1_250_000u64)
        .map(|i| (i * 3).to_string())
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        Shape {
            name: "CASE nested 10,000 deep",
            sql: format!(
                "SELECT {}1{}",
                "CASE WHEN TRUE THEN ".repeat(n),
                " END".repeat(n)
            ),
        },
        Shape {
            name: "10 MB of 1+1+…",
            sql: format!("SELECT 1{}", "+1".repeat(5_000_000 - 4)),
        },
        Shape {
            name: "select list of 4,000,000 items",
            sql: format!("SELECT 1{}", ", 1".repeat(3_999_999)),
        },
        Shape {
            name: "IN list of 1,250,000 numbers",
            sql: format!(
                "SELECT count(*) FROM (VALUES (3), (4), (3000000)) v(x) WHERE x IN ({in_list})"
            ),
        },
    ]
}

/// What one run of one statement gave.
#[derive(Clone, Debug)]
pub struct Timing {
    pub elapsed: Duration,
    /// "ok" or the SQLSTATE.
    pub outcome: String,
}

/// Runs `sql` once over a fresh connection to `endpoint`.
pub fn time(endpoint: &Endpoint, sql: &str) -> Result<Timing> {
    let mut client = endpoint.connect()?;
    let start = Instant::now();
    let outcome = match client.simple_query(sql) {
        Ok(_) => "ok".to_string(),
        Err(e) => wire_code(&e),
    };
    Ok(Timing {
        elapsed: start.elapsed(),
        outcome,
    })
}

/// The median of `times` (the upper one of an even count).
pub fn median(times: &[Duration]) -> Duration {
    let mut t = times.to_vec();
    t.sort();
    t.get(t.len() / 2).copied().unwrap_or_default()
}

/// For each statement, each target's timings over `runs` rounds, the
/// targets taken in turn with the first alternating per round. `log`
/// hears each run.
pub fn run(
    endpoints: &[Endpoint],
    runs: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<(Shape, Vec<Vec<Timing>>)>> {
    let mut out = Vec::new();
    for shape in shapes() {
        let mut per_target = vec![Vec::new(); endpoints.len()];
        for round in 0..runs {
            for k in 0..endpoints.len() {
                let t = (k + round) % endpoints.len();
                let timing = time(&endpoints[t], &shape.sql)?;
                log(&format!(
                    "{} · target {} · run {}: {:.1} ms, {}",
                    shape.name,
                    t + 1,
                    round + 1,
                    timing.elapsed.as_secs_f64() * 1e3,
                    timing.outcome
                ));
                per_target[t].push(timing);
            }
        }
        out.push((shape, per_target));
    }
    Ok(out)
}
