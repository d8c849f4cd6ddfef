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
    if !returns_outside_lambdas(&code) {
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

/// Whether `code` (comments and literals blanked) has a `return` outside the bodies of the
/// lambdas it defines: a map whose only `return` is a lambda's runs off the end of the
/// generated `epilogue_map` (undefined behaviour). A lambda body is a `{` after `]( … )`, with
/// `mutable`, `noexcept` or `-> TYPE` between.
fn returns_outside_lambdas(code: &str) -> bool {
    let lambdas: Vec<(usize, usize)> = code
        .match_indices('{')
        .filter(|(open, _)| is_lambda_body(code.as_bytes(), *open))
        .map(|(open, _)| {
            (
                open,
                crate::front::cuda::block_end(code, open).unwrap_or(code.len()),
            )
        })
        .collect();
    crate::front::cuda::identifiers(code)
        .into_iter()
        .any(|(i, w)| w == "return" && !lambdas.iter().any(|&(o, c)| o < i && i < c))
}

/// Whether the `{` at `open` starts a lambda's body: before it, past whitespace, `mutable`,
/// `noexcept` and a trailing `-> TYPE`, a `)` whose `(` follows a `]`.
fn is_lambda_body(b: &[u8], open: usize) -> bool {
    let mut i = open;
    let back_ws = |mut i: usize| {
        while i > 0 && b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        i
    };
    // Skip words and `->`, `::`, `<>`, `*`, `&` back to a `)`.
    loop {
        i = back_ws(i);
        if i == 0 {
            return false;
        }
        match b[i - 1] {
            b')' => break,
            c if c.is_ascii_alphanumeric()
                || matches!(c, b'_' | b':' | b'<' | b'>' | b'*' | b'&' | b'-' | b',') =>
            {
                i -= 1
            }
            _ => return false,
        }
    }
    // The matching `(`.
    let mut depth = 0usize;
    let mut j = i;
    while j > 0 {
        j -= 1;
        match b[j] {
            b')' => depth += 1,
            b'(' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
    }
    let k = back_ws(j);
    k > 0 && b[k - 1] == b']'
}

#[cfg(test)]
mod tests {
    use super::returns_outside_lambdas;

    #[test]
    fn a_return_inside_a_lambda_only_is_no_return_of_the_map() {
        assert!(!returns_outside_lambdas(
            "auto f = [](float a) { return a; }; (void)f(acc);"
        ));
        assert!(!returns_outside_lambdas(
            "auto f = [&](float a) -> float { return a * 2.f; };"
        ));
        assert!(returns_outside_lambdas(
            "auto f = [](float a) { return a; }; return f(acc);"
        ));
        assert!(returns_outside_lambdas(
            "if (acc > 0.f) { return acc; } else { return 0.f; }"
        ));
        assert!(returns_outside_lambdas("return acc;"));
        assert!(!returns_outside_lambdas(
            "float returned = acc; (void)returned;"
        ));
    }
}
