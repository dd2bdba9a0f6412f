//! Join plans: what the planner decides for each table joined to the
//! rows before it, and what `exec/join/` runs — the kind of join, its
//! equi-keys on either side, the ON residual, the narrow row out and,
//! when the join's terms fix the new table's whole primary key, a
//! per-row key lookup instead of the hash join.
//!
//! ```text
//!  plan/query/select.rs ──► JoinStep { kind, keys, residual, lookup } ──► exec/join/
//!                              └─ plan_lookup: equi-terms + constants
//!                                  cover the primary key? ─► KeyLookup
//! ```
//!
//! Whether a planned lookup is used is decided when the join runs
//! (`KeyLookup::worthwhile` in `exec/join/lookup.rs`, from the left
//! side's row count against [`LOOKUP_FACTOR`]); `join_order.rs` costs
//! the same choice with the same factor.

use ndpdb_formats::expr::Program;
use ndpdb_formats::DataType;
use ndpdb_host::database::TableState;
use sqlparser::ast::Expr;

use crate::bind::compile::{compile, Ty};
use crate::bind::scope::Scope;
use crate::plan::access::{column_of, pk_terms};
use crate::Result;

/// How one table joins the rows before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
}

impl JoinKind {
    /// Left rows without a match are kept (with NULLs on the right).
    pub fn keeps_left(self) -> bool {
        matches!(self, JoinKind::Left | JoinKind::Full)
    }

    /// Right rows without a match are kept (with NULLs on the left).
    pub fn keeps_right(self) -> bool {
        matches!(self, JoinKind::Right | JoinKind::Full)
    }

    pub fn explain(self) -> &'static str {
        match self {
            JoinKind::Inner => "Hash Join",
            JoinKind::Left => "Hash Left Join",
            JoinKind::Right => "Hash Right Join",
            JoinKind::Full => "Hash Full Join",
        }
    }
}

/// One table joined to the rows before it.
pub struct JoinStep {
    pub kind: JoinKind,
    /// Key programs over the rows joined so far / over the new table's row.
    pub left_keys: Vec<Program>,
    pub right_keys: Vec<Program>,
    /// The ON terms that are not keys, over the joined row (left ++ right).
    pub residual: Option<Program>,
    /// Columns of the rows so far and of the new table.
    pub left_width: usize,
    pub right_width: usize,
    /// Per-row key lookups instead of the hash join, when the left side
    /// is small (`exec/join/lookup.rs` runs them).
    pub lookup: Option<KeyLookup>,
    /// The row out, by position: a column of left ++ right, or NULL;
    /// `None`: left ++ right itself (`join_layout.rs` narrows the rows
    /// a join carries to the columns read after it).
    pub output: Option<Vec<Option<u32>>>,
}

/// Lookups win while the left side has fewer than 1/`LOOKUP_FACTOR` of
/// the table's keys (a lookup costs several scanned rows) — when the
/// table fits in the buffer pool.
pub const LOOKUP_FACTOR: u64 = 8;

/// [`LOOKUP_FACTOR`] for a table larger than the buffer pool, whose
/// lookups mostly read a page from the device: at 10 CH-benCHmark
/// warehouses, 115,841 lookups in STOCK (1 M rows, 64 MiB pool) took
/// 20 µs each, a scan about 1 µs per row read and joined.
pub const UNCACHED_LOOKUP_FACTOR: u64 = 20;

/// How the new table's key is made from a row so far.
pub struct KeyLookup {
    /// One program per primary-key column, over the left row (constants
    /// read no column).
    pub key: Vec<Program>,
    /// The key's index, for EXPLAIN.
    pub index: String,
}

/// Whether `left`'s values are equal to a key column of type `col`
/// exactly when their key encodings are equal.
fn encodes_alike(left: Ty, col: DataType) -> bool {
    let Ty::Known(left) = left else {
        return false;
    };
    let number = |t: DataType| {
        matches!(
            t,
            DataType::Int | DataType::BigInt | DataType::Numeric { .. }
        )
    };
    let text = |t: DataType| matches!(t, DataType::Text | DataType::Varchar(_));
    (number(left) && number(col)) || (text(left) && text(col)) || left == col
}

/// The lookup of a join of `ts` (an inner or LEFT join) on the equi-terms
/// `pairs` (left side, right side) with the table's own terms `pushed`,
/// when they give its whole primary key.
pub fn plan_lookup(
    ts: &TableState,
    kind: JoinKind,
    pairs: &[(Expr, Expr)],
    pushed: &[Expr],
    left_scope: &Scope,
    right_scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Option<KeyLookup>> {
    let meta = ts.meta();
    let pk = &meta.schema.primary_key;
    if pk.is_empty() || !matches!(kind, JoinKind::Inner | JoinKind::Left) || pairs.is_empty() {
        return Ok(None);
    }
    let constants = pk_terms(ts, pushed, right_scope, params)?;
    let mut key = Vec::with_capacity(pk.len());
    for (i, &c) in pk.iter().enumerate() {
        let col_ty = meta.schema.columns[c].ty;
        let mut from_left = None;
        for (l, r) in pairs {
            if column_of(r, right_scope) != Some(c) {
                continue;
            }
            let mut probe = Vec::new();
            let (_, ty) = compile(l, left_scope, &mut probe)?;
            if encodes_alike(ty, col_ty) {
                from_left = Some(compile(l, left_scope, params)?.0);
                break;
            }
        }
        match from_left.or_else(|| constants.get(i).cloned().flatten()) {
            Some(p) => key.push(p),
            None => return Ok(None),
        }
    }
    // A key of constants only is read once, as the table's own lookup.
    if constants.iter().all(Option::is_some) {
        return Ok(None);
    }
    Ok(Some(KeyLookup {
        key,
        index: meta.pk_constraint_name(),
    }))
}
