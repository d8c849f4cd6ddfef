//! A helper's body is the body of its own `__device__` function (docs/language.md, "Helpers"):
//! it sees its SMEM view `buf`, one pointer per tensor, its own `params::`, `BAR_<NAME>` and
//! `kConsumerThreads`, and nothing of the consumer function it is called from. A name of that
//! function (`task_offset`, `kNumTasks`, `iter_num`, `runtime_config`, …) or a param the helper
//! does not declare is "identifier is undefined" for nvcc, or worse, where the caller's
//! namespace declares it, silently the caller's value; E0002 at check. A helper calling its own
//! function (which takes the SMEM view the generated code binds) is E0025: helpers do not nest.

use super::body::{strip_comments_and_strings, unqualified_offsets};
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, Family, TaskIr};
use crate::span::Span;

/// The consumer function's own names, which a helper's function does not have.
pub(super) const CONSUMER_NAMES: [&str; 7] = [
    "task_offset",
    "kNumTasks",
    "iter_num",
    "runtime_config",
    "task_desc",
    "runtime_smem",
    "instruction_index",
];

/// Reports, in a `family helper` task's body, the consumer function's names, `params::X` for a
/// param `X` the helper does not declare, and a call of the helper itself.
pub(super) fn helper_scope(ir: &TaskIr, sink: &mut Sink) {
    if ir.family != Family::Helper {
        return;
    }
    let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.body
    else {
        return;
    };
    let code = strip_comments_and_strings(code);
    let at = |i: usize, len: usize| Span::new(code_span.start + i, code_span.start + i + len);
    let help = "pass what the helper needs as a tensor or bind it as a param on the `use` line (`use NAME (p = …)`)";
    for name in CONSUMER_NAMES {
        // A member of something else (`x->task_offset`, `ns::kNumTasks`) is not the name.
        if let Some(i) = unqualified_offsets(&code, name).next() {
            sink.push(
                Diagnostic::error(
                    codes::UNKNOWN_NAME,
                    format!("helper `{}`'s body names `{name}`, which its function does not have", ir.name),
                )
                .primary(at(i, name.len()), "a name of the calling task's consumer function")
                .note("a helper's function takes its SMEM view and one pointer per tensor, and sees its own `params::`, `BAR_<NAME>` and `kConsumerThreads` only (docs/language.md, \"Helpers\"): nvcc would find the name undefined, or take the caller's where its namespace declares one")
                .help(help),
            );
        }
    }
    for (i, p) in super::task_scope::unknown_params(ir, &code) {
        sink.push(
            Diagnostic::error(
                codes::UNKNOWN_NAME,
                format!("helper `{}` declares no param `{p}`", ir.name),
            )
            .primary(at(i, "params::".len() + p.len()), "not a param of the helper")
            .note("a helper's `params::` are its own, set by each `use` line; the calling task's params are not in its namespace")
            .help(format!(
                "declare `param {p}: …` in the helper and bind it on the `use` line (`use {} ({p} = …)`)",
                ir.name
            )),
        );
    }
    let own = unqualified_offsets(&code, &ir.name)
        .find(|&i| code[i + ir.name.len()..].trim_start().starts_with('('));
    if let Some(i) = own {
        sink.push(
            Diagnostic::error(
                codes::HELPER_HOST,
                format!("helper `{}`'s body calls itself", ir.name),
            )
            .primary(at(i, ir.name.len()), "a call of the helper's own function")
            .note("helpers do not nest: the function takes the SMEM view the calling task's generated code binds, which its own body has no way to pass")
            .help("write the repeated work as a loop in the body"),
        );
    }
}
