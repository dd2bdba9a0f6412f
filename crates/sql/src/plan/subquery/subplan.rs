//! A planned subquery and the slots of one query: binding them per
//! execution (Once) and per row (correlated, or `x IN (…)` over the row).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Mutex;

use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Database, Transaction};

use crate::bind::sequence_call::SequenceCall;
use crate::exec::join::key_of;
use crate::plan::query::{NdpMode, SelectPlan};
use crate::plan::subquery::HashedExists;
use crate::{Error, Result};

/// The first `base` parameters (the statement's own), NULL where the
/// statement has fewer: the prefix of a subquery's parameters.
pub(crate) fn statement_params(params: &[Value], base: u32) -> Vec<Value> {
    (0..base as usize)
        .map(|i| params.get(i).cloned().unwrap_or(Value::Null))
        .collect()
}

/// What a subquery expression asks of the subquery's rows.
pub enum SubKind {
    /// `[NOT] EXISTS (…)`.
    Exists { negated: bool },
    /// `(SELECT x …)`: its only value, NULL for no row, 21000 for more.
    Scalar,
    /// `lhs [NOT] IN (SELECT x …)`; `blank_padded`: a CHAR(n) side
    /// compares without trailing blanks.
    In {
        lhs: Program,
        negated: bool,
        blank_padded: bool,
    },
    /// `lhs op ANY (…)` (`all` false) or `lhs op ALL (…)`.
    Quantified {
        lhs: Program,
        op: Comparison,
        all: bool,
        blank_padded: bool,
    },
}

/// The comparison of a quantified subquery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Comparison {
    pub fn sql(self) -> &'static str {
        match self {
            Comparison::Eq => "=",
            Comparison::Ne => "<>",
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
        }
    }

    fn holds(self, o: Ordering) -> bool {
        match self {
            Comparison::Eq => o == Ordering::Equal,
            Comparison::Ne => o != Ordering::Equal,
            Comparison::Lt => o == Ordering::Less,
            Comparison::Le => o != Ordering::Greater,
            Comparison::Gt => o == Ordering::Greater,
            Comparison::Ge => o != Ordering::Less,
        }
    }
}

impl SubKind {
    /// The row-side operand of IN / ANY / ALL.
    pub fn operand(&self) -> Option<&Program> {
        match self {
            SubKind::In { lhs, .. } | SubKind::Quantified { lhs, .. } => Some(lhs),
            SubKind::Exists { .. } | SubKind::Scalar => None,
        }
    }
}

/// The subquery's rows, reduced to what [`SubKind`] needs.
enum Answer {
    Value(Value),
    /// Non-NULL values sorted by [`Value::sql_cmp`], without duplicates.
    Set {
        sorted: Vec<Value>,
        has_null: bool,
    },
}

/// Memoized answers kept per argument tuple before the cache starts over.
const CACHE_LIMIT: usize = 100_000;

/// One planned subquery.
pub struct SubPlan {
    pub kind: SubKind,
    pub plan: SelectPlan,
    /// The values of the subquery's Outer slots, over the caller's row
    /// and parameters, in slot order.
    pub args: Vec<Program>,
    /// The statement parameters the subquery names.
    base: u32,
    /// Evaluated per row of the caller (else once per execution).
    pub per_row: bool,
    /// A correlated EXISTS answered by a hash semi join once enough rows
    /// asked (`hashed.rs`).
    pub hashed: Option<HashedExists>,
    /// Memoized answers per argument tuple (a correlated subquery).
    cache: Mutex<HashMap<Vec<u8>, Answer>>,
    /// The one answer of a subquery without arguments, asked per row
    /// only for its row-side operand (`x NOT IN (SELECT …)`): no key
    /// to build and hash per row.
    uncorrelated: Mutex<Option<Answer>>,
}

impl SubPlan {
    pub fn new(
        kind: SubKind,
        plan: SelectPlan,
        args: Vec<Program>,
        base: u32,
        per_row: bool,
    ) -> Self {
        SubPlan {
            kind,
            plan,
            args,
            base,
            per_row,
            hashed: None,
            cache: Mutex::new(HashMap::new()),
            uncorrelated: Mutex::new(None),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Answer>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The expression's value for the caller's `row` and `params`
    /// (laid out as [`Bindings::bind`] lays them out). Without `tx` only a
    /// memoized answer can be given (re-checks of a row under READ
    /// COMMITTED, where the subquery ran for the row already).
    pub fn value(
        &self,
        mut tx: Option<&mut Transaction>,
        row: &[Value],
        params: &[Value],
    ) -> Result<Value> {
        if let (Some(h), SubKind::Exists { negated }) = (&self.hashed, &self.kind) {
            if let Some(found) = h.exists(tx.as_deref_mut(), row, params)? {
                return Ok(Value::Bool(found != *negated));
            }
        }
        if self.args.is_empty() {
            let mut single = self.uncorrelated.lock().unwrap_or_else(|e| e.into_inner());
            let answer = match &mut *single {
                Some(answer) => answer,
                slot @ None => slot.insert(self.run(tx, &[], params)?),
            };
            return self.apply(answer, row, params);
        }
        let args = self
            .args
            .iter()
            .map(|a| a.eval(row, params))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let key = key_of(&args);
        let cached = self.cache().get(&key).map(|a| self.apply(a, row, params));
        if let Some(v) = cached {
            return v;
        }
        let answer = self.run(tx, &args, params)?;
        let v = self.apply(&answer, row, params);
        let mut cache = self.cache();
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, answer);
        v
    }

    /// Runs the subquery for the argument values `args`.
    fn run(
        &self,
        tx: Option<&mut Transaction>,
        args: &[Value],
        params: &[Value],
    ) -> Result<Answer> {
        let Some(tx) = tx else {
            // A row re-checked after a concurrent update (READ COMMITTED)
            // whose correlated values changed: the subquery would have to
            // run inside the row's update.
            return Err(Error::new(
                SqlState::SERIALIZATION_FAILURE,
                "could not serialize access due to concurrent update",
            ));
        };
        let statement = statement_params(params, self.base);
        let txn = params.last().cloned().unwrap_or(Value::Null);
        let sub = &self.plan;
        let bound = sub.subqueries.bind(tx, &statement, args, txn)?;
        let rows = sub.rows(tx, &bound)?;
        self.answer(rows)
    }

    fn answer(&self, rows: Vec<Vec<Value>>) -> Result<Answer> {
        Ok(match &self.kind {
            SubKind::Exists { .. } => Answer::Value(Value::Bool(!rows.is_empty())),
            SubKind::Scalar => {
                if rows.len() > 1 {
                    return Err(Error::new(
                        SqlState::CARDINALITY_VIOLATION,
                        "more than one row returned by a subquery used as an expression",
                    ));
                }
                Answer::Value(
                    rows.into_iter()
                        .next()
                        .and_then(|r| r.into_iter().next())
                        .unwrap_or(Value::Null),
                )
            }
            SubKind::In { blank_padded, .. } | SubKind::Quantified { blank_padded, .. } => {
                let mut has_null = false;
                let mut sorted = Vec::with_capacity(rows.len());
                for r in rows {
                    match r.into_iter().next() {
                        None | Some(Value::Null) => has_null = true,
                        Some(v) => sorted.push(unpad(v, *blank_padded)),
                    }
                }
                sorted.sort_by(|a, b| a.sql_cmp(b).unwrap_or(Ordering::Equal));
                sorted.dedup_by(|a, b| a.sql_cmp(b) == Some(Ordering::Equal));
                Answer::Set { sorted, has_null }
            }
        })
    }

    fn apply(&self, answer: &Answer, row: &[Value], params: &[Value]) -> Result<Value> {
        match (&self.kind, answer) {
            (SubKind::Exists { negated }, Answer::Value(Value::Bool(b))) => {
                Ok(Value::Bool(*b != *negated))
            }
            (
                SubKind::In {
                    lhs,
                    negated,
                    blank_padded,
                },
                Answer::Set { sorted, has_null },
            ) => {
                // An empty subquery: IN is false and NOT IN true, even for NULL.
                if sorted.is_empty() && !has_null {
                    return Ok(Value::Bool(*negated));
                }
                let x = lhs.eval(row, params)?;
                if x.is_null() {
                    return Ok(Value::Null);
                }
                let x = unpad(x, *blank_padded);
                let found = sorted
                    .binary_search_by(|v| v.sql_cmp(&x).unwrap_or(Ordering::Less))
                    .is_ok();
                Ok(if found {
                    Value::Bool(!negated)
                } else if *has_null {
                    Value::Null
                } else {
                    Value::Bool(*negated)
                })
            }
            (
                SubKind::Quantified {
                    lhs,
                    op,
                    all,
                    blank_padded,
                },
                Answer::Set { sorted, has_null },
            ) => {
                // No rows: ALL holds and ANY does not, even for NULL.
                if sorted.is_empty() && !has_null {
                    return Ok(Value::Bool(*all));
                }
                let x = lhs.eval(row, params)?;
                if x.is_null() {
                    return Ok(Value::Null);
                }
                let x = unpad(x, *blank_padded);
                let mut unknown = *has_null;
                for v in sorted {
                    match x.sql_cmp(v).map(|o| op.holds(o)) {
                        Some(true) if !all => return Ok(Value::Bool(true)),
                        Some(false) if *all => return Ok(Value::Bool(false)),
                        Some(_) => {}
                        None => unknown = true,
                    }
                }
                Ok(if unknown {
                    Value::Null
                } else {
                    Value::Bool(*all)
                })
            }
            (_, Answer::Value(v)) => Ok(v.clone()),
            (_, Answer::Set { .. }) => Err(Error::new(
                SqlState::INTERNAL_ERROR,
                "subquery answer of the wrong kind",
            )),
        }
    }
}

/// CHAR(n) compares without its trailing blanks.
fn unpad(v: Value, blank_padded: bool) -> Value {
    match v {
        Value::Text(mut s) if blank_padded => {
            s.truncate(s.trim_end_matches(' ').len());
            Value::Text(s)
        }
        v => v,
    }
}

/// What fills one extra parameter of a query.
pub enum Binding {
    /// A value of the caller's row (a correlated reference).
    Outer,
    Sub(Box<SubPlan>),
    /// A sequence function, per row.
    Call(SequenceCall),
}

impl Binding {
    fn per_row(&self) -> bool {
        match self {
            Binding::Outer => false,
            Binding::Sub(s) => s.per_row,
            Binding::Call(_) => true,
        }
    }
}

/// The extra parameters of one query.
#[derive(Default)]
pub struct Bindings {
    base: u32,
    slots: Vec<Binding>,
    /// Parameter indexes of the per-row slots.
    per_row: Vec<u32>,
}

impl Bindings {
    pub fn new(base: u32, slots: Vec<Binding>) -> Self {
        let per_row = slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.per_row())
            .map(|(i, _)| base + i as u32)
            .collect();
        Bindings {
            base,
            slots,
            per_row,
        }
    }

    /// Whether `p` needs a subquery evaluated for its row.
    pub fn row_dependent(&self, p: &Program) -> bool {
        !self.per_row.is_empty()
            && p.ops
                .iter()
                .any(|op| matches!(op, Op::Param(i) if self.per_row.contains(i)))
    }

    /// Every slot is a correlated value (no subquery, no sequence call).
    pub fn only_outer(&self) -> bool {
        self.slots.iter().all(|s| matches!(s, Binding::Outer))
    }

    /// No slot at all (no subquery, correlated value or sequence call).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn has_per_row(&self) -> bool {
        !self.per_row.is_empty()
    }

    /// The row columns the per-row subqueries read (their arguments and
    /// IN operands): a scan placed on the device must return them.
    pub fn row_columns(&self) -> Vec<u32> {
        let mut cols = Vec::new();
        for (_, s) in self.subplans().filter(|(_, s)| s.per_row) {
            for a in &s.args {
                cols.extend(a.columns());
            }
            if let Some(lhs) = s.kind.operand() {
                cols.extend(lhs.columns());
            }
            if let Some(h) = &s.hashed {
                cols.extend(h.row_columns());
            }
        }
        cols
    }

    /// The caller holds `rows` rows and is about to evaluate its per-row
    /// subqueries on them: a hashed EXISTS worth it answers them all at
    /// once (`hashed_callers.rs`). `each` visits every held row.
    pub fn answer_held_rows(
        &self,
        tx: &mut Transaction,
        params: &[Value],
        rows: usize,
        each: impl FnOnce(&mut dyn FnMut(&[Value]) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        let wanting: Vec<&HashedExists> = self
            .subplans()
            .filter(|(_, s)| s.per_row)
            .filter_map(|(_, s)| s.hashed.as_ref())
            .filter(|h| h.wants_callers(rows))
            .collect();
        if wanting.is_empty() {
            return Ok(());
        }
        let mut values: Vec<Vec<Value>> = wanting.iter().map(|_| Vec::new()).collect();
        each(&mut |row| {
            for (h, v) in wanting.iter().zip(values.iter_mut()) {
                h.caller_values(row, params, v)?;
            }
            Ok(())
        })?;
        for (h, v) in wanting.into_iter().zip(values) {
            h.answer_callers(tx, v, params)?;
        }
        Ok(())
    }

    /// The parameters of one execution: `statement` (the first `base`
    /// statement parameters), the Outer slots from `outer` in order, the
    /// Once slots computed, per-row slots NULL, then `txn` last.
    pub fn bind(
        &self,
        tx: &mut Transaction,
        statement: &[Value],
        outer: &[Value],
        txn: Value,
    ) -> Result<Vec<Value>> {
        let mut params = statement_params(statement, self.base);
        let mut outer = outer.iter();
        for s in &self.slots {
            params.push(match s {
                Binding::Outer => outer.next().cloned().unwrap_or(Value::Null),
                _ => Value::Null,
            });
        }
        params.push(txn);
        for (i, s) in self.slots.iter().enumerate() {
            if let Binding::Sub(sub) = s {
                if sub.per_row {
                    continue;
                }
                let v = sub.value(Some(tx), &[], &params)?;
                params[self.base as usize + i] = v;
            }
        }
        Ok(params)
    }

    /// Evaluates `p` over `row`, first computing the per-row subqueries it names.
    pub fn eval(
        &self,
        mut tx: Option<&mut Transaction>,
        p: &Program,
        row: &[Value],
        params: &[Value],
    ) -> Result<Value> {
        if !self.row_dependent(p) {
            return Ok(p.eval(row, params)?);
        }
        let mut local = params.to_vec();
        for &i in &self.per_row {
            if !p.ops.contains(&Op::Param(i)) {
                continue;
            }
            local[i as usize] = match self.slots.get((i - self.base) as usize) {
                Some(Binding::Sub(sub)) => sub.value(tx.as_deref_mut(), row, params)?,
                Some(Binding::Call(call)) => call.call(tx.as_deref_mut(), row, params)?,
                _ => continue,
            };
        }
        Ok(p.eval(row, &local)?)
    }

    /// [`Bindings::eval`] of a condition: NULL is false.
    pub fn eval_predicate(
        &self,
        tx: Option<&mut Transaction>,
        p: &Program,
        row: &[Value],
        params: &[Value],
    ) -> Result<bool> {
        match self.eval(tx, p, row, params)? {
            Value::Bool(b) => Ok(b),
            Value::Null => Ok(false),
            _ => Err(Error::new(
                SqlState::DATATYPE_MISMATCH,
                "argument of WHERE must be type boolean",
            )),
        }
    }

    fn subplans(&self) -> impl Iterator<Item = (usize, &SubPlan)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| match s {
            Binding::Sub(s) => Some((i, s.as_ref())),
            _ => None,
        })
    }

    /// Forgets memoized answers (a new execution: new parameters, snapshot).
    pub fn reset(&self) {
        for (_, s) in self.subplans() {
            s.cache().clear();
            *s.uncorrelated.lock().unwrap_or_else(|e| e.into_inner()) = None;
            s.plan.reset_caches();
            if let Some(h) = &s.hashed {
                h.reset();
            }
        }
    }

    /// Places the subqueries' scans (`SET ndp`).
    pub fn place(&mut self, mode: NdpMode, pes: u16, preload: bool, db: &Database) {
        for s in &mut self.slots {
            if let Binding::Sub(s) = s {
                s.plan.place(mode, pes, preload, db);
                if let Some(h) = &mut s.hashed {
                    h.place(mode, pes, preload, db);
                }
            }
        }
    }

    /// EXPLAIN lines of the subqueries.
    pub fn explain(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (i, s) in self.subplans() {
            let what = match s.kind {
                SubKind::Exists { negated: false } => "EXISTS",
                SubKind::Exists { negated: true } => "NOT EXISTS",
                SubKind::Scalar => "scalar",
                SubKind::In { negated: false, .. } => "IN",
                SubKind::In { negated: true, .. } => "NOT IN",
                SubKind::Quantified { all: false, .. } => "ANY",
                SubKind::Quantified { all: true, .. } => "ALL",
            };
            let when = if s.per_row {
                "SubPlan, per row"
            } else {
                "InitPlan, once"
            };
            lines.push(format!(
                "  {when} ${} ({what}) [host]",
                self.base as usize + i + 1
            ));
            lines.extend(s.plan.explain().into_iter().map(|l| format!("    {l}")));
            if let (Some(h), SubKind::Exists { negated }) = (&s.hashed, &s.kind) {
                lines.extend(h.explain(*negated).into_iter().map(|l| format!("  {l}")));
            }
        }
        lines
    }
}
