//! The functions and operators over array values ([`crate::array`]),
//! evaluated by the one expression evaluator on host and device alike.
//!
//! ```text
//!  ARRAY[a, b]          MakeArray(a, b)          (elements already of one type)
//!  a[i][j]              ArrayIndex(a, i, j)      NULL outside the bounds
//!  a[l:u]               ArraySlice(a, l, u)      an omitted bound is i64::MIN / MAX
//!  a || b, a || e       ArrayCat / ArrayAppend / ArrayPrepend
//!  a @> b, a && b       ArrayContains / ArrayOverlap (NULL elements never match)
//!  x op ANY (a)         QuantAny(x, a, op)       three-valued, false when empty
//!  x op ALL (a)         QuantAll(x, a, op)       three-valued, true when empty
//! ```
//!
//! Each follows PostgreSQL 15 (`arrayfuncs.c`, `array_userfuncs.c`):
//! lower bounds are kept where PostgreSQL keeps them, a function that
//! wants a one-dimensional array refuses others with 2202E, and element
//! comparisons are the SQL comparisons of [`Value::sql_cmp`].

use std::cmp::Ordering;

use crate::array::{ArrayValue, Dim, ElemType, MAX_DIMS, MAX_ITEMS};
use crate::error::{Error, Result, SqlState};
use crate::expr::Func;
use crate::types::DataType;
use crate::value::Value;

/// The comparison of a quantified `x op ANY/ALL (array)`, as its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantOp {
    Eq = 0,
    NotEq = 1,
    Lt = 2,
    LtEq = 3,
    Gt = 4,
    GtEq = 5,
}

impl QuantOp {
    fn from_code(c: i64) -> Option<QuantOp> {
        Some(match c {
            0 => QuantOp::Eq,
            1 => QuantOp::NotEq,
            2 => QuantOp::Lt,
            3 => QuantOp::LtEq,
            4 => QuantOp::Gt,
            5 => QuantOp::GtEq,
            _ => return None,
        })
    }

    fn holds(self, o: Ordering) -> bool {
        match self {
            QuantOp::Eq => o == Ordering::Equal,
            QuantOp::NotEq => o != Ordering::Equal,
            QuantOp::Lt => o == Ordering::Less,
            QuantOp::LtEq => o != Ordering::Greater,
            QuantOp::Gt => o == Ordering::Greater,
            QuantOp::GtEq => o != Ordering::Less,
        }
    }
}

fn subscript_error(message: impl Into<String>) -> Error {
    Error::sql(SqlState::ARRAY_SUBSCRIPT_ERROR, message)
}

fn one_dimensional() -> Error {
    Error::sql(
        SqlState::FEATURE_NOT_SUPPORTED,
        "searching for elements in multidimensional arrays is not supported",
    )
}

fn bad(func: Func) -> Error {
    Error::sql(
        SqlState::DATATYPE_MISMATCH,
        format!("function {func:?} does not take these arguments"),
    )
}

/// Whether two elements are the same (`IS NOT DISTINCT FROM`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.is_null(), b.is_null()) {
        (true, true) => true,
        (false, false) => a.sql_cmp(b) == Some(Ordering::Equal),
        _ => false,
    }
}

/// The element type of values, from the first non-NULL one (text when
/// all are NULL; the compiler casts the result to the type it knows).
fn elem_of(items: &[Value]) -> ElemType {
    items
        .iter()
        .find_map(Value::data_type)
        .and_then(ElemType::of)
        .unwrap_or(ElemType::Text)
}

/// `Some(result)` for the functions of this module (and for the
/// catalog's array functions when given an array value).
pub fn call(func: Func, args: &[Value]) -> Option<Result<Value>> {
    let first_is_array = matches!(args.first(), Some(Value::Array(_)));
    Some(match func {
        Func::MakeArray => make_array(args),
        Func::ArrayCat => match args {
            [Value::Null, b] => Ok(b.clone()),
            [a, Value::Null] => Ok(a.clone()),
            [Value::Array(a), Value::Array(b)] => cat(a, b).map(|a| Value::Array(Box::new(a))),
            _ => Err(bad(func)),
        },
        Func::ArrayAppend => match args {
            [a, e] => push(a, e.clone(), false),
            _ => Err(bad(func)),
        },
        Func::ArrayPrepend => match args {
            [e, a] => push(a, e.clone(), true),
            _ => Err(bad(func)),
        },
        Func::ArrayPosition => position(args),
        Func::ArrayPositions => match args {
            [Value::Null, _] => Ok(Value::Null),
            [Value::Array(a), e] => {
                if a.ndims() > 1 {
                    return Some(Err(one_dimensional()));
                }
                let lower = a.dims.first().map_or(1, |d| d.lower);
                let found: Vec<Value> = a
                    .items
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| same(x, e))
                    .map(|(k, _)| Value::Int(lower + k as i32))
                    .collect();
                Ok(Value::Array(Box::new(ArrayValue::from_items(
                    ElemType::Int,
                    found,
                ))))
            }
            _ => Err(bad(func)),
        },
        Func::ArrayRemove => match args {
            [Value::Null, _] => Ok(Value::Null),
            [Value::Array(a), e] => {
                if a.ndims() > 1 {
                    return Some(Err(Error::sql(
                        SqlState::FEATURE_NOT_SUPPORTED,
                        "removing elements from multidimensional arrays is not supported",
                    )));
                }
                let items: Vec<Value> = a.items.iter().filter(|x| !same(x, e)).cloned().collect();
                let lower = a.dims.first().map_or(1, |d| d.lower);
                let mut out = ArrayValue::from_items(a.elem, items);
                if let Some(d) = out.dims.first_mut() {
                    d.lower = lower;
                }
                Ok(Value::Array(Box::new(out)))
            }
            _ => Err(bad(func)),
        },
        Func::ArrayReplace => match args {
            [Value::Null, _, _] => Ok(Value::Null),
            [Value::Array(a), from, to] => {
                let mut out = (**a).clone();
                for x in &mut out.items {
                    if same(x, from) {
                        *x = to.clone();
                    }
                }
                Ok(Value::Array(Box::new(out)))
            }
            _ => Err(bad(func)),
        },
        Func::QuantAny | Func::QuantAll => quantified(func, args),
        Func::StringToArray => string_to_array(args),
        Func::CatalogArray => match args {
            [Value::Null, _] => Ok(Value::Null),
            [Value::Text(text), kind] => {
                let (lower, items) = crate::catalog_funcs::array_items(text);
                let elem = if kind.as_i64() == Some(0) {
                    ElemType::Int
                } else {
                    ElemType::Text
                };
                let items = items
                    .into_iter()
                    .map(|x| match x {
                        None => Ok(Value::Null),
                        Some(s) => Value::Text(s).cast(&elem.scalar()),
                    })
                    .collect::<Result<Vec<_>>>();
                items.map(|items| {
                    let mut a = ArrayValue::from_items(elem, items);
                    if let Some(d) = a.dims.first_mut() {
                        d.lower = lower as i32;
                    }
                    Value::Array(Box::new(a))
                })
            }
            _ => Err(bad(func)),
        },
        // The rest are strict: NULL in, NULL out.
        _ if args.iter().any(Value::is_null)
            && matches!(
                func,
                Func::ArrayIndex
                    | Func::ArraySlice
                    | Func::ArrayLength
                    | Func::Cardinality
                    | Func::ArrayNdims
                    | Func::ArrayDims
                    | Func::ArrayContains
                    | Func::ArrayContained
                    | Func::ArrayOverlap
            ) =>
        {
            Ok(Value::Null)
        }
        Func::ArrayIndex => match args {
            [Value::Array(a), subs @ ..] => Ok(index(a, subs)),
            _ => Err(bad(func)),
        },
        Func::ArraySlice => match args {
            [Value::Array(a), bounds @ ..] => slice(a, bounds),
            _ => Err(bad(func)),
        },
        Func::ArrayLength => match args {
            [Value::Array(a), d] => Ok(dim(a, d).map_or(Value::Null, |d| Value::Int(d.len))),
            _ => Err(bad(func)),
        },
        Func::Cardinality => match args {
            [Value::Array(a)] => Ok(Value::Int(a.items.len() as i32)),
            _ => Err(bad(func)),
        },
        Func::ArrayNdims => match args {
            [Value::Array(a)] if a.ndims() == 0 => Ok(Value::Null),
            [Value::Array(a)] => Ok(Value::Int(a.ndims() as i32)),
            _ => Err(bad(func)),
        },
        Func::ArrayDims => match args {
            [Value::Array(a)] if a.ndims() == 0 => Ok(Value::Null),
            [Value::Array(a)] => Ok(Value::Text(
                a.dims
                    .iter()
                    .map(|d| format!("[{}:{}]", d.lower, d.lower as i64 + d.len as i64 - 1))
                    .collect(),
            )),
            _ => Err(bad(func)),
        },
        Func::ArrayContains | Func::ArrayContained | Func::ArrayOverlap => match args {
            [Value::Array(a), Value::Array(b)] => {
                let (a, b) = if func == Func::ArrayContained {
                    (b, a)
                } else {
                    (a, b)
                };
                let found = |x: &Value| !x.is_null() && a.items.iter().any(|y| same(x, y));
                Ok(Value::Bool(if func != Func::ArrayOverlap {
                    b.items.iter().all(found)
                } else {
                    b.items.iter().any(found)
                }))
            }
            _ => Err(bad(func)),
        },
        // The catalog's array functions, given an array value.
        Func::ArrayUpper | Func::ArrayLower if first_is_array => match args {
            [_, Value::Null] => Ok(Value::Null),
            [Value::Array(a), d] => Ok(dim(a, d).map_or(Value::Null, |d| {
                Value::Int(if func == Func::ArrayLower {
                    d.lower
                } else {
                    d.lower + d.len - 1
                })
            })),
            _ => Err(bad(func)),
        },
        Func::ArrayElem if first_is_array => match args {
            [_, Value::Null] => Ok(Value::Null),
            [Value::Array(a), i] => Ok(index(a, std::slice::from_ref(i))),
            _ => Err(bad(func)),
        },
        Func::ArrayToString if first_is_array => array_to_string(args),
        _ => return None,
    })
}

/// array_agg's result: `values` as an array of type `ty` (arrays stacked
/// into one more dimension).
pub fn array_of_values(ty: DataType, values: Vec<Value>) -> Result<Value> {
    if matches!(ty, DataType::Array(_)) && values.iter().any(|v| matches!(v, Value::Array(_))) {
        // array_agg(array): every input one non-empty array of one shape.
        let mut shape: Option<&[Dim]> = None;
        for v in &values {
            let Value::Array(a) = v else {
                return Err(Error::sql(
                    SqlState::NULL_VALUE_NOT_ALLOWED,
                    "cannot accumulate null arrays",
                ));
            };
            if a.dims.is_empty() {
                return Err(subscript_error("cannot accumulate empty arrays"));
            }
            match shape {
                None => shape = Some(&a.dims),
                Some(s) if s.iter().map(|d| d.len).ne(a.dims.iter().map(|d| d.len)) => {
                    return Err(subscript_error(
                        "cannot accumulate arrays of different dimensionality",
                    ))
                }
                Some(_) => {}
            }
        }
    }
    let made = make_array(&values)?;
    match (made, ty) {
        (Value::Array(a), DataType::Array(e)) if a.elem != e => {
            Ok(Value::Array(Box::new(a.cast(e)?)))
        }
        (made, _) => Ok(made),
    }
}

/// `ARRAY[…]`: elements, or sub-arrays of one shape stacked into one
/// more dimension.
fn make_array(args: &[Value]) -> Result<Value> {
    if !args.iter().any(|v| matches!(v, Value::Array(_))) {
        return Ok(Value::Array(Box::new(ArrayValue::from_items(
            elem_of(args),
            args.to_vec(),
        ))));
    }
    // ARRAY[ARRAY[1,2], ARRAY[3,4]]: every sub-array has one shape (a
    // NULL sub-array is refused, as PostgreSQL does).
    let subs: Vec<&ArrayValue> = args
        .iter()
        .map(|v| match v {
            Value::Array(a) => Ok(a.as_ref()),
            _ => Err(subscript_error(
                "multidimensional arrays must have array expressions with matching dimensions",
            )),
        })
        .collect::<Result<_>>()?;
    let shape = &subs[0].dims;
    if subs.iter().any(|a| &a.dims != shape) {
        return Err(subscript_error(
            "multidimensional arrays must have array expressions with matching dimensions",
        ));
    }
    let elem = subs[0].elem;
    if shape.is_empty() {
        return Ok(Value::Array(Box::new(ArrayValue::empty(elem))));
    }
    if shape.len() + 1 > MAX_DIMS {
        return Err(Error::sql(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            format!(
                "number of array dimensions ({}) exceeds the maximum allowed ({MAX_DIMS})",
                shape.len() + 1
            ),
        ));
    }
    let mut dims = vec![Dim {
        len: subs.len() as i32,
        lower: 1,
    }];
    dims.extend(shape.iter().copied());
    let items = subs.iter().flat_map(|a| a.items.iter().cloned()).collect();
    Ok(Value::Array(Box::new(ArrayValue { elem, dims, items })))
}

/// Dimension `d` (1-based) of `a`, if it has one.
fn dim<'a>(a: &'a ArrayValue, d: &Value) -> Option<&'a Dim> {
    let d = d.as_i64()?;
    usize::try_from(d - 1).ok().and_then(|k| a.dims.get(k))
}

/// `a[i][j]…`: NULL unless there is one subscript per dimension, each
/// inside its bounds.
fn index(a: &ArrayValue, subs: &[Value]) -> Value {
    if subs.len() != a.ndims() {
        return Value::Null;
    }
    let mut offset: i64 = 0;
    for (d, s) in a.dims.iter().zip(subs) {
        let Some(i) = s.as_i64() else {
            return Value::Null;
        };
        let k = i - d.lower as i64;
        if k < 0 || k >= d.len as i64 {
            return Value::Null;
        }
        offset = offset * d.len as i64 + k;
    }
    a.items.get(offset as usize).cloned().unwrap_or(Value::Null)
}

/// `a[l:u][l:u]…`: the dimensions not named are taken whole; an empty
/// array when any range is empty; lower bounds become 1.
fn slice(a: &ArrayValue, bounds: &[Value]) -> Result<Value> {
    if !bounds.len().is_multiple_of(2) {
        return Err(bad(Func::ArraySlice));
    }
    let k = bounds.len() / 2;
    if a.ndims() == 0 || k > a.ndims() {
        return Ok(Value::Array(Box::new(ArrayValue::empty(a.elem))));
    }
    let mut ranges = Vec::with_capacity(a.ndims());
    for (n, d) in a.dims.iter().enumerate() {
        let (lo, hi) = (d.lower as i64, d.lower as i64 + d.len as i64 - 1);
        let (l, u) = if n < k {
            let l = bounds[2 * n].as_i64().unwrap_or(i64::MIN).max(lo);
            let u = bounds[2 * n + 1].as_i64().unwrap_or(i64::MAX).min(hi);
            (l, u)
        } else {
            (lo, hi)
        };
        if l > u {
            return Ok(Value::Array(Box::new(ArrayValue::empty(a.elem))));
        }
        ranges.push((l - lo, u - lo));
    }
    let mut items = Vec::new();
    let mut at = vec![0i64; ranges.len()];
    for (n, r) in ranges.iter().enumerate() {
        at[n] = r.0;
    }
    'outer: loop {
        let mut offset = 0i64;
        for (n, d) in a.dims.iter().enumerate() {
            offset = offset * d.len as i64 + at[n];
        }
        items.push(a.items.get(offset as usize).cloned().unwrap_or(Value::Null));
        let mut n = ranges.len();
        loop {
            if n == 0 {
                break 'outer;
            }
            n -= 1;
            if at[n] < ranges[n].1 {
                at[n] += 1;
                break;
            }
            at[n] = ranges[n].0;
        }
    }
    let dims = ranges
        .iter()
        .map(|(l, u)| Dim {
            len: (u - l + 1) as i32,
            lower: 1,
        })
        .collect();
    Ok(Value::Array(Box::new(ArrayValue {
        elem: a.elem,
        dims,
        items,
    })))
}

/// `array_append` / `array_prepend`: a NULL array is empty; only
/// one-dimensional arrays grow.
fn push(a: &Value, e: Value, front: bool) -> Result<Value> {
    let a = match a {
        Value::Null => ArrayValue::empty(
            e.data_type()
                .and_then(ElemType::of)
                .unwrap_or(ElemType::Text),
        ),
        Value::Array(a) => (**a).clone(),
        _ => return Err(bad(Func::ArrayAppend)),
    };
    if a.ndims() > 1 {
        return Err(Error::sql(
            SqlState::DATA_EXCEPTION,
            "argument must be empty or one-dimensional array",
        ));
    }
    let mut out = a;
    if out.items.len() >= MAX_ITEMS {
        return Err(Error::sql(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            "array size exceeds the maximum allowed",
        ));
    }
    match out.dims.first_mut() {
        None => {
            out.dims.push(Dim { len: 1, lower: 1 });
            out.items.push(e);
        }
        Some(d) => {
            d.len += 1;
            // Prepending keeps the lower bound, as PostgreSQL does.
            if front {
                out.items.insert(0, e);
            } else {
                out.items.push(e);
            }
        }
    }
    Ok(Value::Array(Box::new(out)))
}

/// `array_cat(a, b)`: arrays of the same dimensions join along the
/// first; one of one dimension fewer is added as an element of the other.
fn cat(a: &ArrayValue, b: &ArrayValue) -> Result<ArrayValue> {
    if a.ndims() == 0 {
        return Ok(b.clone());
    }
    if b.ndims() == 0 {
        return Ok(a.clone());
    }
    let incompatible = || {
        Error::sql(
            SqlState::ARRAY_SUBSCRIPT_ERROR,
            "cannot concatenate incompatible arrays",
        )
    };
    let (mut dims, items) = if a.ndims() == b.ndims() {
        if a.dims[1..]
            .iter()
            .map(|d| d.len)
            .ne(b.dims[1..].iter().map(|d| d.len))
        {
            return Err(incompatible());
        }
        let mut dims = a.dims.clone();
        dims[0].len += b.dims[0].len;
        (dims, [a.items.clone(), b.items.clone()].concat())
    } else if a.ndims() == b.ndims() + 1 {
        if a.dims[1..]
            .iter()
            .map(|d| d.len)
            .ne(b.dims.iter().map(|d| d.len))
        {
            return Err(incompatible());
        }
        let mut dims = a.dims.clone();
        dims[0].len += 1;
        (dims, [a.items.clone(), b.items.clone()].concat())
    } else if a.ndims() + 1 == b.ndims() {
        if b.dims[1..]
            .iter()
            .map(|d| d.len)
            .ne(a.dims.iter().map(|d| d.len))
        {
            return Err(incompatible());
        }
        let mut dims = b.dims.clone();
        dims[0].len += 1;
        (dims, [a.items.clone(), b.items.clone()].concat())
    } else {
        return Err(incompatible());
    };
    if items.len() > MAX_ITEMS {
        return Err(Error::sql(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            "array size exceeds the maximum allowed",
        ));
    }
    if a.ndims() == b.ndims() {
        dims[0].lower = a.dims[0].lower;
    }
    Ok(ArrayValue {
        elem: a.elem,
        dims,
        items,
    })
}

/// `array_position(a, e [, start])`.
fn position(args: &[Value]) -> Result<Value> {
    let (a, e, start) = match args {
        [a, e] => (a, e, None),
        [a, e, s] => (a, e, Some(s)),
        _ => return Err(bad(Func::ArrayPosition)),
    };
    let Value::Array(a) = a else {
        return Ok(Value::Null);
    };
    if a.ndims() > 1 {
        return Err(one_dimensional());
    }
    let lower = a.dims.first().map_or(1, |d| d.lower) as i64;
    let from = match start {
        None => lower,
        Some(Value::Null) => {
            return Err(Error::sql(
                SqlState::NULL_VALUE_NOT_ALLOWED,
                "initial position must not be null",
            ))
        }
        Some(s) => s.as_i64().unwrap_or(lower),
    };
    Ok(a.items
        .iter()
        .enumerate()
        .map(|(k, x)| (lower + k as i64, x))
        .find(|(i, x)| *i >= from && same(x, e))
        .map_or(Value::Null, |(i, _)| Value::Int(i as i32)))
}

/// `x op ANY (a)` / `x op ALL (a)` with op's code third.
fn quantified(func: Func, args: &[Value]) -> Result<Value> {
    let [x, a, op] = args else {
        return Err(bad(func));
    };
    let op = op
        .as_i64()
        .and_then(QuantOp::from_code)
        .ok_or_else(|| bad(func))?;
    let a = match a {
        Value::Null => return Ok(Value::Null),
        Value::Array(a) => a,
        _ => return Err(bad(func)),
    };
    let any = func == Func::QuantAny;
    let mut unknown = false;
    for y in &a.items {
        match x.sql_cmp(y) {
            None if x.is_null() || y.is_null() => unknown = true,
            None => {
                return Err(Error::sql(
                    SqlState::UNDEFINED_FUNCTION,
                    "operator does not exist for these array elements",
                ))
            }
            Some(o) if op.holds(o) == any => return Ok(Value::Bool(any)),
            Some(_) => {}
        }
    }
    Ok(if unknown {
        Value::Null
    } else {
        Value::Bool(!any)
    })
}

/// `array_to_string(a, sep [, null])` over an array value.
fn array_to_string(args: &[Value]) -> Result<Value> {
    let (a, sep, null) = match args {
        [a, s] => (a, s, None),
        [a, s, n] => (a, s, Some(n)),
        _ => return Err(bad(Func::ArrayToString)),
    };
    let (Value::Array(a), Value::Text(sep)) = (a, sep) else {
        return Ok(Value::Null);
    };
    let null = match null {
        Some(Value::Text(n)) => Some(n.clone()),
        _ => None,
    };
    let parts: Vec<String> = a
        .items
        .iter()
        .filter_map(|v| v.to_pg_text().or_else(|| null.clone()))
        .collect();
    Ok(Value::Text(parts.join(sep)))
}

/// `string_to_array(text, delimiter [, null string])`: a NULL delimiter
/// splits into characters, an empty one gives the whole string; an empty
/// string gives an empty array.
fn string_to_array(args: &[Value]) -> Result<Value> {
    let (s, delim, null) = match args {
        [s, d] => (s, d, &Value::Null),
        [s, d, n] => (s, d, n),
        _ => return Err(bad(Func::StringToArray)),
    };
    let Value::Text(s) = s else {
        return Ok(Value::Null);
    };
    if s.is_empty() {
        return Ok(Value::Array(Box::new(ArrayValue::empty(ElemType::Text))));
    }
    let parts: Vec<String> = match delim {
        Value::Null => s.chars().map(String::from).collect(),
        Value::Text(d) if d.is_empty() => vec![s.clone()],
        Value::Text(d) => s.split(d.as_str()).map(str::to_string).collect(),
        _ => return Err(bad(Func::StringToArray)),
    };
    let items = parts
        .into_iter()
        .map(|p| match null {
            Value::Text(n) if *n == p => Value::Null,
            _ => Value::Text(p),
        })
        .collect();
    Ok(Value::Array(Box::new(ArrayValue::from_items(
        ElemType::Text,
        items,
    ))))
}

/// The scalar type of `t`'s elements, if `t` is an array type.
pub fn element_of(t: DataType) -> Option<DataType> {
    match t {
        DataType::Array(e) => Some(e.scalar()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(text: &str) -> Value {
        Value::Array(Box::new(ArrayValue::parse(text, ElemType::Int).unwrap()))
    }

    fn run(func: Func, args: &[Value]) -> String {
        call(func, args)
            .unwrap()
            .unwrap()
            .to_pg_text()
            .unwrap_or_else(|| "NULL".into())
    }

    #[test]
    fn subscripts_and_slices_answer_as_postgresql() {
        let m = ints("{{1,2,3},{4,5,6}}");
        assert_eq!(
            run(Func::ArrayIndex, &[m.clone(), Value::Int(2), Value::Int(3)]),
            "6"
        );
        assert_eq!(run(Func::ArrayIndex, &[m.clone(), Value::Int(2)]), "NULL");
        assert_eq!(
            run(Func::ArrayIndex, &[m.clone(), Value::Int(3), Value::Int(1)]),
            "NULL"
        );
        let all = Value::BigInt(i64::MIN);
        let end = Value::BigInt(i64::MAX);
        assert_eq!(
            run(Func::ArraySlice, &[m.clone(), Value::Int(2), end.clone()]),
            "{{4,5,6}}"
        );
        assert_eq!(
            run(
                Func::ArraySlice,
                &[m.clone(), all, end, Value::Int(2), Value::Int(2)]
            ),
            "{{2},{5}}"
        );
        assert_eq!(
            run(Func::ArraySlice, &[m.clone(), Value::Int(3), Value::Int(4)]),
            "{}"
        );
        assert_eq!(run(Func::ArrayDims, std::slice::from_ref(&m)), "[1:2][1:3]");
        assert_eq!(run(Func::ArrayLength, &[m.clone(), Value::Int(2)]), "3");
        assert_eq!(run(Func::Cardinality, &[m]), "6");
    }

    #[test]
    fn concatenation_and_search() {
        assert_eq!(
            run(Func::ArrayCat, &[ints("{1,2}"), ints("{3}")]),
            "{1,2,3}"
        );
        assert_eq!(
            run(Func::ArrayCat, &[ints("{{1,2}}"), ints("{3,4}")]),
            "{{1,2},{3,4}}"
        );
        assert!(call(Func::ArrayCat, &[ints("{{1,2}}"), ints("{3}")])
            .unwrap()
            .is_err());
        assert_eq!(
            run(Func::ArrayPrepend, &[Value::Int(0), ints("[5:6]={1,2}")]),
            "[5:7]={0,1,2}"
        );
        assert_eq!(run(Func::ArrayAppend, &[Value::Null, Value::Int(7)]), "{7}");
        assert_eq!(
            run(Func::ArrayPosition, &[ints("{1,NULL,3}"), Value::Null]),
            "2"
        );
        assert_eq!(
            run(Func::ArrayPositions, &[ints("{1,2,1}"), Value::Int(1)]),
            "{1,3}"
        );
        assert_eq!(
            run(Func::ArrayRemove, &[ints("{1,2,1}"), Value::Int(1)]),
            "{2}"
        );
        assert_eq!(
            run(Func::ArrayContains, &[ints("{1,2,3}"), ints("{3,1}")]),
            "t"
        );
        assert_eq!(
            run(Func::ArrayContains, &[ints("{1,NULL}"), ints("{NULL}")]),
            "f"
        );
        assert_eq!(
            run(Func::ArrayOverlap, &[ints("{1,2}"), ints("{5,2}")]),
            "t"
        );
    }

    #[test]
    fn quantified_comparisons_are_three_valued() {
        let q =
            |func, x: Value, a: &str, op: QuantOp| run(func, &[x, ints(a), Value::Int(op as i32)]);
        assert_eq!(q(Func::QuantAny, Value::Int(2), "{1,2}", QuantOp::Eq), "t");
        assert_eq!(
            q(Func::QuantAny, Value::Int(3), "{1,NULL}", QuantOp::Eq),
            "NULL"
        );
        assert_eq!(q(Func::QuantAny, Value::Int(3), "{}", QuantOp::Eq), "f");
        assert_eq!(q(Func::QuantAll, Value::Int(3), "{}", QuantOp::Eq), "t");
        assert_eq!(q(Func::QuantAll, Value::Int(3), "{1,2}", QuantOp::Gt), "t");
        assert_eq!(
            q(Func::QuantAll, Value::Int(3), "{1,NULL}", QuantOp::Gt),
            "NULL"
        );
        assert_eq!(
            q(Func::QuantAll, Value::Int(0), "{1,NULL}", QuantOp::Gt),
            "f"
        );
    }

    #[test]
    fn strings_split_and_join() {
        let s = |x: &str| Value::Text(x.into());
        assert_eq!(
            run(Func::StringToArray, &[s("a,b,,c"), s(","), s("")]),
            "{a,b,NULL,c}"
        );
        assert_eq!(
            run(Func::StringToArray, &[s("abc"), Value::Null]),
            "{a,b,c}"
        );
        assert_eq!(run(Func::StringToArray, &[s(""), s(",")]), "{}");
        assert_eq!(
            run(Func::ArrayToString, &[ints("{1,NULL,3}"), s("-"), s("*")]),
            "1-*-3"
        );
    }
}
