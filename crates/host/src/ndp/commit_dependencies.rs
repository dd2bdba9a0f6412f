//! Commit dependencies of controlled lock violation (update NDP §5.4):
//! the end of a violable transaction ([`Eot`]) and the ends a
//! transaction that wrote on its versions waits for before its own
//! commit ([`Dependencies`]).
//!
//! ```text
//!  TX_NDP (violable) ── Eot: Pending ──────────────► Committed | Failed
//!  dependent writes on its version ─► Dependencies.add(eot)
//!  dependent COMMIT ─► Dependencies.wait: every Eot Committed? ─► commit
//!                                         one Failed ─► 40001
//! ```
//!
//! Plain synchronisation, apart from the engine: the engine keeps the
//! violable transactions' ends (`crate::db::Engine::violable`), a
//! transaction its dependencies, and `lock_violation.rs` enters and
//! leaves the violable state.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use ndpdb_formats::{SqlState, TxId};

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Committed,
    Failed,
}

/// The end of a violable transaction, which its dependents wait for.
pub(crate) struct Eot {
    txid: TxId,
    state: Mutex<State>,
    done: Condvar,
}

impl Eot {
    /// The end of violable transaction `txid`, still pending.
    pub(crate) fn new(txid: TxId) -> Eot {
        Eot {
            txid,
            state: Mutex::new(State::Pending),
            done: Condvar::new(),
        }
    }

    /// The violable transaction.
    pub(crate) fn txid(&self) -> TxId {
        self.txid
    }

    /// The transaction ended: its dependents go on (`committed`) or fail.
    pub(crate) fn finish(&self, committed: bool) {
        *self.state.lock() = if committed {
            State::Committed
        } else {
            State::Failed
        };
        self.done.notify_all();
    }

    /// Waits for the end; whether the transaction committed.
    fn wait(&self) -> bool {
        let mut s = self.state.lock();
        while *s == State::Pending {
            self.done.wait(&mut s);
        }
        *s == State::Committed
    }
}

/// What a transaction that wrote on a violable transaction's versions
/// waits for before it commits.
#[derive(Default)]
pub(crate) struct Dependencies(Vec<Arc<Eot>>);

impl Dependencies {
    pub fn add(&mut self, eot: Arc<Eot>) {
        if !self.0.iter().any(|e| Arc::ptr_eq(e, &eot)) {
            self.0.push(eot);
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Waits until every transaction depended on has ended; fails if one
    /// did not commit.
    pub fn wait(&self, txid: TxId) -> Result<()> {
        for eot in &self.0 {
            if !eot.wait() {
                return Err(Error::new(
                    SqlState::SERIALIZATION_FAILURE,
                    format!(
                        "could not serialize access: transaction {} whose rows transaction {txid} changed during its commit (lock violation) did not commit",
                        eot.txid
                    ),
                ));
            }
        }
        Ok(())
    }
}
