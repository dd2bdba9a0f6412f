//! `ndpdb bench chbench`: CH-benCHmark Query-SUM with NDP off and on
//! under each link preset, plus the selectivity and projectivity sweeps
//! (`ndpdb_bench::chbench`); optionally through the wire, over a device
//! process's links and at several RADOS fan-outs. Writes `summary.txt`
//! beside the CSVs.

use std::path::PathBuf;
use std::process::ExitCode;

use ndpdb_bench::target::Target;
use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Error, Result};
use ndpdb_link::LinkModel;

use crate::args::{cpus, default_out, nvm_profile};

#[derive(clap::Args)]
pub struct ChbenchArgs {
    /// ORDER-LINE rows.
    #[arg(long, default_value_t = 10_000_000)]
    pub rows: u64,
    /// Output folder (CSV, summary); default a fresh one under bench-results/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Link presets to compare (comma separated).
    #[arg(long, default_value = "unthrottled,nvme-gen3x4,10gbe")]
    pub presets: String,
    /// Skip the selectivity and projectivity sweeps.
    #[arg(long)]
    pub no_sweeps: bool,
    /// Buffer-pool budget in MiB.
    #[arg(long, default_value_t = 64)]
    pub buffer_pool_mib: usize,
    /// Processing elements of the device (0 = one per CPU, or per pinned CPU).
    #[arg(long, default_value_t = 0)]
    pub pes: usize,
    /// Pin the device's PEs to these CPUs (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub device_cpus: Vec<usize>,
    /// Pin the host's query thread to these CPUs (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub host_cpus: Vec<usize>,
    /// Emulated NVM latency of the device's store: off, fast, mid, slow.
    #[arg(long, default_value = "off")]
    pub nvm: String,
    /// Also run Query-SUM through the wire: ndpdb-server (a server on
    /// the loaded database in this process), postgres[=CONNSTRING]
    /// (the same rows in PostgreSQL; default $NDPDB_POSTGRES, see
    /// scripts/postgres-baseline.sh). The main measurements are embedded.
    #[arg(long)]
    pub target: Vec<String>,
    /// Also run Query-SUM with the device as its own process, reached
    /// over these links (comma separated: unix, tcp), serving the
    /// same store; rados: the same rows loaded into a database whose
    /// device store is in Ceph RADOS ($CEPH_CONF, pool
    /// $NDPDB_RADOS_POOL or ndpdb).
    #[arg(long, value_delimiter = ',')]
    pub links: Vec<String>,
    /// With `--links rados`: Query-SUM with NDP on at each of these
    /// numbers of page objects called at once (comma separated,
    /// e.g. 1,2,4,8,16,64); plotted as fan-out.png.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub fan_out: Vec<u32>,
}

pub fn run(args: ChbenchArgs) -> Result<ExitCode> {
    let ChbenchArgs {
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
    } = args;
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
