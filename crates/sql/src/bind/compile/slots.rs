//! The expressions binding hands to the query being planned, each
//! answered with a parameter slot: a column of an enclosing query (a
//! correlated reference), a subquery (EXISTS, IN, ANY / ALL, scalar) and
//! a sequence function (`nextval`, `currval`, `setval`).
//!
//! ```text
//!  outer.x        ─► QueryBinder::outer_ref     ─► Op::Param(slot)
//!  (SELECT …)     ─► QueryBinder::subquery      ─► Op::Param(slot)
//!  nextval('s')   ─► QueryBinder::sequence_call ─► Op::Param(slot)
//! ```
//!
//! The compiler never learns what a slot holds; the planner fills it
//! before (once) or while (per row) the program runs.

use super::*;

impl Compiler<'_> {
    /// A name `scope` lacks may be an enclosing query's column (a
    /// correlated reference: a parameter); else `not_found` stands.
    pub(super) fn outer_column(
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
    pub(super) fn sequence_function(&mut self, func: SequenceFunc, args: &[&Expr]) -> Result<Ty> {
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
    pub(super) fn subquery(&mut self, e: &Expr) -> Result<Ty> {
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
}
