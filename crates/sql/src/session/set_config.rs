//! `SELECT set_config(name, value, is_local)`: SET as a function call,
//! the way pg_dump and drivers change a setting in a query
//! (`SELECT pg_catalog.set_config('search_path', '', false)`). The
//! statement is run as the SET it stands for; its one row is the
//! setting's new value, as PostgreSQL returns it.
//!
//! ```text
//!  SELECT set_config(n, v, local)  (and nothing else in the statement)
//!    ─► arguments: constant expressions or $n
//!    ─► local outside a transaction block: no lasting effect (PostgreSQL's)
//!    ─► else Session::assign(n, v) ─► row: the setting's value
//! ```

use ndpdb_formats::{DataType, SqlState, Value};
use sqlparser::ast::{Expr, Statement};

use super::{Block, Session};
use crate::bind::compile::compile;
use crate::bind::scope::Scope;
use crate::{Error, Output, Result, ResultColumn};

/// The arguments, if `stmt` is `SELECT set_config(…)` alone.
fn call_args(stmt: &Statement) -> Option<Vec<&Expr>> {
    crate::backup_call::lone_call(stmt, &["set_config", "pg_catalog.set_config"])
}

/// Whether `stmt` is `SELECT set_config(…)` alone.
pub(crate) fn is_set_config(stmt: &Statement) -> bool {
    call_args(stmt).is_some()
}

/// The one column of its row.
pub(crate) fn columns() -> Vec<ResultColumn> {
    vec![ResultColumn {
        name: "set_config".into(),
        ty: DataType::Text,
    }]
}

impl Session {
    /// Runs `SELECT set_config(name, value, is_local)` with `params`.
    pub(super) fn set_config(&mut self, stmt: &Statement, params: &[Value]) -> Result<Output> {
        let args = call_args(stmt).unwrap_or_default();
        let [name, value, local] = args.as_slice() else {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "function set_config({}) does not exist",
                    vec!["unknown"; args.len()].join(", ")
                ),
            )
            .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."));
        };
        let scope = Scope::default();
        let mut types = Vec::new();
        let mut eval = |e: &Expr| -> Result<Value> {
            let (p, _) = compile(e, &scope, &mut types)?;
            Ok(p.eval(&[], params)?)
        };
        let (name, value, local) = (eval(name)?, eval(value)?, eval(local)?);
        let Value::Text(name) = name else {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                "SET requires parameter name",
            ));
        };
        let name = name.to_lowercase();
        let value = match value {
            Value::Null => String::new(),
            Value::Text(s) => s,
            v => v.to_pg_text().unwrap_or_default(),
        };
        let local = match local {
            Value::Bool(b) => b,
            Value::Null => false,
            _ => {
                return Err(Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    "argument of set_config's is_local must be type boolean",
                ))
            }
        };
        // SET LOCAL outside a transaction block lasts for no statement
        // after this one.
        if local && self.tx.is_none() && self.block == Block::None {
            return Ok(Output::Rows {
                columns: columns(),
                rows: vec![vec![Value::Text(value)]],
            });
        }
        self.settings_changed();
        self.assign_in_transaction(name.clone(), value.clone(), local)?;
        let shown = self.setting_value(&name).unwrap_or(value);
        Ok(Output::Rows {
            columns: columns(),
            rows: vec![vec![Value::Text(shown)]],
        })
    }
}
