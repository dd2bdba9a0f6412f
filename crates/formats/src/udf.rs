//! Built-in user-defined functions that run on host and device alike.
//!
//! `spn_score(bytea)`: the log-likelihood of an 80-byte feature vector
//! (20 little-endian `f32`) under a fixed sum-product network, in the
//! spirit of the papers' Query-SPN (DANSEN §4):
//!
//! ```text
//!                 Σ  (8 weighted components)
//!        ┌────────┼────────┐
//!        Π        Π   …    Π      (product over 20 features)
//!      ┌─┼─┐
//!      Σ Σ … Σ                    (per feature: mixture of 2 Gaussians)
//!     ┌┴┐
//!     N N                         Gaussian leaves
//! ```
//!
//! 320 Gaussian leaves and 169 log-sum-exps per row: compute-heavy next to
//! a SUM. The parameters come from a fixed seed, so every build, host and
//! device computes bit-identical scores.

use std::sync::OnceLock;

use crate::error::{Error, Result, SqlState};

pub const SPN_FEATURES: usize = 20;
pub const SPN_INPUT_BYTES: usize = SPN_FEATURES * 4;
const COMPONENTS: usize = 8;
const LEAF_MIX: usize = 2;

struct Spn {
    /// log weights of the root sum.
    root: [f64; COMPONENTS],
    /// Per component, feature, leaf: (log weight, mean, 1/σ, log normaliser).
    leaves: Vec<[(f64, f64, f64, f64); LEAF_MIX]>,
}

fn splitmix(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

fn log_normalise(w: &mut [f64]) {
    let s: f64 = w.iter().sum();
    for x in w.iter_mut() {
        *x = (*x / s).ln();
    }
}

fn spn() -> &'static Spn {
    static SPN: OnceLock<Spn> = OnceLock::new();
    SPN.get_or_init(|| {
        let mut st = 0x5350_4E5F_5345_4544u64;
        let mut root = [0.0; COMPONENTS];
        for r in root.iter_mut() {
            *r = 0.1 + splitmix(&mut st);
        }
        log_normalise(&mut root);
        let mut leaves = Vec::with_capacity(COMPONENTS * SPN_FEATURES);
        for _ in 0..COMPONENTS * SPN_FEATURES {
            let mut w = [0.0; LEAF_MIX];
            for x in w.iter_mut() {
                *x = 0.1 + splitmix(&mut st);
            }
            log_normalise(&mut w);
            let mut leaf = [(0.0, 0.0, 0.0, 0.0); LEAF_MIX];
            for (l, lw) in leaf.iter_mut().zip(w) {
                let mean = splitmix(&mut st) * 6.0 - 3.0;
                let sigma = 0.5 + splitmix(&mut st) * 1.5;
                let norm = -(sigma * (2.0 * std::f64::consts::PI).sqrt()).ln();
                *l = (lw, mean, 1.0 / sigma, norm);
            }
            leaves.push(leaf);
        }
        Spn { root, leaves }
    })
}

fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// `spn_score(features)`: log-likelihood under the network.
pub fn spn_score(features: &[u8]) -> Result<f64> {
    if features.len() != SPN_INPUT_BYTES {
        return Err(Error::sql(
            SqlState::INVALID_PARAMETER_VALUE,
            format!(
                "spn_score expects {SPN_INPUT_BYTES} bytes (20 float4 features), got {}",
                features.len()
            ),
        ));
    }
    let mut x = [0.0f64; SPN_FEATURES];
    for (i, c) in features.chunks_exact(4).enumerate() {
        x[i] = f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64;
    }
    let net = spn();
    let mut comps = [0.0; COMPONENTS];
    for (k, comp) in comps.iter_mut().enumerate() {
        let mut product = net.root[k];
        for (f, xf) in x.iter().enumerate() {
            let leaf = &net.leaves[k * SPN_FEATURES + f];
            let mut mix = [0.0; LEAF_MIX];
            for (m, (lw, mean, inv_sigma, norm)) in mix.iter_mut().zip(leaf) {
                let z = (xf - mean) * inv_sigma;
                *m = lw + norm - 0.5 * z * z;
            }
            product += log_sum_exp(&mix);
        }
        *comp = product;
    }
    Ok(log_sum_exp(&comps))
}

/// A feature vector from 20 values (for loaders and tests).
pub fn spn_features(values: &[f32; SPN_FEATURES]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_finite_deterministic_and_checked() {
        let a = spn_features(&[0.5; SPN_FEATURES]);
        let s1 = spn_score(&a).unwrap();
        let s2 = spn_score(&a).unwrap();
        assert!(s1.is_finite());
        assert_eq!(s1.to_bits(), s2.to_bits());
        let far = spn_features(&[30.0; SPN_FEATURES]);
        assert!(spn_score(&far).unwrap() < s1, "outliers are less likely");
        assert!(spn_score(&a[..79]).is_err());
    }
}
