//! What a malformed, abusive or vanishing client gets: PostgreSQL's answer
//! (the same SQLSTATE, or the same silent close), a server that stays up
//! for everyone else, and committed rows that stay as they were. Each
//! case is one that once crashed, hung or corrupted the server.

use std::time::Duration;

mod common;
use common::raw::{self, message, Raw};
use common::{start, temp_db};

/// A server with `t(id, v)` holding ids 1..=1000 (v = id), and a fresh
/// raw connection past startup.
fn server_with_rows() -> (tempfile::TempDir, u16) {
    let (dir, db) = temp_db();
    let port = start(db);
    let mut c = Raw::startup(port);
    let r = c.round(&raw::query(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT); \
         INSERT INTO t SELECT 1, 1",
    ));
    assert_eq!(r.sqlstate(), None, "{r:?}");
    // INSERT … SELECT of a series is not available: 1,000 rows in one VALUES.
    let values: Vec<String> = (2..=1000).map(|i| format!("({i}, {i})")).collect();
    let r = c.round(&raw::query(&format!(
        "INSERT INTO t VALUES {}",
        values.join(", ")
    )));
    assert_eq!(r.sqlstate(), None, "{r:?}");
    (dir, port)
}

/// `count(*)` and `sum(v)` of t, as a new well-formed client sees them.
fn rows(port: u16) -> (String, String) {
    let mut c = Raw::startup(port);
    let r = c.round(&raw::query("SELECT count(*) FROM t"));
    let count = r.first_column().pop().unwrap_or_default();
    let r = c.round(&raw::query("SELECT sum(v) FROM t"));
    let sum = r.first_column().pop().unwrap_or_default();
    (count, sum)
}

const UNCHANGED: (&str, &str) = ("1000", "500500");

fn assert_unchanged(port: u16) {
    let (count, sum) = rows(port);
    assert_eq!((count.as_str(), sum.as_str()), UNCHANGED);
    assert_eq!(ndpdb_server::panics(), 0, "a connection panicked");
}

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits
        .chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
        .collect()
}

#[test]
fn a_7_kb_query_of_1800_additions_is_answered_and_deeper_ones_get_54001() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    let r = c.round(&raw::query(&format!("SELECT 1{}", " + 1".repeat(1_800))));
    assert_eq!(r.first_column(), vec!["1801"], "{r:?}");
    // As far as PostgreSQL 15 goes with its default stack, and one more.
    let r = c.round(&raw::query(&format!("SELECT 1{}", " + 1".repeat(4_091))));
    assert_eq!(r.first_column(), vec!["4092"]);
    for n in [4_092, 100_000, 1_000_000] {
        let r = c.round(&raw::query(&format!("SELECT 1{}", " + 1".repeat(n))));
        assert_eq!(r.sqlstate().as_deref(), Some("54001"), "{n}: {r:?}");
        assert_eq!(r.status(), Some('I'));
    }
    // Nested subqueries and parentheses too: 3,000 levels parse and are
    // too deep to plan (54001); 20,000 exhaust PostgreSQL's parser stack
    // (42601 memory exhausted), as there.
    let subqueries = |n: usize| format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n));
    let r = c.round(&raw::query(&subqueries(3_000)));
    assert_eq!(r.sqlstate().as_deref(), Some("54001"), "{r:?}");
    let r = c.round(&raw::query(&subqueries(20_000)));
    assert_eq!(r.sqlstate().as_deref(), Some("42601"), "{r:?}");
    let r = c.round(&raw::query(&format!(
        "SELECT {}1{}",
        "(".repeat(5_000),
        ")".repeat(5_000)
    )));
    assert_eq!(r.first_column(), vec!["1"]);
    assert_unchanged(port);
}

#[test]
fn execute_with_max_rows_2_pow_31_minus_1_returns_the_rows() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    // The bytes: Parse "SELECT 1", Bind, Execute(max_rows 2^31-1), Sync.
    let r = c.round(&hex(
        "50 00 00 00 10 00 53 45 4c 45 43 54 20 31 00 00 00 42 00 00 00 0c 00 00 00 00 00 00 00 \
         00 45 00 00 00 09 00 7f ff ff ff 53 00 00 00 04",
    ));
    assert_eq!(r.types(), "12DCZ", "{r:?}");
    assert_eq!(r.first_column(), vec!["1"]);
    // max_rows ≤ 0 means all rows, as in PostgreSQL.
    for max_rows in [-5, 0, i32::MIN] {
        let r = c.round(
            &[
                raw::parse("", "SELECT id FROM t WHERE id <= 3 ORDER BY id"),
                raw::bind("", "", &[]),
                raw::execute("", max_rows),
                raw::sync(),
            ]
            .concat(),
        );
        assert_eq!(r.first_column(), vec!["1", "2", "3"], "{max_rows}: {r:?}");
    }
    // A row limit suspends the portal; the rest comes with the next Execute.
    assert_eq!(c.round(&raw::query("BEGIN")).status(), Some('T'));
    let r = c.round(
        &[
            raw::parse("", "SELECT id FROM t WHERE id <= 3 ORDER BY id"),
            raw::bind("p", "", &[]),
            raw::execute("p", 2),
            raw::execute("p", 2),
            raw::execute("p", 2),
            raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(r.first_column(), vec!["1", "2", "3"], "{r:?}");
    let tags: Vec<String> = r
        .messages
        .iter()
        .filter(|(t, _)| *t == b'C' || *t == b's')
        .map(|(t, b)| format!("{}{}", *t as char, String::from_utf8_lossy(b)))
        .collect();
    assert_eq!(tags, ["s", "CSELECT 1\0", "CSELECT 0\0"]);
    assert_unchanged(port);
}

/// Parse `sql`, then a Bind of body `bind`: ParseComplete, then
/// PostgreSQL's 08P01 `message` at the Bind, and ReadyForQuery.
fn bad_bind(c: &mut Raw, sql: &str, bind: &[u8], message_text: &str) {
    let r = c.round(
        &[
            raw::parse("", sql),
            message(b'B', bind),
            raw::execute("", 0),
            raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(r.types(), "1EZ", "{r:?}");
    assert_eq!(r.sqlstate().as_deref(), Some("08P01"), "{r:?}");
    assert_eq!(r.error_field(b'M').as_deref(), Some(message_text));
}

#[test]
fn malformed_bodies_get_08p01_and_the_connection_goes_on() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    // Parse without its parameter-type count (the bytes).
    let r = c.round(&hex(
        "50 00 00 00 0e 00 53 45 4c 45 43 54 20 31 00 53 00 00 00 04",
    ));
    assert_eq!(r.sqlstate().as_deref(), Some("08P01"), "{r:?}");
    assert_eq!(
        r.error_field(b'M').as_deref(),
        Some("insufficient data left in message")
    );
    assert_eq!(r.status(), Some('I'));
    // A Bind parameter whose length runs past the message.
    let mut bind = vec![0, 0, 0, 0, 0, 1];
    bind.extend_from_slice(&16i32.to_be_bytes());
    bind.extend_from_slice(b"ab\0\0");
    bad_bind(
        &mut c,
        "SELECT $1::INT",
        &bind,
        "insufficient data left in message",
    );
    // A Bind whose declared length covers 3 junk bytes: PostgreSQL's
    // "invalid message format", and the junk is not read as a message.
    let mut bind = vec![0, 0, 0, 0, 0, 0, 0, 0];
    bind.extend_from_slice(b"xyz");
    bad_bind(&mut c, "SELECT 1", &bind, "invalid message format");
    // Execute with max_rows -5 on top of a good Bind works (all rows).
    let r = c.round(
        &[
            raw::parse("", "SELECT 7"),
            raw::bind("", "", &[]),
            raw::execute("", -5),
            raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(r.first_column(), vec!["7"]);
    // Counts the body cannot hold, bad subtypes, bodies on empty messages.
    for (bytes, sqlstate, text) in [
        (
            message(b'P', b"\0SELECT 1\0\xff\xff"),
            "08P01",
            "insufficient data left in message",
        ),
        (
            message(b'D', b"X\0"),
            "08P01",
            "invalid DESCRIBE message subtype 88",
        ),
        (
            message(b'C', b"X\0"),
            "08P01",
            "invalid CLOSE message subtype 88",
        ),
        (message(b'H', b"ab"), "08P01", "invalid message format"),
        (
            message(b'E', b"nope\0\0\0\0\0"),
            "34000",
            "portal \"nope\" does not exist",
        ),
        (
            message(b'B', b"\0nope\0\0\0\0\0\0\0"),
            "26000",
            "prepared statement \"nope\" does not exist",
        ),
        (
            message(b'P', b"\0SELECT '\xff'\0\0\0"),
            "22021",
            "invalid byte sequence for encoding \"UTF8\": 0xff",
        ),
    ] {
        let r = c.round(&[bytes, raw::sync()].concat());
        assert_eq!(r.sqlstate().as_deref(), Some(sqlstate), "{text}: {r:?}");
        assert_eq!(r.error_field(b'M').as_deref(), Some(text));
        assert_eq!(r.status(), Some('I'));
    }
    // Simple-protocol bodies: an error, then ReadyForQuery.
    for (bytes, text) in [
        (message(b'Q', b"SELECT 1"), "invalid string in message"),
        (message(b'Q', b"SELECT 1\0junk"), "invalid message format"),
        (message(b'S', b"ab"), "invalid message format"),
    ] {
        let r = c.round(&bytes);
        assert_eq!(r.types(), "EZ", "{text}: {r:?}");
        assert_eq!(r.error_field(b'M').as_deref(), Some(text));
    }
    // Bind's counts and format codes, in PostgreSQL's words.
    let mut b = vec![0, 0, 0, 2, 0, 0, 0, 0, 0, 1];
    b.extend_from_slice(&1i32.to_be_bytes());
    b.extend_from_slice(b"1\0\0");
    let r = c.round(
        &[
            raw::parse("", "SELECT $1::INT"),
            message(b'B', &b),
            raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(
        r.error_field(b'M').as_deref(),
        Some("bind message has 2 parameter formats but 1 parameters")
    );
    let r = c.round(
        &[
            raw::parse("", "SELECT 1"),
            raw::bind("", "", &[Some("1")]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(
        r.error_field(b'M').as_deref(),
        Some("bind message supplies 1 parameters, but prepared statement \"\" requires 0")
    );
    let r = c.round(
        &[
            raw::parse("", "SELECT 1"),
            message(b'B', &[0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(
        r.error_field(b'M').as_deref(),
        Some("bind message has 2 result formats but query has 1 columns")
    );
    let r = c.round(
        &[
            raw::parse("", "SELECT 1"),
            message(b'B', &[0, 0, 0, 0, 0, 0, 0, 1, 0, 9]),
            raw::execute("", 0),
            raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(r.sqlstate().as_deref(), Some("22023"));
    assert_eq!(
        r.error_field(b'M').as_deref(),
        Some("unsupported format code: 9")
    );
    assert_unchanged(port);
}

#[test]
fn broken_framing_closes_the_connection_as_postgres_does() {
    let (_dir, port) = server_with_rows();
    // First packets of length 0 and 2^31-1: closed at once, no reply.
    for first in [
        &[0u8, 0, 0, 0][..],
        &[0x7f, 0xff, 0xff, 0xff],
        &[0, 0, 0, 7, 0, 3, 0],
    ] {
        let mut c = Raw::connect(port);
        c.send(first);
        let r = c.read_to_close(Duration::from_secs(10));
        assert!(r.closed && r.messages.is_empty(), "{first:?}: {r:?}");
    }
    // After startup: a CopyData of length 0 outside COPY, a Query whose
    // length is below 4, a Sync over the small-message limit.
    for bytes in [
        vec![b'd', 0, 0, 0, 0],
        vec![b'Q', 0, 0, 0, 2, b'x'],
        [vec![b'S'], 10_001i32.to_be_bytes().to_vec()].concat(),
    ] {
        let mut c = Raw::startup(port);
        c.send(&bytes);
        let r = c.read_to_close(Duration::from_secs(10));
        assert!(r.closed && r.messages.is_empty(), "{bytes:?}: {r:?}");
    }
    // An unknown message type: FATAL 08P01 first, then close.
    for ty in [b'!', b'p', 0] {
        let mut c = Raw::startup(port);
        c.send(&message(ty, b"abc\0"));
        let r = c.read_to_close(Duration::from_secs(10));
        assert!(r.closed, "{r:?}");
        assert_eq!(r.error_field(b'S').as_deref(), Some("FATAL"));
        assert_eq!(r.sqlstate().as_deref(), Some("08P01"));
        assert_eq!(
            r.error_field(b'M'),
            Some(format!("invalid frontend message type {ty}"))
        );
    }
    assert_unchanged(port);
}

#[test]
fn startup_packets_get_postgres_answers() {
    let (_dir, port) = server_with_rows();
    let packet = |body: &[u8]| {
        let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        m.extend_from_slice(body);
        m
    };
    // SSLRequest and GSSENCRequest: refused with 'N', then a normal startup.
    let mut c = Raw::connect(port);
    c.send(&packet(&80_877_103i32.to_be_bytes()));
    let mut n = [0u8; 1];
    std::io::Read::read_exact(&mut c.stream, &mut n).unwrap();
    assert_eq!(&n, b"N");
    c.send(&packet(&80_877_104i32.to_be_bytes()));
    std::io::Read::read_exact(&mut c.stream, &mut n).unwrap();
    assert_eq!(&n, b"N");
    c.send(&raw::startup_packet("after_ssl"));
    let r = c.read_until(b'Z', Duration::from_secs(10));
    assert_eq!(r.status(), Some('I'), "{r:?}");
    // Layout errors and unsupported versions are FATAL.
    for (body, sqlstate) in [
        (
            [&196_608i32.to_be_bytes()[..], b"user\0me\0"].concat(),
            "08P01",
        ),
        (
            [&196_608i32.to_be_bytes()[..], b"database\0d\0\0"].concat(),
            "28000",
        ),
        (
            [&0x0004_0000i32.to_be_bytes()[..], b"user\0me\0\0"].concat(),
            "0A000",
        ),
    ] {
        let mut c = Raw::connect(port);
        c.send(&packet(&body));
        let r = c.read_to_close(Duration::from_secs(10));
        assert!(r.closed, "{r:?}");
        assert_eq!(r.sqlstate().as_deref(), Some(sqlstate), "{r:?}");
    }
    // Protocol 3.5 and an unknown _pq_ option: negotiated down to 3.0.
    let body = [
        &0x0003_0005i32.to_be_bytes()[..],
        b"user\0me\0_pq_.x\0y\0\0",
    ]
    .concat();
    let mut c = Raw::connect(port);
    c.send(&packet(&body));
    let r = c.read_until(b'Z', Duration::from_secs(10));
    assert_eq!(r.messages.first().map(|(t, _)| *t), Some(b'v'), "{r:?}");
    assert_eq!(r.status(), Some('I'));
    // A cancel request with a wrong key or the wrong length: closed, no reply.
    for body in [
        [
            &80_877_102i32.to_be_bytes()[..],
            &1i32.to_be_bytes(),
            &2i32.to_be_bytes(),
        ]
        .concat(),
        [&80_877_102i32.to_be_bytes()[..], b"xx"].concat(),
    ] {
        let mut c = Raw::connect(port);
        c.send(&packet(&body));
        let r = c.read_to_close(Duration::from_secs(10));
        assert!(r.closed && r.messages.is_empty(), "{r:?}");
    }
    assert_unchanged(port);
}

/// The case: Parse/Bind/Execute of a DELETE (or UPDATE), no Sync,
/// and the client leaves — by closing, by Terminate, or by a reset.
#[test]
fn extended_statements_without_sync_are_rolled_back_when_the_client_leaves() {
    let (_dir, port) = server_with_rows();
    let leave = ["close", "terminate", "reset"];
    for how in leave {
        for sql in [
            "DELETE FROM t WHERE id = 786",
            "UPDATE t SET v = v + 1 WHERE id <= 500",
            "INSERT INTO t VALUES (5000, 5000)",
        ] {
            let mut c = Raw::startup(port);
            c.send(&raw::extended(sql));
            // The command ran (its reply is flushed by a Flush).
            c.send(&message(b'H', &[]));
            let r = c.read_until(b'C', Duration::from_secs(10));
            assert!(r.types().ends_with('C'), "{sql}: {r:?}");
            match how {
                "terminate" => {
                    c.send(&raw::terminate());
                    drop(c);
                }
                "reset" => c.reset(),
                _ => drop(c),
            }
            assert_unchanged(port);
        }
    }
    // With Sync the same statements commit.
    let mut c = Raw::startup(port);
    let r = c.round(&[raw::extended("DELETE FROM t WHERE id = 786"), raw::sync()].concat());
    assert_eq!(r.types(), "12CZ", "{r:?}");
    assert_eq!(rows(port), ("999".into(), "499714".into()));
}

#[test]
fn an_abandoned_implicit_transaction_releases_its_locks() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    c.send(&raw::extended("UPDATE t SET v = 0 WHERE id = 1"));
    c.send(&message(b'H', &[]));
    c.read_until(b'C', Duration::from_secs(10));
    // Another client waits for the row lock until the first one leaves.
    let waiter = std::thread::spawn(move || {
        let mut d = Raw::startup(port);
        d.round(&raw::query("UPDATE t SET v = v + 1 WHERE id = 1"))
    });
    std::thread::sleep(Duration::from_millis(300));
    drop(c);
    let r = waiter.join().unwrap();
    assert_eq!(r.sqlstate(), None, "{r:?}");
    let mut d = Raw::startup(port);
    let r = d.round(&raw::query("SELECT v FROM t WHERE id = 1"));
    assert_eq!(
        r.first_column(),
        vec!["2"],
        "the abandoned UPDATE left nothing"
    );
}

#[test]
fn an_abandoned_update_on_the_device_is_discarded() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    assert_eq!(c.round(&raw::query("SET ndp = on")).sqlstate(), None);
    c.send(&raw::extended("UPDATE t SET v = v * 2"));
    c.send(&message(b'H', &[]));
    let r = c.read_until(b'C', Duration::from_secs(20));
    assert!(
        r.messages
            .iter()
            .any(|(t, b)| *t == b'C' && b.starts_with(b"UPDATE 1000")),
        "{r:?}"
    );
    drop(c);
    assert_unchanged(port);
}

#[test]
fn an_error_before_sync_rolls_back_the_whole_implicit_transaction() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    let r = c.round(
        &[
            raw::extended("DELETE FROM t WHERE id = 1"),
            raw::extended("SELECT 1 / (v - v) FROM t WHERE id = 3"),
            raw::extended("DELETE FROM t WHERE id = 2"),
            raw::sync(),
        ]
        .concat(),
    );
    // The messages after the error are skipped until Sync.
    assert_eq!(r.sqlstate().as_deref(), Some("22012"), "{r:?}");
    assert_eq!(r.types(), "12C12EZ");
    assert_eq!(r.status(), Some('I'));
    assert_unchanged(port);
    // COMMIT inside the implicit transaction commits what came before it.
    c.send(
        &[
            raw::extended("INSERT INTO t VALUES (2000, 0)"),
            raw::extended("COMMIT"),
            raw::extended("INSERT INTO t VALUES (2001, 0)"),
            message(b'H', &[]),
        ]
        .concat(),
    );
    for _ in 0..3 {
        let r = c.read_until(b'C', Duration::from_secs(10));
        assert!(r.types().ends_with('C'), "{r:?}");
    }
    drop(c);
    assert_eq!(rows(port), ("1001".into(), "500500".into()));
}

#[test]
fn a_query_of_several_statements_is_one_implicit_transaction() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    let r = c.round(&raw::query("DELETE FROM t WHERE id = 1; SELECT 1 / 0"));
    assert_eq!(r.types(), "CEZ", "{r:?}");
    assert_unchanged(port);
    // BEGIN makes the implicit transaction a block: nothing commits at
    // the end of the message, and leaving rolls everything back.
    let r = c.round(&raw::query(
        "DELETE FROM t WHERE id = 1; BEGIN; DELETE FROM t WHERE id = 2",
    ));
    assert_eq!(r.status(), Some('T'), "{r:?}");
    drop(c);
    assert_unchanged(port);
    // COMMIT among them commits what came before (a warning says so).
    let mut c = Raw::startup(port);
    let r = c.round(&raw::query(
        "INSERT INTO t VALUES (3000, 0); COMMIT; INSERT INTO t VALUES (3001, 0); SELECT 1 / 0",
    ));
    assert_eq!(r.types(), "CNCCEZ", "{r:?}");
    let notice = &r.messages[1].1;
    assert!(notice.windows(6).any(|w| w == b"C25P01"), "{r:?}");
    assert_eq!(rows(port), ("1001".into(), "500500".into()));
}

#[test]
fn copy_in_errors_as_postgres_reports_them() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    // A bad row: the error comes at once; the rest of the data is ignored.
    c.send(&raw::query("COPY t FROM STDIN"));
    let r = c.read_until(b'G', Duration::from_secs(10));
    assert_eq!(r.types(), "G");
    c.send(&message(b'd', b"2001\t1\nabc\t2\n"));
    let r = c.read_until(b'Z', Duration::from_secs(10));
    assert_eq!(r.sqlstate().as_deref(), Some("22P02"), "{r:?}");
    let r = c.round(
        &[
            message(b'd', b"2002\t1\n"),
            message(b'c', &[]),
            raw::query("SELECT 5"),
        ]
        .concat(),
    );
    assert_eq!(r.first_column(), vec!["5"], "{r:?}");
    // CopyFail: 57014.
    c.send(&raw::query("COPY t FROM STDIN"));
    c.read_until(b'G', Duration::from_secs(10));
    let r = c.round(&[message(b'd', b"2003\t1\n"), message(b'f', b"stop\0")].concat());
    assert_eq!(r.sqlstate().as_deref(), Some("57014"));
    assert_eq!(
        r.error_field(b'M').as_deref(),
        Some("COPY from stdin failed: stop")
    );
    // Another message type during COPY: the stream is out of step.
    c.send(&raw::query("COPY t FROM STDIN"));
    c.read_until(b'G', Duration::from_secs(10));
    c.send(&[message(b'd', b"2004\t1\n"), raw::query("SELECT 5")].concat());
    let r = c.read_to_close(Duration::from_secs(10));
    assert!(r.closed, "{r:?}");
    assert_eq!(r.types(), "EE");
    let severities: Vec<u8> = r.messages.iter().map(|(_, b)| b[1]).collect();
    assert_eq!(severities, b"EF");
    assert_unchanged(port);
    // COPY through the extended protocol commits only at Sync.
    let mut c = Raw::startup(port);
    c.send(&raw::extended("COPY t FROM STDIN"));
    c.send(&message(b'H', &[]));
    c.read_until(b'G', Duration::from_secs(10));
    c.send(&[message(b'd', b"2005\t1\n"), message(b'c', &[])].concat());
    c.send(&message(b'H', &[]));
    c.read_until(b'C', Duration::from_secs(10));
    drop(c);
    assert_unchanged(port);
}

#[test]
fn a_password_message_after_login_is_a_protocol_violation() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    c.send(&message(b'p', b"abc\0"));
    let r = c.read_to_close(Duration::from_secs(10));
    assert!(r.closed, "{r:?}");
    assert_eq!(r.sqlstate().as_deref(), Some("08P01"));
    assert_eq!(
        r.error_field(b'M').as_deref(),
        Some("invalid frontend message type 112")
    );
}

#[test]
fn a_10_mb_in_list_is_answered() {
    let (_dir, port) = server_with_rows();
    let mut c = Raw::startup(port);
    let list: Vec<String> = (0..1_250_000).map(|i| i.to_string()).collect();
    let sql = format!("SELECT count(*) FROM t WHERE id IN ({})", list.join(","));
    assert!(sql.len() > 8_000_000);
    let r = c.round(&raw::query(&sql));
    assert_eq!(r.first_column(), vec!["1000"], "{:?}", r.sqlstate());
}
