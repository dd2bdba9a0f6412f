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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::BytesMut;
use futures::sink::{Sink, SinkExt};
use futures::stream;
use parking_lot::Mutex;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{send_describe_response, ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{
    CopyResponse, DescribePortalResponse, DescribeStatementResponse, FieldFormat, FieldInfo,
    QueryResponse, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, Type, DEFAULT_NAME};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::{DataRow, ParameterDescription};
use pgwire::messages::extendedquery::{
    Bind, Describe, Execute, Parse, ParseComplete, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::NoticeResponse;
use pgwire::messages::PgWireBackendMessage;
use sqlparser::ast::Statement as Ast;

use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_host::Database;
use ndpdb_sql::session::Prepared;
use ndpdb_sql::{Error, Output, ResultColumn, Session};

use crate::copy::{copy_spec, CopyIn, CopyLoader, CopySpec};
use crate::types::{decode_param, pg_type, put_field};

/// A parsed statement of the extended protocol.
pub struct Parsed {
    kind: ParsedKind,
}

enum ParsedKind {
    Plan {
        prepared: Box<Prepared>,
        columns: Vec<ResultColumn>,
    },
    Copy(CopySpec),
}

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
    parser: Arc<Parser>,
    copy: Mutex<Option<CopyState>>,
    /// Names of prepared statements (for DEALLOCATE ALL / DISCARD ALL).
    statements: Mutex<HashSet<String>>,
}

impl Connection {
    pub fn new(db: Database) -> Connection {
        let session = Arc::new(Mutex::new(Session::new(db)));
        Connection {
            parser: Arc::new(Parser {
                session: session.clone(),
                adopted: AtomicBool::new(false),
            }),
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

    /// Runs `f` on the session. The connection has a thread of its own
    /// (see `serve`), so the blocking engine runs inline.
    fn with_session<T>(&self, f: impl FnOnce(&mut Session) -> T) -> T {
        f(&mut self.session.lock())
    }

    /// Starts a COPY: prepares the insert and opens a transaction if none.
    fn start_copy(&self, spec: CopySpec) -> Result<Response, Error> {
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

fn user_error(e: &Error) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
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

fn field_infos(columns: &[ResultColumn], formats: Option<&Format>) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let format = formats.map_or(FieldFormat::Text, |f| f.format_for(i));
            FieldInfo::new(c.name.clone(), None, None, pg_type(&c.ty), format)
        })
        .collect()
}

fn response(out: Output, formats: Option<&Format>) -> Response {
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
async fn send_notices<C>(client: &mut C, notices: Vec<String>) -> PgWireResult<()>
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
                _ => self.with_session(|s| s.execute_statement(stmt, &[])),
            };
            let notices = self.with_session(|s| std::mem::take(&mut s.notices));
            send_notices(client, notices).await?;
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

/// Parses and plans statements of the extended protocol on the session.
pub struct Parser {
    session: Arc<Mutex<Session>>,
    /// The client's startup parameters were copied into the session.
    adopted: AtomicBool,
}

impl Parser {
    /// Copies startup parameters (application_name, client_encoding, the
    /// user) into the session once, so SHOW and current_setting see them.
    fn adopt_startup<C: ClientInfo>(&self, client: &C) {
        if self.adopted.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut s = self.session.lock();
        for (key, setting) in [
            ("application_name", "application_name"),
            ("client_encoding", "client_encoding"),
            ("user", "session_authorization"),
        ] {
            if let Some(v) = client.metadata().get(key) {
                s.set_setting(setting, v);
            }
        }
    }
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Arc<Parsed>;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Arc<Parsed>>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        self.adopt_startup(client);
        let mut stmts = ndpdb_sql::session::parse(sql).map_err(|e| user_error(&e))?;
        match stmts.len() {
            0 => return Ok(None),
            1 => {}
            _ => {
                return Err(user_error(&Error::new(
                    SqlState::SYNTAX_ERROR,
                    "cannot insert multiple commands into a prepared statement",
                )))
            }
        }
        let stmt = stmts.remove(0);
        if let Some(spec) = copy_spec(&stmt) {
            let spec = spec.map_err(|e| user_error(&e))?;
            return Ok(Some(Arc::new(Parsed {
                kind: ParsedKind::Copy(spec),
            })));
        }
        let extra_columns = other_columns(&stmt);
        let prepared = self
            .session
            .lock()
            .prepare_statement(stmt)
            .map_err(|e| user_error(&e))?;
        let mut columns = prepared.columns();
        if columns.is_empty() {
            columns = extra_columns;
        }
        Ok(Some(Arc::new(Parsed {
            kind: ParsedKind::Plan {
                prepared: Box::new(prepared),
                columns,
            },
        })))
    }

    fn get_parameter_types(&self, stmt: &Arc<Parsed>) -> PgWireResult<Vec<Type>> {
        Ok(match &stmt.kind {
            ParsedKind::Plan { prepared, .. } => prepared
                .param_types
                .iter()
                .map(|t| t.as_ref().map_or(Type::TEXT, pg_type))
                .collect(),
            ParsedKind::Copy(_) => Vec::new(),
        })
    }

    fn get_result_schema(
        &self,
        stmt: &Arc<Parsed>,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(match &stmt.kind {
            ParsedKind::Plan { columns, .. } => field_infos(columns, column_format),
            ParsedKind::Copy(_) => Vec::new(),
        })
    }
}

/// Result columns of statements that are not plans but return rows.
fn other_columns(stmt: &Ast) -> Vec<ResultColumn> {
    let text = |name: String| {
        vec![ResultColumn {
            name,
            ty: DataType::Text,
        }]
    };
    match stmt {
        Ast::ShowVariable { variable } => text(
            variable
                .iter()
                .map(|i| i.value.to_lowercase())
                .collect::<Vec<_>>()
                .join("_"),
        ),
        Ast::Explain { .. } => text("QUERY PLAN".into()),
        _ => Vec::new(),
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Arc<Parsed>;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    /// Bind without flushing (batching.rs).
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        crate::batching::bind(client, message).await
    }

    /// Execute without flushing (batching.rs); Sync flushes.
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        crate::batching::execute(self, client, message).await
    }

    /// Parse, remembering the statement's name for DEALLOCATE ALL.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message
            .name
            .clone()
            .unwrap_or_else(|| DEFAULT_NAME.to_owned());
        match StoredStatement::parse(client, &message, self.parser.clone()).await? {
            Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
            None => client.portal_store().put_empty_statement(&name),
        }
        if name != DEFAULT_NAME {
            self.statements.lock().insert(name);
        }
        client
            .send(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Arc<Parsed>>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let stored: &StoredStatement<Arc<Parsed>> = &portal.statement;
        let (prepared, columns) = match &stored.statement.kind {
            ParsedKind::Copy(spec) => {
                return Ok(match self.start_copy(spec.clone()) {
                    Ok(r) => r,
                    Err(e) => Response::Error(Box::new(error_info(&e))),
                })
            }
            ParsedKind::Plan { prepared, columns } => (prepared, columns),
        };
        let params = match bound_params(portal, prepared) {
            Ok(p) => p,
            Err(e) => return Ok(Response::Error(Box::new(error_info(&e)))),
        };
        let (result, notices) = self.with_session(|s| {
            let r = s.execute_prepared(prepared, &params);
            (r, std::mem::take(&mut s.notices))
        });
        send_notices(client, notices).await?;
        Ok(match result {
            Ok(Output::Rows { rows, .. }) => response(
                Output::Rows {
                    columns: columns.clone(),
                    rows,
                },
                Some(&portal.result_column_format),
            ),
            Ok(out) => response(out, Some(&portal.result_column_format)),
            Err(e) => Response::Error(Box::new(error_info(&e))),
        })
    }

    /// Describe of a statement: ParameterDescription, then NoData for a
    /// statement without result columns (pgwire would send an empty
    /// RowDescription when there are parameters, which drivers read as
    /// "returns rows").
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if message.target_type == TARGET_TYPE_BYTE_STATEMENT {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            if let Some(Entry::Value(stmt)) = client.portal_store().get_statement(name) {
                let described = self.do_describe_statement(client, &stmt).await?;
                let oids = described.parameters.iter().map(|t| t.oid()).collect();
                client
                    .send(PgWireBackendMessage::ParameterDescription(
                        ParameterDescription::new(oids),
                    ))
                    .await?;
                let fields = DescribePortalResponse::new(described.fields);
                return send_describe_response(client, &fields).await;
            }
        }
        self._on_describe(client, message).await
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        target: &StoredStatement<Arc<Parsed>>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let inferred = self.parser.get_parameter_types(&target.statement)?;
        let n = inferred.len().max(target.parameter_types.len());
        let params = (0..n)
            .map(|i| {
                target
                    .parameter_types
                    .get(i)
                    .cloned()
                    .flatten()
                    .filter(|t| *t != Type::UNKNOWN)
                    .or_else(|| inferred.get(i).cloned())
                    .unwrap_or(Type::TEXT)
            })
            .collect();
        let fields = self.parser.get_result_schema(&target.statement, None)?;
        Ok(DescribeStatementResponse::new(params, fields))
    }

    async fn do_describe_portal<C>(
        &self,
        _client: &mut C,
        target: &Portal<Arc<Parsed>>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let fields = self.parser.get_result_schema(
            &target.statement.statement,
            Some(&target.result_column_format),
        )?;
        Ok(DescribePortalResponse::new(fields))
    }
}

/// Decodes the portal's parameters (text or binary, per Bind's formats).
fn bound_params(portal: &Portal<Arc<Parsed>>, prepared: &Prepared) -> Result<Vec<Value>, Error> {
    let needed = prepared.param_types.len();
    if portal.parameters.len() != needed {
        return Err(Error::new(
            SqlState("08P01"),
            format!(
                "bind message supplies {} parameters, but prepared statement requires {needed}",
                portal.parameters.len()
            ),
        ));
    }
    portal
        .parameters
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            decode_param(
                bytes.as_deref(),
                portal.parameter_format.is_binary(i),
                portal
                    .statement
                    .parameter_types
                    .get(i)
                    .and_then(|t| t.as_ref()),
                prepared.param_types[i],
            )
            .map_err(Error::from)
        })
        .collect()
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
