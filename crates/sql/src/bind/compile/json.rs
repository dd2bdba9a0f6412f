//! JSON expressions: the `json` / `jsonb` operators, functions and casts,
//! typed as PostgreSQL types them.
//!
//! ```text
//!  j -> 'k', j -> 2         JsonGet          result: j's type (json | jsonb)
//!  j ->> 'k'                JsonGetText      text
//!  j #> '{a,0}', #>>        JsonPath(Text)   the path read as text[]
//!  a @> b, a <@ b           JsonbContains / JsonbContained   jsonb only
//!  j ? 'k', ?| / ?& '{…}'   JsonbExists / …Any / …All
//!  a || b, j - k, j #- p    JsonbConcat / JsonbDelete / JsonbDeletePath
//!  j = k, j < k …           jsonb only (json has no equality)
//! ```
//!
//! An untyped literal beside a json operand is read as the type the
//! operator wants (`j -> 'a'` a key, `j @> '{"a":1}'` jsonb), as
//! PostgreSQL resolves `unknown`.

use ndpdb_formats::array::ElemType;

use super::*;

const TEXT_ARRAY: DataType = DataType::Array(ElemType::Text);

fn is_json(t: Ty) -> bool {
    matches!(t, Ty::Known(DataType::Json | DataType::Jsonb))
}

/// Operators that exist only for json values.
fn json_only(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Arrow
            | BinaryOperator::LongArrow
            | BinaryOperator::HashArrow
            | BinaryOperator::HashLongArrow
            | BinaryOperator::HashMinus
            | BinaryOperator::Question
            | BinaryOperator::QuestionAnd
            | BinaryOperator::QuestionPipe
    )
}

impl Compiler<'_> {
    fn json_call(&mut self, func: Func, nargs: usize) {
        self.emit(Op::Call {
            func,
            nargs: nargs as u8,
        });
    }

    /// A json operator (both operands compiled, `lt` then `rt` on the
    /// stack); `None` when neither operand is json and the operator is
    /// not one of json's own.
    pub(super) fn json_binary(
        &mut self,
        op: &BinaryOperator,
        lt: Ty,
        rt: Ty,
    ) -> Result<Option<Ty>> {
        if !is_json(lt) && !is_json(rt) && !json_only(op) {
            return Ok(None);
        }
        let jsonb = |t: Ty| t == Ty::Known(DataType::Jsonb);
        let untyped = |t: Ty| matches!(t, Ty::Literal(_) | Ty::Param(_) | Ty::Null);
        match op {
            BinaryOperator::Arrow | BinaryOperator::LongArrow => {
                if !is_json(lt) {
                    return Err(no_operator(lt, op, rt));
                }
                let rt = match rt {
                    Ty::Literal(_) | Ty::Param(_) => self.coerce(rt, Some(DataType::Text))?,
                    t => t,
                };
                match rt {
                    Ty::Known(DataType::Int | DataType::BigInt) | Ty::Null => {}
                    Ty::Known(t) if t.is_textual() => {}
                    _ => return Err(no_operator(lt, op, rt)),
                }
                if matches!(rt, Ty::Known(DataType::Char(_))) {
                    self.emit(Op::Call {
                        func: Func::Rtrim,
                        nargs: 1,
                    });
                }
                let text = *op == BinaryOperator::LongArrow;
                self.json_call(
                    if text {
                        Func::JsonGetText
                    } else {
                        Func::JsonGet
                    },
                    2,
                );
                Ok(Some(if text { Ty::Known(DataType::Text) } else { lt }))
            }
            BinaryOperator::HashArrow | BinaryOperator::HashLongArrow => {
                if !is_json(lt) {
                    return Err(no_operator(lt, op, rt));
                }
                let rt = self.coerce(rt, Some(TEXT_ARRAY))?;
                if !matches!(rt, Ty::Known(DataType::Array(_)) | Ty::Null) {
                    return Err(no_operator(lt, op, rt));
                }
                let text = *op == BinaryOperator::HashLongArrow;
                self.json_call(
                    if text {
                        Func::JsonPathText
                    } else {
                        Func::JsonPath
                    },
                    2,
                );
                Ok(Some(if text { Ty::Known(DataType::Text) } else { lt }))
            }
            BinaryOperator::AtArrow | BinaryOperator::ArrowAt => {
                let (lt, rt) = match (lt, rt) {
                    (l, r) if jsonb(l) && untyped(r) => (l, self.coerce(r, Some(DataType::Jsonb))?),
                    (l, r) if untyped(l) && jsonb(r) => (self.coerce(l, Some(DataType::Jsonb))?, r),
                    other => other,
                };
                if !(jsonb(lt) || lt == Ty::Null) || !(jsonb(rt) || rt == Ty::Null) {
                    return Err(no_operator(lt, op, rt));
                }
                self.json_call(
                    if *op == BinaryOperator::AtArrow {
                        Func::JsonbContains
                    } else {
                        Func::JsonbContained
                    },
                    2,
                );
                Ok(Some(Ty::Known(DataType::Bool)))
            }
            BinaryOperator::Question
            | BinaryOperator::QuestionPipe
            | BinaryOperator::QuestionAnd => {
                let want = if *op == BinaryOperator::Question {
                    DataType::Text
                } else {
                    TEXT_ARRAY
                };
                let rt = self.coerce(rt, Some(want))?;
                let ok_right = match rt {
                    Ty::Known(t) if want == DataType::Text => t.is_textual(),
                    Ty::Known(DataType::Array(e)) => e.scalar().is_textual(),
                    Ty::Null => true,
                    _ => false,
                };
                if !jsonb(lt) || !ok_right {
                    return Err(no_operator(lt, op, rt));
                }
                self.json_call(
                    match op {
                        BinaryOperator::Question => Func::JsonbExists,
                        BinaryOperator::QuestionPipe => Func::JsonbExistsAny,
                        _ => Func::JsonbExistsAll,
                    },
                    2,
                );
                Ok(Some(Ty::Known(DataType::Bool)))
            }
            BinaryOperator::StringConcat => {
                let (lt, rt) = match (lt, rt) {
                    (l, r) if jsonb(l) && untyped(r) => (l, self.coerce(r, Some(DataType::Jsonb))?),
                    (l, r) if untyped(l) && jsonb(r) => (self.coerce(l, Some(DataType::Jsonb))?, r),
                    other => other,
                };
                if jsonb(lt) && jsonb(rt) {
                    self.json_call(Func::JsonbConcat, 2);
                    return Ok(Some(Ty::Known(DataType::Jsonb)));
                }
                // json || text and the like concatenate their texts.
                Ok(None)
            }
            BinaryOperator::Minus => {
                if !jsonb(lt) {
                    return Err(no_operator(lt, op, rt));
                }
                let rt = match rt {
                    Ty::Literal(_) | Ty::Param(_) => self.coerce(rt, Some(DataType::Text))?,
                    t => t,
                };
                match rt {
                    Ty::Known(DataType::Int | DataType::BigInt) | Ty::Null => {}
                    Ty::Known(DataType::Array(e)) if e.scalar().is_textual() => {}
                    Ty::Known(t) if t.is_textual() => {}
                    _ => return Err(no_operator(lt, op, rt)),
                }
                self.json_call(Func::JsonbDelete, 2);
                Ok(Some(Ty::Known(DataType::Jsonb)))
            }
            BinaryOperator::HashMinus => {
                let rt = self.coerce(rt, Some(TEXT_ARRAY))?;
                if !jsonb(lt) || !matches!(rt, Ty::Known(DataType::Array(_)) | Ty::Null) {
                    return Err(no_operator(lt, op, rt));
                }
                self.json_call(Func::JsonbDeletePath, 2);
                Ok(Some(Ty::Known(DataType::Jsonb)))
            }
            BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq => {
                // jsonb compares with jsonb (the generic comparison does
                // it once both are jsonb); json has no comparison.
                let (lt, rt) = match (lt, rt) {
                    (l, r) if jsonb(l) && untyped(r) => (l, self.coerce(r, Some(DataType::Jsonb))?),
                    (l, r) if untyped(l) && jsonb(r) => (self.coerce(l, Some(DataType::Jsonb))?, r),
                    other => other,
                };
                if (jsonb(lt) || lt == Ty::Null) && (jsonb(rt) || rt == Ty::Null) {
                    return Ok(None);
                }
                Err(no_operator(lt, op, rt))
            }
            _ => Err(no_operator(lt, op, rt)),
        }
    }

    /// `expr::target` where json is on either side: refuses what
    /// PostgreSQL has no cast for (42846), before any row is read.
    pub(super) fn json_cast_check(&self, from: Ty, target: DataType) -> Result<()> {
        let Ty::Known(from) = from else {
            return Ok(());
        };
        let json = |t: DataType| matches!(t, DataType::Json | DataType::Jsonb);
        let allowed = match (from, target) {
            (f, t) if json(f) && (json(t) || t.is_textual()) => true,
            (DataType::Jsonb, t) => t.is_numeric() || t == DataType::Bool,
            (f, t) if json(t) => f.is_textual(),
            _ => true,
        };
        if allowed {
            Ok(())
        } else {
            Err(Error::new(
                SqlState::CANNOT_COERCE,
                format!(
                    "cannot cast type {} to {}",
                    from.sql_name(),
                    target.sql_name()
                ),
            ))
        }
    }

    /// The json functions by name; `None` for other names.
    pub(super) fn json_function(&mut self, name: &str, args: &[&Expr]) -> Result<Option<Ty>> {
        let (family, base) = match name.strip_prefix("jsonb_") {
            Some(b) => (Some(DataType::Jsonb), b),
            None => match name.strip_prefix("json_") {
                Some(b) => (Some(DataType::Json), b),
                None => (None, name),
            },
        };
        let wants = |f: Option<DataType>| f.unwrap_or(DataType::Json);
        // The functions behind jsonb's operators, by their own names.
        let operator = match name {
            "jsonb_contains" => Some(BinaryOperator::AtArrow),
            "jsonb_contained" => Some(BinaryOperator::ArrowAt),
            "jsonb_exists" => Some(BinaryOperator::Question),
            "jsonb_exists_any" => Some(BinaryOperator::QuestionPipe),
            "jsonb_exists_all" => Some(BinaryOperator::QuestionAnd),
            "jsonb_concat" => Some(BinaryOperator::StringConcat),
            "jsonb_delete" => Some(BinaryOperator::Minus),
            "jsonb_delete_path" => Some(BinaryOperator::HashMinus),
            _ => None,
        };
        if let Some(op) = operator {
            let [a, b] = args else {
                let tys = self.compile_all(args)?;
                return Err(no_such_function(name, &tys));
            };
            // Both operands as jsonb's functions type them: the first
            // is jsonb.
            let t = self.expr(a)?;
            let t = self.coerce(t, Some(DataType::Jsonb))?;
            if !matches!(t, Ty::Known(DataType::Jsonb) | Ty::Null) {
                let mut tys = vec![t];
                tys.push(self.expr(b)?);
                return Err(no_such_function(name, &tys));
            }
            let rt = self.expr(b)?;
            return match self.json_binary(&op, t, rt)? {
                Some(ty) => Ok(Some(ty)),
                None => Err(no_such_function(name, &[t, rt])),
            };
        }
        match (family, base) {
            (Some(f), "object") => {
                if !(1..=2).contains(&args.len()) {
                    let tys = self.compile_all(args)?;
                    return Err(no_such_function(name, &tys));
                }
                for a in args {
                    let t = self.expr(a)?;
                    let t = self.coerce(t, Some(TEXT_ARRAY))?;
                    if !matches!(t, Ty::Known(DataType::Array(e)) if e.scalar().is_textual())
                        && t != Ty::Null
                    {
                        return Err(no_such_function(name, &[t]));
                    }
                }
                self.json_call(
                    if f == DataType::Jsonb {
                        Func::JsonbObject
                    } else {
                        Func::JsonObject
                    },
                    args.len(),
                );
                Ok(Some(Ty::Known(f)))
            }
            (None, "to_json" | "to_jsonb" | "array_to_json") => {
                let jsonb = name == "to_jsonb";
                if args.len() != 1 {
                    let tys = self.compile_all(args)?;
                    return Err(no_such_function(name, &tys));
                }
                let t = self.expr(args[0])?;
                let t = self.coerce(t, Some(DataType::Text))?;
                if name == "array_to_json" && !matches!(t, Ty::Known(DataType::Array(_)) | Ty::Null)
                {
                    return Err(no_such_function(name, &[t]));
                }
                self.json_call(if jsonb { Func::ToJsonb } else { Func::ToJson }, 1);
                Ok(Some(Ty::Known(if jsonb {
                    DataType::Jsonb
                } else {
                    DataType::Json
                })))
            }
            (Some(f), "build_object" | "build_array") => {
                if args.len() > u8::MAX as usize {
                    return Err(Error::new(
                        SqlState::TOO_MANY_ARGUMENTS,
                        "cannot pass more than 100 arguments to a function",
                    ));
                }
                for a in args {
                    let t = self.expr(a)?;
                    self.coerce(t, Some(DataType::Text))?;
                }
                let func = match (f, base) {
                    (DataType::Json, "build_object") => Func::JsonBuildObject,
                    (_, "build_object") => Func::JsonbBuildObject,
                    (DataType::Json, _) => Func::JsonBuildArray,
                    _ => Func::JsonbBuildArray,
                };
                self.json_call(func, args.len());
                Ok(Some(Ty::Known(f)))
            }
            (
                Some(_),
                "typeof" | "array_length" | "strip_nulls" | "pretty" | "extract_path"
                | "extract_path_text" | "set" | "insert",
            ) => {
                let f = wants(family);
                if matches!(base, "pretty" | "set" | "insert") && f != DataType::Jsonb {
                    return Ok(None);
                }
                if base.starts_with("extract_path") && args.len() < 2 {
                    let tys = self.compile_all(args)?;
                    return Err(no_such_function(name, &tys));
                }
                let Some(first) = args.first() else {
                    return Err(no_such_function(name, &[]));
                };
                let t = self.expr(first)?;
                let t = self.coerce(t, Some(f))?;
                if !matches!(t, Ty::Null) && t != Ty::Known(f) {
                    let mut tys = vec![t];
                    tys.extend(self.compile_all(&args[1..])?);
                    return Err(no_such_function(name, &tys));
                }
                let (func, result) = match base {
                    "typeof" => (Func::JsonTypeof, DataType::Text),
                    "array_length" => (Func::JsonArrayLength, DataType::Int),
                    "strip_nulls" => (Func::JsonStripNulls, f),
                    "pretty" => (Func::JsonbPretty, DataType::Text),
                    "extract_path" => (Func::JsonPath, f),
                    "extract_path_text" => (Func::JsonPathText, DataType::Text),
                    "insert" => (Func::JsonbInsert, f),
                    _ => (Func::JsonbSet, f),
                };
                match func {
                    Func::JsonPath | Func::JsonPathText => {
                        // VARIADIC text: the path elements as one text[].
                        for a in &args[1..] {
                            let t = self.expr(a)?;
                            let t = self.coerce(t, Some(DataType::Text))?;
                            if !matches!(t, Ty::Known(DataType::Text) | Ty::Null) {
                                self.emit(Op::Cast(DataType::Text));
                            }
                        }
                        self.json_call(Func::MakeArray, args.len() - 1);
                        self.emit(Op::Cast(TEXT_ARRAY));
                        self.json_call(func, 2);
                    }
                    Func::JsonbSet | Func::JsonbInsert => {
                        if !(3..=4).contains(&args.len()) {
                            let mut tys = vec![t];
                            tys.extend(self.compile_all(&args[1..])?);
                            return Err(no_such_function(name, &tys));
                        }
                        let wanted = [TEXT_ARRAY, DataType::Jsonb, DataType::Bool];
                        for (a, want) in args[1..].iter().zip(wanted) {
                            let t = self.expr(a)?;
                            let t = self.coerce(t, Some(want))?;
                            if !matches!(t, Ty::Null) && t != Ty::Known(want) {
                                return Err(no_such_function(name, &[t]));
                            }
                        }
                        self.json_call(func, args.len());
                    }
                    _ => {
                        if args.len() != 1 {
                            let mut tys = vec![t];
                            tys.extend(self.compile_all(&args[1..])?);
                            return Err(no_such_function(name, &tys));
                        }
                        self.json_call(func, 1);
                    }
                }
                Ok(Some(Ty::Known(result)))
            }
            _ => Ok(None),
        }
    }

    fn compile_all(&mut self, args: &[&Expr]) -> Result<Vec<Ty>> {
        args.iter().map(|a| self.expr(a)).collect()
    }
}
