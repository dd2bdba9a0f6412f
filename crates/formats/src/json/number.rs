//! JSON numbers as `jsonb` keeps them: NUMERIC's exact decimal, of any
//! size, in PostgreSQL's output form.
//!
//! ```text
//!  1.50e1 ─► digits "150", scale 1 ─► 15.0      1e2 ─► 100
//!  -0     ─► 0                                  1.5e-3 ─► 0.0015
//! ```

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::error::{Error, Result, SqlState};

/// NUMERIC's largest display scale and integer digits (PostgreSQL's
/// NUMERIC_DSCALE_MAX and 131072).
const MAX_SCALE: i64 = 16383;
const MAX_INT_DIGITS: i64 = 131_072;

/// A number as NUMERIC keeps it: `digits × 10^-scale`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonNumber {
    neg: bool,
    /// ASCII digits without leading zeros (`"0"` for zero).
    digits: String,
    scale: u32,
}

impl JsonNumber {
    /// A JSON number's text (or any decimal NUMERIC reads) in NUMERIC's
    /// form: `1.50e1` is 15.0, `1e2` is 100, `-0` is 0.
    pub fn parse(s: &str) -> Result<JsonNumber> {
        let bad = || {
            Error::sql(
                SqlState::INVALID_TEXT_REPRESENTATION,
                format!("invalid input syntax for type numeric: \"{s}\""),
            )
        };
        let (neg, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(k) => (&rest[..k], rest[k + 1..].parse::<i64>().map_err(|_| bad())?),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int.is_empty() && frac.is_empty()
            || !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit())
        {
            return Err(bad());
        }
        let overflow = || {
            Error::sql(
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                "value overflows numeric format",
            )
        };
        let frac_len = frac.len() as i64;
        let scale = frac_len.checked_sub(exp).ok_or_else(overflow)?.max(0);
        let int_digits = (int.trim_start_matches('0').len() as i64).saturating_add(exp);
        // NUMERIC's limits: 131072 digits before the point, 16383 after.
        if scale > MAX_SCALE || int_digits > MAX_INT_DIGITS {
            return Err(overflow());
        }
        let mut digits = format!("{int}{frac}");
        for _ in 0..(exp - frac_len + scale) {
            digits.push('0');
        }
        let digits = digits.trim_start_matches('0');
        let digits = if digits.is_empty() { "0" } else { digits };
        Ok(JsonNumber {
            neg: neg && digits != "0",
            digits: digits.to_string(),
            scale: scale as u32,
        })
    }

    /// The integer part (no leading zeros) and the fraction (no trailing
    /// zeros) of the magnitude.
    fn parts(&self) -> (&str, &str) {
        let n = self.digits.len();
        let s = self.scale as usize;
        let (int, frac) = if s >= n {
            ("", self.digits.as_str())
        } else {
            self.digits.split_at(n - s)
        };
        let frac = if s > n {
            // Leading zeros of the fraction are not in `digits`: compare
            // on the padded form below instead.
            frac
        } else {
            frac
        };
        (int.trim_start_matches('0'), frac.trim_end_matches('0'))
    }

    fn padded_fraction(&self) -> String {
        let n = self.digits.len();
        let s = self.scale as usize;
        let frac = if s >= n {
            format!("{}{}", "0".repeat(s - n), self.digits)
        } else {
            self.digits[n - s..].to_string()
        };
        frac.trim_end_matches('0').to_string()
    }

    pub fn cmp_num(&self, o: &JsonNumber) -> Ordering {
        let zero = |n: &JsonNumber| n.digits == "0";
        let sign = |n: &JsonNumber| {
            if zero(n) {
                0
            } else if n.neg {
                -1
            } else {
                1
            }
        };
        let (sa, sb) = (sign(self), sign(o));
        if sa != sb {
            return sa.cmp(&sb);
        }
        let (ia, _) = self.parts();
        let (ib, _) = o.parts();
        let mag = ia
            .len()
            .cmp(&ib.len())
            .then_with(|| ia.cmp(ib))
            .then_with(|| self.padded_fraction().cmp(&o.padded_fraction()));
        if sa < 0 {
            mag.reverse()
        } else {
            mag
        }
    }

    pub fn is_integer_valued(&self) -> bool {
        self.padded_fraction().is_empty()
    }
}

impl std::fmt::Display for JsonNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.neg {
            f.write_char('-')?;
        }
        let s = self.scale as usize;
        if s == 0 {
            return f.write_str(&self.digits);
        }
        let padded = if self.digits.len() <= s {
            format!("{}{}", "0".repeat(s + 1 - self.digits.len()), self.digits)
        } else {
            self.digits.clone()
        };
        let (int, frac) = padded.split_at(padded.len() - s);
        write!(f, "{int}.{frac}")
    }
}
