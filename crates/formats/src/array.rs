//! Arrays: the value, its element types, PostgreSQL's text form and the
//! byte form rows store.
//!
//! An array is a rectangular block of elements of one scalar type, in
//! row-major order, with a length and a lower bound per dimension (one
//! to six dimensions; the empty array has none), as PostgreSQL's arrays:
//!
//! ```text
//!  '{{1,2,3},{4,5,NULL}}'::int[]   dims [(len 2, lower 1), (len 3, lower 1)]
//!                                  items [1, 2, 3, 4, 5, NULL]
//!  '[0:1]={a,"b c"}'::text[]       dims [(len 2, lower 0)]   items [a, "b c"]
//!  '{}'::int[]                     dims []                   items []
//! ```
//!
//! The byte form (inside a variable-width field of a row):
//!
//! ```text
//!  elem type (DataType codec) | ndim u8 | ndim × (len i32 | lower i32) |
//!  items × (present u8 | value by the element type)
//! ```
//!
//! Comparison follows PostgreSQL's `array_cmp`: elements in order (two
//! NULLs equal, a NULL above any value), then the number of elements,
//! the number of dimensions, and each dimension's length and lower bound.

use std::cmp::Ordering;

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result, SqlState};
use crate::types::DataType;
pub use crate::types::ElemType;
pub use crate::value::{ArrayValue, Dim};
use crate::value::{Decimal, Value};

/// PostgreSQL's limit on an array's dimensions (`MAXDIM`).
pub const MAX_DIMS: usize = 6;

/// The most elements one array holds (PostgreSQL's `MaxArraySize`
/// is about 134 M; ndpdb's rows are smaller).
pub const MAX_ITEMS: usize = 1 << 24;

fn malformed(text: &str, detail: &str) -> Error {
    Error::sql(
        SqlState::INVALID_TEXT_REPRESENTATION,
        format!("malformed array literal: \"{text}\""),
    )
    .with_detail(detail)
}

fn too_many_dims(n: usize) -> Error {
    Error::sql(
        SqlState::PROGRAM_LIMIT_EXCEEDED,
        format!("number of array dimensions ({n}) exceeds the maximum allowed ({MAX_DIMS})"),
    )
}

/// PostgreSQL's `scanner_isspace`.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

impl ArrayValue {
    /// The empty array of `elem`.
    pub fn empty(elem: ElemType) -> ArrayValue {
        ArrayValue {
            elem,
            dims: Vec::new(),
            items: Vec::new(),
        }
    }

    /// A one-dimensional array (lower bound 1) of `items`; the empty
    /// array when there are none.
    pub fn from_items(elem: ElemType, items: Vec<Value>) -> ArrayValue {
        let dims = if items.is_empty() {
            Vec::new()
        } else {
            vec![Dim {
                len: items.len() as i32,
                lower: 1,
            }]
        };
        ArrayValue { elem, dims, items }
    }

    pub fn ndims(&self) -> usize {
        self.dims.len()
    }

    /// The subscripts of dimension `d` (1-based), in order or reversed;
    /// none if the array has no such dimension (`generate_subscripts`).
    pub fn subscripts(&self, d: i64, reverse: bool) -> Vec<i32> {
        let Some(dim) = usize::try_from(d - 1).ok().and_then(|k| self.dims.get(k)) else {
            return Vec::new();
        };
        let mut out: Vec<i32> = (dim.lower..dim.lower + dim.len).collect();
        if reverse {
            out.reverse();
        }
        out
    }

    /// The text form (`array_out`).
    pub fn to_pg_text(&self) -> String {
        let mut out = String::new();
        if self.dims.is_empty() {
            return "{}".into();
        }
        if self.dims.iter().any(|d| d.lower != 1) {
            for d in &self.dims {
                out.push_str(&format!(
                    "[{}:{}]",
                    d.lower,
                    d.lower as i64 + d.len as i64 - 1
                ));
            }
            out.push('=');
        }
        let mut next = 0;
        self.write_level(0, &mut next, &mut out);
        out
    }

    fn write_level(&self, level: usize, next: &mut usize, out: &mut String) {
        out.push('{');
        for k in 0..self.dims[level].len {
            if k > 0 {
                out.push(',');
            }
            if level + 1 < self.dims.len() {
                self.write_level(level + 1, next, out);
            } else {
                let item = self.items.get(*next).unwrap_or(&Value::Null);
                *next += 1;
                match item.to_pg_text() {
                    None => out.push_str("NULL"),
                    Some(s) => write_element(&s, out),
                }
            }
        }
        out.push('}');
    }

    /// Parses the text form (`array_in`) into an array of `elem`.
    pub fn parse(text: &str, elem: ElemType) -> Result<ArrayValue> {
        let mut p = Parser {
            text,
            chars: text.char_indices().peekable(),
        };
        p.skip_space();
        let declared = if p.peek() == Some('[') {
            Some(p.dimension_prefix()?)
        } else {
            None
        };
        p.skip_space();
        if p.peek() != Some('{') {
            return Err(malformed(
                text,
                "Array value must start with \"{\" or dimension information.",
            ));
        }
        let tree = p.level(1)?;
        p.skip_space();
        if p.peek().is_some() {
            return Err(malformed(text, "Junk after closing right brace."));
        }
        let lens = shape(&tree, text)?;
        let mut raw = Vec::new();
        flatten(tree, &mut raw);
        let mut dims: Vec<Dim> = lens.iter().map(|&len| Dim { len, lower: 1 }).collect();
        if raw.is_empty() {
            dims.clear();
        }
        if let Some(declared) = declared {
            if raw.is_empty() && declared.is_empty() {
            } else if declared.len() != dims.len()
                || declared.iter().zip(&dims).any(|(d, s)| d.len != s.len)
            {
                return Err(malformed(
                    text,
                    "Specified array dimensions do not match array contents.",
                ));
            }
            if !raw.is_empty() {
                dims = declared;
            }
        }
        let scalar = elem.scalar();
        let items = raw
            .into_iter()
            .map(|r| match r {
                None => Ok(Value::Null),
                Some(s) => Value::Text(s).cast(&scalar),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ArrayValue { elem, dims, items })
    }

    /// Each element cast to `elem` (`'{1,2}'::int[]::text[]`).
    pub fn cast(&self, elem: ElemType) -> Result<ArrayValue> {
        let scalar = elem.scalar();
        Ok(ArrayValue {
            elem,
            dims: self.dims.clone(),
            items: self
                .items
                .iter()
                .map(|v| v.cast(&scalar))
                .collect::<Result<Vec<_>>>()?,
        })
    }

    /// PostgreSQL's `array_cmp`; `None` if two elements do not compare.
    pub fn sql_cmp(&self, other: &ArrayValue) -> Option<Ordering> {
        for (a, b) in self.items.iter().zip(&other.items) {
            let o = match (a.is_null(), b.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => a.sql_cmp(b)?,
            };
            if o != Ordering::Equal {
                return Some(o);
            }
        }
        Some(
            self.items
                .len()
                .cmp(&other.items.len())
                .then(self.dims.len().cmp(&other.dims.len()))
                .then_with(|| {
                    self.dims
                        .iter()
                        .zip(&other.dims)
                        .map(|(a, b)| a.len.cmp(&b.len).then(a.lower.cmp(&b.lower)))
                        .find(|o| *o != Ordering::Equal)
                        .unwrap_or(Ordering::Equal)
                }),
        )
    }

    /// A byte key equal for arrays that compare equal.
    pub fn key_bytes(&self, w: &mut Writer) {
        w.u8(self.dims.len() as u8);
        for d in &self.dims {
            w.i32(d.len).i32(d.lower);
        }
        for v in &self.items {
            v.key_bytes(w);
        }
    }

    /// The byte form rows store.
    pub fn encode(&self, w: &mut Writer) {
        self.elem.scalar().encode(w);
        w.u8(self.dims.len() as u8);
        for d in &self.dims {
            w.i32(d.len).i32(d.lower);
        }
        for v in &self.items {
            encode_item(v, w);
        }
    }

    /// Reads a field that holds exactly one array's byte form.
    pub fn decode_all(bytes: &[u8]) -> Result<ArrayValue> {
        let mut r = Reader::new(bytes);
        let a = ArrayValue::decode(&mut r)?;
        r.finish("array")?;
        Ok(a)
    }

    /// Reads the byte form; malformed bytes are `Corrupted`.
    pub fn decode(r: &mut Reader<'_>) -> Result<ArrayValue> {
        let elem = ElemType::of(DataType::decode(r)?)
            .ok_or_else(|| Error::corrupted("array of arrays"))?;
        let ndim = r.u8()? as usize;
        if ndim > MAX_DIMS {
            return Err(Error::corrupted("too many array dimensions"));
        }
        let mut dims = Vec::with_capacity(ndim);
        let mut n: usize = if ndim == 0 { 0 } else { 1 };
        for _ in 0..ndim {
            let len = r.i32()?;
            let lower = r.i32()?;
            if len <= 0 {
                return Err(Error::corrupted("bad array dimension"));
            }
            n = n
                .checked_mul(len as usize)
                .filter(|&n| n <= MAX_ITEMS)
                .ok_or_else(|| Error::corrupted("array too large"))?;
            dims.push(Dim { len, lower });
        }
        if n > r.remaining() {
            return Err(Error::corrupted("array shorter than its dimensions"));
        }
        let items = (0..n)
            .map(|_| decode_item(elem, r))
            .collect::<Result<Vec<_>>>()?;
        Ok(ArrayValue { elem, dims, items })
    }
}

fn encode_item(v: &Value, w: &mut Writer) {
    match v {
        Value::Null => {
            w.u8(0);
        }
        Value::Bool(b) => {
            w.u8(1).bool(*b);
        }
        Value::Int(x) | Value::Date(x) => {
            w.u8(1).i32(*x);
        }
        Value::BigInt(x) | Value::Timestamp(x) => {
            w.u8(1).i64(*x);
        }
        Value::Double(f) => {
            w.u8(1).f64(*f);
        }
        Value::Numeric(d) => {
            w.u8(1).i128(d.mantissa).u8(d.scale);
        }
        Value::Text(s) => {
            w.u8(1).str(s);
        }
        Value::Bytea(b) => {
            w.u8(1).bytes(b);
        }
        // Elements are scalars; a nested array is stored as its text.
        Value::Array(a) => {
            w.u8(1).str(&a.to_pg_text());
        }
        Value::Json(s) => {
            w.u8(1).str(s);
        }
        Value::Jsonb(j) => {
            w.u8(1).str(&j.to_string());
        }
    }
}

fn decode_item(elem: ElemType, r: &mut Reader<'_>) -> Result<Value> {
    if r.u8()? == 0 {
        return Ok(Value::Null);
    }
    Ok(match elem {
        ElemType::Bool => Value::Bool(r.bool()?),
        ElemType::Int => Value::Int(r.i32()?),
        ElemType::Date => Value::Date(r.i32()?),
        ElemType::BigInt => Value::BigInt(r.i64()?),
        ElemType::Timestamp => Value::Timestamp(r.i64()?),
        ElemType::Double => Value::Double(r.f64()?),
        ElemType::Numeric { .. } => {
            let mantissa = r.i128()?;
            let scale = r.u8()?;
            if scale > crate::value::MAX_SCALE {
                return Err(Error::corrupted("bad numeric scale in array"));
            }
            Value::Numeric(Decimal::new(mantissa, scale))
        }
        ElemType::Text | ElemType::Varchar(_) | ElemType::Char(_) => {
            Value::Text(r.str()?.to_string())
        }
        ElemType::Bytea => Value::Bytea(r.bytes()?.to_vec()),
        ElemType::Json | ElemType::Jsonb => {
            crate::json_convert::decode_stored(elem.scalar(), r.str()?.as_bytes())?
        }
    })
}

/// Writes one element's text, quoted where `array_in` would misread it.
fn write_element(s: &str, out: &mut String) {
    let quote = s.is_empty()
        || s.eq_ignore_ascii_case("NULL")
        || s.chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || is_space(c));
    if !quote {
        out.push_str(s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// A parsed level of braces: sub-levels or elements (`None` = NULL).
enum Node {
    List(Vec<Node>),
    Item(Option<String>),
}

struct Parser<'a> {
    text: &'a str,
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
}

impl Parser<'_> {
    fn peek(&mut self) -> Option<char> {
        self.chars.peek().map(|&(_, c)| c)
    }

    fn bump(&mut self) -> Option<char> {
        self.chars.next().map(|(_, c)| c)
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(is_space) {
            self.bump();
        }
    }

    fn number(&mut self) -> Result<i32> {
        let mut s = String::new();
        if self.peek() == Some('-') || self.peek() == Some('+') {
            s.push(self.bump().unwrap_or('+'));
        }
        while let Some(c) = self.peek().filter(char::is_ascii_digit) {
            s.push(c);
            self.bump();
        }
        s.parse::<i32>()
            .map_err(|_| malformed(self.text, "Missing array dimension value."))
    }

    /// `[lo:hi][lo:hi]=` (or `[hi]`, lower bound 1).
    fn dimension_prefix(&mut self) -> Result<Vec<Dim>> {
        let mut dims = Vec::new();
        while self.peek() == Some('[') {
            self.bump();
            self.skip_space();
            let first = self.number()?;
            self.skip_space();
            let (lower, upper) = if self.peek() == Some(':') {
                self.bump();
                self.skip_space();
                let upper = self.number()?;
                self.skip_space();
                (first, upper)
            } else {
                (1, first)
            };
            if self.bump() != Some(']') {
                return Err(malformed(
                    self.text,
                    "Missing \"]\" after array dimensions.",
                ));
            }
            if (upper as i64) < lower as i64 - 1 {
                return Err(Error::sql(
                    SqlState::ARRAY_SUBSCRIPT_ERROR,
                    "upper bound cannot be less than lower bound",
                ));
            }
            let len = upper as i64 - lower as i64 + 1;
            if len > MAX_ITEMS as i64 {
                return Err(Error::sql(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    "array size exceeds the maximum allowed",
                ));
            }
            dims.push(Dim {
                len: len as i32,
                lower,
            });
            if dims.len() > MAX_DIMS {
                return Err(too_many_dims(dims.len()));
            }
            self.skip_space();
        }
        if self.bump() != Some('=') {
            return Err(malformed(
                self.text,
                "Missing \"=\" after array dimensions.",
            ));
        }
        Ok(dims)
    }

    /// One `{…}` level; the `{` is next.
    fn level(&mut self, depth: usize) -> Result<Node> {
        if depth > MAX_DIMS {
            return Err(too_many_dims(depth));
        }
        self.bump();
        let mut children = Vec::new();
        self.skip_space();
        if self.peek() == Some('}') {
            // Only the whole literal may be empty: `{{},{}}` is malformed.
            if depth > 1 {
                return Err(malformed(self.text, "Unexpected \"}\" character."));
            }
            self.bump();
            return Ok(Node::List(children));
        }
        loop {
            self.skip_space();
            match self.peek() {
                Some('{') => children.push(self.level(depth + 1)?),
                None => return Err(malformed(self.text, "Unexpected end of input.")),
                Some('}') | Some(',') => {
                    return Err(malformed(
                        self.text,
                        &format!("Unexpected \"{}\" character.", self.peek().unwrap_or(',')),
                    ))
                }
                Some(_) => children.push(Node::Item(self.element()?)),
            }
            self.skip_space();
            match self.bump() {
                Some(',') => continue,
                Some('}') => return Ok(Node::List(children)),
                None => return Err(malformed(self.text, "Unexpected end of input.")),
                Some(_) => return Err(malformed(self.text, "Unexpected array element.")),
            }
        }
    }

    /// One element: quoted, or unquoted up to `,`/`}` with its trailing
    /// blanks dropped; an unquoted `NULL` is a null.
    fn element(&mut self) -> Result<Option<String>> {
        let mut s = String::new();
        if self.peek() == Some('"') {
            self.bump();
            loop {
                match self.bump() {
                    None => return Err(malformed(self.text, "Unexpected end of input.")),
                    Some('\\') => match self.bump() {
                        Some(c) => s.push(c),
                        None => return Err(malformed(self.text, "Unexpected end of input.")),
                    },
                    Some('"') => return Ok(Some(s)),
                    Some(c) => s.push(c),
                }
            }
        }
        // Unquoted: blanks that an escape made part of the value stay.
        let mut kept = 0;
        let mut escaped = false;
        loop {
            match self.peek() {
                None => return Err(malformed(self.text, "Unexpected end of input.")),
                Some(',') | Some('}') => break,
                Some('{') | Some('"') => {
                    return Err(malformed(
                        self.text,
                        &format!("Unexpected \"{}\" character.", self.peek().unwrap_or('"')),
                    ))
                }
                Some('\\') => {
                    self.bump();
                    match self.bump() {
                        Some(c) => s.push(c),
                        None => return Err(malformed(self.text, "Unexpected end of input.")),
                    }
                    escaped = true;
                    kept = s.len();
                }
                Some(c) => {
                    self.bump();
                    s.push(c);
                    if !is_space(c) {
                        kept = s.len();
                    }
                }
            }
        }
        s.truncate(kept);
        if !escaped && s.eq_ignore_ascii_case("NULL") {
            return Ok(None);
        }
        Ok(Some(s))
    }
}

/// Checks that `node` is rectangular, giving each level's length: the
/// lists of one depth have one length, no list mixes elements and
/// lists, and every element sits at the deepest level.
fn shape(node: &Node, text: &str) -> Result<Vec<i32>> {
    fn lengths(node: &Node, depth: usize, lens: &mut Vec<i32>, text: &str) -> Result<()> {
        let Node::List(children) = node else {
            return Ok(());
        };
        let len = children.len() as i32;
        match lens.get(depth) {
            None => lens.push(len),
            Some(&l) if l != len => return Err(mismatch(text)),
            Some(_) => {}
        }
        for c in children {
            lengths(c, depth + 1, lens, text)?;
        }
        Ok(())
    }
    fn leaves(node: &Node, depth: usize, last: usize, text: &str) -> Result<()> {
        let Node::List(children) = node else {
            return Ok(());
        };
        let nested = children.iter().any(|c| matches!(c, Node::List(_)));
        let mixed = nested && children.iter().any(|c| matches!(c, Node::Item(_)));
        if mixed || nested != (depth < last) {
            return Err(mismatch(text));
        }
        children
            .iter()
            .try_for_each(|c| leaves(c, depth + 1, last, text))
    }
    let mut lens = Vec::new();
    lengths(node, 0, &mut lens, text)?;
    leaves(node, 0, lens.len() - 1, text)?;
    Ok(lens)
}

fn mismatch(text: &str) -> Error {
    malformed(
        text,
        "Multidimensional arrays must have sub-arrays with matching dimensions.",
    )
}

fn flatten(node: Node, out: &mut Vec<Option<String>>) {
    match node {
        Node::Item(s) => out.push(s),
        Node::List(children) => {
            for c in children {
                flatten(c, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(text: &str) -> Result<ArrayValue> {
        ArrayValue::parse(text, ElemType::Int)
    }

    #[test]
    fn text_form_round_trips_as_postgresql_writes_it() {
        for (input, output) in [
            ("{1,2,3}", "{1,2,3}"),
            (" { 1 , NULL ,3 } ", "{1,NULL,3}"),
            ("{{1,2},{3,4}}", "{{1,2},{3,4}}"),
            ("{}", "{}"),
            ("[0:1]={7,8}", "[0:1]={7,8}"),
            ("[1:2]={7,8}", "{7,8}"),
        ] {
            assert_eq!(ints(input).unwrap().to_pg_text(), output, "{input}");
        }
        let t =
            ArrayValue::parse(r#"{a,"b c","",null,"NULL","x\"y",\{z}"#, ElemType::Text).unwrap();
        assert_eq!(t.items[3], Value::Null);
        assert_eq!(t.items[4], Value::Text("NULL".into()));
        assert_eq!(t.to_pg_text(), r#"{a,"b c","",NULL,"NULL","x\"y","{z"}"#);
    }

    #[test]
    fn malformed_literals_are_errors_not_panics() {
        for bad in [
            "1,2",
            "{1,2",
            "{1,{2}}",
            "{{1},{2,3}}",
            "{1}x",
            "{,}",
            "[1:3]={1,2}",
            "{{{{{{{1}}}}}}}",
            "{\"a",
            "{a\\",
            "[",
            "[1:",
            "[x]={1}",
        ] {
            let e = ints(bad).unwrap_err();
            assert!(e.to_string().contains("array"), "{bad}: {e}");
        }
        assert_eq!(
            ints("{a}").unwrap_err().to_string(),
            "invalid input syntax for type integer: \"a\""
        );
    }

    #[test]
    fn comparison_and_bytes() {
        let a = ints("{1,2}").unwrap();
        let b = ints("{1,2,0}").unwrap();
        let c = ints("{1,NULL}").unwrap();
        assert_eq!(a.sql_cmp(&b), Some(Ordering::Less));
        assert_eq!(c.sql_cmp(&a), Some(Ordering::Greater));
        assert_eq!(c.sql_cmp(&c.clone()), Some(Ordering::Equal));
        assert_eq!(
            ints("{{1,2}}").unwrap().sql_cmp(&a),
            Some(Ordering::Greater)
        );
        let mut w = Writer::new();
        let m = ints("[2:3]={{5,NULL}}").map(|_| ()).unwrap_err();
        assert!(m.to_string().contains("malformed"));
        let m = ints("[2:3][0:0]={{5},{6}}").unwrap();
        m.encode(&mut w);
        let back = ArrayValue::decode(&mut Reader::new(w.as_slice())).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.to_pg_text(), "[2:3][0:0]={{5},{6}}");
        // Truncated bytes are corrupt, never a panic.
        for n in 0..w.len() {
            assert!(ArrayValue::decode(&mut Reader::new(&w.as_slice()[..n])).is_err());
        }
    }
}
