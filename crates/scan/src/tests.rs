//! The kernels against the row evaluator: random pages, random
//! predicates and aggregates give the same rows and the same results.

use ndpdb_formats::agg::{Acc, AggFunc, AggSpec};
use ndpdb_formats::codec::Writer;
use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::page::{PageBuf, PageRef};
use ndpdb_formats::record::{encode_record, RecordHeader};
use ndpdb_formats::{DataType, Decimal, Lpn, RecId, TableId, TxId, Value, Vid};
use proptest::prelude::*;

use crate::{Pipeline, PipelineOp, PipelineState};

const TYPES: [DataType; 8] = [
    DataType::Int,
    DataType::BigInt,
    DataType::Numeric {
        precision: 12,
        scale: 2,
    },
    DataType::Double,
    DataType::Text,
    DataType::Timestamp,
    DataType::Date,
    DataType::Bool,
];

fn value(ty: DataType) -> BoxedStrategy<Value> {
    let v: BoxedStrategy<Value> = match ty {
        DataType::Int => (-20i32..20).prop_map(Value::Int).boxed(),
        DataType::BigInt => (-20i64..20).prop_map(Value::BigInt).boxed(),
        DataType::Numeric { .. } => (-2000i128..2000)
            .prop_map(|m| Value::Numeric(Decimal::new(m, 2)))
            .boxed(),
        DataType::Double => prop_oneof![
            9 => (-20i32..20).prop_map(|x| Value::Double(x as f64 / 4.0)),
            1 => Just(Value::Double(f64::NAN)),
        ]
        .boxed(),
        DataType::Text => "[a-c]{0,3}".prop_map(Value::Text).boxed(),
        DataType::Timestamp => (-3i64..3)
            .prop_map(|d| Value::Timestamp(d * 43_200_000_000))
            .boxed(),
        DataType::Date => (-2i32..2).prop_map(Value::Date).boxed(),
        _ => any::<bool>().prop_map(Value::Bool).boxed(),
    };
    prop_oneof![1 => Just(Value::Null), 5 => v].boxed()
}

/// A constant comparable with column `c` (sometimes of a related type).
fn constant(c: usize) -> BoxedStrategy<Value> {
    match TYPES[c] {
        DataType::Int | DataType::BigInt => prop_oneof![
            value(DataType::Int),
            value(DataType::BigInt),
            (-2000i128..2000).prop_map(|m| Value::Numeric(Decimal::new(m, 3))),
        ]
        .boxed(),
        DataType::Numeric { .. } => prop_oneof![
            value(DataType::Int),
            (-2000i128..2000).prop_map(|m| Value::Numeric(Decimal::new(m, 3))),
            (-200i128..200).prop_map(|m| Value::Numeric(Decimal::new(m, 1))),
        ]
        .boxed(),
        DataType::Timestamp | DataType::Date => {
            prop_oneof![value(DataType::Timestamp), value(DataType::Date)].boxed()
        }
        DataType::Double => prop_oneof![value(DataType::Double), value(DataType::Int)].boxed(),
        ty => value(ty),
    }
}

#[derive(Clone, Debug)]
enum P {
    Cmp(usize, Op, Value, bool),
    IsNull(usize, bool),
    /// `column [NOT] IN (constants)`.
    In(usize, Vec<Value>, bool),
    /// The same with the list sorted once (`Op::InSorted`, long lists).
    InSorted(usize, Vec<Value>, bool),
    And(Box<P>, Box<P>),
    Or(Box<P>, Box<P>),
    Not(Box<P>),
}

fn pred() -> impl Strategy<Value = P> {
    let cmp = prop_oneof![
        Just(Op::Eq),
        Just(Op::Ne),
        Just(Op::Lt),
        Just(Op::Le),
        Just(Op::Gt),
        Just(Op::Ge)
    ];
    let leaf = prop_oneof![
        4 => (0..TYPES.len(), cmp, any::<bool>())
            .prop_flat_map(|(c, op, flip)| (Just(c), Just(op), constant(c), Just(flip)))
            .prop_map(|(c, op, v, flip)| P::Cmp(c, op, v, flip)),
        1 => (0..TYPES.len(), any::<bool>()).prop_map(|(c, n)| P::IsNull(c, n)),
        1 => (0..TYPES.len(), 1..5usize, any::<bool>())
            .prop_flat_map(|(c, n, neg)| (Just(c), proptest::collection::vec(constant(c), n), Just(neg)))
            .prop_map(|(c, items, neg)| P::In(c, items, neg)),
        1 => (0..2usize, 2..40usize, any::<bool>())
            .prop_flat_map(|(c, n, neg)| (Just(c), proptest::collection::vec(value(TYPES[c]), n), Just(neg)))
            .prop_map(|(c, items, neg)| P::InSorted(c, items, neg)),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| P::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| P::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| P::Not(Box::new(a))),
        ]
    })
}

fn emit(p: &P, prog: &mut Program) {
    match p {
        P::Cmp(c, op, v, flip) => {
            prog.consts.push(v.clone());
            let k = prog.consts.len() as u32 - 1;
            if *flip {
                prog.ops.push(Op::Const(k));
                prog.ops.push(Op::Column(*c as u32));
            } else {
                prog.ops.push(Op::Column(*c as u32));
                prog.ops.push(Op::Const(k));
            }
            prog.ops.push(op.clone());
        }
        P::In(c, items, negated) => {
            prog.ops.push(Op::Column(*c as u32));
            for v in items {
                prog.consts.push(v.clone());
                prog.ops.push(Op::Const(prog.consts.len() as u32 - 1));
            }
            prog.ops.push(Op::In {
                n: items.len() as u32,
                negated: *negated,
            });
        }
        P::InSorted(c, items, negated) => {
            let mut items = items.clone();
            let first = prog.consts.len() as u32;
            let Some(has_null) = ndpdb_formats::expr::sort_in_list(&mut items) else {
                // Only NULLs: `column IS NULL AND NULL`, always NULL or FALSE.
                prog.ops.push(Op::Column(*c as u32));
                prog.ops.push(Op::IsNull);
                return;
            };
            prog.ops.push(Op::Column(*c as u32));
            prog.ops.push(Op::InSorted {
                first,
                n: items.len() as u32,
                negated: *negated,
                has_null,
            });
            prog.consts.extend(items);
        }
        P::IsNull(c, n) => {
            prog.ops.push(Op::Column(*c as u32));
            prog.ops.push(if *n { Op::IsNotNull } else { Op::IsNull });
        }
        P::And(a, b) | P::Or(a, b) => {
            emit(a, prog);
            emit(b, prog);
            prog.ops.push(if matches!(p, P::And(..)) {
                Op::And
            } else {
                Op::Or
            });
        }
        P::Not(a) => {
            emit(a, prog);
            prog.ops.push(Op::Not);
        }
    }
}

fn rows() -> impl Strategy<Value = Vec<Vec<Value>>> {
    let row: Vec<_> = TYPES.iter().map(|t| value(*t)).collect();
    proptest::collection::vec(row, 1..60)
}

fn page_of(rows: &[Vec<Value>]) -> PageBuf {
    let mut page = PageBuf::new(TableId(1), Lpn(1), &TYPES);
    for (i, r) in rows.iter().enumerate() {
        let h = RecordHeader {
            creator: TxId(1),
            pred: RecId::NULL,
            vid: Vid(i as u64),
            flags: 0,
        };
        let mut w = Writer::new();
        encode_record(&h, &TYPES, r, &mut w).unwrap();
        page.append(w.as_slice()).unwrap().unwrap();
    }
    page.seal();
    page
}

fn results(p: &Pipeline, st: PipelineState, aggs: &[AggSpec]) -> Vec<Value> {
    let mut g = p.finish(st);
    let accs = g
        .remove(&Vec::new())
        .map(|(_, a)| a)
        .unwrap_or_else(|| aggs.iter().map(Acc::new).collect());
    accs.into_iter()
        .zip(aggs)
        .map(|(a, s)| a.finish(s).unwrap())
        .collect()
}

fn agg(func: AggFunc, c: Option<usize>, result_ty: DataType) -> AggSpec {
    AggSpec {
        func,
        distinct: false,
        arg: c.map(|c| Program {
            consts: vec![],
            ops: vec![Op::Column(c as u32)],
        }),
        result_ty,
        extra: vec![],
        order: vec![],
        filtered: false,
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        _ => a == b,
    }
}

proptest! {
    #[test]
    fn kernels_filter_like_the_row_evaluator(rows in rows(), p in pred()) {
        let mut prog = Program::default();
        emit(&p, &mut prog);
        let page = page_of(&rows);
        let view = PageRef::parse_verified(page.as_bytes()).unwrap();
        let all = (0..TYPES.len() as u32).collect::<Vec<_>>();
        let pipe = Pipeline::new(&TYPES, &[], Some(&prog), PipelineOp::Project { columns: all.clone() });
        // Every predicate of this grammar runs as kernels.
        prop_assert!(pipe.filter_vectorized(), "{:?}", prog);
        let mut st = PipelineState::default();
        let mut sel: Vec<u16> = (0..rows.len() as u16).collect();
        let got = pipe.page(&mut st, &view, &mut sel).map(|_| st.rows.clone());
        let want: Result<Vec<Vec<Value>>, _> = rows
            .iter()
            .filter_map(|r| match prog.eval_predicate(r, &[]) {
                Ok(true) => Some(Ok(r.clone())),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            })
            .collect();
        match (got, want) {
            (Ok(g), Ok(w)) => {
                prop_assert_eq!(g.len(), w.len());
                for (a, b) in g.iter().zip(&w) {
                    prop_assert!(a.iter().zip(b).all(|(x, y)| same(x, y)), "{:?} vs {:?}", a, b);
                }
            }
            (Err(g), Err(w)) => prop_assert_eq!(g.sqlstate(), w.sqlstate()),
            (g, w) => prop_assert!(false, "kernels {:?}, rows {:?}", g.map(|r| r.len()), w.map(|r| r.len())),
        }
    }

    #[test]
    fn rows_in_table_layout_keep_the_projected_columns_in_place(rows in rows()) {
        let page = page_of(&rows);
        let view = PageRef::parse_verified(page.as_bytes()).unwrap();
        let project = PipelineOp::Project { columns: vec![2, 0] };
        let pipe = Pipeline::new(&TYPES, &[], None, project).with_rows_in_table_layout();
        let mut st = PipelineState::default();
        let mut sel: Vec<u16> = (0..rows.len() as u16).collect();
        pipe.page(&mut st, &view, &mut sel).unwrap();
        let mut by_row = PipelineState::default();
        for r in &rows {
            pipe.row(&mut by_row, r).unwrap();
        }
        prop_assert_eq!(st.rows.len(), rows.len());
        prop_assert_eq!(by_row.rows.len(), rows.len());
        for ((paged, decoded), r) in st.rows.iter().zip(&by_row.rows).zip(&rows) {
            prop_assert_eq!(paged.len(), TYPES.len());
            prop_assert_eq!(decoded.len(), TYPES.len());
            for c in 0..TYPES.len() {
                let want = if c == 0 || c == 2 { r[c].clone() } else { Value::Null };
                prop_assert!(same(&paged[c], &want), "{:?} vs {:?}", paged, r);
                prop_assert!(same(&decoded[c], &want), "{:?} vs {:?}", decoded, r);
            }
        }
    }

    #[test]
    fn kernels_aggregate_like_the_row_path(rows in rows()) {
        let page = page_of(&rows);
        let view = PageRef::parse_verified(page.as_bytes()).unwrap();
        let mut aggs = vec![agg(AggFunc::CountStar, None, DataType::BigInt)];
        for (c, ty) in TYPES.iter().enumerate() {
            aggs.push(agg(AggFunc::Count, Some(c), DataType::BigInt));
            aggs.push(agg(AggFunc::Min, Some(c), *ty));
            aggs.push(agg(AggFunc::Max, Some(c), *ty));
            let sum_ty = match ty {
                DataType::Int => Some(DataType::BigInt),
                DataType::BigInt | DataType::Numeric { .. } => Some(DataType::Numeric { precision: 0, scale: 0 }),
                DataType::Double => Some(DataType::Double),
                _ => None,
            };
            if let Some(t) = sum_ty {
                aggs.push(agg(AggFunc::Sum, Some(c), t));
            }
        }
        let op = PipelineOp::Aggregate { groups: vec![], aggs: aggs.clone() };
        let pipe = Pipeline::new(&TYPES, &[], None, op);
        let mut st = PipelineState::default();
        let mut sel: Vec<u16> = (0..rows.len() as u16).collect();
        pipe.page(&mut st, &view, &mut sel).unwrap();
        let got = results(&pipe, st, &aggs);
        let mut want: Vec<Acc> = aggs.iter().map(Acc::new).collect();
        for r in &rows {
            for (a, s) in want.iter_mut().zip(&aggs) {
                let v = s.arg.as_ref().map_or(Value::Null, |p| p.eval(r, &[]).unwrap());
                a.add(s, v).unwrap();
            }
        }
        for ((g, w), s) in got.iter().zip(want).zip(&aggs) {
            let w = w.finish(s).unwrap();
            prop_assert!(same(g, &w), "{:?}: {:?} vs {:?}", s, g, w);
        }
    }

    /// GROUP BY columns: the page path (rows split by key, kernels per
    /// group) and the row path fold into the same groups, and the
    /// results are those of grouping row by row.
    #[test]
    fn grouped_kernels_aggregate_like_the_row_path(
        rows in rows(),
        grouping in prop_oneof![Just(vec![0usize]), Just(vec![7, 0]), Just(vec![4]), Just(vec![6, 2])],
        on_page in 0usize..60,
    ) {
        let page = page_of(&rows);
        let view = PageRef::parse_verified(page.as_bytes()).unwrap();
        let mut aggs = vec![agg(AggFunc::CountStar, None, DataType::BigInt)];
        aggs.push(agg(AggFunc::Sum, Some(0), DataType::BigInt));
        aggs.push(agg(AggFunc::Avg, Some(2), DataType::Numeric { precision: 0, scale: 0 }));
        aggs.push(agg(AggFunc::Max, Some(4), DataType::Text));
        aggs.push(agg(AggFunc::Count, Some(5), DataType::BigInt));
        let mut distinct = agg(AggFunc::Count, Some(1), DataType::BigInt);
        distinct.distinct = true;
        aggs.push(distinct);
        let groups: Vec<Program> = grouping
            .iter()
            .map(|&c| Program { consts: vec![], ops: vec![Op::Column(c as u32)] })
            .collect();
        let op = PipelineOp::Aggregate { groups, aggs: aggs.clone() };
        let pipe = Pipeline::new(&TYPES, &[], None, op);
        let mut st = PipelineState::default();
        // The first rows by the page path, the others one at a time.
        let split = on_page.min(rows.len());
        let mut sel: Vec<u16> = (0..split as u16).collect();
        pipe.page(&mut st, &view, &mut sel).unwrap();
        for r in &rows[split..] {
            pipe.row(&mut st, r).unwrap();
        }
        let got = pipe.finish(st);
        let mut want: std::collections::HashMap<Vec<u8>, Vec<Acc>> = Default::default();
        for r in &rows {
            let mut key = Writer::new();
            for &c in &grouping {
                r[c].key_bytes(&mut key);
            }
            let accs = want
                .entry(key.into_inner())
                .or_insert_with(|| aggs.iter().map(Acc::new).collect());
            for (a, s) in accs.iter_mut().zip(&aggs) {
                let v = s.arg.as_ref().map_or(Value::Null, |p| p.eval(r, &[]).unwrap());
                a.add(s, v).unwrap();
            }
        }
        prop_assert_eq!(got.len(), want.len());
        for (key, (values, accs)) in got {
            let w = want.remove(&key);
            prop_assert!(w.is_some(), "group {:?} not in the row path's", values);
            let first = rows
                .iter()
                .find(|r| {
                    let mut k = Writer::new();
                    for &c in &grouping {
                        r[c].key_bytes(&mut k);
                    }
                    k.as_slice() == key.as_slice()
                })
                .unwrap();
            for (v, &c) in values.iter().zip(&grouping) {
                prop_assert!(same(v, &first[c]), "group value {:?} vs {:?}", v, first[c]);
            }
            for ((g, w), s) in accs.into_iter().zip(w.unwrap()).zip(&aggs) {
                let (g, w) = (g.finish(s).unwrap(), w.finish(s).unwrap());
                prop_assert!(same(&g, &w), "{:?}: {:?} vs {:?}", s, g, w);
            }
        }
    }
}
