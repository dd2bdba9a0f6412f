//! Predicates as typed kernels over a PAX page and a selection vector.
//!
//! A [`Program`] is stack bytecode; [`Predicate::compile`] replays it
//! symbolically into a tree. Comparisons of a column with a constant (or
//! a statement parameter, known when the scan starts), AND, OR, NOT and
//! IS [NOT] NULL become [`Node`]s evaluated a page at a time straight
//! from the minipages; everything else makes the whole predicate run
//! row at a time through the one evaluator (`Program::eval`), so results
//! and errors are those of the row path by construction.
//!
//! ```text
//!  d >= '1999-01-01' AND q BETWEEN 1 AND 100000
//!   Column(6) Const(0) Ge JumpIfFalseKeep Column(7) Const(1) Ge … And And
//!        ⇓
//!  And(Cmp(Ge, col 6: i64, 915148800000000), And(Cmp(Ge, col 7: i32, 1), Cmp(Le, …)))
//! ```
//!
//! Truth values are SQL's: per selected row 1 = TRUE, 0 = FALSE, 2 = NULL.
//! AND evaluates its right side only on rows its left side did not make
//! FALSE, OR only on rows not TRUE — the rows the short-circuiting row
//! evaluator would visit.

use std::cmp::Ordering;
use std::sync::Arc;

use ndpdb_formats::expr::{Op, Program};
use ndpdb_formats::page::layout::ZONE_SIZE;
use ndpdb_formats::page::{ColumnData, ColumnRef, PageRef, Zone};
use ndpdb_formats::{DataType, Decimal, Error, Result, Value};

use crate::in_set::IntSet;
pub use crate::kernel::{column, FALSE, NULL, TRUE};
use crate::kernel::{f64_cmp, keep, rd_i128, rd_i32, rd_i64};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    fn of(op: &Op) -> Option<Cmp> {
        Some(match op {
            Op::Eq => Cmp::Eq,
            Op::Ne => Cmp::Ne,
            Op::Lt => Cmp::Lt,
            Op::Le => Cmp::Le,
            Op::Gt => Cmp::Gt,
            Op::Ge => Cmp::Ge,
            _ => return None,
        })
    }

    /// `b op a` for `a op b`.
    fn flipped(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::Le => Cmp::Ge,
            Cmp::Gt => Cmp::Lt,
            Cmp::Ge => Cmp::Le,
            c => c,
        }
    }

    #[inline]
    fn holds(self, o: Ordering) -> bool {
        match self {
            Cmp::Eq => o == Ordering::Equal,
            Cmp::Ne => o != Ordering::Equal,
            Cmp::Lt => o == Ordering::Less,
            Cmp::Le => o != Ordering::Greater,
            Cmp::Gt => o == Ordering::Greater,
            Cmp::Ge => o != Ordering::Less,
        }
    }
}

/// The constant side of a comparison, in the column's representation.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// INT, DATE (as days), BIGINT, TIMESTAMP columns compared as i64;
    /// `day_scale` multiplies a DATE column into microseconds.
    I64 {
        value: i64,
        day_scale: i64,
    },
    Numeric(Decimal),
    F64(f64),
    Bytes(Vec<u8>),
    Bool(bool),
}

/// A vectorized predicate tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// A constant truth value.
    Const(u8),
    /// `column op scalar`.
    Cmp {
        column: usize,
        op: Cmp,
        scalar: Scalar,
    },
    IsNull {
        column: usize,
        negated: bool,
    },
    /// `column [NOT] IN (integers)` of an INT or BIGINT column.
    InSet {
        column: usize,
        set: Arc<IntSet>,
        negated: bool,
    },
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
}

/// A compiled predicate: kernels when the whole program fits, else the
/// program itself (evaluated row at a time).
#[derive(Clone, Debug)]
pub enum Predicate {
    Vector(Node),
    Rows(Program),
}

/// A symbolic stack entry while replaying bytecode.
#[derive(Clone, Debug)]
enum Sym {
    Column(usize),
    Value(Value),
    Pred(Node),
}

impl Predicate {
    /// Compiles `program` for rows of `types` with `params` bound.
    pub fn compile(program: &Program, types: &[DataType], params: &[Value]) -> Predicate {
        match replay(program, types, params) {
            Some(n) => Predicate::Vector(n),
            None => Predicate::Rows(program.clone()),
        }
    }

    /// Whether the predicate runs as kernels.
    pub fn is_vectorized(&self) -> bool {
        matches!(self, Predicate::Vector(_))
    }
}

fn replay(program: &Program, types: &[DataType], params: &[Value]) -> Option<Node> {
    let mut stack: Vec<Sym> = Vec::new();
    for op in &program.ops {
        match op {
            Op::Const(i) => stack.push(Sym::Value(program.consts.get(*i as usize)?.clone())),
            Op::Param(i) => stack.push(Sym::Value(params.get(*i as usize)?.clone())),
            Op::Column(c) => {
                let c = *c as usize;
                types.get(c)?;
                stack.push(Sym::Column(c));
            }
            // Short-circuit jumps only skip work the tree evaluation skips too.
            Op::JumpIfFalseKeep(_) | Op::JumpIfTrueKeep(_) => {}
            Op::Cast(ty) => match stack.pop()? {
                Sym::Value(v) => stack.push(Sym::Value(v.cast(ty).ok()?)),
                Sym::Column(c) if types[c] == *ty => stack.push(Sym::Column(c)),
                _ => return None,
            },
            Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
                let cmp = Cmp::of(op)?;
                let b = stack.pop()?;
                let a = stack.pop()?;
                let node = match (a, b) {
                    (Sym::Column(c), Sym::Value(v)) => compare_node(c, types[c], cmp, &v)?,
                    (Sym::Value(v), Sym::Column(c)) => {
                        compare_node(c, types[c], cmp.flipped(), &v)?
                    }
                    (Sym::Value(a), Sym::Value(b)) => {
                        let t = match ndpdb_formats::expr::compare(op, &a, &b) {
                            Ok(Value::Bool(x)) => x as u8,
                            Ok(Value::Null) => NULL,
                            _ => return None,
                        };
                        Node::Const(t)
                    }
                    _ => return None,
                };
                stack.push(Sym::Pred(node));
            }
            Op::And | Op::Or => {
                let b = pred(stack.pop()?)?;
                let a = pred(stack.pop()?)?;
                stack.push(Sym::Pred(if matches!(op, Op::And) {
                    Node::And(Box::new(a), Box::new(b))
                } else {
                    Node::Or(Box::new(a), Box::new(b))
                }));
            }
            Op::Not => {
                let a = pred(stack.pop()?)?;
                stack.push(Sym::Pred(Node::Not(Box::new(a))));
            }
            // `x IN (a, b, …)` is `x = a OR x = b OR …` in SQL's logic
            // (NULL when no item matches and x or an item is NULL); NOT
            // IN its negation. Short lists of constants only.
            Op::In { n, negated } => {
                let n = *n as usize;
                if n == 0 || n > MAX_IN_ITEMS || stack.len() < n + 1 {
                    return None;
                }
                let items = stack.split_off(stack.len() - n);
                let Sym::Column(c) = stack.pop()? else {
                    return None;
                };
                let items = items
                    .into_iter()
                    .map(|s| match s {
                        Sym::Value(v) => Some(v),
                        _ => None,
                    })
                    .collect::<Option<Vec<Value>>>()?;
                let node = int_set(c, types[c], &items, *negated)
                    .or_else(|| in_list(c, types[c], &items, *negated))?;
                stack.push(Sym::Pred(node));
            }
            Op::InSorted {
                first,
                n,
                negated,
                has_null,
            } => {
                let (first, n) = (*first as usize, *n as usize);
                let Sym::Column(c) = stack.pop()? else {
                    return None;
                };
                let mut items = program.consts.get(first..first.checked_add(n)?)?.to_vec();
                if *has_null {
                    items.push(Value::Null);
                }
                if let Some(node) = int_set(c, types[c], &items, *negated) {
                    stack.push(Sym::Pred(node));
                    continue;
                }
                if n > MAX_IN_ITEMS || items.is_empty() {
                    return None;
                }
                stack.push(Sym::Pred(in_list(c, types[c], &items, *negated)?));
            }
            Op::IsNull | Op::IsNotNull => {
                let negated = matches!(op, Op::IsNotNull);
                let node = match stack.pop()? {
                    Sym::Column(column) => Node::IsNull { column, negated },
                    Sym::Value(v) => Node::Const((v.is_null() != negated) as u8),
                    Sym::Pred(_) => return None,
                };
                stack.push(Sym::Pred(node));
            }
            _ => return None,
        }
    }
    let top = stack.pop()?;
    if !stack.is_empty() {
        return None;
    }
    pred(top)
}

/// Longest IN list run as kernels (one comparison per item and row).
const MAX_IN_ITEMS: usize = 16;

/// `column [NOT] IN (items)` of two or more integers (and NULLs) over an
/// INT or BIGINT column, as one [`IntSet`] kernel.
fn int_set(column: usize, ty: DataType, items: &[Value], negated: bool) -> Option<Node> {
    if !matches!(ty, DataType::Int | DataType::BigInt) || items.len() < 2 {
        return None;
    }
    let mut members = Vec::with_capacity(items.len());
    let mut has_null = false;
    for v in items {
        match v {
            Value::Int(x) => members.push(*x as i64),
            Value::BigInt(x) => members.push(*x),
            Value::Null => has_null = true,
            _ => return None,
        }
    }
    Some(Node::InSet {
        column,
        set: Arc::new(IntSet::new(members, has_null)),
        negated,
    })
}

/// `column [NOT] IN (items)` as an OR of equalities (negated: its NOT).
fn in_list(column: usize, ty: DataType, items: &[Value], negated: bool) -> Option<Node> {
    let mut node: Option<Node> = None;
    for v in items {
        let eq = compare_node(column, ty, Cmp::Eq, v)?;
        node = Some(match node {
            None => eq,
            Some(a) => Node::Or(Box::new(a), Box::new(eq)),
        });
    }
    let node = node?;
    Some(if negated {
        Node::Not(Box::new(node))
    } else {
        node
    })
}

/// A stack entry used as a truth value.
fn pred(s: Sym) -> Option<Node> {
    match s {
        Sym::Pred(n) => Some(n),
        Sym::Value(Value::Bool(b)) => Some(Node::Const(b as u8)),
        Sym::Value(Value::Null) => Some(Node::Const(NULL)),
        // A boolean column used as a predicate: `col = TRUE`.
        _ => None,
    }
}

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// `column op v` as a kernel, if the types compare the way
/// [`Value::sql_cmp`] compares them without error.
fn compare_node(column: usize, ty: DataType, op: Cmp, v: &Value) -> Option<Node> {
    if v.is_null() {
        return Some(Node::Const(NULL));
    }
    let i64_of = |value: i64| Scalar::I64 {
        value,
        day_scale: 1,
    };
    let scalar = match (ty, v) {
        (DataType::Int | DataType::BigInt, Value::Int(x)) => i64_of(*x as i64),
        (DataType::Int | DataType::BigInt, Value::BigInt(x)) => i64_of(*x),
        (DataType::Int | DataType::BigInt, Value::Numeric(d)) => {
            return Some(Node::Cmp {
                column,
                op,
                scalar: Scalar::Numeric(*d),
            })
        }
        (DataType::Date, Value::Date(x)) => i64_of(*x as i64),
        (DataType::Date, Value::Timestamp(t)) => Scalar::I64 {
            value: *t,
            day_scale: MICROS_PER_DAY,
        },
        (DataType::Timestamp, Value::Timestamp(t)) => i64_of(*t),
        (DataType::Timestamp, Value::Date(d)) => i64_of((*d as i64).checked_mul(MICROS_PER_DAY)?),
        (DataType::Numeric { .. }, Value::Int(x)) => Scalar::Numeric(Decimal::from_i64(*x as i64)),
        (DataType::Numeric { .. }, Value::BigInt(x)) => Scalar::Numeric(Decimal::from_i64(*x)),
        (DataType::Numeric { .. }, Value::Numeric(d)) => Scalar::Numeric(*d),
        (
            DataType::Double,
            v @ (Value::Int(_) | Value::BigInt(_) | Value::Double(_) | Value::Numeric(_)),
        ) => Scalar::F64(v.as_f64()?),
        (DataType::Text | DataType::Varchar(_), Value::Text(s)) => {
            Scalar::Bytes(s.as_bytes().to_vec())
        }
        (DataType::Bytea, Value::Bytea(b)) => Scalar::Bytes(b.clone()),
        (DataType::Bool, Value::Bool(b)) => Scalar::Bool(*b),
        _ => return None,
    };
    Some(Node::Cmp { column, op, scalar })
}

/// Reusable buffers of one scan (no allocation per page once warm), and
/// what the zone maps decided.
#[derive(Default)]
pub struct Scratch {
    pool: Vec<Vec<u8>>,
    sels: Vec<Vec<u16>>,
    /// Comparisons a page's zone map answered FALSE for every row.
    pub zone_pruned: u64,
    /// Comparisons a page's zone map answered TRUE for every non-NULL row.
    pub zone_passed: u64,
    /// Bytes the kernels read: whole minipages, or the zone map alone
    /// where it decided.
    pub bytes: u64,
}

/// What a page's zone map (min and max of its non-NULL values) decides
/// about `column op scalar`: `Some(true)` if every non-NULL value of the
/// page satisfies it, `Some(false)` if none does, `None` if the rows must
/// be looked at. The zone covers every version on the page, so it holds
/// for any selection of them.
pub fn zone_verdict(col: &ColumnRef<'_>, op: Cmp, scalar: &Scalar) -> Option<bool> {
    let (lo, hi) = match (col.zone()?, col.data, scalar) {
        (
            Zone::Int { min, max, .. },
            ColumnData::Fixed { .. },
            Scalar::I64 { value, day_scale },
        ) => {
            let k = *day_scale as i128;
            let x = *value as i128;
            ((min * k).cmp(&x), (max * k).cmp(&x))
        }
        (Zone::Int { min, max, .. }, ColumnData::Fixed { .. }, Scalar::Numeric(d)) => {
            let of = |m: i128| Some(Decimal::from_i64(i64::try_from(m).ok()?).cmp_value(*d));
            (of(min)?, of(max)?)
        }
        (Zone::Int { min, max, scale }, ColumnData::Numeric { .. }, Scalar::Numeric(d)) => (
            Decimal::new(min, scale).cmp_value(*d),
            Decimal::new(max, scale).cmp_value(*d),
        ),
        (Zone::Double { min, max }, ColumnData::Fixed { .. }, Scalar::F64(x)) => {
            (f64_cmp(min, *x), f64_cmp(max, *x))
        }
        _ => return None,
    };
    use Ordering::*;
    match op {
        // Equal everywhere only if the page holds one value.
        Cmp::Eq | Cmp::Ne => {
            let all_equal = lo == Equal && hi == Equal;
            let none_equal = lo == Greater || hi == Less;
            let eq = if all_equal {
                Some(true)
            } else if none_equal {
                Some(false)
            } else {
                None
            };
            eq.map(|e| e == (op == Cmp::Eq))
        }
        // Monotone: the extremes decide.
        _ => match (op.holds(lo), op.holds(hi)) {
            (true, true) => Some(true),
            (false, false) => Some(false),
            _ => None,
        },
    }
}

impl Scratch {
    fn truth(&mut self) -> Vec<u8> {
        let mut v = self.pool.pop().unwrap_or_default();
        v.clear();
        v
    }
    fn sel(&mut self) -> Vec<u16> {
        let mut v = self.sels.pop().unwrap_or_default();
        v.clear();
        v
    }
}

impl Node {
    /// Evaluates the node for the rows `sel` of `page`: `out[i]` is the
    /// truth value of row `sel[i]`.
    pub fn eval(
        &self,
        page: &PageRef<'_>,
        types: &[DataType],
        sel: &[u16],
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
    ) -> Result<()> {
        out.clear();
        match self {
            Node::Const(t) => out.resize(sel.len(), *t),
            Node::IsNull { column: c, negated } => {
                let col = column(page, *c, types[*c])?;
                out.extend(
                    sel.iter()
                        .map(|&s| (col.is_null(s as usize) != *negated) as u8),
                );
            }
            Node::Cmp {
                column: c,
                op,
                scalar,
            } => {
                let col = column(page, *c, types[*c])?;
                compare(&col, *op, scalar, sel, out)?;
            }
            Node::InSet {
                column: c,
                set,
                negated,
            } => {
                let col = column(page, *c, types[*c])?;
                set.truths(&col, *negated, sel, out)?;
            }
            Node::Not(a) => {
                a.eval(page, types, sel, out, scratch)?;
                for t in out.iter_mut() {
                    *t = match *t {
                        TRUE => FALSE,
                        FALSE => TRUE,
                        n => n,
                    };
                }
            }
            Node::And(a, b) | Node::Or(a, b) => {
                let is_and = matches!(self, Node::And(..));
                a.eval(page, types, sel, out, scratch)?;
                // The right side sees the rows the left side did not decide.
                let decided = if is_and { FALSE } else { TRUE };
                let mut sub = scratch.sel();
                sub.extend(
                    sel.iter()
                        .zip(out.iter())
                        .filter(|(_, t)| **t != decided)
                        .map(|(s, _)| *s),
                );
                if !sub.is_empty() {
                    let mut right = scratch.truth();
                    b.eval(page, types, &sub, &mut right, scratch)?;
                    let mut k = 0;
                    for t in out.iter_mut() {
                        if *t == decided {
                            continue;
                        }
                        let r = right[k];
                        k += 1;
                        *t = match (is_and, *t, r) {
                            (true, _, FALSE) => FALSE,
                            (true, TRUE, TRUE) => TRUE,
                            (true, _, _) => NULL,
                            (false, _, TRUE) => TRUE,
                            (false, FALSE, FALSE) => FALSE,
                            (false, _, _) => NULL,
                        };
                    }
                    scratch.pool.push(right);
                }
                scratch.sels.push(sub);
            }
        }
        Ok(())
    }

    /// Keeps the rows of `sel` for which the node is TRUE. Kernels never
    /// fail on well-formed pages, so skipping a conjunct's evaluation on
    /// rows an earlier conjunct rejected changes nothing: an AND refines
    /// the selection conjunct by conjunct, a comparison drops rows in place.
    pub fn filter(
        &self,
        page: &PageRef<'_>,
        types: &[DataType],
        sel: &mut Vec<u16>,
        scratch: &mut Scratch,
    ) -> Result<()> {
        match self {
            Node::And(a, b) => {
                // Two comparisons of one column (a range, BETWEEN) share
                // the column's view and its bytes.
                if let (
                    Node::Cmp {
                        column: c,
                        op: op_a,
                        scalar: scalar_a,
                    },
                    Node::Cmp {
                        column: c_b,
                        op: op_b,
                        scalar: scalar_b,
                    },
                ) = (&**a, &**b)
                {
                    if c == c_b {
                        let col = column(page, *c, types[*c])?;
                        let mut bytes = filter_cmp(&col, *op_a, scalar_a, sel, scratch)?;
                        if !sel.is_empty() {
                            bytes = bytes.max(filter_cmp(&col, *op_b, scalar_b, sel, scratch)?);
                        }
                        scratch.bytes += bytes;
                        return Ok(());
                    }
                }
                a.filter(page, types, sel, scratch)?;
                if !sel.is_empty() {
                    b.filter(page, types, sel, scratch)?;
                }
                Ok(())
            }
            Node::Cmp {
                column: c,
                op,
                scalar,
            } => {
                let col = column(page, *c, types[*c])?;
                scratch.bytes += filter_cmp(&col, *op, scalar, sel, scratch)?;
                Ok(())
            }
            Node::InSet {
                column: c,
                set,
                negated: false,
            } => {
                let col = column(page, *c, types[*c])?;
                if set.zone_excludes(&col) {
                    scratch.zone_pruned += 1;
                    scratch.bytes += ZONE_SIZE as u64;
                    sel.clear();
                    return Ok(());
                }
                set.keep(&col, sel)?;
                scratch.bytes += col.footprint as u64;
                Ok(())
            }
            _ => {
                let mut truth = scratch.truth();
                self.eval(page, types, sel, &mut truth, scratch)?;
                let mut k = 0;
                sel.retain(|_| {
                    let keep = truth[k] == TRUE;
                    k += 1;
                    keep
                });
                scratch.pool.push(truth);
                Ok(())
            }
        }
    }
}

/// Keeps the rows of `sel` whose value of `col` satisfies `op scalar`,
/// deciding from the zone map where it can; returns the bytes read.
fn filter_cmp(
    col: &ColumnRef<'_>,
    op: Cmp,
    scalar: &Scalar,
    sel: &mut Vec<u16>,
    scratch: &mut Scratch,
) -> Result<u64> {
    match zone_verdict(col, op, scalar) {
        // No value of the page qualifies (NULL never does).
        Some(false) => {
            scratch.zone_pruned += 1;
            sel.clear();
            Ok(ZONE_SIZE as u64)
        }
        // Every non-NULL value qualifies.
        Some(true) => {
            scratch.zone_passed += 1;
            if col.has_nulls() {
                sel.retain(|&s| !col.is_null(s as usize));
                return Ok(ZONE_SIZE as u64 + col.nulls.len() as u64);
            }
            Ok(ZONE_SIZE as u64)
        }
        None => {
            select(col, op, scalar, sel)?;
            Ok(col.footprint as u64)
        }
    }
}

/// Binds `$t` to the row test for this column representation, scalar
/// and operator and evaluates `$body` with it: one monomorphized copy of
/// the loop per combination, no dispatch per row.
macro_rules! with_test {
    ($col:expr, $op:expr, $scalar:expr, $t:ident => $body:expr) => {{
        let (col, op, scalar): (&ColumnRef<'_>, Cmp, &Scalar) = ($col, $op, $scalar);
        macro_rules! by_op {
            ($key:expr, $x:expr) => {{
                let x = $x;
                let key = $key;
                match op {
                    Cmp::Eq => {
                        let $t = |i: usize| key(i) == x;
                        $body
                    }
                    Cmp::Ne => {
                        let $t = |i: usize| key(i) != x;
                        $body
                    }
                    Cmp::Lt => {
                        let $t = |i: usize| key(i) < x;
                        $body
                    }
                    Cmp::Le => {
                        let $t = |i: usize| key(i) <= x;
                        $body
                    }
                    Cmp::Gt => {
                        let $t = |i: usize| key(i) > x;
                        $body
                    }
                    Cmp::Ge => {
                        let $t = |i: usize| key(i) >= x;
                        $body
                    }
                }
            }};
        }
        match (col.data, scalar) {
            (
                ColumnData::Fixed { width: 4, values },
                Scalar::I64 {
                    value,
                    day_scale: 1,
                },
            ) => {
                by_op!(|i| rd_i32(values, i) as i64, *value)
            }
            (ColumnData::Fixed { width: 4, values }, Scalar::I64 { value, day_scale }) => {
                let k = *day_scale;
                by_op!(|i| rd_i32(values, i) as i64 * k, *value)
            }
            (ColumnData::Fixed { width: 8, values }, Scalar::I64 { value, .. }) => {
                by_op!(|i| rd_i64(values, i), *value)
            }
            (ColumnData::Fixed { width: 8, values }, Scalar::F64(x)) => {
                let x = *x;
                let $t = |i: usize| op.holds(f64_cmp(f64::from_bits(rd_i64(values, i) as u64), x));
                $body
            }
            (
                ColumnData::Fixed {
                    width: w @ (4 | 8),
                    values,
                },
                Scalar::Numeric(d),
            ) => {
                let d = *d;
                let $t = |i: usize| {
                    let x = if w == 4 {
                        rd_i32(values, i) as i64
                    } else {
                        rd_i64(values, i)
                    };
                    op.holds(Decimal::from_i64(x).cmp_value(d))
                };
                $body
            }
            (ColumnData::Numeric { mantissas, scales }, Scalar::Numeric(d)) => {
                // The scalar's mantissa at every scale it can be written at
                // exactly: one integer compare per row.
                let at: Vec<Option<i128>> = (0..=ndpdb_formats::value::MAX_SCALE)
                    .map(|sc| {
                        d.rescale(sc)
                            .ok()
                            .filter(|r| r.cmp_value(*d) == Ordering::Equal)
                            .map(|r| r.mantissa)
                    })
                    .collect();
                let d = *d;
                let $t = |i: usize| {
                    let (m, sc) = (rd_i128(mantissas, i), scales[i]);
                    op.holds(match at.get(sc as usize).copied().flatten() {
                        Some(x) => m.cmp(&x),
                        None => Decimal::new(m, sc).cmp_value(d),
                    })
                };
                $body
            }
            (ColumnData::Var { .. }, Scalar::Bytes(b)) => {
                col.check_offsets()?;
                let $t = |i: usize| op.holds(col.var(i).unwrap_or_default().cmp(&b[..]));
                $body
            }
            (ColumnData::Fixed { width: 1, values }, Scalar::Bool(b)) => {
                let b = *b;
                let $t = |i: usize| op.holds((values[i] != 0).cmp(&b));
                $body
            }
            _ => {
                return Err(Error::corrupted(format!(
                    "no comparison kernel for a {} column",
                    col.ty
                )))
            }
        }
        Ok(())
    }};
}

/// Applies `test` to every selected row: `out` gets its truth value
/// (NULL for NULL rows). One monomorphized loop per kernel.
#[inline(always)]
fn truths(col: &ColumnRef<'_>, sel: &[u16], out: &mut Vec<u8>, test: impl Fn(usize) -> bool) {
    if col.has_nulls() {
        out.extend(sel.iter().map(|&s| {
            let i = s as usize;
            if col.is_null(i) {
                NULL
            } else {
                test(i) as u8
            }
        }));
    } else {
        out.extend(sel.iter().map(|&s| test(s as usize) as u8));
    }
}

/// One comparison kernel per column representation, as a truth vector.
fn compare(
    col: &ColumnRef<'_>,
    op: Cmp,
    scalar: &Scalar,
    sel: &[u16],
    out: &mut Vec<u8>,
) -> Result<()> {
    with_test!(col, op, scalar, test => truths(col, sel, out, test))
}

/// One comparison kernel per column representation, refining `sel`.
fn select(col: &ColumnRef<'_>, op: Cmp, scalar: &Scalar, sel: &mut Vec<u16>) -> Result<()> {
    with_test!(col, op, scalar, test => keep(col, sel, test))
}
