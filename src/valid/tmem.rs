//! TMEM rules (I-T1).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{exact, TaskIr};

/// I-T1: `tcgen05.alloc` takes a power-of-two column count in [32, 512].
pub(super) fn tmem_cols(ir: &TaskIr, sink: &mut Sink) {
    let Some((cols, span)) = ir.tmem_cols else {
        return;
    };
    let ok = (32..=512).contains(&cols) && (cols & (cols - 1)) == 0;
    if !ok {
        let up = if cols <= 32 {
            32
        } else {
            (cols as u64).next_power_of_two().min(512)
        };
        sink.push(
            Diagnostic::error(
                codes::TMEM_COLS,
                format!("TMEM allocation of {cols} columns is not a power of two in [32, 512]"),
            )
            .primary(span, format!("{cols} columns"))
            .note("tcgen05.alloc takes 32, 64, 128, 256 or 512 columns (PTX ISA, tcgen05.alloc)")
            .help(format!("allocate `tmem cols {up}`")),
        );
    }
}

/// The f32 columns one accumulator slot takes: the tile's N (the MMA's N without a tile).
pub(super) fn slot_columns(ir: &TaskIr) -> Option<i64> {
    let m = ir.mma.as_ref()?;
    Some(ir.tile.as_ref().and_then(|t| t.n).unwrap_or(m.n))
}

/// I-T2: the accumulator slots (slots x tile-N f32 columns) fit the allocated columns, and a
/// tcgen05 MMA has a TMEM allocation at all.
pub(super) fn footprint(ir: &TaskIr, sink: &mut Sink) {
    let Some(m) = &ir.mma else { return };
    let Some((cols, span)) = ir.tmem_cols else {
        if m.engine == crate::ir::MmaEngine::Tcgen05 {
            sink.push(
                Diagnostic::error(
                    codes::TMEM_FOOTPRINT,
                    "a tcgen05 MMA accumulates in TMEM, but the task allocates no TMEM columns",
                )
                .primary(m.span, "tcgen05.mma here")
                .help(format!(
                    "declare `tmem cols {}`",
                    (slot_columns(ir).unwrap_or(m.n).max(16) as u64 * 2)
                        .next_power_of_two()
                        .clamp(32, 512)
                )),
            );
        }
        return;
    };
    let width = slot_columns(ir).unwrap_or(m.n);
    // Every TMEM channel lives in the one allocation, side by side: their columns add up.
    let tmem: Vec<_> = ir
        .channels
        .values()
        .filter(|ch| matches!(ch.storage, crate::ir::ChannelStorageIr::Tmem))
        .collect();
    // Exact (I-T2 compared in i128): no product or sum saturates.
    let need: i128 = tmem
        .iter()
        .map(|ch| exact::mul(i64::from(ch.depth), width))
        .sum();
    if need > i128::from(cols) {
        let terms = tmem
            .iter()
            .map(|ch| format!("`{}` {} x {width}", ch.name, ch.depth))
            .collect::<Vec<_>>()
            .join(" + ");
        let what = if tmem.len() == 1 {
            format!(
                "channel `{}` needs {} slots x {width} columns = {need} TMEM columns",
                tmem[0].name, tmem[0].depth
            )
        } else {
            format!(
                "the {} TMEM channels need {terms} = {need} columns",
                tmem.len()
            )
        };
        let mut d = Diagnostic::error(
            codes::TMEM_FOOTPRINT,
            format!("{what} but the task allocates {cols}"),
        );
        for (i, ch) in tmem.iter().enumerate() {
            let label = format!("{} slots of {width} columns", ch.depth);
            // The primary label on the channel that takes the sum past the allocation.
            d = if i + 1 == tmem.len() {
                d.primary(ch.span, label)
            } else {
                d.secondary(ch.span, label)
            };
        }
        sink.push(
            d.secondary(span, format!("{cols} columns"))
                .note("each slot is an f32 accumulator of tile-N columns in TMEM lanes 0-127; the channels share the one allocation")
                .help(format!("allocate `tmem cols {}`", need.max(0).unsigned_abs().next_power_of_two().max(32))),
        );
    }
}
