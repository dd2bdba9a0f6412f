//! `ndpdb device`: the device engine as its own process, serving one host
//! at a time over a unix or TCP socket (`ndpdb_link::socket`), with its
//! shared lock table in /dev/shm; and `--device ADDR`, with which the
//! other commands attach to it instead of opening the embedded device.
//!
//! ```text
//!  ndpdb device --store DIR --listen unix:PATH      ndpdb serve --db DIR --device unix:PATH
//!    DeviceEngine(DIR) ◄── socket link ──────────────── Database::attach
//!    SLT /dev/shm/ndpdb-slt-… ◄─────── mapped by both ─────┘
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use ndpdb_device::{DeviceEngine, DeviceOptions};
use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Database, Error, Result};
use ndpdb_link::socket::{serve, Endpoint, Listener, ServeOptions};
use ndpdb_slt::SharedLockTable;

/// The shared secret in `file` (surrounding whitespace dropped); none
/// without a file.
pub fn read_token(file: Option<&Path>) -> Result<Vec<u8>> {
    let Some(f) = file else {
        return Ok(Vec::new());
    };
    let text = std::fs::read(f).map_err(|e| {
        Error::new(
            SqlState::UNDEFINED_FILE,
            format!("cannot read token file \"{}\": {e}", f.display()),
        )
    })?;
    Ok(text.trim_ascii().to_vec())
}

/// Where `--device rados` finds its store.
pub struct RadosArgs {
    pub ceph_conf: Option<PathBuf>,
    pub pool: String,
}

impl RadosArgs {
    /// `--ceph-conf`, else `$CEPH_CONF`, else Ceph's default path.
    pub fn conf(&self) -> PathBuf {
        self.ceph_conf
            .clone()
            .or_else(|| std::env::var_os("CEPH_CONF").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("/etc/ceph/ceph.conf"))
    }
}

/// Opens the database in `dir`: on the device process at `device` if
/// given, with its store in RADOS for `rados`, else with the embedded
/// device.
pub fn open(
    dir: &Path,
    config: Config,
    device: Option<&str>,
    token: Option<&Path>,
    rados: &RadosArgs,
) -> Result<Database> {
    match device {
        Some("rados") => ndpdb_embedded::open_rados(dir, config, &rados.conf(), &rados.pool),
        Some(addr) => Database::attach(dir, config, addr, read_token(token)?),
        None => ndpdb_embedded::open_with(dir, config),
    }
}

/// What `ndpdb device` runs with.
pub struct DeviceRun {
    pub store: PathBuf,
    pub listen: String,
    pub pes: usize,
    pub cpus: Vec<usize>,
    pub nvm: ndpdb_host::NvmProfile,
    pub slt_buckets: usize,
    pub token_file: Option<PathBuf>,
}

/// Runs the device until the process is killed.
pub fn run(r: &DeviceRun) -> Result<ExitCode> {
    let endpoint = Endpoint::parse(&r.listen)?;
    let token = read_token(r.token_file.as_deref())?;
    if matches!(endpoint, Endpoint::Tcp(_)) && token.is_empty() {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            "a TCP device requires --token-file with a shared secret",
        ));
    }
    let (slt, region) = SharedLockTable::create_for_device(r.slt_buckets)
        .map_err(|e| Error::new(e.sqlstate(), e.to_string()))?;
    let options = DeviceOptions {
        pes: r.pes,
        cpus: r.cpus.clone(),
        nvm: r.nvm,
        slt: Some(Arc::new(slt)),
        ..DeviceOptions::default()
    };
    let pes = options.pes_effective();
    let engine = DeviceEngine::open_with(&r.store, options)?;
    let listener = Listener::bind(&endpoint)?;
    println!(
        "ndpdb device: store {}, {pes} PEs, NVM {}, shared lock table /dev/shm/{region}; listening on {}",
        r.store.display(),
        r.nvm.name,
        listener.endpoint()
    );
    serve(
        listener,
        Arc::new(engine),
        ServeOptions {
            token,
            slt_region: region,
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
