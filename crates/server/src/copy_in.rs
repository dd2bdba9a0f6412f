//! The COPY-in sub-protocol (DESIGN.md §11), as PostgreSQL's
//! copyfromparse.c runs it.
//!
//! ```text
//!  CopyInResponse ─► loop:  'd' CopyData (≤ 1 GiB)  ─► records ─► one batch insert
//!                           'c' CopyDone            ─► CommandComplete COPY n
//!                           'f' CopyFail            ─► ERROR 57014
//!                           'H' Flush, 'S' Sync     ─► ignored
//!                           other type / bad length ─► ERROR, then FATAL
//!                                                      (framing is lost)
//! ```
//!
//! The first bad record is an ERROR at once (the client may still be
//! sending; what follows is dropped by the main loop, which ignores
//! CopyData, CopyDone and CopyFail outside a COPY). Rows go into the
//! session's open transaction — the implicit one of the Query or of the
//! extended protocol up to Sync, or the block — so nothing of a failed
//! COPY stays.

use tokio::io::{AsyncRead, AsyncWrite};

use ndpdb_formats::SqlState;
use ndpdb_sql::Error;

use crate::conn_io::{Connection, Failure, Handled};
use crate::copy::{CopyIn, CopyLoader, CopySpec};
use crate::wire::body::protocol_violation;
use crate::wire::frame::{LARGE_MESSAGE_LIMIT, SMALL_MESSAGE_LIMIT};
use crate::wire::Frontend;

fn synchronization_lost(first: Error) -> Failure {
    Failure::Fatal(first)
}

/// Runs `COPY … FROM STDIN` for `spec` to its CommandComplete.
pub(crate) async fn run<R, W>(conn: &mut Connection<R, W>, spec: &CopySpec) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if conn.session.transaction_status() == 'E' {
        return Err(Error::new(
            SqlState::IN_FAILED_SQL_TRANSACTION,
            "current transaction is aborted, commands ignored until end of transaction block",
        )
        .into());
    }
    let mut loader = CopyLoader::new(&mut conn.session, spec)?;
    let mut records = CopyIn::new(spec.clone());
    conn.copy_in_response(loader.columns()).await?;
    loop {
        let ty = conn
            .reader
            .message_type()
            .await
            .map_err(|_| Failure::Closed)?;
        let limit = match ty {
            b'd' => LARGE_MESSAGE_LIMIT,
            b'c' | b'f' | b'H' | b'S' => SMALL_MESSAGE_LIMIT,
            other => {
                conn.out
                    .error(&protocol_violation(format!(
                        "unexpected message type 0x{other:02X} during COPY from stdin"
                    )))
                    .await?;
                return Err(synchronization_lost(protocol_violation(
                    "terminating connection because protocol synchronization was lost",
                )));
            }
        };
        let body = match conn.reader.message_body(limit).await {
            Ok(b) => b,
            Err(_) => {
                // Nobody may be listening any more; PostgreSQL still says why.
                let _ = conn
                    .out
                    .error(&Error::new(
                        SqlState::CONNECTION_FAILURE,
                        "unexpected EOF on client connection with an open transaction",
                    ))
                    .await;
                return Err(synchronization_lost(protocol_violation(
                    "terminating connection because protocol synchronization was lost",
                )));
            }
        };
        match crate::wire::frontend::decode(ty, body)? {
            Frontend::CopyData(data) => {
                let batch = records.push(&data)?;
                loader.load(&mut conn.session, batch)?;
            }
            Frontend::CopyDone => {
                let batch = records.finish()?;
                loader.load(&mut conn.session, batch)?;
                return conn.command_complete(format!("COPY {}", loader.rows)).await;
            }
            Frontend::CopyFail(message) => {
                return Err(Error::new(
                    SqlState::QUERY_CANCELED,
                    format!("COPY from stdin failed: {message}"),
                )
                .into())
            }
            _ => {} // Flush and Sync are ignored during COPY.
        }
    }
}
