//! The epilogue map of a pipeline: its inline `body cuda { … }` applied to each element of the
//! store (docs/language.md, "Epilogue map"), checked for what the lowering can apply.

use super::Epilogue;
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::*;

/// The epilogue map of a pipeline (`body cuda { … }`: docs/language.md, "Epilogue map"): applied
/// by `store bf16` and `residual add` to each element before its rounding, for an unrouted
/// pipeline; it reads the accumulator `acc`, the token `n`, the output column `row` and
/// `params::`, and no tensor. `Ok(false)` without an inline body (a body template is E0014's: no
/// lowering reads it). Errors (E0601, pushed to `sink`): another epilogue, a routed pipeline, a
/// tensor named in the map.
pub(super) fn epilogue_map(
    ir: &TaskIr,
    epilogue: Epilogue,
    routed: bool,
    sink: &mut Sink,
) -> Result<bool, ()> {
    let Some(crate::ir::BodyIr::Cuda { code, span, .. }) = &ir.body else {
        return Ok(false);
    };
    let err = |msg: String, help: &str| {
        Diagnostic::error(codes::LINEAR_LIMITS, msg)
            .primary(*span, "the epilogue map")
            .note("a pipeline's `body cuda { … }` is its epilogue's map: f32 `acc` of output element (token `n`, column `row`) in, the f32 value to round and store out")
            .help(help.to_string())
    };
    if !matches!(epilogue, Epilogue::StoreBf16 | Epilogue::ResidualAdd) || routed {
        let what = if routed {
            "a routed pipeline".to_string()
        } else {
            format!("a `{}` epilogue", epilogue.as_str())
        };
        sink.push(err(
            format!("an epilogue map on {what}: the lowering maps the elements of `store bf16` and `residual add` only"),
            "use `epilogue store bf16` or `residual add`, or apply the map in the task that reads the output",
        ));
        return Err(());
    }
    let code = crate::valid::body_code(code);
    if !crate::valid::names_word(&code, "return") {
        sink.push(err(
            "the epilogue map returns no value".to_string(),
            "end the map with `return <f32 expression of acc, n, row>;` (`return acc;` stores the accumulator)",
        ));
        return Err(());
    }
    if let Some((_, t)) = ir
        .tensors
        .iter()
        .find(|(_, t)| crate::valid::names_word(&code, &t.name))
    {
        sink.push(err(
            format!("the epilogue map names tensor `{}`: a map reads `acc`, `n`, `row` and `params::` only", t.name),
            "compute the map from the accumulator and the element's position; an extra operand is a task of its own",
        ));
        return Err(());
    }
    Ok(true)
}
