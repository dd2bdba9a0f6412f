//! The catalog: tables, their ids, schemas, column defaults and
//! secondary indexes.
//!
//! Persisted as `catalog.bin` (`"NDPC" | crc32 | len u64 | payload`),
//! replaced atomically (write temporary file, fsync, rename, fsync the
//! directory) on every DDL statement. Table ids are never reused, so a
//! WAL record of a dropped table is recognised and skipped.
//!
//! ```text
//!  payload: next_id u32 | n u32 | n × (id u32 | name str | schema)
//!           then sections, each `tag u8 | m u32 | m × entry`:
//!    1 secondary indexes: table id u32 | name str | unique u8 |
//!                         k u32 | k × column u32
//!    2 column defaults:   table id u32 | column u32 | SQL text str |
//!                         identity u8 (0 none, 1 ALWAYS, 2 BY DEFAULT)
//! ```
//!
//! A section without entries is not written, so catalogs of tables with
//! neither read as they were written before sections existed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{Schema, SqlState, TableId};

use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq)]
pub struct TableMeta {
    pub id: TableId,
    pub name: String,
    pub schema: Schema,
    /// Secondary indexes (`CREATE [UNIQUE] INDEX`), in creation order.
    pub indexes: Vec<IndexMeta>,
    /// Column defaults by column position (`DEFAULT expr`, SERIAL and
    /// identity columns: `nextval('seq')`).
    pub defaults: Vec<ColumnDefault>,
}

/// A column's default: the expression's SQL text, evaluated at INSERT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnDefault {
    pub column: usize,
    pub expr: String,
    pub identity: Identity,
}

/// `GENERATED … AS IDENTITY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    None,
    /// `ALWAYS`: an explicit value needs `OVERRIDING SYSTEM VALUE`.
    Always,
    ByDefault,
}

impl TableMeta {
    /// The default of column `c`, if it has one.
    pub fn default_of(&self, c: usize) -> Option<&ColumnDefault> {
        self.defaults.iter().find(|d| d.column == c)
    }
}

const SECTION_INDEXES: u8 = 1;
const SECTION_DEFAULTS: u8 = 2;

/// A secondary index's definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexMeta {
    pub name: String,
    /// Key columns (positions in the table's schema), in key order.
    pub columns: Vec<usize>,
    pub unique: bool,
}

impl TableMeta {
    pub fn pk_constraint_name(&self) -> String {
        format!("{}_pkey", self.name)
    }

    /// The columns `key` of `row` as PostgreSQL's error details name a
    /// key: `Key (a, b)=(1, x)`.
    pub fn key_detail(&self, key: &[usize], row: &[ndpdb_formats::Value]) -> String {
        let names: Vec<&str> = key
            .iter()
            .map(|&i| self.schema.columns[i].name.as_str())
            .collect();
        let values: Vec<String> = key
            .iter()
            .map(|&i| row[i].to_pg_text().unwrap_or_else(|| "null".into()))
            .collect();
        format!("Key ({})=({})", names.join(", "), values.join(", "))
    }
}

#[derive(Debug)]
pub struct Catalog {
    path: PathBuf,
    next_id: u32,
    tables: BTreeMap<String, Arc<TableMeta>>,
}

const MAGIC: &[u8; 4] = b"NDPC";

impl Catalog {
    pub fn open(dir: &Path) -> Result<Catalog> {
        let path = dir.join("catalog.bin");
        let mut cat = Catalog {
            path: path.clone(),
            next_id: 1,
            tables: BTreeMap::new(),
        };
        if path.exists() {
            let bytes = fs::read(&path)?;
            cat.decode(&bytes)
                .map_err(|e| Error::new(SqlState::DATA_CORRUPTED, format!("catalog: {e}")))?;
        }
        Ok(cat)
    }

    fn decode(&mut self, bytes: &[u8]) -> ndpdb_formats::Result<()> {
        let mut r = Reader::new(crate::framed_file::payload(bytes, MAGIC, "catalog")?);
        self.next_id = r.u32()?;
        let n = r.count(8)?;
        for _ in 0..n {
            let id = TableId(r.u32()?);
            let name = r.str()?.to_string();
            let schema = Schema::decode(&mut r)?;
            self.tables.insert(
                name.clone(),
                Arc::new(TableMeta {
                    id,
                    name,
                    schema,
                    indexes: Vec::new(),
                    defaults: Vec::new(),
                }),
            );
        }
        while !r.is_empty() {
            let tag = r.u8()?;
            match tag {
                SECTION_INDEXES => self.decode_indexes(&mut r)?,
                SECTION_DEFAULTS => self.decode_defaults(&mut r)?,
                t => {
                    return Err(ndpdb_formats::Error::corrupted(format!(
                        "unknown catalog section {t}"
                    )))
                }
            }
        }
        r.finish("catalog")
    }

    fn table_by_id(&mut self, id: TableId) -> ndpdb_formats::Result<&mut Arc<TableMeta>> {
        self.tables
            .values_mut()
            .find(|t| t.id == id)
            .ok_or_else(|| ndpdb_formats::Error::corrupted("catalog entry of an unknown table"))
    }

    fn decode_defaults(&mut self, r: &mut Reader<'_>) -> ndpdb_formats::Result<()> {
        let m = r.count(13)?;
        for _ in 0..m {
            let table = TableId(r.u32()?);
            let column = r.u32()? as usize;
            let expr = r.str()?.to_string();
            let identity = match r.u8()? {
                0 => Identity::None,
                1 => Identity::Always,
                2 => Identity::ByDefault,
                _ => return Err(ndpdb_formats::Error::corrupted("bad identity kind")),
            };
            let meta = self.table_by_id(table)?;
            if column >= meta.schema.columns.len() {
                return Err(ndpdb_formats::Error::corrupted(
                    "default of a missing column",
                ));
            }
            Arc::make_mut(meta).defaults.push(ColumnDefault {
                column,
                expr,
                identity,
            });
        }
        Ok(())
    }

    fn decode_indexes(&mut self, r: &mut Reader<'_>) -> ndpdb_formats::Result<()> {
        {
            let m = r.count(9)?;
            for _ in 0..m {
                let table = TableId(r.u32()?);
                let name = r.str()?.to_string();
                let unique = r.u8()? != 0;
                let k = r.count(4)?;
                let columns = (0..k)
                    .map(|_| r.u32().map(|c| c as usize))
                    .collect::<ndpdb_formats::Result<Vec<_>>>()?;
                let meta = self.table_by_id(table)?;
                if columns.is_empty() || columns.iter().any(|&c| c >= meta.schema.columns.len()) {
                    return Err(ndpdb_formats::Error::corrupted("index column out of range"));
                }
                Arc::make_mut(meta).indexes.push(IndexMeta {
                    name,
                    columns,
                    unique,
                });
            }
        }
        Ok(())
    }

    fn persist(&self) -> Result<()> {
        let mut p = Writer::new();
        p.u32(self.next_id).u32(self.tables.len() as u32);
        for t in self.tables.values() {
            p.u32(t.id.0).str(&t.name);
            t.schema.encode(&mut p);
        }
        let indexes: Vec<(TableId, &IndexMeta)> = self
            .tables
            .values()
            .flat_map(|t| t.indexes.iter().map(|i| (t.id, i)))
            .collect();
        if !indexes.is_empty() {
            p.u8(SECTION_INDEXES).u32(indexes.len() as u32);
            for (table, i) in indexes {
                p.u32(table.0).str(&i.name).u8(i.unique as u8);
                p.u32(i.columns.len() as u32);
                for &c in &i.columns {
                    p.u32(c as u32);
                }
            }
        }
        let defaults: Vec<(TableId, &ColumnDefault)> = self
            .tables
            .values()
            .flat_map(|t| t.defaults.iter().map(|d| (t.id, d)))
            .collect();
        if !defaults.is_empty() {
            p.u8(SECTION_DEFAULTS).u32(defaults.len() as u32);
            for (table, d) in defaults {
                p.u32(table.0).u32(d.column as u32).str(&d.expr);
                p.u8(match d.identity {
                    Identity::None => 0,
                    Identity::Always => 1,
                    Identity::ByDefault => 2,
                });
            }
        }
        crate::framed_file::write(&self.path, MAGIC, p.as_slice())
    }

    pub fn get(&self, name: &str) -> Option<Arc<TableMeta>> {
        self.tables.get(name).cloned()
    }

    pub fn tables(&self) -> Vec<Arc<TableMeta>> {
        self.tables.values().cloned().collect()
    }

    pub fn create(
        &mut self,
        name: &str,
        schema: Schema,
        defaults: Vec<ColumnDefault>,
    ) -> Result<Arc<TableMeta>> {
        if self.tables.contains_key(name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        if self.index_owner(name).is_some() {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        let meta = Arc::new(TableMeta {
            id: TableId(self.next_id),
            name: name.to_string(),
            schema,
            indexes: Vec::new(),
            defaults,
        });
        self.next_id += 1;
        self.tables.insert(name.to_string(), meta.clone());
        if let Err(e) = self.persist() {
            self.tables.remove(name);
            return Err(e);
        }
        Ok(meta)
    }

    /// Gives table `name` the primary key `key` (column positions; those
    /// columns become NOT NULL), durably.
    pub fn set_primary_key(&mut self, name: &str, key: &[usize]) -> Result<Arc<TableMeta>> {
        let old = self.get(name).ok_or_else(|| Error::undefined_table(name))?;
        let mut schema = old.schema.clone();
        for &k in key {
            schema.columns[k].nullable = false;
        }
        schema.primary_key = key.to_vec();
        let meta = Arc::new(TableMeta {
            id: old.id,
            name: old.name.clone(),
            schema,
            indexes: old.indexes.clone(),
            defaults: old.defaults.clone(),
        });
        self.tables.insert(name.to_string(), meta.clone());
        if let Err(e) = self.persist() {
            self.tables.insert(name.to_string(), old);
            return Err(e);
        }
        Ok(meta)
    }

    /// The table that has the index `name`.
    pub fn index_owner(&self, name: &str) -> Option<Arc<TableMeta>> {
        self.tables
            .values()
            .find(|t| t.indexes.iter().any(|i| i.name == name))
            .cloned()
    }

    /// Replaces table `name`'s index list, durably.
    pub fn set_indexes(&mut self, name: &str, indexes: Vec<IndexMeta>) -> Result<Arc<TableMeta>> {
        let old = self.get(name).ok_or_else(|| Error::undefined_table(name))?;
        let meta = Arc::new(TableMeta {
            indexes,
            ..old.as_ref().clone()
        });
        self.tables.insert(name.to_string(), meta.clone());
        if let Err(e) = self.persist() {
            self.tables.insert(name.to_string(), old);
            return Err(e);
        }
        Ok(meta)
    }

    /// Table `temp` takes the place of table `name` (which goes), with
    /// `name`, `indexes` and `defaults`, in one durable write.
    pub fn replace(
        &mut self,
        name: &str,
        temp: &str,
        indexes: Vec<IndexMeta>,
        defaults: Vec<ColumnDefault>,
    ) -> Result<(Arc<TableMeta>, Arc<TableMeta>)> {
        let old = self.get(name).ok_or_else(|| Error::undefined_table(name))?;
        let tmp = self.get(temp).ok_or_else(|| Error::undefined_table(temp))?;
        let meta = Arc::new(TableMeta {
            name: name.to_string(),
            indexes,
            defaults,
            ..tmp.as_ref().clone()
        });
        self.tables.remove(temp);
        self.tables.insert(name.to_string(), meta.clone());
        if let Err(e) = self.persist() {
            self.tables.insert(name.to_string(), old);
            self.tables.insert(temp.to_string(), tmp);
            return Err(e);
        }
        Ok((old, meta))
    }

    pub fn remove(&mut self, name: &str) -> Result<Arc<TableMeta>> {
        let meta = self
            .tables
            .remove(name)
            .ok_or_else(|| Error::undefined_table(name))?;
        if let Err(e) = self.persist() {
            self.tables.insert(name.to_string(), meta);
            return Err(e);
        }
        Ok(meta)
    }
}
