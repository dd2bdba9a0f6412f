//! libFuzzer over the SQL target: statements into the parser, planner and
//! executor; a panic, an internal or corruption error, or a session that
//! stops answering is a crash.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use ndpdb_fuzz::SqlTarget;

static TARGET: OnceLock<Mutex<SqlTarget>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    // A crash libFuzzer cannot report (a stack overflow) leaves its input
    // here when NDPDB_FUZZ_LAST names a file.
    if let Some(path) = std::env::var_os("NDPDB_FUZZ_LAST") {
        let _ = std::fs::write(path, data);
    }
    let target = TARGET.get_or_init(|| Mutex::new(SqlTarget::new()));
    let mut target = target.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(what) = target.run(data) {
        // The first line says what failed; the statements since the tables
        // were created follow, for `ndpdb-fuzz sql --statements`.
        let (first, history) = what.split_once('\n').unwrap_or((&what, ""));
        let path = std::env::temp_dir().join("ndpdb-fuzz-sql-history.sql");
        let _ = std::fs::write(&path, history);
        panic!("sql check failed: {first} (statements before it: {})", path.display());
    }
});
