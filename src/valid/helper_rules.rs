//! E0026: every rule a helper's own `mpkc check` applies holds at the params the `use` binds.
//! A helper's code goes into the using task's kernel (docs/language.md, "Helpers"), so an
//! error in it (a `__syncthreads` that deadlocks the other roles, E0406; a region over the
//! budget) is the using task's too: without this rule the using task checked clean and its
//! build carried the helper's fault into a kernel that hangs or that nvcc rejects. The helper
//! is checked as lowered with the `use`'s params; its diagnostics point into its own file, so
//! the using task reports them on its `use` line, each with the helper file's line and column.

use super::{check_rules, CheckOptions};
use crate::diag::{codes, Diagnostic, Severity, Sink, SourceFile};
use crate::ir::TaskIr;

/// The helper errors a `use` line quotes before it says how many more there are.
const QUOTED: usize = 3;

/// Reports each `use` whose helper, at the params it binds, breaks a rule of its own that this
/// task's check (its diagnostics from `sink[first..]`) does not already report on the `use`
/// line with the same code.
pub(super) fn checked(ir: &TaskIr, opts: &CheckOptions, sink: &mut Sink, first: usize) {
    for u in &ir.helpers {
        let reported: Vec<&'static str> = sink.as_slice()[first.min(sink.len())..]
            .iter()
            .filter(|d| d.severity == Severity::Error && d.main_span() == u.span)
            .map(|d| d.code)
            .collect();
        let mut own = Sink::new();
        let hopts = CheckOptions {
            proven_models: opts.proven_models.clone(),
            ..CheckOptions::default()
        };
        // Helpers do not nest (E0025), so this recursion is one level deep.
        let _ = check_rules((*u.helper).clone(), &hopts, &mut own);
        let errors: Vec<Diagnostic> = own
            .into_sorted()
            .into_iter()
            // A failing `static_assert` of the helper is reported on the `use` line already,
            // with the values that fail it (static_asserts.rs).
            .filter(|d| {
                d.severity == Severity::Error
                    && d.code != codes::STATIC_ASSERT
                    && !reported.contains(&d.code)
            })
            .collect();
        if errors.is_empty() {
            continue;
        }
        let file = SourceFile::new(&u.path, &u.text);
        // The helper's params as this `use` lowered it: what `--param` reproduces.
        let values: Vec<(String, String)> = u
            .helper
            .params
            .iter()
            .map(|(k, p)| (k.clone(), p.value.to_string()))
            .collect();
        let at = values
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let flags = values
            .iter()
            .map(|(k, v)| format!(" --param {k}={v}"))
            .collect::<String>();
        let mut d = Diagnostic::error(
            codes::HELPER_PARAMS,
            format!(
                "helper `{}` has {} error{} of its own{}",
                u.name,
                errors.len(),
                if errors.len() == 1 { "" } else { "s" },
                if at.is_empty() {
                    String::new()
                } else {
                    format!(" at {at}, the params this `use` binds")
                }
            ),
        )
        .primary(u.span, "its code goes into this task's kernel");
        for e in errors.iter().take(QUOTED) {
            let (line, _) = file.line_col(e.main_span().start);
            let col = file.char_column(e.main_span().start);
            d = d.note(format!(
                "{}:{line}:{col}: error[{}]: {}",
                u.path, e.code, e.message
            ));
        }
        if errors.len() > QUOTED {
            d = d.note(format!("and {} more", errors.len() - QUOTED));
        }
        sink.push(d.help(format!(
            "fix the helper, or bind values at which it checks clean: `mpkc check {}{flags}` shows each error with its span and help",
            u.path
        )));
    }
}
