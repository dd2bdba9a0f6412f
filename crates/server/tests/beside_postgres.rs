//! The same client programs against an ndpdb server and PostgreSQL 15 in
//! one run: each program gets both connection strings, runs every
//! scenario on both, and fails on the first difference in rows, command
//! tags, SQLSTATEs or warnings. PostgreSQL is a throwaway cluster of
//! `scripts/postgres-baseline.sh` (installed when missing), on a port of
//! each test's own so the tests run side by side.
//!
//! - `stale_plans.py` (psycopg 3 with its default prepare threshold,
//!   with every statement prepared, and with none): prepared statements
//!   across DDL, queries without FROM, nested BEGIN.
//! - `StalePlans.java` (the JDBC driver with `prepareThreshold=1`): the
//!   same cycles through server-side prepared statements.
//! - `ddl_sequences.py`: random sequences of DDL interleaved with
//!   prepared and unprepared statements on two connections.
//! - `psql_meta.sh`: psql's `\dn`, `\l`, `\gdesc` (format_type) and
//!   the functions they and pg_dump call first.
//! - `sqlalchemy_app.py`: an application of SQLAlchemy 2 (Core and ORM,
//!   through psycopg 3 and psycopg2) and pandas — connecting,
//!   `create_all`, RETURNING, joins, a unit of work, the Inspector, array
//!   columns, `to_sql`/`read_sql`.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{start, temp_db};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// Runs `program NDPDB_CONNINFO POSTGRES_CONNINFO extra…` against a
/// fresh ndpdb server and a PostgreSQL cluster on `pg_port`; asserts it
/// ends with "ok".
fn beside_postgres(pg_port: u16, program: &[&str], extra: &[&str], what: &str) {
    let (_dir, db) = temp_db();
    let port = start(db);
    let ndpdb = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
    // postgres-baseline.sh hands the command its cluster in NDPDB_POSTGRES.
    let script = r#"args=(); for a in "$@"; do [ "$a" = @PG@ ] && a="$NDPDB_POSTGRES"; args+=("$a"); done; exec "${args[@]}""#;
    let out = Command::new("bash")
        .arg(root().join("scripts/postgres-baseline.sh"))
        .args([
            "--port",
            &pg_port.to_string(),
            "--",
            "bash",
            "-c",
            script,
            "run",
        ])
        .args(program)
        .args([ndpdb.as_str(), "@PG@"])
        .args(extra)
        .output()
        .unwrap_or_else(|e| panic!("{what}: bash and scripts/postgres-baseline.sh: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "{what}: ndpdb and PostgreSQL differ (or a client is missing: .ci/run installs them)\n{stdout}\n{stderr}"
    );
}

fn python(script: &str) -> String {
    clients_dir().join(script).display().to_string()
}

#[test]
fn psycopg_scenarios_give_what_postgresql_gives() {
    let script = python("stale_plans.py");
    beside_postgres(55490, &["python3", &script], &[], "psycopg 3");
}

#[test]
fn sqlalchemy_and_pandas_applications_give_what_postgresql_gives() {
    let script = python("sqlalchemy_app.py");
    // Core, the ORM, the Inspector (tables, keys, indexes, comments)
    // with array columns, pandas (which reflects the table through the
    // dialect's json_build_object query) and JSON / JSONB documents.
    beside_postgres(55493, &["python3", &script], &[], "SQLAlchemy");
}

#[test]
fn psql_catalog_commands_and_gdesc_give_what_postgresql_gives() {
    let script = clients_dir().join("psql_meta.sh").display().to_string();
    beside_postgres(55494, &["bash", &script], &[], "psql");
}

/// The JDBC driver jar: `NDPDB_JDBC_JAR`, or where scripts/test-deps.sh
/// (`mvn dependency:get`) puts it.
fn jdbc_jar() -> PathBuf {
    if let Ok(p) = std::env::var("NDPDB_JDBC_JAR") {
        return PathBuf::from(p);
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    Path::new(&home).join(".m2/repository/org/postgresql/postgresql/42.7.4/postgresql-42.7.4.jar")
}

#[test]
fn jdbc_with_every_statement_prepared_gives_what_postgresql_gives() {
    let jar = jdbc_jar().display().to_string();
    let program = clients_dir().join("StalePlans.java").display().to_string();
    beside_postgres(55491, &["java", "-cp", &jar, &program], &[], "JDBC");
}

/// 40 random sequences of 60 steps each (about 2,500 results per server;
/// `ddl_sequences.py N STEPS SEED` runs more).
#[test]
fn random_ddl_among_prepared_statements_gives_what_postgresql_gives() {
    let script = python("ddl_sequences.py");
    beside_postgres(
        55492,
        &["python3", &script],
        &["40", "60", "20261202"],
        "random DDL sequences",
    );
}
