//! Statements nested as deep as the limits admit run, and fail, on the
//! small stacks of an embedding program's threads: parsing, planning,
//! running and dropping them never overflow the caller's stack.

use ndpdb_formats::{SqlState, Value};
use ndpdb_sql::{Output, Session};

/// Runs `f` on a thread with a 1 MiB stack (Rust's default is 2 MiB).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn deep_statements_run_and_fail_on_a_small_stack() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let answers = on_small_stack(move || {
        let mut s = Session::new(db);
        let deep = format!("SELECT {}-7{}", "abs(".repeat(4_000), ")".repeat(4_000));
        let prepared = s.prepare(&deep).map(|_| ());
        let too_deep = format!("SELECT {}1{}", "abs(".repeat(6_000), ")".repeat(6_000));
        let unclosed = format!("SELECT {}1{}", "abs(".repeat(9_990), ")".repeat(4_995));
        (
            s.execute(&deep).map(|mut o| o.pop()),
            prepared,
            s.execute(&too_deep).map(|_| ()).map_err(|e| e.code),
            s.execute(&unclosed).map(|_| ()).map_err(|e| e.code),
        )
    });
    match answers.0 {
        Ok(Some(Output::Rows { rows, .. })) => assert_eq!(rows, vec![vec![Value::Int(7)]]),
        other => panic!("{other:?}"),
    }
    assert!(answers.1.is_ok());
    assert_eq!(answers.2, Err(SqlState::STATEMENT_TOO_COMPLEX));
    assert_eq!(answers.3, Err(SqlState::SYNTAX_ERROR));
}

#[test]
fn nested_subqueries_run_and_far_too_deep_ones_are_refused_before_they_are_copied() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open(dir.path()).unwrap();
    let codes = on_small_stack(move || {
        let mut s = Session::new(db);
        [400, 2_045].map(|n| {
            let sql = format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n));
            match s.execute(&sql) {
                Ok(mut o) => match o.pop() {
                    Some(Output::Rows { rows, .. }) => Ok(rows),
                    other => panic!("{other:?}"),
                },
                Err(e) => Err(e.code),
            }
        })
    });
    // 400 nested scalar subqueries plan and run; far too deep ones are 54001.
    assert_eq!(codes[0], Ok(vec![vec![Value::Int(1)]]));
    assert_eq!(codes[1], Err(SqlState::STATEMENT_TOO_COMPLEX));
}
