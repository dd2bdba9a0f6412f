//! A planned SELECT ([`SelectPlan`]) and the planner that makes it.
//!
//! ```text
//!  sources (PK lookup or scan + pushed-down filter, per table)
//!     └─► hash joins on equi-conditions (left-deep; inner joins in the
//!         order of join_order.rs, LEFT/RIGHT/FULL OUTER in FROM order)
//!           └─► residual WHERE ─► FOR UPDATE locks (single table)
//!                 └─► GROUP BY / aggregates ─► HAVING ─► projection
//!                       └─► DISTINCT ─► ORDER BY ─► OFFSET / LIMIT
//! ```
//!
//! WHERE and ON are split into conjuncts. A conjunct that only names one
//! table's columns filters that table's scan; `a.x = b.y` between the
//! tables joined so far and the next one becomes a hash-join key; the rest
//! is evaluated on the joined rows. With outer joins a WHERE conjunct
//! filters a scan only if no outer join fills that table with NULLs, and
//! an outer join's ON terms stay with it (keys and a residual; a LEFT
//! join's terms over its own table filter that table's scan). Equality on
//! every primary-key column with constants or parameters turns a scan
//! into an index lookup. An OR of AND lists adds the terms it implies
//! (`or_terms.rs`).
//!
//! This file holds the plan's types; the planner is in `query/`:
//!
//! ```text
//!  plan.rs    plan_query_in: WITH, the body, ORDER BY, LIMIT; UPDATE / DELETE filters
//!   └─► set_operation.rs  UNION / INTERSECT / EXCEPT: each side a query
//!   └─► select.rs   plan_select: one SELECT body
//!        └─► from.rs     the FROM list ─► plan_derived (plan.rs) for a query in FROM
//!        └─► compile (bind/) ─► nested.rs: a subquery expression
//!                                 ─► plan_query_in for the child
//!                                 ─► hashed_exists.rs: correlated EXISTS as a hash semi join
//!  explain.rs EXPLAIN's text of a plan
//! ```
//!
//! The planner is recursive (a query in FROM, a subquery, a WITH query
//! are queries), and so are its types: a plan's [`Bindings`] hold the
//! subqueries' plans (`plan/subquery/`). Where a plan runs is decided by
//! `placement/`; it is executed by `exec/`.

use std::sync::{Arc, Mutex};

use ndpdb_formats::expr::Program;
use ndpdb_formats::SqlState;
use ndpdb_host::database::TableState;
use ndpdb_host::ndp::{NdpReport, NdpRequest};

use crate::bind::compile::AggContext;
use crate::bind::scope::Scope;
use crate::exec::row_source::RowSource;
use crate::output::ResultColumn;
use crate::plan::access::Access;
use crate::plan::join_plan::JoinStep;
use crate::plan::ordered_read::KeyOrderRead;
use crate::plan::subquery::Bindings;
use crate::Error;

pub(crate) fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )
}

mod explain;
mod from;
mod hashed_exists;
mod nested;
mod plan;
mod select;
mod set_operation;
pub(crate) use select::output_name;
pub(crate) use set_operation::bare_query;
pub use set_operation::{SetOp, SetOperation, SetSide};

pub use plan::{plan_filter, plan_query, plan_query_in};

/// What a FROM item reads.
pub enum Input {
    Table(Arc<TableState>),
    /// A subquery in FROM or a `WITH` query: its rows, once per execution.
    Derived(Box<SelectPlan>),
    /// VALUES, a set-returning function or a catalog relation
    /// (`row_source/`): rows made when the statement runs.
    Rows(Box<RowSource>),
    /// `UNION`, `INTERSECT` or `EXCEPT` of two queries
    /// (`query/set_operation.rs`).
    SetOp(Box<SetOperation>),
}

pub struct Source {
    pub input: Input,
    pub alias: String,
    pub access: Access,
    /// Values of the leading primary-key columns every row kept has
    /// (`access::key_prefix`): what a scan locks under SERIALIZABLE.
    pub key_prefix: Vec<Program>,
    pub filter: Option<Program>,
    /// `filter`'s AND terms, each compiled alone (NDP pipelines compare
    /// predicates by them).
    pub conjuncts: Vec<Program>,
}

impl Source {
    /// The table read, unless this is a derived table.
    pub fn table(&self) -> Option<&Arc<TableState>> {
        match &self.input {
            Input::Table(t) => Some(t),
            Input::Derived(_) | Input::Rows(_) | Input::SetOp(_) => None,
        }
    }
}

pub(crate) enum SortKey {
    Output(usize),
    Expr(Program),
}

pub(crate) struct OrderItem {
    pub(crate) key: SortKey,
    pub(crate) desc: bool,
    pub(crate) nulls_first: bool,
}

/// A planned SELECT; reusable across executions with different parameters.
pub struct SelectPlan {
    pub sources: Vec<Source>,
    pub(crate) joins: Vec<JoinStep>,
    pub(crate) filter: Option<Program>,
    /// WHERE terms that need a subquery per row, after `filter`, in order.
    pub(crate) row_filter: Vec<Program>,
    /// The query's subqueries and correlated references (parameter slots).
    pub subqueries: Bindings,
    /// The grouping context and HAVING, for aggregate queries.
    pub(crate) agg: Option<(AggContext, Option<Program>)>,
    /// The joined row's columns (ORDER BY of non-aggregate queries).
    pub(crate) input_scope: Scope,
    pub(crate) projection: Vec<Program>,
    pub columns: Vec<ResultColumn>,
    pub(crate) order: Vec<OrderItem>,
    pub(crate) distinct: bool,
    pub(crate) limit: Option<Program>,
    pub(crate) offset: Option<Program>,
    pub for_update: bool,
    /// The first rows come in primary-key order: the read stops at
    /// OFFSET + LIMIT rows (`ordered_read.rs`).
    pub(crate) key_order_read: Option<KeyOrderRead>,
    /// Where the first source's scan runs, when it goes to the device.
    pub ndp: Option<NdpPlacement>,
    /// Figures of the last offloaded execution (for EXPLAIN ANALYZE).
    pub last_ndp: Mutex<Option<NdpReport>>,
    /// Window and set-returning columns (`select_extras.rs`).
    pub(crate) extras: Option<crate::plan::select_extras::Extras>,
    /// The joins over narrow rows (`join_layout.rs`); made at the first
    /// execution, when every part of the plan is compiled.
    pub(crate) narrow: std::sync::OnceLock<Option<crate::exec::join::layout::NarrowJoins>>,
    /// The columns a one-table plain SELECT reads (`single_table_wanted`).
    pub(crate) single_wanted: std::sync::OnceLock<Option<Vec<bool>>>,
    /// Per FROM item of the last execution: rows read and the time the
    /// read took, rows after its join and the time the join took
    /// (EXPLAIN ANALYZE).
    pub last_steps: Mutex<Vec<StepReport>>,
    /// The rows of a view this plan reads, shared with the view's other
    /// references in the statement (`shared_view.rs`).
    pub shared: Option<Arc<crate::shared_view::SharedRows>>,
}

impl SelectPlan {
    /// A plan that reads one `source` and projects `projection` over its
    /// rows (`scope`): no join, grouping, ordering or limit yet.
    pub(crate) fn single_source(
        source: Source,
        scope: Scope,
        projection: Vec<Program>,
        columns: Vec<ResultColumn>,
        subqueries: Bindings,
    ) -> SelectPlan {
        SelectPlan {
            sources: vec![source],
            joins: Vec::new(),
            filter: None,
            row_filter: Vec::new(),
            subqueries,
            agg: None,
            input_scope: scope,
            projection,
            columns,
            order: Vec::new(),
            distinct: false,
            limit: None,
            key_order_read: None,
            offset: None,
            for_update: false,
            ndp: None,
            last_ndp: Mutex::new(None),
            extras: None,
            narrow: std::sync::OnceLock::new(),
            single_wanted: std::sync::OnceLock::new(),
            last_steps: Mutex::new(Vec::new()),
            shared: None,
        }
    }
}

/// What one FROM item of a join cost in an execution.
#[derive(Clone, Debug, Default)]
pub struct StepReport {
    pub alias: String,
    pub rows_read: usize,
    pub read: std::time::Duration,
    /// Rows after this item was joined (the first item: its rows).
    pub rows_out: usize,
    pub join: std::time::Duration,
    /// Joined by key lookups instead of a scan.
    pub lookups: bool,
    /// Read through a runtime join filter of this many keys
    /// (`join_filter.rs`: the IN list's keys, or the Bloom filter's).
    pub join_filter: Option<usize>,
}

/// How a query uses NDP (`SET ndp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdpMode {
    Off,
    On,
    Auto,
}

/// The device part of a plan.
#[derive(Clone, Debug)]
pub struct NdpPlacement {
    pub request: NdpRequest,
    /// The device aggregates (rows come back as `[groups…, aggregates…]`).
    pub aggregate: bool,
    /// For scans: the table columns the rest of the plan reads.
    pub columns: Vec<u32>,
    /// Why this placement was chosen (EXPLAIN).
    pub reason: String,
}

/// `items` in `order` (positions into `items`, each once).
pub(crate) fn permute<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.iter().filter_map(|&i| slots[i].take()).collect()
}
