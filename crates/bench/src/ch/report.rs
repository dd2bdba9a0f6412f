//! What a CH-benCHmark run reports: OLTP throughput alone and beside the
//! analytical queries (and, with phases, the time to get back), the
//! per-query latency table with every target side by side, the answers
//! against PostgreSQL's, CSV files and PNG plots over time.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use super::answers::{self, Verdict};
use super::olap::PowerQuery;
use super::queries::QUERIES;
use super::{ChConfig, Mix, ModeRun, TargetResult};
use crate::plot::{line_chart, Series};
use crate::report::quantile_us;
use crate::tpcc::txn::Kind;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The geometric mean of the successful queries' times (ms) and how many
/// succeeded.
pub fn geomean_ms(power: &[PowerQuery]) -> (f64, usize) {
    let ok: Vec<f64> = power
        .iter()
        .filter(|q| q.answer.is_ok())
        .map(|q| ms(q.time).max(0.001))
        .collect();
    if ok.is_empty() {
        return (0.0, 0);
    }
    let mean = (ok.iter().map(|x| x.ln()).sum::<f64>() / ok.len() as f64).exp();
    (mean, ok.len())
}

/// One line for a finished power run.
pub fn power_line(label: &str, power: &[PowerQuery]) -> String {
    let (g, n) = geomean_ms(power);
    let total: Duration = power.iter().map(|q| q.time).sum();
    format!(
        "  {label}: power run {n}/{} queries answered, geometric mean {g:.1} ms, all {:.1} s",
        power.len(),
        total.as_secs_f64()
    )
}

/// Committed transactions per second between two moments (seconds since
/// the start of the mix), from the samples.
fn rate(samples: &[super::Sample], from: f64, to: f64, f: impl Fn(&super::Sample) -> u64) -> f64 {
    let first = samples
        .iter()
        .rev()
        .find(|s| s.at <= from + 1e-6)
        .or(samples.first());
    let last = samples.iter().rev().find(|s| s.at <= to + 1e-6);
    match (first, last) {
        (Some(a), Some(b)) if b.at > a.at => (f(b) - f(a)) as f64 / (b.at - a.at),
        _ => 0.0,
    }
}

/// What the OLTP side did in each part of a mix.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    /// Transactions/s before the OLAP clients start (the first 10 % of
    /// that part skipped as warm-up).
    pub alone: f64,
    /// Transactions/s while they run.
    pub beside: f64,
    /// Transactions/s after they stop (phases only).
    pub after: Option<f64>,
    /// Seconds from their stop until 5 s of throughput reach 90 % of
    /// `alone` again (phases only; `None`: not within the run).
    pub recovery: Option<f64>,
    /// New-Orders per minute alone and beside.
    pub tpmc_alone: f64,
    pub tpmc_beside: f64,
    /// Analytical queries completed per hour beside the OLTP clients.
    pub queries_per_hour: f64,
}

impl Phases {
    /// OLTP throughput beside the analytics as a share of alone.
    pub fn share(&self) -> f64 {
        if self.alone > 0.0 {
            self.beside / self.alone
        } else {
            0.0
        }
    }
}

pub fn phases(m: &Mix, cfg: &ChConfig) -> Phases {
    let s = &m.samples;
    let end = s.last().map_or(0.0, |x| x.at);
    let (w0, w1) = m.olap_window;
    let warm = w0 * 0.1;
    let tx = |x: &super::Sample| x.committed;
    let no = |x: &super::Sample| x.new_orders;
    let mut p = Phases {
        alone: rate(s, warm, w0, tx),
        beside: rate(s, w0, w1, tx),
        tpmc_alone: rate(s, warm, w0, no) * 60.0,
        tpmc_beside: rate(s, w0, w1, no) * 60.0,
        queries_per_hour: rate(s, w0, w1, |x| x.queries) * 3600.0,
        ..Phases::default()
    };
    if cfg.phases {
        p.after = Some(rate(s, w1, end, tx));
        let target = 0.9 * p.alone;
        p.recovery = s
            .iter()
            .filter(|x| x.at >= w1 && x.at + 5.0 <= end)
            .find(|x| rate(s, x.at, x.at + 5.0, tx) >= target)
            .map(|x| (x.at - w1).max(0.0));
    }
    p
}

/// OLTP throughput while each analytical query ran: per query (in
/// `QUERIES` order), the transactions/s of the seconds whose middle
/// fell inside one of its runs, and how many seconds those were. With
/// several OLAP clients a second counts for every query running then.
pub fn oltp_by_query(m: &Mix) -> Vec<Option<(f64, f64)>> {
    let mut sums = vec![(0u64, 0.0f64); m.olap.len()];
    for w in m.samples.windows(2) {
        let mid = (w[0].at + w[1].at) / 2.0;
        for (q, sum) in m.olap.iter().zip(sums.iter_mut()) {
            if q.spans.iter().any(|&(a, b)| a <= mid && mid < b) {
                sum.0 += w[1].committed - w[0].committed;
                sum.1 += w[1].at - w[0].at;
            }
        }
    }
    sums.into_iter()
        .map(|(tx, secs)| (secs > 0.0).then(|| (tx as f64 / secs, secs)))
        .collect()
}

/// The report lines of one mix.
pub fn mix_lines(m: &Mix, cfg: &ChConfig) -> Vec<String> {
    let p = phases(m, cfg);
    let mut lines = vec![format!(
        "OLTP alone {:.1} tx/s (tpmC {:.0}); beside {} OLAP client(s) {:.1} tx/s (tpmC {:.0}) = {:.0} % of alone; {:.0} analytical queries/hour",
        p.alone,
        p.tpmc_alone,
        cfg.olap_clients,
        p.beside,
        p.tpmc_beside,
        p.share() * 100.0,
        p.queries_per_hour
    )];
    if let Some(after) = p.after {
        lines.push(format!(
            "after the analytics {after:.1} tx/s; back to 90 % of alone {}",
            p.recovery
                .map_or("not within the run".to_string(), |r| format!(
                    "after {r:.0} s"
                ))
        ));
    }
    lines.push(format!(
        "OLTP over the whole mix: tpmC {:.0}, retries {}, errors {}",
        m.oltp.tpmc(),
        m.oltp.retries(),
        m.oltp.errors()
    ));
    for q in &m.olap {
        for (code, (n, first)) in &q.errors {
            lines.push(format!("{} failed {code} × {n}, first: {first}", q.name));
        }
    }
    lines
}

/// Every run of every target, in order.
fn all_runs(results: &[TargetResult]) -> Vec<&ModeRun> {
    results.iter().flat_map(|r| r.runs.iter()).collect()
}

/// PostgreSQL's power run, when one ran.
fn postgres_power(results: &[TargetResult]) -> Option<&[PowerQuery]> {
    all_runs(results)
        .into_iter()
        .find(|r| r.postgres && !r.power.is_empty())
        .map(|r| r.power.as_slice())
}

/// Each run's verdicts against PostgreSQL (PostgreSQL's own: none).
fn verdicts(results: &[TargetResult]) -> Vec<Vec<Verdict>> {
    let pg = postgres_power(results);
    all_runs(results)
        .iter()
        .map(|r| {
            if r.postgres {
                Vec::new()
            } else {
                answers::compare(&r.power, pg)
            }
        })
        .collect()
}

/// Answers that differ from PostgreSQL's, over every ndpdb run.
pub fn differences(results: &[TargetResult]) -> usize {
    verdicts(results)
        .iter()
        .flatten()
        .filter(|v| matches!(v, Verdict::Differs(_)))
        .count()
}

/// The side-by-side tables: power-run latency per query, OLTP alone and
/// beside the analytics, and the answers against PostgreSQL's.
pub fn side_by_side(results: &[TargetResult], cfg: &ChConfig) -> Vec<String> {
    let runs = all_runs(results);
    let has_pg = runs.iter().any(|r| r.postgres);
    let mut header: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    if !has_pg {
        header.push("PostgreSQL".into());
    }
    let pad = if has_pg { "" } else { " not run |" };
    let mut lines = vec![
        match cfg.power_repeat {
            0 | 1 => "power run (each query once on the loaded database), ms:".to_string(),
            n => format!(
                "power run (the median of {n} runs of each query on the loaded database), ms:"
            ),
        },
        format!("| query | {} |", header.join(" | ")),
        format!("|---|{}", "---:|".repeat(header.len())),
    ];
    for (i, (name, _)) in QUERIES.iter().enumerate() {
        let cells: Vec<String> = runs
            .iter()
            .map(|r| match r.power.get(i) {
                Some(q) if q.answer.is_ok() => format!("{:.1}", ms(q.time)),
                Some(q) => format!(
                    "error {}",
                    q.answer.as_ref().err().map_or("", |e| &e[..5.min(e.len())])
                ),
                None => "-".into(),
            })
            .collect();
        lines.push(format!("| {name} | {} |{pad}", cells.join(" | ")));
    }
    let geo: Vec<String> = runs
        .iter()
        .map(|r| {
            let (g, n) = geomean_ms(&r.power);
            if n == QUERIES.len() {
                format!("{g:.1}")
            } else {
                format!("{g:.1} ({n}/22)")
            }
        })
        .collect();
    lines.push(format!("| geometric mean | {} |{pad}", geo.join(" | ")));
    lines.push(String::new());
    lines.push("OLTP beside the analytical queries:".into());
    lines.push(format!("| | {} |", header.join(" | ")));
    lines.push(format!("|---|{}", "---:|".repeat(header.len())));
    let ph: Vec<Option<Phases>> = runs
        .iter()
        .map(|r| r.mix.as_ref().map(|m| phases(m, cfg)))
        .collect();
    let mut row = |name: &str, f: &dyn Fn(&Phases) -> String| {
        let cells: Vec<String> = ph
            .iter()
            .map(|p| p.as_ref().map_or("-".into(), f))
            .collect();
        lines.push(format!("| {name} | {} |{pad}", cells.join(" | ")));
    };
    row("tx/s alone", &|p| format!("{:.1}", p.alone));
    row("tx/s beside OLAP", &|p| format!("{:.1}", p.beside));
    row("beside / alone", &|p| format!("{:.0} %", p.share() * 100.0));
    row("tpmC alone", &|p| format!("{:.0}", p.tpmc_alone));
    row("tpmC beside OLAP", &|p| format!("{:.0}", p.tpmc_beside));
    row("queries/hour", &|p| format!("{:.0}", p.queries_per_hour));
    if cfg.phases {
        row("tx/s after OLAP", &|p| {
            p.after.map_or("-".into(), |a| format!("{a:.1}"))
        });
        row("recovery to 90 %", &|p| {
            p.recovery
                .map_or("not within the run".into(), |r| format!("{r:.0} s"))
        });
    }
    if runs.iter().any(|r| r.mix.is_some()) {
        by_kind_lines(&runs, cfg, pad, &header, &mut lines);
        by_query_lines(&runs, &ph, pad, &header, &mut lines);
    }
    lines.push(String::new());
    let verdicts = verdicts(results);
    if postgres_power(results).is_none() {
        lines.push("answers: not compared (no PostgreSQL target in this run)".into());
    } else {
        for (r, v) in runs.iter().zip(&verdicts) {
            if r.postgres {
                continue;
            }
            let same = v.iter().filter(|v| v.matches()).count();
            lines.push(format!(
                "answers of {} against PostgreSQL: {same}/{} the same",
                r.label,
                v.len()
            ));
            for (q, v) in r.power.iter().zip(v) {
                if *v != Verdict::Identical {
                    lines.push(format!("  {}: {}", q.name, v.label()));
                }
            }
        }
    }
    lines
}

/// Mean latency (ms) of each TPC-C transaction type completed between
/// two moments of a mix; `None`: none completed.
pub fn kind_latency_ms(m: &Mix, from: f64, to: f64) -> Vec<Option<f64>> {
    let at = |t: f64| {
        m.samples
            .iter()
            .rev()
            .find(|s| s.at <= t + 1e-6)
            .or(m.samples.first())
    };
    let (Some(a), Some(b)) = (at(from), at(to)) else {
        return vec![None; Kind::ALL.len()];
    };
    a.kinds
        .iter()
        .zip(&b.kinds)
        .map(|(&(n0, us0), &(n1, us1))| {
            let n = n1.saturating_sub(n0);
            (n > 0).then(|| us1.saturating_sub(us0) as f64 / n as f64 / 1e3)
        })
        .collect()
}

/// The table of each transaction type's mean latency alone, beside the
/// analytics and (phases) after them: which transactions the analytics
/// slow down.
fn by_kind_lines(
    runs: &[&ModeRun],
    cfg: &ChConfig,
    pad: &str,
    header: &[String],
    lines: &mut Vec<String>,
) {
    lines.push(String::new());
    lines.push(if cfg.phases {
        "OLTP mean latency per transaction type (ms; alone / beside / after the analytics):".into()
    } else {
        "OLTP mean latency per transaction type (ms; alone / beside the analytics):".into()
    });
    lines.push(format!("| transaction | {} |", header.join(" | ")));
    lines.push(format!("|---|{}", "---:|".repeat(header.len())));
    let per_run: Vec<Option<[Vec<Option<f64>>; 3]>> = runs
        .iter()
        .map(|r| {
            r.mix.as_ref().map(|m| {
                let (w0, w1) = m.olap_window;
                let end = m.samples.last().map_or(0.0, |x| x.at);
                [
                    kind_latency_ms(m, w0 * 0.1, w0),
                    kind_latency_ms(m, w0, w1),
                    kind_latency_ms(m, w1, end),
                ]
            })
        })
        .collect();
    let phases = if cfg.phases { 3 } else { 2 };
    for (k, kind) in Kind::ALL.iter().enumerate() {
        let cells: Vec<String> = per_run
            .iter()
            .map(|p| match p {
                Some(parts) => parts[..phases]
                    .iter()
                    .map(|v| v[k].map_or("-".into(), |x| format!("{x:.2}")))
                    .collect::<Vec<_>>()
                    .join(" / "),
                None => "-".into(),
            })
            .collect();
        lines.push(format!("| {} | {} |{pad}", kind.name(), cells.join(" | ")));
    }
}

/// The table of OLTP throughput while each query ran, as a share of
/// OLTP alone (`oltp_by_query`).
fn by_query_lines(
    runs: &[&ModeRun],
    ph: &[Option<Phases>],
    pad: &str,
    header: &[String],
    lines: &mut Vec<String>,
) {
    lines.push(String::new());
    lines.push(
        "OLTP while each analytical query ran (tx/s, share of alone; seconds attributed):".into(),
    );
    lines.push(format!("| query | {} |", header.join(" | ")));
    lines.push(format!("|---|{}", "---:|".repeat(header.len())));
    let per_run: Vec<Vec<Option<(f64, f64)>>> = runs
        .iter()
        .map(|r| r.mix.as_ref().map(oltp_by_query).unwrap_or_default())
        .collect();
    for (i, (name, _)) in QUERIES.iter().enumerate() {
        let cells: Vec<String> = per_run
            .iter()
            .zip(ph)
            .map(|(by, p)| match (by.get(i).copied().flatten(), p) {
                (Some((rate, secs)), Some(p)) if p.alone > 0.0 => {
                    format!("{rate:.0} ({:.0} %; {secs:.0} s)", rate / p.alone * 100.0)
                }
                _ => "-".into(),
            })
            .collect();
        lines.push(format!("| {name} | {} |{pad}", cells.join(" | ")));
    }
}

/// `ch-queries.csv`: one row per run and query.
pub fn queries_csv(results: &[TargetResult]) -> String {
    let mut out =
        String::from("run,query,power_ms,answer,mix_completed,mix_p50_us,mix_p95_us,mix_errors,oltp_tx_per_s_while_running\n");
    let verdicts = verdicts(results);
    for (r, v) in all_runs(results).iter().zip(&verdicts) {
        let by_query = r.mix.as_ref().map(oltp_by_query).unwrap_or_default();
        for (i, q) in r.power.iter().enumerate() {
            let answer = match (&q.answer, v.get(i)) {
                (Err(e), _) => format!("error {}", e.split(' ').next().unwrap_or("")),
                (Ok(_), Some(v)) => v.label().replace(',', ";"),
                (Ok(_), None) => "reference".into(),
            };
            let (done, p50, p95, errors) = match r.mix.as_ref().and_then(|m| m.olap.get(i)) {
                Some(s) => (
                    s.latency.len().to_string(),
                    quantile_us(&s.latency, 0.5),
                    quantile_us(&s.latency, 0.95),
                    s.errors.values().map(|e| e.0).sum::<u64>().to_string(),
                ),
                None => ("".into(), "".into(), "".into(), "".into()),
            };
            let oltp = match by_query.get(i).copied().flatten() {
                Some((rate, _)) => format!("{rate:.1}"),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "{},{},{:.3},{},{done},{p50},{p95},{errors},{oltp}",
                r.label,
                q.name,
                ms(q.time),
                answer
            );
        }
    }
    out
}

/// `ch-timeseries.csv`: per run and second, transactions/s, tpmC and
/// queries completed in that second, and whether the OLAP clients ran.
pub fn timeseries_csv(results: &[TargetResult]) -> String {
    let mut out = String::from("run,second,tx_per_s,tpmc,queries,olap_running\n");
    for r in all_runs(results) {
        let Some(m) = &r.mix else { continue };
        for w in m.samples.windows(2) {
            let dt = (w[1].at - w[0].at).max(1e-3);
            let running = w[1].at > m.olap_window.0 && w[0].at < m.olap_window.1;
            let _ = writeln!(
                out,
                "{},{:.1},{:.1},{:.0},{},{}",
                r.label,
                w[1].at,
                (w[1].committed - w[0].committed) as f64 / dt,
                (w[1].new_orders - w[0].new_orders) as f64 / dt * 60.0,
                w[1].queries - w[0].queries,
                running as u8
            );
        }
    }
    out
}

/// A rate over a trailing window of `span` seconds at each sample.
fn smoothed(m: &Mix, span: f64, f: impl Fn(&super::Sample) -> u64) -> Vec<(f64, f64)> {
    m.samples
        .iter()
        .filter(|s| s.at >= span)
        .map(|s| (s.at, rate(&m.samples, s.at - span, s.at, &f)))
        .collect()
}

/// `ch-oltp.png` (transactions/s over time, 5 s window) and `ch-olap.png`
/// (analytical queries per hour, 60 s window), one line per run.
/// `Ok(false)`: no font, no plots.
pub fn plots(dir: &Path, results: &[TargetResult]) -> Result<bool, String> {
    let runs: Vec<&ModeRun> = all_runs(results)
        .into_iter()
        .filter(|r| r.mix.is_some())
        .collect();
    let oltp: Vec<Series> = runs
        .iter()
        .filter_map(|r| {
            r.mix.as_ref().map(|m| Series {
                label: r.label.clone(),
                points: smoothed(m, 5.0, |s| s.committed),
            })
        })
        .collect();
    let olap: Vec<Series> = runs
        .iter()
        .filter_map(|r| {
            r.mix.as_ref().map(|m| Series {
                label: r.label.clone(),
                points: smoothed(m, 60.0, |s| s.queries)
                    .into_iter()
                    .map(|(t, q)| (t, q * 3600.0))
                    .collect(),
            })
        })
        .collect();
    let a = line_chart(
        &dir.join("ch-oltp.png"),
        "CH-benCHmark: TPC-C throughput (OLAP clients in the middle)",
        "seconds",
        "transactions/s (5 s window)",
        &oltp,
    )?;
    let b = line_chart(
        &dir.join("ch-olap.png"),
        "CH-benCHmark: analytical queries",
        "seconds",
        "queries/hour (60 s window)",
        &olap,
    )?;
    Ok(a && b)
}

/// `ch-explain.txt`: each ndpdb run's plans, placement included.
pub fn explain_text(results: &[TargetResult]) -> String {
    let mut out = String::new();
    for r in all_runs(results) {
        for (q, plan) in &r.explain {
            let _ = writeln!(out, "== {} {q}\n{plan}\n", r.label);
        }
    }
    out
}
