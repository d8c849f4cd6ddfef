//! Renders a role's operations from its [`RoleProgram`] (issue 11): every wait, arrival, TMA
//! load, commit, re-init and loop the model check proved is written here, in program order, on
//! both targets; what differs per target is only how an engine [`Step`] is written
//! ([`Engine::step`]) and the fences around TMEM hand-overs.

use super::names::upper;
use super::pipeline::{activations_fence, launcher_reinit, region_base};
use super::writer::Writer;
use crate::ir::{RoleKind, TaskIr};
use crate::lower::{
    BarRef, BarrierSource, Coord, Index, LoopKind, Op, Operand, RoleProgram, Step, ThreadSet,
};

/// What a target renders itself.
pub(crate) trait Engine {
    /// The ISA wrapper namespace (`mpkc::sm100`, `mpkc::sm90`).
    fn isa(&self) -> &'static str;
    /// Whether the MMA reads a stage's scale-factor block through the async proxy (sm_100a:
    /// `tcgen05.cp` copies the whole block to TMEM, so the loader writes every row and fences);
    /// false where the consumer threads read its bytes with generic loads (sm_90a: the loader
    /// writes only those words, and the barrier's release/acquire orders them, no proxy fence).
    fn scales_read_by_async_proxy(&self) -> bool {
        true
    }
    /// Writes one engine step.
    fn step(&self, w: &mut Writer, role: RoleKind, step: &Step);
    /// Lines before `role` arrives `bar` (sm_100a: `tcgen05.fence::before_thread_sync` before
    /// a TMEM slot is handed back).
    fn before_arrive(&self, w: &mut Writer, prog: &RoleProgram, bar: &BarRef) {
        let _ = (w, prog, bar);
    }
    /// Lines before a named barrier that orders this thread's reads before another role's
    /// release (sm_100a: the tcgen05 fence, so that its TMEM loads are ordered too).
    fn before_sync(&self, w: &mut Writer) {
        let _ = w;
    }
    /// Lines before `role`'s K-iteration loop (sm_90a's consumer: keep it a loop, see there).
    fn before_k_loop(&self, w: &mut Writer, role: RoleKind) {
        let _ = (w, role);
    }
}

/// The context of one role's rendering.
pub(crate) struct RoleCx<'a> {
    pub ir: &'a TaskIr,
    pub prog: &'a RoleProgram,
    pub role: RoleKind,
    pub engine: &'a dyn Engine,
}

/// `&sem[SEM_X + slot]` and the slot expression of `bar`.
pub(crate) fn sem_slot(prog: &RoleProgram, bar: &BarRef) -> (String, String) {
    let b = prog.barrier(bar.bar);
    if b.slots <= 1 {
        return (format!("&sem[{}]", b.c_name), "0".to_string());
    }
    let slot = match bar.index {
        Index::Fixed(i) => (i % b.slots).to_string(),
        Index::Iter(LoopKind::KIters) => "stage".to_string(),
        Index::Iter(LoopKind::Tiles) => "slot".to_string(),
    };
    (format!("&sem[{} + {slot}]", b.c_name), slot)
}

/// The parity a wait from phase `start` passes on, as C++.
fn parity(prog: &RoleProgram, bar: &BarRef, start: u8) -> String {
    let b = prog.barrier(bar.bar);
    match bar.index {
        Index::Fixed(i) => (u32::from(start) ^ ((i / b.slots.max(1)) & 1)).to_string(),
        Index::Iter(LoopKind::KIters) => if start == 1 {
            "free_parity"
        } else {
            "full_parity"
        }
        .to_string(),
        // One tile per task (I-P6): the slot's first use.
        Index::Iter(LoopKind::Tiles) => start.to_string(),
    }
}

fn uses(ops: &[Op], pred: &dyn Fn(&Op) -> bool) -> bool {
    crate::lower::flatten(ops).into_iter().any(pred)
}

fn waits_from(ops: &[Op], kind: LoopKind, from: u8) -> bool {
    uses(
        ops,
        &|o| matches!(o, Op::Wait { bar, start, .. } if bar.index == Index::Iter(kind) && *start == from),
    )
}

fn refs_loop(ops: &[Op], kind: LoopKind) -> bool {
    uses(ops, &|o| match o {
        Op::Wait { bar, .. }
        | Op::Arrive { bar, .. }
        | Op::Commit { bar }
        | Op::TmaLoad { bar, .. }
        | Op::StageScales { bar, .. } => bar.index == Index::Iter(kind),
        _ => false,
    })
}

/// Writes `ops` of the role in `cx`.
pub(crate) fn render(w: &mut Writer, cx: &RoleCx<'_>, ops: &[Op]) {
    let isa = cx.engine.isa();
    let mut k_chunk = false;
    for op in ops {
        match op {
            Op::Reinit { .. } => match cx.role {
                RoleKind::Launcher => launcher_reinit(w),
                // The whole loader warp runs up to its page prefix: one lane re-inits.
                RoleKind::Loader => w.line(format!("if ({isa}::elect_one()) reinit_loader(sem);")),
                r => w.line(format!("reinit_{r}(sem);")),
            },
            Op::Wait { bar, start, site } => {
                let (at, slot) = sem_slot(cx.prog, bar);
                let b = cx.prog.barrier(bar.bar);
                if site.what.starts_with("waits the first stage") {
                    w.comment("The first stage landed only after the loader saw every page the task uses ready: the scratch page is ours.");
                }
                w.line(format!(
                    "mpkc::rt::mbar_wait({at}, {}, \"{}\", {slot});",
                    parity(cx.prog, bar, *start),
                    b.c_name.to_ascii_lowercase()
                ));
            }
            Op::Arrive { bar, by, threads } => {
                cx.engine.before_arrive(w, cx.prog, bar);
                let (at, _) = sem_slot(cx.prog, bar);
                match by {
                    ThreadSet::Lane0 => w.line(format!(
                        "if (mpkc::lane_id() == 0) mpkc::rt::mbar_arrive({at});"
                    )),
                    ThreadSet::Elected => w.line(format!("mpkc::rt::mbar_arrive({at});")),
                    ThreadSet::First(n) => w.line(format!(
                        "if (threadIdx.x < {n}) mpkc::rt::mbar_arrive({at});  // {}: the first {n} {} threads, after the named barrier over all of them",
                        cx.prog.barrier(bar.bar).label,
                        cx.role
                    )),
                    ThreadSet::All => w.line(format!(
                        "mpkc::rt::mbar_arrive({at});  // {}: every {} thread, {threads} arrivals",
                        cx.prog.barrier(bar.bar).label,
                        cx.role
                    )),
                }
            }
            Op::Commit { bar } => {
                let b = cx.prog.barrier(bar.bar);
                if matches!(b.source, BarrierSource::Empty(_)) {
                    w.comment("Frees the stage once these MMAs have read it.");
                }
                let (at, _) = sem_slot(cx.prog, bar);
                w.line(format!("{isa}::mma_commit({at});"));
            }
            Op::TmaLoad {
                operand,
                bar,
                group,
                coords,
                ..
            } => {
                if !k_chunk && coords.contains(&Coord::KChunk) {
                    w.line("int const k_chunk = (k_first + it) * K_CHUNKS;");
                    k_chunk = true;
                }
                let x = match operand {
                    Operand::Weights => "w",
                    Operand::Activations | Operand::Other => "a",
                };
                let coords = coords
                    .iter()
                    .map(|c| c.c_expr())
                    .collect::<Vec<_>>()
                    .join(", ");
                let (at, _) = sem_slot(cx.prog, bar);
                let base = region_base(cx.ir, *group);
                let big = upper(x);
                w.line(format!(
                    "char *const {x}_dst = smem + task_desc->smem_region_offset({base} + stage);"
                ));
                w.line(format!(
                    "{isa}::tma_load_3d({x}_dst, map_{x}, {at}, {coords}, {big}_L2_POLICY);"
                ));
                w.line(format!(
                    "{isa}::mbar_arrive_expect_tx({at}, {big}_STAGE_TX_BYTES);"
                ));
            }
            Op::StageScales { bar, group } => {
                let async_reader = cx.engine.scales_read_by_async_proxy();
                let targs = if async_reader { "" } else { "<false>" };
                let sf0 = region_base(cx.ir, *group);
                let (at, _) = sem_slot(cx.prog, bar);
                w.comment("UE8M0 scale factors of this stage's 128-wide K block (layout::Scales::fetch loads them,");
                w.comment(
                    "layout::Scales::write stores the rows the MMA's scale layout asks for).",
                );
                w.line(format!(
                    "uint8_t *const sf = reinterpret_cast<uint8_t *>(smem + task_desc->smem_region_offset({sf0} + stage));"
                ));
                w.line("float const *const w_scale = static_cast<float const *>(task_desc->input_ptrs[IN_W_SCALE]);");
                w.line("float const *const a_scale = static_cast<float const *>(task_desc->input_ptrs[IN_A_SCALE]);");
                if !scales_fetched_ahead(cx.prog) {
                    w.comment("This K block's scales were fetched an iteration ahead (the first after the dependency wait);");
                    w.comment("the next block's are fetched now and stay in flight until the next iteration writes them.");
                    w.comment("Routed: iteration j's (it or it + 1) weight block scales are its slot's expert's, block row");
                    w.comment("`tile`, K block j % SLOT_K_ITERS (an id past the experts reads expert EXPERTS - 1's: its");
                    w.comment("weight box is TMA zero fill, so any power of two is exact).");
                    w.line("auto const w_at = [&](int j) { int const e = j / SLOT_K_ITERS == it / SLOT_K_ITERS ? expert : next_expert; return (static_cast<int64_t>(e < EXPERTS ? e : EXPERTS - 1) * NUM_TILES + tile) * layout::Scales::W_K_BLOCKS + j % SLOT_K_ITERS; };");
                    w.line("layout::Scales::Raw const sf_cur = it == 0 ? layout::Scales::fetch_at(w_scale + w_at(it), a_scale, it) : sf_next;");
                    w.line("if (it + 1 < k_iters) sf_next = layout::Scales::fetch_at(w_scale + w_at(it + 1), a_scale, it + 1);");
                    w.line(format!(
                        "layout::Scales::write_at{targs}(sf, sf_cur, w_at(it), it);"
                    ));
                } else {
                    w.comment("The first SF_AHEAD blocks' scales are fetched together after the dependency wait; each");
                    w.comment("iteration takes its block's (fetched SF_AHEAD iterations ago) and fetches the one SF_AHEAD ahead.");
                    w.open("if (it == 0)");
                    w.line("#pragma unroll");
                    w.line("for (int q = 0; q < SF_AHEAD; ++q) if (q < k_iters) sf_ahead[q] = layout::Scales::fetch(w_scale, a_scale, tile, k_first + q);");
                    w.close("");
                    w.line("layout::Scales::Raw const sf_cur = sf_ahead[ahead];");
                    w.line("if (it + SF_AHEAD < k_iters) sf_ahead[ahead] = layout::Scales::fetch(w_scale, a_scale, tile, k_first + it + SF_AHEAD);");
                    w.line(format!(
                        "layout::Scales::write{targs}(sf, sf_cur, tile, k_first + it);"
                    ));
                }
                if async_reader {
                    w.comment(
                        "Generic-proxy writes, read by tcgen05.cp (async proxy): fence, then publish.",
                    );
                    w.line(format!("{isa}::fence_proxy_async_smem();"));
                } else {
                    w.comment("Read by the consumer threads' generic loads: the arrive's release orders the writes.");
                }
                w.line(format!("mpkc::rt::mbar_arrive({at});"));
            }
            Op::Step(Step::PageAcquire) => super::pipeline::page_acquire(w),
            Op::Step(Step::PagesFence) => super::pipeline::pages_fence(w, isa),
            Op::Step(Step::PageFreeUnused) => super::page_prefix::free_unused(w),
            Op::Step(Step::DepWait) => {
                w.comment("The activations come from the task this one depends on: wait its event once (I-M9).");
                w.open("if (it == 0)");
                w.line("mpkc::rt::mbar_wait(dep_ready, mpkc::rt::ring_phase(instruction_index), \"SEM_DEP_READY\", instruction_index);");
                activations_fence(w, isa);
                w.close("");
            }
            Op::Step(Step::RouteRead) => {
                w.comment("This stage's expert, written by the task this one depends on: slot 0's read after its event,");
                w.comment("each later slot's a slot ahead (registers only: no indexed array in local memory).");
                w.open("if (it == 0)");
                w.line("expert = route_expert(ids, route, 0);");
                w.line("next_expert = ROUTE_READS > 1 ? route_expert(ids, route, 1) : expert;");
                w.close("");
                w.open("if (it > 0 && it % SLOT_K_ITERS == 0)");
                w.line("expert = next_expert;");
                w.line("if (it / SLOT_K_ITERS + 1 < ROUTE_READS) next_expert = route_expert(ids, route, it / SLOT_K_ITERS + 1);");
                w.close("");
            }
            Op::Step(Step::SyncWarp) => {
                w.comment("Reconverge before lane-parallel work (I-P4).");
                w.line("__syncwarp();");
            }
            Op::Step(s) => cx.engine.step(w, cx.role, s),
            Op::Loop {
                kind: LoopKind::KIters,
                body,
            } => {
                let flat = crate::lower::flatten(body);
                let scales = flat.iter().any(|op| matches!(op, Op::StageScales { .. }));
                // The split's first K block, where a load or the scales address K (the loader).
                let k_first = scales
                    || flat.iter().any(|op| {
                        matches!(op, Op::TmaLoad { coords, .. } if coords.contains(&Coord::KChunk))
                    });
                if k_first {
                    w.line("int const k_first = task_k_first(task_desc);  // this task's first K block (its split's)");
                }
                w.line("int const k_iters = task_k_iters(task_desc);  // its K iterations: K_ITERS, or K_ITERS - 1 in a shorter split");
                let ahead = scales && scales_fetched_ahead(cx.prog);
                if ahead {
                    w.comment("The f32 scales of the next SF_AHEAD K blocks, in flight while the loader waits the ring: one");
                    w.comment("global round trip per stage in the only thread that stages them would bound the pipeline at a");
                    w.comment("stage per load latency. The loop is unrolled by SF_AHEAD so each block's registers keep a");
                    w.comment("fixed name (no indexed array in local memory).");
                    w.line("constexpr int SF_AHEAD = NUM_STAGES < K_ITERS ? NUM_STAGES : K_ITERS;");
                    w.line("layout::Scales::Raw sf_ahead[SF_AHEAD];");
                } else if scales {
                    w.comment("The next K block's f32 scales, fetched one iteration ahead (layout::Scales::fetch).");
                    w.line("layout::Scales::Raw sf_next;");
                }
                // Last before the loop: a `#pragma unroll` must precede it directly.
                cx.engine.before_k_loop(w, cx.role);
                if cx.role == RoleKind::Loader {
                    w.comment("Not unrolled: one lane issues a stage's loads after its empty-barrier wait, and unrolled");
                    w.comment("copies of that would only hold more registers (the helper warps may have 40, setmaxnreg).");
                    w.line("#pragma unroll 1");
                }
                if ahead {
                    w.open("for (int it0 = 0; it0 < k_iters; it0 += SF_AHEAD)");
                    w.line("#pragma unroll");
                    w.open("for (int ahead = 0; ahead < SF_AHEAD; ++ahead)");
                    w.line("int const it = it0 + ahead;");
                    w.line("if (it >= k_iters) break;");
                } else {
                    w.open("for (int it = 0; it < k_iters; ++it)");
                }
                w.line("int const stage = it % NUM_STAGES;");
                if waits_from(body, LoopKind::KIters, 1) {
                    w.line("uint32_t const free_parity = ((it / NUM_STAGES) & 1) ^ 1;  // producer cursor starts at phase 1");
                }
                if waits_from(body, LoopKind::KIters, 0) {
                    w.line("uint32_t const full_parity = (it / NUM_STAGES) & 1;  // consumer cursor starts at phase 0");
                }
                render(w, cx, body);
                w.close("");
                if ahead {
                    w.close("");
                }
            }
            Op::Loop {
                kind: LoopKind::Tiles,
                body,
            } => {
                // One tile per task (I-P6, `tiles_per_task 1`): the loop runs once, slot 0.
                if refs_loop(body, LoopKind::Tiles) {
                    w.comment("One tile per task (I-P6): accumulator slot 0, its first use.");
                    w.line("int const slot = 0;");
                }
                render(w, cx, body);
            }
            Op::Elect { body } => {
                w.open(format!("if ({isa}::elect_one())"));
                render(w, cx, body);
                w.close("");
            }
            Op::NamedSync { id, threads, .. } => {
                if *id == crate::lower::RUNTIME_PAGE_BARRIER {
                    w.comment("The runtime's page barrier (contract doc §3.4): every consumer thread is done with the pages");
                    w.comment("before warp 0 releases them.");
                } else {
                    w.comment("Every reader of the role is done before a subset arrives for it.");
                }
                cx.engine.before_sync(w);
                w.line(format!("mpkc::named_barrier_sync({id}, {threads});"));
            }
            // Model-only: the linear lowering rejects both (E0013).
            Op::EarlyExit { .. } | Op::Drain { .. } => {}
        }
    }
}

/// Whether the loader's K loop fetches the f32 scales SF_AHEAD K blocks ahead (`sf_ahead`, the
/// loop unrolled by SF_AHEAD; `Op::StageScales` takes its block from it) rather than one ahead
/// (`sf_next`): every engine but a routed one, whose blocks change expert at slot boundaries and
/// which reads only the next slot's expert ahead.
fn scales_fetched_ahead(prog: &RoleProgram) -> bool {
    !routed(prog)
}

/// Whether the program's linear engine is routed (`route W by ids …`).
pub(crate) fn routed(prog: &RoleProgram) -> bool {
    prog.compute.as_ref().is_some_and(|p| p.route.is_some())
}

/// Whether `role`'s operations in `prog` include `step` (at any loop depth).
pub(crate) fn has_step(prog: &RoleProgram, role: RoleKind, step: &Step) -> bool {
    crate::lower::flatten(ops_of(prog, role))
        .iter()
        .any(|op| matches!(op, Op::Step(s) if s == step))
}

/// The role's operations, or none when the program has no such role.
pub(crate) fn ops_of(prog: &RoleProgram, role: RoleKind) -> &[Op] {
    prog.role(role).map_or(&[], |r| r.ops.as_slice())
}

/// The ordinals `role` re-initialises at task start in `prog` (its `Op::Reinit`; none without).
pub(crate) fn reinit_of(prog: &RoleProgram, role: RoleKind) -> Vec<usize> {
    ops_of(prog, role)
        .iter()
        .find_map(|o| match o {
            Op::Reinit { ordinals } => Some(ordinals.clone()),
            _ => None,
        })
        .unwrap_or_default()
}
