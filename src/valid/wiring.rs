//! Host-wiring and family rules (I-H4, I-H5, I-H7, I-P6).
//!
//! By construction in generated code: the registration's input/output split equals the
//! contract's tensors (I-H1); spec headers are host-safe (I-H6, tested); every behavioural param
//! appears in the generated variant string (I-H3).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{Family, GranularityIr, TaskIr, TensorIr};

/// Input pointer slots of a TaskDesc (`input_ptrs[MPKC_MAX_INPUTS]` in
/// `stdlib/include/mpkc_runtime.cuh`; a unit test keeps the two equal).
pub const MAX_INPUTS: usize = 8;
/// Output pointer slots of a TaskDesc (`output_ptrs[MPKC_MAX_OUTPUTS]`).
pub const MAX_OUTPUTS: usize = 4;

/// I-H1: the registration maps the contract's inputs onto `input_ptrs[0..]` and its outputs onto
/// `output_ptrs[0..]` in declaration order, then each `inout` tensor onto an output slot again
/// (MPK's graph: `wire::UnitFacts::mpk_outputs`); a task with more tensors than slots would
/// index past them (E0604).
pub(super) fn task_slots(ir: &TaskIr, sink: &mut Sink) {
    if ir.family == Family::Helper {
        return; // a helper is called with its caller's pointers, it has no TaskDesc
    }
    let inputs: Vec<&TensorIr> = ir.inputs().map(|(_, t)| t).collect();
    // MPK's graph takes each `inout` tensor as an output too, after the `out` ones
    // (`wire::UnitFacts::mpk_outputs`): it fills an `output_ptrs` slot.
    let outputs: Vec<&TensorIr> = ir.outputs().chain(ir.in_place()).map(|(_, t)| t).collect();
    for (list, max, what, field) in [
        (&inputs, MAX_INPUTS, "input", "input_ptrs"),
        (&outputs, MAX_OUTPUTS, "output", "output_ptrs"),
    ] {
        if list.len() <= max {
            continue;
        }
        let first_over = list[max];
        let mut d = Diagnostic::error(
            codes::TASK_SLOTS,
            format!(
                "task `{}` has {} {what} tensors; the TaskDesc holds {max} (`{field}[{max}]`)",
                ir.name,
                list.len()
            ),
        )
        .primary(
            first_over.span,
            format!(
                "{what} {} of {}: past `{field}[{}]`",
                max + 1,
                list.len(),
                max - 1
            ),
        );
        for t in &list[max + 1..] {
            d = d.secondary(t.span, format!("{what} past the slots"));
        }
        sink.push(
            d.note(format!(
                "{what}s take `{field}[0..]` in declaration order (`inout` tensors count as inputs, and again as outputs after the `out` ones: MPK's graph makes a task a tensor's writer through its output slots only)"
            ))
            .help(format!(
                "at most {max} {what} tensors: pack tensors that share a dtype into one buffer and index it, or split the task"
            )),
        );
    }
}

/// Extents a DTensor of MPK holds (`MAX_TENSOR_DIMS` in include/mirage/config.h at de8745d9).
pub const MAX_TENSOR_DIMS: usize = 4;

/// I-H1: each tensor of a task reaches it through one of MPK's DTensors, which hold at most
/// [`MAX_TENSOR_DIMS`] extents; a tensor of more could not be passed (E0607). A helper's tensors
/// are its caller's pointers, not DTensors.
pub(super) fn tensor_rank(ir: &TaskIr, sink: &mut Sink) {
    if ir.family == Family::Helper {
        return;
    }
    for t in ir.tensors.values() {
        if t.dims.len() <= MAX_TENSOR_DIMS {
            continue;
        }
        sink.push(
            Diagnostic::error(
                codes::TENSOR_RANK,
                format!(
                    "tensor `{}` has {} extents; MPK's DTensor holds {MAX_TENSOR_DIMS}",
                    t.name,
                    t.dims.len()
                ),
            )
            .primary(t.span, format!("{} extents", t.dims.len()))
            .note("the runtime hands a task each tensor as a DTensor (`int dim[MAX_TENSOR_DIMS]`, include/mirage/config.h): the graph cannot describe a tensor of more extents")
            .help("merge adjacent extents (the kernel indexes the tensor row-major either way): `[a, b, c, d, e]` as `[a, b, c, d * e]`"),
        );
    }
}

/// Linear-family limits for pipelines (I-H5): at most tile N tokens (one activation tile per task,
/// MMA-N under swap-AB). A tail tile (N not a multiple of 128) is the lowering's to accept or
/// reject (`lower::linear::bind`, E0601 too).
pub(super) fn linear_limits(ir: &TaskIr, sink: &mut Sink) {
    if ir.family != Family::Pipeline {
        return;
    }
    // The main output (the first): split-K partials are [splits, m, N], quantization scales
    // [m, N / 128] are side outputs.
    for (_, t) in ir.outputs().take(1) {
        let dims: &[i64] = if t.dims.len() == 3 {
            &t.dims[1..]
        } else {
            &t.dims
        };
        if dims.len() != 2 {
            continue;
        }
        let t_dims = dims;
        // A routed per-slot output has a row per (token, slot); the tokens are the activations'
        // rows (the `weight`-routed pipeline's `activation` tensor; a wrong ids shape is E0029).
        let tokens = match &ir.route {
            Some(_) => ir
                .tensors
                .values()
                .find(|t| t.role() == Some(crate::ir::TensorRole::Activation))
                .and_then(|t| t.dims.first().copied())
                .unwrap_or(t_dims[0]),
            None => t_dims[0],
        };
        // Swap-AB: the tokens are MMA-N, one activation tile of tile N per task. The 16-token
        // limit of MPK's hand-written linear (its BLOCK_N) is not the lowering's: any tile N the
        // MMA takes (E0501) serves as many tokens.
        // The activation tile: `tile N`, else the MMA's n.
        let tile_n = ir
            .tile
            .as_ref()
            .and_then(|t| Some((t.n?, t.span, "tile N")))
            .or_else(|| ir.mma.as_ref().map(|m| (m.n, m.span, "the MMA's n")));
        if let Some((tile_n, tile_span, what)) = tile_n.filter(|(bn, _, _)| tokens > *bn) {
            sink.push(
                Diagnostic::error(
                    codes::LINEAR_LIMITS,
                    format!(
                        "output `{}` has {tokens} rows, but a task's activation tile holds {what} = {tile_n} tokens",
                        t.name
                    ),
                )
                .primary(t.span, format!("{tokens} tokens"))
                .secondary(tile_span, format!("{what} {tile_n}"))
                .note(format!(
                    "under swap-AB the tokens are MMA-N: one task multiplies its {} weight rows by one activation tile of tile N tokens",
                    ir.tile.as_ref().and_then(|t| t.m).or_else(|| ir.mma.as_ref().map(|m| m.m)).map_or_else(|| "tile M".to_string(), |m| m.to_string())
                ))
                .help(format!("raise tile N (and the MMA's n, the activation box and region, the TMEM columns) to at least {tokens}, or split the tokens over tasks of at most {tile_n}")),
            );
        }
    }
}

/// I-P6: a pipeline task covers exactly one tile; a partial last task has different barrier
/// accounting, and a bounds-fail early return would skip the page blanket.
///
/// A consumer-only task's body runs once per task and takes its share from `task_offset`: a
/// `tiles_per_task` other than 1 would change nothing in its kernel (E0014).
///
/// A grid-wide pipeline is the same fault: one task per worker (the runtime's count, I-H4) is
/// not one task per output tile, and the lowering's tile index (`task_offset` over the tiles of
/// N) would have every worker compute the tiles its index names, none of them the grid's.
pub(super) fn tiles_per_task(ir: &TaskIr, sink: &mut Sink) {
    if let (Family::Pipeline, GranularityIr::GridWide { span, .. }) = (ir.family, &ir.granularity) {
        sink.push(
            Diagnostic::error(codes::TILES_PER_TASK, "a pipeline task covers one output tile, but a grid-wide granularity gives one task per worker")
                .primary(*span, "one task per worker, not per tile")
                .note("the pipeline lowering indexes its tile by `task_offset` over the tiles of N (I-P6); a grid-wide op runs `num_workers` tasks whatever N is (I-H4), so tiles would be computed twice or not at all")
                .help("write `granularity per_tile(tasks ceil_div(N, tile.M))`, one task per tile of N (stdlib/linear_sm100_v2.mpk)"),
        );
        return;
    }
    let GranularityIr::PerTile {
        tiles_per_task,
        span,
        ..
    } = &ir.granularity
    else {
        return;
    };
    if *tiles_per_task == 1 {
        return;
    }
    let d = if ir.family == Family::Pipeline {
        Diagnostic::error(codes::TILES_PER_TASK, format!("a pipeline task covers {tiles_per_task} tiles; the house pipeline covers exactly 1"))
            .note("with several tiles per task, a bounds-fail return skips the launcher's page release and the next task deadlocks (I-P6)")
            .help("write `tiles_per_task 1` and raise `tasks` instead")
    } else if ir.family.is_consumer_only() {
        Diagnostic::error(codes::NOT_LOWERED, format!("a `{}` task covers {tiles_per_task} tiles, which its kernel does not lower", ir.family.as_str()))
            .note("a consumer body runs once per task and takes its share of the op from `task_offset`: the tile count would only change the design document")
            .help("write `tiles_per_task 1` and let the body loop over its share")
    } else {
        return;
    };
    sink.push(d.primary(*span, format!("tiles_per_task {tiles_per_task}")));
}

/// I-H7: levers default off, so the default build is byte-identical; and a lever says what it
/// changes (E0014), which the lowering then emits under its define: today the L2 policy of a
/// TMA tensor's loads.
pub(super) fn levers(ir: &TaskIr, sink: &mut Sink) {
    for l in &ir.levers {
        match &l.effect {
            None => sink.push(
                Diagnostic::error(codes::NOT_LOWERED, format!("lever `{}` does not say what it changes", l.name))
                    .primary(l.span, "no effect")
                    .note("a lever is a compile-time define the generated code reads; one that changes nothing would be accepted and then ignored by `build`")
                    .help(format!("write what it changes when on, e.g. `lever {} default off: l2 W evict_normal` (the L2 policy of the TMA loads of tensor `W`)", l.name)),
            ),
            Some(crate::ir::LeverEffect::L2 { tensor, hint, span }) => {
                let t = &ir.tensors[*tensor];
                // The policy without the lever: the tensor's `l2`, evict_normal when unsaid.
                let own = t
                    .tma
                    .as_ref()
                    .map(|m| m.l2.unwrap_or(crate::ir::L2Hint::EvictNormal));
                if own == Some(*hint) && ir.family == crate::ir::Family::Pipeline {
                    sink.push(
                        Diagnostic::error(codes::NOT_LOWERED, format!("lever `{}` sets the L2 policy of `{}` to the one it already has", l.name, t.name))
                            .primary(*span, format!("`{}` with the lever on", hint.word()))
                            .secondary(t.span, format!("`{}` without it", hint.word()))
                            .note("on or off, the loads carry the same cache policy: the lever changes nothing in the kernel")
                            .help("point the lever at another policy, or remove it"),
                    );
                } else if t.tma.is_none() || ir.family != crate::ir::Family::Pipeline {
                    sink.push(
                        Diagnostic::error(codes::NOT_LOWERED, format!("lever `{}` changes the L2 policy of `{}`, which no TMA load reads", l.name, t.name))
                            .primary(*span, "no TMA load of this tensor")
                            .secondary(t.span, "declared without `tma(...)`")
                            .help("point the lever at a tensor a pipeline loads by TMA (`tma(box ..., l2 ...)`)"),
                    );
                }
            }
        }
    }
    for l in ir.levers.iter().filter(|l| l.default_on) {
        sink.push(
            Diagnostic::warning(codes::LEVER_DEFAULT_ON, format!("lever `{}` defaults on, which changes the default build", l.name))
                .primary(l.span, "default on")
                .note("new levers are additive and default off; flipping a default needs a measured gain (contract doc §6.3)")
                .help("write `default off` and turn it on per build"),
        );
    }
}

#[cfg(test)]
mod tests {
    /// The slot counts here are the ones the runtime header declares.
    #[test]
    fn slots_match_the_runtime_header() {
        let h = include_str!("../../stdlib/include/mpkc_runtime.cuh");
        let define = |name: &str| -> usize {
            let line = h
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("{name} in mpkc_runtime.cuh"));
            // Test-only (cfg(test)): reads mpkc's own header, never user input.
            line.split_whitespace()
                .nth(2)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name}: no count in `{line}`"))
        };
        assert_eq!(define("MPKC_MAX_INPUTS"), super::MAX_INPUTS);
        assert_eq!(define("MPKC_MAX_OUTPUTS"), super::MAX_OUTPUTS);
    }
}
