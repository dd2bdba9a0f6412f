//! Portable expression bytecode and its one evaluator (DESIGN.md §5).
//!
//! The SQL binder compiles every scalar expression (predicates,
//! projections, SET expressions) into a [`Program`]: a constant pool plus a
//! flat list of stack-machine [`Op`]s. Programs serialize to bytes, so the
//! host can ship them to the device, and both sides run this evaluator —
//! an offloaded filter computes exactly what the host would.
//!
//! ```text
//!  a + 1 > $1 AND b IS NULL        Column(0) Const(0) Add Param(0) Gt
//!                                  JumpIfFalseKeep(9) Column(1) IsNull And
//! ```
//!
//! Logic is SQL's three-valued logic; AND/OR short-circuit on FALSE/TRUE.

use std::cmp::Ordering;

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result, SqlState};
use crate::types::DataType;
use crate::value::{Decimal, Value};

/// Built-in scalar functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Abs,
    Lower,
    Upper,
    Length,
    Coalesce,
    Round,
    Floor,
    Ceil,
    Substr,
    NullIf,
    Greatest,
    Least,
    Trim,
    /// `spn_score(bytea)`: see [`crate::udf`].
    SpnScore,
    /// Trailing blanks removed (also how a `CHAR(n)` value becomes text).
    Rtrim,
    Ltrim,
    /// `EXTRACT(field FROM v)`: NUMERIC (see [`crate::datetime_part`]).
    Extract,
    /// `date_part('field', v)`: DOUBLE PRECISION.
    DatePart,
    /// `timestamp ± interval` (timestamp, months, days, µs): months
    /// first, the day clamped to the month's end, then days, then time.
    AddInterval,
    /// `ascii(text)`: the first character's code point (0 for '').
    Ascii,
    /// `chr(int)`: the character of a code point.
    Chr,
    /// `strpos(text, text)` / `position(a IN b)`: 1-based, 0 if absent.
    Strpos,
    /// `replace(text, from, to)`.
    Replace,
    /// `a & b`, `a | b` on integers.
    BitAnd,
    BitOr,
    /// `text ~ pattern` with flags (see [`crate::catalog_funcs`]).
    RegexMatch,
    /// `array[i]`, `array_upper(array, dim)`, `array_lower(array, dim)`
    /// on an array's text form.
    ArrayElem,
    ArrayUpper,
    ArrayLower,
    /// Field `i` (1-based) of a record's text form `(a,b)`.
    RecordField,
    /// `pg_get_expr(expr, relation)`: the expression text itself.
    PgGetExpr,
    /// `pg_get_indexdef(defs, oid, column)`: a lookup in a table of
    /// index definitions the planner made from the catalog.
    IndexDef,
    /// `trim([both|leading|trailing] chars from text)`: (text, chars, 0
    /// both / 1 leading / 2 trailing).
    TrimChars,
}

impl Func {
    const ALL: [Func; 33] = [
        Func::Abs,
        Func::Lower,
        Func::Upper,
        Func::Length,
        Func::Coalesce,
        Func::Round,
        Func::Floor,
        Func::Ceil,
        Func::Substr,
        Func::NullIf,
        Func::Greatest,
        Func::Least,
        Func::Trim,
        Func::SpnScore,
        Func::Rtrim,
        Func::Ltrim,
        Func::Extract,
        Func::DatePart,
        Func::AddInterval,
        Func::Ascii,
        Func::Chr,
        Func::Strpos,
        Func::Replace,
        Func::BitAnd,
        Func::BitOr,
        Func::RegexMatch,
        Func::ArrayElem,
        Func::ArrayUpper,
        Func::ArrayLower,
        Func::RecordField,
        Func::PgGetExpr,
        Func::IndexDef,
        Func::TrimChars,
    ];

    /// How many arguments a call takes. The variadic ones (COALESCE,
    /// GREATEST, LEAST) are bounded by the one-byte argument count of
    /// [`Op::Call`].
    pub fn arity(self) -> std::ops::RangeInclusive<usize> {
        match self {
            Func::Coalesce | Func::Greatest | Func::Least => 1..=u8::MAX as usize,
            Func::Round => 1..=2,
            Func::Substr => 2..=3,
            Func::AddInterval => 4..=4,
            Func::NullIf | Func::Extract | Func::DatePart | Func::Strpos => 2..=2,
            Func::Replace | Func::RegexMatch | Func::IndexDef | Func::TrimChars => 3..=3,
            Func::BitAnd
            | Func::BitOr
            | Func::ArrayElem
            | Func::ArrayUpper
            | Func::ArrayLower
            | Func::RecordField
            | Func::PgGetExpr => 2..=2,
            Func::Abs
            | Func::Lower
            | Func::Upper
            | Func::Length
            | Func::Floor
            | Func::Ceil
            | Func::Trim
            | Func::Rtrim
            | Func::Ltrim
            | Func::Ascii
            | Func::Chr
            | Func::SpnScore => 1..=1,
        }
    }

    pub fn by_name(name: &str) -> Option<Func> {
        Some(match name {
            "abs" => Func::Abs,
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "length" | "char_length" | "character_length" => Func::Length,
            "coalesce" => Func::Coalesce,
            "round" => Func::Round,
            "floor" => Func::Floor,
            "ceil" | "ceiling" => Func::Ceil,
            "substr" | "substring" => Func::Substr,
            "nullif" => Func::NullIf,
            "greatest" => Func::Greatest,
            "least" => Func::Least,
            "trim" | "btrim" => Func::Trim,
            "rtrim" => Func::Rtrim,
            "ltrim" => Func::Ltrim,
            "spn_score" => Func::SpnScore,
            "date_part" => Func::DatePart,
            "ascii" => Func::Ascii,
            "chr" => Func::Chr,
            "strpos" => Func::Strpos,
            "replace" => Func::Replace,
            _ => return None,
        })
    }

    fn tag(self) -> u8 {
        Func::ALL.iter().position(|f| *f == self).unwrap_or(0) as u8
    }

    fn from_tag(t: u8) -> Result<Func> {
        Func::ALL
            .get(t as usize)
            .copied()
            .ok_or_else(|| Error::corrupted(format!("unknown function tag {t}")))
    }
}

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

fn type_error(msg: String) -> Error {
    Error::sql(SqlState::UNDEFINED_FUNCTION, msg)
}

fn int_overflow(ty: &str) -> Error {
    Error::sql(
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{ty} out of range"),
    )
}

fn div_zero() -> Error {
    Error::sql(SqlState::DIVISION_BY_ZERO, "division by zero")
}

impl Program {
    /// Evaluates against one row and the statement parameters.
    pub fn eval(&self, row: &[Value], params: &[Value]) -> Result<Value> {
        // A plain column or constant needs no stack.
        match self.ops.as_slice() {
            [Op::Column(i)] => {
                return row
                    .get(*i as usize)
                    .cloned()
                    .ok_or_else(|| Error::corrupted("column index out of range"))
            }
            [Op::Const(i)] => {
                return self
                    .consts
                    .get(*i as usize)
                    .cloned()
                    .ok_or_else(|| Error::corrupted("constant index out of range"))
            }
            _ => {}
        }
        // One reusable stack per thread: no allocation per row.
        thread_local! {
            static STACK: std::cell::RefCell<Vec<Value>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        STACK.with(|cell| match cell.try_borrow_mut() {
            Ok(mut stack) => {
                stack.clear();
                let r = self.run(row, params, &mut stack);
                stack.clear();
                r
            }
            // Re-entered (cannot happen today): use a fresh stack.
            Err(_) => self.run(row, params, &mut Vec::with_capacity(8)),
        })
    }

    fn run(&self, row: &[Value], params: &[Value], stack: &mut Vec<Value>) -> Result<Value> {
        let mut pc = 0usize;
        let pop = |s: &mut Vec<Value>| s.pop().ok_or_else(|| Error::corrupted("stack underflow"));
        while pc < self.ops.len() {
            let op = &self.ops[pc];
            pc += 1;
            match op {
                Op::Const(i) => stack.push(
                    self.consts
                        .get(*i as usize)
                        .cloned()
                        .ok_or_else(|| Error::corrupted("constant index out of range"))?,
                ),
                Op::Column(i) => stack.push(
                    row.get(*i as usize)
                        .cloned()
                        .ok_or_else(|| Error::corrupted("column index out of range"))?,
                ),
                Op::TransactionTime => match params.last() {
                    Some(v @ Value::Timestamp(_)) => stack.push(v.clone()),
                    _ => {
                        return Err(Error::sql(
                            SqlState::FEATURE_NOT_SUPPORTED,
                            "current_timestamp is not available in this context",
                        ))
                    }
                },
                Op::Param(i) => stack.push(params.get(*i as usize).cloned().ok_or_else(|| {
                    Error::sql(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("there is no parameter ${}", i + 1),
                    )
                })?),
                Op::Neg => {
                    let v = pop(stack)?;
                    stack.push(negate(v)?);
                }
                Op::Not => {
                    let v = pop(stack)?;
                    stack.push(match v {
                        Value::Null => Value::Null,
                        Value::Bool(b) => Value::Bool(!b),
                        v => {
                            return Err(type_error(format!(
                                "argument of NOT must be type boolean, not {v:?}"
                            )))
                        }
                    });
                }
                Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Mod | Op::Concat => {
                    let b = pop(stack)?;
                    let a = pop(stack)?;
                    stack.push(arith(op, a, b)?);
                }
                Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
                    let b = pop(stack)?;
                    let a = pop(stack)?;
                    stack.push(compare(op, &a, &b)?);
                }
                Op::And | Op::Or => {
                    let b = truth(pop(stack)?)?;
                    let a = truth(pop(stack)?)?;
                    let r = if matches!(op, Op::And) {
                        match (a, b) {
                            (Some(false), _) | (_, Some(false)) => Some(false),
                            (Some(true), Some(true)) => Some(true),
                            _ => None,
                        }
                    } else {
                        match (a, b) {
                            (Some(true), _) | (_, Some(true)) => Some(true),
                            (Some(false), Some(false)) => Some(false),
                            _ => None,
                        }
                    };
                    stack.push(r.map_or(Value::Null, Value::Bool));
                }
                Op::JumpIfFalseKeep(t) => {
                    if matches!(stack.last(), Some(Value::Bool(false))) {
                        pc = *t as usize;
                    }
                }
                Op::JumpIfTrueKeep(t) => {
                    if matches!(stack.last(), Some(Value::Bool(true))) {
                        pc = *t as usize;
                    }
                }
                Op::JumpIfNotTrue(t) => {
                    if truth(pop(stack)?)? != Some(true) {
                        pc = *t as usize;
                    }
                }
                Op::Jump(t) => pc = *t as usize,
                Op::IsNull => {
                    let v = pop(stack)?;
                    stack.push(Value::Bool(v.is_null()));
                }
                Op::IsNotNull => {
                    let v = pop(stack)?;
                    stack.push(Value::Bool(!v.is_null()));
                }
                Op::Like {
                    negated,
                    case_insensitive,
                } => {
                    let p = pop(stack)?;
                    let v = pop(stack)?;
                    stack.push(match (v, p) {
                        (Value::Null, _) | (_, Value::Null) => Value::Null,
                        (Value::Text(v), Value::Text(p)) => {
                            let m = if *case_insensitive {
                                like(&v.to_lowercase(), &p.to_lowercase())?
                            } else {
                                like(&v, &p)?
                            };
                            Value::Bool(m != *negated)
                        }
                        (v, p) => {
                            return Err(type_error(format!(
                                "operator does not exist: {v:?} LIKE {p:?}"
                            )))
                        }
                    });
                }
                Op::In { n, negated } => {
                    let n = *n as usize;
                    if stack.len() < n + 1 {
                        return Err(Error::corrupted("stack underflow in IN"));
                    }
                    // The operand and the items in place (no copy of the list).
                    let at = stack.len() - n - 1;
                    let (v, items) = (&stack[at], &stack[at + 1..]);
                    let mut saw_null = v.is_null();
                    let mut found = false;
                    if !v.is_null() {
                        for it in items {
                            match compare(&Op::Eq, v, it)? {
                                Value::Bool(true) => {
                                    found = true;
                                    break;
                                }
                                Value::Null => saw_null = true,
                                _ => {}
                            }
                        }
                    }
                    stack.truncate(at);
                    stack.push(if found {
                        Value::Bool(!negated)
                    } else if saw_null {
                        Value::Null
                    } else {
                        Value::Bool(*negated)
                    });
                }
                Op::InSorted {
                    first,
                    n,
                    negated,
                    has_null,
                } => {
                    let v = pop(stack)?;
                    let (first, n) = (*first as usize, *n as usize);
                    let items = first
                        .checked_add(n)
                        .and_then(|end| self.consts.get(first..end))
                        .ok_or_else(|| Error::corrupted("IN list out of range"))?;
                    stack.push(if v.is_null() {
                        Value::Null
                    } else if sorted_contains(items, &v)? {
                        Value::Bool(!negated)
                    } else if *has_null {
                        Value::Null
                    } else {
                        Value::Bool(*negated)
                    });
                }
                Op::Cast(ty) => {
                    let v = pop(stack)?;
                    stack.push(v.cast(ty)?);
                }
                Op::Call { func, nargs } => {
                    let n = *nargs as usize;
                    if stack.len() < n {
                        return Err(Error::corrupted("stack underflow in call"));
                    }
                    let args = stack.split_off(stack.len() - n);
                    stack.push(call(*func, args)?);
                }
            }
        }
        let out = pop(stack)?;
        if !stack.is_empty() {
            return Err(Error::corrupted("stack not empty at end of program"));
        }
        Ok(out)
    }

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

    /// Evaluates a predicate: only TRUE qualifies (NULL and FALSE do not).
    pub fn eval_predicate(&self, row: &[Value], params: &[Value]) -> Result<bool> {
        match self.eval(row, params)? {
            Value::Bool(b) => Ok(b),
            Value::Null => Ok(false),
            v => Err(Error::sql(
                SqlState::DATATYPE_MISMATCH,
                format!("argument of WHERE must be type boolean, not {v:?}"),
            )),
        }
    }

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

fn truth(v: Value) -> Result<Option<bool>> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(b)),
        v => Err(Error::sql(
            SqlState::DATATYPE_MISMATCH,
            format!("argument of AND/OR must be type boolean, not {v:?}"),
        )),
    }
}

fn negate(v: Value) -> Result<Value> {
    Ok(match v {
        Value::Null => Value::Null,
        Value::Int(x) => Value::Int(x.checked_neg().ok_or_else(|| int_overflow("integer"))?),
        Value::BigInt(x) => Value::BigInt(x.checked_neg().ok_or_else(|| int_overflow("bigint"))?),
        Value::Double(x) => Value::Double(-x),
        Value::Numeric(d) => Value::Numeric(d.checked_neg()?),
        v => return Err(type_error(format!("operator does not exist: - {v:?}"))),
    })
}

/// Numeric promotion class: 0 int, 1 bigint, 2 numeric, 3 double.
fn num_class(v: &Value) -> Option<u8> {
    match v {
        Value::Int(_) => Some(0),
        Value::BigInt(_) => Some(1),
        Value::Numeric(_) => Some(2),
        Value::Double(_) => Some(3),
        _ => None,
    }
}

fn to_decimal(v: &Value) -> Decimal {
    match v {
        Value::Int(x) => Decimal::from_i64(*x as i64),
        Value::BigInt(x) => Decimal::from_i64(*x),
        Value::Numeric(d) => *d,
        _ => Decimal::from_i64(0),
    }
}

fn arith(op: &Op, a: Value, b: Value) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    if let Op::Concat = op {
        let s = |v: &Value| v.to_pg_text().unwrap_or_default();
        return Ok(Value::Text(s(&a) + &s(&b)));
    }
    let opname = match op {
        Op::Add => "+",
        Op::Sub => "-",
        Op::Mul => "*",
        Op::Div => "/",
        _ => "%",
    };
    // Date arithmetic.
    match (op, &a, &b) {
        (Op::Add, Value::Date(d), x) | (Op::Add, x, Value::Date(d)) if x.as_i64().is_some() => {
            let r = (*d as i64) + x.as_i64().unwrap_or(0);
            return Ok(Value::Date(
                i32::try_from(r).map_err(|_| int_overflow("date"))?,
            ));
        }
        (Op::Sub, Value::Date(d), x) if x.as_i64().is_some() => {
            let r = (*d as i64) - x.as_i64().unwrap_or(0);
            return Ok(Value::Date(
                i32::try_from(r).map_err(|_| int_overflow("date"))?,
            ));
        }
        (Op::Sub, Value::Date(x), Value::Date(y)) => return Ok(Value::Int(x - y)),
        _ => {}
    }
    let (ca, cb) = match (num_class(&a), num_class(&b)) {
        (Some(x), Some(y)) => (x, y),
        _ => {
            return Err(type_error(format!(
                "operator does not exist: {} {opname} {}",
                a.data_type().map(|t| t.sql_name()).unwrap_or_default(),
                b.data_type().map(|t| t.sql_name()).unwrap_or_default()
            )))
        }
    };
    match ca.max(cb) {
        0 => {
            let (x, y) = (
                a.as_i64().unwrap_or(0) as i32,
                b.as_i64().unwrap_or(0) as i32,
            );
            let r = match op {
                Op::Add => x.checked_add(y),
                Op::Sub => x.checked_sub(y),
                Op::Mul => x.checked_mul(y),
                Op::Div => {
                    if y == 0 {
                        return Err(div_zero());
                    }
                    x.checked_div(y)
                }
                _ => {
                    if y == 0 {
                        return Err(div_zero());
                    }
                    Some(x.wrapping_rem(y))
                }
            };
            Ok(Value::Int(r.ok_or_else(|| int_overflow("integer"))?))
        }
        1 => {
            let (x, y) = (a.as_i64().unwrap_or(0), b.as_i64().unwrap_or(0));
            let r = match op {
                Op::Add => x.checked_add(y),
                Op::Sub => x.checked_sub(y),
                Op::Mul => x.checked_mul(y),
                Op::Div => {
                    if y == 0 {
                        return Err(div_zero());
                    }
                    x.checked_div(y)
                }
                _ => {
                    if y == 0 {
                        return Err(div_zero());
                    }
                    Some(x.wrapping_rem(y))
                }
            };
            Ok(Value::BigInt(r.ok_or_else(|| int_overflow("bigint"))?))
        }
        2 => {
            let (x, y) = (to_decimal(&a), to_decimal(&b));
            Ok(Value::Numeric(match op {
                Op::Add => x.checked_add(y)?,
                Op::Sub => x.checked_sub(y)?,
                Op::Mul => x.checked_mul(y)?,
                Op::Div => x.checked_div(y)?,
                _ => {
                    if y.mantissa == 0 {
                        return Err(div_zero());
                    }
                    let s = x.scale.max(y.scale);
                    let (xm, ym) = (x.rescale(s)?.mantissa, y.rescale(s)?.mantissa);
                    Decimal::new(xm % ym, s)
                }
            }))
        }
        _ => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            let r = match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                Op::Div => {
                    if y == 0.0 {
                        return Err(div_zero());
                    }
                    x / y
                }
                _ => {
                    if y == 0.0 {
                        return Err(div_zero());
                    }
                    x % y
                }
            };
            if r.is_infinite() && x.is_finite() && y.is_finite() {
                return Err(Error::sql(
                    SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                    "value out of range: overflow",
                ));
            }
            Ok(Value::Double(r))
        }
    }
}

/// `a op b` for a comparison op, with SQL's NULL and type rules.
pub fn compare(op: &Op, a: &Value, b: &Value) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let ord = match a.sql_cmp(b) {
        Some(o) => o,
        None => {
            return Err(type_error(format!(
                "operator does not exist: {} = {}",
                a.data_type().map(|t| t.sql_name()).unwrap_or_default(),
                b.data_type().map(|t| t.sql_name()).unwrap_or_default()
            )))
        }
    };
    Ok(Value::Bool(match op {
        Op::Eq => ord == Ordering::Equal,
        Op::Ne => ord != Ordering::Equal,
        Op::Lt => ord == Ordering::Less,
        Op::Le => ord != Ordering::Greater,
        Op::Gt => ord == Ordering::Greater,
        _ => ord != Ordering::Less,
    }))
}

/// Whether `items` (sorted by [`Value::sql_cmp`]) holds a value equal to
/// `v`; values that do not compare are the `=` operator's type error.
fn sorted_contains(items: &[Value], v: &Value) -> Result<bool> {
    let mut failed = false;
    let found = items
        .binary_search_by(|it| {
            it.sql_cmp(v).unwrap_or_else(|| {
                failed = true;
                Ordering::Equal
            })
        })
        .is_ok();
    if failed {
        // The same error the linear IN reports.
        compare(&Op::Eq, v, &items[0])?;
    }
    Ok(found)
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

/// SQL LIKE with `%`, `_` and backslash escapes.
pub fn like(s: &str, pattern: &str) -> Result<bool> {
    // ASCII text and pattern match byte by byte, without copies.
    if s.is_ascii() && pattern.is_ascii() {
        return like_units(s.as_bytes(), pattern.as_bytes(), b'%', b'_', b'\\');
    }
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    like_units(&s, &p, '%', '_', '\\')
}

/// LIKE over characters (or ASCII bytes): `%` any run, `_` one, `\\` escapes.
fn like_units<T: Copy + Eq>(s: &[T], p: &[T], percent: T, one: T, escape: T) -> Result<bool> {
    // Iterative matcher with backtracking on the last '%'.
    let (mut si, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi < p.len() {
            let c = p[pi];
            if c == percent {
                star = Some((pi, si));
                pi += 1;
                continue;
            }
            if c == one && si < s.len() {
                si += 1;
                pi += 1;
                continue;
            }
            if c == escape {
                let c = *p.get(pi + 1).ok_or_else(|| {
                    Error::sql(
                        SqlState::INVALID_ESCAPE_SEQUENCE,
                        "LIKE pattern must not end with escape character",
                    )
                })?;
                if si < s.len() && s[si] == c {
                    si += 1;
                    pi += 2;
                    continue;
                }
            } else if c != one && si < s.len() && s[si] == c {
                si += 1;
                pi += 1;
                continue;
            }
        } else if si == s.len() {
            return Ok(true);
        }
        match star {
            Some((sp, ss)) if ss < s.len() => {
                star = Some((sp, ss + 1));
                pi = sp + 1;
                si = ss + 1;
            }
            _ => return Ok(false),
        }
    }
}

fn call(func: Func, mut args: Vec<Value>) -> Result<Value> {
    let arity = |n: usize| -> Result<()> {
        if args.len() == n {
            Ok(())
        } else {
            Err(type_error(format!(
                "function {func:?} takes {n} arguments, got {}",
                args.len()
            )))
        }
    };
    if let Some(out) = crate::catalog_funcs::call(func, &args) {
        return out;
    }
    match func {
        Func::Coalesce => {
            return Ok(args
                .into_iter()
                .find(|v| !v.is_null())
                .unwrap_or(Value::Null))
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for a in args.into_iter().filter(|v| !v.is_null()) {
                best = Some(match best {
                    None => a,
                    Some(b) => {
                        let ord = a
                            .sql_cmp(&b)
                            .ok_or_else(|| type_error("incomparable arguments".into()))?;
                        let take = if func == Func::Greatest {
                            ord == Ordering::Greater
                        } else {
                            ord == Ordering::Less
                        };
                        if take {
                            a
                        } else {
                            b
                        }
                    }
                });
            }
            return Ok(best.unwrap_or(Value::Null));
        }
        Func::NullIf => {
            arity(2)?;
            let b = args.pop().unwrap_or(Value::Null);
            let a = args.pop().unwrap_or(Value::Null);
            return Ok(if compare(&Op::Eq, &a, &b)? == Value::Bool(true) {
                Value::Null
            } else {
                a
            });
        }
        _ => {}
    }
    if args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let bad = |v: &Value| {
        type_error(format!(
            "function {func:?} does not exist for argument {v:?}"
        ))
    };
    match func {
        Func::Abs => {
            arity(1)?;
            Ok(match &args[0] {
                Value::Int(x) => {
                    Value::Int(x.checked_abs().ok_or_else(|| int_overflow("integer"))?)
                }
                Value::BigInt(x) => {
                    Value::BigInt(x.checked_abs().ok_or_else(|| int_overflow("bigint"))?)
                }
                Value::Double(x) => Value::Double(x.abs()),
                Value::Numeric(d) => Value::Numeric(Decimal::new(d.mantissa.abs(), d.scale)),
                v => return Err(bad(v)),
            })
        }
        Func::Lower | Func::Upper | Func::Trim | Func::Rtrim | Func::Ltrim | Func::Length => {
            arity(1)?;
            let s = match &args[0] {
                Value::Text(s) => s,
                v => return Err(bad(v)),
            };
            Ok(match func {
                Func::Lower => Value::Text(s.to_lowercase()),
                Func::Upper => Value::Text(s.to_uppercase()),
                Func::Trim => Value::Text(s.trim_matches(' ').to_string()),
                Func::Rtrim => Value::Text(s.trim_end_matches(' ').to_string()),
                Func::Ltrim => Value::Text(s.trim_start_matches(' ').to_string()),
                _ => Value::Int(s.chars().count() as i32),
            })
        }
        Func::Round | Func::Floor | Func::Ceil => {
            let digits = if args.len() == 2 && func == Func::Round {
                args[1].as_i64().ok_or_else(|| bad(&args[1]))?
            } else {
                arity(1)?;
                0
            };
            Ok(match &args[0] {
                Value::Double(x) => Value::Double(match func {
                    Func::Round => {
                        let f = 10f64.powi(digits as i32);
                        (x * f).round() / f
                    }
                    Func::Floor => x.floor(),
                    _ => x.ceil(),
                }),
                v @ (Value::Int(_) | Value::BigInt(_) | Value::Numeric(_)) => {
                    let d = to_decimal(v);
                    let s = digits.clamp(0, 30) as u8;
                    Value::Numeric(match func {
                        Func::Round => d.rescale(s)?,
                        Func::Floor | Func::Ceil => {
                            let r = d.rescale(0)?;
                            let back = r.rescale(d.scale)?;
                            let adj = match (func, back.mantissa.cmp(&d.mantissa)) {
                                (Func::Floor, Ordering::Greater) => -1,
                                (Func::Ceil, Ordering::Less) => 1,
                                _ => 0,
                            };
                            Decimal::new(r.mantissa + adj, 0)
                        }
                        _ => d,
                    })
                }
                v => return Err(bad(v)),
            })
        }
        Func::AddInterval => {
            arity(4)?;
            let (Value::Timestamp(t), Some(months), Some(days), Some(micros)) = (
                &args[0],
                args[1].as_i64(),
                args[2].as_i64(),
                args[3].as_i64(),
            ) else {
                return Err(bad(&args[0]));
            };
            crate::datetime_part::add_interval(*t, months, days, micros).map(Value::Timestamp)
        }
        Func::Extract | Func::DatePart => {
            arity(2)?;
            crate::datetime_part::part(&args[0], &args[1], func == Func::Extract)
        }
        Func::SpnScore => {
            arity(1)?;
            match &args[0] {
                Value::Bytea(b) => Ok(Value::Double(crate::udf::spn_score(b)?)),
                v => Err(bad(v)),
            }
        }
        Func::Ascii => {
            arity(1)?;
            match &args[0] {
                Value::Text(s) => Ok(Value::Int(s.chars().next().map_or(0, |c| c as i32))),
                v => Err(bad(v)),
            }
        }
        Func::Chr => {
            arity(1)?;
            let code = args[0].as_i64().ok_or_else(|| bad(&args[0]))?;
            match code {
                0 => Err(Error::sql(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    "null character not permitted",
                )),
                c if c < 0 => Err(Error::sql(
                    SqlState::INVALID_PARAMETER_VALUE,
                    "character number must be positive",
                )),
                c => u32::try_from(c)
                    .ok()
                    .and_then(char::from_u32)
                    .map(|ch| Value::Text(ch.to_string()))
                    .ok_or_else(|| {
                        Error::sql(
                            SqlState::PROGRAM_LIMIT_EXCEEDED,
                            format!("requested character too large for encoding: {c}"),
                        )
                    }),
            }
        }
        Func::Strpos => {
            arity(2)?;
            let (Value::Text(s), Value::Text(sub)) = (&args[0], &args[1]) else {
                return Err(bad(&args[0]));
            };
            Ok(Value::Int(match s.find(sub.as_str()) {
                Some(at) => s[..at].chars().count() as i32 + 1,
                None => 0,
            }))
        }
        Func::Substr => {
            if !(2..=3).contains(&args.len()) {
                return Err(type_error(format!(
                    "function {func:?} takes 2 or 3 arguments, got {}",
                    args.len()
                )));
            }
            let s = match &args[0] {
                Value::Text(s) => s.clone(),
                v => return Err(bad(v)),
            };
            let start = args
                .get(1)
                .and_then(Value::as_i64)
                .ok_or_else(|| bad(&args[0]))?;
            let chars: Vec<char> = s.chars().collect();
            let len = match args.get(2) {
                Some(v) => {
                    let l = v.as_i64().ok_or_else(|| bad(v))?;
                    if l < 0 {
                        return Err(Error::sql(
                            SqlState::INVALID_PARAMETER_VALUE,
                            "negative substring length not allowed",
                        ));
                    }
                    l
                }
                None => i64::MAX / 4,
            };
            let from = (start - 1).max(0);
            let to = (start - 1).saturating_add(len).max(0);
            let out: String = chars
                .iter()
                .skip(from as usize)
                .take((to - from).max(0) as usize)
                .collect();
            Ok(Value::Text(out))
        }
        _ => Err(bad(&Value::Null)),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
