//! Runs every `tests/slt/*.slt` file against a fresh database (its device
//! in process, or an `ndpdb device` process when `NDPDB_TEST_DEVICE_BIN`
//! names the binary: `ndpdb_embedded::process`), once per placement (`SET ndp = off | on | auto`): host-only and NDP
//! plans must give the same answers. A file that sets `ndp` itself (it
//! tests placement) runs once. Error expectations match
//! `<SQLSTATE>: <message>`.
//!
//! Then every file runs once more with each statement sent as a prepared
//! statement, as drivers send them: kept by its text for the whole file
//! (so a text that comes again runs the plan made the first time, after
//! whatever DDL came between; one whose result columns changed is
//! prepared again on PostgreSQL's 0A000, as pgjdbc does), and a query run
//! twice, both answers checked.

use ndpdb_formats::{DataType, Value};
use ndpdb_sql::{Output, Session};
use sqllogictest::{DBOutput, DefaultColumnType};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
struct SltError(String);

struct Embedded {
    session: Session,
    /// Prepared statements by text (the prepared run), else `None`.
    prepared: Option<std::collections::HashMap<String, ndpdb_sql::session::Prepared>>,
    _db: ndpdb_embedded::process::Opened,
    _dir: tempfile::TempDir,
}

fn column_type(t: DataType) -> DefaultColumnType {
    match t {
        DataType::Int | DataType::BigInt => DefaultColumnType::Integer,
        DataType::Double | DataType::Numeric { .. } => DefaultColumnType::FloatingPoint,
        _ => DefaultColumnType::Text,
    }
}

impl sqllogictest::DB for Embedded {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let err = |e: ndpdb_sql::Error| SltError(format!("{}: {}", e.code, e.message));
        let out = match self.prepared.as_mut() {
            Some(cache) if one_statement(sql) => {
                if !cache.contains_key(sql) {
                    cache.insert(sql.to_string(), self.session.prepare(sql).map_err(err)?);
                }
                let p = &cache[sql];
                let first = match self.session.execute_prepared(p, &[]) {
                    // As drivers do (pgjdbc, postgres.js, Rails): a
                    // statement whose result columns a DDL changed is
                    // prepared again and run once more.
                    Err(e) if e.routine == Some("RevalidateCachedQuery") => {
                        cache.insert(sql.to_string(), self.session.prepare(sql).map_err(err)?);
                        self.session.execute_prepared(&cache[sql], &[])
                    }
                    first => first,
                }
                .map_err(err)?;
                let p = &cache[sql];
                if matches!(first, Output::Rows { .. }) && repeatable(sql) {
                    let again = self.session.execute_prepared(p, &[]).map_err(err)?;
                    if sorted_rows(&again) != sorted_rows(&first) {
                        return Err(SltError(format!(
                            "a second run of the prepared statement answered differently:\n{first:?}\n{again:?}"
                        )));
                    }
                }
                Some(first)
            }
            _ => self.session.execute(sql).map_err(err)?.pop(),
        };
        Ok(match out {
            Some(Output::Rows { columns, rows }) => DBOutput::Rows {
                types: columns.iter().map(|c| column_type(c.ty)).collect(),
                rows: rows
                    .into_iter()
                    .map(|r| {
                        r.iter()
                            .map(|v| match v {
                                Value::Null => "NULL".to_string(),
                                Value::Text(s) if s.is_empty() => "(empty)".to_string(),
                                v => v.to_pg_text().unwrap_or_default(),
                            })
                            .collect()
                    })
                    .collect(),
            },
            Some(Output::Command { tag }) => {
                let n = tag
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                DBOutput::StatementComplete(n)
            }
            None => DBOutput::StatementComplete(0),
        })
    }
}

/// The rows of a result in a fixed order (a query without ORDER BY may
/// answer in another order each time).
fn sorted_rows(out: &Output) -> Vec<String> {
    let mut rows: Vec<String> = match out {
        Output::Rows { rows, .. } => rows.iter().map(|r| format!("{r:?}")).collect(),
        Output::Command { tag } => vec![tag.clone()],
    };
    rows.sort();
    rows
}

/// Whether `sql` holds one statement (a prepared statement holds one).
fn one_statement(sql: &str) -> bool {
    ndpdb_sql::session::parse(sql).is_ok_and(|s| s.len() == 1)
}

/// Whether running the query again must answer the same: not when it
/// draws from a sequence or a clock, or reads what it changes.
fn repeatable(sql: &str) -> bool {
    let lower = sql.to_lowercase();
    // INSERT/UPDATE/DELETE … RETURNING answer rows but write.
    let first = lower.split_whitespace().next().unwrap_or("");
    if matches!(first, "insert" | "update" | "delete") {
        return false;
    }
    ![
        "nextval",
        "setval",
        "random",
        "clock_timestamp",
        "ndpdb_backup",
        "now()",
        "current_time",
    ]
    .iter()
    .any(|f| lower.contains(f))
}

#[test]
fn sqllogictest_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let modes: &[&str] = if text.contains("SET ndp") {
            &["auto", "prepared"]
        } else {
            &["off", "on", "auto", "prepared"]
        };
        for &mode in modes {
            let prepared = mode == "prepared";
            let ndp = if prepared { "auto" } else { mode };
            let mut runner = sqllogictest::Runner::new(move || async move {
                let dir = tempfile::tempdir().map_err(|e| SltError(e.to_string()))?;
                let db = ndpdb_embedded::process::open_variant(dir.path(), Default::default())
                    .map_err(|e| SltError(e.to_string()))?;
                let mut session = Session::new((*db).clone());
                session
                    .execute(&format!("SET ndp = {ndp}"))
                    .map_err(|e| SltError(e.message))?;
                Ok(Embedded {
                    session,
                    prepared: prepared.then(Default::default),
                    _db: db,
                    _dir: dir,
                })
            });
            if let Err(e) = runner.run_file(&f) {
                panic!("{} (ndp = {mode}): {}", f.display(), e.display(true));
            }
        }
    }
}
