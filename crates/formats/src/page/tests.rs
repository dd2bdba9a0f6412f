//! Random schemas and rows round-trip through PAX pages; corrupted bytes
//! give an error, never a panic.

use super::*;
use crate::codec::Writer;
use crate::ids::{Lpn, RecId, TableId, TxId, Vid};
use crate::record::tests::arb_value;
use crate::record::{encode_record, RecordHeader, RecordView, FLAG_TOMBSTONE};
use crate::types::DataType;
use crate::value::Value;
use proptest::prelude::*;

fn arb_table() -> impl Strategy<Value = (Vec<DataType>, Vec<Vec<Value>>)> {
    proptest::collection::vec(crate::record::tests::arb_type(), 1..10).prop_flat_map(|types| {
        let row: Vec<_> = types.iter().map(|t| arb_value(*t)).collect();
        (Just(types), proptest::collection::vec(row, 1..120))
    })
}

fn record(i: usize, values: &[Value], types: &[DataType]) -> (RecordHeader, Vec<u8>) {
    let header = RecordHeader {
        creator: TxId(1000 + (i as u64 * 7919) % 97),
        pred: if i.is_multiple_of(3) {
            RecId::NULL
        } else {
            RecId::new(Lpn(i as u64), 2)
        },
        vid: Vid(i as u64 * 3),
        flags: if i % 5 == 4 { FLAG_TOMBSTONE } else { 0 },
    };
    let mut w = Writer::new();
    encode_record(&header, types, values, &mut w).unwrap();
    (header, w.into_inner())
}

/// Fills a page from `rows`; returns it and the (slot, header, values) stored.
fn fill(
    types: &[DataType],
    rows: &[Vec<Value>],
) -> (PageBuf, Vec<(u16, RecordHeader, Vec<Value>)>) {
    let mut page = PageBuf::new(TableId(7), Lpn(42), types);
    let mut stored = Vec::new();
    for (i, values) in rows.iter().enumerate() {
        let (h, bytes) = record(i, values, types);
        match page.append(&bytes).unwrap() {
            Some(slot) => stored.push((slot, h, values.clone())),
            None => break,
        }
    }
    (page, stored)
}

proptest! {
    #[test]
    fn rows_round_trip((types, rows) in arb_table()) {
        let (mut page, stored) = fill(&types, &rows);
        prop_assert!(page.used_bytes() <= PAGE_SIZE);
        // The unsealed image reads the same as the sealed one.
        for (slot, h, values) in &stored {
            let rec = page.record(*slot).unwrap().unwrap();
            let view = RecordView::parse(&rec).unwrap();
            prop_assert_eq!(view.header, *h);
            prop_assert_eq!(&view.decode(&types).unwrap(), values);
        }
        page.seal();
        let bytes = page.as_bytes().to_vec();
        let view = PageRef::parse_verified(&bytes).unwrap();
        prop_assert_eq!(view.table(), TableId(7));
        prop_assert_eq!(view.lpn(), Lpn(42));
        prop_assert_eq!(view.slot_count() as usize, stored.len());
        prop_assert_eq!(view.types().unwrap(), types.clone());
        let mut row = Vec::new();
        for (slot, h, values) in &stored {
            prop_assert_eq!(view.header(*slot).unwrap(), Some(*h));
            view.decode_row_into(*slot, None, &mut row).unwrap();
            prop_assert_eq!(&row, values);
            // The record bytes are exactly what was appended.
            let mut w = Writer::new();
            encode_record(h, &types, values, &mut w).unwrap();
            prop_assert_eq!(view.record(*slot).unwrap().unwrap(), w.into_inner());
        }
        // The summary and zone maps bound what the page holds.
        let (lo, hi) = view.creator_range();
        for (_, h, values) in &stored {
            prop_assert!(lo <= h.creator && h.creator <= hi);
            for (c, v) in values.iter().enumerate() {
                match (view.column(c).unwrap().zone(), v) {
                    (Some(Zone::Int { min, max, .. }), Value::Int(x)) => prop_assert!(min <= *x as i128 && *x as i128 <= max),
                    (Some(Zone::Int { min, max, .. }), Value::BigInt(x)) => prop_assert!(min <= *x as i128 && *x as i128 <= max),
                    (Some(Zone::Int { min, max, .. }), Value::Numeric(d)) => prop_assert!(min <= d.mantissa && d.mantissa <= max),
                    (Some(Zone::Double { min, max }), Value::Double(x)) => prop_assert!(min <= *x && *x <= max),
                    _ => {}
                }
            }
        }
        let tomb = stored.iter().filter(|(_, h, _)| h.is_tombstone()).count();
        prop_assert_eq!(view.tombstones() as usize, tomb);
    }

    #[test]
    fn corrupt_pages_error_not_panic((types, rows) in arb_table(), flips in proptest::collection::vec((0usize..PAGE_SIZE, any::<u8>()), 1..8)) {
        let (mut page, _) = fill(&types, &rows);
        page.seal();
        let mut bytes = page.as_bytes().to_vec();
        for (i, x) in &flips {
            bytes[*i] ^= x | 1;
        }
        // The checksum catches every flip of a sealed page.
        prop_assert!(PageRef::parse_verified(&bytes).is_err());
        // Unverified parsing and reading of garbage never panics.
        if let Ok(v) = PageRef::parse(&bytes) {
            let mut row = Vec::new();
            for s in 0..v.slot_count().saturating_add(2) {
                let _ = v.record(s);
                let _ = v.header(s);
                let _ = v.decode_row_into(s, None, &mut row);
            }
            for c in 0..v.column_count() + 1 {
                if let Ok(col) = v.column(c) {
                    let _ = col.zone();
                    for r in 0..v.slot_count() as usize + 2 {
                        let _ = col.value(r);
                        let _ = col.var(r);
                    }
                }
            }
        }
    }
}

#[test]
fn page_fills_to_capacity_and_refuses_more() {
    let types = [DataType::Bytea];
    let mut page = PageBuf::new(TableId(1), Lpn(0), &types);
    let big = vec![Value::Bytea(vec![1u8; 1000])];
    let mut n = 0;
    while page.append(&record(n, &big, &types).1).unwrap().is_some() {
        n += 1;
    }
    // 64 B header + 16 B directory + 7 × (25 B version fields + 1,000 B
    // + 2 B offset) + bitmap and first offset: an eighth row does not fit.
    assert_eq!(n, 7);
    assert!(page.used_bytes() <= PAGE_SIZE);
    // A row bigger than a page never fits.
    let huge = vec![Value::Bytea(vec![1u8; PAGE_SIZE])];
    let mut empty = PageBuf::new(TableId(1), Lpn(1), &types);
    assert_eq!(empty.append(&record(0, &huge, &types).1).unwrap(), None);
}

#[test]
fn place_leaves_gaps_empty() {
    let types = [DataType::Int];
    let mut page = PageBuf::new(TableId(1), Lpn(0), &types);
    page.place_at(0, &record(0, &[Value::Int(1)], &types).1)
        .unwrap();
    page.place_at(3, &record(3, &[Value::Int(4)], &types).1)
        .unwrap();
    let v = page.view();
    assert_eq!(v.slot_count(), 4);
    assert_eq!(v.header(1).unwrap(), None);
    assert_eq!(v.record(2).unwrap(), None);
    assert_eq!(v.empty_slots(), 2);
    assert!(v.record(3).unwrap().is_some());
    assert!(page
        .place_at(2, &record(2, &[Value::Int(3)], &types).1)
        .is_err());
}

#[test]
fn format_1_pages_are_refused_by_name() {
    let mut page = PageBuf::new(TableId(1), Lpn(0), &[DataType::Int]);
    page.seal();
    let mut bytes = page.as_bytes().to_vec();
    bytes[4] = 1;
    let e = PageRef::parse(&bytes).unwrap_err().to_string();
    assert!(e.contains("format version 1"), "{e}");
}

/// A scan parses only the header and checks the directory entries of
/// the columns it reads; the whole-page check finds what it skipped.
#[test]
fn directory_entries_are_checked_where_read() {
    let types = [DataType::BigInt, DataType::Int, DataType::Text];
    let rows: Vec<Vec<Value>> = (0..5)
        .map(|i| {
            vec![
                Value::BigInt(i),
                Value::Int(i as i32),
                Value::Text("x".into()),
            ]
        })
        .collect();
    let (page, _) = fill(&types, &rows);
    let good = page.as_bytes().to_vec();
    assert!(PageRef::parse_checked(&good).is_ok());

    // Column 1's minipage moved onto column 0's.
    let d0 = PAGE_HEADER_SIZE;
    let d1 = PAGE_HEADER_SIZE + DIR_ENTRY_SIZE;
    let mut overlap = good.clone();
    overlap[d1 + 8..d1 + 10].copy_from_slice(&good[d0 + 8..d0 + 10]);
    let v = PageRef::parse(&overlap).unwrap();
    assert!(v.column(2).is_ok());
    let e = PageRef::parse_checked(&overlap).unwrap_err().to_string();
    assert!(e.contains("overlaps"), "{e}");

    // Column 1's minipage beyond the page: reading it fails, the others read.
    let mut beyond = good.clone();
    beyond[d1 + 8..d1 + 10].copy_from_slice(&(PAGE_SIZE as u16 - 8).to_le_bytes());
    let v = PageRef::parse(&beyond).unwrap();
    let e = v.column(1).unwrap_err().to_string();
    assert!(e.contains("out of bounds"), "{e}");
    assert_eq!(v.column(0).unwrap().value(3).unwrap(), Value::BigInt(3));
    assert!(PageRef::parse_checked(&beyond).is_err());

    // An unknown version flag fails where the flags are read.
    let mut flags = good.clone();
    let f = versions_offset(types.len()) + VERSION_FIELDS_SIZE * 5 - 5 + 2;
    flags[f] |= 0x40;
    let v = PageRef::parse(&flags).unwrap();
    assert!(v.header(1).is_ok());
    let e = v.header(2).unwrap_err().to_string();
    assert!(e.contains("unknown flags"), "{e}");
    assert!(PageRef::parse_checked(&flags).is_err());
}
