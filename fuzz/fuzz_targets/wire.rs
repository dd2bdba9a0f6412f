//! libFuzzer over the wire target: client byte scripts into the server's
//! connection code; any failed check (panic, hang, malformed reply,
//! changed rows, leftover lock) is a crash.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use ndpdb_fuzz::WireTarget;

static TARGET: OnceLock<Mutex<WireTarget>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    // A crash libFuzzer cannot report (a stack overflow) leaves its input
    // here when NDPDB_FUZZ_LAST names a file.
    if let Some(path) = std::env::var_os("NDPDB_FUZZ_LAST") {
        let _ = std::fs::write(path, data);
    }
    let target = TARGET.get_or_init(|| Mutex::new(WireTarget::new()));
    let mut target = target.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(what) = target.run(data) {
        panic!("wire check failed: {what}");
    }
});
