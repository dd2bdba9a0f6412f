//! Prepared statements: a statement planned once and run many times —
//! the extended protocol's Parse, SQL `PREPARE`, the plans of embedding
//! programs — planned again when what the plan was made from changed.
//!
//! ```text
//!  prepare(statement) ─► plan + stamp (catalog generation, settings)
//!  execute ─► stamp current? ── yes ──► run the plan
//!                 │ no: DDL since (any DROP/CREATE/ALTER of a table,
//!                 │ index, view, sequence or constraint), or a SET
//!                 ▼
//!            plan the statement again ─► same result columns? ─ no ─► 0A000
//!                 │ yes                    "cached plan must not change
//!                 ▼                         result type"
//!            keep the new plan and stamp, run it
//! ```
//!
//! A plan holds the tables, indexes and views it was made against (their
//! runtime handles, not their names), the device placement the session's
//! settings chose, and the values of `current_setting()` and friends; a
//! plan kept across `DROP TABLE t; CREATE TABLE t …` would write into the
//! dropped table. PostgreSQL plans a cached statement again whenever an
//! object it depends on changes (plancache.c); here any change of the
//! catalog does (the database's catalog generation, bumped by every DDL
//! when it has finished), and so does any SET of the session, which may
//! change placement or a session value a plan holds. The parameter types
//! stay those of the first plan, and the result columns must stay the
//! same (names and types), as PostgreSQL requires of a prepared
//! statement.
//!
//! SQL's `PREPARE name [(types)] AS statement`, `EXECUTE name [(values)]`
//! and `DEALLOCATE [PREPARE] name | ALL` keep their statements here, by
//! name; the wire server keeps the extended protocol's own, and looks
//! here for names it does not hold (one namespace, as in PostgreSQL).

use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex};

use ndpdb_formats::{DataType, SqlState, Value};
use sqlparser::ast::{Expr, Statement};

use super::{session_values, Session};
use crate::bind::scope::Scope;
use crate::exec::dml::{plan_delete, plan_insert, plan_update, DeletePlan, InsertPlan, UpdatePlan};
use crate::limits::with_statement_stack;
use crate::output::{Output, ResultColumn};
use crate::plan::query::{plan_query, SelectPlan};
use crate::plan::subquery::QueryContext;
use crate::{Error, Result};

/// What a plan was made against: the database's catalog generation and
/// the session's settings counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PlanStamp {
    catalog: u64,
    settings: u64,
}

pub(super) enum PreparedKind {
    Select(Box<SelectPlan>),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
    /// A statement run from its syntax tree each time (DDL, SET, SHOW, …).
    Other(Box<Statement>),
}

impl PreparedKind {
    fn columns(&self) -> Vec<ResultColumn> {
        match self {
            PreparedKind::Select(p) => p.columns.clone(),
            PreparedKind::Insert(p) => p.columns(),
            PreparedKind::Update(p) => p.columns(),
            PreparedKind::Delete(p) => p.columns(),
            PreparedKind::Other(s) if crate::backup_call::is_backup_call(s) => {
                crate::backup_call::columns()
            }
            PreparedKind::Other(s) if super::set_config::is_set_config(s) => {
                super::set_config::columns()
            }
            _ => Vec::new(),
        }
    }
}

/// A plan and the parameter types it inferred.
pub(super) struct Planned {
    pub(super) kind: PreparedKind,
    param_types: Vec<Option<DataType>>,
}

struct Current {
    stamp: PlanStamp,
    plan: Arc<Planned>,
}

/// A statement planned once and executable many times with parameters.
pub struct Prepared {
    /// The statement as it was prepared, to plan again; `None` for a
    /// plan made for one run, and for statements run from their tree.
    source: Option<Box<Statement>>,
    current: Mutex<Current>,
    /// Types of `$1…$n` as inferred from context when first planned
    /// (`None`: unknown).
    pub param_types: Vec<Option<DataType>>,
    /// The result columns of the first plan (empty for commands).
    columns: Vec<ResultColumn>,
}

impl Prepared {
    fn new(
        source: Option<Box<Statement>>,
        kind: PreparedKind,
        param_types: Vec<Option<DataType>>,
        stamp: PlanStamp,
    ) -> Prepared {
        Prepared {
            source,
            columns: kind.columns(),
            current: Mutex::new(Current {
                stamp,
                plan: Arc::new(Planned {
                    kind,
                    param_types: param_types.clone(),
                }),
            }),
            param_types,
        }
    }

    /// Result columns of a query (empty for commands).
    pub fn columns(&self) -> Vec<ResultColumn> {
        self.columns.clone()
    }

    /// The plan as last made (see [`Session::current_plan`]).
    pub(super) fn plan(&self) -> Arc<Planned> {
        self.lock().plan.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// 0A000, as PostgreSQL answers a prepared statement whose result
/// columns a DDL changed.
fn result_type_changed() -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        "cached plan must not change result type",
    )
    .with_routine("RevalidateCachedQuery")
}

impl Session {
    /// What a plan made now is made against.
    pub(super) fn plan_stamp(&self) -> PlanStamp {
        PlanStamp {
            catalog: self.db.catalog_generation(),
            settings: self.plan_settings,
        }
    }

    /// A setting changed: plans made before are made again before they run.
    pub(super) fn settings_changed(&mut self) {
        self.plan_settings += 1;
    }

    pub fn prepare(&mut self, sql: &str) -> Result<Prepared> {
        with_statement_stack(|| {
            let mut stmts = super::parse(sql)?;
            if stmts.len() != 1 {
                return Err(Error::new(
                    SqlState::SYNTAX_ERROR,
                    "cannot insert multiple commands into a prepared statement",
                ));
            }
            self.prepare_statement(stmts.remove(0))
        })
    }

    pub fn prepare_statement(&mut self, stmt: Statement) -> Result<Prepared> {
        with_statement_stack(|| self.plan_statement(stmt))
    }

    fn plan_statement(&mut self, stmt: Statement) -> Result<Prepared> {
        // Read before planning: a DDL that ends meanwhile makes the plan
        // stale, never the other way round.
        let stamp = self.plan_stamp();
        let mut param_types = Vec::new();
        if !crate::backup_call::is_backup_call(&stmt) && !super::set_config::is_set_config(&stmt) {
            if let Some(kind) = self.plan_resolving(&stmt, &mut param_types)? {
                return Ok(Prepared::new(
                    Some(Box::new(stmt)),
                    kind,
                    param_types,
                    stamp,
                ));
            }
        }
        let stmt = self.resolve_session_values(stmt)?;
        Ok(Prepared::new(
            None,
            PreparedKind::Other(Box::new(stmt)),
            param_types,
            stamp,
        ))
    }

    /// Plans a SELECT, INSERT, UPDATE or DELETE from a borrowed statement,
    /// for one run.
    pub(super) fn prepare_borrowed(&mut self, stmt: &Statement) -> Result<Prepared> {
        with_statement_stack(|| {
            let stamp = self.plan_stamp();
            let mut param_types = Vec::new();
            let kind = self
                .plan_resolving(stmt, &mut param_types)?
                .ok_or_else(|| {
                    Error::new(SqlState::INTERNAL_ERROR, "not a query or DML statement")
                })?;
            Ok(Prepared::new(None, kind, param_types, stamp))
        })
    }

    /// Plans a SELECT, INSERT, UPDATE or DELETE (`None` for any other
    /// statement): the tree is copied only when session values
    /// (`current_setting()`, `current_user`, …) must be resolved in it
    /// (copying a tree recurses as deep as it is nested).
    fn plan_resolving(
        &mut self,
        stmt: &Statement,
        param_types: &mut Vec<Option<DataType>>,
    ) -> Result<Option<PreparedKind>> {
        let resolved;
        let stmt = if session_values::mentioned(stmt) {
            resolved = self.resolve_session_values(stmt.clone())?;
            &resolved
        } else {
            stmt
        };
        // The catalog relations name the database the client connected to.
        let database = self.database_name.clone();
        crate::exec::row_source::with_catalog_name(&database, || self.plan_dml(stmt, param_types))
    }

    fn plan_dml(
        &mut self,
        stmt: &Statement,
        param_types: &mut Vec<Option<DataType>>,
    ) -> Result<Option<PreparedKind>> {
        crate::ddl::view::refuse_write(&self.db, stmt)?;
        Ok(Some(match stmt {
            Statement::Query(q) => {
                let mut plan =
                    crate::shared_view::sharing_views(|| plan_query(&self.db, q, param_types))?;
                plan.place(self.ndp, self.ndp_pes, self.ndp_preload, &self.db);
                PreparedKind::Select(Box::new(plan))
            }
            Statement::Insert(i) => PreparedKind::Insert(plan_insert(&self.db, i, param_types)?),
            Statement::Update(u) => {
                let mut plan = plan_update(&self.db, u, param_types)?;
                plan.place(self.ndp, self.ndp_pes, self.ndp_preload, &self.db)?;
                PreparedKind::Update(plan)
            }
            Statement::Delete(d) => {
                let mut plan = plan_delete(&self.db, d, param_types)?;
                plan.place(self.ndp, self.ndp_pes, self.ndp_preload, &self.db)?;
                PreparedKind::Delete(plan)
            }
            _ => return Ok(None),
        }))
    }

    /// The plan to run `p` with: the one it has, or — after a DDL or a
    /// SET since it was made — a new one (0A000 if its result columns
    /// differ from the first plan's; the old plan then stays, and so does
    /// the error). A planning error is the statement's error, and aborts
    /// the open transaction as any error does.
    pub fn revalidate(&mut self, p: &Prepared) -> Result<()> {
        self.current_plan(p).map(|_| ())
    }

    pub(super) fn current_plan(&mut self, p: &Prepared) -> Result<Arc<Planned>> {
        let stamp = self.plan_stamp();
        let source = match &p.source {
            Some(source) if p.lock().stamp != stamp => source,
            _ => return Ok(p.plan()),
        };
        self.check_not_failed()?;
        let mut param_types = Vec::new();
        let planned = with_statement_stack(|| self.plan_resolving(source, &mut param_types))
            .and_then(|kind| kind.ok_or_else(|| Error::new(SqlState::INTERNAL_ERROR, "not a plan")))
            .and_then(|kind| match kind.columns() == p.columns {
                true => Ok(Arc::new(Planned { kind, param_types })),
                false => Err(result_type_changed()),
            });
        match planned {
            Ok(plan) => {
                *p.lock() = Current {
                    stamp,
                    plan: plan.clone(),
                };
                Ok(plan)
            }
            Err(e) => {
                self.fail_transaction();
                Err(e)
            }
        }
    }

    /// Executes a prepared statement; parameters are cast to the types of
    /// its current plan.
    pub fn execute_prepared(&mut self, p: &Prepared, params: &[Value]) -> Result<Output> {
        self.interrupt.start_statement(self.statement_timeout);
        let _entered = self.interrupt.enter();
        let planned = self.current_plan(p)?;
        let (plan, types) = (&planned.kind, &planned.param_types);
        if let PreparedKind::Other(stmt) = plan {
            return self.execute_statement(stmt, params);
        }
        let command = match plan {
            PreparedKind::Insert(_) => Some("INSERT"),
            PreparedKind::Update(_) => Some("UPDATE"),
            PreparedKind::Delete(_) => Some("DELETE"),
            PreparedKind::Select(plan) if plan.for_update => Some("SELECT FOR UPDATE"),
            _ => None,
        };
        if let (Some(command), true) = (command, self.read_only_now()) {
            return self.guarded(|_| Err(crate::read_only::refused(command)));
        }
        let params: Vec<Value> = params
            .iter()
            .enumerate()
            .map(|(i, v)| match types.get(i).copied().flatten() {
                Some(t) => v.cast(&t).map_err(Error::from),
                None => Ok(v.clone()),
            })
            .collect::<Result<_>>()?;
        if params.len() < p.param_types.len() {
            return Err(Error::new(
                SqlState::PROTOCOL_VIOLATION,
                format!(
                    "statement needs {} parameters, got {}",
                    p.param_types.len(),
                    params.len()
                ),
            ));
        }
        self.in_transaction(|tx| {
            // current_timestamp: the last parameter (Op::TransactionTime).
            let mut params = params;
            params.push(Value::Timestamp(tx.started_micros()));
            match plan {
                PreparedKind::Select(plan) => plan.execute(tx, &params),
                PreparedKind::Insert(plan) => plan.execute(tx, &params),
                PreparedKind::Update(plan) => plan.execute(tx, &params),
                PreparedKind::Delete(plan) => plan.execute(tx, &params),
                PreparedKind::Other(_) => Err(Error::new(SqlState::INTERNAL_ERROR, "not a plan")),
            }
        })
    }

    /// Inserts a batch of rows through the INSERT `p` (one value per
    /// target column, cast to the column's type as an assignment): how
    /// COPY FROM loads, one statement per batch in the open transaction.
    /// `on_error` gets the failing row's index in the batch.
    pub fn insert_rows(
        &mut self,
        p: &Prepared,
        rows: Vec<Vec<Value>>,
        on_error: &dyn Fn(usize, Error) -> Error,
    ) -> Result<u64> {
        let planned = self.current_plan(p)?;
        let PreparedKind::Insert(plan) = &planned.kind else {
            return Err(Error::new(SqlState::INTERNAL_ERROR, "not an INSERT"));
        };
        if self.read_only_now() {
            self.guarded(|_| Err(crate::read_only::refused("COPY FROM")))?;
        }
        let mut n = 0;
        self.in_transaction(|tx| {
            n = plan.insert_rows(tx, rows, on_error)?;
            Ok(Output::command(String::new()))
        })?;
        Ok(n)
    }

    /// The statement SQL's `PREPARE` gave `name`, if any.
    pub fn sql_prepared(&self, name: &str) -> Option<Arc<Prepared>> {
        self.prepared.get(name).cloned()
    }

    /// `DEALLOCATE name` (`None`: ALL) of statements SQL's `PREPARE`
    /// made; whether `name` was one.
    pub fn deallocate_sql_prepared(&mut self, name: Option<&str>) -> bool {
        match name {
            Some(name) => self.prepared.remove(name).is_some(),
            None => {
                self.prepared.clear();
                true
            }
        }
    }

    /// `PREPARE name [(types)] AS statement`: the statement planned now
    /// and kept under `name` for the session. `taken` says whether the
    /// wire protocol already holds a statement of that name.
    pub(super) fn sql_prepare(
        &mut self,
        name: &str,
        types: &[sqlparser::ast::DataType],
        statement: &Statement,
        taken: bool,
    ) -> Result<Output> {
        if taken || self.prepared.contains_key(name) {
            return Err(Error::new(
                SqlState::DUPLICATE_PREPARED_STATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        if !matches!(
            statement,
            Statement::Query(_)
                | Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
        ) {
            return Err(Error::new(
                SqlState::SYNTAX_ERROR,
                "syntax error: PREPARE takes SELECT, VALUES, INSERT, UPDATE or DELETE",
            ));
        }
        let declared = types
            .iter()
            .map(crate::bind::types::convert_type)
            .collect::<Result<Vec<_>>>()?;
        let mut prepared = self.prepare_statement(statement.clone())?;
        for (i, t) in declared.into_iter().enumerate() {
            match prepared.param_types.get_mut(i) {
                Some(slot) => *slot = Some(t),
                None => prepared.param_types.push(Some(t)),
            }
        }
        match self.prepared.entry(name.to_string()) {
            Entry::Occupied(_) => Err(Error::new(
                SqlState::INTERNAL_ERROR,
                "prepared statement appeared while planning",
            )),
            Entry::Vacant(v) => {
                v.insert(Arc::new(prepared));
                Ok(Output::command("PREPARE"))
            }
        }
    }

    /// `EXECUTE name [(values)]` of a statement SQL's `PREPARE` made (the
    /// wire server runs those of the extended protocol itself, through
    /// [`Session::execute_with_arguments`]).
    pub(super) fn sql_execute(&mut self, name: &str, arguments: &[Expr]) -> Result<Output> {
        let Some(p) = self.sql_prepared(name) else {
            return self.guarded(|_| {
                Err(Error::new(
                    SqlState::INVALID_SQL_STATEMENT_NAME,
                    format!("prepared statement \"{name}\" does not exist"),
                )
                .with_routine("FetchPreparedStatement"))
            });
        };
        self.execute_with_arguments(name, &p, arguments)
    }

    /// Runs prepared statement `p` (named `name`) with the values of SQL
    /// expressions `arguments` as its parameters, each cast to the
    /// parameter's type as PostgreSQL's EXECUTE does.
    pub fn execute_with_arguments(
        &mut self,
        name: &str,
        p: &Prepared,
        arguments: &[Expr],
    ) -> Result<Output> {
        self.check_not_failed()?;
        if arguments.len() != p.param_types.len() {
            return self.guarded(|_| {
                Err(Error::new(
                    SqlState::SYNTAX_ERROR,
                    format!("wrong number of parameters for prepared statement \"{name}\""),
                )
                .with_detail(format!(
                    "Expected {} parameters but got {}.",
                    p.param_types.len(),
                    arguments.len()
                )))
            });
        }
        let values = match self.argument_values(p, arguments) {
            Ok(v) => v,
            Err(e) => return self.guarded(|_| Err(e)),
        };
        self.execute_prepared(p, &values)
    }

    /// The values of EXECUTE's arguments: constant expressions (no
    /// column, parameter or subquery), cast to the parameters' types.
    fn argument_values(&self, p: &Prepared, arguments: &[Expr]) -> Result<Vec<Value>> {
        let ctx = QueryContext::new(&self.db, 0, None, Arc::new(Vec::new()));
        let scope = Scope::within(&ctx);
        let mut values = Vec::with_capacity(arguments.len());
        for (e, ty) in arguments.iter().zip(&p.param_types) {
            let mut params = Vec::new();
            let (program, _) = crate::bind::compile::compile(e, &scope, &mut params)?;
            if !params.is_empty() {
                return Err(Error::new(
                    SqlState::UNDEFINED_PARAMETER,
                    "there is no parameter $1",
                ));
            }
            if !ctx.finish().is_empty() {
                return Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    "cannot use subquery in EXECUTE parameter",
                ));
            }
            let v = program.eval(&[], &[])?;
            values.push(match ty {
                Some(t) => v.cast(t)?,
                None => v,
            });
        }
        Ok(values)
    }
}
