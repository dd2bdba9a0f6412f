//! The catalog questions psql asks (DESIGN.md §11) that ndpdb's SQL
//! cannot answer yet: `\d NAME` describes one relation (columns, types,
//! NOT NULL, the primary key; `\d+ VIEW` adds the view's definition).
//! Those queries are recognised by what they select and answered here;
//! every other catalog query — the listings `\dt`, `\di`, `\dv`, `\dn`,
//! `\l` among them — goes to the engine, which answers the `pg_catalog`
//! and `information_schema` relations from its catalog
//! (`ndpdb_sql::row_source::system`).
//!
//! ```text
//!  \d NAME        ─► 1. SELECT c.oid, n.nspname, c.relname … '^(NAME)$'
//!                 ◄─ oid (16384 + table or view id) | public | NAME
//!                 ─► 2. SELECT c.relchecks, c.relkind, … WHERE c.oid = 'OID'
//!                    3. … FROM pg_catalog.pg_attribute a WHERE a.attrelid = 'OID'
//!                    4. … pg_catalog.pg_index i … (the primary key, indexes)
//!                    4a, 4b. foreign keys of the table and referring to it
//!                       (asked when relhastriggers is true)
//!                    5–9. policies, statistics, publications, inheritance:
//!                       no rows
//!  \d+ VIEW          3 with storage and description, then
//!                    pg_get_viewdef(OID) ◄─ the stored query; pg_rewrite: no rows
//! ```
//!
//! psql writes name patterns as anchored regular expressions in which `*`
//! became `.*` and `?` became `.`; those two and literal characters are
//! what the matcher here understands.

use ndpdb_formats::{DataType, Value};
use ndpdb_host::catalog::Identity;
use ndpdb_host::{Database, TableMeta, ViewMeta};
use ndpdb_sql::row_source::system::foreign_key_listing;
use ndpdb_sql::{Error, Output, ResultColumn};

/// Answers a psql catalog query, or `None` if `sql` does not read
/// `pg_catalog`.
pub fn answer(db: &Database, sql: &str) -> Option<Result<Output, Error>> {
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("pg_catalog.") {
        return None;
    }
    // Listings (`\dt`, `\di`, `\dv`, `\ds`, `\dn`, `\l`) go to the
    // engine, which has the catalog's relations and the functions and
    // operators psql's queries use (sql/src/exec/row_source/system.rs).
    describe(db, sql, &lower).map(Ok)
}

/// The OID a table shows in the catalog.
const FIRST_OID: u32 = 16_384;

fn text_columns(names: &[&str]) -> Vec<ResultColumn> {
    names
        .iter()
        .map(|n| ResultColumn {
            name: n.to_string(),
            ty: DataType::Text,
        })
        .collect()
}

/// A default as PostgreSQL's `pg_get_expr` shows it: a string literal
/// carries its cast (`'x'::text`, `'2024-01-02'::date`).
fn shown_default(expr: &str, ty: DataType) -> String {
    let literal = expr.len() >= 2
        && expr.starts_with('\'')
        && expr.ends_with('\'')
        && !expr[1..expr.len() - 1].replace("''", "").contains('\'');
    if !literal {
        return expr.to_string();
    }
    let cast = match ty {
        DataType::Text => "text".to_string(),
        DataType::Varchar(_) => "character varying".into(),
        DataType::Char(_) => "bpchar".into(),
        DataType::Date => "date".into(),
        DataType::Timestamp => "timestamp without time zone".into(),
        DataType::Bytea => "bytea".into(),
        DataType::Bool => "boolean".into(),
        _ => return expr.to_string(),
    };
    format!("{expr}::{cast}")
}

fn text_row(cells: &[&str]) -> Vec<Value> {
    cells.iter().map(|c| Value::Text(c.to_string())).collect()
}

/// The oid a `… = 'OID'` condition after `marker` gives.
fn oid_after(sql: &str, marker: &str) -> Option<u32> {
    let at = sql.find(marker)? + marker.len();
    let digits: String = sql[at..]
        .trim_start_matches([' ', '\''])
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The table a `… = 'OID'` condition names.
fn table_by_oid(db: &Database, sql: &str, marker: &str) -> Option<std::sync::Arc<TableMeta>> {
    let oid = oid_after(sql, marker)?;
    db.tables().into_iter().find(|t| FIRST_OID + t.id.0 == oid)
}

/// The view a `… = 'OID'` condition names.
fn view_by_oid(db: &Database, sql: &str, marker: &str) -> Option<std::sync::Arc<ViewMeta>> {
    let oid = oid_after(sql, marker)?;
    db.views().into_iter().find(|v| FIRST_OID + v.id.0 == oid)
}

/// The comment on column `n` (1-based) of relation `oid` (`\d+`'s
/// Description), from the lines `col_description` reads.
fn column_comment(db: &Database, oid: i64, n: usize) -> Value {
    let lines = ndpdb_sql::row_source::system::description_lines(db);
    let prefix = format!("{oid}\t{n}\t");
    lines
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(Value::Null, |text| {
            let mut out = String::new();
            let mut chars = text.chars();
            while let Some(c) = chars.next() {
                match (c, c == '\\') {
                    (_, true) => match chars.next() {
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some(other) => out.push(other),
                        None => {}
                    },
                    (c, false) => out.push(c),
                }
            }
            Value::Text(out)
        })
}

/// PostgreSQL's storage strategy of a type (`\d+`'s Storage column).
fn storage(ty: DataType) -> &'static str {
    match ty {
        DataType::Text
        | DataType::Varchar(_)
        | DataType::Char(_)
        | DataType::Bytea
        | DataType::Array(_)
        | DataType::Json
        | DataType::Jsonb => "x",
        DataType::Numeric { .. } => "m",
        _ => "p",
    }
}

/// psql's `\d NAME` queries (PostgreSQL 15's psql), or `None`.
fn describe(db: &Database, sql: &str, lower: &str) -> Option<Output> {
    let rows = |columns: &[&str], rows: Vec<Vec<Value>>| Output::Rows {
        columns: text_columns(columns),
        rows,
    };
    // 1. Which relation the name means.
    if lower.contains("select c.oid,")
        && lower.contains("from pg_catalog.pg_class c")
        && lower.contains("c.relname operator(pg_catalog.~)")
    {
        let pattern = name_pattern(sql);
        let mut found: Vec<(String, u32)> = db
            .tables()
            .into_iter()
            .map(|t| (t.name.clone(), t.id.0))
            .chain(db.views().into_iter().map(|v| (v.name.clone(), v.id.0)))
            .filter(|(name, _)| {
                pattern
                    .as_deref()
                    .is_none_or(|p| matches(p.as_bytes(), name.as_bytes()))
            })
            .collect();
        found.sort();
        let found = found
            .iter()
            .map(|(name, id)| text_row(&[&(FIRST_OID + id).to_string(), "public", name]))
            .collect();
        return Some(rows(&["oid", "nspname", "relname"], found));
    }
    // 2. The relation's kind and flags.
    if lower.contains("select c.relchecks, c.relkind") {
        let t = table_by_oid(db, sql, "WHERE c.oid =");
        let mut found: Vec<Vec<Value>> = t
            .map(|t| {
                // A table in a foreign key has PostgreSQL's RI triggers:
                // psql then asks for the constraints (queries 4a, 4b).
                let fks = foreign_key_listing(db);
                let triggers = fks.iter().any(|f| f.table == t.name || f.parent == t.name);
                let triggers = if triggers { "t" } else { "f" };
                vec![text_row(&[
                    "0", "r", "t", "f", triggers, "f", "f", "f", "f", "", "0", "", "p", "d", "heap",
                ])]
            })
            .unwrap_or_default();
        if view_by_oid(db, sql, "WHERE c.oid =").is_some() {
            // A view: its query is a rule, it has no access method.
            let mut row = text_row(&[
                "0", "v", "f", "t", "f", "f", "f", "f", "f", "", "0", "", "p", "n",
            ]);
            row.push(Value::Null);
            found.push(row);
        }
        return Some(rows(
            &[
                "relchecks",
                "relkind",
                "relhasindex",
                "relhasrules",
                "relhastriggers",
                "relrowsecurity",
                "relforcerowsecurity",
                "relhasoids",
                "relispartition",
                "reloptions",
                "reltablespace",
                "reloftype",
                "relpersistence",
                "relreplident",
                "amname",
            ],
            found,
        ));
    }
    // 3. Columns.
    if lower.contains("select a.attname,")
        && lower.contains("from pg_catalog.pg_attribute a")
        && lower.contains("from pg_catalog.pg_attrdef d")
        && lower.contains("a.attrelid =")
    {
        // `\d+` adds storage, then (for tables) compression and the
        // statistics target, then the description — as psql 15 asks.
        let verbose = lower.contains("a.attstorage");
        let compression = lower.contains("attcompression");
        let stattarget = lower.contains("attstattarget");
        let mut names = vec![
            "attname",
            "format_type",
            "default",
            "attnotnull",
            "attcollation",
            "attidentity",
            "attgenerated",
        ];
        if verbose {
            names.push("attstorage");
            if compression {
                names.push("attcompression");
            }
            if stattarget {
                names.push("attstattarget");
            }
            names.push("col_description");
        }
        let extra = |row: &mut Vec<Value>, ty: DataType, comment: Value| {
            if verbose {
                row.push(Value::Text(storage(ty).into()));
                if compression {
                    // No compression method set: the default.
                    row.push(Value::Text(String::new()));
                }
                if stattarget {
                    row.push(Value::Null);
                }
                row.push(comment);
            }
        };
        if let Some(v) = view_by_oid(db, sql, "a.attrelid =") {
            let found = v
                .columns
                .iter()
                .map(|c| {
                    let mut row = text_row(&[&c.name, &c.ty.sql_name()]);
                    row.extend([Value::Null, Value::Text("f".into()), Value::Null]);
                    row.extend([Value::Text(String::new()), Value::Text(String::new())]);
                    extra(&mut row, c.ty, Value::Null);
                    row
                })
                .collect();
            return Some(rows(&names, found));
        }
        let t = table_by_oid(db, sql, "a.attrelid =");
        let found = t
            .map(|t| {
                t.schema
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let mut row = text_row(&[&c.name, &c.ty.sql_name()]);
                        // An identity column shows its kind, not its nextval.
                        let (default, identity) = match t.default_of(i) {
                            Some(d) => match d.identity {
                                Identity::None => (Value::Text(shown_default(&d.expr, c.ty)), ""),
                                Identity::Always => (Value::Null, "a"),
                                Identity::ByDefault => (Value::Null, "d"),
                            },
                            None => (Value::Null, ""),
                        };
                        row.push(default);
                        row.push(Value::Text(if c.nullable { "f" } else { "t" }.into()));
                        row.push(Value::Null);
                        row.push(Value::Text(identity.into()));
                        row.push(Value::Text(String::new()));
                        let comment = if verbose {
                            column_comment(db, i64::from(FIRST_OID + t.id.0), i + 1)
                        } else {
                            Value::Null
                        };
                        extra(&mut row, c.ty, comment);
                        row
                    })
                    .collect()
            })
            .unwrap_or_default();
        return Some(rows(&names, found));
    }
    // \d+ VIEW: the definition (the query text ndpdb stored).
    if lower.contains("pg_catalog.pg_get_viewdef(") {
        let found = view_by_oid(db, sql, "pg_get_viewdef(")
            .map(|v| vec![text_row(&[&format!(" {};", v.sql)])])
            .unwrap_or_default();
        return Some(rows(&["pg_get_viewdef"], found));
    }
    // 4. Indexes: the primary key (a hash index from key to VID), then
    // the secondary (B-tree) indexes by name, as psql orders them.
    if lower.contains("pg_catalog.pg_index i") && lower.contains("where c.oid =") {
        let t = table_by_oid(db, sql, "WHERE c.oid =");
        let mut secondary: Vec<Vec<Value>> = t
            .iter()
            .flat_map(|t| {
                t.indexes.iter().map(|i| {
                    let cols: Vec<&str> = i
                        .columns
                        .iter()
                        .map(|&c| t.schema.columns[c].name.as_str())
                        .collect();
                    // The index of a UNIQUE constraint shows as the
                    // constraint ("UNIQUE CONSTRAINT, btree (…)").
                    let (condef, contype, deferrable) = if i.constraint {
                        (
                            Value::Text(format!("UNIQUE ({})", cols.join(", "))),
                            Value::Text("u".into()),
                            Value::Text("f".into()),
                        )
                    } else {
                        (Value::Null, Value::Null, Value::Null)
                    };
                    let def = format!(
                        "CREATE {}INDEX {} ON public.{} USING btree ({})",
                        if i.unique { "UNIQUE " } else { "" },
                        i.name,
                        t.name,
                        cols.join(", ")
                    );
                    let text = |s: &str| Value::Text(s.to_string());
                    vec![
                        text(&i.name),
                        text("f"),
                        text(if i.unique { "t" } else { "f" }),
                        text("f"),
                        text("t"),
                        text(&def),
                        condef,
                        contype,
                        deferrable.clone(),
                        deferrable,
                        text("f"),
                        text("0"),
                    ]
                })
            })
            .collect();
        secondary.sort_by(|a, b| a[0].sort_cmp(&b[0]));
        let found = t
            .filter(|t| !t.schema.primary_key.is_empty())
            .map(|t| {
                let key: Vec<&str> = t
                    .schema
                    .primary_key
                    .iter()
                    .map(|i| t.schema.columns[*i].name.as_str())
                    .collect();
                let key = key.join(", ");
                let name = t.pk_constraint_name();
                vec![text_row(&[
                    &name,
                    "t",
                    "t",
                    "f",
                    "t",
                    &format!(
                        "CREATE UNIQUE INDEX {name} ON public.{} USING hash ({key})",
                        t.name
                    ),
                    &format!("PRIMARY KEY ({key})"),
                    "p",
                    "f",
                    "f",
                    "f",
                    "0",
                ])]
            })
            .unwrap_or_default()
            .into_iter()
            .chain(secondary)
            .collect();
        return Some(rows(
            &[
                "relname",
                "indisprimary",
                "indisunique",
                "indisclustered",
                "indisvalid",
                "pg_get_indexdef",
                "pg_get_constraintdef",
                "contype",
                "condeferrable",
                "condeferred",
                "indisreplident",
                "reltablespace",
            ],
            found,
        ));
    }
    // 4a. The table's foreign keys (`Foreign-key constraints:`).
    if lower.contains("from pg_catalog.pg_constraint r") && lower.contains("r.contype = 'f'") {
        let t = table_by_oid(db, sql, "r.conrelid =");
        let mut found: Vec<(String, Vec<Value>)> = t
            .iter()
            .flat_map(|t| {
                foreign_key_listing(db)
                    .into_iter()
                    .filter(|f| f.table == t.name)
                    .map(|f| {
                        let row = text_row(&["t", &f.name, &f.definition, &f.table]);
                        (f.name, row)
                    })
            })
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        return Some(rows(
            &["sametable", "conname", "condef", "ontable"],
            found.into_iter().map(|(_, r)| r).collect(),
        ));
    }
    // 4b. The foreign keys that refer to the table (`Referenced by:`).
    if lower.contains("from pg_catalog.pg_constraint c") && lower.contains("confrelid in (") {
        let t = table_by_oid(db, sql, "pg_partition_ancestors(");
        let mut found: Vec<(String, Vec<Value>)> = t
            .iter()
            .flat_map(|t| {
                foreign_key_listing(db)
                    .into_iter()
                    .filter(|f| f.parent == t.name)
                    .map(|f| {
                        let row = text_row(&[&f.name, &f.table, &f.definition]);
                        (f.name, row)
                    })
            })
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        return Some(rows(
            &["conname", "ontable", "condef"],
            found.into_iter().map(|(_, r)| r).collect(),
        ));
    }
    // pgbench's partitioning question about pgbench_accounts: the
    // table's position in the search path, its partition strategy and
    // its partition count — none and 0, ndpdb partitions no table.
    if lower.contains("pg_catalog.pg_partitioned_table") && lower.contains("c.relname = '") {
        let name: String = sql[lower.find("c.relname = '")? + "c.relname = '".len()..]
            .chars()
            .take_while(|c| *c != '\'')
            .collect();
        let found = db.tables().into_iter().any(|t| t.name == name);
        let columns = vec![
            ResultColumn {
                name: "n".into(),
                ty: DataType::Int,
            },
            ResultColumn {
                name: "partstrat".into(),
                ty: DataType::Char(1),
            },
            ResultColumn {
                name: "count".into(),
                ty: DataType::BigInt,
            },
        ];
        let rows = if found {
            vec![vec![Value::Int(1), Value::Null, Value::BigInt(0)]]
        } else {
            Vec::new()
        };
        return Some(Output::Rows { columns, rows });
    }
    // 5–9. Row security, extended statistics, publications, inheritance.
    for (what, columns) in [
        ("pg_catalog.pg_policy", 6),
        ("pg_catalog.pg_statistic_ext", 9),
        ("pg_catalog.pg_publication", 3),
        ("pg_catalog.pg_inherits", 4),
        ("pg_catalog.pg_rewrite", 2),
        // No user triggers (foreign keys are not triggers here).
        ("pg_catalog.pg_trigger", 5),
    ] {
        if lower.contains(what) {
            let names: Vec<String> = (1..=columns).map(|i| format!("column{i}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            return Some(rows(&names, Vec::new()));
        }
    }
    None
}

/// The `'^(…)$'` pattern psql adds for `\dt pattern`.
fn name_pattern(sql: &str) -> Option<String> {
    let at = sql.find("c.relname OPERATOR(pg_catalog.~) '^(")?;
    let rest = &sql[at + "c.relname OPERATOR(pg_catalog.~) '^(".len()..];
    let end = rest.find(")$'")?;
    Some(rest[..end].to_string())
}

/// Matches psql's anchored pattern: `.*`, `.`, `\x` and literal bytes.
fn matches(p: &[u8], s: &[u8]) -> bool {
    match p {
        [] => s.is_empty(),
        [b'.', b'*', rest @ ..] => (0..=s.len()).any(|i| matches(rest, &s[i..])),
        [b'.', rest @ ..] => !s.is_empty() && matches(rest, &s[1..]),
        [b'\\', c, rest @ ..] => s.first() == Some(c) && matches(rest, &s[1..]),
        [c, rest @ ..] => s.first() == Some(c) && matches(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psql_patterns_match_like_psql_means_them() {
        assert!(matches(b"ord.*", b"orders"));
        assert!(matches(b"ord.*", b"ord"));
        assert!(!matches(b"ord.*", b"xorders"));
        assert!(matches(b"t.", b"t1"));
        assert!(!matches(b"t.", b"t"));
        assert!(matches(b"a\\.b", b"a.b"));
        assert_eq!(
            name_pattern("AND c.relname OPERATOR(pg_catalog.~) '^(ord.*)$' COLLATE"),
            Some("ord.*".into())
        );
    }
}
