//! The launcher (W5) and consumer (W0-3) of the sm_90a pipeline; the loader is shared with sm_100a.

use crate::back::consumer::ROLE_PARAMS;
use crate::back::epilogue::{self, Fragment};
use crate::back::pipeline::{open_consumer, region_base, release_used_pages, Linkage};
use crate::back::roles::{has_step, ops_of, render, Engine, RoleCx};
use crate::back::writer::Writer;
use crate::ir::RoleKind;
use crate::lower::{LinearMath, MmaShape, Operands};
use crate::lower::{RoleProgram, Step};
use crate::valid::CheckedTask;

/// The accumulator fragment of a consumer thread on sm_90a: the wgmma m64nN f32 layout of each
/// m64 half of the tile (`HALVES`: 2 for a 128-row tile, 1 for a 64-row one).
pub(super) const FRAGMENT: Fragment = Fragment {
    doc: &[
        "The accumulator fragment on sm_90a (wgmma m64nN, f32): thread (warp w, lane l) holds in acc[h][i] row",
        "layout::Sm90::acc_row(h, w, l, i) (m64 half h < HALVES: weight rows 64h..64h+63) and token layout::Sm90::acc_col(l, i);",
        "element e is acc[e / ACC_REGS][e % ACC_REGS].",
    ],
    elems: "HALVES * ACC_REGS",
    acc_param: "float const (&acc)[HALVES][ACC_REGS]",
    row: &[
        "int const h = e / ACC_REGS;",
        "int const i = e % ACC_REGS;",
        "int const r = layout::Sm90::acc_row(h, warp, lane, i);",
        "return r < BLOCK_M ? tile * BLOCK_M + r : N;  // a row past a short tile: N, which no store takes",
    ],
    token: &[
        "int const i = e % ACC_REGS;",
        "return layout::Sm90::acc_col(lane, i);",
    ],
    value: &["return acc[e / ACC_REGS][e % ACC_REGS];"],
    warp_amax,
};

/// A thread holds 4 values of each of its tokens (2 rows x 2 halves) and the 8 lanes sharing
/// `l % 4` hold the same tokens: a local max, then shuffles over those 8 lanes.
fn warp_amax(w: &mut Writer) {
    w.line("static_assert(HALVES == 2, \"E0013: quant e4m3 groups are whole 128-row tiles\");");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < BLOCK_N / 8; ++j)");
    w.line("#pragma unroll");
    w.open("for (int e = 0; e < 2; ++e)");
    w.line("float m = fmaxf(fmaxf(fabsf(acc[0][4 * j + e]), fabsf(acc[0][4 * j + 2 + e])), fmaxf(fabsf(acc[1][4 * j + e]), fabsf(acc[1][4 * j + 2 + e])));");
    w.line("#pragma unroll");
    w.line("for (int o = 4; o < 32; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));");
    w.line("if (lane < 4) amax[warp * BLOCK_N + 8 * j + 2 * lane + e] = m;");
    w.close("");
    w.close("");
}

/// The sm_90a engine: wgmma issued by the consumer warpgroup into registers.
pub(super) struct Sm90<'a> {
    pub task: &'a CheckedTask,
    pub p: &'a LinearMath,
}

impl Engine for Sm90<'_> {
    fn isa(&self) -> &'static str {
        "mpkc::sm90"
    }

    fn scales_read_by_async_proxy(&self) -> bool {
        false
    }

    fn step(&self, w: &mut Writer, _role: RoleKind, step: &Step) {
        let ir = &self.task.ir;
        match step {
            Step::StageMma {
                w: wg, a, sf, mma, ..
            } => stage_mma(w, ir, (*wg, *a, *sf), *mma),
            Step::EpilogueLoads { .. } => epilogue::emit_loads(w, self.task, self.p),
            Step::Epilogue { .. } => epilogue::emit(w, self.task, self.p, &FRAGMENT),
            Step::PageRelease => release_used_pages(w, "wgmma"),
            Step::ConsumerPageRelease => consumer_page_release(w),
            // No TMEM on sm_90a: the lowering places none of these.
            Step::TmemAlloc { .. }
            | Step::TmemDealloc
            | Step::AccLoad { .. }
            | Step::PageAcquire
            | Step::PagesFence
            | Step::PageFreeUnused
            | Step::DepWait
            | Step::RouteRead
            | Step::SyncWarp
            | Step::Body => {}
        }
    }

    fn before_k_loop(&self, w: &mut Writer, role: RoleKind) {
        if role == RoleKind::Consumer {
            w.comment("Not unrolled: ptxas serialises the wgmmas of a fully unrolled K loop whose barrier waits");
            w.comment("branch (advisory C7519, \"compiler-inserted WG.AR in divergent path\"); a stage's 16 wgmmas");
            w.comment("are unrolled inside it.");
            w.line("#pragma unroll 1");
        }
    }
}

/// The consumer's release of the used pages after its K loop ([`Step::ConsumerPageRelease`]),
/// after the program's sync of the 128 threads on the runtime's page barrier (id 8, contract doc
/// §3.4: the consumer page claim and suffix, which this task's registration leaves off): warp
/// 0's lanes release each used page once, as the runtime's consumer suffix would (I-P1, I-P3),
/// from `used_pages`, the page mask the consumer computed before its K loop.
fn consumer_page_release(w: &mut Writer) {
    w.comment("Every consumer thread waited its last wgmma: no SMEM read of the task is left (the epilogue");
    w.comment("reads registers and global memory). Release the used pages now, so that the next task's loader");
    w.comment("prefix, which waits every page, runs during this epilogue (I-P1, I-P3).");
    w.open("if (warp == 0)");
    w.line("#ifdef MPKC_BENCH_TIMELINE");
    w.line(
        "mpkc_bench_phase(0, instruction_index, 3);  // mpkc bench --timeline: the K loop's end",
    );
    w.line("#endif");
    w.line("if (lane < MAX_SMEM_PAGES_PER_TASK && (used_pages >> lane & 1u)) mpkc::rt::finish_page(runtime_smem, lane);");
    w.close("");
}

/// The stage's wgmma of both m64 halves by the warpgroup, waited, then (fp8) the block's scales
/// applied in f32; the stage is free for this thread afterwards.
fn stage_mma(
    w: &mut Writer,
    ir: &crate::ir::TaskIr,
    (wg, a, sf): (usize, usize, Option<usize>),
    mma: Option<MmaShape>,
) {
    let (w0, a0) = (region_base(ir, wg), region_base(ir, a));
    if let Some(m) = mma {
        w.line(format!("static_assert((layout::Tiles::BLOCK_M + {} - 1) / {} * layout::Tiles::MMAS_PER_STAGE == {}, \"the stage issues the role program's {} x m{}n{}k{}\");", m.m, m.m, m.count, m.count, m.m, m.n, m.k));
    }
    w.line(format!(
        "uint64_t const w_desc = smem_desc(smem + task_desc->smem_region_offset({w0} + stage));"
    ));
    w.line(format!(
        "uint64_t const a_desc = smem_desc(smem + task_desc->smem_region_offset({a0} + stage));"
    ));
    let target = if sf.is_some() { "blk" } else { "acc" };
    w.line("mpkc::sm90::wgmma_fence();");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < layout::Tiles::MMAS_PER_STAGE; ++j)");
    w.line("uint64_t const ab = layout::Sm90::a_mma(a_desc, j);");
    w.line("#pragma unroll");
    w.open("for (int h = 0; h < HALVES; ++h)");
    w.line("uint64_t const wa = layout::Sm90::w_mma(w_desc, h, j);");
    if sf.is_some() {
        w.line("wgmma(blk[h], wa, ab, j > 0);");
    } else {
        w.line("wgmma(acc[h], wa, ab, true);");
    }
    w.close("");
    w.close("");
    w.line("mpkc::sm90::wgmma_commit_group();");
    w.line("mpkc::sm90::wgmma_wait_group<0>();");
    w.line("#pragma unroll");
    w.line(format!(
        "for (int h = 0; h < HALVES; ++h) mpkc::sm90::fence_registers({target}[h]);"
    ));
    if let Some(sf) = sf {
        let sf0 = region_base(ir, sf);
        w.comment("The stage's UE8M0 scale bytes as the loader staged them for tcgen05 (layout::Scales, one function");
        w.comment("for both targets): the weight block's at row 0, token n's at its B row (2^(byte - 127)); applied");
        w.comment("in f32 outside the MMA.");
        w.line(format!("uint8_t const *const sf = reinterpret_cast<uint8_t const *>(smem + task_desc->smem_region_offset({sf0} + stage));"));
        w.line("float const w_scale = __uint_as_float(static_cast<uint32_t>(sf[layout::Scales::a_byte(0, 0)]) << 23);");
        w.line("#pragma unroll");
        w.open("for (int i = 0; i < ACC_REGS; ++i)");
        w.line("int const n = layout::Sm90::acc_col(lane, i);");
        w.line("float const s = w_scale * __uint_as_float(static_cast<uint32_t>(sf[layout::Scales::b_byte(static_cast<uint32_t>(n), 0)]) << 23);");
        w.line("acc[0][i] = fmaf(blk[0][i], s, acc[0][i]);");
        w.line("acc[1][i] = fmaf(blk[1][i], s, acc[1][i]);");
        w.close("");
    }
    w.comment("This thread is done with the stage (its wgmma completed, its scale reads done): one of the 128");
    w.comment("arrivals that free it (the tcgen05.commit's single arrival on sm_100a).");
}

/// Launcher (W5) without TMEM: its operations of the sm_90a program (re-init, `tmem_ready`, which
/// orders that re-init before any consumer arrival, contract doc §2.4; then the wait on
/// `consumer_done`, and after it the lane-parallel release of the used pages, I-P1, I-P3, where
/// the consumer does not release them after its K loop).
pub(super) fn launcher(w: &mut Writer, e: &Sm90<'_>, prog: &RoleProgram) {
    w.comment("Launcher (W5): on sm_90a the consumer warpgroup issues the MMAs; the launcher keeps the barrier");
    if prog.page_releaser() == Some(RoleKind::Launcher) {
        w.comment("re-init, the tmem_ready handshake and the page release after consumer_done.");
    } else {
        w.comment("re-init, the tmem_ready handshake and the wait on consumer_done (the consumer releases the");
        w.comment("pages after its K loop).");
    }
    w.open(format!(
        "__device__ __noinline__ void launcher({ROLE_PARAMS})"
    ));
    w.line("(void)runtime_config;");
    w.line("(void)iter_num;");
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

/// Consumer (W0-3): its operations of the sm_90a program: per stage the wgmma of both m64 halves,
/// waited, the stage freed; then the epilogue from its registers and consumer_done.
pub(super) fn consumer(w: &mut Writer, e: &Sm90<'_>, prog: &RoleProgram) {
    let p = e.p;
    let fp8 = matches!(p.operands, Operands::Fp8BlockScale { .. });
    w.comment(format!(
        "Consumer (W0-3): wgmma of the {}x{} tile into registers, then the `{}` epilogue.",
        p.block_m,
        p.block_n,
        p.epilogue.as_str()
    ));
    w.comment("Fragment of wgmma m64nN (f32): thread (warp w, lane l) holds in d[i] of half h (weight rows");
    w.comment(
        "64h..64h+63) row layout::Sm90::acc_row(h, w, l, i) and token layout::Sm90::acc_col(l, i).",
    );
    // Inlined: the wgmma pipeline must not cross a function boundary (ptxas C7510, see Linkage).
    // Not under `setmaxnreg`: inlined, the worker's entry spills (36 B at consumer 232 / helpers
    // 40, ptxas 13.5), so the consumer stays a call there and `mpkc build` reports the serialised
    // wgmmas (W0702).
    let linkage = if e.task.ir.setmaxnreg.is_some() {
        Linkage::Call
    } else {
        Linkage::Inline
    };
    open_consumer(w, linkage);
    if has_step(prog, RoleKind::Consumer, &Step::ConsumerPageRelease) {
        w.comment("The pages this task uses, for their release after the K loop: a warp collective, computed");
        w.comment("here, before the loop, where it costs the next task's loader nothing.");
        w.line("uint32_t const used_pages = mpkc::used_page_mask(task_desc);");
    }
    w.line("float acc[HALVES][ACC_REGS];");
    w.line("#pragma unroll");
    w.line("for (int h = 0; h < HALVES; ++h)");
    w.line("  #pragma unroll");
    w.line("  for (int i = 0; i < ACC_REGS; ++i) acc[h][i] = 0.f;");
    if fp8 {
        w.line("float blk[HALVES][ACC_REGS];  // one 128-element K block, before its scales");
    }
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
