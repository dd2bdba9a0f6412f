//! A view named more than once in one SELECT is computed once per
//! execution: its references share one result.
//!
//! CH-benCHmark's Q15 reads the view `revenue0` (a 3 M-row join grouped
//! into 10,000 suppliers) twice: in FROM and in the scalar subquery that
//! finds its maximum. Both read the statement's snapshot and see the
//! same transaction state, so both give the same rows:
//!
//! ```text
//!   planning (sharing_views):  view name ─► SharedRows (one per name)
//!                                 │ each reference's plan holds it
//!   execution:  bind_statement ─► reset: forget the rows
//!               first reference ─► run its plan ─► keep the rows
//!               other references ─► the kept rows
//! ```
//!
//! Not shared: a view whose query calls a sequence function (`nextval`,
//! `setval`: volatile, each reference must call it), and views planned
//! outside a top-level SELECT (DML reads them per reference).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ndpdb_formats::Value;

thread_local! {
    /// The shared results of the statement being planned, by view name.
    static REGISTRY: RefCell<Option<HashMap<String, Arc<SharedRows>>>> =
        const { RefCell::new(None) };
}

/// The rows of one view for the current execution.
#[derive(Default)]
pub struct SharedRows {
    rows: Mutex<Option<Arc<Vec<Vec<Value>>>>>,
    /// References planned with this result.
    references: AtomicUsize,
}

impl SharedRows {
    /// The rows kept by an earlier reference of this execution.
    pub fn get(&self) -> Option<Arc<Vec<Vec<Value>>>> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn keep(&self, rows: Arc<Vec<Vec<Value>>>) {
        *self.rows.lock().unwrap_or_else(|e| e.into_inner()) = Some(rows);
    }

    /// A new execution: the rows are computed again.
    pub fn forget(&self) {
        *self.rows.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    pub fn references(&self) -> usize {
        self.references.load(Ordering::Relaxed)
    }
}

/// Plans `f` (a top-level SELECT) with views shared by name.
pub fn sharing_views<T>(f: impl FnOnce() -> T) -> T {
    struct Leave(Option<HashMap<String, Arc<SharedRows>>>);
    impl Drop for Leave {
        fn drop(&mut self) {
            let saved = self.0.take();
            REGISTRY.with(|r| *r.borrow_mut() = saved);
        }
    }
    let saved = REGISTRY.with(|r| r.borrow_mut().replace(HashMap::new()));
    let _leave = Leave(saved);
    f()
}

/// The shared result of view `name` (stored query `sql`) in the
/// statement being planned; `None` outside [`sharing_views`] or for a
/// query with a volatile call.
pub fn shared_for(name: &str, sql: &str) -> Option<Arc<SharedRows>> {
    let lower = sql.to_ascii_lowercase();
    if lower.contains("nextval") || lower.contains("setval") {
        return None;
    }
    REGISTRY.with(|r| {
        let mut r = r.borrow_mut();
        let shared = r.as_mut()?.entry(name.to_string()).or_default().clone();
        shared.references.fetch_add(1, Ordering::Relaxed);
        Some(shared)
    })
}
