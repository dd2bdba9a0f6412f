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

use sqlparser::tokenizer::Token;

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
    let tokens = crate::token_text::tokens_at(sql)?;
    // (byte range of a value in the source, its respelling)
    let mut edits: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
    let mut last_word: Option<String> = None;
    for (t, at) in &tokens {
        if matches!(t, Token::Whitespace(_)) {
            continue;
        }
        let after_option = last_word
            .as_deref()
            .is_some_and(|w| BOOLEAN_OPTIONS.contains(&w));
        if after_option {
            let spelled = match t {
                Token::Word(w) if w.quote_style.is_none() => {
                    match w.value.to_ascii_lowercase().as_str() {
                        "on" | "yes" => Some((true, w.value.len())),
                        "off" | "no" => Some((false, w.value.len())),
                        _ => None,
                    }
                }
                Token::Number(n, _) if n == "1" => Some((true, 1)),
                Token::Number(n, _) if n == "0" => Some((false, 1)),
                _ => None,
            };
            if let Some((b, len)) = spelled {
                edits.push((*at..*at + len, if b { "TRUE" } else { "FALSE" }));
            }
        }
        last_word = match t {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_lowercase()),
            _ => None,
        };
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 8);
    let mut from = 0;
    for (range, word) in edits {
        out.push_str(sql.get(from..range.start)?);
        out.push_str(word);
        from = range.end;
    }
    out.push_str(sql.get(from..)?);
    Some(out)
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
        // The rest of the text stays as written.
        assert_eq!(
            respell("COPY t FROM STDIN (FORMAT csv, QUOTE '''', FREEZE on)").as_deref(),
            Some("COPY t FROM STDIN (FORMAT csv, QUOTE '''', FREEZE TRUE)")
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
