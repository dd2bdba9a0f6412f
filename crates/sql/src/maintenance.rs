//! VACUUM and ANALYZE in PostgreSQL's grammar, which the SQL parser does
//! not know (it reads Redshift's VACUUM), turned into its statements:
//!
//! ```text
//!  VACUUM [ ( option [, …] ) ] [FULL] [FREEZE] [VERBOSE] [ANALYZE] [table [, …]]
//!  ANALYZE [ ( option [, …] ) ] [VERBOSE] [table [(column, …)] [, …]]
//!        ─► one VACUUM / ANALYZE statement per table (or one for all)
//! ```
//!
//! A text with such a statement is split at its `;`s; its other
//! statements go to the SQL parser one by one. ndpdb keeps no
//! sampled statistics (the cost model reads exact counts from the maps),
//! so ANALYZE checks its tables and has nothing else to do; `VACUUM
//! ANALYZE` is a VACUUM.

use sqlparser::ast::{Analyze, Ident, ObjectName, Statement, VacuumStatement};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Word};

use crate::{Error, Result};
use ndpdb_formats::SqlState;

/// Longest text looked at (longer ones go to the SQL parser and its limits).
const MAX_TEXT: usize = 64 * 1024;

/// The statements of `sql` if one of them is a PostgreSQL VACUUM or
/// ANALYZE; the others are parsed by `other` from their text.
pub fn parse(
    sql: &str,
    other: impl Fn(&str) -> Result<Vec<Statement>>,
) -> Option<Result<Vec<Statement>>> {
    if sql.len() > MAX_TEXT || !mentions(sql, b"vacuum") && !mentions(sql, b"analy") {
        return None;
    }
    let tokens = crate::token_text::tokens_at(sql)?;
    // The statements' texts: the source between the `;` tokens.
    let mut pieces: Vec<(&str, Vec<Token>)> = Vec::new();
    let mut start = 0;
    let mut current = Vec::new();
    for (t, at) in tokens {
        match t {
            Token::SemiColon => {
                pieces.push((&sql[start..at], std::mem::take(&mut current)));
                start = at + 1;
            }
            Token::Whitespace(_) => {}
            t => current.push(t),
        }
    }
    pieces.push((&sql[start..], current));
    let kind = |significant: &[Token]| {
        let w = significant.first().and_then(word)?;
        if w.quote_style.is_some() {
            return None;
        }
        match w.value.to_ascii_lowercase().as_str() {
            "vacuum" => Some(true),
            "analyze" | "analyse" => Some(false),
            _ => None,
        }
    };
    if !pieces.iter().any(|(_, p)| kind(p).is_some()) {
        return None;
    }
    let mut out = Vec::new();
    for (text, significant) in pieces {
        if significant.is_empty() {
            continue;
        }
        let parsed = match kind(&significant) {
            Some(vacuum) => Parser {
                tokens: &significant[1..],
                at: 0,
                what: if vacuum { "VACUUM" } else { "ANALYZE" },
            }
            .statement(vacuum),
            None => other(text),
        };
        match parsed {
            Ok(stmts) => out.extend(stmts),
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(out))
}

/// Whether `sql` holds `word` in any case (a cheap test before the
/// tokenizer: most statements never mention VACUUM or ANALYZE).
fn mentions(sql: &str, word: &[u8]) -> bool {
    sql.as_bytes()
        .windows(word.len())
        .any(|w| w.eq_ignore_ascii_case(word))
}

fn word(t: &Token) -> Option<&Word> {
    match t {
        Token::Word(w) => Some(w),
        _ => None,
    }
}

struct Parser<'t> {
    tokens: &'t [Token],
    at: usize,
    what: &'static str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn syntax_error(&self) -> Error {
        let near = self
            .peek()
            .map_or_else(|| "end of input".to_string(), |t| format!("\"{t}\""));
        Error::new(
            SqlState::SYNTAX_ERROR,
            format!("syntax error at or near {near}"),
        )
    }

    /// The next token if it is the unquoted keyword `kw`.
    fn keyword(&mut self, kw: &str) -> bool {
        let hit = matches!(self.peek(), Some(Token::Word(w))
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(kw));
        if hit {
            self.at += 1;
        }
        hit
    }

    fn statement(mut self, vacuum: bool) -> Result<Vec<Statement>> {
        let mut full = false;
        if self.peek() == Some(&Token::LParen) {
            self.at += 1;
            loop {
                let Some(Token::Word(w)) = self.peek().cloned() else {
                    return Err(self.syntax_error());
                };
                self.at += 1;
                let on = self.option_value()?;
                match (vacuum, w.value.to_ascii_lowercase().as_str()) {
                    (true, "full") => full = on,
                    (true, "freeze" | "analyze" | "analyse" | "disable_page_skipping")
                    | (true, "skip_locked" | "index_cleanup" | "process_toast" | "truncate")
                    | (true, "parallel")
                    | (_, "verbose" | "skip_locked") => {}
                    (_, other) => {
                        return Err(Error::new(
                            SqlState::SYNTAX_ERROR,
                            format!("unrecognized {} option \"{other}\"", self.what),
                        ))
                    }
                }
                if !self.list_continues()? {
                    break;
                }
            }
        } else if vacuum {
            full = self.keyword("full");
            self.keyword("freeze");
            self.keyword("verbose");
            let _ = self.keyword("analyze") || self.keyword("analyse");
        } else {
            self.keyword("verbose");
        }
        let mut tables = Vec::new();
        while self.peek().is_some() {
            tables.push(self.table_name(vacuum)?);
            match self.peek() {
                Some(Token::Comma) => self.at += 1,
                None => {}
                _ => return Err(self.syntax_error()),
            }
        }
        let one = |table_name: Option<ObjectName>| {
            if vacuum {
                Statement::Vacuum(VacuumStatement {
                    full,
                    sort_only: false,
                    delete_only: false,
                    reindex: false,
                    recluster: false,
                    table_name,
                    threshold: None,
                    boost: false,
                })
            } else {
                Statement::Analyze(Analyze {
                    table_name,
                    partitions: None,
                    for_columns: false,
                    columns: Vec::new(),
                    cache_metadata: false,
                    noscan: false,
                    compute_statistics: false,
                    has_table_keyword: false,
                })
            }
        };
        Ok(if tables.is_empty() {
            vec![one(None)]
        } else {
            tables.into_iter().map(|t| one(Some(t))).collect()
        })
    }

    /// After an item of a parenthesised list: `,` (more follow) or `)`.
    fn list_continues(&mut self) -> Result<bool> {
        let more = match self.peek() {
            Some(Token::Comma) => true,
            Some(Token::RParen) => false,
            _ => return Err(self.syntax_error()),
        };
        self.at += 1;
        Ok(more)
    }

    /// An option's value: none (true), a boolean word, a number or a string.
    fn option_value(&mut self) -> Result<bool> {
        let on = match self.peek() {
            Some(Token::Word(w)) => match w.value.to_ascii_lowercase().as_str() {
                "true" | "on" | "yes" => true,
                "false" | "off" | "no" => false,
                // INDEX_CLEANUP AUTO and the like.
                _ => true,
            },
            Some(Token::Number(n, _)) => n != "0",
            Some(Token::SingleQuotedString(_)) => true,
            _ => return Ok(true),
        };
        self.at += 1;
        Ok(on)
    }

    /// `[schema.]table`, and for ANALYZE an optional column list.
    fn table_name(&mut self, vacuum: bool) -> Result<ObjectName> {
        let mut parts = Vec::new();
        loop {
            let Some(Token::Word(w)) = self.peek().cloned() else {
                return Err(self.syntax_error());
            };
            if w.quote_style.is_none() && w.keyword != Keyword::NoKeyword && parts.is_empty() {
                // A reserved word where a name belongs (e.g. a misplaced
                // option) is a syntax error, as in PostgreSQL.
                if matches!(
                    w.keyword,
                    Keyword::FULL | Keyword::FREEZE | Keyword::VERBOSE | Keyword::ANALYZE
                ) {
                    return Err(self.syntax_error());
                }
            }
            self.at += 1;
            parts.push(Ident {
                value: w.value.clone(),
                quote_style: w.quote_style,
                span: sqlparser::tokenizer::Span::empty(),
            });
            if self.peek() == Some(&Token::Period) {
                self.at += 1;
                continue;
            }
            break;
        }
        if !vacuum && self.peek() == Some(&Token::LParen) {
            // Columns to analyze: nothing is sampled, so they are checked
            // for form only.
            self.at += 1;
            loop {
                match self.peek() {
                    Some(Token::Word(_)) => self.at += 1,
                    _ => return Err(self.syntax_error()),
                }
                if !self.list_continues()? {
                    break;
                }
            }
        }
        Ok(ObjectName::from(parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql_parser(sql: &str) -> Result<Vec<Statement>> {
        crate::parse::parse(sql)
    }

    fn tables(sql: &str) -> Vec<String> {
        parse(sql, sql_parser)
            .expect("recognised")
            .expect("parsed")
            .iter()
            .map(|s| match s {
                Statement::Vacuum(v) => format!(
                    "vacuum{} {}",
                    if v.full { " full" } else { "" },
                    v.table_name
                        .as_ref()
                        .map(|t| t.to_string())
                        .unwrap_or_default()
                ),
                Statement::Analyze(a) => format!(
                    "analyze {}",
                    a.table_name
                        .as_ref()
                        .map(|t| t.to_string())
                        .unwrap_or_default()
                ),
                other => format!("{other}"),
            })
            .collect()
    }

    #[test]
    fn postgres_forms() {
        assert_eq!(tables("VACUUM"), ["vacuum "]);
        assert_eq!(
            tables("vacuum analyze pgbench_branches"),
            ["vacuum pgbench_branches"]
        );
        assert_eq!(
            tables("VACUUM FULL VERBOSE a, public.b;"),
            ["vacuum full a", "vacuum full public.b"]
        );
        assert_eq!(tables("VACUUM (FULL, ANALYZE) t"), ["vacuum full t"]);
        assert_eq!(tables("VACUUM (FULL false, PARALLEL 2) t"), ["vacuum t"]);
        assert_eq!(tables("analyse verbose t (a, b)"), ["analyze t"]);
        assert_eq!(tables("ANALYZE"), ["analyze "]);
        assert_eq!(tables("vacuum \"Odd Name\""), ["vacuum \"Odd Name\""]);
    }

    #[test]
    fn other_text_is_left_to_the_parser() {
        assert!(parse("SELECT 1", sql_parser).is_none());
        assert!(parse("\"vacuum\" t", sql_parser).is_none());
        assert_eq!(
            tables("BEGIN; VACUUM ANALYZE t; SELECT 'it''s';"),
            ["BEGIN", "vacuum t", "SELECT 'it''s'"]
        );
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let e = parse("VACUUM (BOGUS) t", sql_parser).unwrap().unwrap_err();
        assert_eq!(e.code, SqlState::SYNTAX_ERROR);
        assert_eq!(e.message, "unrecognized VACUUM option \"bogus\"");
        let e = parse("VACUUM t u", sql_parser).unwrap().unwrap_err();
        assert_eq!(e.message, "syntax error at or near \"u\"");
        let e = parse("ANALYZE (FULL) t", sql_parser).unwrap().unwrap_err();
        assert_eq!(e.message, "unrecognized ANALYZE option \"full\"");
    }
}
