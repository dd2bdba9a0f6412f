//! PostgreSQL's dialect of sqlparser with a meter: every expression the
//! parser begins and every operator it looks up passes through
//! [`Metered::parse_prefix`] / [`Metered::get_next_precedence`], which
//! count the work and look at the statement's interrupt.
//!
//! ```text
//!  Parser ── parse_prefix / get_next_precedence ──► Metered
//!                                  every 256 calls: Interrupt::check
//!                                  calls > 16 per token + 1,024: stop
//!                    stop ─► RecursionLimitExceeded (unwinds through
//!                            every maybe_parse) ─► the reason recorded
//! ```
//!
//! A recursive-descent parser that backtracks can do work super-linear in
//! the statement's size (sqlparser re-parses a CASE arm as an identifier
//! when the arm fails, so deep nesting near its recursion limit costs the
//! square of the depth); the meter bounds every statement to work linear in
//! its tokens whatever path the parser takes. The wrapper keeps
//! PostgreSqlDialect's identity (`dialect()`), so the parser's
//! `dialect_of!(PostgreSqlDialect)` checks hold, and forwards every method
//! PostgreSqlDialect overrides; a test parses the same statements with
//! both and compares the trees.

use std::cell::{Cell, RefCell};

use sqlparser::ast::Expr;
use sqlparser::dialect::{Dialect, PostgreSqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};

use ndpdb_formats::SqlState;
use ndpdb_host::Interrupt;

use crate::Error;

/// Calls the parser may make per token before the statement counts as
/// one no budget of linear work can parse.
pub const CALLS_PER_TOKEN: u64 = 16;
/// Calls every statement may make whatever its size.
const BASE_CALLS: u64 = 1_024;
/// How often (in calls) the interrupt is looked at (a power of two).
const CHECK_EVERY: u64 = 256;

/// The dialect with its meter.
pub struct Metered {
    inner: PostgreSqlDialect,
    budget: u64,
    calls: Cell<u64>,
    interrupt: Option<Interrupt>,
    /// Why parsing was stopped, if it was.
    stopped: RefCell<Option<Error>>,
}

impl std::fmt::Debug for Metered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metered")
            .field("budget", &self.budget)
            .field("calls", &self.calls.get())
            .finish()
    }
}

impl Metered {
    /// A meter for a statement of `tokens` tokens.
    pub fn new(tokens: usize, interrupt: Option<&Interrupt>) -> Metered {
        Metered {
            inner: PostgreSqlDialect {},
            budget: BASE_CALLS.saturating_add((tokens as u64).saturating_mul(CALLS_PER_TOKEN)),
            calls: Cell::new(0),
            interrupt: interrupt.cloned(),
            stopped: RefCell::new(None),
        }
    }

    /// Why parsing was stopped (the error to report instead of the
    /// parser's own), if it was.
    pub fn stopped(&self) -> Option<Error> {
        self.stopped.borrow().clone()
    }

    /// Counts one call; `Some(Err)` stops the parse.
    fn meter<T>(&self) -> Option<Result<T, ParserError>> {
        if self.stopped.borrow().is_some() {
            return Some(Err(ParserError::RecursionLimitExceeded));
        }
        let calls = self.calls.get() + 1;
        self.calls.set(calls);
        let stop = if calls > self.budget {
            Some(too_complex())
        } else if calls & (CHECK_EVERY - 1) == 0 {
            self.interrupt.as_ref().and_then(|i| i.check().err())
        } else {
            None
        };
        let e = stop?;
        *self.stopped.borrow_mut() = Some(e);
        Some(Err(ParserError::RecursionLimitExceeded))
    }
}

/// 54001 for a statement whose parse outgrew its linear budget.
fn too_complex() -> Error {
    Error::new(
        SqlState::STATEMENT_TOO_COMPLEX,
        "statement is too complex to parse",
    )
    .with_detail(format!(
        "The parser gave up after {CALLS_PER_TOKEN} steps per token: the statement nests \
         constructs the parser has to try more than one way."
    ))
}

macro_rules! forward_bool {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool {
            self.inner.$name()
        })*
    };
}

impl Dialect for Metered {
    fn dialect(&self) -> std::any::TypeId {
        self.inner.dialect()
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        self.meter().or_else(|| self.inner.parse_prefix(parser))
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        self.meter()
            .or_else(|| self.inner.get_next_precedence(parser))
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.inner.identifier_quote_style(identifier)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.inner.is_delimited_identifier_start(ch)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.inner.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.inner.is_identifier_part(ch)
    }

    fn is_reserved_for_identifier(&self, kw: Keyword) -> bool {
        self.inner.is_reserved_for_identifier(kw)
    }

    fn is_table_alias(&self, kw: &Keyword, parser: &mut Parser) -> bool {
        self.inner.is_table_alias(kw, parser)
    }

    fn is_custom_operator_part(&self, ch: char) -> bool {
        self.inner.is_custom_operator_part(ch)
    }

    fn prec_value(&self, prec: Precedence) -> u8 {
        self.inner.prec_value(prec)
    }

    forward_bool!(
        supports_unicode_string_literal,
        supports_filter_during_aggregation,
        supports_group_by_expr,
        supports_alter_user_as_alter_role,
        allow_extract_custom,
        allow_extract_single_quotes,
        supports_create_index_with_clause,
        supports_explain_with_utility_options,
        supports_listen_notify,
        supports_exclude_constraint,
        supports_factorial_operator,
        supports_bitwise_shift_operators,
        supports_comment_on,
        supports_load_extension,
        supports_named_fn_args_with_colon_operator,
        supports_named_fn_args_with_expr_name,
        supports_empty_projections,
        supports_nested_comments,
        supports_string_escape_constant,
        supports_numeric_literal_underscores,
        supports_array_typedef_with_brackets,
        supports_geometric_types,
        supports_order_by_using_operator,
        supports_set_names,
        supports_alter_column_type_using,
        supports_left_associative_joins_without_parens,
        supports_notnull_operator,
        supports_interval_options,
        supports_insert_table_alias,
        supports_create_table_like_parenthesized,
        supports_select_wildcard_with_alias,
        supports_comma_separated_trim,
        supports_xml_expressions,
        supports_aliased_function_args,
        supports_comment_optimizer_hint,
    );
}
