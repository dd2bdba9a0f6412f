//! One type for values that meet in one result: CASE's branches and
//! COALESCE's, GREATEST's and LEAST's arguments, as PostgreSQL's
//! `select_common_type` resolves them, and the conversions each value
//! needs to arrive at it.
//!
//! ```text
//!  branch₁ code │ branch₂ code │ … ─► types [int, numeric, …]
//!                                        │ select_common_type
//!                                        ▼
//!  branch₁ code ‹Cast(numeric)› │ branch₂ code │ …   (inserted where a
//!                                    branch's code ends; jumps that
//!                                    cross the insertion move with it)
//! ```
//!
//! The rules, for the types ndpdb has: the first known type leads; a
//! number beside a number widens (int < bigint < numeric < double
//! precision); among `text`, `varchar` and `char(n)` the first keeps
//! its type (each casts to the others implicitly); dates meet
//! timestamps as timestamps. A `char(n)` value that arrives at text or
//! varchar loses its trailing blanks, as its cast does in PostgreSQL
//! (`coalesce(text_col, char_col)`), while text arriving at `char`
//! stays as it is (no length to pad to); a number
//! that arrives at a wider type is cast to it, so the column the client
//! is told about (`numeric` for `coalesce(int_col, 2.5)`) is the type
//! of every value in it.

use super::functions::type_name_of;
use super::*;

/// The type values of `types` (in order, unknown ones left out) share;
/// `Err((a, b))` for the first two of different categories (PostgreSQL's
/// "CASE types integer and text cannot be matched").
pub(super) fn select_common_type(
    types: impl IntoIterator<Item = DataType>,
) -> std::result::Result<Option<DataType>, (DataType, DataType)> {
    let mut common: Option<DataType> = None;
    for t in types {
        common = Some(match common {
            None => t,
            Some(c) if category(c) != category(t) => return Err((c, t)),
            Some(c) => pair(c, t),
        });
    }
    Ok(common)
}

/// PostgreSQL's `typcategory` of the types ndpdb has.
fn category(t: DataType) -> char {
    use DataType::*;
    match t {
        Bool => 'B',
        Int | BigInt | Double | Numeric { .. } => 'N',
        Date | Timestamp => 'D',
        Text | Varchar(_) | Char(_) => 'S',
        Array(_) => 'A',
        Bytea | Json | Jsonb => 'U',
    }
}

fn pair(c: DataType, t: DataType) -> DataType {
    use DataType::*;
    if c == t {
        return c;
    }
    match (c, t) {
        (Varchar(x), Varchar(y)) => Varchar(x.max(y)),
        _ if c.is_textual() && t.is_textual() => c,
        _ if c.is_numeric() && t.is_numeric() => numeric_result(c, t).unwrap_or(c),
        _ => arrays::common_type(c, t).unwrap_or(c),
    }
}

/// What a value of type `from` needs to become a value of `to`.
fn conversion(from: DataType, to: DataType) -> Option<Op> {
    use DataType::*;
    match (from, to) {
        _ if from == to => None,
        (Char(_), Text | Varchar(_)) => Some(Op::Call {
            func: Func::Rtrim,
            nargs: 1,
        }),
        _ if from.is_numeric() && to.is_numeric() && numeric_result(from, to) == Some(to) => {
            Some(Op::Cast(to))
        }
        (Date, Timestamp) => Some(Op::Cast(to)),
        _ => None,
    }
}

impl Compiler<'_> {
    /// Brings values whose code ends at `ends` (typed `tys`, in the
    /// order their types count: CASE puts its ELSE first, as
    /// PostgreSQL does) to their common type, which it returns: untyped
    /// literals take it, values of another type get their conversion.
    pub(super) fn unify(
        &mut self,
        what: &str,
        tys: &[Ty],
        ends: &[usize],
    ) -> Result<Option<DataType>> {
        let common = select_common_type(tys.iter().filter_map(|t| match t {
            Ty::Known(d) => Some(*d),
            _ => None,
        }))
        .map_err(|(a, b)| {
            Error::new(
                SqlState::DATATYPE_MISMATCH,
                format!(
                    "{what} types {} and {} cannot be matched",
                    type_name_of(a),
                    type_name_of(b)
                ),
            )
        })?;
        let Some(common) = common else {
            return Ok(None);
        };
        // From the last in the code, so that the earlier insertion points
        // stay put.
        let mut order: Vec<(Ty, usize)> = tys.iter().copied().zip(ends.iter().copied()).collect();
        order.sort_by_key(|&(_, end)| std::cmp::Reverse(end));
        for (t, end) in order {
            match t {
                Ty::Known(d) => {
                    if let Some(op) = conversion(d, common) {
                        self.insert_op(end, op);
                    }
                }
                t => {
                    self.coerce(t, Some(common))?;
                }
            }
        }
        Ok(Some(common))
    }

    /// Inserts `op` at `at`: jumps to a later place move with the code
    /// after it; a jump to `at` itself (the end of the code before)
    /// now reaches `op`.
    fn insert_op(&mut self, at: usize, op: Op) {
        let ops = &mut self.program.ops;
        for o in ops.iter_mut() {
            if let Op::JumpIfFalseKeep(t)
            | Op::JumpIfTrueKeep(t)
            | Op::JumpIfNotTrue(t)
            | Op::Jump(t) = o
            {
                if *t as usize > at {
                    *t += 1;
                }
            }
        }
        ops.insert(at, op);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    fn numeric() -> DataType {
        Numeric {
            precision: 0,
            scale: 0,
        }
    }

    /// PostgreSQL 15: `pg_typeof(coalesce(a, b))` for these pairs.
    #[test]
    fn pairs_resolve_as_postgres_does() {
        let cases = [
            ([Int, BigInt], BigInt),
            ([BigInt, Int], BigInt),
            ([Int, numeric()], numeric()),
            ([numeric(), Double], Double),
            ([Char(4), Text], Char(4)),
            ([Text, Char(4)], Text),
            ([Varchar(3), Text], Varchar(3)),
            ([Text, Varchar(3)], Text),
            ([Char(4), Varchar(3)], Char(4)),
            ([Varchar(3), Char(4)], Varchar(3)),
            ([Varchar(3), Varchar(5)], Varchar(5)),
            ([Date, Timestamp], Timestamp),
        ];
        for (types, want) in cases {
            assert_eq!(select_common_type(types), Ok(Some(want)), "{types:?}");
        }
        assert_eq!(select_common_type([]), Ok(None));
        assert_eq!(select_common_type([Int, Text, Bool]), Err((Int, Text)));
    }

    #[test]
    fn only_values_that_change_are_converted() {
        assert!(conversion(Char(4), Text).is_some());
        assert!(conversion(Char(4), Char(6)).is_none());
        assert!(conversion(Varchar(3), Text).is_none());
        assert_eq!(conversion(Int, BigInt), Some(Op::Cast(BigInt)));
        assert!(conversion(BigInt, Int).is_none());
    }
}
