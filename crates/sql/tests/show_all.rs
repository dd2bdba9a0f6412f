//! `SHOW ALL`, as PostgreSQL answers it: every setting (name, setting,
//! description) in name order, with this session's values — what JDBC
//! tools read to record a run's configuration.

use ndpdb_formats::Value;
use ndpdb_host::Config;
use ndpdb_sql::{Output, Session};

fn text(v: &Value) -> String {
    v.to_pg_text().unwrap_or_else(|| "NULL".into())
}

#[test]
fn show_all_lists_every_setting_with_the_sessions_value() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        autovacuum: false,
        ..Config::default()
    };
    let db = ndpdb_embedded::open_with(dir.path(), config).unwrap();
    let mut s = Session::new(db);
    s.execute("SET ndp = off").unwrap();
    s.execute("SET statement_timeout = '3s'").unwrap();
    s.execute("SET TIME ZONE 'Europe/Berlin'").unwrap();
    let Some(Output::Rows { columns, rows }) = s.execute("SHOW ALL").unwrap().pop() else {
        panic!("SHOW ALL gives rows");
    };
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["name", "setting", "description"]);
    let shown: Vec<(String, String)> = rows.iter().map(|r| (text(&r[0]), text(&r[1]))).collect();
    let sorted = {
        let mut v = shown.clone();
        v.sort_by_key(|(n, _)| n.to_lowercase());
        v
    };
    assert_eq!(shown, sorted, "in name order");
    let value = |n: &str| {
        shown
            .iter()
            .find(|(name, _)| name == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{n} missing from SHOW ALL"))
    };
    assert_eq!(value("ndp"), "off");
    assert_eq!(value("statement_timeout"), "3s");
    assert_eq!(value("TimeZone"), "Europe/Berlin");
    assert_eq!(value("transaction_isolation"), "read committed");
    assert!(
        rows.iter().all(|r| !text(&r[2]).is_empty()),
        "every row has a description"
    );
    // Each row agrees with SHOW of that one setting.
    for (name, setting) in &shown {
        let Some(Output::Rows { rows, .. }) = s.execute(&format!("SHOW {name}")).unwrap().pop()
        else {
            panic!("SHOW {name}");
        };
        assert_eq!(&text(&rows[0][0]), setting, "SHOW {name}");
    }
}
