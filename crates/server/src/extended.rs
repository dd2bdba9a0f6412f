//! The extended query protocol (DESIGN.md §11): Parse plans a statement
//! once on the connection's session, Bind decodes parameters (text or
//! binary, per the client's declared types or ndpdb's inferred ones),
//! Describe reports parameter types and result columns (NoData for
//! commands), Execute runs the plan.
//!
//! ```text
//!  Parse "SELECT … WHERE k = $1" ─► Session::prepare ─► Parsed (plan,
//!                                   columns, inferred $1 type)
//!  Bind [params, formats] ─► Portal ─► Execute ─► bound_params ─►
//!                                   Session::execute_prepared ─► rows
//! ```

use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use futures::sink::{Sink, SinkExt};
use parking_lot::Mutex;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{send_describe_response, ExtendedQueryHandler};
use pgwire::api::results::{
    DescribePortalResponse, DescribeStatementResponse, FieldInfo, Response,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, Type, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::ParameterDescription;
use pgwire::messages::extendedquery::{
    Bind, Describe, Execute, Parse, ParseComplete, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::PgWireBackendMessage;
use sqlparser::ast::Statement as Ast;

use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_sql::session::Prepared;
use ndpdb_sql::{Error, Output, ResultColumn, Session};

use crate::connection::{error_info, field_infos, response, send_notices, user_error, Connection};
use crate::copy::{copy_spec, CopySpec};
use crate::types::{decode_param, pg_type};

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

/// Parses and plans statements of the extended protocol on the session.
pub struct Parser {
    session: Arc<Mutex<Session>>,
    /// The client's startup parameters were copied into the session.
    adopted: AtomicBool,
}

impl Parser {
    pub(crate) fn new(session: Arc<Mutex<Session>>) -> Parser {
        Parser {
            session,
            adopted: AtomicBool::new(false),
        }
    }

    /// Copies startup parameters (application_name, client_encoding, the
    /// user) into the session once, so SHOW and current_setting see them.
    pub(crate) fn adopt_startup<C: ClientInfo>(&self, client: &C) {
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
        let (result, notices) =
            self.with_session_notices(|s| s.execute_prepared(prepared, &params));
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
