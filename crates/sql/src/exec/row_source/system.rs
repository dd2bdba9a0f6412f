//! The system catalog as relations, answered from ndpdb's own catalog
//! when a statement runs: the `information_schema` views tools read
//! (tables, columns, views, table_constraints, key_column_usage,
//! schemata) and the `pg_catalog` tables drivers join (pg_namespace,
//! pg_class, pg_attribute, pg_type, pg_index, pg_constraint,
//! pg_database, and the views pg_tables, pg_views and pg_indexes).
//!
//! ```text
//!  schema public (OID 2200)           tables, views: OID 16384 + id
//!  schema pg_catalog (OID 11)         a table's key index: OID 1,016,384 + 1000 × id
//!  types: PostgreSQL's OIDs (int4 23, varchar 1043, numeric 1700, …)
//! ```
//!
//! Columns and values follow PostgreSQL 15 for what ndpdb has (user
//! tables and views in `public`, primary keys, NOT NULL, defaults,
//! secondary indexes); a view is neither insertable nor updatable
//! (ndpdb does not write through views), and its definition is the
//! query text ndpdb stored, not PostgreSQL's rendering; relations list ndpdb's own tables, not the catalog's, and
//! the `pg_catalog` tables carry the columns drivers read, not all of
//! PostgreSQL's. The NOT NULL columns show as CHECK constraints in
//! `table_constraints`, as in PostgreSQL 15.

use std::sync::Arc;

use ndpdb_formats::Column;
use ndpdb_formats::{DataType, Value};
use ndpdb_host::catalog::{ColumnDefault, Identity, TableMeta, ViewMeta};
use ndpdb_host::Database;

use crate::bind::array_type::{INT2VECTOR, INT2_ARRAY, NAME_ARRAY};
use crate::output::ResultColumn;

mod columns;
mod constraints;
mod more;
mod objects;
mod types;
use columns::{attribute_row, attribute_values, column_row, column_values};
pub use constraints::{constraint_definitions, foreign_key_listing, ForeignKeyListing};
pub use more::{
    description_lines, function_oid, index_definitions, namespace_oid, quote_ident, relation_names,
    relation_oid, serial_sequence_lines, type_names, type_oid, visible_relations,
    visible_types_or_collations,
};
use types::{relation_row, type_row};

/// The schemas and their OIDs (PostgreSQL's for the system's).
const NAMESPACES: [(&str, i64); 4] = [
    ("pg_toast", 99),
    ("pg_catalog", PG_CATALOG_OID),
    ("public", PUBLIC_OID),
    ("information_schema", 13_000),
];

/// The OID of a user table (as psql's `\d` shows it too).
pub const FIRST_OID: i64 = 16_384;
const PUBLIC_OID: i64 = 2200;
const PG_CATALOG_OID: i64 = 11;
const OWNER_OID: i64 = 10;

/// A catalog relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemTable {
    Tables,
    Columns,
    Views,
    TableConstraints,
    KeyColumnUsage,
    ReferentialConstraints,
    Schemata,
    PgNamespace,
    PgClass,
    PgAttribute,
    PgType,
    PgIndex,
    PgConstraint,
    PgDatabase,
    PgTables,
    PgViews,
    PgIndexes,
    PgDescription,
    PgAttrdef,
    PgAm,
    PgSettings,
    PgSequence,
    PgOpclass,
    PgCollation,
    PgInherits,
    PgTablespace,
}

use DataType::{BigInt, Bool, Double, Int, Text};
const TEXT_ARRAY: DataType = DataType::Array(ndpdb_formats::array::ElemType::Text);

impl SystemTable {
    /// The relation `schema.name` names (no schema: `pg_catalog`'s).
    pub fn find(schema: Option<&str>, name: &str) -> Option<SystemTable> {
        use SystemTable::*;
        let info = match name {
            "tables" => Tables,
            "columns" => Columns,
            "views" => Views,
            "table_constraints" => TableConstraints,
            "key_column_usage" => KeyColumnUsage,
            "referential_constraints" => ReferentialConstraints,
            "schemata" => Schemata,
            _ => PgNamespace,
        };
        let pg = match name {
            "pg_namespace" => Some(PgNamespace),
            "pg_class" => Some(PgClass),
            "pg_attribute" => Some(PgAttribute),
            "pg_type" => Some(PgType),
            "pg_index" => Some(PgIndex),
            "pg_constraint" => Some(PgConstraint),
            "pg_database" => Some(PgDatabase),
            "pg_tables" => Some(PgTables),
            "pg_views" => Some(PgViews),
            "pg_indexes" => Some(PgIndexes),
            "pg_description" => Some(PgDescription),
            "pg_attrdef" => Some(PgAttrdef),
            "pg_am" => Some(PgAm),
            "pg_settings" => Some(PgSettings),
            "pg_sequence" => Some(PgSequence),
            "pg_opclass" => Some(PgOpclass),
            "pg_collation" => Some(PgCollation),
            "pg_inherits" => Some(PgInherits),
            "pg_tablespace" => Some(PgTablespace),
            _ => None,
        };
        match schema {
            Some("information_schema") if info != PgNamespace => Some(info),
            Some("pg_catalog") | None => pg,
            _ => None,
        }
    }

    fn column_list(self) -> &'static [(&'static str, DataType)] {
        use SystemTable::*;
        match self {
            Tables => &[
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("table_type", Text),
                ("self_referencing_column_name", Text),
                ("reference_generation", Text),
                ("user_defined_type_catalog", Text),
                ("user_defined_type_schema", Text),
                ("user_defined_type_name", Text),
                ("is_insertable_into", Text),
                ("is_typed", Text),
                ("commit_action", Text),
            ],
            Columns => &[
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("column_name", Text),
                ("ordinal_position", Int),
                ("column_default", Text),
                ("is_nullable", Text),
                ("data_type", Text),
                ("character_maximum_length", Int),
                ("character_octet_length", Int),
                ("numeric_precision", Int),
                ("numeric_precision_radix", Int),
                ("numeric_scale", Int),
                ("datetime_precision", Int),
                ("interval_type", Text),
                ("interval_precision", Int),
                ("character_set_catalog", Text),
                ("character_set_schema", Text),
                ("character_set_name", Text),
                ("collation_catalog", Text),
                ("collation_schema", Text),
                ("collation_name", Text),
                ("domain_catalog", Text),
                ("domain_schema", Text),
                ("domain_name", Text),
                ("udt_catalog", Text),
                ("udt_schema", Text),
                ("udt_name", Text),
                ("scope_catalog", Text),
                ("scope_schema", Text),
                ("scope_name", Text),
                ("maximum_cardinality", Int),
                ("dtd_identifier", Text),
                ("is_self_referencing", Text),
                ("is_identity", Text),
                ("identity_generation", Text),
                ("identity_start", Text),
                ("identity_increment", Text),
                ("identity_maximum", Text),
                ("identity_minimum", Text),
                ("identity_cycle", Text),
                ("is_generated", Text),
                ("generation_expression", Text),
                ("is_updatable", Text),
            ],
            Views => &[
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("view_definition", Text),
                ("check_option", Text),
                ("is_updatable", Text),
                ("is_insertable_into", Text),
                ("is_trigger_updatable", Text),
                ("is_trigger_deletable", Text),
                ("is_trigger_insertable_into", Text),
            ],
            TableConstraints => &[
                ("constraint_catalog", Text),
                ("constraint_schema", Text),
                ("constraint_name", Text),
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("constraint_type", Text),
                ("is_deferrable", Text),
                ("initially_deferred", Text),
                ("enforced", Text),
                ("nulls_distinct", Text),
            ],
            KeyColumnUsage => &[
                ("constraint_catalog", Text),
                ("constraint_schema", Text),
                ("constraint_name", Text),
                ("table_catalog", Text),
                ("table_schema", Text),
                ("table_name", Text),
                ("column_name", Text),
                ("ordinal_position", Int),
                ("position_in_unique_constraint", Int),
            ],
            ReferentialConstraints => &[
                ("constraint_catalog", Text),
                ("constraint_schema", Text),
                ("constraint_name", Text),
                ("unique_constraint_catalog", Text),
                ("unique_constraint_schema", Text),
                ("unique_constraint_name", Text),
                ("match_option", Text),
                ("update_rule", Text),
                ("delete_rule", Text),
            ],
            Schemata => &[
                ("catalog_name", Text),
                ("schema_name", Text),
                ("schema_owner", Text),
                ("default_character_set_catalog", Text),
                ("default_character_set_schema", Text),
                ("default_character_set_name", Text),
                ("sql_path", Text),
            ],
            PgNamespace => &[
                ("oid", BigInt),
                ("nspname", Text),
                ("nspowner", BigInt),
                ("nspacl", Text),
            ],
            PgClass => &[
                ("oid", BigInt),
                ("relname", Text),
                ("relnamespace", BigInt),
                ("reltype", BigInt),
                ("reloftype", BigInt),
                ("relowner", BigInt),
                ("relam", BigInt),
                ("relfilenode", BigInt),
                ("reltablespace", BigInt),
                ("relpages", Int),
                ("reltuples", Double),
                ("relallvisible", Int),
                ("reltoastrelid", BigInt),
                ("relhasindex", Bool),
                ("relisshared", Bool),
                ("relpersistence", Text),
                ("relkind", Text),
                ("relnatts", Int),
                ("relchecks", Int),
                ("relhasrules", Bool),
                ("relhastriggers", Bool),
                ("relhassubclass", Bool),
                ("relrowsecurity", Bool),
                ("relforcerowsecurity", Bool),
                ("relispopulated", Bool),
                ("relreplident", Text),
                ("relispartition", Bool),
                ("relrewrite", BigInt),
                ("relacl", TEXT_ARRAY),
                ("reloptions", TEXT_ARRAY),
                ("relpartbound", Text),
            ],
            PgAttribute => &[
                ("attrelid", BigInt),
                ("attname", Text),
                ("atttypid", BigInt),
                ("attlen", Int),
                ("attnum", Int),
                ("attndims", Int),
                ("atttypmod", Int),
                ("attbyval", Bool),
                ("attnotnull", Bool),
                ("atthasdef", Bool),
                ("attidentity", Text),
                ("attgenerated", Text),
                ("attisdropped", Bool),
                ("attislocal", Bool),
                ("attinhcount", Int),
                ("attcollation", BigInt),
            ],
            PgType => &[
                ("oid", BigInt),
                ("typname", Text),
                ("typnamespace", BigInt),
                ("typowner", BigInt),
                ("typlen", Int),
                ("typbyval", Bool),
                ("typtype", Text),
                ("typcategory", Text),
                ("typispreferred", Bool),
                ("typisdefined", Bool),
                ("typdelim", Text),
                ("typrelid", BigInt),
                ("typelem", BigInt),
                ("typarray", BigInt),
                ("typnotnull", Bool),
                ("typbasetype", BigInt),
                ("typtypmod", Int),
                ("typndims", Int),
                ("typcollation", BigInt),
                ("typinput", BigInt),
            ],
            PgIndex => &[
                ("indexrelid", BigInt),
                ("indrelid", BigInt),
                ("indnatts", Int),
                ("indnkeyatts", Int),
                ("indisunique", Bool),
                ("indnullsnotdistinct", Bool),
                ("indisprimary", Bool),
                ("indisexclusion", Bool),
                ("indimmediate", Bool),
                ("indisclustered", Bool),
                ("indisvalid", Bool),
                ("indisready", Bool),
                ("indislive", Bool),
                ("indkey", INT2VECTOR),
                ("indcollation", INT2VECTOR),
                ("indclass", INT2VECTOR),
                ("indoption", INT2VECTOR),
                ("indexprs", Text),
                ("indpred", Text),
            ],
            PgConstraint => &[
                ("oid", BigInt),
                ("conname", Text),
                ("connamespace", BigInt),
                ("contype", Text),
                ("condeferrable", Bool),
                ("condeferred", Bool),
                ("convalidated", Bool),
                ("conrelid", BigInt),
                ("contypid", BigInt),
                ("conindid", BigInt),
                ("conparentid", BigInt),
                ("confrelid", BigInt),
                ("conkey", INT2_ARRAY),
                ("confkey", INT2_ARRAY),
                ("confupdtype", Text),
                ("confdeltype", Text),
                ("confmatchtype", Text),
            ],
            PgDatabase => &[
                ("oid", BigInt),
                ("datname", Text),
                ("datdba", BigInt),
                ("encoding", Int),
                ("datlocprovider", Text),
                ("datistemplate", Bool),
                ("datallowconn", Bool),
                ("datconnlimit", Int),
                ("dattablespace", BigInt),
                ("datcollate", Text),
                ("datctype", Text),
                ("daticulocale", Text),
                ("datcollversion", Text),
                ("datacl", NAME_ARRAY),
            ],
            PgTables => &[
                ("schemaname", Text),
                ("tablename", Text),
                ("tableowner", Text),
                ("tablespace", Text),
                ("hasindexes", Bool),
                ("hasrules", Bool),
                ("hastriggers", Bool),
                ("rowsecurity", Bool),
            ],
            PgViews => &[
                ("schemaname", Text),
                ("viewname", Text),
                ("viewowner", Text),
                ("definition", Text),
            ],
            PgIndexes => &[
                ("schemaname", Text),
                ("tablename", Text),
                ("indexname", Text),
                ("tablespace", Text),
                ("indexdef", Text),
            ],
            PgDescription => more::column_list("pg_description"),
            PgAttrdef => more::column_list("pg_attrdef"),
            PgAm => more::column_list("pg_am"),
            PgSettings => more::column_list("pg_settings"),
            PgSequence => objects::SEQUENCE_COLUMNS,
            PgOpclass => objects::OPCLASS_COLUMNS,
            PgCollation => objects::COLLATION_COLUMNS,
            PgInherits => objects::INHERITS_COLUMNS,
            PgTablespace => objects::TABLESPACE_COLUMNS,
        }
    }

    pub fn columns(self) -> Vec<ResultColumn> {
        self.column_list()
            .iter()
            .map(|(name, ty)| ResultColumn {
                name: name.to_string(),
                ty: *ty,
            })
            .collect()
    }

    /// The rows as of now; `catalog` is the database name.
    pub fn rows(self, db: &Database, catalog: &str) -> Vec<Vec<Value>> {
        let mut tables = db.tables();
        tables.sort_by_key(|t| t.id.0);
        let mut views = db.views();
        views.sort_by_key(|v| v.id.0);
        let rows = match self {
            SystemTable::Tables => tables
                .iter()
                .map(|t| relation_row(&t.name, "BASE TABLE", catalog))
                .chain(views.iter().map(|v| relation_row(&v.name, "VIEW", catalog)))
                .collect(),
            SystemTable::Columns => tables
                .iter()
                .flat_map(|t| (0..t.schema.columns.len()).map(move |c| column_row(t, c, catalog)))
                .chain(views.iter().flat_map(|v| {
                    v.columns.iter().enumerate().map(move |(c, col)| {
                        column_values(&v.name, col, c, None, true, false, catalog)
                    })
                }))
                .collect(),
            SystemTable::Views => views
                .iter()
                .map(|v| {
                    vec![
                        t(catalog),
                        t("public"),
                        t(&v.name),
                        t(&v.sql),
                        t("NONE"),
                        t("NO"),
                        t("NO"),
                        t("NO"),
                        t("NO"),
                        t("NO"),
                    ]
                })
                .collect(),
            SystemTable::PgViews => views
                .iter()
                .map(|v| vec![t("public"), t(&v.name), t("postgres"), t(&v.sql)])
                .collect(),
            SystemTable::TableConstraints => constraint_rows(&tables, catalog),
            SystemTable::KeyColumnUsage => constraints::key_column_rows(&tables, catalog),
            SystemTable::ReferentialConstraints => constraints::referential_rows(&tables, catalog),
            SystemTable::Schemata => ["information_schema", "pg_catalog", "pg_toast", "public"]
                .iter()
                .map(|s| {
                    let owner = if *s == "public" {
                        "pg_database_owner"
                    } else {
                        "postgres"
                    };
                    vec![t(catalog), t(s), t(owner), N, N, N, N]
                })
                .collect(),
            SystemTable::PgNamespace => NAMESPACES
                .iter()
                .map(|(name, oid)| {
                    let owner = if *name == "public" { 6171 } else { OWNER_OID };
                    vec![i(*oid), t(name), i(owner), N]
                })
                .collect(),
            SystemTable::PgClass => pg_class_rows(&tables, &views, &db.sequence_names()),
            SystemTable::PgAttribute => tables
                .iter()
                .flat_map(|t| (0..t.schema.columns.len()).map(move |c| attribute_row(t, c)))
                .chain(views.iter().flat_map(|v| {
                    v.columns.iter().enumerate().map(move |(c, col)| {
                        attribute_values(FIRST_OID + v.id.0 as i64, col, c, false, None)
                    })
                }))
                .collect(),
            SystemTable::PgType => types::all_types().map(type_row).collect(),
            SystemTable::PgIndex => indexes(&tables).map(index_row).collect(),
            SystemTable::PgConstraint => constraints::pg_constraint_rows(&tables),
            SystemTable::PgDatabase => vec![vec![
                i(5),
                t(catalog),
                i(OWNER_OID),
                // UTF8, compared byte by byte: the C collation.
                Value::Int(6),
                t("c"),
                b(false),
                b(true),
                Value::Int(-1),
                i(1663),
                t("C"),
                t("C"),
                Value::Null,
                Value::Null,
                Value::Null,
            ]],
            SystemTable::PgTables => tables
                .iter()
                .map(|tb| {
                    let indexed = !tb.schema.primary_key.is_empty() || !tb.indexes.is_empty();
                    vec![
                        t("public"),
                        t(&tb.name),
                        t("postgres"),
                        N,
                        b(indexed),
                        b(false),
                        b(constraints::has_triggers(&tables, tb)),
                        b(false),
                    ]
                })
                .collect(),
            SystemTable::PgIndexes => indexes(&tables)
                .map(|ix| {
                    let names: Vec<&str> = ix
                        .columns
                        .iter()
                        .map(|&c| ix.table.schema.columns[c].name.as_str())
                        .collect();
                    let def = format!(
                        "CREATE {}INDEX {} ON public.{} USING btree ({})",
                        if ix.unique { "UNIQUE " } else { "" },
                        ix.name,
                        ix.table.name,
                        names.join(", ")
                    );
                    vec![t("public"), t(&ix.table.name), t(&ix.name), N, t(&def)]
                })
                .collect(),
            SystemTable::PgDescription => more::rows("pg_description", db, &tables),
            SystemTable::PgAttrdef => more::rows("pg_attrdef", db, &tables),
            SystemTable::PgAm => more::rows("pg_am", db, &tables),
            SystemTable::PgSettings => more::rows("pg_settings", db, &tables),
            SystemTable::PgSequence => objects::sequence_rows(db),
            SystemTable::PgOpclass => objects::opclass_rows(),
            SystemTable::PgCollation => objects::collation_rows(),
            // ndpdb has no table inheritance (INHERITS is refused).
            SystemTable::PgInherits => Vec::new(),
            SystemTable::PgTablespace => objects::tablespace_rows(),
        };
        rows
    }
}

const N: Value = Value::Null;

fn t(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn i(v: i64) -> Value {
    Value::BigInt(v)
}

fn int(v: Option<i64>) -> Value {
    v.map_or(Value::Null, |v| Value::Int(v as i32))
}

fn b(v: bool) -> Value {
    Value::Bool(v)
}

fn yes(v: bool) -> Value {
    t(if v { "YES" } else { "NO" })
}

fn table_oid(t: &TableMeta) -> i64 {
    FIRST_OID + t.id.0 as i64
}

/// The OID of a table's index: `k` 0 is the primary key's, then the
/// secondary indexes in creation order.
fn index_oid(t: &TableMeta, k: usize) -> i64 {
    FIRST_OID + 1_000_000 + 1000 * t.id.0 as i64 + k as i64
}

/// 1-based column numbers joined by `sep`.
fn attnums(columns: &[usize], sep: &str) -> String {
    columns
        .iter()
        .map(|c| (c + 1).to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

fn constraint_rows(tables: &[Arc<TableMeta>], catalog: &str) -> Vec<Vec<Value>> {
    let mut rows = constraints::table_constraint_rows(tables, catalog);
    for tb in tables {
        for (c, col) in tb.schema.columns.iter().enumerate() {
            if !col.nullable || tb.schema.primary_key.contains(&c) {
                let name = format!("{PUBLIC_OID}_{}_{}_not_null", table_oid(tb), c + 1);
                rows.push(vec![
                    t(catalog),
                    t("public"),
                    t(&name),
                    t(catalog),
                    t("public"),
                    t(&tb.name),
                    t("CHECK"),
                    t("NO"),
                    t("NO"),
                    t("YES"),
                    N,
                ]);
            }
        }
    }
    rows
}

/// An index of a table: the primary key's or a secondary one.
struct IndexView<'a> {
    table: &'a TableMeta,
    oid: i64,
    name: String,
    columns: Vec<usize>,
    unique: bool,
    primary: bool,
}

fn indexes(tables: &[Arc<TableMeta>]) -> impl Iterator<Item = IndexView<'_>> {
    tables.iter().flat_map(|tb| {
        let pk = (!tb.schema.primary_key.is_empty()).then(|| IndexView {
            table: tb,
            oid: index_oid(tb, 0),
            name: tb.pk_constraint_name(),
            columns: tb.schema.primary_key.clone(),
            unique: true,
            primary: true,
        });
        pk.into_iter()
            .chain(tb.indexes.iter().enumerate().map(move |(k, ix)| IndexView {
                table: tb,
                oid: index_oid(tb, k + 1),
                name: ix.name.clone(),
                columns: ix.columns.clone(),
                unique: ix.unique,
                primary: false,
            }))
    })
}

fn index_row(ix: IndexView<'_>) -> Vec<Value> {
    let n = Value::Int(ix.columns.len() as i32);
    let types = ix.columns.iter().map(|&c| ix.table.schema.columns[c].ty);
    let collations: Vec<String> = types
        .clone()
        .map(|ty| if ty.is_textual() { "100" } else { "0" }.to_string())
        .collect();
    let classes: Vec<String> = types
        .map(|ty| objects::default_opclass(ty).to_string())
        .collect();
    vec![
        i(ix.oid),
        i(table_oid(ix.table)),
        n.clone(),
        n,
        b(ix.unique),
        b(false),
        b(ix.primary),
        b(false),
        b(true),
        b(false),
        b(true),
        b(true),
        b(true),
        t(&attnums(&ix.columns, " ")),
        t(&collations.join(" ")),
        t(&classes.join(" ")),
        t(&vec!["0"; ix.columns.len()].join(" ")),
        N,
        N,
    ]
}

fn pg_class_row(oid: i64, name: &str, kind: &str, natts: usize, has_index: bool) -> Vec<Value> {
    vec![
        i(oid),
        t(name),
        i(PUBLIC_OID),
        i(0),
        i(0),
        i(OWNER_OID),
        i(match kind {
            "i" => 403,
            "r" => 2,
            _ => 0,
        }),
        i(oid),
        i(0),
        // A new index has its metapage and no tuples counted; a table
        // was never analyzed.
        Value::Int(if kind == "i" { 1 } else { 0 }),
        Value::Double(if kind == "i" { 0.0 } else { -1.0 }),
        Value::Int(0),
        i(0),
        b(has_index),
        b(false),
        t("p"),
        t(kind),
        Value::Int(natts as i32),
        Value::Int(0),
        b(false),
        b(false),
        b(false),
        b(false),
        b(false),
        b(true),
        t(if kind == "r" { "d" } else { "n" }),
        b(false),
        i(0),
        N,
        N,
        N,
    ]
}

fn pg_class_rows(
    tables: &[Arc<TableMeta>],
    views: &[Arc<ViewMeta>],
    sequences: &[String],
) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    for (k, name) in sequences.iter().enumerate() {
        rows.push(pg_class_row(objects::sequence_oid(k), name, "S", 3, false));
    }
    for tb in tables {
        let indexed = !tb.schema.primary_key.is_empty() || !tb.indexes.is_empty();
        let mut row = pg_class_row(
            table_oid(tb),
            &tb.name,
            "r",
            tb.schema.columns.len(),
            indexed,
        );
        row[20] = b(constraints::has_triggers(tables, tb));
        rows.push(row);
    }
    for v in views {
        let mut row = pg_class_row(
            FIRST_OID + v.id.0 as i64,
            &v.name,
            "v",
            v.columns.len(),
            false,
        );
        // A view has no storage (relfilenode 0) and its query is a rule.
        row[7] = i(0);
        row[19] = b(true);
        rows.push(row);
    }
    for ix in indexes(tables) {
        rows.push(pg_class_row(ix.oid, &ix.name, "i", ix.columns.len(), false));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations_resolve_by_schema() {
        assert_eq!(
            SystemTable::find(Some("information_schema"), "columns"),
            Some(SystemTable::Columns)
        );
        assert_eq!(
            SystemTable::find(None, "pg_class"),
            Some(SystemTable::PgClass)
        );
        assert_eq!(
            SystemTable::find(Some("pg_catalog"), "pg_index"),
            Some(SystemTable::PgIndex)
        );
        // information_schema is not on the search path.
        assert_eq!(SystemTable::find(None, "columns"), None);
        assert_eq!(
            SystemTable::find(Some("information_schema"), "pg_class"),
            None
        );
        assert_eq!(SystemTable::find(Some("public"), "pg_class"), None);
    }

    #[test]
    fn every_row_has_its_relations_columns() {
        for ty in types::all_types() {
            assert_eq!(type_row(ty).len(), SystemTable::PgType.column_list().len());
        }
        assert_eq!(
            pg_class_row(1, "x", "r", 2, true).len(),
            SystemTable::PgClass.column_list().len()
        );
    }
}
