//! A coarse lexer over SQL bytes: words, numbers, quoted text, operator
//! runs, single punctuation and blanks — enough to find where a piece of
//! text may be cut (lex.rs) and to measure nesting before tokenizing
//! (prescan.rs), at memory speed.
//!
//! ```text
//!  'it''s'  E'a\'b'  "x ""y"""  $t$ … $t$   ─► Quoted
//!  -- …\n   /* … /* … */ … */   blanks      ─► Blank
//!  1.5e+10  .5                               ─► Number
//!  abc  a.b  a$1  é                          ─► Word
//!  + - * / < > = ~ ! @ # % ^ & | ` ?  runs   ─► Operator
//!  anything else, one byte                   ─► Punct
//! ```
//!
//! It errs only toward seeing quoted text or comment where the tokenizer
//! sees plain text, never the other way: a cut it allows lands where no
//! token spans, and an operator it counts is one.

/// What a run of bytes is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Blank,
    Word,
    Number,
    Quoted,
    Operator,
    Punct,
}

/// One run: its kind and byte range.
#[derive(Clone, Copy, Debug)]
pub struct Item {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// The runs of `bytes` from `at`.
#[derive(Clone)]
pub struct Coarse<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Coarse<'a> {
    pub fn new(bytes: &'a [u8], at: usize) -> Coarse<'a> {
        Coarse { bytes, at }
    }
}

pub fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

fn is_operator_byte(b: u8) -> bool {
    matches!(
        b,
        b'+' | b'-'
            | b'*'
            | b'/'
            | b'<'
            | b'>'
            | b'='
            | b'~'
            | b'!'
            | b'@'
            | b'#'
            | b'%'
            | b'^'
            | b'&'
            | b'|'
            | b'`'
            | b'?'
    )
}

impl Iterator for Coarse<'_> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        let b = self.bytes;
        let start = self.at;
        let first = *b.get(start)?;
        let next = b.get(start + 1).copied();
        let (kind, end) = match first {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => (Kind::Blank, start + 1),
            b'-' if next == Some(b'-') => {
                let end = b[start..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| start + p + 1);
                (Kind::Blank, end)
            }
            b'/' if next == Some(b'*') => (Kind::Blank, block_comment_end(b, start)),
            b'\'' => {
                let escapes = start > 0
                    && matches!(b[start - 1], b'E' | b'e')
                    && (start < 2 || !is_word_byte(b[start - 2]));
                (Kind::Quoted, quote_end(b, start, b'\'', escapes))
            }
            b'"' => (Kind::Quoted, quote_end(b, start, b'"', false)),
            b'$' if dollar_tag(b, start).is_some() => {
                let tag_end = dollar_tag(b, start).unwrap_or(start);
                let close = &b[start..=tag_end];
                let end = find(b, tag_end + 1, close).map_or(b.len(), |p| p + close.len());
                (Kind::Quoted, end)
            }
            c if c.is_ascii_digit() || (c == b'.' && next.is_some_and(|n| n.is_ascii_digit())) => {
                (Kind::Number, number_end(b, start))
            }
            c if is_word_byte(c) => {
                let end = b[start..]
                    .iter()
                    .position(|&c| !is_word_byte(c))
                    .map_or(b.len(), |p| start + p);
                // A quote right after a word (E'…', B'…', U&'…') is the
                // next item, which looks back at the prefix.
                (Kind::Word, end)
            }
            c if is_operator_byte(c) => {
                let mut end = start + 1;
                while end < b.len()
                    && is_operator_byte(b[end])
                    && !(b[end] == b'-' && b.get(end + 1) == Some(&b'-'))
                    && !(b[end] == b'/' && b.get(end + 1) == Some(&b'*'))
                {
                    end += 1;
                }
                (Kind::Operator, end)
            }
            _ => (Kind::Punct, start + 1),
        };
        self.at = end.max(start + 1);
        Some(Item {
            kind,
            start,
            end: self.at,
        })
    }
}

fn block_comment_end(b: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

fn quote_end(b: &[u8], start: usize, quote: u8, escapes: bool) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        let c = b[i];
        if escapes && c == b'\\' {
            i += 2;
            continue;
        }
        if c == quote {
            if b.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

/// `1`, `1.5`, `.5`, `1e10`, `1.5E-3`, `0x1F`, `1_000`.
fn number_end(b: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
            i += 1;
        } else if matches!(c, b'+' | b'-')
            && matches!(b[i - 1], b'e' | b'E')
            && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())
        {
            i += 2;
        } else {
            break;
        }
    }
    i
}

/// The index of the closing `$` of a dollar-quote tag opening at `at`
/// (`$$` or `$tag$`, the tag not starting with a digit, the `$` not
/// inside a word).
fn dollar_tag(b: &[u8], at: usize) -> Option<usize> {
    if at > 0 && is_word_byte(b[at - 1]) {
        return None;
    }
    let mut j = at + 1;
    if b.get(j).is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    while let Some(&c) = b.get(j) {
        if c == b'$' {
            return Some(j);
        }
        if !(c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80) {
            return None;
        }
        j += 1;
    }
    None
}

fn find(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}
