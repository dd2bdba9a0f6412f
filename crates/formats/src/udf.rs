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
//! 320 Gaussian leaves per row, combined in the log domain (168 `exp`,
//! 9 `ln` per row): compute-heavy next to a SUM. The parameters come from a fixed seed and the arithmetic is our
//! own (below), so every build, host and device computes bit-identical
//! scores; scans score [`SPN_BATCH`] rows at a time ([`spn_scores`]).

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

// The network is evaluated with our own `exp` and `ln` (range reduction
// and fixed polynomials, basic IEEE operations only, no fused
// multiply-add): every platform and every batch width computes the same
// bits, and the loops over a batch's rows compile to vector code.

/// 1.5 · 2⁵²: adding it rounds a double of magnitude < 2⁵¹ to an integer
/// (ties to even) in its low mantissa bits.
const ROUND: f64 = 6_755_399_441_055_744.0;
/// ln 2 split in two (fdlibm's): `n · LN2_HI` is exact for |n| < 2¹¹.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);

/// eˣ for x ∈ [-700, 0] (relative error < 2e-14); smaller x give ≈ 0.
#[inline(always)]
fn exp_neg(x: f64) -> f64 {
    let x = x.max(-700.0);
    let k = x * std::f64::consts::LOG2_E + ROUND;
    let n = k - ROUND;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    // e^r, |r| ≤ ln2/2: Taylor to r¹¹ (error < 3e-13 relative), in
    // Estrin's scheme (short dependency chains).
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let a = 1.0 + r;
    let b = 0.5 + r * (1.0 / 6.0);
    let c = 1.0 / 24.0 + r * (1.0 / 120.0);
    let d = 1.0 / 720.0 + r * (1.0 / 5_040.0);
    let e = 1.0 / 40_320.0 + r * (1.0 / 362_880.0);
    let f = 1.0 / 3_628_800.0 + r * (1.0 / 39_916_800.0);
    let p = (a + r2 * b) + r4 * (c + r2 * d) + r8 * (e + r2 * f);
    // 2ⁿ from n's bits in `k` (n ∈ [-1010, 0]).
    let n_bits = (k.to_bits() as i64).wrapping_sub(ROUND.to_bits() as i64);
    p * f64::from_bits((n_bits.wrapping_add(1023) << 52) as u64)
}

/// ln(1 + t) for t ∈ [0, 1] as 2·atanh(t / (2 + t)) (|s| ≤ 1/3).
#[inline(always)]
fn ln_1p_unit(t: f64) -> f64 {
    let s = t / (2.0 + t);
    let s2 = s * s;
    let s4 = s2 * s2;
    let s8 = s4 * s4;
    // 2s·Σ s²ʲ/(2j+1), j ≤ 11 (error < 1e-13 relative), Estrin's scheme.
    let t0 = 1.0 + s2 * (1.0 / 3.0);
    let t1 = 1.0 / 5.0 + s2 * (1.0 / 7.0);
    let t2 = 1.0 / 9.0 + s2 * (1.0 / 11.0);
    let t3 = 1.0 / 13.0 + s2 * (1.0 / 15.0);
    let t4 = 1.0 / 17.0 + s2 * (1.0 / 19.0);
    let t5 = 1.0 / 21.0 + s2 * (1.0 / 23.0);
    let p = (t0 + s4 * t1) + s8 * ((t2 + s4 * t3) + s8 * (t4 + s4 * t5));
    2.0 * s * p
}

/// ln(m) for m ≥ 1 (finite): the exponent's multiple of ln 2 plus
/// ln(1 + t) of the mantissa 1 + t, t ∈ [0, 1).
#[inline(always)]
fn ln_at_least_one(m: f64) -> f64 {
    let e = ((m.to_bits() >> 52) as i64 - 1023) as f64;
    let mant = f64::from_bits((m.to_bits() & ((1u64 << 52) - 1)) | (1023u64 << 52));
    e * std::f64::consts::LN_2 + ln_1p_unit(mant - 1.0)
}

/// Rows scored together: the loops over them are the vector lanes.
pub const SPN_BATCH: usize = 8;

/// Scores `N` rows (`x`: by feature, then row) into `out`; each lane
/// computes exactly what a lane of any other width computes.
#[inline(always)]
fn score_lanes<const N: usize>(x: &[[f64; N]; SPN_FEATURES], out: &mut [f64; N]) {
    let net = spn();
    let mut comps = [[0.0f64; N]; COMPONENTS];
    for (k, comp) in comps.iter_mut().enumerate() {
        // A component is Σ_f ln(e^a_f + e^b_f) over its features; each
        // term is max + ln(1 + e^-|a-b|). The maxima are summed and the
        // (1 + e^-|a-b|) ∈ [1, 2] multiplied, so a component takes one
        // logarithm (of a product in [1, 2²⁰]) instead of one per feature.
        let mut hi_sum = [net.root[k]; N];
        let mut product = [1.0f64; N];
        for (f, xf) in x.iter().enumerate() {
            let [(w0, m0, i0, n0), (w1, m1, i1, n1)] = net.leaves[k * SPN_FEATURES + f];
            let (c0, c1) = (w0 + n0, w1 + n1);
            for l in 0..N {
                let z0 = (xf[l] - m0) * i0;
                let z1 = (xf[l] - m1) * i1;
                let (a, b) = (c0 - 0.5 * z0 * z0, c1 - 0.5 * z1 * z1);
                let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
                hi_sum[l] += hi;
                product[l] *= 1.0 + exp_neg(lo - hi);
            }
        }
        for l in 0..N {
            comp[l] = hi_sum[l] + ln_at_least_one(product[l]);
        }
    }
    for l in 0..N {
        let m = comps.iter().fold(f64::NEG_INFINITY, |m, c| m.max(c[l]));
        let mut sum = 0.0;
        for c in &comps {
            sum += exp_neg(c[l] - m);
        }
        // sum ∈ [1, 8].
        out[l] = m + ln_at_least_one(sum);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn score_lanes_avx2<const N: usize>(x: &[[f64; N]; SPN_FEATURES], out: &mut [f64; N]) {
    score_lanes(x, out)
}

/// One batch of `N` rows, 4-wide where the CPU has AVX2 (same
/// operations, same bits).
fn score_batch<const N: usize>(x: &[[f64; N]; SPN_FEATURES], out: &mut [f64; N]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { score_lanes_avx2(x, out) };
    }
    score_lanes(x, out)
}

/// Rows of a batch's tail scored together (one AVX2 vector).
const SPN_TAIL: usize = 4;

/// Scores up to `N` inputs (checked) into `dst`.
fn score_chunk<const N: usize>(inputs: &[&[u8]], dst: &mut [f64]) {
    let mut x = [[0.0f64; N]; SPN_FEATURES];
    for (l, input) in inputs.iter().enumerate() {
        for (f, c) in input.chunks_exact(4).enumerate() {
            x[f][l] = f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64;
        }
    }
    let mut scores = [0.0f64; N];
    score_batch(&x, &mut scores);
    dst.copy_from_slice(&scores[..dst.len()]);
}

fn check_input(features: &[u8]) -> Result<()> {
    if features.len() != SPN_INPUT_BYTES {
        return Err(Error::sql(
            SqlState::INVALID_PARAMETER_VALUE,
            format!(
                "spn_score expects {SPN_INPUT_BYTES} bytes (20 float4 features), got {}",
                features.len()
            ),
        ));
    }
    Ok(())
}

/// `spn_score(features)`: log-likelihood under the network.
pub fn spn_score(features: &[u8]) -> Result<f64> {
    let mut out = [0.0];
    spn_scores(&[features], &mut out)?;
    Ok(out[0])
}

/// `spn_score` of many feature vectors; `out[i]` is bit for bit what
/// `spn_score(inputs[i])` returns. Fails on the first malformed input.
pub fn spn_scores(inputs: &[&[u8]], out: &mut [f64]) -> Result<()> {
    for input in inputs {
        check_input(input)?;
    }
    let n = inputs.len().min(out.len());
    let full = n - n % SPN_BATCH;
    for (batch, dst) in inputs[..full]
        .chunks(SPN_BATCH)
        .zip(out[..full].chunks_mut(SPN_BATCH))
    {
        score_chunk::<SPN_BATCH>(batch, dst);
    }
    for (batch, dst) in inputs[full..n]
        .chunks(SPN_TAIL)
        .zip(out[full..n].chunks_mut(SPN_TAIL))
    {
        score_chunk::<SPN_TAIL>(batch, dst);
    }
    Ok(())
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

    #[test]
    fn exp_and_ln_match_the_standard_library() {
        for i in 0..=20_000 {
            let x = -(i as f64) / 100.0;
            let (ours, std) = (exp_neg(x), x.exp());
            assert!(
                (ours - std).abs() <= 2e-14 * std,
                "exp({x}): {ours} vs {std}"
            );
        }
        for i in 0..=10_000 {
            let t = i as f64 / 10_000.0;
            let (ours, std) = (ln_1p_unit(t), t.ln_1p());
            assert!(
                (ours - std).abs() <= 1e-15 + 5e-13 * std,
                "ln1p({t}): {ours} vs {std}"
            );
        }
    }

    #[test]
    fn batches_score_like_single_rows_and_like_the_plain_formula() {
        let mut st = 7u64;
        let rows: Vec<Vec<u8>> = (0..37)
            .map(|_| {
                let mut f = [0f32; SPN_FEATURES];
                for v in f.iter_mut() {
                    *v = (splitmix(&mut st) * 8.0 - 4.0) as f32;
                }
                spn_features(&f)
            })
            .collect();
        let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
        let mut batch = vec![0.0; rows.len()];
        spn_scores(&refs, &mut batch).unwrap();
        for (r, b) in rows.iter().zip(&batch) {
            assert_eq!(spn_score(r).unwrap().to_bits(), b.to_bits());
            assert!(
                (plain(r) - b).abs() < 1e-9 * b.abs().max(1.0),
                "{} vs {b}",
                plain(r)
            );
        }
        let mut bad = refs.clone();
        bad[20] = &rows[0][..8];
        assert!(spn_scores(&bad, &mut batch).is_err());
    }

    /// The network with the standard library's exp and ln.
    fn plain(features: &[u8]) -> f64 {
        let lse = |xs: &[f64]| {
            let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
        };
        let x: Vec<f64> = features
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect();
        let net = spn();
        let comps: Vec<f64> = (0..COMPONENTS)
            .map(|k| {
                net.root[k]
                    + x.iter()
                        .enumerate()
                        .map(|(f, xf)| {
                            let leaf = &net.leaves[k * SPN_FEATURES + f];
                            let mix: Vec<f64> = leaf
                                .iter()
                                .map(|(lw, mean, inv, norm)| {
                                    let z = (xf - mean) * inv;
                                    lw + norm - 0.5 * z * z
                                })
                                .collect();
                            lse(&mix)
                        })
                        .sum::<f64>()
            })
            .collect();
        lse(&comps)
    }
}
