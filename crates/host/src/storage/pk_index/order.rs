//! The primary key in SQL order: an ordered index over the key columns,
//! built from the PK index's keys the first time a statement fixes a
//! key prefix (`WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3`
//! on a four-column key), then kept up to date by every key the PK
//! index gains.
//!
//! ```text
//!  PK index (hash: whole keys only)          key order (BTreeSet, lazy)
//!  ┌───────────────────────────┐  first   ┌─────────────────────────────┐
//!  │ base file + delta          │ ───────► │ (decoded key, VID), ordered │
//!  │ encoded key ─► VID         │  prefix  │ prefix / range lookups      │
//!  └──────────┬────────────────┘  lookup  └──────────────▲──────────────┘
//!             └── every key added later (under the PK index's write lock) ┘
//! ```
//!
//! It is an ordinary [`SecondaryIndex`] (named `<table>_pkey`, as
//! PostgreSQL names the key's index), so planning and lookups treat it
//! like one: an entry names a tuple, a lookup re-checks the WHERE on the
//! version it reads, and keys whose tuple was deleted or never committed
//! cost a read, never a wrong row. Key-order reads drop the entries of
//! tuples dead to every snapshot as they pass them, and an insert puts
//! its key's entry back (`transaction/key_order.rs`). A read that finds
//! an entry's head is a tombstone notes the head and its deleter here,
//! so that later reads whose snapshot sees the delete pass the entry
//! without reading the page (while a long snapshot keeps the entry from
//! being dropped). It is not written to disk: opening a
//! database reads no key for it, and a table never queried by a key
//! prefix never builds it.

use std::sync::Arc;

use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use ndpdb_formats::codec::Reader;
use ndpdb_formats::{DataType, Decimal, Error, RecId, Result, TxId, Value, Vid};

use crate::catalog::IndexMeta;
use crate::storage::secondary_index::SecondaryIndex;

use super::INTEGRAL_TAG;

/// A head a key-order read found to be a tombstone, and its deleter.
/// Valid while the tuple's head is still `head`: a RecId names one
/// record for the life of the database (LPNs are never handed out
/// twice), so an unchanged head is still that tombstone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tombstone {
    pub head: RecId,
    pub deleter: TxId,
}

/// The ordered index, the key columns' types (to decode keys) and the
/// tombstones reads found under its entries.
pub(super) struct KeyOrder {
    pub index: Arc<SecondaryIndex>,
    types: Vec<DataType>,
    pub tombstones: RwLock<FxHashMap<Vid, Tombstone>>,
}

impl KeyOrder {
    pub fn new(meta: IndexMeta, types: Vec<DataType>) -> KeyOrder {
        KeyOrder {
            index: Arc::new(SecondaryIndex::new(meta)),
            types,
            tombstones: RwLock::default(),
        }
    }

    /// Records a key the PK index gained.
    pub fn add(&self, key: &[u8], vid: Vid) -> Result<()> {
        self.index.add_key(decode_key(key, &self.types)?, vid);
        Ok(())
    }

    /// Records many keys at once (the first build).
    pub fn extend(&self, keys: Vec<(Vec<Value>, Vid)>) {
        self.index.extend_keys(keys);
    }

    pub fn decode(&self, key: &[u8]) -> Result<Vec<Value>> {
        decode_key(key, &self.types)
    }
}

/// The values of a key [`super::encode_key`] wrote, typed as the key's
/// columns (an integral value was written without its type).
pub fn decode_key(key: &[u8], types: &[DataType]) -> Result<Vec<Value>> {
    let mut r = Reader::new(key);
    let mut out = Vec::with_capacity(types.len());
    for ty in types {
        let v = match r.u8()? {
            INTEGRAL_TAG => {
                let x = r.u64()? as i64;
                match ty {
                    DataType::Int => Value::Int(
                        i32::try_from(x)
                            .map_err(|_| Error::corrupted("PK key: INT out of range"))?,
                    ),
                    DataType::Numeric { .. } => Value::Numeric(Decimal::new(x as i128, 0)),
                    _ => Value::BigInt(x),
                }
            }
            0 => Value::Null,
            1 => Value::Bool(r.bool()?),
            2 => {
                let mantissa = r.i128()?;
                let scale = r.u8()?;
                Value::Numeric(Decimal::new(mantissa, scale))
            }
            3 => Value::Double(r.f64()?),
            4 => Value::Date(r.i32()?),
            5 => Value::Timestamp(r.i64()?),
            6 => Value::Text(r.str()?.to_string()),
            7 => Value::Bytea(r.bytes()?.to_vec()),
            t => return Err(Error::corrupted(format!("PK key: unknown value tag {t}"))),
        };
        out.push(v);
    }
    r.finish("PK key")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::encode_key;
    use super::*;

    #[test]
    fn keys_decode_to_the_values_encoded() {
        let types = [
            DataType::Int,
            DataType::BigInt,
            DataType::Numeric {
                precision: 10,
                scale: 2,
            },
            DataType::Text,
            DataType::Date,
            DataType::Timestamp,
            DataType::Bool,
            DataType::Double,
        ];
        let row = [
            Value::Int(-7),
            Value::BigInt(1 << 40),
            Value::Numeric(Decimal::new(1234, 2)),
            Value::Text("smith".into()),
            Value::Date(19_000),
            Value::Timestamp(-5),
            Value::Bool(true),
            Value::Double(2.5),
        ];
        let refs: Vec<&Value> = row.iter().collect();
        let back = decode_key(&encode_key(&refs), &types).unwrap();
        for (a, b) in row.iter().zip(&back) {
            assert_eq!(a.sort_cmp(b), std::cmp::Ordering::Equal, "{a:?} {b:?}");
        }
        // An integral NUMERIC comes back as a NUMERIC of the column.
        let n = decode_key(
            &encode_key(&[&Value::Numeric(Decimal::new(500, 2))]),
            &[DataType::Numeric {
                precision: 10,
                scale: 2,
            }],
        )
        .unwrap();
        assert!(matches!(n[0], Value::Numeric(_)));
        assert_eq!(n[0].sort_cmp(&Value::Int(5)), std::cmp::Ordering::Equal);
    }

    #[test]
    fn damaged_keys_are_errors_not_panics() {
        let key = encode_key(&[&Value::Int(1), &Value::Text("abc".into())]);
        let types = [DataType::Int, DataType::Text];
        for cut in 0..key.len() {
            assert!(decode_key(&key[..cut], &types).is_err());
        }
        let mut bad = key.clone();
        bad[0] = 0xEE;
        assert!(decode_key(&bad, &types).is_err());
        assert!(decode_key(&[key.clone(), vec![0]].concat(), &types).is_err());
        assert!(decode_key(&key, &types).is_ok());
    }
}
