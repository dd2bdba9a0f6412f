//! Unmodified drivers against the server: psycopg 3 and the PostgreSQL JDBC
//! driver run their scripts in `tests/clients/` (parameterised statements,
//! transactions, prepared statements, binary results, COPY); psql checks
//! md5 and SCRAM-SHA-256 password authentication. `.ci/run` installs the drivers.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{psql_command, start, start_with, temp_db};

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

fn run(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what} must be installed (.ci/run installs it): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("ok"), "{what}: {stdout}\n{stderr}");
}

#[test]
fn psycopg3_runs_parameterised_statements_transactions_and_copy() {
    let (_dir, db) = temp_db();
    let port = start(db);
    let mut cmd = Command::new("python3");
    cmd.arg(clients_dir().join("psycopg_client.py"))
        .arg(port.to_string());
    run(cmd, "python3 with psycopg");
}

/// The JDBC driver jar: `NDPDB_JDBC_JAR`, or where `mvn dependency:get`
/// (run by .ci/run) puts it.
fn jdbc_jar() -> PathBuf {
    if let Ok(p) = std::env::var("NDPDB_JDBC_JAR") {
        return PathBuf::from(p);
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    Path::new(&home).join(".m2/repository/org/postgresql/postgresql/42.7.4/postgresql-42.7.4.jar")
}

/// Runs one of the JDBC programs in `tests/clients/` against a fresh server.
fn run_jdbc(program: &str, what: &str) {
    let jar = jdbc_jar();
    assert!(
        jar.exists(),
        "the PostgreSQL JDBC driver is missing at {} (.ci/run installs it)",
        jar.display()
    );
    let (_dir, db) = temp_db();
    let port = start(db);
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(&jar)
        .arg(clients_dir().join(program))
        .arg(port.to_string());
    run(cmd, what);
}

#[test]
fn jdbc_runs_prepared_statements_batches_and_transactions() {
    run_jdbc("JdbcClient.java", "java with the JDBC driver");
}

#[test]
fn jdbc_reads_the_schema_through_database_metadata() {
    run_jdbc("JdbcMetadata.java", "java reading DatabaseMetaData");
}

fn psql_as(port: u16, user: &str, password: &str, sql: &str) -> (bool, String, String) {
    let out = psql_command(port, user)
        .args(["-w", "-c", sql])
        .env("PGPASSWORD", password)
        .output()
        .expect("psql must be installed (.ci/run installs it)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn password_auth_admits_the_right_password_only(auth: ndpdb_server::Auth) {
    let (_dir, db) = temp_db();
    let port = start_with(
        db,
        ndpdb_server::ServerConfig {
            auth,
            ..ndpdb_server::ServerConfig::default()
        },
    );
    let (ok, out, err) = psql_as(port, "alice", "s3cret", "SELECT 40 + 2");
    assert!(ok && out.contains("42"), "{out}{err}");
    let (ok, _, err) = psql_as(port, "alice", "wrong", "SELECT 1");
    assert!(!ok && err.contains("authentication failed"), "{err}");
    let (ok, _, err) = psql_as(port, "mallory", "s3cret", "SELECT 1");
    assert!(!ok && err.contains("authentication failed"), "{err}");
}

#[test]
fn md5_authentication_admits_the_right_password_only() {
    password_auth_admits_the_right_password_only(ndpdb_server::Auth::Md5 {
        user: "alice".into(),
        password: "s3cret".into(),
    });
}

#[test]
fn scram_authentication_admits_the_right_password_only() {
    password_auth_admits_the_right_password_only(ndpdb_server::Auth::Scram {
        user: "alice".into(),
        password: "s3cret".into(),
    });
}
