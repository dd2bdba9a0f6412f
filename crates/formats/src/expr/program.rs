//! A compiled expression: the stack-machine instructions ([`Op`]), the
//! constant pool they index ([`Program`]), and what the planner does to a
//! program without running it — read its columns, renumber them, AND two
//! programs together, build a sorted IN list.
//!
//! ```text
//!  a + 1 > $1 AND b IS NULL
//!    consts: [1]
//!    ops:    Column(0) Const(0) Add Param(0) Gt
//!            JumpIfFalseKeep(9) Column(1) IsNull And
//! ```
//!
//! Jumps only go forward (the decoder in `codec.rs` checks it), so every
//! program terminates. Running a program is `eval.rs`.

use std::cmp::Ordering;

use crate::types::DataType;
use crate::value::Value;

use super::func::Func;

/// One bytecode instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Const(u32),
    Column(u32),
    Param(u32),
    Neg,
    Not,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    /// If the top of the stack is FALSE, jump (keeping it): AND short-circuit.
    JumpIfFalseKeep(u32),
    /// If the top of the stack is TRUE, jump (keeping it): OR short-circuit.
    JumpIfTrueKeep(u32),
    /// Pop; jump unless it was TRUE (CASE WHEN).
    JumpIfNotTrue(u32),
    Jump(u32),
    IsNull,
    IsNotNull,
    /// Pops pattern then value.
    Like {
        negated: bool,
        case_insensitive: bool,
    },
    /// Stack: value, item₁ … itemₙ.
    In {
        n: u32,
        negated: bool,
    },
    /// Stack: value. The items are the constants `first..first + n`,
    /// sorted by [`Value::sql_cmp`] without duplicates or NULLs
    /// (`has_null`: the list had one): a binary search per row, so a
    /// 10 MB IN list costs no more per row than a short one.
    InSorted {
        first: u32,
        n: u32,
        negated: bool,
        has_null: bool,
    },
    Cast(DataType),
    Call {
        func: Func,
        nargs: u8,
    },
    /// Stack: → the start time of the transaction (`current_timestamp`,
    /// `now()`), a TIMESTAMP the executor appends to the statement's
    /// parameters as the last one: the same value in every statement of
    /// a transaction, on the host and on the device.
    TransactionTime,
}

/// A compiled expression.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub consts: Vec<Value>,
    pub ops: Vec<Op>,
}

impl Program {
    /// The column this program is, when it only reads one column.
    pub fn single_column(&self) -> Option<usize> {
        match self.ops.as_slice() {
            [Op::Column(i)] => Some(*i as usize),
            _ => None,
        }
    }

    /// This program reading column `map(i)` wherever it reads column
    /// `i`; `None` if `map` has no place for one of them.
    pub fn remap_columns(&self, map: impl Fn(u32) -> Option<u32>) -> Option<Program> {
        let mut p = self.clone();
        for op in &mut p.ops {
            if let Op::Column(i) = op {
                *i = map(*i)?;
            }
        }
        Some(p)
    }

    /// `self AND other`, short-circuiting as the compiler's AND does.
    pub fn and(&self, other: &Program) -> Program {
        let consts_at = self.consts.len() as u32;
        let ops_at = self.ops.len() as u32 + 1;
        let mut ops = Vec::with_capacity(self.ops.len() + other.ops.len() + 2);
        ops.extend(self.ops.iter().cloned());
        ops.push(Op::JumpIfFalseKeep(0));
        ops.extend(other.ops.iter().map(|op| match op {
            Op::Const(i) => Op::Const(i + consts_at),
            Op::InSorted {
                first,
                n,
                negated,
                has_null,
            } => Op::InSorted {
                first: first + consts_at,
                n: *n,
                negated: *negated,
                has_null: *has_null,
            },
            Op::JumpIfFalseKeep(t) => Op::JumpIfFalseKeep(t + ops_at),
            Op::JumpIfTrueKeep(t) => Op::JumpIfTrueKeep(t + ops_at),
            Op::JumpIfNotTrue(t) => Op::JumpIfNotTrue(t + ops_at),
            Op::Jump(t) => Op::Jump(t + ops_at),
            op => op.clone(),
        }));
        ops.push(Op::And);
        let end = ops.len() as u32;
        ops[ops_at as usize - 1] = Op::JumpIfFalseKeep(end);
        let mut consts = self.consts.clone();
        consts.extend(other.consts.iter().cloned());
        Program { consts, ops }
    }

    /// `column IN (items)` with the items as one sorted list; `None` if
    /// they are not all of one kind (see [`sort_in_list`]).
    pub fn in_list(column: u32, mut items: Vec<Value>) -> Option<Program> {
        let has_null = sort_in_list(&mut items)?;
        let n = items.len() as u32;
        Some(Program {
            consts: items,
            ops: vec![
                Op::Column(column),
                Op::InSorted {
                    first: 0,
                    n,
                    negated: false,
                    has_null,
                },
            ],
        })
    }

    pub fn columns(&self) -> Vec<u32> {
        let mut c: Vec<u32> = self
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Column(i) => Some(*i),
                _ => None,
            })
            .collect();
        c.sort_unstable();
        c.dedup();
        c
    }
}

/// Sorts IN-list constants in place for [`Op::InSorted`]: the non-NULL
/// values sorted by [`Value::sql_cmp`] without duplicates; returns whether
/// there was a NULL. `None` (the list untouched) if the values are not
/// all of one kind.
pub fn sort_in_list(items: &mut Vec<Value>) -> Option<bool> {
    let first = items.iter().find(|v| !v.is_null())?;
    let kind = std::mem::discriminant(first);
    if items
        .iter()
        .any(|v| !v.is_null() && std::mem::discriminant(v) != kind)
    {
        return None;
    }
    let before = items.len();
    items.retain(|v| !v.is_null());
    let has_null = items.len() != before;
    items.sort_by(|a, b| a.sql_cmp(b).unwrap_or(Ordering::Equal));
    items.dedup_by(|a, b| a.sql_cmp(b) == Some(Ordering::Equal));
    Some(has_null)
}
