//! Execution: running a [`crate::plan::query::SelectPlan`] and the DML
//! statements against a transaction.
//!
//! ```text
//!  query.rs ──► plan's sources read (plan/query/read.rs)
//!     │       ──► join_run (hash or key-lookup joins, join/)
//!     │       ──► row_sink ──► host_aggregate / projection ──► Output
//!  row_source/: VALUES, set-returning functions, catalog relations
//!  set_operation.rs: UNION / INTERSECT / EXCEPT of two plans' rows
//!  dml/: INSERT / UPDATE / DELETE
//! ```

pub mod dml;
pub mod host_aggregate;
pub mod join;
pub(crate) mod join_run;
mod query;
pub(crate) mod read;
pub(crate) mod row_sink;
pub mod row_source;
mod set_operation;
