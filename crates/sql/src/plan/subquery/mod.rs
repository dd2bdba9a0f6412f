//! Subqueries: `EXISTS`, `IN (SELECT …)`, scalar subqueries, correlated
//! or not, and queries in FROM (derived tables and `WITH`).
//!
//! A subquery becomes a **parameter slot** of the query that contains it.
//! A query's parameters are laid out as
//!
//! ```text
//!   $1 … $base          the statement's own parameters
//!   slot 0 … slot n-1   one per correlated reference or subquery
//!   transaction time    last (Op::TransactionTime)
//! ```
//!
//! so the expression compiler only ever emits `Op::Param`: the bytecode,
//! the scan core and the device know nothing of subqueries. Slots are of
//! three kinds ([`Slot`]):
//!
//! - **Outer**: a column of the enclosing query named inside a subquery
//!   (a correlated reference). Its value comes with each call of the
//!   subquery, computed by the caller over its own row ([`SubPlan::args`]).
//! - **Once** (PostgreSQL's InitPlan): a subquery whose arguments use no
//!   column of this query's row: computed once per execution, before the
//!   scans start, so a predicate over it still filters a scan — on the host
//!   or on the device — and may drive a primary-key lookup.
//! - **Per row** (PostgreSQL's SubPlan): the subquery is correlated with
//!   this query's row, or is `x IN (…)` with `x` over the row: evaluated
//!   on the host for each joined row, just before the residual WHERE or
//!   the projection that needs it. Results are memoized by the argument
//!   values, so an uncorrelated `IN` list is computed once and probed per
//!   row with a binary search.
//!
//! ```text
//!   plan_query ─► QueryContext (base, outer scope, WITH queries, slots)
//!                   │  compile: unknown name ─► outer_ref ─► Outer slot
//!                   │  compile: subquery     ─► plan child ─► Once / PerRow slot
//!                   ▼
//!   SelectPlan.subqueries: Bindings ─► bind (per execution) ─► params + slots
//! ```
//!
//! A reference resolves in the innermost query that has the name, as in
//! PostgreSQL; a reference two levels out becomes an Outer slot of the
//! middle query too, which passes it down.

mod hashed;
mod hashed_callers;
mod subplan;
mod volatile;

use std::sync::{Arc, Mutex};

use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_host::Database;
use sqlparser::ast::{BinaryOperator, Expr, Ident, Query, Value as AstValue, Visit, Visitor};

use crate::bind::compile::{comparable, compile, Ty};
use crate::bind::scope::{QueryBinder, Scope};
use crate::{Error, Result};

pub use hashed::HashedExists;
pub use subplan::{Binding, Bindings, Comparison, SubKind, SubPlan};
pub use volatile::{SequenceCall, SequenceFunc};

/// A `WITH` query visible by name, with its column aliases.
#[derive(Clone, Debug)]
pub struct Cte {
    pub name: String,
    /// How many entries of the list it is in it sees (those before it).
    pub visible: usize,
    pub columns: Vec<String>,
    pub query: Query,
}

/// One extra parameter of a query.
enum Slot {
    /// A column of the enclosing query: `expr` names it there.
    Outer { expr: Box<Expr> },
    /// A subquery (index into `State::subplans`).
    Subquery(usize),
    /// A sequence function, evaluated per row.
    Call(SequenceCall),
}

/// A subquery expression compiled over a scope layout: its slot and type.
struct Memo {
    expr: Expr,
    layout: Vec<(String, String)>,
    slot: u32,
    ty: Ty,
}

pub use crate::bind::scope::OperandCompiler;

#[derive(Default)]
struct State {
    slots: Vec<Slot>,
    subplans: Vec<Option<SubPlan>>,
    /// Subqueries compiled already, by expression and scope layout
    /// (the planner compiles a condition more than once).
    memo: Vec<Memo>,
    /// The Outer slots' names, kept when the slots move into the plan.
    outer_names: Vec<Expr>,
}

/// The planning context of one query level.
pub struct QueryContext {
    db: Database,
    /// The statement's parameters this query may name (`$1 … $base`).
    pub base: u32,
    /// The enclosing query's scope: a name not found here resolves there.
    /// Dropped once this query is planned (it refers back to the
    /// enclosing query's context, which will own this one's plan).
    outer: Mutex<Option<Scope>>,
    /// This query's own FROM columns: a name found there never resolves
    /// outward, even while a condition is tried over one table alone.
    local: Mutex<Option<Scope>>,
    /// `WITH` queries visible here (a query's own WITH adds to its list).
    ctes: Mutex<Arc<Vec<Cte>>>,
    state: Mutex<State>,
}

impl std::fmt::Debug for QueryContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QueryContext(base {})", self.base)
    }
}

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )
}

/// The highest `$n` named anywhere in `v` (0 if none).
pub fn max_placeholder<V: Visit>(v: &V) -> u32 {
    struct Max(u32);
    impl Visitor for Max {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            if let Expr::Value(v) = e {
                if let AstValue::Placeholder(p) = &v.value {
                    if let Ok(n) = p.trim_start_matches('$').parse::<u32>() {
                        self.0 = self.0.max(n);
                    }
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut m = Max(0);
    let _ = v.visit(&mut m);
    m.0
}

/// The operator of `x op ANY / ALL (…)`.
fn comparison(op: &BinaryOperator) -> Result<Comparison> {
    Ok(match op {
        BinaryOperator::Eq => Comparison::Eq,
        BinaryOperator::NotEq => Comparison::Ne,
        BinaryOperator::Lt => Comparison::Lt,
        BinaryOperator::LtEq => Comparison::Le,
        BinaryOperator::Gt => Comparison::Gt,
        BinaryOperator::GtEq => Comparison::Ge,
        op => return Err(unsupported(format!("operator {op} with ANY / ALL"))),
    })
}

/// `table.name` as an expression that resolves without case folding.
/// The first `base` parameters (the statement's own), NULL where the
/// statement has fewer: the prefix of a subquery's parameters.
pub(crate) fn statement_params(params: &[Value], base: u32) -> Vec<Value> {
    (0..base as usize)
        .map(|i| params.get(i).cloned().unwrap_or(Value::Null))
        .collect()
}

pub fn name_expr(table: Option<&str>, name: &str) -> Expr {
    let col = Ident::with_quote('"', name);
    match table {
        Some(t) => Expr::CompoundIdentifier(vec![Ident::with_quote('"', t), col]),
        None => Expr::Identifier(col),
    }
}

impl QueryContext {
    pub fn new(db: &Database, base: u32, outer: Option<Scope>, ctes: Arc<Vec<Cte>>) -> Arc<Self> {
        Arc::new(QueryContext {
            db: db.clone(),
            base,
            outer: Mutex::new(outer),
            local: Mutex::new(None),
            ctes: Mutex::new(ctes),
            state: Mutex::new(State::default()),
        })
    }

    pub fn db(&self) -> &Database {
        &self.db
    }

    /// Records this query's FROM columns (see [`QueryContext::outer_ref`]).
    pub fn set_local(&self, scope: &Scope) {
        let columns = Scope {
            columns: scope.columns.clone(),
            ctx: None,
        };
        *self.local.lock().unwrap_or_else(|e| e.into_inner()) = Some(columns);
    }

    /// The `WITH` queries visible here, innermost last.
    pub fn ctes(&self) -> Arc<Vec<Cte>> {
        self.ctes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A query's own `WITH` list; each sees those before it.
    pub fn add_ctes(&self, more: Vec<Cte>) {
        let mut ctes = self.ctes.lock().unwrap_or_else(|e| e.into_inner());
        let mut all = ctes.as_ref().clone();
        for mut c in more {
            c.visible = all.len();
            all.push(c);
        }
        *ctes = Arc::new(all);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push_slot(&self, slot: Slot) -> u32 {
        let mut st = self.state();
        st.slots.push(slot);
        self.base + st.slots.len() as u32 - 1
    }

    /// A name this query's scope does not have: a column of an enclosing
    /// query becomes an Outer slot (`None`: no enclosing query has it).
    pub fn outer_ref(&self, table: Option<&str>, name: &str) -> Result<Option<(u32, DataType)>> {
        let outer = self.outer.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(outer) = outer else {
            return Ok(None);
        };
        let local = self.local.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(local) = local {
            if local.resolve(table, name).is_ok() {
                return Ok(None);
            }
        }
        let expr = name_expr(table, name);
        let mut scratch = Vec::new();
        let ty = match compile(&expr, &outer, &mut scratch) {
            Ok((_, ty)) => ty,
            Err(e) if e.code == SqlState::AMBIGUOUS_COLUMN => return Err(e),
            Err(_) => return Ok(None),
        };
        let ty = ty.data_type().unwrap_or(DataType::Text);
        let known = self
            .state()
            .slots
            .iter()
            .position(|s| matches!(s, Slot::Outer { expr: e } if **e == expr));
        let slot = match known {
            Some(i) => self.base + i as u32,
            None => self.push_slot(Slot::Outer {
                expr: Box::new(expr),
            }),
        };
        Ok(Some((slot, ty)))
    }

    /// Plans the subquery expression `e` (EXISTS, IN, ANY / ALL, scalar)
    /// met while compiling over `scope`; returns its slot and type.
    /// `operand` compiles the row-side expressions (correlated values, the
    /// IN operand) in the caller's context: over `scope`'s rows, or over
    /// grouped rows (`grouped`, where `scope` is the grouping's input).
    pub fn subquery(
        self: &Arc<Self>,
        e: &Expr,
        scope: &Scope,
        grouped: bool,
        params: &mut Vec<Option<DataType>>,
        operand: &mut OperandCompiler<'_>,
    ) -> Result<(u32, Ty)> {
        let mut layout: Vec<(String, String)> = scope
            .columns
            .iter()
            .map(|c| (c.table.clone(), c.name.clone()))
            .collect();
        if grouped {
            layout.push(("".into(), "grouped rows".into()));
        }
        // The same subquery over the same columns, or one that needs no
        // column of the row (its arguments are parameters only).
        {
            let st = self.state();
            let once = |slot: u32| match st.slots.get((slot - self.base) as usize) {
                Some(Slot::Subquery(j)) => st
                    .subplans
                    .get(*j)
                    .and_then(Option::as_ref)
                    .is_some_and(|s| !s.per_row),
                _ => false,
            };
            if let Some(m) = st
                .memo
                .iter()
                .find(|m| m.expr == *e && (m.layout == layout || once(m.slot)))
            {
                return Ok((m.slot, m.ty));
            }
        }
        let (query, negated) = match e {
            Expr::Exists { subquery, negated } => (subquery.as_ref(), *negated),
            Expr::InSubquery {
                subquery, negated, ..
            } => (subquery.as_ref(), *negated),
            Expr::Subquery(q) => (q.as_ref(), false),
            Expr::AnyOp { right, .. } | Expr::AllOp { right, .. } => match right.as_ref() {
                Expr::Subquery(q) => (q.as_ref(), false),
                _ => return Err(unsupported("ANY / ALL over an array")),
            },
            _ => return Err(unsupported(format!("expression {e}"))),
        };
        let child = QueryContext::new(
            &self.db,
            max_placeholder(query),
            Some(scope.clone()),
            self.ctes(),
        );
        let plan = crate::plan::query::plan_query_in(query, params, &child);
        *child.outer.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let plan = plan?;
        let args: Vec<Program> = child
            .outer_exprs()
            .iter()
            .map(|x| operand(x, params).map(|(p, _)| p))
            .collect::<Result<_>>()?;
        let column_type = plan.columns.first().map(|c| c.ty);
        let (kind, ty) = match e {
            Expr::Exists { .. } => (SubKind::Exists { negated }, Ty::Known(DataType::Bool)),
            Expr::InSubquery { expr, .. }
            | Expr::AnyOp { left: expr, .. }
            | Expr::AllOp { left: expr, .. } => {
                if plan.columns.len() != 1 {
                    return Err(Error::new(
                        SqlState::SYNTAX_ERROR,
                        if plan.columns.len() > 1 {
                            "subquery has too many columns"
                        } else {
                            "subquery has too few columns"
                        },
                    ));
                }
                if matches!(expr.as_ref(), Expr::Tuple(_)) {
                    return Err(unsupported("row comparison with a subquery"));
                }
                let col = column_type.unwrap_or(DataType::Text);
                let (lhs, lt) = operand(expr, params)?;
                if let Ty::Param(i) = lt {
                    if let Some(slot) = params.get_mut(i as usize) {
                        slot.get_or_insert(col);
                    }
                }
                if let Some(t) = lt.data_type() {
                    if !comparable(t, col) {
                        return Err(Error::new(
                            SqlState::UNDEFINED_FUNCTION,
                            format!(
                                "operator does not exist: {} = {}",
                                t.sql_name(),
                                col.sql_name()
                            ),
                        )
                        .with_hint(
                            "No operator matches the given name and argument types. \
                             You might need to add explicit type casts.",
                        ));
                    }
                }
                let blank_padded = matches!(lt.data_type(), Some(DataType::Char(_)))
                    || matches!(col, DataType::Char(_));
                let kind = match e {
                    Expr::AnyOp { compare_op, .. } | Expr::AllOp { compare_op, .. } => {
                        SubKind::Quantified {
                            lhs,
                            op: comparison(compare_op)?,
                            all: matches!(e, Expr::AllOp { .. }),
                            blank_padded,
                        }
                    }
                    _ => SubKind::In {
                        lhs,
                        negated,
                        blank_padded,
                    },
                };
                (kind, Ty::Known(DataType::Bool))
            }
            _ => {
                if plan.columns.len() != 1 {
                    return Err(Error::new(
                        SqlState::SYNTAX_ERROR,
                        "subquery must return only one column",
                    ));
                }
                (
                    SubKind::Scalar,
                    Ty::Known(column_type.unwrap_or(DataType::Text)),
                )
            }
        };
        let uses_row = |p: &Program| p.ops.iter().any(|op| matches!(op, Op::Column(_)));
        let per_row = args.iter().any(uses_row) || kind.operand().is_some_and(uses_row);
        let hashed = match e {
            Expr::Exists { .. } if per_row => {
                hashed::HashedExists::plan(self, query, &plan, scope, params, operand)
            }
            _ => None,
        };
        let mut sub = SubPlan::new(kind, plan, args, child.base, per_row);
        sub.hashed = hashed;
        let slot = {
            let mut st = self.state();
            st.subplans.push(Some(sub));
            let i = st.subplans.len() - 1;
            st.slots.push(Slot::Subquery(i));
            let slot = self.base + st.slots.len() as u32 - 1;
            st.memo.push(Memo {
                expr: e.clone(),
                layout,
                slot,
                ty,
            });
            slot
        };
        Ok((slot, ty))
    }

    /// A sequence function call: its slot (evaluated per row).
    pub fn sequence_call(&self, call: SequenceCall) -> u32 {
        self.push_slot(Slot::Call(call))
    }

    /// Whether `p` names a subquery slot evaluated per row (such a
    /// condition cannot filter a scan: it runs after the joins, on the host).
    pub fn row_dependent(&self, p: &Program) -> bool {
        let st = self.state();
        p.ops.iter().any(|op| match op {
            Op::Param(i) if *i >= self.base => match st.slots.get((*i - self.base) as usize) {
                Some(Slot::Subquery(j)) => st
                    .subplans
                    .get(*j)
                    .and_then(Option::as_ref)
                    .is_some_and(|s| s.per_row),
                Some(Slot::Call(_)) => true,
                _ => false,
            },
            _ => false,
        })
    }

    /// The enclosing query's columns this query names, in slot order.
    fn outer_exprs(&self) -> Vec<Expr> {
        self.state().outer_names.clone()
    }

    /// Ends planning: the slots move into the plan (the context keeps
    /// nothing, so plans and contexts hold no cycle).
    pub fn finish(&self) -> Bindings {
        let mut st = self.state();
        st.outer_names = st
            .slots
            .iter()
            .filter_map(|s| match s {
                Slot::Outer { expr } => Some(expr.as_ref().clone()),
                Slot::Subquery(_) | Slot::Call(_) => None,
            })
            .collect();
        let mut subplans = std::mem::take(&mut st.subplans);
        let slots = std::mem::take(&mut st.slots)
            .into_iter()
            .map(|s| match s {
                Slot::Outer { .. } => Binding::Outer,
                Slot::Subquery(i) => subplans
                    .get_mut(i)
                    .and_then(Option::take)
                    .map_or(Binding::Outer, |s| Binding::Sub(Box::new(s))),
                Slot::Call(c) => Binding::Call(c),
            })
            .collect();
        st.memo.clear();
        Bindings::new(self.base, slots)
    }
}

impl QueryBinder for QueryContext {
    fn db(&self) -> &Database {
        QueryContext::db(self)
    }

    fn outer_ref(&self, table: Option<&str>, name: &str) -> Result<Option<(u32, DataType)>> {
        QueryContext::outer_ref(self, table, name)
    }

    fn subquery(
        self: Arc<Self>,
        e: &Expr,
        scope: &Scope,
        grouped: bool,
        params: &mut Vec<Option<DataType>>,
        operand: &mut OperandCompiler<'_>,
    ) -> Result<(u32, Ty)> {
        QueryContext::subquery(&self, e, scope, grouped, params, operand)
    }

    fn sequence_call(&self, call: SequenceCall) -> u32 {
        QueryContext::sequence_call(self, call)
    }

    fn row_dependent(&self, p: &Program) -> bool {
        QueryContext::row_dependent(self, p)
    }
}
