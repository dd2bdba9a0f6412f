//! The PostgreSQL wire-protocol server (DESIGN.md §11): `ndpdb serve`.
//!
//! ```text
//!  TCP accept ─► connection limit (53300 beyond it) ─► a thread of its own
//!     (a large stack; a panic ends only this connection, rolled back)
//!     tls.rs: SSLRequest ─► TLS handshake (with --tls-cert/--tls-key)
//!     startup.rs: SSL (without) / GSS refused, CancelRequest, startup packet, trust,
//!                 md5 or SCRAM-SHA-256 ─► ParameterStatus… ─► ReadyForQuery
//!     connection.rs: framed messages (wire/) ─► simple.rs | extended.rs |
//!                 copy_in.rs ─► the connection's own Session
//! ```
//!
//! Modules in pipeline order:
//! - [`wire`]: bounded framing and decoding of what clients send, and the
//!   output buffer of what the server answers.
//! - [`tls`]: an SSLRequest answered with a TLS handshake (rustls).
//! - [`auth`]: the password check (md5, SCRAM-SHA-256) behind startup.
//! - [`startup`]: the startup phase up to the first ReadyForQuery.
//! - [`cancel`]: CancelRequest → the session's interrupt (57014).
//! - [`connection`]: the message loop of one connection, PostgreSQL's
//!   rules for errors, Sync and ReadyForQuery; [`conn_io`]: what a
//!   connection holds and the replies its handlers send.
//! - [`simple`]: simple Query messages.
//! - [`extended`] and [`portal`]: Parse/Bind/Describe/Execute/Close.
//! - [`copy`] and [`copy_in`]: COPY FROM STDIN parsing and its sub-protocol.
//! - [`catalog`]: psql's `\dt` / `\d` table list.
//! - [`types`]: type OIDs, text and binary formats of values.
//!
//! Nothing a client sends can end the server: lengths and fields are
//! checked before use, statements too deep to plan get 54001, a client
//! that leaves before Sync has its implicit transaction rolled back, and a
//! panic — a bug — ends only its own connection (`PANICS` counts them).

pub mod auth;
pub mod cancel;
pub mod catalog;
pub mod conn_io;
pub mod connection;
pub mod copy;
pub mod copy_in;
pub mod copy_out;
pub mod extended;
pub mod portal;
pub mod simple;
pub mod startup;
pub mod tls;
pub mod types;
pub mod wire;

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures::FutureExt;
use pgwire::api::auth::DefaultServerParameterProvider;
use pgwire::error::ErrorInfo;
use pgwire::messages::response::ErrorResponse;
use pgwire::messages::Message;
use pgwire::tokio::tokio_rustls::TlsAcceptor;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use ndpdb_host::Database;
use ndpdb_sql::Session;

pub use auth::Auth;
use auth::{server_parameters, Passwords, Startup};
use cancel::{Registrar, Registry};
pub use connection::Connection;
use startup::{Started, AUTHENTICATION_TIMEOUT};
pub use types::pg_type;
use wire::{FrameReader, Out};

/// Stack of a connection's thread. Statements are limited in depth
/// (54001) well inside it; the rest is untouched virtual memory.
pub const CONNECTION_STACK: usize = 64 << 20;

/// Connections that ended in a panic since the process started.
static PANICS: AtomicU64 = AtomicU64::new(0);

/// How many connections ended in a panic (a bug: each was contained,
/// its transaction rolled back). Tests and the fuzzer require 0.
pub fn panics() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Connections beyond this are refused with SQLSTATE 53300.
    pub max_connections: usize,
    pub auth: Auth,
    /// TLS for clients that ask for it ([`tls::server_config`]); `None`
    /// refuses every SSLRequest.
    pub tls: Option<Arc<tls::rustls::ServerConfig>>,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            max_connections: 256,
            auth: Auth::Trust,
            tls: None,
        }
    }
}

/// What every connection of one server shares.
pub struct Server {
    db: Database,
    params: Arc<DefaultServerParameterProvider>,
    passwords: Passwords,
    registry: Arc<Registry>,
    tls: Option<TlsAcceptor>,
}

impl Server {
    pub fn new(db: Database, config: &ServerConfig) -> Arc<Server> {
        Arc::new(Server {
            db,
            params: Arc::new(server_parameters()),
            passwords: Passwords::new(&config.auth),
            registry: Registry::new(),
            tls: config.tls.clone().map(TlsAcceptor::from),
        })
    }

    /// Runs one client connection to its end on the current task: startup,
    /// then messages until the client leaves. A panic is caught here: it
    /// ends this connection only, and dropping its session rolls back its
    /// transaction.
    pub async fn run_connection<IO>(&self, io: IO, peer: SocketAddr)
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        self.run_watched(io, peer, None).await
    }

    /// [`Server::run_connection`] over a socket whose descriptor `fd` the
    /// session's interrupt watches: a statement whose client has closed
    /// the connection stops (08006) instead of running to its end.
    pub async fn run_watched<IO>(&self, io: IO, peer: SocketAddr, fd: Option<i32>)
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let run = AssertUnwindSafe(self.connection(io, peer, fd)).catch_unwind();
        if run.await.is_err() {
            PANICS.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "ndpdb serve: the connection from {peer} ended by an internal error \
                 (see the panic message above); its transaction was rolled back"
            );
        }
    }

    async fn connection<IO>(&self, io: IO, peer: SocketAddr, fd: Option<i32>)
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let Some(acceptor) = &self.tls else {
            return self
                .session_within(io, peer, AUTHENTICATION_TIMEOUT, fd)
                .await;
        };
        // The TLS negotiation counts against the startup's time limit.
        let start = tokio::time::Instant::now();
        let negotiated =
            tokio::time::timeout(AUTHENTICATION_TIMEOUT, tls::negotiate(io, acceptor)).await;
        let left = AUTHENTICATION_TIMEOUT.saturating_sub(start.elapsed());
        match negotiated {
            Ok(tls::Negotiated::Tls(stream)) => self.session_within(*stream, peer, left, fd).await,
            Ok(tls::Negotiated::Plain(io)) => self.session_within(io, peer, left, fd).await,
            Ok(tls::Negotiated::Closed) | Err(_) => {}
        }
    }

    /// Startup (within `limit`), then the session's messages.
    async fn session_within<IO>(
        &self,
        io: IO,
        peer: SocketAddr,
        limit: std::time::Duration,
        fd: Option<i32>,
    ) where
        IO: AsyncRead + AsyncWrite,
    {
        let (r, w) = tokio::io::split(io);
        let mut reader = FrameReader::new(r);
        let mut out = Out::new(w);
        let mut session = Session::new(self.db.clone());
        let pids = Arc::new(Registrar::new(self.registry.clone(), session.interrupt()));
        let handler = Startup::new(&self.passwords, &self.params, pids.clone());
        let started = tokio::time::timeout(
            limit,
            startup::run(&mut reader, &mut out, &handler, &self.registry, peer),
        )
        .await;
        let Ok(Started::Session(parameters)) = started else {
            out.shutdown().await;
            return;
        };
        if let Some(pid) = pids.pid() {
            session.set_backend_pid(pid);
        }
        for (key, setting) in [
            ("application_name", "application_name"),
            ("client_encoding", "client_encoding"),
            ("user", "session_authorization"),
        ] {
            if let Some(v) = parameters.get(key) {
                session.set_setting(setting, v);
            }
        }
        // PostgreSQL's default database is the user's name.
        if let Some(db) = parameters.get("database").or(parameters.get("user")) {
            session.set_database_name(db);
        }
        if let Some(options) = parameters.get("options") {
            for (name, value) in startup_options(options) {
                session.set_setting(&name, &value);
            }
        }
        let interrupt = session.interrupt();
        if let Some(fd) = fd {
            interrupt.watch_peer(fd);
        }
        Connection::new(reader, out, session).serve().await;
        interrupt.unwatch_peer();
        // The cancel key is valid until here.
        drop(handler);
    }
}

/// The settings of a startup packet's `options` (libpq's `PGOPTIONS`):
/// `-c name=value`, `-cname=value` or `--name=value`, separated by
/// blanks, a backslash escaping the next character (`read\ committed`).
fn startup_options(options: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut out = Vec::new();
    let mut words = words.into_iter();
    while let Some(w) = words.next() {
        let setting = if w == "-c" {
            words.next()
        } else if let Some(s) = w.strip_prefix("--") {
            Some(s.to_string())
        } else {
            w.strip_prefix("-c").map(str::to_string)
        };
        if let Some((name, value)) = setting.as_deref().and_then(|s| s.split_once('=')) {
            out.push((name.replace('-', "_").to_lowercase(), value.to_string()));
        }
    }
    out
}

/// Refuses a connection over the limit as PostgreSQL does: an
/// ErrorResponse "sorry, too many clients already" (53300), then close.
async fn refuse(mut socket: tokio::net::TcpStream) {
    let mut info = ErrorInfo::new(
        "FATAL".into(),
        ndpdb_formats::SqlState::TOO_MANY_CONNECTIONS.0.into(),
        "sorry, too many clients already".into(),
    );
    info.severity_nonlocalized = Some("FATAL".into());
    let mut msg = bytes::BytesMut::new();
    if ErrorResponse::from(info).encode(&mut msg).is_err() {
        return;
    }
    // The client's startup message is not read: PostgreSQL also answers
    // before authentication. Errors here only mean the client left.
    let _ = socket.write_all(&msg).await;
    let _ = socket.shutdown().await;
}

/// Runs one connection to its end on the current thread.
fn serve_connection(socket: std::net::TcpStream, server: Arc<Server>, slot: Slot) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async move {
        let Ok(socket) = tokio::net::TcpStream::from_std(socket) else {
            return;
        };
        let Ok(peer) = socket.peer_addr() else {
            return;
        };
        #[cfg(unix)]
        let fd = Some(std::os::fd::AsRawFd::as_raw_fd(&socket));
        #[cfg(not(unix))]
        let fd = None;
        server.run_watched(socket, peer, fd).await;
    });
    drop(slot);
}

/// One open connection, counted against the limit until dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accepts connections on `listener` until the process ends.
pub async fn serve(
    db: Database,
    listener: TcpListener,
    config: ServerConfig,
) -> std::io::Result<()> {
    let open = Arc::new(AtomicUsize::new(0));
    let server = Server::new(db, &config);
    let mut connections = Connections::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = tokio::time::sleep(REAP_EVERY), if !connections.0.is_empty() => {
                connections.reap();
                continue;
            }
        };
        connections.reap();
        let (socket, _) = match accepted {
            Ok(s) => s,
            // A failed accept (e.g. out of file descriptors) must not end
            // the server.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = socket.set_nodelay(true);
        if open.fetch_add(1, Ordering::AcqRel) >= config.max_connections {
            open.fetch_sub(1, Ordering::AcqRel);
            tokio::spawn(refuse(socket));
            continue;
        }
        let slot = Slot(open.clone());
        // One OS thread per connection (as PostgreSQL has a process per
        // connection): the blocking engine runs inline on it, and a long
        // statement delays no other client.
        let socket = match socket.into_std() {
            Ok(s) => s,
            Err(_) => continue,
        };
        let server = server.clone();
        let spawned = std::thread::Builder::new()
            .name("ndpdb-conn".into())
            .stack_size(CONNECTION_STACK)
            .spawn(move || serve_connection(socket, server, slot));
        // Out of threads: the connection (moved into the closure) is dropped.
        if let Ok(handle) = spawned {
            connections.0.push(handle);
        }
    }
}

/// How often an idle server joins its ended connection threads.
const REAP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The connection threads, joined once they end and never detached:
/// glibc's `pthread_detach` reads the thread's descriptor after marking
/// it detached, and a thread that ends at that moment has already freed
/// it (with its stack) — a flood of clients that connect and leave at
/// once crashed the server that way.
#[derive(Default)]
struct Connections(Vec<std::thread::JoinHandle<()>>);

impl Connections {
    /// Joins the threads that have ended (which takes no time).
    fn reap(&mut self) {
        let (ended, running) = std::mem::take(&mut self.0)
            .into_iter()
            .partition::<Vec<_>, _>(|h| h.is_finished());
        self.0 = running;
        for h in ended {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::startup_options;

    #[test]
    fn pgoptions_settings() {
        let got = startup_options(
            "-c default_transaction_isolation=read\\ committed -cstatement_timeout=5s --lock-timeout=1s -X",
        );
        let want = [
            ("default_transaction_isolation", "read committed"),
            ("statement_timeout", "5s"),
            ("lock_timeout", "1s"),
        ];
        assert_eq!(
            got,
            want.map(|(n, v)| (n.to_string(), v.to_string())).to_vec()
        );
    }
}
