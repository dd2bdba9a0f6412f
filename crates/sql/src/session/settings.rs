//! SET, SHOW and the settings a session keeps: `SET name = value` checked
//! and stored, `SHOW name` / `current_setting()` read back in
//! PostgreSQL's spelling (on/off, time units, isolation names).
//!
//! ```text
//!  SET ndp = auto ──► assign ──► session field (or the settings map)
//!  SHOW ndp       ──► setting_value ──► one row, one text column
//!  in a transaction: the value replaced ──► set_undo ──► end_settings:
//!                    ROLLBACK undoes every SET, COMMIT the LOCAL ones
//! ```
//!
//! Unknown names are kept as text, as PostgreSQL keeps custom settings
//! with a dot in their name; a setting ndpdb acts on is refused with
//! 22023 when its value does not parse.

use super::transaction_modes::{isolation_name, isolation_of, parse_isolation_name};
use super::*;

pub(super) fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

pub(super) fn expr_text(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::SingleQuotedString(s) => s.clone(),
            v => v.to_string(),
        },
        Expr::Identifier(id) => id.value.clone(),
        e => e.to_string(),
    }
}

/// A Boolean setting's value, refused as PostgreSQL refuses one (22023).
pub(super) fn bool_setting(name: &str, value: &str) -> Result<bool> {
    ndpdb_formats::value::parse_bool(value).map_err(|_| {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("parameter \"{name}\" requires a Boolean value"),
        )
    })
}

/// A setting a SET in a transaction replaced.
pub(super) struct SetUndo {
    name: String,
    /// Its value before (as SHOW gave it).
    previous: Option<String>,
    /// Whether the session had set it (else it goes back to its default).
    listed: bool,
    /// `SET LOCAL` (or `set_config(…, true)`): undone at COMMIT too.
    local: bool,
}

impl Session {
    pub(super) fn set(&mut self, set: &Set) -> Result<Output> {
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
                variable,
                values,
                scope,
                ..
            } => {
                let name = variable.to_string().to_lowercase();
                let value = values.iter().map(expr_text).collect::<Vec<_>>().join(", ");
                let local = matches!(scope, Some(sqlparser::ast::ContextModifier::Local));
                if local && self.block == Block::None {
                    self.notices.push(Notice::warning(
                        SqlState::NO_ACTIVE_SQL_TRANSACTION,
                        "SET LOCAL can only be used in transaction blocks",
                    ));
                    return Ok(Output::command("SET"));
                }
                self.assign_in_transaction(name, value, local)?;
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

    /// SET `name` to `value` in the open transaction, if any: its end
    /// undoes it when it rolls back, or when `local` and it commits.
    pub(super) fn assign_in_transaction(
        &mut self,
        name: String,
        value: String,
        local: bool,
    ) -> Result<()> {
        let undo = (self.block != Block::None).then(|| SetUndo {
            previous: self.setting_value(&name).ok(),
            listed: self.settings.contains_key(&name),
            name: name.clone(),
            local,
        });
        self.assign(name, value)?;
        self.set_undo.extend(undo);
        Ok(())
    }

    /// The transaction ended (`committed` or not): what it undoes is
    /// undone — its SETs here, its DDL in `ddl_undo.rs`.
    pub(super) fn transaction_ended(&mut self, committed: bool) {
        self.end_settings(committed);
        self.end_ddl(committed);
    }

    /// The SETs the transaction undoes, undone newest first.
    pub(super) fn end_settings(&mut self, committed: bool) {
        let undo = std::mem::take(&mut self.set_undo);
        if undo.is_empty() {
            return;
        }
        for u in undo.into_iter().rev() {
            if committed && !u.local {
                continue;
            }
            if let Some(previous) = u.previous {
                // The value was valid when it was replaced.
                let _ = self.assign(u.name.clone(), previous);
            }
            if !u.listed {
                self.settings.remove(&u.name);
            }
        }
        self.settings_changed();
    }

    /// Sets a parameter by name (SET, and the client's startup options).
    pub(super) fn assign(&mut self, name: String, value: String) -> Result<()> {
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

    pub(super) fn show(&mut self, name: &str) -> Result<Output> {
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
