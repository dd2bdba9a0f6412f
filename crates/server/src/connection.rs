//! One client connection after startup (DESIGN.md §11): a loop over
//! framed messages that follows PostgreSQL's own rules (postgres.c,
//! `PostgresMain`), driving the connection's own [`Session`].
//!
//! ```text
//!          ┌──────────────── ReadyForQuery(I|T|E) ◄───────────────┐
//!          ▼                                                       │
//!  read type ─ unknown ─► FATAL 08P01, close                       │
//!     │ read body ─ bad length / EOF ─► close (rolls back)         │
//!     ▼                                                            │
//!  skipping till Sync? ─ yes (not S/X) ─► drop message             │
//!     │ no                                                         │
//!  Q ─► simple.rs (implicit transaction of its statements) ───────►┤
//!  P B D E C ─► extended.rs (implicit transaction until Sync)      │
//!  S ─► commit the implicit transaction ──────────────────────────►┘
//!  H flush · X close · d c f ignored outside COPY · F refused
//!  error in Q or S ─► ErrorResponse, ReadyForQuery
//!  error in P B D E C H ─► ErrorResponse, skip till Sync
//! ```
//!
//! Any error aborts the open transaction, as in PostgreSQL. The session is
//! dropped with the connection — by a close, a Terminate, a reset, or a
//! panic caught in `serve` — which rolls back whatever was not committed
//! (an implicit transaction without its Sync included), releases its
//! locks and discards its NDP jobs.

use std::collections::HashMap;
use std::sync::Arc;

use pgwire::messages::copy::CopyInResponse;
use pgwire::messages::data::{DataRow, FieldDescription, NoData, RowDescription};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse};
use pgwire::messages::PgWireBackendMessage;
use tokio::io::{AsyncRead, AsyncWrite};

use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_sql::{Error, ResultColumn, Session};

use crate::portal::{Portal, Statement};
use crate::types::{pg_type, put_field, Format};
use crate::wire::body::protocol_violation;
use crate::wire::frontend::{self, Frontend};
use crate::wire::{FrameReader, Gone, Out};

/// Why a message could not be handled.
pub(crate) enum Failure {
    /// An ERROR: reported, the transaction aborted, the connection goes on.
    Error(Error),
    /// A FATAL error: reported, then the connection ends.
    Fatal(Error),
    /// The client is gone.
    Closed,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Error(e)
    }
}

impl From<ndpdb_formats::Error> for Failure {
    fn from(e: ndpdb_formats::Error) -> Failure {
        Failure::Error(e.into())
    }
}

impl From<Gone> for Failure {
    fn from(_: Gone) -> Failure {
        Failure::Closed
    }
}

pub(crate) type Handled = Result<(), Failure>;

/// What the loop does after a message.
enum Step {
    Continue,
    /// Send ReadyForQuery before reading on.
    Ready,
    Exit,
}

/// One connection: its session, prepared statements and portals.
pub struct Connection<R, W> {
    pub(crate) reader: FrameReader<R>,
    pub(crate) out: Out<W>,
    pub(crate) session: Session,
    pub(crate) statements: HashMap<String, Arc<Statement>>,
    pub(crate) portals: HashMap<String, Portal>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Connection<R, W> {
    pub(crate) fn new(reader: FrameReader<R>, out: Out<W>, session: Session) -> Connection<R, W> {
        Connection {
            reader,
            out,
            session,
            statements: HashMap::new(),
            portals: HashMap::new(),
        }
    }

    /// Serves messages until the client leaves or a FATAL error.
    pub(crate) async fn serve(mut self) {
        let mut skip_till_sync = false;
        let mut send_ready = false;
        loop {
            if send_ready {
                if self.ready().await.is_err() {
                    break;
                }
                send_ready = false;
            }
            let Ok(ty) = self.reader.message_type().await else {
                break;
            };
            let Some(limit) = frontend::limit_of(ty) else {
                // The message boundaries are lost: PostgreSQL gives up.
                let e = protocol_violation(format!("invalid frontend message type {ty}"));
                let _ = self.out.fatal(&e).await;
                break;
            };
            let Ok(body) = self.reader.message_body(limit).await else {
                break;
            };
            if ty == b'S' || ty == b'X' {
                skip_till_sync = false;
            }
            if skip_till_sync {
                continue;
            }
            let result = match frontend::decode(ty, body) {
                Ok(msg) => self.handle(msg).await,
                Err(e) => Err(Failure::Error(e)),
            };
            match result {
                Ok(Step::Continue) => {}
                Ok(Step::Ready) => send_ready = true,
                Ok(Step::Exit) => break,
                Err(Failure::Error(e)) => {
                    self.session.fail_transaction();
                    if self.out.error(&e).await.is_err() {
                        break;
                    }
                    if frontend::is_extended(ty) {
                        skip_till_sync = true;
                    } else {
                        send_ready = true;
                    }
                }
                Err(Failure::Fatal(e)) => {
                    let _ = self.out.fatal(&e).await;
                    break;
                }
                Err(Failure::Closed) => break,
            }
        }
        self.out.shutdown().await;
        // Dropping `self` drops the session: an open transaction rolls back.
    }

    async fn handle(&mut self, msg: Frontend) -> Result<Step, Failure> {
        match msg {
            Frontend::Query(sql) => {
                crate::simple::query(self, &sql).await?;
                return Ok(Step::Ready);
            }
            Frontend::Parse {
                name,
                sql,
                param_types,
            } => {
                self.session.begin_implicit();
                crate::extended::parse(self, name, &sql, param_types).await?;
            }
            Frontend::Bind(body) => {
                self.session.begin_implicit();
                crate::extended::bind(self, body).await?;
            }
            Frontend::Describe { target, name } => {
                self.session.begin_implicit();
                crate::extended::describe(self, target, &name).await?;
            }
            Frontend::Execute { portal, max_rows } => {
                self.session.begin_implicit();
                crate::extended::execute(self, &portal, max_rows).await?;
            }
            Frontend::Close { target, name } => crate::extended::close(self, target, &name).await?,
            Frontend::Sync => {
                self.session.end_implicit()?;
                return Ok(Step::Ready);
            }
            Frontend::Flush => self.out.flush().await?,
            Frontend::Terminate => return Ok(Step::Exit),
            // Left over from a COPY that failed: PostgreSQL ignores them.
            Frontend::CopyData(_) | Frontend::CopyDone | Frontend::CopyFail(_) => {}
            Frontend::FunctionCall => {
                return Err(Failure::Error(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    "fastpath function calls are not supported",
                )))
            }
        }
        Ok(Step::Continue)
    }

    /// ReadyForQuery with the session's status. Outside a transaction
    /// block no portal survives (they end with their transaction).
    async fn ready(&mut self) -> Result<(), Gone> {
        let status = self.session.transaction_status();
        if status != 'T' {
            self.portals.clear();
        }
        self.out.ready(status).await
    }

    /// Sends the warnings the session left for the client.
    pub(crate) async fn notices(&mut self) -> Handled {
        let notices = std::mem::take(&mut self.session.notices);
        Ok(self.out.notices(notices).await?)
    }

    pub(crate) async fn send(&mut self, msg: PgWireBackendMessage) -> Handled {
        Ok(self.out.send(msg).await?)
    }

    pub(crate) async fn row_description(
        &mut self,
        columns: &[ResultColumn],
        formats: &Format,
    ) -> Handled {
        let fields = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let ty = pg_type(&c.ty);
                FieldDescription::new(
                    c.name.clone(),
                    0,
                    0,
                    ty.oid(),
                    type_size(&c.ty),
                    -1,
                    formats.code(i),
                )
            })
            .collect();
        self.send(PgWireBackendMessage::RowDescription(RowDescription::new(
            fields,
        )))
        .await
    }

    pub(crate) async fn no_data(&mut self) -> Handled {
        self.send(PgWireBackendMessage::NoData(NoData::new())).await
    }

    pub(crate) async fn data_row(&mut self, row: &[Value], formats: &Format) -> Handled {
        let mut buf = bytes::BytesMut::with_capacity(16 * row.len());
        for (i, v) in row.iter().enumerate() {
            put_field(&mut buf, v, formats.field_format(i));
        }
        self.send(PgWireBackendMessage::DataRow(DataRow::new(
            buf,
            row.len() as i16,
        )))
        .await
    }

    pub(crate) async fn command_complete(&mut self, tag: String) -> Handled {
        self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            tag,
        )))
        .await
    }

    pub(crate) async fn empty_query(&mut self) -> Handled {
        self.send(PgWireBackendMessage::EmptyQueryResponse(
            EmptyQueryResponse::new(),
        ))
        .await
    }

    pub(crate) async fn copy_in_response(&mut self, columns: usize) -> Handled {
        let columns = i16::try_from(columns).unwrap_or(i16::MAX);
        self.send(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
            0,
            columns,
            vec![0; columns as usize],
        )))
        .await?;
        Ok(self.out.flush().await?)
    }

    /// DEALLOCATE name | ALL (and DISCARD ALL): forgets prepared
    /// statements, the extended protocol's and SQL PREPARE's (one
    /// namespace, as in PostgreSQL).
    pub(crate) fn deallocate(&mut self, name: Option<&str>) -> Result<(), Error> {
        match name {
            None => {
                self.statements.clear();
                self.session.deallocate_sql_prepared(None);
            }
            Some(name) => {
                if self.statements.remove(name).is_none()
                    && !self.session.deallocate_sql_prepared(Some(name))
                {
                    return Err(Error::new(
                        SqlState::INVALID_SQL_STATEMENT_NAME,
                        format!("prepared statement \"{name}\" does not exist"),
                    )
                    .with_routine("FetchPreparedStatement"));
                }
            }
        }
        Ok(())
    }
}

/// PostgreSQL's typlen of a column type (-1: variable length).
fn type_size(ty: &DataType) -> i16 {
    match ty {
        DataType::Bool => 1,
        DataType::Int | DataType::Date => 4,
        DataType::BigInt | DataType::Double | DataType::Timestamp => 8,
        DataType::Numeric { .. }
        | DataType::Text
        | DataType::Varchar(_)
        | DataType::Char(_)
        | DataType::Bytea => -1,
    }
}
