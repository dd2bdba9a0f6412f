//! The `ndpdb sql` command-line conventions: CSV output in PostgreSQL's
//! text formats, `ERROR <SQLSTATE>: message` on stderr with exit status 1,
//! one session per invocation, durability across invocations.

use std::process::{Command, Output};

fn ndpdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ndpdb"))
        .args(args)
        .output()
        .unwrap()
}

fn sql(db: &std::path::Path, cmds: &[&str], csv: bool) -> Output {
    let mut args = vec!["sql", "--db", db.to_str().unwrap()];
    if csv {
        args.push("--csv");
    }
    for c in cmds {
        args.push("-c");
        args.push(c);
    }
    ndpdb(&args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn csv_output_uses_postgres_text_formats() {
    let dir = tempfile::tempdir().unwrap();
    let o = sql(
        dir.path(),
        &[
            "CREATE TABLE p (id INT PRIMARY KEY, price NUMERIC(10,2), ok BOOLEAN, d DATE, note TEXT, f DOUBLE PRECISION)",
            "INSERT INTO p VALUES (1, 10.5, true, '2024-03-05', 'a, \"quoted\" note', 0.25), (2, NULL, false, NULL, NULL, NULL)",
            "SELECT * FROM p ORDER BY id; SELECT count(*) AS n FROM p",
        ],
        true,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "id,price,ok,d,note,f\n1,10.50,t,2024-03-05,\"a, \"\"quoted\"\" note\",0.25\n2,,f,,,\nn\n2\n"
    );
}

#[test]
fn errors_go_to_stderr_with_sqlstate_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let o = sql(
        dir.path(),
        &[
            "CREATE TABLE t (k INT PRIMARY KEY)",
            "INSERT INTO t VALUES (1)",
        ],
        true,
    );
    assert!(o.status.success());
    let cases = [
        (
            "INSERT INTO t VALUES (1)",
            "ERROR 23505: duplicate key value violates unique constraint \"t_pkey\"",
        ),
        (
            "SELECT * FROM missing",
            "ERROR 42P01: relation \"missing\" does not exist",
        ),
        ("SELECT k / 0 FROM t", "ERROR 22012: division by zero"),
        ("SELEKT 1", "ERROR 42601: syntax error"),
        (
            "INSERT INTO t VALUES (NULL)",
            "ERROR 23502: null value in column \"k\"",
        ),
        (
            "SELECT k FROM t WHERE k = 'x'",
            "ERROR 22P02: invalid input syntax for type integer: \"x\"",
        ),
    ];
    for (q, expect) in cases {
        let o = sql(dir.path(), &[q], true);
        assert_eq!(o.status.code(), Some(1), "{q}");
        assert!(stderr(&o).starts_with(expect), "{q}: {}", stderr(&o));
    }
    // Statements before the error ran; the ones after did not.
    let o = sql(
        dir.path(),
        &["INSERT INTO t VALUES (2); SELECT 1/0; INSERT INTO t VALUES (3)"],
        true,
    );
    assert_eq!(o.status.code(), Some(1));
    let o = sql(dir.path(), &["SELECT k FROM t ORDER BY k"], true);
    assert_eq!(stdout(&o), "k\n1\n2\n");
}

#[test]
fn one_session_per_invocation_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let file = dir.path().join("script.sql");
    std::fs::write(
        &file,
        "CREATE TABLE s (k INT PRIMARY KEY, v TEXT);\nBEGIN;\nINSERT INTO s VALUES (1, 'x');\nUPDATE s SET v = 'y' WHERE k = 1;\nCOMMIT;\nSELECT v FROM s;\n",
    )
    .unwrap();
    let o = ndpdb(&[
        "sql",
        "--db",
        db.to_str().unwrap(),
        "--csv",
        "-f",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "v\ny\n");
    // A transaction left open at exit is rolled back.
    let o = sql(&db, &["BEGIN; UPDATE s SET v = 'lost' WHERE k = 1"], true);
    assert!(o.status.success());
    let o = sql(&db, &["SELECT v FROM s"], true);
    assert_eq!(stdout(&o), "v\ny\n");
}

#[test]
fn show_stats_reports_link_and_buffer_counters() {
    let dir = tempfile::tempdir().unwrap();
    let o = sql(dir.path(), &["SHOW STATS"], true);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out.starts_with("name,value\n"));
    for plane in ["data", "control", "sync"] {
        for dir in ["to_device", "to_host"] {
            for what in ["bytes", "messages"] {
                let name = format!("link.{plane}.{dir}.{what},");
                assert!(out.contains(&name), "missing {name}");
            }
        }
    }
    for name in [
        "buffer.hits,",
        "buffer.misses,",
        "buffer.scan_reads,",
        "delta_buffer.bytes,",
        "delta_buffer.flushes,",
    ] {
        assert!(out.contains(name), "missing {name}");
    }
}

/// Well-formed clients keep answering while malformed ones hammer the
/// server: no failed statement, no lost row, no connection left open
/// (`ndpdb bench hostile` exits 1 otherwise).
#[test]
fn bench_hostile_sees_no_failed_statement() {
    let o = ndpdb(&[
        "bench",
        "hostile",
        "--records",
        "500",
        "--seconds",
        "2",
        "--attackers",
        "8",
        "--in-list",
        "400",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    let row = out
        .lines()
        .find(|l| l.starts_with("| ndpdb server |"))
        .expect("the summary row");
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[8], "0", "failed statements in {row}");
    assert_eq!(cells[11], "500", "rows afterwards in {row}");
    assert!(cells[9].parse::<u64>().unwrap() > 0, "no attack in {row}");
    // Keys 0, 3, …, 1,197 of which 0 … 498 exist: 167 of them.
    assert!(out.contains("count 167"), "{out}");
}

/// `ndpdb backup` and `ndpdb restore`: the device store deleted after a
/// backup and more commits, the restore brings every committed row back;
/// a second restore over a present store is refused (55000).
#[test]
fn backup_and_restore_rebuild_a_lost_device_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let backup = dir.path().join("base");
    let values: Vec<String> = (0..2000).map(|k| format!("({k}, {k})")).collect();
    let insert = format!("INSERT INTO t VALUES {}", values.join(", "));
    let o = sql(
        &db,
        &["CREATE TABLE t (k INT PRIMARY KEY, v BIGINT)", &insert],
        false,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = ndpdb(&[
        "backup",
        "--db",
        db.to_str().unwrap(),
        "--to",
        backup.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("checkpoint LSN"), "{}", stdout(&o));
    let o = sql(
        &db,
        &[
            "SET ndp = on",
            "SET ndp_logging = extended",
            "UPDATE t SET v = v * 2 WHERE k % 2 = 0",
            "SET ndp = off",
            "DELETE FROM t WHERE k = 5",
        ],
        false,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let before = stdout(&sql(&db, &["SELECT count(*), sum(v) FROM t"], true));
    std::fs::remove_dir_all(db.join("device")).unwrap();
    let restore = |expect_ok: bool| {
        let o = ndpdb(&[
            "restore",
            "--db",
            db.to_str().unwrap(),
            "--backup",
            backup.to_str().unwrap(),
        ]);
        assert_eq!(o.status.success(), expect_ok, "{}", stderr(&o));
        o
    };
    let o = restore(true);
    // The update job's log, and GC runs' (autovacuum) if any ran.
    let written_back: u32 = stdout(&o)
        .split(", ")
        .find_map(|p| p.strip_suffix(" overflow logs written back\n"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(written_back >= 1, "{}", stdout(&o));
    let after = stdout(&sql(&db, &["SELECT count(*), sum(v) FROM t"], true));
    assert_eq!(after, before);
    assert!(after.contains("1999,"), "{after}");
    let o = restore(false);
    assert!(stderr(&o).starts_with("ERROR 55000"), "{}", stderr(&o));
}

/// `ndpdb bench lock-violation` runs every mode and writes its files.
#[test]
fn bench_lock_violation_writes_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let o = ndpdb(&[
        "bench",
        "lock-violation",
        "--records",
        "3000",
        "--rounds",
        "1",
        "--rate",
        "50",
        "--workers",
        "8",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    for m in ["SLT (basic logging)", "SLT + overflow log + lock violation"] {
        assert!(out.contains(m), "{out}");
    }
    let runs = std::fs::read_to_string(dir.path().join("lock_violation_runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 4, "{runs}");
    let lv = runs
        .lines()
        .find(|l| l.contains("lock violation"))
        .unwrap()
        .split(',')
        .nth(11)
        .unwrap()
        .to_string();
    assert_eq!(lv, "1", "one violable commit: {runs}");
    assert!(dir.path().join("lock_violation.csv").exists());
}
