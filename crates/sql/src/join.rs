//! Joins: the FROM list joined left-deep, one hash join per table — inner
//! (in the order `join_order.rs` chooses), LEFT, RIGHT and FULL OUTER (in
//! FROM order).
//!
//! ```text
//!  rows so far (left) ──┐
//!                       ├─ hash on the equi-keys (right side built)
//!  next table (right) ──┘     └─ candidates ─► ON residual ─► matched rows
//!  LEFT / FULL:  a left row without a match  ─► left ++ NULLs
//!  RIGHT / FULL: a right row nobody matched  ─► NULLs ++ right
//! ```
//!
//! Which conditions become keys, residuals, scan filters or the final
//! filter is decided by the planner (`query.rs`, `plan_select`): WHERE
//! never filters the null-supplying side of an outer join before it is
//! joined, and an outer join's ON never removes rows of its preserved
//! side. A NULL key matches nothing, as `=` with NULL is never true.

use std::collections::HashMap;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::Program;
use ndpdb_formats::{RecId, Value, Vid};

use ndpdb_formats::SqlState;

use crate::join_lookup::KeyLookup;
use crate::{Error, Result};

/// The most values (rows × columns) one join may hold in memory: joins
/// are not spilled to disk, so a larger result (a cross product no
/// equi-term avoids) fails with 53200 instead of exhausting the server's
/// memory.
pub const MAX_JOIN_VALUES: usize = 100_000_000;

/// 53200 for a join whose result outgrew [`MAX_JOIN_VALUES`].
pub fn too_large(rows: usize, width: usize) -> Error {
    Error::new(
        SqlState("53200"),
        "out of memory",
    )
    .with_detail(format!(
        "A join produced more than {rows} rows of {width} columns, more than ndpdb holds in memory ({MAX_JOIN_VALUES} values)."
    ))
    .with_hint("A FROM item that no equality term joins to the others is joined as a cross product (outer joins run in FROM order).")
}

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
    fn keeps_left(self) -> bool {
        matches!(self, JoinKind::Left | JoinKind::Full)
    }

    /// Right rows without a match are kept (with NULLs on the left).
    fn keeps_right(self) -> bool {
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
    /// Tables joined before this one (the ids a row carries).
    pub left_tables: usize,
    /// Per-row key lookups instead of the hash join, when the left side
    /// is small (`join_lookup.rs`).
    pub lookup: Option<KeyLookup>,
}

/// A row of the join: its values and the version each table's part came
/// from ([`NO_ROW`] for a NULL-extended part).
pub struct Joined {
    pub values: Vec<Value>,
    pub ids: Vec<(Vid, RecId)>,
}

/// The id of a table's part that an outer join filled with NULLs.
pub const NO_ROW: (Vid, RecId) = (Vid(u64::MAX), RecId::NULL);

/// The bytes two equal keys share (hash table key).
pub fn key_of(values: &[Value]) -> Vec<u8> {
    let mut w = Writer::new();
    for v in values {
        v.key_bytes(&mut w);
    }
    w.into_inner()
}

impl JoinStep {
    /// Joins `left` (the rows so far) with the new table's `right` rows.
    pub fn run(
        &self,
        left: Vec<Joined>,
        right: &[(Vid, RecId, Vec<Value>)],
        params: &[Value],
    ) -> Result<Vec<Joined>> {
        let table = if self.right_keys.is_empty() {
            None
        } else {
            let mut table: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
            for (i, (_, _, r)) in right.iter().enumerate() {
                if let Some(key) = Self::key(&self.right_keys, r, params)? {
                    table.entry(key).or_default().push(i);
                }
            }
            Some(table)
        };
        let all: Vec<usize> = match table {
            None => (0..right.len()).collect(),
            Some(_) => Vec::new(),
        };
        let mut matched = vec![
            false;
            if self.kind.keeps_right() {
                right.len()
            } else {
                0
            }
        ];
        let mut out = Vec::new();
        for l in left {
            let candidates: &[usize] = match &table {
                None => &all,
                Some(t) => match Self::key(&self.left_keys, &l.values, params)? {
                    Some(key) => t.get(&key).map_or(&[][..], Vec::as_slice),
                    None => &[],
                },
            };
            let mut any = false;
            for &i in candidates {
                let (vid, rid, r) = &right[i];
                let mut values = Vec::with_capacity(self.left_width + self.right_width);
                values.extend(l.values.iter().cloned());
                values.extend(r.iter().cloned());
                if let Some(res) = &self.residual {
                    if !res.eval_predicate(&values, params)? {
                        continue;
                    }
                }
                any = true;
                if let Some(m) = matched.get_mut(i) {
                    *m = true;
                }
                let mut ids = l.ids.clone();
                ids.push((*vid, *rid));
                out.push(Joined { values, ids });
                let width = self.left_width + self.right_width;
                if out.len().saturating_mul(width.max(1)) > MAX_JOIN_VALUES {
                    return Err(too_large(out.len(), width));
                }
            }
            if !any && self.kind.keeps_left() {
                let mut values = l.values;
                values.resize(self.left_width + self.right_width, Value::Null);
                let mut ids = l.ids;
                ids.push(NO_ROW);
                out.push(Joined { values, ids });
            }
        }
        for (i, m) in matched.iter().enumerate() {
            if !m {
                let (vid, rid, r) = &right[i];
                let mut values = vec![Value::Null; self.left_width];
                values.extend(r.iter().cloned());
                let mut ids = vec![NO_ROW; self.left_tables];
                ids.push((*vid, *rid));
                out.push(Joined { values, ids });
            }
        }
        Ok(out)
    }

    /// The key of `row`, or `None` if a part is NULL (it matches nothing).
    fn key(keys: &[Program], row: &[Value], params: &[Value]) -> Result<Option<Vec<u8>>> {
        let key: Vec<Value> = keys
            .iter()
            .map(|p| p.eval(row, params))
            .collect::<Result<_, _>>()?;
        Ok((!key.iter().any(Value::is_null)).then(|| key_of(&key)))
    }
}
