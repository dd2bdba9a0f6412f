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
//! The connection's state and the replies the handlers send are in
//! `conn_io.rs`; this file only runs the loop and dispatches.
//!
//! Any error aborts the open transaction, as in PostgreSQL. The session is
//! dropped with the connection — by a close, a Terminate, a reset, or a
//! panic caught in `serve` — which rolls back whatever was not committed
//! (an implicit transaction without its Sync included), releases its
//! locks and discards its NDP jobs.

use tokio::io::{AsyncRead, AsyncWrite};

use ndpdb_formats::SqlState;
use ndpdb_sql::Error;

pub use crate::conn_io::Connection;
use crate::conn_io::Failure;
use crate::wire::body::protocol_violation;
use crate::wire::frontend::{self, Frontend};
use crate::wire::Gone;

/// What the loop does after a message.
enum Step {
    Continue,
    /// Send ReadyForQuery before reading on.
    Ready,
    Exit,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Connection<R, W> {
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
}
