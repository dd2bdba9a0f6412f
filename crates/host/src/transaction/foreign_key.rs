//! FOREIGN KEY enforcement at write time (see [`crate::foreign_key`] for
//! the protocol): the referencing side's check after each written row,
//! and the referenced side's actions after a row goes or changes its key.
//!
//! ```text
//!  check_references      new key (no NULL) ─► ref key lock, shared
//!                          ─► parent row with the key, committed now? ─► else 23503
//!  on_referenced_change  old key gone ─► ref key lock, exclusive
//!                          ─► rows referring to it, committed now or own
//!                          ─► NO ACTION / RESTRICT: 23503   CASCADE: delete / update them
//!                             SET NULL: their key columns NULL
//! ```
//!
//! "Committed now" is read through a fresh snapshot: a referenced row
//! deleted after this transaction's snapshot was taken must not pass,
//! and rows referring to a key, committed after it, must be found.

use std::cmp::Ordering;
use std::sync::Arc;

use ndpdb_formats::{RecId, SqlState, Value, Vid};

use super::Transaction;
use crate::catalog::TableMeta;
use crate::db::TableState;
use crate::error::{Error, Result};
use crate::foreign_key::{key_of, positions, ref_key_lock, FkAction, ForeignKeyMeta};
use crate::mvcc::locks::LockMode;

/// The constraints that refer to one table, with their tables.
pub(super) type Referencing = Arc<Vec<(Arc<TableMeta>, ForeignKeyMeta)>>;

fn same(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.sql_cmp(y) == Some(Ordering::Equal))
}

/// `Key (a, b)=(1, 2)` of PostgreSQL's details.
fn key_detail(columns: &[String], key: &[Value]) -> String {
    let values: Vec<String> = key
        .iter()
        .map(|v| v.to_pg_text().unwrap_or_else(|| "null".into()))
        .collect();
    format!("Key ({})=({})", columns.join(", "), values.join(", "))
}

impl Transaction {
    /// `SET session_replication_role`-like switch for TRUNCATE of a
    /// closed set of tables: no checks, no actions.
    pub fn set_foreign_key_checks(&mut self, on: bool) {
        self.fk_checks = on;
    }

    /// Checks the foreign keys of `new`, just written to `ts` (`old`: the
    /// row it replaced; keys that did not change need no check).
    pub(crate) fn check_references(
        &mut self,
        ts: &TableState,
        old: Option<&[Value]>,
        new: &[Value],
    ) -> Result<()> {
        if !self.fk_checks {
            return Ok(());
        }
        let meta = ts.meta();
        for fk in &meta.foreign_keys {
            let Some(cols) = positions(&meta, &fk.columns) else {
                continue;
            };
            let violation = || {
                Error::new(
                    SqlState::FOREIGN_KEY_VIOLATION,
                    format!(
                        "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                        meta.name, fk.name
                    ),
                )
            };
            let key = match key_of(new, &cols, fk.match_full) {
                Ok(Some(key)) => key,
                Ok(None) => continue,
                Err(()) => {
                    return Err(violation().with_detail(
                        "MATCH FULL does not allow mixing of null and nonnull key values.",
                    ))
                }
            };
            if old.is_some_and(|old| {
                cols.iter()
                    .zip(&key)
                    .all(|(&c, k)| old[c].sql_cmp(k) == Some(Ordering::Equal))
            }) {
                continue;
            }
            let not_present = || {
                violation().with_detail(format!(
                    "{} is not present in table \"{}\".",
                    key_detail(&fk.columns, &key),
                    fk.parent
                ))
            };
            let parent = match self.db.table(&fk.parent) {
                Ok(p) => p,
                // The constraint being added to a table that refers to itself.
                Err(_) if fk.parent == meta.name => continue,
                Err(e) => return Err(e),
            };
            let pmeta = parent.meta();
            let Some(pcols) = positions(&pmeta, &fk.parent_columns) else {
                continue;
            };
            let Ok(pkey) = key
                .iter()
                .zip(&pcols)
                .map(|(v, &c)| v.cast(&pmeta.schema.columns[c].ty))
                .collect::<std::result::Result<Vec<Value>, _>>()
            else {
                return Err(not_present());
            };
            self.lock_as(
                ref_key_lock(parent.id, &pcols, &pkey),
                LockMode::Shared,
                false,
            )?;
            if !self.has_referenced_key(&parent, &pmeta, &pcols, &pkey)? {
                return Err(not_present());
            }
        }
        Ok(())
    }

    /// Whether a row of `parent` with `key` at `pcols` is committed now
    /// (or written by this transaction).
    fn has_referenced_key(
        &mut self,
        parent: &TableState,
        pmeta: &TableMeta,
        pcols: &[usize],
        key: &[Value],
    ) -> Result<bool> {
        self.with_fresh_snapshot(|tx| {
            let pk = &pmeta.schema.primary_key;
            if !pk.is_empty() && pk.len() == pcols.len() && pk.iter().all(|c| pcols.contains(c)) {
                let in_pk_order: Vec<Value> = pk
                    .iter()
                    .map(|c| key[pcols.iter().position(|p| p == c).unwrap_or(0)].clone())
                    .collect();
                return Ok(tx.get_by_key(parent, &in_pk_order)?.is_some());
            }
            let candidates: Option<Vec<Vid>> = parent.indexes().iter().find_map(|ix| {
                let cols = &ix.meta.columns;
                (ix.meta.unique
                    && cols.len() == pcols.len()
                    && cols.iter().all(|c| pcols.contains(c)))
                .then(|| {
                    let ordered: Vec<Value> = cols
                        .iter()
                        .map(|c| key[pcols.iter().position(|p| p == c).unwrap_or(0)].clone())
                        .collect();
                    ix.holders(&ordered, Vid(u64::MAX))
                })
            });
            let matches = |row: &[Value]| {
                pcols
                    .iter()
                    .zip(key)
                    .all(|(&c, k)| row[c].sql_cmp(k) == Some(Ordering::Equal))
            };
            match candidates {
                Some(vids) => {
                    for vid in vids {
                        if tx.get(parent, vid)?.is_some_and(|(_, row)| matches(&row)) {
                            return Ok(true);
                        }
                    }
                    Ok(false)
                }
                None => {
                    let mut found = false;
                    tx.scan(parent, |_, _, row| {
                        found = matches(&row);
                        Ok(!found)
                    })?;
                    Ok(found)
                }
            }
        })
    }

    /// Runs `f` reading through a snapshot taken now (own writes stay
    /// visible), then returns to the transaction's snapshot.
    fn with_fresh_snapshot<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let fresh = self.db.inner.txm.snapshot(self.id);
        let saved = std::mem::replace(&mut self.snapshot, fresh);
        let r = f(self);
        self.snapshot = saved;
        r
    }

    /// The constraints that refer to `ts` (looked up once per transaction).
    fn referencing(&mut self, ts: &TableState) -> Referencing {
        if let Some(r) = self.fk_refs.get(&ts.id) {
            return r.clone();
        }
        let r: Referencing = Arc::new(self.db.referencing(&ts.meta().name));
        self.fk_refs.insert(ts.id, r.clone());
        r
    }

    /// After row `old` of `ts` was deleted (`new` = None) or replaced by
    /// `new`: the actions of the constraints that refer to its keys.
    pub(crate) fn on_referenced_change(
        &mut self,
        ts: &TableState,
        old: &[Value],
        new: Option<&[Value]>,
    ) -> Result<()> {
        if !self.fk_checks {
            return Ok(());
        }
        let refs = self.referencing(ts);
        if refs.is_empty() {
            return Ok(());
        }
        let meta = ts.meta();
        for (child_meta, fk) in refs.iter() {
            let Some(pcols) = positions(&meta, &fk.parent_columns) else {
                continue;
            };
            let old_key: Vec<Value> = pcols.iter().map(|&c| old[c].clone()).collect();
            if old_key.iter().any(Value::is_null) {
                continue;
            }
            let new_key: Option<Vec<Value>> =
                new.map(|n| pcols.iter().map(|&c| n[c].clone()).collect());
            if new_key.as_ref().is_some_and(|k| same(k, &old_key)) {
                continue;
            }
            self.lock_as(
                ref_key_lock(ts.id, &pcols, &old_key),
                LockMode::Exclusive,
                false,
            )?;
            let child = self.db.table(&child_meta.name)?;
            let cmeta = child.meta();
            let Some(ccols) = positions(&cmeta, &fk.columns) else {
                continue;
            };
            let rows = self.referring_rows(&child, &ccols, &old_key)?;
            if rows.is_empty() {
                continue;
            }
            let action = if new.is_some() {
                fk.on_update
            } else {
                fk.on_delete
            };
            match action {
                FkAction::NoAction | FkAction::Restrict | FkAction::SetDefault => {
                    return Err(Error::new(
                        SqlState::FOREIGN_KEY_VIOLATION,
                        format!(
                            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
                            meta.name, fk.name, cmeta.name
                        ),
                    )
                    .with_detail(format!(
                        "{} is still referenced from table \"{}\".",
                        key_detail(&fk.parent_columns, &old_key),
                        cmeta.name
                    )));
                }
                FkAction::Cascade if new.is_none() => {
                    for (vid, rid, row) in rows {
                        let mut still = |r: &[Value]| Ok(refers_to(r, &ccols, &old_key));
                        self.delete_read(&child, vid, rid, Some(row), &mut still)?;
                    }
                }
                FkAction::Cascade | FkAction::SetNull => {
                    let replacement: Vec<Value> = match (&new_key, action) {
                        (Some(k), FkAction::Cascade) => k
                            .iter()
                            .zip(&ccols)
                            .map(|(v, &c)| v.cast(&cmeta.schema.columns[c].ty))
                            .collect::<std::result::Result<_, _>>()?,
                        _ => vec![Value::Null; ccols.len()],
                    };
                    for (vid, rid, row) in rows {
                        let mut apply = |r: &[Value]| {
                            if !refers_to(r, &ccols, &old_key) {
                                return Ok(None);
                            }
                            let mut n = r.to_vec();
                            for (&c, v) in ccols.iter().zip(&replacement) {
                                n[c] = v.clone();
                            }
                            Ok(Some(n))
                        };
                        self.update_read(&child, vid, rid, Some(row), &mut apply)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The rows of `child` whose `ccols` equal `key`, committed now or
    /// this transaction's own.
    fn referring_rows(
        &mut self,
        child: &TableState,
        ccols: &[usize],
        key: &[Value],
    ) -> Result<Vec<(Vid, RecId, Vec<Value>)>> {
        self.with_fresh_snapshot(|tx| {
            let mut out = Vec::new();
            tx.scan(child, |vid, rid, row| {
                if refers_to(&row, ccols, key) {
                    out.push((vid, rid, row));
                }
                Ok(true)
            })?;
            Ok(out)
        })
    }
}

/// Whether `row`'s `cols` equal `key` (the referenced key's values).
fn refers_to(row: &[Value], cols: &[usize], key: &[Value]) -> bool {
    cols.iter()
        .zip(key)
        .all(|(&c, k)| row[c].sql_cmp(k) == Some(Ordering::Equal))
}
