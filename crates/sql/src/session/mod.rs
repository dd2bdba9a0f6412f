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
//! `session_values.rs`'s. What a transaction's end undoes: its SETs
//! (`settings.rs`) and, on rollback, the relations its DDL created
//! (`ddl_undo.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_host::{Database, Interrupt, Isolation, LockWait, NdpLogging, Transaction};
use sqlparser::ast::{
    Expr, ObjectType, Set, Statement, TransactionIsolationLevel, TransactionMode,
};

mod ddl_undo;
mod prepared;
mod savepoint;
mod session_values;
mod set_config;
mod settings;
mod transaction_modes;
mod utility;
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
    /// What the SETs of the open transaction replaced, undone at its end
    /// (all at ROLLBACK, the LOCAL ones at COMMIT) — `settings.rs`.
    set_undo: Vec<settings::SetUndo>,
    /// What the open block's DDL created, statement by statement: dropped
    /// if it rolls back (`ddl_undo.rs`).
    ddl_undo: Vec<Vec<ddl_undo::Created>>,
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
            host_workers: ndpdb_host::storage::page_scan::DEFAULT_HOST_WORKERS,
            ndp_logging: NdpLogging::Basic,
            ndp_lock_violation: false,
            settings: BTreeMap::new(),
            set_undo: Vec::new(),
            ddl_undo: Vec::new(),
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
        let out = match self.tx.take() {
            Some(tx) => tx.commit(),
            None => Ok(()),
        };
        self.transaction_ended(out.is_ok());
        out
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
                self.transaction_ended(false);
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
            Statement::Commit { chain: true, .. } | Statement::Rollback {
                chain: true,
                savepoint: None,
            } => self.end_and_chain(matches!(stmt, Statement::Commit { .. })),
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
                let out = match self.tx.take() {
                    Some(tx) if tag == "ROLLBACK" => {
                        tx.rollback();
                        Ok(Output::command(tag))
                    }
                    Some(tx) => tx.commit().map(|_| Output::command(tag)),
                    None => Ok(Output::command(tag)),
                };
                self.transaction_ended(tag == "COMMIT" && out.is_ok());
                out
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
                self.transaction_ended(false);
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
            Statement::CreateTable(ct) => {
                self.guarded(|s| s.creating(|s| ddl::create_table(&s.db, ct)))
            }
            Statement::Vacuum(v) => self.guarded(|s| s.vacuum(v)),
            Statement::Comment {
                object_type,
                object_name,
                comment,
                ..
            } => self.guarded(|s| {
                ddl::comment::comment(&s.db, object_type, object_name, comment.as_deref())
            }),
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
                s.creating(|s| {
                    crate::ddl::sequence::create_sequence(
                        &s.db,
                        name,
                        *if_not_exists,
                        data_type.as_ref(),
                        sequence_options,
                    )
                })
            }),
            Statement::CreateIndex(ci) => self.guarded(|s| {
                let wait = s.lock_wait.timeout.unwrap_or(std::time::Duration::MAX);
                s.creating(|s| {
                    crate::ddl::index::create_index(&s.db, ci, wait, &s.interrupt, s.tx.as_ref())
                })
            }),
            Statement::Query(_) if set_config::is_set_config(stmt) => {
                self.guarded(|s| s.set_config(stmt, params))
            }
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
                self.creating(|s| {
                    s.in_transaction(|tx| {
                        tx.lock_relation_name(&name)?;
                        crate::ddl::view::create_view(&db, cv)
                    })
                })
            }
            Statement::Query(q)
                if matches!(q.body.as_ref(), sqlparser::ast::SetExpr::Select(s) if s.into.is_some()) =>
            {
                self.guarded(|_| {
                    Err(Error::new(
                        SqlState::FEATURE_NOT_SUPPORTED,
                        "SELECT … INTO is not supported (CREATE TABLE AS is not either)",
                    ))
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
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            tx.rollback();
        }
    }
}
