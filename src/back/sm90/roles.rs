//! The launcher (W5) and consumer (W0-3) of the sm_90a pipeline; the loader is shared with sm_100a.

use crate::back::consumer::ROLE_PARAMS;
use crate::back::pipeline::{open_consumer, region_base, ring_group, wait_stage_full, Sems};
use crate::back::writer::Writer;
use crate::valid::{CheckedTask, Epilogue, Operands, PipelineShape};

/// Launcher (W5) without TMEM: re-init, `tmem_ready` (the re-init is done), then after
/// `consumer_done` the lane-parallel release of the used pages (I-P1, I-P3).
pub(super) fn launcher(w: &mut Writer, _task: &CheckedTask, s: &Sems) {
    w.comment("Launcher (W5): on sm_90a the consumer warpgroup issues the MMAs; the launcher keeps the barrier");
    w.comment("re-init, the tmem_ready handshake and the page release after consumer_done.");
    w.open(format!(
        "__device__ __noinline__ void launcher({ROLE_PARAMS})"
    ));
    w.line("(void)runtime_config;");
    w.line("(void)iter_num;");
    w.line("uint64_t *const sem = mpkc::rt::op_sem_base(runtime_smem, instruction_index);");
    w.comment("Re-init before anything that lets the consumers arrive (consumer_done is load-bearing, §2.4).");
    w.line("if (mpkc::lane_id() == 0) reinit_launcher(sem);");
    w.line("__syncwarp();");
    w.comment("No TMEM to allocate: tmem_ready tells the consumers the launcher's barriers are re-initialised.");
    w.line(format!(
        "if (mpkc::lane_id() == 0) mpkc::rt::mbar_arrive(&sem[{}]);",
        s.tmem_ready
    ));
    w.line("__syncwarp();");
    w.line(format!(
        "mpkc::rt::mbar_wait(&sem[{}], 0, \"{}\", 0);",
        s.consumer_done,
        s.consumer_done.to_ascii_lowercase()
    ));
    w.comment("Every wgmma completed and the consumers are done: release each used page once (I-P1, I-P3).");
    w.line("int const page = mpkc::lane_id();");
    w.line("if (page < MAX_SMEM_PAGES_PER_TASK && mpkc::rt::task_uses_page(task_desc, page)) mpkc::rt::finish_page(runtime_smem, page);");
    w.close("");
    w.blank();
}

/// Consumer (W0-3): the warpgroup waits each stage, issues the wgmma of both m64 halves, waits
/// them, frees the stage, and runs the epilogue from its registers.
pub(super) fn consumer(w: &mut Writer, task: &CheckedTask, p: &PipelineShape, s: &Sems) {
    let ir = &task.ir;
    let w0 = region_base(ir, ring_group(ir, p.w_ring));
    let a0 = region_base(ir, ring_group(ir, p.a_ring));
    let scratch = region_base(ir, p.scratch);
    let fp8 = match &p.operands {
        Operands::Fp8BlockScale { sf_ring, .. } => Some(region_base(ir, ring_group(ir, *sf_ring))),
        Operands::Bf16 => None,
    };
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
    open_consumer(w, s);
    w.line("float acc[2][ACC_REGS];");
    w.line("#pragma unroll");
    w.line("for (int h = 0; h < 2; ++h)");
    w.line("  #pragma unroll");
    w.line("  for (int i = 0; i < ACC_REGS; ++i) acc[h][i] = 0.f;");
    if fp8.is_some() {
        w.line("float blk[2][ACC_REGS];  // one 128-element K block, before its scales");
    }
    w.open("for (int it = 0; it < K_ITERS; ++it)");
    w.line("int const stage = it % NUM_STAGES;");
    w.line(
        "uint32_t const full_parity = (it / NUM_STAGES) & 1;  // consumer cursor starts at phase 0",
    );
    wait_stage_full(w, s, fp8.is_some());
    w.line(format!(
        "uint64_t const w_desc = smem_desc(smem + task_desc->smem_region_offset({w0} + stage));"
    ));
    w.line(format!(
        "uint64_t const a_desc = smem_desc(smem + task_desc->smem_region_offset({a0} + stage));"
    ));
    let target = if fp8.is_some() { "blk" } else { "acc" };
    w.line("mpkc::sm90::wgmma_fence();");
    w.line("#pragma unroll");
    w.open("for (int j = 0; j < layout::Tiles::MMAS_PER_STAGE; ++j)");
    w.line("uint64_t const ab = layout::Sm90::a_mma(a_desc, j);");
    w.line("#pragma unroll");
    w.open("for (int h = 0; h < 2; ++h)");
    w.line("uint64_t const wa = layout::Sm90::w_mma(w_desc, h, j);");
    if fp8.is_some() {
        w.line("wgmma(blk[h], wa, ab, j > 0);");
    } else {
        w.line("wgmma(acc[h], wa, ab, true);");
    }
    w.close("");
    w.close("");
    w.line("mpkc::sm90::wgmma_commit_group();");
    w.line("mpkc::sm90::wgmma_wait_group<0>();");
    w.line(format!("mpkc::sm90::fence_registers({target}[0]);"));
    w.line(format!("mpkc::sm90::fence_registers({target}[1]);"));
    if let Some(sf0) = &fp8 {
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
    w.line(format!(
        "mpkc::rt::mbar_arrive(&sem[{} + stage]);",
        s.ring_empty
    ));
    w.close("");
    w.line("int const tile = task_desc->task_metadata.task_offset % NUM_TILES;");
    let out = &ir.tensors[p.output];
    let ct = out.dtype.cuda_type();
    w.line(format!(
        "{ct} *const out = static_cast<{ct} *>(task_desc->output_ptrs[OUT_C]);  // `{}`",
        out.name
    ));
    if p.epilogue == Epilogue::QuantE4m3 {
        quant_amax(w, task, p, &scratch);
    }
    match p.epilogue {
        Epilogue::ResidualAdd => {
            let r = p
                .residual
                .map(|h| ir.tensors[h].name.clone())
                .unwrap_or_default();
            w.line(format!("__nv_bfloat16 const *const res = static_cast<__nv_bfloat16 const *>(task_desc->input_ptrs[IN_R]);  // `{r}`"));
        }
        Epilogue::SplitKF32 => {
            w.line("int const split = task_desc->task_metadata.task_offset / NUM_TILES;");
        }
        _ => {}
    }
    w.line("#pragma unroll");
    w.open("for (int h = 0; h < 2; ++h)");
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < ACC_REGS; ++i)");
    w.line("int const row = tile * BLOCK_M + layout::Sm90::acc_row(h, warp, lane, i);  // output column");
    w.line("int const n = layout::Sm90::acc_col(lane, i);  // token");
    w.line("if (n >= M_REAL) continue;");
    match p.epilogue {
        Epilogue::StoreBf16 => {
            w.line("out[static_cast<int64_t>(n) * N + row] = __float2bfloat16_rn(acc[h][i]);")
        }
        Epilogue::ResidualAdd => {
            w.comment(
                "The accumulator is rounded to bf16 before the add, as MPK's residual linear does.",
            );
            w.line("int64_t const at = static_cast<int64_t>(n) * N + row;");
            w.line("out[at] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(acc[h][i])) + __bfloat162float(res[at]));");
        }
        Epilogue::SplitKF32 => {
            w.comment("f32 partial of this split: [SPLITS, M_REAL, N]; the generated reduce task sums them.");
            w.line("out[(static_cast<int64_t>(split) * M_REAL + n) * N + row] = acc[h][i];");
        }
        Epilogue::QuantE4m3 => w.line(
            "out[static_cast<int64_t>(n) * N + row] = __nv_fp8_e4m3(acc[h][i] / token_scale(n));",
        ),
    }
    w.close("");
    w.close("");
    w.line(format!(
        "mpkc::rt::mbar_arrive(&sem[{}]);  // done with the task's SMEM (128 arrivals)",
        s.consumer_done
    ));
    w.close("");
    w.blank();
}

/// The `quant e4m3` amax: per token over the tile's 128 rows, lanes with equal `l % 4` hold the
/// same tokens, then 4 warp maxima per token meet in the scratch region after a named barrier.
fn quant_amax(w: &mut Writer, task: &CheckedTask, p: &PipelineShape, scratch: &str) {
    let ir = &task.ir;
    let (sc, bar) = p.out_scale.unwrap_or((p.output, 1));
    w.comment("amax per token over the tile's 128 rows: this thread's 4 values per token, then the 8 lanes");
    w.comment(
        "sharing l % 4, then the 4 warps through the scratch region (after the TMEM address slot).",
    );
    w.line(format!("float *const amax = reinterpret_cast<float *>(smem + task_desc->smem_region_offset({scratch}) + 16);"));
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
    w.line(format!("mpkc::named_barrier_sync({bar}, 128);"));
    w.comment("A power-of-two scale with |x / scale| <= 448, the largest e4m3.");
    w.line("auto token_scale = [&](int n) {");
    w.line("  float const m = fmaxf(fmaxf(amax[n], amax[BLOCK_N + n]), fmaxf(amax[2 * BLOCK_N + n], amax[3 * BLOCK_N + n]));");
    w.line("  return m > 0.f ? exp2f(ceilf(log2f(m / 448.f))) : 1.f;");
    w.line("};");
    w.line(format!(
        "float *const scales = static_cast<float *>(task_desc->output_ptrs[{}]);  // `{}`",
        ir.outputs().position(|(x, _)| x == sc).unwrap_or(1),
        ir.tensors[sc].name
    ));
    w.line("if (threadIdx.x == 0)");
    w.line("  for (int n = 0; n < M_REAL; ++n) scales[static_cast<int64_t>(n) * NUM_TILES + tile] = token_scale(n);");
}
