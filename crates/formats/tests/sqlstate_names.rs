//! Every SQLSTATE the code reports is a named constant of `SqlState`
//! (crates/formats/src/error.rs, named as PostgreSQL's errcodes.txt names
//! its conditions): a raw `SqlState("…")` anywhere else in the sources
//! fails this test, so that a code is spelled once and found by name.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn sqlstates_are_named_constants() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let definitions = crates.join("formats/src/error.rs");
    let mut files = Vec::new();
    rust_files(&crates, &mut files);
    assert!(
        files.len() > 100,
        "{} files under {}",
        files.len(),
        crates.display()
    );
    let raw: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("formats/src/error.rs") && **f != definitions)
        .filter(|f| !f.ends_with("formats/tests/sqlstate_names.rs"))
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            text.lines()
                .enumerate()
                .filter(|(_, l)| l.contains("SqlState(\""))
                .map(|(i, l)| format!("{}:{}: {}", f.display(), i + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        raw.is_empty(),
        "name these codes in SqlState (crates/formats/src/error.rs):\n{}",
        raw.join("\n")
    );
}
