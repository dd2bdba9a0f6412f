//! Golden plans: where each statement runs, recorded. Every script under
//! `tests/golden/` is a goldenscript (the format of toydb's tests, in the
//! spirit of RisingLight's planner tests): SQL after `> `, then `---`, then
//! what ndpdb answered — for EXPLAIN the whole plan, one line per
//! operator with its side (`[host]` or `[device]`) and, on the device,
//! the placement reason and the columns it returns. A change of any
//! placement (a scan that moves to the device, an aggregate that stays on
//! the host, an UPDATE that stops being offloaded under `ndp = auto`)
//! changes a line, and the test fails with a diff of the script.
//!
//! ```text
//!  tests/golden/scans.txt ──► Plans (fresh database, one Session) ──► output
//!        > EXPLAIN SELECT …          execute, render rows, mask timings   │
//!        ---                                                               ▼
//!        Aggregate [device] …   ◄──── compared with ────  goldenfile (diff on mismatch)
//! ```
//!
//! Each script runs against its own fresh database with the device in
//! process (`ndpdb_embedded::open_with`), its PE count fixed and
//! autovacuum off, so the `auto` cost model sees the same table, buffer
//! pool and PEs on every machine (the scripts also `SET ndp_pes`, which
//! the cost model reads). EXPLAIN ANALYZE measures wall time: every
//! `<number> ms` figure is shown as `#.### ms`; row, page and byte counts
//! are kept.
//!
//! To accept a changed plan, regenerate the scripts and review the diff:
//!
//! ```text
//!  UPDATE_GOLDENFILES=1 cargo test --release --workspace --test golden_plans
//! ```
//!
//! A new script is written with its SQL and empty outputs (`---` and a
//! blank line after each block) and filled in the same way; it must also
//! be named in `golden!` below (a test checks that none is left out).

use std::error::Error;
use std::path::{Path, PathBuf};

use ndpdb_formats::Value;
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

/// One script's database and session.
struct Plans {
    session: Session,
    _db: Database,
    _dir: tempfile::TempDir,
}

impl Plans {
    fn new() -> Plans {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = Config {
            autovacuum: false,
            device_pes: 2,
            ..Config::default()
        };
        let db = ndpdb_embedded::open_with(dir.path(), config).expect("a database");
        Plans {
            session: Session::new(db.clone()),
            _db: db,
            _dir: dir,
        }
    }
}

impl goldenscript::Runner for Plans {
    type Command = goldenscript::Command;

    fn run(
        &mut self,
        command: &goldenscript::Command,
        _: &goldenscript::Context,
    ) -> Result<String, Box<dyn Error>> {
        if !command.args.is_empty() {
            return Err(format!("write SQL after \"> \" (a literal command): {command:?}").into());
        }
        let outputs = self
            .session
            .execute(&command.name)
            .map_err(|e| format!("{}: {}", e.code, e.message))?;
        let mut text = String::new();
        for out in &outputs {
            render(out, &mut text);
        }
        Ok(text)
    }
}

/// A statement's result as script output: a plan (or any one-column
/// result) line by line, other rows as comma-separated values, a command
/// as its tag.
fn render(out: &Output, text: &mut String) {
    match out {
        Output::Rows { rows, .. } => {
            for row in rows {
                let values: Vec<String> = row.iter().map(value_text).collect();
                text.push_str(&mask_timings(&values.join(", ")));
                text.push('\n');
            }
        }
        Output::Command { tag } => {
            text.push_str(tag);
            text.push('\n');
        }
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        v => v.to_pg_text().unwrap_or_default(),
    }
}

/// `line` with every decimal number directly before ` ms` (a measured
/// time) replaced by `#.###`.
fn mask_timings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(" ms") {
        let (head, tail) = rest.split_at(at);
        let digits = head
            .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or(0, |i| i + 1);
        let number = &head[digits..];
        if number.contains('.') && number.starts_with(|c: char| c.is_ascii_digit()) {
            out.push_str(&head[..digits]);
            out.push_str("#.###");
        } else {
            out.push_str(head);
        }
        out.push_str(" ms");
        rest = &tail[3..];
    }
    out.push_str(rest);
    out
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn run_script(name: &str) {
    let path = golden_dir().join(format!("{name}.txt"));
    goldenscript::run(&mut Plans::new(), &path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// One test per script, so scripts run in parallel and fail by name.
macro_rules! golden {
    ($($name:ident),* $(,)?) => {
        const SCRIPTS: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() {
                run_script(stringify!($name));
            }
        )*
    };
}

golden!(
    access,
    analyze,
    dml,
    for_update,
    joins,
    order_limit,
    scans,
    subqueries
);

#[test]
fn every_script_has_a_test() {
    let mut files: Vec<String> = std::fs::read_dir(golden_dir())
        .expect("tests/golden")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect();
    files.sort();
    let mut listed: Vec<String> = SCRIPTS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        files, listed,
        "scripts in tests/golden and golden!(…) differ"
    );
}

#[test]
fn timings_are_masked_and_counts_kept() {
    assert_eq!(
        mask_timings("actual rows 12, time 3.456 ms"),
        "actual rows 12, time #.### ms"
    );
    assert_eq!(
        mask_timings("  t: 7 rows read in 0.012 ms, 7 rows joined in 10.500 ms"),
        "  t: 7 rows read in #.### ms, 7 rows joined in #.### ms"
    );
    assert_eq!(mask_timings("limit 5 ms"), "limit 5 ms");
    assert_eq!(mask_timings("no timing"), "no timing");
}
