//! SQL conformance against PostgreSQL 15 in CI: `ndpdb bench diff` loads
//! the same random tables into an ndpdb server and a throwaway PostgreSQL
//! cluster (`scripts/postgres-baseline.sh`, which installs PostgreSQL 15
//! when missing) and compares the rows of generated queries — filters,
//! aggregates, GROUP BY, joins, ORDER BY … LIMIT, expressions — and then
//! CH-benCHmark's 22 queries and catalog queries on a small CH-benCHmark
//! database in both.

use std::path::Path;
use std::process::Command;

/// Runs `ndpdb bench diff ARGS` beside a throwaway PostgreSQL on
/// `pg_port` (a port of each test's own, so they never meet a baseline run
/// by hand or each other); asserts it succeeded and returns its output.
fn diff_beside_postgres(pg_port: u16, args: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("bash")
        .arg(root.join("scripts/postgres-baseline.sh"))
        .args(["--port", &pg_port.to_string(), "--"])
        .arg(env!("CARGO_BIN_EXE_ndpdb"))
        .args(["bench", "diff"])
        .args(args)
        .output()
        .expect("bash and scripts/postgres-baseline.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ndpdb and PostgreSQL disagree (or PostgreSQL could not start):\n{stdout}\n{stderr}"
    );
    format!("{stdout}\n{stderr}")
}

#[test]
fn generated_queries_return_the_rows_postgresql_returns() {
    let out = diff_beside_postgres(
        55499,
        &["--rows", "1000", "--queries", "400", "--seed", "11"],
    );
    assert!(
        out.contains("400 match PostgreSQL") && out.contains(", 0 differ"),
        "{out}"
    );
    // The fixed part: CH-benCHmark's 22 queries and the catalog queries.
    assert!(
        out.contains(
            "30 CH-benCHmark and catalog queries (ndp = auto): 30 match PostgreSQL, 0 differ"
        ),
        "{out}"
    );
}

/// The same generated queries sent as prepared statements (SQL's PREPARE)
/// and run three times each: every answer must match PostgreSQL's.
#[test]
fn prepared_queries_return_the_rows_postgresql_returns_every_time() {
    let out = diff_beside_postgres(
        55496,
        &[
            "--rows",
            "1000",
            "--queries",
            "300",
            "--seed",
            "12",
            "--prepared",
        ],
    );
    assert!(
        out.contains("300 queries (each prepared, run 3 times)")
            && out.contains("300 match PostgreSQL")
            && out.contains(", 0 differ"),
        "{out}"
    );
}
