//! TLS (`ndpdb serve --tls-cert --tls-key`): psql connects with
//! `sslmode=require` and `verify-full`, the server presents the configured
//! certificate, clients that do not ask for TLS still connect, and a
//! server without a certificate refuses TLS as PostgreSQL with `ssl = off`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

use ndpdb_server::tls::rustls;
use ndpdb_server::ServerConfig;

use common::{start, start_with, temp_db};

/// A self-signed certificate for localhost and 127.0.0.1, written as PEM
/// files into `dir`; returns its DER bytes.
fn certificate(dir: &Path) -> Vec<u8> {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    cert.der().to_vec()
}

fn tls_server(dir: &Path) -> (tempfile::TempDir, u16) {
    let (db_dir, db) = temp_db();
    let tls =
        ndpdb_server::tls::server_config(&dir.join("cert.pem"), &dir.join("key.pem")).unwrap();
    let port = start_with(
        db,
        ServerConfig {
            tls: Some(tls),
            ..ServerConfig::default()
        },
    );
    (db_dir, port)
}

fn psql(conn: &str, sql: &str) -> (bool, String) {
    let out = std::process::Command::new("psql")
        .args([conn, "-X", "-A", "-t", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        .output()
        .expect("psql runs");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn psql_connects_over_tls_and_the_configured_certificate_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let der = certificate(dir.path());
    let (_db, port) = tls_server(dir.path());

    let base = format!("host=localhost port={port} user=postgres dbname=postgres");
    let (ok, out) = psql(&format!("{base} sslmode=require"), "\\conninfo");
    assert!(ok && out.contains("SSL connection"), "{out}");
    // verify-full: the chain leads to our certificate and names the host.
    let root = dir.path().join("cert.pem");
    let (ok, out) = psql(
        &format!("{base} sslmode=verify-full sslrootcert={}", root.display()),
        "SELECT 40 + 2",
    );
    assert!(ok && out.trim() == "42", "{out}");
    // A client that does not ask for TLS is served in the clear.
    let (ok, out) = psql(&format!("{base} sslmode=disable"), "SELECT 7");
    assert!(ok && out.trim() == "7", "{out}");

    // The certificate the handshake presents is the configured one.
    let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    socket
        .write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])
        .unwrap();
    let mut answer = [0u8; 1];
    socket.read_exact(&mut answer).unwrap();
    assert_eq!(answer[0], b'S');
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der.clone().into()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = "localhost".try_into().unwrap();
    let mut tls = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    while tls.is_handshaking() {
        tls.complete_io(&mut socket).unwrap();
    }
    let served = tls.peer_certificates().expect("a certificate");
    assert_eq!(served[0].as_ref(), der.as_slice());
}

#[test]
fn without_a_certificate_tls_is_refused() {
    let (_dir, db) = temp_db();
    let port = start(db);
    let base = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
    let (ok, out) = psql(&format!("{base} sslmode=require"), "SELECT 1");
    assert!(!ok && out.contains("does not support SSL"), "{out}");
    let (ok, out) = psql(&format!("{base} sslmode=prefer"), "SELECT 1");
    assert!(ok && out.trim() == "1", "{out}");
}

#[test]
fn a_mismatched_key_or_a_missing_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    certificate(dir.path());
    let other = tempfile::tempdir().unwrap();
    certificate(other.path());
    let e = ndpdb_server::tls::server_config(
        &dir.path().join("cert.pem"),
        &other.path().join("key.pem"),
    )
    .unwrap_err();
    assert!(e.contains("do not go together"), "{e}");
    let e = ndpdb_server::tls::server_config(
        &dir.path().join("missing.pem"),
        &dir.path().join("key.pem"),
    )
    .unwrap_err();
    assert!(e.contains("missing.pem"), "{e}");
}
