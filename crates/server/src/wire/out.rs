//! Backend messages on their way to the client: encoded into one buffer
//! and written when PostgreSQL would flush — at ReadyForQuery, on Flush,
//! after an error or notice, at a COPY-in response — or whenever more
//! than 64 KiB are waiting, so a large result or a client that never
//! sends Sync holds a bounded amount of memory.
//!
//! ```text
//!  BindComplete, DataRow…, CommandComplete, ReadyForQuery ─► one write
//! ```

use bytes::BytesMut;
use pgwire::error::ErrorInfo;
use pgwire::messages::response::{ErrorResponse, NoticeResponse, ReadyForQuery, TransactionStatus};
use pgwire::messages::PgWireBackendMessage;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use ndpdb_sql::{Error, Notice};

/// Written out once this much is buffered.
const FLUSH_AT: usize = 64 * 1024;
/// Longest error or notice text sent (a message quoting a huge statement
/// is cut, not dropped).
const MAX_MESSAGE_TEXT: usize = 16 * 1024;

/// The client went away while we were writing to it.
#[derive(Debug)]
pub struct Gone;

pub struct Out<W> {
    io: W,
    buf: BytesMut,
}

/// A message text as a protocol field: NUL bytes would end the field
/// early (PostgreSQL's texts never hold one), long texts are cut.
fn cut(s: String) -> String {
    let mut s = if s.contains('\0') {
        s.replace('\0', "\\0")
    } else {
        s
    };
    if s.len() > MAX_MESSAGE_TEXT {
        let mut at = MAX_MESSAGE_TEXT;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.truncate(at);
        s.push_str("...");
    }
    s
}

/// pgwire's error fields for an engine error at `severity`.
pub fn error_info(e: &Error, severity: &str) -> ErrorInfo {
    let mut info = ErrorInfo::new(
        severity.to_owned(),
        e.code.0.to_owned(),
        cut(e.message.clone()),
    );
    info.detail = e.detail.clone().map(cut);
    info.hint = e.hint.clone().map(cut);
    info.routine = e.routine.map(str::to_owned);
    // PostgreSQL sends the severity twice: as S (localized) and V (never).
    info.severity_nonlocalized = Some(severity.to_owned());
    info
}

impl<W: AsyncWrite + Unpin> Out<W> {
    pub fn new(io: W) -> Out<W> {
        Out {
            io,
            buf: BytesMut::with_capacity(8 * 1024),
        }
    }

    /// Queues one message; writes the buffer out once it is large.
    pub async fn send(&mut self, msg: PgWireBackendMessage) -> Result<(), Gone> {
        // Only messages over pgwire's own size limits fail to encode:
        // nothing this server builds (texts are cut above).
        if msg.encode(&mut self.buf).is_err() {
            return Ok(());
        }
        if self.buf.len() >= FLUSH_AT {
            self.flush().await?;
        }
        Ok(())
    }

    /// Queues raw bytes (the one-byte answers to SSLRequest / GSSENCRequest).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    pub async fn flush(&mut self) -> Result<(), Gone> {
        if !self.buf.is_empty() {
            self.io.write_all(&self.buf).await.map_err(|_| Gone)?;
            self.buf.clear();
        }
        self.io.flush().await.map_err(|_| Gone)
    }

    /// An ErrorResponse of severity ERROR, flushed.
    pub async fn error(&mut self, e: &Error) -> Result<(), Gone> {
        let info = error_info(e, "ERROR");
        self.send(PgWireBackendMessage::ErrorResponse(ErrorResponse::from(
            info,
        )))
        .await?;
        self.flush().await
    }

    /// An ErrorResponse of severity FATAL, flushed (the connection ends).
    pub async fn fatal(&mut self, e: &Error) -> Result<(), Gone> {
        let info = error_info(e, "FATAL");
        self.send(PgWireBackendMessage::ErrorResponse(ErrorResponse::from(
            info,
        )))
        .await?;
        self.flush().await
    }

    /// Notices (WARNING, NOTICE) the session left for the client, flushed.
    pub async fn notices(&mut self, notices: Vec<Notice>) -> Result<(), Gone> {
        if notices.is_empty() {
            return Ok(());
        }
        for n in notices {
            let mut info = ErrorInfo::new(n.severity.into(), n.code.0.into(), cut(n.message));
            info.severity_nonlocalized = Some(n.severity.into());
            info.detail = n.detail;
            self.send(PgWireBackendMessage::NoticeResponse(NoticeResponse::from(
                info,
            )))
            .await?;
        }
        self.flush().await
    }

    /// ReadyForQuery with the session's transaction status, flushed.
    pub async fn ready(&mut self, status: char) -> Result<(), Gone> {
        let status = match status {
            'T' => TransactionStatus::Transaction,
            'E' => TransactionStatus::Error,
            _ => TransactionStatus::Idle,
        };
        self.send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
            status,
        )))
        .await?;
        self.flush().await
    }

    /// Closes the write side (after a FATAL error or at the end).
    pub async fn shutdown(&mut self) {
        let _ = self.flush().await;
        let _ = self.io.shutdown().await;
    }
}
