//! The statistics of the differential run's timings: each compiler's min, median and max, the
//! order in which the compilers take turns, and a bootstrap confidence interval of the ratio of
//! two medians. Pure host code, tested without a GPU.
//!
//! Method (docs/gpu-benchmarks.md, "What is timed"): the compilers' cubins of one sample are
//! timed in rounds; in each round every compiler runs once, in an order drawn afresh from a
//! seeded generator ([`round_order`]), so that drift of the machine (clocks, temperature, other
//! tenants) falls on every compiler alike instead of on whichever ran in a block of its own. The
//! ratio a table states is `median(a) / median(b)`; its 95% interval is the percentile bootstrap
//! ([`bootstrap_ratio`]): resample `a` and `b` with replacement (each its own size),
//! take the ratio of the resamples' medians, 2,000 times, and read the 2.5th and 97.5th
//! percentiles of those ratios. The seed is fixed, so a results file is reproducible from its
//! times. A ratio is called faster or slower only when its interval excludes 1 ([`Verdict`]).

use super::compare::median;
use super::manifest::SplitMix64;

/// The seed of the round orders and of the bootstrap, unless the command line gives another.
pub const DEFAULT_SEED: u64 = 0x5eed_cdc0;

/// Resamples of the bootstrap.
pub const RESAMPLES: usize = 2000;

/// A uniform integer in `0..n` (n > 0), by rejection, so that no value is favoured.
fn below(rng: &mut SplitMix64, n: usize) -> usize {
    let n = n as u64;
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let x = rng.next();
        if x < zone {
            return (x % n) as usize;
        }
    }
}

/// The order in which `n` compilers run in round `round`: a Fisher–Yates shuffle of `0..n`
/// from a generator seeded with `seed` and the round, so that any round can be redrawn alone.
pub fn round_order(n: usize, round: usize, seed: u64) -> Vec<usize> {
    let mut rng = SplitMix64::new(seed ^ (round as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = below(&mut rng, i + 1);
        order.swap(i, j);
    }
    order
}

/// Min, median and max of one compiler's timed runs (ms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub runs: usize,
}

impl Summary {
    pub fn of(times: &[f64]) -> Option<Summary> {
        let median = median(times)?;
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        let max = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Summary { min, median, max, runs: times.len() })
    }
}

/// A ratio of medians with its bootstrap interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatioInterval {
    /// `median(a) / median(b)`.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
}

/// What a ratio allows one to say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The whole interval is below 1: `a` is faster.
    Faster,
    /// The whole interval is above 1: `a` is slower.
    Slower,
    /// The interval holds 1: no difference shown.
    Undecided,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Undecided => "no difference shown",
        }
    }
}

impl RatioInterval {
    pub fn verdict(&self) -> Verdict {
        if self.high < 1.0 {
            Verdict::Faster
        } else if self.low > 1.0 {
            Verdict::Slower
        } else {
            Verdict::Undecided
        }
    }
}

/// The ratios `median(a*) / median(b*)` of `resamples` bootstrap resamples, sorted.
pub fn bootstrap_ratios(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> Vec<f64> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let mut rng = SplitMix64::new(seed);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut out = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for x in ra.iter_mut() {
            *x = a[below(&mut rng, a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[below(&mut rng, b.len())];
        }
        let (ma, mb) = (median(&ra).unwrap_or(f64::NAN), median(&rb).unwrap_or(f64::NAN));
        out.push(ma / mb);
    }
    out.sort_by(f64::total_cmp);
    out
}

/// The `q`-quantile (0..=1) of sorted values: the value at rank `ceil(q * n)` (1-based, at
/// least 1), the plain percentile of the bootstrap literature.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// `median(a) / median(b)` and its two-sided `level` (0.95) percentile-bootstrap interval;
/// `None` when either side has no times or `b`'s median is not positive.
pub fn bootstrap_ratio(a: &[f64], b: &[f64], level: f64, resamples: usize, seed: u64) -> Option<RatioInterval> {
    let (ma, mb) = (median(a)?, median(b)?);
    if mb <= 0.0 {
        return None;
    }
    let ratios = bootstrap_ratios(a, b, resamples, seed);
    let tail = (1.0 - level) / 2.0;
    Some(RatioInterval { ratio: ma / mb, low: quantile(&ratios, tail)?, high: quantile(&ratios, 1.0 - tail)? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_min_median_max() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!(s, Summary { min: 1.0, median: 2.5, max: 10.0, runs: 4 });
        assert_eq!(Summary::of(&[]), None);
    }

    #[test]
    fn quantile_is_the_ceiling_rank() {
        let v: Vec<f64> = (1..=40).map(f64::from).collect();
        // 0.025 * 40 = 1 -> the 1st value; 0.975 * 40 = 39 -> the 39th
        assert_eq!(quantile(&v, 0.025), Some(1.0));
        assert_eq!(quantile(&v, 0.975), Some(39.0));
        assert_eq!(quantile(&v, 0.5), Some(20.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    /// Constant times: every resample has the same medians, the interval is the point.
    #[test]
    fn constant_times_give_a_point_interval() {
        let a = vec![2.0; 30];
        let b = vec![1.0; 30];
        let r = bootstrap_ratio(&a, &b, 0.95, RESAMPLES, DEFAULT_SEED).unwrap();
        assert_eq!(r, RatioInterval { ratio: 2.0, low: 2.0, high: 2.0 });
        assert_eq!(r.verdict(), Verdict::Slower);
    }

    /// a = {1, 2, 3}, b = {1}: the median of three draws from {1, 2, 3} is 1 when at least two
    /// draws are 1: 3·(1/3)²·(2/3) + (1/3)³ = 7/27; 3 likewise 7/27; 2 the remaining 13/27.
    /// So the 2.5% and 97.5% points are 1 and 3 (7/27 = 26% of mass at each end), and the
    /// 30th percentile is 2 (26% < 30% <= 74%).
    #[test]
    fn bootstrap_matches_the_hand_computed_distribution() {
        let ratios = bootstrap_ratios(&[1.0, 2.0, 3.0], &[1.0], 20_000, 7);
        assert_eq!(ratios.len(), 20_000);
        let share = |v: f64| ratios.iter().filter(|&&r| r == v).count() as f64 / ratios.len() as f64;
        for (v, p) in [(1.0, 7.0 / 27.0), (2.0, 13.0 / 27.0), (3.0, 7.0 / 27.0)] {
            // 20,000 draws: the standard error of a share near 0.26 is 0.003
            assert!((share(v) - p).abs() < 0.015, "share of {v}: {} against {p}", share(v));
        }
        let r = bootstrap_ratio(&[1.0, 2.0, 3.0], &[1.0], 0.95, 20_000, 7).unwrap();
        assert_eq!(r, RatioInterval { ratio: 2.0, low: 1.0, high: 3.0 });
        assert_eq!(r.verdict(), Verdict::Undecided);
        assert_eq!(quantile(&ratios, 0.30), Some(2.0));
    }

    /// Two well separated sets: a = 30 runs of 0.9..0.929, b = 30 runs of 1.0..1.029. Every
    /// resample's median of a lies in [0.900, 0.929] and of b in [1.000, 1.029], so every ratio,
    /// and the interval, lies in [0.900/1.029, 0.929/1.000] = [0.8746, 0.929]: excludes 1.
    #[test]
    fn separated_sets_exclude_one() {
        let a: Vec<f64> = (0..30).map(|k| 0.9 + k as f64 * 0.001).collect();
        let b: Vec<f64> = (0..30).map(|k| 1.0 + k as f64 * 0.001).collect();
        let r = bootstrap_ratio(&a, &b, 0.95, RESAMPLES, DEFAULT_SEED).unwrap();
        assert!((r.ratio - 0.9145 / 1.0145).abs() < 1e-12, "{r:?}");
        assert!(r.low >= 0.900 / 1.029 && r.high <= 0.929 && r.low <= r.ratio && r.ratio <= r.high, "{r:?}");
        assert_eq!(r.verdict(), Verdict::Faster);
        let back = bootstrap_ratio(&b, &a, 0.95, RESAMPLES, DEFAULT_SEED).unwrap();
        assert_eq!(back.verdict(), Verdict::Slower);
    }

    #[test]
    fn the_seed_fixes_the_interval() {
        let a: Vec<f64> = (0..31).map(|k| 1.0 + ((k * 37) % 11) as f64 * 0.01).collect();
        let b: Vec<f64> = (0..31).map(|k| 1.0 + ((k * 13) % 7) as f64 * 0.013).collect();
        let one = bootstrap_ratio(&a, &b, 0.95, RESAMPLES, 42).unwrap();
        assert_eq!(one, bootstrap_ratio(&a, &b, 0.95, RESAMPLES, 42).unwrap());
        assert_eq!(bootstrap_ratios(&a, &b, 500, 42), bootstrap_ratios(&a, &b, 500, 42));
        assert_ne!(bootstrap_ratios(&a, &b, 500, 42), bootstrap_ratios(&a, &b, 500, 43));
    }

    #[test]
    fn no_times_no_interval() {
        assert_eq!(bootstrap_ratio(&[], &[1.0], 0.95, 10, 1), None);
        assert_eq!(bootstrap_ratio(&[1.0], &[0.0], 0.95, 10, 1), None);
    }

    #[test]
    fn round_orders_are_permutations_that_vary_and_repeat() {
        let orders: Vec<Vec<usize>> = (0..30).map(|r| round_order(4, r, DEFAULT_SEED)).collect();
        for o in &orders {
            let mut s = o.clone();
            s.sort();
            assert_eq!(s, vec![0, 1, 2, 3]);
        }
        // each compiler runs first in some round, and the orders are not all one
        for k in 0..4 {
            assert!(orders.iter().any(|o| o[0] == k), "compiler {k} never first");
        }
        assert_eq!(orders, (0..30).map(|r| round_order(4, r, DEFAULT_SEED)).collect::<Vec<_>>());
        assert_eq!(round_order(1, 5, 9), vec![0]);
        assert_eq!(round_order(0, 5, 9), Vec::<usize>::new());
    }

    #[test]
    fn verdict_needs_the_whole_interval_on_one_side() {
        let v = |low, high| RatioInterval { ratio: (low + high) / 2.0, low, high }.verdict();
        assert_eq!(v(0.8, 0.99), Verdict::Faster);
        assert_eq!(v(0.8, 1.0), Verdict::Undecided);
        assert_eq!(v(1.0, 1.2), Verdict::Undecided);
        assert_eq!(v(1.01, 1.2), Verdict::Slower);
    }
}
