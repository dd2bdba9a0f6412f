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
//!                   │  compile: subquery     ─► plan child (plan/query/nested.rs)
//!                   │                           ─► Once / PerRow slot
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
use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::Database;
use sqlparser::ast::{Expr, Ident, Query, Value as AstValue, Visit, Visitor};

use crate::bind::compile::{compile, Ty};
use crate::bind::scope::Scope;
use crate::Result;

pub use hashed::HashedExists;
pub(crate) use hashed::Residual;
pub(crate) use subplan::statement_params;
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

/// `table.name` as an expression that resolves without case folding.
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
            merged: scope.merged.clone(),
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
            if local.knows(table, name) {
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

    /// A subquery expression compiled already over the same columns
    /// (`layout`), or one that needs no column of the row: its slot and
    /// type (the planner compiles a condition more than once).
    pub(crate) fn memoized(&self, e: &Expr, layout: &[(String, String)]) -> Option<(u32, Ty)> {
        let st = self.state();
        let once = |slot: u32| match st.slots.get((slot - self.base) as usize) {
            Some(Slot::Subquery(j)) => st
                .subplans
                .get(*j)
                .and_then(Option::as_ref)
                .is_some_and(|s| !s.per_row),
            _ => false,
        };
        st.memo
            .iter()
            .find(|m| m.expr == *e && (m.layout == layout || once(m.slot)))
            .map(|m| (m.slot, m.ty))
    }

    /// The context of a subquery `query` met over `scope`: a name it does
    /// not have resolves in `scope` (an Outer slot of the child).
    pub(crate) fn child(&self, query: &Query, scope: &Scope) -> Arc<QueryContext> {
        QueryContext::new(
            &self.db,
            max_placeholder(query),
            Some(scope.clone()),
            self.ctes(),
        )
    }

    /// Forgets the enclosing query's scope once this query is planned
    /// (the scope refers back to the enclosing context, which will own
    /// this query's plan).
    pub(crate) fn detach_outer(&self) {
        *self.outer.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Records a planned subquery `e` (compiled over `layout`): its slot.
    pub(crate) fn add_subplan(
        &self,
        sub: SubPlan,
        e: &Expr,
        layout: Vec<(String, String)>,
        ty: Ty,
    ) -> u32 {
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
    pub(crate) fn outer_exprs(&self) -> Vec<Expr> {
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
