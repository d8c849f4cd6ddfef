//! Running one build at a token count decided at run time (`param m: int in 1..=MAX = runtime`,
//! docs/runtime-m.md): which counts `mpkc verify` runs, and the host side of one run at count
//! `m` — the tensors are allocated and mapped at the maximum, the input rows at or past `m` hold
//! the poison (NaN for floating types), so that a result reading them shows, the output rows at or
//! past `m` must keep the poison (never written), and the reference is computed on the first `m`
//! rows alone.

use super::data::{HostTensor, POISON};
use super::reference::Semantics;
use crate::valid::CheckedTask;

/// The token counts `mpkc verify` runs a run-time-M build at, without `--m`: the range's lower
/// end, one between (`(lo + hi) / 2 + 1`, away from the powers of two a tile is made of), and the
/// maximum; each once, in increasing order.
pub fn run_counts(lo: i64, hi: i64) -> Vec<i64> {
    let mid = (lo + (hi - lo) / 2 + 1).min(hi);
    let mut v = vec![lo.min(hi), mid, hi];
    v.dedup();
    v
}

/// The task's run-time range `(min, max)`, if its token count is decided at run time.
pub fn runtime_range(task: &CheckedTask) -> Option<(i64, i64)> {
    let p = task.ir.runtime_tokens()?;
    match (p.runtime, &p.value) {
        (Some(rt), crate::ir::ParamValue::Int(max)) => Some((rt.min.clamp(0, *max), *max)),
        _ => None,
    }
}

/// Bytes per row of `t` (its first extent is the rows).
fn row_bytes(t: &HostTensor) -> usize {
    let rows = t.dims.first().copied().unwrap_or(1).max(1) as usize;
    t.bytes.len() / rows
}

/// Fills the rows of `t` at or past `m` with the poison.
pub fn poison_rows_from(t: &mut HostTensor, m: i64) {
    let start = (m.max(0) as usize * row_bytes(t)).min(t.bytes.len());
    t.bytes[start..].fill(POISON);
}

/// Elements of `t` in rows at or past `m` that no longer hold the poison: written past the count.
pub fn written_past(t: &HostTensor, m: i64) -> usize {
    let per_row = t.len() / t.dims.first().copied().unwrap_or(1).max(1) as usize;
    let start = m.max(0) as usize * per_row;
    (start..t.len()).filter(|i| !t.is_poison(*i)).count()
}

/// The first `m` rows of `t`, as a tensor of `m` rows.
pub fn first_rows(t: &HostTensor, m: i64) -> HostTensor {
    let m = m.clamp(0, t.dims.first().copied().unwrap_or(0));
    let end = m as usize * row_bytes(t);
    let mut dims = t.dims.clone();
    if let Some(d) = dims.first_mut() {
        *d = m;
    }
    HostTensor {
        name: t.name.clone(),
        dtype: t.dtype,
        dims,
        bytes: t.bytes[..end].to_vec(),
    }
}

/// `sem` at `m` tokens: the linear's `m_real` is the run's count (the other references read the
/// rows from their tensors, which the run truncates with [`first_rows`]).
pub fn semantics_at(sem: &Semantics, m: i64) -> Semantics {
    match sem {
        Semantics::Linear(p) => {
            let mut p = p.clone();
            p.m_real = m;
            Semantics::Linear(p)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Dtype;

    #[test]
    fn verify_runs_the_ends_and_one_between() {
        assert_eq!(run_counts(1, 64), vec![1, 33, 64]);
        assert_eq!(run_counts(1, 16), vec![1, 9, 16]);
        assert_eq!(run_counts(1, 2), vec![1, 2]);
        assert_eq!(run_counts(4, 4), vec![4]);
    }

    #[test]
    fn rows_past_the_count_are_poisoned_and_checked() {
        let mut t = HostTensor::filled("y", Dtype::Bf16, &[4, 3], 0);
        poison_rows_from(&mut t, 1);
        assert_eq!(written_past(&t, 1), 0);
        assert!(!t.is_poison(2) && t.is_poison(3));
        t.set(3 * 3 + 1, 1.0);
        assert_eq!(written_past(&t, 1), 1);
        let head = first_rows(&t, 1);
        assert_eq!(head.dims, vec![1, 3]);
        assert_eq!(head.bytes.len(), 3 * 2);
        assert_eq!(first_rows(&t, 9).dims, vec![4, 3]);
    }
}
