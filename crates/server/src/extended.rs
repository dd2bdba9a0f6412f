//! The extended query protocol (DESIGN.md §11): Parse plans a statement
//! once on the connection's session, Bind decodes parameters (text or
//! binary, per the client's declared types or ndpdb's inferred ones),
//! Describe reports parameter types and result columns (NoData for
//! commands), Execute runs the plan, Close forgets.
//!
//! ```text
//!  Parse "SELECT … WHERE k = $1" ─► Session::prepare ─► Statement (plan,
//!                                   columns, inferred $1 type)
//!  Bind [formats, params, result formats] ─► Portal (values decoded)
//!  Execute (max_rows) ─► Session::execute_prepared ─► rows ─► DataRow…,
//!                        PortalSuspended | CommandComplete
//! ```
//!
//! Every check follows PostgreSQL's order and wording (exec_bind_message
//! and friends), and every statement since the last Sync runs in one
//! implicit transaction that only Sync commits (connection.rs).

use std::sync::Arc;

use pgwire::messages::data::ParameterDescription;
use pgwire::messages::extendedquery::{
    BindComplete, CloseComplete, ParseComplete, PortalSuspended,
};
use pgwire::messages::PgWireBackendMessage;
use sqlparser::ast::Statement as Ast;
use tokio::io::{AsyncRead, AsyncWrite};

use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_sql::{Error, Output, ResultColumn};

use crate::conn_io::{Connection, Handled};
use crate::copy::copy_spec;
use crate::portal::{rows_complete, rows_tag, Plan, Portal, PortalState, Statement};
use crate::types::{decode_param, Format};
use crate::wire::body::protocol_violation;
use crate::wire::{Body, Target};

fn failed_transaction() -> Error {
    Error::new(
        SqlState::IN_FAILED_SQL_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

fn statement_missing(name: &str) -> Error {
    Error::new(
        SqlState::INVALID_SQL_STATEMENT_NAME,
        if name.is_empty() {
            "unnamed prepared statement does not exist".to_owned()
        } else {
            format!("prepared statement \"{name}\" does not exist")
        },
    )
    .with_routine(match name.is_empty() {
        true => "exec_bind_message",
        false => "FetchPreparedStatement",
    })
}

fn portal_missing(name: &str) -> Error {
    Error::new(
        SqlState::INVALID_CURSOR_NAME,
        format!("portal \"{name}\" does not exist"),
    )
}

/// The prepared statement `name`: the extended protocol's, else one SQL's
/// PREPARE made (one namespace, as in PostgreSQL).
pub(crate) fn lookup<R, W>(conn: &Connection<R, W>, name: &str) -> Result<Arc<Statement>, Error>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if let Some(s) = conn.statements.get(name) {
        return Ok(s.clone());
    }
    let prepared = conn
        .session
        .sql_prepared(name)
        .ok_or_else(|| statement_missing(name))?;
    Ok(Arc::new(Statement {
        declared: Vec::new(),
        transaction_exit: false,
        plan: Plan::Query {
            columns: prepared.columns(),
            tag: "SELECT",
            prepared,
        },
    }))
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
        // PostgreSQL's SHOW ALL: name, setting, description.
        Ast::ShowVariable { variable }
            if variable.len() == 1 && variable[0].value.eq_ignore_ascii_case("all") =>
        {
            ["name", "setting", "description"]
                .into_iter()
                .flat_map(|c| text(c.into()))
                .collect()
        }
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

/// Plans one statement of the extended protocol, under the Parse
/// message's `statement_timeout` (a cancel or the client leaving stops it).
fn plan<R, W>(conn: &mut Connection<R, W>, sql: &str) -> Result<(Plan, bool), Error>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let planned = plan_parsed(conn, sql);
    conn.session.close_message();
    planned
}

fn plan_parsed<R, W>(conn: &mut Connection<R, W>, sql: &str) -> Result<(Plan, bool), Error>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut stmts = conn.session.parse_message(sql)?;
    let stmt = match stmts.len() {
        0 => return Ok((Plan::Empty, false)),
        1 => stmts.remove(0),
        _ => {
            return Err(Error::new(
                SqlState::SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement",
            ))
        }
    };
    let transaction_exit = matches!(stmt, Ast::Commit { .. } | Ast::Rollback { .. });
    if conn.session.transaction_status() == 'E' && !transaction_exit {
        return Err(failed_transaction());
    }
    if let Some(spec) = copy_spec(&stmt) {
        return Ok((Plan::Copy(spec?), false));
    }
    if let Some(spec) = crate::copy::copy_out_spec(&stmt) {
        return Ok((Plan::CopyOut(spec?), false));
    }
    match &stmt {
        Ast::Deallocate { name, .. } => {
            let all = name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all");
            return Ok((
                Plan::Deallocate {
                    name: (!all).then(|| ndpdb_sql::scope::ident_name(name)),
                    tag: if all { "DEALLOCATE ALL" } else { "DEALLOCATE" },
                },
                false,
            ));
        }
        Ast::Discard { .. } => {
            return Ok((
                Plan::Deallocate {
                    name: None,
                    tag: "DISCARD ALL",
                },
                false,
            ))
        }
        _ => {}
    }
    let tag = rows_tag(&stmt);
    let mut extra_columns = other_columns(&stmt);
    // EXECUTE returns what the statement it runs returns.
    if let Ast::Execute {
        name: Some(name), ..
    } = &stmt
    {
        if let Ok(target) = lookup(conn, &ndpdb_sql::scope::last_ident(name)) {
            extra_columns = target.columns().to_vec();
        }
    }
    let prepared = conn.session.prepare_statement(stmt)?;
    let mut columns = prepared.columns();
    if columns.is_empty() {
        columns = extra_columns;
    }
    Ok((
        Plan::Query {
            prepared: Arc::new(prepared),
            columns,
            tag,
        },
        transaction_exit,
    ))
}

/// Parse: plans the statement and stores it under its name.
pub(crate) async fn parse<R, W>(
    conn: &mut Connection<R, W>,
    name: String,
    sql: &str,
    declared: Vec<u32>,
) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if !name.is_empty()
        && (conn.statements.contains_key(&name) || conn.session.sql_prepared(&name).is_some())
    {
        return Err(Error::new(
            SqlState::DUPLICATE_PREPARED_STATEMENT,
            format!("prepared statement \"{name}\" already exists"),
        )
        .into());
    }
    let (plan, transaction_exit) = plan(conn, sql)?;
    conn.statements.insert(
        name,
        Arc::new(Statement {
            plan,
            declared,
            transaction_exit,
        }),
    );
    conn.send(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
        .await
}

/// Reads `n` format codes (`n` checked against what the body holds).
fn format_codes(body: &mut Body) -> Result<Vec<i16>, Error> {
    let n = body.count16()?;
    if n * 2 > body.remaining() {
        return Err(protocol_violation("insufficient data left in message"));
    }
    (0..n).map(|_| body.int16()).collect()
}

/// Bind: decodes the parameters in PostgreSQL's order (statement, formats,
/// counts, values, result formats, end of message) and stores the portal.
pub(crate) async fn bind<R, W>(conn: &mut Connection<R, W>, mut body: Body) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let portal_name = body.cstr()?;
    let statement_name = body.cstr()?;
    let statement = lookup(conn, &statement_name)?;
    let param_formats = Format::new(format_codes(&mut body)?);
    let n = body.count16()?;
    if param_formats.len() > 1 && param_formats.len() != n {
        return Err(protocol_violation(format!(
            "bind message has {} parameter formats but {n} parameters",
            param_formats.len()
        ))
        .into());
    }
    let needed = statement.param_count();
    if n != needed {
        return Err(protocol_violation(format!(
            "bind message supplies {n} parameters, but prepared statement \"{statement_name}\" requires {needed}"
        ))
        .into());
    }
    if conn.session.transaction_status() == 'E' && !statement.transaction_exit {
        return Err(failed_transaction().into());
    }
    if !portal_name.is_empty() && conn.portals.contains_key(&portal_name) {
        return Err(Error::new(
            SqlState::DUPLICATE_CURSOR,
            format!("cursor \"{portal_name}\" already exists"),
        )
        .into());
    }
    let mut params = Vec::new();
    for i in 0..n {
        let len = body.int32()?;
        let bytes = if len == -1 {
            None
        } else {
            Some(body.bytes(len)?)
        };
        let binary = param_formats.binary(i)?;
        let value = decode_param(
            bytes.as_deref(),
            binary,
            statement.declared_type(i).as_ref(),
            statement.inferred_type(i),
        )
        .map_err(Error::from)?;
        params.push(value);
    }
    let formats = Format::new(format_codes(&mut body)?);
    body.end()?;
    // A plan made before a DDL or a SET since is made again now, as
    // PostgreSQL's Bind does (0A000 if its result columns changed).
    if let Plan::Query { prepared, .. } = &statement.plan {
        conn.session.revalidate(prepared)?;
    }
    let columns = statement.columns().len();
    if formats.len() > 1 && formats.len() != columns {
        return Err(protocol_violation(format!(
            "bind message has {} result formats but query has {columns} columns",
            formats.len()
        ))
        .into());
    }
    conn.portals.insert(
        portal_name,
        Portal {
            statement,
            params,
            formats,
            state: PortalState::Ready,
        },
    );
    conn.send(PgWireBackendMessage::BindComplete(BindComplete::new()))
        .await
}

/// Describe: a statement's parameter types and columns, or a portal's
/// columns in its result formats.
pub(crate) async fn describe<R, W>(
    conn: &mut Connection<R, W>,
    target: Target,
    name: &str,
) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (statement, formats) = match target {
        Target::Statement => {
            let s = lookup(conn, name)?;
            conn.send(PgWireBackendMessage::ParameterDescription(
                ParameterDescription::new(s.param_oids()),
            ))
            .await?;
            (s, Format::text())
        }
        Target::Portal => {
            let p = conn.portals.get(name).ok_or_else(|| portal_missing(name))?;
            (p.statement.clone(), p.formats.clone())
        }
    };
    let columns = statement.columns();
    if columns.is_empty() {
        return conn.no_data().await;
    }
    formats.check()?;
    conn.row_description(columns, &formats).await
}

/// Close: forgets a statement or portal (closing one that does not
/// exist is not an error).
pub(crate) async fn close<R, W>(conn: &mut Connection<R, W>, target: Target, name: &str) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match target {
        Target::Statement => conn.statements.remove(name),
        Target::Portal => conn.portals.remove(name).map(|p| p.statement),
    };
    conn.send(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
        .await
}

/// Execute: runs the portal (or goes on with a suspended one) and sends
/// at most `max_rows` rows (`max_rows ≤ 0`: all).
pub(crate) async fn execute<R, W>(conn: &mut Connection<R, W>, name: &str, max_rows: i32) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut portal = conn
        .portals
        .remove(name)
        .ok_or_else(|| portal_missing(name))?;
    let result = run_portal(conn, &mut portal, name, max_rows).await;
    conn.portals.insert(name.to_owned(), portal);
    result
}

async fn run_portal<R, W>(
    conn: &mut Connection<R, W>,
    portal: &mut Portal,
    name: &str,
    max_rows: i32,
) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match std::mem::replace(&mut portal.state, PortalState::Done { rows: None }) {
        PortalState::Ready => {}
        PortalState::Rows { rows, tag } => {
            return send_rows(conn, portal, rows, tag, max_rows).await;
        }
        PortalState::Done { rows: Some(tag) } => {
            portal.state = PortalState::Done { rows: Some(tag) };
            return conn.command_complete(rows_complete(tag, 0)).await;
        }
        PortalState::Done { rows: None } => {
            return Err(Error::new(
                SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("portal \"{name}\" cannot be run"),
            )
            .into())
        }
    }
    let statement = portal.statement.clone();
    match &statement.plan {
        Plan::Empty => {
            portal.state = PortalState::Ready;
            conn.empty_query().await
        }
        Plan::Copy(spec) => crate::copy_in::run(conn, spec).await,
        Plan::CopyOut(spec) => crate::copy_out::run(conn, spec).await,
        Plan::Deallocate { name, tag } => {
            conn.deallocate(name.as_deref())?;
            conn.command_complete((*tag).to_owned()).await
        }
        Plan::Query { prepared, tag, .. } => {
            let result = conn.session.execute_prepared(prepared, &portal.params);
            conn.notices().await?;
            match result? {
                Output::Rows { rows, .. } => {
                    portal.formats.check()?;
                    send_rows(conn, portal, rows.into_iter(), tag, max_rows).await
                }
                Output::Command { tag } => conn.command_complete(tag).await,
            }
        }
    }
}

async fn send_rows<R, W>(
    conn: &mut Connection<R, W>,
    portal: &mut Portal,
    mut rows: std::vec::IntoIter<Vec<Value>>,
    tag: &'static str,
    max_rows: i32,
) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let limit = if max_rows <= 0 {
        usize::MAX
    } else {
        max_rows as usize
    };
    let mut sent = 0;
    while sent < limit {
        let Some(row) = rows.next() else { break };
        conn.data_row(&row, &portal.formats).await?;
        sent += 1;
    }
    if rows.len() > 0 {
        portal.state = PortalState::Rows { rows, tag };
        conn.send(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
            .await
    } else {
        portal.state = PortalState::Done { rows: Some(tag) };
        conn.command_complete(rows_complete(tag, sent)).await
    }
}
