//! Aggregate functions: specs and accumulators, shared by host and device.
//!
//! An [`Acc`] folds values in ([`Acc::add`]), merges with the partial of
//! another processing element ([`Acc::merge`]) and produces the SQL result
//! ([`Acc::finish`]) with PostgreSQL's result types: SUM(int) is BIGINT,
//! SUM(bigint) and AVG over integers are NUMERIC, AVG(double) is DOUBLE.
//! DISTINCT aggregates keep their distinct values until the end, so
//! partials from several PEs merge exactly.

use rustc_hash::FxHashMap;
use std::cmp::Ordering;

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result, SqlState};
use crate::expr::{decode_value, encode_value, Program};
use crate::types::DataType;
use crate::value::{Decimal, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
    /// `array_agg(x [ORDER BY …])`: the values (NULLs too) in order, as
    /// an array; arrays stack into one more dimension.
    ArrayAgg,
    /// `string_agg(x, delimiter [ORDER BY …])`: the non-NULL values,
    /// each after the first preceded by its row's delimiter.
    StringAgg,
    /// `json_agg(x)` / `jsonb_agg(x)`: the values (NULLs as `null`) as a
    /// JSON array.
    JsonAgg,
    JsonbAgg,
    /// `json_object_agg(k, v)` / `jsonb_object_agg(k, v)`: the key is
    /// the first of [`AggSpec::extra`] after the filter.
    JsonObjectAgg,
    JsonbObjectAgg,
}

impl AggFunc {
    const ALL: [AggFunc; 12] = [
        AggFunc::CountStar,
        AggFunc::Count,
        AggFunc::Sum,
        AggFunc::Min,
        AggFunc::Max,
        AggFunc::Avg,
        AggFunc::ArrayAgg,
        AggFunc::StringAgg,
        AggFunc::JsonAgg,
        AggFunc::JsonbAgg,
        AggFunc::JsonObjectAgg,
        AggFunc::JsonbObjectAgg,
    ];

    /// Whether the aggregate keeps its rows' values in order (and NULLs).
    pub fn collects(self) -> bool {
        matches!(
            self,
            AggFunc::ArrayAgg
                | AggFunc::StringAgg
                | AggFunc::JsonAgg
                | AggFunc::JsonbAgg
                | AggFunc::JsonObjectAgg
                | AggFunc::JsonbObjectAgg
        )
    }

    /// Whether a key precedes the ORDER BY keys in [`AggSpec::extra`]
    /// (string_agg's delimiter, the object aggregates' key).
    fn has_second_input(self) -> bool {
        matches!(
            self,
            AggFunc::StringAgg | AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg
        )
    }
}

/// One aggregate of a query.
#[derive(Clone, Debug, PartialEq)]
pub struct AggSpec {
    pub func: AggFunc,
    pub distinct: bool,
    /// The argument, over the input row (`None` for COUNT(*)).
    pub arg: Option<Program>,
    pub result_ty: DataType,
    /// More inputs per row: string_agg's delimiter first, then the keys
    /// of the aggregate's ORDER BY.
    pub extra: Vec<Program>,
    /// Per ORDER BY key: (descending, NULLs first).
    pub order: Vec<(bool, bool)>,
    /// `FILTER (WHERE c)` of an aggregate that keeps NULLs (array_agg):
    /// `c` is the first of [`AggSpec::extra`]; rows where it is not true
    /// are left out.
    pub filtered: bool,
}

impl AggSpec {
    pub fn encode(&self, w: &mut Writer) {
        w.u8(AggFunc::ALL
            .iter()
            .position(|f| *f == self.func)
            .unwrap_or(0) as u8);
        w.bool(self.distinct);
        match &self.arg {
            Some(p) => {
                w.u8(1);
                p.encode(w);
            }
            None => {
                w.u8(0);
            }
        }
        self.result_ty.encode(w);
        w.u8(self.extra.len() as u8);
        for p in &self.extra {
            p.encode(w);
        }
        w.u8(self.order.len() as u8);
        for (desc, nulls_first) in &self.order {
            w.bool(*desc).bool(*nulls_first);
        }
        w.bool(self.filtered);
    }

    /// Whether the aggregate needs its group's rows in input order, one
    /// at a time (array_agg, string_agg): such aggregates run on the
    /// host, row by row, never split across workers or the device.
    pub fn in_order(&self) -> bool {
        self.func.collects()
    }

    /// Where the ORDER BY keys start in [`AggSpec::extra`] (after the
    /// filter, then string_agg's delimiter).
    fn keys_from(&self) -> usize {
        usize::from(self.filtered) + usize::from(self.func.has_second_input())
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<AggSpec> {
        let f = r.u8()?;
        let func = *AggFunc::ALL
            .get(f as usize)
            .ok_or_else(|| Error::corrupted(format!("aggregate tag {f}")))?;
        let distinct = r.bool()?;
        let arg = match r.u8()? {
            0 => None,
            1 => Some(Program::decode(r)?),
            t => return Err(Error::corrupted(format!("aggregate argument tag {t}"))),
        };
        let result_ty = DataType::decode(r)?;
        let extra = (0..r.u8()?)
            .map(|_| Program::decode(r))
            .collect::<Result<Vec<_>>>()?;
        let order = (0..r.u8()?)
            .map(|_| Ok((r.bool()?, r.bool()?)))
            .collect::<Result<Vec<_>>>()?;
        let filtered = r.bool()?;
        Ok(AggSpec {
            func,
            distinct,
            arg,
            result_ty,
            extra,
            order,
            filtered,
        })
    }
}

/// The distinct values of a DISTINCT aggregate, by their key bytes
/// ([`Value::key_bytes`]: equal SQL values, equal bytes): a short list
/// while they are few, as in most groups of a GROUP BY (CH-benCHmark's
/// Q16 counts about ten per group over 100,000 groups), a hash map
/// once they are many.
#[derive(Clone, Debug)]
enum Distinct {
    Few(Vec<(Vec<u8>, Value)>),
    Many(FxHashMap<Vec<u8>, Value>),
}

/// Values a [`Distinct::Few`] holds before it becomes a map.
const FEW_DISTINCT: usize = 16;

impl Distinct {
    /// Adds `v` unless an equal value is there; its key bytes are copied
    /// only when it is new.
    fn add(&mut self, v: Value) {
        thread_local! {
            static KEY: std::cell::RefCell<Writer> = std::cell::RefCell::new(Writer::new());
        }
        KEY.with(|cell| match cell.try_borrow_mut() {
            Ok(mut key) => {
                key.clear();
                v.key_bytes(&mut key);
                if !self.contains(key.as_slice()) {
                    self.insert_new(key.as_slice().to_vec(), v);
                }
            }
            Err(_) => {
                let mut key = Writer::new();
                v.key_bytes(&mut key);
                self.insert(key.into_inner(), v);
            }
        })
    }

    fn contains(&self, key: &[u8]) -> bool {
        match self {
            Distinct::Few(list) => list.iter().any(|(k, _)| k.as_slice() == key),
            Distinct::Many(map) => map.contains_key(key),
        }
    }

    /// Adds `v` under `key` unless the key is there.
    fn insert(&mut self, key: Vec<u8>, v: Value) {
        if !self.contains(&key) {
            self.insert_new(key, v);
        }
    }

    /// Adds a key known to be absent.
    fn insert_new(&mut self, key: Vec<u8>, v: Value) {
        match self {
            Distinct::Few(list) if list.len() < FEW_DISTINCT => list.push((key, v)),
            Distinct::Few(list) => {
                let mut map: FxHashMap<Vec<u8>, Value> = std::mem::take(list).into_iter().collect();
                map.insert(key, v);
                *self = Distinct::Many(map);
            }
            Distinct::Many(map) => {
                map.insert(key, v);
            }
        }
    }

    fn merge(&mut self, other: Distinct) {
        match other {
            Distinct::Few(list) => list.into_iter().for_each(|(k, v)| self.insert(k, v)),
            Distinct::Many(map) => map.into_iter().for_each(|(k, v)| self.insert(k, v)),
        }
    }

    fn into_values(self) -> Vec<Value> {
        match self {
            Distinct::Few(list) => list.into_iter().map(|(_, v)| v).collect(),
            Distinct::Many(map) => map.into_values().collect(),
        }
    }
}

fn overflow() -> Error {
    Error::sql(
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        "numeric value out of range",
    )
}

/// The running state of one aggregate.
#[derive(Clone, Debug, Default)]
pub struct Acc {
    count: i64,
    int_sum: i128,
    dec_sum: Option<Decimal>,
    dbl_sum: f64,
    best: Option<Value>,
    /// DISTINCT: the distinct values seen (folded at finish).
    distinct: Option<Distinct>,
    /// array_agg / string_agg: each row's extra inputs and value, in
    /// input order.
    items: Vec<(Vec<Value>, Value)>,
    /// string_agg(DISTINCT …): the delimiter.
    sep: Option<Value>,
}

impl Acc {
    pub fn new(spec: &AggSpec) -> Acc {
        Acc {
            distinct: (spec.distinct && spec.func != AggFunc::CountStar)
                .then(|| Distinct::Few(Vec::new())),
            ..Acc::default()
        }
    }

    pub fn add(&mut self, spec: &AggSpec, v: Value) -> Result<()> {
        self.add_with(spec, v, Vec::new())
    }

    /// [`Acc::add`] with the row's values of [`AggSpec::extra`].
    pub fn add_with(&mut self, spec: &AggSpec, v: Value, extra: Vec<Value>) -> Result<()> {
        if spec.filtered && extra.first() != Some(&Value::Bool(true)) {
            return Ok(());
        }
        if matches!(spec.func, AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg) {
            self.items.push((extra, v));
            return Ok(());
        }
        if matches!(
            spec.func,
            AggFunc::ArrayAgg | AggFunc::JsonAgg | AggFunc::JsonbAgg
        ) {
            match &mut self.distinct {
                None => self.items.push((extra, v)),
                Some(d) => d.add(v),
            }
            return Ok(());
        }
        if spec.func == AggFunc::StringAgg {
            if v.is_null() {
                return Ok(());
            }
            if self.distinct.is_some() {
                self.sep = extra.get(usize::from(spec.filtered)).cloned();
            } else {
                self.items.push((extra, v));
                return Ok(());
            }
        }
        if spec.func == AggFunc::CountStar {
            self.count += 1;
            return Ok(());
        }
        if v.is_null() {
            return Ok(());
        }
        if let Some(d) = &mut self.distinct {
            d.add(v);
            return Ok(());
        }
        self.fold(spec.func, v)
    }

    fn fold(&mut self, func: AggFunc, v: Value) -> Result<()> {
        self.count += 1;
        match func {
            AggFunc::Count | AggFunc::CountStar => {}
            AggFunc::Min | AggFunc::Max => {
                let replace = match &self.best {
                    None => true,
                    Some(b) => {
                        let o = v.sort_cmp(b);
                        if func == AggFunc::Min {
                            o == Ordering::Less
                        } else {
                            o == Ordering::Greater
                        }
                    }
                };
                if replace {
                    self.best = Some(v);
                }
            }
            AggFunc::Sum | AggFunc::Avg => match v {
                Value::Int(x) => self.int_sum += x as i128,
                Value::BigInt(x) => {
                    self.int_sum = self.int_sum.checked_add(x as i128).ok_or_else(overflow)?
                }
                Value::Double(x) => self.dbl_sum += x,
                Value::Numeric(d) => {
                    self.dec_sum = Some(match self.dec_sum {
                        None => d,
                        Some(s) => s.checked_add(d)?,
                    })
                }
                other => {
                    return Err(Error::sql(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("cannot sum value {other:?}"),
                    ))
                }
            },
            _ => {
                let sep = self.sep.clone().into_iter().collect();
                self.items.push((sep, v));
            }
        }
        Ok(())
    }

    /// Folds another partial of the same aggregate into this one.
    /// Whether the accumulator folds values as they come (no DISTINCT):
    /// only then may batch kernels use the `add_*` methods below.
    pub fn folds_directly(&self) -> bool {
        self.distinct.is_none()
    }

    /// `n` non-NULL values counted (COUNT(*) or COUNT(x) of a batch).
    pub fn add_count(&mut self, n: i64) {
        self.count += n;
    }

    /// `n` integer values summing to `sum` (SUM / AVG of INT or BIGINT).
    pub fn add_int_sum(&mut self, sum: i128, n: i64) -> Result<()> {
        self.count += n;
        self.int_sum = self.int_sum.checked_add(sum).ok_or_else(overflow)?;
        Ok(())
    }

    /// `n` NUMERIC values summing exactly to `sum`.
    pub fn add_decimal_sum(&mut self, sum: Decimal, n: i64) -> Result<()> {
        self.count += n;
        self.dec_sum = Some(match self.dec_sum {
            None => sum,
            Some(s) => s.checked_add(sum)?,
        });
        Ok(())
    }

    /// One DOUBLE value summed (in order: floating-point sums depend on it).
    #[inline]
    pub fn add_double(&mut self, x: f64) {
        self.count += 1;
        self.dbl_sum += x;
    }

    pub fn merge(&mut self, spec: &AggSpec, other: Acc) -> Result<()> {
        if let (Some(mine), Some(theirs)) = (&mut self.distinct, other.distinct) {
            mine.merge(theirs);
            self.sep = self.sep.take().or(other.sep);
            return Ok(());
        }
        self.items.extend(other.items);
        self.count += other.count;
        self.int_sum = self
            .int_sum
            .checked_add(other.int_sum)
            .ok_or_else(overflow)?;
        self.dbl_sum += other.dbl_sum;
        if let Some(d) = other.dec_sum {
            self.dec_sum = Some(match self.dec_sum {
                None => d,
                Some(s) => s.checked_add(d)?,
            });
        }
        if let Some(b) = other.best {
            let replace = match &self.best {
                None => true,
                Some(mine) => {
                    let o = b.sort_cmp(mine);
                    if spec.func == AggFunc::Min {
                        o == Ordering::Less
                    } else {
                        o == Ordering::Greater
                    }
                }
            };
            if replace {
                self.best = Some(b);
            }
        }
        Ok(())
    }

    /// The partial as bytes, for a worker in another process (an OSD's
    /// object class) to hand it to the one that merges.
    ///
    /// ```text
    ///  count i64 │ int_sum i128 │ dbl_sum f64 │
    ///  flags u8 (1 dec_sum, 2 best, 4 distinct, 8 items, 16 sep)
    ///  [dec_sum value] [best value] [n u32, n values]
    ///  [n u32, n × (k u8, k values, value)] [sep value]
    /// ```
    pub fn encode(&self, w: &mut Writer) {
        w.i64(self.count).i128(self.int_sum).f64(self.dbl_sum);
        let flags = u8::from(self.dec_sum.is_some())
            | (u8::from(self.best.is_some()) << 1)
            | (u8::from(self.distinct.is_some()) << 2)
            | (u8::from(!self.items.is_empty()) << 3)
            | (u8::from(self.sep.is_some()) << 4);
        w.u8(flags);
        if let Some(d) = self.dec_sum {
            encode_value(&Value::Numeric(d), w);
        }
        if let Some(b) = &self.best {
            encode_value(b, w);
        }
        match &self.distinct {
            Some(Distinct::Few(list)) => {
                w.u32(list.len() as u32);
                list.iter().for_each(|(_, v)| encode_value(v, w));
            }
            Some(Distinct::Many(map)) => {
                w.u32(map.len() as u32);
                map.values().for_each(|v| encode_value(v, w));
            }
            None => {}
        }
        if !self.items.is_empty() {
            w.u32(self.items.len() as u32);
            for (extra, v) in &self.items {
                w.u8(extra.len() as u8);
                extra.iter().for_each(|x| encode_value(x, w));
                encode_value(v, w);
            }
        }
        if let Some(s) = &self.sep {
            encode_value(s, w);
        }
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<Acc> {
        let mut acc = Acc {
            count: r.i64()?,
            int_sum: r.i128()?,
            dbl_sum: r.f64()?,
            ..Acc::default()
        };
        let flags = r.u8()?;
        if flags & !31 != 0 {
            return Err(Error::corrupted(format!(
                "aggregate partial flags {flags:#x}"
            )));
        }
        if flags & 1 != 0 {
            match decode_value(r)? {
                Value::Numeric(d) => acc.dec_sum = Some(d),
                v => return Err(Error::corrupted(format!("aggregate partial sum {v:?}"))),
            }
        }
        if flags & 2 != 0 {
            acc.best = Some(decode_value(r)?);
        }
        if flags & 4 != 0 {
            let n = r.count(1)?;
            let mut d = Distinct::Few(Vec::new());
            for _ in 0..n {
                d.add(decode_value(r)?);
            }
            acc.distinct = Some(d);
        }
        if flags & 8 != 0 {
            for _ in 0..r.count(2)? {
                let k = r.u8()?;
                let extra = (0..k)
                    .map(|_| decode_value(r))
                    .collect::<Result<Vec<_>>>()?;
                acc.items.push((extra, decode_value(r)?));
            }
        }
        if flags & 16 != 0 {
            acc.sep = Some(decode_value(r)?);
        }
        Ok(acc)
    }

    pub fn finish(mut self, spec: &AggSpec) -> Result<Value> {
        if let Some(values) = self.distinct.take() {
            let mut plain = Acc {
                sep: self.sep.take(),
                ..Acc::default()
            };
            let mut values = values.into_values();
            // A fixed order keeps floating-point sums reproducible; an
            // ordered aggregate's DISTINCT values come in its ORDER BY
            // (whose key is the argument itself).
            values.sort_by(|a, b| a.sort_cmp(b));
            if let Some((desc, nulls_first)) = spec.order.first() {
                let nulls = values.iter().take_while(|v| !v.is_null()).count();
                let (mut present, mut nulls_vec): (Vec<Value>, Vec<Value>) =
                    (values[..nulls].to_vec(), values[nulls..].to_vec());
                if *desc {
                    present.reverse();
                }
                values = if *nulls_first {
                    nulls_vec.append(&mut present);
                    nulls_vec
                } else {
                    present.append(&mut nulls_vec);
                    present
                };
            }
            for v in values {
                plain.fold(spec.func, v)?;
            }
            return plain.finish(spec);
        }
        let exact = |acc: &Acc| -> Result<Decimal> {
            let base = Decimal::new(acc.int_sum, 0);
            match acc.dec_sum {
                Some(d) => d.checked_add(base),
                None => Ok(base),
            }
        };
        if spec.in_order() {
            return self.finish_in_order(spec);
        }
        Ok(match spec.func {
            AggFunc::CountStar | AggFunc::Count => Value::BigInt(self.count),
            _ if self.count == 0 => Value::Null,
            AggFunc::Min | AggFunc::Max => self.best.clone().unwrap_or(Value::Null),
            AggFunc::Sum => match spec.result_ty {
                DataType::Double => Value::Double(self.dbl_sum),
                DataType::BigInt => Value::BigInt(i64::try_from(self.int_sum).map_err(|_| {
                    Error::sql(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "bigint out of range")
                })?),
                _ => Value::Numeric(exact(&self)?),
            },
            AggFunc::Avg => match spec.result_ty {
                DataType::Double => Value::Double(self.dbl_sum / self.count as f64),
                _ => Value::Numeric(exact(&self)?.checked_div(Decimal::from_i64(self.count))?),
            },
            _ => Value::Null,
        })
    }

    /// array_agg / string_agg: the items sorted by the ORDER BY keys
    /// (stably: ties keep input order), then joined.
    fn finish_in_order(mut self, spec: &AggSpec) -> Result<Value> {
        if self.items.is_empty() {
            return Ok(Value::Null);
        }
        if !spec.order.is_empty() {
            let from = spec.keys_from();
            self.items.sort_by(|(a, _), (b, _)| {
                spec.order
                    .iter()
                    .enumerate()
                    .map(|(k, (desc, nulls_first))| {
                        let (x, y) = (a.get(from + k), b.get(from + k));
                        let (x, y) = (x.unwrap_or(&Value::Null), y.unwrap_or(&Value::Null));
                        match (x.is_null(), y.is_null()) {
                            (true, true) => Ordering::Equal,
                            (true, false) if *nulls_first => Ordering::Less,
                            (true, false) => Ordering::Greater,
                            (false, true) if *nulls_first => Ordering::Greater,
                            (false, true) => Ordering::Less,
                            _ => {
                                let o = x.sql_cmp(y).unwrap_or(Ordering::Equal);
                                if *desc {
                                    o.reverse()
                                } else {
                                    o
                                }
                            }
                        }
                    })
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            });
        }
        if spec.func == AggFunc::ArrayAgg {
            let values: Vec<Value> = self.items.into_iter().map(|(_, v)| v).collect();
            return crate::array_funcs::array_of_values(spec.result_ty, values);
        }
        if matches!(spec.func, AggFunc::JsonAgg | AggFunc::JsonbAgg) {
            let values: Vec<Value> = self.items.into_iter().map(|(_, v)| v).collect();
            return Ok(if spec.func == AggFunc::JsonAgg {
                Value::Json(crate::json_convert::json_agg(&values))
            } else {
                Value::Jsonb(Box::new(crate::json_convert::jsonb_agg(&values)?))
            });
        }
        if matches!(spec.func, AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg) {
            let at = usize::from(spec.filtered);
            let pairs: Vec<(Value, Value)> = self
                .items
                .into_iter()
                .map(|(extra, v)| (extra.get(at).cloned().unwrap_or(Value::Null), v))
                .collect();
            return Ok(if spec.func == AggFunc::JsonObjectAgg {
                Value::Json(crate::json_convert::json_object_agg(&pairs)?)
            } else {
                Value::Jsonb(Box::new(crate::json_convert::jsonb_object_agg(&pairs)?))
            });
        }
        let mut text = String::new();
        let mut bytes = Vec::new();
        let sep_at = usize::from(spec.filtered);
        for (k, (extra, v)) in self.items.into_iter().enumerate() {
            if k > 0 {
                match extra.get(sep_at) {
                    Some(Value::Text(s)) => text.push_str(s),
                    Some(Value::Bytea(b)) => bytes.extend_from_slice(b),
                    _ => {}
                }
            }
            match v {
                Value::Bytea(b) => bytes.extend_from_slice(&b),
                v => text.push_str(&v.to_pg_text().unwrap_or_default()),
            }
        }
        Ok(if spec.result_ty == DataType::Bytea {
            Value::Bytea(bytes)
        } else {
            Value::Text(text)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Op;

    fn spec(func: AggFunc, distinct: bool, ty: DataType) -> AggSpec {
        AggSpec {
            extra: Vec::new(),
            order: Vec::new(),
            filtered: false,
            func,
            distinct,
            arg: Some(Program {
                consts: vec![],
                ops: vec![Op::Column(0)],
            }),
            result_ty: ty,
        }
    }

    #[test]
    fn partials_merge_to_the_same_result() {
        let numeric = DataType::Numeric {
            precision: 0,
            scale: 0,
        };
        let cases = [
            spec(AggFunc::Sum, false, DataType::BigInt),
            spec(AggFunc::Avg, false, numeric),
            spec(AggFunc::Min, false, DataType::Int),
            spec(AggFunc::Max, false, DataType::Int),
            spec(AggFunc::Count, true, DataType::BigInt),
            spec(AggFunc::Sum, true, DataType::BigInt),
        ];
        // 13 distinct values stay a short list; 41 become a map, in the
        // whole and in some of the parts.
        for (modulus, s) in [13, 41]
            .into_iter()
            .flat_map(|m| cases.iter().map(move |s| (m, s)))
        {
            let values: Vec<Value> = (0..100)
                .map(|i| {
                    if i % 7 == 0 {
                        Value::Null
                    } else {
                        Value::Int(i % modulus)
                    }
                })
                .collect();
            let mut whole = Acc::new(s);
            for v in &values {
                whole.add(s, v.clone()).unwrap();
            }
            let mut parts: Vec<Acc> = (0..3).map(|_| Acc::new(s)).collect();
            for (i, v) in values.iter().enumerate() {
                parts[i % 3].add(s, v.clone()).unwrap();
            }
            // A partial crosses from another process as bytes.
            let shipped: Vec<Acc> = parts
                .iter()
                .map(|p| {
                    let mut w = Writer::new();
                    p.encode(&mut w);
                    let bytes = w.into_inner();
                    let mut r = Reader::new(&bytes);
                    let back = Acc::decode(&mut r).unwrap();
                    r.finish("partial").unwrap();
                    back
                })
                .collect();
            let mut merged = Acc::new(s);
            for p in parts {
                merged.merge(s, p).unwrap();
            }
            let mut from_bytes = Acc::new(s);
            for p in shipped {
                from_bytes.merge(s, p).unwrap();
            }
            let want = whole.finish(s).unwrap();
            assert_eq!(from_bytes.finish(s).unwrap(), want, "{s:?} through bytes");
            assert_eq!(merged.finish(s).unwrap(), want, "{s:?}");
        }
    }

    #[test]
    fn distinct_values_are_counted_once_as_a_list_and_as_a_map() {
        let count = spec(AggFunc::Count, true, DataType::BigInt);
        let sum = spec(AggFunc::Sum, true, DataType::BigInt);
        for n in [3i32, 16, 17, 100] {
            let (mut c, mut s) = (Acc::new(&count), Acc::new(&sum));
            // Each value three times, NULLs between.
            for _ in 0..3 {
                for i in 0..n {
                    c.add(&count, Value::Int(i)).unwrap();
                    s.add(&sum, Value::Int(i)).unwrap();
                }
                c.add(&count, Value::Null).unwrap();
                s.add(&sum, Value::Null).unwrap();
            }
            assert_eq!(c.finish(&count).unwrap(), Value::BigInt(n as i64));
            let want = (0..n as i64).sum::<i64>();
            assert_eq!(s.finish(&sum).unwrap(), Value::BigInt(want));
        }
    }
}
