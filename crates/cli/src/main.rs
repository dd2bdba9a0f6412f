//! The `ndpdb` command: `sql`, `serve`, `demo`, `bench …` (DESIGN.md §11).

mod args;
mod backup;
mod bench;
mod crash_worker;
mod demo;
mod device;
mod slt_links;
mod sql;
mod targets;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc as the process allocator: bulk loads and statements that
/// hold many rows allocate and free millions of small values, where it
/// is markedly faster than the C library's allocator (a 100,000-row
/// load 2.0–2.3 s → 1.4–1.5 s, its full-table UPDATE 2.3–2.7 s → 1.8 s).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `purge_delay` option (its index in `mi_option_t`, v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps freed heap memory in the process instead of returning it to
/// the OS a second after it is freed (mimalloc's default). An analytical
/// query frees hundreds of MiB of hash tables and batches; returning
/// them unmaps pages — a TLB shootdown that interrupts every other
/// thread of the process, the OLTP sessions too — and the next query
/// faults them back in as zeroed pages. Kept, the heap stays at its peak,
/// as PostgreSQL's shared buffers do. In CH-benCHmark (10 warehouses),
/// OLTP beside the analytics went from a mean of 75 % of alone (5 runs)
/// to 82 % (7 runs; docs/BENCHMARKS.md).
/// `MIMALLOC_PURGE_DELAY` in the environment still decides when set.
fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: called first thing in main, before any other thread
        // exists (mi_option_set is not thread safe).
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
    }
}

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
        device: args::DeviceArgs,
    },
    /// Serve the database to PostgreSQL clients (psql, drivers).
    Serve {
        /// Database directory (created if missing).
        #[arg(long)]
        db: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:5433")]
        listen: String,
        /// Connections beyond this are refused.
        #[arg(long, default_value_t = 256)]
        max_connections: usize,
        /// Client authentication: trust (every client), scram
        /// (SCRAM-SHA-256) or md5, for the user named by --user with the
        /// password in the NDPDB_PASSWORD environment variable.
        #[arg(long, default_value = "trust")]
        auth: String,
        /// The user name password authentication admits.
        #[arg(long)]
        user: Option<String>,
        /// TLS: the server's certificate chain (PEM); with --tls-key,
        /// clients that ask for TLS (psql's sslmode=require) get it.
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// TLS: the certificate's private key (PEM).
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Buffer-pool budget in MiB.
        #[arg(long, default_value_t = 64)]
        buffer_pool_mib: usize,
        #[command(flatten)]
        device: args::DeviceArgs,
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
        device: args::DeviceArgs,
    },
    /// Take an online base backup (device store, maps and catalog at a
    /// checkpoint); WAL and overflow logs are kept from there on until a
    /// newer backup.
    Backup {
        /// Database directory (not served by another process).
        #[arg(long, conflicts_with = "server")]
        db: Option<PathBuf>,
        /// A running `ndpdb serve` to back up, as a connection string
        /// (e.g. "host=127.0.0.1 port=5433 user=postgres"); the backup
        /// directory is then written by the server.
        #[arg(long)]
        server: Option<String>,
        /// The backup directory (new or empty).
        #[arg(long)]
        to: PathBuf,
        #[command(flatten)]
        device: args::DeviceArgs,
    },
    /// Rebuild a lost device store (DIR/device, or with --device the
    /// empty store of a device process) from a base backup, the WAL and
    /// the overflow logs.
    Restore {
        /// Database directory whose device/ folder is lost.
        #[arg(long)]
        db: PathBuf,
        /// The backup directory.
        #[arg(long)]
        backup: PathBuf,
        #[command(flatten)]
        device: args::DeviceArgs,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        which: bench::Bench,
    },
    /// Run the device engine as its own process, serving one host at a
    /// time (`--device ADDR` on the other commands attaches to it).
    Device {
        /// The device's store directory (created if missing).
        #[arg(long)]
        store: PathBuf,
        /// unix:PATH (socket created with mode 0600) or tcp:HOST:PORT
        /// (requires --token-file).
        #[arg(long)]
        listen: String,
        /// Processing elements (0 = one per CPU, or per pinned CPU).
        #[arg(long, default_value_t = 0)]
        pes: usize,
        /// Pin the PEs to these CPUs (comma separated).
        #[arg(long, value_delimiter = ',')]
        device_cpus: Vec<usize>,
        /// Emulated NVM latency of the store: off, fast, mid, slow.
        #[arg(long, default_value = "off")]
        nvm: String,
        /// Buckets of the shared lock table in /dev/shm.
        #[arg(long, default_value_t = 1 << 16)]
        slt_buckets: usize,
        /// File with the shared secret hosts must present.
        #[arg(long)]
        token_file: Option<PathBuf>,
    },
    /// Test helper: runs a write workload and prints each acknowledged commit.
    #[command(hide = true)]
    CrashWorker {
        #[arg(long)]
        db: PathBuf,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The device store in RADOS (pool ndpdb) of the cluster this
        /// config names.
        #[arg(long)]
        ceph_conf: Option<PathBuf>,
    },
}

fn serve(
    dir: &std::path::Path,
    listen: &str,
    server: ndpdb_server::ServerConfig,
    config: ndpdb_host::Config,
    device: &args::DeviceArgs,
) -> ndpdb_host::Result<ExitCode> {
    let db = device.open(dir, config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        println!(
            "ndpdb serving {} on {}",
            dir.display(),
            listener.local_addr()?
        );
        ndpdb_server::serve(db, listener, server).await?;
        Ok::<_, ndpdb_host::Error>(ExitCode::SUCCESS)
    })
}

/// The `--auth` method; passwords come from NDPDB_PASSWORD.
fn server_auth(method: &str, user: Option<String>) -> ndpdb_host::Result<ndpdb_server::Auth> {
    let invalid =
        |msg: &str| ndpdb_host::Error::new(ndpdb_formats::SqlState::INVALID_PARAMETER_VALUE, msg);
    if method == "trust" {
        return Ok(ndpdb_server::Auth::Trust);
    }
    let user = user.ok_or_else(|| invalid("--auth md5|scram needs --user NAME"))?;
    let password = std::env::var("NDPDB_PASSWORD")
        .map_err(|_| invalid("--auth md5|scram needs the password in NDPDB_PASSWORD"))?;
    match method {
        "scram" | "scram-sha-256" => Ok(ndpdb_server::Auth::Scram { user, password }),
        "md5" => Ok(ndpdb_server::Auth::Md5 { user, password }),
        other => Err(invalid(&format!(
            "unknown --auth {other} (trust, scram or md5)"
        ))),
    }
}

fn main() -> ExitCode {
    keep_freed_memory();
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
            .and_then(|config| sql::run(&db, &command, file.as_deref(), csv, config, &device)),
        Command::Demo {
            records,
            seconds,
            threads,
            device,
        } => demo::demo(records, seconds, threads, &device),
        Command::Bench { which } => bench::bench(which),
        Command::Backup {
            db,
            server,
            to,
            device,
        } => device
            .apply(ndpdb_host::Config::default())
            .and_then(|config| {
                backup::backup(db.as_deref(), server.as_deref(), &to, config, &device)
            }),
        Command::Restore { db, backup, device } => device
            .apply(ndpdb_host::Config::default())
            .and_then(|config| backup::restore(&db, &backup, config, &device)),
        Command::Serve {
            db,
            listen,
            max_connections,
            auth,
            user,
            tls_cert,
            tls_key,
            buffer_pool_mib,
            device,
        } => server_auth(&auth, user).and_then(|auth| {
            let tls = match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => {
                    Some(ndpdb_server::tls::server_config(&cert, &key).map_err(|e| {
                        ndpdb_host::Error::new(ndpdb_formats::SqlState::INVALID_PARAMETER_VALUE, e)
                    })?)
                }
                _ => None,
            };
            device
                .apply(ndpdb_host::Config {
                    buffer_pool_bytes: buffer_pool_mib << 20,
                    ..ndpdb_host::Config::default()
                })
                .and_then(|config| {
                    let server = ndpdb_server::ServerConfig {
                        max_connections,
                        auth,
                        tls,
                    };
                    serve(&db, &listen, server, config, &device)
                })
        }),
        Command::Device {
            store,
            listen,
            pes,
            device_cpus,
            nvm,
            slt_buckets,
            token_file,
        } => args::nvm_profile(&nvm).and_then(|nvm| {
            device::run(&device::DeviceRun {
                store,
                listen,
                pes,
                cpus: device_cpus,
                nvm,
                slt_buckets,
                token_file,
            })
        }),
        Command::CrashWorker {
            db,
            seed,
            ceph_conf,
        } => crash_worker::run(&db, seed, ceph_conf.as_deref()),
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

#[cfg(test)]
mod tests {
    /// The index [`super::keep_freed_memory`] sets names mimalloc's purge
    /// delay: read, it gives that option's default of 1,000 ms.
    #[test]
    fn the_option_set_at_start_is_mimallocs_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: a read of an option nothing in this binary sets.
        let delay = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 1000);
    }
}
