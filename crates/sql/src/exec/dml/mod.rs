//! INSERT, UPDATE and DELETE plans.
//!
//! Values are converted to the column types on assignment (PostgreSQL's
//! assignment casts): `'2024-01-01'` into a DATE column, `10.5` into
//! NUMERIC(10,2) as `10.50`, a too-long string into VARCHAR(n) is 22001.
//! UPDATE and DELETE first collect the matching rows at the statement's
//! snapshot, then write them one by one through the transaction, which
//! locks and certifies each (see `ndpdb_host::transaction`) — or, placed
//! on the device ([`crate::placement::dml`]), run as one update-NDP job.

pub mod assignment;
pub mod column_default;
pub mod on_conflict;
pub mod returning;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use ndpdb_formats::expr::Program;
use ndpdb_formats::{DataType, SqlState, Value, Vid};
use ndpdb_host::database::TableState;
use ndpdb_host::ndp::NdpReport;
use ndpdb_host::{Database, Inserted, Transaction, WriteOutcome};
use sqlparser::ast::{Delete, FromTable, Insert, SetExpr, TableObject, Update};

use crate::bind::compile::{compile, Ty};
use crate::bind::scope::table_name;
use crate::bind::scope::{ident_name, Scope};
use crate::exec::dml::assignment::{column_position, plan_assignment};
use crate::exec::dml::column_default::{check_explicit_value, default_program, is_default_keyword};
use crate::exec::dml::on_conflict::{plan_on_conflict, ConflictAction, DoUpdatePlan};
use crate::exec::dml::returning::Returning;
use crate::output::{Output, ResultColumn};
use crate::placement::dml::{explain_dml, place_dml, DmlPlacement};
use crate::plan::query::{plan_filter, plan_query, NdpMode, SelectPlan};
use crate::plan::subquery::{max_placeholder, Bindings, QueryContext};
use crate::{Error, Result};

fn unsupported(what: &str) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )
}

enum InsertSource {
    /// One program per target column, per row.
    Values(Vec<Vec<Program>>),
    Query(Box<SelectPlan>),
}

pub struct InsertPlan {
    table: Arc<TableState>,
    /// Column position of each supplied value.
    targets: Vec<usize>,
    source: InsertSource,
    on_conflict: ConflictAction,
    /// The defaults of the columns no value names (SERIAL, DEFAULT …).
    fill: Vec<(usize, Program)>,
    /// Subqueries and sequence calls of VALUES and the defaults.
    bindings: Bindings,
    /// A `GENERATED ALWAYS` identity column given a value: INSERT
    /// refuses it (428C9), COPY writes it (as PostgreSQL's COPY does).
    explicit_always: Option<usize>,
    returning: Option<Returning>,
}

pub struct UpdatePlan {
    filter: SelectPlan,
    /// Column, program, static type of the program.
    sets: Vec<(usize, Program, Ty)>,
    returning: Option<Returning>,
    /// Set when the update runs on the device.
    pub ndp: Option<DmlPlacement>,
    pub last_ndp: Mutex<Option<NdpReport>>,
}

pub struct DeletePlan {
    filter: SelectPlan,
    returning: Option<Returning>,
    pub ndp: Option<DmlPlacement>,
    pub last_ndp: Mutex<Option<NdpReport>>,
}

/// Runs a placed modification on the device; `None` if it must run on
/// the host after all (this transaction already wrote the table).
fn run_on_device(
    tx: &mut Transaction,
    filter: &SelectPlan,
    ndp: Option<&DmlPlacement>,
    last: &Mutex<Option<NdpReport>>,
    params: &[Value],
) -> Result<Option<u64>> {
    let Some(p) = ndp else { return Ok(None) };
    let ts = filter.target_table()?.clone();
    // After update NDP on this table only the next step of the
    // transaction's NDP pipeline still runs on the device.
    if tx.has_writes_to(&ts) && !tx.continues_pipeline(&ts, &p.request, params) {
        return Ok(None);
    }
    let (n, report) = tx.ndp_modify(&ts, &p.request, params)?;
    if let Ok(mut l) = last.lock() {
        *l = Some(report);
    }
    Ok(Some(n))
}

fn assign(v: Value, ty: &DataType, col: &str) -> Result<Value> {
    let mismatch = |v: &Value| {
        Error::new(
            SqlState::DATATYPE_MISMATCH,
            format!(
                "column \"{col}\" is of type {} but expression is of type {}",
                ty.sql_name(),
                v.data_type().map(|t| t.sql_name()).unwrap_or_default()
            ),
        )
    };
    match (&v, ty) {
        (Value::Bool(_), t) if *t != DataType::Bool && !t.is_textual() => Err(mismatch(&v)),
        (Value::Date(_) | Value::Timestamp(_), t) if t.is_numeric() => Err(mismatch(&v)),
        (
            Value::Int(_) | Value::BigInt(_) | Value::Double(_) | Value::Numeric(_),
            DataType::Date | DataType::Timestamp | DataType::Bool | DataType::Bytea,
        ) => Err(mismatch(&v)),
        _ => Ok(v.cast_into(ty)?),
    }
}

pub fn plan_insert(
    db: &Database,
    ins: &Insert,
    params: &mut Vec<Option<DataType>>,
) -> Result<InsertPlan> {
    let name = match &ins.table {
        TableObject::TableName(n) => table_name(n)?,
        _ => return Err(unsupported("INSERT into a table function")),
    };
    let table = db.table(&name)?;
    let alias = ins
        .table_alias
        .as_ref()
        .map_or_else(|| name.clone(), |a| ident_name(&a.alias));
    let on_conflict = plan_on_conflict(&table, &alias, ins.on.as_ref(), params)?;
    let returning = ins
        .returning
        .as_ref()
        .map(|items| Returning::plan(items, &table, &alias, params))
        .transpose()?;
    let ctx = QueryContext::new(db, max_placeholder(ins), None, Arc::new(Vec::new()));
    let scope = Scope::within(&ctx);
    let meta = table.meta();
    let mut explicit_always = None;
    let targets: Vec<usize> = if ins.columns.is_empty() {
        (0..table.meta().schema.len()).collect()
    } else {
        ins.columns
            .iter()
            .map(|c| column_position(&table, c))
            .collect::<Result<_>>()?
    };
    // `INSERT INTO t DEFAULT VALUES`: one row of defaults.
    let Some(source) = ins.source.as_ref() else {
        let fill = defaults_of_others(&meta, &[], &scope, params)?;
        return Ok(InsertPlan {
            table,
            targets: Vec::new(),
            source: InsertSource::Values(vec![Vec::new()]),
            on_conflict,
            fill,
            bindings: ctx.finish(),
            explicit_always: None,
            returning,
        });
    };
    let source = match source.body.as_ref() {
        SetExpr::Values(values) => {
            let mut rows = Vec::new();
            // Without a column list, VALUES may name fewer columns than the
            // table has (PostgreSQL fills the rest with NULL).
            let width = values.rows.first().map_or(0, |r| r.content.len());
            let targets: Vec<usize> = if ins.columns.is_empty() && width < targets.len() {
                targets[..width].to_vec()
            } else {
                targets.clone()
            };
            if values.rows.iter().any(|r| r.content.len() != width) {
                return Err(Error::new(
                    SqlState::SYNTAX_ERROR,
                    "VALUES lists must all be the same length",
                ));
            }
            for row in &values.rows {
                if row.content.len() != targets.len() {
                    return Err(Error::new(
                        SqlState::SYNTAX_ERROR,
                        if row.content.len() > targets.len() {
                            "INSERT has more expressions than target columns"
                        } else {
                            "INSERT has more target columns than expressions"
                        },
                    ));
                }
                let mut progs = Vec::new();
                for (e, &col) in row.content.iter().zip(&targets) {
                    if is_default_keyword(e) {
                        progs.push(default_program(&meta, col, &scope, params)?);
                        continue;
                    }
                    if check_explicit_value(&meta, col).is_err() {
                        explicit_always.get_or_insert(col);
                    }
                    let (p, ty) = compile(e, &scope, params)?;
                    if let crate::bind::compile::Ty::Param(i) = ty {
                        params[i as usize].get_or_insert(meta.schema.columns[col].ty);
                    }
                    progs.push(p);
                }
                rows.push(progs);
            }
            let fill = defaults_of_others(&meta, &targets, &scope, params)?;
            return Ok(InsertPlan {
                table,
                targets,
                source: InsertSource::Values(rows),
                on_conflict,
                fill,
                bindings: ctx.finish(),
                explicit_always,
                returning,
            });
        }
        _ => {
            let plan = plan_query(db, source, params)?;
            if plan.columns.len() != targets.len() {
                return Err(Error::new(
                    SqlState::SYNTAX_ERROR,
                    "INSERT has a different number of target columns than the SELECT returns",
                ));
            }
            for &col in &targets {
                if check_explicit_value(&meta, col).is_err() {
                    explicit_always.get_or_insert(col);
                }
            }
            InsertSource::Query(Box::new(plan))
        }
    };
    let fill = defaults_of_others(&meta, &targets, &scope, params)?;
    Ok(InsertPlan {
        table,
        targets,
        source,
        on_conflict,
        fill,
        bindings: ctx.finish(),
        explicit_always,
        returning,
    })
}

/// The defaults of the columns `targets` does not name.
fn defaults_of_others(
    meta: &ndpdb_host::TableMeta,
    targets: &[usize],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Vec<(usize, Program)>> {
    meta.defaults
        .iter()
        .filter(|d| !targets.contains(&d.column))
        .map(|d| Ok((d.column, default_program(meta, d.column, scope, params)?)))
        .collect()
}

impl InsertPlan {
    /// Inserts `rows`, each the values of this plan's target columns in
    /// order (COPY FROM: a batch of records as one statement, without a
    /// parameter list and an expression per field). `on_error` gets the
    /// row's index in the batch and its error.
    pub fn insert_rows(
        &self,
        tx: &mut Transaction,
        rows: Vec<Vec<Value>>,
        on_error: &dyn Fn(usize, Error) -> Error,
    ) -> Result<u64> {
        let schema = &self.table.meta().schema;
        let mut n = 0u64;
        let params = match self.fill.is_empty() {
            true => Vec::new(),
            false => self.bindings.bind(tx, &[], &[], Value::Null)?,
        };
        for (i, values) in rows.into_iter().enumerate() {
            let mut row = vec![Value::Null; schema.len()];
            let fill = || -> Result<()> {
                for (col, p) in &self.fill {
                    let c = &schema.columns[*col];
                    let v = self.bindings.eval(Some(&mut *tx), p, &[], &params)?;
                    row[*col] = assign(v, &c.ty, &c.name)?;
                }
                for (v, &col) in values.into_iter().zip(&self.targets) {
                    let c = &schema.columns[col];
                    row[col] = assign(v, &c.ty, &c.name)?;
                }
                tx.insert(&self.table, row)?;
                Ok(())
            };
            fill().map_err(|e| on_error(i, e))?;
            n += 1;
        }
        Ok(n)
    }

    pub fn execute(&self, tx: &mut Transaction, statement: &[Value]) -> Result<Output> {
        if let Some(col) = self.explicit_always {
            check_explicit_value(&self.table.meta(), col)?;
        }
        let schema = &self.table.meta().schema;
        let mut n = 0u64;
        let mut returned = Vec::new();
        let mut touched: HashSet<Vid> = HashSet::new();
        let txn = statement.last().cloned().unwrap_or(Value::Null);
        let bound = self.bindings.bind(tx, statement, &[], txn)?;
        let params = bound.as_slice();
        let mut insert_row = |tx: &mut Transaction, values: Vec<Value>| -> Result<()> {
            let mut row = vec![Value::Null; schema.len()];
            for (col, p) in &self.fill {
                let c = &schema.columns[*col];
                let v = self.bindings.eval(Some(&mut *tx), p, &[], params)?;
                row[*col] = assign(v, &c.ty, &c.name)?;
            }
            for (v, &col) in values.into_iter().zip(&self.targets) {
                let c = &schema.columns[col];
                row[col] = assign(v, &c.ty, &c.name)?;
            }
            let update = match &self.on_conflict {
                ConflictAction::DoUpdate(u) => Some((u, row.clone())),
                _ => None,
            };
            let inserted = match &self.returning {
                Some(r) => Some(r.row(&row, params)?),
                None => None,
            };
            match tx.insert_with(&self.table, row, self.on_conflict.on_conflict())? {
                Inserted::Row(vid) => {
                    // Only DO UPDATE must know the rows this command wrote.
                    if update.is_some() {
                        touched.insert(vid);
                    }
                    returned.extend(inserted);
                    n += 1;
                }
                Inserted::Skipped => {}
                Inserted::Conflict { vid, head } => {
                    let Some((u, excluded)) = update else {
                        return Err(Error::new(SqlState::INTERNAL_ERROR, "unexpected conflict"));
                    };
                    if !touched.insert(vid) {
                        return Err(affects_twice());
                    }
                    let mut written = None;
                    let mut apply = |existing: &[Value]| {
                        let new = do_update(u, existing, &excluded, schema, params)?;
                        written.clone_from(&new);
                        Ok(new)
                    };
                    if let WriteOutcome::Done(_) = tx.update(&self.table, vid, head, &mut apply)? {
                        if let (Some(r), Some(row)) = (&self.returning, &written) {
                            returned.push(r.row(row, params)?);
                        }
                        n += 1;
                    }
                }
            }
            Ok(())
        };
        match &self.source {
            InsertSource::Values(rows) => {
                for progs in rows {
                    let mut values = Vec::with_capacity(progs.len());
                    for p in progs {
                        values.push(self.bindings.eval(Some(&mut *tx), p, &[], params)?);
                    }
                    insert_row(tx, values)?;
                }
            }
            InsertSource::Query(plan) => {
                if let Output::Rows { rows, .. } = plan.execute(tx, statement)? {
                    for r in rows {
                        insert_row(tx, r)?;
                    }
                }
            }
        }
        Ok(returned_or_tag(
            self.returning.as_ref(),
            returned,
            format!("INSERT 0 {n}"),
        ))
    }

    /// The RETURNING list's columns (none without one).
    pub fn columns(&self) -> Vec<ResultColumn> {
        returning_columns(self.returning.as_ref())
    }
}

fn returning_columns(r: Option<&Returning>) -> Vec<ResultColumn> {
    r.map(|r| r.columns.clone()).unwrap_or_default()
}

/// The statement's result: the returned rows with RETURNING, else the
/// command tag.
fn returned_or_tag(r: Option<&Returning>, rows: Vec<Vec<Value>>, tag: String) -> Output {
    match r {
        Some(r) => Output::Rows {
            columns: r.columns.clone(),
            rows,
        },
        None => Output::command(tag),
    }
}

/// PostgreSQL's 21000 for a row one ON CONFLICT DO UPDATE would change
/// twice.
fn affects_twice() -> Error {
    Error::new(
        SqlState::CARDINALITY_VIOLATION,
        "ON CONFLICT DO UPDATE command cannot affect row a second time",
    )
    .with_hint(
        "Ensure that no rows proposed for insertion within the same command have duplicate constrained values.",
    )
}

/// The new version of `existing` under `DO UPDATE` with the proposed row
/// `excluded`; `None` when its WHERE does not hold.
fn do_update(
    u: &DoUpdatePlan,
    existing: &[Value],
    excluded: &[Value],
    schema: &ndpdb_formats::Schema,
    params: &[Value],
) -> Result<Option<Vec<Value>>> {
    let mut input = existing.to_vec();
    input.extend(excluded.iter().cloned());
    if let Some(f) = &u.filter {
        if !f.eval_predicate(&input, params)? {
            return Ok(None);
        }
    }
    let mut row = existing.to_vec();
    for (col, p) in &u.sets {
        let c = &schema.columns[*col];
        row[*col] = assign(p.eval(&input, params)?, &c.ty, &c.name)?;
    }
    Ok(Some(row))
}

pub fn plan_update(
    db: &Database,
    up: &Update,
    params: &mut Vec<Option<DataType>>,
) -> Result<UpdatePlan> {
    if up.from.is_some() || up.limit.is_some() {
        return Err(unsupported("UPDATE … FROM / LIMIT"));
    }
    let base = max_placeholder(up);
    let filter = plan_filter(db, &up.table, up.selection.as_ref(), base, params)?;
    let ts = filter.target_table()?.clone();
    let mut scope = Scope::default();
    scope.add_table(
        &filter.sources[0].alias,
        ts.meta()
            .schema
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.ty)),
    );
    let mut sets = Vec::new();
    for a in &up.assignments {
        let taken = |col: usize| sets.iter().any(|(c, _, _)| *c == col);
        let set = plan_assignment(&ts, a, &scope, params, &taken)?;
        sets.push(set);
    }
    let returning = up
        .returning
        .as_ref()
        .map(|items| Returning::plan(items, &ts, &filter.sources[0].alias, params))
        .transpose()?;
    Ok(UpdatePlan {
        filter,
        sets,
        returning,
        ndp: None,
        last_ndp: Mutex::new(None),
    })
}

impl UpdatePlan {
    /// Decides where the update runs (see [`crate::placement::dml`]).
    /// With RETURNING the update runs on the host, which has the rows.
    pub fn place(&mut self, mode: NdpMode, pes: u16, preload: bool, db: &Database) -> Result<()> {
        let mode = if self.returning.is_some() {
            NdpMode::Off
        } else {
            mode
        };
        self.ndp = place_dml(&self.filter, Some(&self.sets), mode, pes, preload, db)?;
        Ok(())
    }

    pub fn explain(&self) -> Vec<String> {
        explain_dml("Update", &self.filter, self.ndp.as_ref())
    }

    /// The RETURNING list's columns (none without one).
    pub fn columns(&self) -> Vec<ResultColumn> {
        returning_columns(self.returning.as_ref())
    }

    pub fn execute(&self, tx: &mut Transaction, params: &[Value]) -> Result<Output> {
        let params = &self.filter.bind_statement(tx, params)?;
        if let Some(n) = run_on_device(tx, &self.filter, self.ndp.as_ref(), &self.last_ndp, params)?
        {
            return Ok(Output::command(format!("UPDATE {n}")));
        }
        let ts = self.filter.target_table()?.clone();
        let schema = &ts.meta().schema;
        let rows = self.filter.matching(tx, params)?;
        let mut n = 0u64;
        let mut returned = Vec::new();
        for (vid, seen, row) in rows {
            let mut written = None;
            let mut apply = |row: &[Value]| -> Result<Option<Vec<Value>>> {
                if !self.filter.recheck(row, params)? {
                    return Ok(None);
                }
                let mut new_row = row.to_vec();
                for (col, p, _) in &self.sets {
                    let c = &schema.columns[*col];
                    new_row[*col] = assign(p.eval(row, params)?, &c.ty, &c.name)?;
                }
                if self.returning.is_some() {
                    written = Some(new_row.clone());
                }
                Ok(Some(new_row))
            };
            if let WriteOutcome::Done(_) = tx.update_read(&ts, vid, seen, Some(row), &mut apply)? {
                if let (Some(r), Some(row)) = (&self.returning, &written) {
                    returned.push(r.row(row, params)?);
                }
                n += 1;
            }
        }
        Ok(returned_or_tag(
            self.returning.as_ref(),
            returned,
            format!("UPDATE {n}"),
        ))
    }
}

pub fn plan_delete(
    db: &Database,
    del: &Delete,
    params: &mut Vec<Option<DataType>>,
) -> Result<DeletePlan> {
    if del.using.is_some() || del.limit.is_some() || !del.tables.is_empty() {
        return Err(unsupported("DELETE … USING / LIMIT"));
    }
    let from = match &del.from {
        FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
    };
    let [table] = from.as_slice() else {
        return Err(unsupported("DELETE from several tables"));
    };
    let filter = plan_filter(
        db,
        table,
        del.selection.as_ref(),
        max_placeholder(del),
        params,
    )?;
    let returning = match &del.returning {
        Some(items) => {
            let ts = filter.target_table()?.clone();
            Some(Returning::plan(
                items,
                &ts,
                &filter.sources[0].alias,
                params,
            )?)
        }
        None => None,
    };
    Ok(DeletePlan {
        filter,
        returning,
        ndp: None,
        last_ndp: Mutex::new(None),
    })
}

impl DeletePlan {
    /// Decides where the delete runs (see [`crate::placement::dml`]).
    /// With RETURNING the delete runs on the host, which has the rows.
    pub fn place(&mut self, mode: NdpMode, pes: u16, preload: bool, db: &Database) -> Result<()> {
        let mode = if self.returning.is_some() {
            NdpMode::Off
        } else {
            mode
        };
        self.ndp = place_dml(&self.filter, None, mode, pes, preload, db)?;
        Ok(())
    }

    /// The RETURNING list's columns (none without one).
    pub fn columns(&self) -> Vec<ResultColumn> {
        returning_columns(self.returning.as_ref())
    }

    pub fn explain(&self) -> Vec<String> {
        explain_dml("Delete", &self.filter, self.ndp.as_ref())
    }

    pub fn execute(&self, tx: &mut Transaction, params: &[Value]) -> Result<Output> {
        let params = &self.filter.bind_statement(tx, params)?;
        if let Some(n) = run_on_device(tx, &self.filter, self.ndp.as_ref(), &self.last_ndp, params)?
        {
            return Ok(Output::command(format!("DELETE {n}")));
        }
        let ts = self.filter.target_table()?.clone();
        let rows = self.filter.matching(tx, params)?;
        let mut n = 0u64;
        let mut returned = Vec::new();
        for (vid, seen, row) in rows {
            let mut deleted = None;
            let mut recheck = |row: &[Value]| {
                let holds = self.filter.recheck(row, params)?;
                if holds && self.returning.is_some() {
                    deleted = Some(row.to_vec());
                }
                Ok(holds)
            };
            if let WriteOutcome::Done(_) =
                tx.delete_read(&ts, vid, seen, Some(row), &mut recheck)?
            {
                if let (Some(r), Some(row)) = (&self.returning, &deleted) {
                    returned.push(r.row(row, params)?);
                }
                n += 1;
            }
        }
        Ok(returned_or_tag(
            self.returning.as_ref(),
            returned,
            format!("DELETE {n}"),
        ))
    }
}
