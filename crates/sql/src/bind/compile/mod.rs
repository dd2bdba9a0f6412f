//! Expressions → bytecode (`ndpdb_formats::expr::Program`).
//!
//! The compiler resolves names against a [`Scope`], infers a static type
//! for every sub-expression, and coerces untyped literals the way
//! PostgreSQL does (`date_col > '2024-01-01'` compares dates, the literal
//! is converted once at compile time). Parameters (`$1`) get their type
//! from the context they appear in; the session casts parameter values to
//! those types before execution.
//!
//! In *aggregate mode* the program runs over the aggregated row
//! `[group keys…, aggregate results…]`: a sub-expression equal to a GROUP
//! BY expression becomes a column of that row, an aggregate call becomes
//! the column of its (deduplicated) accumulator, and any other column
//! reference is a grouping error (42803).

use ndpdb_formats::agg::{AggFunc, AggSpec};
use ndpdb_formats::expr::{Func, Op, Program};
use ndpdb_formats::{DataType, Decimal, SqlState, Value};
use sqlparser::ast::{
    BinaryOperator, CastKind, DataType as AstType, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, UnaryOperator, Value as AstValue,
};

mod arrays;
mod catalog_exprs;
mod common_type;
mod expressions;
mod functions;
mod json;
mod operators;
mod quantified;
mod slots;
use crate::bind::scope::{ident_name, MergedColumn, Scope};
use crate::bind::sequence_call::{SequenceCall, SequenceFunc};
pub(crate) use crate::bind::types::convert_type;
pub use crate::bind::types::Ty;
use crate::{Error, Result};

/// The qualifier of a session value folded into a statement
/// (`session::session_values`): `"\0session".name('value')`. No
/// identifier the user writes can start with a NUL.
pub const SESSION_VALUE: &str = "\0session";

/// IN lists of this many constants or more are searched, not scanned.
const SORTED_IN_FROM: usize = 16;

/// One aggregate of a query: its portable spec and the SQL it came from.
#[derive(Clone, Debug)]
pub struct AggCall {
    pub spec: AggSpec,
    ast: Expr,
}

/// The grouping context of an aggregate query.
pub struct AggContext {
    pub input: Scope,
    pub group_exprs: Vec<Expr>,
    pub group_programs: Vec<Program>,
    pub group_types: Vec<DataType>,
    pub aggregates: Vec<AggCall>,
}

impl AggContext {
    pub fn new(
        input: Scope,
        group_exprs: Vec<Expr>,
        params: &mut Vec<Option<DataType>>,
    ) -> Result<AggContext> {
        let mut group_programs = Vec::new();
        let mut group_types = Vec::new();
        for e in &group_exprs {
            let (p, ty) = compile(e, &input, params)?;
            group_programs.push(p);
            group_types.push(ty.output_type());
        }
        Ok(AggContext {
            input,
            group_exprs,
            group_programs,
            group_types,
            aggregates: Vec::new(),
        })
    }
}

pub struct Compiler<'a> {
    scope: &'a Scope,
    pub program: Program,
    params: &'a mut Vec<Option<DataType>>,
    agg: Option<&'a mut AggContext>,
}

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )
}

fn type_name(t: Option<DataType>) -> String {
    t.map_or("unknown".into(), |t| t.sql_name())
}

/// Compiles `e` over `scope`.
pub fn compile(
    e: &Expr,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<(Program, Ty)> {
    let mut c = Compiler {
        scope,
        program: Program::default(),
        params,
        agg: None,
    };
    let ty = c.expr(e)?;
    Ok((c.program, ty))
}

/// Compiles an array operand (a set-returning function's): its program,
/// which gives an array value (a catalog array's text form converted),
/// and its element type (`None`: `e` is no array; then its type).
pub fn compile_array(
    e: &Expr,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<(
    Program,
    std::result::Result<ndpdb_formats::array::ElemType, Ty>,
)> {
    let mut c = Compiler {
        scope,
        program: Program::default(),
        params,
        agg: None,
    };
    let ty = c.expr(e)?;
    let elem = c.real_array(ty).ok_or(ty);
    Ok((c.program, elem))
}

/// Compiles `e` over the aggregated row of `agg`.
pub fn compile_aggregated(
    e: &Expr,
    agg: &mut AggContext,
    params: &mut Vec<Option<DataType>>,
) -> Result<(Program, Ty)> {
    let empty = Scope::default();
    let mut c = Compiler {
        scope: &empty,
        program: Program::default(),
        params,
        agg: Some(agg),
    };
    let ty = c.expr(e)?;
    Ok((c.program, ty))
}

/// Compiles a predicate and checks it is boolean.
pub fn compile_predicate(
    e: &Expr,
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Program> {
    let (p, ty) = compile(e, scope, params)?;
    expect_bool(ty, "WHERE")?;
    Ok(p)
}

pub fn expect_bool(ty: Ty, clause: &str) -> Result<()> {
    match ty {
        Ty::Known(DataType::Bool) | Ty::Null | Ty::Param(_) => Ok(()),
        Ty::Literal(_) => Ok(()),
        Ty::Known(t) => Err(Error::new(
            SqlState::DATATYPE_MISMATCH,
            format!(
                "argument of {clause} must be type boolean, not type {}",
                t.sql_name()
            ),
        )),
    }
}

/// The aggregate functions by name.
pub fn is_aggregate_name(name: &str) -> bool {
    matches!(
        name.strip_prefix("pg_catalog.").unwrap_or(name),
        "count"
            | "sum"
            | "min"
            | "max"
            | "avg"
            | "bool_and"
            | "bool_or"
            | "every"
            | "array_agg"
            | "string_agg"
            | "json_agg"
            | "jsonb_agg"
            | "json_object_agg"
            | "jsonb_object_agg"
    )
}

/// Whether `e` contains an aggregate call of this query level (not one
/// inside a subquery, nor a window function).
pub fn contains_aggregate(e: &Expr) -> bool {
    use sqlparser::ast::{Query, Visit, Visitor};
    struct Find {
        depth: usize,
        found: bool,
    }
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
            self.depth += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
            self.depth -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            if let Expr::Function(f) = e {
                if self.depth == 0
                    && f.over.is_none()
                    && is_aggregate_name(&f.name.to_string().to_lowercase())
                {
                    self.found = true;
                    return std::ops::ControlFlow::Break(());
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut find = Find {
        depth: 0,
        found: false,
    };
    let _ = e.visit(&mut find);
    find.found
}

/// The result type of a numeric operation on two known types.
pub(crate) fn numeric_result(a: DataType, b: DataType) -> Option<DataType> {
    use DataType::*;
    let rank = |t: DataType| match t {
        Int => Some(0),
        BigInt => Some(1),
        Numeric { .. } => Some(2),
        Double => Some(3),
        _ => None,
    };
    Some(match rank(a)?.max(rank(b)?) {
        0 => Int,
        1 => BigInt,
        2 => Numeric {
            precision: 0,
            scale: 0,
        },
        _ => Double,
    })
}

fn is_char(t: Ty) -> bool {
    matches!(t, Ty::Known(DataType::Char(_)))
}

/// Whether two types can be compared.
pub(crate) fn comparable(a: DataType, b: DataType) -> bool {
    (a.is_numeric() && b.is_numeric())
        || (a.is_textual() && b.is_textual())
        || matches!(
            (a, b),
            (
                DataType::Date | DataType::Timestamp,
                DataType::Date | DataType::Timestamp
            )
        )
        || a == b
}

pub fn parse_number(s: &str) -> Result<Value> {
    if !s.contains(['.', 'e', 'E']) {
        if let Ok(v) = s.parse::<i32>() {
            return Ok(Value::Int(v));
        }
        if let Ok(v) = s.parse::<i64>() {
            return Ok(Value::BigInt(v));
        }
    }
    Ok(Value::Numeric(Decimal::parse(s)?))
}

impl Compiler<'_> {
    fn emit(&mut self, op: Op) -> usize {
        self.program.ops.push(op);
        self.program.ops.len() - 1
    }

    fn constant(&mut self, v: Value) -> u32 {
        self.program.consts.push(v);
        (self.program.consts.len() - 1) as u32
    }

    fn push_const(&mut self, v: Value) -> Ty {
        let ty = match v.data_type() {
            Some(t) => Ty::Known(t),
            None => Ty::Null,
        };
        let i = self.constant(v);
        self.emit(Op::Const(i));
        ty
    }

    /// Gives an untyped literal or parameter the type `target`.
    fn coerce(&mut self, ty: Ty, target: Option<DataType>) -> Result<Ty> {
        let Some(target) = target else { return Ok(ty) };
        match ty {
            Ty::Literal(i) => {
                let v = self.program.consts[i as usize].cast(&target)?;
                self.program.consts[i as usize] = v;
                Ok(Ty::Known(target))
            }
            Ty::Param(i) => {
                let slot = &mut self.params[i as usize];
                if slot.is_none() {
                    *slot = Some(target);
                }
                Ok(Ty::Known(target))
            }
            t => Ok(t),
        }
    }

    /// An IN list of at least [`SORTED_IN_FROM`] constants, just emitted
    /// as one `Const` op each (their constants last in the pool, in
    /// order), becomes one [`Op::InSorted`] over those constants sorted
    /// in place. Returns whether it did.
    fn sorted_in(&mut self, (ops_at, consts_at): (usize, usize), n: usize, negated: bool) -> bool {
        let p = &mut self.program;
        let literal_items = n >= SORTED_IN_FROM
            && p.ops.len() == ops_at + n
            && p.consts.len() == consts_at + n
            && p.ops[ops_at..]
                .iter()
                .enumerate()
                .all(|(k, op)| *op == Op::Const((consts_at + k) as u32));
        if !literal_items {
            return false;
        }
        let mut items = p.consts.split_off(consts_at);
        let Some(has_null) = ndpdb_formats::expr::sort_in_list(&mut items) else {
            p.consts.extend(items);
            return false;
        };
        p.ops.truncate(ops_at);
        let len = items.len() as u32;
        p.consts.extend(items);
        self.emit(Op::InSorted {
            first: consts_at as u32,
            n: len,
            negated,
            has_null,
        });
        true
    }

    /// A `CHAR(n)` value as text: its trailing blanks removed.
    fn text_operand(&mut self, t: Ty) -> Ty {
        if !is_char(t) {
            return t;
        }
        self.emit(Op::Call {
            func: Func::Rtrim,
            nargs: 1,
        });
        Ty::Known(DataType::Text)
    }

    /// A string literal compared with a `CHAR(n)` value loses its
    /// trailing blanks too.
    fn trim_literal(&mut self, t: Ty) {
        if let Ty::Literal(i) = t {
            if let Some(Value::Text(s)) = self.program.consts.get_mut(i as usize) {
                s.truncate(s.trim_end_matches(' ').len());
            }
        }
    }

    fn patch_jump(&mut self, at: usize) {
        let target = self.program.ops.len() as u32;
        match &mut self.program.ops[at] {
            Op::JumpIfFalseKeep(t) | Op::JumpIfTrueKeep(t) | Op::JumpIfNotTrue(t) | Op::Jump(t) => {
                *t = target
            }
            _ => {}
        }
    }

    fn group_index(&self, e: &Expr) -> Option<usize> {
        let agg = self.agg.as_ref()?;
        if let Some(i) = agg
            .group_exprs
            .iter()
            .position(|g| g == e || strip_nested(g) == strip_nested(e))
        {
            return Some(i);
        }
        // The same expression written another way (`substring(x, 1, 1)`
        // and `substring(x from 1 for 1)`, `LOWER(x)` and `lower(x)`)
        // compiles to the same program.
        if !matches!(
            strip_nested(e),
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Value(_)
        ) && !has_subquery(e)
        {
            let mut probe = self.params.clone();
            if let Ok((p, _)) = compile(e, &agg.input, &mut probe) {
                if let Some(i) = agg.group_programs.iter().position(|g| *g == p) {
                    return Some(i);
                }
            }
        }
        // `t.x` and `x` name the same grouped column.
        let column = |e: &Expr| match strip_nested(e) {
            Expr::Identifier(id) => {
                let name = ident_name(id);
                match agg.input.merged_column(&name) {
                    // A USING column of one side is that side's column
                    // (when no cast makes them differ).
                    Ok(Some(m)) if same_types(&agg.input, m) => match m.parts.as_slice() {
                        [Expr::CompoundIdentifier(ids)] => match ids.as_slice() {
                            [t, c] => agg.input.resolve(Some(&t.value), &c.value).ok(),
                            _ => None,
                        },
                        _ => None,
                    },
                    _ => agg.input.resolve(None, &name).ok(),
                }
            }
            Expr::CompoundIdentifier(ids) => match ids.as_slice() {
                [t, c] | [_, t, c] => agg.input.resolve(Some(&ident_name(t)), &ident_name(c)).ok(),
                _ => None,
            },
            _ => None,
        };
        let target = column(e)?;
        agg.group_exprs
            .iter()
            .position(|g| column(g) == Some(target))
    }

    pub fn expr(&mut self, e: &Expr) -> Result<Ty> {
        if self.agg.is_some() {
            if let Some(i) = self.group_index(e) {
                let ty = self
                    .agg
                    .as_ref()
                    .map(|a| a.group_types[i])
                    .unwrap_or(DataType::Text);
                self.emit(Op::Column(i as u32));
                return Ok(Ty::Known(ty));
            }
        }
        match e {
            Expr::Identifier(id) => self.column(None, &ident_name(id)),
            Expr::CompoundIdentifier(ids) => match ids.as_slice() {
                [t, c] => self.column(Some(&ident_name(t)), &ident_name(c)),
                [_, t, c] => self.column(Some(&ident_name(t)), &ident_name(c)),
                _ => Err(unsupported(format!("name {e}"))),
            },
            Expr::Value(v) => self.value(&v.value),
            Expr::TypedString(ts) => {
                let ty = convert_type(&ts.data_type)?;
                let s = match &ts.value.value {
                    AstValue::SingleQuotedString(s) => s.clone(),
                    v => v.to_string(),
                };
                // `char(20) 'x'` is a char(20), not the text it holds.
                self.push_const(Value::Text(s).cast(&ty)?);
                Ok(Ty::Known(ty))
            }
            Expr::Nested(e) => self.expr(e),
            Expr::UnaryOp { op, expr } => match op {
                UnaryOperator::Minus => {
                    if let Expr::Value(v) = expr.as_ref() {
                        if let AstValue::Number(s, _) = &v.value {
                            return Ok(self.push_const(parse_number(&format!("-{s}"))?));
                        }
                    }
                    let ty = self.expr(expr)?;
                    match ty {
                        Ty::Known(t) if !t.is_numeric() => {
                            return Err(Error::new(
                                SqlState::UNDEFINED_FUNCTION,
                                format!("operator does not exist: - {}", t.sql_name()),
                            ))
                        }
                        _ => {}
                    }
                    let ty = self.coerce(ty, Some(DataType::Double))?;
                    self.emit(Op::Neg);
                    Ok(ty)
                }
                UnaryOperator::Plus => self.expr(expr),
                UnaryOperator::Not => {
                    let ty = self.expr(expr)?;
                    self.coerce(ty, Some(DataType::Bool))?;
                    expect_bool(ty, "NOT")?;
                    self.emit(Op::Not);
                    Ok(Ty::Known(DataType::Bool))
                }
                op => Err(unsupported(format!("operator {op}"))),
            },
            Expr::BinaryOp { left, op, right } => self.binary(left, op, right),
            Expr::IsNull(inner) => {
                self.expr(inner)?;
                self.emit(Op::IsNull);
                Ok(Ty::Known(DataType::Bool))
            }
            Expr::IsNotNull(inner) => {
                self.expr(inner)?;
                self.emit(Op::IsNotNull);
                Ok(Ty::Known(DataType::Bool))
            }
            _ => self.expr_rest(e),
        }
    }
}

/// Whether the columns a USING column merges all have one type.
fn same_types(scope: &Scope, m: &MergedColumn) -> bool {
    let mut tys = m
        .hides
        .iter()
        .map(|(t, n)| scope.resolve(Some(t), n).ok().map(|i| scope.columns[i].ty));
    let first = tys.next().flatten();
    first.is_some() && tys.all(|t| t == first)
}

fn strip_nested(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(inner) => strip_nested(inner),
        e => e,
    }
}

impl Compiler<'_> {
    fn column(&mut self, table: Option<&str>, name: &str) -> Result<Ty> {
        // `c` of `JOIN … USING (c)`: the merged column.
        if let Some(m) = self.scope.merged_by(table, name)?.cloned() {
            let scope = self.scope;
            return self.merged_column(&m, scope);
        }
        if self.agg.is_some() {
            let input = &self
                .agg
                .as_ref()
                .map(|a| &a.input)
                .cloned()
                .unwrap_or_default();
            // A USING column not itself grouped: its parts may be
            // (`SELECT c … GROUP BY t1.c`), as PostgreSQL matches them.
            if let Some(m) = input.merged_by(table, name)?.cloned() {
                return self.merged_column(&m, input);
            }
            // Resolve to give the right error for unknown columns first.
            let i = match input.resolve(table, name) {
                Ok(i) => i,
                Err(e) => return self.outer_column(input, table, name, e),
            };
            // Named with its table, as PostgreSQL names it.
            let owner = &input.columns[i].table;
            let shown = match table {
                Some(t) => format!("{t}.{name}"),
                None if !owner.is_empty() => format!("{owner}.{name}"),
                None => name.to_string(),
            };
            return Err(Error::new(
                SqlState::GROUPING_ERROR,
                format!(
                    "column \"{shown}\" must appear in the GROUP BY clause or be used in an aggregate function"
                ),
            ));
        }
        let i = match self.scope.resolve(table, name) {
            Ok(i) => i,
            Err(e) => return self.outer_column(self.scope, table, name, e),
        };
        let ty = self.scope.columns[i].ty;
        self.emit(Op::Column(i as u32));
        Ok(Ty::Known(ty))
    }

    /// A USING column: its one part, or COALESCE of its parts (FULL
    /// JOIN), at the type the merged columns share, as PostgreSQL types
    /// it (`int JOIN bigint USING (c)`: `c` is a bigint); `scope`: the
    /// rows with the columns it merges (before any grouping).
    fn merged_column(&mut self, m: &MergedColumn, scope: &Scope) -> Result<Ty> {
        let mut common: Option<DataType> = None;
        for (t, n) in &m.hides {
            let ty = scope.columns[scope.resolve(Some(t), n)?].ty;
            common = Some(match common {
                Some(c) => arrays::common_type(c, ty).unwrap_or(c),
                None => ty,
            });
        }
        for part in &m.parts {
            let ty = self.expr(part)?;
            if let (Ty::Known(t), Some(c)) = (ty, common) {
                if t != c {
                    self.emit(Op::Cast(c));
                }
            }
        }
        if m.parts.len() > 1 {
            self.emit(Op::Call {
                func: Func::Coalesce,
                nargs: m.parts.len() as u8,
            });
        }
        Ok(Ty::Known(common.unwrap_or(DataType::Text)))
    }

    fn value(&mut self, v: &AstValue) -> Result<Ty> {
        match v {
            AstValue::Number(s, _) => Ok(self.push_const(parse_number(s)?)),
            AstValue::SingleQuotedString(s) | AstValue::EscapedStringLiteral(s) => {
                let i = self.constant(Value::Text(s.clone()));
                self.emit(Op::Const(i));
                Ok(Ty::Literal(i))
            }
            AstValue::Boolean(b) => Ok(self.push_const(Value::Bool(*b))),
            AstValue::Null => Ok(self.push_const(Value::Null)),
            AstValue::Placeholder(p) => {
                let n: usize = p
                    .trim_start_matches('$')
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1 && *n <= 65535)
                    .ok_or_else(|| {
                        Error::new(SqlState::SYNTAX_ERROR, format!("invalid parameter {p}"))
                    })?;
                if self.params.len() < n {
                    self.params.resize(n, None);
                }
                self.emit(Op::Param((n - 1) as u32));
                Ok(match self.params[n - 1] {
                    Some(t) => Ty::Known(t),
                    None => Ty::Param((n - 1) as u32),
                })
            }
            v => Err(unsupported(format!("literal {v}"))),
        }
    }
}

/// Converts a sqlparser type name; re-exported for CAST.
pub fn sql_type(t: &AstType) -> Result<DataType> {
    convert_type(t)
}

/// Whether `e` has a subquery anywhere in it.
pub(crate) fn has_subquery(e: &Expr) -> bool {
    use sqlparser::ast::{Visit, Visitor};
    struct Find(bool);
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            if matches!(
                e,
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
            ) {
                self.0 = true;
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut f = Find(false);
    let _ = e.visit(&mut f);
    f.0
}

/// 42883 naming the signature as PostgreSQL prints it.
/// `operator does not exist: l op r` (42883), with PostgreSQL's hint.
pub(super) fn no_operator(l: Ty, op: &BinaryOperator, r: Ty) -> Error {
    Error::new(
        SqlState::UNDEFINED_FUNCTION,
        format!(
            "operator does not exist: {} {op} {}",
            type_name(l.data_type()),
            type_name(r.data_type())
        ),
    )
    .with_hint(
        "No operator matches the given name and argument types. You might need to add explicit type casts.",
    )
}

fn no_such_function(name: &str, tys: &[Ty]) -> Error {
    let signature: Vec<String> = tys
        .iter()
        .map(|t| {
            t.data_type()
                .map_or("unknown".to_string(), |d| d.sql_name())
        })
        .collect();
    Error::new(
        SqlState::UNDEFINED_FUNCTION,
        format!("function {name}({}) does not exist", signature.join(", ")),
    )
}
