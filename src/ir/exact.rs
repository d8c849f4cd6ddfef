//! Exact integer arithmetic on sizes and counts: sums and products of `i64` values are computed
//! in `i128` (which holds any sum of up to 2^64 `i64`s and any product of two), so a diagnostic
//! states the true number and the true reason, never a saturated or wrapped one.

/// The exact sum of `values`.
pub fn sum(values: impl IntoIterator<Item = i64>) -> i128 {
    values.into_iter().map(i128::from).sum()
}

/// The exact product `a * b`.
pub fn mul(a: i64, b: i64) -> i128 {
    i128::from(a) * i128::from(b)
}

/// ⌈a / b⌉, exactly, for `b ≥ 1` (any `a`; the result always fits in `i64` as `b ≥ 1`).
///
/// # Panics
///
/// When `b` is 0, like `/`: callers check divisors positive first (task counts, chunks, page
/// and tile sizes are validated or constants).
pub fn ceil_div(a: i64, b: i64) -> i64 {
    let q = a.div_euclid(b);
    if a.rem_euclid(b) == 0 {
        q
    } else {
        q + 1
    }
}

/// ⌈a / b⌉ of an exact sum, for `b > 0`.
pub fn ceil_div_wide(a: i128, b: i64) -> i128 {
    let b = i128::from(b);
    let q = a.div_euclid(b);
    if a.rem_euclid(b) == 0 {
        q
    } else {
        q + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_at_the_limits() {
        assert_eq!(sum([i64::MAX, i64::MAX, 2]), 2 * i128::from(i64::MAX) + 2);
        assert_eq!(sum([1 << 62, 1 << 62, 1 << 62]), 3 * (1i128 << 62));
        assert_eq!(mul(i64::MAX, 16), i128::from(i64::MAX) * 16);
        assert_eq!(mul(1 << 62, 2), 1i128 << 63);
        assert_eq!(ceil_div(i64::MAX, 2), 1 << 62);
        assert_eq!(ceil_div(i64::MAX, 1), i64::MAX);
        assert_eq!(ceil_div(i64::MIN, 2), i64::MIN / 2);
        assert_eq!(ceil_div(-5, 2), -2);
        assert_eq!(ceil_div(5, 2), 3);
        assert_eq!(ceil_div_wide(3 * (1i128 << 62), 16384), 3 * (1i128 << 48));
        assert_eq!(ceil_div_wide(16385, 16384), 2);
    }
}
