//! The catalog: tables, their ids, schemas, column defaults and
//! secondary indexes; and views.
//!
//! Persisted as `catalog.bin` (`"NDPC" | crc32 | len u64 | payload`),
//! replaced atomically (write temporary file, fsync, rename, fsync the
//! directory) on every DDL statement. Table ids are never reused, so a
//! WAL record of a dropped table is recognised and skipped.
//!
//! ```text
//!  payload: next_id u32 | n u32 | n × (id u32 | name str | schema)
//!           then sections, each `tag u8 | m u32 | m × entry`:
//!    1 secondary indexes: table id u32 | name str | flags u8 |
//!                         k u32 | k × column u32
//!    2 column defaults:   table id u32 | column u32 | SQL text str |
//!                         identity u8 (0 none, 1 ALWAYS, 2 BY DEFAULT)
//!    3 views:             id u32 | name str | SQL text str |
//!                         k u32 | k × (column name str | type) |
//!                         d u32 | d × relation name str
//!    4 foreign keys:      table id u32 | name str | parent name str |
//!                         k u32 | k × (column str | parent column str) |
//!                         on delete u8 | on update u8 | match full u8
//!    5 comments:          relation name str | column name str ("" for
//!                         the relation itself) | text str
//! ```
//!
//! Comments (`COMMENT ON TABLE | VIEW | COLUMN`) are kept by name: a
//! table that ALTER TABLE rewrites keeps them, a dropped column or
//! relation takes its own along.
//!
//! A section without entries is not written, so catalogs of tables with
//! neither read as they were written before sections existed.
//!
//! Tables, views, indexes and sequences share one namespace, as
//! PostgreSQL's relations do. A view's id comes from the table ids (so
//! its OID in the catalog relations is unique); it owns no storage. A
//! view records the relations its query reads directly (by name: a
//! table rewritten by ALTER TABLE keeps its name, not its id); dropping
//! a relation that views depend on needs CASCADE, which drops those
//! views and the views on them in the same durable write.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::{Column, DataType, Schema, SqlState, TableId};

use crate::error::{Error, Result};
use crate::foreign_key::ForeignKeyMeta;

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
    /// FOREIGN KEY constraints this table declares, in creation order.
    pub foreign_keys: Vec<ForeignKeyMeta>,
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
const SECTION_VIEWS: u8 = 3;
const SECTION_FOREIGN_KEYS: u8 = 4;
const SECTION_COMMENTS: u8 = 5;

/// A view: the query that defines it and the columns it gives.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewMeta {
    /// Drawn from the table ids, never reused; the view owns no storage.
    pub id: TableId,
    pub name: String,
    /// The defining query's SQL text (as the SQL layer normalised it).
    pub sql: String,
    /// The view's columns (names after its column list; types as the
    /// query gave them when the view was made). Always nullable.
    pub columns: Vec<Column>,
    /// The relations (tables and views) the query reads directly.
    pub depends: Vec<String>,
}

/// What a relation is, for the messages that name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelKind {
    Table,
    View,
}

impl RelKind {
    pub fn word(self) -> &'static str {
        match self {
            RelKind::Table => "table",
            RelKind::View => "view",
        }
    }
}

/// A view that depends on a relation being dropped: the view and the
/// relation through which it depends (`view v2 depends on view v1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependent {
    pub view: String,
    pub on: String,
    pub on_kind: RelKind,
}

/// A secondary index's definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexMeta {
    pub name: String,
    /// Key columns (positions in the table's schema), in key order.
    pub columns: Vec<usize>,
    pub unique: bool,
    /// The index of a UNIQUE constraint (`UNIQUE (…)` in CREATE / ALTER
    /// TABLE) rather than of CREATE UNIQUE INDEX: the catalog shows the
    /// constraint, and the index goes only with it.
    pub constraint: bool,
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
    views: BTreeMap<String, Arc<ViewMeta>>,
    /// `(relation, column or "")` → comment.
    comments: BTreeMap<(String, String), String>,
}

const MAGIC: &[u8; 4] = b"NDPC";

impl Catalog {
    pub fn open(dir: &Path) -> Result<Catalog> {
        let path = dir.join("catalog.bin");
        let mut cat = Catalog {
            path: path.clone(),
            next_id: 1,
            tables: BTreeMap::new(),
            views: BTreeMap::new(),
            comments: BTreeMap::new(),
        };
        if path.exists() {
            let bytes = fs::read(&path)?;
            cat.decode(&bytes)
                .map_err(|e| Error::new(SqlState::DATA_CORRUPTED, format!("catalog: {e}")))?;
        }
        Ok(cat)
    }

    fn decode(&mut self, bytes: &[u8]) -> ndpdb_formats::Result<()> {
        let mut r = Reader::new(crate::storage::framed_file::payload(
            bytes, MAGIC, "catalog",
        )?);
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
                    foreign_keys: Vec::new(),
                }),
            );
        }
        while !r.is_empty() {
            let tag = r.u8()?;
            match tag {
                SECTION_INDEXES => self.decode_indexes(&mut r)?,
                SECTION_DEFAULTS => self.decode_defaults(&mut r)?,
                SECTION_VIEWS => self.decode_views(&mut r)?,
                SECTION_COMMENTS => {
                    for _ in 0..r.count(13)? {
                        let relation = r.str()?.to_string();
                        let column = r.str()?.to_string();
                        let text = r.str()?.to_string();
                        self.comments.insert((relation, column), text);
                    }
                }
                SECTION_FOREIGN_KEYS => {
                    for _ in 0..r.count(20)? {
                        let (table, fk) = ForeignKeyMeta::decode(&mut r)?;
                        Arc::make_mut(self.table_by_id(table)?)
                            .foreign_keys
                            .push(fk);
                    }
                }
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

    fn decode_views(&mut self, r: &mut Reader<'_>) -> ndpdb_formats::Result<()> {
        let m = r.count(20)?;
        for _ in 0..m {
            let id = TableId(r.u32()?);
            let name = r.str()?.to_string();
            let sql = r.str()?.to_string();
            let k = r.count(5)?;
            let mut columns = Vec::with_capacity(k);
            for _ in 0..k {
                let name = r.str()?.to_string();
                let ty = DataType::decode(r)?;
                columns.push(Column {
                    name,
                    ty,
                    nullable: true,
                });
            }
            let d = r.count(4)?;
            let depends = (0..d)
                .map(|_| r.str().map(str::to_string))
                .collect::<ndpdb_formats::Result<Vec<_>>>()?;
            if id.0 >= self.next_id || self.tables.contains_key(&name) {
                return Err(ndpdb_formats::Error::corrupted("bad view entry"));
            }
            self.views.insert(
                name.clone(),
                Arc::new(ViewMeta {
                    id,
                    name,
                    sql,
                    columns,
                    depends,
                }),
            );
        }
        Ok(())
    }

    fn decode_indexes(&mut self, r: &mut Reader<'_>) -> ndpdb_formats::Result<()> {
        {
            let m = r.count(9)?;
            for _ in 0..m {
                let table = TableId(r.u32()?);
                let name = r.str()?.to_string();
                let flags = r.u8()?;
                if flags > 3 {
                    return Err(ndpdb_formats::Error::corrupted("bad index flags"));
                }
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
                    unique: flags & 1 != 0,
                    constraint: flags & 2 != 0,
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
                p.u32(table.0)
                    .str(&i.name)
                    .u8(i.unique as u8 | (i.constraint as u8) << 1);
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
        if !self.views.is_empty() {
            p.u8(SECTION_VIEWS).u32(self.views.len() as u32);
            for v in self.views.values() {
                p.u32(v.id.0).str(&v.name).str(&v.sql);
                p.u32(v.columns.len() as u32);
                for c in &v.columns {
                    p.str(&c.name);
                    c.ty.encode(&mut p);
                }
                p.u32(v.depends.len() as u32);
                for d in &v.depends {
                    p.str(d);
                }
            }
        }
        let fks: Vec<(TableId, &ForeignKeyMeta)> = self
            .tables
            .values()
            .flat_map(|t| t.foreign_keys.iter().map(|f| (t.id, f)))
            .collect();
        if !fks.is_empty() {
            p.u8(SECTION_FOREIGN_KEYS).u32(fks.len() as u32);
            for (table, fk) in fks {
                fk.encode(table, &mut p);
            }
        }
        if !self.comments.is_empty() {
            p.u8(SECTION_COMMENTS).u32(self.comments.len() as u32);
            for ((relation, column), text) in &self.comments {
                p.str(relation).str(column).str(text);
            }
        }
        crate::storage::framed_file::write(&self.path, MAGIC, p.as_slice())
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
        indexes: Vec<IndexMeta>,
        foreign_keys: Vec<ForeignKeyMeta>,
    ) -> Result<Arc<TableMeta>> {
        if self.tables.contains_key(name) || self.views.contains_key(name) {
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
            indexes,
            defaults,
            foreign_keys,
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
            foreign_keys: old.foreign_keys.clone(),
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

    /// Replaces table `name`'s FOREIGN KEY constraints, durably.
    pub fn set_foreign_keys(
        &mut self,
        name: &str,
        foreign_keys: Vec<ForeignKeyMeta>,
    ) -> Result<Arc<TableMeta>> {
        let old = self.get(name).ok_or_else(|| Error::undefined_table(name))?;
        let meta = Arc::new(TableMeta {
            foreign_keys,
            ..old.as_ref().clone()
        });
        self.tables.insert(name.to_string(), meta.clone());
        if let Err(e) = self.persist() {
            self.tables.insert(name.to_string(), old);
            return Err(e);
        }
        Ok(meta)
    }

    /// The constraints that refer to table `parent`, with their tables:
    /// older tables first, each table's in creation order.
    pub fn referencing(&self, parent: &str) -> Vec<(Arc<TableMeta>, ForeignKeyMeta)> {
        let mut tables: Vec<&Arc<TableMeta>> = self.tables.values().collect();
        tables.sort_by_key(|t| t.id.0);
        tables
            .into_iter()
            .flat_map(|t| {
                t.foreign_keys
                    .iter()
                    .filter(|f| f.parent == parent)
                    .map(|f| (t.clone(), f.clone()))
            })
            .collect()
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
        // Constraints keep their columns by name: those whose columns
        // are all still there stay.
        let foreign_keys = old
            .foreign_keys
            .iter()
            .filter(|f| {
                f.columns
                    .iter()
                    .all(|c| tmp.schema.columns.iter().any(|t| &t.name == c))
            })
            .cloned()
            .collect();
        let meta = Arc::new(TableMeta {
            name: name.to_string(),
            indexes,
            defaults,
            foreign_keys,
            ..tmp.as_ref().clone()
        });
        self.tables.remove(temp);
        self.tables.insert(name.to_string(), meta.clone());
        let comments = self.comments.clone();
        self.comments.retain(|(relation, column), _| {
            relation != name
                || column.is_empty()
                || meta.schema.columns.iter().any(|c| &c.name == column)
        });
        if let Err(e) = self.persist() {
            self.tables.insert(name.to_string(), old);
            self.tables.insert(temp.to_string(), tmp);
            self.comments = comments;
            return Err(e);
        }
        Ok((old, meta))
    }

    pub fn view(&self, name: &str) -> Option<Arc<ViewMeta>> {
        self.views.get(name).cloned()
    }

    /// Every view, by name.
    pub fn views(&self) -> Vec<Arc<ViewMeta>> {
        self.views.values().cloned().collect()
    }

    /// The kind of relation `name` is, if it is a table or a view.
    pub fn kind_of(&self, name: &str) -> Option<RelKind> {
        if self.tables.contains_key(name) {
            Some(RelKind::Table)
        } else if self.views.contains_key(name) {
            Some(RelKind::View)
        } else {
            None
        }
    }

    /// `CREATE [OR REPLACE] VIEW`, durably. A replaced view keeps its id.
    /// A definition that would read the view itself (through the views
    /// it reads) is refused: 42P17, the error PostgreSQL gives when such
    /// a view is read.
    pub fn create_view(
        &mut self,
        name: &str,
        sql: String,
        columns: Vec<Column>,
        depends: Vec<String>,
        replace: bool,
    ) -> Result<Arc<ViewMeta>> {
        let exists = || {
            Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            )
        };
        if self.tables.contains_key(name) || self.index_owner(name).is_some() {
            return Err(exists());
        }
        let old = self.views.get(name).cloned();
        if old.is_some() && !replace {
            return Err(exists());
        }
        if depends.iter().any(|d| self.reads(d, name)) {
            return Err(Error::new(
                SqlState::INVALID_OBJECT_DEFINITION,
                format!("infinite recursion detected in rules for relation \"{name}\""),
            ));
        }
        let id = match &old {
            Some(v) => v.id,
            None => {
                self.next_id += 1;
                TableId(self.next_id - 1)
            }
        };
        let meta = Arc::new(ViewMeta {
            id,
            name: name.to_string(),
            sql,
            columns,
            depends,
        });
        self.views.insert(name.to_string(), meta.clone());
        if let Err(e) = self.persist() {
            match old {
                Some(v) => self.views.insert(name.to_string(), v),
                None => self.views.remove(name),
            };
            return Err(e);
        }
        Ok(meta)
    }

    /// Whether relation `from` is `target` or reads it through views.
    fn reads(&self, from: &str, target: &str) -> bool {
        let mut stack = vec![from.to_string()];
        let mut seen = std::collections::HashSet::new();
        while let Some(n) = stack.pop() {
            if n == target {
                return true;
            }
            if !seen.insert(n.clone()) {
                continue;
            }
            if let Some(v) = self.views.get(&n) {
                stack.extend(v.depends.iter().cloned());
            }
        }
        false
    }

    /// The views that depend on relations `names`, directly or through
    /// other views, leaving out those `names` lists: depth first, older
    /// views first (the order PostgreSQL reports them in), each with the
    /// relation it depends on.
    pub fn dependents(&self, names: &[String]) -> Vec<Dependent> {
        let mut seen: std::collections::HashSet<String> = names.iter().cloned().collect();
        let mut out = Vec::new();
        for n in names {
            self.collect_dependents(n, &mut seen, &mut out);
        }
        out
    }

    fn collect_dependents(
        &self,
        name: &str,
        seen: &mut std::collections::HashSet<String>,
        out: &mut Vec<Dependent>,
    ) {
        let on_kind = self.kind_of(name).unwrap_or(RelKind::Table);
        let mut direct: Vec<&Arc<ViewMeta>> = self
            .views
            .values()
            .filter(|v| v.depends.iter().any(|d| d == name))
            .collect();
        direct.sort_by_key(|v| v.id.0);
        for v in direct {
            if !seen.insert(v.name.clone()) {
                continue;
            }
            out.push(Dependent {
                view: v.name.clone(),
                on: name.to_string(),
                on_kind,
            });
            self.collect_dependents(&v.name, seen, out);
        }
    }

    /// Drops the tables and views `names` in one durable write, with the
    /// views and foreign keys that depend on them if `cascade` (else 2BP01
    /// when there are such, naming the first relation that has some).
    /// Returns the tables dropped and the other objects that went
    /// (`view v`, `constraint f on table t`).
    pub fn drop_relations(
        &mut self,
        names: &[String],
        cascade: bool,
    ) -> Result<(Vec<Arc<TableMeta>>, Vec<String>)> {
        for n in names {
            if self.kind_of(n).is_none() {
                return Err(Error::undefined_table(n));
            }
        }
        let mut views: Vec<String> = Vec::new();
        // Constraints of tables that stay, on tables that go.
        let mut cut: Vec<(String, String)> = Vec::new();
        for n in names {
            let kind = self.kind_of(n).unwrap_or(RelKind::Table);
            let deps = self.dependents(std::slice::from_ref(n));
            let outside: Vec<&Dependent> =
                deps.iter().filter(|d| !names.contains(&d.view)).collect();
            let fks: Vec<(Arc<TableMeta>, ForeignKeyMeta)> = self
                .referencing(n)
                .into_iter()
                .filter(|(t, _)| !names.contains(&t.name))
                .collect();
            if (!outside.is_empty() || !fks.is_empty()) && !cascade {
                let detail: Vec<String> = fks
                    .iter()
                    .map(|(t, f)| {
                        format!(
                            "constraint {} on table {} depends on table {n}",
                            f.name, t.name
                        )
                    })
                    .chain(outside.iter().map(|d| {
                        format!("view {} depends on {} {}", d.view, d.on_kind.word(), d.on)
                    }))
                    .collect();
                return Err(Error::new(
                    SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
                    format!(
                        "cannot drop {} {n} because other objects depend on it",
                        kind.word()
                    ),
                )
                .with_detail(detail.join("\n"))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            if kind == RelKind::View && !views.contains(n) {
                views.push(n.clone());
            }
            for d in outside {
                if !views.contains(&d.view) {
                    views.push(d.view.clone());
                }
            }
            cut.extend(fks.into_iter().map(|(t, f)| (t.name.clone(), f.name)));
        }
        let old_children: Vec<Arc<TableMeta>> = cut
            .iter()
            .filter_map(|(t, _)| self.tables.get(t).cloned())
            .collect();
        for (t, fk) in &cut {
            if let Some(meta) = self.tables.get_mut(t) {
                Arc::make_mut(meta).foreign_keys.retain(|f| &f.name != fk);
            }
        }
        let old_tables: Vec<Arc<TableMeta>> = names
            .iter()
            .filter_map(|n| self.tables.get(n).cloned())
            .collect();
        let old_views: Vec<Arc<ViewMeta>> = views
            .iter()
            .filter_map(|n| self.views.get(n).cloned())
            .collect();
        for t in &old_tables {
            self.tables.remove(&t.name);
        }
        for v in &old_views {
            self.views.remove(&v.name);
        }
        let comments = self.comments.clone();
        self.comments.retain(|(relation, _), _| {
            self.tables.contains_key(relation) || self.views.contains_key(relation)
        });
        if let Err(e) = self.persist() {
            self.comments = comments;
            for t in old_tables.iter().chain(&old_children) {
                self.tables.insert(t.name.clone(), t.clone());
            }
            for v in old_views {
                self.views.insert(v.name.clone(), v);
            }
            return Err(e);
        }
        // What went besides the relations named, as PostgreSQL's
        // `drop cascades to …` notices list it.
        let mut others: Vec<String> = views
            .iter()
            .filter(|v| !names.contains(v))
            .map(|v| format!("view {v}"))
            .collect();
        others.extend(
            cut.iter()
                .map(|(t, f)| format!("constraint {f} on table {t}")),
        );
        Ok((old_tables, others))
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

    /// Sets (or with `None` removes) the comment of relation `relation`
    /// or of its column `column`, durably.
    pub fn set_comment(
        &mut self,
        relation: &str,
        column: Option<&str>,
        text: Option<String>,
    ) -> Result<()> {
        if self.kind_of(relation).is_none() {
            return Err(Error::undefined_table(relation));
        }
        let key = (relation.to_string(), column.unwrap_or("").to_string());
        let old = match text {
            Some(t) => self.comments.insert(key.clone(), t),
            None => self.comments.remove(&key),
        };
        if let Err(e) = self.persist() {
            match old {
                Some(o) => self.comments.insert(key, o),
                None => self.comments.remove(&key),
            };
            return Err(e);
        }
        Ok(())
    }

    /// Every comment: `(relation, column or "", text)`.
    pub fn comments(&self) -> Vec<(String, String, String)> {
        self.comments
            .iter()
            .map(|((r, c), t)| (r.clone(), c.clone(), t.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, ty: DataType) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable: true,
        }
    }

    #[test]
    fn views_round_trip_and_report_their_dependents() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut c = Catalog::open(dir.path()).unwrap();
            let schema = Schema::new(vec![col("a", DataType::Int)], Vec::new());
            c.create("t", schema, Vec::new(), Vec::new(), Vec::new())
                .unwrap();
            let v = |c: &mut Catalog, name: &str, on: &str| {
                c.create_view(
                    name,
                    format!("SELECT a FROM {on}"),
                    vec![col("a", DataType::Int)],
                    vec![on.into()],
                    false,
                )
                .unwrap()
            };
            v(&mut c, "v1", "t");
            v(&mut c, "v2", "v1");
            v(&mut c, "v3", "t");
            // A view that would read itself is refused.
            let e = c
                .create_view(
                    "v1",
                    "SELECT a FROM v2".into(),
                    Vec::new(),
                    vec!["v2".into()],
                    true,
                )
                .unwrap_err();
            assert_eq!(e.code, SqlState::INVALID_OBJECT_DEFINITION);
            // Names are shared with tables.
            let e = c
                .create(
                    "v2",
                    Schema::new(vec![col("a", DataType::Int)], Vec::new()),
                    Vec::new(),
                    Vec::new(),
                    Vec::new(),
                )
                .unwrap_err();
            assert_eq!(e.code, SqlState::DUPLICATE_TABLE);
        }
        let mut c = Catalog::open(dir.path()).unwrap();
        let v2 = c.view("v2").unwrap();
        assert_eq!(v2.sql, "SELECT a FROM v1");
        assert_eq!(v2.columns, vec![col("a", DataType::Int)]);
        assert_eq!(v2.depends, vec!["v1".to_string()]);
        assert!(v2.id.0 > c.get("t").unwrap().id.0);
        let deps: Vec<String> = c
            .dependents(&["t".into()])
            .iter()
            .map(|d| format!("{} on {} {}", d.view, d.on_kind.word(), d.on))
            .collect();
        assert_eq!(deps, ["v1 on table t", "v2 on view v1", "v3 on table t"]);
        let e = c.drop_relations(&["v1".into()], false).unwrap_err();
        assert_eq!(e.code, SqlState::DEPENDENT_OBJECTS_STILL_EXIST);
        assert_eq!(
            e.message,
            "cannot drop view v1 because other objects depend on it"
        );
        // Dropped together, nothing else depends on them.
        c.drop_relations(&["v2".into(), "v1".into()], false)
            .unwrap();
        let (tables, others) = c.drop_relations(&["t".into()], true).unwrap();
        assert_eq!(tables.len(), 1);
        assert_eq!(others, vec!["view v3".to_string()]);
        drop(c);
        let c = Catalog::open(dir.path()).unwrap();
        assert!(c.views().is_empty() && c.tables().is_empty());
    }
}
