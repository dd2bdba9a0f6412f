//! The catalog's other objects: `pg_sequence` (ndpdb's sequences),
//! `pg_opclass` (the B-tree operator classes of ndpdb's types) and
//! `pg_collation` (the collations ndpdb accepts), with PostgreSQL 15's
//! OIDs and columns.
//!
//! ```text
//!  pg_sequence   seqrelid = the sequence's pg_class OID, seqtypid from
//!                its range (int2 / int4 / int8), cache 1
//!  pg_opclass    int4_ops 1978, int8_ops 3124, text_ops 3126, …
//!  pg_collation  default 100, C 950, POSIX 951 (all compare bytewise)
//! ```

use ndpdb_formats::{DataType, Value};
use ndpdb_host::Database;

use super::{b, i, t, OWNER_OID, PG_CATALOG_OID};
use DataType::{BigInt, Bool, Int, Text};

/// The OID of the `k`-th sequence (in name order), as pg_class has it.
pub(super) fn sequence_oid(k: usize) -> i64 {
    super::FIRST_OID + 3_000_000 + k as i64
}

pub(super) const SEQUENCE_COLUMNS: &[(&str, DataType)] = &[
    ("seqrelid", BigInt),
    ("seqtypid", BigInt),
    ("seqstart", BigInt),
    ("seqincrement", BigInt),
    ("seqmax", BigInt),
    ("seqmin", BigInt),
    ("seqcache", BigInt),
    ("seqcycle", Bool),
];

pub(super) fn sequence_rows(db: &Database) -> Vec<Vec<Value>> {
    db.sequence_names()
        .iter()
        .enumerate()
        .filter_map(|(k, name)| {
            let s = db.sequence(name)?;
            // The type the sequence was made for: its bound is that
            // type's (SERIAL: integer), else bigint.
            let bound = |lo: i64, hi: i64| s.max == hi || (s.increment < 0 && s.min == lo);
            let typ = if bound(i32::MIN as i64, i32::MAX as i64) {
                23
            } else if bound(i16::MIN as i64, i16::MAX as i64) {
                21
            } else {
                20
            };
            Some(vec![
                i(sequence_oid(k)),
                i(typ),
                Value::BigInt(s.start),
                Value::BigInt(s.increment),
                Value::BigInt(s.max),
                Value::BigInt(s.min),
                Value::BigInt(1),
                b(s.cycle),
            ])
        })
        .collect()
}

pub(super) const OPCLASS_COLUMNS: &[(&str, DataType)] = &[
    ("oid", BigInt),
    ("opcmethod", BigInt),
    ("opcname", Text),
    ("opcnamespace", BigInt),
    ("opcowner", BigInt),
    ("opcfamily", BigInt),
    ("opcintype", BigInt),
    ("opcdefault", Bool),
    ("opckeytype", BigInt),
];

/// (oid, name, family, input type, default) of the B-tree classes.
const OPCLASSES: [(i64, &str, i64, i64, bool); 16] = [
    (1978, "int4_ops", 1976, 23, true),
    (3122, "date_ops", 434, 1082, true),
    (3123, "float8_ops", 1970, 701, true),
    (3124, "int8_ops", 1976, 20, true),
    (3125, "numeric_ops", 1988, 1700, true),
    (3126, "text_ops", 1994, 25, true),
    (3128, "timestamp_ops", 434, 1114, true),
    (4033, "jsonb_ops", 4033, 3802, true),
    (4217, "text_pattern_ops", 2095, 25, false),
    (4218, "varchar_pattern_ops", 2095, 25, false),
    (4219, "bpchar_pattern_ops", 2097, 1042, false),
    (10000, "array_ops", 397, 2277, true),
    (10003, "bool_ops", 424, 16, true),
    (10004, "bpchar_ops", 426, 1042, true),
    (10006, "bytea_ops", 428, 17, true),
    (10044, "varchar_ops", 1994, 25, false),
];

pub(super) fn opclass_rows() -> Vec<Vec<Value>> {
    OPCLASSES
        .iter()
        .map(|(oid, name, family, intype, default)| {
            vec![
                i(*oid),
                i(403),
                t(name),
                i(PG_CATALOG_OID),
                i(OWNER_OID),
                i(*family),
                i(*intype),
                b(*default),
                i(0),
            ]
        })
        .collect()
}

/// The default B-tree class of a column type (`pg_index.indclass`).
pub(super) fn default_opclass(ty: DataType) -> i64 {
    match ty {
        DataType::Bool => 10003,
        DataType::Int => 1978,
        DataType::BigInt => 3124,
        DataType::Double => 3123,
        DataType::Numeric { .. } => 3125,
        DataType::Date => 3122,
        DataType::Timestamp => 3128,
        DataType::Char(_) => 10004,
        DataType::Bytea => 10006,
        DataType::Array(_) => 10000,
        DataType::Json => 0,
        DataType::Jsonb => 4033,
        DataType::Text | DataType::Varchar(_) => 3126,
    }
}

pub(super) const COLLATION_COLUMNS: &[(&str, DataType)] = &[
    ("oid", BigInt),
    ("collname", Text),
    ("collnamespace", BigInt),
    ("collowner", BigInt),
    ("collprovider", Text),
    ("collisdeterministic", Bool),
    ("collencoding", Int),
    ("collcollate", Text),
    ("collctype", Text),
];

pub(super) fn collation_rows() -> Vec<Vec<Value>> {
    [
        (100, "default", "d", None),
        (950, "C", "c", Some("C")),
        (951, "POSIX", "c", Some("POSIX")),
    ]
    .iter()
    .map(|(oid, name, provider, locale)| {
        let locale = locale.map_or(Value::Null, t);
        vec![
            i(*oid),
            t(name),
            i(PG_CATALOG_OID),
            i(OWNER_OID),
            t(provider),
            b(true),
            Value::Int(-1),
            locale.clone(),
            locale,
        ]
    })
    .collect()
}

pub(super) const INHERITS_COLUMNS: &[(&str, DataType)] = &[
    ("inhrelid", BigInt),
    ("inhparent", BigInt),
    ("inhseqno", Int),
    ("inhdetachpending", Bool),
];

pub(super) const TABLESPACE_COLUMNS: &[(&str, DataType)] = &[
    ("oid", BigInt),
    ("spcname", Text),
    ("spcowner", BigInt),
    ("spcacl", Text),
    ("spcoptions", Text),
];

/// PostgreSQL's two tablespaces: every table is in `pg_default`
/// (`pg_class.reltablespace` 0).
pub(super) fn tablespace_rows() -> Vec<Vec<Value>> {
    [(1663, "pg_default"), (1664, "pg_global")]
        .iter()
        .map(|(oid, name)| vec![i(*oid), t(name), i(OWNER_OID), Value::Null, Value::Null])
        .collect()
}
