//! Isolation anomalies over the wire, with concurrent sessions: Hermitage's
//! scripts at every isolation level (`isolation/hermitage.rs`), write skew
//! among doctors on call (`isolation/write_skew.rs`), bank transfers beside
//! update NDP at SERIALIZABLE (`isolation/bank.rs`), and savepoints with
//! update NDP and psycopg's nested transaction blocks
//! (`isolation/savepoints.rs`), and a queue taken with `ORDER BY … LIMIT 1
//! FOR UPDATE` (`isolation/queue.rs`).
//!
//! With `NDPDB_TEST_POSTGRES` set to a libpq connection string, every test
//! runs against that PostgreSQL instead (each in a database of its own),
//! which proves the expected outcomes:
//!
//! ```sh
//! scripts/postgres-baseline.sh -- bash -c \
//!   'NDPDB_TEST_POSTGRES="$NDPDB_POSTGRES" cargo test --release -p ndpdb-server --test isolation_anomalies'
//! ```

mod common;
mod isolation;
