//! Register reallocation (`setmaxnreg consumer C, helpers H`, contract doc §3.5, §6.3): a
//! megakernel-wide setting, as MPK has it. Each unit's `Registration` states what its contract
//! asks for (`kSetMaxNRegConsumer`, `kSetMaxNRegHelpers`, 0 when it has no `setmaxnreg` line);
//! the harness defines MPK's `MPK_SETMAXNREG`, `MPK_CONSUMER_REGS` and `MPK_HELPER_REGS` from
//! the units it builds, and the worker prologue (`mpkc_worker.cuh`) issues `setmaxnreg.inc` on
//! warpgroup 0 and `setmaxnreg.dec` on warpgroup 1. The worker `static_assert`s that every
//! registration agrees with the defines; units of one build that disagree are E0404 in the
//! driver (`driver::setmaxnreg_agreement`).

use super::writer::Writer;
use crate::ir::TaskIr;

/// The (consumer, helpers) register targets `ir` declares, if it has a `setmaxnreg` line.
pub fn targets(ir: &TaskIr) -> Option<(i64, i64)> {
    ir.setmaxnreg.map(|(c, h, _)| (c, h))
}

/// The `Registration` members stating `ir`'s register targets (0: no `setmaxnreg` line).
pub(crate) fn registration_members(w: &mut Writer, ir: &TaskIr) {
    let (c, h) = match targets(ir) {
        Some((c, h)) => {
            w.comment(format!(
                "`setmaxnreg consumer {c}, helpers {h}` (contract doc §3.5): megakernel-wide; the harness defines"
            ));
            w.comment(
                "MPK_SETMAXNREG from it and the worker checks that every registration agrees.",
            );
            (c, h)
        }
        None => {
            w.comment("No `setmaxnreg` line (0): the task runs under the megakernel's register split (§3.5).");
            (0, 0)
        }
    };
    w.line(format!("static constexpr int kSetMaxNRegConsumer = {c};"));
    w.line(format!("static constexpr int kSetMaxNRegHelpers = {h};"));
}

/// The check the unit's `.cuh` carries after its `Registration` (nothing without a `setmaxnreg`
/// line), so that an MPK megakernel including it outside mpkc's harness meets the contract too
/// (contract doc §3.5: the setting is the megakernel's `MPK_SETMAXNREG`, `MPK_CONSUMER_REGS`,
/// `MPK_HELPER_REGS`, compiled out by default):
/// - built with `MPK_SETMAXNREG` on and register targets other than the contract's: `#error`
///   (the worker prologue would set registers the task was not checked for, E0404's rule);
/// - built with it off: a `#pragma message` naming the three defines the contract asks for (the
///   task still runs, under the megakernel's even register split).
pub(crate) fn cuh_guard(w: &mut Writer, ir: &TaskIr) {
    let Some((c, h)) = targets(ir) else {
        return;
    };
    let unit = ir.unit_name();
    w.comment(format!(
        "`setmaxnreg consumer {c}, helpers {h}` (contract doc §3.5) in a megakernel built outside mpkc's harness:"
    ));
    w.comment("the megakernel's defines must agree, or say that they are off.");
    w.line("#if defined(MPK_SETMAXNREG) && MPK_SETMAXNREG");
    w.line(format!(
        "#if !defined(MPK_CONSUMER_REGS) || !defined(MPK_HELPER_REGS) || MPK_CONSUMER_REGS != {c} || MPK_HELPER_REGS != {h}"
    ));
    w.line(format!(
        "#error \"{unit} declares setmaxnreg consumer {c}, helpers {h}: build the megakernel with MPK_CONSUMER_REGS={c} MPK_HELPER_REGS={h} (contract doc 3.5)\""
    ));
    w.line("#endif");
    w.line("#else");
    w.line(format!(
        "#pragma message(\"{unit} declares setmaxnreg consumer {c}, helpers {h}, but MPK_SETMAXNREG is off: build with -DMPK_SETMAXNREG=1 -DMPK_CONSUMER_REGS={c} -DMPK_HELPER_REGS={h}\")"
    ));
    w.line("#endif");
}

/// The `#define`s a harness of `units` puts before `mpkc_worker.cuh`: MPK's
/// `MPK_SETMAXNREG 1` with the register targets of the first unit that declares them (the
/// driver has made sure the others agree; the worker's `static_assert` checks it again), or
/// nothing when none does (the worker's default, `MPK_SETMAXNREG 0`).
pub(crate) fn harness_defines(w: &mut Writer, units: &[&TaskIr]) {
    let Some((ir, (c, h))) = units.iter().find_map(|ir| Some((ir, targets(ir)?))) else {
        return;
    };
    w.line(format!(
        "// Register reallocation of `{}` (`setmaxnreg consumer {c}, helpers {h}`, contract doc §3.5).",
        ir.unit_name()
    ));
    w.line("#define MPK_SETMAXNREG 1");
    w.line(format!("#define MPK_CONSUMER_REGS {c}"));
    w.line(format!("#define MPK_HELPER_REGS {h}"));
}
