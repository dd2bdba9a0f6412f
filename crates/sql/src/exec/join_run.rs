//! Executing the FROM list of a SELECT: the first item read, each join
//! step run, WHERE applied, rows locked for FOR UPDATE.
//!
//! ```text
//!  first item ──► rows so far ──► step 1 ──► … ──► last step ──► WHERE ──► rows
//!   (or read last, streamed          │ hash the smaller side,      │ (or straight
//!    through the second item's       │ stream the other through it │  into a sink:
//!    hash table)                     ▼                             ▼  GROUP BY)
//!                              narrow rows (join_layout.rs), widened one at a time
//! ```
//!
//! A table streamed through a hash table is read through the hashed
//! side's keys (`join_filter.rs`), and the scan's workers probe the table
//! with their chunks as they read them; rows held in memory probe on
//! `host_workers` threads too (`JoinStep::run_on`). The rows out come
//! here in the order of the rows read, as from one thread.
//!
//! The plan is `SelectPlan`'s (`query.rs`); the steps are `join.rs`'s.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

use ndpdb_formats::expr::Program;
use ndpdb_formats::{Value, Vid};
use ndpdb_host::database::TableState;
use ndpdb_host::storage::page_scan::ChunkMap;
use ndpdb_host::{Transaction, WriteOutcome};

use crate::exec::join::filter::JoinFilter;
use crate::exec::join::layout::Widen;
use crate::exec::join::{Built, Collect, JoinStep, Joined};
use crate::exec::row_sink::{kept_rows, passes, Sink};
use crate::plan::access::Access;
use crate::plan::ordered_read::TupleRows;
use crate::plan::query::{SelectPlan, Source, StepReport};
use crate::Result;

/// What `read_first` gives the join pipeline.
struct FirstRead {
    rows: Vec<Joined>,
    /// The second item, read first (the first then streams through it).
    first_last: Option<TupleRows>,
    stream_first: bool,
    step: StepReport,
    /// FOR UPDATE after a read that stopped early: how many rows it needs.
    needed: Option<usize>,
    /// Rows an in-storage SELECT … FOR UPDATE returned are locked already.
    locked_on_device: bool,
}

/// Rows read outside the scan's workers (not by a pipeline) that are
/// joined together.
pub(crate) const JOINED_HERE_BATCH: usize = 1024;

/// Tables of fewer rows are not sampled (see `reads_first_table_last`).
pub(crate) const SAMPLED_MIN_ROWS: u64 = 100_000;

/// Rows sampled to estimate a filter's selectivity.
pub(crate) const FILTER_SAMPLE: u64 = 256;

/// The share of `ts`'s rows `filter` keeps, from the visible rows of
/// VIDs spread evenly over the table. A row the filter fails on counts
/// as kept (the read itself reports the error, if it reaches the row).
pub(crate) fn sampled_selectivity(
    tx: &Transaction,
    ts: &TableState,
    filter: &Program,
    params: &[Value],
) -> Result<f64> {
    let n = ts.vids.vid_count();
    let step = (n / FILTER_SAMPLE).max(1);
    let (mut seen, mut kept) = (0u32, 0u32);
    let mut vid = step / 2;
    while vid < n {
        if let Some((_, row)) = tx.get(ts, Vid(vid))? {
            seen += 1;
            kept += u32::from(filter.eval_predicate(&row, params).unwrap_or(true));
        }
        vid += step;
    }
    Ok(match seen {
        0 => 1.0,
        _ => f64::from(kept) / f64::from(seen),
    })
}

/// Rows of the full layout from joined rows left narrow.
pub(crate) fn widen_all(rows: Vec<Joined>, layout: Option<&Widen>) -> Vec<Joined> {
    match layout {
        None => rows,
        Some(layout) => rows
            .into_iter()
            .map(|r| Joined {
                values: layout.widen(r.values),
                ids: r.ids,
            })
            .collect(),
    }
}

impl SelectPlan {
    /// Whether the first join reads its new item before the first table,
    /// hashes it, and streams the first table's rows through it: an
    /// inner equi-join whose first item is a table larger than the new
    /// item (a table of a quarter of its rows or fewer, or rows of a
    /// subquery or function). A first table with a filter keeps its
    /// order when the new table may be joined by key lookups (the
    /// filtered rows may be few), unless the new table has a sixteenth
    /// of its rows or fewer: reading that table costs little beside the
    /// first table's own scan, and holding the first table's filtered
    /// rows (CH-benCHmark Q19: half of ORDER-LINE) costs much.
    ///
    /// A filtered first table that may be joined by key lookups also
    /// streams when a sample says its filter keeps at least twice the
    /// new table's rows (CH-benCHmark Q15: ORDER-LINE's 3 M rows, nearly
    /// all kept, through STOCK's 1 M, instead of holding them all and
    /// probing STOCK's hash table with them afterwards).
    pub(crate) fn reads_first_table_last(
        &self,
        tx: &Transaction,
        joins: &[JoinStep],
        params: &[Value],
    ) -> Result<bool> {
        let (Some(step), [first, second, ..]) = (joins.first(), &self.sources[..]) else {
            return Ok(false);
        };
        let Some(first_table) = first.table() else {
            return Ok(false);
        };
        if !step.builds_left() || !matches!(first.access, Access::Scan) {
            return Ok(false);
        }
        let Some(t) = second.table() else {
            return Ok(true);
        };
        let (new_rows, first_rows) = (t.vids.vid_count(), first_table.vids.vid_count());
        if new_rows.saturating_mul(4) <= first_rows
            && (step.lookup.is_none()
                || first.filter.is_none()
                || new_rows.saturating_mul(16) <= first_rows)
        {
            return Ok(true);
        }
        match &first.filter {
            Some(f)
                if first_rows >= SAMPLED_MIN_ROWS && new_rows.saturating_mul(2) <= first_rows =>
            {
                let kept = first_rows as f64 * sampled_selectivity(tx, first_table, f, params)?;
                Ok(kept >= 2.0 * new_rows as f64)
            }
            _ => Ok(false),
        }
    }

    /// The rows of `src` that probe `built`, read through the hashed
    /// side's `filter` (none when no row can find a partner) and joined a
    /// chunk at a time: on the scan's workers for a pipeline read, else
    /// here. Each chunk's joined rows pass through `after` where they were
    /// joined; what it returns goes to `emit` in the order of the rows
    /// read. Returns the rows read.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn join_probing(
        &self,
        tx: &mut Transaction,
        src: &Source,
        (built, filter): (&Built<'_>, &JoinFilter),
        params: &[Value],
        columns: (Option<&[bool]>, Option<&[usize]>),
        after: &ChunkMap<'_>,
        mut emit: impl FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<usize> {
        let Some(filter) = filter.read_filter(src) else {
            return Ok(0);
        };
        let rows_read = AtomicUsize::new(0);
        let join = |chunk: u64, rows: Vec<Vec<Value>>| {
            rows_read.fetch_add(rows.len(), Relaxed);
            after(chunk, built.join_rows(&rows, params)?)
        };
        if self.reads_by_pipeline(src, columns.0) {
            let emit_row = |_, _, row| emit(row);
            self.read_filtered_each(tx, src, filter, params, columns, Some(&join), emit_row)?;
            return Ok(rows_read.into_inner());
        }
        let mut pending = Vec::with_capacity(JOINED_HERE_BATCH);
        let mut batches = 0u64..;
        self.read_filtered_each(tx, src, filter, params, columns, None, |_, _, row| {
            pending.push(row);
            if pending.len() < JOINED_HERE_BATCH {
                return Ok(());
            }
            let batch = batches.next().unwrap_or(u64::MAX);
            join(batch, std::mem::take(&mut pending))?
                .into_iter()
                .try_for_each(&mut emit)
        })?;
        let batch = batches.next().unwrap_or(u64::MAX);
        join(batch, pending)?.into_iter().try_for_each(emit)?;
        Ok(rows_read.into_inner())
    }

    /// Rows after FROM, WHERE and FOR UPDATE; the rows of joins left
    /// narrow, with the layout that widens them. With a `sink`, the rows
    /// go there instead (the last join step's as they are made: with
    /// [`Sink::Parts`], on the threads that joined them) and none are
    /// returned; `in_key_order`: the first rows may come
    /// from a key-order read that stops at the LIMIT; `narrow_rows`: a
    /// one-table read may leave out the columns the query does not read
    /// (not for the rows an UPDATE or DELETE writes).
    pub(crate) fn joined_rows_reading(
        &self,
        tx: &mut Transaction,
        params: &[Value],
        in_key_order: bool,
        narrow_rows: bool,
        sink: Option<Sink<'_>>,
    ) -> Result<(Vec<Joined>, Option<&Widen>)> {
        let Some(first) = self.sources.first() else {
            // A query without FROM has exactly one input row: WHERE (its
            // plain and per-row terms) and the sink see it as any other.
            let row = Joined {
                values: Vec::new(),
                ids: Vec::new(),
            };
            let mut rows = self.where_terms(tx, params, vec![row], None, &mut Vec::new(), false)?;
            deliver(&mut rows, sink)?;
            return Ok((rows, None));
        };
        let FirstRead {
            mut rows,
            first_last,
            stream_first,
            step,
            needed,
            locked_on_device,
        } = self.read_first(tx, params, first, in_key_order, narrow_rows)?;
        let narrow = self.narrow_joins();
        let mut steps = Vec::with_capacity(self.sources.len());
        steps.push(step);
        let mut first_last = first_last;
        let joins = narrow.map_or(&self.joins[..], |n| &n.joins[..]);
        let layout = narrow.map(|n| &n.last);
        let mut scratch = layout.map_or_else(Vec::new, Widen::scratch);
        // The last step's rows go straight to the sink when nothing after
        // the plain WHERE terms needs them all (per-row subqueries,
        // FOR UPDATE).
        let mut sink = sink;
        let streams_out = sink.is_some() && self.row_filter.is_empty() && !self.for_update;
        for (k, step) in joins.iter().enumerate() {
            let src = &self.sources[k + 1];
            let started = std::time::Instant::now();
            let mut collect = Collect::default();
            let mut emitted = 0usize;
            let last = k + 1 == joins.len();
            // The rows out, on the threads that joined them: a sink of
            // parts takes the last step's there, WHERE applied.
            let parts = match &sink {
                Some(Sink::Parts(parts)) if last && streams_out => Some(*parts),
                _ => None,
            };
            let consumed = AtomicUsize::new(0);
            let filter = self.filter.as_ref();
            let after = |order: u64, rows: Vec<Vec<Value>>| -> Result<Vec<Vec<Value>>> {
                let Some(parts) = parts else {
                    return Ok(rows);
                };
                consumed.fetch_add(rows.len(), Relaxed);
                parts(order, kept_rows(filter, layout, rows, params)?)?;
                Ok(Vec::new())
            };
            let mut orders = 0u64..;
            let mut emit = |values: Vec<Value>| -> Result<()> {
                emitted += 1;
                let mut values = values;
                match &mut sink {
                    Some(sink) if last && streams_out => {
                        if let Some(f) = filter {
                            if !passes(f, layout, &mut values, &mut scratch, params)? {
                                return Ok(());
                            }
                        }
                        match sink {
                            Sink::Each(sink) => sink(values),
                            Sink::Parts(parts) => {
                                parts(orders.next().unwrap_or(u64::MAX), vec![values])
                            }
                        }
                    }
                    _ => collect.push(values),
                }
            };
            let pre_read = match (first_last.take(), narrow) {
                (Some(right), Some(n)) if stream_first => Ok((right, n)),
                (pre_read, _) => Err(pre_read),
            };
            let pre_read = match pre_read {
                Err(pre_read) => pre_read,
                Ok((right, n)) => {
                    let built = step.build_right(right, params)?;
                    let columns = (self.wanted(0), Some(&n.first[..]));
                    let table_column = |c: u32| n.first.get(c as usize).map(|&t| t as u32);
                    let filter = JoinFilter::for_probing(&built, first, table_column, params)?;
                    let hashed = (&built, &filter);
                    let rows_read =
                        self.join_probing(tx, first, hashed, params, columns, &after, &mut emit)?;
                    emitted += consumed.load(Relaxed);
                    let right_rows = built.len();
                    drop(built);
                    rows = std::mem::take(&mut collect.rows);
                    if let Some(s) = steps.first_mut() {
                        (s.rows_read, s.rows_out) = (rows_read, rows_read);
                        s.join_filter = filter.keys();
                    }
                    steps.push(StepReport {
                        alias: src.alias.clone(),
                        rows_read: right_rows,
                        rows_out: emitted,
                        join: started.elapsed(),
                        ..StepReport::default()
                    });
                    continue;
                }
            };
            if let (Some(lookup), Some(table), None) = (&step.lookup, src.table(), &pre_read) {
                if lookup.worthwhile(tx.database(), table, rows.len()) {
                    let filter = src.filter.as_ref();
                    for r in lookup.run(tx, step, table, filter, rows, params)? {
                        emit(r.values)?;
                    }
                    rows = std::mem::take(&mut collect.rows);
                    steps.push(StepReport {
                        alias: src.alias.clone(),
                        rows_out: emitted,
                        join: started.elapsed(),
                        lookups: true,
                        ..StepReport::default()
                    });
                    continue;
                }
            }
            // Rows so far fewer than the table's: hashed, and the table's
            // rows probe them as they are read.
            let streams = step.builds_left()
                && pre_read.is_none()
                && src
                    .table()
                    .is_some_and(|t| (rows.len() as u64) < t.vids.vid_count());
            if streams {
                let built = step.build_left(rows, params)?;
                let filter = JoinFilter::for_probing(&built, src, Some, params)?;
                let columns = (self.wanted(k + 1), None);
                let hashed = (&built, &filter);
                let rows_read =
                    self.join_probing(tx, src, hashed, params, columns, &after, &mut emit)?;
                emitted += consumed.load(Relaxed);
                drop(built);
                rows = std::mem::take(&mut collect.rows);
                steps.push(StepReport {
                    alias: src.alias.clone(),
                    rows_read,
                    rows_out: emitted,
                    join: started.elapsed(),
                    join_filter: filter.keys(),
                    ..StepReport::default()
                });
                continue;
            }
            let right = match pre_read {
                Some(right) => right,
                None => self.read_source(tx, src, params, self.wanted(k + 1), None)?,
            };
            let read = started.elapsed();
            let rows_read = right.len();
            step.run_on(tx.host_workers(), rows, right, params, &after, &mut emit)?;
            emitted += consumed.load(Relaxed);
            rows = std::mem::take(&mut collect.rows);
            steps.push(StepReport {
                alias: src.alias.clone(),
                rows_read,
                read,
                rows_out: emitted,
                join: started.elapsed() - read,
                ..StepReport::default()
            });
        }
        if self.sources.len() > 1 {
            *self.last_steps.lock().unwrap_or_else(|e| e.into_inner()) = steps;
        }
        let streamed = streams_out && !joins.is_empty();
        let mut rows = self.where_terms(tx, params, rows, layout, &mut scratch, streamed)?;
        if self.for_update && !locked_on_device {
            rows = self.lock_rows(tx, params, rows)?;
            // Rows changed under a read that stopped early: read them all.
            if needed.is_some_and(|n| rows.len() < n) {
                return self.joined_rows_reading(tx, params, false, narrow_rows, sink);
            }
        }
        deliver(&mut rows, sink)?;
        Ok((rows, layout))
    }

    /// The first FROM item's rows (a device scan's, a key-order read's or
    /// a host read's), or none yet when it is to stream through the
    /// second item's hash table (read first: `first_last`).
    fn read_first(
        &self,
        tx: &mut Transaction,
        params: &[Value],
        first: &Source,
        in_key_order: bool,
        narrow_rows: bool,
    ) -> Result<FirstRead> {
        let device = self.device_scan(tx, params)?;
        // Rows an in-storage SELECT … FOR UPDATE returned are locked already.
        let locked_on_device = device.is_some() && self.for_update;
        let ordered = match device.is_none() && in_key_order {
            true => self.read_in_key_order(tx, params)?,
            false => None,
        };
        // FOR UPDATE after a read that stopped early: how many it needs.
        let needed = ordered
            .as_ref()
            .filter(|(rows, take)| rows.len() == *take)
            .map(|(_, take)| *take);
        let started = std::time::Instant::now();
        let narrow = self.narrow_joins();
        // The second item read first, when the first table is the larger:
        // the first table's rows then stream through its hash table.
        let first_last = match (narrow, &ordered, &device) {
            (Some(n), None, None) if self.reads_first_table_last(tx, &n.joins, params)? => {
                let wanted = self.wanted(1);
                Some(self.read_source(tx, &self.sources[1], params, wanted, None)?)
            }
            _ => None,
        };
        // A subquery's rows may outnumber the first table's after all:
        // then the first table is read first and the smaller side hashed.
        let first_vids = first.table().map_or(0, |t| t.vids.vid_count());
        let stream_first = first_last
            .as_ref()
            .is_some_and(|r| r.len() as u64 <= first_vids);
        let first_rows = match ordered {
            Some((rows, _)) => rows,
            None if device.is_some() || stream_first => Vec::new(),
            None => {
                let wanted = if narrow_rows || !self.joins.is_empty() {
                    self.wanted(0)
                } else {
                    None
                };
                self.read_source(tx, first, params, wanted, narrow.map(|n| &n.first[..]))?
            }
        };
        let step = StepReport {
            alias: first.alias.clone(),
            rows_read: first_rows.len(),
            read: started.elapsed(),
            rows_out: first_rows.len(),
            ..StepReport::default()
        };
        let rows: Vec<Joined> = match device {
            Some(rows) => rows,
            None => first_rows
                .into_iter()
                .map(|(vid, rid, values)| match narrow {
                    // Rows of a join carry no ids (nothing reads them);
                    // they were read narrow.
                    Some(_) => Joined::of_join(values),
                    None => Joined {
                        values,
                        ids: vec![(vid, rid)],
                    },
                })
                .collect(),
        };
        Ok(FirstRead {
            rows,
            first_last,
            stream_first,
            step,
            needed,
            locked_on_device,
        })
    }

    /// SELECT … FOR UPDATE on the host: each row locked, re-checked
    /// against WHERE at its newest version, and kept if it still holds.
    fn lock_rows(
        &self,
        tx: &mut Transaction,
        params: &[Value],
        rows: Vec<Joined>,
    ) -> Result<Vec<Joined>> {
        let table = self.target_table()?.clone();
        let mut locked = Vec::with_capacity(rows.len());
        for r in rows {
            let (vid, seen) = r.ids[0];
            let mut recheck = |row: &[Value]| self.recheck(row, params);
            if let WriteOutcome::Done(row) = tx.lock_row(&table, vid, seen, &mut recheck)? {
                locked.push(Joined {
                    values: row,
                    ids: r.ids,
                });
            }
        }
        Ok(locked)
    }

    /// WHERE's plain terms (unless the rows `streamed` through them
    /// already), then those with a subquery per row, over `rows` (narrow
    /// with `layout`, widened through `scratch`).
    pub(crate) fn where_terms(
        &self,
        tx: &mut Transaction,
        params: &[Value],
        mut rows: Vec<Joined>,
        layout: Option<&Widen>,
        scratch: &mut Vec<Value>,
        streamed: bool,
    ) -> Result<Vec<Joined>> {
        let plain = self.filter.iter().filter(|_| !streamed);
        let filters = plain.map(|f| (f, false));
        // The first filter with per-row subqueries answers their hashed
        // EXISTS for the rows held then; the next filters keep a subset.
        let mut held_answered = false;
        for (f, per_row) in filters.chain(self.row_filter.iter().map(|f| (f, true))) {
            if per_row && !held_answered {
                held_answered = true;
                let held = rows.len();
                self.subqueries
                    .answer_held_rows(tx, params, held, |visit| {
                        for r in rows.iter_mut() {
                            match layout {
                                Some(layout) => {
                                    layout.swap(&mut r.values, scratch);
                                    let visited = visit(scratch);
                                    layout.swap(&mut r.values, scratch);
                                    visited?;
                                }
                                None => visit(&r.values)?,
                            }
                        }
                        Ok(())
                    })?;
            }
            let mut kept = Vec::with_capacity(rows.len());
            for mut r in rows {
                let keep = match per_row {
                    false => passes(f, layout, &mut r.values, scratch, params)?,
                    true => {
                        if let Some(layout) = layout {
                            layout.swap(&mut r.values, scratch);
                        }
                        let row = match layout {
                            Some(_) => &*scratch,
                            None => &r.values,
                        };
                        let keep = self
                            .subqueries
                            .eval_predicate(Some(&mut *tx), f, row, params);
                        if let Some(layout) = layout {
                            layout.swap(&mut r.values, scratch);
                        }
                        keep?
                    }
                };
                if keep {
                    kept.push(r);
                }
            }
            rows = kept;
        }
        Ok(rows)
    }
}

/// The rows to the sink, if there is one (then none are left).
pub(crate) fn deliver(rows: &mut Vec<Joined>, sink: Option<Sink<'_>>) -> Result<()> {
    match sink {
        Some(Sink::Each(sink)) => {
            for r in rows.drain(..) {
                sink(r.values)?;
            }
        }
        Some(Sink::Parts(parts)) => parts(0, rows.drain(..).map(|r| r.values).collect())?,
        None => {}
    }
    Ok(())
}
