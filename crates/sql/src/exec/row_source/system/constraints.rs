//! The constraints of the catalog relations: every table's primary key,
//! its UNIQUE constraints (the indexes made for `UNIQUE (…)`, not those
//! of CREATE UNIQUE INDEX) and its FOREIGN KEYs, as `pg_constraint`,
//! `information_schema.table_constraints`, `key_column_usage` and
//! `referential_constraints` list them and `pg_get_constraintdef`
//! prints them.
//!
//! ```text
//!  primary key of table id      OID 2,016,384 + id
//!  UNIQUE of index k (1…)       OID 5,016,384 + 1000 × id + k
//!  FOREIGN KEY k (0…)           OID 6,016,384 + 1000 × id + k
//!  a foreign key's conindid:    the referenced table's key or UNIQUE index
//! ```

use std::sync::Arc;

use ndpdb_formats::catalog_funcs::lookup_line;
use ndpdb_formats::Value;
use ndpdb_host::catalog::TableMeta;
use ndpdb_host::foreign_key::{positions, referenced_index, ForeignKeyMeta};
use ndpdb_host::Database;

use super::more::quote_ident;
use super::{attnums, b, i, index_oid, t, table_oid, FIRST_OID, N, PUBLIC_OID};

/// What kind of constraint, with what only that kind has.
pub(super) enum Kind<'a> {
    PrimaryKey,
    Unique,
    ForeignKey {
        fk: &'a ForeignKeyMeta,
        parent: &'a TableMeta,
        /// Positions of the referenced columns in the parent.
        parent_columns: Vec<usize>,
        /// Name of the parent's key or UNIQUE constraint the key matches.
        unique_name: String,
        /// Its column positions, in its own order.
        unique_columns: Vec<usize>,
    },
}

/// One constraint of one table.
pub(super) struct Constraint<'a> {
    pub oid: i64,
    pub name: String,
    pub table: &'a TableMeta,
    pub columns: Vec<usize>,
    /// pg_constraint.conindid: the key's own index, or the parent's.
    pub index_oid: i64,
    pub kind: Kind<'a>,
}

impl Constraint<'_> {
    /// `p`, `u` or `f`.
    pub fn contype(&self) -> &'static str {
        match self.kind {
            Kind::PrimaryKey => "p",
            Kind::Unique => "u",
            Kind::ForeignKey { .. } => "f",
        }
    }

    /// information_schema's constraint_type.
    pub fn sql_type(&self) -> &'static str {
        match self.kind {
            Kind::PrimaryKey => "PRIMARY KEY",
            Kind::Unique => "UNIQUE",
            Kind::ForeignKey { .. } => "FOREIGN KEY",
        }
    }

    fn column_list(table: &TableMeta, columns: &[usize]) -> String {
        columns
            .iter()
            .map(|&c| quote_ident(&table.schema.columns[c].name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `pg_get_constraintdef(oid)`.
    pub fn definition(&self) -> String {
        let cols = Self::column_list(self.table, &self.columns);
        match &self.kind {
            Kind::PrimaryKey => format!("PRIMARY KEY ({cols})"),
            Kind::Unique => format!("UNIQUE ({cols})"),
            Kind::ForeignKey {
                fk,
                parent,
                parent_columns,
                ..
            } => {
                let mut s = format!(
                    "FOREIGN KEY ({cols}) REFERENCES {}({})",
                    quote_ident(&parent.name),
                    Self::column_list(parent, parent_columns)
                );
                if fk.match_full {
                    s.push_str(" MATCH FULL");
                }
                for (word, action) in [("UPDATE", fk.on_update), ("DELETE", fk.on_delete)] {
                    if action != ndpdb_host::foreign_key::FkAction::NoAction {
                        s.push_str(&format!(" ON {word} {}", action.sql()));
                    }
                }
                s
            }
        }
    }
}

/// Every constraint of `tables` (sorted by id), table by table: the
/// primary key, the UNIQUE constraints, the foreign keys.
pub(super) fn constraints(tables: &[Arc<TableMeta>]) -> Vec<Constraint<'_>> {
    let mut out = Vec::new();
    for tb in tables {
        let id = tb.id.0 as i64;
        if !tb.schema.primary_key.is_empty() {
            out.push(Constraint {
                oid: FIRST_OID + 2_000_000 + id,
                name: tb.pk_constraint_name(),
                table: tb,
                columns: tb.schema.primary_key.clone(),
                index_oid: index_oid(tb, 0),
                kind: Kind::PrimaryKey,
            });
        }
        for (k, ix) in tb.indexes.iter().enumerate() {
            if ix.constraint {
                out.push(Constraint {
                    oid: FIRST_OID + 5_000_000 + 1000 * id + k as i64 + 1,
                    name: ix.name.clone(),
                    table: tb,
                    columns: ix.columns.clone(),
                    index_oid: index_oid(tb, k + 1),
                    kind: Kind::Unique,
                });
            }
        }
        for (k, fk) in tb.foreign_keys.iter().enumerate() {
            let Some(parent) = tables.iter().find(|p| p.name == fk.parent) else {
                continue;
            };
            let (Some(columns), Some(parent_columns)) = (
                positions(tb, &fk.columns),
                positions(parent, &fk.parent_columns),
            ) else {
                continue;
            };
            let Some(unique_name) = referenced_index(parent, &fk.parent_columns) else {
                continue;
            };
            let (index_k, unique_columns) = if unique_name == parent.pk_constraint_name() {
                (0, parent.schema.primary_key.clone())
            } else {
                match parent.indexes.iter().position(|i| i.name == unique_name) {
                    Some(p) => (p + 1, parent.indexes[p].columns.clone()),
                    None => continue,
                }
            };
            out.push(Constraint {
                oid: FIRST_OID + 6_000_000 + 1000 * id + k as i64,
                name: fk.name.clone(),
                table: tb,
                columns,
                index_oid: index_oid(parent, index_k),
                kind: Kind::ForeignKey {
                    fk,
                    parent,
                    parent_columns,
                    unique_name,
                    unique_columns,
                },
            });
        }
    }
    out
}

/// Whether `table` takes part in a foreign key, on either side
/// (PostgreSQL's RI triggers set `relhastriggers`).
pub(super) fn has_triggers(tables: &[Arc<TableMeta>], table: &TableMeta) -> bool {
    !table.foreign_keys.is_empty()
        || tables
            .iter()
            .any(|o| o.foreign_keys.iter().any(|f| f.parent == table.name))
}

/// `pg_constraint` rows of the keys (NOT NULL is no constraint there in
/// PostgreSQL 15).
pub(super) fn pg_constraint_rows(tables: &[Arc<TableMeta>]) -> Vec<Vec<Value>> {
    constraints(tables)
        .iter()
        .map(|c| {
            let (confrelid, confkey, upd, del, matching) = match &c.kind {
                Kind::ForeignKey {
                    fk,
                    parent,
                    parent_columns,
                    ..
                } => (
                    i(table_oid(parent)),
                    t(&format!("{{{}}}", attnums(parent_columns, ","))),
                    t(&fk.on_update.pg_char().to_string()),
                    t(&fk.on_delete.pg_char().to_string()),
                    t(if fk.match_full { "f" } else { "s" }),
                ),
                _ => (i(0), N, t(" "), t(" "), t(" ")),
            };
            vec![
                i(c.oid),
                t(&c.name),
                i(PUBLIC_OID),
                t(c.contype()),
                b(false),
                b(false),
                b(true),
                i(table_oid(c.table)),
                i(0),
                i(c.index_oid),
                i(0),
                confrelid,
                t(&format!("{{{}}}", attnums(&c.columns, ","))),
                confkey,
                upd,
                del,
                matching,
            ]
        })
        .collect()
}

/// `information_schema.table_constraints` rows of the keys.
pub(super) fn table_constraint_rows(tables: &[Arc<TableMeta>], catalog: &str) -> Vec<Vec<Value>> {
    constraints(tables)
        .iter()
        .map(|c| {
            vec![
                t(catalog),
                t("public"),
                t(&c.name),
                t(catalog),
                t("public"),
                t(&c.table.name),
                t(c.sql_type()),
                t("NO"),
                t("NO"),
                t("YES"),
                match c.kind {
                    Kind::Unique => t("YES"),
                    _ => N,
                },
            ]
        })
        .collect()
}

/// `information_schema.key_column_usage`: each key's columns; a foreign
/// key's also name their position in the key they reference.
pub(super) fn key_column_rows(tables: &[Arc<TableMeta>], catalog: &str) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    for c in constraints(tables) {
        for (k, &col) in c.columns.iter().enumerate() {
            let in_unique = match &c.kind {
                Kind::ForeignKey {
                    parent_columns,
                    unique_columns,
                    ..
                } => unique_columns
                    .iter()
                    .position(|u| *u == parent_columns[k])
                    .map_or(N, |p| Value::Int(p as i32 + 1)),
                _ => N,
            };
            rows.push(vec![
                t(catalog),
                t("public"),
                t(&c.name),
                t(catalog),
                t("public"),
                t(&c.table.name),
                t(&c.table.schema.columns[col].name),
                Value::Int(k as i32 + 1),
                in_unique,
            ]);
        }
    }
    rows
}

/// `information_schema.referential_constraints`.
pub(super) fn referential_rows(tables: &[Arc<TableMeta>], catalog: &str) -> Vec<Vec<Value>> {
    constraints(tables)
        .iter()
        .filter_map(|c| match &c.kind {
            Kind::ForeignKey {
                fk, unique_name, ..
            } => Some(vec![
                t(catalog),
                t("public"),
                t(&c.name),
                t(catalog),
                t("public"),
                t(unique_name),
                t(if fk.match_full { "FULL" } else { "NONE" }),
                t(fk.on_update.sql()),
                t(fk.on_delete.sql()),
            ]),
            _ => None,
        })
        .collect()
}

/// What `pg_get_constraintdef(oid)` answers, as lines `oid \t 0 \t text`
/// (the form `pg_get_indexdef`'s table has).
pub fn constraint_definitions(db: &Database) -> String {
    let mut tables = db.tables();
    tables.sort_by_key(|t| t.id.0);
    constraints(&tables)
        .iter()
        .map(|c| lookup_line(c.oid, 0, &c.definition()))
        .collect()
}

/// A foreign key as psql's `\d` lists it, on both of its tables.
pub struct ForeignKeyListing {
    pub table: String,
    pub name: String,
    pub parent: String,
    /// `pg_get_constraintdef`'s text.
    pub definition: String,
}

/// Every foreign key, in table order.
pub fn foreign_key_listing(db: &Database) -> Vec<ForeignKeyListing> {
    let mut tables = db.tables();
    tables.sort_by_key(|t| t.id.0);
    constraints(&tables)
        .iter()
        .filter_map(|c| match &c.kind {
            Kind::ForeignKey { parent, .. } => Some(ForeignKeyListing {
                table: c.table.name.clone(),
                name: c.name.clone(),
                parent: parent.name.clone(),
                definition: c.definition(),
            }),
            _ => None,
        })
        .collect()
}
