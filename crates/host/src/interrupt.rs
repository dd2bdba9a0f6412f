//! Statement cancellation and `statement_timeout` (DESIGN.md §11).
//!
//! ```text
//!  Session ──open / start_statement(timeout)──► Interrupt ◄──cancel()── server's
//!     │                                            ▲  ▲      CancelRequest (pid,
//!     └─ check ────────────────────────────────────┘  │      secret key)
//!        while parsing (every 256 expressions),       └─ watch_peer(fd): the
//!        planning, every 1,024 scanned tuples,           client's socket, polled
//!        every 50 ms of a lock wait, every               for hang-up every 100 ms
//!        NDP_STATUS poll of a read-only device job       by check (08006)
//! ```
//!
//! The window a timeout covers opens when a message arrives: a Query's
//! text is parsed and all its statements run under one deadline, as
//! PostgreSQL counts `statement_timeout` from the message's arrival.
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

/// How often a running statement looks at its client's socket.
const PEER_POLL_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Default)]
struct State {
    canceled: AtomicBool,
    /// The client's socket was seen closed: the statement stops (08006).
    lost: AtomicBool,
    timing: Mutex<Timing>,
}

#[derive(Default)]
struct Timing {
    deadline: Option<Instant>,
    /// A message's window is open ([`Interrupt::open`]) and no statement
    /// has started in it: the first keeps the window's deadline.
    open: bool,
    /// The client's socket, looked at every [`PEER_POLL_INTERVAL`].
    peer: Option<i32>,
    next_peer_poll: Option<Instant>,
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

    /// Watches the client's socket `fd` (a raw descriptor the caller keeps
    /// open until [`Interrupt::unwatch_peer`]): once the client has closed
    /// its end, the running statement fails with 08006 at its next check,
    /// as PostgreSQL's `client_connection_check_interval` does.
    pub fn watch_peer(&self, fd: i32) {
        self.0.timing.lock().peer = Some(fd);
    }

    /// Stops watching the socket (before it is closed).
    pub fn unwatch_peer(&self) {
        self.0.timing.lock().peer = None;
    }

    /// A statement starts: forget earlier cancels, arm the timeout —
    /// unless it is the first statement of a window just opened, which
    /// keeps the window's deadline (its parse counted against it).
    pub fn start_statement(&self, timeout: Option<Duration>) {
        let mut t = self.0.timing.lock();
        if t.open {
            t.open = false;
            return;
        }
        self.0.canceled.store(false, Ordering::Release);
        t.deadline = timeout.map(|d| Instant::now() + d);
    }

    /// A message arrives (a Query, a Parse): `statement_timeout` counts
    /// from here, as PostgreSQL counts it from the message's arrival, and
    /// covers the parse and the first statement; later statements of the
    /// same Query get a timeout each, as in PostgreSQL.
    pub fn open(&self, timeout: Option<Duration>) {
        let mut t = self.0.timing.lock();
        self.0.canceled.store(false, Ordering::Release);
        t.deadline = timeout.map(|d| Instant::now() + d);
        t.open = true;
    }

    /// The message is answered: the window closes.
    pub fn close(&self) {
        let mut t = self.0.timing.lock();
        t.open = false;
        t.deadline = None;
    }

    /// `Err(57014)` if the statement was canceled or ran out of time,
    /// `Err(08006)` if its client has gone.
    pub fn check(&self) -> Result<()> {
        if self.0.canceled.load(Ordering::Acquire) {
            return Err(Error::new(
                SqlState::QUERY_CANCELED,
                "canceling statement due to user request",
            ));
        }
        if self.0.lost.load(Ordering::Acquire) {
            return Err(connection_lost());
        }
        let mut t = self.0.timing.lock();
        if t.deadline.is_none() && t.peer.is_none() {
            return Ok(());
        }
        let now = Instant::now();
        if let Some(d) = t.deadline {
            if now >= d {
                return Err(Error::new(
                    SqlState::QUERY_CANCELED,
                    "canceling statement due to statement timeout",
                ));
            }
        }
        if let Some(fd) = t.peer {
            if !matches!(t.next_peer_poll, Some(next) if now < next) {
                t.next_peer_poll = Some(now + PEER_POLL_INTERVAL);
                if peer_closed(fd) {
                    self.0.lost.store(true, Ordering::Release);
                    return Err(connection_lost());
                }
            }
        }
        Ok(())
    }

    /// Whether the client was seen gone.
    pub fn connection_lost(&self) -> bool {
        self.0.lost.load(Ordering::Acquire)
    }
}

thread_local! {
    /// The interrupt of the statement this thread runs, for work that has
    /// no transaction at hand (SQL functions, joins, aggregates).
    static CURRENT: std::cell::RefCell<Option<Interrupt>> = const { std::cell::RefCell::new(None) };
    /// Work done since the last look at [`CURRENT`].
    static WORK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Units of work ([`tick`]) between two looks at the interrupt: a few
/// thousand rows, well under a millisecond.
const TICKS_PER_CHECK: usize = 4_096;

/// While alive, [`tick`] on this thread checks this interrupt.
pub struct Entered(Option<Interrupt>);

impl Interrupt {
    /// Makes this the interrupt [`tick`] checks on this thread until the
    /// guard drops (the one before it is restored: statements nest).
    pub fn enter(&self) -> Entered {
        Entered(CURRENT.with(|c| c.replace(Some(self.clone()))))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Counts `units` of work (rows made, joined, grouped) of the statement
/// this thread runs; every [`TICKS_PER_CHECK`] units `Err(57014)` or
/// `Err(08006)` if it was canceled, timed out or lost its client. Loops
/// that may run long without touching a table call it.
pub fn tick(units: usize) -> Result<()> {
    let done = WORK.with(|w| {
        let n = w.get() + units;
        w.set(if n >= TICKS_PER_CHECK { 0 } else { n });
        n >= TICKS_PER_CHECK
    });
    if !done {
        return Ok(());
    }
    CURRENT.with(|c| match &*c.borrow() {
        Some(i) => i.check(),
        None => Ok(()),
    })
}

/// PostgreSQL's error when it finds its client gone mid-statement.
fn connection_lost() -> Error {
    Error::new(SqlState::CONNECTION_FAILURE, "connection to client lost")
}

/// Whether the peer of socket `fd` has closed its end (or the socket
/// failed): a zero-timeout poll for hang-up, which does not consume data
/// the client sent ahead (pipelined messages stay readable).
#[cfg(unix)]
fn peer_closed(fd: i32) -> bool {
    #[cfg(target_os = "linux")]
    let events = libc::POLLRDHUP;
    #[cfg(not(target_os = "linux"))]
    let events = 0;
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd, count 1, no timeout; poll only reads the
    // descriptor number and writes `revents`.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    #[cfg(target_os = "linux")]
    let hangup = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR;
    #[cfg(not(target_os = "linux"))]
    let hangup = libc::POLLHUP | libc::POLLERR;
    n > 0 && p.revents & hangup != 0
}

#[cfg(not(unix))]
fn peer_closed(_fd: i32) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_client_socket_stops_the_statement() {
        use std::os::fd::AsRawFd;
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let i = Interrupt::new();
        i.watch_peer(ours.as_raw_fd());
        i.start_statement(None);
        assert!(i.check().is_ok());
        drop(theirs);
        // The socket is looked at once per interval.
        std::thread::sleep(PEER_POLL_INTERVAL + Duration::from_millis(10));
        let e = i.check().unwrap_err();
        assert_eq!(e.code, SqlState::CONNECTION_FAILURE);
        assert_eq!(e.message, "connection to client lost");
        assert!(i.connection_lost());
    }

    #[test]
    fn ticks_check_the_entered_interrupt() {
        let i = Interrupt::new();
        i.start_statement(None);
        i.cancel();
        assert!(tick(TICKS_PER_CHECK).is_ok(), "no interrupt entered");
        let entered = i.enter();
        let e = (0..TICKS_PER_CHECK).find_map(|_| tick(1).err()).unwrap();
        assert_eq!(e.code, SqlState::QUERY_CANCELED);
        drop(entered);
        assert!(tick(TICKS_PER_CHECK).is_ok());
    }

    #[test]
    fn a_window_covers_the_parse_and_the_first_statement() {
        let i = Interrupt::new();
        i.open(Some(Duration::ZERO));
        assert!(i.check().is_err(), "the parse");
        i.start_statement(Some(Duration::from_secs(60)));
        assert!(i.check().is_err(), "the first statement keeps the deadline");
        i.start_statement(Some(Duration::from_secs(60)));
        assert!(i.check().is_ok(), "the second gets its own");
        i.close();
        i.open(None);
        i.cancel();
        i.start_statement(None);
        assert!(
            i.check().is_err(),
            "a cancel during the parse stops the statement"
        );
    }

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
