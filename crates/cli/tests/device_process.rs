//! The device as its own process: `ndpdb device` serves a host over a
//! unix socket, with the shared lock table in /dev/shm. Reads and update
//! NDP work across the process boundary; a killed device fails the
//! host's statements with a clear error instead of hanging them, and a
//! restarted device serves the same store to a host that reattaches.

use std::path::Path;
use std::process::{Command, Output};

use ndpdb_embedded::process::DeviceProcess;
use std::time::{Duration, Instant};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_ndpdb")
}

fn start_device(store: &Path, socket: &Path) -> DeviceProcess {
    DeviceProcess::spawn(Path::new(exe()), store, socket, 2).unwrap()
}

fn sql(db: &Path, socket: &Path, commands: &[&str]) -> Output {
    let mut c = Command::new(exe());
    c.args(["sql", "--db"])
        .arg(db)
        .arg("--device")
        .arg(format!("unix:{}", socket.display()));
    for s in commands {
        c.args(["-c", s]);
    }
    c.output().unwrap()
}

fn ok(db: &Path, socket: &Path, commands: &[&str]) -> String {
    let out = sql(db, socket, commands);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{commands:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn a_host_runs_on_a_device_process_and_survives_its_death() {
    let dir = tempfile::tempdir().unwrap();
    let (store, db, socket) = (
        dir.path().join("store"),
        dir.path().join("host"),
        dir.path().join("device.sock"),
    );
    let device = start_device(&store, &socket);
    let mode = std::fs::metadata(&socket).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600,
        "the socket is the owner's only"
    );
    let out = ok(
        &db,
        &socket,
        &[
            "CREATE TABLE t (k INT PRIMARY KEY, v BIGINT NOT NULL)",
            "INSERT INTO t SELECT 1, 1",
            "INSERT INTO t VALUES (2, 2), (3, 3), (4, 4)",
            "SET ndp = on",
            "UPDATE t SET v = v * 10",
            "SELECT sum(v) FROM t",
        ],
    );
    assert!(out.contains("UPDATE 4") && out.contains("100"), "{out}");
    // Killed: the host's statement fails at once, the host process ends
    // with an error rather than hanging.
    drop(device);
    let t = Instant::now();
    let out = sql(&db, &socket, &["SET ndp = on", "SELECT sum(v) FROM t"]);
    assert!(!out.status.success());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ERROR"), "{err}");
    // Restarted on the same store: the host reattaches and finds every
    // committed row, device updates included.
    let _device = start_device(&store, &socket);
    let out = ok(
        &db,
        &socket,
        &["SET ndp = on", "SELECT count(*), sum(v) FROM t"],
    );
    assert!(out.contains("     4 | 100"), "{out}");
}

fn embedded(db: &Path, commands: &[&str]) -> String {
    let mut c = Command::new(exe());
    c.args(["sql", "--db"]).arg(db);
    for s in commands {
        c.args(["-c", s]);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A lost device store is rebuilt onto a device process: `ndpdb restore
/// --device` writes the backup, the WAL and the overflow logs into its
/// empty store; a device whose store is not empty is refused (55000).
#[test]
fn a_backup_restores_onto_a_device_process() {
    let dir = tempfile::tempdir().unwrap();
    let (db, backup, store, socket) = (
        dir.path().join("host"),
        dir.path().join("backup"),
        dir.path().join("store"),
        dir.path().join("device.sock"),
    );
    embedded(
        &db,
        &[
            "CREATE TABLE t (k INT PRIMARY KEY, v BIGINT NOT NULL)",
            "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)",
        ],
    );
    let out = Command::new(exe())
        .args(["backup", "--db"])
        .arg(&db)
        .arg("--to")
        .arg(&backup)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    embedded(
        &db,
        &[
            "SET ndp = on",
            "SET ndp_logging = extended",
            "UPDATE t SET v = v + 1",
        ],
    );
    std::fs::remove_dir_all(db.join("device")).unwrap();
    let _device = start_device(&store, &socket);
    let restore = || {
        Command::new(exe())
            .args(["restore", "--db"])
            .arg(&db)
            .arg("--backup")
            .arg(&backup)
            .arg("--device")
            .arg(format!("unix:{}", socket.display()))
            .output()
            .unwrap()
    };
    let out = restore();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ok(&db, &socket, &["SET ndp = on", "SELECT sum(v) FROM t"]);
    assert!(out.contains("63"), "{out}");
    let again = restore();
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("55000"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

fn stat(db: &ndpdb_host::Database, name: &str) -> i64 {
    db.stats()
        .into_iter()
        .find(|(k, _)| k == name)
        .map_or(0, |(_, v)| v)
}

/// Over TCP the host shares no memory with the device: its tuple locks
/// are compare-and-swaps carried on the sync plane, and the device's PEs
/// see them. An NDP UPDATE waits for a row a host transaction holds and
/// runs once the host lets go.
#[test]
fn over_tcp_host_locks_reach_the_device_by_messages() {
    use ndpdb_embedded::process::{DeviceAt, LinkKind};
    use ndpdb_sql::Session;

    let dir = tempfile::tempdir().unwrap();
    let config = ndpdb_host::Config::default();
    let at = DeviceAt::start(dir.path(), &config, LinkKind::Tcp, Path::new(exe()))
        .unwrap()
        .unwrap();
    let wrong = ndpdb_host::Database::attach(
        &dir.path().join("host"),
        config.clone(),
        &at.listen,
        b"not the secret".to_vec(),
    );
    assert!(wrong.is_err(), "a host without the token is refused");
    let db = ndpdb_host::Database::attach(
        &dir.path().join("host"),
        config,
        &at.listen,
        at.secret.clone(),
    )
    .unwrap();
    let mut a = Session::new(db.clone());
    a.execute("CREATE TABLE t (k INT PRIMARY KEY, v BIGINT NOT NULL)")
        .unwrap();
    let values: Vec<String> = (1..=200).map(|k| format!("({k}, {k})")).collect();
    a.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
        .unwrap();
    let sync_before = stat(&db, "link.sync.to_device.messages");
    a.execute("BEGIN").unwrap();
    a.execute("UPDATE t SET v = v + 1000 WHERE k = 7").unwrap();
    assert!(
        stat(&db, "link.sync.to_device.messages") > sync_before,
        "the host's lock travelled on the sync plane"
    );
    let calls_before = stat(&db, "ndp.calls");
    let db2 = db.clone();
    let ndp = std::thread::spawn(move || {
        let mut b = Session::new(db2);
        b.execute("SET ndp = on").unwrap();
        let t = Instant::now();
        let r = b.execute("UPDATE t SET v = v * 2");
        (r.map(|_| ()), t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(400));
    a.execute("ROLLBACK").unwrap();
    let (r, waited) = ndp.join().unwrap();
    r.unwrap();
    assert!(
        waited >= Duration::from_millis(350),
        "the device job waited for the host's lock: {waited:?}"
    );
    assert!(
        stat(&db, "ndp.calls") > calls_before,
        "the UPDATE ran on the device"
    );
    let out = a.execute("SELECT sum(v) FROM t").unwrap();
    assert!(format!("{out:?}").contains("40200"), "{out:?}");
}

/// `ndpdb serve` on a device process: when the device is killed, a
/// client's NDP statement fails with 08006 within 5 s and the server
/// stays up; once the device is back the same connection works again,
/// with every committed row.
#[test]
fn the_server_stays_up_while_its_device_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let (store, db, socket) = (
        dir.path().join("store"),
        dir.path().join("host"),
        dir.path().join("device.sock"),
    );
    let mut device = Some(start_device(&store, &socket));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(exe())
        .args(["serve", "--db"])
        .arg(&db)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--device")
        .arg(format!("unix:{}", socket.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let conninfo = format!("host=127.0.0.1 port={port} user=test dbname=test");
    let t = Instant::now();
    let mut client = loop {
        match postgres::Client::connect(&conninfo, postgres::NoTls) {
            Ok(c) => break c,
            Err(_) if t.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("{e}"),
        }
    };
    client
        .batch_execute(
            "CREATE TABLE t (k INT PRIMARY KEY, v BIGINT NOT NULL);
             INSERT INTO t VALUES (1, 10), (2, 20), (3, 30);
             SET ndp = on",
        )
        .unwrap();
    let sum = |c: &mut postgres::Client| {
        c.query_one("SELECT sum(v)::BIGINT FROM t WHERE v > 0", &[])
            .map(|r| r.get::<_, i64>(0))
    };
    assert_eq!(sum(&mut client).unwrap(), 60);
    for _ in 0..3 {
        drop(device.take());
        let t = Instant::now();
        let e = sum(&mut client).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(e.code().map(|c| c.code()), Some("08006"), "{e:?}");
        assert!(server.try_wait().unwrap().is_none(), "the server stays up");
        device = Some(start_device(&store, &socket));
        let t = Instant::now();
        loop {
            match sum(&mut client) {
                Ok(v) => {
                    assert_eq!(v, 60);
                    break;
                }
                Err(e) if t.elapsed() < Duration::from_secs(5) => {
                    assert_eq!(e.code().map(|c| c.code()), Some("08006"), "{e:?}");
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("not served again within 5 s: {e:?}"),
            }
        }
        client.execute("UPDATE t SET v = v + 0", &[]).unwrap();
    }
    drop(device);
    let _ = server.kill();
    let _ = server.wait();
}
