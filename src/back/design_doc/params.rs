//! "Parameters": every param of the unit with the value the generated files were built with and
//! where that value came from (the default, the instance, `--param`, or the runtime's token
//! count), so a reviewer reading one instance's document knows which sizes it describes.

use crate::valid::CheckedTask;
use std::fmt::Write;

/// Appends the section to `s` when `task` declares a param.
pub(super) fn write(s: &mut String, task: &CheckedTask) {
    let ir = &task.ir;
    if ir.params.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Parameters\n");
    let _ = writeln!(s, "| param | type | value | from | declared range |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    for p in ir.params.values() {
        let within = |outer: crate::span::Span, inner: crate::span::Span| {
            outer.start <= inner.start && inner.end <= outer.end
        };
        let from = match (&p.runtime, &ir.instance, ir.instance_span) {
            (Some(r), _, _) => format!(
                "the runtime's token count, {}..={} (the kernel is sized for the maximum)",
                r.min, p.value
            ),
            (None, Some(name), Some(span)) if within(span, p.value_span) => {
                format!("instance `{name}`")
            }
            // A `--param` override's value span is the whole declaration (`sema::params`).
            _ if p.value_span == p.span => "`--param`".to_string(),
            _ => "default".to_string(),
        };
        let range = p.range_text.as_deref().unwrap_or("-");
        let _ = writeln!(
            s,
            "| `{}` | `{}` | {} | {from} | {range} |",
            p.name,
            p.ty.name(),
            p.value_text()
        );
    }
    let _ = writeln!(s);
}
