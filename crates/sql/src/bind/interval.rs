//! Interval literals in date and timestamp arithmetic: `d + interval '1
//! day'`, `t - INTERVAL '2' HOUR`, `interval '1 year 2 mons' + t`. ndpdb
//! has no INTERVAL column type; a literal interval next to `+` or `-`
//! becomes its three parts, added as PostgreSQL adds them (months first,
//! the day of month clamped to the month's end; then days; then time):
//!
//! ```text
//!   '1 year 2 mons 3 days 04:05:06.5'  ─► (14 months, 3 days, 14 706 500 000 µs)
//!   date ± interval, timestamp ± interval ─► timestamp
//! ```

use ndpdb_formats::SqlState;
use sqlparser::ast::{DateTimeField, Expr, Interval};

use crate::{Error, Result};

/// An interval's parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    pub months: i64,
    pub days: i64,
    pub micros: i64,
}

impl Parts {
    pub fn negated(self) -> Parts {
        Parts {
            months: -self.months,
            days: -self.days,
            micros: -self.micros,
        }
    }
}

fn invalid(text: &str) -> Error {
    Error::new(
        SqlState::INVALID_DATETIME_FORMAT,
        format!("invalid input syntax for type interval: \"{text}\""),
    )
}

/// Adds `n` of `unit` to `p`; `false` for an unknown unit.
fn add_unit(p: &mut Parts, n: f64, unit: &str) -> bool {
    let micros = |f: f64| (f * n).round() as i64;
    match unit {
        "year" | "years" | "y" | "yr" | "yrs" => p.months += (n * 12.0).round() as i64,
        "month" | "months" | "mon" | "mons" => p.months += n.trunc() as i64,
        "week" | "weeks" | "w" => p.days += (n * 7.0).round() as i64,
        "day" | "days" | "d" => p.days += n.trunc() as i64,
        "hour" | "hours" | "h" | "hr" | "hrs" => p.micros += micros(3_600_000_000.0),
        "minute" | "minutes" | "m" | "min" | "mins" => p.micros += micros(60_000_000.0),
        "second" | "seconds" | "s" | "sec" | "secs" => p.micros += micros(1_000_000.0),
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => p.micros += micros(1_000.0),
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" => p.micros += micros(1.0),
        _ => return false,
    }
    true
}

/// `[-]hh:mm[:ss[.ffffff]]`.
fn time_of_day(s: &str) -> Option<i64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let mut it = s.split(':');
    let h: i64 = it.next()?.parse().ok()?;
    let m: i64 = it.next()?.parse().ok()?;
    let sec: f64 = match it.next() {
        Some(x) => x.parse().ok()?,
        None => 0.0,
    };
    if it.next().is_some() || !(0..60).contains(&m) || !(0.0..60.0).contains(&sec) {
        return None;
    }
    let us = h * 3_600_000_000 + m * 60_000_000 + (sec * 1_000_000.0).round() as i64;
    Some(if neg { -us } else { us })
}

/// Parses PostgreSQL's interval input (`'1 day'`, `'2 hours 30 minutes'`,
/// `'3 days 04:05:06'`, `'@ 1 year ago'`).
pub fn parse(text: &str) -> Result<Parts> {
    let lower = text.trim().to_ascii_lowercase();
    let mut words: Vec<&str> = lower.split_whitespace().collect();
    if words.first() == Some(&"@") {
        words.remove(0);
    }
    let ago = words.last() == Some(&"ago");
    if ago {
        words.pop();
    }
    if words.is_empty() {
        return Err(invalid(text));
    }
    let mut p = Parts::default();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if w.contains(':') {
            p.micros += time_of_day(w).ok_or_else(|| invalid(text))?;
            i += 1;
            continue;
        }
        // A number, its unit in the same word (`5days`) or the next.
        let split = w.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(w.len());
        let (num, unit) = w.split_at(split);
        let n: f64 = num.parse().map_err(|_| invalid(text))?;
        let unit = if unit.is_empty() {
            i += 1;
            // A bare number is seconds.
            words.get(i).copied().unwrap_or("second")
        } else {
            unit
        };
        if !add_unit(&mut p, n, unit) {
            return Err(invalid(text));
        }
        i += 1;
    }
    Ok(if ago { p.negated() } else { p })
}

/// The parts of an `INTERVAL …` expression with a literal value.
pub fn of_expr(iv: &Interval) -> Result<Parts> {
    let text = match iv.value.as_ref() {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::SingleQuotedString(s) => s.clone(),
            sqlparser::ast::Value::Number(n, _) => n.to_string(),
            _ => return Err(not_literal()),
        },
        _ => return Err(not_literal()),
    };
    match &iv.leading_field {
        // `INTERVAL '2' HOUR`: a number of that unit.
        Some(field) if iv.last_field.is_none() && text.trim().parse::<f64>().is_ok() => {
            let mut p = Parts::default();
            let unit = field_unit(field).ok_or_else(|| invalid(&text))?;
            add_unit(&mut p, text.trim().parse().unwrap_or(0.0), unit);
            Ok(p)
        }
        _ => parse(&text),
    }
}

fn field_unit(f: &DateTimeField) -> Option<&'static str> {
    Some(match f {
        DateTimeField::Year | DateTimeField::Years => "year",
        DateTimeField::Month | DateTimeField::Months => "month",
        DateTimeField::Week(_) | DateTimeField::Weeks => "week",
        DateTimeField::Day | DateTimeField::Days => "day",
        DateTimeField::Hour | DateTimeField::Hours => "hour",
        DateTimeField::Minute | DateTimeField::Minutes => "minute",
        DateTimeField::Second | DateTimeField::Seconds => "second",
        _ => return None,
    })
}

fn not_literal() -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        "only a literal INTERVAL can be added to or subtracted from a date or timestamp",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_interval_input() {
        let p = |s| parse(s).unwrap();
        assert_eq!(
            p("1 day"),
            Parts {
                months: 0,
                days: 1,
                micros: 0
            }
        );
        assert_eq!(
            p("1 year 2 mons 3 days 04:05:06.5"),
            Parts {
                months: 14,
                days: 3,
                micros: 14_706_500_000
            }
        );
        assert_eq!(p("2 hours 30 minutes").micros, 9_000_000_000);
        assert_eq!(p("-1 week").days, -7);
        assert_eq!(p("@ 1 month ago").months, -1);
        assert_eq!(p("10").micros, 10_000_000);
        assert!(parse("1 fortnight").is_err());
        assert!(parse("").is_err());
    }
}
