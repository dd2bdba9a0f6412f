//! Quantified comparisons over an array constructor: `x = ANY (ARRAY[a,
//! b])`, `x <> ALL (ARRAY[…])`, `x < ANY (ARRAY[…])` — what ORMs send for
//! a list of values (SQLAlchemy's `relkind = ANY (ARRAY['r', 'p'])`).
//!
//! ```text
//!  x = ANY (ARRAY[a, b])    ─►  x IN (a, b)
//!  x <> ALL (ARRAY[a, b])   ─►  x NOT IN (a, b)
//!  x op ANY (ARRAY[a, b])   ─►  (x op a) OR (x op b)      (false if empty)
//!  x op ALL (ARRAY[a, b])   ─►  (x op a) AND (x op b)     (true if empty)
//! ```
//!
//! Each rewriting has PostgreSQL's three-valued answer: ANY is true when
//! one comparison is, NULL when none is but one is NULL, false otherwise
//! — exactly OR's truth table, and ALL is AND's. A NULL array is NULL.
//! ANY / ALL over an array value (a column or a parameter of array type)
//! and over a subquery go elsewhere: the latter to the subquery planner.

use super::*;

impl Compiler<'_> {
    /// `Some` for ANY / ALL whose right side is an `ARRAY[…]` constructor.
    pub(super) fn quantified_array(&mut self, e: &Expr) -> Result<Option<Ty>> {
        let (left, op, right, any) = match e {
            Expr::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => (left, compare_op, right, true),
            Expr::AllOp {
                left,
                compare_op,
                right,
            } => (left, compare_op, right, false),
            _ => return Ok(None),
        };
        let mut inner = right.as_ref();
        while let Expr::Nested(x) = inner {
            inner = x;
        }
        let elems = match inner {
            Expr::Array(a) => &a.elem,
            _ => return Ok(None),
        };
        if !matches!(
            op,
            BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq
        ) {
            return Err(unsupported(format!("{op} ANY / ALL")));
        }
        if elems.is_empty() {
            // `ARRAY[]` has no element type: PostgreSQL asks for a cast
            // (42P18), which ndpdb's arrays do not offer yet.
            return Err(Error::new(
                SqlState::INDETERMINATE_DATATYPE,
                "cannot determine type of empty array",
            )
            .with_hint("Explicitly cast to the desired type, for example ARRAY[]::integer[]."));
        }
        let rewritten = match (op, any) {
            (BinaryOperator::Eq, true) | (BinaryOperator::NotEq, false) => Expr::InList {
                expr: left.clone(),
                list: elems.clone(),
                negated: !any,
            },
            _ => {
                let join = if any {
                    BinaryOperator::Or
                } else {
                    BinaryOperator::And
                };
                let compare = |x: &Expr| {
                    Expr::Nested(Box::new(Expr::BinaryOp {
                        left: left.clone(),
                        op: op.clone(),
                        right: Box::new(x.clone()),
                    }))
                };
                let mut it = elems.iter();
                let first = compare(it.next().expect("not empty"));
                it.fold(first, |acc, x| Expr::BinaryOp {
                    left: Box::new(acc),
                    op: join.clone(),
                    right: Box::new(compare(x)),
                })
            }
        };
        self.expr(&rewritten).map(Some)
    }
}
