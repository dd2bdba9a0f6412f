//! The expressions catalog queries use, compiled: regular-expression
//! operators (`~`, `!~`, `~*`, `!~*`), integer `&` and `|`, casts to
//! `regclass`, `regproc` and `oid`, subscripts and record fields
//! (`a[i]`, `(r).x`, over the text-carried types of
//! [`crate::bind::array_type`]), `trim(both 'c' from s)`, and the catalog
//! functions `array_upper`, `array_lower`, `current_schemas`,
//! `pg_get_expr`, `pg_get_indexdef`, `pg_get_constraintdef`,
//! `to_regclass`, `to_regtype`, `pg_table_is_visible`.
//!
//! ```text
//!  n ~ '^pg_'                  Column Const Const(0) Call(RegexMatch)
//!  'mt'::regclass              Const(16385)          (the catalog, when planned)
//!  i.indoption[k - 1]          Column … Call(ArrayElem) Cast(int)
//!  pg_get_indexdef(o, k, f)    Const(defs) … Call(IndexDef)
//! ```
//!
//! A name cast to `regclass` or `regproc` is resolved when the statement
//! is planned (PostgreSQL resolves a constant when it parses it): user
//! tables, their indexes and sequences, and the catalog relations, with
//! PostgreSQL's OIDs for the latter; 42P01 / 42883 for an unknown name.
//! `pg_get_indexdef` reads a table of the catalog's indexes made at the
//! same time; `pg_get_expr` returns the expression text the catalog
//! stores (`pg_attrdef.adbin` holds the default as PostgreSQL shows it).

use ndpdb_formats::catalog_funcs::REGEX_CASE_INSENSITIVE;
use sqlparser::ast::{AccessExpr, Subscript, TrimWhereField};

use super::*;
use crate::bind::array_type;
use crate::exec::row_source::system;

impl Compiler<'_> {
    fn database(&self) -> Result<&ndpdb_host::Database> {
        self.scope
            .ctx
            .as_ref()
            .map(|c| c.db())
            .ok_or_else(|| unsupported("a catalog lookup here"))
    }

    /// A text operand of a catalog operator or function.
    fn text_arg(&mut self, e: &Expr, shown: &str) -> Result<Ty> {
        let t = self.expr(e)?;
        let t = self.text_operand(t);
        let t = self.coerce(t, Some(DataType::Text))?;
        match t.data_type() {
            Some(ty) if !ty.is_textual() => Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("operator does not exist: {} {shown} text", ty.sql_name()),
            )),
            _ => Ok(t),
        }
    }

    /// `~`, `!~`, `~*`, `!~*`, `&`, `|`: `None` for other operators.
    pub(super) fn catalog_binary(
        &mut self,
        left: &Expr,
        op: &BinaryOperator,
        right: &Expr,
    ) -> Result<Option<Ty>> {
        let (case_insensitive, negated) = match op {
            BinaryOperator::PGRegexMatch => (false, false),
            BinaryOperator::PGRegexIMatch => (true, false),
            BinaryOperator::PGRegexNotMatch => (false, true),
            BinaryOperator::PGRegexNotIMatch => (true, true),
            BinaryOperator::BitwiseAnd | BinaryOperator::BitwiseOr => {
                return self.bitwise(left, op, right).map(Some)
            }
            _ => return Ok(None),
        };
        let shown = op.to_string();
        self.text_arg(left, &shown)?;
        self.text_arg(right, &shown)?;
        self.push_const(Value::Int(if case_insensitive {
            REGEX_CASE_INSENSITIVE
        } else {
            0
        }));
        self.emit(Op::Call {
            func: Func::RegexMatch,
            nargs: 3,
        });
        if negated {
            self.emit(Op::Not);
        }
        Ok(Some(Ty::Known(DataType::Bool)))
    }

    fn bitwise(&mut self, left: &Expr, op: &BinaryOperator, right: &Expr) -> Result<Ty> {
        let lt = self.expr(left)?;
        let rt = self.expr(right)?;
        let target = lt.data_type().or(rt.data_type()).unwrap_or(DataType::Int);
        // Literals and parameters take the other side's type (in place).
        let lt = self.coerce(lt, Some(target))?;
        let rt = self.coerce(rt, Some(target))?;
        let int = |t: Ty| matches!(t.data_type(), Some(DataType::Int | DataType::BigInt) | None);
        if !int(lt) || !int(rt) {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {op} {}",
                    type_name(lt.data_type()),
                    type_name(rt.data_type())
                ),
            ));
        }
        let func = if *op == BinaryOperator::BitwiseAnd {
            Func::BitAnd
        } else {
            Func::BitOr
        };
        self.emit(Op::Call { func, nargs: 2 });
        let both_int =
            lt.data_type() == Some(DataType::Int) && rt.data_type() == Some(DataType::Int);
        Ok(Ty::Known(if both_int {
            DataType::Int
        } else {
            DataType::BigInt
        }))
    }

    /// `e::regclass`, `e::regproc`, `e::oid`: `None` for other types.
    pub(super) fn catalog_cast(&mut self, e: &Expr, data_type: &AstType) -> Result<Option<Ty>> {
        let kind = match data_type {
            AstType::Regclass => "regclass".to_string(),
            AstType::Custom(name, _) => name.to_string().to_lowercase(),
            _ => return Ok(None),
        };
        let kind = kind.trim_start_matches("pg_catalog.");
        if !matches!(
            kind,
            "regclass" | "regproc" | "oid" | "regtype" | "regnamespace"
        ) {
            return Ok(None);
        }
        let literal = match strip_nested(e) {
            Expr::Value(v) => match &v.value {
                AstValue::SingleQuotedString(s) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        };
        let Some(name) = literal.filter(|_| kind != "oid") else {
            let t = self.expr(e)?;
            // A name known only when the statement runs (a parameter, a
            // text value): looked up then, in the names of the plan's
            // catalog.
            let textual =
                matches!(t, Ty::Param(_)) || t.data_type().is_some_and(|d| d.is_textual());
            if textual && matches!(kind, "regclass" | "regtype") {
                self.coerce(t, Some(DataType::Text))?;
                let (names, code) = if kind == "regclass" {
                    (system::relation_names(self.database()?), 1)
                } else {
                    (system::type_names(), 2)
                };
                self.push_const(Value::Text(names));
                self.push_const(Value::Int(code));
                self.emit(Op::Call {
                    func: Func::NameToOid,
                    nargs: 3,
                });
                return Ok(Some(Ty::Known(DataType::BigInt)));
            }
            // A number (or an oid column) is the OID itself.
            let t = self.coerce(t, Some(DataType::BigInt))?;
            if !matches!(t.data_type(), Some(DataType::Int | DataType::BigInt) | None) {
                return Err(Error::new(
                    SqlState::CANNOT_COERCE,
                    format!("cannot cast type {} to {kind}", type_name(t.data_type())),
                ));
            }
            self.emit(Op::Cast(DataType::BigInt));
            return Ok(Some(Ty::Known(DataType::BigInt)));
        };
        if let Ok(n) = name.trim().parse::<i64>() {
            return Ok(Some(self.push_const(Value::BigInt(n))));
        }
        let oid = match kind {
            "regclass" => system::relation_oid(self.database()?, &name).ok_or_else(|| {
                Error::new(
                    SqlState::UNDEFINED_TABLE,
                    format!("relation \"{name}\" does not exist"),
                )
            })?,
            "regproc" => system::function_oid(&name).ok_or_else(|| {
                Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("function \"{name}\" does not exist"),
                )
            })?,
            "regtype" => system::type_oid(&name).ok_or_else(|| {
                Error::new(
                    SqlState::UNDEFINED_OBJECT,
                    format!("type \"{name}\" does not exist"),
                )
            })?,
            _ => system::namespace_oid(&name).ok_or_else(|| {
                Error::new(
                    SqlState::UNDEFINED_SCHEMA,
                    format!("schema \"{name}\" does not exist"),
                )
            })?,
        };
        Ok(Some(self.push_const(Value::BigInt(oid))))
    }

    /// `a[i]` and `(r).field`, over the types of [`array_type`].
    pub(super) fn field_access(&mut self, root: &Expr, chain: &[AccessExpr]) -> Result<Ty> {
        // `t.col[i]` may come as root `t` with `.col` first in the chain.
        let mut names = match root {
            Expr::Identifier(id) => vec![id.clone()],
            Expr::CompoundIdentifier(ids) => ids.clone(),
            _ => Vec::new(),
        };
        let mut rest = chain;
        if !names.is_empty() {
            while let Some((AccessExpr::Dot(Expr::Identifier(id)), tail)) = rest.split_first() {
                names.push(id.clone());
                rest = tail;
            }
        }
        let mut ty = if names.is_empty() {
            self.expr(root)?
        } else if names.len() == 1 {
            self.expr(&Expr::Identifier(names[0].clone()))?
        } else {
            self.expr(&Expr::CompoundIdentifier(names))?
        };
        for (k, access) in rest.iter().enumerate() {
            if let Ty::Known(DataType::Array(e)) = ty {
                return self.array_subscripts(e, &rest[k..]);
            }
            if ty == Ty::Known(DataType::Jsonb) {
                // `j['key']`, `j[0]`: one step of a path, as `j #> '{key}'`
                // (a text subscript may index an array; a scalar has no
                // elements).
                let AccessExpr::Subscript(Subscript::Index { index }) = access else {
                    return Err(Error::new(
                        SqlState::DATATYPE_MISMATCH,
                        "jsonb subscript does not support slices",
                    ));
                };
                let it = self.expr(index)?;
                let it = match it {
                    Ty::Literal(_) | Ty::Param(_) => self.coerce(it, Some(DataType::Text))?,
                    t => t,
                };
                match it {
                    Ty::Known(DataType::Int | DataType::BigInt) | Ty::Null => {}
                    Ty::Known(t) if t.is_textual() => {}
                    Ty::Known(t) => {
                        return Err(Error::new(
                            SqlState::DATATYPE_MISMATCH,
                            format!("subscript type {} is not supported", t.sql_name()),
                        )
                        .with_hint("jsonb subscript must be coercible to either integer or text."))
                    }
                    _ => {}
                }
                self.emit(Op::Cast(DataType::Text));
                self.emit(Op::Call {
                    func: Func::MakeArray,
                    nargs: 1,
                });
                self.emit(Op::Cast(DataType::Array(
                    ndpdb_formats::array::ElemType::Text,
                )));
                self.emit(Op::Call {
                    func: Func::JsonPath,
                    nargs: 2,
                });
                continue;
            }
            let t = ty.data_type().unwrap_or(DataType::Text);
            ty = match access {
                AccessExpr::Subscript(Subscript::Index { index }) => {
                    let Some(element) = array_type::element_type(t) else {
                        return Err(Error::new(
                            SqlState::DATATYPE_MISMATCH,
                            format!(
                                "cannot subscript type {} because it does not support subscripting",
                                t.sql_name()
                            ),
                        ));
                    };
                    let it = self.expr(index)?;
                    let it = self.coerce(it, Some(DataType::Int))?;
                    if !matches!(
                        it.data_type(),
                        Some(DataType::Int | DataType::BigInt) | None
                    ) {
                        return Err(Error::new(
                            SqlState::DATATYPE_MISMATCH,
                            "array subscript must have type integer",
                        ));
                    }
                    self.emit(Op::Call {
                        func: Func::ArrayElem,
                        nargs: 2,
                    });
                    if element != DataType::Text {
                        self.emit(Op::Cast(element));
                    }
                    Ty::Known(element)
                }
                AccessExpr::Dot(Expr::Identifier(id)) => {
                    let name = crate::bind::scope::ident_name(id);
                    let Some((k, field)) = array_type::record_field(t, &name) else {
                        return Err(Error::new(
                            SqlState::UNDEFINED_COLUMN,
                            format!("could not identify column \"{name}\" in record data type"),
                        ));
                    };
                    self.push_const(Value::Int(k));
                    self.emit(Op::Call {
                        func: Func::RecordField,
                        nargs: 2,
                    });
                    if field != DataType::Text {
                        self.emit(Op::Cast(field));
                    }
                    Ty::Known(field)
                }
                other => return Err(unsupported(format!("the access {other}"))),
            };
        }
        Ok(ty)
    }

    /// `trim([both|leading|trailing] chars from s)`.
    pub(super) fn trim_chars(
        &mut self,
        expr: &Expr,
        trim_where: Option<&TrimWhereField>,
        what: Option<&Expr>,
    ) -> Result<Ty> {
        self.text_arg(expr, "trim")?;
        match what {
            Some(w) => {
                self.text_arg(w, "trim")?;
            }
            None => {
                self.push_const(Value::Text(" ".into()));
            }
        }
        self.push_const(Value::Int(match trim_where {
            Some(TrimWhereField::Leading) => 1,
            Some(TrimWhereField::Trailing) => 2,
            _ => 0,
        }));
        self.emit(Op::Call {
            func: Func::TrimChars,
            nargs: 3,
        });
        Ok(Ty::Known(DataType::Text))
    }

    /// The `pretty` argument of `pg_get_indexdef` / `pg_get_constraintdef`:
    /// a boolean, evaluated and dropped (ndpdb's definitions have no
    /// parentheses or line breaks for it to change).
    fn pretty_flag(&mut self, name: &str, pretty: &Expr) -> Result<()> {
        let t = self.expr(pretty)?;
        let t = self.coerce(t, Some(DataType::Bool))?;
        if !matches!(t, Ty::Known(DataType::Bool) | Ty::Null) {
            return Err(no_such_function(name, &[t]));
        }
        self.discard();
        Ok(())
    }

    /// Drops the value on top of the stack (IS NULL turns it into a
    /// boolean, which a jump to the next op pops).
    pub(super) fn discard(&mut self) {
        self.emit(Op::IsNull);
        let next = self.emit(Op::JumpIfNotTrue(0));
        self.patch_jump(next);
    }

    /// The catalog functions: `None` for other names.
    /// The text of integer `key` in `table` (lines `key \t 0 \t text`,
    /// looked up as pg_get_indexdef's column 0; NULL when absent): the
    /// call is emitted; 42883 naming `name` when `key` is no integer.
    fn lookup_by_oid(&mut self, name: &str, table: String, key: &Expr) -> Result<()> {
        self.push_const(Value::Text(table));
        let t = self.expr(key)?;
        let t = self.coerce(t, Some(DataType::BigInt))?;
        if !matches!(t.data_type(), Some(DataType::Int | DataType::BigInt) | None) {
            return Err(no_such_function(name, &[t]));
        }
        self.push_const(Value::Int(0));
        self.emit(Op::Call {
            func: Func::IndexDef,
            nargs: 3,
        });
        Ok(())
    }

    pub(super) fn catalog_function(&mut self, name: &str, args: &[&Expr]) -> Result<Option<Ty>> {
        let name = name
            .trim_start_matches("pg_catalog.")
            .trim_start_matches("information_schema.");
        let wrong = |tys: &[Ty]| Err(no_such_function(name, tys));
        match name {
            "array_upper" | "array_lower" => {
                let [a, d] = args else {
                    return wrong(&[]);
                };
                let at = self.expr(a)?;
                let real = matches!(at, Ty::Known(DataType::Array(_)));
                if !real && at.data_type().and_then(array_type::element_type).is_none() {
                    return wrong(&[at]);
                }
                let dt = self.expr(d)?;
                self.coerce(dt, Some(DataType::Int))?;
                let func = if name == "array_upper" {
                    Func::ArrayUpper
                } else {
                    Func::ArrayLower
                };
                self.emit(Op::Call { func, nargs: 2 });
                Ok(Some(Ty::Known(DataType::Int)))
            }
            "current_schemas" => {
                let implicit = match args {
                    [e] => match strip_nested(e) {
                        Expr::Value(v) => match &v.value {
                            AstValue::Boolean(b) => *b,
                            _ => return Err(unsupported("current_schemas() of this argument")),
                        },
                        _ => return Err(unsupported("current_schemas() of this argument")),
                    },
                    _ => return wrong(&[]),
                };
                let list = if implicit {
                    "{pg_catalog,public}"
                } else {
                    "{public}"
                };
                self.push_const(Value::Text(list.into()));
                Ok(Some(Ty::Known(array_type::NAME_ARRAY)))
            }
            "pg_get_userbyid" => {
                // The one role, the bootstrap superuser (OID 10) that owns
                // every object; another OID names no role (NULL).
                let [oid] = args else {
                    return wrong(&[]);
                };
                let roles = "10\t0\tpostgres\n6171\t0\tpg_database_owner\n";
                self.lookup_by_oid(name, roles.into(), oid)?;
                Ok(Some(Ty::Known(DataType::Text)))
            }
            "pg_encoding_to_char" => {
                // ndpdb stores and sends UTF8 (encoding 6) only.
                let [code] = args else {
                    return wrong(&[]);
                };
                self.lookup_by_oid(name, "6\t0\tUTF8\n".into(), code)?;
                Ok(Some(Ty::Known(DataType::Text)))
            }
            "array_to_string" => {
                let (array, rest) = match args {
                    [a, rest @ ..] if (1..=2).contains(&rest.len()) => (a, rest),
                    _ => return wrong(&[]),
                };
                let at = self.expr(array)?;
                if at.data_type().is_some_and(|t| {
                    array_type::element_type(t).is_none() && !matches!(t, DataType::Array(_))
                }) {
                    return wrong(&[at]);
                }
                for e in rest {
                    let t = self.expr(e)?;
                    self.coerce(t, Some(DataType::Text))?;
                }
                self.emit(Op::Call {
                    func: Func::ArrayToString,
                    nargs: 1 + rest.len() as u8,
                });
                Ok(Some(Ty::Known(DataType::Text)))
            }
            "format_type" => {
                let [oid, typmod] = args else {
                    return wrong(&[]);
                };
                let t = self.expr(oid)?;
                let t = self.coerce(t, Some(DataType::BigInt))?;
                let m = self.expr(typmod)?;
                let m = self.coerce(m, Some(DataType::Int))?;
                let integer =
                    |t: Ty| matches!(t.data_type(), Some(DataType::Int | DataType::BigInt) | None);
                if !integer(t) || !integer(m) {
                    return wrong(&[t, m]);
                }
                self.emit(Op::Call {
                    func: Func::FormatType,
                    nargs: 2,
                });
                Ok(Some(Ty::Known(DataType::Text)))
            }
            "pg_get_expr" => {
                let (e, rel) = match args {
                    [e, rel] | [e, rel, _] => (e, rel),
                    _ => return wrong(&[]),
                };
                let t = self.expr(e)?;
                self.coerce(t, Some(DataType::Text))?;
                let rt = self.expr(rel)?;
                self.coerce(rt, Some(DataType::BigInt))?;
                self.emit(Op::Call {
                    func: Func::PgGetExpr,
                    nargs: 2,
                });
                Ok(Some(Ty::Known(DataType::Text)))
            }
            "pg_get_indexdef" => {
                let defs = system::index_definitions(self.database()?);
                self.push_const(Value::Text(defs));
                let (oid, col) = match args {
                    [oid] => (oid, None),
                    [oid, col, pretty] => {
                        self.pretty_flag(name, pretty)?;
                        (oid, Some(col))
                    }
                    _ => return wrong(&[]),
                };
                let t = self.expr(oid)?;
                self.coerce(t, Some(DataType::BigInt))?;
                match col {
                    Some(c) => {
                        let t = self.expr(c)?;
                        self.coerce(t, Some(DataType::Int))?;
                    }
                    None => {
                        self.push_const(Value::Int(0));
                    }
                }
                self.emit(Op::Call {
                    func: Func::IndexDef,
                    nargs: 3,
                });
                Ok(Some(Ty::Known(DataType::Text)))
            }
            "pg_get_serial_sequence" => {
                let [table, column] = args else {
                    return wrong(&[]);
                };
                let lines = system::serial_sequence_lines(self.database()?);
                self.push_const(Value::Text(lines));
                for a in [table, column] {
                    let t = self.expr(a)?;
                    let t = self.coerce(t, Some(DataType::Text))?;
                    if let Ty::Known(k) = t {
                        if !k.is_textual() {
                            self.emit(Op::Cast(DataType::Text));
                        }
                    }
                }
                self.emit(Op::Call {
                    func: Func::SerialSequence,
                    nargs: 3,
                });
                Ok(Some(Ty::Known(DataType::Text)))
            }
            "obj_description" | "col_description" => {
                // Comments are of relations and their columns (pg_class):
                // another catalog's object has none.
                let (oid, column) = match (name, args) {
                    ("obj_description", [oid]) => (oid, None),
                    ("obj_description", [oid, catalog]) => {
                        match strip_nested(catalog) {
                            Expr::Value(v) => match &v.value {
                                AstValue::SingleQuotedString(c) if c == "pg_class" => {}
                                AstValue::SingleQuotedString(_) => {
                                    self.push_const(Value::Null);
                                    return Ok(Some(Ty::Known(DataType::Text)));
                                }
                                _ => return wrong(&[]),
                            },
                            _ => return Err(unsupported("obj_description() of this catalog")),
                        }
                        (oid, None)
                    }
                    ("col_description", [oid, column]) => (oid, Some(column)),
                    _ => return wrong(&[]),
                };
                let lines = system::description_lines(self.database()?);
                self.push_const(Value::Text(lines));
                let t = self.expr(oid)?;
                self.coerce(t, Some(DataType::BigInt))?;
                match column {
                    Some(c) => {
                        let t = self.expr(c)?;
                        self.coerce(t, Some(DataType::Int))?;
                    }
                    None => {
                        self.push_const(Value::Int(0));
                    }
                }
                self.emit(Op::Call {
                    func: Func::IndexDef,
                    nargs: 3,
                });
                Ok(Some(Ty::Known(DataType::Text)))
            }
            "pg_get_constraintdef" => {
                // The definitions' table, looked up by OID as
                // pg_get_indexdef's is (column 0: the whole text).
                let oid = match args {
                    [oid] => oid,
                    [oid, pretty] => {
                        self.pretty_flag(name, pretty)?;
                        oid
                    }
                    _ => return wrong(&[]),
                };
                let defs = system::constraint_definitions(self.database()?);
                self.push_const(Value::Text(defs));
                let t = self.expr(oid)?;
                self.coerce(t, Some(DataType::BigInt))?;
                self.push_const(Value::Int(0));
                self.emit(Op::Call {
                    func: Func::IndexDef,
                    nargs: 3,
                });
                Ok(Some(Ty::Known(DataType::Text)))
            }
            "to_regclass" | "to_regtype" => {
                // The name may be a parameter or a column: looked up when
                // the statement runs, in the names the catalog had when
                // it was planned (a DDL since plans it again).
                let [arg] = args else {
                    return wrong(&[]);
                };
                let names = if name == "to_regclass" {
                    system::relation_names(self.database()?)
                } else {
                    system::type_names()
                };
                self.push_const(Value::Text(names));
                let t = self.expr(arg)?;
                let t = self.text_operand(t);
                let t = self.coerce(t, Some(DataType::Text))?;
                if !t.data_type().is_none_or(|d| d.is_textual()) {
                    return wrong(&[t]);
                }
                self.emit(Op::Call {
                    func: Func::NameLookup,
                    nargs: 2,
                });
                Ok(Some(Ty::Known(DataType::BigInt)))
            }
            "pg_table_is_visible" => {
                let [oid] = args else {
                    return wrong(&[]);
                };
                let visible = system::visible_relations(self.database()?);
                self.lookup_by_oid(name, visible, oid)?;
                // 't' for a relation on the search path; an OID of no
                // relation is NULL (PostgreSQL's answer too), the rest
                // false.
                self.emit(Op::Cast(DataType::Bool));
                Ok(Some(Ty::Known(DataType::Bool)))
            }
            "pg_type_is_visible" | "pg_collation_is_visible" => {
                let [oid] = args else {
                    return wrong(&[]);
                };
                let visible =
                    system::visible_types_or_collations(name == "pg_collation_is_visible");
                self.lookup_by_oid(name, visible, oid)?;
                self.emit(Op::Cast(DataType::Bool));
                Ok(Some(Ty::Known(DataType::Bool)))
            }
            "_pg_expandarray" => Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "set-returning functions are not allowed here",
            )),
            _ => Ok(None),
        }
    }
}
