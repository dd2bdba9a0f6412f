//! The `ndpdb` command: `sql`, `demo`, `bench ycsb` (DESIGN.md §11).

mod crash_worker;
mod demo;
mod sql;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ndpdb",
    version,
    about = "A multi-version database built for near-data processing"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run SQL against a database directory (interactive without -c/-f).
    Sql {
        /// Database directory (created if missing).
        #[arg(long)]
        db: PathBuf,
        /// SQL to run; may be given several times, all in one session.
        #[arg(short = 'c', long = "command")]
        command: Vec<String>,
        /// File of SQL statements to run in one session.
        #[arg(short = 'f', long = "file")]
        file: Option<PathBuf>,
        /// Print rows as CSV with a header line.
        #[arg(long)]
        csv: bool,
        /// Buffer-pool budget in MiB.
        #[arg(long, default_value_t = 64)]
        buffer_pool_mib: usize,
        /// Delta-buffer size that triggers a flush & append, in KiB.
        #[arg(long, default_value_t = 1024)]
        delta_buffer_kib: usize,
        #[command(flatten)]
        device: demo::DeviceArgs,
    },
    /// Load a YCSB table into a fresh embedded database and run YCSB-A and -C.
    Demo {
        /// Rows to load.
        #[arg(long, default_value_t = 200_000)]
        records: u64,
        /// Seconds per workload phase.
        #[arg(long, default_value_t = 5)]
        seconds: u64,
        /// Client threads.
        #[arg(long, default_value_t = 2)]
        threads: usize,
        #[command(flatten)]
        device: demo::DeviceArgs,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        which: demo::Bench,
    },
    /// Test helper: runs a write workload and prints each acknowledged commit.
    #[command(hide = true)]
    CrashWorker {
        #[arg(long)]
        db: PathBuf,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sql {
            db,
            command,
            file,
            csv,
            buffer_pool_mib,
            delta_buffer_kib,
            device,
        } => device
            .apply(ndpdb_host::Config {
                buffer_pool_bytes: buffer_pool_mib << 20,
                delta_buffer_bytes: delta_buffer_kib << 10,
                ..ndpdb_host::Config::default()
            })
            .and_then(|config| sql::run(&db, &command, file.as_deref(), csv, config)),
        Command::Demo {
            records,
            seconds,
            threads,
            device,
        } => demo::demo(records, seconds, threads, &device),
        Command::Bench { which } => demo::bench(which),
        Command::CrashWorker { db, seed } => crash_worker::run(&db, seed),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ERROR {}: {}", e.code, e.message);
            if let Some(d) = &e.detail {
                eprintln!("DETAIL: {d}");
            }
            ExitCode::FAILURE
        }
    }
}
