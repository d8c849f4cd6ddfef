//! Semaphore rules (I-M1).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::TaskIr;
use crate::plan::sems::{Ordinal, MAX_OP_SEMS};

/// I-M1: at most 31 op-private ordinals (0-30); ring slot index 0 is SEM_DEP_READY.
pub(super) fn ordinal_budget(ir: &TaskIr, table: &[Ordinal], sink: &mut Sink) {
    if table.len() <= MAX_OP_SEMS {
        return;
    }
    let mut d = Diagnostic::error(
        codes::TOO_MANY_ORDINALS,
        format!("the task needs {} semaphore ordinals but a ring slot holds 31 (0-30)", table.len()),
    );
    let mut first = true;
    for ch in ir.channels.values() {
        let n = table.iter().filter(|o| o.span == ch.span).count();
        if n == 0 {
            continue;
        }
        let label = format!("{n} ordinals ({} full + {} empty)", ch.depth, n as u32 - ch.depth);
        d = if first { d.primary(ch.span, label) } else { d.secondary(ch.span, label) };
        first = false;
    }
    for s in ir.sems.values() {
        d = if first { d.primary(s.span, "1 ordinal") } else { d.secondary(s.span, "1 ordinal") };
        first = false;
    }
    let over = table.len() - MAX_OP_SEMS;
    let hint = match ir.stages {
        Some((s, _)) if s > 1 => format!("each stage costs 2 or more ordinals: lower `stages` from {s}, or share empty edges (`shares_empty`)"),
        _ => "share empty edges between channels (`shares_empty`) or merge one-shot sems".to_string(),
    };
    sink.push(
        d.note(format!("{over} over; dynamic_semaphores holds 32 mbarriers per slot and index 0 is SEM_DEP_READY"))
            .help(hint),
    );
}
