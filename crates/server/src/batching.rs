//! Bind and Execute of the extended protocol without a socket flush each
//! (DESIGN.md §11). PostgreSQL buffers every reply of an extended-protocol
//! round until Sync; pgwire's defaults flush after BindComplete and after
//! CommandComplete, which costs a `sendto` (and a client wake-up) each —
//! a third of a point read's latency over loopback.
//!
//! ```text
//!  client: Bind ─ Execute ─ Sync
//!  server: BindComplete, DataRow…, CommandComplete, ReadyForQuery ─► one write
//! ```
//!
//! The logic is pgwire's own (`_on_execute`), with `feed` for `send`.

use std::fmt::Debug;
use std::ops::Deref;

use futures::sink::{Sink, SinkExt};
use futures::StreamExt;
use pgwire::api::copy::send_copy_in_response;
use pgwire::api::portal::{Portal, PortalExecutionState};
use pgwire::api::query::{send_execution_response, ExtendedQueryHandler};
use pgwire::api::results::{Response, Tag};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, DEFAULT_NAME};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::extendedquery::{Bind, BindComplete, Execute, PortalSuspended};
use pgwire::messages::response::EmptyQueryResponse;
use pgwire::messages::PgWireBackendMessage;

/// Bind: stores the portal and queues BindComplete.
pub async fn bind<C, S>(client: &mut C, message: Bind) -> PgWireResult<()>
where
    S: Clone + Send + Sync + 'static,
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::PortalStore: PortalStore<Statement = S>,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
    let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
    match client.portal_store().get_statement(statement_name) {
        Some(Entry::Value(statement)) => {
            let portal = Portal::try_new(&message, statement)?;
            client
                .portal_store()
                .put_portal(std::sync::Arc::new(portal));
        }
        Some(Entry::Empty) => {
            if !message.parameters.is_empty() {
                return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    "ERROR".to_owned(),
                    "08P01".to_owned(),
                    format!(
                        "bind message supplies {} parameters, but prepared statement {statement_name:?} requires 0",
                        message.parameters.len()
                    ),
                ))));
            }
            client.portal_store().put_empty_portal(portal_name);
        }
        None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
    }
    client
        .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
        .await?;
    Ok(())
}

/// Execute: runs the portal (or continues a suspended one) and queues its
/// rows and CommandComplete; Sync flushes.
pub async fn execute<H, C>(handler: &H, client: &mut C, message: Execute) -> PgWireResult<()>
where
    H: ExtendedQueryHandler + ?Sized,
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::PortalStore: PortalStore<Statement = H::Statement>,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
        return Err(PgWireError::NotReadyForQuery);
    }
    let mut transaction_status = client.transaction_status();
    client.set_state(PgWireConnectionState::QueryInProgress);
    let portal_name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
    let max_rows = message.max_rows as usize;
    let portal = match client.portal_store().get_portal(portal_name) {
        Some(Entry::Value(portal)) => portal,
        Some(Entry::Empty) => {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
            client.set_state(PgWireConnectionState::ReadyForQuery);
            return Ok(());
        }
        None => return Err(PgWireError::PortalNotFound(portal_name.to_owned())),
    };
    let initial = matches!(
        portal.state().lock().await.deref(),
        PortalExecutionState::Initial
    );
    let needs_fetch = if initial {
        match handler.do_query(client, portal.as_ref(), max_rows).await? {
            Response::Query(results) => {
                portal.start(results).await;
                true
            }
            Response::EmptyQuery => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
                false
            }
            Response::Execution(tag) => {
                send_execution_response(client, tag).await?;
                false
            }
            Response::TransactionStart(tag) => {
                send_execution_response(client, tag).await?;
                transaction_status = transaction_status.to_in_transaction_state();
                false
            }
            Response::TransactionEnd(tag) => {
                send_execution_response(client, tag).await?;
                transaction_status = transaction_status.to_idle_state();
                client.portal_store().rm_portal(DEFAULT_NAME);
                false
            }
            Response::Error(err) => {
                client
                    .feed(PgWireBackendMessage::ErrorResponse((*err).into()))
                    .await?;
                transaction_status = transaction_status.to_error_state();
                false
            }
            Response::CopyIn(result) => {
                client.set_state(PgWireConnectionState::CopyInProgress(true));
                send_copy_in_response(client, result).await?;
                false
            }
            Response::CopyOut(_) | Response::CopyBoth(_) => {
                return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    "ERROR".to_owned(),
                    "0A000".to_owned(),
                    "COPY TO is not supported".to_owned(),
                ))))
            }
        }
    } else {
        true
    };
    if needs_fetch {
        let fetched = portal.fetch(max_rows).await?;
        let mut response = fetched.response;
        let command_tag = response.command_tag().to_owned();
        let mut rows = 0;
        while let Some(row) = response.data_rows().next().await {
            client.feed(PgWireBackendMessage::DataRow(row?)).await?;
            rows += 1;
        }
        if fetched.suspended {
            client
                .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                .await?;
        } else {
            let tag = Tag::new(&command_tag).with_rows(rows);
            client
                .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                .await?;
        }
    }
    if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(transaction_status);
    }
    Ok(())
}
