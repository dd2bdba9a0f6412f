//! Fuzz targets of ndpdb's untrusted inputs, and a runner for them.
//!
//! ```text
//!  wire: client bytes ─► ndpdb serve's connection code (in process)
//!        oracle: no panic, no hang, well-formed replies, committed rows
//!        unchanged without an acknowledged commit, no lock left behind
//!  sql:  statement text ─► parser, planner, executor of a session
//!        oracle: no panic, no internal error, the session still answers
//! ```
//!
//! Modules:
//! - [`wire`]: the wire target (client scripts, reply checks).
//! - [`sql`]: the SQL target (a statement grammar, raw text).
//! - [`runner`]: the stable-toolchain loop CI runs (`ndpdb-fuzz`), the
//!   minimizer and replay.
//!
//! libFuzzer drives the same targets (`fuzz/` at the repository root,
//! `scripts/fuzz.sh`). Inputs that once failed live in `regressions/`
//! and are replayed by `cargo test`.

pub mod runner;
pub mod sql;
pub mod wire;

pub use runner::Target;
pub use sql::SqlTarget;
pub use wire::WireTarget;

/// Where a target's regression inputs live.
pub fn regressions(target: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(target)
}
