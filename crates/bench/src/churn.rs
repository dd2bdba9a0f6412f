//! `churn`: does the store stop growing under a steady update load, and
//! what does garbage collection cost the OLTP clients? YCSB-A runs all
//! the time while rounds of full-table UPDATEs (alternately on the host
//! and on the device for ndpdb) create a table's worth of garbage each;
//! the store's file size, the live data and the YCSB throughput are
//! sampled throughout.
//!
//! ```text
//!  file ▲        ┌─┐ ┌─┐ ┌─┐ ┌─┐ ┌─┐         without GC: one more table
//!  size │   ┌─┐ ┌┘ └─┘ └─┘ └─┘ └─┘ └─        per round; with it the file
//!       │ ──┘ └─┘                            levels off once freed pages
//!       │ ──────────────────────── live      are written again
//!       └──────────────────────────────▶ t
//!         round 1  2  3 …
//! ```

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ndpdb_host::Result;

use crate::clients::{thread_panic, Clients, ISOLATION};
use crate::target::Backend;
use crate::ycsb::{Workload, TABLE};

pub struct ChurnOptions {
    pub records: u64,
    pub threads: usize,
    pub rounds: u32,
    pub sample: Duration,
    /// Pause between rounds.
    pub pause: Duration,
    /// After the rounds: this long with YCSB-A alone and this long with
    /// VACUUM running back to back beside it, in alternating windows of
    /// half of it each.
    pub tail: Duration,
}

/// What ran beside YCSB-A during a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The update rounds (and autovacuum, as it decides).
    Rounds,
    /// YCSB-A alone.
    Quiet,
    /// VACUUM back to back.
    Vacuum,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Rounds => "rounds",
            Phase::Quiet => "quiet",
            Phase::Vacuum => "vacuum",
        }
    }
}

/// One sample of a run.
#[derive(Clone, Debug)]
pub struct Sample {
    pub ms: u64,
    pub ops_per_s: f64,
    pub file_bytes: i64,
    /// Live data as the target reports it (ndpdb: page space of the
    /// versions some snapshot needs, as of the last GC run); -1 unknown.
    pub live_bytes: i64,
    /// Share of the sample's time GC (ndpdb) was running.
    pub gc_share: f64,
    /// A bulk UPDATE ran during the sample.
    pub updating: bool,
    /// Rounds finished when the sample was taken.
    pub rounds_done: u32,
    pub phase: Phase,
}

/// One bulk UPDATE.
#[derive(Clone, Debug)]
pub struct Round {
    pub placement: &'static str,
    pub took: Duration,
    /// File size when it ended.
    pub file_bytes: i64,
}

pub struct ChurnRun {
    pub label: String,
    pub samples: Vec<Sample>,
    pub rounds: Vec<Round>,
    pub errors: u64,
    /// File size right after the load (all of it live data).
    pub loaded_bytes: i64,
    /// VACUUMs run in the vacuum phase.
    pub vacuums: u64,
}

/// The store's state now: (file bytes, live bytes or -1, µs spent in GC
/// so far or 0).
pub type Sizer<'a> = Box<dyn FnMut() -> Result<(i64, i64, i64)> + 'a>;

/// The UPDATE of round `r`: every row's field9 gets a new 100-byte value.
pub fn update_sql(round: u32) -> String {
    let mut v = String::new();
    while v.len() < 100 {
        let _ = write!(v, "r{round}-");
    }
    v.truncate(100);
    format!("UPDATE {TABLE} SET field9 = '{v}'")
}

/// Runs YCSB-A through `opts.rounds` full-table UPDATEs.
pub fn run(
    backend: &Backend,
    opts: &ChurnOptions,
    label: &str,
    mut sizer: Sizer<'_>,
) -> Result<ChurnRun> {
    let loaded_bytes = sizer()?.0;
    let clients = Clients::start(backend, opts.threads, opts.records, Workload::A)?;
    let updating = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU32::new(0));
    let updater = {
        let mut s = backend.connect()?;
        ISOLATION.apply(&mut s)?;
        let postgres = backend.is_postgres();
        let (updating, done) = (updating.clone(), done.clone());
        let (rounds, pause) = (opts.rounds, opts.pause);
        let thread = opts.threads;
        crate::pin::pin_session(&mut s, thread)?;
        std::thread::spawn(move || -> Result<Vec<(&'static str, Duration)>> {
            crate::pin::pin_host_thread(thread);
            let mut out = Vec::new();
            for r in 0..rounds {
                let placement = match (postgres, r % 2) {
                    (true, _) => "PostgreSQL",
                    (false, 0) => "host",
                    (false, _) => "device",
                };
                if !postgres {
                    s.batch(if r % 2 == 1 {
                        "SET ndp = on"
                    } else {
                        "SET ndp = off"
                    })?;
                }
                updating.store(true, Ordering::SeqCst);
                let t = Instant::now();
                s.batch(&update_sql(r))?;
                out.push((placement, t.elapsed()));
                updating.store(false, Ordering::SeqCst);
                done.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(pause);
            }
            Ok(out)
        })
    };
    let start = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    let mut round_sizes = Vec::new();
    let (mut last_ops, mut last_gc) = (0, sizer()?.2);
    let mut phase = Phase::Rounds;
    let mut phase_start = Instant::now();
    let progress = RoundProgress::new(label, opts.rounds);
    let mut timed: Option<crate::report::Phase> = None;
    let window = opts.tail / 2;
    let mut windows_done = 0;
    let mut vacuum: Option<VacuumLoop> = None;
    let mut vacuums = 0;
    loop {
        let was_updating = updating.load(Ordering::SeqCst);
        let rounds_before = done.load(Ordering::SeqCst);
        let t0 = Instant::now();
        std::thread::sleep(opts.sample);
        let secs = t0.elapsed().as_secs_f64();
        let ops = clients.ops.load(Ordering::Relaxed);
        let (file, live, gc) = sizer()?;
        let rounds_done = done.load(Ordering::SeqCst);
        for r in rounds_before..rounds_done {
            round_sizes.push(file);
            progress.round_done(r + 1, file);
        }
        samples.push(Sample {
            ms: start.elapsed().as_millis() as u64,
            ops_per_s: (ops - last_ops) as f64 / secs,
            file_bytes: file,
            live_bytes: live,
            gc_share: ((gc - last_gc) as f64 / 1e6 / secs).clamp(0.0, 1.0),
            updating: was_updating
                || rounds_done > rounds_before
                || updating.load(Ordering::SeqCst),
            rounds_done,
            phase,
        });
        (last_ops, last_gc) = (ops, gc);
        let window_over = phase_start.elapsed() >= window;
        let next = match phase {
            Phase::Rounds if updater.is_finished() => {
                progress.finish();
                Phase::Quiet
            }
            Phase::Quiet if window_over => Phase::Vacuum,
            Phase::Vacuum if window_over => Phase::Quiet,
            _ => continue,
        };
        drop(timed.take());
        if let Some(v) = vacuum.take() {
            // The VACUUM under way finishes first; the next window's
            // samples start after it.
            vacuums += v.stop()?;
            (last_ops, last_gc) = (clients.ops.load(Ordering::Relaxed), sizer()?.2);
        }
        if phase != Phase::Rounds {
            windows_done += 1;
        }
        if windows_done == TAIL_WINDOWS {
            break;
        }
        let what = match next {
            Phase::Vacuum => {
                vacuum = Some(VacuumLoop::start(backend)?);
                "YCSB-A beside VACUUM"
            }
            _ => "YCSB-A alone",
        };
        let n = windows_done / 2 + 1;
        timed = Some(crate::report::Phase::start(
            &format!("{label}: {what} ({n}/{})", TAIL_WINDOWS / 2),
            window,
        ));
        phase = next;
        phase_start = Instant::now();
    }
    drop(timed);
    let errors = clients.stop()?;
    let rounds = updater.join().map_err(|_| thread_panic())??;
    let rounds = rounds
        .into_iter()
        .zip(round_sizes.into_iter().chain(std::iter::repeat(-1)))
        .map(|((placement, took), file_bytes)| Round {
            placement,
            took,
            file_bytes,
        })
        .collect();
    Ok(ChurnRun {
        label: label.to_string(),
        samples,
        rounds,
        errors,
        loaded_bytes,
        vacuums,
    })
}

/// The tail after the rounds: windows of YCSB-A alone and beside VACUUM,
/// alternating (alone first), so that drift over the run weighs on both
/// alike.
const TAIL_WINDOWS: u32 = 4;

/// A session running `VACUUM` on the YCSB table back to back.
struct VacuumLoop {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<u64>>,
}

impl VacuumLoop {
    fn start(backend: &Backend) -> Result<VacuumLoop> {
        let mut s = backend.connect()?;
        // Paced as autovacuum paces itself (PostgreSQL's defaults).
        s.batch("SET vacuum_cost_delay = 2; SET vacuum_cost_limit = 200")?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || -> Result<u64> {
            let mut n = 0;
            while !flag.load(Ordering::SeqCst) {
                s.batch(&format!("VACUUM {TABLE}"))?;
                n += 1;
            }
            Ok(n)
        });
        Ok(VacuumLoop { stop, thread })
    }

    /// Lets the VACUUM under way finish; returns how many ran.
    fn stop(self) -> Result<u64> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().map_err(|_| thread_panic())?
    }
}

/// Rounds done: a progress bar on a terminal, a line per round otherwise.
struct RoundProgress {
    label: String,
    rounds: u32,
    bar: Option<indicatif::ProgressBar>,
}

impl RoundProgress {
    fn new(label: &str, rounds: u32) -> RoundProgress {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(rounds as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} rounds")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_message(format!("{label}: full-table UPDATEs"));
            bar
        });
        RoundProgress {
            label: label.to_string(),
            rounds,
            bar,
        }
    }

    fn round_done(&self, n: u32, file_bytes: i64) {
        match &self.bar {
            Some(bar) => bar.set_position(n as u64),
            None => eprintln!(
                "{}: round {n}/{} done, store file {}",
                self.label,
                self.rounds,
                crate::report::human_bytes(file_bytes)
            ),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The median of `v` (0 when empty).
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

impl ChurnRun {
    /// Median YCSB throughput with VACUUM running back to back and
    /// alone: (with, without, samples with, samples without).
    pub fn throughput_with_and_without_gc(&self) -> (f64, f64, usize, usize) {
        let of = |p: Phase| -> Vec<f64> {
            self.samples
                .iter()
                .filter(|s| s.phase == p)
                .map(|s| s.ops_per_s)
                .collect()
        };
        let (with, without) = (of(Phase::Vacuum), of(Phase::Quiet));
        let (n, m) = (with.len(), without.len());
        (median(with), median(without), n, m)
    }

    /// Largest and smallest file size at the end of the last `n` rounds.
    pub fn file_range_last_rounds(&self, n: usize) -> (i64, i64) {
        let tail: Vec<i64> = self
            .rounds
            .iter()
            .rev()
            .take(n)
            .map(|r| r.file_bytes)
            .filter(|b| *b >= 0)
            .collect();
        (
            tail.iter().copied().max().unwrap_or(0),
            tail.iter().copied().min().unwrap_or(0),
        )
    }

    pub fn final_sample(&self) -> Option<&Sample> {
        self.samples.last()
    }
}

pub fn csv(runs: &[ChurnRun]) -> String {
    let mut out =
        String::from("target,ms,ops_per_s,file_bytes,live_bytes,gc_share,updating,rounds_done\n");
    for r in runs {
        for s in &r.samples {
            let _ = writeln!(
                out,
                "{},{},{:.0},{},{},{:.3},{},{},{}",
                r.label,
                s.ms,
                s.ops_per_s,
                s.file_bytes,
                s.live_bytes,
                s.gc_share,
                s.updating as u8,
                s.rounds_done,
                s.phase.name()
            );
        }
    }
    out
}

/// File size (and ndpdb's live data) over time, and YCSB throughput over
/// time, one line per target; `Ok(false)` without a font.
pub fn plot(dir: &Path, runs: &[ChurnRun]) -> std::result::Result<bool, String> {
    let mib = |b: i64| b as f64 / (1 << 20) as f64;
    let mut sizes = Vec::new();
    for r in runs {
        sizes.push(crate::plot::Series {
            label: format!("{}: store file", r.label),
            points: r
                .samples
                .iter()
                .map(|s| (s.ms as f64 / 1e3, mib(s.file_bytes)))
                .collect(),
        });
        if r.samples.iter().any(|s| s.live_bytes > 0) {
            sizes.push(crate::plot::Series {
                label: format!("{}: live data (last GC run)", r.label),
                points: r
                    .samples
                    .iter()
                    .filter(|s| s.live_bytes > 0)
                    .map(|s| (s.ms as f64 / 1e3, mib(s.live_bytes)))
                    .collect(),
            });
        }
    }
    let drawn = crate::plot::line_chart(
        &dir.join("size.png"),
        "Store size under YCSB-A and full-table UPDATEs",
        "time (s)",
        "MiB",
        &sizes,
    )?;
    if !drawn {
        return Ok(false);
    }
    let tput: Vec<crate::plot::Series> = runs
        .iter()
        .map(|r| crate::plot::Series {
            label: r.label.clone(),
            points: r
                .samples
                .iter()
                .map(|s| (s.ms as f64 / 1e3, s.ops_per_s))
                .collect(),
        })
        .collect();
    crate::plot::line_chart(
        &dir.join("throughput.png"),
        "YCSB-A throughput through the update rounds",
        "time (s)",
        "YCSB ops/s",
        &tput,
    )
}
