//! Client scripts from fuzz bytes: which connections a client opens, the
//! bytes each sends (in which chunks), and how each ends.
//!
//! ```text
//!  bytes ─► Unstructured ─► connection₁ … connectionₙ (n ≤ 3)
//!    connection: startup variant (normal, SSL/GSS first, cancel, bad
//!                version, garbage, password exchange)
//!              ─► messages: Query, Parse, Bind, Describe, Execute, Close,
//!                 Sync, Flush, COPY data, Terminate, password, function
//!                 call, unknown types, raw bytes — from a vocabulary of
//!                 statements on the canary table and a scratch table
//!              ─► mutations: length words off, bodies cut or padded,
//!                 bytes flipped, type bytes replaced
//!              ─► end: half-close and read to the end, Terminate, or
//!                 drop everything at once
//! ```
//!
//! The same bytes always give the same script, so a failing input
//! replays exactly; coverage-guided fuzzers steer the choices.

use arbitrary::{Result, Unstructured};

/// How a connection ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Shut down the write side and read every reply until the server
    /// closes.
    HalfClose,
    /// Send Terminate, then as `HalfClose`.
    Terminate,
    /// Drop the connection without reading what is left (a close or reset).
    Abrupt,
}

#[derive(Debug)]
pub struct Connection {
    /// What the client writes, chunk by chunk.
    pub chunks: Vec<Vec<u8>>,
    pub end: End,
}

#[derive(Debug)]
pub struct Script {
    /// Whether the server asks for a password (SCRAM) instead of trusting.
    pub password_server: bool,
    pub connections: Vec<Connection>,
}

/// Statements: on `t` (the canary, whose committed rows the oracle
/// watches) and `u` (scratch), valid and invalid, with and without
/// parameters.
const SQL: &[&str] = &[
    "SELECT 1",
    "SELECT * FROM t ORDER BY id",
    "SELECT count(*), sum(v) FROM t",
    "SELECT $1::INT + 1",
    "SELECT * FROM t WHERE id = $1",
    "SELECT s FROM t WHERE s LIKE $1",
    "SELECT id, v FROM t WHERE v > $1 ORDER BY id LIMIT $2",
    "UPDATE t SET v = v + 1 WHERE id = $1",
    "UPDATE t SET v = v + 1",
    "UPDATE t SET s = $2 WHERE id = $1",
    "DELETE FROM t WHERE id = $1",
    "DELETE FROM t WHERE id > 10",
    "INSERT INTO t VALUES ($1, $2, $3)",
    "INSERT INTO t VALUES (1, 1, 'dup')",
    "INSERT INTO u VALUES ($1, $2)",
    "INSERT INTO u VALUES (1, 'a'), (2, 'b')",
    "SELECT * FROM u ORDER BY k",
    "DELETE FROM u",
    "SELECT * FROM t FOR UPDATE",
    "SELECT * FROM t WHERE id = 3 FOR UPDATE",
    "BEGIN",
    "BEGIN ISOLATION LEVEL READ COMMITTED",
    "COMMIT",
    "ROLLBACK",
    "SET ndp = on",
    "SET ndp = off",
    "SET statement_timeout = '50ms'",
    "SHOW ndp",
    "SHOW transaction_isolation",
    "EXPLAIN SELECT * FROM t WHERE v > 3",
    "COPY u FROM STDIN",
    "COPY u (k, w) FROM STDIN (FORMAT csv, HEADER)",
    "COPY t FROM STDIN",
    "SELECT 1 / 0",
    "SELECT nope FROM t",
    "SELECT 1; SELECT 2",
    "INSERT INTO u VALUES (7, 'x'); SELECT 1 / 0",
    "DELETE FROM t WHERE id = 2; COMMIT; DELETE FROM t WHERE id = 3",
    "",
    ";",
    "DEALLOCATE ALL",
    "DEALLOCATE s1",
    "DISCARD ALL",
    "SELECT version()",
    "SELECT current_setting('ndp')",
    "SELECT 'é' || $1",
    "SELECT CAST($1 AS NUMERIC(10, 2)) * 2",
    "SELECT * FROM t a JOIN u b ON a.id = b.k",
];

const COPY_DATA: &[&[u8]] = &[
    b"100\tx\n101\ty\n",
    b"k,w\n102,z\n",
    b"103\t",
    b"\\N\t\\N\n",
    b"abc\tdef\n",
    b"1\t2\t3\n",
    b"\\.\n",
    b"104\t\xff\n",
];

const PARAMS: &[&[u8]] = &[
    b"1",
    b"2",
    b"42",
    b"-1",
    b"2147483648",
    b"abc",
    b"%a%",
    b"1.5",
    b"",
    b"\xff\xfe",
    b"\x00\x00\x00\x01",
];

const TYPE_OIDS: &[u32] = &[
    0, 16, 17, 20, 21, 23, 25, 700, 701, 1043, 1082, 1114, 1700, 705,
];

/// Between `min` and `max` bytes of the input.
pub fn some_bytes(u: &mut Unstructured, min: u32, max: u32) -> Result<Vec<u8>> {
    let n = u.int_in_range(min..=max)? as usize;
    Ok(u.bytes(n)?.to_vec())
}

fn cstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    out.push(0);
}

fn message(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn packet(body: &[u8]) -> Vec<u8> {
    let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    m.extend_from_slice(body);
    m
}

fn name(u: &mut Unstructured) -> Result<&'static [u8]> {
    Ok(*u.choose(&[&b""[..], b"s1", b"s2", b"p1"])?)
}

fn sql(u: &mut Unstructured) -> Result<Vec<u8>> {
    Ok(match u.int_in_range(0..=15)? {
        // Deep or long statements.
        0 => format!(
            "SELECT 1{}",
            " + 1".repeat(u.int_in_range(0..=6000)? as usize)
        )
        .into_bytes(),
        1 => {
            let n = u.int_in_range(0..=3000)? as usize;
            format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)).into_bytes()
        }
        2 => {
            let n = u.int_in_range(1..=500)? as usize;
            let list: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            format!("SELECT count(*) FROM t WHERE id IN ({})", list.join(",")).into_bytes()
        }
        // Arbitrary text.
        3 => some_bytes(u, 0, 64)?,
        _ => u.choose(SQL)?.as_bytes().to_vec(),
    })
}

/// One frontend message after startup.
fn frontend_message(u: &mut Unstructured) -> Result<Vec<u8>> {
    let mut b = Vec::new();
    Ok(match u.int_in_range(0..=17)? {
        0 | 1 => {
            cstr(&mut b, &sql(u)?);
            message(b'Q', &b)
        }
        2 | 3 => {
            cstr(&mut b, name(u)?);
            cstr(&mut b, &sql(u)?);
            let n = u.int_in_range(0..=3)?;
            b.extend_from_slice(&(n as i16).to_be_bytes());
            for _ in 0..n {
                b.extend_from_slice(&u.choose(TYPE_OIDS)?.to_be_bytes());
            }
            message(b'P', &b)
        }
        4 | 5 => {
            cstr(&mut b, name(u)?);
            cstr(&mut b, name(u)?);
            let formats = u.int_in_range(0..=3)?;
            b.extend_from_slice(&(formats as i16).to_be_bytes());
            for _ in 0..formats {
                b.extend_from_slice(&u.choose(&[0i16, 1, 2, -1])?.to_be_bytes());
            }
            let n = u.int_in_range(0..=3)?;
            b.extend_from_slice(&(n as i16).to_be_bytes());
            for _ in 0..n {
                if u.ratio(1, 8)? {
                    b.extend_from_slice(&(-1i32).to_be_bytes());
                } else {
                    let p = u.choose(PARAMS)?;
                    b.extend_from_slice(&(p.len() as i32).to_be_bytes());
                    b.extend_from_slice(p);
                }
            }
            let results = u.int_in_range(0..=3)?;
            b.extend_from_slice(&(results as i16).to_be_bytes());
            for _ in 0..results {
                b.extend_from_slice(&u.choose(&[0i16, 1, 9])?.to_be_bytes());
            }
            message(b'B', &b)
        }
        6 => {
            b.push(*u.choose(b"SPX")?);
            cstr(&mut b, name(u)?);
            message(b'D', &b)
        }
        7 | 8 => {
            cstr(&mut b, name(u)?);
            let max_rows = *u.choose(&[0, 0, 1, 2, -1, -5, i32::MAX, i32::MIN])?;
            b.extend_from_slice(&max_rows.to_be_bytes());
            message(b'E', &b)
        }
        9 => {
            b.push(*u.choose(b"SPX")?);
            cstr(&mut b, name(u)?);
            message(b'C', &b)
        }
        10 | 11 => message(b'S', &[]),
        12 => message(b'H', &[]),
        13 => message(b'd', u.choose(COPY_DATA)?),
        14 => match u.int_in_range(0..=2)? {
            0 => message(b'c', &[]),
            1 => {
                cstr(&mut b, b"client says stop");
                message(b'f', &b)
            }
            _ => message(b'X', &[]),
        },
        15 => {
            // Password or function call after login, or any type byte.
            let ty = *u.choose(&[b'p', b'F', b'!', 0, 0xff, b'Z', b'T'])?;
            message(ty, &some_bytes(u, 0, 16)?)
        }
        // Raw bytes.
        _ => some_bytes(u, 0, 24)?,
    })
}

/// Corrupts a message the way broken or hostile clients do.
fn mutate(u: &mut Unstructured, m: &mut Vec<u8>) -> Result<()> {
    if m.len() < 5 || !u.ratio(1, 6)? {
        return Ok(());
    }
    match u.int_in_range(0..=4)? {
        0 => {
            // A length word that does not match the body.
            let len = i32::from_be_bytes([m[1], m[2], m[3], m[4]]);
            let bad = *u.choose(&[
                len + 1,
                len - 1,
                len + 3,
                len - 3,
                0,
                3,
                i32::MAX,
                -1,
                10_001,
                0x3fff_ffff,
            ])?;
            m[1..5].copy_from_slice(&bad.to_be_bytes());
        }
        1 => {
            let keep = u.int_in_range(0..=m.len())?;
            m.truncate(keep);
        }
        2 => {
            // Junk inside the declared length.
            let junk = some_bytes(u, 1, 4)?;
            m.extend_from_slice(&junk);
            let len = (m.len() - 1) as i32;
            m[1..5].copy_from_slice(&len.to_be_bytes());
        }
        3 => {
            let at = u.int_in_range(0..=m.len() - 1)?;
            m[at] ^= u.int_in_range(1..=255)?;
        }
        _ => m[0] = u.arbitrary()?,
    }
    Ok(())
}

/// Who a script logs in as (the user and database of its startup packets).
#[derive(Clone, Copy, Debug)]
pub struct Identity<'a> {
    pub user: &'a [u8],
    pub database: &'a [u8],
}

impl Identity<'static> {
    /// The fuzz target's in-process servers accept any user.
    pub const FUZZ: Identity<'static> = Identity {
        user: b"fuzz",
        database: b"fuzz",
    };
}

/// The startup phase: what the client sends before its first message.
fn startup(u: &mut Unstructured, password_server: bool, who: Identity) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match u.int_in_range(0..=15)? {
        0 => out.extend(packet(&80_877_103i32.to_be_bytes())),
        1 => out.extend(packet(&80_877_104i32.to_be_bytes())),
        2 => {
            // A cancel request, and nothing else on this connection.
            let mut b = 80_877_102i32.to_be_bytes().to_vec();
            b.extend_from_slice(&some_bytes(u, 0, 12)?);
            out.extend(packet(&b));
            return Ok(out);
        }
        3 => {
            // A first packet that is not one.
            out.extend_from_slice(&some_bytes(u, 0, 12)?);
            return Ok(out);
        }
        _ => {}
    }
    let version = *u.choose(&[
        0x0003_0000i32,
        0x0003_0000,
        0x0003_0000,
        0x0003_0002,
        0x0002_0000,
        0x0004_0000,
        80_877_103,
    ])?;
    let mut b = version.to_be_bytes().to_vec();
    if !u.ratio(1, 10)? {
        cstr(&mut b, b"user");
        cstr(&mut b, who.user);
    }
    for (k, v) in [
        (&b"database"[..], who.database),
        (b"application_name", b"fuzzer"),
        (b"client_encoding", b"UTF8"),
        (b"_pq_.option", b"on"),
    ] {
        if u.ratio(1, 3)? {
            cstr(&mut b, k);
            cstr(&mut b, v);
        }
    }
    if !u.ratio(1, 12)? {
        b.push(0);
    }
    let mut start = packet(&b);
    mutate(u, &mut start)?;
    out.extend(start);
    if password_server {
        // SCRAM: a client-first message, then a final one (wrong proof).
        let mut first = Vec::new();
        cstr(&mut first, u.choose(&[&b"SCRAM-SHA-256"[..], b"MD5", b""])?);
        let data: &[u8] = u.choose(&[
            &b"n,,n=fuzz,r=abcdefghijklmnop"[..],
            b"n,,n=,r=",
            b"y,,n=fuzz,r=x",
            b"garbage",
            b"",
        ])?;
        first.extend_from_slice(&(data.len() as i32).to_be_bytes());
        first.extend_from_slice(data);
        let mut m = message(b'p', &first);
        mutate(u, &mut m)?;
        out.extend(m);
        if u.ratio(1, 2)? {
            out.extend(message(
                b'p',
                u.choose(&[&b"c=biws,r=abcdefghijklmnop,p=AAAA"[..], b"c=,r=,p=", b""])?,
            ));
        }
    }
    Ok(out)
}

/// Builds a script from fuzz bytes.
pub fn script(u: &mut Unstructured) -> Result<Script> {
    script_as(u, Identity::FUZZ)
}

/// Builds a script whose startup packets log in as `who` (how
/// `ndpdb bench hostile` aims malformed traffic at a real server).
pub fn script_as(u: &mut Unstructured, who: Identity) -> Result<Script> {
    let password_server = u.ratio(1, 12)?;
    let n = u.int_in_range(1..=3)?;
    let mut connections = Vec::new();
    for _ in 0..n {
        let mut bytes = startup(u, password_server, who)?;
        let messages = u.int_in_range(0..=24)?;
        for _ in 0..messages {
            let mut m = frontend_message(u)?;
            mutate(u, &mut m)?;
            bytes.extend(m);
        }
        let end = *u.choose(&[End::HalfClose, End::HalfClose, End::Terminate, End::Abrupt])?;
        if end == End::Terminate {
            bytes.extend(message(b'X', &[]));
        }
        // Split into chunks so that messages arrive in pieces.
        let mut chunks = Vec::new();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let take = if u.ratio(1, 4)? {
                u.int_in_range(1..=rest.len())?
            } else {
                rest.len()
            };
            chunks.push(rest[..take].to_vec());
            rest = &rest[take..];
        }
        connections.push(Connection { chunks, end });
    }
    Ok(Script {
        password_server,
        connections,
    })
}
