//! `COMMENT ON TABLE | VIEW | COLUMN … IS 'text' | NULL`: a comment kept
//! in the catalog by name, shown in `pg_description` and by
//! `obj_description` / `col_description` (psql's `\dt+`, `\d+`;
//! SQLAlchemy's and pandas' reflection).
//!
//! ```text
//!  COMMENT ON TABLE t IS 'x'        ─► (t, "")  = x     objsubid 0
//!  COMMENT ON COLUMN t.c IS 'y'     ─► (t, c)   = y     objsubid = attnum
//!  COMMENT ON … IS NULL / IS ''     ─► removed
//! ```
//!
//! As PostgreSQL, an empty comment removes it; the object must exist
//! (42P01 for the relation, 42703 for the column); a table is not a view
//! (42809). Comments of other objects are refused (0A000).

use ndpdb_formats::SqlState;
use ndpdb_host::catalog::RelKind;
use ndpdb_host::Database;
use sqlparser::ast::{CommentObject, ObjectName, ObjectNamePart};

use crate::bind::scope::{ident_name, table_name};
use crate::output::Output;
use crate::{Error, Result};

pub fn comment(
    db: &Database,
    object_type: &CommentObject,
    name: &ObjectName,
    text: Option<&str>,
) -> Result<Output> {
    let text = text.filter(|t| !t.is_empty()).map(str::to_string);
    let (relation, column) = match object_type {
        CommentObject::Table | CommentObject::View => (table_name(name)?, None),
        CommentObject::Column => {
            let Some((last, rest)) = name.0.split_last() else {
                return Err(Error::new(SqlState::SYNTAX_ERROR, "column name expected"));
            };
            if rest.is_empty() {
                return Err(Error::new(
                    SqlState::SYNTAX_ERROR,
                    "column name must be qualified",
                ));
            }
            let column = match last {
                ObjectNamePart::Identifier(id) => ident_name(id),
                other => {
                    return Err(Error::new(
                        SqlState::SYNTAX_ERROR,
                        format!("invalid column name {other}"),
                    ))
                }
            };
            (table_name(&ObjectName(rest.to_vec()))?, Some(column))
        }
        other => {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("COMMENT ON {other} is not supported"),
            ))
        }
    };
    let kind = super::view::kind_of(db, &relation).ok_or_else(|| {
        Error::new(
            SqlState::UNDEFINED_TABLE,
            format!("relation \"{relation}\" does not exist"),
        )
    })?;
    let wanted = match object_type {
        CommentObject::Table => Some(RelKind::Table),
        CommentObject::View => Some(RelKind::View),
        _ => None,
    };
    if wanted.is_some_and(|w| w != kind) {
        return Err(Error::new(
            SqlState::WRONG_OBJECT_TYPE,
            format!(
                "\"{relation}\" is not a {}",
                wanted.map_or("", |w| w.word())
            ),
        ));
    }
    if let Some(c) = &column {
        let has = match kind {
            RelKind::Table => db.table(&relation)?.meta().schema.column_index(c).is_some(),
            RelKind::View => db
                .view(&relation)
                .is_some_and(|v| v.columns.iter().any(|x| &x.name == c)),
        };
        if !has {
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{c}\" of relation \"{relation}\" does not exist"),
            ));
        }
    }
    db.set_comment(&relation, column.as_deref(), text)?;
    Ok(Output::command("COMMENT"))
}
