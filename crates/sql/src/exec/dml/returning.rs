//! `RETURNING` of INSERT, UPDATE and DELETE: a select list over the rows
//! the statement wrote, returned as the statement's result.
//!
//! ```text
//!  INSERT … RETURNING id, upper(name) AS n
//!     each row as inserted (defaults filled, after ON CONFLICT DO UPDATE
//!     the row as updated)  ─► [id, upper(name)]  ─► rows + "INSERT 0 n"
//!  UPDATE … RETURNING *     each row's new version ─► "UPDATE n"
//!  DELETE … RETURNING t.*   each row as it was deleted ─► "DELETE n"
//! ```
//!
//! The list is compiled against the target table alone (its name or
//! alias, `*` and `alias.*`), as PostgreSQL resolves it; a row skipped
//! by ON CONFLICT DO NOTHING, or one a concurrent writer took away, is
//! not returned, so the row count always equals the command tag's.

use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::{DataType, Value};
use ndpdb_host::database::TableState;
use sqlparser::ast::SelectItem;

use crate::bind::compile::compile;
use crate::bind::scope::{ident_name, Scope};
use crate::output::ResultColumn;
use crate::plan::query::output_name;
use crate::{Error, Result};
use ndpdb_formats::SqlState;

/// A compiled RETURNING list.
pub struct Returning {
    pub columns: Vec<ResultColumn>,
    programs: Vec<Program>,
}

impl Returning {
    /// The list `items` over rows of `table`, named `alias` in it.
    pub fn plan(
        items: &[SelectItem],
        table: &TableState,
        alias: &str,
        params: &mut Vec<Option<DataType>>,
    ) -> Result<Returning> {
        let meta = table.meta();
        let schema = &meta.schema;
        let mut scope = Scope::default();
        scope.add_table(alias, schema.columns.iter().map(|c| (c.name.clone(), c.ty)));
        let mut out = Returning {
            columns: Vec::new(),
            programs: Vec::new(),
        };
        let all_columns = |out: &mut Returning| {
            for (k, c) in schema.columns.iter().enumerate() {
                out.columns.push(ResultColumn {
                    name: c.name.clone(),
                    ty: c.ty,
                });
                out.programs.push(Program {
                    consts: Vec::new(),
                    ops: vec![Op::Column(k as u32)],
                });
            }
        };
        for item in items {
            match item {
                SelectItem::Wildcard(_) => all_columns(&mut out),
                SelectItem::QualifiedWildcard(kind, _) => {
                    let named = kind.to_string();
                    let named = named.trim_end_matches(".*");
                    let matches = named.rsplit('.').next().is_some_and(|n| {
                        let unquoted = n.trim_matches('"');
                        if n.starts_with('"') {
                            unquoted == alias
                        } else {
                            unquoted.to_lowercase() == alias
                        }
                    });
                    if !matches {
                        return Err(Error::new(
                            SqlState::UNDEFINED_TABLE,
                            format!("missing FROM-clause entry for table \"{named}\""),
                        ));
                    }
                    all_columns(&mut out);
                }
                SelectItem::UnnamedExpr(e) => {
                    let (p, ty) = compile(e, &scope, params)?;
                    out.columns.push(ResultColumn {
                        name: output_name(e),
                        ty: result_type(ty, params),
                    });
                    out.programs.push(p);
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    let (p, ty) = compile(expr, &scope, params)?;
                    out.columns.push(ResultColumn {
                        name: ident_name(alias),
                        ty: result_type(ty, params),
                    });
                    out.programs.push(p);
                }
                other => {
                    return Err(Error::new(
                        SqlState::FEATURE_NOT_SUPPORTED,
                        format!("RETURNING {other} is not supported"),
                    ))
                }
            }
        }
        Ok(out)
    }

    /// The returned row of `row` (a full row of the table).
    pub fn row(&self, row: &[Value], params: &[Value]) -> Result<Vec<Value>> {
        self.programs
            .iter()
            .map(|p| Ok(p.eval(row, params)?))
            .collect()
    }
}

/// A RETURNING column's type: the expression's, a parameter's as
/// inferred, text for an untyped literal (as PostgreSQL resolves
/// `unknown` in a select list).
fn result_type(ty: crate::bind::compile::Ty, params: &[Option<DataType>]) -> DataType {
    match ty {
        crate::bind::compile::Ty::Param(i) => params
            .get(i as usize)
            .copied()
            .flatten()
            .unwrap_or(DataType::Text),
        t => t.data_type().unwrap_or(DataType::Text),
    }
}
