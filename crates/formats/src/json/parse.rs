//! PostgreSQL's JSON grammar (`json_in`): a recursive-descent parser
//! that keeps every value's span of the input, so a `json` value's
//! functions answer with the text as written, and reports errors with
//! PostgreSQL's messages (22P02 with the offending token in DETAIL).
//!
//! ```text
//!  '{"a" : [1,2]}'   Node { 0..14, Object [("a", Node { 7..12, Array … })] }
//!  '{"a" 1}'         22P02  Expected ":", but found "1".
//! ```
//!
//! Nesting is bounded by [`MAX_DEPTH`]; the input is never trusted.

use crate::error::{Error, Result, SqlState};

use super::{resolve_index, MAX_DEPTH};

/// One parsed JSON value and where it lies in its text.
#[derive(Clone, Debug)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Null,
    Bool(bool),
    /// The span is the number's text.
    Number,
    String(String),
    Array(Vec<Node>),
    /// Keys in the order written, duplicates kept.
    Object(Vec<(String, Node)>),
}

fn syntax(detail: impl Into<String>) -> Error {
    Error::sql(
        SqlState::INVALID_TEXT_REPRESENTATION,
        "invalid input syntax for type json",
    )
    .with_detail(detail.into())
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The token starting here, as PostgreSQL's error messages quote it.
    fn token_error(&self) -> Error {
        let rest = &self.text[self.at..];
        let end = rest
            .char_indices()
            .find(|(k, c)| {
                *k > 0
                    && (c.is_ascii_whitespace()
                        || matches!(c, ',' | ':' | '[' | ']' | '{' | '}' | '"'))
            })
            .map_or(rest.len(), |(k, _)| k);
        let end = if end == 0 {
            rest.chars().next().map_or(0, char::len_utf8)
        } else {
            end
        };
        syntax(format!("Token \"{}\" is invalid.", &rest[..end]))
    }

    fn ended(&self) -> Error {
        syntax("The input string ended unexpectedly.")
    }

    fn expected(&self, what: &str) -> Error {
        if self.at >= self.bytes.len() {
            return self.ended();
        }
        let rest = &self.text[self.at..];
        let c = rest.chars().next().unwrap_or(' ');
        let tok = if matches!(c, ',' | ':' | '[' | ']' | '{' | '}') {
            c.to_string()
        } else if c == '"' {
            let end = rest[1..].find('"').map_or(rest.len(), |k| k + 2);
            rest[..end].to_string()
        } else {
            // A well-formed number or literal is a token in the wrong
            // place; anything else is an invalid token.
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-')))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            let mut probe = Parser {
                text: word,
                bytes: word.as_bytes(),
                at: 0,
            };
            if word.is_empty() || probe.value(MAX_DEPTH).is_err() || probe.at != word.len() {
                return self.token_error();
            }
            word.to_string()
        };
        syntax(format!("Expected {what}, but found \"{tok}\"."))
    }

    fn value(&mut self, depth: usize) -> Result<Node> {
        if depth > MAX_DEPTH {
            return Err(Error::sql(
                SqlState::STATEMENT_TOO_COMPLEX,
                "stack depth limit exceeded",
            ));
        }
        self.skip_ws();
        let start = self.at;
        let Some(&b) = self.bytes.get(self.at) else {
            return Err(self.ended());
        };
        let kind = match b {
            b'{' => {
                self.at += 1;
                let mut fields = Vec::new();
                self.skip_ws();
                if self.bytes.get(self.at) == Some(&b'}') {
                    self.at += 1;
                } else {
                    loop {
                        self.skip_ws();
                        if self.bytes.get(self.at) != Some(&b'"') {
                            return Err(self.expected("string or \"}\""));
                        }
                        let key = self.string()?;
                        self.skip_ws();
                        if self.bytes.get(self.at) != Some(&b':') {
                            return Err(self.expected("\":\""));
                        }
                        self.at += 1;
                        let v = self.value(depth + 1)?;
                        fields.push((key, v));
                        self.skip_ws();
                        match self.bytes.get(self.at) {
                            Some(b',') => self.at += 1,
                            Some(b'}') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.expected("\",\" or \"}\"")),
                        }
                    }
                }
                Kind::Object(fields)
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_ws();
                if self.bytes.get(self.at) == Some(&b']') {
                    self.at += 1;
                } else {
                    loop {
                        items.push(self.value(depth + 1)?);
                        self.skip_ws();
                        match self.bytes.get(self.at) {
                            Some(b',') => self.at += 1,
                            Some(b']') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.expected("\",\" or \"]\"")),
                        }
                    }
                }
                Kind::Array(items)
            }
            b'"' => Kind::String(self.string()?),
            b'-' | b'0'..=b'9' => {
                self.number()?;
                Kind::Number
            }
            b']' | b'}' | b',' | b':' => return Err(self.expected("JSON value")),
            _ => {
                let rest = &self.bytes[self.at..];
                let word = rest
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                    .count();
                let kind = match &rest[..word] {
                    b"true" => Kind::Bool(true),
                    b"false" => Kind::Bool(false),
                    b"null" => Kind::Null,
                    _ => return Err(self.token_error()),
                };
                self.at += word;
                kind
            }
        };
        Ok(Node {
            start,
            end: self.at,
            kind,
        })
    }

    fn number(&mut self) -> Result<()> {
        let start = self.at;
        let digits = |p: &mut Self| {
            let from = p.at;
            while p.bytes.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at - from
        };
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let int_at = self.at;
        let n = digits(self);
        let mut ok = n > 0 && !(n > 1 && self.bytes[int_at] == b'0');
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            ok &= digits(self) > 0;
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            ok &= digits(self) > 0;
        }
        // A number runs into following letters or digits: one bad token.
        if !ok
            || self
                .bytes
                .get(self.at)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.')
        {
            self.at = start;
            return Err(self.token_error());
        }
        Ok(())
    }

    /// A string at `"`, unescaped.
    fn string(&mut self) -> Result<String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.at..];
            let Some(k) = rest.find(|c: char| c == '"' || c == '\\' || (c as u32) < 0x20) else {
                self.at = self.text.len();
                return Err(self.ended());
            };
            out.push_str(&rest[..k]);
            self.at += k;
            match self.bytes[self.at] {
                b'"' => {
                    self.at += 1;
                    return Ok(out);
                }
                b'\\' => {
                    let Some(&e) = self.bytes.get(self.at + 1) else {
                        self.at = self.text.len();
                        return Err(self.ended());
                    };
                    self.at += 2;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape()?),
                        _ => {
                            let c = self.text[self.at - 1..].chars().next().unwrap_or(' ');
                            return Err(syntax(format!("Escape sequence \"\\{c}\" is invalid.")));
                        }
                    }
                }
                c => {
                    return Err(syntax(format!(
                        "Character with value 0x{c:02x} must be escaped."
                    )))
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let h = self.text.get(self.at..self.at + 4).unwrap_or("");
        match (h.len() == 4 && h.bytes().all(|c| c.is_ascii_hexdigit()))
            .then(|| u32::from_str_radix(h, 16).ok())
            .flatten()
        {
            Some(v) => {
                self.at += 4;
                Ok(v)
            }
            None => Err(syntax(
                "\"\\u\" must be followed by four hexadecimal digits.",
            )),
        }
    }

    fn unicode_escape(&mut self) -> Result<char> {
        let hi = self.hex4()?;
        if hi == 0 {
            return Err(Error::sql(
                SqlState::UNTRANSLATABLE_CHARACTER,
                "unsupported Unicode escape sequence",
            )
            .with_detail("\\u0000 cannot be converted to text."));
        }
        if (0xD800..0xDC00).contains(&hi) {
            if self.text[self.at..].starts_with("\\u") {
                self.at += 2;
                let lo = self.hex4()?;
                if (0xDC00..0xE000).contains(&lo) {
                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return char::from_u32(c).ok_or_else(|| self.surrogate());
                }
            }
            return Err(self.surrogate());
        }
        char::from_u32(hi).ok_or_else(|| self.surrogate())
    }

    fn surrogate(&self) -> Error {
        syntax("Unicode low surrogate must follow a high surrogate.")
    }
}

/// Parses JSON text (PostgreSQL's grammar; errors as its `json_in`).
pub fn parse(text: &str) -> Result<Node> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    let node = p.value(0)?;
    p.skip_ws();
    if p.at < text.len() {
        return Err(p.expected("end of input"));
    }
    Ok(node)
}

impl Node {
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Null => "null",
            Kind::Bool(_) => "boolean",
            Kind::Number => "number",
            Kind::String(_) => "string",
            Kind::Array(_) => "array",
            Kind::Object(_) => "object",
        }
    }

    /// `->` with a key on `json`: the last field of that name, as
    /// PostgreSQL's `json_object_field`.
    pub fn field(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(f) => f.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn element(&self, i: i64) -> Option<&Node> {
        match &self.kind {
            Kind::Array(items) => items.get(resolve_index(i, items.len())?),
            _ => None,
        }
    }

    /// The node's text.
    pub fn text<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.end]
    }

    /// What `->>` answers on `json`.
    pub fn as_text(&self, text: &str) -> Option<String> {
        match &self.kind {
            Kind::Null => None,
            Kind::String(s) => Some(s.clone()),
            _ => Some(self.text(text).to_string()),
        }
    }
}
