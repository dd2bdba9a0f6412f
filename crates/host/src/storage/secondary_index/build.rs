//! Building secondary indexes: `CREATE [UNIQUE] INDEX` (while no other
//! transaction runs), `DROP INDEX`, and the rebuild at every open.
//!
//! ```text
//!  wait until no transaction runs (but the caller's own, if it has
//!  written nothing) ─► TxManager held: none can begin
//!    every VID: latest version (all finished) ─► (key, VID)
//!      UNIQUE and a non-NULL key seen before ─► 23505
//!    catalog entry with the index, durable ─► table state: index attached
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ndpdb_formats::{SqlState, TxId, Value};

use super::SecondaryIndex;
use crate::alter_table::when_alone;
use crate::catalog::IndexMeta;
use crate::db::{Database, Engine, TableState};
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::transaction::Transaction;

impl Database {
    /// `CREATE [UNIQUE] INDEX name ON table (columns)`, waiting up to
    /// `wait` for running transactions to end (55P03 after). `own`: the
    /// caller's transaction (a CREATE INDEX inside a transaction block),
    /// which may run beside the build if it has written nothing — its
    /// snapshot then holds only committed versions, which the index gets.
    pub fn create_index(
        &self,
        table: &str,
        meta: IndexMeta,
        wait: Duration,
        interrupt: &Interrupt,
        own: Option<&Transaction>,
    ) -> Result<()> {
        let inner = &self.inner;
        inner.check_ok()?;
        if own.is_some_and(Transaction::changed_rows) {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "CREATE INDEX inside a transaction block that has changed rows is not supported",
            )
            .with_hint("Create the index before the block's INSERT, UPDATE or DELETE, or in a block of its own."));
        }
        let own = own.map(Transaction::id);
        let _change = inner.catalog_change();
        let ts = self.table(table)?;
        if self.relation_exists(&meta.name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", meta.name),
            ));
        }
        let columns = ts.meta().schema.columns.len();
        if meta.columns.is_empty() || meta.columns.iter().any(|&c| c >= columns) {
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                "index column does not exist",
            ));
        }
        when_alone(table, wait, interrupt, || {
            inner
                .txm
                .exclusive_beside(own, |next| inner.attach_index(&ts, meta.clone(), next))
        })
    }

    /// `DROP INDEX name`: the table stops maintaining it; plans that
    /// chose it read the table instead. The index of a UNIQUE constraint
    /// goes only with its constraint (`ALTER TABLE … DROP CONSTRAINT`,
    /// `as_constraint`), and one a FOREIGN KEY relies on not at all.
    pub fn drop_index(&self, name: &str, as_constraint: bool) -> Result<()> {
        let inner = &self.inner;
        inner.check_ok()?;
        let _change = inner.catalog_change();
        let mut catalog = inner.catalog.lock();
        let owner = catalog.index_owner(name).ok_or_else(|| {
            Error::new(
                SqlState::UNDEFINED_OBJECT,
                format!("index \"{name}\" does not exist"),
            )
        })?;
        let what = if as_constraint { "constraint" } else { "index" };
        let index = owner.indexes.iter().find(|i| i.name == name);
        if let Some(i) = index.filter(|i| i.constraint && !as_constraint) {
            return Err(Error::new(
                SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
                format!(
                    "cannot drop index {name} because constraint {name} on table {} requires it",
                    owner.name
                ),
            )
            .with_hint(format!(
                "You can drop constraint {} on table {} instead.",
                i.name, owner.name
            )));
        }
        let users: Vec<String> = catalog
            .referencing(&owner.name)
            .into_iter()
            .filter(|(_, fk)| {
                crate::foreign_key::referenced_index(&owner, &fk.parent_columns).as_deref()
                    == Some(name)
            })
            .map(|(t, fk)| {
                format!(
                    "constraint {} on table {} depends on index {name}",
                    fk.name, t.name
                )
            })
            .collect();
        if !users.is_empty() {
            return Err(Error::new(
                SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
                format!(
                    "cannot drop {what} {name}{} because other objects depend on it",
                    if as_constraint {
                        format!(" on table {}", owner.name)
                    } else {
                        String::new()
                    }
                ),
            )
            .with_detail(users.join("\n"))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
        let ts = inner.table_state(owner.id)?;
        let mut indexes = owner.indexes.clone();
        indexes.retain(|i| i.name != name);
        let meta = catalog.set_indexes(&owner.name, indexes)?;
        ts.detach_index(name, meta);
        Ok(())
    }
}

impl Engine {
    /// Builds `meta`'s index with no transaction running below `next`,
    /// records it in the catalog and attaches it to the table.
    fn attach_index(&self, ts: &TableState, meta: IndexMeta, next: TxId) -> Result<()> {
        let index = self.build_index(ts, meta.clone(), next)?;
        let mut catalog = self.catalog.lock();
        let name = ts.meta().name.clone();
        let mut indexes = ts.meta().indexes.clone();
        indexes.push(meta);
        let table_meta = catalog.set_indexes(&name, indexes)?;
        ts.attach_index(Arc::new(index), table_meta);
        Ok(())
    }

    /// The index of every tuple's latest version, all transactions below
    /// `next` finished (at open, or with none running).
    pub(crate) fn build_index(
        &self,
        ts: &TableState,
        meta: IndexMeta,
        next: TxId,
    ) -> Result<SecondaryIndex> {
        let table = ts.meta();
        let index = SecondaryIndex::new(meta);
        let mut seen: HashMap<Vec<u8>, ()> = HashMap::new();
        self.latest_rows(ts, next, |vid, row| {
            let key = index.key_of(&row);
            if index.meta.unique && !key.iter().any(Value::is_null) {
                let mut w = ndpdb_formats::codec::Writer::new();
                for v in &key {
                    v.key_bytes(&mut w);
                }
                if seen.insert(w.into_inner(), ()).is_some() {
                    return Err(Error::new(
                        SqlState::UNIQUE_VIOLATION,
                        format!("could not create unique index \"{}\"", index.meta.name),
                    )
                    .with_detail(format!(
                        "{} is duplicated.",
                        table.key_detail(&index.meta.columns, &row)
                    )));
                }
            }
            index.add(&row, vid);
            Ok(())
        })?;
        Ok(index)
    }

    /// At open, after recovery: every table's indexes from its tuples.
    pub(crate) fn build_indexes_at_open(&self) -> Result<()> {
        let tables: Vec<Arc<TableState>> = self.tables.read().values().cloned().collect();
        for ts in tables {
            let metas = ts.meta().indexes.clone();
            if metas.is_empty() {
                continue;
            }
            let built = self.txm.exclusive(|next| -> Result<Vec<SecondaryIndex>> {
                metas
                    .into_iter()
                    .map(|m| self.build_index(&ts, m, next))
                    .collect()
            });
            let built = built.ok_or_else(|| {
                Error::new(
                    SqlState::INTERNAL_ERROR,
                    "a transaction ran while indexes were built at open",
                )
            })??;
            ts.set_indexes(built.into_iter().map(Arc::new).collect());
        }
        Ok(())
    }
}
