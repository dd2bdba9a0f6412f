//! The utility statements a session runs itself rather than through a
//! plan: TRUNCATE (with the tables its foreign keys reach), VACUUM /
//! ANALYZE, and EXPLAIN [ANALYZE] of a query or a DML statement.
//!
//! ```text
//!  TRUNCATE a CASCADE ─► truncate_closure ─► one transaction empties all
//!  VACUUM t           ─► the host's garbage collection of t's versions
//!  EXPLAIN SELECT …   ─► plan ─► rendered plan (ANALYZE: run, with counts)
//! ```

use super::*;

impl Session {
    /// `TRUNCATE [TABLE] [ONLY] t [, …] [RESTART | CONTINUE IDENTITY]
    /// [CASCADE | RESTRICT]`: every row of the tables deleted in one
    /// transaction (the block's, or its own), as DELETEs planned like any
    /// other (on the device where placement puts them). Unlike
    /// PostgreSQL's, it is MVCC-safe — snapshots older than the commit
    /// still see the rows — and the space returns with VACUUM.
    pub(super) fn truncate(&mut self, t: &sqlparser::ast::Truncate) -> Result<Output> {
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
    pub(super) fn vacuum(&mut self, v: &sqlparser::ast::VacuumStatement) -> Result<Output> {
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
    pub(super) fn explain(
        &mut self,
        stmt: &Statement,
        analyze: bool,
        params: &[Value],
    ) -> Result<Output> {
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
}
