//! The SQL front end (DESIGN.md §11), in pipeline order:
//!
//! - [`limits`]: statement size and nesting limits (54000 / 54001).
//! - [`session`]: statement dispatch and PostgreSQL transaction-block rules.
//! - [`read_only`]: READ ONLY transactions and the statements they refuse.
//! - [`time_setting`]: time-valued settings (timeouts) as PostgreSQL reads and shows them.
//! - [`token_text`]: tokens with their byte offsets in the source text.
//! - [`copy_options`]: COPY's boolean option values as PostgreSQL spells them.
//! - [`maintenance`]: VACUUM / ANALYZE in PostgreSQL's grammar.
//! - [`ddl`]: CREATE TABLE / ALTER TABLE … ADD PRIMARY KEY / DROP TABLE and SQL type names.
//! - [`sequence_ddl`]: CREATE / DROP SEQUENCE, SERIAL and identity columns.
//! - [`alter_column`]: ALTER TABLE … ADD / DROP COLUMN (a table rewrite).
//! - [`index_ddl`]: CREATE [UNIQUE] INDEX / DROP INDEX.
//! - [`constraint_ddl`]: FOREIGN KEY and UNIQUE constraints in CREATE / ALTER TABLE.
//! - [`view`]: CREATE [OR REPLACE] VIEW / DROP VIEW, views read as queries in FROM.
//! - [`interval`]: interval literals in date and timestamp arithmetic.
//! - [`scope`]: name resolution of columns over one or more tables.
//! - [`compile`]: expressions → portable bytecode (`ndpdb_formats::expr`),
//!   with static types and literal coercion.
//! - [`subquery`]: EXISTS / IN / scalar subqueries, correlated or not,
//!   and queries in FROM and WITH, as parameter slots of their query.
//! - [`access`]: how a table is read (primary-key lookup, secondary-index range, scan).
//! - [`query`]: SELECT planning and execution (access path, joins,
//!   aggregation, ordering, limits, FOR UPDATE).
//! - [`or_terms`]: the terms an OR of AND lists implies (join keys, scan filters).
//! - [`join_order`]: the order of a SELECT's inner joins.
//! - [`join`]: hash joins (inner on the smaller side, outer joins).
//! - [`join_keys`]: a join's hash table: packed integer keys, else bytes.
//! - [`join_layout`]: narrow join rows: the columns each join step carries.
//! - [`host_aggregate`]: GROUP BY on the host, fed the joined rows as they are made.
//! - [`placement`]: the cost model of `SET ndp = auto`.
//! - [`column_default`]: column defaults (DEFAULT, SERIAL, identity) at INSERT.
//! - [`dml`]: INSERT / UPDATE / DELETE.
//! - [`dml_placement`]: UPDATE / DELETE on the device (update NDP) or the host.
//! - [`output`]: result sets, command tags and their text renderings.
//! - [`backup_call`]: `SELECT ndpdb_backup('dir')`, an online base backup from a session.
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
