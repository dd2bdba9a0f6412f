//! A sequence function met while binding (`nextval('s')`, `currval`,
//! `setval`): the sequence it names, resolved when the statement is
//! planned, and its other arguments compiled. The binder hands it to the
//! query being planned, which gives it a per-row parameter slot; the
//! call itself is made when the row is (`plan/subquery/volatile.rs`).
//!
//! ```text
//!  nextval('s')  ─► SequenceCall { Next, "s", [] } ─► Op::Param(slot)
//! ```

use ndpdb_formats::expr::Program;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequenceFunc {
    Next,
    Curr,
    Set,
}

/// One call: the sequence (named when planned) and, for `setval`, the
/// value and `is_called` arguments.
#[derive(Clone, Debug)]
pub struct SequenceCall {
    pub func: SequenceFunc,
    pub sequence: String,
    pub args: Vec<Program>,
}
