//! A raw PostgreSQL-protocol client for tests that send exactly the bytes
//! a bad client would: messages built by hand, replies read back as
//! (type, body) pairs, and whether the server closed the connection.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// One message: its type byte and body.
pub fn message(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn cstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

pub fn query(sql: &str) -> Vec<u8> {
    let mut b = Vec::new();
    cstr(&mut b, sql);
    message(b'Q', &b)
}

pub fn parse(name: &str, sql: &str) -> Vec<u8> {
    let mut b = Vec::new();
    cstr(&mut b, name);
    cstr(&mut b, sql);
    b.extend_from_slice(&0i16.to_be_bytes());
    message(b'P', &b)
}

/// Bind of text parameters (`None`: NULL), all results in text.
pub fn bind(portal: &str, statement: &str, params: &[Option<&str>]) -> Vec<u8> {
    let mut b = Vec::new();
    cstr(&mut b, portal);
    cstr(&mut b, statement);
    b.extend_from_slice(&0i16.to_be_bytes());
    b.extend_from_slice(&(params.len() as i16).to_be_bytes());
    for p in params {
        match p {
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(v) => {
                b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                b.extend_from_slice(v.as_bytes());
            }
        }
    }
    b.extend_from_slice(&0i16.to_be_bytes());
    message(b'B', &b)
}

pub fn execute(portal: &str, max_rows: i32) -> Vec<u8> {
    let mut b = Vec::new();
    cstr(&mut b, portal);
    b.extend_from_slice(&max_rows.to_be_bytes());
    message(b'E', &b)
}

pub fn sync() -> Vec<u8> {
    message(b'S', &[])
}

pub fn terminate() -> Vec<u8> {
    message(b'X', &[])
}

/// Parse, Bind and Execute of one unnamed statement (no Sync).
pub fn extended(sql: &str) -> Vec<u8> {
    [parse("", sql), bind("", "", &[]), execute("", 0)].concat()
}

pub fn startup_packet(user: &str) -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for s in ["user", user, "database", user] {
        cstr(&mut body, s);
    }
    body.push(0);
    let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    m.extend_from_slice(&body);
    m
}

/// What the server answered.
#[derive(Debug, Default)]
pub struct Reply {
    pub messages: Vec<(u8, Vec<u8>)>,
    /// The server closed (or reset) the connection.
    pub closed: bool,
}

impl Reply {
    pub fn types(&self) -> String {
        self.messages.iter().map(|(t, _)| *t as char).collect()
    }

    /// A field of the first ErrorResponse ('C' SQLSTATE, 'S' severity,
    /// 'M' message).
    pub fn error_field(&self, field: u8) -> Option<String> {
        let (_, body) = self.messages.iter().find(|(t, _)| *t == b'E')?;
        body.split(|b| *b == 0)
            .find(|f| f.first() == Some(&field))
            .map(|f| String::from_utf8_lossy(&f[1..]).into_owned())
    }

    pub fn sqlstate(&self) -> Option<String> {
        self.error_field(b'C')
    }

    /// The transaction status of the last ReadyForQuery.
    pub fn status(&self) -> Option<char> {
        self.messages
            .iter()
            .rev()
            .find(|(t, _)| *t == b'Z')
            .map(|(_, b)| b[0] as char)
    }

    /// Text of the first column of every DataRow.
    pub fn first_column(&self) -> Vec<String> {
        self.messages
            .iter()
            .filter(|(t, _)| *t == b'D')
            .map(|(_, b)| {
                let len = i32::from_be_bytes([b[2], b[3], b[4], b[5]]) as usize;
                String::from_utf8_lossy(&b[6..6 + len]).into_owned()
            })
            .collect()
    }
}

pub struct Raw {
    pub stream: TcpStream,
}

impl Raw {
    /// A connection before startup.
    pub fn connect(port: u16) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_nodelay(true).unwrap();
        Raw { stream }
    }

    /// A connection past startup (trust authentication).
    pub fn startup(port: u16) -> Raw {
        let mut raw = Raw::connect(port);
        raw.send(&startup_packet("raw"));
        let reply = raw.read_until(b'Z', Duration::from_secs(10));
        assert_eq!(reply.status(), Some('I'), "{reply:?}");
        raw
    }

    pub fn send(&mut self, bytes: &[u8]) {
        // The server may already have closed: that is for the reply to show.
        let _ = self.stream.write_all(bytes);
    }

    /// Reads messages until one of type `until`, a close, or `patience`
    /// without a message.
    pub fn read_until(&mut self, until: u8, patience: Duration) -> Reply {
        let mut reply = Reply::default();
        let deadline = Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return reply;
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            let mut head = [0u8; 5];
            match read_exact(&mut self.stream, &mut head) {
                Ok(true) => {}
                Ok(false) => {
                    reply.closed = true;
                    return reply;
                }
                Err(()) => return reply,
            }
            let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
            let mut body = vec![0u8; len.saturating_sub(4)];
            match read_exact(&mut self.stream, &mut body) {
                Ok(true) => {}
                Ok(false) => {
                    reply.closed = true;
                    return reply;
                }
                Err(()) => return reply,
            }
            reply.messages.push((head[0], body));
            if head[0] == until {
                return reply;
            }
        }
    }

    /// Sends `bytes` and reads until ReadyForQuery.
    pub fn round(&mut self, bytes: &[u8]) -> Reply {
        self.send(bytes);
        self.read_until(b'Z', Duration::from_secs(20))
    }

    /// Reads until the server closes the connection (or `patience` passes:
    /// then `closed` is false).
    pub fn read_to_close(&mut self, patience: Duration) -> Reply {
        self.read_until(0, patience)
    }

    /// Ends the connection with a TCP reset instead of a close.
    pub fn reset(self) {
        use std::os::fd::AsRawFd;
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: a valid socket descriptor and a correctly sized option.
        unsafe {
            libc::setsockopt(
                self.stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &linger as *const libc::linger as *const libc::c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
        }
        drop(self.stream);
    }
}

/// `Ok(true)`: filled; `Ok(false)`: the peer closed or reset; `Err`: timeout.
fn read_exact(s: &mut TcpStream, buf: &mut [u8]) -> Result<bool, ()> {
    let mut at = 0;
    while at < buf.len() {
        match s.read(&mut buf[at..]) {
            Ok(0) => return Ok(false),
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Err(()),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Err(()),
            Err(_) => return Ok(false),
        }
    }
    Ok(true)
}
