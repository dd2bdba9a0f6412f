//! `ndpdb bench diff`: SQL conformance against PostgreSQL (DESIGN.md §12).
//! The same random tables are loaded into ndpdb and PostgreSQL through
//! COPY; then generated queries — filters, aggregates, GROUP BY, inner
//! and outer joins, CHAR comparisons, subqueries (IN / NOT IN, EXISTS,
//! ANY / ALL, scalar, correlated or not, in FROM and WITH),
//! ORDER BY with LIMIT — run on both over the wire and their rows are
//! compared: exactly for text, integers and NUMERIC, within 1e-9 relative
//! for DOUBLE PRECISION columns. A share of the queries exercise what
//! applications write beyond that: set operations (`UNION`, `INTERSECT`,
//! `EXCEPT`, each with `ALL`), arrays (`ARRAY[…]`, `= ANY`, `array_agg`
//! with ORDER BY, `unnest`), JSON (`jsonb_build_object`, `->>`, `@>`,
//! `to_json`, `json_agg`, `jsonb_object_agg`) and `string_agg`.
//!
//! ```text
//!  seed ─► t1 (id, a INT, b BIGINT, n NUMERIC(10,2), d DOUBLE, s TEXT,
//!              dt DATE, f BOOLEAN, c CHAR(6); ~10 % NULLs)
//!          t2 (id, t1_id, v, label)
//!          B-tree indexes: t1 (a), (dt, s), (c), (n); t2 (t1_id), (label, v)
//!       ─► query generator ─► ndpdb rows ═? PostgreSQL rows
//! ```
//!
//! Queries without ORDER BY compare as multisets; with ORDER BY … LIMIT
//! the order is total (the key ends with the primary key) and compares
//! row by row.

use std::fmt::Write as _;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ndpdb_host::Result;

use crate::target::{copy_rows, text_rows, wire_error};

/// One generated query.
#[derive(Clone, Debug)]
pub struct Query {
    pub sql: String,
    /// Output columns holding DOUBLE PRECISION values.
    pub floats: Vec<usize>,
    /// Rows compare in order (ORDER BY with a total key).
    pub ordered: bool,
}

/// One disagreement.
#[derive(Clone, Debug)]
pub struct Mismatch {
    pub sql: String,
    pub ndpdb: String,
    pub postgres: String,
}

#[derive(Debug, Default)]
pub struct DiffReport {
    pub queries: usize,
    pub matched: usize,
    /// Matches where both sides returned no rows, or both failed.
    pub matched_empty: usize,
    pub matched_errors: usize,
    /// Rows compared in matching results.
    pub rows_compared: usize,
    pub mismatches: Vec<Mismatch>,
}

const WORDS: &[&str] = &[
    "apple", "pear", "fig", "kiwi", "plum", "Lime", "grape", "melon", "", "a b",
];

/// A value from `gen`, or NULL (`\N`) one time in ten.
fn maybe_null(rng: &mut SmallRng, gen: impl FnOnce(&mut SmallRng) -> String) -> String {
    let v = gen(rng);
    if rng.gen_bool(0.1) {
        "\\N".into()
    } else {
        v
    }
}

/// Creates and loads t1 and t2 on one side.
pub fn load(client: &mut postgres::Client, rows: u64, seed: u64) -> Result<()> {
    client
        .batch_execute(
            "DROP TABLE IF EXISTS t1; DROP TABLE IF EXISTS t2; \
             CREATE TABLE t1 (id INT PRIMARY KEY, a INT, b BIGINT, n NUMERIC(10,2), \
             d DOUBLE PRECISION, s TEXT, dt DATE, f BOOLEAN, c CHAR(6)); \
             CREATE TABLE t2 (id INT PRIMARY KEY, t1_id INT, v INT, label VARCHAR(8))",
        )
        .map_err(wire_error)?;
    let mut rng = SmallRng::seed_from_u64(seed);
    copy_rows(
        client,
        "t1",
        rows,
        10_000,
        |i, line| {
            let a = maybe_null(&mut rng, |r| r.gen_range(-50..50).to_string());
            let b = maybe_null(&mut rng, |r| {
                r.gen_range(-1_000_000i64..1_000_000).to_string()
            });
            let cents: i64 = rng.gen_range(-100_000..100_000);
            let n = maybe_null(&mut rng, |_| {
                format!(
                    "{}{}.{:02}",
                    if cents < 0 { "-" } else { "" },
                    cents.abs() / 100,
                    cents.abs() % 100
                )
            });
            let d = maybe_null(&mut rng, |r| {
                format!("{}", r.gen_range(-1000.0..1000.0f64) / 7.0)
            });
            let s = maybe_null(&mut rng, |r| WORDS[r.gen_range(0..WORDS.len())].to_string());
            let dt = maybe_null(&mut rng, |r| {
                format!("2024-{:02}-{:02}", r.gen_range(1..=12), r.gen_range(1..=28))
            });
            let f = maybe_null(&mut rng, |r| if r.gen_bool(0.5) { "t" } else { "f" }.into());
            let c = maybe_null(&mut rng, |r| WORDS[r.gen_range(0..WORDS.len())].to_string());
            let _ = write!(line, "{i}\t{a}\t{b}\t{n}\t{d}\t{s}\t{dt}\t{f}\t{c}");
        },
        |_| {},
    )?;
    let t2_rows = rows * 2;
    copy_rows(
        client,
        "t2",
        t2_rows,
        10_000,
        |i, line| {
            let t1 = maybe_null(&mut rng, |r| r.gen_range(0..rows as i64 + 10).to_string());
            let v = maybe_null(&mut rng, |r| r.gen_range(0..100).to_string());
            let label = maybe_null(&mut rng, |r| format!("L{}", r.gen_range(0..20)));
            let _ = write!(line, "{i}\t{t1}\t{v}\t{label}");
        },
        |_| {},
    )?;
    // Indexed predicates: B-tree indexes on both systems (ndpdb uses one
    // for equality on a key prefix and a range on the next column).
    client
        .batch_execute(
            "CREATE INDEX t1_a ON t1 (a); CREATE INDEX t1_dt_s ON t1 (dt, s); \
             CREATE INDEX t1_c ON t1 (c); CREATE INDEX t1_n ON t1 (n); \
             CREATE INDEX t2_t1_id ON t2 (t1_id); CREATE INDEX t2_label_v ON t2 (label, v)",
        )
        .map_err(wire_error)?;
    Ok(())
}

fn predicate(rng: &mut SmallRng, depth: u32) -> String {
    if depth < 2 && rng.gen_bool(0.35) {
        let op = if rng.gen_bool(0.5) { "AND" } else { "OR" };
        let l = predicate(rng, depth + 1);
        let r = predicate(rng, depth + 1);
        return if rng.gen_bool(0.2) {
            format!("NOT ({l} {op} {r})")
        } else {
            format!("({l} {op} {r})")
        };
    }
    let k: i32 = rng.gen_range(-50..50);
    let word = WORDS[rng.gen_range(0..WORDS.len())];
    match rng.gen_range(0..22) {
        // Selective terms over indexed columns (t1_a, t1_dt_s, t1_n).
        18 => format!("t1.a = {k}"),
        19 => format!(
            "t1.dt = '2024-{:02}-{:02}'",
            rng.gen_range(1..=12),
            rng.gen_range(1..=28)
        ),
        20 => format!(
            "t1.dt = '2024-{:02}-{:02}' AND t1.s >= '{word}'",
            rng.gen_range(1..=12),
            rng.gen_range(1..=28)
        ),
        21 => format!("t1.n BETWEEN {k}.25 AND {}.75", k + rng.gen_range(0..3)),
        0 => format!("t1.a > {k}"),
        1 => format!("t1.a BETWEEN {k} AND {}", k + rng.gen_range(0..40)),
        2 => format!("t1.b % 7 = {}", rng.gen_range(-6..7)),
        3 => format!("t1.n < {k}.5"),
        4 => format!("t1.n >= {}", k * 10),
        5 => format!(
            "t1.s LIKE '{}%'",
            &WORDS[rng.gen_range(0..WORDS.len())]
                .chars()
                .take(2)
                .collect::<String>()
        ),
        6 => "t1.a IS NULL".into(),
        7 => "t1.s IS NOT NULL".into(),
        8 => "t1.f".into(),
        9 => "NOT t1.f".into(),
        10 => format!("t1.dt >= '2024-{:02}-15'", rng.gen_range(1..=12)),
        11 => format!("t1.a IN ({k}, {}, {})", k + 1, -k),
        12 => format!("t1.d < {}", rng.gen_range(-100..100)),
        // CHAR(6): compared without its padding, LIKE sees the padding.
        13 => format!("t1.c = '{word}'"),
        14 => format!("t1.c LIKE '{}%'", word.chars().take(2).collect::<String>()),
        15 => format!("length(t1.c) <= {}", rng.gen_range(0..6)),
        16 => format!("t1.c || 'x' > '{word}'"),
        _ => format!("t1.a + t1.b % 10 <> {k}"),
    }
}

/// Generates the `i`-th query.
pub fn query(rng: &mut SmallRng) -> Query {
    let p = predicate(rng, 0);
    let pick = rng.gen_range(0..20);
    if pick < 7 {
        return subquery(rng, &p);
    }
    if pick < 11 {
        return application(rng, &p);
    }
    match rng.gen_range(0..13) {
        0 => Query {
            sql: format!("SELECT t1.id, t1.a, t1.n, t1.s, t1.dt, t1.f, t1.c FROM t1 WHERE {p}"),
            floats: vec![],
            ordered: false,
        },
        1 => Query {
            sql: format!(
                "SELECT COUNT(*), COUNT(t1.a), SUM(t1.a), SUM(t1.b), MIN(t1.n), MAX(t1.n), SUM(t1.n), MIN(t1.s), MAX(t1.dt) FROM t1 WHERE {p}"
            ),
            floats: vec![],
            ordered: false,
        },
        2 => {
            let key = ["t1.a % 5", "t1.s", "t1.f", "t1.dt"][rng.gen_range(0..4)];
            Query {
                sql: format!(
                    "SELECT {key}, COUNT(*), SUM(t1.n), MIN(t1.b), MAX(t1.a) FROM t1 WHERE {p} GROUP BY {key}"
                ),
                floats: vec![],
                ordered: false,
            }
        }
        3 => Query {
            sql: format!(
                "SELECT t1.id, t2.id, t2.v, t2.label FROM t1 JOIN t2 ON t1.id = t2.t1_id WHERE {p}"
            ),
            floats: vec![],
            ordered: false,
        },
        4 => {
            let (key, dir) = (
                ["t1.a", "t1.n", "t1.s", "t1.dt", "t1.b"][rng.gen_range(0..5)],
                if rng.gen_bool(0.5) { "ASC" } else { "DESC" },
            );
            Query {
                sql: format!(
                    "SELECT t1.id, {key} FROM t1 WHERE {p} ORDER BY {key} {dir}, t1.id LIMIT {}",
                    rng.gen_range(1..30)
                ),
                floats: vec![],
                ordered: true,
            }
        }
        5 => Query {
            sql: format!("SELECT t1.id, t1.d, t1.d * 2 + 1 FROM t1 WHERE {p}"),
            floats: vec![1, 2],
            ordered: false,
        },
        6 => Query {
            sql: format!(
                "SELECT t2.label, COUNT(*), SUM(t2.v), SUM(t1.n) FROM t1 JOIN t2 ON t1.id = t2.t1_id WHERE {p} GROUP BY t2.label"
            ),
            floats: vec![],
            ordered: false,
        },
        7 => Query {
            sql: format!(
                "SELECT AVG(t1.a), AVG(t1.n), AVG(t1.b), COUNT(DISTINCT t1.s), AVG(t1.d) FROM t1 WHERE {p}"
            ),
            floats: vec![4],
            ordered: false,
        },
        8 => Query {
            sql: format!(
                "SELECT DISTINCT t1.a % 3, t1.f FROM t1 WHERE {p}"
            ),
            floats: vec![],
            ordered: false,
        },
        // Outer joins: t1's predicate in WHERE (it sees the NULL-filled
        // rows) or in ON (it never removes rows of the preserved side).
        10 => Query {
            sql: format!(
                "SELECT t1.id, t2.id, t2.v FROM t1 LEFT JOIN t2 ON t1.id = t2.t1_id AND t2.v > {} WHERE {p}",
                rng.gen_range(0..100)
            ),
            floats: vec![],
            ordered: false,
        },
        11 => Query {
            sql: format!(
                "SELECT t2.id, t2.label, t1.id, t1.a FROM t1 RIGHT JOIN t2 ON t1.id = t2.t1_id AND {p}"
            ),
            floats: vec![],
            ordered: false,
        },
        12 => Query {
            sql: format!(
                "SELECT t2.label, COUNT(*), COUNT(t1.id), SUM(t2.v), MAX(t1.c) FROM t1 FULL JOIN t2 ON t1.id = t2.t1_id AND t2.v < {} WHERE t2.id IS NULL OR {p} GROUP BY t2.label",
                rng.gen_range(0..100)
            ),
            floats: vec![],
            ordered: false,
        },
        _ => Query {
            sql: format!(
                "SELECT t1.id, t1.n * 2, t1.n / 3, t1.a * t1.b, CASE WHEN t1.a > 0 THEN 'pos' WHEN t1.a < 0 THEN 'neg' ELSE 'zero' END, upper(t1.s), length(t1.s), t1.dt + 1 FROM t1 WHERE {p}"
            ),
            floats: vec![],
            ordered: false,
        },
    }
}

/// A query of the SQL applications write beyond filters, joins and
/// aggregates, with the predicate `p` over t1.
fn application(rng: &mut SmallRng, p: &str) -> Query {
    let k: i32 = rng.gen_range(0..100);
    let unordered = |sql: String| Query {
        sql,
        floats: vec![],
        ordered: false,
    };
    match rng.gen_range(0..12) {
        0 => {
            let op = ["UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"]
                [rng.gen_range(0..6)];
            unordered(format!(
                "SELECT t1.a FROM t1 WHERE {p} {op} SELECT t2.v - 50 FROM t2 WHERE t2.v < {k}"
            ))
        }
        1 => {
            let op = ["UNION", "INTERSECT", "EXCEPT"][rng.gen_range(0..3)];
            Query {
                sql: format!(
                    "(SELECT t1.s, t1.f FROM t1 WHERE {p}) {op} (SELECT t2.label, t2.v > {k} FROM t2) ORDER BY 1, 2 LIMIT {}",
                    rng.gen_range(1..20)
                ),
                floats: vec![],
                ordered: true,
            }
        }
        2 => unordered(format!(
            "SELECT t1.id, ARRAY[t1.a, t1.a + 1, NULL], string_to_array(t1.s, ' '), array_length(ARRAY[t1.s, t1.c], 1) FROM t1 WHERE {p}"
        )),
        3 => unordered(format!(
            "SELECT t1.id FROM t1 WHERE t1.a = ANY (ARRAY[{k}, {}, -{k}]) OR t1.s = ANY ('{{apple,fig}}') AND {p}",
            k / 2
        )),
        4 => unordered(format!(
            "SELECT t1.a % 4, array_agg(t1.id ORDER BY t1.id DESC), array_agg(DISTINCT t1.f), string_agg(t1.s, '/' ORDER BY t1.s, t1.id) FROM t1 WHERE {p} GROUP BY t1.a % 4"
        )),
        5 => unordered(format!(
            "SELECT u, count(*) FROM (SELECT unnest(ARRAY[t1.a, t1.a % 3]) AS u FROM t1 WHERE {p}) x GROUP BY u"
        )),
        6 => unordered(format!(
            "SELECT t1.id, jsonb_build_object('a', t1.a, 's', t1.s, 'n', t1.n, 'f', t1.f, 'dt', t1.dt) FROM t1 WHERE {p}"
        )),
        7 => unordered(format!(
            "SELECT t1.id, json_build_object('c', t1.c, 'b', t1.b), to_json(t1.s), to_jsonb(t1.n), json_build_array(t1.a, t1.dt, t1.f) FROM t1 WHERE {p}"
        )),
        8 => unordered(format!(
            "SELECT count(*), sum((j ->> 'a')::int), min(j ->> 's') FROM (SELECT jsonb_build_object('a', t1.a, 's', t1.s, 'f', t1.f) AS j FROM t1 WHERE {p}) x WHERE j @> '{{\"f\": true}}' OR j ? 's'"
        )),
        9 => unordered(format!(
            "SELECT t1.a % 3, json_agg(t1.n ORDER BY t1.id), jsonb_agg(t1.s ORDER BY t1.id) FILTER (WHERE t1.s IS NOT NULL), jsonb_object_agg(t1.id, t1.dt) FROM t1 WHERE {p} GROUP BY t1.a % 3"
        )),
        10 => unordered(format!(
            "SELECT t2.label, string_agg(t2.v::text, ',' ORDER BY t2.id), json_object_agg(t2.id, t2.v ORDER BY t2.id) FROM t2 WHERE t2.v < {k} GROUP BY t2.label"
        )),
        _ => unordered(format!(
            "SELECT t1.id, octet_length(t1.s), replace(t1.s, 'p', 'P'), coalesce(t1.s, t1.c, 'none'), greatest(t1.s, t1.c), coalesce(t1.c, t1.s), t1.n::text, t1.dt::text FROM t1 WHERE {p}"
        )),
    }
}

/// A query with a subquery and the predicate `p` over t1.
fn subquery(rng: &mut SmallRng, p: &str) -> Query {
    let k: i32 = rng.gen_range(0..100);
    let label = format!("L{}", rng.gen_range(0..20));
    let not = if rng.gen_bool(0.5) { "NOT " } else { "" };
    let unordered = |sql: String| Query {
        sql,
        floats: vec![],
        ordered: false,
    };
    match rng.gen_range(0..10) {
        // A correlated lookup through the index t2 (t1_id).
        9 => unordered(format!(
            "SELECT t1.id, (SELECT SUM(t2.v) FROM t2 WHERE t2.t1_id = t1.id), (SELECT COUNT(*) FROM t2 WHERE t2.t1_id = t1.id AND t2.label >= '{label}') FROM t1 WHERE {p}"
        )),
        // Uncorrelated IN / NOT IN: t2.v has NULLs, so NOT IN is often NULL.
        0 => unordered(format!(
            "SELECT t1.id, t1.a FROM t1 WHERE t1.a {not}IN (SELECT t2.v - 50 FROM t2 WHERE t2.label = '{label}') AND {p}"
        )),
        // Correlated EXISTS through t2's primary key.
        1 => unordered(format!(
            "SELECT t1.id, t1.s FROM t1 WHERE {not}EXISTS (SELECT 1 FROM t2 WHERE t2.id = t1.id * 2 + 1 AND t2.v > {k}) AND {p}"
        )),
        // Correlated scalar subqueries in the select list (by t1.a: at
        // most 100 distinct arguments).
        2 => unordered(format!(
            "SELECT t1.id, (SELECT COUNT(*) FROM t2 WHERE t2.v = t1.a + 50), (SELECT MAX(t2.label) FROM t2 WHERE t2.v = t1.a + 50 AND t2.id < {}) FROM t1 WHERE {p}",
            k * 40
        )),
        // An uncorrelated scalar subquery as a bound.
        3 => unordered(format!(
            "SELECT t1.id, t1.n FROM t1 WHERE t1.n > (SELECT AVG(t2.v) * 10 - 500 FROM t2 WHERE t2.label = '{label}') AND {p}"
        )),
        // ANY / ALL.
        4 => {
            let (op, q) = [("<", "ALL"), (">=", "ALL"), ("=", "ANY"), ("<>", "ANY"), (">", "SOME")]
                [rng.gen_range(0..5)];
            unordered(format!(
                "SELECT t1.id, t1.a FROM t1 WHERE t1.a {op} {q} (SELECT t2.v - 60 FROM t2 WHERE t2.id < {k}) AND {p}"
            ))
        }
        // A query in FROM, grouped, and filtered outside.
        5 => unordered(format!(
            "SELECT g.k, g.cnt, g.total FROM (SELECT t1.a % 5 AS k, COUNT(*) AS cnt, SUM(t1.n) AS total FROM t1 WHERE {p} GROUP BY t1.a % 5) g WHERE g.cnt > {}",
            k % 10
        )),
        // WITH, joined to a table.
        6 => unordered(format!(
            "WITH w AS (SELECT t2.t1_id AS id, SUM(t2.v) AS total, COUNT(*) AS cnt FROM t2 WHERE t2.v > {k} GROUP BY t2.t1_id) SELECT t1.id, w.total, w.cnt FROM t1 JOIN w ON w.id = t1.id WHERE {p}"
        )),
        // HAVING against a subquery.
        7 => unordered(format!(
            "SELECT t1.a % 7, COUNT(*) FROM t1 WHERE {p} GROUP BY t1.a % 7 HAVING COUNT(*) > (SELECT COUNT(*) FROM t2 WHERE t2.label = '{label}') / 10"
        )),
        // A correlated subquery over grouped rows, and an IN over CHAR(6).
        _ => unordered(format!(
            "SELECT t1.c, COUNT(*), (SELECT COUNT(*) FROM t2 WHERE t2.label = 'L' || length(t1.c)) FROM t1 WHERE t1.c {not}IN (SELECT t1.s FROM t1 WHERE t1.id < {k}) AND {p} GROUP BY t1.c"
        )),
    }
}

type Rows = Vec<Vec<Option<String>>>;

/// Runs a query; an error becomes its SQLSTATE, so both sides must agree
/// on failing too.
fn rows_of(client: &mut postgres::Client, sql: &str) -> std::result::Result<Rows, String> {
    let msgs = client
        .simple_query(sql)
        .map_err(|e| match e.as_db_error() {
            Some(db) => format!("ERROR {}: {}", db.code().code(), db.message()),
            None => format!("ERROR {e}"),
        })?;
    Ok(text_rows(msgs))
}

fn cell_eq(a: &Option<String>, b: &Option<String>, float: bool) -> bool {
    match (a, b) {
        (Some(x), Some(y)) if float => match (x.parse::<f64>(), y.parse::<f64>()) {
            (Ok(p), Ok(q)) => p == q || (p - q).abs() <= 1e-9 * p.abs().max(q.abs()),
            _ => x == y,
        },
        _ => a == b,
    }
}

fn rows_eq(a: &Rows, b: &Rows, q: &Query) -> bool {
    let (mut a, mut b) = (a.clone(), b.clone());
    if !q.ordered {
        a.sort();
        b.sort();
    }
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .enumerate()
                    .all(|(i, (p, q2))| cell_eq(p, q2, q.floats.contains(&i)))
        })
}

fn show(r: &std::result::Result<Rows, String>) -> String {
    match r {
        Err(e) => e.clone(),
        Ok(rows) => {
            let mut s = format!("{} rows", rows.len());
            for row in rows.iter().take(5) {
                let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("NULL")).collect();
                let _ = write!(s, " | {}", cells.join(","));
            }
            s
        }
    }
}

/// How many times `--prepared` runs each prepared query.
pub const PREPARED_RUNS: usize = 3;

/// Prepares `sql` (SQL's PREPARE, on the simple protocol so that the
/// answers come as text on both sides), runs it `runs` times and
/// deallocates it: every answer, or the first error.
fn prepared_rows(
    client: &mut postgres::Client,
    sql: &str,
    runs: usize,
) -> std::result::Result<Vec<Rows>, String> {
    rows_of(client, &format!("PREPARE ndpdb_diff AS {sql}"))?;
    let answers = (0..runs)
        .map(|_| rows_of(client, "EXECUTE ndpdb_diff"))
        .collect();
    rows_of(client, "DEALLOCATE ndpdb_diff")?;
    answers
}

/// Both sides' answers agree: the same rows, or rejected by both with the
/// same SQLSTATE.
fn answers_agree(
    mine: &std::result::Result<Vec<Rows>, String>,
    theirs: &std::result::Result<Vec<Rows>, String>,
    q: &Query,
) -> bool {
    match (mine, theirs) {
        (Ok(a), Ok(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| rows_eq(x, y, q)),
        (Err(a), Err(b)) => a.split(':').next() == b.split(':').next(),
        _ => false,
    }
}

/// Runs `queries` generated queries on both sides and compares; with
/// `prepared`, each query is prepared and run [`PREPARED_RUNS`] times.
pub fn compare(
    ndpdb: &mut postgres::Client,
    postgres: &mut postgres::Client,
    queries: usize,
    seed: u64,
    prepared: bool,
) -> DiffReport {
    let mut rng = SmallRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(7));
    let mut report = DiffReport::default();
    for _ in 0..queries {
        let q = query(&mut rng);
        let run = |client: &mut postgres::Client| match prepared {
            true => prepared_rows(client, &q.sql, PREPARED_RUNS),
            false => rows_of(client, &q.sql).map(|rows| vec![rows]),
        };
        let all_mine = run(ndpdb);
        let all_theirs = run(postgres);
        report.queries += 1;
        let same = answers_agree(&all_mine, &all_theirs, &q);
        let first = |r: std::result::Result<Vec<Rows>, String>| {
            r.and_then(|mut v| match v.is_empty() {
                true => Err("no answer".to_string()),
                false => Ok(v.swap_remove(0)),
            })
        };
        let (mine, theirs) = (first(all_mine), first(all_theirs));
        if same {
            report.matched += 1;
            match &mine {
                Ok(r) if r.is_empty() => report.matched_empty += 1,
                Ok(r) => report.rows_compared += r.len(),
                Err(_) => report.matched_errors += 1,
            }
        } else {
            report.mismatches.push(Mismatch {
                sql: q.sql.clone(),
                ndpdb: show(&mine),
                postgres: show(&theirs),
            });
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[&[Option<&str>]]) -> Rows {
        v.iter()
            .map(|r| r.iter().map(|c| c.map(str::to_string)).collect())
            .collect()
    }

    #[test]
    fn comparison_is_exact_except_for_double_columns() {
        let q = |floats: Vec<usize>, ordered| Query {
            sql: String::new(),
            floats,
            ordered,
        };
        let a = rows(&[&[Some("1"), Some("0.30000000000000004")]]);
        let b = rows(&[&[Some("1"), Some("0.3")]]);
        assert!(rows_eq(&a, &b, &q(vec![1], false)));
        assert!(
            !rows_eq(&a, &b, &q(vec![], false)),
            "NUMERIC/text compare exactly"
        );
        let c = rows(&[&[Some("1"), Some("0.3001")]]);
        assert!(!rows_eq(&c, &b, &q(vec![1], false)));
        // NULL is not an empty string.
        assert!(!rows_eq(
            &rows(&[&[None]]),
            &rows(&[&[Some("")]]),
            &q(vec![], false)
        ));
        // Order matters only for ordered queries; multiplicity always.
        let x = rows(&[&[Some("1")], &[Some("2")]]);
        let y = rows(&[&[Some("2")], &[Some("1")]]);
        assert!(rows_eq(&x, &y, &q(vec![], false)));
        assert!(!rows_eq(&x, &y, &q(vec![], true)));
        let z = rows(&[&[Some("1")], &[Some("1")]]);
        assert!(!rows_eq(&x, &z, &q(vec![], false)));
    }
}
