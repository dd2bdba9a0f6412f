//! One client connection (DESIGN.md §11): its session and the three ways
//! statements arrive — simple Query, the extended protocol
//! (Parse/Bind/Describe/Execute/Sync) and COPY data.
//!
//! ```text
//!  Query ──────────────► Session::execute_each ─┐
//!  Parse ─► Session::prepare ─► Statement       ├─► Output ─► RowDescription,
//!  Bind ──► Portal (params, result formats)     │             DataRow (text or
//!  Execute ─► decode params ─► execute_prepared ┘             binary), tag
//!  COPY … FROM STDIN ─► CopyIn + CopyLoader ◄── CopyData / CopyDone
//! ```
//!
//! The engine is blocking: each connection has an OS thread of its own
//! (`serve`), and calls run inline on it with the session locked. The session is dropped with the connection, which rolls
//! back an open transaction and releases its locks.

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::BytesMut;
use futures::sink::{Sink, SinkExt};
use futures::stream;
use parking_lot::Mutex;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::Format;
use pgwire::api::query::SimpleQueryHandler;
use pgwire::api::results::{CopyResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::DataRow;
use pgwire::messages::response::NoticeResponse;
use pgwire::messages::PgWireBackendMessage;
use sqlparser::ast::Statement as Ast;

use ndpdb_formats::SqlState;
use ndpdb_host::Database;
use ndpdb_sql::{Error, Output, ResultColumn, Session};

use crate::copy::{copy_spec, CopyIn, CopyLoader, CopySpec};
use crate::extended::Parser;
use crate::types::{pg_type, put_field};

/// An in-progress `COPY … FROM STDIN`.
struct CopyState {
    reader: CopyIn,
    loader: CopyLoader,
    /// The COPY opened its own transaction (the session was idle).
    own_tx: bool,
    error: Option<Error>,
}

/// One connection: its own session.
pub struct Connection {
    session: Arc<Mutex<Session>>,
    pub(crate) parser: Arc<Parser>,
    copy: Mutex<Option<CopyState>>,
    /// Names of prepared statements (for DEALLOCATE ALL / DISCARD ALL).
    pub(crate) statements: Mutex<HashSet<String>>,
}

impl Connection {
    pub fn new(db: Database) -> Connection {
        let session = Arc::new(Mutex::new(Session::new(db)));
        Connection {
            parser: Arc::new(Parser::new(session.clone())),
            session,
            copy: Mutex::new(None),
            statements: Mutex::new(HashSet::new()),
        }
    }

    /// Cancels this connection's running statement.
    pub fn interrupt(&self) -> ndpdb_host::Interrupt {
        self.session.lock().interrupt()
    }

    /// DEALLOCATE name | ALL: forgets prepared statements.
    fn deallocate<C>(&self, client: &mut C, name: &str) -> Output
    where
        C: ClientPortalStore,
        C::PortalStore: PortalStore,
    {
        let mut names = self.statements.lock();
        if name.eq_ignore_ascii_case("all") {
            for n in names.drain() {
                client.portal_store().rm_statement(&n);
            }
            Output::command("DEALLOCATE ALL")
        } else {
            names.remove(name);
            client.portal_store().rm_statement(name);
            Output::command("DEALLOCATE")
        }
    }

    /// Runs `f` on the session and takes the notices it left for the
    /// client.
    pub(crate) fn with_session_notices<T>(
        &self,
        f: impl FnOnce(&mut Session) -> T,
    ) -> (T, Vec<String>) {
        let mut s = self.session.lock();
        let r = f(&mut s);
        (r, std::mem::take(&mut s.notices))
    }

    /// Runs `f` on the session. The connection has a thread of its own
    /// (see `serve`), so the blocking engine runs inline.
    pub(crate) fn with_session<T>(&self, f: impl FnOnce(&mut Session) -> T) -> T {
        f(&mut self.session.lock())
    }

    /// Starts a COPY: prepares the insert and opens a transaction if none.
    pub(crate) fn start_copy(&self, spec: CopySpec) -> Result<Response, Error> {
        let state = self.with_session(|s| -> Result<CopyState, Error> {
            let own_tx = s.transaction_status() == 'I';
            if s.transaction_status() == 'E' {
                return Err(Error::new(
                    SqlState::IN_FAILED_SQL_TRANSACTION,
                    "current transaction is aborted, commands ignored until end of transaction block",
                ));
            }
            let loader = CopyLoader::new(s, &spec)?;
            if own_tx {
                s.execute("BEGIN")?;
            }
            Ok(CopyState {
                reader: CopyIn::new(spec),
                loader,
                own_tx,
                error: None,
            })
        })?;
        let columns = state.loader.columns();
        *self.copy.lock() = Some(state);
        Ok(Response::CopyIn(CopyResponse::new(
            0,
            columns,
            stream::empty(),
        )))
    }
}

/// Turns an engine error into pgwire's error info (SQLSTATE, detail).
pub fn error_info(e: &Error) -> ErrorInfo {
    let mut info = ErrorInfo::new("ERROR".into(), e.code.0.into(), e.message.clone());
    info.detail = e.detail.clone();
    info
}

pub(crate) fn user_error(e: &Error) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

/// A command tag as pgwire's `Tag`: `INSERT 0 3` → INSERT, oid 0, 3 rows.
pub(crate) fn tag_of(tag: &str) -> Tag {
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

pub(crate) fn field_infos(columns: &[ResultColumn], formats: Option<&Format>) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let format = formats.map_or(FieldFormat::Text, |f| f.format_for(i));
            FieldInfo::new(c.name.clone(), None, None, pg_type(&c.ty), format)
        })
        .collect()
}

pub(crate) fn response(out: Output, formats: Option<&Format>) -> Response {
    match out {
        Output::Rows { columns, rows } => {
            let fields = Arc::new(field_infos(&columns, formats));
            let field_formats: Vec<FieldFormat> = fields.iter().map(|f| f.format()).collect();
            let data: Vec<PgWireResult<DataRow>> = rows
                .into_iter()
                .map(|row| {
                    let mut buf = BytesMut::with_capacity(16 * row.len());
                    for (v, f) in row.iter().zip(&field_formats) {
                        put_field(&mut buf, v, *f);
                    }
                    Ok(DataRow::new(buf, row.len() as i16))
                })
                .collect();
            Response::Query(QueryResponse::new(fields, stream::iter(data)))
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
    }
}

/// Sends the session's pending notices (e.g. "there is no transaction in
/// progress") as NoticeResponse messages.
pub(crate) async fn send_notices<C>(client: &mut C, notices: Vec<String>) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for n in notices {
        let info = ErrorInfo::new("WARNING".into(), "25000".into(), n);
        client
            .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::from(
                info,
            )))
            .await?;
    }
    Ok(())
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.parser.adopt_startup(client);
        let catalog = self.with_session(|s| crate::catalog::answer(s.database(), query));
        if let Some(answer) = catalog {
            return Ok(vec![match answer {
                Ok(out) => response(out, None),
                Err(e) => Response::Error(Box::new(error_info(&e))),
            }]);
        }
        let stmts = match ndpdb_sql::session::parse(query) {
            Ok(s) => s,
            Err(e) => return Ok(vec![Response::Error(Box::new(error_info(&e)))]),
        };
        if let Some(spec) = stmts.first().and_then(copy_spec) {
            let started = match (stmts.len(), spec) {
                (1, Ok(spec)) => self.start_copy(spec),
                (_, Err(e)) => Err(e),
                _ => Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    "COPY must be the only statement of its query",
                )),
            };
            return Ok(vec![
                started.unwrap_or_else(|e| Response::Error(Box::new(error_info(&e))))
            ]);
        }
        let mut responses = Vec::new();
        for stmt in &stmts {
            let out = match stmt {
                Ast::Deallocate { name, .. } => Ok(self.deallocate(client, &name.value)),
                Ast::Discard { .. } => {
                    self.deallocate(client, "all");
                    Ok(Output::command("DISCARD ALL"))
                }
                _ => {
                    let (out, notices) =
                        self.with_session_notices(|s| s.execute_statement(stmt, &[]));
                    send_notices(client, notices).await?;
                    out
                }
            };
            match out {
                Ok(out) => responses.push(response(out, None)),
                Err(e) => {
                    responses.push(Response::Error(Box::new(error_info(&e))));
                    break;
                }
            }
        }
        if responses.is_empty() {
            responses.push(Response::EmptyQuery);
        }
        Ok(responses)
    }
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut guard = self.copy.lock();
        let Some(state) = guard.as_mut() else {
            return Ok(());
        };
        if state.error.is_some() {
            return Ok(());
        }
        let result = state
            .reader
            .push(&data.data)
            .and_then(|records| self.with_session(|s| state.loader.load(s, records)));
        if let Err(e) = result {
            state.error = Some(e);
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(mut state) = self.copy.lock().take() else {
            return Ok(());
        };
        let result = self.with_session(|s| {
            let r = match state.error.take() {
                Some(e) => Err(e),
                None => state
                    .reader
                    .finish()
                    .and_then(|records| state.loader.load(s, records)),
            };
            finish_copy(s, state.own_tx, r)
        });
        match result {
            Ok(()) => {
                let tag = Tag::new("COPY").with_rows(state.loader.rows as usize);
                client
                    .send(PgWireBackendMessage::CommandComplete(tag.into()))
                    .await?;
                Ok(())
            }
            Err(e) => Err(user_error(&e)),
        }
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(state) = self.copy.lock().take() {
            let e = Error::new(
                SqlState::QUERY_CANCELED,
                format!("COPY from stdin failed: {}", fail.message),
            );
            let _ = self.with_session(|s| finish_copy(s, state.own_tx, Err(e)));
        }
        user_error(&Error::new(
            SqlState::QUERY_CANCELED,
            format!("COPY from stdin failed: {}", fail.message),
        ))
    }
}

/// Commits or rolls back the COPY's own transaction; inside a block an
/// error fails the block (the session already marked it).
fn finish_copy(s: &mut Session, own_tx: bool, r: Result<(), Error>) -> Result<(), Error> {
    match (own_tx, r) {
        (true, Ok(())) => s.execute("COMMIT").map(|_| ()),
        (true, Err(e)) => {
            let _ = s.execute("ROLLBACK");
            Err(e)
        }
        (false, Ok(())) => Ok(()),
        (false, Err(e)) => {
            s.fail_transaction();
            Err(e)
        }
    }
}
