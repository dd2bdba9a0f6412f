//! Nesting measured before anything recurses — before the tokenizer
//! runs — so that a statement too deep for PostgreSQL fails in the time
//! it takes to read it:
//!
//! ```text
//!  coarse runs ─► ( [ CASE push · ) ] END pop ─ weight > 10,000 ─► 42601
//!      │            (1 per bracket, 5 per CASE)    memory exhausted
//!      ├────────► operand (+ - * / % ||) operand …  a chain longer
//!      │          at one level of brackets          than 4,092 ─► 54001
//!      └────────► SELECT a , b , … at one level     more than 1,664
//!                 of brackets                       entries ─► 54011
//! ```
//!
//! **Brackets and CASEs.** PostgreSQL's bison parser keeps a stack of
//! 10,000 entries (`YYMAXDEPTH`); one per open bracket (it parses
//! `SELECT (((…1…)))` to 9,993 levels), three per `(SELECT` (3,000 levels
//! reach its planner's stack check, 54001; 3,500 do not parse), five per
//! `CASE WHEN c THEN` (1,999 levels). Deeper statements get `42601 memory exhausted at or near "…"`
//! there, at once, and here before sqlparser recurses — it would recurse
//! as deep and, in CASE arms, back off and retry at every level.
//!
//! **Operator chains.** `1 + 1 + … + 1` parses left-deep: its tree is as
//! deep as the chain is long, and PostgreSQL refuses 4,092 levels with
//! 54001 (after parsing all of it; 4.3 s for 10 MB). The runs counted here
//! are a lower bound of the tree's depth: within one level of brackets,
//! operands joined by `||` (PostgreSQL's "other operator" level), `+ -`,
//! `* / %` (higher, in that order), the operators of one level between two
//! of a lower one form one left-deep chain. Anything else — a keyword, a
//! comma, another operator — ends the count, which only lowers the bound;
//! the exact depth is measured on the tree after parsing (limits.rs).
//!
//! **Target lists.** PostgreSQL refuses a SELECT list of more than 1,664
//! entries (54011) after parsing it in linear time; sqlparser keeps
//! 776 bytes per entry, so a 12 MB list of `1, 1, …` would cost gigabytes
//! and most of a minute before the same refusal. The commas between
//! SELECT and the word that ends its list (FROM, WHERE, …) at one level
//! of brackets count the entries written, a lower bound of the entries
//! once `*` expands: more than the limit is refused here.

use ndpdb_formats::SqlState;

use super::coarse::{Coarse, Kind};
use crate::limits::{
    stack_depth_exceeded, too_many_target_entries, MAX_EXPRESSION_DEPTH, MAX_TARGET_ENTRIES,
};
use crate::Error;

/// Bison's stack as PostgreSQL builds its parser.
pub const MAX_WEIGHT: usize = 10_000;
const BRACKET: usize = 1;
const CASE: usize = 5;
const SUBQUERY: usize = 3;

/// Words that end a SELECT list at its level of brackets.
const ENDS_TARGETS: [&[u8]; 13] = [
    b"from",
    b"into",
    b"where",
    b"group",
    b"having",
    b"window",
    b"order",
    b"limit",
    b"offset",
    b"fetch",
    b"union",
    b"intersect",
    b"except",
];

#[derive(Clone, Copy, PartialEq)]
enum Open {
    Paren,
    /// `(SELECT`, `(WITH`, `(VALUES`: a subquery.
    Subquery,
    Bracket,
    Case,
}

impl Open {
    fn weight(self) -> usize {
        match self {
            Open::Paren | Open::Bracket => BRACKET,
            Open::Subquery => SUBQUERY,
            Open::Case => CASE,
        }
    }
}

/// Left-deep chains under way at one level of brackets.
#[derive(Clone, Copy, Default)]
struct Chain {
    /// The last run was an operand (an operator may follow).
    operand: bool,
    /// Operators seen per level (`||`, `+ -`, `* / %`) since a lower one.
    count: [usize; 3],
}

impl Chain {
    fn reset(&mut self) {
        *self = Chain::default();
    }

    /// An operand; the chain goes on if an operator preceded it.
    fn operand(&mut self) {
        self.operand = true;
    }

    /// A binary operator of `level`: the longest chain so far.
    fn operator(&mut self, level: usize) -> usize {
        if !self.operand {
            self.reset();
            return 0;
        }
        self.operand = false;
        for higher in &mut self.count[level + 1..] {
            *higher = 0;
        }
        self.count[level] += 1;
        self.count[level]
    }
}

/// `Err` if `sql` nests deeper than PostgreSQL parses (42601) or holds an
/// operator chain deeper than it plans (54001).
pub fn check(sql: &str) -> Result<(), Error> {
    scan(sql, MAX_EXPRESSION_DEPTH).map(|_| ())
}

/// The longest operator chain of `sql`; `Err` as [`check`], a chain
/// reaching `chain_limit` failing with 54001.
fn scan(sql: &str, chain_limit: usize) -> Result<usize, Error> {
    let mut longest = 0;
    let bytes = sql.as_bytes();
    let mut open: Vec<(Open, Chain, Option<usize>)> = Vec::new();
    let mut weight = 0;
    let mut chain = Chain::default();
    // Entries of the SELECT list under way at this level of brackets.
    let mut targets: Option<usize> = None;
    let mut items = Coarse::new(bytes, 0).peekable();
    while let Some(item) = items.next() {
        let text = &bytes[item.start..item.end];
        let push = match (item.kind, text) {
            (Kind::Blank, _) => continue,
            (Kind::Punct, b"(") => {
                let next = items.clone().find(|i| i.kind != Kind::Blank);
                let query = next.is_some_and(|i| {
                    let w = &bytes[i.start..i.end];
                    i.kind == Kind::Word
                        && [&b"select"[..], b"with", b"values"]
                            .iter()
                            .any(|k| w.eq_ignore_ascii_case(k))
                });
                Some(if query { Open::Subquery } else { Open::Paren })
            }
            (Kind::Punct, b"[") => Some(Open::Bracket),
            (Kind::Word, w) if w.eq_ignore_ascii_case(b"case") => Some(Open::Case),
            _ => None,
        };
        if let Some(o) = push {
            weight += o.weight();
            open.push((o, chain, targets.take()));
            chain.reset();
            if weight > MAX_WEIGHT {
                // The token bison could not shift: the one after the
                // opener, after `(SELECT` the one after SELECT.
                let skip = usize::from(o == Open::Subquery);
                let near = items
                    .filter(|i| i.kind != Kind::Blank)
                    .nth(skip)
                    .map_or(text, |i| &bytes[i.start..i.end]);
                return Err(Error::new(
                    SqlState::SYNTAX_ERROR,
                    format!(
                        "memory exhausted at or near \"{}\"",
                        String::from_utf8_lossy(near)
                    ),
                ));
            }
            continue;
        }
        let pop = match (item.kind, text) {
            (Kind::Punct, b")") => match open.last() {
                Some((Open::Subquery, _, _)) => Some(Open::Subquery),
                _ => Some(Open::Paren),
            },
            (Kind::Punct, b"]") => Some(Open::Bracket),
            (Kind::Word, w) if w.eq_ignore_ascii_case(b"end") => Some(Open::Case),
            _ => None,
        };
        if let Some(o) = pop {
            match open.last() {
                Some(&(top, outer, list)) if top == o => {
                    open.pop();
                    weight -= o.weight();
                    targets = list;
                    // The bracketed expression is an operand of the chain
                    // it interrupted.
                    chain = outer;
                    chain.operand();
                }
                _ => chain.reset(),
            }
            continue;
        }
        match (item.kind, text) {
            (Kind::Word, w) if w.eq_ignore_ascii_case(b"select") => targets = Some(1),
            (Kind::Word, w) if ENDS_TARGETS.iter().any(|k| w.eq_ignore_ascii_case(k)) => {
                targets = None
            }
            (Kind::Punct, b";") => targets = None,
            (Kind::Punct, b",") => {
                if let Some(n) = &mut targets {
                    *n += 1;
                    if *n > MAX_TARGET_ENTRIES {
                        return Err(too_many_target_entries());
                    }
                }
            }
            _ => {}
        }
        let level = match (item.kind, text) {
            (Kind::Operator, b"||") => Some(0),
            (Kind::Operator, b"+" | b"-") => Some(1),
            (Kind::Operator, b"*" | b"/" | b"%") => Some(2),
            _ => None,
        };
        match (item.kind, level) {
            (_, Some(level)) => {
                longest = longest.max(chain.operator(level));
                if longest >= chain_limit {
                    return Err(stack_depth_exceeded());
                }
            }
            (Kind::Number | Kind::Quoted, _) => chain.operand(),
            (Kind::Word, _) if !is_keyword(text) => chain.operand(),
            _ => chain.reset(),
        }
    }
    Ok(longest)
}

/// Whether a word is one of sqlparser's keywords (they end a chain: after
/// `SELECT` or `THEN` a sign is unary).
fn is_keyword(word: &[u8]) -> bool {
    let Ok(word) = std::str::from_utf8(word) else {
        return false;
    };
    let upper = word.to_ascii_uppercase();
    sqlparser::keywords::ALL_KEYWORDS
        .binary_search(&upper.as_str())
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where PostgreSQL 15 stops (measured): 9,993 parentheses parse,
    /// 1,999 CASEs parse and 2,000 exhaust its parser's stack.
    #[test]
    fn brackets_and_cases_stop_where_postgres_stops() {
        let case = |n: usize| {
            format!(
                "SELECT {}1{}",
                "CASE WHEN TRUE THEN ".repeat(n),
                " END".repeat(n)
            )
        };
        assert!(check(&case(1_999)).is_ok());
        let e = check(&case(2_001)).unwrap_err();
        assert_eq!(e.code, SqlState::SYNTAX_ERROR);
        assert_eq!(e.message, "memory exhausted at or near \"WHEN\"");
        let parens = |n: usize| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
        assert!(check(&parens(9_993)).is_ok());
        assert_eq!(
            check(&parens(10_001)).unwrap_err().code,
            SqlState::SYNTAX_ERROR
        );
        // Sequential CASEs and brackets do not add up; quoted text and
        // comments are not looked into.
        let flat = format!(
            "SELECT ARRAY[{}]",
            vec!["CASE WHEN (1) THEN [2] END"; 5_000].join(", ")
        );
        assert!(check(&flat).is_ok());
        let quoted = format!(
            "SELECT '{0}', \"{0}\", $x${0}$x$ /* {0} */ -- {0}",
            "(".repeat(20_000)
        );
        assert!(check(&quoted).is_ok());
        assert!(check("BEGIN; SELECT 1; END").is_ok());
        let subqueries = |n: usize| format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n));
        assert!(check(&subqueries(3_000)).is_ok());
        let e = check(&subqueries(3_500)).unwrap_err();
        assert_eq!(e.message, "memory exhausted at or near \"(\"");
    }

    /// A SELECT list past PostgreSQL's 1,664 entries is refused before
    /// parsing, at any level; the lists of other clauses, of other
    /// SELECTs and of brackets count apart.
    #[test]
    fn long_target_lists_fail_before_parsing() {
        let list = |n: usize| vec!["1"; n].join(", ");
        assert!(check(&format!("SELECT {}", list(1_664))).is_ok());
        let e = check(&format!("SELECT {}", list(1_665))).unwrap_err();
        assert_eq!(e.code, SqlState::TOO_MANY_COLUMNS);
        assert_eq!(e.message, "target lists can have at most 1664 entries");
        let nested = format!("SELECT 1 FROM t WHERE x IN (SELECT {})", list(2_000));
        assert!(check(&nested).is_err());
        // Not target lists: FROM, IN, VALUES, ARRAY, function arguments,
        // GROUP BY, two SELECTs of a UNION, statements after `;`.
        for sql in [
            format!("SELECT 1 FROM {}", vec!["t"; 2_000].join(", ")),
            format!("SELECT x IN ({}), ARRAY[{0}], f({0})", list(2_000)),
            format!("INSERT INTO t VALUES {}", vec!["(1, 2)"; 2_000].join(", ")),
            format!("SELECT {0} UNION SELECT {0}", list(1_000)),
            format!("SELECT {0}; SELECT {0}", list(1_000)),
            format!("SELECT 1 GROUP BY {}", list(2_000)),
            format!("SELECT ({}), 2", list(2_000)),
        ] {
            assert!(check(&sql).is_ok(), "{}", &sql[..40]);
        }
    }

    #[test]
    fn long_operator_chains_fail_before_parsing() {
        let plus = |n: usize| format!("SELECT 1{}", " + 1".repeat(n));
        assert!(check(&plus(4_091)).is_ok());
        assert_eq!(
            check(&plus(5_000)).unwrap_err().code,
            SqlState::STATEMENT_TOO_COMPLEX
        );
        // Mixed levels: the + chain alone is 5,000 long.
        let mixed = format!("SELECT 1{}", " + 2 * 3 - 4 / (5 % 6)".repeat(2_500));
        assert!(check(&mixed).is_err());
        // Exponents, signs after keywords, commas: no chain.
        let list = format!("SELECT ARRAY[{}]", vec!["1e+5 - -1"; 5_000].join(", "));
        assert!(check(&list).is_ok());
        let terms = format!("SELECT 1 WHERE {}", vec!["x + 1 = 2"; 5_000].join(" AND "));
        assert!(check(&terms).is_ok());
    }

    /// The count is a lower bound of the depth the parser builds, on
    /// random chains of the counted operators, brackets and other terms.
    #[test]
    fn chains_never_exceed_the_parsed_depth() {
        use rand::{Rng, SeedableRng};
        use sqlparser::ast::{Expr, Visit, Visitor};
        use std::ops::ControlFlow;
        struct Deepest(usize, usize);
        impl Visitor for Deepest {
            type Break = ();
            fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
                self.0 += usize::from(!matches!(e, Expr::Nested(_)));
                self.1 = self.1.max(self.0);
                ControlFlow::Continue(())
            }
            fn post_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
                self.0 -= usize::from(!matches!(e, Expr::Nested(_)));
                ControlFlow::Continue(())
            }
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let ops = ["+", "-", "*", "/", "%", "||", "=", "AND", "<", "^"];
        for _ in 0..2_000 {
            let mut sql = String::from("SELECT ");
            let mut opens = 0;
            for _ in 0..rng.gen_range(1..60) {
                if rng.gen_bool(0.15) {
                    sql.push('(');
                    opens += 1;
                }
                sql.push_str(["1", "x", "'a'", "-2", "abs(3)", "2.5e-3"][rng.gen_range(0..6)]);
                if opens > 0 && rng.gen_bool(0.2) {
                    sql.push(')');
                    opens -= 1;
                }
                sql.push(' ');
                sql.push_str(ops[rng.gen_range(0..ops.len())]);
                sql.push(' ');
            }
            sql.push('1');
            sql.push_str(&")".repeat(opens));
            let bound = scan(&sql, usize::MAX).unwrap();
            let stmts = sqlparser::parser::Parser::parse_sql(
                &sqlparser::dialect::PostgreSqlDialect {},
                &sql,
            )
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
            let mut d = Deepest(0, 0);
            let _ = stmts.visit(&mut d);
            assert!(bound < d.1, "{sql}: counted {bound}, parsed depth {}", d.1);
        }
    }
}
