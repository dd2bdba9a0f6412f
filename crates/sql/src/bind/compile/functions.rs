//! Function calls: the scalar functions of `ndpdb_formats::expr::Func`
//! with their arity and argument types checked as PostgreSQL checks them
//! (42883 otherwise), date parts, aggregate calls (an accumulator of the
//! grouping context in aggregate mode), and session values folded into
//! the statement (`current_setting()`, `current_user`, …).
//!
//! ```text
//!  upper(name)          ─► args ─► Op::Call(Upper)
//!  sum(x) (aggregated)  ─► AggSpec deduplicated ─► column of the agg row
//!  "\0session".f('v')   ─► Const(v)
//! ```

use super::*;

impl Compiler<'_> {
    pub(super) fn function_args<'e>(
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

    /// `EXTRACT(unit FROM v)`.
    pub(super) fn date_part(&mut self, func: Func, unit: Value, v: &Expr) -> Result<Ty> {
        self.push_const(unit);
        self.date_part_of(func, v)
    }

    /// The value argument of EXTRACT / date_part (the unit is pushed):
    /// a DATE or TIMESTAMP, an untyped literal read as a timestamp.
    pub(super) fn date_part_of(&mut self, func: Func, v: &Expr) -> Result<Ty> {
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

    pub(super) fn function(&mut self, whole: &Expr, f: &sqlparser::ast::Function) -> Result<Ty> {
        let name = f.name.to_string().to_lowercase();
        if f.over.is_some() {
            return Err(unsupported("window functions"));
        }
        let (args, distinct, star) = self.function_args(f)?;
        if let (true, [setting, lines]) = (is_session_call(f, "setting"), args.as_slice()) {
            // current_setting(name) of a name known when the statement
            // runs: looked up in the session's lines then.
            let t = self.expr(lines)?;
            self.coerce(t, Some(DataType::Text))?;
            let t = self.expr(setting)?;
            let t = self.text_operand(t);
            self.coerce(t, Some(DataType::Text))?;
            self.emit(Op::Call {
                func: Func::Setting,
                nargs: 2,
            });
            return Ok(Ty::Known(DataType::Text));
        }
        if let Some(value) = session_value(f, &args) {
            if name.ends_with(".pg_backend_pid") {
                if let Ok(pid) = value.parse() {
                    return Ok(self.push_const(Value::Int(pid)));
                }
            }
            return Ok(self.push_const(Value::Text(value)));
        }
        // pg_catalog is on every search path: `pg_catalog.f` is `f`.
        let name = match name.strip_prefix("pg_catalog.") {
            Some(unqualified) => unqualified.to_string(),
            None => name,
        };
        let func = match name.as_str() {
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
            // Over booleans false < true: the conjunction is the least
            // value, the disjunction the greatest (NULLs skipped, NULL
            // when none is left) — PostgreSQL's bool_and / bool_or.
            "bool_and" | "every" => Some(AggFunc::Min),
            "bool_or" => Some(AggFunc::Max),
            "array_agg" => Some(AggFunc::ArrayAgg),
            "string_agg" => Some(AggFunc::StringAgg),
            "json_agg" => Some(AggFunc::JsonAgg),
            "jsonb_agg" => Some(AggFunc::JsonbAgg),
            "json_object_agg" => Some(AggFunc::JsonObjectAgg),
            "jsonb_object_agg" => Some(AggFunc::JsonbObjectAgg),
            _ => None,
        };
        let order_by = aggregate_order(f)?;
        if let Some(func) = agg_func {
            let boolean = matches!(name.as_str(), "bool_and" | "every" | "bool_or");
            let boolean = boolean.then_some(name.as_str());
            let clauses = AggClauses {
                distinct,
                boolean,
                order_by,
                filter: f.filter.as_deref(),
            };
            return self.aggregate(whole, func, &args, clauses);
        }
        if f.filter.is_some() {
            return Err(Error::new(
                SqlState::WRONG_OBJECT_TYPE,
                format!("FILTER specified, but {name} is not an aggregate function"),
            ));
        }
        if !order_by.is_empty() {
            return Err(Error::new(
                SqlState::WRONG_OBJECT_TYPE,
                format!("ORDER BY specified, but {name} is not an aggregate function"),
            ));
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
        if let ("pg_typeof", [arg]) = (name.as_str(), args.as_slice()) {
            // The argument is evaluated and dropped; its static type is
            // the answer.
            let t = self.expr(arg)?;
            self.discard();
            let name = match t {
                Ty::Known(t) => type_name_of(t),
                _ => "unknown".into(),
            };
            self.push_const(Value::Text(name));
            return Ok(Ty::Known(DataType::Text));
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
        if let Some(ty) = self.json_function(&name, &args)? {
            return Ok(ty);
        }
        if let Some(ty) = self.array_function(&name, &args)? {
            return Ok(ty);
        }
        let func = Func::by_name(&name).ok_or_else(|| {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name} does not exist"),
            )
        })?;
        let mut tys = Vec::new();
        // Where each argument's code ends (COALESCE, GREATEST and LEAST
        // bring their arguments to one type after compiling them all).
        let mut ends = Vec::new();
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
            ends.push(self.program.ops.len());
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
            Func::OctetLength => {
                match tys.first() {
                    Some(Ty::Known(DataType::Bytea)) => {}
                    Some(t) => {
                        self.coerce(*t, Some(DataType::Text))?;
                    }
                    None => {}
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
            Func::Coalesce | Func::Greatest | Func::Least => {
                let what = match func {
                    Func::Coalesce => "COALESCE",
                    Func::Greatest => "GREATEST",
                    _ => "LEAST",
                };
                self.unify(what, &tys, &ends)?.unwrap_or(DataType::Text)
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

    pub(super) fn aggregate(
        &mut self,
        whole: &Expr,
        func: AggFunc,
        args: &[&Expr],
        clauses: AggClauses<'_>,
    ) -> Result<Ty> {
        let AggClauses {
            distinct,
            boolean,
            order_by,
            filter,
        } = clauses;
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
        // `agg(x) FILTER (WHERE c)` of an aggregate that skips NULLs is
        // `agg(CASE WHEN c THEN x END)` (COUNT(*): of `1`); array_agg,
        // which keeps NULLs, tests the filter per row.
        let filtered_arg;
        let counted_one;
        let (func, args, row_filter): (AggFunc, Vec<&Expr>, Option<&Expr>) = match filter {
            None => (func, args.to_vec(), None),
            Some(c) if func.collects() && func != AggFunc::StringAgg => {
                (func, args.to_vec(), Some(c))
            }
            Some(c) => {
                let (func, arg) = match (func, args) {
                    (AggFunc::CountStar, _) => {
                        counted_one = Expr::value(sqlparser::ast::Value::Number("1".into(), false));
                        (AggFunc::Count, &counted_one)
                    }
                    (_, [a, ..]) => (func, *a),
                    _ => return Err(unsupported("FILTER here")),
                };
                if contains_aggregate(c) {
                    return Err(Error::new(
                        SqlState::GROUPING_ERROR,
                        "aggregate functions are not allowed in FILTER",
                    ));
                }
                filtered_arg = Expr::Case {
                    case_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                    end_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                    operand: None,
                    conditions: vec![sqlparser::ast::CaseWhen {
                        condition: c.clone(),
                        result: arg.clone(),
                    }],
                    else_result: None,
                };
                let mut with: Vec<&Expr> = vec![&filtered_arg];
                with.extend(args.iter().skip(1).copied());
                (func, with, None)
            }
        };
        let args: &[&Expr] = &args;
        let (args, delimiter) = match (func, args) {
            (AggFunc::StringAgg, [a, d]) => (std::slice::from_ref(a), Some(*d)),
            (AggFunc::StringAgg, _) => {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!(
                        "function string_agg with {} arguments does not exist",
                        args.len()
                    ),
                ))
            }
            (AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg, [k, v]) => {
                if distinct {
                    return Err(unsupported("DISTINCT in json_object_agg"));
                }
                (std::slice::from_ref(v), Some(*k))
            }
            (AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg, _) => {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!(
                        "function {}object_agg with {} arguments does not exist",
                        if func == AggFunc::JsonObjectAgg {
                            "json_"
                        } else {
                            "jsonb_"
                        },
                        args.len()
                    ),
                ))
            }
            _ => (args, None),
        };
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
        if let Some(name) = boolean {
            match arg_ty {
                Some(DataType::Bool) | None => {}
                Some(t) => {
                    return Err(Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("function {name}({}) does not exist", t.sql_name()),
                    )
                    .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."))
                }
            }
        }
        let numeric = DataType::Numeric {
            precision: 0,
            scale: 0,
        };
        let result_ty = match func {
            AggFunc::CountStar | AggFunc::Count => DataType::BigInt,
            AggFunc::Min | AggFunc::Max if boolean.is_some() => DataType::Bool,
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
            AggFunc::ArrayAgg => match arg_ty {
                Some(t @ DataType::Array(_)) => t,
                Some(t) => DataType::Array(
                    ndpdb_formats::array::ElemType::of(t)
                        .ok_or_else(|| unsupported(format!("array_agg({t})")))?,
                ),
                None => DataType::Array(ndpdb_formats::array::ElemType::Text),
            },
            AggFunc::JsonAgg | AggFunc::JsonObjectAgg => DataType::Json,
            AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg => DataType::Jsonb,
            AggFunc::StringAgg => match arg_ty {
                Some(DataType::Bytea) => DataType::Bytea,
                Some(t) if t.is_textual() => DataType::Text,
                None => DataType::Text,
                Some(t) => {
                    return Err(Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("function string_agg({}, unknown) does not exist", t.sql_name()),
                    )
                    .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."))
                }
            },
        };
        // string_agg's delimiter, then the ORDER BY keys (only an
        // aggregate whose result depends on the order keeps them).
        let mut extra = Vec::new();
        let mut order = Vec::new();
        let agg = self
            .agg
            .as_deref_mut()
            .ok_or_else(|| unsupported("aggregate"))?;
        let input = agg.input.clone();
        let filtered = match row_filter {
            Some(c) => {
                if contains_aggregate(c) {
                    return Err(Error::new(
                        SqlState::GROUPING_ERROR,
                        "aggregate functions are not allowed in FILTER",
                    ));
                }
                let (p, t) = compile(c, &input, self.params)?;
                expect_bool(t, "FILTER")?;
                extra.push(p);
                true
            }
            None => false,
        };
        if let Some(d) = delimiter.filter(|_| func != AggFunc::StringAgg) {
            if contains_aggregate(d) {
                return Err(Error::new(
                    SqlState::GROUPING_ERROR,
                    "aggregate function calls cannot be nested",
                ));
            }
            extra.push(compile(d, &input, self.params)?.0);
        }
        if let Some(d) = delimiter.filter(|_| func == AggFunc::StringAgg) {
            let (p, t) = compile(d, &input, self.params)?;
            let want = if result_ty == DataType::Bytea {
                DataType::Bytea
            } else {
                DataType::Text
            };
            match t {
                Ty::Known(t) if t != want && !(t.is_textual() && want == DataType::Text) => {
                    return Err(Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!(
                            "function string_agg({}, {}) does not exist",
                            want.sql_name(),
                            t.sql_name()
                        ),
                    ))
                }
                _ => {}
            }
            extra.push(p);
        }
        if func.collects() {
            for o in order_by {
                if contains_aggregate(&o.expr) {
                    return Err(Error::new(
                        SqlState::GROUPING_ERROR,
                        "aggregate function calls cannot be nested",
                    ));
                }
                let desc = matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc));
                let nulls_first = o.options.nulls_first.unwrap_or(desc);
                extra.push(compile(&o.expr, &input, self.params)?.0);
                order.push((desc, nulls_first));
            }
            if distinct && !order_by.is_empty() {
                let arg_text = args.first().map(|a| a.to_string());
                if order_by
                    .iter()
                    .any(|o| Some(o.expr.to_string()) != arg_text)
                {
                    return Err(Error::new(
                        SqlState::INVALID_COLUMN_REFERENCE,
                        "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
                    ));
                }
            }
        }
        // An aggregate whose inputs name columns, none of this query's,
        // belongs to an enclosing query in PostgreSQL (it aggregates that
        // query's rows); ndpdb refuses it rather than answer per row.
        let inputs: Vec<&Expr> = args.iter().copied().chain(row_filter).collect();
        let local = arg.iter().chain(&extra).any(|p| !p.columns().is_empty());
        if !local && inputs.iter().any(|e| names_a_column(e)) {
            return Err(unsupported(
                "an aggregate of an enclosing query's columns inside a subquery",
            ));
        }
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
                extra,
                order,
                filtered,
            },
            ast: whole.clone(),
        });
        let col = agg.group_exprs.len() + agg.aggregates.len() - 1;
        self.emit(Op::Column(col as u32));
        Ok(Ty::Known(result_ty))
    }
}

/// Whether `e` refers to a column (of any query level).
fn names_a_column(e: &Expr) -> bool {
    use sqlparser::ast::{Query, Visit, Visitor};
    struct Find(bool, usize);
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
            self.1 += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
            self.1 -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            if self.1 == 0 && matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
                self.0 = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut f = Find(false, 0);
    let _ = e.visit(&mut f);
    f.0
}

/// What an aggregate call says besides its arguments.
pub(super) struct AggClauses<'a> {
    distinct: bool,
    /// bool_and / bool_or / every: the name, for messages.
    boolean: Option<&'a str>,
    order_by: &'a [sqlparser::ast::OrderByExpr],
    filter: Option<&'a Expr>,
}

/// A type's name as `pg_typeof` and `regtype` print it (no modifier).
pub(super) fn type_name_of(t: DataType) -> String {
    match t {
        DataType::Varchar(_) => "character varying".into(),
        DataType::Char(_) => "character".into(),
        DataType::Numeric { .. } => "numeric".into(),
        DataType::Array(e) => format!("{}[]", type_name_of(e.scalar())),
        t => t.sql_name(),
    }
}

/// The ORDER BY inside an aggregate call's parentheses; any other clause
/// there is refused.
fn aggregate_order(f: &sqlparser::ast::Function) -> Result<&[sqlparser::ast::OrderByExpr]> {
    let FunctionArguments::List(l) = &f.args else {
        return Ok(&[]);
    };
    let mut order: &[sqlparser::ast::OrderByExpr] = &[];
    for c in &l.clauses {
        match c {
            sqlparser::ast::FunctionArgumentClause::OrderBy(o) => order = o,
            other => return Err(unsupported(format!("the argument clause {other}"))),
        }
    }
    Ok(order)
}

/// PostgreSQL's answers to a call with the wrong number of arguments:
/// COALESCE/GREATEST/LEAST with none are a syntax error, more than
/// `FUNC_MAX_ARGS` (100) arguments are 54023, and any other count names the
/// signature that does not exist (42883).
pub(super) fn check_arity(name: &str, func: Func, tys: &[Ty]) -> Result<()> {
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

/// A session value the session resolved at plan time
/// (`session::session_values`): `"\0session".name('value')`.
/// Whether `f` is `"\0session".name(…)`.
fn is_session_call(f: &sqlparser::ast::Function, name: &str) -> bool {
    match f.name.0.as_slice() {
        [sqlparser::ast::ObjectNamePart::Identifier(q), sqlparser::ast::ObjectNamePart::Identifier(n)] => {
            q.value == SESSION_VALUE && n.value == name
        }
        _ => false,
    }
}

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
