//! Aggregates over a selection of a PAX page, folded into the same
//! [`Acc`] accumulators the row path uses, so partial results merge and
//! finish exactly as before.
//!
//! ```text
//!  COUNT(*)          ─► selection length
//!  SUM/AVG(col)      ─► one typed loop: i32/i64 → i128, NUMERIC mantissas
//!                       per scale → exact Decimal, DOUBLE in row order
//!  MIN/MAX(col)      ─► typed best row, one Value per page
//!  f(spn_score(col)) ─► the SPN over the bytea minipage, a batch of rows
//!                       at a time, no Value per row
//!  anything else     ─► the row evaluator on the decoded row
//! ```

use std::cmp::Ordering;

use ndpdb_formats::agg::{Acc, AggFunc, AggSpec};
use ndpdb_formats::expr::{Func, Op};
use ndpdb_formats::page::{ColumnData, ColumnRef, PageRef, Zone};
use ndpdb_formats::udf::spn_scores;
use ndpdb_formats::{DataType, Decimal, Result, Value};

use crate::kernel::{column, f64_cmp, rd_i128, rd_i64};

/// How an aggregate's argument is read.
#[derive(Clone, Debug, PartialEq)]
pub enum AggInput {
    /// COUNT(*).
    Star,
    /// A column as it is stored.
    Column(usize),
    /// `spn_score(column)` over a BYTEA column.
    Spn(usize),
    /// Any other expression: evaluated per row.
    Rows,
}

impl AggInput {
    pub fn compile(spec: &AggSpec, types: &[DataType]) -> AggInput {
        let Some(arg) = &spec.arg else {
            return AggInput::Star;
        };
        match arg.ops.as_slice() {
            [Op::Column(c)] if (*c as usize) < types.len() => AggInput::Column(*c as usize),
            [Op::Column(c), Op::Cast(t)] if types.get(*c as usize) == Some(t) => {
                AggInput::Column(*c as usize)
            }
            [Op::Column(c), Op::Call {
                func: Func::SpnScore,
                nargs: 1,
            }] if types.get(*c as usize) == Some(&DataType::Bytea) => AggInput::Spn(*c as usize),
            _ => AggInput::Rows,
        }
    }
}

/// A row of the page decoded for the row path.
pub trait RowSource {
    fn row(&mut self, slot: u16) -> Result<&[Value]>;
}

/// The selected rows of one page, as the kernels see them.
pub struct Batch<'p, 'a> {
    pub page: &'p PageRef<'a>,
    pub types: &'p [DataType],
    pub sel: &'p [u16],
    pub params: &'p [Value],
}

/// Folds the rows of `batch` into `acc`.
pub fn fold_page(
    acc: &mut Acc,
    spec: &AggSpec,
    input: &AggInput,
    batch: &Batch<'_, '_>,
    rows: &mut dyn RowSource,
) -> Result<()> {
    let Batch {
        page,
        types,
        sel,
        params,
    } = *batch;
    let by_rows =
        |acc: &mut Acc, rows: &mut dyn RowSource, slots: &mut dyn Iterator<Item = u16>| {
            for s in slots {
                let v = match &spec.arg {
                    Some(p) => p.eval(rows.row(s)?, params)?,
                    None => Value::Null,
                };
                acc.add(spec, v)?;
            }
            Ok(())
        };
    if !acc.folds_directly() {
        return by_rows(acc, rows, &mut sel.iter().copied());
    }
    match input {
        AggInput::Star => {
            acc.add_count(sel.len() as i64);
            Ok(())
        }
        AggInput::Rows => by_rows(acc, rows, &mut sel.iter().copied()),
        AggInput::Column(c) => {
            let col = column(page, *c, types[*c])?;
            if !fold_column(acc, spec, &col, sel)? {
                by_rows(acc, rows, &mut sel.iter().copied())?;
            }
            Ok(())
        }
        AggInput::Spn(c) => {
            let col = column(page, *c, types[*c])?;
            // NULL arguments leave every aggregate as it is; the rest are
            // scored in batches and folded in row order.
            let mut inputs = Vec::with_capacity(sel.len());
            for &s in sel {
                let i = s as usize;
                if col.is_null(i) {
                    by_rows(acc, rows, &mut std::iter::once(s))?;
                } else {
                    inputs.push(col.var(i)?);
                }
            }
            let mut scores = vec![0.0; inputs.len()];
            spn_scores(&inputs, &mut scores)?;
            let mut best: Option<f64> = None;
            for x in scores {
                match spec.func {
                    AggFunc::Sum | AggFunc::Avg => acc.add_double(x),
                    AggFunc::Count => acc.add_count(1),
                    AggFunc::CountStar => acc.add_count(1),
                    AggFunc::ArrayAgg
                    | AggFunc::StringAgg
                    | AggFunc::JsonAgg
                    | AggFunc::JsonbAgg
                    | AggFunc::JsonObjectAgg
                    | AggFunc::JsonbObjectAgg => acc.add(spec, Value::Double(x))?,
                    AggFunc::Min | AggFunc::Max => {
                        let better = best.is_none_or(|b| {
                            let o = f64_cmp(x, b);
                            if spec.func == AggFunc::Min {
                                o == Ordering::Less
                            } else {
                                o == Ordering::Greater
                            }
                        });
                        if better {
                            best = Some(x);
                        }
                    }
                }
            }
            if let Some(b) = best {
                acc.add(spec, Value::Double(b))?;
            }
            Ok(())
        }
    }
}

/// The typed loops; `false` if this column type has none for `spec`.
fn fold_column(acc: &mut Acc, spec: &AggSpec, col: &ColumnRef<'_>, sel: &[u16]) -> Result<bool> {
    let nulls = col.has_nulls();
    let live = |s: &u16| !(nulls && col.is_null(*s as usize));
    match spec.func {
        // Order-dependent aggregates take values one at a time.
        AggFunc::ArrayAgg
        | AggFunc::StringAgg
        | AggFunc::JsonAgg
        | AggFunc::JsonbAgg
        | AggFunc::JsonObjectAgg
        | AggFunc::JsonbObjectAgg => return Ok(false),
        AggFunc::CountStar => acc.add_count(sel.len() as i64),
        AggFunc::Count => acc.add_count(sel.iter().filter(|s| live(s)).count() as i64),
        AggFunc::Sum | AggFunc::Avg => match (col.ty, col.data) {
            (DataType::Int, ColumnData::Fixed { values, .. }) => {
                let (mut sum, mut n) = (0i128, 0i64);
                for s in sel.iter().filter(|s| live(s)) {
                    let i = *s as usize * 4;
                    sum += i32::from_le_bytes([
                        values[i],
                        values[i + 1],
                        values[i + 2],
                        values[i + 3],
                    ]) as i128;
                    n += 1;
                }
                acc.add_int_sum(sum, n)?;
            }
            (DataType::BigInt, ColumnData::Fixed { values, .. }) => {
                let (mut sum, mut n) = (0i128, 0i64);
                for s in sel.iter().filter(|s| live(s)) {
                    let i = *s as usize * 8;
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&values[i..i + 8]);
                    sum += i64::from_le_bytes(b) as i128;
                    n += 1;
                }
                acc.add_int_sum(sum, n)?;
            }
            (DataType::Double, ColumnData::Fixed { values, .. }) => {
                for s in sel.iter().filter(|s| live(s)) {
                    let i = *s as usize * 8;
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&values[i..i + 8]);
                    acc.add_double(f64::from_le_bytes(b));
                }
            }
            (DataType::Numeric { .. }, ColumnData::Numeric { mantissas, scales }) => {
                let Some(scale) = small_numeric(col, sel.len()) else {
                    return sum_numeric_runs(acc, mantissas, scales, sel, live);
                };
                // One scale on the page and mantissas so small that the
                // page's sum fits an i64: their low 8 bytes, summed.
                let low = |s: u16| rd_i64(mantissas, 2 * s as usize);
                let (sum, n) = if nulls {
                    sel.iter()
                        .filter(|s| live(s))
                        .fold((0i64, 0i64), |(a, n), s| (a + low(*s), n + 1))
                } else {
                    (sel.iter().map(|s| low(*s)).sum(), sel.len() as i64)
                };
                acc.add_decimal_sum(Decimal::new(sum as i128, scale), n)?;
            }
            _ => return Ok(false),
        },
        AggFunc::Min | AggFunc::Max => {
            let want = if spec.func == AggFunc::Min {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            let mut best: Option<usize> = None;
            let key = |i: usize| -> Result<Key<'_>> {
                Ok(match col.data {
                    ColumnData::Fixed { width: 4, values } => Key::I(i32::from_le_bytes([
                        values[4 * i],
                        values[4 * i + 1],
                        values[4 * i + 2],
                        values[4 * i + 3],
                    ])
                        as i128),
                    ColumnData::Fixed { width: 8, values } => {
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&values[8 * i..8 * i + 8]);
                        if col.ty == DataType::Double {
                            Key::F(f64::from_le_bytes(b))
                        } else {
                            Key::I(i64::from_le_bytes(b) as i128)
                        }
                    }
                    ColumnData::Numeric { mantissas, scales } => {
                        Key::D(Decimal::new(rd_i128(mantissas, i), scales[i]))
                    }
                    ColumnData::Var { .. } => Key::B(col.var(i)?),
                    _ => Key::None,
                })
            };
            // Booleans and arrays do not order by their bytes.
            if matches!(col.ty, DataType::Bool | DataType::Array(_)) {
                return Ok(false);
            }
            let mut best_key = Key::None;
            for s in sel.iter().filter(|s| live(s)) {
                let i = *s as usize;
                let k = key(i)?;
                if best.is_none() || k.cmp(&best_key) == want {
                    best = Some(i);
                    best_key = k;
                }
            }
            if let Some(i) = best {
                acc.add(spec, col.value(i)?)?;
            }
        }
    }
    Ok(true)
}

/// SUM of NUMERIC values of mixed scales: runs of one scale sum as
/// integers, each run is one exact Decimal addition.
fn sum_numeric_runs(
    acc: &mut Acc,
    mantissas: &[u8],
    scales: &[u8],
    sel: &[u16],
    live: impl Fn(&u16) -> bool,
) -> Result<bool> {
    let mut run: Option<(u8, i128, i64)> = None;
    for s in sel.iter().filter(|s| live(s)) {
        let i = *s as usize;
        let (sc, m) = (scales[i], rd_i128(mantissas, i));
        match &mut run {
            Some((rs, sum, n)) if *rs == sc => {
                *sum = sum.checked_add(m).ok_or_else(overflow)?;
                *n += 1;
            }
            _ => {
                if let Some((rs, sum, n)) = run.take() {
                    acc.add_decimal_sum(Decimal::new(sum, rs), n)?;
                }
                run = Some((sc, m, 1));
            }
        }
    }
    if let Some((rs, sum, n)) = run {
        acc.add_decimal_sum(Decimal::new(sum, rs), n)?;
    }
    Ok(true)
}

/// The scale of a NUMERIC page column whose zone map proves one scale for
/// every value and mantissas small enough that `rows` of them sum
/// within an i64 (each then equals its low 8 bytes).
fn small_numeric(col: &ColumnRef<'_>, rows: usize) -> Option<u8> {
    let Some(Zone::Int { min, max, scale }) = col.zone() else {
        return None;
    };
    let bound = min.unsigned_abs().max(max.unsigned_abs());
    (bound.checked_mul(rows as u128 + 1)? <= i64::MAX as u128).then_some(scale)
}

/// A typed sort key with [`Value::sort_cmp`]'s order for one column type.
enum Key<'a> {
    None,
    I(i128),
    F(f64),
    D(Decimal),
    B(&'a [u8]),
}

impl Key<'_> {
    fn cmp(&self, o: &Key<'_>) -> Ordering {
        match (self, o) {
            (Key::I(a), Key::I(b)) => a.cmp(b),
            (Key::F(a), Key::F(b)) => f64_cmp(*a, *b),
            (Key::D(a), Key::D(b)) => a.cmp_value(*b),
            (Key::B(a), Key::B(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }
}

fn overflow() -> ndpdb_formats::Error {
    ndpdb_formats::Error::sql(
        ndpdb_formats::SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        "numeric value out of range",
    )
}
