//! The diagnostics of a build, rendered as `mpkc check` and `mpkc build` show them (plain
//! text): contract diagnostics, nvcc failures mapped to the contract (`E0701`) and ptxas
//! advisories (`W0702`).

use crate::diag::{codes, render_human, ColorMode, Diagnostic, SourceFile};
use crate::driver::build::{job_failure, CompileJob, UnitOutput};
use crate::driver::Checked;

/// Rendered diagnostics.
pub struct Rendered {
    /// The errors, rendered one after another.
    pub text: String,
    /// How many errors.
    pub errors: usize,
    /// Each warning, rendered (only where there are no errors).
    pub warnings: Vec<String>,
}

/// The diagnostics of every checked contract: the errors (with any warnings) as one text, or
/// the warnings alone.
pub fn diagnostics(checked: &[Checked]) -> Rendered {
    let mut text = String::new();
    let mut errors = 0;
    let mut warnings = Vec::new();
    for c in checked {
        let shown = c.display_source();
        let file = SourceFile::new(&shown.path, &shown.text);
        for d in &c.diags {
            let r = render_human(d, &file, ColorMode::Never);
            errors += usize::from(d.is_error());
            text.push_str(&r);
            warnings.push(r);
        }
    }
    if errors > 0 {
        warnings.clear();
    }
    Rendered {
        text,
        errors,
        warnings,
    }
}

/// The nvcc failures of `jobs`, each as an `E0701` diagnostic on the contract line nvcc named,
/// else on the task with nvcc's command and output. The same diagnostic for several targets is
/// shown once.
pub fn failures(checked: &[Checked], units: &[UnitOutput], jobs: &[CompileJob]) -> Rendered {
    let mut text = String::new();
    let mut errors = 0;
    let mut seen = std::collections::BTreeSet::new();
    for j in jobs {
        let Err(f) = &j.result else { continue };
        let unit = &units[j.unit];
        let c = &checked[unit.source];
        let mapped = job_failure(c, unit, j, f);
        let shown = c.display_source();
        let file = SourceFile::new(&shown.path, &shown.text);
        for d in mapped.into_iter().map(|d| c.attribute(d)) {
            if seen.insert((unit.source, d.main_span(), d.message.clone())) {
                errors += 1;
                text.push_str(&render_human(&d, &file, ColorMode::Never));
            }
        }
    }
    Rendered {
        text,
        errors,
        warnings: Vec::new(),
    }
}

/// Each ptxas performance advisory of a built kernel as a rendered `W0702` warning on its task.
pub fn advisories(checked: &[Checked], units: &[UnitOutput], jobs: &[CompileJob]) -> Vec<String> {
    let mut out = Vec::new();
    for j in jobs {
        let Ok((_, r)) = &j.result else { continue };
        let unit = &units[j.unit];
        let c = &checked[unit.source];
        let shown = c.display_source();
        let file = SourceFile::new(&shown.path, &shown.text);
        for a in &r.advisories {
            let d = Diagnostic::warning(codes::PTXAS_ADVISORY, format!("ptxas: {a}"))
                .primary(
                    c.tasks[unit.task].ir.name_span,
                    format!("in the {} kernel of this task", j.target.as_str()),
                )
                .note(format!("in {}", j.file))
                .help("the kernel is built but runs slower than intended: a bug in mpkc's generated code unless the contract's inline CUDA causes it");
            out.push(render_human(&c.attribute(d), &file, ColorMode::Never));
        }
    }
    out
}
