//! What the sm_100a pipeline backend lowers: the house linear shape (contract doc §3.2, §7),
//! recognised from the contract's tensors, rings, accumulator channel and one-shot sems, for any
//! legal tile, stage count and epilogue. A contract of the pipeline family that does not have
//! this shape is reported (`E0013`) instead of reaching code generation.

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::*;

/// The epilogue a pipeline kernel runs on each accumulator tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epilogue {
    /// `store bf16`: C = bf16(acc).
    StoreBf16,
    /// `residual add`: C = bf16(bf16(acc) + R), the bf16 round trip before the add (§3.2).
    ResidualAdd,
    /// `split_k f32`: f32 partials per split, summed by the generated reduce task.
    SplitKF32,
}

impl Epilogue {
    /// The epilogue as written in a contract.
    pub fn as_str(self) -> &'static str {
        match self {
            Epilogue::StoreBf16 => "store bf16",
            Epilogue::ResidualAdd => "residual add",
            Epilogue::SplitKF32 => "split_k f32",
        }
    }
}

/// The recognised pipeline, with every number the kernel needs.
#[derive(Clone, Debug)]
pub struct PipelineShape {
    /// Weights `[N, K]` (MMA A operand under swap-AB: 128 rows per tile).
    pub weights: TensorHandle,
    /// Activations `[m_real, K]` (MMA B operand: up to 16 tokens).
    pub acts: TensorHandle,
    /// Output: `[m_real, N]` bf16, or `[splits, m_real, N]` f32 partials.
    pub output: TensorHandle,
    /// Residual input `[m_real, N]` for `residual add`.
    pub residual: Option<TensorHandle>,
    /// Ring of weight stages.
    pub w_ring: Handle<ChannelIr>,
    /// Ring of activation stages.
    pub a_ring: Handle<ChannelIr>,
    /// TMEM accumulator channel.
    pub acc: Handle<ChannelIr>,
    /// Launcher → consumer one-shot: the TMEM address is published.
    pub tmem_ready: Handle<SemIr>,
    /// Consumer → launcher one-shot: the consumers are done with TMEM.
    pub consumer_done: Handle<SemIr>,
    /// Region group holding the TMEM address.
    pub scratch: usize,
    /// Tile rows (MMA-M, weight rows).
    pub block_m: i64,
    /// Tile columns (MMA-N, tokens).
    pub block_n: i64,
    /// Tile depth per stage (elements of K).
    pub block_k: i64,
    /// MMA K per instruction.
    pub mma_k: i64,
    /// Stages of the rings.
    pub stages: i64,
    /// Output columns (weight rows).
    pub n: i64,
    /// Reduction length.
    pub k: i64,
    /// Tokens.
    pub m_real: i64,
    /// K splits (1 unless `split_k`).
    pub splits: i64,
    /// K iterations per task.
    pub k_iters: i64,
    /// Tiles along N.
    pub num_tiles: i64,
    /// Accumulator slots in TMEM.
    pub acc_slots: i64,
    /// Allocated TMEM columns.
    pub tmem_cols: i64,
    /// The epilogue.
    pub epilogue: Epilogue,
}

fn unsupported(span: crate::span::Span, what: String, help: &str) -> Diagnostic {
    Diagnostic::error(codes::PIPELINE_SHAPE, format!("the sm_100a pipeline backend cannot lower this contract: {what}"))
        .primary(span, "here")
        .note("the pipeline family lowers the house linear (contract doc §3.2): a TMA weight ring and activation ring into tcgen05.mma kind::f16, a TMEM accumulator channel, tmem_ready and consumer_done")
        .help(help.to_string())
}

/// Recognises the house pipeline in `ir`, or reports why not.
pub(super) fn analyze(ir: &TaskIr, sink: &mut Sink) -> Option<PipelineShape> {
    if ir.family != Family::Pipeline {
        return None;
    }
    let before = sink.error_count();
    let Some(m) = &ir.mma else { return None };
    let Some(tile) = &ir.tile else {
        sink.push(unsupported(ir.family_span, "no `tile`".into(), "declare `tile M 128, N 16, K 128`"));
        return None;
    };
    let (bm, bn, bk) = (tile.m.unwrap_or(m.m), tile.n.unwrap_or(m.n), tile.k.unwrap_or(128));
    if m.engine != MmaEngine::Tcgen05 || m.kind != "f16" || m.a != Dtype::Bf16 || m.b != Dtype::Bf16 || m.d != Dtype::F32 {
        sink.push(unsupported(m.span, format!("MMA {} {} ({} x {} -> {})", if m.engine == MmaEngine::Tcgen05 { "tcgen05" } else { "wgmma" }, m.kind, m.a, m.b, m.d), "use `mma tcgen05 f16 (bf16 x bf16 -> f32)`"));
    }
    if bm != m.m || bn != m.n {
        sink.push(unsupported(tile.span, format!("tile {bm}x{bn} differs from the MMA's m{} n{}", m.m, m.n), "one MMA covers the tile: make `tile M` and `tile N` the MMA's m and n"));
    }
    if bk % 64 != 0 || bk % m.k != 0 || bk == 0 {
        sink.push(unsupported(tile.span, format!("tile K {bk} is not a multiple of 64 (one 128-byte swizzle row of bf16)"), "use `tile K 128` (or 64, 192, 256)"));
    }
    // The two TMA tensors: weights box rows = tile M, activations box rows = tile N.
    let tma_tensors: Vec<(TensorHandle, &TensorIr)> = ir.tensors.iter().filter(|(_, t)| t.tma.is_some()).collect();
    let by_rows = |rows: i64| tma_tensors.iter().find(|(_, t)| t.tma.as_ref().is_some_and(|x| x.box_dims.get(1) == Some(&rows))).map(|(h, _)| *h);
    let (Some(w), Some(a)) = (by_rows(bm), by_rows(bn).filter(|h| Some(*h) != by_rows(bm))) else {
        sink.push(unsupported(ir.family_span, format!("no TMA weight tensor with a box of {bm} rows and activation tensor with a box of {bn} rows"), "load weights with `tma(box [64, 128, 2], swizzle 128B)` and activations with `tma(box [64, 16, 2], swizzle 128B)`"));
        return None;
    };
    for h in [w, a] {
        let t = &ir.tensors[h];
        let ok = t.dtype == Dtype::Bf16
            && t.dims.len() == 2
            && t.tma.as_ref().is_some_and(|x| x.box_dims.len() == 3 && x.box_dims[0] == 64 && x.box_dims[2] * 64 == bk && x.swizzle == Swizzle::B128);
        if !ok {
            sink.push(unsupported(t.span, format!("`{}` must be a 2-D bf16 tensor with `tma(box [64, rows, {}], swizzle 128B)`", t.name, bk / 64), "use a rank-3 box {64, rows, tile K / 64} under 128B swizzle"));
        }
    }
    let ring_of = |h: TensorHandle| {
        ir.channels.iter().find(|(_, c)| matches!(&c.full_arrival, ArrivalIr::Tma(ts) if ts == &vec![h])).map(|(ch, _)| ch)
    };
    let (Some(w_ring), Some(a_ring)) = (ring_of(w), ring_of(a)) else {
        sink.push(unsupported(ir.family_span, "each TMA tensor needs its own ring (`channel …: R, loader -> launcher (tma T)`)".into(), "declare a W ring and an A ring"));
        return None;
    };
    let acc = ir.channels.iter().find(|(_, c)| matches!(c.storage, ChannelStorageIr::Tmem)).map(|(h, _)| h);
    let tr = ir.sems.iter().find(|(_, s)| s.producer == RoleKind::Launcher && s.consumer == RoleKind::Consumer && !s.at_end).map(|(h, _)| h);
    let cd = ir.sems.iter().find(|(_, s)| s.producer == RoleKind::Consumer && s.consumer == RoleKind::Launcher && s.at_end).map(|(h, _)| h);
    let (Some(acc), Some(tmem_ready), Some(consumer_done)) = (acc, tr, cd) else {
        sink.push(unsupported(ir.family_span, "it needs a TMEM accumulator channel, a launcher -> consumer sem at start (tmem_ready) and a consumer -> launcher sem at end (consumer_done)".into(), "declare them as stdlib/linear_sm100_v2.mpk does"));
        return None;
    };
    for (ch, who) in [(w_ring, RoleKind::Launcher), (a_ring, RoleKind::Launcher)] {
        let c = &ir.channels[ch];
        if c.producer != RoleKind::Loader || c.consumer != who {
            sink.push(unsupported(c.span, format!("ring `{}` must go loader -> launcher", c.name), "write `loader -> launcher (tma T)`"));
        }
    }
    {
        let c = &ir.channels[acc];
        if c.producer != RoleKind::Launcher || c.consumer != RoleKind::Consumer || c.full_arrival != ArrivalIr::Commit {
            sink.push(unsupported(c.span, "the accumulator channel must go launcher -> consumer (commit)".into(), "write `tmem slots 2, launcher -> consumer (commit), empty by consumer (threads 128)`"));
        }
    }
    let ring_groups: Vec<usize> = [w_ring, a_ring]
        .iter()
        .filter_map(|h| match ir.channels[*h].storage {
            ChannelStorageIr::Region(g) => Some(g),
            ChannelStorageIr::Tmem => None,
        })
        .collect();
    let scratch: Vec<usize> =
        (0..ir.region_groups.len()).filter(|g| !ring_groups.contains(g) && !ir.region_groups[*g].staged).collect();
    let scratch = match scratch.as_slice() {
        [g] if ir.region_groups[*g].members.first().is_some_and(|h| ir.regions[*h].size >= 4) => *g,
        _ => {
            sink.push(unsupported(ir.family_span, "it needs exactly one region besides the rings, of at least 4 bytes, for the TMEM address".into(), "declare `region scratch { bytes 16; align 16; pack }`"));
            return None;
        }
    };
    let epilogue = match ir.epilogues.as_slice() {
        [] => Epilogue::StoreBf16,
        [(k, v, span)] => match (k.as_str(), v.as_deref()) {
            ("store", Some("bf16")) => Epilogue::StoreBf16,
            ("residual", Some("add")) => Epilogue::ResidualAdd,
            ("split_k", Some("f32")) => Epilogue::SplitKF32,
            _ => {
                sink.push(unsupported(*span, format!("epilogue `{k}{}`", v.as_ref().map(|x| format!(" {x}")).unwrap_or_default()), "epilogues are `store bf16`, `residual add` and `split_k f32`"));
                return None;
            }
        },
        [_, (_, _, span), ..] => {
            sink.push(unsupported(*span, "more than one epilogue".into(), "a contract builds one kernel: declare one epilogue per contract (or per instance param)"));
            return None;
        }
    };
    let (wt, at) = (&ir.tensors[w], &ir.tensors[a]);
    let (n, k) = (wt.dims.first().copied().unwrap_or(0), wt.dims.get(1).copied().unwrap_or(0));
    let m_real = at.dims.first().copied().unwrap_or(0);
    let splits = if epilogue == Epilogue::SplitKF32 {
        match ir.params.get("splits").map(|p| &p.value) {
            Some(ParamValue::Int(s)) if *s >= 1 => *s,
            _ => {
                sink.push(unsupported(ir.family_span, "a split_k epilogue needs an int param `splits`".into(), "declare `param splits: int = 8`"));
                return None;
            }
        }
    } else {
        1
    };
    if at.dims.get(1) != Some(&k) {
        sink.push(unsupported(at.span, format!("activations have K {:?} but weights K {k}", at.dims.get(1)), "give both the same K"));
    }
    if bk > 0 && k % (bk * splits) != 0 {
        sink.push(unsupported(wt.span, format!("K {k} is not a multiple of tile K {bk} x {splits} split(s)"), "pad K, or choose splits dividing K / tile K"));
    }
    let num_tiles = if bm > 0 { n / bm } else { 0 };
    if ir.granularity.tasks() != num_tiles * splits {
        sink.push(unsupported(ir.family_span, format!("granularity has {} tasks but N / tile M x splits = {num_tiles} x {splits} = {}", ir.granularity.tasks(), num_tiles * splits), "write `granularity per_tile(tasks ceil_div(N, tile.M) * splits, tiles_per_task 1)`"));
    }
    let output = ir.outputs().next().map(|(h, _)| h);
    let Some(output) = output else {
        sink.push(unsupported(ir.family_span, "no output tensor".into(), "declare `tensor C: bf16[m_real, N] out`"));
        return None;
    };
    let ot = &ir.tensors[output];
    let want_out = match epilogue {
        Epilogue::SplitKF32 => (Dtype::F32, vec![splits, m_real, n]),
        _ => (Dtype::Bf16, vec![m_real, n]),
    };
    if (ot.dtype, ot.dims.clone()) != want_out {
        sink.push(unsupported(ot.span, format!("output `{}` must be {}{:?} for `{}`", ot.name, want_out.0, want_out.1, epilogue.as_str()), "declare the output with that type and shape"));
    }
    let residual = if epilogue == Epilogue::ResidualAdd {
        let r = ir.inputs().find(|(h, t)| *h != w && *h != a && t.tma.is_none()).map(|(h, _)| h);
        match r {
            Some(h) if ir.tensors[h].dtype == Dtype::Bf16 && ir.tensors[h].dims == vec![m_real, n] => Some(h),
            _ => {
                sink.push(unsupported(ir.family_span, "a residual epilogue needs a bf16 input `[m_real, N]` loaded without TMA".into(), "declare `tensor R: bf16[m_real, N] in`"));
                return None;
            }
        }
    } else {
        None
    };
    let acc_slots = i64::from(ir.channels[acc].depth);
    let tmem_cols = ir.tmem_cols.map_or(0, |(c, _)| c);
    if sink.error_count() > before {
        return None;
    }
    Some(PipelineShape {
        weights: w,
        acts: a,
        output,
        residual,
        w_ring,
        a_ring,
        acc,
        tmem_ready,
        consumer_done,
        scratch,
        block_m: bm,
        block_n: bn,
        block_k: bk,
        mma_k: m.k,
        stages: i64::from(ir.stages.map_or(1, |(s, _)| s)),
        n,
        k,
        m_real,
        splits,
        k_iters: if bk > 0 { k / (bk * splits) } else { 0 },
        num_tiles,
        acc_slots,
        tmem_cols,
        epilogue,
    })
}
