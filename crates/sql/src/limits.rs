//! Statement limits: what keeps a statement from exhausting the stack or
//! the memory of the process that plans it.
//!
//! ```text
//!  SQL text ─ > 32 MiB? ─► 54000
//!     │ parse/: tokenize in pieces, bison's nesting bound (42601),
//!     │ parse on a stack sized by the text (parser nesting ≤ 10,000:
//!     │ parentheses, subqueries, prefix operators; else 54001), metered
//!     ▼
//!  AND / OR chains of more than 64 operands rebalanced (depth log n)
//!     ▼
//!  expression nesting > 4,092 (parentheses not counted) ─► 54001,
//!     the tree taken apart bottom-up so that dropping it never recurses
//!     ▼
//!  planning, compiling, cloning: on a stack of at least 32 MiB
//!     ▼
//!  a join holding more than a quarter of the machine's memory in values
//!     (at least 10⁸) ─► 53200
//! ```
//!
//! PostgreSQL answers "stack depth limit exceeded" (54001) when a
//! statement nests deeper than its 2 MB stack allows: `SELECT 1 + 1 + …`
//! with 4,091 additions works there and 4,092 fail, and ndpdb draws the
//! line at the same place. sqlparser builds `a + b + c` as a left-deep
//! tree without recursing, so its own recursion limit does not see such
//! chains: the depth is measured on the tree after parsing (sqlparser's
//! visitor grows its stack as needed). PostgreSQL flattens AND and OR, so
//! a WHERE clause with 100,000 ORs is not deep there; here such chains
//! become balanced trees before the depth is measured.
//!
//! Rust drops and clones trees recursively (64 B and 1.2 KB of stack per
//! level, measured), so every pass over a statement — parsing, planning,
//! running and dropping it — runs with [`STATEMENT_STACK`] of stack
//! guaranteed ([`with_statement_stack`]); parsing gets a stack sized by the
//! levels the text can hold ([`PARSE_STACK_PER_LEVEL`]), and a tree too
//! deep to keep is dismantled bottom-up before it is dropped. Transaction
//! control has no shape to recurse over and runs in place on any thread
//! with [`TRANSACTION_CONTROL_STACK`] left ([`with_stack_for`]).

use std::ops::ControlFlow;

use ndpdb_formats::SqlState;
use sqlparser::ast::{
    BinaryOperator, Expr, Query, Statement, Value as AstValue, Visit, VisitMut, Visitor, VisitorMut,
};
use sqlparser::parser::ParserError;

use crate::{Error, Result};

/// Longest SQL text accepted (PostgreSQL's limit is its 1 GB message
/// size; sqlparser needs about 80 bytes of memory per byte of text).
pub const MAX_STATEMENT_BYTES: usize = 32 << 20;
/// Deepest recursion of the parser (parentheses, subqueries, unary
/// operators, function arguments).
pub const MAX_PARSER_DEPTH: usize = 10_000;
/// Deepest nesting of expressions and subqueries (parentheses and
/// balanced AND/OR chains count as they are, not as written).
pub const MAX_EXPRESSION_DEPTH: usize = 4_092;

/// PostgreSQL's limit on a target list (`MaxTupleAttributeNumber`): a
/// row description counts its columns in 16 bits. A SELECT list longer
/// than this is refused (54011) by the prescan, before the parser
/// allocates a tree per entry, and after `*` expands by the planner.
pub const MAX_TARGET_ENTRIES: usize = 1_664;

/// 54011 for a target list of more than [`MAX_TARGET_ENTRIES`] entries.
pub fn too_many_target_entries() -> Error {
    Error::new(
        SqlState::TOO_MANY_COLUMNS,
        format!("target lists can have at most {MAX_TARGET_ENTRIES} entries"),
    )
}
/// AND / OR chains longer than this are rebalanced.
const REBALANCE_OVER: usize = 64;
/// Stack every pass over a statement may use: enough for the deepest
/// statement the limits admit (cloning costs 1.2 KB per level).
pub const STATEMENT_STACK: usize = 32 << 20;
/// Stack per level of parser recursion: the parser's own frames plus, on
/// a syntax error deep inside, the drop of the partial tree below it
/// (3.3 KB per level of nested function calls, measured). A level takes at
/// least one byte of text, so a statement of n bytes needs at most
/// min(n, MAX_PARSER_DEPTH) levels.
const PARSE_STACK_PER_LEVEL: usize = 8 << 10;

/// 54001, PostgreSQL's answer to a statement nested too deeply.
pub fn stack_depth_exceeded() -> Error {
    Error::new(
        SqlState::STATEMENT_TOO_COMPLEX,
        "stack depth limit exceeded",
    )
    .with_detail(format!(
        "ndpdb plans expressions nested at most {MAX_EXPRESSION_DEPTH} levels deep \
         (a subquery counts as {SUBQUERY_LEVELS}) and parses at most {MAX_PARSER_DEPTH} \
         levels of parentheses and subqueries"
    ))
}

/// Runs `f` with at least [`STATEMENT_STACK`] bytes of stack (on the
/// current thread's stack if that much is left, else on a fresh one of
/// twice that, so that a nested call — `execute` running a statement —
/// finds enough left and does not map another).
pub fn with_statement_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STATEMENT_STACK, 2 * STATEMENT_STACK, f)
}

/// Stack guaranteed to a statement whose shape nothing recurses over:
/// transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) holds
/// no expression, query or type, and committing is the same work however
/// the transaction's statements were nested.
pub const TRANSACTION_CONTROL_STACK: usize = 1 << 20;

/// Runs a pass over `stmt` with the stack it may need:
/// [`TRANSACTION_CONTROL_STACK`] for transaction control, else as
/// [`with_statement_stack`]. A client thread of 2 MiB then runs a
/// transaction's BEGIN and COMMIT in place, where mapping a fresh stack for
/// each (and unmapping it: a TLB shootdown interrupting every CPU that runs
/// this process) cost embedded TPC-C about a sixth of its throughput.
pub fn with_stack_for<R>(stmt: &Statement, f: impl FnOnce() -> R) -> R {
    if is_transaction_control(stmt) {
        stacker::maybe_grow(TRANSACTION_CONTROL_STACK, 2 * STATEMENT_STACK, f)
    } else {
        with_statement_stack(f)
    }
}

fn is_transaction_control(stmt: &Statement) -> bool {
    matches!(
        stmt,
        Statement::StartTransaction { .. }
            | Statement::Commit { .. }
            | Statement::Rollback { .. }
            | Statement::Savepoint { .. }
            | Statement::ReleaseSavepoint { .. }
    )
}

/// A parser error as PostgreSQL reports it: 54001 for nesting beyond
/// the parser's recursion limit, else 42601.
pub(crate) fn parse_error(e: ParserError) -> Error {
    if matches!(e, ParserError::RecursionLimitExceeded) {
        return stack_depth_exceeded();
    }
    let msg = e.to_string();
    let msg = msg
        .strip_prefix("sql parser error: ")
        .unwrap_or(&msg)
        .to_string();
    Error::new(SqlState::SYNTAX_ERROR, format!("syntax error: {msg}"))
}

/// The stack a parse of `sql` runs on: the parser's frames for as many
/// levels as the text can hold.
pub(crate) fn parse_stack(sql: &str) -> usize {
    let levels = sql.len().min(MAX_PARSER_DEPTH);
    STATEMENT_STACK.max(levels * PARSE_STACK_PER_LEVEL)
}

/// Parsed statements within the limits above: long AND / OR chains
/// rebalanced, then 54001 if they still nest too deeply (the tree taken
/// apart bottom-up before it is dropped).
pub(crate) fn bound(mut stmts: Vec<Statement>) -> Result<Vec<Statement>> {
    let _ = VisitMut::visit(&mut stmts, &mut Rebalance);
    let mut depth = Depth::default();
    if stmts.visit(&mut depth).is_break() {
        dismantle(stmts);
        return Err(stack_depth_exceeded());
    }
    Ok(stmts)
}

/// Levels a subquery counts for: copying and planning one costs about
/// 16 KB of stack against 1.2 KB for an expression (measured), so nested
/// subqueries stop near 450 levels, within [`STATEMENT_STACK`].
const SUBQUERY_LEVELS: usize = 8;

/// Measures nesting: expressions (not parentheses) and queries.
#[derive(Default)]
struct Depth {
    current: usize,
    /// The levels each open node counted for.
    counted: Vec<usize>,
}

impl Depth {
    fn enter(&mut self, levels: usize) -> ControlFlow<()> {
        self.counted.push(levels);
        self.current += levels;
        if self.current > MAX_EXPRESSION_DEPTH {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    fn leave(&mut self) -> ControlFlow<()> {
        self.current -= self.counted.pop().unwrap_or(0);
        ControlFlow::Continue(())
    }
}

impl Visitor for Depth {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        self.enter(usize::from(!matches!(e, Expr::Nested(_))))
    }

    fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
        self.leave()
    }

    /// A subquery counts; the statement's own query does not.
    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        let nested = !self.counted.is_empty();
        self.enter(if nested { SUBQUERY_LEVELS } else { 0 })
    }

    fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.leave()
    }
}

/// Turns long left-deep AND / OR chains into balanced trees (the same
/// operands in the same order: SQL's AND and OR are associative).
struct Rebalance;

fn chain_op(e: &Expr) -> Option<BinaryOperator> {
    match e {
        Expr::BinaryOp {
            op: op @ (BinaryOperator::And | BinaryOperator::Or),
            ..
        } => Some(op.clone()),
        _ => None,
    }
}

/// The operands of the left-deep chain of `op` rooted at `e`, in order.
fn chain_operands(e: Expr, op: &BinaryOperator) -> Vec<Expr> {
    let mut operands = Vec::new();
    let mut cur = e;
    loop {
        match cur {
            Expr::BinaryOp { left, op: o, right } if &o == op => {
                operands.push(*right);
                cur = *left;
            }
            other => {
                operands.push(other);
                break;
            }
        }
    }
    operands.reverse();
    operands
}

fn balanced(mut operands: Vec<Expr>, op: &BinaryOperator) -> Expr {
    if operands.len() == 1 {
        return operands.pop().unwrap_or(Expr::Value(AstValue::Null.into()));
    }
    let right = operands.split_off(operands.len() / 2);
    Expr::BinaryOp {
        left: Box::new(balanced(operands, op)),
        op: op.clone(),
        right: Box::new(balanced(right, op)),
    }
}

fn chain_len(e: &Expr, op: &BinaryOperator, limit: usize) -> usize {
    let mut n = 1;
    let mut cur = e;
    while let Expr::BinaryOp { left, op: o, .. } = cur {
        if o != op || n > limit {
            break;
        }
        n += 1;
        cur = left;
    }
    n
}

impl VisitorMut for Rebalance {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Some(op) = chain_op(e) {
            if chain_len(e, &op, REBALANCE_OVER) > REBALANCE_OVER {
                let chain = std::mem::replace(e, Expr::Value(AstValue::Null.into()));
                *e = balanced(chain_operands(chain, &op), &op);
            }
        }
        ControlFlow::Continue(())
    }
}

/// Takes a tree apart bottom-up (each expression replaced by NULL once
/// its children are), so that dropping the pieces never recurses deeply.
pub(crate) fn dismantle(mut stmts: Vec<Statement>) {
    struct Dismantle(Vec<Expr>);
    impl VisitorMut for Dismantle {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            self.0
                .push(std::mem::replace(e, Expr::Value(AstValue::Null.into())));
            ControlFlow::Continue(())
        }
    }
    let mut pieces = Dismantle(Vec::new());
    let _ = VisitMut::visit(&mut stmts, &mut pieces);
    drop(pieces);
    drop(stmts);
}

/// The fewest values (rows × columns) a join may always hold.
pub const MIN_JOIN_VALUES: usize = 100_000_000;

/// The most values (rows × columns) one join may hold in memory: joins
/// are not spilled to disk, so a larger result (a cross product no
/// equi-term avoids) fails with 53200 instead of exhausting the server's
/// memory. A quarter of the machine's memory in values, at least
/// [`MIN_JOIN_VALUES`] (CH-benCHmark's Q10 and Q18 at 10 warehouses
/// join 3 M rows of 39 columns).
pub fn max_join_values() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        let quarter = physical_memory().map_or(0, |bytes| bytes / 4);
        (quarter / std::mem::size_of::<ndpdb_formats::Value>()).max(MIN_JOIN_VALUES)
    })
}

/// The machine's memory in bytes, where the OS tells.
fn physical_memory() -> Option<usize> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf reads a system value and has no preconditions.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && page > 0 {
            return (pages as usize).checked_mul(page as usize);
        }
    }
    None
}

/// 53200 for a join whose result outgrew [`max_join_values`].
pub fn too_large(rows: usize, width: usize) -> Error {
    Error::new(
        SqlState::OUT_OF_MEMORY,
        "out of memory",
    )
    .with_detail(format!(
        "A join produced more than {rows} rows of {width} columns, more than ndpdb holds in memory ({} values).", max_join_values()
    ))
    .with_hint("A FROM item that no equality term joins to the others is joined as a cross product (outer joins run in FROM order).")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn run_on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    /// Transaction control runs in place on a client's thread of 2 MiB;
    /// anything with an expression gets the statement stack.
    #[test]
    fn transaction_control_runs_on_the_callers_stack() {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let left = |sql: &str| {
                    let stmt = parse(sql).unwrap().remove(0);
                    with_stack_for(&stmt, || stacker::remaining_stack().unwrap())
                };
                for sql in [
                    "BEGIN",
                    "START TRANSACTION ISOLATION LEVEL SERIALIZABLE",
                    "COMMIT",
                    "ROLLBACK",
                    "SAVEPOINT s",
                    "ROLLBACK TO SAVEPOINT s",
                    "RELEASE SAVEPOINT s",
                ] {
                    let n = left(sql);
                    assert!(
                        (TRANSACTION_CONTROL_STACK..2 << 20).contains(&n),
                        "{sql}: {n} bytes left"
                    );
                }
                for sql in ["SELECT 1", "SET x = 1", "INSERT INTO t VALUES (1)"] {
                    assert!(left(sql) >= STATEMENT_STACK, "{sql}");
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn addition_chains_stop_where_postgres_stops() {
        let ok = format!("SELECT 1{}", " + 1".repeat(4_091));
        assert!(run_on_small_stack(move || parse(&ok).is_ok()));
        let deep = format!("SELECT 1{}", " + 1".repeat(4_092));
        let e = run_on_small_stack(move || parse(&deep).unwrap_err());
        assert_eq!(e.code, SqlState::STATEMENT_TOO_COMPLEX);
        assert_eq!(e.message, "stack depth limit exceeded");
    }

    #[test]
    fn very_deep_and_broken_statements_fail_without_crashing() {
        // 300,000 additions (1.2 MB), then the same with a syntax error
        // at the end: both are refused before parsing (PostgreSQL, which
        // parses first, names the syntax error of the second).
        let deep = format!("SELECT 1{}", " + 1".repeat(300_000));
        let e = run_on_small_stack(move || parse(&deep).unwrap_err());
        assert_eq!(e.code, SqlState::STATEMENT_TOO_COMPLEX);
        let broken = format!("SELECT 1{} +", " + 1".repeat(300_000));
        let e = run_on_small_stack(move || parse(&broken).unwrap_err());
        assert_eq!(e.code, SqlState::STATEMENT_TOO_COMPLEX);
        // Just under the chain bound, broken at the end: the parser builds
        // the chain and drops it on the error.
        let broken = format!("SELECT 1{} +", " + 1".repeat(4_000));
        let e = run_on_small_stack(move || parse(&broken).unwrap_err());
        assert_eq!(e.code, SqlState::SYNTAX_ERROR);
        // Deeper than PostgreSQL's parser stack: its 42601.
        let parens = format!("SELECT {}1{}", "(".repeat(20_000), ")".repeat(20_000));
        let e = run_on_small_stack(move || parse(&parens).unwrap_err());
        assert_eq!(e.code, SqlState::SYNTAX_ERROR);
        assert_eq!(e.message, "memory exhausted at or near \"(\"");
    }

    #[test]
    fn unclosed_calls_nested_near_the_parser_limit_fail_without_crashing() {
        // 9,990 nested calls with half of them closed: the parser builds
        // the inner calls, fails at the end and drops them deep inside
        // its own recursion.
        for open in ["abs(", "(", "coalesce(1, ", "upper("] {
            let sql = format!("SELECT {}1{}", open.repeat(9_990), ")".repeat(4_995));
            let e = run_on_small_stack(move || parse(&sql).unwrap_err());
            assert_eq!(e.code, SqlState::SYNTAX_ERROR, "{open}: {}", e.message);
        }
        // Parsed, planned and dropped on a 1 MiB thread: 54001 at depth.
        let sql = format!("SELECT {}1{}", "abs(".repeat(5_000), ")".repeat(5_000));
        let e = run_on_small_stack(move || parse(&sql).unwrap_err());
        assert_eq!(e.code, SqlState::STATEMENT_TOO_COMPLEX);
    }

    #[test]
    fn nested_subqueries_stop_before_the_stack_does() {
        let sql = |n: usize| format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n));
        let (ok, deep) = (sql(400), sql(2_045));
        assert!(run_on_small_stack(move || parse(&ok).is_ok()));
        let e = run_on_small_stack(move || parse(&deep).unwrap_err());
        assert_eq!(e.code, SqlState::STATEMENT_TOO_COMPLEX);
    }

    #[test]
    fn parentheses_and_or_chains_do_not_count_as_written() {
        let parens = format!("SELECT {}1{}", "(".repeat(5_000), ")".repeat(5_000));
        assert!(run_on_small_stack(move || parse(&parens).is_ok()));
        let ors = (0..100_000)
            .map(|i| format!("id = {i}"))
            .collect::<Vec<_>>()
            .join(" OR ");
        let sql = format!("SELECT * FROM t WHERE {ors}");
        let stmts = run_on_small_stack(move || parse(&sql).unwrap());
        // The same operands in the same order.
        let text = stmts[0].to_string();
        assert!(text.contains("id = 0 OR id = 1"), "{}", &text[..200]);
        assert!(text.contains("id = 99998 OR id = 99999"));
    }

    #[test]
    fn statements_over_the_size_limit_are_refused() {
        let sql = format!("SELECT '{}'", "x".repeat(MAX_STATEMENT_BYTES));
        assert_eq!(
            parse(&sql).unwrap_err().code,
            SqlState::PROGRAM_LIMIT_EXCEEDED
        );
    }
}
