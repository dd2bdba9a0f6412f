//! Binding: names and expressions of the AST turned into typed bytecode.
//!
//! ```text
//!  sqlparser Expr ──► scope (which column a name is)
//!                 ──► compile (static types, coercion, Program)
//!                 ──► Op::Param slot ◄── the query being planned, through
//!                                        the trait in scope.rs
//! ```
//!
//! Binding sits below planning: it never names a plan, a subquery planner
//! or an executor. A subquery, a correlated reference or a sequence call
//! met in an expression is handed to the [`scope::QueryBinder`] the
//! [`scope::Scope`] carries, which the planner implements and which
//! answers with a parameter slot.

pub mod array_type;
pub mod compile;
pub mod interval;
pub mod scope;
pub mod sequence_call;
pub mod types;
