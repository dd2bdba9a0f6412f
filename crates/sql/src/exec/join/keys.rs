//! The hash table of a join: row positions by their equi-join key.
//!
//! ```text
//!  key parts (one value per key program)
//!    all small integers (int, bigint or numeric with an integral value
//!    in i32's range), at most 4 ─► one u128, 32 bits a part   (packed)
//!    anything else               ─► Value::key_bytes of each    (bytes)
//!  packed:  heads: u128 → (first, last) position, next[position] chains
//!           the rows of one key in the order they were added
//!  bytes:   key bytes → positions
//! ```
//!
//! A table is packed when every key it is built from packs. A probe key
//! that does not pack then matches nothing: it is not an integer in
//! i32's range, so it equals none of the table's keys (`key_bytes`
//! writes integers of every type alike and other types under their own
//! tag). A key with a NULL part matches nothing, as `=` with NULL is
//! never true.

use rustc_hash::FxHashMap;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::Program;
use ndpdb_formats::Value;

use crate::exec::join::packed_table::{Home, PackedTable, END};
use crate::Result;

/// Most key parts one u128 holds.
const PACKED_PARTS: usize = 4;

/// One row's key.
enum Key {
    Packed(u128),
    /// Written into the caller's buffer.
    Bytes,
    /// A NULL part: matches nothing.
    Null,
}

/// A key part as a small integer, when it is one.
fn small_int(v: &Value) -> Option<i32> {
    match v {
        Value::Int(i) => Some(*i),
        Value::BigInt(b) => i32::try_from(*b).ok(),
        Value::Numeric(d) => {
            let n = d.normalized();
            if n.scale != 0 {
                return None;
            }
            i32::try_from(n.mantissa).ok()
        }
        _ => None,
    }
}

/// Evaluates the key of `row`: packed if every part is a small integer
/// and `packed` is allowed, else its bytes in `bytes`.
fn key_of(
    keys: &[Program],
    row: &[Value],
    params: &[Value],
    packed: bool,
    ProbeScratch { bytes, owned, .. }: &mut ProbeScratch,
) -> Result<Key> {
    let mut parts = [0i32; PACKED_PARTS];
    owned.clear();
    let mut all_small = packed && keys.len() <= PACKED_PARTS;
    for (k, p) in keys.iter().enumerate() {
        // A plain column needs no evaluation (nor a copy).
        let v = match p.single_column().and_then(|c| row.get(c)) {
            Some(v) => v,
            None => {
                owned.push(p.eval(row, params)?);
                owned.last().unwrap_or(&Value::Null)
            }
        };
        if v.is_null() {
            return Ok(Key::Null);
        }
        if all_small {
            match small_int(v) {
                Some(i) => parts[k] = i,
                None => all_small = false,
            }
        }
    }
    if all_small {
        let mut key = 0u128;
        for part in parts.iter().take(keys.len()) {
            key = (key << 32) | (*part as u32 as u128);
        }
        return Ok(Key::Packed(key));
    }
    // The bytes, from the values above (computed parts in `owned`, in
    // key order).
    bytes.clear();
    let mut computed = owned.iter();
    for p in keys {
        match p.single_column().and_then(|c| row.get(c)) {
            Some(v) => v.key_bytes(bytes),
            None => computed.next().unwrap_or(&Value::Null).key_bytes(bytes),
        }
    }
    Ok(Key::Bytes)
}

/// Row positions by key.
pub struct KeyTable {
    map: Map,
    /// For [`KeyTable::probe`] and [`KeyTable::probe_batch`].
    scratch: ProbeScratch,
}

/// What probing a [`KeyTable`] reuses from row to row: one per thread
/// that probes (the table itself is only read).
#[derive(Default)]
pub struct ProbeScratch {
    /// A byte key.
    bytes: Writer,
    /// Computed key parts of one row.
    owned: Vec<Value>,
    /// (row, key, home) of each row's packed key in a batch.
    batch: Vec<(u32, u128, Home)>,
}

enum Map {
    Packed { heads: PackedTable, next: Vec<u32> },
    Bytes(FxHashMap<Vec<u8>, Vec<u32>>),
}

impl KeyTable {
    /// The table over `rows` (position = index in the iterator).
    pub fn build<'r>(
        keys: &[Program],
        rows: impl ExactSizeIterator<Item = &'r [Value]> + Clone,
        params: &[Value],
    ) -> Result<KeyTable> {
        let n = rows.len();
        let mut scratch = ProbeScratch::default();
        let mut heads = PackedTable::with_capacity(n);
        let mut next = vec![END; n];
        let mut packed = true;
        for (i, row) in rows.clone().enumerate() {
            match key_of(keys, row, params, true, &mut scratch)? {
                Key::Null => {}
                Key::Packed(k) => heads.insert(k, i as u32, &mut next),
                Key::Bytes => {
                    packed = false;
                    break;
                }
            }
        }
        if packed {
            return Ok(KeyTable {
                map: Map::Packed { heads, next },
                scratch,
            });
        }
        drop((heads, next));
        let mut table: FxHashMap<Vec<u8>, Vec<u32>> = FxHashMap::default();
        table.reserve(n);
        for (i, row) in rows.enumerate() {
            if let Key::Bytes = key_of(keys, row, params, false, &mut scratch)? {
                table
                    .entry(scratch.bytes.as_slice().to_vec())
                    .or_default()
                    .push(i as u32);
            }
        }
        Ok(KeyTable {
            map: Map::Bytes(table),
            scratch,
        })
    }

    /// The matches of a batch of `rows` rows (`row(i)`: the i-th): a
    /// `(row, position)` pair per match, in row order, each row's
    /// positions in the order they were added (as [`KeyTable::probe`]).
    /// The packed table's slots of the whole batch are fetched at once.
    pub fn probe_batch<'r>(
        &mut self,
        keys: &[Program],
        rows: usize,
        row: impl Fn(usize) -> &'r [Value],
        params: &[Value],
        out: &mut Vec<(u32, u32)>,
    ) -> Result<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let probed = self.probe_batch_with(keys, rows, row, params, &mut scratch, out);
        self.scratch = scratch;
        probed
    }

    /// [`KeyTable::probe_batch`] with the caller's scratch: threads that
    /// share the table probe it at once.
    pub fn probe_batch_with<'r>(
        &self,
        keys: &[Program],
        rows: usize,
        row: impl Fn(usize) -> &'r [Value],
        params: &[Value],
        scratch: &mut ProbeScratch,
        out: &mut Vec<(u32, u32)>,
    ) -> Result<()> {
        out.clear();
        match &self.map {
            Map::Packed { heads, next } => {
                let mut batch = std::mem::take(&mut scratch.batch);
                batch.clear();
                for r in 0..rows {
                    if let Key::Packed(k) = key_of(keys, row(r), params, true, scratch)? {
                        let home = heads.home(k);
                        heads.prefetch(home);
                        batch.push((r as u32, k, home));
                    }
                }
                for &(r, k, home) in batch.iter() {
                    let mut at = heads.first(k, home).unwrap_or(END);
                    while at != END {
                        out.push((r, at));
                        at = next.get(at as usize).copied().unwrap_or(END);
                    }
                }
                scratch.batch = batch;
            }
            Map::Bytes(t) => {
                for r in 0..rows {
                    if let Key::Bytes = key_of(keys, row(r), params, false, scratch)? {
                        if let Some(v) = t.get(scratch.bytes.as_slice()) {
                            out.extend(v.iter().map(|&p| (r as u32, p)));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The positions of the rows whose key equals `row`'s, in the order
    /// they were added.
    pub fn probe(
        &mut self,
        keys: &[Program],
        row: &[Value],
        params: &[Value],
    ) -> Result<Matches<'_>> {
        let packed = matches!(self.map, Map::Packed { .. });
        let key = key_of(keys, row, params, packed, &mut self.scratch)?;
        Ok(match (&self.map, key) {
            (_, Key::Null) => Matches::None,
            (Map::Packed { heads, next }, Key::Packed(k)) => match heads.first(k, heads.home(k)) {
                Some(first) => Matches::Chain { at: first, next },
                None => Matches::None,
            },
            // Not a small integer: equals no packed key.
            (Map::Packed { .. }, Key::Bytes) => Matches::None,
            (Map::Bytes(t), _) => match t.get(self.scratch.bytes.as_slice()) {
                Some(v) => Matches::Slice(v.iter()),
                None => Matches::None,
            },
        })
    }
}

/// Positions of matching rows.
pub enum Matches<'t> {
    None,
    Chain { at: u32, next: &'t [u32] },
    Slice(std::slice::Iter<'t, u32>),
}

impl Iterator for Matches<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Matches::None => None,
            Matches::Chain { at, next } => {
                if *at == END {
                    return None;
                }
                let i = *at;
                *at = next.get(i as usize).copied().unwrap_or(END);
                Some(i as usize)
            }
            Matches::Slice(it) => it.next().map(|&i| i as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::expr::Op;
    use ndpdb_formats::Decimal;

    fn col(i: u32) -> Program {
        Program {
            consts: Vec::new(),
            ops: vec![Op::Column(i)],
        }
    }

    fn positions(t: &mut KeyTable, keys: &[Program], row: &[Value]) -> Vec<usize> {
        t.probe(keys, row, &[]).unwrap().collect()
    }

    /// The packed table answers as `key_bytes` equality would: integers
    /// of any type and integral numerics alike, NULL never, large and
    /// fractional values nowhere, duplicates in the order added.
    #[test]
    fn packed_keys_match_as_sql_equality() {
        let rows = [
            vec![Value::Int(1), Value::Int(7)],
            vec![Value::Int(1), Value::Null],
            vec![Value::Int(2), Value::Int(7)],
            vec![Value::Int(1), Value::Int(7)],
            vec![Value::Int(-1), Value::Int(-7)],
        ];
        let keys = [col(0), col(1)];
        let mut t = KeyTable::build(&keys, rows.iter().map(Vec::as_slice), &[]).unwrap();
        assert!(matches!(t.map, Map::Packed { .. }));
        let probe = |t: &mut KeyTable, a: Value, b: Value| positions(t, &keys, &[a, b]);
        assert_eq!(probe(&mut t, Value::BigInt(1), Value::Int(7)), [0, 3]);
        let seven = Value::Numeric(Decimal::new(700, 2));
        assert_eq!(probe(&mut t, Value::Int(1), seven), [0, 3]);
        assert_eq!(probe(&mut t, Value::Int(-1), Value::Int(-7)), [4]);
        assert!(probe(&mut t, Value::Int(1), Value::Null).is_empty());
        assert!(probe(&mut t, Value::BigInt(1 << 40), Value::Int(7)).is_empty());
        let half = Value::Numeric(Decimal::new(15, 1));
        assert!(probe(&mut t, Value::Int(1), half).is_empty());
        assert!(probe(&mut t, Value::Text("1".into()), Value::Int(7)).is_empty());
        // (1, -7) and (-1, 7) are other keys than (-1, -7).
        assert!(probe(&mut t, Value::Int(1), Value::Int(-7)).is_empty());
        assert!(probe(&mut t, Value::Int(-1), Value::Int(7)).is_empty());
    }

    /// A key that does not pack makes the table one of bytes, with the
    /// same answers.
    #[test]
    fn other_keys_fall_back_to_bytes() {
        let rows = [
            vec![Value::Int(1)],
            vec![Value::BigInt(1 << 40)],
            vec![Value::Text("x".into())],
            vec![Value::Numeric(Decimal::from_i64(1))],
        ];
        let keys = [col(0)];
        let mut t = KeyTable::build(&keys, rows.iter().map(Vec::as_slice), &[]).unwrap();
        assert!(matches!(t.map, Map::Bytes(_)));
        assert_eq!(positions(&mut t, &keys, &[Value::BigInt(1)]), [0, 3]);
        assert_eq!(positions(&mut t, &keys, &[Value::BigInt(1 << 40)]), [1]);
        assert_eq!(positions(&mut t, &keys, &[Value::Text("x".into())]), [2]);
        assert!(positions(&mut t, &keys, &[Value::Null]).is_empty());
    }
}
