//! COPY's boolean options as PostgreSQL reads them: `FREEZE`, `HEADER`
//! and the like take `on`/`off`, `yes`/`no`, `1`/`0` as well as
//! `true`/`false` (pgbench sends `with (freeze on)`); the SQL parser
//! knows only `true`/`false`, so a COPY's option list is respelled
//! before it parses.
//!
//! ```text
//!  COPY t FROM STDIN WITH (FREEZE on, HEADER 1)
//!                      ─► COPY t FROM STDIN WITH (FREEZE TRUE, HEADER TRUE)
//! ```

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// Options whose value is a boolean.
const BOOLEAN_OPTIONS: [&str; 2] = ["freeze", "header"];

/// `sql` with the boolean option values of a COPY respelled, or `None`
/// if it is not a COPY or has nothing to respell.
pub fn respell(sql: &str) -> Option<String> {
    let head = sql.trim_start();
    if !head
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("copy"))
    {
        return None;
    }
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let mut changed = false;
    let mut last_word: Option<String> = None;
    for t in tokens.iter_mut() {
        if matches!(t, Token::Whitespace(_)) {
            continue;
        }
        let after_option = last_word
            .as_deref()
            .is_some_and(|w| BOOLEAN_OPTIONS.contains(&w));
        if after_option {
            let spelled = match &*t {
                Token::Word(w) if w.quote_style.is_none() => {
                    match w.value.to_ascii_lowercase().as_str() {
                        "on" | "yes" => Some(true),
                        "off" | "no" => Some(false),
                        _ => None,
                    }
                }
                Token::Number(n, _) if n == "1" => Some(true),
                Token::Number(n, _) if n == "0" => Some(false),
                _ => None,
            };
            if let Some(b) = spelled {
                *t = Token::make_keyword(if b { "TRUE" } else { "FALSE" });
                changed = true;
            }
        }
        last_word = match t {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_lowercase()),
            _ => None,
        };
    }
    changed.then(|| tokens.iter().map(|t| t.to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::respell;

    #[test]
    fn boolean_words_become_true_false() {
        assert_eq!(
            respell("copy pgbench_accounts from stdin with (freeze on)").as_deref(),
            Some("copy pgbench_accounts from stdin with (freeze TRUE)")
        );
        assert_eq!(
            respell("COPY t FROM STDIN (FORMAT csv, HEADER 0, FREEZE off)").as_deref(),
            Some("COPY t FROM STDIN (FORMAT csv, HEADER FALSE, FREEZE FALSE)")
        );
    }

    #[test]
    fn other_text_is_left_alone() {
        assert_eq!(respell("COPY t FROM STDIN WITH (FREEZE true)"), None);
        assert_eq!(respell("SELECT 'freeze on'"), None);
        assert_eq!(respell("COPY \"on\" FROM STDIN"), None);
        assert_eq!(respell("cop\u{e9} freeze on"), None);
    }
}
