//! A fuzzing loop on the stable toolchain, for CI and quick runs; the
//! coverage-guided runs use the same targets through cargo-fuzz
//! (`fuzz/`, `scripts/fuzz.sh`).
//!
//! ```text
//!  inputs: fresh random bytes, or a corpus entry mutated (bit flips,
//!          interesting bytes, inserts, deletes, duplicated ranges,
//!          splices), seeded from regressions/ and --corpus dirs
//!  worker thread (a 2 MiB stack by default) runs the target; the main thread waits
//!  at most --hang: longer is a hang
//!  an input whose replies were new (by signature) joins the corpus
//!  first failure: input saved to the artifacts dir, loop ends
//! ```
//!
//! Before each run the input is also written to `<artifacts>/last-input`,
//! so an input that kills the process (stack overflow, abort) is kept.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A fuzz target: runs one input, `Err` on a failure, otherwise a
/// signature of what the input did.
pub trait Target {
    fn run(&mut self, data: &[u8]) -> Result<u64, String>;
}

impl Target for crate::wire::WireTarget {
    fn run(&mut self, data: &[u8]) -> Result<u64, String> {
        crate::wire::WireTarget::run(self, data).map(|o| o.signature)
    }
}

impl Target for crate::sql::SqlTarget {
    fn run(&mut self, data: &[u8]) -> Result<u64, String> {
        crate::sql::SqlTarget::run(self, data)
    }
}

pub struct Options {
    pub seconds: u64,
    pub seed: u64,
    /// Stack of the thread that runs the target: as small as an embedding
    /// program's threads (Rust's default is 2 MiB), so that any recursion
    /// left unguarded shows up as a crash, with the input in `last-input`.
    pub stack_bytes: usize,
    /// Directories of inputs to start from.
    pub corpus: Vec<PathBuf>,
    /// Where failing inputs are written.
    pub artifacts: PathBuf,
    pub max_len: usize,
    /// An input running longer than this is a hang.
    pub hang: Duration,
}

#[derive(Debug)]
pub struct Report {
    pub executions: u64,
    pub corpus: usize,
    pub elapsed: Duration,
    /// What failed and where its input was saved.
    pub failure: Option<(String, PathBuf)>,
}

/// Reads every file of `dirs` (missing directories are skipped).
pub fn read_inputs(dirs: &[PathBuf]) -> Vec<Vec<u8>> {
    let mut inputs = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        // Raw inputs are `.bin` files; other files (statement histories,
        // notes) are read by whoever knows them.
        for p in paths
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        {
            if let Ok(bytes) = std::fs::read(&p) {
                inputs.push(bytes);
            }
        }
    }
    inputs
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// Runs `target` on `data`, turning a panic into a failure.
pub fn run_caught<T: Target>(target: &mut T, data: &[u8]) -> Result<u64, String> {
    std::panic::catch_unwind(AssertUnwindSafe(|| target.run(data)))
        .unwrap_or_else(|p| Err(format!("panic: {}", panic_text(p))))
}

const INTERESTING: &[u8] = &[
    0, 1, 2, 3, 4, 5, 8, 16, 0x7f, 0x80, 0xfe, 0xff, b'S', b'Q', b'P', b'B', b'E',
];

fn fresh(rng: &mut SmallRng, max_len: usize) -> Vec<u8> {
    let len = match rng.gen_range(0..4) {
        0 => rng.gen_range(0..32),
        1 => rng.gen_range(0..256),
        2 => rng.gen_range(0..1024),
        _ => rng.gen_range(0..max_len.max(1)),
    };
    (0..len).map(|_| rng.gen()).collect()
}

fn mutate(rng: &mut SmallRng, base: &[u8], other: &[u8], max_len: usize) -> Vec<u8> {
    let mut m = base.to_vec();
    for _ in 0..rng.gen_range(1..=8) {
        let len = m.len();
        match rng.gen_range(0..7) {
            0 if len > 0 => {
                let i = rng.gen_range(0..len);
                m[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.gen_range(0..len);
                m[i] = INTERESTING[rng.gen_range(0..INTERESTING.len())];
            }
            2 => {
                let i = rng.gen_range(0..=len);
                let n = rng.gen_range(1..=16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
                m.splice(i..i, bytes);
            }
            3 if len > 1 => {
                let i = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - i).min(64));
                m.drain(i..i + n);
            }
            4 if len > 1 => {
                let i = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - i).min(64));
                let copy = m[i..i + n].to_vec();
                let at = rng.gen_range(0..=len);
                m.splice(at..at, copy);
            }
            5 if !other.is_empty() => {
                let keep = rng.gen_range(0..=len);
                let from = rng.gen_range(0..other.len());
                m.truncate(keep);
                m.extend_from_slice(&other[from..]);
            }
            6 if len > 0 => m.truncate(rng.gen_range(0..len)),
            _ => {}
        }
    }
    m.truncate(max_len);
    m
}

/// Saves a failing input; returns its path.
fn save(artifacts: &Path, name: &str, data: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(artifacts);
    let hash = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let path = artifacts.join(format!("{name}-{hash:016x}.bin"));
    let _ = std::fs::write(&path, data);
    path
}

/// Fuzzes the target `make` builds for `opts.seconds`.
pub fn fuzz<T: Target + 'static>(name: &str, make: fn() -> T, opts: &Options) -> Report {
    let start = Instant::now();
    let (to_worker, inputs) = mpsc::channel::<Vec<u8>>();
    let (results, from_worker) = mpsc::channel::<Result<u64, String>>();
    std::thread::Builder::new()
        .name(format!("fuzz-{name}"))
        .stack_size(opts.stack_bytes)
        .spawn(move || {
            let mut target = make();
            for input in inputs {
                if results.send(run_caught(&mut target, &input)).is_err() {
                    break;
                }
            }
        })
        .expect("a worker thread");
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    let mut corpus = read_inputs(&opts.corpus);
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let seeds = corpus.len();
    let mut seen = HashSet::new();
    let _ = std::fs::create_dir_all(&opts.artifacts);
    let last = opts.artifacts.join("last-input");
    let bar = progress(name, opts.seconds);
    let mut executions = 0u64;
    let mut last_line = Instant::now();
    let deadline = start + Duration::from_secs(opts.seconds);
    let mut failure = None;
    while Instant::now() < deadline {
        // Every seed runs once as it is, then fresh and mutated inputs.
        let input = if (executions as usize) < seeds {
            corpus[executions as usize].clone()
        } else if rng.gen_ratio(1, 4) {
            fresh(&mut rng, opts.max_len)
        } else {
            let a = rng.gen_range(0..corpus.len());
            let b = rng.gen_range(0..corpus.len());
            mutate(&mut rng, &corpus[a], &corpus[b], opts.max_len)
        };
        let _ = std::fs::write(&last, &input);
        if to_worker.send(input.clone()).is_err() {
            failure = Some((
                "the worker thread died".to_string(),
                save(&opts.artifacts, name, &input),
            ));
            break;
        }
        executions += 1;
        match from_worker.recv_timeout(opts.hang) {
            Ok(Ok(signature)) => {
                if seen.insert(signature) {
                    if corpus.len() < 8_192 {
                        corpus.push(input);
                    } else {
                        let i = rng.gen_range(seeds..corpus.len());
                        corpus[i] = input;
                    }
                }
            }
            Ok(Err(what)) => {
                // The first line says what failed; the rest (a target's
                // context, such as earlier statements) goes beside the input.
                let path = save(&opts.artifacts, name, &input);
                let (first, context) = what.split_once('\n').unwrap_or((&what, ""));
                if !context.is_empty() {
                    let _ = std::fs::write(path.with_extension("txt"), context);
                }
                failure = Some((first.to_string(), path));
                break;
            }
            Err(_) => {
                failure = Some((
                    format!("hang: no result within {:?}", opts.hang),
                    save(&opts.artifacts, &format!("{name}-hang"), &input),
                ));
                break;
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        let line = format!(
            "{executions} executions ({:.0}/s), corpus {}, {} behaviours",
            executions as f64 / elapsed.max(1e-9),
            corpus.len(),
            seen.len()
        );
        match &bar {
            Some(bar) => {
                bar.set_position(start.elapsed().as_secs().min(opts.seconds));
                bar.set_message(line);
            }
            None if last_line.elapsed() >= Duration::from_secs(10) => {
                eprintln!("fuzz {name}: {:.0} s, {line}", elapsed);
                last_line = Instant::now();
            }
            None => {}
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    // A clean end: the last input is not a suspect.
    if failure.is_none() {
        let _ = std::fs::remove_file(&last);
    }
    Report {
        executions,
        corpus: corpus.len(),
        elapsed: start.elapsed(),
        failure,
    }
}

fn progress(name: &str, seconds: u64) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(seconds);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "fuzz {name} {{bar:30}} {{pos}}/{{len}} s  {{msg}}"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(bar)
}

/// Shrinks a failing input: removes ever smaller ranges while the target
/// still fails.
pub fn minimize<T: Target>(target: &mut T, input: &[u8]) -> Vec<u8> {
    let mut best = input.to_vec();
    if run_caught(target, &best).is_ok() {
        return best;
    }
    let mut chunk = best.len() / 2;
    while chunk > 0 {
        let mut at = 0;
        while at < best.len() {
            let mut candidate = best.clone();
            let end = (at + chunk).min(candidate.len());
            candidate.drain(at..end);
            if run_caught(target, &candidate).is_err() {
                best = candidate;
            } else {
                at += chunk;
            }
        }
        chunk /= 2;
    }
    best
}
