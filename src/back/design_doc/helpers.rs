//! "Helpers": for a task that uses helpers (`use NAME`), each helper's function as its kernel
//! holds it, the params the `use` binds, and the regions and barriers it placed in the task's
//! plan and registry (docs/language.md, "Helpers").

use crate::valid::CheckedTask;
use std::fmt::Write;

/// Appends the section to `s` when `task` uses a helper.
pub(super) fn write(s: &mut String, task: &CheckedTask) {
    let ir = &task.ir;
    if ir.helpers.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Helpers\n");
    for h in &ir.helpers {
        let params: Vec<String> = h
            .helper
            .params
            .values()
            .map(|p| match p.value {
                // `40`, `1e-6`: the value as a contract writes it.
                crate::ir::ParamValue::Float(f) => format!("{} = {f}", p.name),
                ref v => format!("{} = {v}", p.name),
            })
            .collect();
        let _ = writeln!(
            s,
            "`{}` from `{}`, with {}; the body calls it through a lambda that binds its SMEM view:\n",
            h.name,
            h.path,
            if params.is_empty() {
                "no params".to_string()
            } else {
                params.join(", ")
            }
        );
        let lines = crate::back::helper::contract_lines(&h.helper);
        let _ = writeln!(s, "```cuda\n{}\n```\n", lines[0]);
        for l in &lines[1..] {
            let _ = writeln!(s, "- {l}");
        }
        let regions: Vec<String> = h
            .regions
            .iter()
            .map(|r| format!("`{}` (ordinal {})", ir.regions[*r].name, r.index()))
            .collect();
        let bars: Vec<String> = h
            .barriers
            .iter()
            .map(|b| format!("`{}` (id {})", ir.barriers[*b].name, ir.barriers[*b].id))
            .collect();
        let _ = writeln!(
            s,
            "- In this task: regions {}; named barriers {}.\n",
            if regions.is_empty() {
                "none".to_string()
            } else {
                regions.join(", ")
            },
            if bars.is_empty() {
                "none".to_string()
            } else {
                bars.join(", ")
            }
        );
    }
}
