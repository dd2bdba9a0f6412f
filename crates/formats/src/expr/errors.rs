//! The SQL errors evaluation raises, with PostgreSQL's SQLSTATEs: the
//! evaluator, the arithmetic and the built-in functions report a type
//! mismatch, an overflow or a division by zero the same way, so a client
//! sees one error whichever side ran the expression.

use crate::error::{Error, SqlState};

/// A type error: no operator or function for these argument types.
pub(super) fn type_error(msg: String) -> Error {
    Error::sql(SqlState::UNDEFINED_FUNCTION, msg)
}

/// An integer result out of its type's range.
pub(super) fn int_overflow(ty: &str) -> Error {
    Error::sql(
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{ty} out of range"),
    )
}

/// Division (or modulo) by zero.
pub(super) fn div_zero() -> Error {
    Error::sql(SqlState::DIVISION_BY_ZERO, "division by zero")
}
