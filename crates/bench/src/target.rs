//! Benchmark targets (DESIGN.md §12): the same workload against embedded
//! ndpdb, an ndpdb server, or PostgreSQL, side by side in one run.
//!
//! ```text
//!  --target ndpdb                    Session calls in this process
//!  --target ndpdb-server[=HOST:PORT] wire protocol; without an address a
//!                                    server on a fresh database is started
//!                                    in this process on a free port
//!  --target postgres[=CONNSTRING]    wire protocol; without a connstring
//!                                    $NDPDB_POSTGRES (set by
//!                                    scripts/postgres-baseline.sh)
//! ```
//!
//! Wire targets run the identical SQL text with the same prepared
//! statements and parameters; loading uses COPY FROM STDIN in chunks.

use std::path::PathBuf;

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database, Error, Result};
use ndpdb_sql::session::Prepared;
use ndpdb_sql::{Output, Session};

/// Where a workload runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// Embedded ndpdb (no wire).
    Ndpdb,
    /// An ndpdb server; `None`: start one in this process.
    NdpdbServer(Option<String>),
    /// PostgreSQL at a libpq-style connection string.
    Postgres(String),
}

impl Target {
    /// Parses `ndpdb`, `ndpdb-server[=ADDR]`, `postgres[=CONNSTRING]`.
    pub fn parse(s: &str) -> Result<Target> {
        let (kind, arg) = match s.split_once('=') {
            Some((k, a)) => (k, Some(a.to_string())),
            None => (s, None),
        };
        match (kind, arg) {
            ("ndpdb", None) => Ok(Target::Ndpdb),
            ("ndpdb-server", addr) => Ok(Target::NdpdbServer(addr)),
            ("postgres", Some(c)) => Ok(Target::Postgres(c)),
            ("postgres", None) => std::env::var("NDPDB_POSTGRES")
                .map(Target::Postgres)
                .map_err(|_| {
                    invalid("--target postgres needs =CONNSTRING or $NDPDB_POSTGRES (scripts/postgres-baseline.sh sets it)")
                }),
            _ => Err(invalid(&format!(
                "unknown target {s} (ndpdb, ndpdb-server[=HOST:PORT], postgres[=CONNSTRING])"
            ))),
        }
    }

    /// The name a report uses.
    pub fn label(&self) -> &'static str {
        match self {
            Target::Ndpdb => "ndpdb (embedded)",
            Target::NdpdbServer(_) => "ndpdb server",
            Target::Postgres(_) => "PostgreSQL",
        }
    }
}

fn invalid(msg: &str) -> Error {
    Error::new(SqlState::INVALID_PARAMETER_VALUE, msg)
}

/// The SQLSTATE a server sent, kept as it is: codes the engine names
/// itself map to its constants, others are interned once each (there
/// are a few hundred SQLSTATEs).
pub fn sqlstate(code: &str) -> SqlState {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static OTHERS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let known = SqlState::from_code(code);
    if known.0 == code || code.len() != 5 || !code.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return known;
    }
    let Ok(mut others) = OTHERS.lock() else {
        return known;
    };
    let set = others.get_or_insert_with(HashSet::new);
    match set.get(code) {
        Some(c) => SqlState(c),
        None => {
            let c: &'static str = Box::leak(code.to_string().into_boxed_str());
            set.insert(c);
            SqlState(c)
        }
    }
}

/// A wire error as an engine error (SQLSTATE kept).
pub fn wire_error(e: postgres::Error) -> Error {
    match e.as_db_error() {
        Some(db) => Error::new(sqlstate(db.code().code()), db.message()),
        None => Error::new(SqlState::CONNECTION_FAILURE, e.to_string()),
    }
}

/// The SQLSTATE of a wire error ("08006" for a lost connection).
pub fn wire_code(e: &postgres::Error) -> String {
    e.code().map_or_else(
        || SqlState::CONNECTION_FAILURE.0.to_string(),
        |c| c.code().to_string(),
    )
}

/// A reachable wire endpoint: a connection string, and the in-process
/// server (with its database directory) if one was started.
pub struct Endpoint {
    pub conninfo: String,
    /// PostgreSQL rather than ndpdb.
    pub postgres: bool,
    /// The in-process server's database (for engine counters).
    pub db: Option<Database>,
    _dir: Option<tempfile::TempDir>,
}

impl Endpoint {
    /// Connects a new client.
    pub fn connect(&self) -> Result<postgres::Client> {
        postgres::Client::connect(&self.conninfo, postgres::NoTls).map_err(wire_error)
    }
}

/// Resolves a wire target: for `ndpdb-server` without an address, opens a
/// database (in `dir`, or a fresh temporary one) and serves it on a free
/// local port from a background runtime.
pub fn endpoint(target: &Target, config: Config, dir: Option<PathBuf>) -> Result<Endpoint> {
    match target {
        Target::Ndpdb => Err(invalid("the embedded target has no wire endpoint")),
        Target::Postgres(c) => Ok(Endpoint {
            conninfo: c.clone(),
            postgres: true,
            db: None,
            _dir: None,
        }),
        Target::NdpdbServer(Some(addr)) => {
            let (host, port) = addr.rsplit_once(':').unwrap_or((addr.as_str(), "5433"));
            Ok(Endpoint {
                conninfo: format!("host={host} port={port} user=bench dbname=bench"),
                postgres: false,
                db: None,
                _dir: None,
            })
        }
        Target::NdpdbServer(None) => {
            let tmp = match dir {
                Some(_) => None,
                None => Some(tempfile::tempdir()?),
            };
            let path = dir.unwrap_or_else(|| {
                tmp.as_ref()
                    .map(|t| t.path().to_path_buf())
                    .unwrap_or_default()
            });
            let db = ndpdb_embedded::open_with(&path, config)?;
            let port = start_server(db.clone())?;
            Ok(Endpoint {
                conninfo: format!("host=127.0.0.1 port={port} user=bench dbname=bench"),
                postgres: false,
                db: Some(db),
                _dir: tmp,
            })
        }
    }
}

/// Serves `db` on a free port from a background thread; returns the port.
fn start_server(db: Database) -> Result<u16> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("ndpdb-server".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let port = listener.local_addr().map(|a| a.port());
                let _ = tx.send(port);
                let _ =
                    ndpdb_server::serve(db, listener, ndpdb_server::ServerConfig::default()).await;
            });
        })?;
    rx.recv()
        .map_err(|_| Error::new(SqlState::INTERNAL_ERROR, "server thread ended"))?
        .map_err(Error::from)
}

/// Escapes a value for COPY's text format.
pub fn copy_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// Writes the machine's dirty page-cache pages back before a timed load:
/// otherwise the previous target's load (a gigabyte for 1 M YCSB rows) is
/// still being written back during the next one and slows whichever
/// system runs second.
pub fn write_back_dirty_pages() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// Loads rows through `COPY table FROM STDIN`, `chunk` rows per COPY (each
/// its own transaction). `row(i, &mut line)` writes row i's fields in
/// COPY text format, tab-separated, without the newline.
pub fn copy_rows(
    client: &mut postgres::Client,
    table: &str,
    rows: u64,
    chunk: u64,
    mut row: impl FnMut(u64, &mut String),
    mut progress: impl FnMut(u64),
) -> Result<()> {
    use std::io::Write;
    let mut start = 0;
    let mut line = String::new();
    while start < rows {
        let end = (start + chunk).min(rows);
        let mut w = client
            .copy_in(&format!("COPY {table} FROM STDIN"))
            .map_err(wire_error)?;
        let mut buf = Vec::with_capacity(1 << 20);
        for i in start..end {
            line.clear();
            row(i, &mut line);
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
            if buf.len() >= 1 << 20 {
                w.write_all(&buf)?;
                buf.clear();
            }
        }
        w.write_all(&buf)?;
        w.finish().map_err(wire_error)?;
        progress(end - start);
        start = end;
    }
    Ok(())
}

/// A workload's view of a target: an embedded database or a wire endpoint.
pub enum Backend {
    Embedded(Database),
    Wire(Endpoint),
}

impl Backend {
    /// Opens a client session.
    pub fn connect(&self) -> Result<Conn> {
        Ok(match self {
            Backend::Embedded(db) => Conn::Embedded(Box::new(Session::new(db.clone()))),
            Backend::Wire(e) => Conn::Wire(Box::new(e.connect()?)),
        })
    }

    /// The target is PostgreSQL (no ndpdb settings).
    pub fn is_postgres(&self) -> bool {
        matches!(self, Backend::Wire(e) if e.postgres)
    }

    /// The ndpdb database behind the target, when there is one in this
    /// process (for engine counters).
    pub fn database(&self) -> Option<&Database> {
        match self {
            Backend::Embedded(db) => Some(db),
            Backend::Wire(e) => e.db.as_ref(),
        }
    }
}

/// One client session on a target.
pub enum Conn {
    Embedded(Box<Session>),
    Wire(Box<postgres::Client>),
}

/// A statement prepared on a session.
pub enum Stmt {
    Embedded(Box<Prepared>),
    Wire(postgres::Statement),
}

impl Conn {
    /// Runs statements without results (setup, SET, BEGIN/COMMIT).
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Conn::Embedded(s) => s.execute(sql).map(|_| ()),
            Conn::Wire(c) => c.batch_execute(sql).map_err(wire_error),
        }
    }

    /// The first column of the first row `sql` returns, as an integer.
    pub fn query_i64(&mut self, sql: &str) -> Result<i64> {
        let missing = || {
            ndpdb_host::Error::new(
                ndpdb_formats::SqlState::INTERNAL_ERROR,
                format!("no integer from: {sql}"),
            )
        };
        match self {
            Conn::Embedded(s) => match s.execute(sql)?.pop() {
                Some(Output::Rows { rows, .. }) => rows
                    .first()
                    .and_then(|r| r.first())
                    .and_then(|v| v.as_i64())
                    .ok_or_else(missing),
                _ => Err(missing()),
            },
            Conn::Wire(c) => c
                .query_one(sql, &[])
                .and_then(|row| row.try_get::<_, i64>(0))
                .map_err(wire_error),
        }
    }

    /// The first column of the first row `sql` returns, as text (what
    /// `SHOW` answers).
    pub fn query_text(&mut self, sql: &str) -> Result<String> {
        self.query_rows(sql)?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten())
            .ok_or_else(|| {
                ndpdb_host::Error::new(
                    ndpdb_formats::SqlState::INTERNAL_ERROR,
                    format!("no value from: {sql}"),
                )
            })
    }

    /// Every row of the last result `sql` returns, as PostgreSQL's text
    /// (NULL as `None`).
    pub fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        Ok(match self {
            Conn::Embedded(s) => match s.execute(sql)?.pop() {
                Some(Output::Rows { rows, .. }) => rows
                    .into_iter()
                    .map(|r| r.iter().map(Value::to_pg_text).collect())
                    .collect(),
                _ => Vec::new(),
            },
            Conn::Wire(c) => text_rows(c.simple_query(sql).map_err(wire_error)?),
        })
    }

    /// What cancels this session's running statement from another thread.
    pub fn canceler(&self) -> Canceler {
        match self {
            Conn::Embedded(s) => Canceler::Embedded(s.interrupt()),
            Conn::Wire(c) => Canceler::Wire(c.cancel_token()),
        }
    }

    pub fn prepare(&mut self, sql: &str) -> Result<Stmt> {
        match self {
            Conn::Embedded(s) => Ok(Stmt::Embedded(Box::new(s.prepare(sql)?))),
            Conn::Wire(c) => c.prepare(sql).map(Stmt::Wire).map_err(wire_error),
        }
    }

    /// Executes a prepared statement; returns rows returned or affected.
    /// Errors carry the SQLSTATE (as a string, for error counts).
    pub fn execute(&mut self, stmt: &Stmt, params: &[Value]) -> std::result::Result<u64, String> {
        match (self, stmt) {
            (Conn::Embedded(s), Stmt::Embedded(p)) => match s.execute_prepared(p, params) {
                Ok(Output::Rows { rows, .. }) => Ok(rows.len() as u64),
                Ok(Output::Command { tag }) => Ok(tag
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0)),
                Err(e) => Err(e.code.to_string()),
            },
            (Conn::Wire(c), Stmt::Wire(st)) => {
                let params: Vec<Param> = params.iter().map(|v| Param(v.clone())).collect();
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    params.iter().map(|p| p as _).collect();
                let r = if st.columns().is_empty() {
                    c.execute(st, &refs)
                } else {
                    c.query(st, &refs).map(|rows| rows.len() as u64)
                };
                r.map_err(|e| wire_code(&e))
            }
            _ => Err(SqlState::INTERNAL_ERROR.0.into()),
        }
    }
}

/// Cancels a session's running statement (a no-op between statements on
/// ndpdb; PostgreSQL's CancelRequest over the wire).
pub enum Canceler {
    Embedded(ndpdb_host::Interrupt),
    Wire(postgres::CancelToken),
}

impl Canceler {
    pub fn cancel(&self) {
        match self {
            Canceler::Embedded(i) => i.cancel(),
            Canceler::Wire(t) => {
                let _ = t.cancel_query(postgres::NoTls);
            }
        }
    }
}

/// The rows of a simple-protocol reply as text (NULL as `None`).
pub fn text_rows(messages: Vec<postgres::SimpleQueryMessage>) -> Vec<Vec<Option<String>>> {
    messages
        .into_iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

/// A value bound as a wire parameter, encoded as the type the server
/// declared for it.
#[derive(Debug)]
pub struct Param(pub Value);

impl postgres::types::ToSql for Param {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>>
    {
        use postgres::types::{IsNull, Type};
        let mut int =
            |v: i64| -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
                match *ty {
                    Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
                    Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
                    Type::INT8 => v.to_sql(ty, out),
                    Type::FLOAT8 => (v as f64).to_sql(ty, out),
                    _ => v.to_string().to_sql(&Type::TEXT, out),
                }
            };
        match &self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::Bool(b) => b.to_sql(ty, out),
            Value::Int(i) => int(*i as i64),
            Value::BigInt(i) => int(*i),
            Value::Double(d) => d.to_sql(ty, out),
            Value::Text(s) => s.to_sql(ty, out),
            Value::Bytea(b) => b.to_sql(ty, out),
            other => Err(format!("no wire encoding for {other:?} in benchmarks").into()),
        }
    }

    fn accepts(_: &postgres::types::Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}
