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

mod catalog_exprs;
use crate::bind::scope::{ident_name, Scope};
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

/// Whether `e` contains an aggregate call.
pub fn contains_aggregate(e: &Expr) -> bool {
    match e {
        Expr::Function(f) => {
            let name = f.name.to_string().to_lowercase();
            if matches!(name.as_str(), "count" | "sum" | "min" | "max" | "avg") {
                return true;
            }
            match &f.args {
                FunctionArguments::List(l) => l.args.iter().any(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => contains_aggregate(e),
                    _ => false,
                }),
                _ => false,
            }
        }
        Expr::BinaryOp { left, right, .. } => contains_aggregate(left) || contains_aggregate(right),
        Expr::UnaryOp { expr, .. }
        | Expr::Nested(expr)
        | Expr::Cast { expr, .. }
        | Expr::IsNull(expr)
        | Expr::IsNotNull(expr) => contains_aggregate(expr),
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(contains_aggregate)
                || conditions
                    .iter()
                    .any(|w| contains_aggregate(&w.condition) || contains_aggregate(&w.result))
                || else_result.as_deref().is_some_and(contains_aggregate)
        }
        _ => false,
    }
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
            Expr::Identifier(id) => agg.input.resolve(None, &ident_name(id)).ok(),
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
                Ok(self.push_const(Value::Text(s).cast(&ty)?))
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

fn strip_nested(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(inner) => strip_nested(inner),
        e => e,
    }
}

impl Compiler<'_> {
    fn column(&mut self, table: Option<&str>, name: &str) -> Result<Ty> {
        if self.agg.is_some() {
            let input = &self
                .agg
                .as_ref()
                .map(|a| &a.input)
                .cloned()
                .unwrap_or_default();
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

    /// A name `scope` lacks may be an enclosing query's column (a
    /// correlated reference: a parameter); else `not_found` stands.
    fn outer_column(
        &mut self,
        scope: &Scope,
        table: Option<&str>,
        name: &str,
        not_found: Error,
    ) -> Result<Ty> {
        if !matches!(
            not_found.code,
            SqlState::UNDEFINED_COLUMN | SqlState::UNDEFINED_TABLE
        ) {
            return Err(not_found);
        }
        let Some(ctx) = &scope.ctx else {
            return Err(not_found);
        };
        match ctx.outer_ref(table, name)? {
            Some((slot, ty)) => {
                self.emit(Op::Param(slot));
                Ok(Ty::Known(ty))
            }
            None => Err(not_found),
        }
    }

    /// `nextval('s')`, `currval('s')`, `setval('s', v [, called])`: a
    /// per-row slot of the query (the sequence named when planned, as
    /// PostgreSQL resolves the `regclass` argument).
    fn sequence_function(&mut self, func: SequenceFunc, args: &[&Expr]) -> Result<Ty> {
        let arity_ok = match func {
            SequenceFunc::Set => matches!(args.len(), 2 | 3),
            _ => args.len() == 1,
        };
        let fname = match func {
            SequenceFunc::Next => "nextval",
            SequenceFunc::Curr => "currval",
            SequenceFunc::Set => "setval",
        };
        if !arity_ok {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "function {fname} with {} arguments does not exist",
                    args.len()
                ),
            ));
        }
        let literal = |e: &Expr| -> Option<String> {
            match e {
                Expr::Value(v) => match &v.value {
                    AstValue::SingleQuotedString(s) => Some(s.clone()),
                    _ => None,
                },
                Expr::Cast { expr, .. } | Expr::Nested(expr) => {
                    let Expr::Value(v) = expr.as_ref() else {
                        return None;
                    };
                    match &v.value {
                        AstValue::SingleQuotedString(s) => Some(s.clone()),
                        _ => None,
                    }
                }
                _ => None,
            }
        };
        let Some(text) = literal(args[0]) else {
            return Err(unsupported(format!(
                "{fname} with a sequence name that is not a literal"
            )));
        };
        // 'public.s' / 'S' / '"S"' as a regclass names them.
        let name = {
            let last = text.rsplit('.').next().unwrap_or(&text);
            match last.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
                Some(quoted) => quoted.to_string(),
                None => last.to_lowercase(),
            }
        };
        let scope = match &self.agg {
            Some(agg) => agg.input.clone(),
            None => self.scope.clone(),
        };
        let Some(ctx) = scope.ctx.clone() else {
            return Err(unsupported(format!("{fname} here")));
        };
        if ctx.db().sequence(&name).is_none() {
            return Err(Error::new(
                SqlState::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            ));
        }
        let mut rest = Vec::new();
        for (k, a) in args.iter().enumerate().skip(1) {
            let mut c = Compiler {
                scope: self.scope,
                program: Program::default(),
                params: self.params,
                agg: self.agg.as_deref_mut(),
            };
            let ty = c.expr(a)?;
            let want = if k == 1 {
                DataType::BigInt
            } else {
                DataType::Bool
            };
            c.coerce(ty, Some(want))?;
            rest.push(c.program);
        }
        let slot = ctx.sequence_call(SequenceCall {
            func,
            sequence: name,
            args: rest,
        });
        self.emit(Op::Param(slot));
        Ok(Ty::Known(DataType::BigInt))
    }

    /// EXISTS, IN and scalar subqueries: a parameter slot of the query.
    fn subquery(&mut self, e: &Expr) -> Result<Ty> {
        let scope = match &self.agg {
            Some(agg) => agg.input.clone(),
            None => self.scope.clone(),
        };
        let Some(ctx) = scope.ctx.clone() else {
            return Err(unsupported("a subquery here"));
        };
        let (slot, ty) = match self.agg.as_deref_mut() {
            Some(agg) => ctx.subquery(e, &scope, true, self.params, &mut |x, p| {
                compile_aggregated(x, agg, p)
            })?,
            None => ctx.subquery(e, &scope, false, self.params, &mut |x, p| {
                compile(x, &scope, p)
            })?,
        };
        self.emit(Op::Param(slot));
        Ok(ty)
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

    fn binary(&mut self, left: &Expr, op: &BinaryOperator, right: &Expr) -> Result<Ty> {
        match op {
            BinaryOperator::And | BinaryOperator::Or => {
                let lt = self.expr(left)?;
                self.coerce(lt, Some(DataType::Bool))?;
                expect_bool(
                    lt,
                    if *op == BinaryOperator::And {
                        "AND"
                    } else {
                        "OR"
                    },
                )?;
                let jump = self.emit(if *op == BinaryOperator::And {
                    Op::JumpIfFalseKeep(0)
                } else {
                    Op::JumpIfTrueKeep(0)
                });
                let rt = self.expr(right)?;
                self.coerce(rt, Some(DataType::Bool))?;
                expect_bool(
                    rt,
                    if *op == BinaryOperator::And {
                        "AND"
                    } else {
                        "OR"
                    },
                )?;
                self.emit(if *op == BinaryOperator::And {
                    Op::And
                } else {
                    Op::Or
                });
                self.patch_jump(jump);
                return Ok(Ty::Known(DataType::Bool));
            }
            _ => {}
        }
        if let Some(ty) = self.catalog_binary(left, op, right)? {
            return Ok(ty);
        }
        // CHAR(n) operands of comparisons and || are text without their
        // trailing blanks (PostgreSQL's bpchar comparison and cast to
        // text); so are string literals compared with them.
        let textual = matches!(
            op,
            BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq
                | BinaryOperator::StringConcat
        );
        if let Some(ty) = self.interval_arithmetic(left, op, right)? {
            return Ok(ty);
        }
        let lt = self.expr(left)?;
        let l_char = is_char(lt);
        let lt = if textual { self.text_operand(lt) } else { lt };
        let rt = self.expr(right)?;
        let r_char = is_char(rt);
        let rt = if textual { self.text_operand(rt) } else { rt };
        if textual && (l_char || r_char) {
            for t in [lt, rt] {
                self.trim_literal(t);
            }
            if let (true, Ty::Param(_)) = (l_char, rt) {
                self.emit(Op::Call {
                    func: Func::Rtrim,
                    nargs: 1,
                });
            }
        }
        let (lt, rt) = match (lt, rt) {
            // `'L' || 5`: an untyped operand of || is text.
            _ if *op == BinaryOperator::StringConcat => (
                self.coerce(lt, Some(DataType::Text))?,
                self.coerce(rt, Some(DataType::Text))?,
            ),
            (Ty::Known(a), other) => (lt, self.coerce(other, Some(a))?),
            (other, Ty::Known(b)) => (self.coerce(other, Some(b))?, rt),
            _ => (lt, rt),
        };
        let opname = op.to_string();
        let mismatch = |a: Ty, b: Ty| {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {opname} {}",
                    type_name(a.data_type()),
                    type_name(b.data_type())
                ),
            )
        };
        let (code, result) = match op {
            BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq => {
                if let (Ty::Known(a), Ty::Known(b)) = (lt, rt) {
                    if !comparable(a, b) {
                        return Err(mismatch(lt, rt));
                    }
                }
                let code = match op {
                    BinaryOperator::Eq => Op::Eq,
                    BinaryOperator::NotEq => Op::Ne,
                    BinaryOperator::Lt => Op::Lt,
                    BinaryOperator::LtEq => Op::Le,
                    BinaryOperator::Gt => Op::Gt,
                    _ => Op::Ge,
                };
                (code, Ty::Known(DataType::Bool))
            }
            BinaryOperator::StringConcat => (Op::Concat, Ty::Known(DataType::Text)),
            BinaryOperator::Plus
            | BinaryOperator::Minus
            | BinaryOperator::Multiply
            | BinaryOperator::Divide
            | BinaryOperator::Modulo => {
                let code = match op {
                    BinaryOperator::Plus => Op::Add,
                    BinaryOperator::Minus => Op::Sub,
                    BinaryOperator::Multiply => Op::Mul,
                    BinaryOperator::Divide => Op::Div,
                    _ => Op::Mod,
                };
                let result = match (lt.data_type(), rt.data_type()) {
                    (Some(DataType::Date), Some(t))
                        if t.is_numeric() && matches!(code, Op::Add | Op::Sub) =>
                    {
                        Ty::Known(DataType::Date)
                    }
                    (Some(t), Some(DataType::Date))
                        if t.is_numeric() && matches!(code, Op::Add) =>
                    {
                        Ty::Known(DataType::Date)
                    }
                    (Some(DataType::Date), Some(DataType::Date)) if matches!(code, Op::Sub) => {
                        Ty::Known(DataType::Int)
                    }
                    (Some(a), Some(b)) => {
                        Ty::Known(numeric_result(a, b).ok_or_else(|| mismatch(lt, rt))?)
                    }
                    (Some(a), None) | (None, Some(a)) if a.is_numeric() => Ty::Known(a),
                    (None, None) => Ty::Known(DataType::Int),
                    _ => return Err(mismatch(lt, rt)),
                };
                (code, result)
            }
            op => return Err(unsupported(format!("operator {op}"))),
        };
        self.emit(code);
        Ok(result)
    }

    fn expr_rest(&mut self, e: &Expr) -> Result<Ty> {
        match e {
            Expr::IsTrue(inner)
            | Expr::IsFalse(inner)
            | Expr::IsNotTrue(inner)
            | Expr::IsNotFalse(inner) => {
                // x IS TRUE  ==  COALESCE(x = TRUE, FALSE)
                let want = matches!(e, Expr::IsTrue(_) | Expr::IsNotTrue(_));
                let negate = matches!(e, Expr::IsNotTrue(_) | Expr::IsNotFalse(_));
                self.expr(inner)?;
                self.push_const(Value::Bool(want));
                self.emit(Op::Eq);
                self.push_const(Value::Bool(false));
                self.emit(Op::Call {
                    func: Func::Coalesce,
                    nargs: 2,
                });
                if negate {
                    self.emit(Op::Not);
                }
                Ok(Ty::Known(DataType::Bool))
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let t = self.expr(expr)?;
                let mut target = t.data_type();
                let items_at = (self.program.ops.len(), self.program.consts.len());
                for item in list {
                    let it = self.expr(item)?;
                    let it = self.coerce(it, target)?;
                    if target.is_none() {
                        target = it.data_type();
                    }
                    if let (Some(a), Some(b)) = (target, it.data_type()) {
                        if !comparable(a, b) {
                            return Err(Error::new(
                                SqlState::UNDEFINED_FUNCTION,
                                format!(
                                    "operator does not exist: {} = {}",
                                    a.sql_name(),
                                    b.sql_name()
                                ),
                            ));
                        }
                    }
                }
                self.coerce(t, target)?;
                if !self.sorted_in(items_at, list.len(), *negated) {
                    self.emit(Op::In {
                        n: list.len() as u32,
                        negated: *negated,
                    });
                }
                Ok(Ty::Known(DataType::Bool))
            }
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let ge = Expr::BinaryOp {
                    left: expr.clone(),
                    op: BinaryOperator::GtEq,
                    right: low.clone(),
                };
                let le = Expr::BinaryOp {
                    left: expr.clone(),
                    op: BinaryOperator::LtEq,
                    right: high.clone(),
                };
                self.binary(&ge, &BinaryOperator::And, &le)?;
                if *negated {
                    self.emit(Op::Not);
                }
                Ok(Ty::Known(DataType::Bool))
            }
            Expr::Like {
                negated,
                expr,
                pattern,
                escape_char,
                any,
                ..
            }
            | Expr::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                any,
                ..
            } => {
                if *any || escape_char.is_some() {
                    return Err(unsupported("LIKE ANY / ESCAPE"));
                }
                let t = self.expr(expr)?;
                let t = self.coerce(t, Some(DataType::Text))?;
                let p = self.expr(pattern)?;
                let p = self.coerce(p, Some(DataType::Text))?;
                for x in [t, p] {
                    if let Some(ty) = x.data_type() {
                        if !ty.is_textual() {
                            return Err(Error::new(
                                SqlState::UNDEFINED_FUNCTION,
                                format!("operator does not exist: {} ~~ text", ty.sql_name()),
                            ));
                        }
                    }
                }
                self.emit(Op::Like {
                    negated: *negated,
                    case_insensitive: matches!(e, Expr::ILike { .. }),
                });
                Ok(Ty::Known(DataType::Bool))
            }
            Expr::Cast {
                kind,
                expr,
                data_type,
                ..
            } => {
                if !matches!(kind, CastKind::Cast | CastKind::DoubleColon) {
                    return Err(unsupported("TRY_CAST"));
                }
                if let Some(ty) = self.catalog_cast(expr, data_type)? {
                    return Ok(ty);
                }
                let target = convert_type(data_type)?;
                let t = self.expr(expr)?;
                // An explicit cast to CHAR(n) / VARCHAR(n) cuts what is
                // longer (only assignment fails on it).
                let limit = match target {
                    DataType::Char(n) | DataType::Varchar(n) => Some(n),
                    _ => None,
                };
                match t {
                    Ty::Literal(i) => {
                        if let (Some(n), Some(Value::Text(s))) =
                            (limit, self.program.consts.get_mut(i as usize))
                        {
                            if let Some((cut, _)) = s.char_indices().nth(n as usize) {
                                s.truncate(cut);
                            }
                        }
                        self.coerce(t, Some(target))?;
                    }
                    Ty::Param(_) => {
                        self.coerce(t, Some(target))?;
                    }
                    _ => {
                        if matches!(target, DataType::Text | DataType::Varchar(_)) {
                            self.text_operand(t);
                        }
                        if let Some(n) = limit {
                            self.emit(Op::Cast(DataType::Text));
                            self.push_const(Value::Int(1));
                            self.push_const(Value::Int(n.min(i32::MAX as u32) as i32));
                            self.emit(Op::Call {
                                func: Func::Substr,
                                nargs: 3,
                            });
                        }
                        self.emit(Op::Cast(target));
                    }
                }
                Ok(Ty::Known(target))
            }
            Expr::Function(f) => self.function(e, f),
            Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let mut end_jumps = Vec::new();
                let mut result_ty: Option<DataType> = None;
                let mut literal_results = Vec::new();
                for w in conditions {
                    match operand {
                        Some(op) => {
                            let eq = Expr::BinaryOp {
                                left: op.clone(),
                                op: BinaryOperator::Eq,
                                right: Box::new(w.condition.clone()),
                            };
                            self.expr(&eq)?;
                        }
                        None => {
                            let ct = self.expr(&w.condition)?;
                            self.coerce(ct, Some(DataType::Bool))?;
                            expect_bool(ct, "CASE/WHEN")?;
                        }
                    }
                    let skip = self.emit(Op::JumpIfNotTrue(0));
                    let rt = self.expr(&w.result)?;
                    match rt {
                        Ty::Known(t) => result_ty = result_ty.or(Some(t)),
                        Ty::Literal(i) => literal_results.push(i),
                        _ => {}
                    }
                    end_jumps.push(self.emit(Op::Jump(0)));
                    self.patch_jump(skip);
                }
                match else_result {
                    Some(e) => match self.expr(e)? {
                        Ty::Known(t) => result_ty = result_ty.or(Some(t)),
                        Ty::Literal(i) => literal_results.push(i),
                        _ => {}
                    },
                    None => {
                        self.push_const(Value::Null);
                    }
                }
                for j in end_jumps {
                    self.patch_jump(j);
                }
                let target = result_ty.unwrap_or(DataType::Text);
                for i in literal_results {
                    self.coerce(Ty::Literal(i), Some(target))?;
                }
                Ok(Ty::Known(target))
            }
            Expr::Position { expr, r#in } => {
                // position(a IN b) is strpos(b, a).
                for e in [r#in, expr] {
                    let t = self.expr(e)?;
                    let t = self.text_operand(t);
                    self.coerce(t, Some(DataType::Text))?;
                }
                self.emit(Op::Call {
                    func: Func::Strpos,
                    nargs: 2,
                });
                Ok(Ty::Known(DataType::Int))
            }
            Expr::Extract { field, expr, .. } => {
                let unit = field.to_string();
                self.date_part(Func::Extract, Value::Text(unit), expr)
            }
            Expr::Substring {
                expr,
                substring_from,
                substring_for,
                shorthand,
                ..
            } => {
                let name = if *shorthand { "substr" } else { "substring" };
                // A CHAR(n) value is text without its trailing blanks.
                let t = self.expr(expr)?;
                let t = self.text_operand(t);
                if substring_from.is_none() && substring_for.is_none()
                    || matches!(t, Ty::Known(d) if !matches!(d, DataType::Text | DataType::Varchar(_)))
                {
                    let mut tys = vec![t];
                    for x in [substring_from, substring_for].into_iter().flatten() {
                        tys.push(self.expr(x)?);
                    }
                    return Err(no_such_function(name, &tys));
                }
                self.coerce(t, Some(DataType::Text))?;
                // SUBSTRING(s FOR n) starts at the first character.
                match substring_from {
                    Some(from) => {
                        let t = self.expr(from)?;
                        self.coerce(t, Some(DataType::Int))?;
                    }
                    None => {
                        self.push_const(Value::Int(1));
                    }
                }
                let mut n = 2;
                if let Some(len) = substring_for {
                    let t = self.expr(len)?;
                    self.coerce(t, Some(DataType::Int))?;
                    n = 3;
                }
                self.emit(Op::Call {
                    func: Func::Substr,
                    nargs: n,
                });
                Ok(Ty::Known(DataType::Text))
            }
            Expr::Trim {
                expr,
                trim_where: None,
                trim_what: None,
                trim_characters: None,
            } => {
                let t = self.expr(expr)?;
                self.coerce(t, Some(DataType::Text))?;
                self.emit(Op::Call {
                    func: Func::Trim,
                    nargs: 1,
                });
                Ok(Ty::Known(DataType::Text))
            }
            Expr::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters: None,
            } => self.trim_chars(expr, trim_where.as_ref(), trim_what.as_deref()),
            Expr::CompoundFieldAccess { root, access_chain } => {
                self.field_access(root, access_chain)
            }
            Expr::Ceil { expr, .. } | Expr::Floor { expr, .. } => {
                let t = self.expr(expr)?;
                let t = self.coerce(t, Some(DataType::Double))?;
                let func = if matches!(e, Expr::Ceil { .. }) {
                    Func::Ceil
                } else {
                    Func::Floor
                };
                self.emit(Op::Call { func, nargs: 1 });
                Ok(match t.data_type() {
                    Some(DataType::Double) => Ty::Known(DataType::Double),
                    _ => Ty::Known(DataType::Numeric {
                        precision: 0,
                        scale: 0,
                    }),
                })
            }
            Expr::Subquery(_)
            | Expr::InSubquery { .. }
            | Expr::Exists { .. }
            | Expr::AnyOp { .. }
            | Expr::AllOp { .. } => self.subquery(e),
            e => Err(unsupported(format!("expression {e}"))),
        }
    }

    fn function_args<'e>(
        &self,
        f: &'e sqlparser::ast::Function,
    ) -> Result<(Vec<&'e Expr>, bool, bool)> {
        match &f.args {
            FunctionArguments::None => Ok((vec![], false, false)),
            FunctionArguments::List(l) => {
                let distinct = matches!(
                    l.duplicate_treatment,
                    Some(sqlparser::ast::DuplicateTreatment::Distinct)
                );
                let mut out = Vec::new();
                let mut star = false;
                for a in &l.args {
                    match a {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => out.push(e),
                        FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => star = true,
                        _ => return Err(unsupported("named function arguments")),
                    }
                }
                Ok((out, distinct, star))
            }
            FunctionArguments::Subquery(_) => Err(unsupported("subqueries")),
        }
    }

    /// `date|timestamp ± INTERVAL '…'` and `INTERVAL '…' + date|timestamp`
    /// (`crate::bind::interval`); `None` if neither side is an interval.
    fn interval_arithmetic(
        &mut self,
        left: &Expr,
        op: &BinaryOperator,
        right: &Expr,
    ) -> Result<Option<Ty>> {
        let (base, iv, minus) = match (left, op, right) {
            (b, BinaryOperator::Plus, Expr::Interval(iv)) => (b, iv, false),
            (b, BinaryOperator::Minus, Expr::Interval(iv)) => (b, iv, true),
            (Expr::Interval(iv), BinaryOperator::Plus, b) => (b, iv, false),
            _ => return Ok(None),
        };
        let mut parts = crate::bind::interval::of_expr(iv)?;
        if minus {
            parts = parts.negated();
        }
        match self.expr(base)? {
            Ty::Known(DataType::Timestamp) => {}
            Ty::Known(DataType::Date) => {
                self.emit(Op::Cast(DataType::Timestamp));
            }
            t @ (Ty::Literal(_) | Ty::Param(_)) => {
                self.coerce(t, Some(DataType::Timestamp))?;
            }
            t => {
                let name = t.data_type().map_or("unknown".into(), |d| d.to_string());
                let sign = if minus { "-" } else { "+" };
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("operator does not exist: {name} {sign} interval"),
                )
                .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
            }
        }
        for v in [parts.months, parts.days, parts.micros] {
            self.push_const(Value::BigInt(v));
        }
        self.emit(Op::Call {
            func: Func::AddInterval,
            nargs: 4,
        });
        Ok(Some(Ty::Known(DataType::Timestamp)))
    }

    /// `EXTRACT(unit FROM v)`.
    fn date_part(&mut self, func: Func, unit: Value, v: &Expr) -> Result<Ty> {
        self.push_const(unit);
        self.date_part_of(func, v)
    }

    /// The value argument of EXTRACT / date_part (the unit is pushed):
    /// a DATE or TIMESTAMP, an untyped literal read as a timestamp.
    fn date_part_of(&mut self, func: Func, v: &Expr) -> Result<Ty> {
        let t = self.expr(v)?;
        let t = match t {
            Ty::Known(DataType::Date | DataType::Timestamp) => t,
            Ty::Known(other) => {
                let name = if func == Func::Extract {
                    "pg_catalog.extract"
                } else {
                    "date_part"
                };
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("function {name}(unknown, {other}) does not exist"),
                )
                .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."));
            }
            t => self.coerce(t, Some(DataType::Timestamp))?,
        };
        let _ = t;
        self.emit(Op::Call { func, nargs: 2 });
        Ok(Ty::Known(match func {
            Func::Extract => DataType::Numeric {
                precision: 0,
                scale: 0,
            },
            _ => DataType::Double,
        }))
    }

    fn function(&mut self, whole: &Expr, f: &sqlparser::ast::Function) -> Result<Ty> {
        let name = f.name.to_string().to_lowercase();
        if f.over.is_some() || f.filter.is_some() {
            return Err(unsupported("window functions and FILTER"));
        }
        let (args, distinct, star) = self.function_args(f)?;
        if let Some(value) = session_value(f, &args) {
            if name.ends_with(".pg_backend_pid") {
                if let Ok(pid) = value.parse() {
                    return Ok(self.push_const(Value::Int(pid)));
                }
            }
            return Ok(self.push_const(Value::Text(value)));
        }
        let func = match name.trim_start_matches("pg_catalog.") {
            "nextval" => Some(SequenceFunc::Next),
            "currval" => Some(SequenceFunc::Curr),
            "setval" => Some(SequenceFunc::Set),
            _ => None,
        };
        if let Some(func) = func {
            return self.sequence_function(func, &args);
        }
        let agg_func = match name.as_str() {
            "count" if star => Some(AggFunc::CountStar),
            "count" => Some(AggFunc::Count),
            "sum" => Some(AggFunc::Sum),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "avg" => Some(AggFunc::Avg),
            _ => None,
        };
        if let Some(func) = agg_func {
            return self.aggregate(whole, func, &args, distinct);
        }
        if args.is_empty()
            && matches!(
                name.as_str(),
                "current_timestamp" | "now" | "localtimestamp" | "transaction_timestamp"
            )
        {
            // The transaction's start, as a TIMESTAMP (ndpdb keeps no time
            // zones: UTC).
            self.emit(Op::TransactionTime);
            return Ok(Ty::Known(DataType::Timestamp));
        }
        if args.is_empty() && name == "current_date" {
            self.emit(Op::TransactionTime);
            self.emit(Op::Cast(DataType::Date));
            return Ok(Ty::Known(DataType::Date));
        }
        if name == "version" && args.is_empty() {
            // What clients read to learn the server (PostgreSQL-compatible
            // prefix, as drivers parse it).
            return Ok(self.push_const(Value::Text(crate::SERVER_VERSION.to_string())));
        }
        if let (Some(Func::DatePart), [unit, v]) = (Func::by_name(&name), args.as_slice()) {
            let t = self.expr(unit)?;
            self.coerce(t, Some(DataType::Text))?;
            return self.date_part_of(Func::DatePart, v);
        }
        if let ("mod", [a, b]) = (name.as_str(), args.as_slice()) {
            // mod(a, b) is a % b, of the same types.
            return self.binary(a, &BinaryOperator::Modulo, b);
        }
        if let Some(ty) = self.catalog_function(&name, &args)? {
            return Ok(ty);
        }
        let func = Func::by_name(&name).ok_or_else(|| {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name} does not exist"),
            )
        })?;
        let mut tys = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let t = self.expr(a)?;
            let textual = matches!(
                func,
                Func::Lower
                    | Func::Upper
                    | Func::Trim
                    | Func::Rtrim
                    | Func::Ltrim
                    | Func::Length
                    | Func::Ascii
                    | Func::Strpos
            ) || (func == Func::Substr && i == 0);
            tys.push(if textual { self.text_operand(t) } else { t });
        }
        check_arity(&name, func, &tys)?;
        let first = tys.iter().find_map(|t| t.data_type());
        let result = match func {
            Func::Lower | Func::Upper | Func::Trim | Func::Rtrim | Func::Ltrim | Func::Substr => {
                if let Some(t) = tys.first() {
                    self.coerce(*t, Some(DataType::Text))?;
                }
                DataType::Text
            }
            Func::Length | Func::Ascii => {
                if let Some(t) = tys.first() {
                    self.coerce(*t, Some(DataType::Text))?;
                }
                DataType::Int
            }
            Func::Strpos => {
                for t in &tys {
                    self.coerce(*t, Some(DataType::Text))?;
                }
                DataType::Int
            }
            Func::Chr => {
                if let Some(t) = tys.first() {
                    self.coerce(*t, Some(DataType::Int))?;
                }
                DataType::Text
            }
            Func::SpnScore => {
                if let Some(t) = tys.first() {
                    self.coerce(*t, Some(DataType::Bytea))?;
                }
                DataType::Double
            }
            Func::Round | Func::Floor | Func::Ceil => match first {
                Some(DataType::Double) => DataType::Double,
                _ => DataType::Numeric {
                    precision: 0,
                    scale: 0,
                },
            },
            _ => {
                for t in &tys {
                    self.coerce(*t, first)?;
                }
                first.unwrap_or(DataType::Text)
            }
        };
        self.emit(Op::Call {
            func,
            nargs: args.len() as u8,
        });
        Ok(Ty::Known(result))
    }

    fn aggregate(
        &mut self,
        whole: &Expr,
        func: AggFunc,
        args: &[&Expr],
        distinct: bool,
    ) -> Result<Ty> {
        let Some(agg) = self.agg.as_deref_mut() else {
            return Err(Error::new(
                SqlState::GROUPING_ERROR,
                "aggregate functions are not allowed here",
            ));
        };
        if let Some(j) = agg.aggregates.iter().position(|a| &a.ast == whole) {
            let ty = agg.aggregates[j].spec.result_ty;
            let col = agg.group_exprs.len() + j;
            self.emit(Op::Column(col as u32));
            return Ok(Ty::Known(ty));
        }
        let (arg, arg_ty) = match (func, args) {
            (AggFunc::CountStar, []) => (None, None),
            (_, [a]) => {
                if contains_aggregate(a) {
                    return Err(Error::new(
                        SqlState::GROUPING_ERROR,
                        "aggregate function calls cannot be nested",
                    ));
                }
                let input = agg.input.clone();
                let (p, t) = compile(a, &input, self.params)?;
                (Some(p), t.data_type())
            }
            _ => {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    "aggregate takes exactly one argument",
                ))
            }
        };
        let numeric = DataType::Numeric {
            precision: 0,
            scale: 0,
        };
        let result_ty = match func {
            AggFunc::CountStar | AggFunc::Count => DataType::BigInt,
            AggFunc::Min | AggFunc::Max => arg_ty.unwrap_or(DataType::Text),
            AggFunc::Sum => match arg_ty {
                Some(DataType::Int) => DataType::BigInt,
                Some(DataType::Double) => DataType::Double,
                Some(t) if t.is_numeric() => numeric,
                Some(t) => {
                    return Err(Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("function sum({}) does not exist", t.sql_name()),
                    ))
                }
                None => numeric,
            },
            AggFunc::Avg => match arg_ty {
                Some(DataType::Double) => DataType::Double,
                Some(t) if t.is_numeric() => numeric,
                Some(t) => {
                    return Err(Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("function avg({}) does not exist", t.sql_name()),
                    ))
                }
                None => numeric,
            },
        };
        let agg = self
            .agg
            .as_deref_mut()
            .ok_or_else(|| unsupported("aggregate"))?;
        agg.aggregates.push(AggCall {
            spec: AggSpec {
                func,
                distinct,
                arg,
                result_ty,
            },
            ast: whole.clone(),
        });
        let col = agg.group_exprs.len() + agg.aggregates.len() - 1;
        self.emit(Op::Column(col as u32));
        Ok(Ty::Known(result_ty))
    }
}

/// PostgreSQL's answers to a call with the wrong number of arguments:
/// COALESCE/GREATEST/LEAST with none are a syntax error, more than
/// `FUNC_MAX_ARGS` (100) arguments are 54023, and any other count names the
/// signature that does not exist (42883).
fn check_arity(name: &str, func: Func, tys: &[Ty]) -> Result<()> {
    const FUNC_MAX_ARGS: usize = 100;
    let variadic = matches!(func, Func::Coalesce | Func::Greatest | Func::Least);
    if tys.is_empty() && variadic {
        return Err(Error::new(
            SqlState::SYNTAX_ERROR,
            "syntax error at or near \")\"",
        ));
    }
    if tys.len() > FUNC_MAX_ARGS && !variadic {
        return Err(Error::new(
            SqlState::TOO_MANY_ARGUMENTS,
            format!("cannot pass more than {FUNC_MAX_ARGS} arguments to a function"),
        ));
    }
    if func.arity().contains(&tys.len()) {
        return Ok(());
    }
    if variadic {
        return Err(Error::new(
            SqlState::TOO_MANY_ARGUMENTS,
            format!(
                "{} takes at most {} arguments",
                name.to_uppercase(),
                func.arity().end()
            ),
        ));
    }
    Err(no_such_function(name, tys))
}

/// 42883 naming the signature as PostgreSQL prints it.
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

/// Converts a sqlparser type name; re-exported for CAST.
pub fn sql_type(t: &AstType) -> Result<DataType> {
    convert_type(t)
}

/// A session value the session resolved at plan time
/// (`session::session_values`): `"\0session".name('value')`.
fn session_value(f: &sqlparser::ast::Function, args: &[&Expr]) -> Option<String> {
    let first = match f.name.0.first()? {
        sqlparser::ast::ObjectNamePart::Identifier(id) => id,
        _ => return None,
    };
    if f.name.0.len() != 2 || first.value != SESSION_VALUE {
        return None;
    }
    match args {
        [Expr::Value(v)] => match &v.value {
            sqlparser::ast::Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
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
