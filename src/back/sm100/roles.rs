//! The role functions of the sm_100a pipeline: loader (W4), launcher (W5), consumer (W0-3).

use crate::back::consumer::ROLE_PARAMS;
use crate::back::epilogue::{self, Fragment};
use crate::back::pipeline::{open_consumer, region_base, release_used_pages, Linkage};
use crate::back::roles::{ops_of, render, Engine, RoleCx};
use crate::back::writer::Writer;
use crate::ir::{ChannelStorageIr, RoleKind};
use crate::lower::LinearMath;
use crate::lower::{BarRef, BarrierSource, MmaShape, RoleProgram, Step};
use crate::valid::CheckedTask;

/// The accumulator fragment of a consumer thread on sm_100a: TMEM lane 32w + l of the tile.
pub(super) const FRAGMENT: Fragment = Fragment {
    doc: &[
        "The accumulator fragment on sm_100a: consumer thread (warp w, lane l) loads TMEM lane 32w + l (the",
        "lane-quarter rule), i.e. tile row layout::Sm100::ld_row(w, l), as BLOCK_N f32 columns, one per token",
        "(acc[layout::Sm100::ld_col(c, j)] is register j of the load of columns c ...).",
    ],
    elems: "BLOCK_N",
    acc_param: "float const (&acc)[BLOCK_N]",
    row: &["(void)e;", "return tile * BLOCK_M + layout::Sm100::ld_row(warp, lane);"],
    token: &["(void)lane;", "return e;"],
    value: &["return acc[e];"],
    warp_amax,
};

/// The fragment of a 64-row tile (M = 64, data-path layout F): lanes 0-15 of warp w hold tile
/// rows 16w .. 16w + 15 (`layout::Sm100::ld_row`); lanes 16-31 load TMEM lanes the MMA does not
/// write, and their row is N, which every store guard (`row < N`) excludes (`quant e4m3`, the one
/// epilogue without that guard, is E0013 on a 64-row tile).
pub(super) const FRAGMENT_64: Fragment = Fragment {
    doc: &[
        "The accumulator fragment on sm_100a, M = 64: consumer thread (warp w, lane l) loads TMEM lane 32w + l (the",
        "lane-quarter rule); lanes with layout::Sm100::ld_live(l) (l < 16) hold tile row layout::Sm100::ld_row(w, l) as",
        "BLOCK_N f32 columns, one per token; the others hold no row and answer row N, which no store takes.",
    ],
    elems: "BLOCK_N",
    acc_param: "float const (&acc)[BLOCK_N]",
    row: &[
        "(void)e;",
        "return layout::Sm100::ld_live(lane) ? tile * BLOCK_M + layout::Sm100::ld_row(warp, lane) : N;",
    ],
    token: &["(void)lane;", "return e;"],
    value: &["return acc[e];"],
    warp_amax,
};

/// The fragment of `p`'s tile.
pub(super) fn fragment(p: &LinearMath) -> &'static Fragment {
    if p.block_m == 64 {
        &FRAGMENT_64
    } else {
        &FRAGMENT
    }
}

/// The warp's 32 lanes hold 32 rows of every token: shuffles over the whole warp.
fn warp_amax(w: &mut Writer) {
    w.line("#pragma unroll");
    w.open("for (int n = 0; n < BLOCK_N; ++n)");
    w.line("float m = fabsf(acc[n]);");
    w.line("#pragma unroll");
    w.line("for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));");
    w.line("if (lane == 0) amax[warp * BLOCK_N + n] = m;");
    w.close("");
}

/// The sm_100a engine: tcgen05 MMAs issued by the launcher into TMEM.
pub(super) struct Sm100<'a> {
    pub task: &'a CheckedTask,
    pub p: &'a LinearMath,
}

impl Engine for Sm100<'_> {
    fn isa(&self) -> &'static str {
        "mpkc::sm100"
    }

    fn before_arrive(&self, w: &mut Writer, prog: &RoleProgram, bar: &BarRef) {
        // A TMEM slot handed back: its reads are ordered before the arrival (tcgen05 memory model).
        if let BarrierSource::Empty(h) = prog.barrier(bar.bar).source {
            if matches!(self.task.ir.channels[h].storage, ChannelStorageIr::Tmem) {
                w.line("mpkc::sm100::tcgen05_fence_before();");
            }
        }
    }

    fn before_sync(&self, w: &mut Writer) {
        w.line("mpkc::sm100::tcgen05_fence_before();");
    }

    fn step(&self, w: &mut Writer, _role: RoleKind, step: &Step) {
        let ir = &self.task.ir;
        match step {
            Step::TmemAlloc { scratch } => {
                let scratch = region_base(ir, *scratch);
                w.line(format!("uint32_t *const taddr_slot = reinterpret_cast<uint32_t *>(smem + task_desc->smem_region_offset({scratch}));"));
                w.line("mpkc::sm100::tmem_alloc(taddr_slot, TMEM_COLS);");
                w.line("mpkc::sm100::tcgen05_fence_before();");
                w.line("__syncwarp();");
                w.line("uint32_t const taddr = *taddr_slot;  // cached: the scratch page may be released before dealloc");
            }
            Step::StageMma {
                w: wg, a, sf, mma, ..
            } => stage_mma(w, ir, (*wg, *a, *sf), *mma),
            Step::AccLoad { scratch, .. } => acc_load(w, ir, self.p, *scratch),
            Step::EpilogueLoads { .. } => epilogue::emit_loads(w, self.task, self.p),
            Step::Epilogue { .. } => epilogue::emit(w, self.task, self.p, fragment(self.p)),
            Step::PageRelease => {
                w.line("mpkc::sm100::tcgen05_fence_after();");
                release_used_pages(w, "MMA");
            }
            Step::TmemDealloc => w.line("mpkc::sm100::tmem_dealloc(taddr, TMEM_COLS);"),
            // sm_90a only (its consumer waits its own wgmmas): the lowering places none here.
            Step::ConsumerPageRelease => {}
            Step::PageAcquire
            | Step::PagesFence
            | Step::PageFreeUnused
            | Step::DepWait
            | Step::RouteRead
            | Step::SyncWarp
            | Step::Body => {}
        }
    }
}

/// The stage's MMAs on the elected launcher lane: the descriptors of both operands, the stage's
/// scale factors into TMEM (block-scaled fp8), one tcgen05.mma per MMA_K.
fn stage_mma(
    w: &mut Writer,
    ir: &crate::ir::TaskIr,
    (wg, a, sf): (usize, usize, Option<usize>),
    mma: Option<MmaShape>,
) {
    let (w0, a0) = (region_base(ir, wg), region_base(ir, a));
    let scaled = mma.is_some_and(|m| m.block_scaled());
    if let Some(m) = mma {
        w.line(format!("static_assert(layout::Tiles::BLOCK_M == {} && layout::Tiles::BLOCK_N == {} && layout::Tiles::MMA_K == {} && layout::Tiles::MMAS_PER_STAGE == {}, \"the stage issues the role program's {} x m{}n{}k{}\");", m.m, m.n, m.k, m.count, m.count, m.m, m.n, m.k));
    }
    w.line("mpkc::sm100::tcgen05_fence_after();");
    w.line(format!(
        "uint64_t const w_desc = smem_desc(smem + task_desc->smem_region_offset({w0} + stage));"
    ));
    w.line(format!(
        "uint64_t const a_desc = smem_desc(smem + task_desc->smem_region_offset({a0} + stage));"
    ));
    if let Some(sf) = sf {
        let sf0 = region_base(ir, sf);
        w.comment("This stage's scale factors into TMEM (the A block, then one block per 128 tokens; each to");
        w.comment("4 columns of all 128 lanes), ordered before the MMAs.");
        w.line(format!("uint32_t const sf_smem = mpkc::sm100::smem_u32(smem + task_desc->smem_region_offset({sf0} + stage));"));
        w.line("uint32_t const sfa = taddr + layout::Sm100::sfa_tmem(stage);");
        w.line("uint32_t const sfb = taddr + layout::Sm100::sfb_tmem(stage, 0);");
        w.line("mpkc::sm100::tmem_cp_32x128b_warpx4(sfa, layout::Sm100::sf_desc(sf_smem));");
        w.line("#pragma unroll");
        w.line("for (int b = 0; b < layout::Scales::B_BLOCKS; ++b) mpkc::sm100::tmem_cp_32x128b_warpx4(taddr + layout::Sm100::sfb_tmem(stage, b), layout::Sm100::sf_desc(sf_smem + layout::Scales::B_OFFSET + static_cast<uint32_t>(b) * layout::Scales::BLOCK_BYTES));");
    }
    w.line("uint32_t const d_tmem = taddr + layout::Sm100::acc_tmem(slot, 0, 0);");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < layout::Tiles::MMAS_PER_STAGE; ++j)");
    w.line("uint64_t const wa = layout::Sm100::w_mma(w_desc, j);");
    w.line("uint64_t const ab = layout::Sm100::a_mma(a_desc, j);");
    if scaled {
        w.line("mpkc::sm100::mma_mxf8f6f4_block_scale(d_tmem, wa, ab, layout::Sm100::idesc(j), layout::Sm100::sf_operand(sfa, j), layout::Sm100::sf_operand(sfb, j), it > 0 || j > 0);");
    } else {
        w.line("mpkc::sm100::mma_f16(d_tmem, wa, ab, layout::Sm100::idesc(j), it > 0 || j > 0);");
    }
    w.close("");
}

/// The consumer's load of its warp's 32 TMEM lanes (32w..32w+31, the lane-quarter rule) of the
/// accumulator slot: BLOCK_N f32 columns per thread.
fn acc_load(w: &mut Writer, ir: &crate::ir::TaskIr, p: &LinearMath, scratch: usize) {
    let scratch = region_base(ir, scratch);
    w.line("mpkc::sm100::tcgen05_fence_after();");
    w.line(format!("uint32_t const taddr = *reinterpret_cast<uint32_t const *>(smem + task_desc->smem_region_offset({scratch}));"));
    w.comment("Thread (warp w, lane l) holds accumulator row 32w + l: BLOCK_N f32 columns, one per token.");
    w.line("float acc[BLOCK_N];");
    let step = crate::back::layout::sm100_ld_cols(p);
    w.line(format!("static_assert(layout::Sm100::LD_COLS == {step}, \"the layout's tcgen05.ld width is the wrapper's\");"));
    w.line("#pragma unroll");
    w.open("for (int c = 0; c < BLOCK_N; c += layout::Sm100::LD_COLS)");
    w.line(format!("uint32_t r[{step}];"));
    w.line(format!(
        "mpkc::sm100::tmem_ld_32x32b_x{step}(taddr + layout::Sm100::ld_tmem(slot, warp, c), r);"
    ));
    w.line("mpkc::sm100::tmem_wait_ld();");
    w.line("#pragma unroll");
    w.line(format!(
        "for (int j = 0; j < {step}; ++j) acc[layout::Sm100::ld_col(c, j)] = __uint_as_float(r[j]);"
    ));
    w.close("");
}

/// Launcher (W5): its operations of the sm_100a program (re-init, TMEM alloc after the first
/// stage landed, tmem_ready, the MMA loop on one elected lane, consumer_done, the page release
/// and the dealloc).
pub(super) fn launcher(w: &mut Writer, e: &Sm100<'_>, prog: &RoleProgram) {
    w.comment("Launcher (W5): TMEM and the tcgen05.mma loop.");
    w.open(format!(
        "__device__ __noinline__ void launcher({ROLE_PARAMS})"
    ));
    w.line("(void)runtime_config;");
    w.line("(void)iter_num;");
    w.line("extern __shared__ __align__(1024) char smem[];");
    w.line("uint64_t *const sem = mpkc::rt::op_sem_base(runtime_smem, instruction_index);");
    crate::back::pipeline::launcher_page_mask(w, prog);
    let cx = RoleCx {
        ir: &e.task.ir,
        prog,
        role: RoleKind::Launcher,
        engine: e,
    };
    render(w, &cx, ops_of(prog, RoleKind::Launcher));
    w.close("");
    w.blank();
}

/// Consumer (W0-3): its operations of the sm_100a program (tmem_ready, the accumulator slot, the
/// TMEM load and the epilogue, the slot handed back, consumer_done).
pub(super) fn consumer(w: &mut Writer, e: &Sm100<'_>, prog: &RoleProgram) {
    w.comment(format!(
        "Consumer (W0-3): the `{}` epilogue of one {}x{} accumulator tile.",
        e.p.epilogue.as_str(),
        e.p.block_m,
        e.p.block_n
    ));
    open_consumer(w, Linkage::Call);
    let cx = RoleCx {
        ir: &e.task.ir,
        prog,
        role: RoleKind::Consumer,
        engine: e,
    };
    render(w, &cx, ops_of(prog, RoleKind::Consumer));
    w.close("");
    w.blank();
}
