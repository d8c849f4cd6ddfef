//! The epilogue both pipeline lowerings share: what the consumer warpgroup (W0-3) does with its
//! accumulator once the tile's MMAs completed — `store bf16`, `residual add`, `split_k f32`,
//! `split_k bf16`, `quant e4m3` — written once, so that `mpkc verify` running the sm_90a lowering on an H200
//! also runs the sm_100a epilogue's code.
//!
//! A lowering states only where its accumulator lives: it emits the fragment helpers of its
//! layout with [`fragment_helpers`] (`FRAG_ELEMS` f32 per thread, and for element `e` the token
//! `frag_token(lane, e)`, the output column `frag_row(tile, warp, lane, e)` and the value
//! `frag_value(acc, e)`), and, for `quant e4m3`, the step that reduces the per-token maxima of its
//! warp ([`Fragment::warp_amax`]); everything else is this module's text, identical on both
//! targets.

use super::pipeline::region_base;
use super::writer::Writer;
use crate::gpu::bench::timeline::{EXTRA, SPLIT_ARRIVED, SPLIT_ISSUED, SPLIT_SUMMED};
use crate::lower::{Epilogue, LinearMath};
use crate::valid::CheckedTask;

/// The accumulator fragment of one consumer thread on one target.
pub(crate) struct Fragment {
    /// What a thread holds, in one comment line per entry.
    pub doc: &'static [&'static str],
    /// The C++ expression of `FRAG_ELEMS` (elements per thread).
    pub elems: &'static str,
    /// The C++ type of the accumulator parameter of `frag_value` (e.g. `float const (&acc)[BLOCK_N]`).
    pub acc_param: &'static str,
    /// Body lines of `frag_row(tile, warp, lane, e)` (ending in a `return`).
    pub row: &'static [&'static str],
    /// Body lines of `frag_token(lane, e)`.
    pub token: &'static [&'static str],
    /// Body lines of `frag_value(acc, e)`.
    pub value: &'static [&'static str],
    /// Emits the warp's maxima of |acc| per token into `amax[warp * BLOCK_N + n]` (`quant e4m3`);
    /// the named barrier that publishes them follows.
    pub warp_amax: fn(&mut Writer),
}

/// Emits `FRAG_ELEMS` and the three force-inlined fragment helpers of `f`.
pub(crate) fn fragment_helpers(w: &mut Writer, f: &Fragment) {
    for d in f.doc {
        w.comment(*d);
    }
    w.line(format!(
        "constexpr int FRAG_ELEMS = {};  // accumulator elements per consumer thread",
        f.elems
    ));
    let helper = |w: &mut Writer, head: String, body: &[&str]| {
        w.open(format!("__device__ __forceinline__ {head}"));
        for l in body {
            w.line(*l);
        }
        w.close("");
    };
    w.comment("Output column (weight row) of element `e` of tile `tile`'s fragment.");
    helper(
        w,
        "int frag_row(int tile, int warp, int lane, int e)".to_string(),
        f.row,
    );
    w.comment("Token (output row) of element `e`.");
    helper(w, "int frag_token(int lane, int e)".to_string(), f.token);
    w.comment("The f32 accumulator value of element `e`.");
    helper(
        w,
        format!("float frag_value({}, int e)", f.acc_param),
        f.value,
    );
    w.blank();
}

/// The contract's epilogue map (`body cuda` in a pipeline, docs/language.md "Epilogue map"), if
/// it has one: `epilogue_map(acc, n, row)`, the f32 value the epilogue rounds and stores for the
/// f32 accumulator `acc` of output element (token `n`, output column `row`). nvcc reports errors
/// in the contract's own lines.
pub(crate) fn map_function(
    w: &mut Writer,
    task: &CheckedTask,
    p: &LinearMath,
    info: &super::banner::ContractInfo,
) {
    let Some(crate::ir::BodyIr::Cuda {
        code, code_span, ..
    }) = task.ir.body.as_ref().filter(|_| p.map)
    else {
        return;
    };
    w.comment("The contract's epilogue map: the f32 value stored (rounded to bf16) for the f32 accumulator");
    w.comment("`acc` of output element (token `n`, output column `row`).");
    w.open("__device__ __forceinline__ float epilogue_map(float acc, int n, int row)");
    w.line("(void)acc;");
    w.line("(void)n;");
    w.line("(void)row;");
    super::banner::contract_block(w, info, code, *code_span, &task.ir.unit_name());
    w.blank();
}

/// The f32 value the epilogue stores for element `e`: the accumulator, or the contract's map of
/// it.
fn value(p: &LinearMath) -> &'static str {
    if p.map {
        "epilogue_map(frag_value(acc, e), n, row)"
    } else {
        "frag_value(acc, e)"
    }
}

/// The loop over this thread's fragment, `n` and `row` of element `e` defined; the caller
/// writes the body and closes the loop.
fn open_fragment_loop(w: &mut Writer) {
    w.line("#pragma unroll");
    w.open("for (int e = 0; e < FRAG_ELEMS; ++e)");
    w.line("int const n = frag_token(lane, e);  // token");
    w.line("int const row = frag_row(tile, warp, lane, e);  // output column");
}

/// The tile and, for a token count decided at run time, this step's count: the first lines of
/// the consumer's epilogue work (the preloaded residual's or the epilogue's). Returns the C++
/// name of the token count.
fn tile_and_tokens(w: &mut Writer, task: &CheckedTask) -> &'static str {
    w.line("int const tile = task_desc->task_metadata.task_offset % NUM_TILES;");
    // The token count of this step: the compile-time M_REAL, or (`= runtime`, docs/runtime-m.md)
    // the runtime's count clamped to M_REAL, the maximum the tensor maps and buffers are built for.
    // Rows at or past it are loaded by TMA (the buffers hold M_REAL rows) into MMA columns that
    // no other column reads (swap-AB: one token per column) and are never stored.
    if task.ir.runtime_tokens().is_some() {
        w.line("int const m_tokens = mpkc::runtime_tokens(runtime_config, M_REAL);  // this step's tokens, at most M_REAL");
    }
    tokens(task)
}

/// The C++ name of the step's token count that [`tile_and_tokens`] defines.
fn tokens(task: &CheckedTask) -> &'static str {
    if task.ir.runtime_tokens().is_some() {
        "m_tokens"
    } else {
        "M_REAL"
    }
}

/// The role program's `EpilogueLoads` step ([`LinearMath::preloads_residual`]): the consumer's
/// residual elements loaded into `resid[FRAG_ELEMS]` before the accumulator is waited, so that
/// their round trip overlaps the K loop. Defines `tile` (and `m_tokens`) for the epilogue.
/// `warp` and `lane` are in scope.
pub(crate) fn emit_loads(w: &mut Writer, task: &CheckedTask, p: &LinearMath) {
    let m = tile_and_tokens(w, task);
    let r = p
        .residual
        .map(|h| task.ir.tensors[h].name.clone())
        .unwrap_or_default();
    w.line(format!("__nv_bfloat16 const *const res = static_cast<__nv_bfloat16 const *>(task_desc->input_ptrs[IN_R]);  // `{r}`, an activation: coherent loads"));
    w.comment(
        "The residual is loaded before the K loop (it depends only on the task's dependency, which",
    );
    w.comment("the runtime's prefix waited): the loads' round trip overlaps the stages instead of following");
    w.comment("the last one. Every load also precedes the first output store, as it must: `out` may alias");
    w.comment("`res` (an in-place residual stream), and element e of `out` reads only element e of `res`.");
    w.line("__nv_bfloat16 resid[FRAG_ELEMS];");
    open_fragment_loop(w);
    w.line(format!(
        "resid[e] = n < {m} && row < N ? res[static_cast<int64_t>(n) * N + row] : __float2bfloat16_rn(0.f);"
    ));
    w.close("");
}

/// The epilogue of the consumer role after its accumulator `acc` is complete (in registers on
/// sm_90a, loaded from TMEM on sm_100a): the output pointer, then the contract's epilogue over
/// the fragment of `f`. `warp`, `lane`, `smem` and `acc` are in scope, and `tile` and `resid` where
/// the program preloaded the residual ([`emit_loads`]).
pub(crate) fn emit(w: &mut Writer, task: &CheckedTask, p: &LinearMath, f: &Fragment) {
    let ir = &task.ir;
    let out = &ir.tensors[p.output];
    let ct = out.dtype.cuda_type();
    // A preloaded residual's step defined `tile` and the token count already.
    let m = if p.preloads_residual() {
        tokens(task)
    } else {
        tile_and_tokens(w, task)
    };
    w.line(format!(
        "{ct} *const out = static_cast<{ct} *>(task_desc->output_ptrs[OUT_C]);  // `{}`",
        out.name
    ));
    if p.route.is_some() {
        routed(w, task, p);
        return;
    }
    match p.epilogue {
        Epilogue::StoreBf16 => {
            open_fragment_loop(w);
            w.line(format!("if (n < {m} && row < N) out[static_cast<int64_t>(n) * N + row] = __float2bfloat16_rn({});", value(p)));
            w.close("");
        }
        Epilogue::ResidualAdd => {
            // The residual is in `resid`, loaded by the program's EpilogueLoads step.
            w.comment(
                "The accumulator is rounded to bf16 before the add, as MPK's residual linear does.",
            );
            open_fragment_loop(w);
            w.line(format!("if (n < {m} && row < N) out[static_cast<int64_t>(n) * N + row] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn({})) + __bfloat162float(resid[e]));", value(p)));
            w.close("");
        }
        Epilogue::SplitKF32 => {
            w.line("int const split = task_desc->task_metadata.task_offset / NUM_TILES;");
            store_partials(
                w,
                "out",
                m,
                "f32 partial of this split: [SPLITS, M_REAL, N]; the generated reduce task sums them.",
            );
        }
        Epilogue::SplitKBf16 => split_sum(w, task, p, m),
        Epilogue::SplitKAtomic => split_atomic(w, task, p, m),
        Epilogue::QuantE4m3 => quant_e4m3(w, task, p, f, m),
    }
}

/// The store of this split's f32 partials of the fragment into `dst` ([SPLITS, M_REAL, N],
/// `split` in scope), after the comment `what`: both split-K epilogues. `m`: the C++ name of the
/// step's token count.
fn store_partials(w: &mut Writer, dst: &str, m: &str, what: &str) {
    w.comment(what);
    open_fragment_loop(w);
    w.line(format!("if (n < {m} && row < N) {dst}[(static_cast<int64_t>(split) * M_REAL + n) * N + row] = frag_value(acc, e);"));
    w.close("");
}

/// `split_k bf16` ([`crate::lower::SplitSum`]): this split's f32 partials, the tile's arrival on
/// its counter at the `with` barrier, and, in the last split to arrive, the sum of the tile's
/// partials in split order into the bf16 output and the counter's reset. `m`: the C++ name of the
/// step's token count.
fn split_sum(w: &mut Writer, task: &CheckedTask, p: &LinearMath, m: &str) {
    let Some(s) = p.split_sum else { return };
    let ir = &task.ir;
    let bar = s.barrier;
    w.line("int const split = task_desc->task_metadata.task_offset / NUM_TILES;");
    w.line(format!(
        "float *const part = static_cast<float *>(task_desc->output_ptrs[OUT_P]);  // `{}`",
        ir.tensors[s.partials].name
    ));
    w.line(format!(
        "int *const counters = static_cast<int *>(task_desc->output_ptrs[OUT_T]);  // `{}`",
        ir.tensors[s.counters].name
    ));
    store_partials(
        w,
        "part",
        m,
        "This split's f32 partials: [SPLITS, M_REAL, N].",
    );
    tile_arrival(w, bar);
    w.comment("The tile's [tokens x BLOCK_M] sums, element j = token * BLOCK_M + r for r < BLOCK_M, in groups");
    w.comment("of kVec consecutive rows (4 where N is a multiple of 4: every group is 16-byte aligned in P and");
    w.comment("wholly below or above N; else 1), thread t taking groups t, t + 128, ... (a warp's loads cover");
    w.comment("32 kVec consecutive rows). Each element adds its SPLITS partials in split order (0, 1, ...; a");
    w.comment("padding 0.f adds nothing): the same bits whichever split is last. kLoads loads in flight per");
    w.comment("thread (16 of 16 bytes, or 32 of 4): kSplitBatch splits of kElemBatch groups are loaded before");
    w.comment("any is added. L2 loads (ld.global.cg): other SMs wrote them. With kVec 4, P and Y must start 16-");
    w.comment("and 8-byte aligned: whole allocations are, and a Y the next task reads through TMA must be 16-byte");
    w.comment("aligned anyway (cuTensorMapEncodeTiled).");
    w.line("constexpr int kVec = N % 4 == 0 ? 4 : 1;");
    w.line("static_assert(BLOCK_M % kVec == 0, \"a group of rows never spans two tokens\");");
    w.line("constexpr int kLoads = kVec == 4 ? 16 : 32;");
    w.line("constexpr int kSplitBatch = SPLITS < kLoads ? SPLITS : kLoads;");
    w.line("constexpr int kElemBatch = kLoads / kSplitBatch;");
    w.line(format!("int const elems = {m} * BLOCK_M;"));
    w.line("#pragma unroll 1");
    w.open("for (int g0 = threadIdx.x; g0 * kVec < elems; g0 += 128 * kElemBatch)");
    w.line("float sum[kElemBatch][kVec];");
    w.line("#pragma unroll");
    w.line("for (int i = 0; i < kElemBatch; ++i)");
    w.line("  #pragma unroll");
    w.line("  for (int c = 0; c < kVec; ++c) sum[i][c] = 0.f;");
    w.line("#pragma unroll 1");
    w.open("for (int s0 = 0; s0 < SPLITS; s0 += kSplitBatch)");
    w.line("float v[kElemBatch][kSplitBatch][kVec];");
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < kElemBatch; ++i)");
    w.line("int const j = (g0 + 128 * i) * kVec;");
    w.line("int const row = tile * BLOCK_M + j % BLOCK_M;  // output column of the group's first element");
    w.line("bool const ok = j < elems && row < N;");
    w.line("float const *const src = part + static_cast<int64_t>(j / BLOCK_M) * N + row;  // split 0's group");
    w.line("#pragma unroll");
    w.line("for (int b = 0; b < kSplitBatch; ++b) mpkc::ldcg_f32<kVec>(v[i][b], src + static_cast<int64_t>(s0 + b) * M_REAL * N, ok && s0 + b < SPLITS);");
    w.close("");
    w.line("#pragma unroll");
    w.line("for (int i = 0; i < kElemBatch; ++i)");
    w.line("  #pragma unroll");
    w.line("  for (int b = 0; b < kSplitBatch; ++b)");
    w.line("    #pragma unroll");
    w.line("    for (int c = 0; c < kVec; ++c) sum[i][c] += v[i][b][c];");
    w.close("");
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < kElemBatch; ++i)");
    w.line("int const j = (g0 + 128 * i) * kVec;");
    w.line("int const row = tile * BLOCK_M + j % BLOCK_M;");
    w.line("if (j < elems && row < N) mpkc::st_bf16<kVec>(out + static_cast<int64_t>(j / BLOCK_M) * N + row, sum[i]);");
    w.close("");
    w.close("");
    w.comment("Zero for the next run: every split of this tile has arrived.");
    w.line("if (threadIdx.x == 0) counters[tile] = 0;");
    timeline_stamp(w, SPLIT_SUMMED, "the tile's sum stored by its last split");
    w.close("");
}

/// The tile's arrival of both in-task split-K epilogues, at named barrier `bar`: opens the block
/// that the last split of the tile runs (closed by the caller).
fn tile_arrival(w: &mut Writer, bar: i64) {
    w.comment("The tile's arrival: the 128 threads meet at the `with` barrier (each one's stores or adds of its");
    w.comment("sums are ordered before thread 0 at CTA scope), and thread 0 adds one to the tile's counter with a");
    w.comment("GPU-scope acq_rel atomic. Its release is cumulative: it publishes the sums the other threads wrote");
    w.comment("before the barrier (PTX ISA, \"Memory Consistency Model\": release patterns and causality order;");
    w.comment("the pattern of CUTLASS's GenericBarrier::arrive_inc, include/cutlass/barrier.h). The split that");
    w.comment("brings the counter to SPLITS is the last: its atomic acquires every other split's release, and");
    w.comment(
        "bar.red.or orders its 128 threads after thread 0 before they read the sums. One GPU-scope",
    );
    w.comment(
        "fence in one thread, where every thread's __threadfence() waited its own stores twice.",
    );
    timeline_stamp(w, SPLIT_ISSUED, "thread 0's sums issued");
    w.line(format!("mpkc::named_barrier_sync({bar}, 128);"));
    w.line("bool last = false;");
    w.line("if (threadIdx.x == 0) last = mpkc::atomic_add_acq_rel_gpu(&counters[tile], 1) == SPLITS - 1;");
    timeline_stamp(w, SPLIT_ARRIVED, "the tile's counter returned to thread 0");
    w.open(format!("if (mpkc::named_barrier_or({bar}, 128, last))"));
}

/// One of `mpkc bench --timeline`'s stamps of the split-K tail (stdlib/include/mpkc_worker.cuh)
/// by thread 0, in slot `EXTRA` of warp `warp` (the slots `gpu::bench::timeline` reads), compiled
/// only into `--timeline`'s build (`MPKC_BENCH_TIMELINE`).
fn timeline_stamp(w: &mut Writer, warp: usize, what: &str) {
    w.line("#ifdef MPKC_BENCH_TIMELINE");
    w.line(format!(
        "if (threadIdx.x == 0) mpkc_bench_phase({warp}, instruction_index, {EXTRA});  // mpkc bench --timeline: {what}"
    ));
    w.line("#endif");
}

/// `split_k atomic` ([`crate::lower::SplitSum`], the accumulator form): this split's f32 sums
/// added into the accumulator `P` [M_REAL, N] with `red.global.add` (performed in L2, every split
/// at once), the tile's arrival, and, in the last split to arrive, the tile's sums read back
/// through L2, stored as bf16 and zeroed, then the counter's reset. `m`: the C++ name of the
/// step's token count.
fn split_atomic(w: &mut Writer, task: &CheckedTask, p: &LinearMath, m: &str) {
    let Some(s) = p.split_sum else { return };
    let ir = &task.ir;
    let bar = s.barrier;
    w.line(format!(
        "float *const part = static_cast<float *>(task_desc->output_ptrs[OUT_P]);  // `{}`: [M_REAL, N]",
        ir.tensors[s.partials].name
    ));
    w.line(format!(
        "int *const counters = static_cast<int *>(task_desc->output_ptrs[OUT_T]);  // `{}`",
        ir.tensors[s.counters].name
    ));
    w.comment("This split's f32 sums added into the accumulator (red.global.add: performed in L2, the splits'");
    w.comment("adds at once, in whatever order they come: the sum is not bit-reproducible).");
    open_fragment_loop(w);
    w.line(format!("if (n < {m} && row < N) mpkc::red_add_f32(part + static_cast<int64_t>(n) * N + row, frag_value(acc, e));"));
    w.close("");
    tile_arrival(w, bar);
    w.comment("The tile's [tokens x BLOCK_M] sums, element j = token * BLOCK_M + r for r < BLOCK_M, in groups");
    w.comment("of kVec consecutive rows (4 where N is a multiple of 4: every group 16-byte aligned in P and");
    w.comment("wholly below or above N; else 1), thread t taking groups t, t + 128, ...; kLoads loads in flight");
    w.comment("per thread. L2 loads (ld.global.cg): the adds were performed there. Each group is stored as");
    w.comment("bf16, then zeroed for the next run (every split of this tile has added to it).");
    w.line("constexpr int kVec = N % 4 == 0 ? 4 : 1;");
    w.line("static_assert(BLOCK_M % kVec == 0, \"a group of rows never spans two tokens\");");
    w.line("constexpr int kLoads = kVec == 4 ? 8 : 32;");
    w.line(format!("int const elems = {m} * BLOCK_M;"));
    w.line("#pragma unroll 1");
    w.open("for (int g0 = threadIdx.x; g0 * kVec < elems; g0 += 128 * kLoads)");
    w.line("float v[kLoads][kVec];");
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < kLoads; ++i)");
    w.line("int const j = (g0 + 128 * i) * kVec;");
    w.line("int const row = tile * BLOCK_M + j % BLOCK_M;  // output column of the group's first element");
    w.line("mpkc::ldcg_f32<kVec>(v[i], part + static_cast<int64_t>(j / BLOCK_M) * N + row, j < elems && row < N);");
    w.close("");
    w.line("#pragma unroll");
    w.open("for (int i = 0; i < kLoads; ++i)");
    w.line("int const j = (g0 + 128 * i) * kVec;");
    w.line("int const row = tile * BLOCK_M + j % BLOCK_M;");
    w.line("bool const ok = j < elems && row < N;");
    w.line("int64_t const at = static_cast<int64_t>(j / BLOCK_M) * N + row;");
    w.line("if (ok) mpkc::st_bf16<kVec>(out + at, v[i]);");
    w.line("mpkc::stcg_zero_f32<kVec>(part + at, ok);");
    w.close("");
    w.close("");
    w.comment("Zero for the next run: every split of this tile has arrived.");
    w.line("if (threadIdx.x == 0) counters[tile] = 0;");
    timeline_stamp(w, SPLIT_SUMMED, "the tile's sum stored by its last split");
    w.close("");
}

/// `quant e4m3`: the warp maxima per token (the lowering's step) meet in the scratch region after
/// the TMEM address slot; one power-of-two scale per token; thread 0 writes the scales.
/// `m`: the C++ name of the step's token count.
fn quant_e4m3(w: &mut Writer, task: &CheckedTask, p: &LinearMath, f: &Fragment, m: &str) {
    let ir = &task.ir;
    let scratch = region_base(ir, p.scratch);
    let (sc, bar) = p.out_scale.unwrap_or((p.output, 1));
    w.comment("amax per token over the tile's 128 rows: each warp's maxima, then the 4 warps' through the");
    w.comment(
        "scratch region (after the TMEM address slot) and one named barrier of the 128 threads.",
    );
    w.line(format!("float *const amax = reinterpret_cast<float *>(smem + task_desc->smem_region_offset({scratch}) + 16);"));
    (f.warp_amax)(w);
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
    w.line(format!("  for (int n = 0; n < {m}; ++n) scales[static_cast<int64_t>(n) * NUM_TILES + tile] = token_scale(n);"));
    open_fragment_loop(w);
    w.line(format!("if (n < {m}) out[static_cast<int64_t>(n) * N + row] = __nv_fp8_e4m3(frag_value(acc, e) / token_scale(n));"));
    w.close("");
}

/// A routed task's epilogue (`route W by ids …`, `store bf16` or, summing slots, `residual
/// add`): only the task's token column holds its expert's product; it is stored at output row
/// `route` (`token * SLOTS + slot` per slot, the token summing slots).
fn routed(w: &mut Writer, task: &CheckedTask, p: &LinearMath) {
    w.line("int const route = task_desc->task_metadata.task_offset / NUM_TILES;");
    w.line("int const token = route_token(route);");
    w.comment("Every column multiplied the task's expert, but only the task's token column is its token's product.");
    if p.epilogue == Epilogue::ResidualAdd {
        let r = p
            .residual
            .map(|h| task.ir.tensors[h].name.clone())
            .unwrap_or_default();
        w.line(format!("__nv_bfloat16 const *const res = static_cast<__nv_bfloat16 const *>(task_desc->input_ptrs[IN_R]);  // `{r}`"));
        w.comment("Every residual load before the first store (`out` may alias `res`; see the unrouted epilogue).");
        w.line("__nv_bfloat16 r[FRAG_ELEMS];");
        open_fragment_loop(w);
        w.line("r[e] = n == token && row < N ? res[static_cast<int64_t>(route) * N + row] : __float2bfloat16_rn(0.f);");
        w.close("");
        w.comment(
            "The accumulator is rounded to bf16 before the add, as MPK's residual linear does.",
        );
        open_fragment_loop(w);
        w.line("if (n == token && row < N) out[static_cast<int64_t>(route) * N + row] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(frag_value(acc, e))) + __bfloat162float(r[e]));");
        w.close("");
    } else {
        open_fragment_loop(w);
        w.line("if (n == token && row < N) out[static_cast<int64_t>(route) * N + row] = __float2bfloat16_rn(frag_value(acc, e));");
        w.close("");
    }
}
