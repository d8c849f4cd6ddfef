//! The role functions of the sm_100a pipeline: loader (W4), launcher (W5), consumer (W0-3).

use crate::back::consumer::ROLE_PARAMS;
use crate::back::epilogue::{self, Fragment};
use crate::back::pipeline::{
    launcher_reinit, open_consumer, open_stage_loop, region_base, release_used_pages, ring_group,
    Sems,
};
use crate::back::writer::Writer;
use crate::valid::{CheckedTask, Operands, PipelineShape};

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

/// Launcher (W5): re-init, TMEM alloc after the first stage landed, tmem_ready, the MMA loop on
/// one elected lane (a commit frees each stage, a commit fills the accumulator), then, after
/// consumer_done, the lane-parallel release of the used pages and the dealloc.
pub(super) fn launcher(w: &mut Writer, task: &CheckedTask, p: &PipelineShape, s: &Sems) {
    let ir = &task.ir;
    let scratch = region_base(ir, p.scratch);
    w.comment("Launcher (W5): TMEM and the tcgen05.mma loop.");
    w.open(format!(
        "__device__ __noinline__ void launcher({ROLE_PARAMS})"
    ));
    w.line("(void)runtime_config;");
    w.line("(void)iter_num;");
    w.line("extern __shared__ __align__(1024) char smem[];");
    w.line("uint64_t *const sem = mpkc::rt::op_sem_base(runtime_smem, instruction_index);");
    launcher_reinit(w);
    w.comment("The first stage landed only after the loader saw every page ready: the scratch page is ours.");
    w.line(format!(
        "mpkc::rt::mbar_wait(&sem[{} + 0], 0, \"{}\", 0);",
        s.w_full,
        s.w_full.to_ascii_lowercase()
    ));
    w.line(format!("uint32_t *const taddr_slot = reinterpret_cast<uint32_t *>(smem + task_desc->smem_region_offset({scratch}));"));
    w.line("mpkc::sm100::tmem_alloc(taddr_slot, TMEM_COLS);");
    w.line("mpkc::sm100::tcgen05_fence_before();");
    w.line("__syncwarp();");
    w.line("uint32_t const taddr = *taddr_slot;  // cached: the scratch page may be released before dealloc");
    w.line(format!(
        "if (mpkc::lane_id() == 0) mpkc::rt::mbar_arrive(&sem[{}]);",
        s.tmem_ready
    ));
    w.open("if (mpkc::sm100::elect_one())");
    w.comment(
        "One tile per task (I-P6): accumulator slot 0, first use, so the producer parity is 1.",
    );
    w.line("int const slot = 0;");
    w.line(format!(
        "mpkc::rt::mbar_wait(&sem[{} + slot], 1, \"{}\", slot);",
        s.acc_empty,
        s.acc_empty.to_ascii_lowercase()
    ));
    w.line("mpkc::sm100::tcgen05_fence_after();");
    w.line("uint32_t const d_tmem = taddr + layout::Sm100::acc_tmem(slot, 0, 0);");
    let fp8 = match &p.operands {
        Operands::Fp8BlockScale { sf_ring, .. } => Some(region_base(ir, ring_group(ir, *sf_ring))),
        Operands::Bf16 => None,
    };
    open_stage_loop(w, task, p, s, &["mpkc::sm100::tcgen05_fence_after();"]);
    if let Some(sf0) = &fp8 {
        w.comment("This stage's scale factors into TMEM (the A block, then one block per 128 tokens; each to");
        w.comment("4 columns of all 128 lanes), ordered before the MMAs.");
        w.line(format!("uint32_t const sf_smem = mpkc::sm100::smem_u32(smem + task_desc->smem_region_offset({sf0} + stage));"));
        w.line("uint32_t const sfa = taddr + layout::Sm100::sfa_tmem(stage);");
        w.line("uint32_t const sfb = taddr + layout::Sm100::sfb_tmem(stage, 0);");
        w.line("mpkc::sm100::tmem_cp_32x128b_warpx4(sfa, layout::Sm100::sf_desc(sf_smem));");
        w.line("#pragma unroll");
        w.line("for (int b = 0; b < layout::Scales::B_BLOCKS; ++b) mpkc::sm100::tmem_cp_32x128b_warpx4(taddr + layout::Sm100::sfb_tmem(stage, b), layout::Sm100::sf_desc(sf_smem + layout::Scales::B_OFFSET + static_cast<uint32_t>(b) * layout::Scales::BLOCK_BYTES));");
    }
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < layout::Tiles::MMAS_PER_STAGE; ++j)");
    w.line("uint64_t const wa = layout::Sm100::w_mma(w_desc, j);");
    w.line("uint64_t const ab = layout::Sm100::a_mma(a_desc, j);");
    if fp8.is_some() {
        w.line("mpkc::sm100::mma_mxf8f6f4_block_scale(d_tmem, wa, ab, layout::Sm100::idesc(j), layout::Sm100::sf_operand(sfa, j), layout::Sm100::sf_operand(sfb, j), it > 0 || j > 0);");
    } else {
        w.line("mpkc::sm100::mma_f16(d_tmem, wa, ab, layout::Sm100::idesc(j), it > 0 || j > 0);");
    }
    w.close("");
    w.comment("Frees the stage once these MMAs have read it.");
    w.line(format!(
        "mpkc::sm100::mma_commit(&sem[{} + stage]);",
        s.ring_empty
    ));
    w.close("");
    w.line(format!(
        "mpkc::sm100::mma_commit(&sem[{} + slot]);",
        s.acc_full
    ));
    w.close("");
    w.comment("Reconverge before lane-parallel work (I-P4).");
    w.line("__syncwarp();");
    w.line(format!(
        "mpkc::rt::mbar_wait(&sem[{}], 0, \"{}\", 0);",
        s.consumer_done,
        s.consumer_done.to_ascii_lowercase()
    ));
    w.line("mpkc::sm100::tcgen05_fence_after();");
    release_used_pages(w, "MMA");
    w.line("mpkc::sm100::tmem_dealloc(taddr, TMEM_COLS);");
    w.close("");
    w.blank();
}

/// Consumer (W0-3): wait tmem_ready and the accumulator, load warp w's 32 TMEM lanes (32w..32w+31,
/// the lane-quarter rule), run the epilogue, free the slot, arrive consumer_done.
pub(super) fn consumer(w: &mut Writer, task: &CheckedTask, p: &PipelineShape, s: &Sems) {
    let ir = &task.ir;
    let scratch = region_base(ir, p.scratch);
    w.comment(format!(
        "Consumer (W0-3): the `{}` epilogue of one {}x{} accumulator tile.",
        p.epilogue.as_str(),
        p.block_m,
        p.block_n
    ));
    open_consumer(w, s);
    w.line("mpkc::sm100::tcgen05_fence_after();");
    w.line(format!("uint32_t const taddr = *reinterpret_cast<uint32_t const *>(smem + task_desc->smem_region_offset({scratch}));"));
    w.line("int const slot = 0;");
    w.line(format!(
        "mpkc::rt::mbar_wait(&sem[{} + slot], 0, \"{}\", slot);",
        s.acc_full,
        s.acc_full.to_ascii_lowercase()
    ));
    w.line("mpkc::sm100::tcgen05_fence_after();");
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
    epilogue::emit(w, task, p, &FRAGMENT);
    w.line("mpkc::sm100::tcgen05_fence_before();");
    w.line(format!(
        "mpkc::rt::mbar_arrive(&sem[{} + slot]);  // the slot is free (128 arrivals)",
        s.acc_empty
    ));
    w.line(format!(
        "mpkc::rt::mbar_arrive(&sem[{}]);  // done with TMEM (128 arrivals)",
        s.consumer_done
    ));
    w.close("");
    w.blank();
}
