//! YCSB's Zipfian generator (Gray et al., "Quickly generating
//! billion-record synthetic databases", as in YCSB's ZipfianGenerator),
//! scrambled with FNV-1a so popular keys spread over the key space.

use rand::Rng;

pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl Zipfian {
    /// `theta` in (0, 1); YCSB's default is 0.99.
    pub fn new(items: u64, theta: f64) -> Zipfian {
        let items = items.max(1);
        let zetan = zeta(items, theta);
        let zeta2 = zeta(2, theta);
        Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
        }
    }

    /// A rank in `0..items` (0 most popular).
    pub fn next_rank(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }

    /// A scrambled key in `0..items`.
    pub fn next_key(&self, rng: &mut impl Rng) -> u64 {
        fnv1a(self.next_rank(rng)) % self.items
    }
}

pub fn fnv1a(x: u64) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in x.to_le_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn skewed_and_in_range() {
        let z = Zipfian::new(1000, 0.99);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            let r = z.next_rank(&mut rng);
            counts[r as usize] += 1;
            assert!(z.next_key(&mut rng) < 1000);
        }
        // Rank 0 is far more popular than the median rank.
        assert!(counts[0] > 20 * counts[500].max(1));
    }
}
