//! Planning: a bound SELECT (or the read side of UPDATE / DELETE) turned
//! into a [`query::SelectPlan`] — the access path of each table, the join
//! order, filters pushed to scans, subqueries as parameter slots, views
//! and `WITH` queries expanded in FROM.
//!
//! ```text
//!  query (plan.rs, select.rs) ──► access      (key lookup, index range, scan)
//!        │        ▲               join_order  (inner joins, cheapest first)
//!        ▼        │               or_terms    (what an OR of ANDs implies)
//!     subquery/ ──┘               select_extras, ordered_read, view
//! ```
//!
//! The one recursion allowed here is the planner's own: a query plans
//! its subqueries, and a subquery is planned as a query.

pub mod access;
pub mod conjuncts;
pub mod join_order;
pub mod join_plan;
pub mod join_using;
pub mod or_terms;
pub mod ordered_read;
pub mod query;
pub mod select_extras;
pub mod subquery;
pub mod view;
