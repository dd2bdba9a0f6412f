//! Tokenizing in pieces: a long statement is cut at whitespace outside
//! quotes and comments and tokenized a piece at a time, so that a cancel,
//! a timeout or a client that left stops it between pieces (sqlparser's
//! tokenizer has no hook of its own; it takes about 120 ns a byte, 4 s for
//! the longest statement ndpdb accepts).
//!
//! ```text
//!  text ─ shorter than PIECE? ─► one tokenizer run
//!    │ no
//!    ▼
//!  cut ─► piece₁ ─ tokenize ─► tokens (lines, columns moved to the text's)
//!         check interrupt
//!         piece₂ ─ tokenize ─► appended (the last token of piece₁ is the
//!         …                    tokenizer's "previous token", as in one run)
//!  (one vector with room for a token per byte: it never reallocates)
//!  a tokenizer error ─► the whole text once more, for the error's place
//! ```
//!
//! A cut lands only on a whitespace character in plain text: not inside
//! '…' (E'…' with its backslash escapes), "…", $tag$…$tag$, -- and
//! nested /* */ comments. No token spans whitespace outside those, so the
//! pieces give exactly the tokens of one run; a test compares both on
//! every statement of the sqllogictest suite cut at every few bytes.

use sqlparser::dialect::Dialect;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Location, Span, TokenWithSpan, Tokenizer};

use ndpdb_host::Interrupt;

use super::coarse::{Coarse, Kind};

use crate::Error;

/// Bytes tokenized between two looks at the interrupt: about 8 ms of
/// the tokenizer, and some 6 MB of tokens (a piece of 1 MiB took up to
/// 1.8 s where fresh memory is slow to fault in).
pub const PIECE: usize = 64 << 10;

/// Why tokenizing failed.
pub enum LexError {
    Parser(ParserError),
    Interrupted(Error),
}

/// The tokens of `sql`, `piece` bytes at a time.
pub fn tokenize(
    dialect: &dyn Dialect,
    sql: &str,
    piece: usize,
    interrupt: Option<&Interrupt>,
) -> Result<Vec<TokenWithSpan>, LexError> {
    // Every token holds at least one byte of the text: a vector with room
    // for as many tokens as bytes never grows. (Growing it would copy
    // hundreds of megabytes in one reallocation no interrupt can stop;
    // the room reserved is address space, its pages are touched a piece
    // at a time.)
    let mut tokens = Vec::with_capacity(if sql.len() > piece { sql.len() } else { 0 });
    let mut start = 0;
    // Line and column (in characters) where the next piece begins.
    let (mut line, mut column) = (1u64, 1u64);
    while start < sql.len() {
        let end = cut_after(sql, start, piece);
        let text = &sql[start..end];
        let moved = |loc: Location| -> Location {
            if loc.line == 0 {
                return loc;
            }
            Location {
                line: loc.line + line - 1,
                column: if loc.line == 1 {
                    loc.column + column - 1
                } else {
                    loc.column
                },
            }
        };
        let lexed = Tokenizer::new(dialect, text)
            .with_unescape(true)
            .tokenize_with_location_into_buf_with_mapper(&mut tokens, |t| TokenWithSpan {
                token: t.token,
                span: Span::new(moved(t.span.start), moved(t.span.end)),
            });
        if lexed.is_err() {
            // The error names its line and column: tokenize the whole text
            // for them (an error ends the statement anyway).
            return Tokenizer::new(dialect, sql)
                .with_unescape(true)
                .tokenize_with_location()
                .map_err(|e| LexError::Parser(e.into()));
        }
        for c in text.chars() {
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        start = end;
        if start < sql.len() {
            if let Some(e) = interrupt.and_then(|i| i.check().err()) {
                return Err(LexError::Interrupted(e));
            }
        }
    }
    Ok(tokens)
}

/// Where the piece that begins at `start` ends: the first blank in plain
/// text at least `piece` bytes on, or the end of the text.
fn cut_after(sql: &str, start: usize, piece: usize) -> usize {
    if sql.len() - start <= piece {
        return sql.len();
    }
    Coarse::new(sql.as_bytes(), start)
        .find(|i| {
            i.kind == Kind::Blank
                && i.start - start >= piece
                && matches!(sql.as_bytes()[i.start], b' ' | b'\t' | b'\n' | b'\r')
        })
        .map_or(sql.len(), |i| i.start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;

    fn whole(sql: &str) -> Vec<TokenWithSpan> {
        Tokenizer::new(&PostgreSqlDialect {}, sql)
            .with_unescape(true)
            .tokenize_with_location()
            .unwrap()
    }

    fn pieces(sql: &str, piece: usize) -> Vec<TokenWithSpan> {
        match tokenize(&PostgreSqlDialect {}, sql, piece, None) {
            Ok(t) => t,
            Err(_) => panic!("tokenizing {sql:?} in pieces of {piece} failed"),
        }
    }

    /// Every statement of the sqllogictest suite, cut every few bytes,
    /// gives the tokens (and places) of one run.
    #[test]
    fn pieces_give_the_tokens_of_one_run() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
        let mut texts = vec![
            "SELECT 'a b' || E'c\\' d' || $$ e f $$ || $x$ g $y$ h $x$ /* i /* j */ k */ -- l m\n, \"n o\" FROM \"p \"\" q\"".to_string(),
            "SELECT U&'d\\0061t a', B'10 1', X'1 f', e'x\\\\', 'it''s a', a$b $c".to_string(),
        ];
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "slt") {
                texts.push(std::fs::read_to_string(&path).unwrap());
            }
        }
        let mut compared = 0;
        for text in &texts {
            // Whole files hold statements and results: tokenize only what
            // the tokenizer accepts in one run.
            for block in text.split("\n\n") {
                let Ok(one) = Tokenizer::new(&PostgreSqlDialect {}, block)
                    .with_unescape(true)
                    .tokenize_with_location()
                else {
                    continue;
                };
                for piece in [1, 3, 7, 16] {
                    assert_eq!(pieces(block, piece), one, "{block:?} in pieces of {piece}");
                }
                compared += 1;
            }
        }
        assert!(compared > 1_000, "{compared} blocks");
        assert_eq!(pieces("SELECT 1", 1), whole("SELECT 1"));
    }

    #[test]
    fn errors_name_their_place_in_the_whole_text() {
        let sql = format!("SELECT {}\n 'open", "1 + ".repeat(100));
        let Err(LexError::Parser(e)) = tokenize(&PostgreSqlDialect {}, &sql, 8, None) else {
            panic!("an unterminated string must fail");
        };
        assert!(e.to_string().contains("Line: 2"), "{e}");
    }
}
