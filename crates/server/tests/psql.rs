//! Real clients: psql talks to `ndpdb_server::serve` over TCP.

use std::process::Command;

mod common;
use common::{psql_command, start};

fn psql(port: u16, commands: &[&str]) -> (String, String) {
    let mut cmd = psql_command(port, "app");
    for c in commands {
        cmd.args(["-c", c]);
    }
    let out = cmd
        .output()
        .expect("psql must be installed (.ci/run installs it)");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn psql_runs_ddl_dml_transactions_and_shows_sqlstates() {
    let dir = tempfile::tempdir().unwrap();
    let port = start(ndpdb_embedded::open(dir.path()).unwrap());
    let (out, err) = psql(
        port,
        &[
            "CREATE TABLE t (id INT PRIMARY KEY, v TEXT, n NUMERIC(8,2), d DATE)",
            "INSERT INTO t VALUES (1, 'a', 1.50, '2024-02-29'), (2, NULL, 2.25, NULL)",
            "UPDATE t SET v = 'b' WHERE id = 2",
            "DELETE FROM t WHERE id = 3",
            "SELECT * FROM t ORDER BY id",
        ],
    );
    assert!(err.is_empty(), "{err}");
    assert!(out.contains("CREATE TABLE"), "{out}");
    assert!(out.contains("INSERT 0 2"), "{out}");
    assert!(out.contains("UPDATE 1"), "{out}");
    assert!(out.contains("DELETE 0"), "{out}");
    assert!(out.contains("  1 | a | 1.50 | 2024-02-29"), "{out}");
    assert!(out.contains("  2 | b | 2.25 | "), "{out}");
    assert!(out.contains("(2 rows)"), "{out}");

    // A rolled-back transaction leaves nothing; a committed one stays.
    let (out, err) = psql(
        port,
        &[
            "BEGIN",
            "INSERT INTO t VALUES (3, 'c', 0, NULL)",
            "ROLLBACK",
            "BEGIN",
            "INSERT INTO t VALUES (4, 'd', 0, NULL)",
            "COMMIT",
            "SELECT count(*), sum(n) FROM t",
        ],
    );
    assert!(err.is_empty(), "{err}");
    assert!(
        out.contains("BEGIN") && out.contains("ROLLBACK") && out.contains("COMMIT"),
        "{out}"
    );
    assert!(out.contains("     3 | 3.75"), "{out}");

    // Errors carry their SQLSTATE and do not end the server.
    let (_, err) = psql(port, &["SELECT nope FROM t"]);
    assert!(err.contains("ERROR:  42703"), "{err}");
    let (_, err) = psql(port, &["INSERT INTO t VALUES (1, 'dup', 0, NULL)"]);
    assert!(err.contains("ERROR:  23505"), "{err}");
    let (out, err) = psql(port, &["SELECT count(*) FROM t"]);
    assert!(err.is_empty() && out.contains("     3"), "{out}{err}");
}

/// A client that disconnects inside a transaction: its transaction is
/// rolled back and its locks are released (the next writer does not wait).
#[test]
fn a_client_that_disconnects_mid_transaction_leaves_no_locks() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(
        dir.path(),
        ndpdb_host::Config {
            lock_timeout: Some(std::time::Duration::from_secs(2)),
            ..ndpdb_host::Config::default()
        },
    )
    .unwrap();
    let port = start(db);
    let (_, err) = psql(
        port,
        &[
            "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)",
            "INSERT INTO t VALUES (1, 'a')",
        ],
    );
    assert!(err.is_empty(), "{err}");
    // psql exits after its last -c: the connection closes with the
    // transaction open and the row locked.
    let (out, err) = psql(port, &["BEGIN", "UPDATE t SET v = 'lost' WHERE id = 1"]);
    assert!(err.is_empty() && out.contains("UPDATE 1"), "{out}{err}");
    let (out, err) = psql(
        port,
        &["UPDATE t SET v = 'b' WHERE id = 1", "SELECT v FROM t"],
    );
    assert!(err.is_empty(), "{err}");
    assert!(out.contains(" b\n"), "{out}");
    assert!(!out.contains("lost"), "{out}");
}

/// psql's `\dt` lists tables (with a pattern), `\d NAME` describes one; `\copy … from stdin` loads
/// text and CSV through COPY FROM STDIN; a bad row rolls the COPY back.
#[test]
fn psql_lists_tables_and_copies_from_stdin() {
    use std::io::Write;
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    let port = start(ndpdb_embedded::open(dir.path()).unwrap());
    let (_, err) = psql(
        port,
        &[
            "CREATE TABLE orders (id INT PRIMARY KEY, note TEXT, amount NUMERIC(8,2))",
            "CREATE TABLE items (id INT PRIMARY KEY)",
        ],
    );
    assert!(err.is_empty(), "{err}");
    let (out, err) = psql(port, &["\\dt", "\\dt ord*"]);
    assert!(err.is_empty(), "{err}");
    assert!(out.contains(" public | items  | table"), "{out}");
    assert_eq!(out.matches(" public | orders | table").count(), 2, "{out}");
    assert!(out.contains("(1 row)"), "{out}");
    // \d NAME: columns, types, NOT NULL and the primary key.
    let (out, err) = psql(port, &["\\d orders", "\\d nope"]);
    assert!(out.contains("Table \"public.orders\""), "{out}{err}");
    assert!(
        out.contains(" id     | integer      |           | not null |"),
        "{out}"
    );
    assert!(
        out.contains(" amount | numeric(8,2) |           |          |"),
        "{out}"
    );
    assert!(
        out.contains("\"orders_pkey\" PRIMARY KEY, hash (id)"),
        "{out}"
    );
    assert!(
        err.contains("Did not find any relation named \"nope\""),
        "{err}"
    );

    let copy = |command: &str, data: &str| {
        let mut child = Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "app",
                "-d",
                "app",
            ])
            .args(["-X", "-v", "VERBOSITY=verbose", "-c", command])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("psql");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(data.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (out, err) = copy(
        "\\copy orders from stdin",
        "1\tfirst\t1.50\n2\t\\N\t2.25\n3\ttab\\there\t\\N\n",
    );
    assert!(err.is_empty() && out.contains("COPY 3"), "{out}{err}");
    let (out, err) = copy(
        "\\copy orders (id, note) from stdin with (format csv, header true)",
        "id,note\n4,\"quoted, with comma\"\n5,\n",
    );
    assert!(err.is_empty() && out.contains("COPY 2"), "{out}{err}");
    // Row 2 does not parse: nothing of this COPY stays.
    let (_, err) = copy(
        "\\copy orders from stdin",
        "6\tok\t1\n7\tbad\tnot-a-number\n",
    );
    assert!(err.contains("22P02"), "{err}");
    let (out, err) = psql(port, &["SELECT id, note, amount FROM orders ORDER BY id"]);
    assert!(err.is_empty(), "{err}");
    assert!(out.contains("  1 | first              |   1.50"), "{out}");
    assert!(out.contains("  3 | tab"), "{out}");
    assert!(out.contains("  4 | quoted, with comma |"), "{out}");
    assert!(out.contains("(5 rows)"), "{out}");
    // The escaped tab arrived as one character.
    let (out, _) = psql(port, &["SELECT length(note) FROM orders WHERE id = 3"]);
    assert!(out.contains("      8"), "{out}");
}

/// psql's `\d` lists tables and views, `\dv` views only, `\d VIEW`
/// describes a view's columns and `\d+ VIEW` adds its definition.
#[test]
fn psql_lists_and_describes_views() {
    let dir = tempfile::tempdir().unwrap();
    let port = start(ndpdb_embedded::open(dir.path()).unwrap());
    let (_, err) = psql(
        port,
        &[
            "CREATE TABLE orders (id INT PRIMARY KEY, note TEXT, amount NUMERIC(8,2))",
            "CREATE VIEW big_orders (order_id, amount) AS SELECT id, amount FROM orders WHERE amount > 100",
        ],
    );
    assert!(err.is_empty(), "{err}");
    let (out, err) = psql(port, &["\\d", "\\dv", "\\dt"]);
    assert!(err.is_empty(), "{err}");
    assert_eq!(
        out.matches(" public | big_orders | view").count(),
        2,
        "{out}"
    );
    assert_eq!(
        out.matches(" public | orders     | table").count(),
        1,
        "{out}"
    );
    assert_eq!(out.matches(" public | orders | table").count(), 1, "{out}");
    let (out, err) = psql(port, &["\\d big_orders"]);
    assert!(err.is_empty(), "{err}");
    assert!(out.contains("View \"public.big_orders\""), "{out}");
    assert!(
        out.contains(" order_id | integer      |           |          | "),
        "{out}"
    );
    assert!(
        out.contains(" amount   | numeric(8,2) |           |          | "),
        "{out}"
    );
    let (out, err) = psql(port, &["\\d+ big_orders"]);
    assert!(err.is_empty(), "{err}");
    assert!(out.contains("View definition:"), "{out}");
    assert!(
        out.contains("SELECT id, amount FROM orders WHERE amount > 100;"),
        "{out}"
    );
}

/// `COPY … TO STDOUT` and psql's `\copy … to`: PostgreSQL's text and CSV
/// forms (output compared with PostgreSQL 15's for the same rows).
#[test]
fn copy_to_stdout_writes_postgres_text_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let port = start(ndpdb_embedded::open(dir.path()).unwrap());
    let (out, err) = psql(
        port,
        &[
            "CREATE TABLE co (id INT PRIMARY KEY, t TEXT, n NUMERIC(6,2), b BYTEA, c CHAR(3))",
            "INSERT INTO co VALUES (1, E'a\\tb', 1.5, '\\x0aff', 'x'), (2, 'x,y \"q\"', NULL, NULL, NULL), (3, '', 0, '\\x', 'abc')",
            "COPY co TO STDOUT",
            "COPY co (id, t) TO STDOUT (FORMAT csv, HEADER)",
            "COPY (SELECT id, n FROM co WHERE id > 1 ORDER BY id) TO STDOUT WITH (FORMAT csv, NULL 'NULL')",
        ],
    );
    assert!(err.is_empty(), "{err}");
    let want = "1\ta\\tb\t1.50\t\\\\x0aff\tx  \n\
                2\tx,y \"q\"\t\\N\t\\N\t\\N\n\
                3\t\t0.00\t\\\\x\tabc\n\
                id,t\n1,a\tb\n2,\"x,y \"\"q\"\"\"\n3,\"\"\n\
                2,NULL\n3,0.00\n";
    assert!(out.contains(want), "{out}");
}

/// `COPY … TO STDOUT` through the extended protocol (Parse/Bind/Execute,
/// as drivers send it): CopyOutResponse, the records as CopyData,
/// CopyDone and CommandComplete before Sync's ReadyForQuery.
#[test]
fn copy_to_stdout_runs_in_the_extended_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let port = start(ndpdb_embedded::open(dir.path()).unwrap());
    let mut c = common::raw::Raw::startup(port);
    let r = c.round(&common::raw::query(
        "CREATE TABLE t (id INT PRIMARY KEY, s TEXT); INSERT INTO t VALUES (1, 'a\tb'), (2, NULL)",
    ));
    assert_eq!(r.status(), Some('I'), "{r:?}");
    let r = c.round(
        &[
            common::raw::extended("COPY (SELECT id, s FROM t ORDER BY id) TO STDOUT"),
            common::raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(r.types(), "12HdcCZ", "{r:?}");
    let data: Vec<u8> = r
        .messages
        .iter()
        .filter(|(t, _)| *t == b'd')
        .flat_map(|(_, b)| b.clone())
        .collect();
    assert_eq!(data, b"1\ta\\tb\n2\t\\N\n");
    let (_, tag) = r.messages.iter().find(|(t, _)| *t == b'C').unwrap();
    assert_eq!(tag.as_slice(), b"COPY 2\0");
}

/// `\d` of tables in foreign keys shows PostgreSQL 15's sections:
/// UNIQUE CONSTRAINT indexes, `Foreign-key constraints:` on the
/// referencing table and `Referenced by:` on the referenced one; a
/// violation reports 23503 with PostgreSQL's detail.
#[test]
fn psql_describes_foreign_keys_and_unique_constraints() {
    let dir = tempfile::tempdir().unwrap();
    let port = start(ndpdb_embedded::open(dir.path()).unwrap());
    let (_, err) = psql(
        port,
        &[
            "CREATE TABLE region (r_id int PRIMARY KEY, r_name text NOT NULL UNIQUE)",
            "CREATE TABLE nation (n_id int PRIMARY KEY, \
             n_region int NOT NULL REFERENCES region ON DELETE CASCADE, n_name text)",
        ],
    );
    assert!(err.is_empty(), "{err}");
    let (out, err) = psql(port, &["\\d region"]);
    assert!(err.is_empty(), "{err}");
    assert!(
        out.contains("    \"region_r_name_key\" UNIQUE CONSTRAINT, btree (r_name)\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "Referenced by:\n    TABLE \"nation\" CONSTRAINT \"nation_n_region_fkey\" \
             FOREIGN KEY (n_region) REFERENCES region(r_id) ON DELETE CASCADE\n"
        ),
        "{out}"
    );
    let (out, err) = psql(port, &["\\d nation"]);
    assert!(err.is_empty(), "{err}");
    assert!(
        out.contains(
            "Foreign-key constraints:\n    \"nation_n_region_fkey\" FOREIGN KEY (n_region) \
             REFERENCES region(r_id) ON DELETE CASCADE\n"
        ),
        "{out}"
    );
    let mut cmd = psql_command(port, "app");
    let out = cmd
        .args([
            "-v",
            "VERBOSITY=verbose",
            "-c",
            "INSERT INTO nation VALUES (1, 7, 'x')",
        ])
        .output()
        .expect("psql");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ERROR:  23503: insert or update on table \"nation\" violates foreign key constraint \"nation_n_region_fkey\"")
            && err.contains("DETAIL:  Key (n_region)=(7) is not present in table \"region\"."),
        "{err}"
    );
}
