//! Portable expression bytecode and its one evaluator (DESIGN.md §5).
//!
//! The SQL binder compiles every scalar expression (predicates,
//! projections, SET expressions) into a [`Program`]: a constant pool plus a
//! flat list of stack-machine [`Op`]s. Programs serialize to bytes, so the
//! host can ship them to the device, and both sides run this evaluator —
//! an offloaded filter computes exactly what the host would.
//!
//! ```text
//!  a + 1 > $1 AND b IS NULL        Column(0) Const(0) Add Param(0) Gt
//!                                  JumpIfFalseKeep(9) Column(1) IsNull And
//! ```
//!
//! Logic is SQL's three-valued logic; AND/OR short-circuit on FALSE/TRUE.
//!
//! One file per purpose, lowest first:
//! - `func.rs`: the built-in functions' names, arities and tags.
//! - `program.rs`: the instructions and the program (the tree the planner
//!   builds and rewrites without running it).
//! - `errors.rs`: the SQL errors evaluation raises.
//! - `arith.rs`: arithmetic; `compare.rs`: comparison, sorted IN, LIKE.
//! - `call.rs`: what the built-in functions compute.
//! - `eval.rs`: the stack machine, [`Program::eval`].
//! - `codec.rs`: programs and values as bytes.

mod arith;
mod call;
mod codec;
mod compare;
mod errors;
mod eval;
mod func;
mod program;

pub use codec::{decode_value, encode_value};
pub use compare::{compare, like};
pub use func::Func;
pub use program::{sort_in_list, Op, Program};

#[cfg(test)]
mod tests;
