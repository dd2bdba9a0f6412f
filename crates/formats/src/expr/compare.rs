//! Comparison of values with SQL's NULL and type rules, IN over a sorted
//! list of constants, and LIKE.
//!
//! ```text
//!  compare(Lt, Int(3), BigInt(5)) ─ sql_cmp ─► Less ─► Bool(true)
//!  compare(Eq, Null, x)           ──────────────────► Null
//!  like("o'reilly", "o%ly")       ─ % backtracks ───► true
//! ```
//!
//! Values order by [`Value::sql_cmp`]; values that do not compare are the
//! `=` operator's type error, as in PostgreSQL.

use std::cmp::Ordering;

use crate::error::{Error, Result, SqlState};
use crate::value::Value;

use super::errors::type_error;
use super::program::Op;

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
pub(super) fn sorted_contains(items: &[Value], v: &Value) -> Result<bool> {
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
