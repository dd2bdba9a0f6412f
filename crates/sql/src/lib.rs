//! The SQL front end (DESIGN.md §11): a statement goes through stages,
//! one folder each, and a stage only uses the ones below it.
//!
//! ```text
//!  text ─► parse/     lexing, the sqlparser dialect, coarse statement kinds
//!           │
//!  session/ ─ dispatch, transaction blocks, SET / SHOW, PREPARE, savepoints
//!           │
//!           ├─► ddl/    CREATE / ALTER / DROP TABLE, INDEX, SEQUENCE,
//!           │           constraints, column defaults
//!           ▼
//!  bind/      names ─► columns (scope), expressions ─► bytecode (compile),
//!           │  types, intervals, sequence calls
//!           ▼
//!  plan/      SELECT and DML read sides: access paths, join plans and
//!           │  order, conjuncts and OR terms, subqueries, views, WITH
//!           ▼
//!  placement/ where a scan or a DML runs: host or device (cost model)
//!           ▼
//!  exec/      reads, joins, row sources, host aggregation, INSERT /
//!              UPDATE / DELETE ─► output (rows, tags, notices)
//! ```
//!
//! Beside the stages: [`limits`] (statement size and nesting, 54000 /
//! 54001), [`read_only`] (READ ONLY transactions), [`time_setting`],
//! [`token_text`], [`copy_options`], [`maintenance`] (VACUUM / ANALYZE),
//! [`shared_view`] (a view's rows shared within a statement) and
//! [`backup_call`] (`SELECT ndpdb_backup('dir')`). The modules' paths from
//! before the stages had folders (`query`, `join`, `dml`, …) stay as
//! re-exports below.
//!
//! The sqlparser AST stays at this edge: it is turned into bytecode
//! programs and plans here and never reaches the host engine.

pub mod backup_call;
pub mod bind;
pub mod copy_options;
pub mod ddl;
pub mod exec;
pub mod limits;
pub mod maintenance;
pub mod output;
pub mod parse;
pub mod placement;
pub mod plan;
pub mod read_only;
pub mod session;
pub mod shared_view;
pub mod time_setting;
pub mod token_text;

// The modules' paths before the stages had folders, kept for callers.
pub use bind::{array_type, compile, interval, scope};
pub use ddl::alter_column;
pub use ddl::constraints as constraint_ddl;
pub use ddl::index as index_ddl;
pub use ddl::sequence as sequence_ddl;
pub use exec::dml::{assignment, column_default, on_conflict};
pub use exec::join::filter as join_filter;
pub use exec::join::keys as join_keys;
pub use exec::join::layout as join_layout;
pub use exec::join::lookup as join_lookup;
pub use exec::join::packed_table;
pub use exec::{dml, host_aggregate, join, row_source};
pub use placement::cost_model as placement_cost;
pub use placement::dml as dml_placement;
pub use plan::{access, join_order, join_using, or_terms, ordered_read, query, select_extras};
pub use plan::{subquery, view};

pub use ndpdb_host::{Error, Result};

/// `SELECT version()`: PostgreSQL-compatible prefix, then ndpdb's own.
pub const SERVER_VERSION: &str = concat!(
    "PostgreSQL 15.0 (ndpdb ",
    env!("CARGO_PKG_VERSION"),
    ", a near-data-processing database)"
);
pub use output::{Notice, Output, ResultColumn};
pub use session::Session;
