//! Narrow join rows: each join step carries only the columns something
//! after it reads, and each table is read with only the columns the plan
//! uses (the others come as NULL, not decoded).
//!
//! ```text
//!  plan over the full layout:   a0 a1 a2 | b0 b1 | c0 c1 c2
//!  read (final programs):          a1          b1    c0
//!  used by joins:               a0          b0       c2 (keys, residuals)
//!
//!  rows so far   step 0 (⋈ b)          step 1 (⋈ c, last)
//!  [a0 a1]  ──►  [a0 a1 | b0 b1]  ──►  [a1 b1]  ++ [c0 c1 c2]
//!                keep a1, b1 (read    ──► [a1 b1 c0]   (stays narrow)
//!                later; a0, b0 done)
//!  after FROM, one row at a time (Widen): [- a1 - | - b1 | c0 - -]
//! ```
//!
//! Every program over the joined rows (filter, projection, grouping,
//! ORDER BY, per-row subqueries) keeps its columns: the last step's rows
//! hold only the columns read after FROM, and each is widened into a
//! reused scratch row of the full layout (NULL where nothing reads) just
//! before those programs see it. Only the steps' own programs — left
//! keys, key lookups, residuals — are rewritten for the narrow rows they
//! see. Reading more than is used is harmless, so the sets are taken
//! generously; a program that cannot be rewritten leaves the plan as it
//! was.

use std::collections::BTreeSet;

use ndpdb_formats::expr::Program;
use ndpdb_formats::Value;

use crate::plan::join_plan::JoinStep;
use crate::plan::join_plan::KeyLookup;

/// A join plan over narrow rows.
pub struct NarrowJoins {
    /// Per FROM item: the columns read (`None`: every column).
    pub wanted: Vec<Option<Vec<bool>>>,
    /// The first item's columns the rows so far start with.
    pub first: Vec<usize>,
    /// The steps, rewritten for the narrow rows.
    pub joins: Vec<JoinStep>,
    /// The layout of the last step's rows.
    pub last: Widen,
}

fn columns_of<'a>(programs: impl IntoIterator<Item = &'a Program>, out: &mut BTreeSet<u32>) {
    for p in programs {
        out.extend(p.columns());
    }
}

/// The columns (of the full layout) step `step` reads from the rows so
/// far and the joined row: its left keys, key lookup and residual.
fn step_reads(step: &JoinStep) -> BTreeSet<u32> {
    let mut s = BTreeSet::new();
    columns_of(&step.left_keys, &mut s);
    columns_of(&step.residual, &mut s);
    if let Some(l) = &step.lookup {
        columns_of(&l.key, &mut s);
    }
    s
}

/// `joins` over narrow rows, given the columns of the full layout the
/// rest of the plan reads (`after`) and each FROM item's own columns its
/// filter reads (`own`, by item). `None` when a step's program cannot be
/// rewritten.
pub fn narrow(
    joins: &[JoinStep],
    after: &BTreeSet<u32>,
    own: &[BTreeSet<u32>],
    tables: &[bool],
) -> Option<NarrowJoins> {
    let last = joins.len().checked_sub(1)?;
    let width = |k: usize| match k {
        0 => joins[0].left_width,
        _ => joins[k - 1].right_width,
    };
    let base = |k: usize| match k {
        0 => 0,
        _ => joins[k - 1].left_width,
    };
    let total = joins[last].left_width + joins[last].right_width;
    let final_columns: Vec<u32> = after
        .iter()
        .copied()
        .filter(|&c| (c as usize) < total)
        .collect();
    // need[k]: what step k and every later part reads.
    let mut need = vec![after.clone(); joins.len() + 1];
    for k in (0..joins.len()).rev() {
        let mut n = need[k + 1].clone();
        n.extend(step_reads(&joins[k]));
        need[k] = n;
    }
    // Each item's columns read: by anything on the joined rows, by its
    // own filter, and (as the new table of a step) by that step's keys.
    let mut wanted = Vec::with_capacity(joins.len() + 1);
    for k in 0..=joins.len() {
        if !tables.get(k).copied().unwrap_or(false) {
            wanted.push(None);
            continue;
        }
        let (b, w) = (base(k), width(k));
        let mut mask = vec![false; w];
        for &c in &need[0] {
            if let Some(m) = (c as usize).checked_sub(b).and_then(|i| mask.get_mut(i)) {
                *m = true;
            }
        }
        let local =
            own.get(k)
                .into_iter()
                .flatten()
                .copied()
                .chain(k.checked_sub(1).into_iter().flat_map(|j| {
                    joins[j]
                        .right_keys
                        .iter()
                        .flat_map(Program::columns)
                        .collect::<Vec<_>>()
                }));
        for c in local {
            if let Some(m) = mask.get_mut(c as usize) {
                *m = true;
            }
        }
        wanted.push(Some(mask));
    }
    // Rows so far: the full-layout columns they hold, in order.
    let mut layout: Vec<u32> = (0..width(0) as u32)
        .filter(|c| need[0].contains(c))
        .collect();
    let first = layout.iter().map(|&c| c as usize).collect();
    let mut steps = Vec::with_capacity(joins.len());
    for (k, step) in joins.iter().enumerate() {
        let right_base = base(k + 1) as u32;
        let joined: Vec<u32> = layout
            .iter()
            .copied()
            .chain(right_base..right_base + width(k + 1) as u32)
            .collect();
        let pos = |cols: &[u32], c: u32| cols.iter().position(|&x| x == c).map(|p| p as u32);
        let left_keys = step
            .left_keys
            .iter()
            .map(|p| p.remap_columns(|c| pos(&layout, c)))
            .collect::<Option<Vec<_>>>()?;
        let residual = match &step.residual {
            Some(r) => Some(r.remap_columns(|c| pos(&joined, c))?),
            None => None,
        };
        let lookup = match &step.lookup {
            Some(l) => Some(KeyLookup {
                key: l
                    .key
                    .iter()
                    .map(|p| p.remap_columns(|c| pos(&layout, c)))
                    .collect::<Option<Vec<_>>>()?,
                index: l.index.clone(),
            }),
            None => None,
        };
        let (output, next): (Vec<Option<u32>>, Vec<u32>) = if k == last {
            // The columns read after FROM, in layout order (a column of
            // no item, past the layout, comes as NULL).
            let out = final_columns.iter().map(|&c| pos(&joined, c)).collect();
            (out, Vec::new())
        } else {
            let next: Vec<u32> = joined
                .iter()
                .copied()
                .filter(|c| need[k + 1].contains(c))
                .collect();
            let out = next.iter().map(|&c| pos(&joined, c)).collect();
            (out, next)
        };
        steps.push(JoinStep {
            kind: step.kind,
            left_keys,
            right_keys: step.right_keys.clone(),
            residual,
            left_width: layout.len(),
            right_width: step.right_width,
            lookup,
            output: Some(output),
        });
        layout = next;
    }
    Some(NarrowJoins {
        wanted,
        first,
        joins: steps,
        last: Widen {
            columns: final_columns,
            width: total,
        },
    })
}

/// The last join step's rows hold only the columns read after FROM;
/// every program after FROM addresses the full layout. A row is widened
/// into a scratch row of the full layout (NULL where nothing reads) just
/// before those programs see it, one row at a time: the joined rows
/// themselves stay narrow (CH-benCHmark's Q10 joins 3 M rows of 39
/// columns and reads 9 of them).
pub struct Widen {
    /// Full-layout column of each value of a narrow row, ascending.
    pub columns: Vec<u32>,
    /// Columns of the full layout.
    pub width: usize,
}

impl Widen {
    /// A scratch row of the full layout, all NULL.
    pub fn scratch(&self) -> Vec<Value> {
        vec![Value::Null; self.width]
    }

    /// Moves `narrow`'s values into their places in `scratch` (the other
    /// places stay NULL: every narrow row fills the same ones).
    pub fn fill(&self, narrow: Vec<Value>, scratch: &mut [Value]) {
        for (v, &c) in narrow.into_iter().zip(&self.columns) {
            if let Some(slot) = scratch.get_mut(c as usize) {
                *slot = v;
            }
        }
    }

    /// Swaps `narrow`'s values with their places in `scratch`: once to
    /// show a row to a program, once more to take its values back.
    pub fn swap(&self, narrow: &mut [Value], scratch: &mut [Value]) {
        for (v, &c) in narrow.iter_mut().zip(&self.columns) {
            if let Some(slot) = scratch.get_mut(c as usize) {
                std::mem::swap(slot, v);
            }
        }
    }

    /// `narrow` as a row of the full layout.
    pub fn widen(&self, narrow: Vec<Value>) -> Vec<Value> {
        let mut row = self.scratch();
        self.fill(narrow, &mut row);
        row
    }
}
