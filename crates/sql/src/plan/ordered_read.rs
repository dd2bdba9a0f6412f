//! Reads in key order that stop at LIMIT: a one-table query whose WHERE
//! fixes a prefix of the primary key and whose ORDER BY follows the key's
//! next columns reads the prefix's tuples in key order (or backwards)
//! and stops once `OFFSET + LIMIT` of them pass the WHERE — TPC-C's
//! "oldest new order of a district" (`ORDER BY no_o_id LIMIT 1`) reads
//! one live row instead of the district's.
//!
//! ```text
//!  WHERE w = $1 AND d = $2   ORDER BY o [DESC]   LIMIT n
//!        └─ key prefix ─┘             └ next key column, one direction
//!  key order (pk_index/order.rs) ─► VIDs in order ─► visible version
//!  ─► WHERE ─► … until n rows ─► the usual sort and LIMIT (a no-op now)
//! ```
//!
//! Only the primary key's ordered index qualifies: it holds one entry per
//! tuple at the tuple's only key, so its order is the rows' order. (A
//! secondary index keeps entries of keys a tuple no longer has.) A
//! FOR UPDATE read whose rows were changed under it may lock fewer than
//! it needs: it reads again without the stop (`SelectPlan::joined_rows_reading`).

use std::sync::Arc;

use ndpdb_formats::expr::Program;
use ndpdb_formats::{RecId, Value, Vid};
use ndpdb_host::storage::secondary_index::KeyRange;
use ndpdb_host::transaction::Transaction;
use sqlparser::ast::Expr;

use crate::bind::scope::Scope;
use crate::plan::access::{column_of, Access, IndexAccess};
use crate::Result;

/// Rows read from a table: each tuple, the version read and its values.
pub type TupleRows = Vec<(Vid, RecId, Vec<Value>)>;

/// The key-order read a plan may use: the direction of its ORDER BY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyOrderRead {
    pub descending: bool,
}

/// Whether a one-table query over `access` with ORDER BY `order` (each
/// the expression it sorts by, and whether descending) returns its first
/// rows in key order. The caller checks the rest (one table, no
/// aggregates, DISTINCT or subquery filters, a LIMIT).
pub fn plan(
    access: &Access,
    is_key_order: bool,
    order: &[(Expr, bool)],
    scope: &Scope,
) -> Option<KeyOrderRead> {
    let Access::Index(ix) = access else {
        return None;
    };
    if !is_key_order || order.is_empty() {
        return None;
    }
    let columns = &ix.index.meta().columns;
    let fixed = &columns[..ix.prefix.len()];
    let mut next = ix.prefix.len();
    let descending = order[0].1;
    for (e, desc) in order {
        let c = column_of(e, scope)?;
        if fixed.contains(&c) {
            continue;
        }
        // Past the whole key the order is total already.
        if next == columns.len() {
            break;
        }
        if c != columns[next] || *desc != descending {
            return None;
        }
        next += 1;
    }
    (next > ix.prefix.len()).then_some(KeyOrderRead { descending })
}

/// The key range `ix` reads with `params`; `None` when no row can match
/// (a NULL in the prefix or a bound).
pub fn key_range(ix: &IndexAccess, params: &[Value]) -> Result<Option<KeyRange>> {
    let mut prefix = Vec::with_capacity(ix.prefix.len());
    for p in &ix.prefix {
        match p.eval(&[], params)? {
            // `col = NULL` holds for no row.
            Value::Null => return Ok(None),
            v => prefix.push(v),
        }
    }
    let bound = |b: &Option<(Program, bool)>| -> Result<Option<Option<(Value, bool)>>> {
        match b {
            None => Ok(Some(None)),
            Some((p, inclusive)) => match p.eval(&[], params)? {
                // `col < NULL` holds for no row.
                Value::Null => Ok(None),
                v => Ok(Some(Some((v, *inclusive)))),
            },
        }
    };
    let (Some(lower), Some(upper)) = (bound(&ix.lower)?, bound(&ix.upper)?) else {
        return Ok(None);
    };
    Ok(Some(KeyRange {
        prefix,
        lower,
        upper,
    }))
}

/// The first `take` tuples of `ix`'s range in key order (backwards when
/// `read.descending`) whose visible version `keep` accepts.
pub fn read(
    tx: &mut Transaction,
    table: &Arc<ndpdb_host::database::TableState>,
    ix: &IndexAccess,
    read: KeyOrderRead,
    take: usize,
    params: &[Value],
    mut keep: impl FnMut(&[Value]) -> Result<bool>,
) -> Result<TupleRows> {
    let mut out = Vec::new();
    let Some(range) = key_range(ix, params)? else {
        return Ok(out);
    };
    if take == 0 {
        return Ok(out);
    }
    let Some(index) = ix.index.get(table)? else {
        return Ok(out);
    };
    tx.read_in_key_order(table, &index, &range, read.descending, |vid, rid, row| {
        if keep(&row)? {
            out.push((vid, rid, row));
        }
        Ok(out.len() < take)
    })?;
    Ok(out)
}
