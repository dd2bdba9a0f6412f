//! How a table is read: a primary-key lookup, a secondary-index range,
//! or a scan — chosen from the WHERE terms that filter the table.
//!
//! ```text
//!  terms `col = v` on every primary-key column       ─► PrimaryKey
//!  else the index with the longest prefix of `col = v` terms, then a
//!  range (`<`, `<=`, `>`, `>=`, BETWEEN) on its next column ─► Index
//!  (the primary key in order counts as one when terms fix a prefix of it)
//!  else                                               ─► Scan
//! ```
//!
//! `v` is anything without a column of the row: constants, parameters,
//! a correlated value or a subquery computed once. The terms stay in the
//! source's filter, so every row an index gives is checked again on the
//! version read. An index range that covers more than a quarter of the
//! index's entries gives way to a scan when it runs (a scan reads pages
//! in order; an index read is one lookup per row).
//!
//! The primary key in order is built from every key on its first read,
//! not when a plan names it: a plan may never read it (a correlated
//! EXISTS that hashes its table instead, CH-benCHmark Q4), and building
//! it for 3 M ORDER-LINE keys costs seconds.

use std::sync::Arc;

use ndpdb_formats::expr::Program;
use ndpdb_formats::DataType;
use ndpdb_host::catalog::IndexMeta;
use ndpdb_host::database::TableState;
use ndpdb_host::storage::secondary_index::SecondaryIndex;
use sqlparser::ast::{BinaryOperator, Expr};

use crate::bind::compile::{comparable, compile, Ty};
use crate::bind::scope::{ident_name, Scope};
use crate::Result;

/// How a table is read.
pub enum Access {
    Scan,
    /// Equality on every primary-key column (programs over no columns).
    PrimaryKey(Vec<Program>),
    /// A key range of a secondary index.
    Index(IndexAccess),
}

/// The index a plan reads.
#[derive(Clone)]
pub enum PlannedIndex {
    Secondary(Arc<SecondaryIndex>),
    /// The primary key in SQL order (`TableState::key_order`), built on
    /// the first read.
    KeyOrder(IndexMeta),
}

impl PlannedIndex {
    /// The primary key in order of `ts`, if it has a key.
    fn key_order(ts: &TableState) -> Option<PlannedIndex> {
        let meta = ts.meta();
        let columns = &meta.schema.primary_key;
        (ts.pk.get().is_some() && !columns.is_empty()).then(|| {
            PlannedIndex::KeyOrder(IndexMeta {
                name: meta.pk_constraint_name(),
                columns: columns.clone(),
                unique: false,
                constraint: false,
            })
        })
    }

    pub fn meta(&self) -> &IndexMeta {
        match self {
            PlannedIndex::Secondary(ix) => &ix.meta,
            PlannedIndex::KeyOrder(meta) => meta,
        }
    }

    /// Whether `table` still has the index (a secondary index may have
    /// been dropped since the plan was made).
    pub fn present(&self, table: &TableState) -> bool {
        match self {
            PlannedIndex::Secondary(ix) => table.has_index(ix),
            PlannedIndex::KeyOrder(_) => table.pk.get().is_some(),
        }
    }

    /// The index to read, built now if it is the key order's first read;
    /// `None` when `table` no longer has it.
    pub fn get(&self, table: &TableState) -> Result<Option<Arc<SecondaryIndex>>> {
        match self {
            PlannedIndex::Secondary(ix) => Ok(table.has_index(ix).then(|| ix.clone())),
            PlannedIndex::KeyOrder(_) => Ok(table.key_order()?),
        }
    }
}

/// A secondary-index range: `col = v` on the first `prefix.len()` key
/// columns, then optional bounds (value, inclusive) on the next one.
pub struct IndexAccess {
    pub index: PlannedIndex,
    pub prefix: Vec<Program>,
    pub lower: Option<(Program, bool)>,
    pub upper: Option<(Program, bool)>,
}

impl Access {
    /// EXPLAIN's name of the access.
    pub fn explain(&self) -> String {
        match self {
            Access::Scan => "Scan".into(),
            Access::PrimaryKey(_) => "Index Lookup (primary key)".into(),
            Access::Index(ix) => format!("Index Scan using {}", ix.index.meta().name),
        }
    }
}

fn compiles(e: &Expr, scope: &Scope) -> bool {
    let mut p = Vec::new();
    compile(e, scope, &mut p).is_ok()
}

/// The access path for a table filtered by the terms `conds`.
pub fn plan_access(
    ts: &TableState,
    conds: &[Expr],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Access> {
    match pk_access(ts, conds, scope, params)? {
        Access::Scan => index_access(ts, conds, scope, params),
        a => Ok(a),
    }
}

/// The column a term side names, if it is a column of `scope`.
pub(crate) fn column_of(e: &Expr, scope: &Scope) -> Option<usize> {
    match e {
        Expr::Identifier(id) => scope.resolve(None, &ident_name(id)).ok(),
        Expr::CompoundIdentifier(ids) if ids.len() == 2 => scope
            .resolve(Some(&ident_name(&ids[0])), &ident_name(&ids[1]))
            .ok(),
        Expr::Nested(e) => column_of(e, scope),
        _ => None,
    }
}

/// One term as `column op value` (the operator turned when the column is
/// on the right).
fn comparison<'e>(c: &'e Expr, scope: &Scope) -> Vec<(usize, BinaryOperator, &'e Expr)> {
    let flip = |op: &BinaryOperator| match op {
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        op => op.clone(),
    };
    match c {
        Expr::BinaryOp { left, op, right }
            if matches!(
                op,
                BinaryOperator::Eq
                    | BinaryOperator::Lt
                    | BinaryOperator::LtEq
                    | BinaryOperator::Gt
                    | BinaryOperator::GtEq
            ) =>
        {
            if let Some(col) = column_of(left, scope) {
                vec![(col, op.clone(), right.as_ref())]
            } else if let Some(col) = column_of(right, scope) {
                vec![(col, flip(op), left.as_ref())]
            } else {
                vec![]
            }
        }
        Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } => match column_of(expr, scope) {
            Some(col) => vec![
                (col, BinaryOperator::GtEq, low.as_ref()),
                (col, BinaryOperator::LtEq, high.as_ref()),
            ],
            None => vec![],
        },
        _ => vec![],
    }
}

/// `value` compiled to compare with column `col` in index order: an
/// untyped literal or parameter becomes the column's type; a typed value
/// must compare without a cast (a cast could round a bound). CHAR
/// columns take only values cast to them (their padding).
fn bound_value(
    value: &Expr,
    col: DataType,
    empty: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Option<Program>> {
    if !compiles(value, empty) {
        return Ok(None);
    }
    let mut probe = Vec::new();
    let (_, ty) = compile(value, empty, &mut probe)?;
    let cast = match ty {
        Ty::Literal(_) | Ty::Param(_) => true,
        Ty::Null => return Ok(None),
        Ty::Known(t) if matches!(col, DataType::Char(_)) || !comparable(t, col) => return Ok(None),
        Ty::Known(_) => false,
    };
    let e = if cast {
        Expr::Cast {
            kind: sqlparser::ast::CastKind::Cast,
            expr: Box::new(value.clone()),
            data_type: ast_type_of(col),
            format: None,
        }
    } else {
        value.clone()
    };
    Ok(Some(compile(&e, empty, params)?.0))
}

/// The secondary index the terms use best (longest equality prefix, then
/// a range on the next column), or a scan.
fn index_access(
    ts: &TableState,
    conds: &[Expr],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Access> {
    let terms: Vec<(usize, BinaryOperator, &Expr)> =
        conds.iter().flat_map(|c| comparison(c, scope)).collect();
    if terms.is_empty() {
        return Ok(Access::Scan);
    }
    let empty = scope.no_columns();
    let meta = ts.meta();
    let has = |c: usize, eq: bool| {
        terms.iter().any(|(col, op, v)| {
            *col == c && (*op == BinaryOperator::Eq) == eq && compiles(v, &empty)
        })
    };
    // (equality prefix, range on the next column) over `cols`.
    let fit = |cols: &[usize]| {
        let prefix = cols.iter().take_while(|&&c| has(c, true)).count();
        (prefix, cols.get(prefix).is_some_and(|&c| has(c, false)))
    };
    let mut best: Option<(usize, bool, PlannedIndex)> = None;
    for index in ts.indexes() {
        let (prefix, range) = fit(&index.meta.columns);
        if prefix == 0 && !range {
            continue;
        }
        if best
            .as_ref()
            .is_none_or(|(p, r, _)| (prefix, range) > (*p, *r))
        {
            best = Some((prefix, range, PlannedIndex::Secondary(index)));
        }
    }
    // The primary key in order serves terms fixing a proper prefix of it
    // (all of it is a key lookup), when no index serves them better; it
    // is built on its first read (`TableState::key_order`).
    let (prefix, range) = fit(&meta.schema.primary_key);
    if prefix > 0
        && best
            .as_ref()
            .is_none_or(|(p, r, _)| (prefix, range) > (*p, *r))
    {
        if let Some(order) = PlannedIndex::key_order(ts) {
            best = Some((prefix, range, order));
        }
    }
    let Some((prefix_len, _, index)) = best else {
        return Ok(Access::Scan);
    };
    let mut prefix = Vec::new();
    for &c in &index.meta().columns[..prefix_len] {
        let ty = meta.schema.columns[c].ty;
        let value = terms
            .iter()
            .filter(|(col, op, _)| *col == c && *op == BinaryOperator::Eq)
            .find_map(|(_, _, v)| bound_value(v, ty, &empty, params).transpose());
        match value {
            Some(p) => prefix.push(p?),
            None => return Ok(Access::Scan),
        }
    }
    let (mut lower, mut upper) = (None, None);
    if let Some(&c) = index.meta().columns.get(prefix_len) {
        let ty = meta.schema.columns[c].ty;
        for (col, op, v) in &terms {
            if *col != c {
                continue;
            }
            let slot = match op {
                BinaryOperator::Gt | BinaryOperator::GtEq if lower.is_none() => &mut lower,
                BinaryOperator::Lt | BinaryOperator::LtEq if upper.is_none() => &mut upper,
                _ => continue,
            };
            if let Some(p) = bound_value(v, ty, &empty, params)? {
                let inclusive = matches!(op, BinaryOperator::GtEq | BinaryOperator::LtEq);
                *slot = Some((p, inclusive));
            }
        }
    }
    if prefix.is_empty() && lower.is_none() && upper.is_none() {
        return Ok(Access::Scan);
    }
    Ok(Access::Index(IndexAccess {
        index,
        prefix,
        lower,
        upper,
    }))
}

fn pk_access(
    ts: &TableState,
    conds: &[Expr],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Access> {
    let keys = pk_terms(ts, conds, scope, params)?;
    if !keys.is_empty() && keys.iter().all(Option::is_some) {
        Ok(Access::PrimaryKey(keys.into_iter().flatten().collect()))
    } else {
        Ok(Access::Scan)
    }
}

/// The values `col = v` terms give the leading primary-key columns (of
/// their types), when they do not give all of them: the rows a scan
/// keeps share that key prefix, which is what SERIALIZABLE locks
/// (`Transaction::scan_key_prefix`).
pub fn key_prefix(
    ts: &TableState,
    conds: &[Expr],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Vec<Program>> {
    let keys = pk_terms(ts, conds, scope, params)?;
    if keys.iter().all(Option::is_some) {
        return Ok(Vec::new());
    }
    Ok(keys.into_iter().map_while(|k| k).collect())
}

/// The value each primary-key column gets from a `col = v` term.
pub(crate) fn pk_terms(
    ts: &TableState,
    conds: &[Expr],
    scope: &Scope,
    params: &mut Vec<Option<DataType>>,
) -> Result<Vec<Option<Program>>> {
    let pk = &ts.meta().schema.primary_key;
    if pk.is_empty() {
        return Ok(Vec::new());
    }
    let empty = scope.no_columns();
    let mut keys: Vec<Option<Program>> = vec![None; pk.len()];
    for c in conds {
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = c
        else {
            continue;
        };
        for (col, val) in [(left, right), (right, left)] {
            let name = match col.as_ref() {
                Expr::Identifier(id) => ident_name(id),
                Expr::CompoundIdentifier(ids) if ids.len() == 2 => ident_name(&ids[1]),
                _ => continue,
            };
            let Ok(ci) = scope.resolve(None, &name) else {
                continue;
            };
            let Some(k) = pk.iter().position(|&p| p == ci) else {
                continue;
            };
            if !compiles(val, &empty) {
                continue;
            }
            // Cast the key to the column's type so the index key matches.
            let ty = ts.meta().schema.columns[ci].ty;
            let cast = Expr::Cast {
                kind: sqlparser::ast::CastKind::Cast,
                expr: val.clone(),
                data_type: ast_type_of(ty),
                format: None,
            };
            keys[k] = Some(compile(&cast, &empty, params)?.0);
            break;
        }
    }
    Ok(keys)
}

pub fn ast_type_of(t: DataType) -> sqlparser::ast::DataType {
    use sqlparser::ast::{CharacterLength, DataType as A, ExactNumberInfo, TimezoneInfo};
    match t {
        DataType::Bool => A::Boolean,
        DataType::Int => A::Int(None),
        DataType::BigInt => A::BigInt(None),
        DataType::Double => A::DoublePrecision,
        DataType::Numeric { precision: 0, .. } => A::Numeric(ExactNumberInfo::None),
        DataType::Numeric { precision, scale } => A::Numeric(ExactNumberInfo::PrecisionAndScale(
            precision as u64,
            scale as i64,
        )),
        DataType::Date => A::Date,
        DataType::Timestamp => A::Timestamp(None, TimezoneInfo::None),
        DataType::Text => A::Text,
        DataType::Varchar(n) => A::Varchar(Some(CharacterLength::IntegerLength {
            length: n as u64,
            unit: None,
        })),
        DataType::Char(n) => A::Char(Some(CharacterLength::IntegerLength {
            length: n as u64,
            unit: None,
        })),
        DataType::Bytea => A::Bytea,
        DataType::Json => A::JSON,
        DataType::Jsonb => A::JSONB,
        DataType::Array(e) => A::Array(sqlparser::ast::ArrayElemTypeDef::SquareBracket(
            Box::new(ast_type_of(e.scalar())),
            None,
        )),
    }
}
