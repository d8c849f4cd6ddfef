//! `mpkc wire FILE --mirage DIR [--dry-run]`: checks the contracts, then inserts each task
//! instance's registration pieces into the MPK tree (`crate::wire`), or prints the diff.
//! Exit statuses (docs/design.md, "Conventions"): 0 wired (or nothing to change), 1 a contract
//! error or a wiring diagnostic (nothing written), 2 usage, 4 a tree file that cannot be read or
//! written.

use super::args::{CommonArgs, MessageFormat};
use super::exit;
use crate::diag::{render_human, render_json, ColorMode, Diagnostic, SourceFile};
use crate::driver::Checked;
use crate::wire::{self, Status, UnitFacts};
use std::path::Path;

fn print(c: &Checked, d: Diagnostic, format: MessageFormat, color: ColorMode) {
    let d = c.attribute(d);
    let src = c.display_source();
    let file = SourceFile::new(&src.path, &src.text);
    match format {
        MessageFormat::Human => err!("{}", render_human(&d, &file, color)),
        MessageFormat::Json => outln!("{}", render_json(&d, &file)),
    }
}

/// Runs `mpkc wire`; returns the exit status.
pub fn run(common: &CommonArgs, mirage: &Path, dry_run: bool, color: ColorMode) -> u8 {
    let format = common.message_format;
    let checked = match super::check_all(common, color) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if checked.iter().any(Checked::has_errors) {
        super::report::summary(&checked, format);
        return exit::ERRORS;
    }
    // Every checked instance, with the contract its diagnostics belong to.
    let mut units: Vec<(UnitFacts, &Checked)> = Vec::new();
    let mut failed = false;
    // A helper another task of these inputs uses is wired with it (its code is in that task's
    // kernel); only a helper nothing here uses is E0803.
    let used: Vec<&str> = checked
        .iter()
        .flat_map(|c| c.tasks.iter())
        .flat_map(|t| t.ir.helpers.iter().map(|h| h.name.as_str()))
        .collect();
    for c in &checked {
        for t in &c.tasks {
            if t.ir.family == crate::ir::Family::Helper && used.contains(&t.ir.name.as_str()) {
                continue;
            }
            if let Some(w) = UnitFacts::derived_without_id(t, c.derived.is_some()) {
                print(c, w, format, color);
                continue;
            }
            match UnitFacts::of_unit(c, t) {
                Ok(f) => units.push((f, c)),
                Err(d) => {
                    print(c, d, format, color);
                    failed = true;
                }
            }
        }
    }
    if failed {
        return exit::ERRORS;
    }
    let facts: Vec<UnitFacts> = units.iter().map(|(f, _)| f.clone()).collect();
    let plan = match wire::plan(mirage, &facts) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return exit::ABSENT;
        }
    };
    if !plan.diags.is_empty() {
        for (i, d) in plan.diags {
            print(units[i].1, d, format, color);
        }
        if format == MessageFormat::Human {
            errln!("error: nothing was written to {}", mirage.display());
        }
        return exit::ERRORS;
    }
    if dry_run {
        for c in &plan.changes {
            match format {
                MessageFormat::Human => out!("{}", c.unified_diff()),
                MessageFormat::Json => outln!(
                    "{}",
                    serde_json::json!({"reason": "wire-diff", "file": c.file, "diff": c.unified_diff()})
                ),
            }
        }
    } else if let Err(e) = wire::write(mirage, &plan.changes) {
        errln!("error: {e}");
        errln!("  = help: make the MPK tree writable (permission, space); the files before it in §6.1 order may already hold their pieces, and a rerun adds only the rest");
        return exit::ABSENT;
    }
    for r in &plan.units {
        let defines = units
            .iter()
            .find(|(f, _)| f.unit == r.unit)
            .map(|(f, _)| f.build_defines())
            .unwrap_or_default();
        let (added, present): (Vec<_>, Vec<_>) =
            r.pieces.iter().partition(|p| p.status == Status::Added);
        let names = |v: &[&wire::PieceReport]| v.iter().map(|p| p.piece).collect::<Vec<_>>();
        match format {
            MessageFormat::Human => {
                let verb = if dry_run { "would add" } else { "added" };
                let mut line = format!("wire {}: ", r.unit);
                if added.is_empty() {
                    line.push_str("every piece already present");
                } else {
                    line.push_str(&format!("{verb} {}", names(&added).join(", ")));
                    if !present.is_empty() {
                        line.push_str(&format!(
                            "; already present: {}",
                            names(&present).join(", ")
                        ));
                    }
                }
                if !defines.is_empty() {
                    let flags: Vec<String> = defines.iter().map(|d| format!("-D{d}")).collect();
                    line.push_str(&format!(
                        "; the megakernel must be built with {} (its `setmaxnreg`, contract doc §3.5: wire edits no build flags)",
                        flags.join(" ")
                    ));
                }
                errln!("{line}");
            }
            MessageFormat::Json => outln!(
                "{}",
                serde_json::json!({
                    "reason": "wire",
                    "unit": r.unit,
                    "dry_run": dry_run,
                    "added": names(&added),
                    "present": names(&present),
                    "build_defines": defines,
                })
            ),
        }
    }
    exit::OK
}
