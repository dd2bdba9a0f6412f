//! The one evaluator: a [`Program`] run against a row and the statement's
//! parameters on a value stack, with SQL's three-valued logic.
//!
//! ```text
//!  ops:   Column(0) Const(0) Add Param(0) Gt JumpIfFalseKeep(9) …
//!  stack: [a] → [a, 1] → [a+1] → [a+1, $1] → [a+1 > $1] → …
//!              arithmetic: arith.rs   comparison, LIKE: compare.rs
//!              function calls: call.rs
//! ```
//!
//! The host's executor and the device's processing elements both call
//! [`Program::eval`], so an offloaded filter computes exactly what the
//! host would. AND/OR short-circuit through the jumps the compiler emits;
//! the AND/OR ops themselves combine truth values as SQL does.

use crate::error::{Error, Result, SqlState};
use crate::value::Value;

use super::arith::{arith, negate};
use super::call::call;
use super::compare::{compare, like, sorted_contains};
use super::errors::type_error;
use super::program::{Op, Program};

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

    fn run(&self, row: &[Value], params: &[Value], stack: &mut Vec<Value>) -> Result<Value> {
        let mut pc = 0usize;
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
                Op::TransactionTime => stack.push(transaction_time(params)?),
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
                    stack.push(not(v)?);
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
                    stack.push(and_or(matches!(op, Op::And), a, b));
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
                    stack.push(like_op(v, p, *negated, *case_insensitive)?);
                }
                Op::In { n, negated } => in_scan(stack, *n as usize, *negated)?,
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
                    stack.push(in_sorted(items, v, *negated, *has_null)?);
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
}

#[inline]
fn pop(s: &mut Vec<Value>) -> Result<Value> {
    s.pop().ok_or_else(|| Error::corrupted("stack underflow"))
}

/// `current_timestamp`: the last parameter, which the executor sets to
/// the transaction's start time.
fn transaction_time(params: &[Value]) -> Result<Value> {
    match params.last() {
        Some(v @ Value::Timestamp(_)) => Ok(v.clone()),
        _ => Err(Error::sql(
            SqlState::FEATURE_NOT_SUPPORTED,
            "current_timestamp is not available in this context",
        )),
    }
}

fn not(v: Value) -> Result<Value> {
    Ok(match v {
        Value::Null => Value::Null,
        Value::Bool(b) => Value::Bool(!b),
        v => {
            return Err(type_error(format!(
                "argument of NOT must be type boolean, not {v:?}"
            )))
        }
    })
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

/// `a AND b` (`is_and`) or `a OR b` over truth values (`None`: NULL).
#[inline]
fn and_or(is_and: bool, a: Option<bool>, b: Option<bool>) -> Value {
    let r = if is_and {
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
    r.map_or(Value::Null, Value::Bool)
}

/// `v [NOT] [I]LIKE p`.
fn like_op(v: Value, p: Value, negated: bool, case_insensitive: bool) -> Result<Value> {
    Ok(match (v, p) {
        (Value::Null, _) | (_, Value::Null) => Value::Null,
        (Value::Text(v), Value::Text(p)) => {
            let m = if case_insensitive {
                like(&v.to_lowercase(), &p.to_lowercase())?
            } else {
                like(&v, &p)?
            };
            Value::Bool(m != negated)
        }
        (v, p) => {
            return Err(type_error(format!(
                "operator does not exist: {v:?} LIKE {p:?}"
            )))
        }
    })
}

/// `v [NOT] IN (item₁ … itemₙ)` with the operand and the items on top of
/// the stack: compared in place (no copy of the list), replaced by the
/// answer.
fn in_scan(stack: &mut Vec<Value>, n: usize, negated: bool) -> Result<()> {
    if stack.len() < n + 1 {
        return Err(Error::corrupted("stack underflow in IN"));
    }
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
        Value::Bool(negated)
    });
    Ok(())
}

/// `v [NOT] IN` a sorted list of constants ([`Op::InSorted`]).
fn in_sorted(items: &[Value], v: Value, negated: bool, has_null: bool) -> Result<Value> {
    Ok(if v.is_null() {
        Value::Null
    } else if sorted_contains(items, &v)? {
        Value::Bool(!negated)
    } else if has_null {
        Value::Null
    } else {
        Value::Bool(negated)
    })
}
