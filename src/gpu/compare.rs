//! Comparing a GPU output with its reference: every element written (no poison left), no NaN,
//! then relative L2 (‖out − ref‖ / ‖ref‖), exact equality for indices, or dequantized relative
//! L2 for e4m3 outputs with their scales.

use super::data::HostTensor;
use super::reference::{Check, Expected};
use serde::Serialize;

/// The outcome of one output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutputResult {
    /// The task instance.
    pub unit: String,
    /// The contract's tensor name.
    pub tensor: String,
    /// `rel_l2`, `mismatches`, `dequant rel_l2`, `allclose` or `scales`.
    pub metric: String,
    /// The error (relative L2, or the number of mismatches for `exact`).
    pub error: f64,
    /// The tolerance (0 for `exact`).
    pub tol: f64,
    /// Elements still holding the poison (never written).
    pub unwritten: usize,
    /// Elements that are NaN (counted apart from the poison for integer types only).
    pub nans: usize,
    /// Elements.
    pub elements: usize,
    /// Elements written in rows at or past the run's token count (a run-time-M task run below its
    /// maximum, docs/runtime-m.md): must be 0.
    pub past_m: usize,
    /// Verdict.
    pub pass: bool,
}

fn rel_l2(out: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (o, r) in out {
        num += (o - r) * (o - r);
        den += r * r;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

/// Compares `outputs[exp.output]` with `exp` (`outputs` gives the scales of a `Dequant`).
pub fn compare(unit: &str, outputs: &[HostTensor], exp: &Expected) -> OutputResult {
    let out = &outputs[exp.output];
    let n = out.len();
    let unwritten = (0..n).filter(|i| out.is_poison(*i)).count();
    let nans = (0..n).filter(|i| out.get(*i).is_nan()).count();
    let mut r = OutputResult {
        unit: unit.to_string(),
        tensor: out.name.clone(),
        metric: String::new(),
        error: 0.0,
        tol: 0.0,
        unwritten,
        nans,
        elements: n,
        past_m: 0,
        pass: false,
    };
    let written_ok = unwritten == 0 && nans == 0 && exp.values.len() == n;
    match &exp.check {
        Check::RelL2(tol) => {
            r.metric = "rel_l2".into();
            r.tol = *tol;
            r.error = rel_l2((0..n.min(exp.values.len())).map(|i| (out.get(i), exp.values[i])));
            r.pass = written_ok && r.error < *tol;
        }
        Check::Exact => {
            r.metric = "mismatches".into();
            r.error = (0..n.min(exp.values.len()))
                .filter(|i| out.get(*i) != exp.values[*i])
                .count() as f64;
            r.pass = written_ok && r.error == 0.0;
        }
        Check::Dequant { scales, group, tol } => {
            r.metric = "dequant rel_l2".into();
            r.tol = *tol;
            let s = &outputs[*scales];
            let row = out.dims.last().copied().unwrap_or(1).max(1) as usize;
            let per_row = row.div_ceil(*group);
            let deq = |i: usize| out.get(i) * s.get((i / row) * per_row + (i % row) / group);
            r.error = rel_l2((0..n.min(exp.values.len())).map(|i| (deq(i), exp.values[i])));
            r.pass = written_ok && r.error.is_finite() && r.error < *tol;
        }
        Check::Close { atol, rtol } => {
            // The worst element's |out − ref| / (atol + rtol·|ref|): at most 1 passes.
            r.metric = "allclose".into();
            r.tol = 1.0;
            r.error = (0..n.min(exp.values.len()))
                .map(|i| {
                    let (o, e) = (out.get(i), exp.values[i]);
                    let bound = atol + rtol * e.abs();
                    let diff = (o - e).abs();
                    // Equal values pass, infinities included (numpy's `isclose`: a split-KV
                    // kernel's empty split has log-sum-exp -inf); an infinity against anything
                    // else fails.
                    if o == e || diff == 0.0 {
                        0.0
                    } else if !(o.is_finite() && e.is_finite()) {
                        f64::INFINITY
                    } else if bound > 0.0 {
                        diff / bound
                    } else {
                        f64::INFINITY
                    }
                })
                .fold(0.0, f64::max);
            r.pass = written_ok && r.error <= 1.0;
        }
        Check::ScalesOf => {
            r.metric = "scales".into();
            let bad = (0..n)
                .filter(|i| !(out.get(*i) > 0.0 && out.get(*i).is_finite()))
                .count();
            r.error = bad as f64;
            r.pass = written_ok && bad == 0;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::data::POISON;
    use crate::ir::Dtype;

    fn bf16(vals: &[f64]) -> HostTensor {
        let mut t = HostTensor::filled("y", Dtype::Bf16, &[vals.len() as i64], 0);
        for (i, v) in vals.iter().enumerate() {
            t.set(i, *v);
        }
        t
    }

    #[test]
    fn rel_l2_passes_and_fails_on_the_tolerance() {
        let out = bf16(&[1.0, 2.0, 3.0]);
        let ok = Expected {
            output: 0,
            values: vec![1.0, 2.0, 3.0],
            check: Check::RelL2(1e-2),
        };
        assert!(compare("u", std::slice::from_ref(&out), &ok).pass);
        let bad = Expected {
            output: 0,
            values: vec![1.0, 2.0, 3.5],
            check: Check::RelL2(1e-2),
        };
        let r = compare("u", std::slice::from_ref(&out), &bad);
        assert!(!r.pass && r.error > 0.1);
    }

    #[test]
    fn an_unwritten_element_fails_even_when_values_match() {
        let mut out = bf16(&[1.0, 2.0]);
        out.bytes[2] = POISON;
        out.bytes[3] = POISON;
        let e = Expected {
            output: 0,
            values: vec![1.0, f64::NAN],
            check: Check::RelL2(1.0),
        };
        let r = compare("u", std::slice::from_ref(&out), &e);
        assert_eq!(r.unwritten, 1);
        assert!(!r.pass);
    }

    #[test]
    fn allclose_bounds_every_element() {
        let out = bf16(&[1.0, 2.0, 100.0]);
        let e = |v: Vec<f64>| Expected {
            output: 0,
            values: v,
            check: Check::Close {
                atol: 0.01,
                rtol: 0.01,
            },
        };
        // |100 - 100.5| = 0.5 <= 0.01 + 0.01 * 100.5.
        let r = compare("u", std::slice::from_ref(&out), &e(vec![1.0, 2.0, 100.5]));
        assert!(r.pass, "{r:?}");
        assert_eq!(r.metric, "allclose");
        // One element off by 0.05 against a bound of 0.03: the ratio is the worst element's.
        let r = compare("u", std::slice::from_ref(&out), &e(vec![1.0, 2.05, 100.0]));
        assert!(!r.pass && (r.error - 0.05 / 0.0305).abs() < 1e-9, "{r:?}");
    }

    /// Equal infinities are close; an infinity against a finite value, or the other sign, is not.
    #[test]
    fn allclose_takes_equal_infinities_only() {
        let exp = |v: f64| Expected {
            output: 0,
            values: vec![v],
            check: Check::Close {
                atol: 1e-3,
                rtol: 1e-3,
            },
        };
        let mut t = HostTensor::filled("lse", Dtype::F32, &[1], 0);
        t.set(0, f64::NEG_INFINITY);
        assert!(compare("u", &[t.clone()], &exp(f64::NEG_INFINITY)).pass);
        assert!(!compare("u", &[t.clone()], &exp(0.5)).pass);
        assert!(!compare("u", &[t.clone()], &exp(f64::INFINITY)).pass);
        t.set(0, 0.5);
        assert!(!compare("u", &[t], &exp(f64::NEG_INFINITY)).pass);
    }

    #[test]
    fn exact_counts_mismatches() {
        let mut out = HostTensor::filled("token", Dtype::I64, &[3], 0);
        out.set_i64(0, 5);
        out.set_i64(1, 7);
        let e = Expected {
            output: 0,
            values: vec![5.0, 7.0, 1.0],
            check: Check::Exact,
        };
        let r = compare("u", std::slice::from_ref(&out), &e);
        assert_eq!(r.error, 1.0);
        assert!(!r.pass);
    }
}
