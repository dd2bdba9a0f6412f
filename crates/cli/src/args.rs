//! Argument types and helpers that several `ndpdb` commands share: the
//! device options every command that opens a database takes
//! ([`DeviceArgs`]), the parsers of NVM profiles and isolation levels,
//! the check of CPU ids, the machine line benchmarks print first, and the
//! default output folder of a benchmark run.

use std::path::PathBuf;

use ndpdb_bench::isolation::Level;
use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Database, Error, NvmProfile, Result};
use ndpdb_link::LinkModel;

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

/// `--isolation`'s parser: one of [`Level::OPTION_VALUES`].
pub(crate) fn isolation_level() -> impl clap::builder::TypedValueParser<Value = Level> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Level::OPTION_VALUES)
        .map(|v| Level::parse(&v).unwrap_or_default())
}

pub(crate) fn cpus() -> usize {
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

pub fn default_out(name: &str) -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from("bench-results").join(format!("{name}-{stamp}"))
}
