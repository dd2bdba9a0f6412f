//! The catalog questions psql asks (DESIGN.md §11): `\dt` and `\d` without
//! a name list the tables. ndpdb has no `pg_catalog` schema; any other
//! query on it gets a clear 0A000 instead of a confusing parse error.
//!
//! ```text
//!  \dt [pattern]  ─► SELECT n.nspname as "Schema", c.relname as "Name", …
//!                    FROM pg_catalog.pg_class c … WHERE c.relkind IN ('r',…)
//!                    [AND c.relname OPERATOR(pg_catalog.~) '^(pattern)$']
//!                 ◄─ Schema | Name | Type | Owner, one row per table
//! ```
//!
//! psql writes name patterns as anchored regular expressions in which `*`
//! became `.*` and `?` became `.`; those two and literal characters are
//! what the matcher here understands.

use ndpdb_formats::{DataType, SqlState, Value};
use ndpdb_host::Database;
use ndpdb_sql::{Error, Output, ResultColumn};

/// Answers a psql catalog query, or `None` if `sql` does not read
/// `pg_catalog`.
pub fn answer(db: &Database, sql: &str) -> Option<Result<Output, Error>> {
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("pg_catalog.") {
        return None;
    }
    let lists_relations = lower.contains("from pg_catalog.pg_class c")
        && lower.contains("as \"schema\"")
        && lower.contains("as \"name\"")
        && lower.contains("c.relkind in (");
    if !lists_relations {
        return Some(Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "this catalog query is not supported: ndpdb answers psql's \\dt and \\d (table list); \
             use SHOW TABLES and SELECT … LIMIT 0 to inspect a table",
        )));
    }
    let kinds = lower
        .split_once("c.relkind in (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map_or("", |(list, _)| list);
    if !kinds.contains("'r'") {
        // \dv, \di, \ds …: ndpdb has tables only.
        return Some(Ok(relation_rows(Vec::new())));
    }
    let pattern = name_pattern(sql);
    let mut names: Vec<String> = db
        .tables()
        .into_iter()
        .map(|t| t.name.clone())
        .filter(|n| {
            pattern
                .as_deref()
                .is_none_or(|p| matches(p.as_bytes(), n.as_bytes()))
        })
        .collect();
    names.sort();
    Some(Ok(relation_rows(names)))
}

fn relation_rows(names: Vec<String>) -> Output {
    let text = |name: &str| ResultColumn {
        name: name.into(),
        ty: DataType::Text,
    };
    Output::Rows {
        columns: vec![text("Schema"), text("Name"), text("Type"), text("Owner")],
        rows: names
            .into_iter()
            .map(|n| {
                vec![
                    Value::Text("public".into()),
                    Value::Text(n),
                    Value::Text("table".into()),
                    Value::Text("ndpdb".into()),
                ]
            })
            .collect(),
    }
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
