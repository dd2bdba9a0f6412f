//! What one connection holds — its framed reader, its reply buffer, its
//! own [`Session`], prepared statements and portals — and the replies
//! every message handler sends through it.
//!
//! ```text
//!  connection.rs (the message loop) ─► simple.rs | extended.rs | copy_in.rs | copy_out.rs
//!                                              │ each handler gets &mut Connection
//!                                              ▼
//!  conn_io.rs: Connection { reader, out, session, statements, portals }
//!              RowDescription · DataRow · CommandComplete · NoData ·
//!              EmptyQueryResponse · CopyInResponse · notices · DEALLOCATE
//! ```
//!
//! The handlers answer through this file and report a [`Failure`]; only
//! the loop (`connection.rs`) decides what a failure does to the
//! connection, so no handler reaches back into the loop.

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
        | DataType::Bytea
        | DataType::Json
        | DataType::Jsonb
        | DataType::Array(_) => -1,
    }
}
