//! Latency histograms and the figures a run reports.

use std::time::Duration;

use hdrhistogram::Histogram;
use ndpdb_host::Database;

/// Microsecond latency histogram (1 µs … 60 s, 3 significant digits).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// The latency at quantile `p` in µs, or "-" for no samples.
pub fn quantile_us(h: &Histogram<u64>, p: f64) -> String {
    if h.is_empty() {
        "-".to_string()
    } else {
        h.value_at_quantile(p).to_string()
    }
}

/// A counter snapshot to report differences over a phase.
#[derive(Clone, Debug, Default)]
pub struct StatsDelta {
    before: Vec<(String, i64)>,
}

impl StatsDelta {
    pub fn start(db: &Database) -> StatsDelta {
        StatsDelta { before: db.stats() }
    }

    /// `(name, after - before)` for every counter.
    pub fn finish(&self, db: &Database) -> Vec<(String, i64)> {
        db.stats()
            .into_iter()
            .map(|(k, v)| {
                let b = self
                    .before
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map_or(0, |(_, x)| *x);
                (k, v - b)
            })
            .collect()
    }
}

pub fn get(rows: &[(String, i64)], name: &str) -> i64 {
    rows.iter().find(|(k, _)| k == name).map_or(0, |(_, v)| *v)
}

pub fn human_bytes(b: i64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

/// Buffer hit rate and link traffic over a phase, one line each.
pub fn engine_lines(delta: &[(String, i64)]) -> Vec<String> {
    let hits = get(delta, "buffer.hits");
    let misses = get(delta, "buffer.misses");
    let rate = if hits + misses > 0 {
        100.0 * hits as f64 / (hits + misses) as f64
    } else {
        100.0
    };
    let mut lines = vec![format!(
        "buffer pool: {hits} hits, {misses} misses, hit rate {rate:.2}%"
    )];
    for plane in ["data", "control", "sync"] {
        lines.push(format!(
            "link {plane:<7}: to device {} in {} msgs, to host {} in {} msgs",
            human_bytes(get(delta, &format!("link.{plane}.to_device.bytes"))),
            get(delta, &format!("link.{plane}.to_device.messages")),
            human_bytes(get(delta, &format!("link.{plane}.to_host.bytes"))),
            get(delta, &format!("link.{plane}.to_host.messages")),
        ));
    }
    lines
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Mean throughput of the samples `(ms, ops/s, label)` whose label is `label`
/// (0 when there are none).
pub fn mean_where<L: PartialEq + Copy>(samples: &[(u64, f64, L)], label: L) -> f64 {
    let v: Vec<f64> = samples
        .iter()
        .filter(|s| s.2 == label)
        .map(|s| s.1)
        .collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// A timed benchmark phase: a progress bar on a terminal, a plain line at
/// its start and end otherwise. Ends when dropped.
pub struct Phase {
    label: String,
    bar: Option<indicatif::ProgressBar>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
    start: std::time::Instant,
}

impl Phase {
    pub fn start(label: &str, length: Duration) -> Phase {
        use std::io::IsTerminal;
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let start = std::time::Instant::now();
        let (bar, ticker) = if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(length.as_secs().max(1));
            bar.set_style(
                indicatif::ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} s")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_message(label.to_string());
            let (b, s) = (bar.clone(), stop.clone());
            let ticker = std::thread::spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    b.set_position(start.elapsed().as_secs());
                    std::thread::sleep(Duration::from_millis(250));
                }
            });
            (Some(bar), Some(ticker))
        } else {
            eprintln!("{label}: {} s …", length.as_secs());
            (None, None)
        };
        Phase {
            label: label.to_string(),
            bar,
            stop,
            ticker,
            start,
        }
    }
}

impl Drop for Phase {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        match &self.bar {
            Some(bar) => bar.finish_and_clear(),
            None => eprintln!(
                "{}: done in {:.1} s",
                self.label,
                self.start.elapsed().as_secs_f64()
            ),
        }
    }
}
