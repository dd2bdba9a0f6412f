//! What the isolation tests share: the server they talk to (a fresh ndpdb
//! server, or a fresh database on the PostgreSQL named by
//! `NDPDB_TEST_POSTGRES`), isolation levels, statements with their
//! SQLSTATE, and the script driver that replays concurrent sessions.

// Defined before the modules that use it.
/// One test per scenario and level: `hermitage::g0::read_committed`, …,
/// and `…::serializable_on_the_device`, for the scenarios of the module
/// that invokes it (each a `fn(Level) -> Vec<Step>` beside its `SETUP`).
macro_rules! at_every_level {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::super::{Level, Target};

            async fn replay_at(level: Level) {
                let name = format!("{} at {}", stringify!($scenario), level.name());
                let target = Target::new(&name).await;
                super::super::replay(&target, &name, super::SETUP, super::$scenario(level)).await;
            }

            /// The same script with ndpdb at `ndp = on`: scans and UPDATE/DELETE
            /// without a full primary key run on the device.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn serializable_on_the_device() {
                let level = Level::Serializable;
                let name = format!("{} at {} on the device", stringify!($scenario), level.name());
                let target = Target::on_device(&name).await;
                super::super::replay(&target, &name, super::SETUP, super::$scenario(level)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn read_committed() {
                replay_at(Level::ReadCommitted).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn repeatable_read() {
                replay_at(Level::RepeatableRead).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn serializable() {
                replay_at(Level::Serializable).await;
            }
        }
    )*};
}

pub mod bank;
pub mod hermitage;
pub mod queue;
pub mod savepoints;
pub mod write_skew;

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use crate::common;

/// How long a statement must stay unfinished to count as blocked.
const BLOCK_WINDOW: Duration = Duration::from_millis(300);
/// How long any statement (or a released one) may take before the
/// script fails as hung.
const STEP_LIMIT: Duration = Duration::from_secs(20);

/// Where the tests run: an ndpdb server started for the test, or a
/// database of its own on PostgreSQL when `NDPDB_TEST_POSTGRES` is set.
pub struct Target {
    conninfo: String,
    postgres: bool,
    _dir: Option<tempfile::TempDir>,
}

impl Target {
    pub async fn new(name: &str) -> Target {
        match std::env::var("NDPDB_TEST_POSTGRES") {
            Ok(base) if !base.trim().is_empty() => {
                let db: String = format!("iso_{name}")
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() {
                            c.to_ascii_lowercase()
                        } else {
                            '_'
                        }
                    })
                    .take(63)
                    .collect();
                let admin = connect_to(&base).await;
                admin
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                    .await
                    .expect("drop the test database");
                admin
                    .batch_execute(&format!("CREATE DATABASE {db}"))
                    .await
                    .expect("create the test database");
                Target {
                    conninfo: format!("{base} dbname={db}"),
                    postgres: true,
                    _dir: None,
                }
            }
            _ => {
                let (dir, db) = common::temp_db();
                let port = common::start(db);
                Target {
                    conninfo: common::conninfo(port),
                    postgres: false,
                    _dir: Some(dir),
                }
            }
        }
    }

    /// [`Target::new`] whose ndpdb sessions run every statement they can
    /// on the device (`ndp = on` from the startup packet); PostgreSQL has
    /// no such setting and runs as usual.
    pub async fn on_device(name: &str) -> Target {
        let mut t = Target::new(name).await;
        if !t.postgres {
            t.conninfo.push_str(" options='-c ndp=on'");
        }
        t
    }

    pub fn is_postgres(&self) -> bool {
        self.postgres
    }

    /// The libpq connection string (for python clients).
    pub fn conninfo(&self) -> &str {
        &self.conninfo
    }

    pub async fn connect(&self) -> Client {
        connect_to(&self.conninfo).await
    }
}

async fn connect_to(conninfo: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(conninfo, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect to {conninfo}: {e}"));
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::ReadCommitted => "read committed",
            Level::RepeatableRead => "repeatable read",
            Level::Serializable => "serializable",
        }
    }

    /// Hermitage's way to open a transaction at this level.
    pub fn begin(self) -> String {
        format!("begin; set transaction isolation level {}", self.name())
    }

    /// `rc`, `rr` or `ser`, whichever belongs to this level.
    pub fn pick<T>(self, rc: T, rr: T, ser: T) -> T {
        match self {
            Level::ReadCommitted => rc,
            Level::RepeatableRead => rr,
            Level::Serializable => ser,
        }
    }
}

/// What a statement returned: its rows (columns joined by `,`, `null` for
/// NULL) and the row count of its last command tag.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub rows: Vec<String>,
    pub affected: Option<u64>,
}

/// A statement's reply, or its SQLSTATE (a failure without one, such as
/// a lost connection, panics).
pub async fn run(client: &Client, sql: &str) -> Result<Reply, String> {
    match client.simple_query(sql).await {
        Ok(messages) => {
            let mut reply = Reply {
                rows: Vec::new(),
                affected: None,
            };
            for m in messages {
                match m {
                    SimpleQueryMessage::Row(row) => reply.rows.push(
                        (0..row.len())
                            .map(|i| row.get(i).unwrap_or("null"))
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                    SimpleQueryMessage::CommandComplete(n) => reply.affected = Some(n),
                    _ => {}
                }
            }
            Ok(reply)
        }
        Err(e) => match e.code() {
            Some(code) => Err(code.code().to_string()),
            None => panic!("{sql}: {e}"),
        },
    }
}

/// Whether a SQLSTATE asks for the transaction to be retried
/// (serialization failure or deadlock).
pub fn is_retryable(code: &str) -> bool {
    code == "40001" || code == "40P01"
}

/// The expected outcome of one step of a script.
#[derive(Clone, Debug)]
pub enum Expect {
    /// Completes without an error.
    Ok,
    /// Returns these rows, sorted, separated by spaces ("" for none).
    Rows(&'static str),
    /// Completes with this row count in its command tag.
    Affected(u64),
    /// Fails with this SQLSTATE.
    Fails(&'static str),
    /// Waits (for a lock): unfinished after `BLOCK_WINDOW`, until a later
    /// step that releases the session; then it ends as given.
    Blocks(Box<Expect>),
}

pub fn blocks(then: Expect) -> Expect {
    Expect::Blocks(Box::new(then))
}

/// One statement of one session. Session 0 ran the setup and is free for
/// checks; the transactions use sessions 1, 2, 3.
pub struct Step {
    session: usize,
    sql: String,
    expect: Expect,
    releases: Option<usize>,
}

pub fn step(session: usize, sql: impl Into<String>, expect: Expect) -> Step {
    Step {
        session,
        sql: sql.into(),
        expect,
        releases: None,
    }
}

impl Step {
    /// After this step the blocked statement of `session` must finish.
    pub fn releases(mut self, session: usize) -> Step {
        self.releases = Some(session);
        self
    }
}

fn check(what: &str, expect: &Expect, got: &Result<Reply, String>) {
    let ok = match (expect, got) {
        (Expect::Ok, Ok(_)) => true,
        (Expect::Rows(want), Ok(r)) => {
            let mut rows = r.rows.clone();
            rows.sort();
            rows.join(" ") == *want
        }
        (Expect::Affected(n), Ok(r)) => r.affected == Some(*n),
        (Expect::Fails(code), Err(c)) => c == code,
        _ => false,
    };
    assert!(ok, "{what}: expected {expect:?}, got {got:?}");
}

/// Runs `setup` on session 0, then the steps in order, each on its own
/// session's connection, checking every outcome; a statement expected to
/// block is left running until the step that releases it.
pub async fn replay(target: &Target, label: &str, setup: &str, steps: Vec<Step>) {
    let sessions = steps.iter().map(|s| s.session).max().unwrap_or(0) + 1;
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(Arc::new(target.connect().await));
    }
    clients[0].batch_execute(setup).await.expect("setup");
    type Pending = (String, Expect, JoinHandle<Result<Reply, String>>);
    let mut pending: Vec<Option<Pending>> = (0..sessions).map(|_| None).collect();
    for (i, step) in steps.into_iter().enumerate() {
        let what = format!("{label}, step {i} (T{}: {})", step.session, step.sql);
        assert!(
            pending[step.session].is_none(),
            "{what}: the session is still blocked"
        );
        let client = clients[step.session].clone();
        let sql = step.sql.clone();
        let mut handle = tokio::spawn(async move { run(&client, &sql).await });
        match step.expect {
            Expect::Blocks(then) => match tokio::time::timeout(BLOCK_WINDOW, &mut handle).await {
                Ok(r) => panic!("{what}: expected to block, finished with {:?}", r.unwrap()),
                Err(_) => pending[step.session] = Some((what, *then, handle)),
            },
            expect => {
                let got = tokio::time::timeout(STEP_LIMIT, handle)
                    .await
                    .unwrap_or_else(|_| panic!("{what}: blocked, expected {expect:?}"))
                    .unwrap();
                check(&what, &expect, &got);
            }
        }
        if let Some(s) = step.releases {
            let (what, expect, handle) = pending[s]
                .take()
                .unwrap_or_else(|| panic!("{label}, step {i}: T{s} is not blocked"));
            let got = tokio::time::timeout(STEP_LIMIT, handle)
                .await
                .unwrap_or_else(|_| panic!("{what}: still blocked after step {i}"))
                .unwrap();
            check(&format!("{what}, released by step {i}"), &expect, &got);
        }
        for (what, _, handle) in pending.iter().flatten() {
            assert!(
                !handle.is_finished(),
                "{what}: finished at step {i}, before the step meant to release it"
            );
        }
    }
    if let Some((what, _, _)) = pending.iter().flatten().next() {
        panic!("{what}: never released");
    }
}
