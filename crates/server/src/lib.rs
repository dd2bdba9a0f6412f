//! The PostgreSQL wire-protocol server (DESIGN.md §11): `ndpdb serve`.
//!
//! ```text
//!  TCP accept ─► connection limit ─► one Session per connection (its own
//!                                    transaction state, SET values)
//!  startup (trust) ─► simple query: Session::execute ─► RowDescription
//!                     (type OIDs) + DataRows in text format, command tags,
//!                     ErrorResponse with SQLSTATE, ReadyForQuery status
//! ```
//!
//! Sessions run the blocking engine on the runtime's worker threads
//! (`block_in_place`); a connection that drops mid-transaction drops its
//! session, which rolls the transaction back and releases its locks.
//! Not yet: the extended query protocol (Parse/Bind/Execute), COPY,
//! password authentication, cancellation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream;
use parking_lot::Mutex;
use pgwire::api::auth::noop::NoopStartupHandler;
use pgwire::api::query::SimpleQueryHandler;
use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, Type};
use pgwire::error::{ErrorInfo, PgWireResult};
use tokio::net::TcpListener;

use ndpdb_formats::DataType;
use ndpdb_host::Database;
use ndpdb_sql::{Output, Session};

/// The PostgreSQL type of a column type.
pub fn pg_type(ty: &DataType) -> Type {
    match ty {
        DataType::Bool => Type::BOOL,
        DataType::Int => Type::INT4,
        DataType::BigInt => Type::INT8,
        DataType::Double => Type::FLOAT8,
        DataType::Numeric { .. } => Type::NUMERIC,
        DataType::Text => Type::TEXT,
        DataType::Varchar(_) => Type::VARCHAR,
        DataType::Bytea => Type::BYTEA,
        DataType::Date => Type::DATE,
        DataType::Timestamp => Type::TIMESTAMP,
    }
}

/// A command tag as pgwire's `Tag`: `INSERT 0 3` → INSERT, oid 0, 3 rows.
fn tag_of(tag: &str) -> Tag {
    let words: Vec<&str> = tag.split_whitespace().collect();
    match words.as_slice() {
        ["INSERT", oid, n] => match (oid.parse(), n.parse()) {
            (Ok(o), Ok(n)) => Tag::new("INSERT").with_oid(o).with_rows(n),
            _ => Tag::new(tag),
        },
        [cmd, n] => match n.parse() {
            Ok(n) => Tag::new(cmd).with_rows(n),
            Err(_) => Tag::new(tag),
        },
        _ => Tag::new(tag),
    }
}

fn response(out: Output) -> PgWireResult<Response> {
    Ok(match out {
        Output::Rows { columns, rows } => {
            let fields: Vec<FieldInfo> = columns
                .iter()
                .map(|c| {
                    FieldInfo::new(
                        c.name.clone(),
                        None,
                        None,
                        pg_type(&c.ty),
                        FieldFormat::Text,
                    )
                })
                .collect();
            let schema = Arc::new(fields);
            let mut encoder = DataRowEncoder::new(schema.clone());
            let mut data = Vec::with_capacity(rows.len());
            for row in rows {
                for v in &row {
                    encoder.encode_field(&v.to_pg_text())?;
                }
                data.push(Ok(encoder.take_row()));
            }
            Response::Query(QueryResponse::new(schema, stream::iter(data)))
        }
        Output::Command { tag } => {
            let upper = tag.to_ascii_uppercase();
            if upper == "BEGIN" || upper == "START TRANSACTION" {
                Response::TransactionStart(tag_of(&tag))
            } else if upper == "COMMIT" || upper == "ROLLBACK" {
                Response::TransactionEnd(tag_of(&tag))
            } else {
                Response::Execution(tag_of(&tag))
            }
        }
    })
}

/// One connection: its own session.
pub struct Connection {
    session: Mutex<Session>,
}

#[async_trait]
impl NoopStartupHandler for Connection {}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn do_query<C>(&self, _client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
    {
        if query.trim().trim_end_matches(';').trim().is_empty() {
            return Ok(vec![Response::EmptyQuery]);
        }
        let result = tokio::task::block_in_place(|| self.session.lock().execute(query));
        match result {
            Ok(outs) => outs.into_iter().map(response).collect(),
            Err(e) => {
                let mut info = ErrorInfo::new("ERROR".into(), e.code.0.into(), e.message.clone());
                info.detail = e.detail.clone();
                Ok(vec![Response::Error(Box::new(info))])
            }
        }
    }
}

struct Handlers {
    conn: Arc<Connection>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.conn.clone()
    }

    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.conn.clone()
    }
}

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Connections beyond this are refused.
    pub max_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            max_connections: 256,
        }
    }
}

/// Accepts connections on `listener` until the process ends.
pub async fn serve(
    db: Database,
    listener: TcpListener,
    config: ServerConfig,
) -> std::io::Result<()> {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(s) => s,
            // A failed accept (e.g. out of file descriptors) must not end
            // the server.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        if open.fetch_add(1, Ordering::AcqRel) >= config.max_connections {
            open.fetch_sub(1, Ordering::AcqRel);
            drop(socket);
            continue;
        }
        let handlers = Handlers {
            conn: Arc::new(Connection {
                session: Mutex::new(Session::new(db.clone())),
            }),
        };
        let open = open.clone();
        tokio::spawn(async move {
            // Protocol errors end this connection only.
            let _ = pgwire::tokio::process_socket(socket, None, handlers).await;
            open.fetch_sub(1, Ordering::AcqRel);
        });
    }
}
