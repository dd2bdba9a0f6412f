//! The PostgreSQL wire-protocol server (DESIGN.md §11): `ndpdb serve`.
//!
//! ```text
//!  TCP accept ─► connection limit (53300 beyond it) ─► one Connection:
//!     startup: trust, md5 or SCRAM-SHA-256 ─► ParameterStatus (server_version
//!              15.0, UTF8, ISO dates) ─► ReadyForQuery
//!     simple Query, extended Parse/Bind/Describe/Execute/Sync, COPY FROM
//!     STDIN ─► the connection's own Session (connection.rs)
//! ```
//!
//! Modules, bottom-up:
//! - [`auth`]: trust, md5 or SCRAM-SHA-256 at startup.
//! - [`types`]: type OIDs, text and binary formats of values.
//! - [`copy`]: COPY FROM STDIN parsing (text, CSV) and loading.
//! - [`catalog`]: psql's `\dt` / `\d` table list.
//! - [`connection`]: the per-connection handlers over one `Session`
//!   (simple queries, COPY data).
//! - [`extended`]: the extended query protocol (Parse/Bind/Describe/Execute).
//! - [`batching`]: Bind/Execute replies buffered until Sync.
//! - [`cancel`]: CancelRequest → the session's interrupt (57014).
//!
//! A protocol error (malformed or truncated message) ends that connection
//! only; a dropped connection drops its session, which rolls back its
//! transaction and releases its locks.

pub mod auth;
pub mod batching;
pub mod cancel;
pub mod catalog;
pub mod connection;
pub mod copy;
pub mod extended;
pub mod types;

use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::FutureExt;
use pgwire::api::auth::StartupHandler;
use pgwire::api::PgWireServerHandlers;
use pgwire::error::ErrorInfo;
use pgwire::messages::response::ErrorResponse;
use pgwire::messages::Message;
use std::panic::AssertUnwindSafe;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use ndpdb_host::Database;

pub use auth::Auth;
use auth::{server_parameters, Passwords, Startup};
use cancel::{Canceller, Registrar, Registry};
pub use connection::Connection;
pub use types::pg_type;

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Connections beyond this are refused with SQLSTATE 53300.
    pub max_connections: usize,
    pub auth: Auth,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            max_connections: 256,
            auth: Auth::Trust,
        }
    }
}

struct Handlers {
    conn: Arc<Connection>,
    startup: Arc<Startup>,
    cancel: Arc<Canceller>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl pgwire::api::query::SimpleQueryHandler> {
        self.conn.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl pgwire::api::query::ExtendedQueryHandler> {
        self.conn.clone()
    }

    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        self.conn.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.cancel.clone()
    }
}

/// Refuses a connection over the limit as PostgreSQL does: an
/// ErrorResponse "sorry, too many clients already" (53300), then close.
async fn refuse(mut socket: tokio::net::TcpStream) {
    let info = ErrorInfo::new(
        "FATAL".into(),
        "53300".into(),
        "sorry, too many clients already".into(),
    );
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
fn serve_connection(socket: std::net::TcpStream, handlers: Handlers, slot: Slot) {
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
        // Protocol errors end this connection only. pgwire's message
        // decoders can panic on some malformed messages (unchecked reads
        // in Bind); that too ends only this connection: its session drops
        // (rollback, locks released) and its slot frees.
        let conn = pgwire::tokio::process_socket(socket, None, handlers);
        let _ = AssertUnwindSafe(conn).catch_unwind().await;
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
    let params = Arc::new(server_parameters());
    let passwords = Passwords::new(&config.auth);
    let registry = Registry::new();
    let cancel = Arc::new(Canceller(registry.clone()));
    loop {
        let (socket, _) = match listener.accept().await {
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
        let conn = Arc::new(Connection::new(db.clone()));
        let pids = Arc::new(Registrar::new(registry.clone(), conn.interrupt()));
        let handlers = Handlers {
            startup: Arc::new(Startup::new(&passwords, &params, pids)),
            conn,
            cancel: cancel.clone(),
        };
        let slot = Slot(open.clone());
        // One OS thread per connection (as PostgreSQL has a process per
        // connection): the blocking engine runs inline on it, and a long
        // statement delays no other client.
        let socket = match socket.into_std() {
            Ok(s) => s,
            Err(_) => continue,
        };
        let spawned = std::thread::Builder::new()
            .name("ndpdb-conn".into())
            .spawn(move || serve_connection(socket, handlers, slot));
        // Out of threads: the connection (moved into the closure) is dropped.
        drop(spawned);
    }
}
