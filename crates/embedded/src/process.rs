//! Engine variants for tests: the same database opened with the device
//! in this process (the default) or in its own `ndpdb device` process
//! over a unix socket, chosen by the environment:
//!
//! ```text
//!  NDPDB_TEST_DEVICE_BIN unset   → open_with(dir)            (in-process device)
//!  NDPDB_TEST_DEVICE_BIN=…/ndpdb → ndpdb device --store DIR/device-process
//!                                    --listen unix:DIR/device.sock
//!                                  + Database::attach        (device process)
//! ```
//!
//! `NDPDB_TEST_DEVICE=rados` (with `CEPH_CONF` naming a cluster) opens
//! the in-process device with its store in RADOS instead: pool `ndpdb`
//! (or `$NDPDB_RADOS_POOL`), objects under a prefix of each database's
//! own (`crate::rados`).
//!
//! The test suites that must hold for every engine variant (the
//! sqllogictest files, the differential NDP tests) open their databases
//! through [`open_variant`]; CI runs them once per variant.

use std::io::{BufRead, BufReader};
use std::ops::Deref;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use ndpdb_formats::SqlState;
use ndpdb_host::{Config, Database, Error, Result};

/// The variable naming the `ndpdb` binary that runs device processes.
pub const DEVICE_BIN_VAR: &str = "NDPDB_TEST_DEVICE_BIN";
/// The variable choosing the device store's medium (`rados`).
pub const DEVICE_KIND_VAR: &str = "NDPDB_TEST_DEVICE";

/// A device process, killed (and its lock-table region removed) when
/// dropped.
pub struct DeviceProcess {
    child: Child,
    endpoint: String,
}

impl DeviceProcess {
    /// Starts `bin device --store store --listen unix:socket` and waits
    /// until it accepts connections.
    pub fn spawn(bin: &Path, store: &Path, socket: &Path, pes: usize) -> Result<DeviceProcess> {
        let listen = format!("unix:{}", socket.display());
        DeviceProcess::spawn_at(bin, store, &listen, None, pes, &[])
    }

    /// Starts `bin device` on `listen` (`unix:PATH` or `tcp:HOST:PORT`,
    /// port 0 for any free one), with a token file and PEs pinned to
    /// `cpus` if given, and waits until it accepts connections.
    ///
    /// Readiness is the device's own "listening on ENDPOINT" line, not a
    /// probe connection: a probe could reach another process that holds
    /// the port, and the line names the port a `:0` resolved to.
    pub fn spawn_at(
        bin: &Path,
        store: &Path,
        listen: &str,
        token_file: Option<&Path>,
        pes: usize,
        cpus: &[usize],
    ) -> Result<DeviceProcess> {
        let mut c = Command::new(bin);
        c.arg("device")
            .arg("--store")
            .arg(store)
            .arg("--listen")
            .arg(listen)
            .arg("--pes")
            .arg(pes.to_string());
        if let Some(t) = token_file {
            c.arg("--token-file").arg(t);
        }
        if !cpus.is_empty() {
            let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
            c.arg("--device-cpus").arg(list.join(","));
        }
        let mut child = c.stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut p = DeviceProcess {
            child,
            endpoint: String::new(),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        // Reads to the end, so the device never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some((_, endpoint)) = line.rsplit_once("listening on ") {
                    let _ = tx.send(endpoint.trim().to_string());
                }
            }
        });
        let t = Instant::now();
        loop {
            match rx.recv_timeout(Duration::from_millis(10)) {
                Ok(endpoint) => {
                    p.endpoint = endpoint;
                    return Ok(p);
                }
                Err(RecvTimeoutError::Timeout)
                    if t.elapsed() < Duration::from_secs(20) && p.child.try_wait()?.is_none() => {}
                Err(_) => {
                    return Err(Error::new(
                        SqlState::CONNECTION_FAILURE,
                        format!("the device process at {listen} did not start"),
                    ))
                }
            }
        }
    }

    /// The endpoint the device listens on, as it reported it (a TCP port
    /// 0 resolved).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Drop for DeviceProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Killed, it could not remove its lock-table region.
        ndpdb_slt::remove_dead_regions();
    }
}

/// A database of some engine variant; derefs to the [`Database`].
pub struct Opened {
    db: Database,
    /// Dropped after `db` (fields drop in order): the host closes first.
    _device: Option<DeviceProcess>,
}

impl Deref for Opened {
    type Target = Database;

    fn deref(&self) -> &Database {
        &self.db
    }
}

/// Opens the database in `dir` as the environment chooses (see the
/// module docs).
pub fn open_variant(dir: &Path, config: Config) -> Result<Opened> {
    if std::env::var_os(DEVICE_KIND_VAR).is_some_and(|v| v == "rados") {
        let (conf, pool) = crate::rados::cluster_from_env()?;
        return Ok(Opened {
            db: crate::open_rados(dir, config, &conf, &pool)?,
            _device: None,
        });
    }
    match std::env::var_os(DEVICE_BIN_VAR) {
        None => Ok(Opened {
            db: crate::open_with(dir, config)?,
            _device: None,
        }),
        Some(bin) => {
            std::fs::create_dir_all(dir)?;
            let socket = dir.join("device.sock");
            let device = DeviceProcess::spawn(
                Path::new(&bin),
                &dir.join("device-process"),
                &socket,
                config.device_pes,
            )?;
            let addr = format!("unix:{}", socket.display());
            Ok(Opened {
                db: Database::attach(dir, config, &addr, Vec::new())?,
                _device: Some(device),
            })
        }
    }
}

/// How a benchmark reaches the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// The device engine in this process (the default).
    InProcess,
    /// An `ndpdb device` process over a unix socket.
    Unix,
    /// An `ndpdb device` process over TCP on the loopback interface.
    Tcp,
    /// The device engine in this process with its store in Ceph RADOS
    /// (the cluster `$CEPH_CONF` names, pool `$NDPDB_RADOS_POOL` or
    /// `ndpdb`): a database of its own, loaded there, not `DIR/device`.
    Rados,
}

impl LinkKind {
    pub fn name(self) -> &'static str {
        match self {
            LinkKind::InProcess => "in-process",
            LinkKind::Unix => "unix-socket",
            LinkKind::Tcp => "tcp",
            LinkKind::Rados => "rados",
        }
    }

    pub fn by_name(s: &str) -> Option<LinkKind> {
        match s {
            "in-process" | "inproc" => Some(LinkKind::InProcess),
            "unix" | "unix-socket" => Some(LinkKind::Unix),
            "tcp" => Some(LinkKind::Tcp),
            "rados" => Some(LinkKind::Rados),
            _ => None,
        }
    }
}

/// Opens the database in `dir` over `link`: for the socket kinds an
/// `ndpdb device` process (`bin`) serves the database's own store
/// (`DIR/device`), so every kind reads the same pages.
pub fn open_over(dir: &Path, config: Config, link: LinkKind, bin: &Path) -> Result<Opened> {
    if link == LinkKind::Rados {
        let (conf, pool) = crate::rados::cluster_from_env()?;
        return Ok(Opened {
            db: crate::open_rados(dir, config, &conf, &pool)?,
            _device: None,
        });
    }
    match DeviceAt::start(dir, &config, link, bin)? {
        None => Ok(Opened {
            db: crate::open_with(dir, config)?,
            _device: None,
        }),
        Some(at) => Ok(Opened {
            db: Database::attach(dir, config, &at.listen, at.secret.clone())?,
            _device: Some(at.process),
        }),
    }
}

/// A device process started for a benchmark, and how to reach it.
pub struct DeviceAt {
    pub process: DeviceProcess,
    /// `unix:PATH` or `tcp:127.0.0.1:PORT`.
    pub listen: String,
    /// The shared secret (TCP), empty over a unix socket.
    pub secret: Vec<u8>,
}

impl DeviceAt {
    /// Starts `bin device` on the store `DIR/device`, reached over `link`
    /// (a fresh random token for TCP); `None` for the in-process kind.
    pub fn start(
        dir: &Path,
        config: &Config,
        link: LinkKind,
        bin: &Path,
    ) -> Result<Option<DeviceAt>> {
        std::fs::create_dir_all(dir)?;
        let (listen, token) = match link {
            LinkKind::InProcess | LinkKind::Rados => return Ok(None),
            LinkKind::Unix => (format!("unix:{}", dir.join("device.sock").display()), None),
            LinkKind::Tcp => {
                let token = dir.join("device.token");
                let mut secret = [0u8; 16];
                std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut secret)?;
                let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
                std::fs::write(&token, hex)?;
                // Any free port: the device reports the one it bound.
                ("tcp:127.0.0.1:0".to_string(), Some(token))
            }
        };
        let process = DeviceProcess::spawn_at(
            bin,
            &dir.join("device"),
            &listen,
            token.as_deref(),
            config.device_pes,
            &config.device_cpus,
        )?;
        let secret = match &token {
            Some(t) => std::fs::read(t)?,
            None => Vec::new(),
        };
        Ok(Some(DeviceAt {
            listen: process.endpoint().to_string(),
            process,
            secret,
        }))
    }
}
