//! TPC-C's random values (clause 2.1.6 and 4.3.2): uniform integers,
//! NURand with its C constants, customer last names from the syllable
//! table, a-strings, n-strings, zip codes and data strings of which 10 %
//! contain "ORIGINAL".

use rand::rngs::SmallRng;
use rand::Rng;

/// A uniform integer in `[lo, hi]` (both included).
pub fn uniform(rng: &mut SmallRng, lo: i64, hi: i64) -> i64 {
    rng.gen_range(lo..=hi)
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y − x + 1)) + x
/// (clause 2.1.6).
pub fn nurand(rng: &mut SmallRng, a: i64, x: i64, y: i64, c: i64) -> i64 {
    (((uniform(rng, 0, a) | uniform(rng, x, y)) + c) % (y - x + 1)) + x
}

/// The run-time constants C of NURand (clause 2.1.6): one per field, the
/// same for every client. `c_last_load` generates the customers' last
/// names at load time; `c_last_run` picks them during the run, at a
/// distance from it in [65, 119] other than 96 and 112 (clause 2.1.6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Constants {
    pub c_last_load: i64,
    pub c_last_run: i64,
    /// For C_ID: NURand(1023, 1, 3000).
    pub c_id: i64,
    /// For OL_I_ID: NURand(8191, 1, 100000).
    pub ol_i_id: i64,
}

impl Constants {
    pub fn new(rng: &mut SmallRng) -> Constants {
        let c_last_load = uniform(rng, 0, 255);
        let c_last_run = loop {
            let c = uniform(rng, 0, 255);
            if Constants::valid_delta(c_last_load, c) {
                break c;
            }
        };
        Constants {
            c_last_load,
            c_last_run,
            c_id: uniform(rng, 0, 1023),
            ol_i_id: uniform(rng, 0, 8191),
        }
    }

    /// Whether C_LAST's run constant may follow the load constant.
    pub fn valid_delta(load: i64, run: i64) -> bool {
        let d = (run - load).abs();
        (65..=119).contains(&d) && d != 96 && d != 112
    }
}

const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The last name of number `n` in [0, 999]: the syllables of its three
/// digits (clause 4.3.2.3), e.g. 371 → "PRICALLYOUGHT".
pub fn last_name(n: i64) -> String {
    let n = n.clamp(0, 999) as usize;
    let mut s = String::with_capacity(15);
    s.push_str(SYLLABLES[n / 100]);
    s.push_str(SYLLABLES[n / 10 % 10]);
    s.push_str(SYLLABLES[n % 10]);
    s
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// An a-string of random alphanumeric characters, its length uniform in
/// `[lo, hi]`.
pub fn astring(rng: &mut SmallRng, lo: usize, hi: usize) -> String {
    let len = rng.gen_range(lo..=hi);
    (0..len)
        .map(|_| ALNUM[rng.gen_range(0..ALNUM.len())] as char)
        .collect()
}

/// An n-string of random digits, its length uniform in `[lo, hi]`.
pub fn nstring(rng: &mut SmallRng, lo: usize, hi: usize) -> String {
    let len = rng.gen_range(lo..=hi);
    (0..len)
        .map(|_| (b'0' + rng.gen_range(0..10u8)) as char)
        .collect()
}

/// A zip code: four random digits and "11111" (clause 4.3.2.7).
pub fn zip(rng: &mut SmallRng) -> String {
    let mut s = nstring(rng, 4, 4);
    s.push_str("11111");
    s
}

/// A state: two random letters.
pub fn state(rng: &mut SmallRng) -> String {
    (0..2)
        .map(|_| (b'A' + rng.gen_range(0..26u8)) as char)
        .collect()
}

/// I_DATA / S_DATA: an a-string of [26, 50] characters; in 10 % of them
/// "ORIGINAL" replaces eight characters at a random position
/// (clause 4.3.3.1).
pub fn data(rng: &mut SmallRng) -> String {
    let mut s = astring(rng, 26, 50);
    if rng.gen_range(0..10) == 0 {
        let at = rng.gen_range(0..=s.len() - 8);
        s.replace_range(at..at + 8, "ORIGINAL");
    }
    s
}

/// A money amount in cents as DECIMAL text: 1234 → "12.34".
pub fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.unsigned_abs();
    format!("{sign}{}.{:02}", c / 100, c % 100)
}

/// A DECIMAL(4,4) rate in ten-thousandths as text: 1234 → "0.1234".
pub fn rate(ten_thousandths: i64) -> String {
    format!("0.{ten_thousandths:04}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn nurand_stays_in_bounds_and_is_skewed() {
        let mut rng = SmallRng::seed_from_u64(7);
        let consts = Constants::new(&mut rng);
        for (a, x, y, c) in [
            (1023, 1, 3000, consts.c_id),
            (8191, 1, 100_000, consts.ol_i_id),
            (255, 0, 999, consts.c_last_run),
            (1023, 1, 30, consts.c_id),
            (8191, 1, 1000, 8191),
            (255, 0, 29, 255),
        ] {
            let mut counts = vec![0u32; (y - x + 1) as usize];
            for _ in 0..200_000 {
                let v = nurand(&mut rng, a, x, y, c);
                assert!((x..=y).contains(&v), "NURand({a}, {x}, {y}) gave {v}");
                counts[(v - x) as usize] += 1;
            }
            // Non-uniform: the most frequent value is drawn clearly more
            // often than the average one.
            let max = *counts.iter().max().unwrap() as f64;
            let mean = 200_000.0 / counts.len() as f64;
            assert!(max > 1.5 * mean, "NURand({a}, {x}, {y}) looks uniform");
        }
        // Every value in range can come out (small range, many draws).
        let mut seen = [false; 30];
        for _ in 0..100_000 {
            seen[(nurand(&mut rng, 1023, 1, 30, 5) - 1) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn c_constants_respect_the_load_run_delta() {
        for seed in 0..500 {
            let c = Constants::new(&mut SmallRng::seed_from_u64(seed));
            let d = (c.c_last_run - c.c_last_load).abs();
            assert!((65..=119).contains(&d) && d != 96 && d != 112, "{c:?}");
            assert!((0..=255).contains(&c.c_last_load) && (0..=255).contains(&c.c_last_run));
            assert!((0..=1023).contains(&c.c_id) && (0..=8191).contains(&c.ol_i_id));
        }
        assert!(!Constants::valid_delta(0, 96));
        assert!(!Constants::valid_delta(200, 88));
        assert!(Constants::valid_delta(10, 75));
    }

    #[test]
    fn last_names_come_from_the_syllable_table() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
        assert_eq!(last_name(40), "BARPRESBAR");
        let mut names = std::collections::HashSet::new();
        for n in 0..1000 {
            let s = last_name(n);
            assert!(s.len() <= 16 && s.len() >= 9, "{s}");
            names.insert(s);
        }
        assert_eq!(names.len(), 1000, "every number has its own name");
    }

    #[test]
    fn strings_have_the_specified_shapes() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut original = 0;
        for _ in 0..10_000 {
            let d = data(&mut rng);
            assert!((26..=50).contains(&d.len()));
            original += d.contains("ORIGINAL") as u32;
            let z = zip(&mut rng);
            assert!(z.len() == 9 && z.ends_with("11111"));
            assert!(z.bytes().all(|b| b.is_ascii_digit()));
            let a = astring(&mut rng, 8, 16);
            assert!((8..=16).contains(&a.len()));
        }
        assert!((800..1200).contains(&original), "{original} of 10,000");
        assert_eq!(money(-1000), "-10.00");
        assert_eq!(money(500_000), "5000.00");
        assert_eq!(money(7), "0.07");
        assert_eq!(rate(2000), "0.2000");
        assert_eq!(rate(5), "0.0005");
    }
}
