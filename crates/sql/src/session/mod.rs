//! Sessions: statement dispatch and PostgreSQL's transaction-block rules.
//!
//! ```text
//!            BEGIN                 error
//!   idle ───────────► in block ───────────► failed ──ROLLBACK/COMMIT──► idle
//!    │ ▲ (autocommit:     │ COMMIT / ROLLBACK    (every statement: 25P02)
//!    │ │  one statement)  ▼
//!    │ └──────────────── idle
//!    │  implicit mode      ▲ end_implicit (commit) / error (rollback)
//!    └──► implicit tx ─────┘ BEGIN turns it into a block
//! ```
//!
//! Outside a block every statement runs in its own transaction — unless
//! the caller opened *implicit mode* ([`Session::begin_implicit`]): then
//! the statements up to [`Session::end_implicit`] share one implicit
//! transaction, committed there and rolled back by any error or by the
//! session ending first. This is PostgreSQL's rule for the extended query
//! protocol (everything up to Sync) and for a simple Query message with
//! several statements. Inside a block an error aborts the transaction at
//! once (its locks are released) and the session refuses further
//! statements until ROLLBACK (or COMMIT, which then reports ROLLBACK),
//! exactly like PostgreSQL. A BEGIN inside a block warns (25001) and
//! still applies its transaction modes, as SET TRANSACTION would.
//!
//! Statements planned once and run many times — and planned again after
//! a DDL or a SET — are `prepared.rs`'s; savepoints `savepoint.rs`'s;
//! values fixed per statement (`current_setting()`, `current_user`, …)
//! `session_values.rs`'s.

use std::collections::BTreeMap;
use std::time::Duration;

use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_host::{Database, Interrupt, Isolation, LockWait, NdpLogging, Transaction};
use sqlparser::ast::{
    Expr, ObjectType, Set, Statement, TransactionIsolationLevel, TransactionMode,
};

mod prepared;
mod savepoint;
mod session_values;
pub use prepared::Prepared;
use prepared::PreparedKind;
pub use session_values::current_thread_pid;

pub use session_values::SESSION_VALUE;

use crate::bind::scope::table_name;
use crate::ddl;
use crate::limits::{with_stack_for, with_statement_stack};
use crate::output::{Notice, Output, ResultColumn};
use crate::plan::query::NdpMode;
use crate::time_setting;
use crate::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    None,
    /// A transaction without BEGIN, open until `end_implicit`.
    Implicit,
    Active,
    Failed,
}

pub struct Session {
    db: Database,
    tx: Option<Transaction>,
    /// The database the client named (`current_database()`).
    database_name: String,
    /// `pg_backend_pid()` (`session_values.rs`).
    backend_pid: Option<i32>,
    /// Names of the open transaction's savepoints (`savepoint.rs`).
    savepoint_names: Vec<String>,
    /// `currval`'s memory: this session's last value per sequence.
    sequences: ndpdb_host::transaction::SessionSequences,
    block: Block,
    default_isolation: Isolation,
    /// `default_transaction_read_only`.
    default_read_only: bool,
    ndp: NdpMode,
    ndp_pes: u16,
    ndp_preload: bool,
    /// Threads of a host scan (`SET host_workers`).
    host_workers: usize,
    /// `SET ndp_logging = off | basic | extended`.
    ndp_logging: NdpLogging,
    /// `SET ndp_lock_violation = on | off` (controlled lock violation
    /// while an update job's overflow logs move; off by default).
    ndp_lock_violation: bool,
    settings: BTreeMap<String, String>,
    /// Statements outside a block join one implicit transaction.
    implicit: bool,
    /// Notices for the client (e.g. "there is no transaction in progress").
    pub notices: Vec<Notice>,
    /// Cancels the running statement; armed with `statement_timeout`.
    interrupt: Interrupt,
    statement_timeout: Option<Duration>,
    /// `lock_timeout` and `deadlock_timeout`.
    lock_wait: LockWait,
    /// Counts the settings changes; a plan made before the last one is
    /// made again before it runs (`prepared.rs`).
    plan_settings: u64,
    /// Statements SQL's PREPARE made, by name (`prepared.rs`).
    prepared: std::collections::HashMap<String, std::sync::Arc<Prepared>>,
}

/// Parses SQL text into statements (PostgreSQL dialect), within the
/// statement limits (parse/: size, nesting, linear work).
pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    parse_with(sql, None)
}

/// [`parse`], stopped by `interrupt` (a cancel, `statement_timeout`, the
/// client gone) in any phase.
pub fn parse_with(sql: &str, interrupt: Option<&Interrupt>) -> Result<Vec<Statement>> {
    let sql_parser = |sql: &str| match crate::copy_options::respell(sql) {
        Some(respelled) => crate::parse::parse_with(&respelled, interrupt),
        None => crate::parse::parse_with(sql, interrupt),
    };
    if let Some(maintenance) = crate::maintenance::parse(sql, sql_parser) {
        return maintenance;
    }
    sql_parser(sql)
}

fn isolation_of(modes: &[TransactionMode]) -> Result<Option<Isolation>> {
    let mut out = None;
    for m in modes {
        if let TransactionMode::IsolationLevel(l) = m {
            out = Some(match l {
                TransactionIsolationLevel::ReadCommitted
                | TransactionIsolationLevel::ReadUncommitted => Isolation::ReadCommitted,
                TransactionIsolationLevel::RepeatableRead | TransactionIsolationLevel::Snapshot => {
                    Isolation::Snapshot
                }
                TransactionIsolationLevel::Serializable => Isolation::Serializable,
            });
        }
    }
    Ok(out)
}

fn isolation_name(i: Isolation) -> &'static str {
    match i {
        Isolation::Snapshot => "repeatable read",
        Isolation::ReadCommitted => "read committed",
        Isolation::Serializable => "serializable",
    }
}

fn parse_isolation_name(s: &str) -> Result<Isolation> {
    match s.trim().to_lowercase().as_str() {
        "read committed" | "read uncommitted" => Ok(Isolation::ReadCommitted),
        "repeatable read" | "snapshot" => Ok(Isolation::Snapshot),
        "serializable" => Ok(Isolation::Serializable),
        other => Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"default_transaction_isolation\": \"{other}\""),
        )),
    }
}

fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

fn expr_text(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::SingleQuotedString(s) => s.clone(),
            v => v.to_string(),
        },
        Expr::Identifier(id) => id.value.clone(),
        e => e.to_string(),
    }
}

impl Session {
    pub fn new(db: Database) -> Session {
        Session {
            tx: None,
            database_name: "postgres".into(),
            backend_pid: None,
            savepoint_names: Vec::new(),
            sequences: Default::default(),
            block: Block::None,
            default_isolation: Isolation::ReadCommitted,
            default_read_only: false,
            ndp: NdpMode::Auto,
            ndp_pes: 0,
            ndp_preload: true,
            host_workers: ndpdb_host::page_scan::DEFAULT_HOST_WORKERS,
            ndp_logging: NdpLogging::Basic,
            ndp_lock_violation: false,
            settings: BTreeMap::new(),
            implicit: false,
            notices: Vec::new(),
            interrupt: Interrupt::new(),
            statement_timeout: None,
            lock_wait: LockWait {
                timeout: db.config().lock_timeout,
                deadlock_timeout: db.config().deadlock_timeout,
            },
            plan_settings: 0,
            prepared: Default::default(),
            db,
        }
    }

    /// The handle that cancels this session's running statement (what a
    /// PostgreSQL CancelRequest reaches).
    pub fn interrupt(&self) -> Interrupt {
        self.interrupt.clone()
    }

    fn begin_tx(&self, isolation: Isolation) -> Result<Transaction> {
        let mut tx = self.db.begin(isolation)?;
        tx.set_read_only(self.default_read_only);
        tx.set_interrupt(self.interrupt.clone());
        tx.set_session_sequences(self.sequences.clone());
        Ok(tx)
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Whether a transaction block is open (`T`), failed (`E`) or not (`I`,
    /// also while an implicit transaction is open).
    pub fn transaction_status(&self) -> char {
        match self.block {
            Block::None | Block::Implicit => 'I',
            Block::Active => 'T',
            Block::Failed => 'E',
        }
    }

    /// From now until [`Session::end_implicit`], statements outside a
    /// transaction block share one implicit transaction instead of each
    /// committing on its own (PostgreSQL's extended protocol up to Sync,
    /// or a simple Query message of several statements). Dropping the
    /// session first rolls it back.
    pub fn begin_implicit(&mut self) {
        self.implicit = true;
    }

    /// Ends implicit mode: commits the implicit transaction, if one is
    /// open. A failed commit is that transaction's error (it is rolled
    /// back).
    pub fn end_implicit(&mut self) -> Result<()> {
        self.implicit = false;
        if self.block != Block::Implicit {
            return Ok(());
        }
        self.block = Block::None;
        match self.tx.take() {
            Some(tx) => tx.commit(),
            None => Ok(()),
        }
    }

    /// Whether a transaction is open: a block, or an implicit transaction
    /// that a statement has started.
    pub fn transaction_open(&self) -> bool {
        self.tx.is_some() || self.block == Block::Failed
    }

    /// Runs every statement of `sql` in order, stopping at the first error.
    pub fn execute(&mut self, sql: &str) -> Result<Vec<Output>> {
        let mut out = Vec::new();
        self.execute_each(sql, |r| {
            out.push(r);
        })?;
        Ok(out)
    }

    /// Like [`Session::execute`], handing each result to `sink` as it is ready.
    /// The statements are parsed, run and dropped on the guaranteed stack:
    /// dropping a syntax tree recurses as deep as it is nested.
    pub fn execute_each(&mut self, sql: &str, mut sink: impl FnMut(Output)) -> Result<()> {
        with_statement_stack(|| {
            self.interrupt.open(self.statement_timeout);
            let mut run = |s: &mut Session| -> Result<()> {
                let stmts = parse_with(sql, Some(&s.interrupt))?;
                for stmt in &stmts {
                    sink(s.execute_statement(stmt, &[])?);
                }
                Ok(())
            };
            let r = run(self);
            self.interrupt.close();
            r
        })
    }

    /// Parses `sql` for the server: `statement_timeout` counts from here
    /// and covers the parse and the first statement; a cancel or the
    /// client leaving stops the parse. [`Session::close_message`] ends
    /// the window once the message is answered.
    pub fn parse_message(&self, sql: &str) -> Result<Vec<Statement>> {
        self.interrupt.open(self.statement_timeout);
        parse_with(sql, Some(&self.interrupt))
    }

    /// The message [`Session::parse_message`] opened is answered.
    pub fn close_message(&self) {
        self.interrupt.close();
    }

    /// Starts a statement that runs over several calls (COPY FROM: one
    /// statement over all its batches): `statement_timeout` counts from
    /// here, and a cancel that arrived between statements is forgotten.
    pub fn start_statement(&self) {
        self.interrupt.start_statement(self.statement_timeout);
    }

    /// Runs `f` in the open transaction (a block's or the implicit one),
    /// or in a new autocommit one.
    fn in_transaction(
        &mut self,
        f: impl FnOnce(&mut Transaction) -> Result<Output>,
    ) -> Result<Output> {
        self.check_not_failed()?;
        if self.tx.is_none() {
            self.tx = Some(self.begin_tx(self.default_isolation)?);
            if self.implicit {
                self.block = Block::Implicit;
            }
        }
        let autocommit = self.block == Block::None;
        let tx = self
            .tx
            .as_mut()
            .ok_or_else(|| Error::new(SqlState::INTERNAL_ERROR, "no transaction"))?;
        tx.begin_statement();
        tx.set_lock_wait(self.lock_wait);
        tx.set_ndp_logging(self.ndp_logging);
        tx.set_lock_violation(self.ndp_lock_violation);
        tx.set_host_workers(self.host_workers);
        match f(tx) {
            Ok(out) => {
                if autocommit {
                    if let Some(tx) = self.tx.take() {
                        tx.commit()?;
                    }
                }
                Ok(out)
            }
            Err(e) => {
                // Abort now: releases the locks; a block stays failed
                // (until ROLLBACK TO, if it has savepoints).
                if autocommit {
                    self.tx = None;
                } else {
                    self.fail_transaction();
                }
                Err(e)
            }
        }
    }

    /// Whether the statement about to run is in a read-only transaction.
    fn read_only_now(&self) -> bool {
        self.tx
            .as_ref()
            .map_or(self.default_read_only, |t| t.read_only())
    }

    fn check_not_failed(&self) -> Result<()> {
        if self.block == Block::Failed {
            return Err(Error::new(
                SqlState::IN_FAILED_SQL_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        Ok(())
    }

    /// Sets a parameter's session value without SQL (the server passes
    /// the client's startup parameters, e.g. application_name).
    /// A value the SET would refuse is ignored (PostgreSQL refuses the
    /// connection instead; a client then gets no session at all).
    pub fn set_setting(&mut self, name: &str, value: &str) {
        self.settings_changed();
        let _ = self.assign(name.to_lowercase(), value.to_string());
    }

    /// An error outside a statement (COPY data, a malformed Bind) aborts
    /// the open transaction as any error does: a block is rolled back and
    /// failed (later statements get 25P02 until ROLLBACK), an implicit
    /// transaction is rolled back.
    pub fn fail_transaction(&mut self) {
        match self.block {
            Block::Active => {
                // With savepoints the transaction waits for ROLLBACK TO;
                // its locks stay, as in PostgreSQL.
                if self.tx.as_ref().is_none_or(|t| t.savepoint_count() == 0) {
                    self.tx = None;
                }
                self.block = Block::Failed;
            }
            Block::Implicit => {
                self.tx = None;
                self.block = Block::None;
            }
            Block::None | Block::Failed => {}
        }
    }

    fn guarded(&mut self, f: impl FnOnce(&mut Session) -> Result<Output>) -> Result<Output> {
        self.check_not_failed()?;
        let r = f(self);
        if r.is_err() {
            self.fail_transaction();
        }
        r
    }

    pub fn execute_statement(&mut self, stmt: &Statement, params: &[Value]) -> Result<Output> {
        with_stack_for(stmt, || self.run_statement(stmt, params))
    }

    fn run_statement(&mut self, stmt: &Statement, params: &[Value]) -> Result<Output> {
        self.interrupt.start_statement(self.statement_timeout);
        // Work without a table at hand (functions, joins, aggregates)
        // looks at the interrupt through this thread.
        let _entered = self.interrupt.enter();
        if let Some(command) = crate::read_only::writing_command(stmt) {
            if self.read_only_now() {
                return self.guarded(|_| Err(crate::read_only::refused(command)));
            }
        }
        match stmt {
            Statement::StartTransaction { modes, begin, .. } => self.begin(modes, *begin),
            Statement::Commit { .. } => {
                let tag = match self.block {
                    Block::None | Block::Implicit => {
                        self.notices.push(Notice::warning(
                            SqlState::NO_ACTIVE_SQL_TRANSACTION,
                            "there is no transaction in progress",
                        ));
                        "COMMIT"
                    }
                    Block::Failed => "ROLLBACK",
                    Block::Active => "COMMIT",
                };
                self.block = Block::None;
                match self.tx.take() {
                    Some(tx) if tag == "ROLLBACK" => {
                        tx.rollback();
                        Ok(Output::command(tag))
                    }
                    Some(tx) => tx.commit().map(|_| Output::command(tag)),
                    None => Ok(Output::command(tag)),
                }
            }
            Statement::Rollback {
                savepoint: None, ..
            } => {
                if matches!(self.block, Block::None | Block::Implicit) {
                    self.notices.push(Notice::warning(
                        SqlState::NO_ACTIVE_SQL_TRANSACTION,
                        "there is no transaction in progress",
                    ));
                }
                self.block = Block::None;
                if let Some(tx) = self.tx.take() {
                    tx.rollback();
                }
                Ok(Output::command("ROLLBACK"))
            }
            Statement::Savepoint { name } => self.savepoint(name),
            Statement::ReleaseSavepoint { name } => self.release_savepoint(name),
            Statement::Rollback {
                savepoint: Some(name),
                ..
            } => self.rollback_to_savepoint(name),
            Statement::Set(set) => {
                // A setting may change placement or a value a plan holds
                // (`current_setting()`); transaction modes change neither.
                if !matches!(set, Set::SetTransaction { .. }) {
                    self.settings_changed();
                }
                self.guarded(|s| s.set(set))
            }
            Statement::Prepare {
                name,
                data_types,
                statement,
            } => {
                let name = crate::bind::scope::ident_name(name);
                self.guarded(|s| s.sql_prepare(&name, data_types, statement, false))
            }
            Statement::Execute {
                name: Some(name),
                parameters,
                immediate: false,
                into,
                using,
                output: false,
                default: false,
                ..
            } if into.is_empty() && using.is_empty() => {
                let name = crate::bind::scope::last_ident(name);
                self.sql_execute(&name, parameters)
            }
            Statement::Deallocate { name, .. } => self.guarded(|s| {
                let all = name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all");
                let name = crate::bind::scope::ident_name(name);
                if s.deallocate_sql_prepared((!all).then_some(name.as_str())) {
                    return Ok(Output::command(if all { "DEALLOCATE ALL" } else { "DEALLOCATE" }));
                }
                Err(Error::new(
                    SqlState::INVALID_SQL_STATEMENT_NAME,
                    format!("prepared statement \"{name}\" does not exist"),
                )
                .with_routine("FetchPreparedStatement"))
            }),
            Statement::ShowVariable { variable } => self.guarded(|s| {
                let name = variable
                    .iter()
                    .map(|i| i.value.to_lowercase())
                    .collect::<Vec<_>>()
                    .join(" ");
                s.show(&name)
            }),
            Statement::Explain {
                statement, analyze, ..
            } => self.guarded(|s| s.explain(statement, *analyze, params)),
            Statement::CreateTable(ct) => self.guarded(|s| ddl::create_table(&s.db, ct)),
            Statement::Vacuum(v) => self.guarded(|s| s.vacuum(v)),
            Statement::Analyze(a) => self.guarded(|s| {
                if let Some(name) = &a.table_name {
                    let name = table_name(name)?;
                    if s.db.view(&name).is_some() {
                        s.notices.push(Notice::warning(
                            SqlState::WARNING,
                            format!("skipping \"{name}\" --- cannot analyze non-tables or special system tables"),
                        ));
                    } else {
                        s.db.table(&name)?;
                    }
                }
                Ok(Output::command("ANALYZE"))
            }),
            Statement::Truncate(t) => self.truncate(t),
            Statement::AlterTable(at) => self.guarded(|s| {
                if s.tx.is_some() || s.block != Block::None {
                    return Err(Error::new(
                        SqlState::ACTIVE_SQL_TRANSACTION,
                        "ALTER TABLE … ADD PRIMARY KEY cannot run inside a transaction block",
                    ));
                }
                // PostgreSQL waits for its lock without limit unless
                // lock_timeout is set; so does the build here.
                let wait = s.lock_wait.timeout.unwrap_or(std::time::Duration::MAX);
                let mut notices = Vec::new();
                let out = ddl::alter_table(&s.db, at, wait, &s.interrupt, &mut notices);
                s.notices.extend(notices);
                out
            }),
            Statement::CreateSequence {
                if_not_exists,
                name,
                data_type,
                sequence_options,
                ..
            } => self.guarded(|s| {
                crate::ddl::sequence::create_sequence(
                    &s.db,
                    name,
                    *if_not_exists,
                    data_type.as_ref(),
                    sequence_options,
                )
            }),
            Statement::CreateIndex(ci) => self.guarded(|s| {
                if s.tx.is_some() || s.block != Block::None {
                    return Err(Error::new(
                        SqlState::ACTIVE_SQL_TRANSACTION,
                        "CREATE INDEX cannot run inside a transaction block",
                    ));
                }
                let wait = s.lock_wait.timeout.unwrap_or(std::time::Duration::MAX);
                crate::ddl::index::create_index(&s.db, ci, wait, &s.interrupt)
            }),
            Statement::Query(_) if crate::backup_call::is_backup_call(stmt) => {
                let in_block = self.tx.is_some() || self.block != Block::None;
                self.guarded(|s| crate::backup_call::run(&s.db, stmt, in_block))
            }
            Statement::Drop {
                object_type: object_type @ ObjectType::View,
                if_exists,
                names,
                cascade,
                ..
            } => {
                let names_locked = match names.iter().map(table_name).collect::<Result<Vec<_>>>() {
                    Ok(n) => n,
                    Err(e) => return self.guarded(|_| Err(e)),
                };
                let db = self.db.clone();
                let mut notices = Vec::new();
                let out = self.in_transaction(|tx| {
                    for name in &names_locked {
                        tx.lock_relation_name(name)?;
                    }
                    ddl::drop(&db, object_type, *if_exists, names, *cascade, &mut notices)
                });
                self.notices.extend(notices);
                out
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => self.guarded(|s| {
                let mut notices = Vec::new();
                let out = ddl::drop(&s.db, object_type, *if_exists, names, *cascade, &mut notices);
                s.notices.extend(notices);
                out
            }),
            // In a transaction that holds the view's name to its end: a
            // second CREATE of the name waits for it (see
            // `Transaction::lock_relation_name`).
            Statement::CreateView(cv) => {
                let name = match table_name(&cv.name) {
                    Ok(n) => n,
                    Err(e) => return self.guarded(|_| Err(e)),
                };
                let db = self.db.clone();
                self.in_transaction(|tx| {
                    tx.lock_relation_name(&name)?;
                    crate::plan::view::create_view(&db, cv)
                })
            }
            Statement::Query(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_) => {
                self.check_not_failed()?;
                let prepared = match self.prepare_borrowed(stmt) {
                    Ok(p) => p,
                    Err(e) => {
                        self.fail_transaction();
                        return Err(e);
                    }
                };
                self.execute_prepared(&prepared, params)
            }
            other => self.guarded(|_| {
                Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    format!(
                        "statement not supported: {}",
                        other
                            .to_string()
                            .split_whitespace()
                            .take(3)
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                ))
            }),
        }
    }

    /// `TRUNCATE [TABLE] [ONLY] t [, …] [RESTART | CONTINUE IDENTITY]
    /// [CASCADE | RESTRICT]`: every row of the tables deleted in one
    /// transaction (the block's, or its own), as DELETEs planned like any
    /// other (on the device where placement puts them). Unlike
    /// PostgreSQL's, it is MVCC-safe — snapshots older than the commit
    /// still see the rows — and the space returns with VACUUM.
    fn truncate(&mut self, t: &sqlparser::ast::Truncate) -> Result<Output> {
        self.check_not_failed()?;
        let mut names = Vec::new();
        for target in &t.table_names {
            let name = table_name(&target.name).and_then(|name| match self.db.view(&name) {
                Some(_) => Err(Error::new(
                    SqlState::WRONG_OBJECT_TYPE,
                    format!("\"{name}\" is not a table"),
                )),
                None => Ok(name),
            });
            match name {
                Ok(n) if names.contains(&n) => {}
                Ok(n) => names.push(n),
                Err(e) => {
                    self.fail_transaction();
                    return Err(e);
                }
            }
        }
        let cascade = matches!(t.cascade, Some(sqlparser::ast::CascadeOption::Cascade));
        match crate::ddl::constraints::truncate_closure(&self.db, &mut names, cascade) {
            Ok(added) => self.notices.extend(
                added
                    .iter()
                    .map(|t| Notice::info(format!("truncate cascades to table \"{t}\""))),
            ),
            Err(e) => {
                self.fail_transaction();
                return Err(e);
            }
        }
        let mut plans = Vec::new();
        for name in names {
            let planned = Ok(name)
                .and_then(|name| {
                    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
                    parse(&format!("DELETE FROM {quoted}"))
                })
                .and_then(|stmts| match stmts.first() {
                    Some(stmt) => self.prepare_borrowed(stmt),
                    None => Err(Error::new(SqlState::INTERNAL_ERROR, "empty DELETE")),
                });
            match planned {
                Ok(p) => plans.push(p),
                Err(e) => {
                    self.fail_transaction();
                    return Err(e);
                }
            }
        }
        self.in_transaction(|tx| {
            // Every table that refers to one emptied is emptied too.
            tx.set_foreign_key_checks(false);
            let done = plans.iter().try_for_each(|p| match &p.plan().kind {
                PreparedKind::Delete(plan) => plan.execute(tx, &[]).map(|_| ()),
                _ => Ok(()),
            });
            tx.set_foreign_key_checks(true);
            done?;
            Ok(Output::command("TRUNCATE TABLE"))
        })
    }

    /// `VACUUM [FULL] [table]`: garbage collection now (DESIGN.md §8a),
    /// outside any transaction block as in PostgreSQL.
    fn vacuum(&mut self, v: &sqlparser::ast::VacuumStatement) -> Result<Output> {
        if self.tx.is_some() || self.block != Block::None {
            return Err(Error::new(
                SqlState::ACTIVE_SQL_TRANSACTION,
                "VACUUM cannot run inside a transaction block",
            ));
        }
        if v.sort_only || v.delete_only || v.reindex || v.recluster || v.threshold.is_some() {
            return Err(Error::new(
                SqlState::SYNTAX_ERROR,
                "syntax error: VACUUM takes [FULL] [table]",
            ));
        }
        let table = v.table_name.as_ref().map(table_name).transpose()?;
        if let Some(name) = table.as_ref().filter(|n| self.db.view(n).is_some()) {
            self.notices.push(Notice::warning(
                SqlState::WARNING,
                format!(
                    "skipping \"{name}\" --- cannot vacuum non-tables or special system tables"
                ),
            ));
            return Ok(Output::command("VACUUM"));
        }
        let cost = ndpdb_host::GcCost {
            delay: match self.settings.get("vacuum_cost_delay") {
                Some(v) => time_setting::parse("vacuum_cost_delay", v)?.unwrap_or_default(),
                None => std::time::Duration::ZERO,
            },
            limit: self
                .settings
                .get("vacuum_cost_limit")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(200),
        };
        self.db.vacuum_with(table.as_deref(), v.full, cost)?;
        Ok(Output::command("VACUUM"))
    }

    /// EXPLAIN [ANALYZE] of a query: operators with their placement; with
    /// ANALYZE also the actual rows, time and, for offloaded scans, the
    /// device's figures.
    fn explain(&mut self, stmt: &Statement, analyze: bool, params: &[Value]) -> Result<Output> {
        self.check_not_failed()?;
        if !matches!(
            stmt,
            Statement::Query(_) | Statement::Update(_) | Statement::Delete(_)
        ) {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "EXPLAIN supports SELECT, UPDATE and DELETE",
            ));
        }
        let prepared = self.prepare_borrowed(stmt)?;
        let planned = prepared.plan();
        let plan = &planned.kind;
        let (mut lines, last_ndp) = match plan {
            PreparedKind::Select(plan) => {
                plan.last_steps
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clear();
                (plan.explain(), &plan.last_ndp)
            }
            PreparedKind::Update(plan) => (plan.explain(), &plan.last_ndp),
            PreparedKind::Delete(plan) => (plan.explain(), &plan.last_ndp),
            _ => return Err(Error::new(SqlState::INTERNAL_ERROR, "not a plan")),
        };
        if analyze {
            let before = self.db.stats();
            let start = std::time::Instant::now();
            let out = self.execute_prepared(&prepared, params)?;
            let elapsed = start.elapsed();
            let after = self.db.stats();
            let delta = |name: &str| {
                let get = |v: &Vec<(String, i64)>| {
                    v.iter().find(|(k, _)| k == name).map_or(0, |(_, x)| *x)
                };
                get(&after) - get(&before)
            };
            let rows = match &out {
                Output::Rows { rows, .. } => rows.len() as u64,
                Output::Command { tag, .. } => tag
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
            };
            lines.push(format!(
                "actual rows {rows}, time {:.3} ms",
                elapsed.as_secs_f64() * 1e3
            ));
            if let PreparedKind::Select(plan) = plan {
                let steps = plan.last_steps.lock().unwrap_or_else(|e| e.into_inner());
                for (k, s) in steps.iter().enumerate() {
                    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
                    let through = match s.join_filter {
                        Some(keys) => format!(" through a join filter of {keys} keys"),
                        None => String::new(),
                    };
                    lines.push(match (k, s.lookups) {
                        (0, _) => format!(
                            "  {}: {} rows read{through} in {:.3} ms",
                            s.alias,
                            s.rows_read,
                            ms(s.read)
                        ),
                        (_, true) => format!(
                            "  {}: key lookups, {} rows joined in {:.3} ms",
                            s.alias,
                            s.rows_out,
                            ms(s.join)
                        ),
                        (_, false) => format!(
                            "  {}: {} rows read{through} in {:.3} ms, {} rows joined in {:.3} ms",
                            s.alias,
                            s.rows_read,
                            ms(s.read),
                            s.rows_out,
                            ms(s.join)
                        ),
                    });
                }
            }
            if delta("scan.pages") > 0 {
                lines.push(format!(
                    "host scan: {} pages filtered, {} skipped by zone maps; {} B read",
                    delta("scan.pages"),
                    delta("scan.pages_pruned"),
                    delta("scan.bytes_touched"),
                ));
            }
            lines.push(format!(
                "host: buffer hits {}, misses {}; link data to host {} B, to device {} B; control {} messages",
                delta("buffer.hits"),
                delta("buffer.misses"),
                delta("link.data.to_host.bytes"),
                delta("link.data.to_device.bytes"),
                delta("link.control.to_device.messages"),
            ));
            if let Some(r) = last_ndp.lock().ok().and_then(|mut l| l.take()) {
                lines.push(format!(
                    "device: {:.3} ms, {} PEs, tuples per PE {:?}, pages read {}, result {} rows / {} B",
                    r.device_micros as f64 / 1e3,
                    r.pe_tuples.len(),
                    r.pe_tuples,
                    r.pages_read,
                    r.result_rows,
                    r.result_bytes
                ));
                lines.push(format!(
                    "device scan: {} pages filtered, {} skipped by zone maps; {} B read",
                    r.pages_filtered, r.pages_pruned, r.bytes_touched
                ));
                if r.fan_out.objects > 0 {
                    lines.push(format!(
                        "device fan-out: {} RADOS objects scanned in their OSDs, {} B returned; {} version chains finished on the device",
                        r.fan_out.objects, r.fan_out.reply_bytes, r.fan_out.deferred
                    ));
                }
                lines.push(format!(
                    "shared state passed along: {} B ({} delta pages) in {:.3} ms",
                    r.shared_bytes,
                    r.shared_pages,
                    r.shared_transfer.as_secs_f64() * 1e3
                ));
            }
        }
        Ok(Output::Rows {
            columns: vec![ResultColumn {
                name: "QUERY PLAN".into(),
                ty: DataType::Text,
            }],
            rows: lines.into_iter().map(|l| vec![Value::Text(l)]).collect(),
        })
    }

    /// `BEGIN` / `START TRANSACTION [modes]`, as PostgreSQL runs it:
    /// outside a transaction it opens a block with the modes; inside an
    /// implicit transaction it makes that transaction the block (what ran
    /// before BEGIN is part of it); inside a block it warns (25001) and
    /// still applies the modes, as SET TRANSACTION would. A failed block
    /// refuses it (25P02) like any statement but COMMIT and ROLLBACK.
    fn begin(&mut self, modes: &[TransactionMode], begin: bool) -> Result<Output> {
        self.check_not_failed()?;
        match self.block {
            Block::Active => self.notices.push(Notice::warning(
                SqlState::ACTIVE_SQL_TRANSACTION,
                "there is already a transaction in progress",
            )),
            Block::Implicit => {}
            Block::None | Block::Failed => {
                let iso = isolation_of(modes)?.unwrap_or(self.default_isolation);
                self.tx = Some(self.begin_tx(iso)?);
            }
        }
        let was = self.block;
        self.block = Block::Active;
        if let Err(e) = self.set_transaction_modes(modes) {
            // An implicit transaction that became the block fails as the
            // block; one opened here has run nothing and is simply gone.
            if was == Block::None {
                self.tx = None;
                self.block = Block::None;
            } else {
                self.fail_transaction();
            }
            return Err(e);
        }
        Ok(Output::command(match begin {
            true => "BEGIN",
            false => "START TRANSACTION",
        }))
    }

    /// Applies transaction modes to the open transaction in the order
    /// given, with PostgreSQL's checks (check_XactIsoLevel,
    /// check_transaction_read_only): another isolation level only before
    /// the transaction's first snapshot and not inside a savepoint; READ
    /// WRITE in a READ ONLY transaction only before its first snapshot.
    fn set_transaction_modes(&mut self, modes: &[TransactionMode]) -> Result<()> {
        let Some(tx) = self.tx.as_mut() else {
            return Ok(());
        };
        let active = |message: &str| Error::new(SqlState::ACTIVE_SQL_TRANSACTION, message);
        for mode in modes {
            if let Some(iso) = isolation_of(std::slice::from_ref(mode))? {
                if tx.isolation() != iso {
                    if tx.statements() > 0 {
                        return Err(active(
                            "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                        ));
                    }
                    if tx.savepoint_count() > 0 {
                        return Err(active(
                            "SET TRANSACTION ISOLATION LEVEL must not be called in a subtransaction",
                        ));
                    }
                    tx.set_isolation(iso);
                }
            }
            if let Some(read_only) = crate::read_only::access_of(std::slice::from_ref(mode)) {
                if !read_only && tx.read_only() {
                    if tx.savepoint_count() > 0 {
                        return Err(active(
                            "cannot set transaction read-write mode inside a read-only transaction",
                        ));
                    }
                    if tx.statements() > 0 {
                        return Err(active(
                            "transaction read-write mode must be set before any query",
                        ));
                    }
                }
                tx.set_read_only(read_only);
            }
        }
        Ok(())
    }

    fn set(&mut self, set: &Set) -> Result<Output> {
        match set {
            Set::SetTransaction { modes, session, .. } => {
                let iso = isolation_of(modes)?;
                let read_only = crate::read_only::access_of(modes);
                if *session {
                    if let Some(i) = iso {
                        self.default_isolation = i;
                    }
                    if let Some(ro) = read_only {
                        self.default_read_only = ro;
                    }
                    return Ok(Output::command("SET"));
                }
                if self.block == Block::Active && self.tx.is_some() {
                    self.set_transaction_modes(modes)?;
                } else if iso.is_some() || read_only.is_some() {
                    self.notices.push(Notice::warning(
                        SqlState::NO_ACTIVE_SQL_TRANSACTION,
                        "SET TRANSACTION can only be used in transaction blocks",
                    ));
                }
                Ok(Output::command("SET"))
            }
            Set::SingleAssignment {
                variable, values, ..
            } => {
                let name = variable.to_string().to_lowercase();
                let value = values.iter().map(expr_text).collect::<Vec<_>>().join(", ");
                self.assign(name, value)?;
                Ok(Output::command("SET"))
            }
            Set::SetTimeZone { value, .. } => {
                self.settings.insert("timezone".into(), expr_text(value));
                Ok(Output::command("SET"))
            }
            other => Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("{other} is not supported"),
            )),
        }
    }

    /// Sets a parameter by name (SET, and the client's startup options).
    fn assign(&mut self, name: String, value: String) -> Result<()> {
        match name.as_str() {
            "ndp" => {
                self.ndp = match value.to_lowercase().as_str() {
                    "on" | "true" => NdpMode::On,
                    "off" | "false" => NdpMode::Off,
                    "auto" => NdpMode::Auto,
                    v => {
                        return Err(Error::new(
                            SqlState::INVALID_PARAMETER_VALUE,
                            format!("invalid value for parameter \"ndp\": \"{v}\" (on, off or auto)"),
                        ))
                    }
                }
            }
            "ndp_pes" => {
                self.ndp_pes = value.parse().ok().filter(|n| *n <= 64).ok_or_else(|| {
                    Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("invalid value for parameter \"ndp_pes\": \"{value}\" (0 = device default, at most 64)"),
                    )
                })?
            }
            "ndp_logging" => {
                self.ndp_logging = NdpLogging::parse(&value).ok_or_else(|| {
                    Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("invalid value for parameter \"ndp_logging\": \"{value}\" (off, basic or extended)"),
                    )
                })?
            }
            "ndp_preload" => self.ndp_preload = bool_setting("ndp_preload", &value)?,
            "ndp_lock_violation" => {
                self.ndp_lock_violation = bool_setting("ndp_lock_violation", &value)?
            }
            "host_workers" => {
                self.host_workers = match value.trim().parse::<usize>() {
                    Ok(n) if (1..=64).contains(&n) => n,
                    _ => {
                        return Err(Error::new(
                            SqlState::INVALID_PARAMETER_VALUE,
                            format!("invalid value for parameter \"host_workers\": \"{value}\" (1 to 64)"),
                        ))
                    }
                };
            }
            "statement_timeout" => {
                self.statement_timeout = time_setting::parse(&name, &value)?;
            }
            "lock_timeout" => {
                self.lock_wait.timeout = time_setting::parse(&name, &value)?;
            }
            "deadlock_timeout" => {
                self.lock_wait.deadlock_timeout =
                    time_setting::parse_positive(&name, &value)?;
            }
            "vacuum_cost_delay" => {
                let d = time_setting::parse(&name, &value)?.unwrap_or_default();
                if d > Duration::from_millis(100) {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("{value} ms is outside the valid range for parameter \"vacuum_cost_delay\" (0 .. 100)"),
                    ));
                }
            }
            "vacuum_cost_limit"
                if !value
                    .trim()
                    .parse::<u32>()
                    .is_ok_and(|n| (1..=10000).contains(&n)) =>
            {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("invalid value for parameter \"vacuum_cost_limit\": \"{value}\" (1 .. 10000)"),
                ));
            }
            _ => {}
        }
        if name == "default_transaction_isolation" || name == "transaction_isolation" {
            let iso = parse_isolation_name(&value)?;
            if name == "default_transaction_isolation" {
                self.default_isolation = iso;
            } else if let Some(tx) = &mut self.tx {
                if tx.isolation() != iso && tx.statements() > 0 {
                    return Err(Error::new(
                        SqlState::ACTIVE_SQL_TRANSACTION,
                        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                    ));
                }
                tx.set_isolation(iso);
            }
        }
        if name == "default_transaction_read_only" {
            self.default_read_only = crate::read_only::parse_flag(&name, &value)?;
        }
        if name == "transaction_read_only" {
            let ro = crate::read_only::parse_flag(&name, &value)?;
            if let Some(tx) = &mut self.tx {
                tx.set_read_only(ro);
            }
        }
        self.settings.insert(name, value);
        Ok(())
    }

    /// The current value of a setting, as SHOW and current_setting() see it.
    pub fn setting_value(&self, name: &str) -> Result<String> {
        Ok(match name {
            "transaction_isolation" | "transaction isolation level" => isolation_name(
                self.tx
                    .as_ref()
                    .map_or(self.default_isolation, |t| t.isolation()),
            )
            .to_string(),
            "default_transaction_isolation" => isolation_name(self.default_isolation).to_string(),
            "transaction_read_only" => on_off(
                self.tx
                    .as_ref()
                    .map_or(self.default_read_only, |t| t.read_only()),
            ),
            "default_transaction_read_only" => on_off(self.default_read_only),
            "ndp" => match self.ndp {
                NdpMode::On => "on",
                NdpMode::Off => "off",
                NdpMode::Auto => "auto",
            }
            .to_string(),
            "ndp_pes" => self.ndp_pes.to_string(),
            "ndp_preload" => if self.ndp_preload { "on" } else { "off" }.to_string(),
            "host_workers" => self.host_workers.to_string(),
            "ndp_logging" => self.ndp_logging.name().to_string(),
            "ndp_lock_violation" => if self.ndp_lock_violation { "on" } else { "off" }.to_string(),
            "server_version" => "15.0 (ndpdb 0.1.0)".into(),
            "server_encoding" => "UTF8".into(),
            "server_version_num" => "150000".into(),
            "standard_conforming_strings" | "integer_datetimes" => "on".into(),
            "search_path" => self
                .settings
                .get("search_path")
                .cloned()
                .unwrap_or_else(|| "\"$user\", public".into()),
            "statement_timeout" => time_setting::show(self.statement_timeout),
            "lock_timeout" => time_setting::show(self.lock_wait.timeout),
            "deadlock_timeout" => time_setting::show(Some(self.lock_wait.deadlock_timeout)),
            "client_encoding" | "application_name" | "extra_float_digits" | "vacuum_cost_delay"
            | "vacuum_cost_limit" => match self.settings.get(name) {
                Some(v) => v.clone(),
                None => match name {
                    "client_encoding" => "UTF8",
                    "application_name" => "",
                    "extra_float_digits" => "1",
                    "vacuum_cost_limit" => "200",
                    _ => "0",
                }
                .into(),
            },
            "datestyle" => "ISO, MDY".into(),
            "timezone" => self
                .settings
                .get("timezone")
                .cloned()
                .unwrap_or_else(|| "UTC".into()),
            other => match self.settings.get(other) {
                Some(v) => v.clone(),
                // The fixed ones pg_settings lists (max_identifier_length, …).
                None if let Some(row) =
                    crate::exec::row_source::system::SystemTable::PgSettings
                        .rows(&self.db, "")
                        .into_iter()
                        .find(|r| {
                            r[0].to_pg_text()
                                .is_some_and(|n| n.eq_ignore_ascii_case(other))
                        }) =>
                {
                    row[1].to_pg_text().unwrap_or_default()
                }
                None => {
                    return Err(Error::new(
                        SqlState::UNDEFINED_OBJECT,
                        format!("unrecognized configuration parameter \"{other}\""),
                    ))
                }
            },
        })
    }

    fn show(&mut self, name: &str) -> Result<Output> {
        if name == "stats" {
            let rows = self
                .db
                .stats()
                .into_iter()
                .map(|(k, v)| vec![Value::Text(k), Value::BigInt(v)])
                .collect();
            return Ok(Output::Rows {
                columns: vec![
                    ResultColumn {
                        name: "name".into(),
                        ty: DataType::Text,
                    },
                    ResultColumn {
                        name: "value".into(),
                        ty: DataType::BigInt,
                    },
                ],
                rows,
            });
        }
        if name == "all" {
            // PostgreSQL's SHOW ALL: every setting pg_settings lists, with
            // this session's value, in name order.
            let mut rows: Vec<Vec<Value>> =
                crate::exec::row_source::system::SystemTable::PgSettings
                    .rows(&self.db, "")
                    .into_iter()
                    .map(|r| {
                        let name = r[0].to_pg_text().unwrap_or_default();
                        let default = r[1].clone();
                        let value = self
                            .setting_value(&name.to_lowercase())
                            .map_or(default, Value::Text);
                        vec![r[0].clone(), value, r[4].clone()]
                    })
                    .collect();
            rows.sort_by_key(|r| r[0].to_pg_text().unwrap_or_default().to_lowercase());
            let text = |n: &str| ResultColumn {
                name: n.into(),
                ty: DataType::Text,
            };
            return Ok(Output::Rows {
                columns: vec![text("name"), text("setting"), text("description")],
                rows,
            });
        }
        if name == "tables" {
            let rows = self
                .db
                .tables()
                .into_iter()
                .map(|t| vec![Value::Text(t.name.clone())])
                .collect();
            return Ok(Output::Rows {
                columns: vec![ResultColumn {
                    name: "name".into(),
                    ty: DataType::Text,
                }],
                rows,
            });
        }
        let value = self.setting_value(name)?;
        Ok(Output::Rows {
            columns: vec![ResultColumn {
                name: name.replace(' ', "_"),
                ty: DataType::Text,
            }],
            rows: vec![vec![Value::Text(value)]],
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            tx.rollback();
        }
    }
}

/// A Boolean setting's value, refused as PostgreSQL refuses one (22023).
fn bool_setting(name: &str, value: &str) -> Result<bool> {
    ndpdb_formats::value::parse_bool(value).map_err(|_| {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("parameter \"{name}\" requires a Boolean value"),
        )
    })
}
