//! The arithmetic of a benchmark: the median of repeats, bandwidth, the share of the copy
//! ceiling, speedups and their geometric mean, and the per-task fixed cost. Times are in
//! microseconds, bandwidths in TB/s (10¹² bytes per second).

/// The median of `samples` (the mean of the two middle ones for an even count); `None` for no
/// sample or a NaN among them.
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// TB/s of `bytes` moved in `us` microseconds; `None` for a time that is not positive.
pub fn tb_per_s(bytes: u64, us: f64) -> Option<f64> {
    (us > 0.0 && us.is_finite()).then(|| bytes as f64 / (us * 1e-6) / 1e12)
}

/// The copy ceiling of a device-to-device copy of `bytes` in `us`: each byte is read once and
/// written once, so `2 · bytes / time` (TB/s).
pub fn copy_ceiling(bytes: u64, us: f64) -> Option<f64> {
    tb_per_s(bytes.saturating_mul(2), us)
}

/// The share (0..1, above 1 when faster than the copy) of `ceiling` that `tbps` reaches.
pub fn share(tbps: f64, ceiling: f64) -> Option<f64> {
    (ceiling > 0.0).then(|| tbps / ceiling)
}

/// How many times faster mpkc is than the competitor: `competitor_us / mpkc_us` (above 1: mpkc
/// wins).
pub fn speedup(mpkc_us: f64, competitor_us: f64) -> Option<f64> {
    (mpkc_us > 0.0 && competitor_us > 0.0).then(|| competitor_us / mpkc_us)
}

/// The geometric mean of positive `values`; `None` when there is none or one is not positive.
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan() || *v <= 0.0) {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// The per-task fixed cost (issue 12, Deliver 2): `(T(p) − T(1)) / (p − 1)` for the op's time
/// with `p` tasks per CTA and with one; `None` for `p < 2`.
pub fn fixed_cost(t1_us: f64, tp_us: f64, p: usize) -> Option<f64> {
    (p >= 2).then(|| (tp_us - t1_us) / (p - 1) as f64)
}

/// How many copies of `rotated` bytes a run rotates over so that together they exceed
/// `factor` times the L2 (`l2` bytes), at least 2, so that no run finds its weights in L2.
pub fn copies_for(rotated: u64, l2: u64, factor: u64) -> usize {
    if rotated == 0 {
        return 1;
    }
    let need = l2.saturating_mul(factor);
    (need.div_ceil(rotated) as usize + 1).max(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.5]), Some(7.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
        // One outlier does not move it.
        assert_eq!(median(&[10.0, 10.0, 10.0, 10.0, 900.0]), Some(10.0));
    }

    #[test]
    fn bandwidth_and_share() {
        // o_proj bf16 at M = 1: 29,360,128 + 4,096 + 14,336 bytes in 9.95 us (cuBLAS, gpu docs).
        let bytes = 7168 * 2048 * 2 + 2048 * 2 + 7168 * 2;
        let tb = tb_per_s(bytes, 9.95).expect("positive time");
        assert!((tb - 2.9527).abs() < 1e-3, "{tb}");
        let s = share(tb, 4.25).expect("ceiling");
        assert!((s - 0.6948).abs() < 1e-3, "{s}");
        assert_eq!(tb_per_s(bytes, 0.0), None);
        assert_eq!(share(1.0, 0.0), None);
        // 1 GiB copied in 505 us: read and written, 4.25 TB/s.
        let c = copy_ceiling(1 << 30, 505.3).expect("time");
        assert!((c - 4.2497).abs() < 1e-3, "{c}");
    }

    #[test]
    fn speedup_and_geomean() {
        assert_eq!(speedup(5.0, 10.0), Some(2.0));
        assert_eq!(speedup(10.0, 5.0), Some(0.5));
        assert_eq!(speedup(0.0, 5.0), None);
        let g = geomean(&[2.0, 0.5, 1.0]).expect("values");
        assert!((g - 1.0).abs() < 1e-12);
        let g = geomean(&[1.0, 4.0]).expect("values");
        assert!((g - 2.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
    }

    #[test]
    fn fixed_cost_per_added_task() {
        // 18 us with one task per CTA, 102 us with eight: 12 us per added task.
        assert_eq!(fixed_cost(18.0, 102.0, 8), Some(12.0));
        assert_eq!(fixed_cost(18.0, 18.0, 1), None);
    }

    #[test]
    fn copies_exceed_the_l2() {
        let l2 = 60 << 20;
        // The router's 3.7 MB of weights: enough copies for 2x the L2.
        let r = 256 * 7168 * 2;
        let n = copies_for(r, l2, 2);
        assert!(n as u64 * r > 2 * l2, "{n}");
        // lm_head's 231 MB: two copies, so no run reads what the previous one left.
        assert_eq!(copies_for(16160 * 7168 * 2, l2, 2), 2);
        assert_eq!(copies_for(0, l2, 2), 1);
    }
}
