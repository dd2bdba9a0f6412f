//! PostgreSQL's own pgbench, unmodified, against `ndpdb_server::serve`:
//! its initialisation (CHAR columns, `WITH (fillfactor)`, TRUNCATE and
//! COPY FREEZE in one transaction, VACUUM ANALYZE, ALTER TABLE … ADD
//! PRIMARY KEY) and its TPC-B-like script in the three protocol modes,
//! with no failed transaction; then TPC-B's consistency: every delta
//! applied to an account was applied to its teller and its branch.

use std::process::{Command, Output};

mod common;
use common::{psql_command, start, temp_db};

/// pgbench from PATH, else PostgreSQL 15's (scripts/test-deps.sh
/// installs the package).
fn pgbench(port: u16, args: &[&str]) -> Output {
    let exe = if Command::new("pgbench").arg("--version").output().is_ok() {
        "pgbench".to_string()
    } else {
        "/usr/lib/postgresql/15/bin/pgbench".to_string()
    };
    let port = port.to_string();
    Command::new(exe)
        .args(["-h", "127.0.0.1", "-p", &port, "-U", "app"])
        .args(args)
        .arg("postgres")
        .output()
        .expect("pgbench must be installed (scripts/test-deps.sh installs it)")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn scalar(port: u16, sql: &str) -> String {
    let out = psql_command(port, "app")
        .args(["-At", "-c", sql])
        .output()
        .expect("psql");
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn pgbench_initialises_and_runs_in_every_protocol_mode() {
    let (_dir, db) = temp_db();
    let port = start(db);
    let init = pgbench(port, &["-i", "-s", "1", "-q"]);
    assert!(init.status.success(), "{}", text(&init));
    assert!(
        text(&init).contains("creating primary keys"),
        "{}",
        text(&init)
    );
    assert_eq!(
        scalar(port, "SELECT count(*) FROM pgbench_accounts"),
        "100000"
    );
    assert_eq!(scalar(port, "SELECT count(*) FROM pgbench_tellers"), "10");

    for mode in ["simple", "extended", "prepared"] {
        let run = pgbench(port, &["-c", "4", "-j", "2", "-t", "50", "-M", mode]);
        let out = text(&run);
        assert!(run.status.success(), "{mode}: {out}");
        assert!(
            out.contains("number of transactions actually processed: 200/200"),
            "{mode}: {out}"
        );
        assert!(
            out.contains("number of failed transactions: 0 (0.000%)"),
            "{mode}: {out}"
        );
    }
    // Each run truncates the history first: the last run's 200 remain.
    assert_eq!(scalar(port, "SELECT count(*) FROM pgbench_history"), "200");
    let accounts = scalar(port, "SELECT sum(abalance) FROM pgbench_accounts");
    assert_eq!(
        scalar(port, "SELECT sum(tbalance) FROM pgbench_tellers"),
        accounts
    );
    assert_eq!(
        scalar(port, "SELECT sum(bbalance) FROM pgbench_branches"),
        accounts
    );
    // The keys the initialisation added hold.
    let dup = psql_command(port, "app")
        .args([
            "-c",
            "INSERT INTO pgbench_branches (bid, bbalance) VALUES (1, 0)",
        ])
        .output()
        .expect("psql");
    assert!(
        text(&dup)
            .contains("duplicate key value violates unique constraint \"pgbench_branches_pkey\""),
        "{}",
        text(&dup)
    );
}
