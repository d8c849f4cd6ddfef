//! "Descriptors": per target, the MMA a stage issues and every descriptor constant its kernel
//! uses, with the fields decoded — the list `back::layout::descriptors::of` gives, which the
//! layout header renders too — or, for a task without tensor-core MMA, why there is none.

use crate::back::layout::descriptors;
use crate::back::sm100::desc::decode_lines;
use crate::ir::Family;
use crate::valid::CheckedTask;
use std::fmt::Write as _;

/// Writes the "Descriptors" section of `task`.
///
/// Each descriptor is a heading `### <target> \`<NAME>\` = \`0x…\`` (the constant's name in the
/// layout header's `struct Sm100` / `struct Sm90`), what it is, what is OR-ed in per use, and its
/// decoded fields; tests/design_doc.rs parses these headings and the header's constants.
pub(super) fn write(s: &mut String, task: &CheckedTask) {
    let _ = writeln!(s, "## Descriptors\n");
    let Some(p) = task.linear() else {
        let why = match task.ir.family {
            Family::Pipeline => "no kernel is generated for this protocol-only pipeline",
            Family::Helper => "a helper has no kernel of its own",
            _ if crate::back::consumer_ring::has_rings(&task.ir) => "a consumer-only kernel issues no tensor-core MMA (tcgen05 or wgmma), and its consumer rings' TMA bulk copies take no tensor map, so it has no instruction, SMEM matrix or tensor-map descriptor",
            _ => "a consumer-only kernel issues no tensor-core MMA (tcgen05 or wgmma) and no TMA, so it has no instruction, SMEM matrix or tensor-map descriptor",
        };
        let _ = writeln!(s, "No descriptors: {why}.");
        return;
    };
    for prog in &task.programs {
        if let Some(m) = prog.stage_mma() {
            let _ = writeln!(
                s,
                "{}: `{}` m{}n{}k{}, {} per stage.\n",
                prog.target,
                m.ptx(),
                m.m,
                m.n,
                m.k,
                m.count
            );
        }
        for d in descriptors::of(p, prog.target) {
            let _ = writeln!(s, "### {} `{}` = `{}`\n", d.target, d.name, d.hex());
            let _ = writeln!(s, "{} {}.\n", d.about.join(" "), d.per_use);
            let _ = writeln!(s, "```");
            for l in decode_lines(&d.fields) {
                let _ = writeln!(s, "{l}");
            }
            let _ = writeln!(s, "```\n");
        }
    }
}
