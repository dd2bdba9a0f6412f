//! A correlated `[NOT] EXISTS` answered for all the caller's rows at once:
//! the callers hashed, the subquery's rows streamed through them
//! (PostgreSQL 18's Hash Right Semi Join).
//!
//! When the caller holds its rows before it evaluates the EXISTS (a
//! filter after a join or a scan, [`Bindings::answer_held_rows`]), the
//! smaller side is usually the caller's: CH-benCHmark Q4 asks for 300,000
//! orders whether one of 3,000,000 order lines qualifies. Hashing the
//! order lines ([`HashedExists`]'s build) holds all of them at once;
//! hashing the callers holds what the caller holds anyway, and the
//! subquery's rows only pass by:
//!
//! ```text
//!   callers:  each row ─► (key values, residual arguments) ─► KeyTable
//!   stream:   SELECT keys, residual columns FROM inner WHERE local terms
//!             each row ─► callers with its key ─► residual holds? ─► found
//!   answer:   row ─► its key's callers ─► the one with its arguments ─► found
//! ```
//!
//! A caller is looked up again by its key and its residual arguments, the
//! only values the subquery's answer depends on (besides the statement's
//! parameters and snapshot, which an execution does not change): a row
//! that was not among the callers (a row read again under READ
//! COMMITTED) gets no answer here and goes the per-row way.
//!
//! [`Bindings::answer_held_rows`]: super::Bindings::answer_held_rows

use ndpdb_formats::Value;
use ndpdb_host::Transaction;

use super::hashed::{first_columns, Answered, HashedExists, Residual};
use crate::exec::join::keys::KeyTable;
use crate::Result;

impl HashedExists {
    /// Whether `rows` held rows are worth answering at once.
    pub(super) fn wants_callers(&self, rows: usize) -> bool {
        rows >= self.threshold()
    }

    /// Appends what the answer for the caller's `row` depends on: the
    /// key values, then the residual's arguments.
    pub(super) fn caller_values(
        &self,
        row: &[Value],
        params: &[Value],
        out: &mut Vec<Value>,
    ) -> Result<()> {
        for p in &self.probe {
            out.push(p.eval(row, params)?);
        }
        if let Some(r) = &self.residual {
            for a in &r.args {
                out.push(a.eval(row, params)?);
            }
        }
        Ok(())
    }

    fn caller_width(&self) -> usize {
        self.probe.len() + self.residual.as_ref().map_or(0, |r| r.args.len())
    }

    /// Streams the subquery's rows through the callers of `values` (as
    /// [`HashedExists::caller_values`] laid them out) and keeps each
    /// caller's answer for [`HashedExists::exists`].
    pub(super) fn answer_callers(
        &self,
        tx: &mut Transaction,
        values: Vec<Value>,
        params: &[Value],
    ) -> Result<()> {
        let width = self.caller_width().max(1);
        let keys = self.probe.len();
        let key_columns = first_columns(keys);
        let mut table = KeyTable::build(&key_columns, values.chunks_exact(width), &[])?;
        let callers = values.len() / width;
        let mut found = vec![false; callers];
        let mut left = callers;

        let statement = super::subplan::statement_params(params, self.base);
        let txn = params.last().cloned().unwrap_or(Value::Null);
        let mut local = Vec::new();
        let bound = self
            .build
            .subqueries
            .bind(tx, &statement, &[], txn.clone())?;
        let inner_width = keys + self.residual_width;
        self.build.each_row(tx, &bound, |inner| {
            if left == 0 {
                return Ok(());
            }
            if inner.len() != inner_width {
                return Err(super::hashed::width_mismatch(inner_width, inner.len()));
            }
            for at in table.probe(&key_columns, &inner, &[])? {
                if found[at] {
                    continue;
                }
                let holds = match &self.residual {
                    None => true,
                    Some(residual) => {
                        let args = values
                            .get(at * width + keys..(at + 1) * width)
                            .unwrap_or(&[]);
                        Residual::params_into(&statement, args, &txn, &mut local);
                        residual.holds(&inner, &local)?
                    }
                };
                if holds {
                    found[at] = true;
                    left -= 1;
                }
            }
            Ok(())
        })?;
        self.state().answered = Some(Answered {
            keys: table,
            key_columns,
            values,
            width,
            found,
        });
        Ok(())
    }
}

impl Answered {
    /// The answer kept for the caller's `row`; `None` when it was not
    /// among the callers.
    pub(super) fn lookup(
        &mut self,
        exists: &HashedExists,
        row: &[Value],
        params: &[Value],
    ) -> Result<Option<bool>> {
        let mut mine = Vec::with_capacity(self.width);
        exists.caller_values(row, params, &mut mine)?;
        let keys = exists.probe.len();
        if mine[..keys].iter().any(Value::is_null) {
            // `=` never holds for NULL: no inner row has this key.
            return Ok(Some(false));
        }
        for at in self.keys.probe(&self.key_columns, &mine, &[])? {
            let theirs = self.values.get(at * self.width..(at + 1) * self.width);
            if theirs.is_some_and(|t| t[keys..] == mine[keys..]) {
                return Ok(self.found.get(at).copied());
            }
        }
        Ok(None)
    }
}
