//! The binding of `epilogue split_k bf16 with B` ([`SplitSum`]): the partials, the per-tile
//! arrival counters and the named barrier the last split of a tile needs to sum the tile in the
//! task (docs/language.md, "`epilogue`").

use super::SplitSum;
use crate::ir::*;

/// Why the split-K sum's tensors do not bind: what is missing, in words, and the span of each
/// tensor of another type or shape with what it is.
pub(super) type Unbound = (Vec<String>, Vec<(crate::span::Span, String)>);

/// The tensors and barrier of `split_k bf16` and `split_k atomic` ([`SplitSum`]), if the
/// contract declares them: one `partials` f32 `[splits, m_real, N]` (`atomic`: the accumulator
/// f32 `[m_real, N]`), one `counters` i32 `[num_tiles]`, `with B` a named
/// barrier of the 128 consumer threads. Errors: what is missing, of another type or shape, or
/// declared twice, in words, with the span of each such tensor and what it is.
pub(super) fn bind(
    ir: &TaskIr,
    m_real: i64,
    n: i64,
    splits: i64,
    num_tiles: i64,
    atomic: bool,
) -> Result<SplitSum, Unbound> {
    let mut missing = Vec::new();
    let mut labels = Vec::new();
    let mut shaped = |role: TensorRole, dtype: Dtype, dims: Vec<i64>, what: &str| {
        let with: Vec<TensorHandle> = ir
            .tensors
            .iter()
            .filter(|(_, t)| t.role() == Some(role))
            .map(|(h, _)| h)
            .collect();
        let want = format!("{dtype} {dims:?}");
        match with.as_slice() {
            [h] if ir.tensors[*h].dtype == dtype && ir.tensors[*h].dims == dims => Some(*h),
            [] => {
                missing.push(format!("an `out {}` tensor {want} ({what})", role.word()));
                None
            }
            [h] => {
                let t = &ir.tensors[*h];
                missing.push(format!("`{}` to be {want} ({what})", t.name));
                labels.push((t.span, format!("{} {:?}", t.dtype, t.dims)));
                None
            }
            [_, rest @ ..] => {
                missing.push(format!(
                    "one `{}` tensor ({what}), not {}",
                    role.word(),
                    with.len()
                ));
                for h in rest {
                    labels.push((
                        ir.tensors[*h].span,
                        format!("another `{}` tensor", role.word()),
                    ));
                }
                None
            }
        }
    };
    let partials = if atomic {
        shaped(
            TensorRole::Partials,
            Dtype::F32,
            vec![m_real, n],
            "the sums every split adds to, zero between runs",
        )
    } else {
        shaped(
            TensorRole::Partials,
            Dtype::F32,
            vec![splits, m_real, n],
            "each split's sums",
        )
    };
    let counters = shaped(
        TensorRole::Counters,
        Dtype::I32,
        vec![num_tiles],
        "one arrival counter per tile",
    );
    let barrier = super::epilogue_barrier(ir);
    if barrier.is_none() {
        missing.push("`with B` naming a named barrier of the 128 consumer threads".into());
    }
    match (partials, counters, barrier) {
        (Some(partials), Some(counters), Some(barrier)) => Ok(SplitSum {
            partials,
            counters,
            barrier,
        }),
        _ => Err((missing, labels)),
    }
}
