//! An object's share of a scan: the answer a walk over all pages gives,
//! chains that leave the object deferred, and bad bytes as errors.

use ndpdb_formats::agg::{AggFunc, AggSpec};
use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::page::{PageBuf, PAGE_SIZE};
use ndpdb_formats::record::{encode_record, RecordHeader, FLAG_TOMBSTONE};
use ndpdb_formats::visibility::Snapshot;
use ndpdb_formats::{DataType, Decimal, Lpn, RecId, SqlState, TableId, TxId, Value, Vid};

use super::{decode_reply, run, serve, ObjectOp, ObjectPlan, ObjectScan, Outcome};
use crate::PipelineOp;

const TYPES: [DataType; 2] = [DataType::Int, DataType::BigInt];

/// Versions `(vid, creator, pred, value, tombstone)` on page `lpn`.
fn page(lpn: u64, versions: &[(u64, u64, RecId, i64, bool)]) -> Vec<u8> {
    let mut page = PageBuf::new(TableId(1), Lpn(lpn), &TYPES);
    for &(vid, creator, pred, value, tombstone) in versions {
        let h = RecordHeader {
            creator: TxId(creator),
            pred,
            vid: Vid(vid),
            flags: if tombstone { FLAG_TOMBSTONE } else { 0 },
        };
        let mut w = Writer::new();
        let row = [Value::Int(vid as i32), Value::BigInt(value)];
        encode_record(&h, &TYPES, &row, &mut w).unwrap();
        page.append(w.as_slice()).unwrap().unwrap();
    }
    page.into_sealed_image()
}

/// An object of three pages (LPNs 10, 11, 12 at indexes 0, 1, 2):
/// - VIDs 0..50 created by tx 1 on LPN 10, value = VID;
/// - VIDs 0..10 updated by tx 5 (committed) on LPN 11, value = VID + 1000;
/// - VIDs 50..60 updated by tx 7 (in flight) on LPN 12, their older
///   versions on LPN 20, which lies in another object;
/// - VID 60 updated by tx 7 on LPN 12, its older version (tx 1) on LPN 10;
/// - VID 61 deleted by tx 5 on LPN 12, its older version on LPN 10.
fn fixture() -> (Vec<u8>, Vec<(u64, RecId)>) {
    let mut p10: Vec<_> = (0..50)
        .map(|v| (v, 1, RecId::NULL, v as i64, false))
        .collect();
    p10.push((60, 1, RecId::NULL, 60, false));
    p10.push((61, 1, RecId::NULL, 61, false));
    let p11: Vec<_> = (0..10)
        .map(|v| (v, 5, RecId::new(Lpn(10), v as u16), v as i64 + 1000, false))
        .collect();
    let mut p12: Vec<_> = (50..60)
        .map(|v| (v, 7, RecId::new(Lpn(20), (v - 50) as u16), -1, false))
        .collect();
    p12.push((60, 7, RecId::new(Lpn(10), 50), -1, false));
    p12.push((61, 5, RecId::new(Lpn(10), 51), 0, true));
    let mut object = Vec::new();
    for p in [page(10, &p10), page(11, &p11), page(12, &p12)] {
        object.extend_from_slice(&p);
    }
    let mut heads: Vec<(u64, RecId)> = (0..10)
        .map(|v| (v, RecId::new(Lpn(11), v as u16)))
        .collect();
    heads.extend((10..50).map(|v| (v, RecId::new(Lpn(10), v as u16))));
    heads.extend((50..62).map(|v| (v, RecId::new(Lpn(12), (v - 50) as u16))));
    (object, heads)
}

fn request(op: ObjectOp, heads: &[(u64, RecId)], chunk: u64) -> ObjectScan {
    let mut chunks: Vec<(u64, Vec<RecId>)> = Vec::new();
    for &(vid, rid) in heads {
        match chunks.last_mut() {
            Some((c, hs)) if *c == vid / chunk => hs.push(rid),
            _ => chunks.push((vid / chunk, vec![rid])),
        }
    }
    // (The request carries a chunk's heads in page order, as walked.)
    chunks.iter_mut().for_each(|(_, hs)| hs.sort_unstable());
    ObjectScan {
        plan: ObjectPlan {
            snapshot: Snapshot {
                txid: TxId(9),
                xmin: TxId(7),
                xmax: TxId(9),
                in_flight: vec![TxId(7)],
            },
            types: TYPES.to_vec(),
            params: vec![],
            filter: None,
            op,
        },
        pages: vec![(Lpn(10), 0), (Lpn(11), 1), (Lpn(12), 2)],
        chunks,
        reply_cap: 1 << 20,
    }
}

fn column(c: u32) -> Program {
    Program {
        consts: vec![],
        ops: vec![Op::Column(c)],
    }
}

fn sum_and_count() -> PipelineOp {
    PipelineOp::Aggregate {
        groups: vec![],
        aggs: vec![
            AggSpec {
                extra: vec![],
                order: vec![],
                filtered: false,
                func: AggFunc::Sum,
                distinct: false,
                arg: Some(column(1)),
                result_ty: DataType::Numeric {
                    precision: 0,
                    scale: 0,
                },
            },
            AggSpec {
                extra: vec![],
                order: vec![],
                filtered: false,
                func: AggFunc::CountStar,
                distinct: false,
                arg: None,
                result_ty: DataType::BigInt,
            },
        ],
    }
}

fn served(req: &ObjectScan, object: &[u8]) -> ndpdb_formats::Result<Outcome> {
    let back = ObjectScan::decode(&req.encode()).unwrap();
    assert_eq!(&back, req, "the request survives its bytes");
    decode_reply(&serve(&req.encode(), object))
}

#[test]
fn an_object_answers_for_its_heads_and_defers_chains_that_leave_it() {
    let (object, heads) = fixture();
    let req = request(ObjectOp::Pipeline(sum_and_count()), &heads, 32);
    let Outcome::Done(reply) = served(&req, &object).unwrap() else {
        panic!("a small reply is over its cap");
    };
    assert_eq!(reply.tuples, 62);
    // VIDs 0..10 at their new values, 10..50 as loaded, VID 60's older
    // version found on LPN 10 of the same object; VID 61 is deleted.
    let want_sum: i64 = (0..10).map(|v| v + 1000).sum::<i64>() + (10..50).sum::<i64>() + 60;
    let ObjectOp::Pipeline(PipelineOp::Aggregate { aggs, .. }) = &req.plan.op else {
        unreachable!()
    };
    let (_, accs) = reply.groups.get(&Vec::new()).expect("the plain aggregate");
    let got: Vec<Value> = accs
        .iter()
        .zip(aggs)
        .map(|(a, s)| a.clone().finish(s).unwrap())
        .collect();
    assert_eq!(got[1], Value::BigInt(51));
    assert_eq!(got[0], Value::Numeric(Decimal::new(want_sum.into(), 0)));
    // VIDs 50..60 go on at LPN 20, in chunk 1 (VIDs 32..64).
    let want: Vec<(u64, RecId)> = (0..10).map(|s| (1, RecId::new(Lpn(20), s))).collect();
    assert_eq!(reply.deferred, want);
    // The walk is the PEs' own: the same result as `run` in process.
    let direct = run(&req, &object).unwrap();
    assert_eq!(direct.deferred, reply.deferred);
    assert_eq!(direct.tuples, reply.tuples);
}

#[test]
fn projected_rows_come_back_per_chunk_in_page_order() {
    let (object, heads) = fixture();
    let mut req = request(
        ObjectOp::Pipeline(PipelineOp::Project {
            columns: vec![0, 1],
        }),
        &heads,
        32,
    );
    // WHERE value < 1005
    req.plan.filter = Some(Program {
        consts: vec![Value::BigInt(1005)],
        ops: vec![Op::Column(1), Op::Const(0), Op::Lt],
    });
    let Outcome::Done(reply) = served(&req, &object).unwrap() else {
        panic!("over its cap");
    };
    let chunks: Vec<u64> = reply.rows.iter().map(|(c, _)| *c).collect();
    assert_eq!(chunks, vec![0, 1]);
    let ids: Vec<i32> = reply
        .rows
        .iter()
        .flat_map(|(_, rows)| rows.iter())
        .map(|r| match r[0] {
            Value::Int(i) => i,
            ref v => panic!("{v:?}"),
        })
        .collect();
    // Chunk 0: LPN 10's heads (10..32), then LPN 11's (0..5 qualify);
    // chunk 1: 32..50, then VID 60 through its older version.
    let mut want: Vec<i32> = (10..32).chain(0..5).collect();
    want.extend((32..50).chain([60]));
    assert_eq!(ids, want);
}

#[test]
fn a_reply_over_the_cap_says_how_large_it_would_be() {
    let (object, heads) = fixture();
    let mut req = request(
        ObjectOp::Pipeline(PipelineOp::Project {
            columns: vec![0, 1],
        }),
        &heads,
        1024,
    );
    req.reply_cap = 64;
    match served(&req, &object).unwrap() {
        Outcome::TooLarge(n) => assert!(n > 64, "{n}"),
        Outcome::Done(_) => panic!("a reply over its cap"),
    }
}

#[test]
fn a_page_that_is_not_the_one_the_request_names_is_corruption() {
    let (mut object, heads) = fixture();
    let mut req = request(ObjectOp::Pipeline(sum_and_count()), &heads, 32);
    // The request places LPN 11 where LPN 12 lies.
    req.pages = vec![(Lpn(10), 0), (Lpn(11), 2), (Lpn(12), 1)];
    let e = served(&req, &object).unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::DATA_CORRUPTED, "{e}");
    // A flipped byte fails the page's checksum.
    req.pages = vec![(Lpn(10), 0), (Lpn(11), 1), (Lpn(12), 2)];
    object[PAGE_SIZE + 100] ^= 0x40;
    let e = served(&req, &object).unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::DATA_CORRUPTED, "{e}");
    // A page past the object's end was never written.
    object.truncate(PAGE_SIZE);
    req.pages = vec![(Lpn(10), 0), (Lpn(11), 1), (Lpn(12), 2)];
    let e = served(&req, &object).unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::DATA_CORRUPTED, "{e}");
}

#[test]
fn truncated_or_flipped_requests_are_errors_not_panics() {
    let (object, heads) = fixture();
    let bytes = request(ObjectOp::Pipeline(sum_and_count()), &heads, 32).encode();
    for cut in 0..bytes.len() {
        let reply = serve(&bytes[..cut], &object);
        assert!(decode_reply(&reply).is_err(), "cut at {cut}");
    }
    for at in 0..bytes.len() {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0xff;
        // Any answer or an error; never a panic.
        let _ = decode_reply(&serve(&flipped, &object));
    }
    let reply = serve(&bytes, &object);
    for cut in 0..reply.len() {
        assert!(decode_reply(&reply[..cut]).is_err(), "reply cut at {cut}");
    }
}

#[test]
fn an_update_reads_whole_versions_with_their_vids_and_defers_at_the_head() {
    let (object, heads) = fixture();
    let mut req = request(ObjectOp::Versions, &heads, 32);
    // WHERE value < 1005
    req.plan.filter = Some(Program {
        consts: vec![Value::BigInt(1005)],
        ops: vec![Op::Column(1), Op::Const(0), Op::Lt],
    });
    let Outcome::Done(reply) = served(&req, &object).unwrap() else {
        panic!("over its cap");
    };
    assert_eq!(reply.tuples, 62);
    let got: Vec<(i64, RecId, i64)> = reply
        .rows
        .iter()
        .flat_map(|(_, rows)| rows.iter())
        .map(|r| match r[..] {
            [Value::BigInt(vid), Value::BigInt(rid), Value::Int(id), Value::BigInt(v)] => {
                assert_eq!(vid, id as i64, "the VID rides with its own row");
                (vid, RecId::from_raw(rid as u64), v)
            }
            ref r => panic!("{r:?}"),
        })
        .collect();
    let mut want: Vec<(i64, RecId, i64)> = (10..32)
        .map(|v| (v, RecId::new(Lpn(10), v as u16), v))
        .collect();
    want.extend((0..5).map(|v| (v, RecId::new(Lpn(11), v as u16), v + 1000)));
    want.extend((32..50).map(|v| (v, RecId::new(Lpn(10), v as u16), v)));
    // VID 60's head is not seen: its older version, on LPN 10, is.
    want.push((60, RecId::new(Lpn(10), 50), 60));
    assert_eq!(got, want);
    // VIDs 50..60 go on in another object: deferred at their heads.
    let deferred: Vec<(u64, RecId)> = (0..10).map(|s| (1, RecId::new(Lpn(12), s))).collect();
    assert_eq!(reply.deferred, deferred);
}
