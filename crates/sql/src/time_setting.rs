//! Time-valued settings as PostgreSQL reads and shows them
//! (`statement_timeout`, `lock_timeout`, `deadlock_timeout`,
//! `vacuum_cost_delay`): a bare number is milliseconds, or a number with
//! one of the units us, ms, s, min, h, d; SHOW names the value in the
//! largest unit that divides it.

use std::time::Duration;

use ndpdb_formats::SqlState;

use crate::{Error, Result};

/// Parses `value` for setting `name`; 0 is "no limit" (`None`).
pub fn parse(name: &str, value: &str) -> Result<Option<Duration>> {
    let invalid = || {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"{name}\": \"{value}\""),
        )
    };
    let v = value.trim().trim_matches('\'').trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().map_err(|_| invalid())?;
    let ms = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" => n,
        "us" => n / 1e3,
        "s" => n * 1e3,
        "min" => n * 60e3,
        "h" => n * 3600e3,
        "d" => n * 86_400e3,
        _ => return Err(invalid()),
    };
    // PostgreSQL rounds to its base unit (ms) and keeps it in an int.
    let ms = ms.round();
    if !(0.0..=i32::MAX as f64).contains(&ms) {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!(
                "{ms} ms is outside the valid range for parameter \"{name}\" (0 .. 2147483647)"
            ),
        ));
    }
    Ok((ms > 0.0).then(|| Duration::from_millis(ms as u64)))
}

/// `deadlock_timeout`: as [`parse`], but at least 1 ms.
pub fn parse_positive(name: &str, value: &str) -> Result<Duration> {
    parse(name, value)?.ok_or_else(|| {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("0 ms is outside the valid range for parameter \"{name}\" (1 .. 2147483647)"),
        )
    })
}

/// How SHOW renders a millisecond setting: `0`, `1500ms`, `2s`, `1min`.
pub fn show(d: Option<Duration>) -> String {
    let ms = d.map_or(0, |d| d.as_millis() as u64);
    if ms == 0 {
        return "0".into();
    }
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("min", 60_000),
        ("s", 1000),
    ] {
        if ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_shows_like_postgres() {
        let p = |v| parse("lock_timeout", v).unwrap();
        assert_eq!(p("0"), None);
        assert_eq!(p("1500"), Some(Duration::from_millis(1500)));
        assert_eq!(p("2s"), Some(Duration::from_secs(2)));
        assert_eq!(p("1 min"), Some(Duration::from_secs(60)));
        assert_eq!(show(p("1500")), "1500ms");
        assert_eq!(show(p("120s")), "2min");
        assert_eq!(show(p("90s")), "90s");
        assert_eq!(show(p("1d")), "1d");
        assert_eq!(show(None), "0");
        let e = parse("lock_timeout", "5 parsecs").unwrap_err();
        assert_eq!(e.code, SqlState::INVALID_PARAMETER_VALUE);
        assert_eq!(
            e.message,
            "invalid value for parameter \"lock_timeout\": \"5 parsecs\""
        );
        assert!(parse("lock_timeout", "-1").is_err());
        assert!(parse_positive("deadlock_timeout", "0").is_err());
    }
}
