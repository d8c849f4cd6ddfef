//! What a Python reference's outputs are compared with (docs/references.md): the tensors a task
//! writes ([`Written`]), each fp8 output's declared `scale of` tensor ([`scale_pair`]), the
//! comparison per output from the reference's tolerances or the dtype's defaults ([`checks`]),
//! and the expected values, dequantized where an fp8 output has its scales ([`expectations`]).
//! `gpu::python` runs the reference and re-exports these.

use super::reference::{tolerance, Check, Expected};
use crate::ir::{Dtype, ReferenceIr, Tolerance};
use crate::valid::CheckedTask;

/// One tensor a task writes (`out` or `inout`), as its comparison sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Written {
    /// The contract's name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Extents, outermost first.
    pub dims: Vec<i64>,
    /// The written tensor this one is declared the block scales of (`scale of T`), as an index
    /// into the same list.
    pub scale_of: Option<usize>,
}

/// The tensors `task` writes, in `ir.written()` order (what [`Expected::output`] indexes), each
/// with the written tensor its `scale of` role names.
pub fn written(task: &CheckedTask) -> Vec<Written> {
    let handles: Vec<_> = task.ir.written().map(|(h, _)| h).collect();
    task.ir
        .written()
        .map(|(_, t)| Written {
            name: t.name.clone(),
            dtype: t.dtype,
            dims: t.dims.clone(),
            scale_of: match t.role {
                Some((crate::ir::TensorRole::ScaleOf(x), _)) => {
                    handles.iter().position(|h| *h == x)
                }
                _ => None,
            },
        })
        .collect()
}

/// The scale output an fp8 output `o` is quantised with: the output declared `scale of` it
/// (f32 or ue8m0, E0005 otherwise), when its extents group the fp8 output's rows
/// ([`crate::ir::scale_group`]). Returns (scale output
/// index, elements per scale along the row). An fp8 output without such a declared scale has
/// none: tensors that merely have a fitting shape are not its scales.
pub fn scale_pair(outs: &[Written], o: usize) -> Option<(usize, usize)> {
    let out = &outs[o];
    if !matches!(out.dtype, Dtype::E4m3 | Dtype::E5m2) || out.dims.is_empty() {
        return None;
    }
    outs.iter().enumerate().find_map(|(i, s)| {
        let fits = s.scale_of == Some(o) && matches!(s.dtype, Dtype::F32 | Dtype::Ue8m0);
        fits.then(|| crate::ir::scale_group(&s.dims, &out.dims).map(|g| (i, g as usize)))
            .flatten()
    })
}

/// The comparison of each output (in output order): the reference's tolerances for the output,
/// else its tolerances for every output, else the default of the dtype as mpkc's own references
/// have it (gpu.md): bf16/f16 relative L2 below 1e-2, f32 below 1e-4, integers (and e5m2,
/// ue8m0) exactly, an fp8 output with its declared scale output ([`scale_pair`]) dequantized
/// below 2e-2 (a `rel_l2` changes that bound; `atol`/`rtol`/`exact` compare its fp8 values
/// themselves), the scales written, finite and positive.
pub fn checks(outs: &[Written], r: &ReferenceIr) -> Vec<Check> {
    let scales: Vec<usize> = (0..outs.len())
        .filter_map(|o| scale_pair(outs, o).map(|(s, _)| s))
        .collect();
    (0..outs.len())
        .map(|o| {
            let (name, dtype) = (outs[o].name.as_str(), &outs[o].dtype);
            let own: Vec<Tolerance> = r
                .tolerances
                .iter()
                .filter(|t| t.output.as_deref() == Some(name))
                .map(|t| t.kind)
                .collect();
            let given = if own.is_empty() {
                r.tolerances
                    .iter()
                    .filter(|t| t.output.is_none())
                    .map(|t| t.kind)
                    .collect()
            } else {
                own
            };
            let pair = scale_pair(outs, o);
            let (mut atol, mut rtol, mut rel, mut exact) = (None, None, None, false);
            for k in &given {
                match k {
                    Tolerance::Atol(a) => atol = Some(*a),
                    Tolerance::Rtol(x) => rtol = Some(*x),
                    Tolerance::RelL2(x) => rel = Some(*x),
                    Tolerance::Exact => exact = true,
                }
            }
            if exact {
                return Check::Exact;
            }
            if atol.is_some() || rtol.is_some() {
                return Check::Close {
                    atol: atol.unwrap_or(0.0),
                    rtol: rtol.unwrap_or(0.0),
                };
            }
            match (pair, rel) {
                (Some((s, group)), tol) => Check::Dequant {
                    scales: s,
                    group,
                    tol: tol.unwrap_or(2e-2),
                },
                (None, Some(t)) => Check::RelL2(t),
                (None, None) if scales.contains(&o) => Check::ScalesOf,
                (None, None) => match dtype {
                    Dtype::I32 | Dtype::I64 | Dtype::U8 | Dtype::Ue8m0 | Dtype::E5m2 => {
                        Check::Exact
                    }
                    Dtype::E4m3 => Check::RelL2(tolerance(*dtype, true)),
                    _ => Check::RelL2(tolerance(*dtype, false)),
                },
            }
        })
        .collect()
}

/// What each output of `task` should hold: `values` (the runner's, per output) under
/// [`checks`]; a dequantized comparison expects the reference's values times its own scales.
pub fn expectations(task: &CheckedTask, r: &ReferenceIr, values: Vec<Vec<f64>>) -> Vec<Expected> {
    expectations_of(&written(task), r, values)
}

/// [`expectations`] over the written tensors `outs` ([`written`]).
pub(super) fn expectations_of(
    outs: &[Written],
    r: &ReferenceIr,
    values: Vec<Vec<f64>>,
) -> Vec<Expected> {
    let checks = checks(outs, r);
    let dequant: Vec<Option<Vec<f64>>> = checks
        .iter()
        .enumerate()
        .map(|(o, c)| match c {
            Check::Dequant { scales, group, .. } => {
                let row = outs[o].dims.last().copied().unwrap_or(1).max(1) as usize;
                let per_row = row.div_ceil(*group);
                let s = &values[*scales];
                Some(
                    values[o]
                        .iter()
                        .enumerate()
                        .map(|(i, q)| {
                            q * s
                                .get((i / row) * per_row + (i % row) / group)
                                .copied()
                                .unwrap_or(f64::NAN)
                        })
                        .collect(),
                )
            }
            _ => None,
        })
        .collect();
    values
        .into_iter()
        .zip(checks)
        .zip(dequant)
        .enumerate()
        .map(|(output, ((v, check), d))| Expected {
            output,
            values: d.unwrap_or(v),
            check,
        })
        .collect()
}
