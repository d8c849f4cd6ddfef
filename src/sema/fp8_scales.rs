//! fp8 outputs whose scales are not declared (W0019): an `out` tensor of e4m3 or e5m2 that no
//! tensor declares `scale of`, in a task that also writes an f32 or ue8m0 tensor with no role.
//! `mpkc verify` dequantizes an fp8 output only with the tensor declared `scale of` it (the
//! pairing is by that role, never by shape), so such an output is compared on its raw fp8
//! codes, which a change of scale alone moves: the f32 output is most likely its scales.
//! Checked once per task, on its first lowered instance (roles and dtypes do not vary).

use crate::diag::{codes, Diagnostic};
use crate::front::ast::Direction;
use crate::ir::{Dtype, TaskIr, TensorRole};

/// W0019 for each fp8 output of `ir` without a `scale of` tensor, when an unroled f32 or ue8m0
/// output could be its scales (secondary label on each candidate).
pub fn undeclared_fp8_scales(ir: &TaskIr) -> Vec<Diagnostic> {
    let scaled: Vec<_> = ir
        .tensors
        .iter()
        .filter_map(|(_, t)| match t.role() {
            Some(TensorRole::ScaleOf(x)) => Some(x),
            _ => None,
        })
        .collect();
    let candidates: Vec<_> = ir
        .tensors
        .iter()
        .filter(|(_, t)| {
            t.direction == Direction::Out
                && matches!(t.dtype, Dtype::F32 | Dtype::Ue8m0)
                && matches!(t.role(), None | Some(TensorRole::Output))
        })
        .map(|(_, t)| t)
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    ir.tensors
        .iter()
        .filter(|(h, t)| {
            t.direction == Direction::Out
                && matches!(t.dtype, Dtype::E4m3 | Dtype::E5m2)
                && !scaled.contains(h)
        })
        .map(|(_, y)| {
            let mut d = Diagnostic::warning(
                codes::UNDECLARED_FP8_SCALES,
                format!(
                    "`{}` is an fp8 output, but no tensor is declared `scale of {}`",
                    y.name, y.name
                ),
            )
            .primary(y.span, format!("{} output without declared scales", y.dtype.as_str()));
            for c in &candidates {
                d = d.secondary(
                    c.span,
                    format!("{} output with no role: its scales?", c.dtype.as_str()),
                );
            }
            let c = candidates[0];
            d.note("`mpkc verify` dequantizes an fp8 output only with the tensor declared `scale of` it; without one it compares the raw fp8 codes, which a different scale alone changes")
                .help(format!(
                    "if `{}` holds `{}`'s scales, end its declaration with `scale of {}`",
                    c.name, y.name, y.name
                ))
        })
        .collect()
}
