//! Runs every `tests/slt/*.slt` file against a fresh database (its device
//! in process, or an `ndpdb device` process when `NDPDB_TEST_DEVICE_BIN`
//! names the binary: `ndpdb_embedded::process`), once per placement (`SET ndp = off | on | auto`): host-only and NDP
//! plans must give the same answers. A file that sets `ndp` itself (it
//! tests placement) runs once. Error expectations match
//! `<SQLSTATE>: <message>`.

use ndpdb_formats::{DataType, Value};
use ndpdb_sql::{Output, Session};
use sqllogictest::{DBOutput, DefaultColumnType};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
struct SltError(String);

struct Embedded {
    session: Session,
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
        let mut outs = self
            .session
            .execute(sql)
            .map_err(|e| SltError(format!("{}: {}", e.code, e.message)))?;
        Ok(match outs.pop() {
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
            &["auto"]
        } else {
            &["off", "on", "auto"]
        };
        for &mode in modes {
            let mut runner = sqllogictest::Runner::new(move || async move {
                let dir = tempfile::tempdir().map_err(|e| SltError(e.to_string()))?;
                let db = ndpdb_embedded::process::open_variant(dir.path(), Default::default())
                    .map_err(|e| SltError(e.to_string()))?;
                let mut session = Session::new((*db).clone());
                session
                    .execute(&format!("SET ndp = {mode}"))
                    .map_err(|e| SltError(e.message))?;
                Ok(Embedded {
                    session,
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
