//! Where the rows after FROM and WHERE go when nothing after them needs
//! them all at once (a GROUP BY): one at a time on the session's thread,
//! or in numbered parts from the threads that joined them.
//!
//! ```text
//!  Each:   last join step ──► WHERE ──► sink(row)            (session thread)
//!  Parts:  scan worker / join thread ──► joined chunk ──► WHERE ──► sink(order, rows)
//!          rows reaching the session thread (small or outer joins) ──► sink(order, [row])
//! ```
//!
//! `order` grows with the rows' place in the order one thread would have
//! made them (chunk numbers of a streamed table, part numbers of rows
//! held in memory, row counts on the session thread), so a consumer that
//! folds parts on several threads can still tell which row came first.

use ndpdb_formats::expr::Program;
use ndpdb_formats::Value;

use crate::exec::join::layout::Widen;
use crate::Result;

/// Numbered parts of rows, from any thread.
pub type PartSink<'a> = dyn Fn(u64, Vec<Vec<Value>>) -> Result<()> + Sync + 'a;

/// A consumer of the rows after FROM and WHERE.
pub enum Sink<'a> {
    /// One row at a time, on the session's thread.
    Each(&'a mut dyn FnMut(Vec<Value>) -> Result<()>),
    /// Parts of rows from the threads that joined them.
    Parts(&'a PartSink<'a>),
}

/// Whether `f` holds for `row` (narrow in `layout`, swapped into the
/// full-layout `scratch` and back).
pub(crate) fn passes(
    f: &Program,
    layout: Option<&Widen>,
    row: &mut [Value],
    scratch: &mut [Value],
    params: &[Value],
) -> Result<bool> {
    let Some(layout) = layout else {
        return Ok(f.eval_predicate(row, params)?);
    };
    layout.swap(row, scratch);
    let keep = f.eval_predicate(scratch, params);
    layout.swap(row, scratch);
    Ok(keep?)
}

/// The rows `filter` keeps (all without one), on the calling thread.
pub(crate) fn kept_rows(
    filter: Option<&Program>,
    layout: Option<&Widen>,
    rows: Vec<Vec<Value>>,
    params: &[Value],
) -> Result<Vec<Vec<Value>>> {
    let Some(f) = filter else {
        return Ok(rows);
    };
    let mut scratch = layout.map_or_else(Vec::new, Widen::scratch);
    let mut kept = Vec::with_capacity(rows.len());
    for mut row in rows {
        ndpdb_host::interrupt::tick(1)?;
        if passes(f, layout, &mut row, &mut scratch, params)? {
            kept.push(row);
        }
    }
    Ok(kept)
}
