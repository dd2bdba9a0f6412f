//! The sqllogictest suite of the SQL layer (`crates/sql/tests/slt/*.slt`),
//! run through the server over the wire: the same files pass embedded
//! (crates/sql/tests/slt.rs) and here. Results are read in the simple
//! protocol's text format; errors match `<SQLSTATE>: <message>`.

use sqllogictest::{DBOutput, DefaultColumnType};
use tokio_postgres::{NoTls, SimpleQueryMessage};

mod common;
use common::{conninfo, start, temp_db};

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct SltError(String);

struct Wire {
    client: tokio_postgres::Client,
    _dir: tempfile::TempDir,
}

#[async_trait::async_trait]
impl sqllogictest::AsyncDB for Wire {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let messages = self
            .client
            .simple_query(sql)
            .await
            .map_err(|e| match e.as_db_error() {
                Some(db) => SltError(format!("{}: {}", db.code().code(), db.message())),
                None => SltError(e.to_string()),
            })?;
        // The last statement's result, as the embedded runner reports it.
        let mut rows = Vec::new();
        let mut columns = 0;
        let mut last = DBOutput::StatementComplete(0);
        for m in messages {
            match m {
                SimpleQueryMessage::RowDescription(desc) => {
                    columns = desc.len();
                    rows.clear();
                }
                SimpleQueryMessage::Row(r) => {
                    let row: Vec<String> = (0..r.len())
                        .map(|i| match r.get(i) {
                            None => "NULL".to_string(),
                            Some("") => "(empty)".to_string(),
                            Some(v) => v.to_string(),
                        })
                        .collect();
                    rows.push(row);
                }
                SimpleQueryMessage::CommandComplete(n) => {
                    last = if columns > 0 {
                        DBOutput::Rows {
                            types: vec![DefaultColumnType::Any; columns],
                            rows: std::mem::take(&mut rows),
                        }
                    } else {
                        DBOutput::StatementComplete(n)
                    };
                    columns = 0;
                }
                _ => {}
            }
        }
        Ok(last)
    }

    async fn shutdown(&mut self) {}
}

#[test]
fn sqllogictest_files_pass_over_the_wire() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sql/tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("slt directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for f in files {
        rt.block_on(async {
            let mut runner = sqllogictest::Runner::new(|| async {
                let (dir, db) = temp_db();
                let port = start(db);
                let (client, conn) = tokio_postgres::connect(&conninfo(port), NoTls)
                    .await
                    .map_err(|e| SltError(e.to_string()))?;
                tokio::spawn(conn);
                Ok(Wire { client, _dir: dir })
            });
            if let Err(e) = runner.run_file_async(&f).await {
                panic!("{}: {}", f.display(), e.display(true));
            }
        });
    }
}
