//! Starting a server for a test: `ndpdb_server::serve` on a free port in a
//! background runtime.

#![allow(dead_code)]

pub mod raw;

use ndpdb_host::Database;
use ndpdb_server::ServerConfig;

/// Starts a server with `config`; returns its port.
pub fn start_with(db: Database, config: ServerConfig) -> u16 {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(listener.local_addr().expect("addr").port())
                .expect("send port");
            ndpdb_server::serve(db, listener, config)
                .await
                .expect("serve");
        });
    });
    rx.recv().expect("server started")
}

/// Starts a trusting server with default limits.
pub fn start(db: Database) -> u16 {
    start_with(db, ServerConfig::default())
}

/// A database in a fresh temporary directory.
pub fn temp_db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = ndpdb_embedded::open(dir.path()).expect("open");
    (dir, db)
}

/// A tokio-postgres connection string for the port.
pub fn conninfo(port: u16) -> String {
    format!("host=127.0.0.1 port={port} user=test dbname=test connect_timeout=10")
}

/// A psql command for the server on `port` as `user` (quiet about
/// ~/.psqlrc, verbose errors so SQLSTATEs show, a connect timeout).
pub fn psql_command(port: u16, user: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new("psql");
    cmd.args([
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-U",
        user,
        "-d",
        user,
    ])
    .args(["-X", "-v", "VERBOSITY=verbose"])
    .env("PGCONNECT_TIMEOUT", "5");
    cmd
}
