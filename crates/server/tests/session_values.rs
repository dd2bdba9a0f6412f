//! The session values JDBC drivers and benchmark tools ask for first:
//! `current_schema()`, `current_database()`, `current_user`, … answer as
//! PostgreSQL does for the connection's user and database, and name
//! their result columns as PostgreSQL does.

use tokio_postgres::NoTls;

mod common;
use common::{start, temp_db};

/// Runs `test` against a server on a fresh database (its port).
fn against_a_server<F: std::future::Future<Output = ()>>(test: impl FnOnce(u16) -> F) {
    let (_dir, db) = temp_db();
    let port = start(db);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(test(port));
}

/// A client of the server at `port` with `options` (libpq's key=value).
async fn connect(port: u16, options: &str) -> tokio_postgres::Client {
    let conninfo = format!("host=127.0.0.1 port={port} {options}");
    let (client, conn) = tokio_postgres::connect(&conninfo, NoTls).await.unwrap();
    tokio::spawn(conn);
    client
}

#[test]
fn session_values_follow_the_connection() {
    against_a_server(|port| async move {
        let client = connect(port, "user=alice dbname=shop").await;
        let row = client
            .query_one(
                "SELECT current_schema(), current_database(), current_user, session_user, \
                 user, current_catalog, current_schema",
                &[],
            )
            .await
            .unwrap();
        let names: Vec<&str> = row.columns().iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "current_schema",
                "current_database",
                "current_user",
                "session_user",
                "user",
                "current_catalog",
                "current_schema"
            ]
        );
        let values: Vec<String> = (0..7).map(|i| row.get(i)).collect();
        assert_eq!(
            values,
            ["public", "shop", "alice", "alice", "alice", "shop", "public"]
        );
        // In expressions and prepared statements too.
        let stmt = client
            .prepare("SELECT upper(current_database()) || '.' || current_schema() AS q")
            .await
            .unwrap();
        let q: String = client.query_one(&stmt, &[]).await.unwrap().get("q");
        assert_eq!(q, "SHOP.public");
        let e = client
            .simple_query("SELECT current_setting('no_such_setting')")
            .await
            .unwrap_err();
        assert_eq!(e.code().unwrap().code(), "42704");
    });
}

/// `pg_backend_pid()` names the OS thread serving the connection (what
/// `renice -p` and `setpriority` act on, as on a PostgreSQL backend
/// process): an int4 column named `pg_backend_pid`, the same for every
/// statement of a connection, another for another connection.
#[test]
fn backend_pid_is_the_connection_thread() {
    against_a_server(|port| async move {
        let a = connect(port, "user=postgres").await;
        let b = connect(port, "user=postgres").await;
        let row = a.query_one("SELECT pg_backend_pid()", &[]).await.unwrap();
        assert_eq!(row.columns()[0].name(), "pg_backend_pid");
        assert_eq!(row.columns()[0].type_(), &tokio_postgres::types::Type::INT4);
        let pid_a: i32 = row.get(0);
        let again: i32 = a
            .query_one("SELECT pg_backend_pid() + 0", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(again, pid_a);
        let pid_b: i32 = b
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        assert_ne!(pid_a, pid_b);
        if cfg!(target_os = "linux") {
            // The server runs in this test's process: the pid is one of
            // its threads, the connection's.
            let comm = std::fs::read_to_string(format!("/proc/self/task/{pid_a}/comm")).unwrap();
            assert_eq!(comm.trim(), "ndpdb-conn");
        }
    });
}
