//! Statement cancellation and `statement_timeout` (DESIGN.md §11).
//!
//! ```text
//!  Session ──start_statement(timeout)──► Interrupt ◄──cancel()── server's
//!     │                                    ▲         CancelRequest (pid,
//!     └─ Transaction::check_interrupt ─────┘         secret key)
//!        every 1,024 scanned tuples, every 50 ms of a lock wait,
//!        every NDP_STATUS poll of a read-only device job (NDP_ABORT)
//! ```
//!
//! A canceled or timed-out statement fails with SQLSTATE 57014 like any
//! other error: in a block the block fails, outside one the transaction
//! rolls back. A cancel that arrives between statements is dropped (the
//! next statement starts clean), as in PostgreSQL.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ndpdb_formats::SqlState;
use parking_lot::Mutex;

use crate::{Error, Result};

#[derive(Default)]
struct State {
    canceled: AtomicBool,
    deadline: Mutex<Option<Instant>>,
}

/// A session's interrupt: shared between the session (which checks it)
/// and whoever may cancel the running statement.
#[derive(Clone, Default)]
pub struct Interrupt(Arc<State>);

impl Interrupt {
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Cancels the running statement (a no-op between statements).
    pub fn cancel(&self) {
        self.0.canceled.store(true, Ordering::Release);
    }

    /// A statement starts: forget earlier cancels, arm the timeout.
    pub fn start_statement(&self, timeout: Option<Duration>) {
        self.0.canceled.store(false, Ordering::Release);
        *self.0.deadline.lock() = timeout.map(|t| Instant::now() + t);
    }

    /// `Err(57014)` if the statement was canceled or ran out of time.
    pub fn check(&self) -> Result<()> {
        if self.0.canceled.load(Ordering::Acquire) {
            return Err(Error::new(
                SqlState::QUERY_CANCELED,
                "canceling statement due to user request",
            ));
        }
        if let Some(d) = *self.0.deadline.lock() {
            if Instant::now() >= d {
                return Err(Error::new(
                    SqlState::QUERY_CANCELED,
                    "canceling statement due to statement timeout",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_and_timeout_fail_the_statement_and_reset_at_the_next() {
        let i = Interrupt::new();
        i.start_statement(None);
        assert!(i.check().is_ok());
        i.cancel();
        let e = i.check().unwrap_err();
        assert_eq!(e.code, SqlState::QUERY_CANCELED);
        assert!(e.message.contains("user request"));
        i.start_statement(Some(Duration::ZERO));
        let e = i.check().unwrap_err();
        assert!(e.message.contains("statement timeout"), "{}", e.message);
        i.start_statement(Some(Duration::from_secs(60)));
        assert!(i.check().is_ok());
    }
}
