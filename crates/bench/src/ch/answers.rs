//! Each target's answers to the 22 queries beside PostgreSQL's, on the
//! same generated data (the power run happens right after the load, before
//! any OLTP transaction changes a row).
//!
//! Every query orders its result; where the ORDER BY leaves ties, the two
//! engines may list tied rows differently (PostgreSQL's own plans may
//! too), so a result with the same rows in another order counts as the
//! same answer and is reported as such.

use super::olap::{PowerQuery, Rows};

/// How one answer compares with PostgreSQL's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The same rows in the same order.
    Identical,
    /// The same rows; tied rows in another order.
    SameRows,
    /// Both failed (same SQLSTATE).
    BothFailed,
    /// Different rows, or one side failed: a description.
    Differs(String),
    /// No PostgreSQL answer to compare with.
    Unchecked,
}

impl Verdict {
    pub fn matches(&self) -> bool {
        matches!(
            self,
            Verdict::Identical | Verdict::SameRows | Verdict::BothFailed
        )
    }

    pub fn label(&self) -> String {
        match self {
            Verdict::Identical => "identical".into(),
            Verdict::SameRows => "same rows (ties in another order)".into(),
            Verdict::BothFailed => "both failed".into(),
            Verdict::Differs(d) => format!("DIFFERS: {d}"),
            Verdict::Unchecked => "not compared".into(),
        }
    }
}

fn show_row(r: &[Option<String>]) -> String {
    let cells: Vec<&str> = r.iter().map(|c| c.as_deref().unwrap_or("NULL")).collect();
    format!("({})", cells.join(", "))
}

fn compare_rows(ours: &Rows, theirs: &Rows) -> Verdict {
    if ours == theirs {
        return Verdict::Identical;
    }
    let (mut a, mut b) = (ours.clone(), theirs.clone());
    a.sort();
    b.sort();
    if a == b {
        return Verdict::SameRows;
    }
    if ours.len() != theirs.len() {
        return Verdict::Differs(format!(
            "{} rows, PostgreSQL {} rows",
            ours.len(),
            theirs.len()
        ));
    }
    let at = (0..ours.len()).find(|&i| ours[i] != theirs[i]).unwrap_or(0);
    Verdict::Differs(format!(
        "row {}: {} vs PostgreSQL {}",
        at + 1,
        show_row(&ours[at]),
        show_row(&theirs[at])
    ))
}

/// `ours` beside PostgreSQL's answers, query by query.
pub fn compare(ours: &[PowerQuery], postgres: Option<&[PowerQuery]>) -> Vec<Verdict> {
    ours.iter()
        .map(|q| {
            let Some(pg) = postgres.and_then(|p| p.iter().find(|p| p.name == q.name)) else {
                return Verdict::Unchecked;
            };
            match (&q.answer, &pg.answer) {
                (Ok(a), Ok(b)) => compare_rows(a, b),
                (Err(a), Err(b)) if a.split(' ').next() == b.split(' ').next() => {
                    Verdict::BothFailed
                }
                (Err(a), _) => Verdict::Differs(format!("failed: {a}")),
                (Ok(_), Err(b)) => Verdict::Differs(format!("PostgreSQL failed: {b}")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn q(rows: &[&[&str]]) -> PowerQuery {
        PowerQuery {
            name: "Q1",
            time: Duration::ZERO,
            answer: Ok(rows
                .iter()
                .map(|r| r.iter().map(|c| Some(c.to_string())).collect())
                .collect()),
        }
    }

    #[test]
    fn order_of_ties_is_the_same_answer_but_other_rows_are_not() {
        let pg = [q(&[&["1", "a"], &["1", "b"]])];
        assert_eq!(
            compare(&[q(&[&["1", "a"], &["1", "b"]])], Some(&pg))[0],
            Verdict::Identical
        );
        assert_eq!(
            compare(&[q(&[&["1", "b"], &["1", "a"]])], Some(&pg))[0],
            Verdict::SameRows
        );
        let v = &compare(&[q(&[&["1", "a"], &["1", "c"]])], Some(&pg))[0];
        assert!(!v.matches(), "{v:?}");
        let v = &compare(&[q(&[&["1", "a"]])], Some(&pg))[0];
        assert!(!v.matches(), "{v:?}");
        assert_eq!(compare(&pg, None)[0], Verdict::Unchecked);
    }
}
