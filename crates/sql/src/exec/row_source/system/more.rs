//! The catalog relations and lookups JDBC's `DatabaseMetaData` reads
//! beyond psql's: `pg_description` (empty: ndpdb keeps no comments),
//! `pg_attrdef` (column defaults), `pg_am` (access methods),
//! `pg_settings` (the server's settings at their defaults), and the
//! name → OID lookups behind `'name'::regclass` / `::regproc` /
//! `::regtype` / `::regnamespace` and the index definitions
//! `pg_get_indexdef` reads.
//!
//! ```text
//!  pg_attrdef   oid 4,016,384 + 1000 × table + column   adbin: the default as shown
//!  pg_am        heap 2, btree 403, hash 405              (PostgreSQL's OIDs)
//!  regclass     user tables, indexes, sequences; catalog relations (pg_class 1259, …)
//! ```

use std::sync::Arc;

use ndpdb_formats::{DataType, Value};
use ndpdb_host::catalog::{Identity, TableMeta};
use ndpdb_host::Database;

use super::columns::shown_default;
use super::types::{all_types, ARRAY_TYPES, TYPES};
use super::{b, i, indexes, t, table_oid, FIRST_OID, N};
use ndpdb_formats::catalog_funcs::lookup_line;
use DataType::{BigInt, Bool, Int, Text};

/// The columns of the relations of this module.
pub(super) fn column_list(name: &str) -> &'static [(&'static str, DataType)] {
    match name {
        "pg_description" => &[
            ("objoid", BigInt),
            ("classoid", BigInt),
            ("objsubid", Int),
            ("description", Text),
        ],
        "pg_attrdef" => &[
            ("oid", BigInt),
            ("adrelid", BigInt),
            ("adnum", Int),
            ("adbin", Text),
        ],
        "pg_am" => &[
            ("oid", BigInt),
            ("amname", Text),
            ("amhandler", BigInt),
            ("amtype", Text),
        ],
        _ => &[
            ("name", Text),
            ("setting", Text),
            ("unit", Text),
            ("category", Text),
            ("short_desc", Text),
            ("extra_desc", Text),
            ("context", Text),
            ("vartype", Text),
            ("source", Text),
            ("min_val", Text),
            ("max_val", Text),
            ("enumvals", Text),
            ("boot_val", Text),
            ("reset_val", Text),
            ("sourcefile", Text),
            ("sourceline", Int),
            ("pending_restart", Bool),
        ],
    }
}

/// The rows of relation `name` (one of [`column_list`]'s).
pub(super) fn rows(name: &str, db: &Database, tables: &[Arc<TableMeta>]) -> Vec<Vec<Value>> {
    match name {
        "pg_description" => descriptions(db, tables)
            .into_iter()
            .map(|(oid, sub, text)| vec![i(oid), i(1259), Value::Int(sub), t(&text)])
            .collect(),
        "pg_attrdef" => tables
            .iter()
            .flat_map(|tb| {
                tb.defaults
                    .iter()
                    .filter(|d| d.identity == Identity::None)
                    .map(move |d| {
                        let ty = tb.schema.columns[d.column].ty;
                        vec![
                            i(FIRST_OID + 4_000_000 + 1000 * tb.id.0 as i64 + d.column as i64),
                            i(table_oid(tb)),
                            Value::Int(d.column as i32 + 1),
                            t(&shown_default(&d.expr, ty)),
                        ]
                    })
            })
            .collect(),
        "pg_am" => [
            (2, "heap", 3, "t"),
            (403, "btree", 330, "i"),
            (405, "hash", 331, "i"),
        ]
        .iter()
        .map(|(oid, name, handler, kind)| vec![i(*oid), t(name), i(*handler), t(kind)])
        .collect(),
        _ => settings(db),
    }
}

/// The comments as `(relation OID, column number or 0, text)`.
pub(super) fn descriptions(db: &Database, tables: &[Arc<TableMeta>]) -> Vec<(i64, i32, String)> {
    let views = db.views();
    db.comments()
        .into_iter()
        .filter_map(|(relation, column, text)| {
            let (oid, columns): (i64, Vec<String>) =
                match tables.iter().find(|t| t.name == relation) {
                    Some(tb) => (
                        table_oid(tb),
                        tb.schema.columns.iter().map(|c| c.name.clone()).collect(),
                    ),
                    None => {
                        let v = views.iter().find(|v| v.name == relation)?;
                        (
                            FIRST_OID + v.id.0 as i64,
                            v.columns.iter().map(|c| c.name.clone()).collect(),
                        )
                    }
                };
            let sub = if column.is_empty() {
                0
            } else {
                columns.iter().position(|c| *c == column)? as i32 + 1
            };
            Some((oid, sub, text))
        })
        .collect()
}

/// What `pg_get_serial_sequence(table, column)` reads: lines `table \t
/// column \t sequence` (the sequence qualified, empty when none feeds
/// the column), each table under its name and under its OID.
pub fn serial_sequence_lines(db: &Database) -> String {
    let mut out = String::new();
    for tb in db.tables() {
        for (k, c) in tb.schema.columns.iter().enumerate() {
            let seq = tb
                .default_of(k)
                .and_then(|d| {
                    let rest = d.expr.split("nextval('").nth(1)?;
                    Some(rest.split('\'').next()?.to_string())
                })
                .map_or(String::new(), |s| format!("public.{}", quote_ident(&s)));
            for key in [tb.name.clone(), table_oid(&tb).to_string()] {
                out.push_str(&format!("{key}\t{}\t{seq}\n", c.name));
            }
        }
    }
    out
}

/// What `obj_description(oid)` and `col_description(oid, n)` answer, as
/// pg_get_indexdef's lines `oid \t column \t text`.
pub fn description_lines(db: &Database) -> String {
    let mut tables = db.tables();
    tables.sort_by_key(|t| t.id.0);
    descriptions(db, &tables)
        .into_iter()
        .map(|(oid, sub, text)| lookup_line(oid, sub as i64, &text))
        .collect()
}

/// `(name, setting, unit, category, description, context, vartype)`.
type Setting = (
    &'static str,
    String,
    Option<&'static str>,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

fn settings(db: &Database) -> Vec<Vec<Value>> {
    let ms =
        |d: Option<std::time::Duration>| d.map_or("0".to_string(), |d| d.as_millis().to_string());
    let config = db.config();
    let conn = "Client Connection Defaults / Statement Behavior";
    const NDP: &str = "Near-Data Processing";
    let list: Vec<Setting> = vec![
        (
            "application_name",
            String::new(),
            None,
            "Reporting and Logging / What to Log",
            "Sets the application name to be reported in statistics and logs.",
            "user",
            "string",
        ),
        (
            "client_encoding",
            "UTF8".into(),
            None,
            "Client Connection Defaults / Locale and Formatting",
            "Sets the client's character set encoding.",
            "user",
            "string",
        ),
        (
            "DateStyle",
            "ISO, MDY".into(),
            None,
            "Client Connection Defaults / Locale and Formatting",
            "Sets the display format for date and time values.",
            "user",
            "string",
        ),
        (
            "deadlock_timeout",
            ms(Some(config.deadlock_timeout)),
            Some("ms"),
            "Lock Management",
            "Sets the time to wait on a lock before checking for deadlock.",
            "superuser",
            "integer",
        ),
        (
            "default_table_access_method",
            "heap".into(),
            None,
            conn,
            "Sets the default table access method for new tables.",
            "user",
            "string",
        ),
        (
            "default_transaction_isolation",
            "read committed".into(),
            None,
            conn,
            "Sets the transaction isolation level of each new transaction.",
            "user",
            "enum",
        ),
        (
            "default_transaction_read_only",
            "off".into(),
            None,
            conn,
            "Sets the default read-only status of new transactions.",
            "user",
            "bool",
        ),
        (
            "extra_float_digits",
            "1".into(),
            None,
            "Client Connection Defaults / Locale and Formatting",
            "Sets the number of digits displayed for floating-point values.",
            "user",
            "integer",
        ),
        (
            "integer_datetimes",
            "on".into(),
            None,
            "Preset Options",
            "Shows whether datetimes are integer based.",
            "internal",
            "bool",
        ),
        (
            "lock_timeout",
            ms(config.lock_timeout),
            Some("ms"),
            conn,
            "Sets the maximum allowed duration of any wait for a lock.",
            "user",
            "integer",
        ),
        (
            "max_identifier_length",
            "63".into(),
            None,
            "Preset Options",
            "Shows the maximum identifier length.",
            "internal",
            "integer",
        ),
        (
            "max_index_keys",
            "32".into(),
            None,
            "Preset Options",
            "Shows the maximum number of index keys.",
            "internal",
            "integer",
        ),
        (
            "search_path",
            "\"$user\", public".into(),
            None,
            conn,
            "Sets the schema search order for names that are not schema-qualified.",
            "user",
            "string",
        ),
        (
            "server_encoding",
            "UTF8".into(),
            None,
            "Preset Options",
            "Shows the server (database) character set encoding.",
            "internal",
            "string",
        ),
        (
            "server_version",
            "15.0 (ndpdb 0.1.0)".into(),
            None,
            "Preset Options",
            "Shows the server version.",
            "internal",
            "string",
        ),
        (
            "server_version_num",
            "150000".into(),
            None,
            "Preset Options",
            "Shows the server version as an integer.",
            "internal",
            "integer",
        ),
        (
            "standard_conforming_strings",
            "on".into(),
            None,
            "Version and Platform Compatibility / Previous PostgreSQL Versions",
            "Causes '...' strings to treat backslashes literally.",
            "user",
            "bool",
        ),
        (
            "statement_timeout",
            "0".into(),
            Some("ms"),
            conn,
            "Sets the maximum allowed duration of any statement.",
            "user",
            "integer",
        ),
        (
            "TimeZone",
            "UTC".into(),
            None,
            "Client Connection Defaults / Locale and Formatting",
            "Sets the time zone for displaying and interpreting time stamps.",
            "user",
            "string",
        ),
        (
            "transaction_isolation",
            "read committed".into(),
            None,
            conn,
            "Sets the current transaction's isolation level.",
            "user",
            "enum",
        ),
        (
            "transaction_read_only",
            "off".into(),
            None,
            conn,
            "Sets the current transaction's read-only status.",
            "user",
            "bool",
        ),
        (
            "vacuum_cost_delay",
            "0".into(),
            Some("ms"),
            "Resource Usage / Cost-Based Vacuum Delay",
            "Vacuum cost delay in milliseconds.",
            "user",
            "real",
        ),
        (
            "vacuum_cost_limit",
            "200".into(),
            None,
            "Resource Usage / Cost-Based Vacuum Delay",
            "Vacuum cost amount available before napping.",
            "user",
            "integer",
        ),
        (
            "host_workers",
            ndpdb_host::storage::page_scan::DEFAULT_HOST_WORKERS.to_string(),
            None,
            NDP,
            "Threads of a scan that runs on the host.",
            "user",
            "integer",
        ),
        (
            "ndp",
            "auto".into(),
            None,
            NDP,
            "Where scans and bulk updates run: on the device (on), on the host (off), or as the cost model decides (auto).",
            "user",
            "enum",
        ),
        (
            "ndp_lock_violation",
            "off".into(),
            None,
            NDP,
            "Lets host transactions take the locks of a committing NDP transaction, with a commit dependency.",
            "user",
            "bool",
        ),
        (
            "ndp_logging",
            "basic".into(),
            None,
            NDP,
            "What an NDP update logs: off, basic (maps at commit), or extended (its pages, for media recovery).",
            "user",
            "enum",
        ),
        (
            "ndp_pes",
            "0".into(),
            None,
            NDP,
            "Processing elements an NDP call uses (0: all of the device's).",
            "user",
            "integer",
        ),
        (
            "ndp_preload",
            "on".into(),
            None,
            NDP,
            "Whether an NDP call preloads the pages of the table into the device's memory.",
            "user",
            "bool",
        ),
    ];
    list.into_iter()
        .map(|(name, setting, unit, category, desc, context, vartype)| {
            vec![
                t(name),
                t(&setting),
                unit.map_or(N, t),
                t(category),
                t(desc),
                N,
                t(context),
                t(vartype),
                t(if context == "internal" {
                    "override"
                } else {
                    "default"
                }),
                N,
                N,
                N,
                t(&setting),
                t(&setting),
                N,
                N,
                b(false),
            ]
        })
        .collect()
}

/// PostgreSQL's OIDs of its catalog relations.
const CATALOG_RELATIONS: [(&str, i64); 16] = [
    ("pg_type", 1247),
    ("pg_attribute", 1249),
    ("pg_proc", 1255),
    ("pg_class", 1259),
    ("pg_database", 1262),
    ("pg_tablespace", 1213),
    ("pg_am", 2601),
    ("pg_attrdef", 2604),
    ("pg_constraint", 2606),
    ("pg_description", 2609),
    ("pg_index", 2610),
    ("pg_inherits", 2611),
    ("pg_namespace", 2615),
    ("pg_settings", 12_000),
    ("pg_tables", 12_001),
    ("pg_indexes", 12_002),
];

/// An identifier of a `'name'::regclass`-style literal, as PostgreSQL
/// reads it: the last part of a dotted name (with its schema), folded to
/// lower case unless double-quoted.
fn split_name(name: &str) -> (Option<String>, String) {
    ndpdb_formats::catalog_funcs::split_qualified(name)
}

/// The OID `'name'::regclass` names, if any.
pub fn relation_oid(db: &Database, name: &str) -> Option<i64> {
    let (schema, rel) = split_name(name);
    let catalog = CATALOG_RELATIONS
        .iter()
        .find(|(n, _)| *n == rel)
        .map(|(_, oid)| *oid);
    match schema.as_deref() {
        Some("pg_catalog") => return catalog,
        Some("public") | None => {}
        Some(_) => return None,
    }
    if schema.is_none() && catalog.is_some() {
        return catalog;
    }
    let mut tables = db.tables();
    tables.sort_by_key(|t| t.id.0);
    if let Some(tb) = tables.iter().find(|tb| tb.name == rel) {
        return Some(table_oid(tb));
    }
    if let Some(ix) = indexes(&tables).find(|ix| ix.name == rel) {
        return Some(ix.oid);
    }
    db.sequence_names()
        .iter()
        .position(|s| *s == rel)
        .map(super::objects::sequence_oid)
}

/// PostgreSQL's OIDs of the functions `'name'::regproc` may name: the
/// input functions of the types in `pg_type` and `array_in`.
const FUNCTIONS: [(&str, i64); 13] = [
    ("int4in", 42),
    ("textin", 46),
    ("int8in", 460),
    ("float8in", 214),
    ("array_in", 750),
    ("bpcharin", 1044),
    ("varcharin", 1046),
    ("date_in", 1084),
    ("boolin", 1242),
    ("byteain", 1244),
    ("timestamp_in", 1312),
    ("numeric_in", 1701),
    ("record_in", 2290),
];

/// The OID of function `name` (`'pg_catalog.array_in'::regproc`).
pub fn function_oid(name: &str) -> Option<i64> {
    let (schema, f) = split_name(name);
    if !matches!(schema.as_deref(), None | Some("pg_catalog")) {
        return None;
    }
    FUNCTIONS.iter().find(|(n, _)| *n == f).map(|(_, oid)| *oid)
}

/// The input function's OID of a type in `pg_type`.
pub(super) fn type_input(type_name: &str) -> i64 {
    let f = match type_name {
        "bool" => "boolin",
        "bytea" => "byteain",
        "int8" => "int8in",
        "int4" => "int4in",
        "float8" => "float8in",
        "bpchar" => "bpcharin",
        "varchar" => "varcharin",
        "date" => "date_in",
        "timestamp" => "timestamp_in",
        "numeric" => "numeric_in",
        n if n.starts_with('_') => "array_in",
        _ => "textin",
    };
    function_oid(f).unwrap_or(0)
}

/// The OID of type `name` (`'int4'::regtype`; SQL names too).
pub fn type_oid(name: &str) -> Option<i64> {
    let (schema, ty) = split_name(name);
    if !matches!(schema.as_deref(), None | Some("pg_catalog")) {
        return None;
    }
    if let Some(elem) = ty.strip_suffix("[]") {
        let k = TYPES.iter().position(|t| Some(t.oid) == type_oid(elem))?;
        return Some(ARRAY_TYPES[k].oid);
    }
    all_types()
        .find(|t| t.name == ty || (t.sql == ty && t.category != "A"))
        .map(|t| t.oid)
        .or(match ty.as_str() {
            "int" => Some(23),
            "varchar" => Some(1043),
            _ => None,
        })
}

/// The relations `to_regclass(text)` may name, as `schema \t name \t
/// oid` lines in search-path order: the catalog's first (pg_catalog is
/// searched before public), then tables, indexes and sequences.
pub fn relation_names(db: &Database) -> String {
    let mut out = String::new();
    for (name, oid) in CATALOG_RELATIONS {
        out.push_str(&format!("pg_catalog\t{name}\t{oid}\n"));
    }
    let mut tables = db.tables();
    tables.sort_by_key(|t| t.id.0);
    for tb in &tables {
        out.push_str(&format!("public\t{}\t{}\n", tb.name, table_oid(tb)));
    }
    for ix in indexes(&tables) {
        out.push_str(&format!("public\t{}\t{}\n", ix.name, ix.oid));
    }
    let mut views = db.views();
    views.sort_by_key(|v| v.id.0);
    for v in &views {
        out.push_str(&format!(
            "public\t{}\t{}\n",
            v.name,
            FIRST_OID + v.id.0 as i64
        ));
    }
    for (k, s) in db.sequence_names().iter().enumerate() {
        out.push_str(&format!(
            "public\t{s}\t{}\n",
            super::objects::sequence_oid(k)
        ));
    }
    out
}

/// The types `to_regtype(text)` may name, as `pg_catalog \t name \t
/// oid` lines (each under its catalog name and its SQL name).
pub fn type_names() -> String {
    let mut out = String::new();
    for (t, a) in TYPES.iter().zip(&ARRAY_TYPES) {
        out.push_str(&format!("pg_catalog\t{}\t{}\n", t.name, t.oid));
        out.push_str(&format!("pg_catalog\t{}\t{}\n", t.sql, t.oid));
        out.push_str(&format!("pg_catalog\t{}\t{}\n", a.name, a.oid));
        out.push_str(&format!("pg_catalog\t{}[]\t{}\n", t.sql, a.oid));
    }
    for (alias, oid) in [("int", 23), ("varchar", 1043)] {
        out.push_str(&format!("pg_catalog\t{alias}\t{oid}\n"));
    }
    out
}

/// `pg_table_is_visible(oid)`'s table, as `pg_get_indexdef`'s lines
/// (`oid \t 0 \t t`): every relation of pg_catalog and public, the
/// schemas of the search path (information_schema's views are not on it).
pub fn visible_relations(db: &Database) -> String {
    relation_names(db)
        .lines()
        .filter_map(|l| l.rsplit('\t').next())
        .map(|oid| format!("{oid}\t0\tt\n"))
        .collect()
}

/// `pg_type_is_visible(oid)` / `pg_collation_is_visible(oid)`'s table:
/// every type and collation ndpdb lists lives in pg_catalog, which is on
/// every search path.
pub fn visible_types_or_collations(collations: bool) -> String {
    let oids: Vec<i64> = if collations {
        super::objects::collation_rows()
            .iter()
            .filter_map(|r| r.first().and_then(Value::as_i64))
            .collect()
    } else {
        super::types::all_types().map(|t| t.oid).collect()
    };
    oids.iter().map(|oid| format!("{oid}\t0\tt\n")).collect()
}

/// The OID of schema `name` (`'public'::regnamespace`).
pub fn namespace_oid(name: &str) -> Option<i64> {
    let (_, n) = split_name(name);
    super::NAMESPACES
        .iter()
        .find(|(s, _)| *s == n)
        .map(|(_, oid)| *oid)
}

/// What `pg_get_indexdef(oid, column, _)` answers, as lines
/// `oid \t column \t text`: column 0 is the `CREATE INDEX` statement,
/// 1… the indexed columns' names.
pub fn index_definitions(db: &Database) -> String {
    let mut tables = db.tables();
    tables.sort_by_key(|t| t.id.0);
    let mut out = String::new();
    for ix in indexes(&tables) {
        let names: Vec<String> = ix
            .columns
            .iter()
            .map(|&c| quote_ident(&ix.table.schema.columns[c].name))
            .collect();
        let create = format!(
            "CREATE {}INDEX {} ON public.{} USING btree ({})",
            if ix.unique { "UNIQUE " } else { "" },
            quote_ident(&ix.name),
            quote_ident(&ix.table.name),
            names.join(", ")
        );
        out.push_str(&lookup_line(ix.oid, 0, &create));
        for (k, name) in names.iter().enumerate() {
            out.push_str(&lookup_line(ix.oid, k as i64 + 1, name));
        }
    }
    out
}

/// An identifier as PostgreSQL prints it: quoted unless plain lower case.
pub fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_like_identifiers() {
        assert_eq!(
            split_name("pg_catalog.array_in"),
            (Some("pg_catalog".into()), "array_in".into())
        );
        assert_eq!(split_name("\"MixedCase\""), (None, "MixedCase".into()));
        assert_eq!(split_name("PG_CLASS"), (None, "pg_class".into()));
        assert_eq!(function_oid("pg_catalog.array_in"), Some(750));
        assert_eq!(type_oid("integer"), Some(23));
    }
}
