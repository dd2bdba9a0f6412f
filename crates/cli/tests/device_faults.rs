//! The device process killed (SIGKILL) again and again while clients
//! work: during read NDP, during update NDP and during the commit of an
//! update-NDP transaction, twenty rounds each. Host clients move
//! counters on the host meanwhile; one client runs NDP.
//!
//! What must hold: no statement waits longer than 5 s, the host stays up
//! and works again once the device is back (it reattaches by itself), no
//! acknowledged commit is lost and none is half applied — the totals
//! match the acknowledged commits exactly, also after the host itself
//! crashes and recovers on a device that was killed sixty times.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use ndpdb_embedded::process::DeviceProcess;
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};
use rand::{Rng, SeedableRng};

const ROUNDS: usize = 20;
const ACCOUNTS: i64 = 2_000;
const HOST_CLIENTS: usize = 2;
/// Rows each NDP UPDATE changes (`k % 10 = r`).
const NDP_ROWS: i64 = ACCOUNTS / 10;
/// The longest any statement may take.
const STATEMENT_LIMIT: Duration = Duration::from_secs(5);

const IDLE: u8 = 0;
const READ_NDP: u8 = 1;
const UPDATE_NDP: u8 = 2;
const COMMIT: u8 = 3;

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ndpdb"))
}

struct Device {
    store: PathBuf,
    /// `unix:PATH` or `tcp:127.0.0.1:PORT`.
    listen: String,
    token_file: Option<PathBuf>,
    process: Option<DeviceProcess>,
}

impl Device {
    fn start(&mut self) {
        self.process = Some(
            DeviceProcess::spawn_at(
                exe(),
                &self.store,
                &self.listen,
                self.token_file.as_deref(),
                2,
                &[],
            )
            .unwrap(),
        );
    }

    fn token(&self) -> Vec<u8> {
        self.token_file
            .as_ref()
            .map_or(Vec::new(), |f| std::fs::read(f).unwrap())
    }

    fn kill(&mut self) {
        // SIGKILL, then reaped: the store stays as the kill left it.
        self.process = None;
    }

    fn addr(&self) -> String {
        self.listen.clone()
    }
}

/// Times every statement; remembers the slowest.
struct Timed<'a> {
    s: Session,
    slowest: &'a AtomicU64,
}

impl Timed<'_> {
    fn run(&mut self, sql: &str) -> ndpdb_host::Result<Vec<Output>> {
        let t = Instant::now();
        let r = self.s.execute(sql);
        let took = t.elapsed();
        self.slowest
            .fetch_max(took.as_micros() as u64, Ordering::Relaxed);
        if took > Duration::from_secs(1) {
            eprintln!("slow statement ({took:?}): {sql}: {:?}", r.as_ref().err());
        }
        r
    }

    /// Ends a transaction block a failed statement left open.
    fn reset(&mut self) {
        if self.s.transaction_status() != 'I' {
            let _ = self.s.execute("ROLLBACK");
        }
    }
}

#[derive(Default)]
struct Tally {
    /// Commits acknowledged.
    acked: AtomicU64,
    /// COMMITs that failed (they may or may not have committed).
    uncertain: AtomicU64,
}

/// A host client: one counter row of its own, one random account.
fn host_client(db: Database, me: usize, stop: &AtomicBool, slowest: &AtomicU64, tally: &Tally) {
    let mut c = Timed {
        s: Session::new(db),
        slowest,
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(me as u64);
    while !stop.load(Ordering::Relaxed) {
        let k = rng.gen_range(0..ACCOUNTS);
        let body = c.run("BEGIN").and_then(|_| {
            c.run(&format!("UPDATE ledger SET n = n + 1 WHERE client = {me}"))?;
            c.run(&format!("UPDATE acct SET v = v + 1 WHERE k = {k}"))
        });
        if body.is_err() {
            c.reset();
            continue;
        }
        match c.run("COMMIT") {
            Ok(_) => tally.acked.fetch_add(1, Ordering::Relaxed),
            Err(_) => tally.uncertain.fetch_add(1, Ordering::Relaxed),
        };
        c.reset();
    }
}

/// The NDP client: a read on the device, then an update on the device
/// committed with extended NDP logging (its commit moves the overflow
/// log from the device), announcing each phase.
fn ndp_client(
    db: Database,
    phase: &AtomicU8,
    stop: &AtomicBool,
    slowest: &AtomicU64,
    tally: &Tally,
) {
    let mut c = Timed {
        s: Session::new(db),
        slowest,
    };
    c.run("SET ndp = on").unwrap();
    c.run("SET ndp_logging = extended").unwrap();
    let mut r = 0;
    while !stop.load(Ordering::Relaxed) {
        r = (r + 1) % 10;
        phase.store(READ_NDP, Ordering::Release);
        let _ = c.run("SELECT count(*), sum(v) FROM acct WHERE v >= 0");
        phase.store(UPDATE_NDP, Ordering::Release);
        let updated = c
            .run("BEGIN")
            .and_then(|_| c.run(&format!("UPDATE acct SET v = v + 1 WHERE k % 10 = {r}")));
        match updated {
            Ok(out) => assert_eq!(out[0].tag(), format!("UPDATE {NDP_ROWS}")),
            Err(_) => {
                c.reset();
                continue;
            }
        }
        phase.store(COMMIT, Ordering::Release);
        match c.run("COMMIT") {
            Ok(_) => tally.acked.fetch_add(1, Ordering::Relaxed),
            Err(_) => tally.uncertain.fetch_add(1, Ordering::Relaxed),
        };
        c.reset();
        phase.store(IDLE, Ordering::Release);
    }
}

/// Waits until the database answers an NDP read again.
fn wait_until_served(db: &Database) -> Duration {
    let t = Instant::now();
    let mut s = Session::new(db.clone());
    s.execute("SET ndp = on").unwrap();
    loop {
        if s.execute("SELECT count(*) FROM acct").is_ok() {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the host did not serve again after the device came back"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn totals(db: &Database) -> (i64, Vec<i64>) {
    let mut s = Session::new(db.clone());
    let sum = common::int(&s.execute("SELECT sum(v)::BIGINT FROM acct").unwrap());
    let ledger = (0..HOST_CLIENTS)
        .map(|me| {
            common::int(
                &s.execute(&format!("SELECT n FROM ledger WHERE client = {me}"))
                    .unwrap(),
            )
        })
        .collect();
    (sum, ledger)
}

/// Over a unix socket: the lock table is shared memory the host maps.
#[test]
fn the_device_killed_sixty_times_under_clients() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("unix:{}", dir.path().join("device.sock").display());
    kill_sixty_times(dir.path(), listen, None);
}

/// Over TCP: the host reaches the lock table by messages, which fail
/// while the device is down.
#[test]
fn the_device_killed_sixty_times_under_clients_over_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "a shared secret").unwrap();
    kill_sixty_times(
        dir.path(),
        tcp_listen_outside_ephemeral_ports(),
        Some(token),
    );
}

/// A `tcp:127.0.0.1:PORT` for a device restarted sixty times on one
/// port. The port lies below the kernel's ephemeral range: a port from
/// that range (what binding port 0 gives) can be taken, between two
/// restarts, by any outgoing connection of the tests running beside.
fn tcp_listen_outside_ephemeral_ports() -> String {
    let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let span = low.saturating_sub(1024).clamp(1, 8000);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(u64::from(std::process::id()));
    for _ in 0..100 {
        let port = low - 1 - rng.gen_range(0..span);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return format!("tcp:127.0.0.1:{port}");
        }
    }
    panic!("no free TCP port below {low}");
}

fn kill_sixty_times(dir: &Path, listen: String, token_file: Option<PathBuf>) {
    let host_dir = dir.join("host");
    let mut device = Device {
        store: dir.join("store"),
        listen,
        token_file,
        process: None,
    };
    device.start();
    let config = Config::default();
    let db = Database::attach(&host_dir, config.clone(), &device.addr(), device.token()).unwrap();
    {
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE acct (k INT PRIMARY KEY, v BIGINT NOT NULL)")
            .unwrap();
        s.execute("CREATE TABLE ledger (client INT PRIMARY KEY, n BIGINT NOT NULL)")
            .unwrap();
        let rows: Vec<String> = (0..ACCOUNTS).map(|k| format!("({k}, 0)")).collect();
        s.execute(&format!("INSERT INTO acct VALUES {}", rows.join(", ")))
            .unwrap();
        for me in 0..HOST_CLIENTS {
            s.execute(&format!("INSERT INTO ledger VALUES ({me}, 0)"))
                .unwrap();
        }
        // On the device's pages, not only in the delta buffer.
        db.checkpoint().unwrap();
    }

    let stop = AtomicBool::new(false);
    let phase = AtomicU8::new(IDLE);
    let slowest = AtomicU64::new(0);
    let host_tallies: Vec<Tally> = (0..HOST_CLIENTS).map(|_| Tally::default()).collect();
    let ndp_tally = Tally::default();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut back_after = Vec::new();
    std::thread::scope(|scope| {
        for (me, tally) in host_tallies.iter().enumerate() {
            let (db, stop, slowest) = (db.clone(), &stop, &slowest);
            scope.spawn(move || host_client(db, me, stop, slowest, tally));
        }
        {
            let (db, stop, slowest, phase, tally) =
                (db.clone(), &stop, &slowest, &phase, &ndp_tally);
            scope.spawn(move || ndp_client(db, phase, stop, slowest, tally));
        }
        let killer = std::panic::AssertUnwindSafe(|| {
            for round in 0..ROUNDS {
                for target in [READ_NDP, UPDATE_NDP, COMMIT] {
                    let t = Instant::now();
                    while phase.load(Ordering::Acquire) != target {
                        assert!(
                            t.elapsed() < Duration::from_secs(20),
                            "round {round}: the NDP client never reached phase {target}"
                        );
                        std::thread::yield_now();
                    }
                    std::thread::sleep(Duration::from_micros(rng.gen_range(0..1_500)));
                    device.kill();
                    std::thread::sleep(Duration::from_millis(rng.gen_range(5..40)));
                    device.start();
                    back_after.push(wait_until_served(&db));
                }
            }
        });
        // The clients stop even if a check above failed.
        let outcome = std::panic::catch_unwind(killer);
        stop.store(true, Ordering::Relaxed);
        if let Err(p) = outcome {
            std::panic::resume_unwind(p);
        }
    });

    let slowest = Duration::from_micros(slowest.load(Ordering::Relaxed));
    assert!(
        slowest < STATEMENT_LIMIT,
        "a statement took {slowest:?} (device killed {} times)",
        back_after.len()
    );
    let reattaches = db
        .stats()
        .into_iter()
        .find(|(k, _)| k == "device.reattaches")
        .map_or(0, |(_, v)| v);
    assert!(
        reattaches >= (3 * ROUNDS) as i64,
        "{reattaches} reattaches for {} restarts",
        3 * ROUNDS
    );
    let host_acked: Vec<u64> = host_tallies
        .iter()
        .map(|t| t.acked.load(Ordering::Relaxed))
        .collect();
    let ndp_acked = ndp_tally.acked.load(Ordering::Relaxed) as i64;
    assert!(
        ndp_acked > 0 && host_acked.iter().all(|a| *a > 0),
        "{ndp_acked} {host_acked:?}"
    );
    let uncertain: u64 = host_tallies
        .iter()
        .chain([&ndp_tally])
        .map(|t| t.uncertain.load(Ordering::Relaxed))
        .sum();

    // Every acknowledged commit is there, whole, and nothing else is — on
    // the running host, and after the host crashes and recovers.
    let check = |db: &Database, when: &str| {
        let (sum, ledger) = totals(db);
        for (me, n) in ledger.iter().enumerate() {
            let acked = host_acked[me] as i64;
            assert!(
                (acked..=acked + uncertain as i64).contains(n),
                "{when}: client {me} has {n} commits, {acked} acknowledged, {uncertain} uncertain"
            );
        }
        let host_commits: i64 = ledger.iter().sum();
        let ndp_commits = (sum - host_commits) / NDP_ROWS;
        assert_eq!(
            (sum - host_commits) % NDP_ROWS,
            0,
            "{when}: a half-applied NDP update (sum {sum}, host commits {host_commits})"
        );
        assert!(
            (ndp_acked..=ndp_acked + uncertain as i64).contains(&ndp_commits),
            "{when}: {ndp_commits} NDP commits, {ndp_acked} acknowledged, {uncertain} uncertain"
        );
    };
    check(&db, "running");
    db.close_like_a_crash();
    // The crashed host's connections close as it goes; until the device
    // has seen them close it refuses a new host (08004).
    let t = Instant::now();
    let db = loop {
        match Database::attach(&host_dir, config.clone(), &device.addr(), device.token()) {
            Ok(db) => break db,
            Err(e) if e.code.0 == "08004" && t.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("{e:?}"),
        }
    };
    check(&db, "after the host's crash recovery");
    eprintln!(
        "{}: device killed {} times; back after median {:?}, max {:?}; slowest statement {slowest:?}; {} host and {ndp_acked} NDP commits acknowledged, {uncertain} uncertain",
        device.listen,
        back_after.len(),
        {
            back_after.sort();
            back_after[back_after.len() / 2]
        },
        back_after.last().unwrap(),
        host_acked.iter().sum::<u64>(),
    );
}
