//! TMEM rules (I-T1).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::TaskIr;

/// I-T1: `tcgen05.alloc` takes a power-of-two column count in [32, 512].
pub(super) fn tmem_cols(ir: &TaskIr, sink: &mut Sink) {
    let Some((cols, span)) = ir.tmem_cols else { return };
    let ok = (32..=512).contains(&cols) && (cols & (cols - 1)) == 0;
    if !ok {
        let up = if cols <= 32 { 32 } else { (cols as u64).next_power_of_two().min(512) };
        sink.push(
            Diagnostic::error(codes::TMEM_COLS, format!("TMEM allocation of {cols} columns is not a power of two in [32, 512]"))
                .primary(span, format!("{cols} columns"))
                .note("tcgen05.alloc takes 32, 64, 128, 256 or 512 columns (PTX ISA, tcgen05.alloc)")
                .help(format!("allocate `tmem cols {up}`")),
        );
    }
}

/// I-T2: the accumulator slots (slots x MMA-N f32 columns) fit the allocated columns.
pub(super) fn footprint(ir: &TaskIr, sink: &mut Sink) {
    let (Some((cols, span)), Some(m)) = (ir.tmem_cols, &ir.mma) else { return };
    for ch in ir.channels.values() {
        if !matches!(ch.storage, crate::ir::ChannelStorageIr::Tmem) {
            continue;
        }
        let need = i64::from(ch.depth).saturating_mul(m.n);
        if need > cols {
            sink.push(
                Diagnostic::error(codes::TMEM_FOOTPRINT, format!("channel `{}` needs {} slots x {} columns = {need} TMEM columns but the task allocates {cols}", ch.name, ch.depth, m.n))
                    .primary(ch.span, format!("{} slots of {} columns", ch.depth, m.n))
                    .secondary(span, format!("{cols} columns"))
                    .note("an f32 accumulator of MMA-N columns per slot lives in TMEM lanes 0-127")
                    .help(format!("allocate `tmem cols {}`", (need as u64).next_power_of_two().max(32))),
            );
        }
    }
}
