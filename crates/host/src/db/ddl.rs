//! DDL on the database handle: CREATE and DROP of tables, views and
//! sequences, and `nextval` / `setval` (outside transactions).
//!
//! ```text
//!  create_table_with ─► names free? (tables, views, indexes, sequences
//!                       share one namespace) ─► catalog write ─► sequences
//!                       ─► TableState with its UNIQUE indexes
//!  drop_relations    ─► catalog write (views CASCADE) ─► sequences,
//!                       table state, delta pages, device VID map, PK files
//! ```
//!
//! Every change holds a [`super::CatalogChange`] to its end, so plans
//! made before it are made again. ALTER TABLE is `crate::alter_table`,
//! CREATE INDEX `crate::storage::secondary_index`, constraints `crate::foreign_key`.

use std::collections::HashSet;
use std::sync::Arc;

use ndpdb_formats::{Column, Schema, SqlState};

use super::handle::Database;
use super::table::TableState;
use crate::catalog::{ColumnDefault, Dependent, IndexMeta, TableMeta, ViewMeta};
use crate::error::{Error, Result};
use crate::foreign_key::ForeignKeyMeta;
use crate::sequence::{Incarnation, SequenceMeta};
use crate::storage::maps::VidMap;
use crate::storage::pk_index;
use crate::storage::secondary_index::SecondaryIndex;

/// What a CREATE TABLE declares besides its columns and primary key.
#[derive(Clone, Debug, Default)]
pub struct NewTable {
    /// Column defaults, by column position.
    pub defaults: Vec<ColumnDefault>,
    /// Sequences of SERIAL and identity columns, owned by the table.
    pub sequences: Vec<SequenceMeta>,
    /// Indexes of UNIQUE constraints.
    pub indexes: Vec<IndexMeta>,
    /// FOREIGN KEYs, resolved against the table.
    pub foreign_keys: Vec<ForeignKeyMeta>,
}

impl Database {
    pub fn create_table(&self, name: &str, schema: Schema) -> Result<Arc<TableMeta>> {
        self.create_table_with(name, schema, NewTable::default())
    }

    /// CREATE TABLE with column defaults and the sequences they draw
    /// from (SERIAL and identity columns; each owned by its column).
    /// CREATE TABLE with what its definition declares besides the columns:
    /// defaults and the sequences they own, the indexes of UNIQUE
    /// constraints and FOREIGN KEYs (resolved, see
    /// [`Database::resolve_foreign_key`]), all in one catalog write.
    pub fn create_table_with(
        &self,
        name: &str,
        mut schema: Schema,
        parts: NewTable,
    ) -> Result<Arc<TableMeta>> {
        let NewTable {
            defaults,
            sequences,
            indexes,
            foreign_keys,
        } = parts;
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        if self.relation_exists(name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        let mut names: Vec<&str> = vec![name];
        for other in sequences
            .iter()
            .map(|s| s.name.as_str())
            .chain(indexes.iter().map(|i| i.name.as_str()))
        {
            if self.relation_exists(other) || names.contains(&other) {
                return Err(Error::new(
                    SqlState::DUPLICATE_TABLE,
                    format!("relation \"{other}\" already exists"),
                ));
            }
            names.push(other);
        }
        if indexes
            .iter()
            .any(|i| i.columns.is_empty() || i.columns.iter().any(|&c| c >= schema.columns.len()))
        {
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                "index column does not exist",
            ));
        }
        for &k in &schema.primary_key {
            if k >= schema.columns.len() {
                return Err(Error::new(
                    SqlState::UNDEFINED_COLUMN,
                    "primary key column does not exist",
                ));
            }
            schema.columns[k].nullable = false;
        }
        let mut seen = HashSet::new();
        for c in &schema.columns {
            if !seen.insert(c.name.as_str()) {
                return Err(Error::new(
                    SqlState::DUPLICATE_COLUMN,
                    format!("column \"{}\" specified more than once", c.name),
                ));
            }
        }
        let meta = self.inner.catalog.lock().create(
            name,
            schema,
            defaults,
            indexes.clone(),
            foreign_keys,
        )?;
        for mut s in sequences {
            if let Some((_, c)) = s.owner {
                s.owner = Some((meta.id, c));
            }
            self.inner.sequences.create(s)?;
        }
        let ts = TableState::new(meta.clone(), VidMap::default());
        ts.set_indexes(
            indexes
                .into_iter()
                .map(|i| Arc::new(SecondaryIndex::new(i)))
                .collect(),
        );
        self.inner.tables.write().insert(meta.id, Arc::new(ts));
        Ok(meta)
    }

    /// Whether `name` is taken by a table, an index or a sequence (one
    /// namespace, as PostgreSQL's relations).
    pub fn relation_exists(&self, name: &str) -> bool {
        let catalog = self.inner.catalog.lock();
        catalog.get(name).is_some()
            || catalog.view(name).is_some()
            || catalog.index_owner(name).is_some()
            || self.inner.sequences.exists(name)
    }

    /// `CREATE SEQUENCE`.
    pub fn create_sequence(&self, meta: SequenceMeta) -> Result<()> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        if self.relation_exists(&meta.name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", meta.name),
            ));
        }
        self.inner.sequences.create(meta)
    }

    /// `DROP SEQUENCE`.
    pub fn drop_sequence(&self, name: &str) -> Result<()> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        self.inner.sequences.drop_sequence(name)
    }

    /// The names of every sequence, in order.
    pub fn sequence_names(&self) -> Vec<String> {
        self.inner.sequences.names()
    }

    /// A sequence's definition.
    pub fn sequence(&self, name: &str) -> Option<SequenceMeta> {
        self.inner.sequences.get(name)
    }

    /// `nextval(name)`: never the same value twice, whatever the
    /// transactions that asked do.
    /// Also says which sequence of that name gave it.
    pub fn nextval(&self, name: &str) -> Result<(i64, Incarnation)> {
        self.inner.check_ok()?;
        self.inner.sequences.next(name)
    }

    /// `setval(name, value, called)`.
    pub fn setval(&self, name: &str, value: i64, called: bool) -> Result<(i64, Incarnation)> {
        self.inner.check_ok()?;
        self.inner.sequences.set(name, value, called)
    }

    /// Which sequence `name` is now (`None`: there is none).
    pub fn sequence_incarnation(&self, name: &str) -> Option<Incarnation> {
        self.inner.sequences.incarnation(name)
    }

    /// Drops table `name` (2BP01 if views depend on it).
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.drop_relations(&[name.to_string()], false).map(|_| ())
    }

    /// `DROP TABLE` / `DROP VIEW`: the tables and views `names` go in one
    /// catalog write, with the views that depend on them if `cascade`
    /// (else 2BP01 when any does); then the tables' storage. Returns the
    /// other objects dropped with them (`view v`, `constraint f on table t`).
    pub fn drop_relations(&self, names: &[String], cascade: bool) -> Result<Vec<String>> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        let (tables, views) = self.inner.catalog.lock().drop_relations(names, cascade)?;
        // Tables that kept their rows but lost constraints (CASCADE).
        for meta in self.inner.catalog.lock().tables() {
            if let Some(ts) = self.inner.tables.read().get(&meta.id) {
                if ts.meta().foreign_keys != meta.foreign_keys {
                    ts.replace_meta(meta.clone());
                }
            }
        }
        for meta in tables {
            self.inner.sequences.drop_owned_by(meta.id)?;
            self.inner.tables.write().remove(&meta.id);
            self.inner.delta.write().forget_table(meta.id);
            self.inner.device.drop_vid_map(meta.id)?;
            pk_index::remove(&pk_index::index_dir(&self.inner.dir), meta.id)?;
        }
        Ok(views)
    }

    /// `CREATE [OR REPLACE] VIEW` (see [`Catalog::create_view`]).
    pub fn create_view(
        &self,
        name: &str,
        sql: String,
        columns: Vec<Column>,
        depends: Vec<String>,
        replace: bool,
    ) -> Result<Arc<ViewMeta>> {
        self.inner.check_ok()?;
        let _change = self.inner.catalog_change();
        if self.inner.sequences.exists(name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        self.inner
            .catalog
            .lock()
            .create_view(name, sql, columns, depends, replace)
    }

    /// `COMMENT ON TABLE | VIEW | COLUMN`: sets the comment of relation
    /// `relation` (or of its column `column`), or removes it (`None`).
    pub fn set_comment(
        &self,
        relation: &str,
        column: Option<&str>,
        text: Option<String>,
    ) -> Result<()> {
        self.inner
            .catalog
            .lock()
            .set_comment(relation, column, text)
    }

    /// Every comment: `(relation, column or "", text)`.
    pub fn comments(&self) -> Vec<(String, String, String)> {
        self.inner.catalog.lock().comments()
    }

    /// View `name`'s definition.
    pub fn view(&self, name: &str) -> Option<Arc<ViewMeta>> {
        self.inner.catalog.lock().view(name)
    }

    /// Every view, by name.
    pub fn views(&self) -> Vec<Arc<ViewMeta>> {
        self.inner.catalog.lock().views()
    }

    /// The views that depend on relations `names` (see
    /// [`Catalog::dependents`]).
    pub fn view_dependents(&self, names: &[String]) -> Vec<Dependent> {
        self.inner.catalog.lock().dependents(names)
    }
}
