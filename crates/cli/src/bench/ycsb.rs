//! `ndpdb bench ycsb`: YCSB on the embedded engine or over the wire,
//! targets side by side (`crate::targets::ycsb`); the arguments and the
//! settings line printed before the runs.

use std::path::PathBuf;
use std::process::ExitCode;

use ndpdb_bench::isolation::Level;
use ndpdb_host::{Config, Result};

use crate::args::{isolation_level, DeviceArgs};

#[derive(clap::Args)]
pub struct YcsbArgs {
    /// Rows in usertable.
    #[arg(long, default_value_t = 200_000)]
    pub records: u64,
    /// Workload: a (50/50 read/update), b (95/5), c (read only).
    #[arg(long, default_value = "a")]
    pub workload: String,
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Zipfian skew.
    #[arg(long, default_value_t = 0.99)]
    pub zipf: f64,
    /// Buffer-pool budget in MiB.
    #[arg(long, default_value_t = 64)]
    pub buffer_pool_mib: usize,
    /// Delta-buffer size that triggers a flush & append, in KiB.
    #[arg(long, default_value_t = 1024)]
    pub delta_buffer_kib: usize,
    /// Database directory (default: a fresh temporary one).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Where to run, repeatable for a side-by-side table: ndpdb
    /// (embedded), ndpdb-server[=HOST:PORT] (without an address: a
    /// server in this process on a fresh database), postgres[=CONNSTRING]
    /// (default $NDPDB_POSTGRES, see scripts/postgres-baseline.sh).
    #[arg(long, default_value = "ndpdb")]
    pub target: Vec<String>,
    /// Isolation level of every session on every target (SET
    /// default_transaction_isolation); operations failing with 40001
    /// or 40P01 are retried and the retries reported.
    #[arg(long, default_value = "read-committed", value_parser = isolation_level())]
    pub isolation: Level,
    #[command(flatten)]
    pub device: DeviceArgs,
}

pub fn run(args: YcsbArgs) -> Result<ExitCode> {
    let YcsbArgs {
        records,
        workload,
        threads,
        seconds,
        zipf,
        buffer_pool_mib,
        delta_buffer_kib,
        db,
        target,
        isolation,
        device,
    } = args;
    let config = device.apply(Config {
        buffer_pool_bytes: buffer_pool_mib << 20,
        delta_buffer_bytes: delta_buffer_kib << 10,
        ..Config::default()
    })?;
    let run = crate::targets::YcsbRun {
        records,
        workload,
        threads,
        seconds,
        zipf,
        db,
        targets: target,
        isolation,
    };
    println!(
        "settings: buffer pool {buffer_pool_mib} MiB, delta buffer {delta_buffer_kib} KiB, {records} records, workload {}, {threads} threads, {seconds} s, zipf {zipf}",
        run.workload.to_uppercase()
    );
    crate::targets::ycsb(&run, config)?;
    Ok(ExitCode::SUCCESS)
}
