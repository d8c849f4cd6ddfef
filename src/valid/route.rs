//! `route W by ids …` outside the pipeline family (`E0029`): only the pipeline lowering reads
//! an expert at run time; the shapes of a pipeline's route are the lowering's to check
//! (`lower::linear::route`).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{Family, TaskIr};

/// Reports a `route` in a task that is not a pipeline.
pub(super) fn family(ir: &TaskIr, sink: &mut Sink) {
    let Some(r) = &ir.route else { return };
    if ir.family != Family::Pipeline {
        sink.push(
            Diagnostic::error(
                codes::ROUTE,
                "`route` outside the pipeline family: only a pipeline's loader reads an expert at run time",
            )
            .primary(r.span, "here")
            .secondary(ir.family_span, "the family")
            .note("a routed pipeline loads the expert's weight rows by TMA at a coordinate read from the ids (docs/language.md, \"Routed experts\")")
            .help("make the task a pipeline; in a consumer family, an inline body reads the ids as any input and indexes the weights itself"),
        );
    }
}
