//! The evaluator against its contracts: the sorted IN answers as the
//! scanning IN, AND of programs with jumps, three-valued logic,
//! SQLSTATEs, LIKE, and garbage bytes that must not panic.

use super::*;
use crate::codec::{Reader, Writer};
use crate::error::SqlState;
use crate::value::Value;

fn prog(consts: Vec<Value>, ops: Vec<Op>) -> Program {
    Program { consts, ops }
}

#[test]
fn sorted_in_answers_as_the_scanning_in() {
    let lists: Vec<Vec<Value>> = vec![
        (0..40).rev().map(|i| Value::Int(i * 3 % 50)).collect(),
        (0..40)
            .map(|i| Value::Int(i * 7))
            .chain([Value::Null])
            .collect(),
        (0..20)
            .map(|i| Value::Text(format!("k{}", i % 9)))
            .collect(),
    ];
    for list in lists {
        let n = list.len() as u32;
        for negated in [false, true] {
            let mut scan_consts = vec![];
            let mut scan_ops = vec![Op::Param(0)];
            for v in &list {
                scan_ops.push(Op::Const(scan_consts.len() as u32));
                scan_consts.push(v.clone());
            }
            scan_ops.push(Op::In { n, negated });
            let scan = prog(scan_consts, scan_ops);
            let mut sorted = list.clone();
            let has_null = sort_in_list(&mut sorted).unwrap();
            let m = sorted.len() as u32;
            let search = prog(
                sorted,
                vec![
                    Op::Param(0),
                    Op::InSorted {
                        first: 0,
                        n: m,
                        negated,
                        has_null,
                    },
                ],
            );
            let mut w = Writer::new();
            search.encode(&mut w);
            let bytes = w.into_inner();
            assert_eq!(Program::decode(&mut Reader::new(&bytes)).unwrap(), search);
            let probes: Vec<Value> = match &list[0] {
                Value::Text(_) => (0..12).map(|i| Value::Text(format!("k{i}"))).collect(),
                _ => (-2..300)
                    .map(Value::Int)
                    .chain([Value::BigInt(21)])
                    .collect(),
            };
            for p in probes.into_iter().chain([Value::Null]) {
                let params = [p];
                assert_eq!(
                    scan.eval(&[], &params).unwrap(),
                    search.eval(&[], &params).unwrap(),
                    "{params:?} in {list:?}"
                );
            }
            // A value of another type is the same error either way.
            let params = [Value::Bool(true)];
            assert!(scan.eval(&[], &params).is_err() && search.eval(&[], &params).is_err());
        }
    }
    let mut mixed = vec![Value::Int(1), Value::Text("a".into())];
    assert!(sort_in_list(&mut mixed).is_none());
    assert_eq!(mixed.len(), 2);
}

/// `a.and(b)` is SQL's AND of the two, and short-circuits: with `a`
/// FALSE, `b` (which would divide by zero) is not evaluated.
#[test]
fn and_of_two_programs_with_jumps_and_lists() {
    // a: col0 <> 0 AND col1 > 0 (a jump of its own)
    let a = prog(
        vec![Value::Int(0)],
        vec![
            Op::Column(0),
            Op::Const(0),
            Op::Ne,
            Op::JumpIfFalseKeep(8),
            Op::Column(1),
            Op::Const(0),
            Op::Gt,
            Op::And,
        ],
    );
    // b: 10 / col0 IN (5, 10, NULL)
    let mut b = Program::in_list(0, vec![Value::Int(10), Value::Null, Value::Int(5)]).unwrap();
    b.consts.push(Value::Int(10));
    b.ops = vec![
        Op::Const(2),
        Op::Column(0),
        Op::Div,
        Op::InSorted {
            first: 0,
            n: 2,
            negated: false,
            has_null: true,
        },
    ];
    let both = a.and(&b);
    let mut w = Writer::new();
    both.encode(&mut w);
    let bytes = w.into_inner();
    assert_eq!(Program::decode(&mut Reader::new(&bytes)).unwrap(), both);
    let at = |x: i32, y: i32| both.eval(&[Value::Int(x), Value::Int(y)], &[]).unwrap();
    assert_eq!(at(0, 1), Value::Bool(false), "no division by zero");
    assert_eq!(at(2, 1), Value::Bool(true));
    assert_eq!(at(1, 1), Value::Bool(true), "10 / 1 = 10");
    assert_eq!(
        at(3, 1),
        Value::Null,
        "3 is not listed and the list has a NULL"
    );
    assert_eq!(at(2, 0), Value::Bool(false));
    let ints = Program::in_list(2, vec![Value::Int(7), Value::Int(3), Value::Int(7)]).unwrap();
    assert_eq!(ints.consts, vec![Value::Int(3), Value::Int(7)]);
    assert!(Program::in_list(0, vec![Value::Int(1), Value::Text("a".into())]).is_none());
}

#[test]
fn three_valued_and_short_circuit() {
    // col0 <> 0 AND 10 / col0 > 1  — must not divide by zero when col0 = 0
    let p = prog(
        vec![Value::Int(0), Value::Int(10), Value::Int(1)],
        vec![
            Op::Column(0),
            Op::Const(0),
            Op::Ne,
            Op::JumpIfFalseKeep(10),
            Op::Const(1),
            Op::Column(0),
            Op::Div,
            Op::Const(2),
            Op::Gt,
            Op::And,
        ],
    );
    assert_eq!(p.eval(&[Value::Int(0)], &[]).unwrap(), Value::Bool(false));
    assert_eq!(p.eval(&[Value::Int(5)], &[]).unwrap(), Value::Bool(true));
    assert_eq!(p.eval(&[Value::Null], &[]).unwrap(), Value::Null);
    let mut w = Writer::new();
    p.encode(&mut w);
    let bytes = w.into_inner();
    assert_eq!(Program::decode(&mut Reader::new(&bytes)).unwrap(), p);
}

#[test]
fn errors_carry_sqlstate() {
    let p = prog(
        vec![Value::Int(1), Value::Int(0)],
        vec![Op::Const(0), Op::Const(1), Op::Div],
    );
    assert_eq!(
        p.eval(&[], &[]).unwrap_err().sqlstate(),
        SqlState::DIVISION_BY_ZERO
    );
    let p = prog(
        vec![Value::Int(i32::MAX), Value::Int(1)],
        vec![Op::Const(0), Op::Const(1), Op::Add],
    );
    assert_eq!(
        p.eval(&[], &[]).unwrap_err().sqlstate(),
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE
    );
}

#[test]
fn like_patterns() {
    assert!(like("hello", "h%o").unwrap());
    assert!(like("hello", "_ell_").unwrap());
    assert!(!like("hello", "h%x").unwrap());
    assert!(like("a%b", "a\\%b").unwrap());
    assert!(like("", "%").unwrap());
    assert!(like("abcabc", "%abc").unwrap());
}

#[test]
fn garbage_programs_do_not_panic() {
    for seed in 0u32..2000 {
        let bytes: Vec<u8> = (0..40)
            .map(|i| (seed.wrapping_mul(2654435761).wrapping_add(i * 97) >> 7) as u8)
            .collect();
        if let Ok(p) = Program::decode(&mut Reader::new(&bytes)) {
            let _ = p.eval(&[Value::Int(1)], &[]);
        }
    }
}
