//! A client that sends a deep or long statement and leaves does not keep
//! a core of the server busy: `ndpdb serve` runs in its own process, a raw
//! connection sends a statement that would run for seconds — in its parse,
//! in its execution — and closes; a second later the server's CPU time
//! stops growing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_ndpdb")
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(db: &Path) -> (Server, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(exe())
        .args(["serve", "--db"])
        .arg(db)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (Server(child), port)
}

/// A connection past startup (trust authentication), ready for a query.
fn connect(port: u16) -> TcpStream {
    let started = Instant::now();
    let mut s = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(_) if started.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("{e}"),
        }
    };
    let mut body = Vec::new();
    body.extend_from_slice(&196_608i32.to_be_bytes());
    for (k, v) in [("user", "postgres"), ("database", "postgres")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    s.write_all(&msg).unwrap();
    // Messages up to ReadyForQuery.
    loop {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).unwrap();
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut rest = vec![0u8; len - 4];
        s.read_exact(&mut rest).unwrap();
        assert_ne!(head[0], b'E', "startup failed");
        if head[0] == b'Z' {
            return s;
        }
    }
}

fn query(s: &mut TcpStream, sql: &str) {
    let mut msg = vec![b'Q'];
    msg.extend_from_slice(&((sql.len() + 5) as i32).to_be_bytes());
    msg.extend_from_slice(sql.as_bytes());
    msg.push(0);
    s.write_all(&msg).unwrap();
}

/// The process's CPU time so far, in clock ticks (user + system).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces): state is the
    // 3rd field, utime the 14th and stime the 15th.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Sends `sql`, lets it run `running`, closes the connection and returns
/// the server's CPU ticks in the half second that starts 1 s later.
fn ticks_after_leaving(port: u16, pid: u32, sql: &str, running: Duration) -> u64 {
    let mut s = connect(port);
    query(&mut s, sql);
    std::thread::sleep(running);
    drop(s);
    std::thread::sleep(Duration::from_secs(1));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_millis(500));
    cpu_ticks(pid) - before
}

#[test]
fn a_client_that_leaves_stops_its_statement_in_every_phase() {
    let dir = std::env::temp_dir().join(format!("ndpdb-client-gone-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (server, port) = serve(&dir);
    let pid = server.0.id();
    drop(connect(port));
    // A half second of an idle server: the baseline (clock ticks are
    // 1/100 s, so a busy core counts 50).
    let idle = {
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_millis(500));
        cpu_ticks(pid) - before
    };
    let phases = [
        // CASE nested 10,000 deep: refused before the parser recurses.
        (
            "deep",
            format!(
                "SELECT {}1{}",
                "CASE WHEN TRUE THEN ".repeat(10_000),
                " END".repeat(10_000)
            ),
        ),
        // Parsing: 12 MB of VALUES rows, seconds of tokenizing and parsing.
        // (A select list that long is refused before the parser, as more
        // than 1,664 entries.)
        ("parse", format!("VALUES (1){}", ", (1)".repeat(2_400_000))),
        // Execution: a cross join of 10¹⁰ rows.
        (
            "execute",
            "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b"
                .to_string(),
        ),
    ];
    for (phase, sql) in phases {
        let busy = ticks_after_leaving(port, pid, &sql, Duration::from_millis(400));
        assert!(
            busy <= idle + 10,
            "{phase}: the server used {busy} ticks of CPU in 0.5 s, a second after its client \
             left (idle: {idle})"
        );
    }
    // The server still answers.
    let mut s = connect(port);
    query(&mut s, "SELECT 1");
    let mut head = [0u8; 1];
    s.read_exact(&mut head).unwrap();
    assert_eq!(head[0], b'T');
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
