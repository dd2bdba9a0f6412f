//! Tokens of SQL text with their byte offsets, so that text can be split
//! or respelled in place: the tokenizer's own rendering of a token is not
//! the text it came from (a quote inside a string literal loses its
//! doubling), so nothing is ever rebuilt from tokens.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Location, Token, Tokenizer};

/// The tokens of `sql` (whitespace included) and the byte offset each
/// starts at; `None` if the text does not tokenize.
pub fn tokens_at(sql: &str) -> Option<Vec<(Token, usize)>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    let mut line_starts = vec![0];
    line_starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
    tokens
        .into_iter()
        .map(|t| Some((t.token, offset(sql, &line_starts, t.span.start)?)))
        .collect()
}

/// The byte offset of a 1-based line and character column.
fn offset(sql: &str, line_starts: &[usize], at: Location) -> Option<usize> {
    let start = *line_starts.get((at.line as usize).checked_sub(1)?)?;
    let column = (at.column as usize).checked_sub(1)?;
    let line = &sql[start..];
    Some(
        start
            + line
                .char_indices()
                .nth(column)
                .map_or(line.len(), |(i, _)| i),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_point_at_the_source_text() {
        let sql = "SELECT 'it''s';\n  VACUUM \"é\" ;";
        let at = tokens_at(sql).unwrap();
        let semis: Vec<usize> = at
            .iter()
            .filter(|(t, _)| *t == Token::SemiColon)
            .map(|(_, o)| *o)
            .collect();
        assert_eq!(semis, [14, sql.len() - 1]);
        let vacuum = at
            .iter()
            .find(|(t, _)| matches!(t, Token::Word(w) if w.value == "VACUUM"))
            .unwrap()
            .1;
        assert_eq!(&sql[vacuum..vacuum + 6], "VACUUM");
    }
}
