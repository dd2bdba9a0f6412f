//! CREATE TABLE (column defaults, SERIAL and identity columns) / ALTER
//! TABLE … ADD PRIMARY KEY / DROP TABLE and SQL type names.
//!
//! DDL takes effect immediately and durably (the catalog file is replaced
//! atomically), also inside a transaction block; it is not rolled back by
//! ROLLBACK.

pub mod alter_column;
pub mod comment;
pub mod constraints;
pub mod defaults;
pub mod index;
pub mod sequence;
pub mod view;

use ndpdb_formats::{Column, Schema, SqlState};
use sqlparser::ast::{
    ColumnOption, CreateTable, Expr, GeneratedAs, ObjectName, ObjectType, TableConstraint,
};

use crate::bind::scope::ident_name;
pub use crate::bind::scope::table_name;
pub use crate::bind::types::convert_type;
pub use crate::ddl::defaults::check_default;
use crate::ddl::sequence::{column_sequence, serial_type, SerialColumn};
use crate::output::Output;
use crate::{Error, Result};
use ndpdb_host::catalog::{ColumnDefault, Identity};
use ndpdb_host::sequence::SequenceMeta;
use ndpdb_host::Database;

fn pk_columns(cols: &[sqlparser::ast::IndexColumn]) -> Result<Vec<String>> {
    cols.iter()
        .map(|c| match &c.column.expr {
            Expr::Identifier(id) => Ok(ident_name(id)),
            e => Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("primary key on expression {e} is not supported"),
            )),
        })
        .collect()
}

pub fn create_table(db: &Database, ct: &CreateTable) -> Result<Output> {
    let name = table_name(&ct.name)?;
    if ct.query.is_some() {
        return Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "CREATE TABLE AS is not supported",
        ));
    }
    // Clauses that would change what the table holds or who sees it are
    // refused rather than ignored.
    let refused = [
        (ct.partition_by.is_some(), "PARTITION BY"),
        (ct.partition_of.is_some(), "PARTITION OF"),
        (ct.inherits.is_some(), "INHERITS"),
        (ct.like.is_some(), "LIKE"),
        (ct.clone.is_some(), "CLONE"),
        (ct.on_commit.is_some(), "ON COMMIT"),
    ];
    if let Some((_, what)) = refused.iter().find(|(present, _)| *present) {
        return Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            format!("CREATE TABLE … {what} is not supported"),
        ));
    }
    if ct.if_not_exists && db.table(&name).is_ok() {
        return Ok(Output::command("CREATE TABLE"));
    }
    if let sqlparser::ast::CreateTableOptions::With(options) = &ct.table_options {
        storage_parameters(options)?;
    }
    let mut columns = Vec::new();
    let mut pk_names: Vec<String> = Vec::new();
    let mut foreign_keys: Vec<ndpdb_host::foreign_key::ForeignKeyMeta> = Vec::new();
    let mut uniques: Vec<(Option<String>, Vec<String>)> = Vec::new();
    let mut defaults: Vec<ColumnDefault> = Vec::new();
    let mut sequences: Vec<SequenceMeta> = Vec::new();
    for (pos, c) in ct.columns.iter().enumerate() {
        let column = ident_name(&c.name);
        let serial = serial_type(&c.data_type);
        let ty = match serial {
            Some(t) => t,
            None => convert_type(&c.data_type)?,
        };
        let mut nullable = serial.is_none();
        let column_of = |identity| SerialColumn {
            table: &name,
            column: &column,
            pos,
            ty,
            identity,
        };
        if serial.is_some() {
            let (seq, default) = column_sequence(db, column_of(Identity::None), &[], &sequences)?;
            sequences.push(seq);
            defaults.push(default);
        }
        for o in &c.options {
            match &o.option {
                ColumnOption::Default(e) => {
                    if defaults.iter().any(|d| d.column == pos) {
                        return Err(Error::new(
                            SqlState::SYNTAX_ERROR,
                            format!(
                                "multiple default values specified for column \"{column}\" of table \"{name}\""
                            ),
                        ));
                    }
                    check_default(db, e)?;
                    defaults.push(ColumnDefault {
                        column: pos,
                        expr: e.to_string(),
                        identity: Identity::None,
                    });
                }
                ColumnOption::Generated {
                    generated_as,
                    sequence_options,
                    generation_expr: None,
                    ..
                } => {
                    let identity = match generated_as {
                        GeneratedAs::Always => Identity::Always,
                        _ => Identity::ByDefault,
                    };
                    let options = sequence_options.as_deref().unwrap_or(&[]);
                    let (seq, default) =
                        column_sequence(db, column_of(identity), options, &sequences)?;
                    sequences.push(seq);
                    defaults.retain(|d| d.column != pos);
                    defaults.push(default);
                    nullable = false;
                }
                ColumnOption::NotNull => nullable = false,
                ColumnOption::Null => nullable = true,
                ColumnOption::PrimaryKey(_) => {
                    if !pk_names.is_empty() {
                        return Err(Error::new(
                            SqlState::INVALID_TABLE_DEFINITION,
                            format!("multiple primary keys for table \"{name}\" are not allowed"),
                        ));
                    }
                    pk_names.push(ident_name(&c.name));
                    nullable = false;
                }
                ColumnOption::ForeignKey(fk) => {
                    foreign_keys.push(crate::ddl::constraints::foreign_key(fk, Some(&c.name))?);
                }
                ColumnOption::Unique(u) => {
                    uniques.push(crate::ddl::constraints::unique(u, Some(&c.name))?);
                }
                other => {
                    return Err(Error::new(
                        SqlState::FEATURE_NOT_SUPPORTED,
                        format!("column option {other} is not supported"),
                    ))
                }
            }
        }
        columns.push(Column {
            name: ident_name(&c.name),
            ty,
            nullable,
        });
    }
    for tc in &ct.constraints {
        match tc {
            TableConstraint::PrimaryKey(pk) => {
                if !pk_names.is_empty() {
                    return Err(Error::new(
                        SqlState::INVALID_TABLE_DEFINITION,
                        format!("multiple primary keys for table \"{name}\" are not allowed"),
                    ));
                }
                pk_names = pk_columns(&pk.columns)?;
            }
            TableConstraint::ForeignKey(fk) => {
                foreign_keys.push(crate::ddl::constraints::foreign_key(fk, None)?);
            }
            TableConstraint::Unique(u) => uniques.push(crate::ddl::constraints::unique(u, None)?),
            other => {
                return Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    format!("constraint {other} is not supported"),
                ))
            }
        }
    }
    let mut primary_key = Vec::new();
    for n in &pk_names {
        let i = columns.iter().position(|c| &c.name == n).ok_or_else(|| {
            Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{n}\" named in key does not exist"),
            )
        })?;
        primary_key.push(i);
    }
    if columns.is_empty() {
        return Err(Error::new(
            SqlState::SYNTAX_ERROR,
            "a table needs at least one column",
        ));
    }
    let schema = Schema::new(columns, primary_key);
    // Constraints are checked before the table exists and written with it
    // in one catalog write: a refused one leaves nothing behind.
    let mut draft = ndpdb_host::TableMeta {
        id: ndpdb_formats::TableId(0),
        name: name.clone(),
        schema: schema.clone(),
        indexes: Vec::new(),
        defaults: Vec::new(),
        foreign_keys: Vec::new(),
    };
    for &k in &draft.schema.primary_key.clone() {
        draft.schema.columns[k].nullable = false;
    }
    let mut taken: Vec<String> = Vec::new();
    for (uname, cols) in &uniques {
        let index = crate::ddl::constraints::unique_index(db, &draft, uname.clone(), cols, &taken)?;
        let same_as_pk = {
            let mut a = index.columns.clone();
            let mut b = draft.schema.primary_key.clone();
            a.sort_unstable();
            b.sort_unstable();
            a == b
        };
        if same_as_pk || draft.indexes.iter().any(|i| i.columns == index.columns) {
            continue;
        }
        taken.push(index.name.clone());
        draft.indexes.push(index);
    }
    for fk in &foreign_keys {
        let resolved = db.resolve_foreign_key(&draft, fk.clone())?;
        draft.foreign_keys.push(resolved);
    }
    db.create_table_with(
        &name,
        schema,
        ndpdb_host::NewTable {
            defaults,
            sequences,
            indexes: draft.indexes,
            foreign_keys: draft.foreign_keys,
        },
    )?;
    Ok(Output::command("CREATE TABLE"))
}

/// `WITH (…)` storage parameters, checked as PostgreSQL checks them.
/// ndpdb writes pages whole (flush & append) and versions never update
/// in place, so `fillfactor` has no free space to reserve: it is accepted
/// for the tools that set it (pgbench) and has no effect.
fn storage_parameters(options: &[sqlparser::ast::SqlOption]) -> Result<()> {
    use sqlparser::ast::SqlOption;
    for o in options {
        let SqlOption::KeyValue { key, value } = o else {
            return Err(Error::new(
                SqlState::SYNTAX_ERROR,
                format!("syntax error at or near \"{o}\""),
            ));
        };
        let name = ident_name(key);
        match name.as_str() {
            "fillfactor" => {
                let v = value.to_string();
                let n: i64 = v.trim_matches('\'').parse().map_err(|_| {
                    Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("invalid value for integer option \"fillfactor\": {v}"),
                    )
                })?;
                if !(10..=100).contains(&n) {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("value {n} out of bounds for option \"fillfactor\""),
                    ));
                }
            }
            _ => {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("unrecognized parameter \"{name}\""),
                ))
            }
        }
    }
    Ok(())
}

/// `ALTER TABLE [IF EXISTS] t ADD [CONSTRAINT name] PRIMARY KEY (…)`,
/// waiting up to `wait` for running transactions to end (the key is
/// built while none runs). The constraint keeps ndpdb's name
/// `<table>_pkey` whatever name is given.
pub fn alter_table(
    db: &Database,
    at: &sqlparser::ast::AlterTable,
    wait: std::time::Duration,
    interrupt: &ndpdb_host::interrupt::Interrupt,
    notices: &mut Vec<crate::output::Notice>,
) -> Result<Output> {
    use sqlparser::ast::AlterTableOperation;
    let name = table_name(&at.name)?;
    if db.view(&name).is_some() {
        let action = match at.operations.first() {
            Some(AlterTableOperation::AddColumn { .. }) => "ADD COLUMN",
            Some(AlterTableOperation::DropColumn { .. }) => "DROP COLUMN",
            Some(AlterTableOperation::AddConstraint { .. }) => "ADD CONSTRAINT",
            _ => {
                return Err(Error::new(
                    SqlState::WRONG_OBJECT_TYPE,
                    format!("\"{name}\" is not a table"),
                ))
            }
        };
        let what = format!("ALTER action {action} cannot be performed on relation \"{name}\"");
        return Err(crate::ddl::view::not_for_views(db, &name, &what)
            .unwrap_or_else(|| Error::undefined_table(&name)));
    }
    let ts = match db.table(&name) {
        Err(e) if at.if_exists && e.code == SqlState::UNDEFINED_TABLE => {
            return Ok(Output::command("ALTER TABLE"));
        }
        r => r?,
    };
    for op in &at.operations {
        let pk = match op {
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::PrimaryKey(pk),
                ..
            } => pk,
            AlterTableOperation::AddColumn {
                if_not_exists,
                column_def,
                column_position: None,
                ..
            } => {
                crate::ddl::alter_column::add_column(
                    db,
                    &name,
                    column_def,
                    *if_not_exists,
                    wait,
                    interrupt,
                )?;
                continue;
            }
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::ForeignKey(fk),
                ..
            } => {
                db.add_foreign_key(
                    &name,
                    crate::ddl::constraints::foreign_key(fk, None)?,
                    wait,
                    interrupt,
                )?;
                continue;
            }
            AlterTableOperation::AddConstraint {
                constraint: TableConstraint::Unique(u),
                ..
            } => {
                let (uname, cols) = crate::ddl::constraints::unique(u, None)?;
                let index =
                    crate::ddl::constraints::unique_index(db, &ts.meta(), uname, &cols, &[])?;
                db.create_index(&name, index, wait, interrupt, None)?;
                continue;
            }
            AlterTableOperation::DropConstraint {
                name: cname,
                if_exists,
                ..
            } => {
                if let Some(n) = crate::ddl::constraints::drop_constraint(db, &name, cname, *if_exists)? {
                    notices.push(n);
                }
                continue;
            }
            AlterTableOperation::DropColumn {
                column_names,
                if_exists,
                drop_behavior,
                ..
            } => {
                crate::ddl::alter_column::drop_columns(
                    db,
                    &name,
                    column_names,
                    *if_exists,
                    matches!(drop_behavior, Some(sqlparser::ast::DropBehavior::Cascade)),
                    wait,
                    interrupt,
                )?;
                continue;
            }
            _ => {
                return Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    format!(
                        "ALTER TABLE … {op} is not supported (ADD PRIMARY KEY / FOREIGN KEY / UNIQUE, DROP CONSTRAINT, ADD COLUMN and DROP COLUMN are)"
                    ),
                ))
            }
        };
        let meta = ts.meta();
        let key = pk_columns(&pk.columns)?
            .iter()
            .map(|n| {
                meta.schema
                    .columns
                    .iter()
                    .position(|c| &c.name == n)
                    .ok_or_else(|| {
                        Error::new(
                            SqlState::UNDEFINED_COLUMN,
                            format!("column \"{n}\" named in key does not exist"),
                        )
                    })
            })
            .collect::<Result<Vec<usize>>>()?;
        db.add_primary_key(&name, &key, wait, interrupt)?;
    }
    Ok(Output::command("ALTER TABLE"))
}

pub fn drop(
    db: &Database,
    object_type: &ObjectType,
    if_exists: bool,
    names: &[ObjectName],
    cascade: bool,
    notices: &mut Vec<crate::output::Notice>,
) -> Result<Output> {
    use ndpdb_host::catalog::RelKind;
    match object_type {
        ObjectType::Sequence => {
            crate::ddl::view::refuse_other_drop(db, "a sequence", names)?;
            crate::ddl::sequence::drop_sequence(db, if_exists, names, notices)
        }
        ObjectType::Index => {
            crate::ddl::view::refuse_other_drop(db, "an index", names)?;
            crate::ddl::index::drop_index(db, if_exists, names, notices)
        }
        ObjectType::Table => {
            crate::ddl::view::drop_relations(db, RelKind::Table, if_exists, names, cascade, notices)
        }
        ObjectType::View => {
            crate::ddl::view::drop_relations(db, RelKind::View, if_exists, names, cascade, notices)
        }
        _ => Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            format!("DROP {object_type} is not supported"),
        )),
    }
}
