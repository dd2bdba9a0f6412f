//! The wire fuzz target: client scripts driven into the real connection
//! code of `ndpdb serve`, in process, over in-memory pipes.
//!
//! ```text
//!  bytes ─► script.rs ─► for each connection:
//!             client: write chunks ─► half-close | Terminate | drop
//!             server: Server::run_connection (the code `ndpdb serve` runs)
//!           ─► replies.rs: what came back is well-formed protocol
//!  after the script:
//!    no panic (ndpdb_server::panics unchanged)
//!    no hang (every connection over within HANG_AFTER)
//!    the canary table t unchanged unless the server acknowledged a
//!      commit to a client that read its replies
//!    no lock left behind (a new transaction updates every canary row)
//! ```
//!
//! A process exit (stack overflow, abort) ends the fuzzer itself: the
//! runner or libFuzzer reports the input.

pub mod replies;
pub mod script;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arbitrary::Unstructured;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use ndpdb_formats::Value;
use ndpdb_host::Database;
use ndpdb_server::{Auth, Server, ServerConfig};
use ndpdb_sql::{Output, Session};

use script::End;

/// A connection still open this long after its client finished is a hang.
pub const HANG_AFTER: Duration = Duration::from_secs(20);
/// Bytes a pipe buffers in each direction.
const PIPE: usize = 64 * 1024;

const CANARY: &str = "CREATE TABLE t (id INT PRIMARY KEY, v INT, s TEXT)";
const SCRATCH: &str = "CREATE TABLE u (k INT PRIMARY KEY, w TEXT)";

/// What one input did (for the runner's novelty and statistics).
#[derive(Debug, Default)]
pub struct Outcome {
    pub connections: usize,
    /// A digest of the replies' message types and SQLSTATEs.
    pub signature: u64,
    /// The canary was changed by an acknowledged commit (and restored).
    pub canary_restored: bool,
}

/// The target: one database and two servers on it (trust, SCRAM).
pub struct WireTarget {
    _dir: tempfile::TempDir,
    db: Database,
    trust: Arc<Server>,
    scram: Arc<Server>,
    rt: tokio::runtime::Runtime,
    canary: Vec<Vec<Value>>,
}

fn canary_rows(db: &Database) -> Result<Vec<Vec<Value>>, String> {
    let mut s = Session::new(db.clone());
    match s.execute("SELECT id, v, s FROM t ORDER BY id") {
        Ok(mut out) => match out.pop() {
            Some(Output::Rows { rows, .. }) => Ok(rows),
            other => Err(format!("canary query returned {other:?}")),
        },
        Err(e) => Err(format!("canary query failed: {} {}", e.code, e.message)),
    }
}

impl WireTarget {
    pub fn new() -> WireTarget {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = ndpdb_embedded::open(dir.path()).expect("a database");
        let mut s = Session::new(db.clone());
        let values: Vec<String> = (1..=20)
            .map(|i| format!("({i}, {}, 'row {i}')", i * 10))
            .collect();
        for sql in [
            CANARY.to_string(),
            SCRATCH.to_string(),
            format!("INSERT INTO t VALUES {}", values.join(", ")),
        ] {
            s.execute(&sql).expect("canary set-up");
        }
        let canary = canary_rows(&db).expect("canary rows");
        let scram = ServerConfig {
            auth: Auth::Scram {
                user: "fuzz".into(),
                password: "secret".into(),
            },
            ..ServerConfig::default()
        };
        WireTarget {
            trust: Server::new(db.clone(), &ServerConfig::default()),
            scram: Server::new(db.clone(), &scram),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
            _dir: dir,
            db,
            canary,
        }
    }

    /// Runs one input; `Err` describes a failure.
    pub fn run(&mut self, data: &[u8]) -> Result<Outcome, String> {
        let mut u = Unstructured::new(data);
        let Ok(script) = script::script(&mut u) else {
            return Ok(Outcome::default());
        };
        let panics = ndpdb_server::panics();
        let server = if script.password_server {
            self.scram.clone()
        } else {
            self.trust.clone()
        };
        let mut outcome = Outcome {
            connections: script.connections.len(),
            ..Outcome::default()
        };
        let mut acknowledged = false;
        let mut watched = true;
        let mut digest = std::collections::hash_map::DefaultHasher::new();
        let debug = std::env::var_os("NDPDB_FUZZ_DEBUG").is_some();
        for conn in script.connections {
            let negotiation = negotiation_requests(&conn.chunks);
            if debug {
                eprintln!("client ({:?}): {:?}", conn.end, conn.chunks.concat());
            }
            let (bytes, finished) = self.rt.block_on(drive(&server, conn.chunks, conn.end));
            if debug {
                eprintln!("server: {:?}", bytes);
            }
            if !finished {
                return Err(format!(
                    "a connection was still open {HANG_AFTER:?} after its client finished"
                ));
            }
            if conn.end == End::Abrupt {
                // Replies not read: commits may have happened unseen.
                watched = false;
                continue;
            }
            let replies = replies::check(&bytes, negotiation)?;
            acknowledged |= replies.acknowledged;
            // What kinds of replies came, not how many: a coarse
            // behaviour signature for the runner's corpus.
            let kinds: std::collections::BTreeSet<_> = replies.trail.into_iter().collect();
            std::hash::Hash::hash(&(kinds, replies.fatal, conn.end as u8), &mut digest);
        }
        outcome.signature = std::hash::Hasher::finish(&digest);
        if ndpdb_server::panics() != panics {
            return Err("a connection panicked (see the message above)".into());
        }
        self.check_canary(acknowledged || !watched, &mut outcome)?;
        self.check_no_locks_left()?;
        Ok(outcome)
    }

    /// Committed canary rows change only with an acknowledged commit.
    fn check_canary(&mut self, may_change: bool, outcome: &mut Outcome) -> Result<(), String> {
        let rows = match canary_rows(&self.db) {
            Ok(rows) => rows,
            // Dropped: DDL is not transactional in ndpdb (a known gap).
            Err(_) => {
                self.restore_canary()?;
                outcome.canary_restored = true;
                return Ok(());
            }
        };
        if rows == self.canary {
            return Ok(());
        }
        if !may_change {
            return Err(format!(
                "committed rows changed without an acknowledged commit:\n  before {:?}\n  after  {:?}",
                self.canary, rows
            ));
        }
        self.restore_canary()?;
        outcome.canary_restored = true;
        Ok(())
    }

    fn restore_canary(&mut self) -> Result<(), String> {
        let mut s = Session::new(self.db.clone());
        let _ = s.execute("DROP TABLE t");
        let values: Vec<String> = self
            .canary
            .iter()
            .map(|r| {
                let f: Vec<String> = r
                    .iter()
                    .map(|v| match v {
                        Value::Text(t) => format!("'{}'", t.replace('\'', "''")),
                        Value::Null => "NULL".into(),
                        v => v.to_pg_text().unwrap_or_default(),
                    })
                    .collect();
                format!("({})", f.join(", "))
            })
            .collect();
        for sql in [
            CANARY.to_string(),
            format!("INSERT INTO t VALUES {}", values.join(", ")),
        ] {
            s.execute(&sql)
                .map_err(|e| format!("restoring the canary: {} {}", e.code, e.message))?;
        }
        if canary_rows(&self.db)? != self.canary {
            return Err("the canary could not be restored".into());
        }
        Ok(())
    }

    /// Every canary row can be locked at once by a new transaction.
    fn check_no_locks_left(&self) -> Result<(), String> {
        let mut s = Session::new(self.db.clone());
        let r = s.execute("BEGIN; UPDATE t SET v = v; ROLLBACK");
        r.map(|_| ())
            .map_err(|e| format!("a lock was left behind: {} {}", e.code, e.message))
    }
}

impl Default for WireTarget {
    fn default() -> WireTarget {
        WireTarget::new()
    }
}

/// How many SSLRequest / GSSENCRequest packets open the connection (the
/// server answers the first of each kind with one byte, whatever the
/// packet's length).
fn negotiation_requests(chunks: &[Vec<u8>]) -> usize {
    let bytes: Vec<u8> = chunks.concat();
    let (mut ssl, mut gss) = (false, false);
    let mut at = 0;
    while let Some(p) = bytes.get(at..at + 8) {
        let len = i32::from_be_bytes([p[0], p[1], p[2], p[3]]);
        let code = i32::from_be_bytes([p[4], p[5], p[6], p[7]]);
        if !(8..=10_004).contains(&len) || at + len as usize > bytes.len() {
            break;
        }
        match code {
            80_877_103 if !ssl => ssl = true,
            80_877_104 if !gss => gss = true,
            _ => break,
        }
        at += len as usize;
    }
    ssl as usize + gss as usize
}

/// Runs one connection: the client side writes its chunks and ends as
/// told while the server side runs the real connection code. Returns what
/// the client read and whether the server finished in time.
async fn drive(server: &Server, chunks: Vec<Vec<u8>>, end: End) -> (Vec<u8>, bool) {
    let (client, server_side) = tokio::io::duplex(PIPE);
    let peer: SocketAddr = ([127, 0, 0, 1], 5432).into();
    let (mut rd, mut wr) = tokio::io::split(client);
    let serve = server.run_connection(server_side, peer);
    let client = async move {
        let mut got = Vec::new();
        let write = async {
            for c in &chunks {
                if wr.write_all(c).await.is_err() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            match end {
                End::Abrupt => drop(wr),
                _ => {
                    let _ = wr.shutdown().await;
                }
            }
        };
        let read = async {
            let mut buf = [0u8; 8192];
            loop {
                match rd.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
        };
        if end == End::Abrupt {
            // Write, then leave at once: nothing more is read.
            tokio::select! {
                _ = write => {}
                _ = read => {}
            }
            drop(rd);
        } else {
            tokio::join!(write, read);
        }
        got
    };
    let both = async { tokio::join!(serve, client) };
    match tokio::time::timeout(HANG_AFTER, both).await {
        Ok(((), got)) => (got, true),
        Err(_) => (Vec::new(), false),
    }
}
