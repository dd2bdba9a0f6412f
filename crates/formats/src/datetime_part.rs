//! `EXTRACT(field FROM v)` (NUMERIC) and `date_part('field', v)` (DOUBLE
//! PRECISION) of a DATE or TIMESTAMP, with PostgreSQL 15's fields, scales
//! and errors:
//!
//! ```text
//!   year month day hour minute     integers (scale 0)
//!   second            5.500000     scale 6     milliseconds  5500.000  scale 3
//!   microseconds      5500000      epoch       seconds since 1970 (scale 6; a date's: 0)
//!   dow (Sunday 0) isodow (Monday 1) doy week isoyear quarter
//!   decade century millennium julian (days since 4714-11-24 BC, fractional)
//!   EXTRACT of a DATE has no time fields (0A000); date_part reads a DATE
//!   as a TIMESTAMP at midnight; an unknown field: 22023
//! ```

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Timelike};

use crate::error::{Error, Result};
use crate::value::{Decimal, Value};
use crate::SqlState;

/// Days from 4714-11-24 BC (Julian day 0) to 1970-01-01.
const JULIAN_1970: i64 = 2_440_588;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A field's value: `(mantissa, scale)` of a decimal.
type Part = (i128, u8);

fn date_of(days: i32) -> Result<NaiveDate> {
    crate::value::date_from_days(days)
        .ok_or_else(|| Error::sql(SqlState::DATETIME_FIELD_OVERFLOW, "date out of range"))
}

fn timestamp_of(micros: i64) -> Result<NaiveDateTime> {
    DateTime::from_timestamp_micros(micros)
        .map(|t| t.naive_utc())
        .ok_or_else(|| Error::sql(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range"))
}

/// The fields a DATE and a TIMESTAMP share (from the calendar day).
fn date_field(field: &str, d: NaiveDate) -> Option<Part> {
    let year = d.year() as i128;
    Some((
        match field {
            "year" => year,
            "month" => d.month() as i128,
            "day" => d.day() as i128,
            "dow" => d.weekday().num_days_from_sunday() as i128,
            "isodow" => d.weekday().number_from_monday() as i128,
            "doy" => d.ordinal() as i128,
            "week" => d.iso_week().week() as i128,
            "isoyear" => d.iso_week().year() as i128,
            "quarter" => (d.month() as i128 - 1) / 3 + 1,
            "decade" => year.div_euclid(10),
            "century" if year > 0 => (year + 99) / 100,
            "century" => -((99 - (year - 1)) / 100),
            "millennium" if year > 0 => (year + 999) / 1000,
            "millennium" => -((999 - (year - 1)) / 1000),
            _ => return None,
        },
        0,
    ))
}

fn is_time_field(field: &str) -> bool {
    matches!(
        field,
        "hour" | "minute" | "second" | "milliseconds" | "microseconds"
    )
}

fn unit_error(field: &str, type_name: &str, known: bool) -> Error {
    if known {
        Error::sql(
            SqlState::FEATURE_NOT_SUPPORTED,
            format!("unit \"{field}\" not supported for type {type_name}"),
        )
    } else {
        Error::sql(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("unit \"{field}\" not recognized for type {type_name}"),
        )
    }
}

/// PostgreSQL's spelling of a field (`years`, `secs`, … included).
fn canonical(field: &str) -> String {
    let f = field.trim().trim_matches('\'').to_ascii_lowercase();
    match f.as_str() {
        "years" | "y" | "yr" | "yrs" => "year",
        "months" | "mon" | "mons" => "month",
        "days" | "d" => "day",
        "hours" | "h" | "hr" | "hrs" => "hour",
        "minutes" | "m" | "min" | "mins" => "minute",
        "seconds" | "s" | "sec" | "secs" => "second",
        "millisecond" | "ms" | "msec" | "msecs" | "mseconds" | "millisecon" => "milliseconds",
        "microsecond" | "us" | "usec" | "usecs" | "useconds" => "microseconds",
        "decades" => "decade",
        "centuries" => "century",
        "millennia" | "millenniums" | "mil" | "mils" => "millennium",
        "j" => "julian",
        other => return other.to_string(),
    }
    .to_string()
}

fn date_part(field: &str, days: i32) -> Result<Part> {
    if let Some(p) = date_field(field, date_of(days)?) {
        return Ok(p);
    }
    match field {
        "epoch" => Ok((days as i128 * 86_400, 0)),
        "julian" => Ok((days as i128 + JULIAN_1970 as i128, 0)),
        f => Err(unit_error(f, "date", is_time_field(f))),
    }
}

fn timestamp_part(field: &str, micros: i64) -> Result<Part> {
    let t = timestamp_of(micros)?;
    if let Some(p) = date_field(field, t.date()) {
        return Ok(p);
    }
    let sec_us = t.second() as i128 * 1_000_000 + (t.nanosecond() / 1000) as i128;
    Ok(match field {
        "hour" => (t.hour() as i128, 0),
        "minute" => (t.minute() as i128, 0),
        "second" => (sec_us, 6),
        "milliseconds" => (sec_us, 3),
        "microseconds" => (sec_us, 0),
        "epoch" => (micros as i128, 6),
        "julian" => {
            // Whole days plus the fraction of the day, to 20 places.
            let day = micros.div_euclid(MICROS_PER_DAY) as i128 + JULIAN_1970 as i128;
            let us = micros.rem_euclid(MICROS_PER_DAY) as i128;
            let scale = 10i128.pow(20);
            let frac = (us * scale * 2 + MICROS_PER_DAY as i128) / (MICROS_PER_DAY as i128 * 2);
            (day * scale + frac, 20)
        }
        f => return Err(unit_error(f, "timestamp without time zone", false)),
    })
}

/// `timestamp + interval` of (months, days, µs), as PostgreSQL adds
/// them: months first (the day of month clamped to the month's end),
/// then days, then time.
pub fn add_interval(micros: i64, months: i64, days: i64, time: i64) -> Result<i64> {
    let overflow = || Error::sql(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range");
    let t = timestamp_of(micros)?;
    let t = match months {
        0 => Some(t),
        m if m > 0 => {
            t.checked_add_months(chrono::Months::new(m.try_into().map_err(|_| overflow())?))
        }
        m => t.checked_sub_months(chrono::Months::new(
            m.unsigned_abs().try_into().map_err(|_| overflow())?,
        )),
    }
    .ok_or_else(overflow)?;
    let base = t.and_utc().timestamp_micros();
    days.checked_mul(MICROS_PER_DAY)
        .and_then(|d| base.checked_add(d))
        .and_then(|b| b.checked_add(time))
        .ok_or_else(overflow)
}

/// `EXTRACT` (`numeric`) or `date_part` of `v` (a DATE or TIMESTAMP).
pub fn part(field: &Value, v: &Value, numeric: bool) -> Result<Value> {
    let Value::Text(field) = field else {
        return Err(Error::sql(
            SqlState::UNDEFINED_FUNCTION,
            "function date_part takes a field name as text",
        ));
    };
    let field = canonical(field);
    let (mantissa, scale) = match v {
        Value::Null => return Ok(Value::Null),
        // date_part(text, date) is PostgreSQL's date_part of the date
        // as a timestamp (midnight); EXTRACT has date fields of its own.
        Value::Date(d) if !numeric => timestamp_part(&field, *d as i64 * MICROS_PER_DAY)?,
        Value::Date(d) => date_part(&field, *d)?,
        Value::Timestamp(t) => timestamp_part(&field, *t)?,
        other => {
            return Err(Error::sql(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "function date_part(unknown, {}) does not exist",
                    other
                        .data_type()
                        .map_or("unknown".into(), |t| t.to_string())
                ),
            ))
        }
    };
    Ok(if numeric {
        Value::Numeric(Decimal::new(mantissa, scale))
    } else {
        Value::Double(mantissa as f64 / 10f64.powi(scale as i32))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Value {
        Value::Timestamp(crate::value::parse_timestamp(s).unwrap())
    }

    fn ex(field: &str, v: &Value) -> String {
        part(&Value::Text(field.into()), v, true)
            .unwrap()
            .to_pg_text()
            .unwrap()
    }

    /// PostgreSQL 15's answers.
    #[test]
    fn fields_of_a_timestamp_match_postgres() {
        let t = ts("2024-01-02 03:04:05.5");
        let expected = [
            ("year", "2024"),
            ("month", "1"),
            ("day", "2"),
            ("hour", "3"),
            ("minute", "4"),
            ("second", "5.500000"),
            ("epoch", "1704164645.500000"),
            ("dow", "2"),
            ("doy", "2"),
            ("quarter", "1"),
            ("week", "1"),
            ("isodow", "2"),
            ("isoyear", "2024"),
            ("milliseconds", "5500.000"),
            ("microseconds", "5500000"),
            ("century", "21"),
            ("decade", "202"),
            ("millennium", "3"),
            ("julian", "2460312.12784143518518518519"),
        ];
        for (f, want) in expected {
            assert_eq!(ex(f, &t), want, "{f}");
        }
        let t = ts("0044-03-15 12:00:00");
        assert_eq!(ex("epoch", &t), "-60772248000.000000");
        assert_eq!(ex("julian", &t), "1737205.50000000000000000000");
        assert_eq!(ex("century", &t), "1");
        assert_eq!(ex("decade", &t), "4");
    }

    #[test]
    fn fields_of_a_date_match_postgres() {
        let d = Value::Date(crate::value::parse_date("2024-02-29").unwrap());
        assert_eq!(ex("year", &d), "2024");
        assert_eq!(ex("epoch", &d), "1709164800");
        assert_eq!(ex("dow", &d), "4");
        assert_eq!(ex("julian", &d), "2460370");
        let d = Value::Date(crate::value::parse_date("2021-01-01").unwrap());
        assert_eq!(ex("week", &d), "53");
        assert_eq!(ex("isoyear", &d), "2020");
        let e = part(&Value::Text("hour".into()), &d, true).unwrap_err();
        assert_eq!(e.to_string(), "unit \"hour\" not supported for type date");
        let e = part(&Value::Text("foo".into()), &ts("2024-01-02"), true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unit \"foo\" not recognized for type timestamp without time zone"
        );
    }

    #[test]
    fn date_part_is_double_precision() {
        let t = ts("2024-01-02 03:04:05.5");
        let dp = |f: &str| part(&Value::Text(f.into()), &t, false).unwrap();
        assert_eq!(dp("second"), Value::Double(5.5));
        assert_eq!(dp("epoch"), Value::Double(1704164645.5));
        assert_eq!(dp("year"), Value::Double(2024.0));
    }
}
