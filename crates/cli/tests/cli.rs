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
