//! The simple query protocol (DESIGN.md §11): one Query message, one or
//! more statements, each answered with its rows and command tag.
//!
//! ```text
//!  Query "INSERT …; UPDATE …" ─► psql catalog query? ─► catalog.rs
//!     ─► parse ─► COPY? ─► copy_in.rs
//!     ─► implicit transaction: statement₁ … statementₙ ─► commit
//!        (an error rolls back all of them and skips the rest)
//! ```
//!
//! As in PostgreSQL, the statements of one Query run in one implicit
//! transaction unless they open a block themselves; a COMMIT among them
//! commits what came before it.

use sqlparser::ast::Statement as Ast;
use tokio::io::{AsyncRead, AsyncWrite};

use ndpdb_formats::SqlState;
use ndpdb_sql::{Error, Output};

use crate::conn_io::{Connection, Handled};
use crate::copy::copy_spec;
use crate::portal::{rows_complete, rows_tag};
use crate::types::Format;

/// Runs one Query message.
pub(crate) async fn query<R, W>(conn: &mut Connection<R, W>, sql: &str) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if let Some(answer) = crate::catalog::answer(conn.session.database(), sql) {
        return send_output(conn, answer?, "SELECT").await;
    }
    let result = parsed_query(conn, sql).await;
    conn.session.close_message();
    result
}

/// The Query's statements, parsed and run under the message's timeout.
async fn parsed_query<R, W>(conn: &mut Connection<R, W>, sql: &str) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let stmts = conn.session.parse_message(sql)?;
    if stmts.is_empty() {
        return conn.empty_query().await;
    }
    conn.session.begin_implicit();
    let result = statements(conn, &stmts).await;
    if result.is_err() {
        conn.session.fail_transaction();
    }
    // Commits the implicit transaction (after an error: nothing is left).
    let end = conn.session.end_implicit();
    result?;
    Ok(end?)
}

async fn statements<R, W>(conn: &mut Connection<R, W>, stmts: &[Ast]) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let first = stmts.first();
    let copy_out = first.and_then(crate::copy::copy_out_spec);
    let copy_in = first.and_then(copy_spec);
    if (copy_out.is_some() || copy_in.is_some()) && stmts.len() > 1 {
        return Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "COPY must be the only statement of its query",
        )
        .into());
    }
    if let Some(spec) = copy_out {
        return crate::copy_out::run(conn, &spec?).await;
    }
    if let Some(spec) = copy_in {
        return crate::copy_in::run(conn, &spec?).await;
    }
    for stmt in stmts {
        statement(conn, stmt).await?;
    }
    Ok(())
}

async fn statement<R, W>(conn: &mut Connection<R, W>, stmt: &Ast) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let out = match stmt {
        Ast::Deallocate { name, .. } => {
            let all = name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all");
            let name = ndpdb_sql::scope::ident_name(name);
            conn.deallocate((!all).then_some(name.as_str()))?;
            Output::command(if all { "DEALLOCATE ALL" } else { "DEALLOCATE" })
        }
        Ast::Discard { .. } => {
            conn.deallocate(None)?;
            Output::command("DISCARD ALL")
        }
        // One namespace with the extended protocol's statements.
        Ast::Prepare { name, .. }
            if conn
                .statements
                .contains_key(&ndpdb_sql::scope::ident_name(name)) =>
        {
            return Err(Error::new(
                SqlState::DUPLICATE_PREPARED_STATEMENT,
                format!(
                    "prepared statement \"{}\" already exists",
                    ndpdb_sql::scope::ident_name(name)
                ),
            )
            .into());
        }
        Ast::Execute {
            name: Some(name),
            parameters,
            ..
        } if protocol_statement(conn, &ndpdb_sql::scope::last_ident(name)).is_some() => {
            let name = ndpdb_sql::scope::last_ident(name);
            let Some(prepared) = protocol_statement(conn, &name) else {
                return Err(Error::new(SqlState::INTERNAL_ERROR, "statement vanished").into());
            };
            let out = conn
                .session
                .execute_with_arguments(&name, &prepared, parameters);
            conn.notices().await?;
            out?
        }
        _ => {
            let out = conn.session.execute_statement(stmt, &[]);
            conn.notices().await?;
            out?
        }
    };
    send_output(conn, out, rows_tag(stmt)).await
}

/// The plan of the extended protocol's statement `name`, if it is one.
fn protocol_statement<R, W>(
    conn: &Connection<R, W>,
    name: &str,
) -> Option<std::sync::Arc<ndpdb_sql::session::Prepared>>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match &conn.statements.get(name)?.plan {
        crate::portal::Plan::Query { prepared, .. } => Some(prepared.clone()),
        _ => None,
    }
}

/// Rows (RowDescription, DataRow…, CommandComplete) or a command tag.
async fn send_output<R, W>(conn: &mut Connection<R, W>, out: Output, tag: &str) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match out {
        Output::Rows { columns, rows } => {
            let text = Format::text();
            conn.row_description(&columns, &text).await?;
            for row in &rows {
                conn.data_row(row, &text).await?;
            }
            conn.command_complete(rows_complete(tag, rows.len())).await
        }
        Output::Command { tag } => conn.command_complete(tag).await,
    }
}
