//! Binary operators: arithmetic with PostgreSQL's result types (integer,
//! NUMERIC, double), comparisons with literal coercion, string
//! concatenation, AND / OR, and date / timestamp arithmetic with
//! intervals.
//!
//! ```text
//!  int + numeric        ─► Numeric          (numeric_result)
//!  date_col > '2024-…'  ─► the literal converted once, compared as dates
//!  ts + interval '1 d'  ─► interval_arithmetic
//! ```

use super::*;

impl Compiler<'_> {
    pub(super) fn binary(&mut self, left: &Expr, op: &BinaryOperator, right: &Expr) -> Result<Ty> {
        if let BinaryOperator::PGCustomBinaryOperator(path) = op {
            return self.binary(left, &named_operator(path)?, right);
        }
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
        if let Some(ty) = self.json_binary(op, lt, rt)? {
            return Ok(ty);
        }
        if let Some(ty) = self.array_binary(op, lt, rt)? {
            return Ok(ty);
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
        // `||` concatenates strings: one side at least is text (or
        // bytea || bytea); `1 || 2.5` has no operator.
        if *op == BinaryOperator::StringConcat {
            let texty = |t: Ty| match t {
                Ty::Known(t) => t.is_textual(),
                _ => true,
            };
            let both_bytea = matches!(
                (lt, rt),
                (Ty::Known(DataType::Bytea), Ty::Known(DataType::Bytea))
            );
            if !texty(lt) && !texty(rt) && !both_bytea {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!(
                        "operator does not exist: {} || {}",
                        type_name(lt.data_type()),
                        type_name(rt.data_type())
                    ),
                )
                .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
            }
        }
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

    /// `date|timestamp ± INTERVAL '…'` and `INTERVAL '…' + date|timestamp`
    /// (`crate::bind::interval`); `None` if neither side is an interval.
    pub(super) fn interval_arithmetic(
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
}

/// `OPERATOR(pg_catalog.~)` (what psql sends): the operator it names.
fn named_operator(path: &[String]) -> Result<BinaryOperator> {
    let symbol = match path {
        [schema, symbol] if schema.eq_ignore_ascii_case("pg_catalog") => symbol,
        [symbol] => symbol,
        _ => {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("operator does not exist: {}", path.join(".")),
            ))
        }
    };
    Ok(match symbol.as_str() {
        "=" => BinaryOperator::Eq,
        "<>" | "!=" => BinaryOperator::NotEq,
        "<" => BinaryOperator::Lt,
        "<=" => BinaryOperator::LtEq,
        ">" => BinaryOperator::Gt,
        ">=" => BinaryOperator::GtEq,
        "+" => BinaryOperator::Plus,
        "-" => BinaryOperator::Minus,
        "*" => BinaryOperator::Multiply,
        "/" => BinaryOperator::Divide,
        "%" => BinaryOperator::Modulo,
        "||" => BinaryOperator::StringConcat,
        "~" => BinaryOperator::PGRegexMatch,
        "~*" => BinaryOperator::PGRegexIMatch,
        "!~" => BinaryOperator::PGRegexNotMatch,
        "!~*" => BinaryOperator::PGRegexNotIMatch,
        "~~" => BinaryOperator::PGLikeMatch,
        "!~~" => BinaryOperator::PGNotLikeMatch,
        "~~*" => BinaryOperator::PGILikeMatch,
        "!~~*" => BinaryOperator::PGNotILikeMatch,
        "&" => BinaryOperator::BitwiseAnd,
        "|" => BinaryOperator::BitwiseOr,
        other => {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("operator does not exist: {other}"),
            ))
        }
    })
}
