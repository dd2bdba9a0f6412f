//! The engine's background threads, each in its own file with the handle
//! the engine keeps of it (DESIGN.md §8a, §10):
//!
//! ```text
//!  autovacuum.rs    GC past PostgreSQL's autovacuum threshold, once a naptime
//!  checkpointer.rs  the checkpoints commits ask for, at a spread pace
//!  reattach.rs      a restarted device process joined again
//! ```
//!
//! Each file is a leaf: the engine (`crate::db::Engine`) holds the handle
//! and starts the thread, and the thread reaches the engine only through
//! a narrow trait the file defines ([`autovacuum::Vacuum`],
//! [`checkpointer::Checkpoints`], [`reattach::Reattach`]), implemented
//! where the work lives (`crate::gc`, `crate::db`). A thread holds the
//! engine only while it works (a weak reference otherwise), and the last
//! user handle of a database stops and joins it.

pub(crate) mod autovacuum;
pub(crate) mod checkpointer;
pub(crate) mod reattach;
