//! Programs as bytes: how the host ships an expression to the device
//! (inside an NDP invocation) and the device reads it back, checked —
//! a corrupted or hostile program is an error, never a panic or a loop.
//!
//! ```text
//!  Program ─ encode ─► u32 #consts, value…  u32 #ops, opcode [operands]…
//!                      value: tag byte + payload (0 NULL … 9 BYTEA)
//!  decode: every tag known, every jump forward and in range
//! ```

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};
use crate::types::DataType;
use crate::value::{Decimal, Value};

use super::func::Func;
use super::program::{Op, Program};

impl Program {
    pub fn encode(&self, w: &mut Writer) {
        w.u32(self.consts.len() as u32);
        for c in &self.consts {
            encode_value(c, w);
        }
        w.u32(self.ops.len() as u32);
        for op in &self.ops {
            encode_op(op, w);
        }
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<Program> {
        let n = r.count(1)?;
        let mut consts = Vec::with_capacity(n);
        for _ in 0..n {
            consts.push(decode_value(r)?);
        }
        let n = r.count(1)?;
        let mut ops = Vec::with_capacity(n);
        for _ in 0..n {
            ops.push(decode_op(r)?);
        }
        for (at, op) in ops.iter().enumerate() {
            let target = match op {
                Op::JumpIfFalseKeep(t)
                | Op::JumpIfTrueKeep(t)
                | Op::JumpIfNotTrue(t)
                | Op::Jump(t) => *t,
                _ => continue,
            };
            // Jumps only go forward, so every program terminates.
            if target as usize > ops.len() || target as usize <= at {
                return Err(Error::corrupted("jump target out of range"));
            }
        }
        Ok(Program { consts, ops })
    }
}

pub fn encode_value(v: &Value, w: &mut Writer) {
    match v {
        Value::Null => {
            w.u8(0);
        }
        Value::Bool(b) => {
            w.u8(1).bool(*b);
        }
        Value::Int(x) => {
            w.u8(2).i32(*x);
        }
        Value::BigInt(x) => {
            w.u8(3).i64(*x);
        }
        Value::Double(x) => {
            w.u8(4).f64(*x);
        }
        Value::Numeric(d) => {
            w.u8(5).i128(d.mantissa).u8(d.scale);
        }
        Value::Date(x) => {
            w.u8(6).i32(*x);
        }
        Value::Timestamp(x) => {
            w.u8(7).i64(*x);
        }
        Value::Text(s) => {
            w.u8(8).str(s);
        }
        Value::Bytea(b) => {
            w.u8(9).bytes(b);
        }
        Value::Array(a) => {
            w.u8(10);
            a.encode(w);
        }
        Value::Json(s) => {
            w.u8(11).str(s);
        }
        Value::Jsonb(j) => {
            w.u8(12).str(&j.to_string());
        }
    }
}

pub fn decode_value(r: &mut Reader<'_>) -> Result<Value> {
    Ok(match r.u8()? {
        0 => Value::Null,
        1 => Value::Bool(r.bool()?),
        2 => Value::Int(r.i32()?),
        3 => Value::BigInt(r.i64()?),
        4 => Value::Double(r.f64()?),
        5 => {
            let m = r.i128()?;
            let s = r.u8()?;
            if s > crate::value::MAX_SCALE {
                return Err(Error::corrupted("numeric scale out of range"));
            }
            Value::Numeric(Decimal::new(m, s))
        }
        6 => Value::Date(r.i32()?),
        7 => Value::Timestamp(r.i64()?),
        8 => Value::Text(r.str()?.to_string()),
        9 => Value::Bytea(r.bytes()?.to_vec()),
        10 => Value::Array(Box::new(crate::array::ArrayValue::decode(r)?)),
        11 => Value::Json(r.str()?.to_string()),
        12 => crate::json_convert::decode_stored(DataType::Jsonb, r.str()?.as_bytes())?,
        t => return Err(Error::corrupted(format!("unknown value tag {t}"))),
    })
}

fn encode_op(op: &Op, w: &mut Writer) {
    match op {
        Op::Const(i) => w.u8(1).u32(*i),
        Op::Column(i) => w.u8(2).u32(*i),
        Op::Param(i) => w.u8(3).u32(*i),
        Op::Neg => w.u8(4),
        Op::Not => w.u8(5),
        Op::Add => w.u8(6),
        Op::Sub => w.u8(7),
        Op::Mul => w.u8(8),
        Op::Div => w.u8(9),
        Op::Mod => w.u8(10),
        Op::Concat => w.u8(11),
        Op::Eq => w.u8(12),
        Op::Ne => w.u8(13),
        Op::Lt => w.u8(14),
        Op::Le => w.u8(15),
        Op::Gt => w.u8(16),
        Op::Ge => w.u8(17),
        Op::And => w.u8(18),
        Op::Or => w.u8(19),
        Op::JumpIfFalseKeep(t) => w.u8(20).u32(*t),
        Op::JumpIfTrueKeep(t) => w.u8(21).u32(*t),
        Op::JumpIfNotTrue(t) => w.u8(22).u32(*t),
        Op::Jump(t) => w.u8(23).u32(*t),
        Op::IsNull => w.u8(24),
        Op::IsNotNull => w.u8(25),
        Op::Like {
            negated,
            case_insensitive,
        } => w.u8(26).bool(*negated).bool(*case_insensitive),
        Op::In { n, negated } => w.u8(27).u32(*n).bool(*negated),
        Op::Cast(ty) => {
            w.u8(28);
            ty.encode(w);
            w
        }
        Op::Call { func, nargs } => w.u8(29).u8(func.tag()).u8(*nargs),
        Op::InSorted {
            first,
            n,
            negated,
            has_null,
        } => w.u8(30).u32(*first).u32(*n).bool(*negated).bool(*has_null),
        Op::TransactionTime => w.u8(31),
    };
}

fn decode_op(r: &mut Reader<'_>) -> Result<Op> {
    Ok(match r.u8()? {
        1 => Op::Const(r.u32()?),
        2 => Op::Column(r.u32()?),
        3 => Op::Param(r.u32()?),
        4 => Op::Neg,
        5 => Op::Not,
        6 => Op::Add,
        7 => Op::Sub,
        8 => Op::Mul,
        9 => Op::Div,
        10 => Op::Mod,
        11 => Op::Concat,
        12 => Op::Eq,
        13 => Op::Ne,
        14 => Op::Lt,
        15 => Op::Le,
        16 => Op::Gt,
        17 => Op::Ge,
        18 => Op::And,
        19 => Op::Or,
        20 => Op::JumpIfFalseKeep(r.u32()?),
        21 => Op::JumpIfTrueKeep(r.u32()?),
        22 => Op::JumpIfNotTrue(r.u32()?),
        23 => Op::Jump(r.u32()?),
        24 => Op::IsNull,
        25 => Op::IsNotNull,
        26 => Op::Like {
            negated: r.bool()?,
            case_insensitive: r.bool()?,
        },
        27 => Op::In {
            n: r.u32()?,
            negated: r.bool()?,
        },
        28 => Op::Cast(DataType::decode(r)?),
        29 => Op::Call {
            func: Func::from_tag(r.u8()?)?,
            nargs: r.u8()?,
        },
        30 => Op::InSorted {
            first: r.u32()?,
            n: r.u32()?,
            negated: r.bool()?,
            has_null: r.bool()?,
        },
        31 => Op::TransactionTime,
        t => return Err(Error::corrupted(format!("unknown opcode {t}"))),
    })
}
