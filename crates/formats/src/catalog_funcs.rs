//! The scalar functions catalog queries lean on, evaluated by the one
//! expression evaluator ([`crate::expr`]) on host and device alike:
//! `replace`, integer `&` and `|`, regular-expression matching (`~`,
//! `~*`, negated by the compiler with `NOT`), arrays kept in their text
//! form, record fields, and two catalog lookups.
//!
//! ```text
//!  array text form          lower bound   element i
//!  {public,pg_catalog}      1             split on ',' ("…" quoted, NULL)
//!  1 3 2   (int2vector)     0             split on blanks
//!  record (1,"a b")         field 1, 2    split on ',' ("…" quoted, empty = NULL)
//! ```
//!
//! ndpdb has no array or record column types: the catalog's arrays
//! (`pg_index.indkey`, `pg_constraint.conkey`, `current_schemas()`) are
//! text in PostgreSQL's output format, which these functions read; the
//! compiler knows each one's element type and casts the text element.
//! A regular expression is Rust's `regex` dialect, which agrees with
//! PostgreSQL's advanced expressions on the common forms (classes,
//! anchors, alternation, repetition); an invalid pattern is 2201B.
//! `pg_get_indexdef` reads a table `oid \t column \t text` lines the
//! planner made from the catalog when the statement was planned;
//! `to_regclass`/`to_regtype` a table of `schema \t name \t oid` lines.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::error::{Error, Result, SqlState};
use crate::expr::Func;
use crate::value::Value;

/// The flag bit of a case-insensitive match (`~*`).
pub const REGEX_CASE_INSENSITIVE: i32 = 1;

/// `Some(result)` for the functions of this module.
pub fn call(func: Func, args: &[Value]) -> Option<Result<Value>> {
    let out = match func {
        Func::PgGetExpr => Ok(args.first().cloned().unwrap_or(Value::Null)),
        Func::FormatType => format_type(args),
        Func::ArrayToString => array_to_string(args),
        Func::Setting => match args {
            [Value::Text(lines), Value::Text(name)] => {
                let name = name.to_lowercase();
                match lines
                    .lines()
                    .filter_map(|l| l.split_once('\t'))
                    .find(|(n, _)| *n == name)
                {
                    Some((_, v)) => Ok(Value::Text(v.to_string())),
                    None => Err(Error::sql(
                        SqlState::UNDEFINED_OBJECT,
                        format!("unrecognized configuration parameter \"{name}\""),
                    )),
                }
            }
            [_, Value::Null] => Ok(Value::Null),
            _ => Err(Error::sql(
                SqlState::DATATYPE_MISMATCH,
                "current_setting takes a text name",
            )),
        },
        _ if !matches!(
            func,
            Func::Replace
                | Func::BitAnd
                | Func::BitOr
                | Func::RegexMatch
                | Func::ArrayElem
                | Func::ArrayUpper
                | Func::ArrayLower
                | Func::RecordField
                | Func::IndexDef
                | Func::TrimChars
                | Func::NameLookup
                | Func::SerialSequence
                | Func::NameToOid
        ) =>
        {
            return None
        }
        _ if args.iter().any(Value::is_null) => Ok(Value::Null),
        Func::Replace => match args {
            [Value::Text(s), Value::Text(from), Value::Text(to)] => {
                Ok(Value::Text(if from.is_empty() {
                    s.clone()
                } else {
                    s.replace(from.as_str(), to)
                }))
            }
            _ => Err(bad(func)),
        },
        Func::BitAnd | Func::BitOr => bits(func, args),
        Func::TrimChars => match args {
            [Value::Text(s), Value::Text(chars), mode] => {
                let set = |c: char| chars.contains(c);
                Ok(Value::Text(
                    match mode.as_i64() {
                        Some(1) => s.trim_start_matches(set),
                        Some(2) => s.trim_end_matches(set),
                        _ => s.trim_matches(set),
                    }
                    .to_string(),
                ))
            }
            _ => Err(bad(func)),
        },
        Func::RegexMatch => match args {
            [Value::Text(s), Value::Text(p), flags] => {
                let ci = flags.as_i64().unwrap_or(0) as i32 & REGEX_CASE_INSENSITIVE != 0;
                regex_match(s, p, ci).map(Value::Bool)
            }
            _ => Err(bad(func)),
        },
        Func::ArrayElem => match (args.first(), args.get(1).and_then(Value::as_i64)) {
            (Some(Value::Text(a)), Some(i)) => {
                let (lower, items) = array_items(a);
                Ok(usize::try_from(i - lower)
                    .ok()
                    .and_then(|k| items.get(k).cloned())
                    .flatten()
                    .map_or(Value::Null, Value::Text))
            }
            _ => Err(bad(func)),
        },
        Func::ArrayUpper | Func::ArrayLower => {
            match (args.first(), args.get(1).and_then(Value::as_i64)) {
                (Some(Value::Text(a)), Some(dim)) => {
                    let (lower, items) = array_items(a);
                    Ok(if dim != 1 || items.is_empty() {
                        Value::Null
                    } else if func == Func::ArrayLower {
                        Value::Int(lower as i32)
                    } else {
                        Value::Int((lower + items.len() as i64 - 1) as i32)
                    })
                }
                _ => Err(bad(func)),
            }
        }
        Func::RecordField => match (args.first(), args.get(1).and_then(Value::as_i64)) {
            (Some(Value::Text(r)), Some(i)) => {
                let inner = r
                    .strip_prefix('(')
                    .and_then(|r| r.strip_suffix(')'))
                    .unwrap_or(r);
                let fields = split_fields(inner, true);
                Ok(usize::try_from(i - 1)
                    .ok()
                    .and_then(|k| fields.get(k).cloned())
                    .flatten()
                    .map_or(Value::Null, Value::Text))
            }
            _ => Err(bad(func)),
        },
        Func::IndexDef => match (
            args.first(),
            args.get(1).and_then(Value::as_i64),
            args.get(2).and_then(Value::as_i64),
        ) {
            (Some(Value::Text(defs)), Some(oid), Some(col)) => Ok(defs
                .lines()
                .find_map(|line| {
                    let mut parts = line.splitn(3, '\t');
                    let o: i64 = parts.next()?.parse().ok()?;
                    let c: i64 = parts.next()?.parse().ok()?;
                    (o == oid && c == col).then(|| unescape(parts.next().unwrap_or("")))
                })
                .map_or(Value::Null, Value::Text)),
            _ => Err(bad(func)),
        },
        // `'name'::regclass` of a value known when the statement runs: a
        // name that is not there is an error, as in PostgreSQL.
        Func::NameToOid => match args {
            [Value::Text(name), Value::Text(names), kind] => match name_lookup(names, name) {
                Value::Null => Err(match kind.as_i64() {
                    Some(1) => Error::sql(
                        SqlState::UNDEFINED_TABLE,
                        format!("relation \"{name}\" does not exist"),
                    ),
                    _ => Error::sql(
                        SqlState::UNDEFINED_OBJECT,
                        format!("type \"{name}\" does not exist"),
                    ),
                }),
                oid => Ok(oid),
            },
            _ => Err(bad(func)),
        },
        Func::SerialSequence => match args {
            [Value::Text(lines), Value::Text(table), Value::Text(column)] => {
                serial_sequence(lines, table, column)
            }
            _ => Err(bad(func)),
        },
        Func::NameLookup => match args {
            [Value::Text(names), Value::Text(name)] => Ok(name_lookup(names, name)),
            _ => Err(bad(func)),
        },
        _ => return None,
    };
    Some(out)
}

/// One line of a table [`Func::IndexDef`] reads: `key \t column \t
/// text`, the text's backslashes, tabs and line breaks escaped.
pub fn lookup_line(key: i64, column: i64, text: &str) -> String {
    let mut out = format!("{key}\t{column}\t");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('\n');
    out
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// A possibly qualified name as PostgreSQL reads it: `schema.name`,
/// each part folded to lower case unless double-quoted (`"Mixed"`,
/// `""` inside quotes is one quote), blanks around parts dropped. A
/// type's modifier (`varchar(10)`) is not part of the name.
pub fn split_qualified(name: &str) -> (Option<String>, String) {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut quoted = false;
    let mut chars = name.trim().chars().peekable();
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                part.push('"');
            }
            '"' => {
                quoted = !quoted;
                was_quoted = true;
            }
            '.' if !quoted => {
                parts.push(fold(&part, was_quoted));
                part.clear();
                was_quoted = false;
            }
            '(' if !quoted => break,
            c => part.push(c),
        }
    }
    parts.push(fold(&part, was_quoted));
    let name = parts.pop().unwrap_or_default();
    (parts.pop(), name)
}

fn fold(part: &str, quoted: bool) -> String {
    if quoted {
        part.to_string()
    } else {
        part.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    }
}

/// The OID text of `name` in `names` (`schema \t name \t oid` lines in
/// search-path order), as a BIGINT; NULL when absent.
fn name_lookup(names: &str, name: &str) -> Value {
    let (schema, name) = split_qualified(name);
    names
        .lines()
        .find_map(|line| {
            let mut f = line.splitn(3, '\t');
            let (s, n, oid) = (f.next()?, f.next()?, f.next()?);
            let schema_ok = schema.as_deref().is_none_or(|want| want == s);
            (schema_ok && n == name).then(|| oid.parse::<i64>().ok())?
        })
        .map_or(Value::Null, Value::BigInt)
}

/// `pg_get_serial_sequence`: the sequence feeding `column` of `table`
/// (NULL when none does); an unknown table or column is an error.
fn serial_sequence(lines: &str, table: &str, column: &str) -> Result<Value> {
    let (schema, name) = split_qualified(table);
    if !matches!(schema.as_deref(), None | Some("public")) {
        return Err(Error::sql(
            SqlState::UNDEFINED_SCHEMA,
            format!("schema \"{}\" does not exist", schema.unwrap_or_default()),
        ));
    }
    let mut known = false;
    for line in lines.lines() {
        let mut f = line.splitn(3, '\t');
        let (t, c, seq) = (f.next(), f.next(), f.next().unwrap_or(""));
        if t != Some(name.as_str()) {
            continue;
        }
        known = true;
        if c == Some(column) {
            return Ok(if seq.is_empty() {
                Value::Null
            } else {
                Value::Text(seq.to_string())
            });
        }
    }
    Err(if known {
        Error::sql(
            SqlState::UNDEFINED_COLUMN,
            format!("column \"{column}\" of relation \"{name}\" does not exist"),
        )
    } else {
        Error::sql(
            SqlState::UNDEFINED_TABLE,
            format!("relation \"{table}\" does not exist"),
        )
    })
}

fn bad(func: Func) -> Error {
    Error::sql(
        SqlState::UNDEFINED_FUNCTION,
        format!("function {func:?} does not exist for these arguments"),
    )
}

fn bits(func: Func, args: &[Value]) -> Result<Value> {
    let op = |a: i64, b: i64| if func == Func::BitAnd { a & b } else { a | b };
    match args {
        [Value::Int(a), Value::Int(b)] => Ok(Value::Int(op(*a as i64, *b as i64) as i32)),
        [a, b] => match (a.as_i64(), b.as_i64()) {
            (Some(a), Some(b)) => Ok(Value::BigInt(op(a, b))),
            _ => Err(bad(func)),
        },
        _ => Err(bad(func)),
    }
}

/// Whether `s` matches `pattern` anywhere (PostgreSQL's `~`).
pub fn regex_match(s: &str, pattern: &str, case_insensitive: bool) -> Result<bool> {
    thread_local! {
        static CACHE: RefCell<HashMap<(String, bool), regex::Regex>> = RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let key = (pattern.to_string(), case_insensitive);
        if !cache.contains_key(&key) {
            let re = regex::RegexBuilder::new(pattern)
                .case_insensitive(case_insensitive)
                .build()
                .map_err(|e| {
                    let why = match e {
                        regex::Error::Syntax(s) => s
                            .lines()
                            .rev()
                            .find(|l| l.starts_with("error:"))
                            .map(|l| l.trim_start_matches("error:").trim().to_string())
                            .unwrap_or(s),
                        other => other.to_string(),
                    };
                    // PostgreSQL's words for the common mistakes.
                    let why = match why.as_str() {
                        "unclosed group" | "unopened group" => "parentheses () not balanced".into(),
                        "unclosed character class" => "brackets [] not balanced".into(),
                        "repetition operator missing expression" => {
                            "quantifier operand invalid".into()
                        }
                        _ => why,
                    };
                    Error::sql(
                        SqlState::INVALID_REGULAR_EXPRESSION,
                        format!("invalid regular expression: {why}"),
                    )
                })?;
            if cache.len() >= 64 {
                cache.clear();
            }
            cache.insert(key.clone(), re);
        }
        Ok(cache[&key].is_match(s))
    })
}

/// An array's lower bound and elements (`None`: NULL) from its text form:
/// `{a,b}` (lower bound 1) or an int2vector/oidvector `1 2` (0).
pub fn array_items(text: &str) -> (i64, Vec<Option<String>>) {
    match text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
    {
        Some(inner) if inner.trim().is_empty() => (1, Vec::new()),
        Some(inner) => (1, split_fields(inner, false)),
        None => (
            0,
            text.split_whitespace()
                .map(|w| Some(w.to_string()))
                .collect(),
        ),
    }
}

/// Comma-separated fields, `"…"` quoted with `\` escapes; an unquoted
/// `NULL` (arrays) or an empty field (records, `empty_null`) is NULL.
fn split_fields(inner: &str, empty_null: bool) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = inner.chars();
    let finish = |cur: &mut String, was_quoted: bool, out: &mut Vec<Option<String>>| {
        let field = std::mem::take(cur);
        let null = !was_quoted
            && ((empty_null && field.is_empty()) || (!empty_null && field.trim() == "NULL"));
        out.push(if null {
            None
        } else if was_quoted || empty_null {
            Some(field)
        } else {
            Some(field.trim().to_string())
        });
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => cur.extend(chars.next()),
            '"' if quoted && inner_peek_quote(&chars) => {
                chars.next();
                cur.push('"');
            }
            '"' => {
                quoted = !quoted;
                was_quoted = true;
            }
            ',' if !quoted => {
                finish(&mut cur, was_quoted, &mut out);
                was_quoted = false;
            }
            c => cur.push(c),
        }
    }
    finish(&mut cur, was_quoted, &mut out);
    out
}

/// A doubled quote inside a quoted record field (`""`).
fn inner_peek_quote(chars: &std::str::Chars<'_>) -> bool {
    chars.clone().next() == Some('"')
}

/// `s` as an element of an array or record text form, quoted when
/// PostgreSQL quotes it.
pub fn quote_element(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.eq_ignore_ascii_case("null")
        && !s
            .chars()
            .any(|c| matches!(c, ',' | '{' | '}' | '(' | ')' | '"' | '\\') || c.is_whitespace());
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// `format_type(oid, typmod)`: NULL for a NULL OID; a NULL modifier
/// prints the bare name (`character` for bpchar, where -1 prints
/// `bpchar`, as PostgreSQL does).
fn format_type(args: &[Value]) -> Result<Value> {
    let [oid, typmod] = args else {
        return Err(bad(Func::FormatType));
    };
    let Some(oid) = oid.as_i64() else {
        return Ok(Value::Null);
    };
    let typmod = typmod.as_i64();
    Ok(Value::Text(type_text(oid, typmod)))
}

/// A type's name as `format_type` prints it.
pub fn type_text(oid: i64, typmod: Option<i64>) -> String {
    // Arrays print as their element type with `[]`.
    let element = match oid {
        1000 => Some(16),
        1001 => Some(17),
        1003 => Some(19),
        1005 => Some(21),
        1007 => Some(23),
        1009 => Some(25),
        1014 => Some(1042),
        1015 => Some(1043),
        1016 => Some(20),
        1021 => Some(700),
        1022 => Some(701),
        1028 => Some(26),
        1115 => Some(1114),
        1182 => Some(1082),
        1231 => Some(1700),
        _ => None,
    };
    if let Some(e) = element {
        return format!("{}[]", type_text(e, typmod));
    }
    let m = typmod.filter(|t| *t >= 0);
    let name = match oid {
        16 => "boolean",
        17 => "bytea",
        18 => "\"char\"",
        19 => "name",
        20 => "bigint",
        21 => "smallint",
        22 => "int2vector",
        23 => "integer",
        24 => "regproc",
        25 => "text",
        26 => "oid",
        30 => "oidvector",
        114 => "json",
        194 => "pg_node_tree",
        700 => "real",
        701 => "double precision",
        1042 => {
            return match (typmod, m) {
                (_, Some(m)) => format!("character({})", m - 4),
                (None, _) => "character".into(),
                (Some(_), None) => "bpchar".into(),
            }
        }
        1043 => {
            return match m {
                Some(m) => format!("character varying({})", m - 4),
                None => "character varying".into(),
            }
        }
        1082 => "date",
        1083 | 1114 | 1184 | 1266 => {
            let (base, zone) = match oid {
                1083 => ("time", "without"),
                1114 => ("timestamp", "without"),
                1184 => ("timestamp", "with"),
                _ => ("time", "with"),
            };
            return match m {
                Some(p) => format!("{base}({p}) {zone} time zone"),
                None => format!("{base} {zone} time zone"),
            };
        }
        1186 => "interval",
        1700 => {
            return match m {
                Some(m) => {
                    let m = m - 4;
                    format!("numeric({},{})", (m >> 16) & 0xffff, m & 0xffff)
                }
                None => "numeric".into(),
            }
        }
        2205 => "regclass",
        2206 => "regtype",
        2950 => "uuid",
        3802 => "jsonb",
        4089 => "regnamespace",
        _ => "???",
    };
    name.to_string()
}

/// `array_to_string(array, separator [, null text])`: NULL for a NULL
/// array or separator; NULL elements are skipped unless `null text` is
/// given (and not NULL).
fn array_to_string(args: &[Value]) -> Result<Value> {
    let (array, sep, null) = match args {
        [a, s] => (a, s, None),
        [a, s, n] => (a, s, Some(n)),
        _ => return Err(bad(Func::ArrayToString)),
    };
    let (Value::Text(array), Value::Text(sep)) = (array, sep) else {
        return Ok(Value::Null);
    };
    let null = match null {
        Some(Value::Text(n)) => Some(n.as_str()),
        _ => None,
    };
    let (_, items) = array_items(array);
    let parts: Vec<&str> = items.iter().filter_map(|i| i.as_deref().or(null)).collect();
    Ok(Value::Text(parts.join(sep)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_in_both_text_forms() {
        assert_eq!(
            array_items("{a,\"b c\",NULL}"),
            (1, vec![Some("a".into()), Some("b c".into()), None])
        );
        assert_eq!(
            array_items("1 3"),
            (0, vec![Some("1".into()), Some("3".into())])
        );
        assert_eq!(array_items("{}"), (1, vec![]));
        assert_eq!(array_items(""), (0, vec![]));
    }

    #[test]
    fn lookup_lines_carry_any_text() {
        let text = "a\tb\nc\\d";
        let table = lookup_line(7, 0, text) + &lookup_line(7, 1, "x");
        let get = |col| {
            call(
                Func::IndexDef,
                &[Value::Text(table.clone()), Value::Int(7), Value::Int(col)],
            )
            .unwrap()
            .unwrap()
        };
        assert_eq!(get(0), Value::Text(text.into()));
        assert_eq!(get(1), Value::Text("x".into()));
    }

    #[test]
    fn record_fields_and_regex() {
        let r = call(
            Func::RecordField,
            &[Value::Text("(1,\"x,y\")".into()), Value::Int(2)],
        );
        assert_eq!(r.unwrap().unwrap(), Value::Text("x,y".into()));
        assert!(regex_match("pg_toast", "^pg_", false).unwrap());
        assert!(regex_match("ABC", "b", true).unwrap());
        assert_eq!(
            regex_match("a", "(", false).unwrap_err().sqlstate().code(),
            "2201B"
        );
    }

    #[test]
    fn format_type_prints_names_and_modifiers_as_postgresql_does() {
        assert_eq!(type_text(1043, Some(44)), "character varying(40)");
        assert_eq!(type_text(1042, None), "character");
        assert_eq!(type_text(1042, Some(-1)), "bpchar");
        assert_eq!(type_text(1700, Some(655366)), "numeric(10,2)");
        assert_eq!(type_text(1114, Some(3)), "timestamp(3) without time zone");
        assert_eq!(type_text(1015, Some(44)), "character varying(40)[]");
        assert_eq!(type_text(999_999, None), "???");
        let joined = array_to_string(&[
            Value::Text("{a,NULL,\"b c\"}".into()),
            Value::Text("-".into()),
        ]);
        assert_eq!(joined.unwrap(), Value::Text("a-b c".into()));
    }
}
