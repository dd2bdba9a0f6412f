//! The charts of a CH-benCHmark run (PNG beside the CSV): time per query
//! and link, host only against NDP (and PostgreSQL); device time with and
//! without the preloader per NVM profile; Query-SUM over page objects in
//! RADOS by objects in flight; the selectivity and projectivity sweeps.
//!
//! ```text
//!  Measurement labels ─► query-sum / query-udf[@link]  ─► bar charts
//!                        preload-{on,off}-<nvm>        ─► preloader.png
//!                        fan-out-<n>                   ─► fan-out.png
//!                        selectivity-<p>, projectivity-<k> ─► line charts
//! ```

use std::path::Path;
use std::time::Duration;

use crate::plot::{bar_chart, line_chart, Series};

use super::measure::Measurement;

/// Every chart of a run under `out`; `false` when no font was found.
pub(super) fn plots(
    out: &Path,
    all: &[Measurement],
    postgres: Option<Duration>,
) -> Result<bool, String> {
    if !query_charts(out, all, postgres)? {
        return Ok(false);
    }
    sweep_charts(out, all, postgres)?;
    Ok(true)
}

fn ms(m: &Measurement) -> f64 {
    m.elapsed.as_secs_f64() * 1e3
}

/// One bar chart per query, host only against NDP per link preset and
/// link (and PostgreSQL's bar for Query-SUM).
fn query_charts(
    out: &Path,
    all: &[Measurement],
    postgres: Option<Duration>,
) -> Result<bool, String> {
    // One chart per query (Query-UDF takes ~100× Query-SUM's time); the
    // PostgreSQL bar where PostgreSQL ran the query (it has no SPN UDF).
    for (label, file, title) in [
        (
            "query-sum",
            "query-sum.png",
            "Query-SUM (CH Q6 on ORDER-LINE)",
        ),
        ("query-udf", "query-udf.png", "Query-UDF (SPN inference)"),
    ] {
        let mut cats = Vec::new();
        let mut values = Vec::new();
        // By link preset, then the measurements over other links
        // (`query-sum@rados`: the device's store in RADOS), by link.
        fn link_of<'m>(m: &'m Measurement, label: &str) -> Option<&'m str> {
            m.label.strip_prefix(label)?.strip_prefix('@')
        }
        for m in all
            .iter()
            .filter(|m| (m.label == label || link_of(m, label).is_some()) && !m.ndp)
        {
            let on = all
                .iter()
                .find(|o| o.label == m.label && o.preset == m.preset && o.ndp);
            cats.push(link_of(m, label).map_or_else(|| m.preset.clone(), str::to_string));
            let mut v = vec![ms(m), on.map_or(0.0, ms)];
            if let (Some(pg), "query-sum") = (postgres, label) {
                v.push(pg.as_secs_f64() * 1e3);
            }
            values.push(v);
        }
        if cats.is_empty() {
            continue;
        }
        let series: &[&str] = if postgres.is_some() && label == "query-sum" {
            &["ndpdb host only", "ndpdb NDP", "PostgreSQL 15"]
        } else {
            &["ndpdb host only", "ndpdb NDP"]
        };
        if !bar_chart(&out.join(file), title, "time (ms)", &cats, series, &values)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The preloader bars, the fan-out line and the selectivity and
/// projectivity sweeps, for the measurements a run made of them.
fn sweep_charts(out: &Path, all: &[Measurement], postgres: Option<Duration>) -> Result<(), String> {
    let sweep = |prefix: &str,
                 ndp: bool,
                 x: &dyn Fn(&str) -> f64,
                 y: &dyn Fn(&Measurement) -> f64| Series {
        label: format!("ndp {}", if ndp { "on" } else { "off" }),
        points: all
            .iter()
            .filter(|m| m.label.starts_with(prefix) && m.ndp == ndp)
            .map(|m| (x(&m.label[prefix.len()..]), y(m)))
            .collect(),
    };
    let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
    let nvm: Vec<&Measurement> = all
        .iter()
        .filter(|m| m.label.starts_with("preload-on-"))
        .collect();
    if !nvm.is_empty() {
        let mut cats = Vec::new();
        let mut values = Vec::new();
        for on in nvm {
            let profile = &on.label["preload-on-".len()..];
            let off = all
                .iter()
                .find(|m| m.label == format!("preload-off-{profile}"));
            cats.push(format!("NVM {profile}"));
            values.push(vec![
                off.map_or(0.0, |m| m.device_micros as f64 / 1e3),
                on.device_micros as f64 / 1e3,
            ]);
        }
        bar_chart(
            &out.join("preloader.png"),
            "Query-SUM on the device: preloader off vs on per NVM latency",
            "device time (ms)",
            &cats,
            &["no preloader", "preloader"],
            &values,
        )?;
    }
    if all.iter().any(|m| m.label.starts_with("fan-out-")) {
        let mut series = vec![Series {
            label: "ndpdb NDP, pages in RADOS (3 OSDs)".into(),
            points: all
                .iter()
                .filter_map(|m| Some((num(m.label.strip_prefix("fan-out-")?), ms(m))))
                .collect(),
        }];
        if let Some(pg) = postgres {
            let x: Vec<f64> = series[0].points.iter().map(|p| p.0).collect();
            let pg = pg.as_secs_f64() * 1e3;
            series.push(Series {
                label: "PostgreSQL 15 (local heap)".into(),
                points: x.into_iter().map(|x| (x, pg)).collect(),
            });
        }
        line_chart(
            &out.join("fan-out.png"),
            "Query-SUM in the OSDs: page objects called at once",
            "objects in flight",
            "time (ms)",
            &series,
        )?;
    }
    if all.iter().any(|m| m.label.starts_with("selectivity-")) {
        line_chart(
            &out.join("selectivity.png"),
            "Selectivity sweep: sum(ol_amount) where ol_delivery_d < cutoff",
            "selectivity (%)",
            "time (ms)",
            &[
                sweep("selectivity-", false, &num, &ms),
                sweep("selectivity-", true, &num, &ms),
            ],
        )?;
        let mb = |m: &Measurement| m.data_to_host as f64 / 1e6;
        line_chart(
            &out.join("projectivity.png"),
            "Projectivity sweep: rows of 10 % selectivity, k columns",
            "columns returned",
            "time (ms)",
            &[
                sweep("projectivity-", false, &num, &ms),
                sweep("projectivity-", true, &num, &ms),
            ],
        )?;
        line_chart(
            &out.join("projectivity-bytes.png"),
            "Projectivity sweep: data plane bytes to the host",
            "columns returned",
            "MB to host",
            &[
                sweep("projectivity-", false, &num, &mb),
                sweep("projectivity-", true, &num, &mb),
            ],
        )?;
    }
    Ok(())
}
