//! `json` and `jsonb` values: PostgreSQL's JSON grammar, the parse tree
//! with source spans (what `json` functions answer from: a `json` value
//! is its text, kept as written), and `jsonb`'s canonical tree.
//!
//! ```text
//!  '{"b":1, "a" : [1,2e1]}'::json   kept verbatim; -> 'a' answers the
//!                                   span `[1,2e1]` of the text
//!  '{"b":1, "a" : [1,2e1]}'::jsonb  Object [("a", [1, 20]), ("b", 1)]
//!                                   keys unique (the last wins), shorter
//!                                   keys first, then bytewise; numbers
//!                                   as NUMERIC: 2e1 is 20, 1.50 keeps 1.50
//!  output                           {"a": [1, 20], "b": 1}
//! ```
//!
//! A `jsonb` value is stored as its canonical text; reading it back
//! parses that text again (a stored value that does not parse is
//! corrupt). Ordering follows PostgreSQL's `compareJsonbContainers`:
//! object > array > boolean > number > string > null, containers first by
//! their size, and a top-level scalar sorts after `[]` and before every
//! other array.

mod number;
mod parse;

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::error::Result;

pub use number::JsonNumber;
pub use parse::{parse, Kind, Node};

/// Nesting deeper than this is refused (54001, as PostgreSQL refuses
/// input deeper than its stack allows), which bounds every recursion
/// over a value.
pub const MAX_DEPTH: usize = 512;

/// A `jsonb` value.
#[derive(Clone, Debug, PartialEq)]
pub enum Jsonb {
    Null,
    Bool(bool),
    Number(JsonNumber),
    String(String),
    Array(Vec<Jsonb>),
    /// Unique keys in [`key_order`].
    Object(Vec<(String, Jsonb)>),
}

/// An error of a json function's argument (22023
/// `invalid_parameter_value`, as PostgreSQL raises them).
pub(crate) fn invalid(message: impl Into<String>) -> crate::error::Error {
    crate::error::Error::sql(crate::error::SqlState::INVALID_PARAMETER_VALUE, message)
}

/// PostgreSQL's ordering of object keys: shorter first, then bytewise.
pub fn key_order(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// `s` as a JSON string literal (PostgreSQL's `escape_json`).
pub fn escape_into(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    escape_into(&mut out, s);
    out
}

impl Jsonb {
    /// Parses `jsonb` input text.
    pub fn parse(text: &str) -> Result<Jsonb> {
        let node = parse(text)?;
        Jsonb::from_node(&node, text)
    }

    /// The canonical value of a parsed node of `text`.
    pub fn from_node(node: &Node, text: &str) -> Result<Jsonb> {
        Ok(match &node.kind {
            Kind::Null => Jsonb::Null,
            Kind::Bool(b) => Jsonb::Bool(*b),
            Kind::Number => Jsonb::Number(JsonNumber::parse(&text[node.start..node.end])?),
            Kind::String(s) => Jsonb::String(s.clone()),
            Kind::Array(items) => Jsonb::Array(
                items
                    .iter()
                    .map(|n| Jsonb::from_node(n, text))
                    .collect::<Result<_>>()?,
            ),
            Kind::Object(fields) => Jsonb::object(
                fields
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), Jsonb::from_node(v, text)?)))
                    .collect::<Result<_>>()?,
            ),
        })
    }

    /// An object of `pairs` in any order: the last of equal keys wins.
    pub fn object(pairs: Vec<(String, Jsonb)>) -> Jsonb {
        let mut pairs: Vec<(usize, (String, Jsonb))> = pairs.into_iter().enumerate().collect();
        pairs.sort_by(|(i, (a, _)), (j, (b, _))| key_order(a, b).then(j.cmp(i)));
        pairs.dedup_by(|(_, (a, _)), (_, (b, _))| a == b);
        Jsonb::Object(pairs.into_iter().map(|(_, p)| p).collect())
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Jsonb::Null => "null",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Number(_) => "number",
            Jsonb::String(_) => "string",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        }
    }

    pub fn is_scalar(&self) -> bool {
        !matches!(self, Jsonb::Array(_) | Jsonb::Object(_))
    }

    pub fn write(&self, out: &mut String) {
        match self {
            Jsonb::Null => out.push_str("null"),
            Jsonb::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Jsonb::Number(n) => {
                let _ = write!(out, "{n}");
            }
            Jsonb::String(s) => escape_into(out, s),
            Jsonb::Array(items) => {
                out.push('[');
                for (k, v) in items.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Jsonb::Object(fields) => {
                out.push('{');
                for (k, (key, v)) in fields.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    escape_into(out, key);
                    out.push_str(": ");
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// `jsonb_pretty`: four spaces per level.
    pub fn pretty(&self) -> String {
        fn go(v: &Jsonb, level: usize, out: &mut String) {
            let pad = |out: &mut String, l: usize| {
                for _ in 0..l {
                    out.push_str("    ");
                }
            };
            match v {
                Jsonb::Array(items) => {
                    out.push_str("[\n");
                    for (k, item) in items.iter().enumerate() {
                        if k > 0 {
                            out.push_str(",\n");
                        }
                        pad(out, level + 1);
                        go(item, level + 1, out);
                    }
                    if !items.is_empty() {
                        out.push('\n');
                    }
                    pad(out, level);
                    out.push(']');
                }
                Jsonb::Object(fields) => {
                    out.push_str("{\n");
                    for (k, (key, item)) in fields.iter().enumerate() {
                        if k > 0 {
                            out.push_str(",\n");
                        }
                        pad(out, level + 1);
                        escape_into(out, key);
                        out.push_str(": ");
                        go(item, level + 1, out);
                    }
                    if !fields.is_empty() {
                        out.push('\n');
                    }
                    pad(out, level);
                    out.push('}');
                }
                v => v.write(out),
            }
        }
        let mut out = String::new();
        go(self, 0, &mut out);
        out
    }

    /// The rank of a value's kind in PostgreSQL's ordering.
    fn rank(&self) -> u8 {
        match self {
            Jsonb::Null => 0,
            Jsonb::String(_) => 1,
            Jsonb::Number(_) => 2,
            Jsonb::Bool(_) => 3,
            Jsonb::Array(_) => 4,
            Jsonb::Object(_) => 5,
        }
    }

    /// PostgreSQL's jsonb ordering (btree `jsonb_ops`).
    pub fn cmp_jsonb(&self, o: &Jsonb) -> Ordering {
        // At the top, a scalar is a one-element array marked raw: after
        // `[]`, before any other one-element array.
        let top = |v: &Jsonb| -> (u8, usize, bool) {
            match v {
                Jsonb::Object(f) => (1, f.len(), false),
                Jsonb::Array(a) => (0, a.len(), true),
                _ => (0, 1, false),
            }
        };
        let (ka, na, ra) = top(self);
        let (kb, nb, rb) = top(o);
        ka.cmp(&kb)
            .then(na.cmp(&nb))
            .then(ra.cmp(&rb))
            .then_with(|| self.cmp_inner(o))
    }

    fn cmp_inner(&self, o: &Jsonb) -> Ordering {
        match (self, o) {
            (Jsonb::Null, Jsonb::Null) => Ordering::Equal,
            (Jsonb::Bool(a), Jsonb::Bool(b)) => a.cmp(b),
            (Jsonb::Number(a), Jsonb::Number(b)) => a.cmp_num(b),
            (Jsonb::String(a), Jsonb::String(b)) => a.cmp(b),
            (Jsonb::Array(a), Jsonb::Array(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.cmp_inner(y))
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            }),
            // Keys compare as strings here (not in storage order's
            // length-first way), as PostgreSQL's comparison does.
            (Jsonb::Object(a), Jsonb::Object(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|((ka, va), (kb, vb))| ka.cmp(kb).then_with(|| va.cmp_inner(vb)))
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            }),
            _ => self.rank().cmp(&o.rank()),
        }
    }

    /// `a @> b` (PostgreSQL's `JsonbDeepContains`, from the top).
    pub fn contains(&self, b: &Jsonb) -> bool {
        match (self, b) {
            // A top-level array contains a top-level scalar it holds.
            (Jsonb::Array(items), s) if s.is_scalar() => items.iter().any(|i| i == s),
            _ => self.deep_contains(b),
        }
    }

    fn deep_contains(&self, b: &Jsonb) -> bool {
        match (self, b) {
            (Jsonb::Object(a), Jsonb::Object(b)) => b.iter().all(|(k, vb)| {
                a.binary_search_by(|(ka, _)| key_order(ka, k))
                    .ok()
                    .is_some_and(|i| {
                        let va = &a[i].1;
                        match (va.is_scalar(), vb.is_scalar()) {
                            (true, true) => va.equal_scalar(vb),
                            (false, false) => va.rank() == vb.rank() && va.deep_contains(vb),
                            _ => false,
                        }
                    })
            }),
            (Jsonb::Array(a), Jsonb::Array(b)) => b.iter().all(|vb| {
                if vb.is_scalar() {
                    a.iter().any(|va| va.is_scalar() && va.equal_scalar(vb))
                } else {
                    a.iter()
                        .any(|va| va.rank() == vb.rank() && va.deep_contains(vb))
                }
            }),
            (a, b) if a.is_scalar() && b.is_scalar() => a.equal_scalar(b),
            _ => false,
        }
    }

    fn equal_scalar(&self, b: &Jsonb) -> bool {
        self.rank() == b.rank() && self.cmp_inner(b) == Ordering::Equal
    }

    /// `?`: a key of an object, a string element of an array, or the
    /// string itself.
    pub fn exists(&self, key: &str) -> bool {
        match self {
            Jsonb::Object(f) => f.binary_search_by(|(k, _)| key_order(k, key)).is_ok(),
            Jsonb::Array(items) => items
                .iter()
                .any(|i| matches!(i, Jsonb::String(s) if s == key)),
            Jsonb::String(s) => s == key,
            _ => false,
        }
    }

    /// `->` with a key.
    pub fn field(&self, key: &str) -> Option<&Jsonb> {
        match self {
            Jsonb::Object(f) => f
                .binary_search_by(|(k, _)| key_order(k, key))
                .ok()
                .map(|i| &f[i].1),
            _ => None,
        }
    }

    /// `->` with an index (negative: from the end). A top-level scalar
    /// is an array of itself here, as in PostgreSQL (`'"s"' -> 0`).
    pub fn element(&self, i: i64) -> Option<&Jsonb> {
        match self {
            Jsonb::Array(items) => items.get(resolve_index(i, items.len())?),
            Jsonb::Object(_) => None,
            scalar => resolve_index(i, 1).map(|_| scalar),
        }
    }

    /// What `->>` answers: a string unquoted, NULL for JSON null.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Jsonb::Null => None,
            Jsonb::String(s) => Some(s.clone()),
            v => Some(v.to_string()),
        }
    }
}

impl std::fmt::Display for Jsonb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::new();
        self.write(&mut s);
        f.write_str(&s)
    }
}

/// An array index as PostgreSQL resolves it (negative counts from the end).
pub fn resolve_index(i: i64, len: usize) -> Option<usize> {
    let i = if i < 0 { len as i64 + i } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Jsonb::parse(s).unwrap().to_string()
    }

    #[test]
    fn jsonb_is_canonical_as_postgres_prints_it() {
        assert_eq!(
            canon(r#"{"b":1, "a" : [1,2,{"c":1e2, "aa": 1.50e1, "d": -0}]}"#),
            r#"{"a": [1, 2, {"c": 100, "d": 0, "aa": 15.0}], "b": 1}"#
        );
        assert_eq!(canon(r#"{"a":1, "a":2}"#), r#"{"a": 2}"#);
        assert_eq!(canon("1.5e-3"), "0.0015");
        assert_eq!(canon("1e20"), "100000000000000000000");
        assert!(Jsonb::parse("1e200000").is_err());
        assert!(Jsonb::parse("1e-20000").is_err());
        assert!(Jsonb::parse("1e-99999999999999999999").is_err());
        assert_eq!(canon("-12.340e-1"), "-1.2340");
        assert_eq!(canon(r#""\u0041\n""#), r#""A\n""#);
        assert_eq!(canon(r#""\ud83d\ude00""#), "\"\u{1F600}\"");
    }

    #[test]
    fn bad_json_is_an_error_not_a_panic() {
        for bad in [
            "",
            "{",
            "[1,",
            "{\"a\" 1}",
            "01",
            "1.",
            "-",
            "tru",
            "\"\\x\"",
            "\"\\u12\"",
            "[1]x",
            "\"\u{1}\"",
            "\"\\ud800\"",
            "\"\\u0000\"",
            "1e",
            "{\"a\":}",
        ] {
            assert!(parse(bad).is_err() || Jsonb::parse(bad).is_err(), "{bad}");
        }
        let deep = "[".repeat(MAX_DEPTH + 2);
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn ordering_follows_postgres() {
        let order = [
            "[]",
            "null",
            "\"a\"",
            "\"b\"",
            "1",
            "2",
            "false",
            "true",
            "[1]",
            "[0, 1]",
            "{}",
            "{\"a\": 1}",
        ];
        for w in order.windows(2) {
            let (a, b) = (Jsonb::parse(w[0]).unwrap(), Jsonb::parse(w[1]).unwrap());
            assert_eq!(a.cmp_jsonb(&b), Ordering::Less, "{} < {}", w[0], w[1]);
        }
        let (a, b) = (Jsonb::parse("1.0").unwrap(), Jsonb::parse("1").unwrap());
        assert_eq!(a.cmp_jsonb(&b), Ordering::Equal);
        let (a, b) = (
            Jsonb::parse(r#"{"aa": 1}"#).unwrap(),
            Jsonb::parse(r#"{"b": 1}"#).unwrap(),
        );
        assert_eq!(a.cmp_jsonb(&b), Ordering::Less);
        let (a, b) = (Jsonb::parse("-2").unwrap(), Jsonb::parse("-10").unwrap());
        assert_eq!(a.cmp_jsonb(&b), Ordering::Greater);
        let (a, b) = (Jsonb::parse("0.05").unwrap(), Jsonb::parse("0.5").unwrap());
        assert_eq!(a.cmp_jsonb(&b), Ordering::Less);
    }

    #[test]
    fn containment_and_existence() {
        let j = |s: &str| Jsonb::parse(s).unwrap();
        assert!(j(r#"{"a":1,"b":[1,2]}"#).contains(&j(r#"{"b":[2]}"#)));
        assert!(!j(r#"{"a":1}"#).contains(&j(r#"{"a":2}"#)));
        assert!(j(r#"{"age":25.0}"#).contains(&j(r#"{"age":25}"#)));
        assert!(!j(r#"{"a":[1]}"#).contains(&j(r#"{"a":{}}"#)));
        assert!(j("[1,2]").contains(&j("1")));
        assert!(!j("1").contains(&j("[1]")));
        assert!(j(r#"[[1,2]]"#).contains(&j("[[1]]")));
        assert!(j(r#"{"a":1}"#).exists("a"));
        assert!(j(r#"["a"]"#).exists("a"));
        assert!(!j(r#"[1]"#).exists("1"));
    }
}
