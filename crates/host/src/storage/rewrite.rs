//! Rewriting a table into a new layout (`ALTER TABLE … ADD COLUMN` /
//! `DROP COLUMN`): PAX pages are laid out by their table's column types,
//! so a new column set means new pages — as PostgreSQL rewrites a table
//! for such changes.
//!
//! ```text
//!  wait until no transaction runs ─► TxManager held: none can begin
//!    new table under a temporary name (a new TableId)
//!    one transaction: every visible row ─► mapped ─► inserted; commit
//!    catalog: the new table takes the name, with its indexes and
//!             defaults; the old one goes (one durable write)
//!    indexes built, owned sequences moved, old table's maps dropped
//! ```
//!
//! A crash before the catalog write leaves the temporary table, which
//! the next open drops ([`TEMP_PREFIX`]); after it, the new table is the
//! table. Prepared plans of the old table fail (42P01) rather than read a
//! table that no longer changes.

use std::sync::Arc;
use std::time::Duration;

use ndpdb_formats::{Schema, SqlState, Value};

use crate::alter_table::when_alone;
use crate::catalog::{ColumnDefault, IndexMeta};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::interrupt::Interrupt;
use crate::Isolation;

/// Names of tables a rewrite has not finished (dropped at open).
pub const TEMP_PREFIX: &str = "pg_temp_rewrite_";

/// Where a column of the rewritten table gets its value.
#[derive(Clone, Debug)]
pub enum NewColumn {
    /// The old table's column at this position.
    Old(usize),
    /// The same value in every row (a new column's default or NULL).
    Value(Value),
}

/// The new layout of a table.
pub struct Rewrite {
    pub schema: Schema,
    pub columns: Vec<NewColumn>,
    pub indexes: Vec<IndexMeta>,
    pub defaults: Vec<ColumnDefault>,
    /// Old column positions of owned sequences → new positions (a
    /// dropped column's sequence goes).
    pub moved: Vec<(usize, Option<usize>)>,
}

impl Database {
    /// Rewrites table `name` as `rewrite` says, waiting up to `wait` for
    /// running transactions to end (55P03 after).
    pub fn rewrite_table(
        &self,
        name: &str,
        rewrite: Rewrite,
        wait: Duration,
        interrupt: &Interrupt,
    ) -> Result<()> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        let mut rewrite = Some(rewrite);
        when_alone(name, wait, interrupt, || {
            self.inner.txm.exclusive_begin(|begin| {
                let r = rewrite
                    .take()
                    .ok_or_else(|| Error::new(SqlState::INTERNAL_ERROR, "rewrite ran twice"))?;
                self.rewrite_alone(name, r, begin)
            })
        })
    }

    /// The rewrite, with no other transaction running or beginning.
    fn rewrite_alone(
        &self,
        name: &str,
        r: Rewrite,
        begin: &dyn Fn() -> ndpdb_formats::TxId,
    ) -> Result<()> {
        let old = self.table(name)?;
        let old_meta = old.meta();
        let temp = format!("{TEMP_PREFIX}{}", old_meta.id.0);
        if self.table(&temp).is_ok() {
            self.drop_table(&temp)?;
        }
        self.create_table(&temp, r.schema.clone())?;
        let new = self.table(&temp)?;
        let copied = (|| -> Result<()> {
            let mut tx = self.begin_as(begin(), Isolation::Snapshot)?;
            tx.begin_statement();
            let mut rows = Vec::new();
            tx.scan(&old, |_, _, row| {
                rows.push(row);
                Ok(true)
            })?;
            for row in rows {
                let mapped: Vec<Value> = r
                    .columns
                    .iter()
                    .map(|c| match c {
                        NewColumn::Old(i) => row.get(*i).cloned().unwrap_or(Value::Null),
                        NewColumn::Value(v) => v.clone(),
                    })
                    .collect();
                let columns = &r.schema.columns;
                if let Some(c) = columns
                    .iter()
                    .zip(&mapped)
                    .find(|(c, v)| !c.nullable && v.is_null())
                    .map(|(c, _)| c)
                {
                    return Err(Error::new(
                        SqlState::NOT_NULL_VIOLATION,
                        format!(
                            "column \"{}\" of relation \"{name}\" contains null values",
                            c.name
                        ),
                    ));
                }
                tx.insert(&new, mapped)?;
            }
            tx.commit()
        })();
        if let Err(e) = copied {
            let _ = self.drop_table(&temp);
            return Err(e);
        }
        let inner = &self.inner;
        let (gone, meta) =
            inner
                .catalog
                .lock()
                .replace(name, &temp, r.indexes.clone(), r.defaults)?;
        new.replace_meta(meta);
        inner.tables.write().remove(&gone.id);
        inner.delta.write().forget_table(gone.id);
        inner.device.drop_vid_map(gone.id)?;
        crate::storage::pk_index::remove(
            &crate::storage::pk_index::index_dir(&inner.dir),
            gone.id,
        )?;
        inner.sequences.move_owned(gone.id, new.id, &r.moved)?;
        let next = inner.txm.next_txid();
        let built = r
            .indexes
            .into_iter()
            .map(|m| inner.build_index(&new, m, next).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        new.set_indexes(built);
        Ok(())
    }

    /// At open: tables an unfinished rewrite left behind.
    pub(crate) fn drop_rewrite_leftovers(&self) -> Result<()> {
        for t in self.tables() {
            if t.name.starts_with(TEMP_PREFIX) {
                self.drop_table(&t.name)?;
            }
        }
        Ok(())
    }
}
