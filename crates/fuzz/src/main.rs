//! `ndpdb-fuzz wire|sql`: fuzzes a target for a while, replays inputs,
//! or minimizes a failing one.
//!
//! ```text
//!  ndpdb-fuzz wire --seconds 60                 # CI
//!  ndpdb-fuzz wire --replay crash.bin …         # each input once
//!  ndpdb-fuzz wire --minimize crash.bin --out small.bin
//!  ndpdb-fuzz sql --statements crash.txt --out small.sql   # shrink a history
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use ndpdb_fuzz::runner::{self, Options, Target};
use ndpdb_fuzz::{regressions, SqlTarget, WireTarget};

#[derive(Clone, Copy, ValueEnum)]
enum Which {
    Wire,
    Sql,
}

#[derive(Parser)]
#[command(about = "Fuzz ndpdb's wire server or SQL front end")]
struct Args {
    target: Which,
    /// How long to fuzz.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Seed of the input generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// More directories of starting inputs (regressions/ is always used).
    #[arg(long)]
    corpus: Vec<PathBuf>,
    /// Where failing inputs are written.
    #[arg(long, default_value = "target/fuzz-artifacts")]
    artifacts: PathBuf,
    /// Longest generated input, in bytes.
    #[arg(long, default_value_t = 8192)]
    max_len: usize,
    /// Stack of the thread running the target, in KiB (2 MiB is Rust's
    /// default for spawned threads).
    #[arg(long, default_value_t = 2048)]
    stack_kib: usize,
    /// An input running longer than this many seconds is a hang.
    #[arg(long, default_value_t = 30)]
    hang: u64,
    /// Run these inputs once each instead of fuzzing.
    #[arg(long, num_args = 1..)]
    replay: Vec<PathBuf>,
    /// Replay the statements of this file (one per `;` line end, as a
    /// failing SQL run saves them) on fresh tables.
    #[arg(long)]
    statements: Option<PathBuf>,
    /// Shrink this failing input.
    #[arg(long)]
    minimize: Option<PathBuf>,
    /// Where the minimized input goes.
    #[arg(long, default_value = "minimized.bin")]
    out: PathBuf,
}

fn replay<T: Target>(mut target: T, files: &[PathBuf]) -> ExitCode {
    let mut failed = false;
    for f in files {
        let data = std::fs::read(f).unwrap_or_default();
        match runner::run_caught(&mut target, &data) {
            Ok(_) => println!("{}: ok", f.display()),
            Err(e) => {
                println!("{}: FAILED: {e}", f.display());
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn minimize<T: Target>(mut target: T, file: &PathBuf, out: &PathBuf) -> ExitCode {
    let data = std::fs::read(file).unwrap_or_default();
    let small = runner::minimize(&mut target, &data);
    let _ = std::fs::write(out, &small);
    println!(
        "{} bytes -> {} bytes in {}",
        data.len(),
        small.len(),
        out.display()
    );
    ExitCode::SUCCESS
}

/// Replays a file of statements; with `shrink`, also removes statements
/// (halves, then quarters, … then single ones) while the failure remains and
/// writes what is left to `out`.
fn statements(file: &PathBuf, out: &PathBuf) -> ExitCode {
    let text = String::from_utf8_lossy(&std::fs::read(file).unwrap_or_default()).into_owned();
    let mut list = ndpdb_fuzz::sql::statements_of(&text);
    let Err(what) = ndpdb_fuzz::sql::replay_statements(&list) else {
        println!("{}: ok ({} statements)", file.display(), list.len());
        return ExitCode::SUCCESS;
    };
    println!("{}: FAILED: {what}", file.display());
    let mut chunk = list.len().div_ceil(2);
    while chunk >= 1 {
        let mut start = 0;
        while start < list.len() {
            let end = (start + chunk).min(list.len());
            let mut fewer = list.clone();
            fewer.drain(start..end);
            if !fewer.is_empty() && ndpdb_fuzz::sql::replay_statements(&fewer).is_err() {
                list = fewer;
                eprintln!("shrink: {} statements left", list.len());
            } else {
                start = end;
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    let _ = std::fs::write(out, list.join(";\n") + ";\n");
    println!("{} statements still fail, in {}", list.len(), out.display());
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(file) = &args.statements {
        return statements(file, &args.out);
    }
    let name = match args.target {
        Which::Wire => "wire",
        Which::Sql => "sql",
    };
    if !args.replay.is_empty() {
        return match args.target {
            Which::Wire => replay(WireTarget::new(), &args.replay),
            Which::Sql => replay(SqlTarget::new(), &args.replay),
        };
    }
    if let Some(file) = &args.minimize {
        return match args.target {
            Which::Wire => minimize(WireTarget::new(), file, &args.out),
            Which::Sql => minimize(SqlTarget::new(), file, &args.out),
        };
    }
    let mut corpus = vec![regressions(name)];
    corpus.extend(args.corpus.iter().cloned());
    let opts = Options {
        seconds: args.seconds,
        seed: args.seed,
        stack_bytes: args.stack_kib << 10,
        corpus,
        artifacts: args.artifacts.clone(),
        max_len: args.max_len,
        hang: Duration::from_secs(args.hang),
    };
    let report = match args.target {
        Which::Wire => runner::fuzz(name, WireTarget::new, &opts),
        Which::Sql => runner::fuzz(name, SqlTarget::new, &opts),
    };
    println!(
        "fuzz {name}: {} executions in {:.0} s ({:.0}/s), corpus {}, server panics {}",
        report.executions,
        report.elapsed.as_secs_f64(),
        report.executions as f64 / report.elapsed.as_secs_f64().max(1e-9),
        report.corpus,
        ndpdb_server::panics()
    );
    match report.failure {
        None => ExitCode::SUCCESS,
        Some((what, path)) => {
            println!("FAILED: {what}\n  input saved to {}", path.display());
            let context = path.with_extension("txt");
            if context.exists() {
                println!("  context (e.g. earlier statements): {}", context.display());
            }
            println!(
                "  replay: cargo run --release -p ndpdb-fuzz -- {name} --replay {}",
                path.display()
            );
            ExitCode::FAILURE
        }
    }
}
