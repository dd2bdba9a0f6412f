//! `ndpdb bench hostile`: well-formed clients beside malformed ones.
//!
//! YCSB-C runs over the wire twice against the same server: once alone
//! (quiet), once while attacker threads send malformed traffic on
//! connections of their own (hostile). The attackers replay the wire fuzz
//! target's client scripts — bad startup packets, SSL/GSS and cancel
//! requests, broken length words, cut and padded bodies, unknown message
//! types, deep and huge statements, extended statements without Sync,
//! COPY data out of place, abrupt closes — logged in as the benchmark's
//! user so that they reach the server's message loop.
//!
//! ```text
//!  quiet:    YCSB-C clients ─────► server
//!  hostile:  YCSB-C clients ─────► server ◄───── attackers × N
//!                                             (a fresh fuzz script per
//!                                              connection, seeded)
//!  report:   ops/s and latency of both runs, failed statements of the
//!            well-formed clients (must be 0), the attack's connections,
//!            bytes, server closes, connections the server left open after
//!            the client's end, and the table's row count afterwards
//! ```

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arbitrary::Unstructured;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ndpdb_formats::SqlState;
use ndpdb_fuzz::wire::script::{script_as, End, Identity};
use ndpdb_host::{Error, Result};

use crate::report::Phase;
use crate::target::{Backend, Endpoint};
use crate::ycsb::{self, RunConfig, RunReport};

/// How long an attacker waits for the server to close after the client
/// ended its side; longer counts as a connection left open.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// What the attackers did and saw.
#[derive(Clone, Debug, Default)]
pub struct AttackReport {
    /// Client scripts run (each one to three connections).
    pub scripts: u64,
    pub connections: u64,
    /// Connections the server refused (connect failed).
    pub refused: u64,
    pub bytes_sent: u64,
    pub bytes_read: u64,
    /// Connections the server closed while the client was still writing.
    pub closed_early: u64,
    /// Connections the server kept open for `CLOSE_WAIT` after the
    /// client's half-close.
    pub left_open: u64,
}

impl AttackReport {
    fn add(&mut self, o: &AttackReport) {
        self.scripts += o.scripts;
        self.connections += o.connections;
        self.refused += o.refused;
        self.bytes_sent += o.bytes_sent;
        self.bytes_read += o.bytes_read;
        self.closed_early += o.closed_early;
        self.left_open += o.left_open;
    }
}

/// Attacker threads running until [`Attack::finish`].
pub struct Attack {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<AttackReport>>,
}

impl Attack {
    /// Starts `n` attackers against the server of `endpoint`.
    pub fn start(endpoint: &Endpoint, n: usize, seed: u64) -> Result<Attack> {
        let conninfo = Conninfo::parse(&endpoint.conninfo)?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for i in 0..n {
            let (stop, who) = (stop.clone(), conninfo.clone());
            let seed = seed.wrapping_mul(1_000_003).wrapping_add(i as u64);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("attacker-{i}"))
                    .spawn(move || attacker(&who, &stop, seed))
                    .map_err(|e| Error::new(SqlState::INTERNAL_ERROR, e.to_string()))?,
            );
        }
        Ok(Attack { stop, threads })
    }

    /// Stops the attackers; sums what they saw.
    pub fn finish(self) -> AttackReport {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = AttackReport::default();
        for t in self.threads {
            if let Ok(r) = t.join() {
                total.add(&r);
            }
        }
        total
    }
}

/// The parts of a libpq-style connection string an attacker needs.
#[derive(Clone, Debug)]
struct Conninfo {
    addr: SocketAddr,
    user: String,
    database: String,
}

impl Conninfo {
    fn parse(conninfo: &str) -> Result<Conninfo> {
        let (mut host, mut port) = ("127.0.0.1".to_string(), "5432".to_string());
        let (mut user, mut database) = ("postgres".to_string(), None);
        for kv in conninfo.split_whitespace() {
            match kv.split_once('=') {
                Some(("host", v)) => host = v.to_string(),
                Some(("port", v)) => port = v.to_string(),
                Some(("user", v)) => user = v.to_string(),
                Some(("dbname", v)) => database = Some(v.to_string()),
                _ => {}
            }
        }
        let addr = format!("{host}:{port}")
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("no TCP address in connection string {conninfo:?}"),
                )
            })?;
        let database = database.unwrap_or_else(|| user.clone());
        Ok(Conninfo {
            addr,
            user,
            database,
        })
    }
}

/// One attacker: fresh scripts from seeded random bytes until stopped.
fn attacker(who: &Conninfo, stop: &AtomicBool, seed: u64) -> AttackReport {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut r = AttackReport::default();
    let mut bytes = vec![0u8; 4096];
    let identity = Identity {
        user: who.user.as_bytes(),
        database: who.database.as_bytes(),
    };
    while !stop.load(Ordering::Relaxed) {
        let len = rng.gen_range(16..bytes.len());
        rng.fill(&mut bytes[..len]);
        let Ok(script) = script_as(&mut Unstructured::new(&bytes[..len]), identity) else {
            continue;
        };
        r.scripts += 1;
        for conn in script.connections {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let Ok(mut s) = TcpStream::connect_timeout(&who.addr, Duration::from_secs(5)) else {
                r.refused += 1;
                continue;
            };
            r.connections += 1;
            let _ = s.set_nodelay(true);
            let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let mut written = true;
            for chunk in &conn.chunks {
                if s.write_all(chunk).is_err() {
                    written = false;
                    r.closed_early += 1;
                    break;
                }
                r.bytes_sent += chunk.len() as u64;
            }
            if written && conn.end != End::Abrupt {
                let _ = s.shutdown(Shutdown::Write);
                let (read, closed) = read_to_close(&mut s);
                r.bytes_read += read;
                if !closed {
                    r.left_open += 1;
                }
            }
        }
    }
    r
}

/// Reads until the server closes (true) or `CLOSE_WAIT` passes (false).
fn read_to_close(s: &mut TcpStream) -> (u64, bool) {
    let deadline = Instant::now() + CLOSE_WAIT;
    let mut buf = [0u8; 16 << 10];
    let mut total = 0u64;
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return (total, true),
            Ok(n) => total += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // A reset is a close too.
            Err(_) => return (total, true),
        }
    }
    (total, false)
}

/// One huge statement: a count over an IN list of about 10 MB.
#[derive(Clone, Debug)]
pub struct LargeStatement {
    pub bytes: usize,
    pub items: usize,
    pub elapsed: Duration,
    /// The count it returned.
    pub count: i64,
}

/// Runs `SELECT count(*) FROM usertable WHERE ycsb_key IN (…)` with
/// `items` keys (every third one from 0, so a third of them exist when
/// the table has `3 × items` rows or more) over the simple protocol.
pub fn large_statement(endpoint: &Endpoint, items: usize) -> Result<LargeStatement> {
    let mut sql = format!("SELECT count(*) FROM {} WHERE ycsb_key IN (", ycsb::TABLE);
    for i in 0..items {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&(i as u64 * 3).to_string());
    }
    sql.push(')');
    let mut client = endpoint.connect()?;
    let start = Instant::now();
    let rows = client
        .simple_query(&sql)
        .map_err(crate::target::wire_error)?;
    let elapsed = start.elapsed();
    let count = first_number(rows)?;
    Ok(LargeStatement {
        bytes: sql.len(),
        items,
        elapsed,
        count,
    })
}

fn first_number(rows: Vec<postgres::SimpleQueryMessage>) -> Result<i64> {
    crate::target::text_rows(rows)
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| Error::new(SqlState::INTERNAL_ERROR, "the query gave no number"))
}

/// Both runs of one target.
pub struct HostileReport {
    pub quiet: RunReport,
    pub hostile: RunReport,
    pub attack: AttackReport,
    /// `SELECT count(*)` of the YCSB table after both runs.
    pub rows_after: i64,
}

/// Runs YCSB-C alone, then beside `attackers` malformed clients.
pub fn run(
    backend: &Backend,
    cfg: &RunConfig,
    attackers: usize,
    seed: u64,
) -> Result<HostileReport> {
    let Backend::Wire(endpoint) = backend else {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            "bench hostile needs a wire target (ndpdb-server or postgres)",
        ));
    };
    let quiet = {
        let _phase = Phase::start("YCSB-C quiet", cfg.duration);
        ycsb::run(backend, cfg)?
    };
    let attack = Attack::start(endpoint, attackers, seed)?;
    // Let the attack reach full strength before the clock starts.
    std::thread::sleep(Duration::from_secs(1));
    let hostile = {
        let _phase = Phase::start(
            &format!("YCSB-C beside {attackers} attackers"),
            cfg.duration,
        );
        ycsb::run(backend, cfg)
    };
    let attack = attack.finish();
    let hostile = hostile?;
    let mut client = endpoint.connect()?;
    let rows = client
        .simple_query(&format!("SELECT count(*) FROM {}", ycsb::TABLE))
        .map_err(crate::target::wire_error)?;
    let rows_after = first_number(rows)?;
    Ok(HostileReport {
        quiet,
        hostile,
        attack,
        rows_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conninfo_gives_address_user_and_database() {
        let c = Conninfo::parse("host=127.0.0.1 port=5999 user=bench dbname=b").unwrap();
        assert_eq!(c.addr.port(), 5999);
        assert_eq!((c.user.as_str(), c.database.as_str()), ("bench", "b"));
        let c = Conninfo::parse("host=127.0.0.1 port=1 user=u").unwrap();
        assert_eq!(c.database, "u");
    }
}
