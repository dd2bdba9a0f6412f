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
//! filter is decided by the planner (`query/select.rs`, `plan_select`): WHERE
//! never filters the null-supplying side of an outer join before it is
//! joined, and an outer join's ON never removes rows of its preserved
//! side. A NULL key matches nothing, as `=` with NULL is never true.

pub mod filter;
pub mod keys;
pub mod layout;
pub mod lookup;
pub mod packed_table;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::Program;
use ndpdb_formats::{RecId, Value, Vid};

use ndpdb_formats::SqlState;

use ndpdb_host::storage::page_scan::ChunkMap;

use crate::exec::join::keys::{KeyTable, ProbeScratch};
use crate::exec::join::packed_table::prefetch;
use crate::limits::{max_join_values, too_large};
pub use crate::plan::join_plan::{JoinKind, JoinStep};
use crate::{Error, Result};

/// A row of the FROM items: its values and, for a row of one table, the
/// version it came from (what FOR UPDATE and UPDATE / DELETE act on,
/// which read one table). Rows out of a join carry no ids: nothing reads
/// them, and not building them spares an allocation per joined row.
pub struct Joined {
    pub values: Vec<Value>,
    pub ids: Vec<(Vid, RecId)>,
}

impl AsRef<[Value]> for Joined {
    fn as_ref(&self) -> &[Value] {
        &self.values
    }
}

impl Joined {
    /// A row out of a join step (no ids).
    pub fn of_join(values: Vec<Value>) -> Joined {
        Joined {
            values,
            ids: Vec::new(),
        }
    }
}

/// Rows of the other side that probe a hash table together.
const PROBE_BATCH: usize = 256;

/// Rows held in memory that one thread joins per round of
/// [`Built::join_held`] (the rows out of a round are held until it ends).
const HELD_ROUND_ROWS: usize = 16_384;

/// Rows (both sides) from which [`JoinStep::run_on`] probes on more
/// than one thread.
const PARALLEL_JOIN_ROWS: usize = 2 * HELD_ROUND_ROWS;

/// The values of the i-th of a batch of table rows.
fn row_of(rows: &[(Vid, RecId, Vec<Value>)], i: usize) -> &[Value] {
    rows.get(i).map_or(&[][..], |(_, _, r)| r.as_slice())
}

/// The bytes two equal keys share (hash table key).
pub fn key_of(values: &[Value]) -> Vec<u8> {
    let mut w = Writer::new();
    for v in values {
        v.key_bytes(&mut w);
    }
    w.into_inner()
}

impl JoinStep {
    /// Joins `left` (the rows so far) with the new table's `right` rows,
    /// each row out handed to `emit` (a [`Collect`], or the consumer of
    /// the last step's rows). An inner equi-join builds its hash table on
    /// the smaller side; the others build on the right. The order of the
    /// rows out is not defined (as in SQL without ORDER BY).
    pub fn run(
        &self,
        left: Vec<Joined>,
        right: Vec<(Vid, RecId, Vec<Value>)>,
        params: &[Value],
        emit: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        if self.kind == JoinKind::Inner && !self.right_keys.is_empty() && left.len() < right.len() {
            let mut built = self.build_left(left, params)?;
            for batch in right.chunks(PROBE_BATCH) {
                ndpdb_host::interrupt::tick(batch.len())?;
                built.probe_batch(batch.len(), |i| row_of(batch, i), params, emit)?;
            }
            return Ok(());
        }
        let mut table = if self.right_keys.is_empty() {
            None
        } else {
            Some(KeyTable::build(
                &self.right_keys,
                right.iter().map(|(_, _, r)| r.as_slice()),
                params,
            )?)
        };
        let mut matched = vec![
            false;
            if self.kind.keeps_right() {
                right.len()
            } else {
                0
            }
        ];
        let mut scratch = Vec::new();
        let mut hits = Vec::new();
        for batch in left.chunks(PROBE_BATCH) {
            match &mut table {
                Some(t) => {
                    let row = |i: usize| batch.get(i).map_or(&[][..], |l| l.values.as_slice());
                    t.probe_batch(&self.left_keys, batch.len(), row, params, &mut hits)?;
                    for &(_, at) in &hits {
                        if let Some(v) = right.get(at as usize).and_then(|r| r.2.first()) {
                            prefetch(v);
                        }
                    }
                }
                None => hits.clear(),
            }
            let mut h = 0;
            for (k, l) in batch.iter().enumerate() {
                // Without keys every right row is a candidate.
                let all = 0..if table.is_none() { right.len() } else { 0 };
                let from = h;
                while hits.get(h).is_some_and(|&(r, _)| r as usize == k) {
                    h += 1;
                }
                let keyed = hits[from..h].iter().map(|&(_, at)| at as usize);
                let mut any = false;
                for i in all.chain(keyed) {
                    ndpdb_host::interrupt::tick(1)?;
                    let Some((_, _, r)) = right.get(i) else {
                        continue;
                    };
                    let Some(values) = self.combine(&l.values, r, params, &mut scratch)? else {
                        continue;
                    };
                    any = true;
                    if let Some(m) = matched.get_mut(i) {
                        *m = true;
                    }
                    emit(values)?;
                }
                if !any && self.kind.keeps_left() {
                    emit(self.null_extended(Some(&l.values), None))?;
                }
            }
        }
        for (i, m) in matched.iter().enumerate() {
            if !m {
                let (_, _, r) = &right[i];
                emit(self.null_extended(None, Some(r)))?;
            }
        }
        Ok(())
    }

    /// [`JoinStep::run`] on up to `threads` threads: an inner equi-join
    /// of at least [`PARALLEL_JOIN_ROWS`] rows hashes the smaller side (as
    /// `run` does) and probes it with the other side's rows on `threads`
    /// threads at once ([`Built::join_held`]), each thread passing its
    /// rows out through `after`; the rows out come in the order `run`
    /// gives them. Otherwise `run`, and `after` is not called.
    pub fn run_on(
        &self,
        threads: usize,
        left: Vec<Joined>,
        right: Vec<(Vid, RecId, Vec<Value>)>,
        params: &[Value],
        after: &ChunkMap<'_>,
        emit: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        if !self.builds_left() || threads < 2 || left.len() + right.len() < PARALLEL_JOIN_ROWS {
            return self.run(left, right, params, emit);
        }
        if left.len() < right.len() {
            let built = self.build_left(left, params)?;
            let probing: Vec<Vec<Value>> = right.into_iter().map(|(_, _, r)| r).collect();
            return built.join_held(&probing, params, threads, after, emit);
        }
        let built = self.build_right(right, params)?;
        built.join_held(&left, params, threads, after, emit)
    }

    /// Whether this join may hash the rows so far and let the new
    /// table's rows probe them (an inner equi-join).
    pub fn builds_left(&self) -> bool {
        self.kind == JoinKind::Inner && !self.right_keys.is_empty()
    }

    /// The hash table over the rows so far, for [`Built::probe_batch`]
    /// with the new table's rows.
    pub fn build_left<'s>(&'s self, left: Vec<Joined>, params: &[Value]) -> Result<Built<'s>> {
        let rows = left.into_iter().map(|l| l.values).collect();
        self.build(Hashed::Left, rows, params)
    }

    /// The hash table over the new table's rows, for
    /// [`Built::probe_batch`] with the first table's rows (an inner
    /// equi-join, see [`Self::builds_left`]).
    pub fn build_right<'s>(
        &'s self,
        right: Vec<(Vid, RecId, Vec<Value>)>,
        params: &[Value],
    ) -> Result<Built<'s>> {
        let rows = right.into_iter().map(|(_, _, r)| r).collect();
        self.build(Hashed::Right, rows, params)
    }

    fn build(&self, hashed: Hashed, rows: Vec<Vec<Value>>, params: &[Value]) -> Result<Built<'_>> {
        let keys = match hashed {
            Hashed::Left => &self.left_keys,
            Hashed::Right => &self.right_keys,
        };
        let table = KeyTable::build(keys, rows.iter().map(Vec::as_slice), params)?;
        Ok(Built {
            step: self,
            hashed,
            rows,
            table,
            scratch: JoinScratch::default(),
        })
    }

    /// The row out of a left and a right row that the residual accepts
    /// (`scratch`: room for left ++ right when the output is narrowed).
    pub(crate) fn combine(
        &self,
        left: &[Value],
        right: &[Value],
        params: &[Value],
        scratch: &mut Vec<Value>,
    ) -> Result<Option<Vec<Value>>> {
        let Some(output) = &self.output else {
            let mut values = Vec::with_capacity(left.len() + right.len());
            values.extend_from_slice(left);
            values.extend_from_slice(right);
            if let Some(res) = &self.residual {
                if !res.eval_predicate(&values, params)? {
                    return Ok(None);
                }
            }
            return Ok(Some(values));
        };
        if let Some(res) = &self.residual {
            scratch.clear();
            scratch.extend_from_slice(left);
            scratch.extend_from_slice(right);
            if !res.eval_predicate(scratch, params)? {
                return Ok(None);
            }
        }
        let n = left.len();
        Ok(Some(
            output
                .iter()
                .map(|o| match *o {
                    Some(i) if (i as usize) < n => left[i as usize].clone(),
                    Some(i) => right.get(i as usize - n).cloned().unwrap_or(Value::Null),
                    None => Value::Null,
                })
                .collect(),
        ))
    }

    /// The row out of `left ++ right` already joined (key lookups).
    pub(crate) fn project(&self, joined: Vec<Value>) -> Vec<Value> {
        match &self.output {
            None => joined,
            Some(output) => output
                .iter()
                .map(|o| match *o {
                    Some(i) => joined.get(i as usize).cloned().unwrap_or(Value::Null),
                    None => Value::Null,
                })
                .collect(),
        }
    }

    /// The row out of an outer join's unmatched side, NULL for the other.
    pub(crate) fn null_extended(
        &self,
        left: Option<&[Value]>,
        right: Option<&[Value]>,
    ) -> Vec<Value> {
        let side = |i: usize| {
            if i < self.left_width {
                left.and_then(|l| l.get(i)).cloned()
            } else {
                right.and_then(|r| r.get(i - self.left_width)).cloned()
            }
        };
        match &self.output {
            None => (0..self.left_width + self.right_width)
                .map(|i| side(i).unwrap_or(Value::Null))
                .collect(),
            Some(output) => output
                .iter()
                .map(|o| o.and_then(|i| side(i as usize)).unwrap_or(Value::Null))
                .collect(),
        }
    }
}

/// Which side of a join step a [`Built`] table hashed.
#[derive(Clone, Copy)]
enum Hashed {
    /// The rows so far; the new table's rows probe them.
    Left,
    /// The new table's rows; the first table's rows, read after it and
    /// streamed through (the first table is the larger: CH-benCHmark's
    /// Q17 joins 3 M order lines to 1,539 rows of a subquery).
    Right,
}

/// One side of an inner equi-join hashed on its keys; the other side's
/// rows probe it in batches of up to [`PROBE_BATCH`], so that the memory
/// reads of a batch's probes (hash slots, then matched rows) overlap.
/// Probing only reads it: threads probe one table at once, each with a
/// scratch of its own ([`Built::join_rows`]).
pub struct Built<'s> {
    step: &'s JoinStep,
    hashed: Hashed,
    rows: Vec<Vec<Value>>,
    table: KeyTable,
    scratch: JoinScratch,
}

/// What joining a batch reuses: one per thread that probes a [`Built`].
#[derive(Default)]
struct JoinScratch {
    probe: ProbeScratch,
    /// Room for left ++ right when the output is narrowed.
    combined: Vec<Value>,
    /// (probing row, hashed row) of each match of a batch.
    matches: Vec<(u32, u32)>,
}

impl Built<'_> {
    /// Joins a batch of `n` rows of the other side (`row(i)`: the i-th)
    /// with the hashed rows each matches, each row out handed to `emit`
    /// in probing-row order.
    pub fn probe_batch<'r>(
        &mut self,
        n: usize,
        row: impl Fn(usize) -> &'r [Value],
        params: &[Value],
        emit: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let joined = self.join_batch(n, row, params, &mut scratch, emit);
        self.scratch = scratch;
        joined
    }

    /// Joins a chunk of the other side's rows, the rows out in probing
    /// order (as [`Built::probe_batch`] emits them). Only reads the
    /// table: the scan's workers join their chunks at once.
    pub fn join_rows<R: AsRef<[Value]>>(
        &self,
        rows: &[R],
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>> {
        let mut scratch = JoinScratch::default();
        let mut out = Vec::with_capacity(rows.len());
        let mut push = |values| {
            out.push(values);
            Ok(())
        };
        for batch in rows.chunks(PROBE_BATCH) {
            ndpdb_host::interrupt::tick(batch.len())?;
            let row = |i: usize| batch.get(i).map_or(&[][..], AsRef::as_ref);
            self.join_batch(batch.len(), row, params, &mut scratch, &mut push)?;
        }
        Ok(out)
    }

    /// Joins rows of the other side held in memory on up to `threads`
    /// threads (this one among them), [`HELD_ROUND_ROWS`] rows each per
    /// round. Each thread passes its rows out through `after` with the
    /// part's number (parts are numbered in the order of `rows`); what
    /// `after` returns goes to `emit` here, in the order of `rows`.
    pub fn join_held<R: AsRef<[Value]> + Sync>(
        &self,
        rows: &[R],
        params: &[Value],
        threads: usize,
        after: &ChunkMap<'_>,
        emit: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let threads = threads.max(1);
        let rounds = rows.chunks(HELD_ROUND_ROWS * threads);
        for (round, round_rows) in (0u64..).zip(rounds) {
            let first_part = round * threads as u64;
            let join = |i: u64, part: &[R]| after(first_part + i, self.join_rows(part, params)?);
            let mut parts = (0u64..).zip(round_rows.chunks(round_rows.len().div_ceil(threads)));
            let mine = parts.next().unwrap_or((0, &[]));
            let joined: Vec<Result<Vec<Vec<Value>>>> = std::thread::scope(|s| {
                let join = &join;
                let others: Vec<_> = parts
                    .map(|(i, part)| {
                        let spawned = std::thread::Builder::new()
                            .name("host-join".into())
                            .spawn_scoped(s, move || join(i, part));
                        // Without a thread, the part is joined here.
                        spawned.map_err(|_| (i, part))
                    })
                    .collect();
                let mut joined = vec![join(mine.0, mine.1)];
                joined.extend(others.into_iter().map(|h| match h {
                    Ok(h) => h.join().unwrap_or_else(|_| {
                        Err(Error::new(
                            SqlState::INTERNAL_ERROR,
                            "a join thread panicked",
                        ))
                    }),
                    Err((i, part)) => join(i, part),
                }));
                joined
            });
            for part in joined {
                part?.into_iter().try_for_each(&mut *emit)?;
            }
        }
        Ok(())
    }

    fn join_batch<'r>(
        &self,
        n: usize,
        row: impl Fn(usize) -> &'r [Value],
        params: &[Value],
        scratch: &mut JoinScratch,
        emit: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let step = self.step;
        let keys = match self.hashed {
            Hashed::Left => &step.right_keys,
            Hashed::Right => &step.left_keys,
        };
        let JoinScratch {
            probe,
            combined,
            matches,
        } = scratch;
        self.table
            .probe_batch_with(keys, n, &row, params, probe, matches)?;
        for &(_, at) in matches.iter() {
            if let Some(v) = self.rows.get(at as usize).and_then(|r| r.first()) {
                prefetch(v);
            }
        }
        for &(r, at) in matches.iter() {
            let Some(hashed) = self.rows.get(at as usize) else {
                continue;
            };
            let probing = row(r as usize);
            let joined = match self.hashed {
                Hashed::Left => step.combine(hashed, probing, params, combined)?,
                Hashed::Right => step.combine(probing, hashed, params, combined)?,
            };
            if let Some(values) = joined {
                emit(values)?;
            }
        }
        Ok(())
    }

    /// The hashed rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The key programs of the hashed rows and of the rows that probe
    /// them, in key order.
    pub fn keys(&self) -> (&[Program], &[Program]) {
        let step = self.step;
        match self.hashed {
            Hashed::Left => (&step.left_keys, &step.right_keys),
            Hashed::Right => (&step.right_keys, &step.left_keys),
        }
    }

    pub fn rows(&self) -> &[Vec<Value>] {
        &self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// The rows out of a join step, kept in memory within
/// [`max_join_values`].
#[derive(Default)]
pub struct Collect {
    pub rows: Vec<Joined>,
}

impl Collect {
    /// Adds a joined row.
    pub fn push(&mut self, values: Vec<Value>) -> Result<()> {
        let width = values.len().max(1);
        self.rows.push(Joined::of_join(values));
        if self.rows.len().saturating_mul(width) > max_join_values() {
            return Err(too_large(self.rows.len(), width));
        }
        Ok(())
    }
}
