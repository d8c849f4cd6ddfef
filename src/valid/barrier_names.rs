//! E0002: an inline body's `BAR_<NAME>` that no `barrier` item declares. The generated kernel
//! defines `BAR_<NAME>` (the barrier's id) for each declared barrier, the using task's helpers'
//! as `BAR_<HELPER>_<NAME>`; any other is "identifier is undefined" for nvcc after a clean check
//! (E0406's help names `named_barrier_sync(BAR_<NAME>, …)`, and a newcomer writes it before the
//! `barrier` item).

use super::body::{strip_comments_and_strings, unqualified_offsets, word_offsets};
use super::body_constants::declares;
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, TaskIr};
use crate::span::Span;

/// Reports, once per name, each `BAR_<NAME>` of the inline bodies (consumer, loader, helper)
/// that is neither a declared barrier's constant nor declared by the body itself.
pub(super) fn undeclared(ir: &TaskIr, sink: &mut Sink) {
    let known: Vec<String> = ir
        .barriers
        .values()
        .map(|b| format!("BAR_{}", crate::back::names::upper(&b.name)))
        .collect();
    for body in [&ir.body, &ir.loader_body] {
        let Some(BodyIr::Cuda {
            code, code_span, ..
        }) = body
        else {
            continue;
        };
        let code = strip_comments_and_strings(code);
        let mut seen: Vec<String> = Vec::new();
        for (i, _) in code.match_indices("BAR_") {
            let name: String = code[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let whole = unqualified_offsets(&code, &name).any(|j| j == i);
            if !whole
                || name.len() == 4
                || known.contains(&name)
                || seen.contains(&name)
                || declares(&code, &name)
            {
                continue;
            }
            // Another case of a declared constant (`BAR_b1` for `BAR_B1`): where the body never
            // names the constant itself, the barrier is unused and E0014 says which to write.
            let cased = known.iter().find(|k| k.eq_ignore_ascii_case(&name));
            if cased.is_some_and(|k| word_offsets(&code, k).next().is_none()) {
                continue;
            }
            seen.push(name.clone());
            let lower = name["BAR_".len()..].to_ascii_lowercase();
            let help = match cased {
                Some(k) => format!("write `{k}`: the generated constants are upper case"),
                None => format!(
                    "declare it: `barrier {lower} = named(ID, threads 128)` with an id in 1-15 other than 8"
                ),
            };
            sink.push(
                Diagnostic::error(
                    codes::UNKNOWN_NAME,
                    format!("the inline body names `{name}`, which no `barrier` declares"),
                )
                .primary(
                    Span::new(code_span.start + i, code_span.start + i + name.len()),
                    "no barrier of this name",
                )
                .note(if known.is_empty() {
                    "the task declares no barrier: the generated kernel defines `BAR_<NAME>` for each `barrier NAME = named(ID, threads N)`".to_string()
                } else {
                    format!("declared: {}", known.join(", "))
                })
                .help(help),
            );
        }
    }
}
