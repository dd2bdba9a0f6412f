//! `CREATE SEQUENCE` / `DROP SEQUENCE`, and the column forms that create
//! one: SERIAL / BIGSERIAL / SMALLSERIAL and `GENERATED { ALWAYS | BY
//! DEFAULT } AS IDENTITY`. A column's sequence is named as PostgreSQL
//! names it (`<table>_<column>_seq`, then `…_seq1`, …), owned by the
//! column (dropped with its table), and its default is
//! `nextval('<seq>'::regclass)`.

use ndpdb_formats::{DataType, SqlState};
use ndpdb_host::catalog::{ColumnDefault, Identity};
use ndpdb_host::sequence::SequenceMeta;
use ndpdb_host::Database;
use sqlparser::ast::{DataType as AstType, Expr, ObjectName, SequenceOptions};

use crate::bind::compile::compile;
use crate::bind::scope::table_name;
use crate::bind::scope::Scope;
use crate::bind::types::convert_type;
use crate::output::Output;
use crate::{Error, Result};

/// SERIAL types: the column's integer type.
pub fn serial_type(t: &AstType) -> Option<DataType> {
    let AstType::Custom(name, args) = t else {
        return None;
    };
    if !args.is_empty() {
        return None;
    }
    match name.to_string().to_lowercase().as_str() {
        "serial" | "serial4" | "smallserial" | "serial2" => Some(DataType::Int),
        "bigserial" | "serial8" => Some(DataType::BigInt),
        _ => None,
    }
}

fn constant(e: &Expr) -> Result<i64> {
    let mut params = Vec::new();
    let (p, _) = compile(e, &Scope::default(), &mut params)?;
    let v = p.eval(&[], &[])?;
    v.as_i64().ok_or_else(|| {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("sequence option {e} is not an integer"),
        )
    })
}

/// A sequence of values of `ty` with PostgreSQL's defaults for what
/// `options` leaves out.
pub fn sequence_meta(
    name: &str,
    ty: DataType,
    options: &[SequenceOptions],
) -> Result<SequenceMeta> {
    let (lo, hi) = match ty {
        DataType::Int => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    let mut increment = 1;
    let (mut min, mut max, mut start, mut cycle) = (None, None, None, false);
    for o in options {
        match o {
            SequenceOptions::IncrementBy(e, _) => increment = constant(e)?,
            SequenceOptions::MinValue(e) => min = e.as_ref().map(constant).transpose()?,
            SequenceOptions::MaxValue(e) => max = e.as_ref().map(constant).transpose()?,
            SequenceOptions::StartWith(e, _) => start = Some(constant(e)?),
            SequenceOptions::Cache(_) => {}
            // sqlparser's flag is NO: `Cycle(true)` is NO CYCLE.
            SequenceOptions::Cycle(no) => cycle = !*no,
        }
    }
    if increment == 0 {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            "INCREMENT must not be zero",
        ));
    }
    let min = min.unwrap_or(if increment > 0 { 1 } else { lo });
    let max = max.unwrap_or(if increment > 0 { hi } else { -1 });
    if min >= max {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("MINVALUE ({min}) must be less than MAXVALUE ({max})"),
        ));
    }
    let start = start.unwrap_or(if increment > 0 { min } else { max });
    if start < min || start > max {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("START value ({start}) cannot be less than MINVALUE ({min}) or greater than MAXVALUE ({max})"),
        ));
    }
    Ok(SequenceMeta {
        name: name.to_string(),
        start,
        increment,
        min,
        max,
        cycle,
        owner: None,
    })
}

/// PostgreSQL's name for a column's sequence, free among `taken` too.
fn sequence_name(db: &Database, table: &str, column: &str, taken: &[SequenceMeta]) -> String {
    let base = format!("{table}_{column}_seq");
    let mut name = base.clone();
    let mut n = 0;
    while db.relation_exists(&name) || taken.iter().any(|s| s.name == name) {
        n += 1;
        name = format!("{base}{n}");
    }
    name
}

/// A SERIAL or identity column being created.
pub struct SerialColumn<'a> {
    pub table: &'a str,
    pub column: &'a str,
    /// Its position in the table.
    pub pos: usize,
    pub ty: DataType,
    pub identity: Identity,
}

/// The sequence and default of column `c`; `taken`: sequences the same
/// CREATE TABLE makes before it.
pub fn column_sequence(
    db: &Database,
    c: SerialColumn<'_>,
    options: &[SequenceOptions],
    taken: &[SequenceMeta],
) -> Result<(SequenceMeta, ColumnDefault)> {
    let SerialColumn {
        table,
        column,
        pos,
        ty,
        identity,
    } = c;
    if !matches!(ty, DataType::Int | DataType::BigInt) {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!(
                "identity column type must be smallint, integer, or bigint, not {}",
                ty.sql_name()
            ),
        ));
    }
    let name = sequence_name(db, table, column, taken);
    let mut meta = sequence_meta(&name, ty, options)?;
    // The table's id is filled in when the table exists.
    meta.owner = Some((ndpdb_formats::TableId(0), pos));
    let default = ColumnDefault {
        column: pos,
        expr: format!("nextval('{name}'::regclass)"),
        identity,
    };
    Ok((meta, default))
}

pub fn create_sequence(
    db: &Database,
    name: &ObjectName,
    if_not_exists: bool,
    data_type: Option<&AstType>,
    options: &[SequenceOptions],
) -> Result<Output> {
    let name = table_name(name)?;
    if db.relation_exists(&name) {
        if if_not_exists {
            return Ok(Output::command("CREATE SEQUENCE"));
        }
        return Err(Error::new(
            SqlState::DUPLICATE_TABLE,
            format!("relation \"{name}\" already exists"),
        ));
    }
    let ty = match data_type {
        Some(t) => convert_type(t)?,
        None => DataType::BigInt,
    };
    db.create_sequence(sequence_meta(&name, ty, options)?)?;
    Ok(Output::command("CREATE SEQUENCE"))
}

pub fn drop_sequence(
    db: &Database,
    if_exists: bool,
    names: &[ObjectName],
    notices: &mut Vec<crate::output::Notice>,
) -> Result<Output> {
    for n in names {
        let name = table_name(n)?;
        match db.drop_sequence(&name) {
            Ok(()) => {}
            Err(e) if if_exists && e.code == SqlState::UNDEFINED_TABLE => {
                notices.push(crate::output::Notice::info(format!(
                    "sequence \"{name}\" does not exist, skipping"
                )))
            }
            Err(e) if e.code == SqlState::UNDEFINED_TABLE => {
                return Err(Error::new(
                    SqlState::UNDEFINED_TABLE,
                    format!("sequence \"{name}\" does not exist"),
                ))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Output::command("DROP SEQUENCE"))
}
