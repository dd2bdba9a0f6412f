//! Correlated `[NOT] EXISTS` as a hash semi join (an anti join when
//! negated), PostgreSQL's Hash Semi Join / Hash Anti Join.
//!
//! A correlated EXISTS runs its subquery once per row of the caller: in
//! CH-benCHmark Q4 an index read of ORDER-LINE per order. When the
//! subquery is tied to the caller by equalities `inner = outer` (the
//! correlation keys) and, besides them, only by terms over both sides
//! (the residual), one run of the subquery without those terms, hashed by
//! the inner sides of the keys, gives every row's answer:
//!
//! ```text
//!   EXISTS (SELECT … FROM t WHERE t.a = o.x AND t.b = o.y AND t.c > o.z AND t.d = 5)
//!
//!   build, once per execution:  SELECT t.a, t.b, t.c FROM t WHERE t.d = 5
//!                               ──► hash (a, b) ─► [c, c, …]
//!   probe, per caller row:      (o.x, o.y) ─► c values ─► any with c > o.z ?
//! ```
//!
//! The build is an ordinary uncorrelated plan, so its scan is placed like
//! any other (on the device under `SET ndp`). The per-row plan stays: the
//! build starts only once the caller has run the subquery for enough rows
//! that reading the whole inner side costs less than going on by key
//! ([`HashedExists::threshold`]); an EXISTS met by a handful of rows still
//! reads by key. A NULL key matches nothing, as `=` never holds for NULL.
//!
//! Decorrelated: a subquery that returns its rows as read (no aggregate,
//! window, LIMIT or OFFSET), whose WHERE holds no subquery, with at least
//! one correlation key whose two sides hash alike (numbers with numbers,
//! text with text, other types with the same type).

use std::sync::Mutex;

use crate::exec::join::keys::KeyTable;
use crate::plan::query::{NdpMode, SelectPlan};
use crate::Result;
use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::Value;
use ndpdb_host::Transaction;

/// Calls of the per-row plan before the build is considered at all.
const MIN_CALLS: usize = 64;
/// Inner rows one per-row call is worth: the build starts after
/// `inner rows / ROWS_PER_CALL` calls (a key read of a few rows costs
/// about as much as hashing this many rows of a scan).
const ROWS_PER_CALL: usize = 64;
/// Values (key columns and residual columns of all rows) a hash table
/// may hold; beyond it the execution goes on with the per-row plan.
const MAX_VALUES: usize = 64 << 20;

/// The residual terms: over the build row's columns, with the caller's
/// values they name as parameters.
pub(crate) struct Residual {
    pub(crate) program: Program,
    /// The caller's values, over its row, in slot order.
    pub(crate) args: Vec<Program>,
}

/// The answers for one set of callers (`hashed_callers.rs` makes and
/// reads them).
pub(super) struct Answered {
    /// Caller positions by key.
    pub(super) keys: KeyTable,
    /// Reads the key values of a caller's values.
    pub(super) key_columns: Vec<Program>,
    /// Each caller's key values, then its residual arguments.
    pub(super) values: Vec<Value>,
    pub(super) width: usize,
    /// Whether a row of the subquery qualified, per caller.
    pub(super) found: Vec<bool>,
}

/// Programs reading columns `0..n` of a row.
pub(super) fn first_columns(n: usize) -> Vec<Program> {
    (0..n as u32)
        .map(|c| Program {
            consts: Vec::new(),
            ops: vec![Op::Column(c)],
        })
        .collect()
}

impl Residual {
    /// Lays out the residual's parameters in `local`: the statement's,
    /// one caller's `args` (its values of [`Residual::args`]), the time.
    pub(super) fn params_into(
        statement: &[Value],
        args: &[Value],
        txn: &Value,
        local: &mut Vec<Value>,
    ) {
        local.clear();
        local.extend_from_slice(statement);
        local.extend_from_slice(args);
        local.push(txn.clone());
    }

    /// Whether it holds for the build row `row` under `local`.
    pub(super) fn holds(&self, row: &[Value], local: &[Value]) -> Result<bool> {
        Ok(matches!(self.program.eval(row, local)?, Value::Bool(true)))
    }
}

/// The build side of one execution.
#[derive(Default)]
pub(super) struct State {
    /// Per-row calls so far (memoized answers not counted).
    calls: usize,
    /// The answers for the rows the caller held (`hashed_callers.rs`).
    pub(super) answered: Option<Answered>,
    table: Option<Built>,
    /// The build was too big: per row for the rest of the execution.
    gave_up: bool,
}

/// The subquery's rows, hashed by their keys.
struct Built {
    /// Row positions by key (a NULL key is in no chain).
    keys: KeyTable,
    /// The rows, `width` values each: the keys, then the residual's
    /// columns.
    rows: Vec<Value>,
    width: usize,
}

/// A correlated EXISTS answered from a hash table of its subquery's rows.
pub struct HashedExists {
    pub(super) build: SelectPlan,
    /// Caller-side values of the keys, over the caller's row.
    pub(super) probe: Vec<Program>,
    pub(super) residual: Option<Residual>,
    /// Columns of the build row after the keys (what the residual reads).
    pub(super) residual_width: usize,
    /// The statement parameters the subquery names.
    pub(super) base: u32,
    /// Inner rows of a build, estimated at planning.
    inner_rows: usize,
    state: Mutex<State>,
}

/// 'XX000' for a build row of another width than the plan's.
pub(super) fn width_mismatch(expected: usize, got: usize) -> crate::Error {
    crate::Error::new(
        ndpdb_formats::SqlState::INTERNAL_ERROR,
        format!("a hashed EXISTS expected rows of {expected} values, got {got}"),
    )
}

impl HashedExists {
    /// A hashed EXISTS over the build plan `build` (planned by
    /// `plan/query/hashed_exists.rs`), reading about `inner_rows` rows.
    pub(crate) fn new(
        build: SelectPlan,
        probe: Vec<Program>,
        residual: Option<Residual>,
        residual_width: usize,
        base: u32,
        inner_rows: usize,
    ) -> HashedExists {
        HashedExists {
            build,
            probe,
            residual,
            residual_width,
            base,
            inner_rows,
            state: Mutex::new(State::default()),
        }
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Per-row calls after which the build pays.
    pub(super) fn threshold(&self) -> usize {
        MIN_CALLS.max(self.inner_rows / ROWS_PER_CALL)
    }

    /// Whether a row exists for the caller's `row`, from the hash table;
    /// `None`: go on per row (the build has not paid yet, gave up, or
    /// needs a transaction it was not given). Counts a per-row call when
    /// it answers `None`.
    pub fn exists(
        &self,
        tx: Option<&mut Transaction>,
        row: &[Value],
        params: &[Value],
    ) -> Result<Option<bool>> {
        let mut st = self.state();
        if let Some(answered) = st.answered.as_mut() {
            if let Some(found) = answered.lookup(self, row, params)? {
                return Ok(Some(found));
            }
        }
        if st.table.is_none() {
            let threshold = self.threshold();
            if st.gave_up || st.calls < threshold {
                st.calls += 1;
                return Ok(None);
            }
            let Some(tx) = tx else {
                return Ok(None);
            };
            match self.build(tx, params)? {
                Some(t) => st.table = Some(t),
                None => {
                    st.gave_up = true;
                    return Ok(None);
                }
            }
        }
        let Some(table) = st.table.as_mut() else {
            return Ok(None);
        };
        let mut matches = table.keys.probe(&self.probe, row, params)?.peekable();
        if matches.peek().is_none() {
            return Ok(Some(false));
        }
        let Some(residual) = &self.residual else {
            return Ok(Some(true));
        };
        let args = residual
            .args
            .iter()
            .map(|a| a.eval(row, params))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let txn = params.last().cloned().unwrap_or(Value::Null);
        let mut local = Vec::new();
        Residual::params_into(
            &super::subplan::statement_params(params, self.base),
            &args,
            &txn,
            &mut local,
        );
        if self.residual_width == 0 {
            // The residual names the caller's values only: one test for the key.
            let no_columns = vec![Value::Null; self.probe.len()];
            return Ok(Some(residual.holds(&no_columns, &local)?));
        }
        let width = table.width;
        for at in matches {
            // The residual reads the columns after the keys only.
            let Some(build_row) = table.rows.get(at * width..(at + 1) * width) else {
                continue;
            };
            if residual.holds(build_row, &local)? {
                return Ok(Some(true));
            }
        }
        Ok(Some(false))
    }

    /// Runs the build plan and hashes its rows; `None` when they exceed
    /// [`MAX_VALUES`].
    fn build(&self, tx: &mut Transaction, params: &[Value]) -> Result<Option<Built>> {
        let statement = super::subplan::statement_params(params, self.base);
        let txn = params.last().cloned().unwrap_or(Value::Null);
        let bound = self.build.subqueries.bind(tx, &statement, &[], txn)?;
        let keys = self.probe.len();
        let width = keys + self.residual_width;
        // Room for every inner row at once: growing by doubling would
        // copy the values and touch twice the memory.
        let expected = self.inner_rows.saturating_mul(width).min(MAX_VALUES);
        let mut rows: Vec<Value> = Vec::with_capacity(expected);
        let mut too_big = false;
        self.build.each_row(tx, &bound, |r| {
            if r.len() != width {
                return Err(width_mismatch(width, r.len()));
            }
            if too_big || r[..keys].iter().any(Value::is_null) {
                return Ok(());
            }
            if rows.len() + width > MAX_VALUES {
                too_big = true;
                return Ok(());
            }
            rows.extend(r);
            Ok(())
        })?;
        if too_big {
            return Ok(None);
        }
        let key_columns = first_columns(keys);
        let table = KeyTable::build(&key_columns, rows.chunks_exact(width.max(1)), &[])?;
        Ok(Some(Built {
            keys: table,
            rows,
            width,
        }))
    }

    /// Forgets the hash table and the calls (a new execution).
    pub fn reset(&self) {
        *self.state() = State::default();
        self.build.reset_caches();
    }

    pub fn place(&mut self, mode: NdpMode, pes: u16, preload: bool, db: &ndpdb_host::Database) {
        self.build.place(mode, pes, preload, db);
    }

    /// The row columns the probe reads.
    pub fn row_columns(&self) -> Vec<u32> {
        let mut cols = Vec::new();
        for p in &self.probe {
            cols.extend(p.columns());
        }
        if let Some(r) = &self.residual {
            for a in &r.args {
                cols.extend(a.columns());
            }
        }
        cols
    }

    /// EXPLAIN lines.
    pub fn explain(&self, negated: bool) -> Vec<String> {
        let join = if negated {
            "Hash Anti Join"
        } else {
            "Hash Semi Join"
        };
        let mut lines = vec![format!(
            "  or {join} on {} key(s){}, after {} rows by key",
            self.probe.len(),
            if self.residual.is_some() {
                " with a residual filter"
            } else {
                ""
            },
            self.threshold()
        )];
        lines.extend(self.build.explain().into_iter().map(|l| format!("    {l}")));
        lines
    }
}
