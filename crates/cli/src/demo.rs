//! `ndpdb demo` and `ndpdb bench …`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Subcommand;

use ndpdb_bench::isolation::{self, Level};
use ndpdb_bench::report::{engine_lines, StatsDelta};
use ndpdb_bench::target::{Backend, Target};

use crate::targets::{ndp_modes, ycsb_wire};
use ndpdb_bench::ycsb::{self, RunConfig, Workload};
use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Database, Error, NvmProfile, Result};
use ndpdb_link::LinkModel;
use ndpdb_sql::Session;

/// Options of the embedded device.
#[derive(clap::Args, Clone, Debug)]
pub struct DeviceArgs {
    /// Link preset of the data plane: unthrottled, nvme-gen3x4, 10gbe.
    #[arg(long, default_value = "unthrottled")]
    pub link: String,
    /// Processing elements of the device (0 = one per CPU, or per pinned CPU).
    #[arg(long, default_value_t = 0)]
    pub pes: usize,
    /// Pin the device's PEs to these CPUs (comma separated, e.g. 1).
    #[arg(long, value_delimiter = ',')]
    pub device_cpus: Vec<usize>,
    /// Pin the benchmark's host sessions to these CPUs, one CPU per
    /// session in turn: each client thread and, on a server target, the
    /// backend or connection thread serving it (the server must run on
    /// this machine; comma separated, e.g. 0). `bench ch` pins its TPC-C
    /// sessions; its analytical sessions stay free.
    #[arg(long, value_delimiter = ',')]
    pub host_cpus: Vec<usize>,
    /// Emulated NVM latency of the device's store: off, fast, mid, slow.
    #[arg(long, default_value = "off")]
    pub nvm: String,
    /// Attach to a device process (`ndpdb device`) at unix:PATH or
    /// tcp:HOST:PORT instead of opening the embedded device in DIR/device
    /// (the device's own options then apply, not --pes, --device-cpus or
    /// --nvm); or `rados`: the embedded device with its store in Ceph
    /// RADOS (--ceph-conf, --pool).
    #[arg(long, value_name = "ADDR")]
    pub device: Option<String>,
    /// File with the shared secret the device requires (TCP).
    #[arg(long)]
    pub token_file: Option<std::path::PathBuf>,
    /// The Ceph cluster's config for `--device rados` (default
    /// $CEPH_CONF, else /etc/ceph/ceph.conf).
    #[arg(long, value_name = "FILE")]
    pub ceph_conf: Option<std::path::PathBuf>,
    /// The RADOS pool of the device store for `--device rados`.
    #[arg(long, default_value = "ndpdb")]
    pub pool: String,
    /// With `--device rados`: objects an NDP scan calls at once, each
    /// running its share of the scan in the OSD that holds it.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub objects_in_flight: u32,
}

/// Resolves an NVM latency profile name.
pub fn nvm_profile(name: &str) -> Result<NvmProfile> {
    NvmProfile::by_name(name).ok_or_else(|| {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("unknown NVM profile {name} (one of off, fast, mid, slow)"),
        )
    })
}

impl DeviceArgs {
    /// Opens the database in `dir` on the device these options name.
    pub fn open(&self, dir: &std::path::Path, config: Config) -> Result<Database> {
        crate::device::open(
            dir,
            config,
            self.device.as_deref(),
            self.token_file.as_deref(),
            &crate::device::RadosArgs {
                ceph_conf: self.ceph_conf.clone(),
                pool: self.pool.clone(),
            },
        )
    }

    pub fn apply(&self, config: Config) -> Result<Config> {
        let link = LinkModel::by_name(&self.link).ok_or_else(|| {
            Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!(
                    "unknown link preset {} (one of {})",
                    self.link,
                    LinkModel::names().join(", ")
                ),
            )
        })?;
        check_cpus(self.device_cpus.iter().chain(&self.host_cpus))?;
        ndpdb_bench::pin::set_host_cpus(&self.host_cpus);
        Ok(Config {
            link,
            device_pes: self.pes,
            device_cpus: self.device_cpus.clone(),
            device_nvm: nvm_profile(&self.nvm)?,
            rados_objects_in_flight: self.objects_in_flight as usize,
            ..config
        })
    }
}

#[derive(Subcommand)]
pub enum Bench {
    /// YCSB on the embedded engine.
    Ycsb {
        /// Rows in usertable.
        #[arg(long, default_value_t = 200_000)]
        records: u64,
        /// Workload: a (50/50 read/update), b (95/5), c (read only).
        #[arg(long, default_value = "a")]
        workload: String,
        #[arg(long, default_value_t = 2)]
        threads: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Zipfian skew.
        #[arg(long, default_value_t = 0.99)]
        zipf: f64,
        /// Buffer-pool budget in MiB.
        #[arg(long, default_value_t = 64)]
        buffer_pool_mib: usize,
        /// Delta-buffer size that triggers a flush & append, in KiB.
        #[arg(long, default_value_t = 1024)]
        delta_buffer_kib: usize,
        /// Database directory (default: a fresh temporary one).
        #[arg(long)]
        db: Option<PathBuf>,
        /// Where to run, repeatable for a side-by-side table: ndpdb
        /// (embedded), ndpdb-server[=HOST:PORT] (without an address: a
        /// server in this process on a fresh database), postgres[=CONNSTRING]
        /// (default $NDPDB_POSTGRES, see scripts/postgres-baseline.sh).
        #[arg(long, default_value = "ndpdb")]
        target: Vec<String>,
        /// Isolation level of every session on every target (SET
        /// default_transaction_isolation); operations failing with 40001
        /// or 40P01 are retried and the retries reported.
        #[arg(long, default_value = "read-committed", value_parser = isolation_level())]
        isolation: Level,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// YCSB-C over the wire, alone and then beside connections sending
    /// malformed traffic (the wire fuzz target's client scripts); the
    /// well-formed clients must see no failed statement.
    Hostile(crate::targets::HostileRun),
    /// Statements of pathological shape (CASE nested 10,000 deep, 10 MB of
    /// additions, a 12 MB select list, a 10 MB IN list): the time each
    /// target takes to answer or refuse them, medians of alternating runs.
    Statements(crate::targets::StatementsRun),
    /// YCSB-A while rounds of full-table UPDATEs run: store size, live
    /// data and throughput over time (garbage collection at work).
    Churn(crate::churn::ChurnArgs),
    /// A full-table UPDATE, a crash and the time to recover (update NDP
    /// Fig. 24): ndpdb under each NDP logging mode beside PostgreSQL.
    Recovery(crate::recovery::RecoveryArgs),
    /// Single-row updates at a fixed rate beside a bulk SELECT FOR UPDATE
    /// and UPDATE (update NDP Fig. 25): basic logging, overflow log, and
    /// overflow log with lock violation, beside PostgreSQL.
    LockViolation(crate::lock_violation::LockViolationArgs),
    /// Host-only full-table UPDATEs of tables of several sizes, sizes
    /// alternating: does the time grow linearly with the rows?
    BulkUpdate(crate::bulk_update::BulkUpdateArgs),
    /// TPC-C: load, the standard mix for a fixed time, consistency
    /// conditions 1–4; targets side by side.
    Tpcc(crate::tpcc::TpccArgs),
    /// CH-benCHmark: TPC-C with the 22 analytical queries beside it; a
    /// power run (answers compared with PostgreSQL's), OLTP throughput
    /// alone and beside the analytics; targets side by side.
    Ch(crate::ch::ChArgs),
    /// YCSB-C on the host with an analytic query every few seconds, the
    /// query on the host and then on the device; throughput over time.
    HtapRead {
        #[arg(long, default_value_t = 200_000)]
        records: u64,
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// Seconds per run (one with ndp off, one with ndp on).
        #[arg(long, default_value_t = 20)]
        seconds: u64,
        /// Seconds between analytic queries.
        #[arg(long, default_value_t = 4.0)]
        every: f64,
        /// Output folder; default a fresh one under bench-results/.
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, default_value_t = 64)]
        buffer_pool_mib: usize,
        /// Where to run, repeatable: ndpdb (embedded; query on the host,
        /// then on the device), ndpdb-server[=HOST:PORT], postgres[=CONNSTRING]
        /// (default $NDPDB_POSTGRES).
        #[arg(long, default_value = "ndpdb")]
        target: Vec<String>,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// YCSB on the host with one bulk UPDATE injected after a warm-up, run
    /// on the host and then on the device; plus a selectivity sweep.
    MixedUpdate {
        #[arg(long, default_value_t = 200_000)]
        records: u64,
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// YCSB workload on the host: a (50/50) or c (read only).
        #[arg(long, default_value = "a")]
        workload: String,
        /// Seconds per run (at least until the update ends).
        #[arg(long, default_value_t = 20)]
        seconds: u64,
        /// Seconds of YCSB before the update.
        #[arg(long, default_value_t = 4.0)]
        warmup: f64,
        /// Percentage of rows the injected update changes.
        #[arg(long, default_value_t = 100)]
        selectivity: u32,
        /// Skip the update-only selectivity sweep (0/10/25/50/100 %).
        #[arg(long)]
        no_sweep: bool,
        /// Output folder; default a fresh one under bench-results/.
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, default_value_t = 64)]
        buffer_pool_mib: usize,
        /// Where to run, repeatable: ndpdb (embedded; ndp off and on),
        /// ndpdb-server[=HOST:PORT] (through the wire; ndp off and on),
        /// postgres[=CONNSTRING] (host-only baseline; default $NDPDB_POSTGRES).
        #[arg(long, default_value = "ndpdb")]
        target: Vec<String>,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// SQL conformance: the same random tables in ndpdb (a server in this
    /// process) and PostgreSQL, generated queries on both, rows compared.
    Diff {
        /// Rows in t1 (t2 gets twice as many).
        #[arg(long, default_value_t = 2000)]
        rows: u64,
        #[arg(long, default_value_t = 500)]
        queries: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// PostgreSQL: postgres[=CONNSTRING] (default $NDPDB_POSTGRES); also
        /// ndpdb-server=HOST:PORT to test a running server instead.
        #[arg(long, default_value = "postgres")]
        target: Vec<String>,
        /// Placement of ndpdb's queries: off (host only), on (every query
        /// the device can run goes there) or auto (the cost model).
        #[arg(long, default_value = "auto", value_parser = ["off", "on", "auto"])]
        ndp: String,
        /// Meanwhile rewrite rows of both tables with unchanged values and
        /// collect the garbage (VACUUM, every other one FULL) on another
        /// connection: answers must not change while GC moves versions.
        #[arg(long)]
        gc: bool,
        /// Send each generated query as a prepared statement (SQL's
        /// PREPARE) and run it three times, every answer compared.
        #[arg(long)]
        prepared: bool,
    },
    /// Shared-lock-table latency: host and device side, uncontended and
    /// contended, against the host lock table alone and a mutex hash map;
    /// then the host side with the table in a device process's /dev/shm
    /// region and behind TCP (remote compare-and-swap), beside
    /// PostgreSQL's lock manager.
    Slt {
        /// Measured acquire+release pairs per configuration.
        #[arg(long, default_value_t = 200_000)]
        ops: u64,
        /// Measured pairs per configuration that crosses a socket.
        #[arg(long, default_value_t = 20_000)]
        remote_ops: u64,
        /// Where else the table lives: shm (a device process maps it with
        /// this one), tcp (a device process, reached by messages), rados
        /// (lock entries in a RADOS object, $CEPH_CONF).
        #[arg(long, value_delimiter = ',', default_value = "shm,tcp")]
        links: Vec<String>,
        /// PostgreSQL for the advisory-lock column: postgres[=CONNSTRING]
        /// (default $NDPDB_POSTGRES); none to skip.
        #[arg(long, default_value = "postgres")]
        target: String,
        /// Output folder (CSV, summary, plots); default a fresh one under bench-results/.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// CH-benCHmark Query-SUM with NDP off and on under each link preset,
    /// plus selectivity and projectivity sweeps.
    Chbench {
        /// ORDER-LINE rows.
        #[arg(long, default_value_t = 10_000_000)]
        rows: u64,
        /// Output folder (CSV, summary); default a fresh one under bench-results/.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Link presets to compare (comma separated).
        #[arg(long, default_value = "unthrottled,nvme-gen3x4,10gbe")]
        presets: String,
        /// Skip the selectivity and projectivity sweeps.
        #[arg(long)]
        no_sweeps: bool,
        /// Buffer-pool budget in MiB.
        #[arg(long, default_value_t = 64)]
        buffer_pool_mib: usize,
        /// Processing elements of the device (0 = one per CPU, or per pinned CPU).
        #[arg(long, default_value_t = 0)]
        pes: usize,
        /// Pin the device's PEs to these CPUs (comma separated).
        #[arg(long, value_delimiter = ',')]
        device_cpus: Vec<usize>,
        /// Pin the host's query thread to these CPUs (comma separated).
        #[arg(long, value_delimiter = ',')]
        host_cpus: Vec<usize>,
        /// Emulated NVM latency of the device's store: off, fast, mid, slow.
        #[arg(long, default_value = "off")]
        nvm: String,
        /// Also run Query-SUM through the wire: ndpdb-server (a server on
        /// the loaded database in this process), postgres[=CONNSTRING]
        /// (the same rows in PostgreSQL; default $NDPDB_POSTGRES, see
        /// scripts/postgres-baseline.sh). The main measurements are embedded.
        #[arg(long)]
        target: Vec<String>,
        /// Also run Query-SUM with the device as its own process, reached
        /// over these links (comma separated: unix, tcp), serving the
        /// same store; rados: the same rows loaded into a database whose
        /// device store is in Ceph RADOS ($CEPH_CONF, pool
        /// $NDPDB_RADOS_POOL or ndpdb).
        #[arg(long, value_delimiter = ',')]
        links: Vec<String>,
        /// With `--links rados`: Query-SUM with NDP on at each of these
        /// numbers of page objects called at once (comma separated,
        /// e.g. 1,2,4,8,16,64); plotted as fan-out.png.
        #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=4096))]
        fan_out: Vec<u32>,
    },
}

/// `--isolation`'s parser: one of [`Level::OPTION_VALUES`].
fn isolation_level() -> impl clap::builder::TypedValueParser<Value = Level> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Level::OPTION_VALUES)
        .map(|v| Level::parse(&v).unwrap_or_default())
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// 22023 for a CPU id this machine does not have.
pub(crate) fn check_cpus<'a>(mut ids: impl Iterator<Item = &'a usize>) -> Result<()> {
    match ids.find(|c| **c >= cpus()) {
        Some(bad) => Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("CPU {bad} does not exist (this machine has {})", cpus()),
        )),
        None => Ok(()),
    }
}

pub fn machine_line(db: &Database) -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("MemTotal")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<u64>().ok())
            })
        })
        .map_or("?".into(), |kb| format!("{:.0} GiB", kb as f64 / 1048576.0));
    let pinned = |v: &[usize]| {
        if v.is_empty() {
            "not pinned".to_string()
        } else {
            format!("CPUs {v:?}")
        }
    };
    format!(
        "machine: {cpus} CPUs, {mem} RAM; in-process device with {} PEs ({}), NVM latency {}; host threads {}; link preset: {}",
        db.config().device_pes_effective(),
        pinned(&db.config().device_cpus),
        db.config().device_nvm.name,
        pinned(&ndpdb_bench::pin::host_cpus()),
        db.link_model()
    )
}

pub fn demo(records: u64, seconds: u64, threads: usize, device: &DeviceArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let dir = tempfile::tempdir()?;
    println!("ndpdb demo — embedded engine in {}", dir.path().display());
    let db = ndpdb_embedded::open_with(dir.path(), device.apply(Config::default())?)?;
    println!("{}", machine_line(&db));
    println!(
        "settings: buffer pool {} MiB, delta buffer {} KiB, {records} rows × 10 fields × 100 B",
        db.config().buffer_pool_bytes >> 20,
        db.config().delta_buffer_bytes >> 10
    );
    println!(
        "{}",
        isolation::line(&format!(
            "{} (YCSB, the read-NDP query, the update-NDP phase); {} (the load)",
            Level::ReadCommitted,
            Level::RepeatableRead
        ))
    );
    let delta = StatsDelta::start(&db);
    let load = ycsb::load(&db, records, 10, 100, true)?;
    println!(
        "loaded {records} rows in {:.1} s ({:.0} rows/s)",
        load.as_secs_f64(),
        records as f64 / load.as_secs_f64()
    );
    for l in engine_lines(&delta.finish(&db)) {
        println!("  {l}");
    }
    for (name, w) in [("YCSB-A", Workload::A), ("YCSB-C", Workload::C)] {
        let cfg = RunConfig {
            workload: w,
            records,
            threads,
            duration: Duration::from_secs(seconds),
            theta: 0.99,
            field_count: 10,
            field_len: 100,
            seed: 7,
            isolation: Level::ReadCommitted,
        };
        let r = ycsb::run(&Backend::Embedded(db.clone()), &cfg)?;
        for l in ycsb::describe(&format!("{name} ({threads} threads, zipf 0.99)"), &r) {
            println!("{l}");
        }
    }
    read_ndp_phase(&db)?;
    update_ndp_phase(&db, records, threads)?;
    println!("demo finished in {:.1} s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

/// The same analytic query with ndp off and on, side by side.
fn read_ndp_phase(db: &Database) -> Result<()> {
    let sql = "SELECT count(*), sum(length(field0)), min(field9) FROM usertable WHERE field1 LIKE 'a%' OR field2 LIKE 'b%'";
    println!("read NDP: {sql}");
    let mut results = Vec::new();
    for mode in ["off", "on"] {
        let mut s = Session::new(db.clone());
        s.execute(&format!("SET ndp = {mode}"))?;
        let delta = StatsDelta::start(db);
        let t = Instant::now();
        let out = s.execute(sql)?.pop();
        let elapsed = t.elapsed();
        let d = delta.finish(db);
        let g = |n: &str| ndpdb_bench::report::get(&d, n);
        println!(
            "  ndp {mode:<3}: {:>8.1} ms   data plane to host {:>10}   host buffer misses {:>7}   control messages {:>3}",
            elapsed.as_secs_f64() * 1e3,
            ndpdb_bench::report::human_bytes(g("link.data.to_host.bytes")),
            g("buffer.misses"),
            g("link.control.to_device.messages"),
        );
        results.push(out);
    }
    let same = results.windows(2).all(|w| w[0] == w[1]);
    println!("  results identical: {}", if same { "yes" } else { "NO" });
    if !same {
        return Err(Error::new(
            SqlState::INTERNAL_ERROR,
            "NDP and host results differ",
        ));
    }
    Ok(())
}

/// YCSB-A on the host while a bulk UPDATE of a quarter of the rows runs,
/// first on the host, then on the device (update NDP).
fn update_ndp_phase(db: &Database, records: u64, threads: usize) -> Result<()> {
    let opts = ndpdb_bench::mixed::MixedOptions {
        records,
        threads,
        workload: Workload::A,
        seconds: 6,
        warmup: 1.5,
        selectivity: 25,
        sample: Duration::from_millis(250),
    };
    println!(
        "update NDP: YCSB-A on {threads} host threads; after {} s: {}",
        opts.warmup,
        ndpdb_bench::mixed::update_sql(opts.selectivity)
    );
    let mut took = Vec::new();
    for ndp in [false, true] {
        let r = ndpdb_bench::mixed::run(&Backend::Embedded(db.clone()), &opts, ndp)?;
        let before = r.mean(ndpdb_bench::mixed::BEFORE);
        let during = r.mean(ndpdb_bench::mixed::DURING);
        println!(
            "  ndp {:<3}: update {} rows in {:>8.1} ms   YCSB ops/s before {:>7.0}  during {:>7.0} ({:>5.1} %)  after {:>7.0}   data plane to host {:>10}, to device {:>10}",
            if ndp { "on" } else { "off" },
            r.rows,
            r.update.as_secs_f64() * 1e3,
            before,
            during,
            during * 100.0 / before.max(1.0),
            r.mean(ndpdb_bench::mixed::AFTER),
            ndpdb_bench::report::human_bytes(r.counter("link.data.to_host.bytes")),
            ndpdb_bench::report::human_bytes(r.counter("link.data.to_device.bytes")),
        );
        took.push(r.update.as_secs_f64());
    }
    if let [host, device] = took[..] {
        println!(
            "  update NDP {:.2}× the speed of the host-only update",
            host / device.max(1e-9)
        );
    }
    Ok(())
}

pub fn default_out(name: &str) -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from("bench-results").join(format!("{name}-{stamp}"))
}

pub fn bench(which: Bench) -> Result<ExitCode> {
    match which {
        Bench::MixedUpdate {
            records,
            threads,
            workload,
            seconds,
            warmup,
            selectivity,
            no_sweep,
            out,
            buffer_pool_mib,
            target,
            device,
        } => {
            let targets: Vec<Target> = target
                .iter()
                .map(|t| Target::parse(t))
                .collect::<Result<_>>()?;
            let w = Workload::parse(&workload).ok_or_else(|| {
                Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("unknown workload {workload}"),
                )
            })?;
            let out = out.unwrap_or_else(|| default_out("mixed-update"));
            std::fs::create_dir_all(&out)?;
            let dir = out.join("db");
            let config = device.apply(Config {
                buffer_pool_bytes: buffer_pool_mib << 20,
                ..Config::default()
            })?;
            let mut summary = String::new();
            let mut say = |line: String| {
                println!("{line}");
                summary.push_str(&line);
                summary.push('\n');
            };
            let embedded = targets.contains(&Target::Ndpdb);
            if embedded {
                // On the device --device names (a device process, RADOS).
                let db = device.open(&dir, config.clone())?;
                say(machine_line(&db));
                if db.table(ycsb::TABLE).is_err() {
                    let t = ycsb::load(&db, records, 10, 100, true)?;
                    say(format!("loaded {records} rows in {:.1} s", t.as_secs_f64()));
                }
            }
            say(format!(
                "settings: YCSB-{} on {threads} client threads (zipf 0.99, read committed), {records} rows, buffer pool {buffer_pool_mib} MiB; after {warmup} s: {}",
                workload.to_uppercase(),
                ndpdb_bench::mixed::update_sql(selectivity)
            ));
            say(ndpdb_bench::mixed::isolation_line());
            let opts = ndpdb_bench::mixed::MixedOptions {
                records,
                threads,
                workload: w,
                seconds,
                warmup,
                selectivity,
                sample: Duration::from_millis(250),
            };
            let mut runs = Vec::new();
            let mut pipeline_runs = Vec::new();
            for t in &targets {
                // Embedded: a fresh buffer pool per run. Wire targets:
                // loaded once through COPY, then both runs.
                let wire = match t {
                    Target::Ndpdb => None,
                    t => {
                        let (backend, took) =
                            ycsb_wire(t, &config, Some(out.join("server-db")), records)?;
                        say(format!(
                            "{}: loaded {records} rows through COPY in {:.1} s",
                            t.label(),
                            took.as_secs_f64()
                        ));
                        Some(backend)
                    }
                };
                for &ndp in ndp_modes(wire.as_ref()) {
                    let backend = match &wire {
                        Some(b) => b,
                        None => &Backend::Embedded(device.open(&dir, config.clone())?),
                    };
                    let r = ndpdb_bench::mixed::run(backend, &opts, ndp)?;
                    let before = r.mean(ndpdb_bench::mixed::BEFORE);
                    let name = match t {
                        Target::Ndpdb => format!("ndp {:<3}", if ndp { "on" } else { "off" }),
                        Target::NdpdbServer(_) => {
                            format!("server, ndp {}", if ndp { "on" } else { "off" })
                        }
                        Target::Postgres(_) => "PostgreSQL".to_string(),
                    };
                    let engine = if r.engine.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; link to host {}, to device {}, control {} msgs; buffer misses {}; SLT CAS {}",
                            ndpdb_bench::report::human_bytes(r.counter("link.data.to_host.bytes")),
                            ndpdb_bench::report::human_bytes(r.counter("link.data.to_device.bytes")),
                            r.counter("link.control.to_device.messages"),
                            r.counter("buffer.misses"),
                            r.counter("slt.cas_attempts"),
                        )
                    };
                    say(format!(
                        "{name}: update {} rows in {:>8.1} ms; YCSB ops/s before {:>8.0}, during {:>8.0} ({:.1} %), after {:>8.0}{engine}; YCSB errors {}",
                        r.rows,
                        r.update.as_secs_f64() * 1e3,
                        before,
                        r.mean(ndpdb_bench::mixed::DURING),
                        r.mean(ndpdb_bench::mixed::DURING) * 100.0 / before.max(1.0),
                        r.mean(ndpdb_bench::mixed::AFTER),
                        r.errors
                    ));
                    if ndp && *t == Target::Ndpdb {
                        let us = r.update.as_secs_f64() * 1e6;
                        say(format!(
                            "  locking: PEs spent {:.1} ms taking SLT locks ({:.1} % of the update, summed over PEs); the host released them in {:.1} ms ({:.1} %)",
                            r.counter("ndp.device_lock_micros") as f64 / 1e3,
                            r.counter("ndp.device_lock_micros") as f64 * 100.0 / us.max(1.0),
                            r.counter("ndp.host_release_micros") as f64 / 1e3,
                            r.counter("ndp.host_release_micros") as f64 * 100.0 / us.max(1.0),
                        ));
                    }
                    runs.push(r);
                }
                if let (Target::Postgres(_), Some(backend), false) = (t, &wire, no_sweep) {
                    pipeline_runs.extend(ndpdb_bench::pipeline::run(
                        backend,
                        &[ndpdb_bench::pipeline::Variant::Postgres],
                        10,
                        3,
                        |l| say(l.to_string()),
                    )?);
                }
            }
            let find = |label: &str| {
                runs.iter()
                    .find(|r| r.label == label)
                    .map(|r| r.update.as_secs_f64())
            };
            if let (Some(on), Some(pg)) = (find("ndp on"), find("PostgreSQL")) {
                say(format!(
                    "update NDP {:.2}× faster than PostgreSQL (host-only)",
                    pg / on.max(1e-9)
                ));
            }
            if let (Some(off), Some(on)) = (find("ndp off"), find("ndp on")) {
                say(format!(
                    "update NDP {:.2}× faster than host-only",
                    off / on.max(1e-9)
                ));
            }
            std::fs::write(out.join("mixed.csv"), ndpdb_bench::mixed::csv(&runs))?;
            match ndpdb_bench::mixed::plot(
                &out.join("throughput.png"),
                &runs,
                &format!(
                    "YCSB-{} while a bulk UPDATE of {selectivity} % of the rows runs",
                    workload.to_uppercase()
                ),
            ) {
                Ok(true) => say(format!("plot: {}/throughput.png", out.display())),
                Ok(false) => say("plot skipped: no TrueType font found".into()),
                Err(e) => say(format!("plot failed: {e}")),
            }
            if !no_sweep && embedded {
                let db = device.open(&dir, config.clone())?;
                let sweep =
                    ndpdb_bench::mixed::sweep(&db, &[0, 10, 25, 50, 100], |l| say(l.to_string()))?;
                let mut csv = String::from("selectivity,ndp,ms,rows\n");
                for (pct, ndp, t, rows) in &sweep {
                    csv.push_str(&format!(
                        "{pct},{},{:.3},{rows}\n",
                        if *ndp { "on" } else { "off" },
                        t.as_secs_f64() * 1e3
                    ));
                }
                std::fs::write(out.join("sweep.csv"), csv)?;
                let cats: Vec<String> = [0, 10, 25, 50, 100]
                    .iter()
                    .map(|p| format!("{p} %"))
                    .collect();
                let values: Vec<Vec<f64>> = [0u32, 10, 25, 50, 100]
                    .iter()
                    .map(|p| {
                        [false, true]
                            .iter()
                            .map(|n| {
                                sweep
                                    .iter()
                                    .find(|s| s.0 == *p && s.1 == *n)
                                    .map_or(0.0, |s| s.2.as_secs_f64() * 1e3)
                            })
                            .collect()
                    })
                    .collect();
                ndpdb_bench::mixed::for_update_overhead(&db, 10, |l| say(l.to_string()))?;
                {
                    use ndpdb_bench::pipeline::Variant;
                    pipeline_runs.extend(ndpdb_bench::pipeline::run(
                        &Backend::Embedded(db.clone()),
                        &[
                            Variant::DevicePipeline,
                            Variant::HostDelete,
                            Variant::HostOnly,
                        ],
                        10,
                        3,
                        |l| say(l.to_string()),
                    )?);
                }
                match ndpdb_bench::mixed::abort_costs(&db, records, 10) {
                    Ok((early, late)) => say(format!(
                        "abort of a full-table NDP update (REPEATABLE READ): conflict found by the device at 10 % of the table {:.1} ms; found by host validation after the job {:.1} ms",
                        early.as_secs_f64() * 1e3,
                        late.as_secs_f64() * 1e3
                    )),
                    Err(e) => say(format!("abort experiment skipped: {}", e.message)),
                }
                let _ = ndpdb_bench::plot::bar_chart(
                    &out.join("sweep.png"),
                    "Bulk UPDATE by selectivity: host-only vs update NDP",
                    "time (ms)",
                    &cats,
                    &["ndp off", "ndp on"],
                    &values,
                );
            }
            if !pipeline_runs.is_empty() {
                let pg = pipeline_runs
                    .iter()
                    .find(|r| r.variant == ndpdb_bench::pipeline::Variant::Postgres)
                    .map(|r| r.median().as_secs_f64());
                for r in &pipeline_runs {
                    let ms = r.median().as_secs_f64();
                    say(format!(
                        "pipeline (FOR UPDATE + UPDATE + DELETE of 10 %, rolled back), median of {}: {:<48} {:>9.1} ms{}",
                        r.runs.len(),
                        r.variant.label(),
                        ms * 1e3,
                        pg.map(|p| format!(" ({:.2}× PostgreSQL's time)", ms / p.max(1e-9)))
                            .unwrap_or_default()
                    ));
                }
                std::fs::write(
                    out.join("pipeline.csv"),
                    ndpdb_bench::pipeline::csv(&pipeline_runs),
                )?;
            }
            std::fs::write(out.join("summary.txt"), summary)?;
            for d in [dir, out.join("server-db")] {
                if d.exists() {
                    std::fs::remove_dir_all(&d)?;
                }
            }
            println!("wrote {}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        Bench::Slt {
            ops,
            remote_ops,
            links,
            target,
            out,
        } => {
            let out = out.unwrap_or_else(|| default_out("slt"));
            let header = format!(
                "slt: {ops} acquire+release pairs per configuration, {} buckets of 16 B, machine {} CPUs, 128-bit CAS lock-free: {}",
                1 << 16,
                cpus(),
                portable_atomic::AtomicU128::is_lock_free()
            );
            println!("{header}");
            let mut rows = ndpdb_bench::sltbench::run(ops, |r| {
                println!("{}", ndpdb_bench::sltbench::describe(r))
            })?;
            rows.extend(crate::slt_links::run(&links, remote_ops, &target)?);
            let out = ndpdb_bench::sltbench::write(&out, &rows, &header)?;
            println!("wrote {}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        Bench::HtapRead {
            records,
            threads,
            seconds,
            every,
            out,
            buffer_pool_mib,
            target,
            device,
        } => {
            let targets: Vec<Target> = target
                .iter()
                .map(|t| Target::parse(t))
                .collect::<Result<_>>()?;
            let out = out.unwrap_or_else(|| default_out("htap-read"));
            std::fs::create_dir_all(&out)?;
            let dir = out.join("db");
            let config = device.apply(Config {
                buffer_pool_bytes: buffer_pool_mib << 20,
                ..Config::default()
            })?;
            if targets.contains(&Target::Ndpdb) {
                let db = ndpdb_embedded::open_with(&dir, config.clone())?;
                println!("{}", machine_line(&db));
                if db.table(ycsb::TABLE).is_err() {
                    ycsb::load(&db, records, 10, 100, true)?;
                }
            }
            let opts = ndpdb_bench::htap::HtapOptions {
                records,
                threads,
                seconds,
                every,
                sample: Duration::from_millis(250),
            };
            let mut summary = format!(
                "htap-read: {records} rows, {threads} YCSB-C threads, analytic query every {every} s, {seconds} s per run, buffer pool {buffer_pool_mib} MiB, link {}\nquery: {}\n",
                config.link,
                ndpdb_bench::htap::ANALYTIC_QUERY
            );
            let iso = isolation::line(&format!(
                "{} (YCSB-C clients and the analytic query, on every target); {} (the embedded load)",
                ndpdb_bench::htap::ISOLATION,
                Level::RepeatableRead
            ));
            println!("{iso}");
            summary.push_str(&iso);
            summary.push('\n');
            let mut runs = Vec::new();
            for t in &targets {
                let wire = match t {
                    Target::Ndpdb => None,
                    t => Some(ycsb_wire(t, &config, Some(out.join("server-db")), records)?.0),
                };
                for &ndp in ndp_modes(wire.as_ref()) {
                    let backend = match &wire {
                        Some(b) => b,
                        // A fresh buffer pool per embedded run.
                        None => {
                            &Backend::Embedded(ndpdb_embedded::open_with(&dir, config.clone())?)
                        }
                    };
                    let r = ndpdb_bench::htap::run(backend, &opts, ndp)?;
                    let (idle, busy) = r.means();
                    let q: Vec<String> = r
                        .queries
                        .iter()
                        .map(|d| format!("{:.0}", d.as_secs_f64() * 1e3))
                        .collect();
                    let line = format!(
                        "{}{}: YCSB-C mean {:.0} ops/s over the run; {idle:.0} ops/s without a query, {busy:.0} ops/s while one runs ({:.1} %, {:.0} % of the time); queries took [{}] ms",
                        if matches!(t, Target::NdpdbServer(_)) { "server, " } else { "" },
                        r.label,
                        r.overall(),
                        if idle > 0.0 { 100.0 * busy / idle } else { 0.0 },
                        100.0 * r.busy_share(),
                        q.join(", ")
                    );
                    println!("{line}");
                    summary.push_str(&line);
                    summary.push('\n');
                    runs.push(r);
                }
            }
            std::fs::write(out.join("htap-read.csv"), ndpdb_bench::htap::csv(&runs))?;
            let title = format!(
                "YCSB-C with an analytic query every {every} s (link {})",
                config.link.name
            );
            match ndpdb_bench::htap::plot(&out.join("throughput.png"), &runs, &title) {
                Ok(true) => println!("plot: {}", out.join("throughput.png").display()),
                Ok(false) => println!("plot skipped: no TrueType font found (CSV written)"),
                Err(e) => println!("plot failed: {e} (CSV written)"),
            }
            std::fs::write(out.join("summary.txt"), summary)?;
            for d in [dir, out.join("server-db")] {
                if d.exists() {
                    std::fs::remove_dir_all(&d)?;
                }
            }
            println!("wrote {}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        Bench::Chbench {
            rows,
            out,
            presets,
            no_sweeps,
            buffer_pool_mib,
            pes,
            device_cpus,
            host_cpus,
            nvm,
            target,
            links,
            fan_out,
        } => {
            let machine_cpus = cpus();
            let links = links
                .iter()
                .map(|l| {
                    ndpdb_embedded::process::LinkKind::by_name(l.trim()).ok_or_else(|| {
                        Error::new(
                            SqlState::INVALID_PARAMETER_VALUE,
                            format!("unknown link {l} (in-process, unix, tcp or rados)"),
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            ndpdb_bench::pin::set_host_cpus(&host_cpus);
            ndpdb_bench::pin::pin_host_thread(0);
            let presets = presets
                .split(',')
                .map(|p| {
                    LinkModel::by_name(p.trim()).ok_or_else(|| {
                        Error::new(
                            SqlState::INVALID_PARAMETER_VALUE,
                            format!("unknown link preset {p}"),
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let mut opts = ndpdb_bench::chbench::ChOptions {
                rows,
                out: out.unwrap_or_else(|| default_out("chbench")),
                presets,
                base: Config {
                    buffer_pool_bytes: buffer_pool_mib << 20,
                    device_pes: pes,
                    device_cpus: device_cpus.clone(),
                    device_nvm: nvm_profile(&nvm)?,
                    ..Config::default()
                },
                sweeps: !no_sweeps,
                postgres: None,
                server: false,
                links,
                fan_out: fan_out.iter().map(|&n| n as usize).collect(),
            };
            for t in &target {
                match Target::parse(t)? {
                    Target::Postgres(c) => opts.postgres = Some(c),
                    Target::NdpdbServer(None) => opts.server = true,
                    Target::NdpdbServer(Some(_)) => {
                        return Err(Error::new(
                            SqlState::INVALID_PARAMETER_VALUE,
                            "chbench serves its own database: use --target ndpdb-server without an address",
                        ))
                    }
                    Target::Ndpdb => {}
                }
            }
            let mut summary = String::new();
            let header = format!(
                "chbench: {rows} order lines, buffer pool {buffer_pool_mib} MiB, device PEs {} (CPUs {device_cpus:?}), NVM {}, host thread CPUs {host_cpus:?}, machine {} CPUs",
                opts.base.device_pes_effective(),
                opts.base.device_nvm.name,
                machine_cpus
            );
            println!("{header}");
            summary.push_str(&header);
            summary.push('\n');
            let iso = ndpdb_bench::chbench::isolation_line();
            println!("{iso}");
            summary.push_str(&iso);
            summary.push('\n');
            ndpdb_bench::chbench::run(&opts, |line| {
                println!("{line}");
                summary.push_str(line);
                summary.push('\n');
            })?;
            std::fs::write(opts.out.join("summary.txt"), summary)?;
            println!("wrote {}", opts.out.display());
            Ok(ExitCode::SUCCESS)
        }
        Bench::Churn(args) => crate::churn::run(args),
        Bench::Recovery(args) => crate::recovery::run(args),
        Bench::LockViolation(args) => crate::lock_violation::run(args),
        Bench::BulkUpdate(args) => crate::bulk_update::run(args),
        Bench::Tpcc(args) => crate::tpcc::run(args),
        Bench::Ch(args) => crate::ch::run(args),
        Bench::Statements(run) => crate::targets::statements(&run),
        Bench::Hostile(run) => {
            println!(
                "settings: {} records, YCSB-C, {} well-formed clients, {} attackers, {} s per run, seed {}, IN list of {} keys",
                run.records, run.threads, run.attackers, run.seconds, run.seed, run.in_list
            );
            println!(
                "{}",
                isolation::line(&format!("{} (the YCSB-C clients)", Level::ReadCommitted))
            );
            crate::targets::hostile(&run)
        }
        Bench::Diff {
            rows,
            queries,
            seed,
            target,
            ndp,
            gc,
            prepared,
        } => crate::targets::diff(rows, queries, seed, &target, &ndp, gc, prepared),
        Bench::Ycsb {
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
        } => {
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
    }
}
