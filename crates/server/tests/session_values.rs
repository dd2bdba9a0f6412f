//! The session values JDBC drivers and benchmark tools ask for first:
//! `current_schema()`, `current_database()`, `current_user`, … answer as
//! PostgreSQL does for the connection's user and database, and name
//! their result columns as PostgreSQL does.

use tokio_postgres::NoTls;

mod common;
use common::{start, temp_db};

#[test]
fn session_values_follow_the_connection() {
    let (_dir, db) = temp_db();
    let port = start(db);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let conninfo = format!("host=127.0.0.1 port={port} user=alice dbname=shop");
        let (client, conn) = tokio_postgres::connect(&conninfo, NoTls).await.unwrap();
        tokio::spawn(conn);
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
