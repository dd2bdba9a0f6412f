//! The json set-returning functions in FROM: `json_each`, `json_each_text`,
//! `json_array_elements`, `json_array_elements_text`, `json_object_keys`
//! and their `jsonb_` twins, answered by
//! [`ndpdb_formats::json_funcs::JsonRows`].
//!
//! ```text
//!  jsonb_each('{"b":1,"a":"x"}')     (a, "x"), (b, 1)     key order of jsonb
//!  json_each('{"b":1,"a":"x"}')      (b, 1), (a, "x")     as written
//!  jsonb_array_elements('[1,[2]]')   1, [2]
//! ```

use ndpdb_formats::expr::Program;
use ndpdb_formats::json_rows::JsonRows;
use ndpdb_formats::{DataType, SqlState, Value};
use sqlparser::ast::{CastKind, Expr};

use crate::bind::compile::{compile, Ty};
use crate::bind::scope::Scope;
use crate::plan::access::ast_type_of;
use crate::{Error, Result};

#[derive(Debug)]
pub struct JsonSource {
    kind: JsonRows,
    arg: Program,
}

/// A row function's columns: (name, type).
pub type Columns = Vec<(&'static str, DataType)>;

/// `name(args)` if it is one of the json row functions: the source and
/// its columns (name, type).
pub fn plan(
    name: &str,
    args: &[Expr],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Option<(JsonSource, Columns)>> {
    let Some((kind, jsonb)) = JsonRows::by_name(name) else {
        return Ok(None);
    };
    let want = if jsonb {
        DataType::Jsonb
    } else {
        DataType::Json
    };
    let refuse = |tys: &[Ty]| {
        let names: Vec<String> = tys
            .iter()
            .map(|t| t.data_type().map_or("unknown".into(), |t| t.sql_name()))
            .collect();
        Error::new(
            SqlState::UNDEFINED_FUNCTION,
            format!("function {name}({}) does not exist", names.join(", ")),
        )
        .with_hint(
            "No function matches the given name and argument types. You might need to add explicit type casts.",
        )
    };
    let [arg] = args else {
        let tys = args
            .iter()
            .map(|a| compile(a, scope, params).map(|c| c.1))
            .collect::<Result<Vec<_>>>()?;
        return Err(refuse(&tys));
    };
    let (mut program, t) = compile(arg, scope, params)?;
    match t {
        Ty::Known(t) if t == want => {}
        Ty::Literal(_) | Ty::Param(_) | Ty::Null => {
            // An untyped argument is read as the function's type.
            let cast = Expr::Cast {
                kind: CastKind::DoubleColon,
                expr: Box::new(arg.clone()),
                data_type: ast_type_of(want),
                format: None,
            };
            program = compile(&cast, scope, params)?.0;
        }
        t => return Err(refuse(&[t])),
    }
    Ok(Some((
        JsonSource { kind, arg: program },
        kind.columns(want),
    )))
}

impl JsonSource {
    pub fn rows(&self, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        self.rows_of(&[], params)
    }

    /// The rows for one input row (the function in a SELECT list).
    pub fn rows_of(&self, row: &[Value], params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let v = self.arg.eval(row, params)?;
        Ok(self.kind.rows(&v)?)
    }

    /// Whether the function's columns keep their own names under an
    /// alias (functions with OUT parameters), unlike a one-column
    /// function whose column takes the alias.
    pub fn named_columns(&self) -> bool {
        self.kind != JsonRows::ObjectKeys
    }
}
