//! E0027: an inline body calls every helper it uses (`use NAME`), each time with as many
//! arguments as the helper's function takes: one pointer per helper tensor (its SMEM view is
//! bound by the generated code; docs/language.md, "Helpers"). Comments and literals do not count.

use super::body::strip_comments_and_strings;
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{helper_params, BodyIr, TaskIr};
use crate::span::Span;

/// Reports helpers the body never calls and calls with another number of arguments, and every
/// call from the loader body (the helper is the consumer's).
pub(super) fn calls(ir: &TaskIr, sink: &mut Sink) {
    loader_calls(ir, sink);
    let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.body
    else {
        return;
    };
    let code = strip_comments_and_strings(code);
    for h in &ir.helpers {
        let params = helper_params(&h.helper);
        let signature = format!("{}({})", h.name, params.join(", "));
        let found = find_calls(&code, &h.name);
        if found.is_empty() {
            sink.push(
                Diagnostic::error(
                    codes::HELPER_CALL,
                    format!("the body never calls helper `{}`", h.name),
                )
                .primary(h.span, "used here")
                .note(format!("its function: {signature}"))
                .help(format!(
                    "call `{}(…)` from the body's 128 consumer threads, or remove the `use`",
                    h.name
                )),
            );
        }
        for (start, end, n) in found {
            if n == params.len() {
                continue;
            }
            sink.push(
                Diagnostic::error(
                    codes::HELPER_CALL,
                    format!(
                        "helper `{}` takes {} argument{} but the body passes {n}",
                        h.name,
                        params.len(),
                        if params.len() == 1 { "" } else { "s" }
                    ),
                )
                .primary(
                    Span::new(code_span.start + start, code_span.start + end),
                    format!("{n} argument{}", if n == 1 { "" } else { "s" }),
                )
                .secondary(h.span, "the helper used here")
                .note(format!(
                    "its function: {signature} (the generated code passes its SMEM view)"
                ))
                .help("pass one pointer per helper tensor, in its declaration order"),
            );
        }
    }
}

/// A helper's function is emitted into the consumer's function, for the 128 consumer threads
/// calling it together; the loader body (a consumer ring's, `body loader cuda`) runs on lane 0 of
/// the loader warp, where the helper is not declared (nvcc: "identifier is undefined").
fn loader_calls(ir: &TaskIr, sink: &mut Sink) {
    let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.loader_body
    else {
        return;
    };
    let code = strip_comments_and_strings(code);
    for h in &ir.helpers {
        for (start, end, _) in find_calls(&code, &h.name) {
            sink.push(
                Diagnostic::error(
                    codes::HELPER_CALL,
                    format!("the loader body calls helper `{}`", h.name),
                )
                .primary(
                    Span::new(code_span.start + start, code_span.start + end),
                    "called on the loader's one lane",
                )
                .secondary(h.span, "the helper used here")
                .note("a helper's function is emitted into the consumer's function and runs on the 128 consumer threads together; the loader body runs on lane 0 of the loader warp")
                .help(format!(
                    "call `{}(…)` from the consumer body (`body cuda {{ … }}`)",
                    h.name
                )),
            );
        }
    }
}

/// Each call of `name` in `code` (comments and literals blanked): the byte range from the name
/// to its closing parenthesis, and the number of top-level arguments.
fn find_calls(code: &str, name: &str) -> Vec<(usize, usize, usize)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (i, _) in code.match_indices(name) {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == ':') {
            continue;
        }
        let mut j = i + name.len();
        if code[j..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if bytes.get(j) != Some(&b'(') {
            continue;
        }
        let (mut depth, mut commas, mut any) = (0usize, 0usize, false);
        let mut end = None;
        for (k, &b) in bytes.iter().enumerate().skip(j) {
            match b {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(k + 1);
                        break;
                    }
                }
                b',' if depth == 1 => commas += 1,
                c if depth >= 1 && !c.is_ascii_whitespace() => any = true,
                _ => {}
            }
        }
        if let Some(e) = end {
            out.push((i, e, if any { commas + 1 } else { 0 }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::find_calls;

    #[test]
    fn counts_top_level_arguments() {
        let c = "quant(a, b[1, 2], f(x, y)); quant (); x.quant(1); my_quant(1); quant2(3)";
        let found: Vec<usize> = find_calls(c, "quant").iter().map(|x| x.2).collect();
        assert_eq!(found, vec![3, 0]);
    }
}
