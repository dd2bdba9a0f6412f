//! Array expressions: the constructor, subscripts and slices, the array
//! operators and quantified comparisons over array values, typed as
//! PostgreSQL types them.
//!
//! ```text
//!  ARRAY[1, 2.5]          elements ─► MakeArray ─► Cast(numeric[])   (common type)
//!  ARRAY[]::int[]         Const({})
//!  a[i][j]                a, i, j ─► ArrayIndex          element type
//!  a[l:u], a[:u]          a, l, u ─► ArraySlice          (omitted: i64::MIN / MAX)
//!  a || b / a || e / e || a   ArrayCat / ArrayAppend / ArrayPrepend
//!  a @> b, a <@ b, a && b     ArrayContains / ArrayContained / ArrayOverlap
//!  x op ANY (a)           x, a, op ─► QuantAny           (ALL: QuantAll)
//! ```
//!
//! An untyped literal beside an array is read as that array type
//! (`a || '{3}'`, `x = ANY ('{1,2}')`), as PostgreSQL resolves `unknown`.

use ndpdb_formats::array::{ArrayValue, ElemType};
use ndpdb_formats::array_funcs::QuantOp;
use sqlparser::ast::{AccessExpr, Subscript};

use super::functions::check_arity;
use super::*;

/// The type two array elements of types `a` and `b` share (PostgreSQL's
/// resolution of ARRAY[…], UNION and CASE for the types ndpdb has).
pub(super) fn common_type(a: DataType, b: DataType) -> Option<DataType> {
    if a == b {
        return Some(a);
    }
    if a.is_numeric() && b.is_numeric() {
        return numeric_result(a, b);
    }
    if a.is_textual() && b.is_textual() {
        return Some(match (a, b) {
            (DataType::Varchar(x), DataType::Varchar(y)) => DataType::Varchar(x.max(y)),
            _ => DataType::Text,
        });
    }
    match (a, b) {
        (DataType::Date | DataType::Timestamp, DataType::Date | DataType::Timestamp) => {
            Some(DataType::Timestamp)
        }
        (DataType::Array(x), DataType::Array(y)) => {
            ElemType::of(common_type(x.scalar(), y.scalar())?).map(DataType::Array)
        }
        _ => None,
    }
}

fn array_of(t: DataType) -> Result<DataType> {
    match t {
        DataType::Array(_) => Ok(t),
        t => ElemType::of(t)
            .map(DataType::Array)
            .ok_or_else(|| unsupported(format!("arrays of {t}"))),
    }
}

/// An array function's result type, from its array argument's type and
/// all arguments' types.
type ResultType = fn(DataType, &[Ty]) -> DataType;

fn quant_op(op: &BinaryOperator) -> Option<QuantOp> {
    Some(match op {
        BinaryOperator::Eq => QuantOp::Eq,
        BinaryOperator::NotEq => QuantOp::NotEq,
        BinaryOperator::Lt => QuantOp::Lt,
        BinaryOperator::LtEq => QuantOp::LtEq,
        BinaryOperator::Gt => QuantOp::Gt,
        BinaryOperator::GtEq => QuantOp::GtEq,
        _ => return None,
    })
}

impl Compiler<'_> {
    fn call(&mut self, func: Func, nargs: usize) {
        self.emit(Op::Call {
            func,
            nargs: nargs as u8,
        });
    }

    /// The element type of an array operand of type `t` (on the stack);
    /// a catalog array in its text form (`pg_index.indkey`) is made an
    /// array value first. `None` if `t` is no array type.
    pub(crate) fn real_array(&mut self, t: Ty) -> Option<ElemType> {
        match t.data_type()? {
            DataType::Array(e) => Some(e),
            tagged => {
                let element = crate::bind::array_type::element_type(tagged)?;
                let elem = ElemType::of(element)?;
                self.push_const(Value::Int(if element == DataType::Int { 0 } else { 1 }));
                self.call(Func::CatalogArray, 2);
                Some(elem)
            }
        }
    }

    /// `ARRAY[e, …]` (and the inner `[…]` of `ARRAY[[1,2],[3,4]]`).
    pub(super) fn array_constructor(&mut self, elems: &[Expr]) -> Result<Ty> {
        if elems.is_empty() {
            return Err(Error::new(
                SqlState::INDETERMINATE_DATATYPE,
                "cannot determine type of empty array",
            )
            .with_hint("Explicitly cast to the desired type, for example ARRAY[]::integer[]."));
        }
        // At most 255 arguments a call: longer lists are built in pieces
        // and concatenated.
        let mut tys = Vec::with_capacity(elems.len());
        for (k, chunk) in elems.chunks(u8::MAX as usize).enumerate() {
            for e in chunk {
                let e = match e {
                    Expr::Array(inner) if !inner.named => &Expr::Array(sqlparser::ast::Array {
                        elem: inner.elem.clone(),
                        named: true,
                    }),
                    e => e,
                };
                tys.push(self.expr(e)?);
            }
            self.call(Func::MakeArray, chunk.len());
            if k > 0 {
                self.call(Func::ArrayCat, 2);
            }
        }
        let mut known: Option<DataType> = None;
        for t in &tys {
            if let Ty::Known(t) = t {
                known = Some(match known {
                    None => *t,
                    Some(k) => common_type(k, *t).ok_or_else(|| {
                        Error::new(
                            SqlState::DATATYPE_MISMATCH,
                            format!(
                                "ARRAY types {} and {} cannot be matched",
                                k.sql_name(),
                                t.sql_name()
                            ),
                        )
                    })?,
                });
            }
        }
        let elem = known.unwrap_or(DataType::Text);
        for t in tys {
            self.coerce(t, Some(elem))?;
        }
        let ty = array_of(elem)?;
        self.emit(Op::Cast(ty));
        Ok(Ty::Known(ty))
    }

    /// `ARRAY[]::t[]` and `'{…}'::t[]`-style casts whose operand needs
    /// the target to be typed; `None` for the others.
    pub(super) fn array_cast(&mut self, expr: &Expr, target: DataType) -> Result<Option<Ty>> {
        let DataType::Array(e) = target else {
            return Ok(None);
        };
        match strip_nested(expr) {
            Expr::Array(a) if a.elem.is_empty() => {
                self.push_const(Value::Array(Box::new(ArrayValue::empty(e))));
                Ok(Some(Ty::Known(target)))
            }
            _ => Ok(None),
        }
    }

    /// Subscripts and slices of an array value of `elem`s (on the
    /// stack). A chain with any slice slices every dimension it names
    /// (a lone subscript `n` there is `1:n`).
    pub(super) fn array_subscripts(&mut self, elem: ElemType, chain: &[AccessExpr]) -> Result<Ty> {
        let mut subs = Vec::new();
        for a in chain {
            match a {
                AccessExpr::Subscript(s) => subs.push(s),
                other => return Err(unsupported(format!("the access {other}"))),
            }
        }
        if subs.len() > 6 {
            return Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "number of array dimensions ({}) exceeds the maximum allowed (6)",
                    subs.len()
                ),
            ));
        }
        let sliced = subs.iter().any(|s| matches!(s, Subscript::Slice { .. }));
        let index = |this: &mut Self, e: &Expr| -> Result<()> {
            let t = this.expr(e)?;
            let t = this.coerce(t, Some(DataType::Int))?;
            if !matches!(t, Ty::Known(DataType::Int | DataType::BigInt) | Ty::Null) {
                return Err(Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    "array subscript must have type integer",
                ));
            }
            Ok(())
        };
        for s in &subs {
            match s {
                Subscript::Index { index: i } if sliced => {
                    // Beside a slice, a[2] is a[1:2], as PostgreSQL reads it.
                    self.push_const(Value::Int(1));
                    index(self, i)?;
                }
                Subscript::Index { index: i } => index(self, i)?,
                Subscript::Slice {
                    lower_bound,
                    upper_bound,
                    stride,
                } => {
                    if stride.is_some() {
                        return Err(unsupported("a slice with a stride"));
                    }
                    match lower_bound {
                        Some(e) => index(self, e)?,
                        None => {
                            self.push_const(Value::BigInt(i64::MIN));
                        }
                    }
                    match upper_bound {
                        Some(e) => index(self, e)?,
                        None => {
                            self.push_const(Value::BigInt(i64::MAX));
                        }
                    }
                }
            }
        }
        if sliced {
            self.call(Func::ArraySlice, 1 + 2 * subs.len());
            Ok(Ty::Known(DataType::Array(elem)))
        } else {
            self.call(Func::ArrayIndex, 1 + subs.len());
            Ok(Ty::Known(elem.scalar()))
        }
    }

    /// `||`, `@>`, `<@`, `&&` and comparisons when an operand is an array
    /// (both compiled, `lt` then `rt` on the stack); `None` otherwise.
    pub(super) fn array_binary(
        &mut self,
        op: &BinaryOperator,
        lt: Ty,
        rt: Ty,
    ) -> Result<Option<Ty>> {
        let (la, ra) = (
            matches!(lt, Ty::Known(DataType::Array(_))),
            matches!(rt, Ty::Known(DataType::Array(_))),
        );
        let array_op = matches!(
            op,
            BinaryOperator::AtArrow | BinaryOperator::ArrowAt | BinaryOperator::PGOverlap
        );
        if !la && !ra {
            return Ok(None);
        }
        let mismatch = |a: Ty, b: Ty| no_operator(a, op, b);
        // The other operand, if untyped, is of the array's type.
        let (lt, rt) = match (lt, rt) {
            (Ty::Known(a @ DataType::Array(_)), Ty::Literal(_) | Ty::Param(_)) => {
                (lt, self.coerce(rt, Some(a))?)
            }
            (Ty::Literal(_) | Ty::Param(_), Ty::Known(b @ DataType::Array(_))) => {
                (self.coerce(lt, Some(b))?, rt)
            }
            _ => (lt, rt),
        };
        let (la, ra) = (
            matches!(lt, Ty::Known(DataType::Array(_))),
            matches!(rt, Ty::Known(DataType::Array(_))),
        );
        match op {
            BinaryOperator::StringConcat => {
                let ty = match (lt, rt) {
                    (Ty::Known(a @ DataType::Array(_)), Ty::Known(b @ DataType::Array(_))) => {
                        let t = common_type(a, b).ok_or_else(|| mismatch(lt, rt))?;
                        self.call(Func::ArrayCat, 2);
                        t
                    }
                    (Ty::Known(a @ DataType::Array(_)), Ty::Null) => {
                        // `a || NULL` is array_cat(a, NULL): a.
                        self.call(Func::ArrayCat, 2);
                        a
                    }
                    (Ty::Known(a @ DataType::Array(e)), Ty::Known(x)) => {
                        common_type(e.scalar(), x).ok_or_else(|| mismatch(lt, rt))?;
                        self.call(Func::ArrayAppend, 2);
                        a
                    }
                    (Ty::Known(x), Ty::Known(b @ DataType::Array(e))) => {
                        common_type(e.scalar(), x).ok_or_else(|| mismatch(lt, rt))?;
                        self.call(Func::ArrayPrepend, 2);
                        b
                    }
                    (Ty::Null, Ty::Known(b @ DataType::Array(_))) => {
                        self.call(Func::ArrayCat, 2);
                        b
                    }
                    _ => return Err(mismatch(lt, rt)),
                };
                self.emit(Op::Cast(ty));
                Ok(Some(Ty::Known(ty)))
            }
            _ if array_op => {
                let (Ty::Known(a), Ty::Known(b)) = (lt, rt) else {
                    return Err(mismatch(lt, rt));
                };
                if !la || !ra || common_type(a, b).is_none() {
                    return Err(mismatch(lt, rt));
                }
                let func = match op {
                    BinaryOperator::PGOverlap => Func::ArrayOverlap,
                    BinaryOperator::ArrowAt => Func::ArrayContained,
                    _ => Func::ArrayContains,
                };
                self.call(func, 2);
                Ok(Some(Ty::Known(DataType::Bool)))
            }
            BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq => {
                if let (Ty::Known(a), Ty::Known(b)) = (lt, rt) {
                    if common_type(a, b).is_none() || !(la && ra) {
                        return Err(mismatch(lt, rt));
                    }
                }
                self.emit(match op {
                    BinaryOperator::Eq => Op::Eq,
                    BinaryOperator::NotEq => Op::Ne,
                    BinaryOperator::Lt => Op::Lt,
                    BinaryOperator::LtEq => Op::Le,
                    BinaryOperator::Gt => Op::Gt,
                    _ => Op::Ge,
                });
                Ok(Some(Ty::Known(DataType::Bool)))
            }
            _ => Err(mismatch(lt, rt)),
        }
    }

    /// `x op ANY (array)` / `x op ALL (array)` over an array value.
    pub(super) fn quantified_value(
        &mut self,
        left: &Expr,
        op: &BinaryOperator,
        right: &Expr,
        any: bool,
    ) -> Result<Ty> {
        let Some(code) = quant_op(op) else {
            return Err(unsupported(format!("{op} ANY / ALL")));
        };
        let lt = self.expr(left)?;
        let lt = self.text_operand(lt);
        let rt = self.expr(right)?;
        let rt = match (lt, rt) {
            (Ty::Known(l), Ty::Literal(_) | Ty::Param(_)) => self.coerce(rt, Some(array_of(l)?))?,
            (_, rt) => rt,
        };
        let elem = match (rt, lt) {
            (Ty::Known(DataType::Array(e)), _) => e.scalar(),
            // A NULL array: the comparison is NULL.
            (Ty::Null, lt) => lt.data_type().unwrap_or(DataType::Text),
            (other, _) => {
                return Err(Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    format!(
                        "op ANY/ALL (array) requires array on right side, not {}",
                        type_name(other.data_type())
                    ),
                ))
            }
        };
        let lt = self.coerce(lt, Some(elem))?;
        if let Ty::Known(l) = lt {
            if common_type(l, elem).is_none() {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!(
                        "operator does not exist: {} {op} {}",
                        l.sql_name(),
                        elem.sql_name()
                    ),
                ));
            }
        }
        self.push_const(Value::Int(code as i32));
        self.call(if any { Func::QuantAny } else { Func::QuantAll }, 3);
        Ok(Ty::Known(DataType::Bool))
    }

    /// The array functions by name; `None` for other names.
    pub(super) fn array_function(&mut self, name: &str, args: &[&Expr]) -> Result<Option<Ty>> {
        let (func, result): (Func, ResultType) = match name {
            "array_length" => (Func::ArrayLength, |_, _| DataType::Int),
            "cardinality" => (Func::Cardinality, |_, _| DataType::Int),
            "array_ndims" => (Func::ArrayNdims, |_, _| DataType::Int),
            "array_dims" => (Func::ArrayDims, |_, _| DataType::Text),
            "array_position" => (Func::ArrayPosition, |_, _| DataType::Int),
            "array_positions" => (Func::ArrayPositions, |_, _| DataType::Array(ElemType::Int)),
            "array_remove" | "array_replace" | "array_append" | "array_cat" => {
                let func = match name {
                    "array_remove" => Func::ArrayRemove,
                    "array_replace" => Func::ArrayReplace,
                    "array_append" => Func::ArrayAppend,
                    _ => Func::ArrayCat,
                };
                (func, |a, _| a)
            }
            "array_prepend" => (Func::ArrayPrepend, |_, tys| {
                tys.get(1)
                    .and_then(|t| t.data_type())
                    .unwrap_or(DataType::Text)
            }),
            "string_to_array" => {
                let mut tys = Vec::new();
                for a in args {
                    let t = self.expr(a)?;
                    tys.push(self.coerce(t, Some(DataType::Text))?);
                }
                if !(2..=3).contains(&args.len()) {
                    return Err(no_such_function(name, &tys));
                }
                self.call(Func::StringToArray, args.len());
                return Ok(Some(Ty::Known(DataType::Array(ElemType::Text))));
            }
            _ => return Ok(None),
        };
        // The array argument: the first, or the second of array_prepend.
        let at = if func == Func::ArrayPrepend { 1 } else { 0 };
        let mut tys = Vec::with_capacity(args.len());
        for a in args {
            tys.push(self.expr(a)?);
        }
        let array_ty = match tys.get(at) {
            Some(Ty::Known(t @ DataType::Array(_))) => *t,
            _ => return Err(no_such_function(name, &tys)),
        };
        let DataType::Array(e) = array_ty else {
            return Err(no_such_function(name, &tys));
        };
        check_arity(name, func, &tys)?;
        // Untyped arguments: elements, dimensions, positions.
        for (k, t) in tys.iter().enumerate() {
            if k == at {
                continue;
            }
            let want = match func {
                Func::ArrayLength => DataType::Int,
                Func::ArrayPosition if k == 2 => DataType::Int,
                Func::ArrayCat => array_ty,
                _ => e.scalar(),
            };
            match self.coerce(*t, Some(want))? {
                Ty::Known(got) if common_type(got, want).is_none() => {
                    return Err(no_such_function(name, &tys))
                }
                _ => {}
            }
        }
        self.call(func, args.len());
        let ty = result(array_ty, &tys);
        if matches!(ty, DataType::Array(_)) {
            self.emit(Op::Cast(ty));
        }
        Ok(Some(Ty::Known(ty)))
    }
}
