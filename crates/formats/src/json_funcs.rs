//! The functions and operators over `json` and `jsonb` values
//! ([`crate::json`]), evaluated by the one expression evaluator on host
//! and device alike, and the conversions of SQL values to JSON.
//!
//! ```text
//!  j -> 'k', j -> 2       JsonGet          json stays json (a span of its
//!  j ->> 'k'              JsonGetText      text), jsonb stays jsonb
//!  j #> '{a,0}'           JsonPath / JsonPathText
//!  a @> b, a <@ b         JsonbContains / JsonbContained
//!  j ? k, ?| ks, ?& ks    JsonbExists / JsonbExistsAny / JsonbExistsAll
//!  a || b, j - k, j #- p  JsonbConcat / JsonbDelete / JsonbDeletePath
//!  to_json(v)             ToJson: numbers as written, strings escaped,
//!                         arrays nested, timestamps ISO 8601 (T)
//! ```
//!
//! Each follows PostgreSQL 15 (`json.c`, `jsonb.c`, `jsonfuncs.c`,
//! `jsonb_op.c`), including its spacing: `json_build_object` writes
//! `{"a" : 1}`, `json_agg` `[1, 2]`, `jsonb` output `{"a": 1}`.

use crate::error::{Error, Result, SqlState};
use crate::expr::Func;
use crate::json::{self, escape_into, invalid, Jsonb, Kind, Node};
use crate::json_convert::{scalar_text, to_json, to_jsonb, write_json};
use crate::value::Value;

pub(crate) fn bad(func: Func) -> Error {
    Error::sql(
        SqlState::DATATYPE_MISMATCH,
        format!("function {func:?} does not take these arguments"),
    )
}

/// A json or jsonb argument, parsed.
pub(crate) enum Doc<'a> {
    Json(&'a str, Node),
    Jsonb(&'a Jsonb),
}

pub(crate) fn doc(v: &Value) -> Option<Result<Doc<'_>>> {
    match v {
        Value::Json(s) => Some(json::parse(s).map(|n| Doc::Json(s, n))),
        Value::Jsonb(j) => Some(Ok(Doc::Jsonb(j))),
        _ => None,
    }
}

/// The text elements of a `text[]` argument (NULL elements as `None`).
pub(crate) fn texts(v: &Value) -> Option<Vec<Option<String>>> {
    match v {
        Value::Array(a) => Some(
            a.items
                .iter()
                .map(|i| match i {
                    Value::Null => None,
                    Value::Text(s) => Some(s.clone()),
                    v => v.to_pg_text(),
                })
                .collect(),
        ),
        _ => None,
    }
}

/// A path step on a json node: a key of an object, an integer index of
/// an array.
fn step_node<'n>(n: &'n Node, key: &str) -> Option<&'n Node> {
    match n.kind {
        Kind::Object(_) => n.field(key),
        Kind::Array(_) => n.element(key.trim().parse().ok()?),
        _ => None,
    }
}

fn step_jsonb<'j>(j: &'j Jsonb, key: &str) -> Option<&'j Jsonb> {
    match j {
        Jsonb::Object(_) => j.field(key),
        Jsonb::Array(_) => j.element(key.trim().parse().ok()?),
        _ => None,
    }
}

/// `Some(result)` for the functions of this module.
pub fn call(func: Func, args: &[Value]) -> Option<Result<Value>> {
    Some(match func {
        Func::ToJson => match args {
            [Value::Null] => Ok(Value::Null),
            [v] => Ok(Value::Json(to_json(v))),
            _ => Err(bad(func)),
        },
        Func::ToJsonb => match args {
            [Value::Null] => Ok(Value::Null),
            [v] => to_jsonb(v).map(|j| Value::Jsonb(Box::new(j))),
            _ => Err(bad(func)),
        },
        Func::JsonBuildObject | Func::JsonbBuildObject => build_object(func, args),
        Func::JsonBuildArray => {
            let mut s = String::from("[");
            for (k, a) in args.iter().enumerate() {
                if k > 0 {
                    s.push_str(", ");
                }
                write_json(a, &mut s);
            }
            s.push(']');
            Ok(Value::Json(s))
        }
        Func::JsonbBuildArray => args
            .iter()
            .map(to_jsonb)
            .collect::<Result<Vec<_>>>()
            .map(|a| Value::Jsonb(Box::new(Jsonb::Array(a)))),
        Func::JsonGet
        | Func::JsonGetText
        | Func::JsonPath
        | Func::JsonPathText
        | Func::JsonTypeof
        | Func::JsonArrayLength
        | Func::JsonStripNulls
        | Func::JsonbContains
        | Func::JsonbContained
        | Func::JsonbExists
        | Func::JsonbExistsAny
        | Func::JsonbExistsAll
        | Func::JsonbConcat
        | Func::JsonbDelete
        | Func::JsonbDeletePath
        | Func::JsonbSet
        | Func::JsonbInsert
        | Func::JsonObject
        | Func::JsonbObject
        | Func::JsonbPretty => {
            if args.iter().any(Value::is_null) {
                return Some(Ok(Value::Null));
            }
            strict(func, args)
        }
        _ => return None,
    })
}

fn build_object(func: Func, args: &[Value]) -> Result<Value> {
    let name = if func == Func::JsonBuildObject {
        "json_build_object"
    } else {
        "jsonb_build_object"
    };
    if !args.len().is_multiple_of(2) {
        return Err(
            invalid("argument list must have even number of elements").with_hint(format!(
                "The arguments of {name}() must consist of alternating keys and values."
            )),
        );
    }
    let mut pairs = Vec::with_capacity(args.len() / 2);
    for (k, kv) in args.chunks(2).enumerate() {
        let key = match &kv[0] {
            Value::Null => {
                return Err(invalid(format!("argument {} cannot be null", 2 * k + 1))
                    .with_hint("Object keys should be text."))
            }
            Value::Array(_) | Value::Json(_) | Value::Jsonb(_) => {
                return Err(invalid(
                    "key value must be scalar, not array, composite, or json",
                ))
            }
            v => scalar_text(v),
        };
        pairs.push((key, &kv[1]));
    }
    if func == Func::JsonBuildObject {
        let mut s = String::from("{");
        for (k, (key, v)) in pairs.iter().enumerate() {
            if k > 0 {
                s.push_str(", ");
            }
            escape_into(&mut s, key);
            s.push_str(" : ");
            write_json(v, &mut s);
        }
        s.push('}');
        return Ok(Value::Json(s));
    }
    let fields = pairs
        .into_iter()
        .map(|(k, v)| Ok((k, to_jsonb(v)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::Jsonb(Box::new(Jsonb::object(fields))))
}

fn jsonb_arg(func: Func, v: &Value) -> Result<&Jsonb> {
    match v {
        Value::Jsonb(j) => Ok(j),
        _ => Err(bad(func)),
    }
}

fn strict(func: Func, args: &[Value]) -> Result<Value> {
    let jb = |j: Jsonb| Value::Jsonb(Box::new(j));
    match func {
        Func::JsonGet | Func::JsonGetText => {
            let [v, key] = args else {
                return Err(bad(func));
            };
            let text = func == Func::JsonGetText;
            let index = key.as_i64();
            let key_text = match key {
                Value::Text(s) => Some(s.as_str()),
                _ => None,
            };
            Ok(match doc(v).ok_or_else(|| bad(func))?? {
                Doc::Jsonb(j) => {
                    let got = match (index, key_text) {
                        (Some(i), _) => j.element(i),
                        (None, Some(k)) => j.field(k),
                        _ => return Err(bad(func)),
                    };
                    match got {
                        None => Value::Null,
                        Some(g) if text => g.as_text().map_or(Value::Null, Value::Text),
                        Some(g) => jb(g.clone()),
                    }
                }
                Doc::Json(s, n) => {
                    let got = match (index, key_text) {
                        (Some(i), _) => n.element(i),
                        (None, Some(k)) => n.field(k),
                        _ => return Err(bad(func)),
                    };
                    match got {
                        None => Value::Null,
                        Some(g) if text => g.as_text(s).map_or(Value::Null, Value::Text),
                        Some(g) => Value::Json(g.text(s).to_string()),
                    }
                }
            })
        }
        Func::JsonPath | Func::JsonPathText => {
            let [v, path] = args else {
                return Err(bad(func));
            };
            let path = texts(path).ok_or_else(|| bad(func))?;
            let Some(path) = path.into_iter().collect::<Option<Vec<String>>>() else {
                return Ok(Value::Null);
            };
            let text = func == Func::JsonPathText;
            Ok(match doc(v).ok_or_else(|| bad(func))?? {
                Doc::Jsonb(j) => {
                    let mut at = Some(j);
                    for p in &path {
                        at = at.and_then(|j| step_jsonb(j, p));
                    }
                    match at {
                        None => Value::Null,
                        Some(g) if text => g.as_text().map_or(Value::Null, Value::Text),
                        Some(g) => jb(g.clone()),
                    }
                }
                Doc::Json(s, n) => {
                    let mut at = Some(&n);
                    for p in &path {
                        at = at.and_then(|n| step_node(n, p));
                    }
                    match at {
                        None => Value::Null,
                        Some(g) if text => g.as_text(s).map_or(Value::Null, Value::Text),
                        Some(g) => Value::Json(g.text(s).to_string()),
                    }
                }
            })
        }
        Func::JsonTypeof => {
            let name = match doc(&args[0]).ok_or_else(|| bad(func))?? {
                Doc::Jsonb(j) => j.type_name(),
                Doc::Json(_, n) => n.type_name(),
            };
            Ok(Value::Text(name.into()))
        }
        Func::JsonArrayLength => {
            let (kind, len) = match doc(&args[0]).ok_or_else(|| bad(func))?? {
                Doc::Jsonb(Jsonb::Array(a)) => ("array", a.len()),
                Doc::Jsonb(j) => (if j.is_scalar() { "scalar" } else { "" }, 0),
                Doc::Json(_, n) => match &n.kind {
                    Kind::Array(a) => ("array", a.len()),
                    Kind::Object(_) => ("", 0),
                    _ => ("scalar", 0),
                },
            };
            match kind {
                "array" => Ok(Value::Int(len as i32)),
                "scalar" => Err(invalid("cannot get array length of a scalar")),
                _ => Err(invalid("cannot get array length of a non-array")),
            }
        }
        Func::JsonStripNulls => Ok(match doc(&args[0]).ok_or_else(|| bad(func))?? {
            Doc::Jsonb(j) => jb(strip_nulls(j)),
            Doc::Json(s, n) => {
                let mut out = String::new();
                write_stripped(&n, s, &mut out);
                Value::Json(out)
            }
        }),
        Func::JsonbPretty => Ok(Value::Text(jsonb_arg(func, &args[0])?.pretty())),
        Func::JsonbContains | Func::JsonbContained => {
            let (a, b) = (jsonb_arg(func, &args[0])?, jsonb_arg(func, &args[1])?);
            Ok(Value::Bool(if func == Func::JsonbContains {
                a.contains(b)
            } else {
                b.contains(a)
            }))
        }
        Func::JsonbExists => {
            let j = jsonb_arg(func, &args[0])?;
            let Value::Text(k) = &args[1] else {
                return Err(bad(func));
            };
            Ok(Value::Bool(j.exists(k)))
        }
        Func::JsonbExistsAny | Func::JsonbExistsAll => {
            let j = jsonb_arg(func, &args[0])?;
            let keys = texts(&args[1]).ok_or_else(|| bad(func))?;
            let mut keys = keys.iter().flatten();
            Ok(Value::Bool(if func == Func::JsonbExistsAny {
                keys.any(|k| j.exists(k))
            } else {
                keys.all(|k| j.exists(k))
            }))
        }
        Func::JsonbConcat => {
            let (a, b) = (jsonb_arg(func, &args[0])?, jsonb_arg(func, &args[1])?);
            Ok(jb(concat(a, b)))
        }
        Func::JsonbDelete => {
            let j = jsonb_arg(func, &args[0])?;
            Ok(jb(delete(j, &args[1])?))
        }
        Func::JsonbDeletePath => {
            let j = jsonb_arg(func, &args[0])?;
            let path = texts(&args[1]).ok_or_else(|| bad(func))?;
            if j.is_scalar() {
                return Err(invalid("cannot delete path in scalar"));
            }
            let path = path_elements(path)?;
            let mut out = j.clone();
            delete_path(&mut out, &path, 0)?;
            Ok(jb(out))
        }
        Func::JsonObject | Func::JsonbObject => object_of_arrays(func, args),
        Func::JsonbSet | Func::JsonbInsert => {
            let j = jsonb_arg(func, &args[0])?;
            let path = texts(&args[1]).ok_or_else(|| bad(func))?;
            let new = jsonb_arg(func, &args[2])?;
            let flag = args.get(3).map(|v| *v == Value::Bool(true));
            let mode = match (func, flag) {
                (Func::JsonbInsert, after) => Mode::Insert {
                    after: after.unwrap_or(false),
                },
                (_, create) => Mode::Set {
                    create: create.unwrap_or(true),
                },
            };
            if j.is_scalar() {
                return Err(invalid("cannot set path in scalar"));
            }
            let path = path_elements(path)?;
            let mut out = j.clone();
            if !path.is_empty() {
                set_path(&mut out, &path, 0, new, mode)?;
            }
            Ok(jb(out))
        }
        _ => Err(bad(func)),
    }
}

/// `json_object(text[])` (pairs, or rows of two) and
/// `json_object(keys, values)`; `jsonb_object` the same as jsonb.
fn object_of_arrays(func: Func, args: &[Value]) -> Result<Value> {
    let dims = |v: &Value| match v {
        Value::Array(a) => a.dims.len(),
        _ => 0,
    };
    let subscript = |m: &str| Error::sql(SqlState::ARRAY_SUBSCRIPT_ERROR, m);
    let pairs: Vec<(Option<String>, Option<String>)> = match args {
        [one] => {
            let items = texts(one).ok_or_else(|| bad(func))?;
            match dims(one) {
                0 => Vec::new(),
                1 if !items.len().is_multiple_of(2) => {
                    return Err(subscript("array must have even number of elements"))
                }
                1 => items
                    .chunks(2)
                    .map(|c| (c[0].clone(), c[1].clone()))
                    .collect(),
                2 => {
                    let Value::Array(a) = one else {
                        return Err(bad(func));
                    };
                    if a.dims[1].len != 2 {
                        return Err(subscript("array must have two columns"));
                    }
                    items
                        .chunks(2)
                        .map(|c| (c[0].clone(), c[1].clone()))
                        .collect()
                }
                _ => return Err(subscript("wrong number of array subscripts")),
            }
        }
        [keys, values] => {
            let (k, v) = (
                texts(keys).ok_or_else(|| bad(func))?,
                texts(values).ok_or_else(|| bad(func))?,
            );
            if dims(keys) > 1 || dims(values) > 1 {
                return Err(subscript("wrong number of array subscripts"));
            }
            if k.len() != v.len() {
                return Err(subscript("mismatched array dimensions"));
            }
            k.into_iter().zip(v).collect()
        }
        _ => return Err(bad(func)),
    };
    let mut fields = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let k = k.ok_or_else(|| {
            Error::sql(
                SqlState::NULL_VALUE_NOT_ALLOWED,
                "null value not allowed for object key",
            )
        })?;
        fields.push((k, v));
    }
    if func == Func::JsonbObject {
        return Ok(Value::Jsonb(Box::new(Jsonb::object(
            fields
                .into_iter()
                .map(|(k, v)| (k, v.map_or(Jsonb::Null, Jsonb::String)))
                .collect(),
        ))));
    }
    let mut s = String::from("{");
    for (n, (k, v)) in fields.iter().enumerate() {
        if n > 0 {
            s.push_str(", ");
        }
        escape_into(&mut s, k);
        s.push_str(" : ");
        match v {
            Some(v) => escape_into(&mut s, v),
            None => s.push_str("null"),
        }
    }
    s.push('}');
    Ok(Value::Json(s))
}

fn strip_nulls(j: &Jsonb) -> Jsonb {
    match j {
        Jsonb::Object(f) => Jsonb::Object(
            f.iter()
                .filter(|(_, v)| *v != Jsonb::Null)
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Jsonb::Array(items) => Jsonb::Array(items.iter().map(strip_nulls).collect()),
        j => j.clone(),
    }
}

fn write_stripped(n: &Node, s: &str, out: &mut String) {
    match &n.kind {
        Kind::Object(f) => {
            out.push('{');
            let mut first = true;
            for (k, v) in f.iter().filter(|(_, v)| !matches!(v.kind, Kind::Null)) {
                if !first {
                    out.push(',');
                }
                first = false;
                escape_into(out, k);
                out.push(':');
                write_stripped(v, s, out);
            }
            out.push('}');
        }
        Kind::Array(items) => {
            out.push('[');
            for (k, v) in items.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                write_stripped(v, s, out);
            }
            out.push(']');
        }
        _ => out.push_str(n.text(s)),
    }
}

/// `a || b` on jsonb (PostgreSQL's `jsonb_concat`).
fn concat(a: &Jsonb, b: &Jsonb) -> Jsonb {
    match (a, b) {
        (Jsonb::Object(x), Jsonb::Object(y)) => {
            Jsonb::object(x.iter().chain(y.iter()).cloned().collect())
        }
        _ => {
            let as_items = |j: &Jsonb| match j {
                Jsonb::Array(items) => items.clone(),
                j => vec![j.clone()],
            };
            let mut items = as_items(a);
            items.extend(as_items(b));
            Jsonb::Array(items)
        }
    }
}

fn delete(j: &Jsonb, what: &Value) -> Result<Jsonb> {
    match (j, what) {
        (j, _) if j.is_scalar() => Err(invalid("cannot delete from scalar")),
        (Jsonb::Object(f), Value::Text(k)) => Ok(Jsonb::Object(
            f.iter().filter(|(key, _)| key != k).cloned().collect(),
        )),
        (Jsonb::Array(items), Value::Text(k)) => Ok(Jsonb::Array(
            items
                .iter()
                .filter(|i| !matches!(i, Jsonb::String(s) if s == k))
                .cloned()
                .collect(),
        )),
        (Jsonb::Object(f), Value::Array(_)) => {
            let keys: Vec<String> = texts(what)
                .unwrap_or_default()
                .into_iter()
                .flatten()
                .collect();
            Ok(Jsonb::Object(
                f.iter()
                    .filter(|(k, _)| !keys.contains(k))
                    .cloned()
                    .collect(),
            ))
        }
        (Jsonb::Array(items), Value::Array(_)) => {
            let keys: Vec<String> = texts(what)
                .unwrap_or_default()
                .into_iter()
                .flatten()
                .collect();
            Ok(Jsonb::Array(
                items
                    .iter()
                    .filter(|i| !matches!(i, Jsonb::String(s) if keys.contains(s)))
                    .cloned()
                    .collect(),
            ))
        }
        (Jsonb::Object(_), Value::Int(_) | Value::BigInt(_)) => {
            Err(invalid("cannot delete from object using integer index"))
        }
        (Jsonb::Array(items), i) => {
            let mut items = items.clone();
            if let Some(k) = i.as_i64().and_then(|i| json::resolve_index(i, items.len())) {
                items.remove(k);
            }
            Ok(Jsonb::Array(items))
        }
        _ => Err(invalid("cannot delete from scalar")),
    }
}

/// A path argument's elements; a NULL element is an error (22023).
fn path_elements(path: Vec<Option<String>>) -> Result<Vec<String>> {
    path.into_iter()
        .enumerate()
        .map(|(k, p)| {
            p.ok_or_else(|| invalid(format!("path element at position {} is null", k + 1)))
        })
        .collect()
}

fn path_index(p: &str, level: usize) -> Result<i64> {
    p.trim().parse::<i64>().map_err(|_| {
        Error::sql(
            SqlState::INVALID_TEXT_REPRESENTATION,
            format!(
                "path element at position {} is not an integer: \"{p}\"",
                level + 1
            ),
        )
    })
}

fn delete_path(j: &mut Jsonb, path: &[String], level: usize) -> Result<()> {
    let Some(p) = path.get(level) else {
        return Ok(());
    };
    let last = level + 1 == path.len();
    match j {
        Jsonb::Object(f) => {
            if let Ok(i) = f.binary_search_by(|(k, _)| json::key_order(k, p)) {
                if last {
                    f.remove(i);
                } else {
                    delete_path(&mut f[i].1, path, level + 1)?;
                }
            }
        }
        Jsonb::Array(items) => {
            let i = path_index(p, level)?;
            if let Some(k) = json::resolve_index(i, items.len()) {
                if last {
                    items.remove(k);
                } else {
                    delete_path(&mut items[k], path, level + 1)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// What [`set_path`] does at the path's last step.
#[derive(Clone, Copy)]
enum Mode {
    /// `jsonb_set`: replace, or add when `create`.
    Set { create: bool },
    /// `jsonb_insert`: add before (or `after`) an element; a key that is
    /// there already is an error.
    Insert { after: bool },
}

/// `jsonb_set` / `jsonb_insert` (PostgreSQL's `setPath`): change the last
/// step; a missing step before it leaves the value unchanged.
fn set_path(j: &mut Jsonb, path: &[String], level: usize, new: &Jsonb, mode: Mode) -> Result<()> {
    let p = &path[level];
    let last = level + 1 == path.len();
    let adds = matches!(mode, Mode::Insert { .. } | Mode::Set { create: true });
    match j {
        Jsonb::Object(f) => match f.binary_search_by(|(k, _)| json::key_order(k, p)) {
            Ok(_) if last && matches!(mode, Mode::Insert { .. }) => {
                return Err(invalid("cannot replace existing key")
                    .with_hint("Try using the function jsonb_set to replace key value."))
            }
            Ok(i) if last => f[i].1 = new.clone(),
            Ok(i) => set_path(&mut f[i].1, path, level + 1, new, mode)?,
            Err(i) if last && adds => f.insert(i, (p.clone(), new.clone())),
            Err(_) => {}
        },
        Jsonb::Array(items) => {
            let i = path_index(p, level)?;
            let n = items.len() as i64;
            match (json::resolve_index(i, items.len()), mode) {
                (Some(k), Mode::Insert { after }) if last => {
                    items.insert(k + usize::from(after), new.clone())
                }
                (Some(k), _) if last => items[k] = new.clone(),
                (Some(k), _) => set_path(&mut items[k], path, level + 1, new, mode)?,
                (None, _) if last && adds => {
                    if i < 0 && -i > n {
                        items.insert(0, new.clone());
                    } else {
                        items.push(new.clone());
                    }
                }
                (None, _) => {}
            }
        }
        _ if level > 0 => {}
        _ => return Err(invalid("cannot set path in scalar")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::ArrayValue;

    fn jb(s: &str) -> Value {
        Value::Jsonb(Box::new(Jsonb::parse(s).unwrap()))
    }

    fn text(v: Result<Value>) -> String {
        v.unwrap().to_pg_text().unwrap_or_else(|| "NULL".into())
    }

    #[test]
    fn operators_answer_as_postgres() {
        let arr = Value::Text("x".into());
        let _ = arr;
        assert_eq!(
            text(strict(
                Func::JsonGet,
                &[jb(r#"[1,"a",null]"#), Value::Int(1)]
            )),
            "\"a\""
        );
        assert_eq!(
            text(strict(
                Func::JsonGetText,
                &[jb(r#"[1,"a",null]"#), Value::Int(1)]
            )),
            "a"
        );
        assert_eq!(
            text(strict(
                Func::JsonGet,
                &[
                    Value::Json(r#"{"a": [1,  2]}"#.into()),
                    Value::Text("a".into())
                ]
            )),
            "[1,  2]"
        );
        assert_eq!(
            text(strict(Func::JsonbConcat, &[jb("[1]"), jb("2")])),
            "[1, 2]"
        );
        assert_eq!(
            text(strict(
                Func::JsonbSet,
                &[
                    jb(r#"{"a":{"b":1}}"#),
                    Value::Array(Box::new(ArrayValue::from_items(
                        crate::array::ElemType::Text,
                        vec![Value::Text("a".into()), Value::Text("b".into())]
                    ))),
                    jb("5")
                ]
            )),
            r#"{"a": {"b": 5}}"#
        );
        assert_eq!(
            text(build_object(
                Func::JsonBuildObject,
                &[Value::Text("a".into()), Value::Int(1)]
            )),
            r#"{"a" : 1}"#
        );
        assert!(build_object(Func::JsonBuildObject, &[Value::Null, Value::Int(1)]).is_err());
    }

    #[test]
    fn values_become_json_as_postgres_writes_them() {
        use crate::json_convert::json_agg;
        assert_eq!(to_json(&Value::Text("a\"b".into())), r#""a\"b""#);
        assert_eq!(to_json(&Value::Double(f64::NAN)), r#""NaN""#);
        assert_eq!(
            to_jsonb(&Value::Double(1e20)).unwrap().to_string(),
            "100000000000000000000"
        );
        assert_eq!(json_agg(&[Value::Int(1), Value::Null]), "[1, null]");
    }
}
