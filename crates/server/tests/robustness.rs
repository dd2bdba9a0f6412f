//! Bad clients do not hurt the server: malformed and truncated messages,
//! 200 concurrent connections, a flood of connections that leave at once,
//! connections over the limit, query errors.
//! Each gets the protocol's error response, and no locks leak. Also the
//! extended protocol as tokio-postgres drives it (binary results, portals).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use tokio_postgres::{NoTls, SimpleQueryMessage};

mod common;
use common::{conninfo, start, start_with, temp_db};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(port: u16) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&conninfo(port), NoTls)
        .await
        .expect("connect");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// A raw connection past startup (trust), reading until ReadyForQuery.
fn raw_startup(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(&196608i32.to_be_bytes());
    for kv in ["user", "raw", "database", "raw"] {
        body.extend_from_slice(kv.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    s.write_all(&msg).unwrap();
    read_until(&mut s, b'Z');
    s
}

/// Reads backend messages until one of type `until`; returns the types seen.
fn read_until(s: &mut TcpStream, until: u8) -> Vec<(u8, Vec<u8>)> {
    let mut seen = Vec::new();
    loop {
        let mut head = [0u8; 5];
        if s.read_exact(&mut head).is_err() {
            return seen;
        }
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len.saturating_sub(4)];
        if s.read_exact(&mut body).is_err() {
            return seen;
        }
        seen.push((head[0], body));
        if head[0] == until {
            return seen;
        }
    }
}

fn simple_query_bytes(sql: &str) -> Vec<u8> {
    let mut m = vec![b'Q'];
    m.extend_from_slice(&((sql.len() + 5) as i32).to_be_bytes());
    m.extend_from_slice(sql.as_bytes());
    m.push(0);
    m
}

/// After `garbage`, the server never goes down and the locks the bad
/// connection held are released once it is gone. With `strict`, the
/// connection must also answer an ErrorResponse or close. (A length field
/// below 4 is read leniently by pgwire's decoder: not strict.)
fn bad_bytes_end_only_their_connection(garbage: &[u8], strict: bool) {
    let (_dir, db) = temp_db();
    let port = start(db);
    let rt = runtime();
    rt.block_on(async {
        let c = connect(port).await;
        c.batch_execute("CREATE TABLE t (id INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 0)")
            .await
            .unwrap();
    });
    // The bad client holds a row lock, then sends garbage.
    let mut raw = raw_startup(port);
    raw.write_all(&simple_query_bytes(
        "BEGIN; UPDATE t SET v = 99 WHERE id = 1",
    ))
    .unwrap();
    let seen = read_until(&mut raw, b'Z');
    assert!(seen.iter().any(|(t, _)| *t == b'C'), "{seen:?}");
    raw.write_all(garbage).unwrap();
    let _ = raw.shutdown(std::net::Shutdown::Write);
    let answer = read_until(&mut raw, b'Z');
    assert!(
        !strict || answer.is_empty() || answer.iter().any(|(t, _)| *t == b'E'),
        "expected an ErrorResponse or a closed connection, got {answer:?}"
    );
    drop(raw);
    rt.block_on(async {
        let c = connect(port).await;
        // The lock is released: this update does not wait out the lock timeout.
        let n = tokio::time::timeout(
            Duration::from_secs(20),
            c.execute("UPDATE t SET v = v + 1 WHERE id = 1", &[]),
        )
        .await
        .expect("the bad connection's lock was released")
        .unwrap();
        assert_eq!(n, 1);
        let v: i32 = c.query_one("SELECT v FROM t", &[]).await.unwrap().get(0);
        assert_eq!(v, 1, "the bad connection's update was rolled back");
    });
}

#[test]
fn an_unknown_message_type_is_an_error_and_rolls_back() {
    bad_bytes_end_only_their_connection(&[b'!', 0, 0, 0, 8, 1, 2, 3, 4], true);
}

#[test]
fn a_message_with_an_impossible_length_does_not_hurt_the_server() {
    // A Query whose length field says 2 (less than the length itself).
    bad_bytes_end_only_their_connection(&[b'Q', 0, 0, 0, 2, b'x'], false);
}

#[test]
fn a_truncated_message_then_disconnect_is_harmless() {
    // Query announces 100 bytes, 5 arrive, then the client is gone.
    bad_bytes_end_only_their_connection(&[b'Q', 0, 0, 0, 100, b'S', b'E', b'L'], true);
}

#[test]
fn a_malformed_bind_ends_only_its_connection() {
    // Parse ok, then a Bind whose parameter count runs past the message.
    let (_dir, db) = temp_db();
    let port = start(db);
    let mut raw = raw_startup(port);
    let mut parse = vec![b'P'];
    let body = b"\0SELECT $1::INT\0\0\0";
    parse.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    parse.extend_from_slice(body);
    let mut bind = vec![b'B'];
    let body = [0u8, 0, 0, 0, 0, 5, 0, 0, 0, 4, 1];
    bind.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    bind.extend_from_slice(&body);
    let sync = [b'S', 0, 0, 0, 4];
    raw.write_all(&[parse, bind, sync.to_vec()].concat())
        .unwrap();
    // pgwire's Bind decoder does not bound-check the parameter list: the
    // server contains that (the connection closes) instead of answering.
    let seen = read_until(&mut raw, b'Z');
    let ended = seen.last().is_none_or(|(t, _)| *t != b'Z');
    assert!(ended || seen.iter().any(|(t, _)| *t == b'E'), "{seen:?}");
    // The server still serves.
    runtime().block_on(async {
        let c = connect(port).await;
        let v: i32 = c
            .query_one("SELECT $1::INT + 1", &[&41i32])
            .await
            .unwrap()
            .get(0);
        assert_eq!(v, 42);
    });
}

#[test]
fn two_hundred_concurrent_connections_all_work() {
    let (_dir, db) = temp_db();
    let port = start(db);
    runtime().block_on(async {
        let c = connect(port).await;
        c.batch_execute("CREATE TABLE hits (id INT PRIMARY KEY, n INT)")
            .await
            .unwrap();
        let mut clients = Vec::new();
        for _ in 0..200 {
            clients.push(connect(port).await);
        }
        let tasks: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                tokio::spawn(async move {
                    c.batch_execute("BEGIN").await.unwrap();
                    c.execute("INSERT INTO hits VALUES ($1, $2)", &[&(i as i32), &1i32])
                        .await
                        .unwrap();
                    let n: i64 = c
                        .query_one("SELECT COUNT(*) FROM hits WHERE id = $1", &[&(i as i32)])
                        .await
                        .unwrap()
                        .get(0);
                    assert_eq!(n, 1);
                    c.batch_execute("COMMIT").await.unwrap();
                    c
                })
            })
            .collect();
        let mut held = Vec::new();
        for t in tasks {
            held.push(t.await.unwrap());
        }
        let total: i64 = c
            .query_one("SELECT SUM(n) FROM hits", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(total, 200);
        assert_eq!(held.len(), 200);
    });
}

/// A flood of clients that connect and leave at once (port scanners,
/// health checks, killed clients): every connection's thread ends right
/// away while the server is still starting the next ones. The server
/// must keep answering.
#[test]
fn a_flood_of_connections_that_leave_at_once_does_not_hurt_the_server() {
    let (_dir, db) = temp_db();
    let port = start(db);
    let flooders: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..150 {
                    if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
                        drop(s);
                    }
                }
            })
        })
        .collect();
    for f in flooders {
        f.join().unwrap();
    }
    runtime().block_on(async {
        let c = connect(port).await;
        let n: i32 = c.query_one("SELECT 1 + 1", &[]).await.unwrap().get(0);
        assert_eq!(n, 2);
    });
}

#[test]
fn connections_over_the_limit_get_53300_and_the_rest_keep_working() {
    let (_dir, db) = temp_db();
    let port = start_with(
        db,
        ndpdb_server::ServerConfig {
            max_connections: 3,
            ..ndpdb_server::ServerConfig::default()
        },
    );
    runtime().block_on(async {
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(connect(port).await);
        }
        let err = tokio_postgres::connect(&conninfo(port), NoTls)
            .await
            .err()
            .expect("the fourth connection is refused");
        let code = err.code().map(|c| c.code().to_string());
        assert_eq!(code.as_deref(), Some("53300"), "{err}");
        let v: i32 = held[0].query_one("SELECT 7", &[]).await.unwrap().get(0);
        assert_eq!(v, 7);
        drop(held.pop());
        // A slot frees once the server sees the close.
        let mut reconnected = None;
        for _ in 0..50 {
            if let Ok((c, conn)) = tokio_postgres::connect(&conninfo(port), NoTls).await {
                tokio::spawn(conn);
                reconnected = Some(c);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(reconnected.is_some(), "a freed slot admits a new client");
    });
}

#[test]
fn query_errors_answer_sqlstates_and_keep_the_session() {
    let (_dir, db) = temp_db();
    let port = start(db);
    runtime().block_on(async {
        let c = connect(port).await;
        c.batch_execute("CREATE TABLE t (id INT PRIMARY KEY)")
            .await
            .unwrap();
        for (sql, code) in [
            ("SELEC 1", "42601"),
            ("SELECT * FROM missing", "42P01"),
            ("SELECT 1 / 0", "22012"),
            ("INSERT INTO t VALUES ('x')", "22P02"),
        ] {
            let e = c.simple_query(sql).await.unwrap_err();
            assert_eq!(e.code().map(|c| c.code()), Some(code), "{sql}: {e}");
        }
        // In a block: the error fails the block until ROLLBACK (25P02).
        c.batch_execute("BEGIN").await.unwrap();
        c.batch_execute("INSERT INTO t VALUES (1)").await.unwrap();
        assert!(c.batch_execute("INSERT INTO t VALUES (1)").await.is_err());
        let e = c.simple_query("SELECT 1").await.unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("25P02"));
        c.batch_execute("ROLLBACK").await.unwrap();
        let n: i64 = c
            .query_one("SELECT COUNT(*) FROM t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0);
        // Extended protocol: a bad parameter is 22P02 and the session goes on.
        let stmt = c
            .prepare_typed(
                "SELECT * FROM t WHERE id = $1",
                &[tokio_postgres::types::Type::TEXT],
            )
            .await
            .unwrap();
        let e = c.query(&stmt, &[&"x"]).await.unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("22P02"), "{e}");
        let v: i32 = c.query_one("SELECT 1 + 1", &[]).await.unwrap().get(0);
        assert_eq!(v, 2);
    });
}

#[test]
fn extended_protocol_binary_results_and_portals() {
    let (_dir, db) = temp_db();
    let port = start(db);
    runtime().block_on(async {
        let mut c = connect(port).await;
        c.batch_execute(
            "CREATE TABLE v (id BIGINT PRIMARY KEY, i INT, d DOUBLE PRECISION, t TEXT, b BOOLEAN, by BYTEA)",
        )
        .await
        .unwrap();
        let ins = c
            .prepare("INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6)")
            .await
            .unwrap();
        for k in 0..50i64 {
            let bytes = vec![k as u8, 0xff];
            c.execute(
                &ins,
                &[&k, &(k as i32 * -3), &(k as f64 / 8.0), &format!("row {k}"), &(k % 2 == 0), &bytes],
            )
            .await
            .unwrap();
        }
        // tokio-postgres reads every result in binary.
        let row = c
            .query_one("SELECT id, i, d, t, b, by FROM v WHERE id = $1", &[&7i64])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 7);
        assert_eq!(row.get::<_, i32>(1), -21);
        assert_eq!(row.get::<_, f64>(2), 7.0 / 8.0);
        assert_eq!(row.get::<_, &str>(3), "row 7");
        assert!(!row.get::<_, bool>(4));
        assert_eq!(row.get::<_, Vec<u8>>(5), vec![7u8, 0xff]);
        // NULLs in both directions.
        c.execute("INSERT INTO v (id, t) VALUES ($1, $2)", &[&100i64, &None::<String>])
            .await
            .unwrap();
        let row = c
            .query_one("SELECT t, i FROM v WHERE id = 100", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, Option<&str>>(0), None);
        assert_eq!(row.get::<_, Option<i32>>(1), None);
        // A portal read 20 rows at a time (Execute with a row limit).
        let tx = c.transaction().await.unwrap();
        let stmt = tx
            .prepare("SELECT id FROM v WHERE id < $1 ORDER BY id")
            .await
            .unwrap();
        let portal = tx.bind(&stmt, &[&50i64]).await.unwrap();
        let mut ids = Vec::new();
        loop {
            let batch = tx.query_portal(&portal, 20).await.unwrap();
            let n = batch.len();
            ids.extend(batch.iter().map(|r| r.get::<_, i64>(0)));
            if n < 20 {
                break;
            }
        }
        assert_eq!(ids, (0..50).collect::<Vec<i64>>());
        tx.commit().await.unwrap();
        // Simple-protocol text rows.
        let msgs = c.simple_query("SELECT t FROM v WHERE id = 3").await.unwrap();
        let texts: Vec<_> = msgs
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
            .collect();
        assert_eq!(texts, vec!["row 3".to_string()]);
    });
}

/// A statement waiting on a lock ends with 57014 when `statement_timeout`
/// passes, and when the client sends a CancelRequest (psql's Ctrl-C); the
/// session stays usable and the lock holder is unaffected.
#[test]
fn statement_timeout_and_cancel_requests_end_a_waiting_statement() {
    let (_dir, db) = temp_db();
    let port = start(db);
    runtime().block_on(async {
        let holder = connect(port).await;
        holder
            .batch_execute(
                "CREATE TABLE t (id INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 0)",
            )
            .await
            .unwrap();
        holder
            .batch_execute("BEGIN; UPDATE t SET v = 1 WHERE id = 1")
            .await
            .unwrap();
        let waiter = connect(port).await;
        waiter
            .batch_execute("SET statement_timeout = '200ms'")
            .await
            .unwrap();
        let t0 = std::time::Instant::now();
        let e = waiter
            .execute("UPDATE t SET v = 2 WHERE id = 1", &[])
            .await
            .unwrap_err();
        let db = e.as_db_error().expect("a server error");
        assert_eq!(db.code().code(), "57014", "{e}");
        assert!(db.message().contains("statement timeout"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(10));

        waiter
            .batch_execute("SET statement_timeout = 0")
            .await
            .unwrap();
        let token = waiter.cancel_token();
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            token.cancel_query(NoTls).await.unwrap();
        });
        let e = waiter
            .execute("UPDATE t SET v = 3 WHERE id = 1", &[])
            .await
            .unwrap_err();
        canceller.await.unwrap();
        let db = e.as_db_error().expect("a server error");
        assert_eq!(db.code().code(), "57014", "{e}");
        assert!(db.message().contains("user request"), "{e}");

        // Both sessions go on; the holder's update commits.
        let one: i32 = waiter.query_one("SELECT 1", &[]).await.unwrap().get(0);
        assert_eq!(one, 1);
        holder.batch_execute("COMMIT").await.unwrap();
        let n = waiter
            .execute("UPDATE t SET v = v + 10 WHERE id = 1", &[])
            .await
            .unwrap();
        assert_eq!(n, 1);
        let v: i32 = waiter
            .query_one("SELECT v FROM t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(v, 11);
    });
}

/// A COPY is one statement: `statement_timeout` counts from its start
/// (not from the session's previous statement), so a COPY that waits for
/// another inserter of its key goes on once that one rolls back.
#[test]
fn copy_counts_statement_timeout_from_its_own_start() {
    use futures::SinkExt;
    let (_dir, db) = temp_db();
    let port = start(db);
    runtime().block_on(async {
        let holder = connect(port).await;
        holder
            .batch_execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
            .await
            .unwrap();
        holder
            .batch_execute("BEGIN; INSERT INTO t VALUES (5, 0)")
            .await
            .unwrap();
        let loader = connect(port).await;
        loader
            .batch_execute("SET statement_timeout = '2s'; SELECT 1")
            .await
            .unwrap();
        // The previous statement's deadline passes.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let ender = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            holder.batch_execute("ROLLBACK").await.unwrap();
        });
        let sink = loader.copy_in("COPY t FROM STDIN").await.unwrap();
        let mut sink = Box::pin(sink);
        sink.send(bytes::Bytes::from_static(b"5\t1\n6\t2\n"))
            .await
            .unwrap();
        let n = sink.as_mut().finish().await.unwrap();
        ender.await.unwrap();
        assert_eq!(n, 2);
        let sum: i64 = loader
            .query_one("SELECT sum(v) FROM t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(sum, 3);
    });
}

/// `SELECT ndpdb_backup('dir')` through the extended protocol (as
/// drivers send it): described with its columns, one row back.
#[test]
fn a_backup_runs_through_the_extended_protocol() {
    let (dir, db) = temp_db();
    let port = start(db);
    let target = dir.path().join("backup");
    runtime().block_on(async {
        let client = connect(port).await;
        client
            .batch_execute("CREATE TABLE t (k INT PRIMARY KEY); INSERT INTO t VALUES (1), (2)")
            .await
            .unwrap();
        let sql = format!("SELECT ndpdb_backup('{}')", target.display());
        let rows = client.query(sql.as_str(), &[]).await.unwrap();
        assert_eq!(rows.len(), 1);
        let cols: Vec<&str> = rows[0].columns().iter().map(|c| c.name()).collect();
        assert_eq!(cols, ["checkpoint_lsn", "pages", "bytes"]);
        assert!(rows[0].get::<_, i64>("pages") >= 1);
    });
    assert!(target.join("backup_label").exists());
}
