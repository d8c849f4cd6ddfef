//! What a task's inline body (its `body cuda`, a consumer ring's `body loader cuda`, a pipeline's
//! epilogue map) can name of the generated kernel (docs/language.md, "Inline CUDA bodies"): its
//! `params::` are the task's declared params (the spec header's `namespace params`), and the
//! per-tensor constants exist only for the tensors that declare what they describe:
//! `<name>_row_stride` for a `view(...)`, `<name>_page_tokens`, `<name>_max_context` and
//! `<name>_requests` for a `paged(...)` pool (`back/consumer.rs`). Any other such name is
//! "identifier is undefined" for nvcc after a clean check; E0002 at check. A helper's own body
//! is `valid::helper_scope`'s.

use super::body::{strip_comments_and_strings, unqualified_offsets};
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{Family, TaskIr};
use crate::span::Span;

/// The per-tensor constants of an inline body: `(suffix, what declares it)`.
const TENSOR_CONSTANTS: [(&str, &str); 4] = [
    ("_row_stride", "view(stride S, offset O)"),
    ("_page_tokens", "paged(page P, max_context C, requests R)"),
    ("_max_context", "paged(page P, max_context C, requests R)"),
    ("_requests", "paged(page P, max_context C, requests R)"),
];

/// E0002 for `params::X` naming no param of the task, and for a per-tensor constant of a tensor
/// that does not declare its view or pool, in each inline body of a task (not a helper).
pub(super) fn task_scope(ir: &TaskIr, sink: &mut Sink) {
    if ir.family == Family::Helper {
        return;
    }
    for (code, code_span) in super::body::inline_bodies(ir) {
        let code = strip_comments_and_strings(code);
        let at = |i: usize, len: usize| Span::new(code_span.start + i, code_span.start + i + len);
        // A pipeline's body is its epilogue map, `epilogue_map(float acc, int n, int row)`:
        // the consumer function's names and the SMEM view are not its.
        if ir.family == Family::Pipeline {
            let names = super::helper_scope::CONSUMER_NAMES
                .iter()
                .copied()
                .chain(["buf"]);
            for name in names {
                if let Some(i) = unqualified_offsets(&code, name).next() {
                    sink.push(
                        Diagnostic::error(codes::UNKNOWN_NAME, format!("the epilogue map names `{name}`, which its function does not have"))
                            .primary(at(i, name.len()), "not in the map's scope")
                            .note("a pipeline's `body cuda` is `__device__ float epilogue_map(float acc, int n, int row)`, called on each accumulator element with its token `n` and output column `row`; it sees those and `params::` only (docs/language.md, \"Epilogue map\")")
                            .help("compute from `acc`, `n`, `row` and `params::`; a value per task or from SMEM is not the map's"),
                    );
                }
            }
        }
        for (i, p) in unknown_params(ir, &code) {
            let known: Vec<&str> = ir.params.keys().map(String::as_str).collect();
            let help = if known.is_empty() {
                format!("declare `param {p}: …` (the task declares no params, so the kernel has no `params::` at all)")
            } else {
                format!(
                    "declare `param {p}: …`, or name one the task declares: {}",
                    known.join(", ")
                )
            };
            sink.push(
                Diagnostic::error(codes::UNKNOWN_NAME, format!("task `{}` declares no param `{p}`", ir.name))
                    .primary(at(i, "params::".len() + p.len()), "not a param of the task")
                    .note("`params::` is the spec header's namespace of the task's declared params; nvcc would find the name undefined")
                    .help(help),
            );
        }
        for t in ir.tensors.values() {
            for (suffix, decl) in TENSOR_CONSTANTS {
                let declared = if suffix == "_row_stride" {
                    t.view.is_some()
                } else {
                    t.paged.is_some()
                };
                let name = format!("{}{suffix}", t.name);
                // A tensor of that name is the body's own pointer (E0012 where it clashes).
                if declared || ir.tensors.values().any(|o| o.name == name) {
                    continue;
                }
                let found = unqualified_offsets(&code, &name).next();
                if let Some(i) = found {
                    sink.push(
                        Diagnostic::error(codes::UNKNOWN_NAME, format!("the body names `{name}`, but `{}` declares no `{}`", t.name, decl.split('(').next().unwrap_or(decl)))
                            .primary(at(i, name.len()), "not defined for this tensor")
                            .secondary(t.span, format!("`{}` has no `{decl}`", t.name))
                            .note("the kernel defines `<name>_row_stride` for a view and `<name>_page_tokens`, `<name>_max_context`, `<name>_requests` for a paged pool only; nvcc would find the name undefined")
                            .help(format!("declare `{decl}` on `{}`, or index its contiguous rows by their length", t.name)),
                    );
                }
            }
        }
    }
}

/// `(offset, name)` of each unqualified `params::NAME` in `code` (comments and literals blanked)
/// whose `NAME` is not a param of `ir`.
pub(super) fn unknown_params(ir: &TaskIr, code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("params::") {
        if i > 0
            && code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        {
            continue;
        }
        let p: String = code[i + "params::".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !p.is_empty() && !ir.params.contains_key(&p) {
            out.push((i, p));
        }
    }
    out
}
