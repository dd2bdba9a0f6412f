//! Terms an OR implies: a WHERE term `(A AND B) OR (A AND C)` gives the
//! planner nothing to join on or to filter a scan with, although every
//! row it keeps meets `A`. For an OR whose every branch is an AND list
//! (a single term counts as a list of one), the planner adds, next to the
//! OR itself:
//!
//! - each term common to all branches (compared by their text, outer
//!   parentheses removed) — CH-benCHmark Q19's `ol_i_id = i_id`, which
//!   then is a hash-join key instead of a cross product;
//! - per FROM item whose scan may be filtered, when every branch has at
//!   least one other term over that item's columns alone, the OR of those
//!   terms — `ol_w_id IN (1, 2, 3) OR ol_w_id IN (1, 2, 4) OR …`, a filter
//!   of that item's scan.
//!
//! ```text
//!  (ol_i_id = i_id AND i_data LIKE '%a' AND ol_w_id IN (1,2,3))
//!   OR (ol_i_id = i_id AND i_data LIKE '%b' AND ol_w_id IN (1,2,4))
//!     ├─► ol_i_id = i_id                              join key
//!     ├─► i_data LIKE '%a' OR i_data LIKE '%b'        item's scan
//!     ├─► ol_w_id IN (1,2,3) OR ol_w_id IN (1,2,4)    order_line's scan
//!     └─► the OR itself                               on the joined rows
//! ```
//!
//! Every added term is implied by the OR (a row the OR keeps meets all
//! terms of one branch), and the OR stays, so the answer is exactly the
//! original predicate's — PostgreSQL's `orclauses.c` and its equivalence
//! of common OR terms do the same. Only WHERE terms (and the ON terms of
//! inner joins, which are WHERE terms) are used: an implied WHERE term
//! may go wherever the planner puts WHERE terms, also beside outer joins,
//! while an outer join's ON is left alone. Terms with a subquery, an
//! aggregate or a sequence function are never copied (a copy would run
//! the subquery or `nextval` once more).

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{BinaryOperator, Expr, Query, Visit, Visitor};

use crate::bind::compile::contains_aggregate;
use crate::bind::scope::Scope;
use crate::plan::conjuncts::{compiles, conjuncts, pushable};

/// `e` without the parentheses around it.
fn unnest(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(inner) => unnest(inner),
        e => e,
    }
}

/// The text two equal terms share.
fn text(e: &Expr) -> String {
    unnest(e).to_string()
}

/// The branches of an OR (nested ORs flattened); `None` if `e` is no OR.
fn or_branches(e: &Expr) -> Option<Vec<&Expr>> {
    fn walk<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
        match unnest(e) {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Or,
                right,
            } => {
                walk(left, out);
                walk(right, out);
            }
            e => out.push(e),
        }
    }
    let mut out = Vec::new();
    walk(e, &mut out);
    (out.len() > 1).then_some(out)
}

/// Whether `e` may be copied: no subquery, aggregate or sequence call.
pub(crate) fn copyable(e: &Expr) -> bool {
    struct Plain(bool);
    impl Visitor for Plain {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.0 = false;
            ControlFlow::Break(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e {
                let name = f.name.to_string().to_ascii_lowercase();
                let name = name.rsplit('.').next().unwrap_or_default();
                if matches!(name, "nextval" | "currval" | "setval") {
                    self.0 = false;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut v = Plain(true);
    let _ = e.visit(&mut v);
    v.0 && !contains_aggregate(e)
}

/// `terms` joined by `op` as a balanced tree (its depth stays log n, as
/// the parser's rebalanced chains do: `limits.rs`).
fn balanced(mut terms: Vec<Expr>, op: BinaryOperator) -> Option<Expr> {
    if terms.len() <= 1 {
        return terms.pop();
    }
    let right = terms.split_off(terms.len() / 2);
    Some(Expr::BinaryOp {
        left: Box::new(balanced(terms, op.clone())?),
        op: op.clone(),
        right: Box::new(balanced(right, op)?),
    })
}

/// Adds to `conds` (the WHERE terms) the terms their ORs imply (see the
/// module documentation). `scopes`: each FROM item's columns;
/// `filterable[i]`: whether a WHERE term may filter item `i`'s scan (no
/// outer join fills it with NULLs).
pub(crate) fn add_implied(conds: &mut Vec<Expr>, scopes: &[Scope], filterable: &[bool]) {
    if !conds.iter().any(|c| or_branches(c).is_some()) {
        return;
    }
    let mut seen: HashSet<String> = conds.iter().map(text).collect();
    let mut added = Vec::new();
    for c in conds.iter() {
        let Some(branches) = or_branches(c) else {
            continue;
        };
        if !copyable(c) {
            continue;
        }
        let lists: Vec<Vec<Expr>> = branches
            .iter()
            .map(|b| {
                let mut terms = Vec::new();
                conjuncts(b, &mut terms);
                terms
            })
            .collect();
        let texts: Vec<HashSet<String>> =
            lists.iter().map(|l| l.iter().map(text).collect()).collect();
        let mut common = HashSet::new();
        for t in &lists[0] {
            let key = text(t);
            let in_all = texts[1..].iter().all(|s| s.contains(&key));
            if in_all && common.insert(key.clone()) && seen.insert(key) {
                added.push(unnest(t).clone());
            }
        }
        // An OR over one item's columns filters that item as it is.
        if scopes.iter().any(|s| pushable(c, s)) {
            continue;
        }
        for (scope, _) in scopes.iter().zip(filterable).filter(|(_, f)| **f) {
            let own = |t: &Expr| {
                !common.contains(&text(t))
                    && pushable(t, scope)
                    && !compiles(t, &scope.no_columns())
            };
            let per: Vec<Vec<Expr>> = lists
                .iter()
                .map(|l| l.iter().filter(|t| own(t)).cloned().collect())
                .collect();
            if per.iter().any(Vec::is_empty) {
                continue;
            }
            let branches = per
                .into_iter()
                .filter_map(|terms| balanced(terms, BinaryOperator::And))
                .map(|e| Expr::Nested(Box::new(e)))
                .collect();
            if let Some(e) = balanced(branches, BinaryOperator::Or) {
                if seen.insert(text(&e)) {
                    added.push(e);
                }
            }
        }
    }
    conds.extend(added);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::DataType;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn expr(sql: &str) -> Expr {
        Parser::new(&PostgreSqlDialect {})
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    fn scope(table: &str, columns: &[&str]) -> Scope {
        let mut s = Scope::default();
        s.add_table(
            table,
            columns.iter().map(|c| (c.to_string(), DataType::Int)),
        );
        s
    }

    fn implied(where_: &str, filterable: &[bool]) -> Vec<String> {
        let scopes = [scope("a", &["a_id", "a_x"]), scope("b", &["b_a", "b_y"])];
        let mut conds = Vec::new();
        conjuncts(&expr(where_), &mut conds);
        let before = conds.len();
        add_implied(&mut conds, &scopes, filterable);
        conds[before..].iter().map(ToString::to_string).collect()
    }

    #[test]
    fn common_terms_and_per_table_ors_are_added() {
        let added = implied(
            "(a_id = b_a AND a_x = 1 AND b_y < 5) OR ((b_a = a_id) AND a_x = 2 AND b_y > 7 AND a_id = b_a)",
            &[true, true],
        );
        assert_eq!(
            added,
            [
                "a_id = b_a",
                "(a_x = 1) OR (a_x = 2)",
                "(b_y < 5) OR (b_y > 7)",
            ]
        );
    }

    #[test]
    fn a_branch_without_a_term_of_a_table_gives_that_table_nothing() {
        let added = implied(
            "(a_id = b_a AND a_x = 1) OR (a_id = b_a AND b_y = 2)",
            &[true, true],
        );
        assert_eq!(added, ["a_id = b_a"]);
        // A term already in WHERE is not added twice; a NULL-filled table
        // gets no filter.
        let added = implied(
            "a_id = b_a AND ((a_id = b_a AND a_x = 1 AND b_y = 1) OR (a_id = b_a AND a_x = 2 AND b_y = 2))",
            &[true, false],
        );
        assert_eq!(added, ["(a_x = 1) OR (a_x = 2)"]);
    }

    #[test]
    fn an_or_over_one_table_or_with_a_subquery_is_left_alone() {
        assert!(implied(
            "(a_x = 1 AND a_id = 2) OR (a_x = 3 AND a_id = 4)",
            &[true, true]
        )
        .is_empty());
        assert_eq!(
            implied(
                "(a_x = 1 AND a_id = 2) OR (a_x = 1 AND a_id = 4)",
                &[true, true]
            ),
            ["a_x = 1"]
        );
        assert!(implied(
            "(a_id = b_a AND a_x IN (SELECT 1)) OR (a_id = b_a AND b_y = 2)",
            &[true, true]
        )
        .is_empty());
        assert!(implied(
            "(a_x = nextval('s') AND b_y = 1) OR (a_x = nextval('s') AND b_y = 2)",
            &[true, true]
        )
        .is_empty());
    }

    #[test]
    fn many_branches_make_a_balanced_tree() {
        let branches: Vec<String> = (0..1000)
            .map(|i| format!("(a_id = b_a AND a_x = {i} AND b_y = {i})"))
            .collect();
        let added = {
            let scopes = [scope("a", &["a_id", "a_x"]), scope("b", &["b_a", "b_y"])];
            let mut conds = vec![expr(&branches.join(" OR "))];
            add_implied(&mut conds, &scopes, &[true, true]);
            conds.split_off(1)
        };
        fn depth(e: &Expr) -> usize {
            match e {
                Expr::BinaryOp { left, right, .. } => 1 + depth(left).max(depth(right)),
                Expr::Nested(e) => depth(e),
                _ => 1,
            }
        }
        assert_eq!(added.len(), 3);
        assert!(depth(&added[1]) <= 16, "{}", depth(&added[1]));
    }
}
