//! The link over a stream socket: a device in its own process, on this
//! host (`unix:PATH`) or another (`tcp:HOST:PORT`), DESIGN.md §1, §10.
//!
//! The frames are the command envelopes of [`crate::command`] as they
//! are, one request then its response, on a connection. A host keeps a
//! pool of connections, so several threads have requests in flight at
//! once (an NDP_STATUS long poll does not hold up a page read); a
//! connection that fails is dropped, never reused.
//!
//! ```text
//!  host                                            device
//!  connect ─► Hello { magic, version, host id, token } ─►
//!           ◄─ Welcome { status, version, SLT region name } ◄─  (refused: a
//!                                                               message, closed)
//!  request frame (8-byte envelope + payload) ─►
//!           ◄─ response frame
//! ```
//!
//! A device that restarts answers with a new lock-table region: the host
//! then refuses to talk to it (`Restarted`) until it has re-learned what
//! the new incarnation shares with it ([`Transport::accept_restart`], the
//! host's reattach), letting only sync-plane requests through meanwhile.
//!
//! ```text
//!  attached ──request fails──► broken ──probe: same Welcome──► attached
//!                                 │
//!                                 └─ new Welcome ─► pending ─accept_restart─► switching
//!                                                   (all refused)   (sync plane only)
//!                                                                     │ finish_restart
//!                                                                     ▼
//!                                                                  attached
//! ```
//!
//! A device serves one host at a time: connections carry the host's id,
//! and a second host is refused (55000-like `Refused`) while the first has
//! any connection open. Every length read from the socket is bounded
//! ([`MAX_FRAME`]); a malformed frame closes the connection. A TCP device
//! requires the shared secret of `--token-file`; a unix socket is
//! created with mode 0600.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::command::ENVELOPE_SIZE;
use crate::link_model::LinkModel;
use crate::plane::{LinkStats, Plane};
use crate::transport::{CommandHandler, Metered, Transport};
use crate::{LinkError, Result};

/// Largest frame either side accepts (a result region of a big scan).
pub const MAX_FRAME: usize = 1 << 30;
/// Idle connections a host keeps to its device.
const MAX_IDLE: usize = 16;
/// Protocol version of the socket link.
pub const VERSION: u16 = 2;
const MAGIC: &[u8; 8] = b"NDPDBLNK";
/// Longest token and SLT name a handshake carries.
const MAX_HANDSHAKE_FIELD: usize = 4096;

/// Where a device listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    /// `HOST:PORT`.
    Tcp(String),
}

impl Endpoint {
    /// `unix:PATH` or `tcp:HOST:PORT`.
    pub fn parse(s: &str) -> Result<Endpoint> {
        if let Some(p) = s.strip_prefix("unix:") {
            if !p.is_empty() {
                return Ok(Endpoint::Unix(PathBuf::from(p)));
            }
        }
        if let Some(a) = s.strip_prefix("tcp:") {
            if a.rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
            {
                return Ok(Endpoint::Tcp(a.to_string()));
            }
        }
        Err(LinkError::OutOfRange(format!(
            "device address \"{s}\": expected unix:PATH or tcp:HOST:PORT"
        )))
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
            Endpoint::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

/// One connection.
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t).and(s.set_write_timeout(t)),
            Stream::Tcp(s) => s.set_read_timeout(t).and(s.set_write_timeout(t)),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

fn io_err(what: &str, e: std::io::Error) -> LinkError {
    LinkError::Transport(format!("{what}: {e}"))
}

/// Reads one envelope-framed message (bounded by [`MAX_FRAME`]).
fn read_frame(s: &mut impl Read) -> Result<Vec<u8>> {
    let mut head = [0u8; ENVELOPE_SIZE];
    s.read_exact(&mut head)
        .map_err(|e| io_err("reading a frame", e))?;
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if len > MAX_FRAME {
        return Err(LinkError::Corrupted(format!(
            "a frame of {len} bytes (the limit is {MAX_FRAME})"
        )));
    }
    let mut frame = Vec::with_capacity(ENVELOPE_SIZE + len);
    frame.extend_from_slice(&head);
    frame.resize(ENVELOPE_SIZE + len, 0);
    s.read_exact(&mut frame[ENVELOPE_SIZE..])
        .map_err(|e| io_err("reading a frame", e))?;
    Ok(frame)
}

fn write_all(s: &mut impl Write, bytes: &[u8]) -> Result<()> {
    s.write_all(bytes)
        .and_then(|_| s.flush())
        .map_err(|e| io_err("writing a frame", e))
}

/// A length-prefixed handshake field.
fn put_field(out: &mut Vec<u8>, field: &[u8]) {
    out.extend_from_slice(&(field.len() as u16).to_le_bytes());
    out.extend_from_slice(field);
}

fn read_u16(s: &mut impl Read) -> Result<u16> {
    let mut b = [0u8; 2];
    s.read_exact(&mut b).map_err(|e| io_err("handshake", e))?;
    Ok(u16::from_le_bytes(b))
}

fn read_field(s: &mut impl Read) -> Result<Vec<u8>> {
    let n = read_u16(s)? as usize;
    if n > MAX_HANDSHAKE_FIELD {
        return Err(LinkError::Corrupted(format!(
            "a handshake field of {n} bytes"
        )));
    }
    let mut v = vec![0u8; n];
    s.read_exact(&mut v).map_err(|e| io_err("handshake", e))?;
    Ok(v)
}

/// What a host says when it connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Identifies the host process: all its connections carry it.
    pub host_id: u64,
    pub token: Vec<u8>,
}

impl Hello {
    fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.host_id.to_le_bytes());
        put_field(&mut out, &self.token);
        out
    }

    fn read(s: &mut impl Read) -> Result<(u16, Hello)> {
        let mut magic = [0u8; 8];
        s.read_exact(&mut magic)
            .map_err(|e| io_err("handshake", e))?;
        if &magic != MAGIC {
            return Err(LinkError::Corrupted("not an ndpdb link handshake".into()));
        }
        let version = read_u16(s)?;
        let mut id = [0u8; 8];
        s.read_exact(&mut id).map_err(|e| io_err("handshake", e))?;
        let token = read_field(s)?;
        Ok((
            version,
            Hello {
                host_id: u64::from_le_bytes(id),
                token,
            },
        ))
    }
}

/// What a device answers: the shared lock table's region in /dev/shm
/// (empty: the device has none the host can map).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Welcome {
    pub version: u16,
    pub slt_region: String,
}

const WELCOME_OK: u16 = 0;
const WELCOME_REFUSED: u16 = 1;

fn refuse(s: &mut impl Write, why: &str) {
    let mut out = WELCOME_REFUSED.to_le_bytes().to_vec();
    out.extend_from_slice(&VERSION.to_le_bytes());
    put_field(&mut out, why.as_bytes());
    let _ = write_all(s, &out);
}

/// Which incarnation of the device the host talks to.
struct Incarnation {
    /// What the device answered when the host last (re)attached: a
    /// connection to a device that answers otherwise (it restarted with a
    /// new lock table) is not used, since this host's locks live in the
    /// old one.
    current: Welcome,
    /// A restarted device's answer, waiting for the host to reattach.
    pending: Option<Welcome>,
    /// Accepted; the host is still re-learning its lock table.
    switching: bool,
}

/// The host's side: a pool of connections to one device.
pub struct SocketTransport {
    endpoint: Endpoint,
    hello: Hello,
    incarnation: Mutex<Incarnation>,
    /// The last exchange failed: the next probe reconnects.
    broken: AtomicBool,
    pool: Mutex<Vec<Stream>>,
    metered: Metered,
    timeout: Option<Duration>,
}

impl SocketTransport {
    /// Connects to the device at `endpoint` (one connection, to learn
    /// what it offers); `timeout` bounds every read and write.
    pub fn connect(
        endpoint: &Endpoint,
        token: Vec<u8>,
        model: LinkModel,
        timeout: Option<Duration>,
    ) -> Result<(SocketTransport, Welcome)> {
        let host_id = host_id();
        let t = SocketTransport {
            endpoint: endpoint.clone(),
            hello: Hello { host_id, token },
            incarnation: Mutex::new(Incarnation {
                current: Welcome {
                    version: VERSION,
                    slt_region: String::new(),
                },
                pending: None,
                switching: false,
            }),
            broken: AtomicBool::new(false),
            pool: Mutex::new(Vec::new()),
            metered: Metered::new(model),
            timeout,
        };
        let (stream, welcome) = t.handshake()?;
        t.incarnation.lock().current = welcome.clone();
        t.pool.lock().push(stream);
        Ok((t, welcome))
    }

    /// A further connection, to the same device incarnation; a restarted
    /// device is remembered as pending and refused.
    fn open(&self) -> Result<Stream> {
        let (stream, welcome) = self.handshake()?;
        let mut inc = self.incarnation.lock();
        if welcome != inc.current {
            let was = inc.current.slt_region.clone();
            inc.pending = Some(welcome.clone());
            drop(inc);
            self.pool.lock().clear();
            return Err(LinkError::Restarted(format!(
                "the device at {} restarted (shared lock table {} instead of {was}): the host is reattaching",
                self.endpoint, welcome.slt_region
            )));
        }
        self.broken.store(false, Ordering::Release);
        Ok(stream)
    }

    /// Refuses requests while a restarted device is not yet reattached
    /// (sync-plane ones pass while the host re-learns its lock table).
    fn gate(&self, plane: Plane) -> Result<()> {
        let inc = self.incarnation.lock();
        if inc.pending.is_some() || (inc.switching && plane != Plane::Sync) {
            return Err(LinkError::Restarted(format!(
                "the device at {} restarted: the host is reattaching",
                self.endpoint
            )));
        }
        Ok(())
    }

    fn handshake(&self) -> Result<(Stream, Welcome)> {
        let mut s = match &self.endpoint {
            Endpoint::Unix(p) => Stream::Unix(
                UnixStream::connect(p)
                    .map_err(|e| io_err(&format!("connecting to {}", self.endpoint), e))?,
            ),
            Endpoint::Tcp(a) => {
                let s = TcpStream::connect(a.as_str())
                    .map_err(|e| io_err(&format!("connecting to {}", self.endpoint), e))?;
                let _ = s.set_nodelay(true);
                Stream::Tcp(s)
            }
        };
        s.set_timeout(self.timeout)
            .map_err(|e| io_err("socket options", e))?;
        write_all(&mut s, &self.hello.encode())?;
        let status = read_u16(&mut s)?;
        let version = read_u16(&mut s)?;
        let field = read_field(&mut s)?;
        let text = String::from_utf8_lossy(&field).into_owned();
        if status != WELCOME_OK {
            return Err(LinkError::Refused(text));
        }
        if version != VERSION {
            return Err(LinkError::Refused(format!(
                "the device speaks link version {version}, this host {VERSION}"
            )));
        }
        Ok((
            s,
            Welcome {
                version,
                slt_region: text,
            },
        ))
    }
}

/// A host id unique among processes and restarts.
fn host_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ ((std::process::id() as u64) << 40)
}

impl Transport for SocketTransport {
    fn roundtrip(&self, plane: Plane, request: Vec<u8>) -> Result<Vec<u8>> {
        self.gate(plane)?;
        let pooled = self.pool.lock().pop();
        let mut stream = match pooled {
            Some(s) => s,
            None => self.open()?,
        };
        let response = self
            .metered
            .exchange(plane, request, |r| {
                write_all(&mut stream, r)?;
                read_frame(&mut stream)
            })
            .inspect_err(|_| {
                // The device may be gone: none of its connections is
                // trusted again.
                self.broken.store(true, Ordering::Release);
                self.pool.lock().clear();
            })?;
        // Only a connection that completed its exchange is reused; past
        // MAX_IDLE idle ones (after a burst of callers) it is closed.
        let mut pool = self.pool.lock();
        if pool.len() < MAX_IDLE {
            pool.push(stream);
        }
        Ok(response)
    }

    fn stats(&self) -> &LinkStats {
        self.metered.stats()
    }

    fn model(&self) -> LinkModel {
        self.metered.model()
    }

    fn probe(&self) -> Result<bool> {
        if self.incarnation.lock().pending.is_some() {
            return Ok(true);
        }
        if !self.broken.load(Ordering::Acquire) {
            return Ok(false);
        }
        match self.open() {
            Ok(stream) => {
                let mut pool = self.pool.lock();
                if pool.len() < MAX_IDLE {
                    pool.push(stream);
                }
                Ok(false)
            }
            Err(LinkError::Restarted(_)) => Ok(true),
            Err(e) => Err(e),
        }
    }

    fn accept_restart(&self) -> Option<String> {
        let mut inc = self.incarnation.lock();
        let welcome = inc.pending.take()?;
        inc.current = welcome.clone();
        inc.switching = true;
        self.broken.store(false, Ordering::Release);
        Some(welcome.slt_region)
    }

    fn finish_restart(&self) {
        self.incarnation.lock().switching = false;
    }
}

/// How a device serves hosts.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// Required of every host (empty: none).
    pub token: Vec<u8>,
    /// Told to hosts: the SLT region they map.
    pub slt_region: String,
}

/// A bound listener.
pub enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    /// Binds `endpoint`; a unix socket file is created with mode 0600 (a
    /// stale one from a dead device is replaced).
    pub fn bind(endpoint: &Endpoint) -> Result<Listener> {
        match endpoint {
            Endpoint::Unix(p) => {
                if p.exists() && UnixStream::connect(p).is_err() {
                    let _ = std::fs::remove_file(p);
                }
                // Created private from the start: no window with a wider mode.
                let old = unsafe_umask(0o177);
                let bound = UnixListener::bind(p);
                unsafe_umask(old);
                let l = bound.map_err(|e| io_err(&format!("binding {endpoint}"), e))?;
                Ok(Listener::Unix(l, p.clone()))
            }
            Endpoint::Tcp(a) => Ok(Listener::Tcp(
                TcpListener::bind(a.as_str())
                    .map_err(|e| io_err(&format!("binding {endpoint}"), e))?,
            )),
        }
    }

    /// The address actually bound (a TCP port 0 resolved).
    pub fn endpoint(&self) -> Endpoint {
        match self {
            Listener::Unix(_, p) => Endpoint::Unix(p.clone()),
            Listener::Tcp(l) => {
                Endpoint::Tcp(l.local_addr().map(|a| a.to_string()).unwrap_or_default())
            }
        }
    }

    fn accept(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Listener::Unix(l, _) => Stream::Unix(l.accept()?.0),
            Listener::Tcp(l) => {
                let s = l.accept()?.0;
                let _ = s.set_nodelay(true);
                Stream::Tcp(s)
            }
        })
    }
}

/// Sets the process umask, returning the old one.
fn unsafe_umask(mask: u32) -> u32 {
    // SAFETY: umask only swaps the process's file-creation mask.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// The host a device serves now and how many connections it has open.
#[derive(Default)]
struct Attached {
    host: Option<u64>,
    connections: usize,
}

/// Serves hosts on `listener` until the process ends: one thread per
/// connection, each executing the frames it reads with `handler`.
pub fn serve(
    listener: Listener,
    handler: Arc<dyn CommandHandler>,
    options: ServeOptions,
) -> Result<()> {
    let attached = Arc::new(Mutex::new(Attached::default()));
    let options = Arc::new(options);
    loop {
        let stream = match listener.accept() {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err("accepting a host", e)),
        };
        let (handler, attached, options) = (handler.clone(), attached.clone(), options.clone());
        std::thread::Builder::new()
            .name("link-conn".into())
            .spawn(move || connection(stream, &*handler, &attached, &options))
            .map_err(|e| io_err("starting a connection thread", e))?;
    }
}

fn connection(
    mut s: Stream,
    handler: &dyn CommandHandler,
    attached: &Mutex<Attached>,
    options: &ServeOptions,
) {
    // A peer that says nothing is not kept waiting for ever.
    let _ = s.set_timeout(Some(Duration::from_secs(10)));
    let Ok((version, hello)) = Hello::read(&mut s) else {
        refuse(&mut s, "malformed handshake");
        return;
    };
    if version != VERSION {
        refuse(
            &mut s,
            &format!("the device speaks link version {VERSION}, the host {version}"),
        );
        return;
    }
    if !constant_time_eq(&hello.token, &options.token) {
        refuse(&mut s, "wrong or missing token");
        return;
    }
    {
        let mut a = attached.lock();
        match a.host {
            Some(h) if h != hello.host_id && a.connections > 0 => {
                drop(a);
                refuse(&mut s, "the device already serves another host");
                return;
            }
            _ => {
                a.host = Some(hello.host_id);
                a.connections += 1;
            }
        }
    }
    let mut welcome = WELCOME_OK.to_le_bytes().to_vec();
    welcome.extend_from_slice(&VERSION.to_le_bytes());
    put_field(&mut welcome, options.slt_region.as_bytes());
    if write_all(&mut s, &welcome).is_ok() {
        // Requests may be far apart (an idle pooled connection).
        let _ = s.set_timeout(None);
        while let Ok(frame) = read_frame(&mut s) {
            let response = handler.handle(&frame);
            if write_all(&mut s, &response).is_err() {
                break;
            }
        }
    }
    attached.lock().connections -= 1;
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Request, Response};
    use crate::plane::Direction;

    /// Echoes INFO with a page count of the request's length.
    struct Echo;
    impl CommandHandler for Echo {
        fn handle(&self, frame: &[u8]) -> Vec<u8> {
            match Request::decode(frame) {
                Ok(_) => Response::Info(crate::DeviceInfo {
                    page_count: frame.len() as u64,
                    page_size: 8192,
                    merges: 0,
                })
                .encode(),
                Err(e) => Response::encode_error(&e),
            }
        }
    }

    fn device(token: &[u8]) -> Endpoint {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.sock");
        std::mem::forget(dir);
        let l = Listener::bind(&Endpoint::Unix(path)).unwrap();
        let ep = l.endpoint();
        let options = ServeOptions {
            token: token.to_vec(),
            slt_region: "/ndpdb-test".into(),
        };
        std::thread::spawn(move || serve(l, Arc::new(Echo), options));
        ep
    }

    #[test]
    fn endpoints_parse() {
        assert_eq!(
            Endpoint::parse("unix:/tmp/d.sock").unwrap(),
            Endpoint::Unix("/tmp/d.sock".into())
        );
        assert_eq!(
            Endpoint::parse("tcp:127.0.0.1:7000").unwrap(),
            Endpoint::Tcp("127.0.0.1:7000".into())
        );
        for bad in ["unix:", "tcp:host", "tcp::1", "udp:x:1", "tcp:h:99999"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn frames_travel_and_a_second_host_is_refused() {
        let ep = device(b"secret");
        let (t, welcome) =
            SocketTransport::connect(&ep, b"secret".to_vec(), LinkModel::UNTHROTTLED, None)
                .unwrap();
        assert_eq!(welcome.slt_region, "/ndpdb-test");
        let client = crate::DeviceClient::new(Arc::new(t));
        // Concurrent callers each get a connection.
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        assert_eq!(client.info().unwrap().page_count, 8);
                    }
                });
            }
        });
        assert_eq!(
            client.stats().messages(Plane::Control, Direction::ToHost),
            200
        );
        let other = SocketTransport::connect(&ep, b"secret".to_vec(), LinkModel::UNTHROTTLED, None);
        assert!(matches!(other, Err(LinkError::Refused(m)) if m.contains("another host")));
        let wrong = SocketTransport::connect(&ep, b"guess".to_vec(), LinkModel::UNTHROTTLED, None);
        assert!(matches!(wrong, Err(LinkError::Refused(m)) if m.contains("token")));
        // Once the first host is gone, another may attach.
        drop(client);
        let mut attached = None;
        for _ in 0..100 {
            match SocketTransport::connect(&ep, b"secret".to_vec(), LinkModel::UNTHROTTLED, None) {
                Ok(t) => {
                    attached = Some(t);
                    break;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        assert!(
            attached.is_some(),
            "a new host attaches after the old one left"
        );
    }

    #[test]
    fn a_burst_of_callers_leaves_a_bounded_pool() {
        let ep = device(b"");
        let (t, _) =
            SocketTransport::connect(&ep, Vec::new(), LinkModel::UNTHROTTLED, None).unwrap();
        let t = Arc::new(t);
        let barrier = std::sync::Barrier::new(40);
        std::thread::scope(|s| {
            for _ in 0..40 {
                s.spawn(|| {
                    barrier.wait();
                    let frame = Request::Info.encode();
                    for _ in 0..5 {
                        t.roundtrip(Plane::Control, frame.clone()).unwrap();
                    }
                });
            }
        });
        let idle = t.pool.lock().len();
        assert!((1..=MAX_IDLE).contains(&idle), "{idle} idle connections");
    }

    #[test]
    fn a_restarted_device_is_not_taken_for_the_old_one() {
        let ep = device(b"");
        let (t, _) =
            SocketTransport::connect(&ep, Vec::new(), LinkModel::UNTHROTTLED, None).unwrap();
        // The device "restarts": another one, with another lock table, on
        // the same path.
        let Endpoint::Unix(path) = &ep else {
            unreachable!()
        };
        std::fs::remove_file(path).unwrap();
        let l = Listener::bind(&ep).unwrap();
        let options = ServeOptions {
            token: Vec::new(),
            slt_region: "/ndpdb-test-2".into(),
        };
        std::thread::spawn(move || serve(l, Arc::new(Echo), options));
        t.pool.lock().clear();
        let client = crate::DeviceClient::new(Arc::new(t));
        match client.info() {
            Err(LinkError::Restarted(m)) => assert!(m.contains("restarted"), "{m}"),
            other => panic!("{other:?}"),
        }
        // Refused until the host accepts the new incarnation; then only
        // the sync plane passes until it has re-learned its lock table.
        assert!(matches!(client.info(), Err(LinkError::Restarted(_))));
        assert_eq!(client.probe(), Ok(true));
        assert_eq!(client.accept_restart().as_deref(), Some("/ndpdb-test-2"));
        assert!(matches!(client.info(), Err(LinkError::Restarted(_))));
        assert!(
            !matches!(
                client.call(&Request::SltOccupied),
                Err(LinkError::Restarted(_))
            ),
            "the sync plane passes"
        );
        client.finish_restart();
        client.info().unwrap();
        assert_eq!(client.probe(), Ok(false));
        assert_eq!(client.accept_restart(), None);
    }

    #[test]
    fn an_oversized_frame_closes_the_connection() {
        let ep = device(b"");
        let Endpoint::Unix(p) = &ep else {
            unreachable!()
        };
        let mut s = UnixStream::connect(p).unwrap();
        s.write_all(
            &Hello {
                host_id: 1,
                token: Vec::new(),
            }
            .encode(),
        )
        .unwrap();
        let mut st = Stream::Unix(s.try_clone().unwrap());
        assert_eq!(read_u16(&mut st).unwrap(), WELCOME_OK);
        read_u16(&mut st).unwrap();
        read_field(&mut st).unwrap();
        // An envelope claiming 2 GiB.
        s.write_all(&[0x06, 0, 0, 0, 0, 0, 0, 0x80]).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "closed without an answer");
    }
}
