//! The SQL fuzz target: statements from a small grammar (and arbitrary
//! text) through the parser, the planner and the executor of a session.
//!
//! ```text
//!  bytes ─► Unstructured ─► SELECT / INSERT / UPDATE / DELETE / EXPLAIN /
//!           SET / BEGIN … over tables t, u, w with nested expressions,
//!           functions, casts, CASE, IN, BETWEEN, aggregates, joins —
//!           sometimes cut or spliced, sometimes raw text
//!        ─► Session::execute (statement_timeout 2 s)
//!  checks: no panic; no internal or corruption error (XX000, XX001);
//!          the session still answers afterwards
//! ```

use arbitrary::{Result, Unstructured};

use ndpdb_formats::SqlState;
use ndpdb_host::Database;
use ndpdb_sql::Session;

const SCHEMA: &[&str] = &[
    "CREATE TABLE t (id INT PRIMARY KEY, v INT, s TEXT)",
    "CREATE TABLE u (k INT PRIMARY KEY, w TEXT)",
    "CREATE TABLE w (i BIGINT PRIMARY KEY, d DATE, n NUMERIC(10, 2), f DOUBLE PRECISION, \
     b BOOLEAN, x BYTEA, ts TIMESTAMP, vc VARCHAR(8))",
    "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, NULL, 'c'), (4, 40, NULL), (5, 50, 'e%')",
    "INSERT INTO u VALUES (1, 'x'), (3, 'y'), (7, NULL)",
    "INSERT INTO w VALUES (1, '2024-02-29', 1.50, 0.5, TRUE, '\\x00ff', '2024-01-01 10:00:00', 'abc'), \
     (2, NULL, -3.25, 'NaN', FALSE, NULL, NULL, NULL)",
];

/// Statements before the tables are created afresh.
const RESET_EVERY: u64 = 2_000;

pub struct SqlTarget {
    _dir: tempfile::TempDir,
    db: Database,
    runs: u64,
    /// Every statement since the tables were last created, so that a
    /// failure that depends on earlier statements can be replayed.
    history: Vec<String>,
}

const COLUMNS: &[&str] = &[
    "id", "v", "s", "t.id", "t.v", "k", "w", "u.k", "i", "d", "n", "f", "b", "x", "ts", "vc",
    "a.id", "nope",
];
const LITERALS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2147483647",
    "-2147483648",
    "9223372036854775807",
    "1.5",
    "1e308",
    "'a'",
    "''",
    "'%'",
    "'2024-02-30'",
    "'2024-01-01'",
    "NULL",
    "TRUE",
    "FALSE",
    "'NaN'",
    "0.0",
    "12345678901234567890.123",
    "'\\x41'",
    "$1",
];
const BINARY: &[&str] = &[
    "+", "-", "*", "/", "%", "||", "=", "<>", "<", "<=", ">", ">=", "AND", "OR", "LIKE", "ILIKE",
    "NOT LIKE",
];
const FUNCTIONS: &[&str] = &[
    "abs",
    "lower",
    "upper",
    "length",
    "coalesce",
    "round",
    "floor",
    "ceil",
    "substr",
    "nullif",
    "greatest",
    "least",
    "trim",
    "spn_score",
    "current_setting",
    "version",
    "nope",
];
const TYPES: &[&str] = &[
    "INT",
    "BIGINT",
    "TEXT",
    "VARCHAR(3)",
    "NUMERIC(5, 2)",
    "DOUBLE PRECISION",
    "BOOLEAN",
    "DATE",
    "TIMESTAMP",
    "BYTEA",
    "SMALLINT",
    "REAL",
];
const AGGREGATES: &[&str] = &["count", "sum", "min", "max", "avg"];

fn expr(u: &mut Unstructured, depth: u32, out: &mut String) -> Result<()> {
    let leaf = depth == 0 || u.ratio(1, 3)?;
    if leaf {
        if u.ratio(1, 2)? {
            out.push_str(u.choose(COLUMNS)?);
        } else {
            out.push_str(u.choose(LITERALS)?);
        }
        return Ok(());
    }
    match u.int_in_range(0..=10)? {
        0 => {
            out.push_str(u.choose(&["-", "NOT ", "+"])?);
            expr(u, depth - 1, out)?;
        }
        1..=3 => {
            expr(u, depth - 1, out)?;
            out.push(' ');
            out.push_str(u.choose(BINARY)?);
            out.push(' ');
            expr(u, depth - 1, out)?;
        }
        4 => {
            out.push_str(u.choose(FUNCTIONS)?);
            out.push('(');
            let n = u.int_in_range(0..=3)?;
            for i in 0..n {
                if i > 0 {
                    out.push_str(", ");
                }
                expr(u, depth - 1, out)?;
            }
            out.push(')');
        }
        5 => {
            out.push_str("CASE WHEN ");
            expr(u, depth - 1, out)?;
            out.push_str(" THEN ");
            expr(u, depth - 1, out)?;
            if u.ratio(1, 2)? {
                out.push_str(" ELSE ");
                expr(u, depth - 1, out)?;
            }
            out.push_str(" END");
        }
        6 => {
            out.push_str("CAST(");
            expr(u, depth - 1, out)?;
            out.push_str(" AS ");
            out.push_str(u.choose(TYPES)?);
            out.push(')');
        }
        7 => {
            expr(u, depth - 1, out)?;
            out.push_str(u.choose(&[" IS NULL", " IS NOT NULL", " IS TRUE"])?);
        }
        8 => {
            expr(u, depth - 1, out)?;
            out.push_str(u.choose(&[" IN (", " NOT IN ("])?);
            let n = u.int_in_range(1..=20)?;
            for i in 0..n {
                if i > 0 {
                    out.push_str(", ");
                }
                expr(u, depth.saturating_sub(2), out)?;
            }
            out.push(')');
        }
        9 => {
            expr(u, depth - 1, out)?;
            out.push_str(" BETWEEN ");
            expr(u, depth - 1, out)?;
            out.push_str(" AND ");
            expr(u, depth - 1, out)?;
        }
        _ => {
            out.push('(');
            expr(u, depth - 1, out)?;
            out.push(')');
        }
    }
    Ok(())
}

fn select(u: &mut Unstructured, out: &mut String) -> Result<()> {
    out.push_str("SELECT ");
    if u.ratio(1, 6)? {
        out.push_str("DISTINCT ");
    }
    let aggregate = u.ratio(1, 3)?;
    let n = u.int_in_range(1..=3)?;
    for i in 0..n {
        if i > 0 {
            out.push_str(", ");
        }
        if aggregate && u.ratio(1, 2)? {
            let f = u.choose(AGGREGATES)?;
            out.push_str(f);
            out.push('(');
            if *f == "count" && u.ratio(1, 2)? {
                out.push('*');
            } else {
                if u.ratio(1, 5)? {
                    out.push_str("DISTINCT ");
                }
                expr(u, 2, out)?;
            }
            out.push(')');
        } else if u.ratio(1, 8)? {
            out.push('*');
        } else {
            expr(u, 3, out)?;
        }
    }
    match u.int_in_range(0..=5)? {
        0 => {}
        1 => out.push_str(" FROM t a JOIN u b ON a.id = b.k"),
        2 => out.push_str(" FROM t, u"),
        3 => out.push_str(" FROM w"),
        4 => out.push_str(" FROM u"),
        _ => out.push_str(" FROM t"),
    }
    if u.ratio(1, 2)? {
        out.push_str(" WHERE ");
        expr(u, 4, out)?;
    }
    if aggregate && u.ratio(1, 2)? {
        out.push_str(" GROUP BY ");
        expr(u, 1, out)?;
        if u.ratio(1, 3)? {
            out.push_str(" HAVING ");
            expr(u, 2, out)?;
        }
    }
    if u.ratio(1, 3)? {
        out.push_str(" ORDER BY ");
        expr(u, 1, out)?;
        out.push_str(u.choose(&["", " DESC", " NULLS FIRST"])?);
    }
    if u.ratio(1, 4)? {
        out.push_str(u.choose(&[" LIMIT 2", " LIMIT 0", " LIMIT 1 OFFSET 1", " OFFSET 9"])?);
    }
    if u.ratio(1, 10)? {
        out.push_str(" FOR UPDATE");
    }
    Ok(())
}

fn statement(u: &mut Unstructured) -> Result<String> {
    let mut out = String::new();
    match u.int_in_range(0..=14)? {
        0..=5 => select(u, &mut out)?,
        6 => {
            out.push_str("INSERT INTO t VALUES (");
            expr(u, 1, &mut out)?;
            out.push_str(", ");
            expr(u, 2, &mut out)?;
            out.push_str(", ");
            expr(u, 1, &mut out)?;
            out.push(')');
        }
        7 => {
            out.push_str("UPDATE t SET v = ");
            expr(u, 2, &mut out)?;
            out.push_str(" WHERE ");
            expr(u, 2, &mut out)?;
        }
        8 => {
            out.push_str("DELETE FROM u WHERE ");
            expr(u, 2, &mut out)?;
        }
        9 => {
            out.push_str(u.choose(&["EXPLAIN ", "EXPLAIN ANALYZE "])?);
            select(u, &mut out)?;
        }
        10 => out.push_str(u.choose(&[
            "BEGIN",
            "COMMIT",
            "ROLLBACK",
            "SET ndp = on",
            "SET ndp = off",
            "SET ndp = auto",
            "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "SHOW ndp",
            "SHOW STATS",
            "INSERT INTO u SELECT id + 100, s FROM t",
        ])?),
        11 => {
            // Deep nesting.
            let n = u.int_in_range(1..=5000)? as usize;
            let op = u.choose(&[" + 1", " || 'a'", " AND TRUE", " OR FALSE", " * 1"])?;
            out.push_str(&format!("SELECT 1{}", op.repeat(n)));
        }
        12 => {
            let n = u.int_in_range(1..=12_000)? as usize;
            let (open, close) =
                u.choose(&[("(", ")"), ("abs(", ")"), ("(SELECT ", ")"), ("-(", ")")])?;
            out.push_str(&format!("SELECT {}1{}", open.repeat(n), close.repeat(n)));
        }
        _ => out.push_str(&String::from_utf8_lossy(&crate::wire::script::some_bytes(
            u, 0, 80,
        )?)),
    }
    // Sometimes cut the statement short or splice bytes into it.
    if u.ratio(1, 8)? && !out.is_empty() {
        let mut at = u.int_in_range(0..=out.len())?;
        while !out.is_char_boundary(at) {
            at -= 1;
        }
        if u.ratio(1, 2)? {
            out.truncate(at);
        } else {
            out.insert_str(
                at,
                u.choose(&["(", ")", "'", ",", " FROM ", ";", "--", "/*", "$2"])?,
            );
        }
    }
    Ok(out)
}

impl SqlTarget {
    pub fn new() -> SqlTarget {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = ndpdb_embedded::open(dir.path()).expect("a database");
        let target = SqlTarget {
            _dir: dir,
            db,
            runs: 0,
            history: Vec::new(),
        };
        target.reset();
        target
    }

    fn reset(&self) {
        let mut s = Session::new(self.db.clone());
        for t in ["t", "u", "w"] {
            let _ = s.execute(&format!("DROP TABLE {t}"));
        }
        for sql in SCHEMA {
            s.execute(sql).expect("the SQL fuzz schema");
        }
    }

    /// Runs one input; `Err` describes a failure.
    pub fn run(&mut self, data: &[u8]) -> std::result::Result<u64, String> {
        self.runs += 1;
        if self.runs.is_multiple_of(RESET_EVERY) {
            self.reset();
            self.history.clear();
        }
        let mut u = Unstructured::new(data);
        let mut session = Session::new(self.db.clone());
        session
            .execute("SET statement_timeout = '2s'")
            .map_err(|e| e.message)?;
        self.history.push(SESSION_MARK.to_string());
        let mut signature = 0u64;
        let n = u.int_in_range(1..=4).unwrap_or(1);
        for _ in 0..n {
            let Ok(sql) = statement(&mut u) else { break };
            if std::env::var_os("NDPDB_FUZZ_DEBUG").is_some() {
                eprintln!("sql> {sql}");
            }
            self.history.push(sql.clone());
            let code = match session.execute(&sql) {
                Ok(_) => SqlState::SUCCESSFUL,
                Err(e) => {
                    if e.code == SqlState::INTERNAL_ERROR || e.code == SqlState::DATA_CORRUPTED {
                        return Err(format!(
                            "{} {} (detail {:?}) from {sql:?}\n{};",
                            e.code.0,
                            e.message,
                            e.detail,
                            self.history.join(";\n")
                        ));
                    }
                    e.code
                }
            };
            signature = signature.rotate_left(7)
                ^ code
                    .0
                    .bytes()
                    .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
        }
        let _ = session.execute("ROLLBACK");
        session
            .execute("SELECT 1")
            .map_err(|e| format!("the session no longer answers: {} {}", e.code, e.message))?;
        Ok(signature)
    }
}

/// The statements of a history file: each ends with `;` at a line end.
pub fn statements_of(text: &str) -> Vec<String> {
    text.split(";\n")
        .map(|s| s.trim_start_matches('\n').trim_end_matches(';').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Where the statements of one run (one session) begin in a history.
pub const SESSION_MARK: &str = "-- session";

/// Runs `statements` on fresh tables as the fuzz runs did (a new session at
/// each [`SESSION_MARK`], rolled back when it ends) and fails on the first
/// internal or corruption error or panic: how the statements saved beside a
/// failing input are replayed and shrunk.
pub fn replay_statements(statements: &[String]) -> std::result::Result<(), String> {
    let target = SqlTarget::new();
    let fresh = || {
        let mut session = Session::new(target.db.clone());
        let _ = session.execute("SET statement_timeout = '2s'");
        session
    };
    let mut session = fresh();
    for sql in statements {
        if sql == SESSION_MARK {
            let _ = session.execute("ROLLBACK");
            session = fresh();
            continue;
        }
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session.execute(sql)));
        match outcome {
            Err(_) => return Err(format!("panic from {sql:?}")),
            Ok(Err(e))
                if e.code == SqlState::INTERNAL_ERROR || e.code == SqlState::DATA_CORRUPTED =>
            {
                return Err(format!("{} {} from {sql:?}", e.code.0, e.message));
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

impl Default for SqlTarget {
    fn default() -> SqlTarget {
        SqlTarget::new()
    }
}
