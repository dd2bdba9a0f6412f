//! The expression forms other than names, literals and binary operators:
//! unary operators, IS [NOT] NULL / TRUE / DISTINCT FROM, BETWEEN, IN
//! lists (sorted and searched when long), LIKE, CASE, casts, COALESCE /
//! NULLIF, EXTRACT, SUBSTRING, POSITION and the rest of sqlparser's
//! `Expr`, each compiled to bytecode with its static type.
//!
//! ```text
//!  x IN (1, 2, …, 40)   ─► constants sorted once, Op::InSorted
//!  CASE WHEN c THEN a … ─► jumps patched after each branch
//!  CAST(x AS date)      ─► Op::Cast (literals converted at compile time)
//! ```

use super::*;

impl Compiler<'_> {
    pub(super) fn expr_rest(&mut self, e: &Expr) -> Result<Ty> {
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
                if let Some(ty) = self.array_cast(expr, target)? {
                    return Ok(ty);
                }
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
                        self.json_cast_check(t, target)?;
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
                // Each result's type and where its code ends: they are
                // brought to one type at the end (common_type.rs).
                let mut results = Vec::new();
                let mut ends = Vec::new();
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
                    results.push(self.expr(&w.result)?);
                    ends.push(self.program.ops.len());
                    end_jumps.push(self.emit(Op::Jump(0)));
                    self.patch_jump(skip);
                }
                match else_result {
                    Some(e) => {
                        // The ELSE's type leads (PostgreSQL's
                        // transformCaseExpr).
                        results.insert(0, self.expr(e)?);
                        ends.insert(0, self.program.ops.len());
                    }
                    None => {
                        self.push_const(Value::Null);
                    }
                }
                for j in end_jumps {
                    self.patch_jump(j);
                }
                // Untyped literals only: text.
                let target = self
                    .unify("CASE", &results, &ends)?
                    .unwrap_or(DataType::Text);
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
            Expr::AnyOp { .. } | Expr::AllOp { .. } => match self.quantified_array(e)? {
                Some(ty) => Ok(ty),
                None => match e {
                    Expr::AnyOp {
                        left,
                        compare_op,
                        right,
                        ..
                    }
                    | Expr::AllOp {
                        left,
                        compare_op,
                        right,
                    } if !matches!(strip_nested(right), Expr::Subquery(_)) => self
                        .quantified_value(left, compare_op, right, matches!(e, Expr::AnyOp { .. })),
                    _ => self.subquery(e),
                },
            },
            Expr::Array(a) => self.array_constructor(&a.elem),
            Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. } => self.subquery(e),
            Expr::Collate { expr, collation } => {
                // ndpdb compares strings byte by byte: the C collation,
                // which "default", "C", "POSIX" and "ucs_basic" all are here.
                let name = collation.to_string().replace('"', "");
                let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
                if !["default", "C", "POSIX", "ucs_basic"].contains(&name) {
                    return Err(Error::new(
                        SqlState::UNDEFINED_OBJECT,
                        format!("collation \"{name}\" for encoding \"UTF8\" does not exist"),
                    ));
                }
                let t = self.expr(expr)?;
                match t.data_type() {
                    Some(d) if !d.is_textual() => Err(Error::new(
                        SqlState::DATATYPE_MISMATCH,
                        format!("collations are not supported by type {}", d.sql_name()),
                    )),
                    _ => Ok(t),
                }
            }
            e => Err(unsupported(format!("expression {e}"))),
        }
    }
}
