//! What the CLI's integration tests share.

#![allow(dead_code)]

use std::path::PathBuf;

use ndpdb_formats::Value;
use ndpdb_sql::Output;

/// The Ceph cluster to test against (`CEPH_CONF`; `scripts/test` starts
/// one); `None`, with a note, without one.
pub fn ceph_conf() -> Option<PathBuf> {
    match std::env::var_os("CEPH_CONF") {
        Some(c) => Some(PathBuf::from(c)),
        None => {
            eprintln!("skipped: CEPH_CONF is not set (scripts/test starts a cluster)");
            None
        }
    }
}

/// The first value of the last statement's first row, as an integer.
pub fn int(out: &[Output]) -> i64 {
    match out.last() {
        Some(Output::Rows { rows, .. }) => match rows[0][0] {
            Value::BigInt(v) => v,
            Value::Int(v) => v as i64,
            ref v => panic!("{v:?}"),
        },
        other => panic!("{other:?}"),
    }
}
