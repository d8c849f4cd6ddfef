//! The role functions of the sm_100a pipeline: loader (W4), launcher (W5), consumer (W0-3).

use crate::back::consumer::ROLE_PARAMS;
use crate::back::pipeline::{open_consumer, region_base, ring_group, wait_stage_full, Sems};
use crate::back::writer::Writer;
use crate::valid::{CheckedTask, Epilogue, Operands, PipelineShape};

/// Launcher (W5): re-init, TMEM alloc after the first stage landed, tmem_ready, the MMA loop on
/// one elected lane (a commit frees each stage, a commit fills the accumulator), then, after
/// consumer_done, the lane-parallel release of the used pages and the dealloc.
pub(super) fn launcher(w: &mut Writer, task: &CheckedTask, p: &PipelineShape, s: &Sems) {
    let ir = &task.ir;
    let w0 = region_base(ir, ring_group(ir, p.w_ring));
    let a0 = region_base(ir, ring_group(ir, p.a_ring));
    let scratch = region_base(ir, p.scratch);
    w.comment("Launcher (W5): TMEM and the tcgen05.mma loop.");
    w.open(format!(
        "__device__ __noinline__ void launcher({ROLE_PARAMS})"
    ));
    w.line("(void)runtime_config;");
    w.line("(void)iter_num;");
    w.line("extern __shared__ __align__(1024) char smem[];");
    w.line("uint64_t *const sem = mpkc::rt::op_sem_base(runtime_smem, instruction_index);");
    w.comment("Re-init before anything that lets the consumers arrive (consumer_done is load-bearing, §2.4).");
    w.line("if (mpkc::lane_id() == 0) reinit_launcher(sem);");
    w.line("__syncwarp();");
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
    w.open("for (int it = 0; it < K_ITERS; ++it)");
    w.line("int const stage = it % NUM_STAGES;");
    w.line(
        "uint32_t const full_parity = (it / NUM_STAGES) & 1;  // consumer cursor starts at phase 0",
    );
    let fp8 = match &p.operands {
        Operands::Fp8BlockScale { sf_ring, .. } => Some(region_base(ir, ring_group(ir, *sf_ring))),
        Operands::Bf16 => None,
    };
    wait_stage_full(w, s, fp8.is_some());
    w.line("mpkc::sm100::tcgen05_fence_after();");
    w.line(format!(
        "uint64_t const w_desc = smem_desc(smem + task_desc->smem_region_offset({w0} + stage));"
    ));
    w.line(format!(
        "uint64_t const a_desc = smem_desc(smem + task_desc->smem_region_offset({a0} + stage));"
    ));
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
    w.comment(
        "Every MMA completed and the consumers are done: release each used page once (I-P1, I-P3).",
    );
    w.line("int const page = mpkc::lane_id();");
    w.line("if (page < MAX_SMEM_PAGES_PER_TASK && mpkc::rt::task_uses_page(task_desc, page)) mpkc::rt::finish_page(runtime_smem, page);");
    w.line("mpkc::sm100::tmem_dealloc(taddr, TMEM_COLS);");
    w.close("");
    w.blank();
}

/// Consumer (W0-3): wait tmem_ready and the accumulator, load warp w's 32 TMEM lanes (32w..32w+31,
/// the lane-quarter rule), run the epilogue, free the slot, arrive consumer_done.
pub(super) fn consumer(w: &mut Writer, task: &CheckedTask, p: &PipelineShape, s: &Sems) {
    let ir = &task.ir;
    let scratch = region_base(ir, p.scratch);
    let out = &ir.tensors[p.output];
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
    w.line("int const tile = task_desc->task_metadata.task_offset % NUM_TILES;");
    w.line("int const row = tile * BLOCK_M + layout::Sm100::ld_row(warp, lane);  // output column (weight row)");
    let ct = out.dtype.cuda_type();
    w.line(format!(
        "{ct} *const out = static_cast<{ct} *>(task_desc->output_ptrs[OUT_C]);  // `{}`",
        out.name
    ));
    match p.epilogue {
        Epilogue::StoreBf16 => {
            w.line("#pragma unroll");
            w.line("for (int n = 0; n < BLOCK_N; ++n) if (n < M_REAL) out[static_cast<int64_t>(n) * N + row] = __float2bfloat16_rn(acc[n]);");
        }
        Epilogue::ResidualAdd => {
            let r = p
                .residual
                .map(|h| ir.tensors[h].name.clone())
                .unwrap_or_default();
            w.line(format!("__nv_bfloat16 const *const res = static_cast<__nv_bfloat16 const *>(task_desc->input_ptrs[IN_R]);  // `{r}`"));
            w.comment(
                "The accumulator is rounded to bf16 before the add, as MPK's residual linear does.",
            );
            w.line("#pragma unroll");
            w.open("for (int n = 0; n < BLOCK_N; ++n)");
            w.open("if (n < M_REAL)");
            w.line("int64_t const at = static_cast<int64_t>(n) * N + row;");
            w.line("float const y = __bfloat162float(__float2bfloat16_rn(acc[n])) + __bfloat162float(res[at]);");
            w.line("out[at] = __float2bfloat16_rn(y);");
            w.close("");
            w.close("");
        }
        Epilogue::QuantE4m3 => {
            let (sc, bar) = p.out_scale.unwrap_or((p.output, 1));
            w.comment("amax over the tile's 128 rows for each token: warp shuffles, then 4 partial maxima per token");
            w.comment("through the scratch region (after the TMEM address), one named barrier of the 128 threads.");
            w.line(format!("float *const amax = reinterpret_cast<float *>(smem + task_desc->smem_region_offset({scratch}) + 16);"));
            w.line("#pragma unroll");
            w.open("for (int n = 0; n < BLOCK_N; ++n)");
            w.line("float m = fabsf(acc[n]);");
            w.line("#pragma unroll");
            w.line("for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));");
            w.line("if (lane == 0) amax[warp * BLOCK_N + n] = m;");
            w.close("");
            w.line(format!("mpkc::named_barrier_sync({bar}, 128);"));
            w.line(format!(
                "float *const scales = static_cast<float *>(task_desc->output_ptrs[{}]);  // `{}`",
                ir.outputs().position(|(x, _)| x == sc).unwrap_or(1),
                ir.tensors[sc].name
            ));
            w.line("#pragma unroll");
            w.open("for (int n = 0; n < BLOCK_N; ++n)");
            w.open("if (n < M_REAL)");
            w.line("float const m = fmaxf(fmaxf(amax[n], amax[BLOCK_N + n]), fmaxf(amax[2 * BLOCK_N + n], amax[3 * BLOCK_N + n]));");
            w.comment("A power-of-two scale with |x / scale| <= 448, the largest e4m3.");
            w.line("float const scale = m > 0.f ? exp2f(ceilf(log2f(m / 448.f))) : 1.f;");
            w.line("out[static_cast<int64_t>(n) * N + row] = __nv_fp8_e4m3(acc[n] / scale);");
            w.line("if (warp == 0 && lane == 0) scales[static_cast<int64_t>(n) * NUM_TILES + tile] = scale;");
            w.close("");
            w.close("");
        }
        Epilogue::SplitKF32 => {
            w.line("int const split = task_desc->task_metadata.task_offset / NUM_TILES;");
            w.comment("f32 partial of this split: [SPLITS, M_REAL, N]; the generated reduce task sums them.");
            w.line("#pragma unroll");
            w.line("for (int n = 0; n < BLOCK_N; ++n) if (n < M_REAL) out[(static_cast<int64_t>(split) * M_REAL + n) * N + row] = acc[n];");
        }
    }
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
