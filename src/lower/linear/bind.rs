//! Binding a pipeline contract to the linear engine: the house linear shape (contract doc §3.2,
//! §7), bound from the contract's tensor roles (`weight`, `activation`, `scale of W`, `residual`,
//! `output`, `partials`; never from shapes), rings, accumulator channel and one-shot sems, for any
//! legal tile, stage count and epilogue. A contract of the pipeline family that does not have
//! this shape is reported (`E0013`) instead of reaching code generation.

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::*;

use super::fp8::fp8_scales;
use super::map::epilogue_map;
use super::{Epilogue, LinearMath, Operands};

pub(super) fn unsupported(span: crate::span::Span, what: String, help: &str) -> Diagnostic {
    Diagnostic::error(codes::PIPELINE_SHAPE, format!("the pipeline lowering cannot take this contract: {what}"))
        .primary(span, "here")
        .note("the pipeline family lowers the house linear (contract doc §3.2): a TMA weight ring and activation ring into tcgen05.mma (sm_100a, the accumulator in TMEM) or wgmma (sm_90a, in registers), an accumulator channel, tmem_ready and consumer_done")
        .help(help.to_string())
}

/// The error for a pipeline without its accumulator channel, `tmem_ready` or `consumer_done`:
/// what is missing, at the sem that is nearly the missing one (the right roles, `at end` the
/// wrong way round) when there is one, else at the family.
fn missing_sync(ir: &TaskIr, no_acc: bool, no_ready: bool, no_done: bool) -> Diagnostic {
    let mut missing = Vec::new();
    if no_acc {
        missing.push("a TMEM accumulator channel");
    }
    if no_ready {
        missing.push("a launcher -> consumer sem at start (tmem_ready)");
    }
    if no_done {
        missing.push("a consumer -> launcher sem at end (consumer_done)");
    }
    let near = ir.sems.iter().map(|(_, s)| s).find(|s| {
        (no_done
            && s.producer == RoleKind::Consumer
            && s.consumer == RoleKind::Launcher
            && !s.at_end)
            || (no_ready
                && s.producer == RoleKind::Launcher
                && s.consumer == RoleKind::Consumer
                && s.at_end)
    });
    let (span, help) = match near {
        Some(s) if s.at_end => (
            s.span,
            format!(
                "remove `at end` from `{}`: tmem_ready is waited before the first stage",
                s.name
            ),
        ),
        Some(s) => (
            s.span,
            format!(
                "add `at end` to `{}`: consumer_done is waited after the task's last stage",
                s.name
            ),
        ),
        None => (
            ir.family_span,
            "declare them as stdlib/linear_sm100_v2.mpk does".to_string(),
        ),
    };
    unsupported(span, format!("it needs {}", missing.join(", ")), &help)
}

/// The one tensor that states `role`, if any.
pub(super) fn role_tensor(ir: &TaskIr, role: TensorRole) -> Option<TensorHandle> {
    ir.tensor_with_role(role).map(|(h, _)| h)
}

/// Recognises the house pipeline in `ir`, or reports why not.
pub(crate) fn bind(ir: &TaskIr, sink: &mut Sink) -> Option<LinearMath> {
    if ir.family != Family::Pipeline {
        return None;
    }
    let before = sink.error_count();
    let Some(m) = &ir.mma else { return None };
    let Some(tile) = &ir.tile else {
        sink.push(unsupported(
            ir.family_span,
            "no `tile`".into(),
            "declare `tile M 128, N 16, K 128`",
        ));
        return None;
    };
    let (bm, bn, bk) = (
        tile.m.unwrap_or(m.m),
        tile.n.unwrap_or(m.n),
        tile.k.unwrap_or(128),
    );
    let fp8 = m.kind == "mxf8f6f4" && m.a == Dtype::E4m3 && m.b == Dtype::E4m3;
    let bf16 = m.kind == "f16" && m.a == Dtype::Bf16 && m.b == Dtype::Bf16;
    if m.engine != MmaEngine::Tcgen05 || !(fp8 || bf16) || m.d != Dtype::F32 {
        sink.push(unsupported(m.span, format!("MMA {} {} ({} x {} -> {})", if m.engine == MmaEngine::Tcgen05 { "tcgen05" } else { "wgmma" }, m.kind, m.a, m.b, m.d), "use `mma tcgen05 f16 (bf16 x bf16 -> f32)` or `mma tcgen05 mxf8f6f4 (e4m3 x e4m3 -> f32)`"));
        return None;
    }
    // The kernels re-initialise barriers from the loader's elected lane and the launcher's lane 0
    // (I-M4); a consumer or storer re-init has no place in them.
    let owners = ir
        .channels
        .values()
        .map(|c| (Some(c.reinit), c.span, &c.name))
        .chain(ir.sems.values().map(|x| (x.reinit, x.span, &x.name)));
    for (r, span, name) in owners {
        if let Some(r @ (RoleKind::Consumer | RoleKind::Storer | RoleKind::Controller)) = r {
            sink.push(unsupported(span, format!("`{name}` is re-initialised by the {r}: the pipeline lowering re-initialises barriers in the loader and the launcher only"), "write `reinit launcher` (or `reinit loader`)"));
        }
    }
    // Model-only clauses: the kernels run K_ITERS >= 1 trips per task and never drain (I-M8).
    for c in ir.channels.values() {
        if let Some((_, _, span)) = c.early_exit {
            sink.push(unsupported(span, format!("`early_exit` on `{}`: every pipeline task runs K_ITERS >= 1 K iterations, so no zero-trip path exists to lower", c.name), "remove the `early_exit` clause; give every split at least one K tile (`splits` at most K / tile.K)"));
        }
        if let Some(span) = c.drain {
            sink.push(unsupported(span, format!("`drain` on `{}`: the pipeline lowering never drains a ring at task end (I-M8)", c.name), "remove the `drain` clause: the role re-init at the next task's start resets the ring"));
        }
    }
    let elem_bytes: i64 = if fp8 { 1 } else { 2 };
    let elem = if fp8 { Dtype::E4m3 } else { Dtype::Bf16 };
    let swizzle_elems = 128 / elem_bytes;
    // A short tile (sm_90a only, below): fewer weight rows than the m64 MMA, whose rows past
    // the tile are discarded.
    let short = bm < m.m && m.m == 64 && bn == m.n;
    if (bm != m.m || bn != m.n) && !short {
        sink.push(unsupported(
            tile.span,
            format!("tile {bm}x{bn} differs from the MMA's m{} n{}", m.m, m.n),
            "one MMA covers the tile: make `tile M` and `tile N` the MMA's m and n (or, on sm_90a alone, `tile M` a multiple of 8 below an m64 MMA's 64)",
        ));
    }
    // The kernels cover a tile with one MMA-M of rows: 128 (TMEM lanes 0-127 on sm_100a, two m64
    // wgmmas on sm_90a, the house linear's tile, I-H5) or 64 (an M = 64 tcgen05.mma whose
    // accumulator takes TMEM data-path layout F, one m64 wgmma), which puts twice as many tasks
    // on the SMs; on sm_90a alone also a multiple of 8 below 64 (one m64 wgmma whose rows past
    // the tile are discarded: the task count then falls between the 64-row tile's multiples,
    // q_b [3072] at 48 rows x 2 splits is 128 tasks where 64 rows give 96 or 144).
    if bm != 128 && bm != 64 && !(short && bm % 8 == 0 && bm >= 8) {
        sink.push(unsupported(
            tile.span,
            format!("tile M {bm}: the pipeline lowers 128- and 64-row tiles (one MMA-M of rows per tile) and, on sm_90a, multiples of 8 below 64"),
            if short {
                "make `tile M` a multiple of 8 (the 128-byte swizzle repeats every 8 rows, and each K chunk of the stage starts 1024-byte aligned)"
            } else {
                "use `tile M 128` with an m128 MMA"
            },
        ));
        return None;
    }
    if bm < 64 {
        if let Some(t) = ir.targets.iter().find(|t| t.target != Target::Sm90a) {
            sink.push(unsupported(
                t.span,
                format!("tile M {bm} on {}: a tile of fewer rows than the MMA is lowered on sm_90a only (one m64 wgmma per K step, the rows past the tile discarded)", t.target.as_str()),
                "declare `targets sm_90a`, or use `tile M 64` with an m64 MMA",
            ));
            return None;
        }
        if fp8 {
            sink.push(unsupported(tile.span, format!("tile M {bm} with fp8 operands: a weight scale block is 128 rows, a whole 128-row tile"), "use `tile M 128`"));
            return None;
        }
    }
    // fp8 block-scaled operands need no rule here: kind::mxf8f6f4 has no M = 64 (E0503), and the
    // tile is the MMA's (above).
    if bm != 128 && ir.route.is_some() {
        sink.push(unsupported(
            tile.span,
            format!("tile M {bm} with routed weights: the routed lowering is built for 128-row expert tiles only"),
            "use `tile M 128`",
        ));
        return None;
    }
    if bk % swizzle_elems != 0 || bk % m.k != 0 || bk == 0 {
        sink.push(unsupported(tile.span, format!("tile K {bk} is not a multiple of {swizzle_elems} (one 128-byte swizzle row of {elem})"), "use `tile K 128`"));
        return None;
    }
    // The two TMA operands, bound by their declared roles (every pipeline tensor states one).
    let tma_role = |role: TensorRole| {
        ir.tensors
            .iter()
            .find(|(_, t)| t.role() == Some(role) && t.tma.is_some())
            .map(|(h, _)| h)
    };
    let (Some(w), Some(a)) = (
        tma_role(TensorRole::Weight),
        tma_role(TensorRole::Activation),
    ) else {
        sink.push(unsupported(ir.family_span, "no TMA `weight` and `activation` tensors".into(), "declare `tensor W: bf16[N, K] in weight tma(box [64, 128, 2], swizzle 128B)` and `tensor A: bf16[m_real, K] in activation tma(box [64, 16, 2], swizzle 128B)`"));
        return None;
    };
    // The weights' box covers a tile's tile-M rows, the activations' its tile-N tokens.
    // Routed weights are `[experts, N, K]` (their tensor map is over `[experts * N, K]`).
    if let Some(r) = ir.route.filter(|r| r.weights != w) {
        sink.push(super::route::not_the_weights(ir, &r, w));
        return None;
    }
    let routed = ir.route.is_some();
    for (h, rows) in [(w, bm), (a, bn)] {
        let t = &ir.tensors[h];
        let rank = if routed && h == w { 3 } else { 2 };
        let ok = t.dtype == elem
            && t.dims.len() == rank
            && t.tma.as_ref().is_some_and(|x| {
                x.box_dims.len() == 3
                    && x.box_dims[0] == swizzle_elems
                    && x.box_dims[1] == rows
                    && x.box_dims[2] * swizzle_elems == bk
                    && x.swizzle == Swizzle::B128
            });
        if !ok {
            sink.push(unsupported(t.span, format!("`{}` must be a {rank}-D {elem} tensor with `tma(box [{swizzle_elems}, {rows}, {}], swizzle 128B)`", t.name, bk / swizzle_elems), "use a rank-3 box {128-byte row, the tile's rows, tile K / row} under 128B swizzle"));
        }
    }
    let ring_of = |h: TensorHandle| {
        ir.channels
            .iter()
            .find(|(_, c)| matches!(&c.full_arrival, ArrivalIr::Tma(ts) if ts == &vec![h]))
            .map(|(ch, _)| ch)
    };
    let (Some(w_ring), Some(a_ring)) = (ring_of(w), ring_of(a)) else {
        sink.push(unsupported(
            ir.family_span,
            "each TMA tensor needs its own ring (`channel …: R, loader -> launcher (tma T)`)"
                .into(),
            "declare a W ring and an A ring",
        ));
        return None;
    };
    // A short tile's m64 wgmma reads 64 rows from each K chunk's base (`layout::Sm90::w_mma`):
    // the last chunk's read runs 64 - tile M rows past the boxes, which the W stage must hold.
    if bm < 64 {
        let chunks = bk / swizzle_elems;
        let need = (chunks - 1) * bm * 128 + 64 * 128;
        if let ChannelStorageIr::Region(g) = &ir.channels[w_ring].storage {
            let group = &ir.region_groups[*g];
            if let Some(r) = group.members.first().map(|h| &ir.regions[*h]) {
                if r.size < need {
                    sink.push(unsupported(
                        group.head_span,
                        format!("a stage of `{}` holds {} bytes, but the m64 wgmma of a {bm}-row tile reads {need}: its last K chunk's 64 rows run {} rows past the weight boxes", group.name, r.size, 64 - bm),
                        &format!("make the stage `bytes 64 * tile.K * 2` ({} bytes; the rows past the tile are read and discarded)", 64 * bk * elem_bytes),
                    ));
                    return None;
                }
            }
        }
    }
    let mut tmem_channels = ir
        .channels
        .iter()
        .filter(|(_, c)| matches!(c.storage, ChannelStorageIr::Tmem));
    let acc = tmem_channels.next().map(|(h, _)| h);
    if let Some((_, extra)) = tmem_channels.next() {
        sink.push(unsupported(
            extra.span,
            format!(
                "a second TMEM channel `{}`: the pipeline lowers one accumulator channel",
                extra.name
            ),
            "remove the channel, or give the one accumulator channel more slots",
        ));
        return None;
    }
    let tr = ir
        .sems
        .iter()
        .find(|(_, s)| {
            s.producer == RoleKind::Launcher && s.consumer == RoleKind::Consumer && !s.at_end
        })
        .map(|(h, _)| h);
    let cd = ir
        .sems
        .iter()
        .find(|(_, s)| {
            s.producer == RoleKind::Consumer && s.consumer == RoleKind::Launcher && s.at_end
        })
        .map(|(h, _)| h);
    let (Some(acc), Some(tmem_ready), Some(consumer_done)) = (acc, tr, cd) else {
        sink.push(missing_sync(ir, acc.is_none(), tr.is_none(), cd.is_none()));
        return None;
    };
    for (ch, who) in [(w_ring, RoleKind::Launcher), (a_ring, RoleKind::Launcher)] {
        let c = &ir.channels[ch];
        if c.producer != RoleKind::Loader || c.consumer != who {
            sink.push(unsupported(
                c.span,
                format!("ring `{}` must go loader -> launcher", c.name),
                "write `loader -> launcher (tma T)`",
            ));
        }
    }
    // The stage's MMAs read a W and an A stage together, and the program frees them with one
    // arrival (the commit on sm_100a, the consumer's on sm_90a): one of the two rings owns the
    // empty barriers and the other shares them.
    let shares = |c: Handle<ChannelIr>, o: Handle<ChannelIr>| matches!(ir.channels[c].empty, EmptyEdge::Shared(x, _) if x == o);
    if !shares(a_ring, w_ring) && !shares(w_ring, a_ring) {
        let (wc, ac) = (&ir.channels[w_ring], &ir.channels[a_ring]);
        sink.push(
            unsupported(
                ac.span,
                format!("rings `{}` and `{}` have empty barriers of their own: the lowering frees a stage of both with one arrival, after the stage's MMAs read both", wc.name, ac.name),
                &format!("write `shares_empty {}` on `{}`", wc.name, ac.name),
            )
            .secondary(wc.span, "has empty barriers of its own too"),
        );
    }
    {
        let c = &ir.channels[acc];
        if c.producer != RoleKind::Launcher
            || c.consumer != RoleKind::Consumer
            || c.full_arrival != ArrivalIr::Commit
        {
            sink.push(unsupported(c.span, "the accumulator channel must go launcher -> consumer (commit)".into(), "write `tmem slots 1, launcher -> consumer (commit), empty by consumer (threads 128)`"));
        }
    }
    // The region holding the TMEM address says so (`holds tmem_addr`); the kernels read the
    // address at the region's base.
    let holders: Vec<usize> = (0..ir.region_groups.len())
        .filter(|g| {
            ir.region_groups[*g]
                .members
                .first()
                .is_some_and(|h| ir.regions[*h].member_of(HeldType::TmemAddr).is_some())
        })
        .collect();
    let scratch = match holders.as_slice() {
        [g] => *g,
        [] => {
            sink.push(unsupported(
                ir.family_span,
                "no region holds the TMEM address".into(),
                "declare `region scratch { holds tmem_addr; bytes 16; align 16; pack; release 7 }`",
            ));
            return None;
        }
        [a, b, ..] => {
            sink.push(unsupported(
                ir.region_groups[*b].head_span,
                format!(
                    "regions `{}` and `{}` both hold the TMEM address",
                    ir.region_groups[*a].name, ir.region_groups[*b].name
                ),
                "keep `holds tmem_addr` on one unstaged region",
            ));
            return None;
        }
    };
    let group = &ir.region_groups[scratch];
    let taddr = group
        .members
        .first()
        .and_then(|h| ir.regions[*h].member_of(HeldType::TmemAddr))
        .map_or(0, |m| m.offset);
    if group.staged || taddr != 0 {
        sink.push(unsupported(group.head_span, format!("the TMEM address in `{}` is {}: the kernels keep it at the base of one unstaged region", group.name, if group.staged { "staged".to_string() } else { format!("at byte {taddr}") }), "make `tmem_addr` the first member of an unstaged region"));
        return None;
    }
    let epilogue = match ir.epilogues.as_slice() {
        [] => Epilogue::StoreBf16,
        [(k, v, span)] => match (k.as_str(), v.as_deref()) {
            ("store", Some("bf16")) => Epilogue::StoreBf16,
            ("residual", Some("add")) => Epilogue::ResidualAdd,
            ("split_k", Some("f32")) => Epilogue::SplitKF32,
            ("split_k", Some("bf16")) => Epilogue::SplitKBf16,
            ("split_k", Some("atomic")) => Epilogue::SplitKAtomic,
            ("quant", Some("e4m3")) => Epilogue::QuantE4m3,
            _ => {
                sink.push(unsupported(*span, format!("epilogue `{k}{}`", v.as_ref().map(|x| format!(" {x}")).unwrap_or_default()), "epilogues are `store bf16`, `residual add`, `split_k f32`, `split_k bf16`, `split_k atomic` and `quant e4m3`"));
                return None;
            }
        },
        [_, (_, _, span), ..] => {
            sink.push(unsupported(*span, "more than one epilogue".into(), "a contract builds one kernel: declare one epilogue per contract (or per instance param)"));
            return None;
        }
    };
    if bm != 128 && epilogue == Epilogue::QuantE4m3 {
        sink.push(unsupported(tile.span, format!("tile M {bm} with `quant e4m3`: one quantisation group is 128 output columns, a whole 128-row tile"), "use `tile M 128`"));
        return None;
    }
    if let Some((_, span)) = ir.epilogue_with.filter(|_| {
        !matches!(
            epilogue,
            Epilogue::QuantE4m3 | Epilogue::SplitKBf16 | Epilogue::SplitKAtomic
        )
    }) {
        sink.push(unsupported(
            span,
            format!(
                "`with` on a `{}` epilogue: only `quant e4m3` and `split_k bf16` meet their warps at a named barrier",
                epilogue.as_str()
            ),
            "remove `with …`",
        ));
        return None;
    }
    let (wt, at) = (&ir.tensors[w], &ir.tensors[a]);
    // Rows and K of one expert's weights when routed (`[experts, N, K]`).
    let lead = usize::from(routed);
    let (n, k) = (
        wt.dims.get(lead).copied().unwrap_or(0),
        wt.dims.get(lead + 1).copied().unwrap_or(0),
    );
    let m_real = at.dims.first().copied().unwrap_or(0);
    // The kernels hold the extents as `constexpr int` and address the tensor maps with s32 box
    // coordinates (PTX ISA, cp.async.bulk.tensor: "tensorCoords ... .s32"): past 2^31 - 1 they
    // would wrap.
    for (_, t) in ir.tensors.iter() {
        if let Some(e) = t.extent_past_i32() {
            sink.push(unsupported(
                t.span,
                format!(
                    "`{}` has extent {e} ({:?}), above 2^31 - 1: the kernels hold N, K and the token count as 32-bit ints and TMA box coordinates are s32",
                    t.name, t.dims
                ),
                "split N over more instances (e.g. N per rank), or K over split-K instances, so that every extent fits 32 bits",
            ));
            return None;
        }
    }
    let splits = if matches!(
        epilogue,
        Epilogue::SplitKF32 | Epilogue::SplitKBf16 | Epilogue::SplitKAtomic
    ) {
        match ir.params.get("splits").map(|p| &p.value) {
            Some(ParamValue::Int(s)) if *s >= 1 => *s,
            _ => {
                sink.push(unsupported(
                    ir.family_span,
                    "a split_k epilogue needs an int param `splits`".into(),
                    "declare `param splits: int = 8`",
                ));
                return None;
            }
        }
    } else {
        1
    };
    let route = match &ir.route {
        Some(r) => Some(super::route::bind(
            ir, r, w, a, m_real, k, bk, splits, epilogue, sink,
        )?),
        None => None,
    };
    let act_k = route.map_or(k, |r| r.act_k);
    let routes = route.map_or(1, |r| r.routes(m_real));
    if at.dims.get(1) != Some(&act_k) {
        sink.push(unsupported(
            at.span,
            match at.dims.get(1) {
                Some(ak) => format!("activations have K {ak} but weights K {k}"),
                None => format!("activations have no K dimension but weights K {k}"),
            },
            "give both the same K",
        ));
    }
    // K blocks of tile K along the activations' K (a routed task's whole K over its slots).
    let k_blocks = if bk > 0 { act_k / bk } else { 0 };
    if bk > 0 && k % bk != 0 {
        sink.push(unsupported(
            wt.span,
            format!("K {k} is not a multiple of tile K {bk}"),
            "pad K to a multiple of tile K, or choose a tile K that divides it",
        ));
    } else if bk > 0 && splits > k_blocks {
        // Uneven splits are lowered (each split runs K_BLOCKS / SPLITS iterations, rounded up or
        // down); an empty one is not: the kernels run K_ITERS >= 1 trips (I-M8, no drain).
        sink.push(unsupported(
            wt.span,
            format!(
                "{splits} splits of K {k} but only {k_blocks} K block(s) of tile K {bk}: a split would run no K iteration"
            ),
            "use at most K / tile K splits",
        ));
    }
    // The last tile is partial where N is not a multiple of tile M (kv_a's 576, a rank's lm_head
    // 16,160): TMA fills its rows past N with zeros (and still counts the whole box for
    // expect_tx), and the epilogue stores only rows below N.
    let num_tiles = if bm > 0 {
        crate::ir::exact::ceil_div(n, bm)
    } else {
        0
    };
    if let Some(r) = route {
        if ir.granularity.tasks() != num_tiles * routes {
            let per = match r.mode {
                RouteMode::PerSlot => "m_real x slots",
                RouteMode::SumSlots => "m_real",
            };
            sink.push(
                Diagnostic::error(
                    codes::ROUTE,
                    format!(
                        "granularity has {} tasks but a `{}` route runs ceil(N / tile M) x {per} = {num_tiles} x {routes} = {}",
                        ir.granularity.tasks(),
                        r.mode.as_str(),
                        num_tiles * routes
                    ),
                )
                .primary(r.span, "the route")
                .help(format!(
                    "write `granularity per_tile(tasks ceil_div(N, tile.M) * {}, tiles_per_task 1)`",
                    match r.mode {
                        RouteMode::PerSlot => format!("m_real * {}", r.slots),
                        RouteMode::SumSlots => "m_real".to_string(),
                    }
                )),
            );
        }
    } else if ir.granularity.tasks() != num_tiles * splits {
        sink.push(unsupported(
            ir.granularity.span(),
            format!(
                "granularity has {} tasks but ceil(N / tile M) x splits = {num_tiles} x {splits} = {}",
                ir.granularity.tasks(),
                num_tiles * splits
            ),
            // A split-K epilogue reads param `splits`; without one there is no such name.
            if matches!(
                epilogue,
                Epilogue::SplitKF32 | Epilogue::SplitKBf16 | Epilogue::SplitKAtomic
            ) {
                "write `granularity per_tile(tasks ceil_div(N, tile.M) * splits, tiles_per_task 1)`"
            } else {
                "write `granularity per_tile(tasks ceil_div(N, tile.M), tiles_per_task 1)`"
            },
        ));
    }
    // `split_k f32` writes only partials; every other epilogue has an `output` (`split_k bf16`
    // its bf16 result beside the partials).
    let output = match epilogue {
        Epilogue::SplitKF32 => {
            role_tensor(ir, TensorRole::Output).or_else(|| role_tensor(ir, TensorRole::Partials))
        }
        _ => role_tensor(ir, TensorRole::Output),
    };
    let Some(output) = output else {
        sink.push(unsupported(
            ir.family_span,
            if epilogue == Epilogue::SplitKF32 {
                "no `output` or `partials` tensor".into()
            } else {
                format!("no `output` tensor: `{}` stores one", epilogue.as_str())
            },
            "declare `tensor C: bf16[m_real, N] out output`",
        ));
        return None;
    };
    let ot = &ir.tensors[output];
    let want_out = match epilogue {
        Epilogue::SplitKF32 => (Dtype::F32, vec![splits, m_real, n]),
        Epilogue::QuantE4m3 => (Dtype::E4m3, vec![m_real, n]),
        _ => match route {
            Some(r) if r.mode == RouteMode::PerSlot => (Dtype::Bf16, vec![m_real * r.slots, n]),
            _ => (Dtype::Bf16, vec![m_real, n]),
        },
    };
    if (ot.dtype, ot.dims.clone()) != want_out {
        sink.push(unsupported(
            ot.span,
            format!(
                "output `{}` must be {}{:?} for `{}`",
                ot.name,
                want_out.0,
                want_out.1,
                epilogue.as_str()
            ),
            "declare the output with that type and shape",
        ));
    }
    let residual = if epilogue == Epilogue::ResidualAdd {
        match role_tensor(ir, TensorRole::Residual) {
            Some(h)
                if ir.tensors[h].dtype == Dtype::Bf16 && ir.tensors[h].dims == vec![m_real, n] =>
            {
                Some(h)
            }
            _ => {
                sink.push(unsupported(
                    ir.family_span,
                    "a residual epilogue needs a bf16 `residual` input `[m_real, N]`".into(),
                    "declare `tensor R: bf16[m_real, N] in residual`",
                ));
                return None;
            }
        }
    } else {
        None
    };
    let split_sum = if matches!(epilogue, Epilogue::SplitKBf16 | Epilogue::SplitKAtomic) {
        let atomic = epilogue == Epilogue::SplitKAtomic;
        match super::split_sum::bind(ir, m_real, n, splits, num_tiles, atomic) {
            Ok(s) => Some(s),
            Err((missing, labels)) => {
                let at = ir.epilogues.first().map_or(ir.family_span, |e| e.2);
                let (why, p) = if atomic {
                    ("the splits add their sums into the accumulator; the last split of a tile, found by its tile's arrival counter once the 128 consumer threads met, stores them", "tensor P: f32[m_real, N] out partials")
                } else {
                    ("the last split of a tile sums the splits' partials, found by its tile's arrival counter, once the 128 consumer threads met", "tensor P: f32[splits, m_real, N] out partials")
                };
                let mut d = unsupported(
                    at,
                    format!("`{}` needs {} ({why})", epilogue.as_str(), missing.join(", ")),
                    &format!("declare `{p}`, `tensor T: i32[ceil_div(N, tile.M)] out counters`, `barrier epi = named(3, threads 128)` and `epilogue {} with epi`", epilogue.as_str()),
                );
                for (span, what) in labels {
                    d = d.secondary(span, what);
                }
                sink.push(d);
                return None;
            }
        }
    } else {
        None
    };
    let out_scale = if epilogue == Epilogue::QuantE4m3 {
        let sc = role_tensor(ir, TensorRole::ScaleOf(output)).filter(|h| {
            let t = &ir.tensors[*h];
            t.dtype == Dtype::F32 && t.dims == vec![m_real, n / bm.max(1)]
        });
        // The barrier the consumer warps meet at before reading the maxima: `with B`, over the
        // 128 consumer threads.
        let bar = super::epilogue_barrier(ir);
        // The warps' maxima meet in the scratch's `amax` member, which the epilogue reads at
        // byte 16 (4 warps x tile N f32).
        let amax = ir.region_groups[scratch]
            .members
            .first()
            .and_then(|h| {
                ir.regions[*h]
                    .holds
                    .iter()
                    .find(|m| m.name.as_deref() == Some("amax"))
            })
            .filter(|m| m.ty == HeldType::Elem(Dtype::F32) && m.offset == 16 && m.count >= 4 * bn);
        match (sc, bar) {
            (Some(h), Some(id)) if amax.is_some() => Some((h, id)),
            _ => {
                sink.push(unsupported(
                    ir.family_span,
                    format!("`quant e4m3` needs an output `scale of` the output, f32 [{m_real}, {}], `with B` naming a named barrier of the 128 consumer threads, and the scratch region holding the 4 x {bn} partial maxima `f32[4 * tile.N] amax` at byte 16 (after the TMEM address)", n / bm.max(1)),
                    "declare `tensor Y_scale: f32[m_real, N / 128] out scale of Y`, `barrier epi = named(3, threads 128)` with `epilogue quant e4m3 with epi`, and `region scratch { holds tmem_addr, u8[12] pad, f32[4 * tile.N] amax; align 16; pack }`",
                ));
                return None;
            }
        }
    } else {
        None
    };
    let acc_slots = i64::from(ir.channels[acc].depth);
    let tmem_cols = ir.tmem_cols.map_or(0, |(c, _)| c);
    let stages = i64::from(ir.stages.map_or(1, |(s, _)| s));
    let operands = if fp8 {
        fp8_scales(
            ir,
            w,
            a,
            w_ring,
            (route.map(|r| r.experts), n, k),
            act_k,
            m_real,
            (bn, bk),
            stages,
            acc_slots,
            tmem_cols,
            sink,
        )?
    } else {
        Operands::Bf16
    };
    if sink.error_count() > before {
        return None;
    }
    // A tail tile is lowered for the bf16 engine with the epilogues of `Epilogue::TAKE_A_TAIL`:
    // the fp8 scales (weight blocks) index whole 128-row tiles.
    let tail = if bm > 0 { n % bm } else { 0 };
    let tail_ok = operands == Operands::Bf16 && Epilogue::TAKE_A_TAIL.contains(&epilogue);
    if tail != 0 && !tail_ok {
        let names: Vec<String> = Epilogue::TAKE_A_TAIL
            .iter()
            .map(|e| format!("`{}`", e.as_str()))
            .collect();
        let listed = match names.split_last() {
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        sink.push(
            Diagnostic::error(codes::LINEAR_LIMITS, format!("output `{}` has {n} columns, {} whole {bm}-row tiles and a tail of {tail}: a tail tile is lowered for bf16 operands with {listed} only", ir.tensors[output].name, n / bm))
                .primary(ir.tensors[output].span, format!("{n} = {} x {bm} + {tail}", n / bm))
                .note("the fp8 block scales (128x128 weight blocks, 1x128 output groups) index whole tiles")
                .help(format!("pad N to {} (zero weight rows), or use the bf16 engine with {listed}", (n / bm + 1) * bm)),
        );
        return None;
    }
    let map = match epilogue_map(ir, epilogue, route.is_some(), sink) {
        Ok(m) => m,
        Err(()) => return None,
    };
    Some(LinearMath {
        operands,
        elem_bytes,
        weights: w,
        acts: a,
        output,
        residual,
        out_scale,
        split_sum,
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
        stages,
        n,
        k,
        m_real,
        splits,
        k_blocks,
        // The longest split's count (split 0's).
        k_iters: super::split_blocks(k_blocks, splits, 0).1,
        num_tiles,
        acc_slots,
        tmem_cols,
        epilogue,
        map,
        route,
    })
}
