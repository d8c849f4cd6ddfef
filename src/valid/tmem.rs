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
