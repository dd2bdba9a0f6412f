//! Every input a fuzz target once failed on (regressions/) passes now.

use ndpdb_fuzz::runner::{read_inputs, run_caught, Target};
use ndpdb_fuzz::sql::{replay_statements, statements_of};
use ndpdb_fuzz::{regressions, SqlTarget, WireTarget};

fn replay_all<T: Target>(mut target: T, name: &str) {
    let inputs = read_inputs(&[regressions(name)]);
    assert!(!inputs.is_empty(), "no regression inputs for {name}");
    for (i, input) in inputs.iter().enumerate() {
        if let Err(e) = run_caught(&mut target, input) {
            panic!("{name} regression input {i} fails again: {e}");
        }
    }
    assert_eq!(ndpdb_server::panics(), 0);
}

#[test]
fn wire_regressions_pass() {
    replay_all(WireTarget::new(), "wire");
}

#[test]
fn sql_regressions_pass() {
    replay_all(SqlTarget::new(), "sql");
}

/// Failures that needed earlier statements: their shrunk histories.
#[test]
fn sql_statement_regressions_pass() {
    let mut files: Vec<_> = std::fs::read_dir(regressions("sql"))
        .expect("regressions/sql")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no statement histories in regressions/sql"
    );
    for f in files {
        let text = std::fs::read_to_string(&f).expect("a statement history");
        if let Err(e) = replay_statements(&statements_of(&text)) {
            panic!("{} fails again: {e}", f.display());
        }
    }
}
