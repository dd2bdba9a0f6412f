//! Functions whose value is the session's, fixed when a statement is
//! planned (stable within it, as in PostgreSQL): `current_setting(name
//! [, missing_ok])`, `current_user`, `session_user`, `user`,
//! `current_schema[()]`, `current_database()`, `current_catalog`,
//! `pg_backend_pid()`.
//!
//! ```text
//!   current_setting('x')  ─► 'value'                (a literal)
//!   current_user          ─► "\0session".current_user('postgres')
//! ```
//!
//! `current_setting(name)` of a name known only when the statement runs
//! (a parameter, a column) becomes `"\0session".setting(name, 'lines')`:
//! every setting's value as `name \t value` lines, looked up then.
//!
//! The second form keeps the function's name for the result column
//! (`SELECT current_user` is named `current_user`); the compiler turns
//! it into the constant (`bind/compile/`, [`SESSION_VALUE`]). No identifier
//! a client sends can contain the NUL that marks it.

use std::ops::ControlFlow;

use ndpdb_formats::SqlState;
use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, ObjectNamePart, Statement, Value as SqlValue,
};

use super::Session;
use crate::{Error, Result};

/// The first name part of a resolved session value.
pub use crate::bind::compile::SESSION_VALUE;

/// The session value a bare keyword or an argument-less call names.
fn value_function(name: &str) -> Option<&'static str> {
    Some(match name.trim_start_matches("pg_catalog.") {
        "current_user" => "current_user",
        "session_user" => "session_user",
        "user" => "user",
        "current_schema" => "current_schema",
        "current_database" => "current_database",
        "current_catalog" => "current_catalog",
        "pg_backend_pid" => "pg_backend_pid",
        _ => return None,
    })
}

fn no_args(f: &Function) -> bool {
    match &f.args {
        FunctionArguments::None => true,
        FunctionArguments::List(l) => l.args.is_empty(),
        FunctionArguments::Subquery(_) => false,
    }
}

/// What `e` resolves, if anything.
fn session_function(e: &Expr) -> Option<&'static str> {
    match e {
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_lowercase();
            if name == "current_setting" || name == "pg_catalog.current_setting" {
                return Some("current_setting");
            }
            value_function(&name).filter(|_| no_args(f))
        }
        // Keywords PostgreSQL also accepts without parentheses.
        Expr::Identifier(id) if id.quote_style.is_none() => {
            let name = id.value.to_ascii_lowercase();
            value_function(&name).filter(|n| !matches!(*n, "current_database" | "pg_backend_pid"))
        }
        _ => None,
    }
}

/// Whether `stmt` uses a session value (resolved at plan time).
pub(super) fn mentioned(stmt: &Statement) -> bool {
    sqlparser::ast::visit_expressions(stmt, |e| match session_function(e) {
        Some(_) => ControlFlow::Break(()),
        None => ControlFlow::Continue(()),
    })
    .is_break()
}

fn string_literal(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            SqlValue::SingleQuotedString(s) => Some(s.clone()),
            SqlValue::Boolean(b) => Some(b.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// What `current_setting(…)` becomes.
enum SettingOf {
    /// The value, for a name written as a literal.
    Known(SqlValue),
    /// The lookup when the statement runs.
    Runtime(Box<Expr>),
}

/// `"\0session".name('value')`.
fn resolved(name: &str, value: String) -> Expr {
    let arg = Expr::Value(SqlValue::SingleQuotedString(value).into());
    session_call(name, vec![arg])
}

/// `"\0session".name(args…)`.
fn session_call(name: &str, args: Vec<Expr>) -> Expr {
    let args = args
        .into_iter()
        .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
        .collect();
    Expr::Function(Function {
        name: ObjectName(vec![
            ObjectNamePart::Identifier(Ident::new(SESSION_VALUE)),
            ObjectNamePart::Identifier(Ident::new(name)),
        ]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// The calling OS thread's id where threads have one a pid can name
/// (Linux), else the process id.
pub fn current_thread_pid() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        unsafe { libc::gettid() }
    }
    #[cfg(not(target_os = "linux"))]
    {
        std::process::id() as i32
    }
}

impl Session {
    /// The client's database (the startup packet's `database`).
    pub fn set_database_name(&mut self, name: &str) {
        self.database_name = name.to_string();
    }

    /// The id a server gave the connection (its BackendKeyData pid, the
    /// OS thread serving it); `pg_backend_pid()`.
    pub fn set_backend_pid(&mut self, pid: i32) {
        self.backend_pid = Some(pid);
    }

    /// `pg_backend_pid()`: the connection's pid on a server; in an
    /// embedded session the OS thread running the statement (on Linux a
    /// thread id, which `renice -p` and `setpriority` accept as a pid).
    pub fn backend_pid(&self) -> i32 {
        self.backend_pid.unwrap_or_else(current_thread_pid)
    }

    fn session_value(&self, name: &str) -> String {
        match name {
            "current_schema" => "public".into(),
            "pg_backend_pid" => self.backend_pid().to_string(),
            "current_database" | "current_catalog" => self.database_name.clone(),
            _ => self
                .settings
                .get("session_authorization")
                .cloned()
                .unwrap_or_else(|| "postgres".into()),
        }
    }

    /// Replaces the session values in `stmt` (see the module docs).
    pub(super) fn resolve_session_values(&self, mut stmt: Statement) -> Result<Statement> {
        if !mentioned(&stmt) {
            return Ok(stmt);
        }
        let mut error = None;
        let _ = sqlparser::ast::visit_expressions_mut(&mut stmt, |e| {
            match session_function(e) {
                None => {}
                Some("current_setting") => match self.current_setting(e) {
                    Ok(SettingOf::Known(v)) => *e = Expr::Value(v.into()),
                    Ok(SettingOf::Runtime(call)) => *e = *call,
                    Err(err) => {
                        error = Some(err);
                        return ControlFlow::Break(());
                    }
                },
                Some(name) => *e = resolved(name, self.session_value(name)),
            }
            ControlFlow::Continue(())
        });
        match error {
            Some(e) => Err(e),
            None => Ok(stmt),
        }
    }

    /// `current_setting('name' [, missing_ok])`'s value.
    fn current_setting(&self, e: &Expr) -> Result<SettingOf> {
        let Expr::Function(f) = e else {
            return Err(Error::new(SqlState::INTERNAL_ERROR, "not a function call"));
        };
        let args = crate::backup_call::unnamed_args(f);
        let name = args.first().and_then(|a| string_literal(a));
        let missing_ok = args
            .get(1)
            .and_then(|a| string_literal(a))
            .is_some_and(|b| b == "true");
        if name.is_none() && args.len() == 1 {
            // A name known when the statement runs: look it up then.
            let lines = Expr::Value(SqlValue::SingleQuotedString(self.setting_lines()).into());
            return Ok(SettingOf::Runtime(Box::new(session_call(
                "setting",
                vec![args[0].clone(), lines],
            ))));
        }
        let Some(name) = name.filter(|_| args.len() <= 2) else {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "current_setting() takes a setting name as a string literal",
            ));
        };
        match self.setting_value(&name.to_lowercase()) {
            Ok(v) => Ok(SettingOf::Known(SqlValue::SingleQuotedString(v))),
            Err(_) if missing_ok => Ok(SettingOf::Known(SqlValue::Null)),
            Err(err) => Err(err),
        }
    }

    /// Every setting `SHOW` knows, as `name \t value` lines.
    fn setting_lines(&self) -> String {
        let mut names: Vec<String> = [
            "transaction_isolation",
            "default_transaction_isolation",
            "transaction_read_only",
            "default_transaction_read_only",
            "ndp",
            "ndp_pes",
            "ndp_preload",
            "host_workers",
            "ndp_logging",
            "ndp_lock_violation",
            "search_path",
            "statement_timeout",
            "lock_timeout",
            "deadlock_timeout",
            "client_encoding",
            "application_name",
            "extra_float_digits",
            "datestyle",
            "timezone",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        names.extend(self.settings.keys().cloned());
        names.extend(
            crate::exec::row_source::system::SystemTable::PgSettings
                .rows(&self.db, "")
                .into_iter()
                .filter_map(|r| r.first().and_then(|v| v.to_pg_text())),
        );
        names.sort();
        names.dedup();
        names
            .iter()
            .filter_map(|n| {
                let v = self.setting_value(&n.to_lowercase()).ok()?;
                Some(format!(
                    "{}\t{}\n",
                    n.to_lowercase(),
                    v.replace(['\t', '\n'], " ")
                ))
            })
            .collect()
    }
}
