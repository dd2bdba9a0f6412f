//! Parsing: SQL text to sqlparser's statements, in time linear in the
//! text and stoppable at any point.
//!
//! ```text
//!  text ─ > 32 MiB? ─► 54000
//!    ▼
//!  prescan.rs (over coarse.rs's runs of bytes): brackets and CASEs
//!    deeper than bison's stack ─► 42601; an operator chain deeper than
//!    4,092 ─► 54001; a SELECT list of more than 1,664 entries ─► 54011
//!    ▼
//!  lex.rs: tokens, a piece of 64 KiB at a time ─ interrupt? ─► 57014 / 08006
//!    ▼
//!  sqlparser with dialect.rs's meter: every 256 expressions the interrupt,
//!    more than 16 steps per token ─► 54001; recursion > 10,000 ─► 54001
//!    ▼
//!  limits.rs: AND / OR chains rebalanced, expression depth > 4,092 ─► 54001
//! ```
//!
//! PostgreSQL's parser is a bison automaton: its work is linear in the
//! tokens and its stack bounded, so the deepest statement it refuses takes
//! it milliseconds. sqlparser descends recursively and backtracks; the
//! nesting bound and the meter keep it within the same order of work, and
//! the interrupt — `statement_timeout`, a CancelRequest, the client's
//! socket closing — reaches every phase, the tokenizer included.

pub mod coarse;
pub mod dialect;
pub mod lex;
pub mod prescan;

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use ndpdb_formats::SqlState;
use ndpdb_host::Interrupt;

use crate::limits::{self, MAX_PARSER_DEPTH, MAX_STATEMENT_BYTES};
use crate::{Error, Result};

/// Parses SQL text into statements (PostgreSQL dialect) within the
/// statement limits.
pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    parse_with(sql, None)
}

/// [`parse`], stopped by `interrupt` (57014, 08006) in any phase.
pub fn parse_with(sql: &str, interrupt: Option<&Interrupt>) -> Result<Vec<Statement>> {
    if sql.len() > MAX_STATEMENT_BYTES {
        return Err(Error::new(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            format!(
                "statement is too long ({} bytes; ndpdb parses at most {MAX_STATEMENT_BYTES})",
                sql.len()
            ),
        ));
    }
    prescan::check(sql)?;
    let stack = limits::parse_stack(sql);
    stacker::maybe_grow(stack, stack, || {
        let tokens = match lex::tokenize(&PostgreSqlDialect {}, sql, lex::PIECE, interrupt) {
            Ok(t) => t,
            Err(lex::LexError::Parser(e)) => return Err(limits::parse_error(e)),
            Err(lex::LexError::Interrupted(e)) => return Err(e),
        };
        let words = tokens
            .iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .count();
        let dialect = dialect::Metered::new(words, interrupt);
        let parsed = Parser::new(&dialect)
            .with_recursion_limit(MAX_PARSER_DEPTH)
            .with_tokens_with_locations(tokens)
            .parse_statements();
        if let Some(e) = dialect.stopped() {
            if let Ok(stmts) = parsed {
                limits::dismantle(stmts);
            }
            return Err(e);
        }
        limits::bound(parsed.map_err(limits::parse_error)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// The metered dialect parses as PostgreSqlDialect does.
    #[test]
    fn the_meter_changes_no_tree() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
        let mut compared = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension() != Some(std::ffi::OsStr::new("slt")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for block in text.split("\n\n") {
                // The statement of a record: its lines after the header,
                // up to the results.
                let sql: String = block
                    .lines()
                    .skip(1)
                    .take_while(|l| *l != "----")
                    .collect::<Vec<_>>()
                    .join("\n");
                let plain = Parser::parse_sql(&PostgreSqlDialect {}, &sql);
                let Ok(plain) = plain else { continue };
                let words = sql.split_whitespace().count() * 4 + 16;
                let metered = Parser::new(&dialect::Metered::new(words, None))
                    .try_with_sql(&sql)
                    .and_then(|mut p| p.parse_statements())
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                assert_eq!(plain, metered, "{sql}");
                compared += 1;
            }
        }
        assert!(compared > 1_000, "{compared} statements");
    }

    fn timed(sql: &str) -> (Duration, Error) {
        let started = Instant::now();
        let e = parse(sql).unwrap_err();
        (started.elapsed(), e)
    }

    /// Statements that took sqlparser minutes answer as PostgreSQL's
    /// parser does, without the work.
    #[test]
    fn deep_cases_fail_at_once() {
        let sql = format!(
            "SELECT {}1{}",
            "CASE WHEN TRUE THEN ".repeat(10_000),
            " END".repeat(10_000)
        );
        let (_, e) = timed(&sql);
        assert_eq!(e.code, SqlState::SYNTAX_ERROR);
        assert_eq!(e.message, "memory exhausted at or near \"WHEN\"");
        // Below the bound, deep CASEs and arrays parse or fail within the
        // meter's budget.
        for n in [500, 1_000, 1_999] {
            let sql = format!(
                "SELECT {}1{}",
                "CASE WHEN TRUE THEN ".repeat(n),
                " END".repeat(n)
            );
            let r = parse(&sql);
            assert!(
                r.is_ok()
                    || r.as_ref()
                        .is_err_and(|e| e.code == SqlState::STATEMENT_TOO_COMPLEX),
                "{n}: {:?}",
                r.err()
            );
        }
    }

    #[test]
    fn a_cancel_stops_the_tokenizer_and_the_parser() {
        let interrupt = Interrupt::new();
        interrupt.start_statement(None);
        interrupt.cancel();
        // Two pieces: the cancel is seen between them.
        let long = format!("VALUES (1){}", ", (1)".repeat(lex::PIECE / 4));
        let e = parse_with(&long, Some(&interrupt)).unwrap_err();
        assert_eq!(e.code, SqlState::QUERY_CANCELED);
        // One piece: the parser's meter sees it.
        let short = format!("SELECT {}", vec!["abs(1)"; 1_000].join(", "));
        let e = parse_with(&short, Some(&interrupt)).unwrap_err();
        assert_eq!(e.code, SqlState::QUERY_CANCELED);
        interrupt.start_statement(None);
        assert!(parse_with(&short, Some(&interrupt)).is_ok());
    }
}
