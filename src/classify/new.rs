//! `mpkc new`: a starting contract of the family [`super::rules::classify`] picks, with the
//! description's shapes and dtypes as params and tensors. The pipeline is, for bf16, the form
//! `mpkc bench` measured fastest at decode shapes (64-row tiles, tile K 256, K split with the
//! in-task sum where the tiles leave SMs idle), for e4m3 the block-scaled house linear; the
//! consumer families get their regions,
//! barrier and granularity and an inline `body cuda` to fill in (Stage 2); a helper gets its
//! tensors and the `body cuda` of its function (emitted into the kernels of the tasks that `use`
//! it). The result checks clean; a
//! description no starting contract fits is a diagnostic on the value that does not fit.

use super::desc::Description;
use super::rules::{classify, letter, Classification};
use crate::back::writer::Writer;
use crate::diag::{codes, Diagnostic};
use crate::ir::{Dtype, Family};
use crate::lower::linear::split_blocks;
use crate::templates::gemv::{K_PER_WARP_LOAD, MIN_RING_BYTES, RING_BYTES};

/// The most tokens a pipeline starting contract takes: tile N 16, or 64 for bf16
/// (examples/linear_bf16_splitk_sum_m64.mpk).
pub const PIPELINE_MAX_M: i64 = 64;

/// Tokens a block-scaled fp8 pipeline takes (the fp8 linear's tile N).
pub const FP8_MAX_M: i64 = 16;

/// KV tokens an attention starting contract stages per step (FlashMLA's page of 64 tokens).
pub const KV_BLOCK: i64 = 64;

/// The starting contract for `d` (classified by the design rules), or why none fits.
///
/// # Errors
/// A diagnostic on the extent or dtype that no starting contract of the family takes (a
/// pipeline's weight dtype other than bf16 or e4m3; more tokens than its tile).
pub fn contract(d: &Description) -> Result<String, Diagnostic> {
    let c = classify(d);
    let mut w = Writer::new();
    header(&mut w, d, &c);
    w.open(format!("task {}", d.name));
    w.line(format!("family {}", c.family.as_str()));
    w.line("targets sm_100a, sm_90a");
    match c.family {
        Family::Pipeline => pipeline(&mut w, d)?,
        Family::Consumer if d.kind.value.gemm_shaped() => consumer_gemv(&mut w, d),
        Family::Consumer => consumer_rows(&mut w, d),
        Family::ConsumerMonolith => attention(&mut w, d),
        Family::ConsumerNoSmem => no_smem(&mut w, d),
        Family::Helper => helper(&mut w, d),
    }
    w.close("");
    Ok(w.finish())
}

fn header(w: &mut Writer, d: &Description, c: &Classification) {
    w.comment(format!(
        "Starting contract written by `mpkc new` for op `{}` (kind `{}`).",
        d.name,
        d.kind.value.as_str()
    ));
    if let Some(n) = &d.note {
        w.comment(n);
    }
    w.comment(format!(
        "Family {} ({}), design.md rule {}: {}.",
        letter(c.family),
        c.family.as_str(),
        c.fired.rule,
        c.fired.why
    ));
}

fn esize(t: Dtype) -> i64 {
    t.bytes()
}

/// `param m` for the tokens: at least the usual 1..=16 range, and the description's M.
fn tokens_param(w: &mut Writer, name: &str, m: i64) {
    w.line(format!("param {name}: int in 1..={} = {m}", m.max(16)));
}

/// The description's `batch` (independent problems of its shape) as the leading extent of a
/// consumer's per-problem tensors: with `batch` > 1, `param batch` and the prefix `"batch, "`
/// its tensors' shapes start with, and the factor `"batch * "` of its task count; with none (or
/// 1), empty strings: the contract of one problem.
fn batch_param(w: &mut Writer, d: &Description) -> (&'static str, &'static str) {
    let b = d.extent_or("batch", 1);
    if b > 1 {
        w.line(format!("param batch: int = {b}"));
        ("batch, ", "batch * ")
    } else {
        ("", "")
    }
}

fn pipeline(w: &mut Writer, d: &Description) -> Result<(), Diagnostic> {
    let (n, k, m) = (
        d.extent_or("N", 1),
        d.extent_or("K", 1),
        d.extent_or("M", 1),
    );
    let wt = d.dtype("weight").unwrap_or(Dtype::Bf16);
    let fp8 = wt == Dtype::E4m3;
    let limit = if fp8 { FP8_MAX_M } else { PIPELINE_MAX_M };
    if m > limit {
        return Err(Diagnostic::error(
            codes::OUT_OF_RANGE,
            format!("a pipeline starting contract takes up to {limit} tokens, and M is {m}"),
        )
        .primary(d.extent_span("M"), format!("more than {limit} tokens"))
        .note("swap-AB puts the tokens on MMA-N: tile N 16, or 64 for bf16 (examples/linear_bf16_splitk_sum_m64.mpk)")
        .help(format!("describe the op at M <= {limit} (the runtime splits larger token counts), or write the contract by hand")));
    }
    let ab = match wt {
        Dtype::Bf16 | Dtype::E4m3 => wt.as_str(),
        other => {
            return Err(Diagnostic::error(
                codes::TYPE_MISMATCH,
                format!(
                    "no pipeline starting contract for {} weights",
                    other.as_str()
                ),
            )
            .primary(d.dtype_span("weight"), "not a tensor-core operand mpkc lowers")
            .help("the pipeline lowers bf16 x bf16 (tcgen05 kind::f16) and block-scaled e4m3 x e4m3 (kind::mxf8f6f4): give one of those"))
        }
    };
    if fp8 && (n % 128 != 0 || k % 128 != 0) {
        return Err(Diagnostic::error(
            codes::LINEAR_LIMITS,
            format!("no block-scaled fp8 starting contract for a [{n} x {k}] weight: N and K must be multiples of 128"),
        )
        .primary(
            d.extent_span(if n % 128 != 0 { "N" } else { "K" }),
            "not a multiple of the 128 x 128 scale block",
        )
        .note("the fp8 pipeline takes no tail tile: one weight scale per 128 x 128 block, and bf16 alone has a tail tile (kv_a's 576 rows, lm_head's 16,160)")
        .help("pad the weight to a multiple of 128, or describe it with `weight = \"bf16\"`"));
    }
    let out = d.dtype("output").unwrap_or(Dtype::Bf16);
    if out != Dtype::Bf16 {
        return Err(Diagnostic::error(
            codes::TYPE_MISMATCH,
            format!(
                "no pipeline starting contract stores a {} output",
                out.as_str()
            ),
        )
        .primary(d.dtype_span("output"), "the epilogue stores bf16")
        .help("give `output = \"bf16\"` (an e4m3 output with per-group scales is stdlib/linear_fp8_qout.mpk's epilogue)"));
    }
    if fp8 {
        fp8_pipeline(w, (n, k, m));
    } else {
        bf16_split_sum(w, (n, k, m), ab);
    }
    if d.extent_or("batch", 1) > 1 {
        w.comment(format!(
            "The description has batch = {}: each problem is one instance of this contract.",
            d.extent_or("batch", 1)
        ));
    }
    Ok(())
}

/// The most K splits a block-scaled fp8 starting contract takes (H200: expert and shared
/// gate+up at 14 of 7, 14 and 28; docs/perf-notes.md, session 20).
pub const FP8_MAX_SPLITS: i64 = 14;

/// The K splits of a block-scaled fp8 starting contract over `tiles` 128-row tiles and
/// `k_blocks` K blocks of 128: the count whose longest split (`ceil(k_blocks / splits)` blocks;
/// splits need not divide them) is shortest with `tiles x splits` within one wave of
/// [`WAVE_SMS`] and at most [`FP8_MAX_SPLITS`], the fewest such. At the DeepSeek-V3 shapes it
/// gives the counts stdlib/linear_fp8_splitk_sum.mpk commits, each measured the faster of two
/// (qkv_a 7, o_proj 2, expert gate+up 14, shared gate+up 14, q_b 4, expert down 2, dense
/// gate+up 3, dense down 2).
pub fn fp8_splits(tiles: i64, k_blocks: i64) -> i64 {
    (1..=FP8_MAX_SPLITS.min(k_blocks))
        .filter(|s| tiles * s <= WAVE_SMS)
        .min_by_key(|s| (split_blocks(k_blocks, *s, 0).1, *s))
        .unwrap_or(1)
}

/// The block-scaled fp8 pipeline (linear_fp8_blockscale's engine: 128-row tiles, one 128 x 128
/// scale block per stage, tile N 16) in the form `mpkc bench` measured fastest at decode shapes
/// (H200, 2026-12-04): where the tiles leave SMs idle, K split across tasks ([`fp8_splits`])
/// with the last split of each tile summing the partials in the task, as
/// stdlib/linear_fp8_splitk_sum.mpk; else the house form with `store bf16`. N and K are
/// multiples of 128 (the caller's E0601).
fn fp8_pipeline(w: &mut Writer, (n, k, m): (i64, i64, i64)) {
    let (tiles, k_blocks) = (n / 128, k / 128);
    let splits = fp8_splits(tiles, k_blocks);
    let split = splits > 1;
    w.blank();
    w.line(format!("param N: int = {n}"));
    w.line(format!("param K: int = {k}"));
    if split {
        w.line(format!("param splits: int in 1..=K / 128 = {splits}"));
    }
    w.line(format!("param m_real: int in 1..=16 = {m}"));
    w.blank();
    w.line("tensor A: e4m3[m_real, K] in activation tma(box [128, 16, 1], swizzle 128B, l2 evict_last)");
    w.line("tensor W: e4m3[N, K] in weight tma(box [128, 128, 1], swizzle 128B, l2 evict_first)");
    w.line("tensor A_scale: f32[m_real, K / 128] in scale of A");
    w.line("tensor W_scale: f32[N / 128, K / 128] in scale of W");
    w.line("tensor C: bf16[m_real, N] out output");
    if split {
        w.line("tensor P: f32[splits, m_real, N] out partials");
        w.line("tensor T: i32[ceil_div(N, tile.M)] out counters");
    }
    w.blank();
    w.line("tile M 128, N 16, K 128");
    w.line("mma tcgen05 mxf8f6f4 (e4m3 x e4m3 -> f32) m128 n16 k32");
    // The scratch's release step: after the stages', as in the stdlib contracts.
    let scratch_release = if split {
        // Three regions a stage and the scratch: at most 5 stages for 16 regions (I-S2).
        let max_stages = 5;
        w.line("tmem cols 64");
        // Split 0 is a longest, the last a shortest (the lowering's split ranges).
        let (long, short) = (
            split_blocks(k_blocks, splits, 0).1,
            split_blocks(k_blocks, splits, splits - 1).1,
        );
        let runs = if short == long {
            format!("each split runs {short} K blocks")
        } else {
            format!("a split runs {short} or {long} K blocks (splits need not divide them)")
        };
        w.comment(format!(
            "{tiles} tiles x {splits} splits = {} tasks for the H200's {WAVE_SMS} SMs; {runs}.",
            tiles * splits
        ));
        w.line(format!(
            "stages min({max_stages}, ceil_div(K, 128 * splits))"
        ));
        max_stages + 2
    } else {
        // A ring deeper than the task's K loop is never filled (W0015).
        let stages = 4.min(super::rules::k_iterations(k));
        w.line("tmem cols 64");
        w.line(format!("stages {stages}"));
        stages + 1
    };
    w.blank();
    w.line("region W[stage] { bytes tile.M * tile.K; align 1024; release stage + 1 }");
    w.line("region A[stage] { bytes tile.N * tile.K; align 1024; pack; release stage + 1 }");
    w.line("region SF[stage] { bytes 1024; align 128; pack; release stage + 1 }");
    w.line(format!(
        "region scratch {{ holds tmem_addr; bytes 16; align 16; pack; release {scratch_release} }}"
    ));
    w.blank();
    rings_and_roles(w, true);
    epilogue_and_granularity(w, split);
}

/// The pipeline's channels, one-shot sems and roles, as the house linear declares them: the W
/// ring owns the empty barriers, the A ring (and with `fp8` the scale-factor ring) shares them.
fn rings_and_roles(w: &mut Writer, fp8: bool) {
    w.line("channel w_ring: W, loader -> launcher (tma W), empty by launcher (commit)");
    w.line("channel a_ring: A, loader -> launcher (tma A), shares_empty w_ring");
    if fp8 {
        w.line("channel sf_ring: SF, loader -> launcher (threads 1), shares_empty w_ring");
    }
    w.line("channel acc: tmem slots 1, launcher -> consumer (commit), empty by consumer (threads 128), reinit launcher");
    w.line("sem tmem_ready: launcher -> consumer (threads 1), count 1, no_reinit");
    w.line(
        "sem consumer_done: consumer -> launcher (threads 128), count 128, reinit launcher, at end",
    );
    w.blank();
    w.line("roles loader W4, launcher W5, consumer W0..W3");
}

/// SMs a starting contract fills in one wave of tasks: the H200's (132; the B200 has 148).
pub const WAVE_SMS: i64 = 132;

/// The most K splits a bf16 starting contract takes at tile N 16 and at tile N 64: past them the
/// last split's sum of the partials (splits x tokens x 64 x 4 bytes per tile) outweighs the wider
/// spread (H200: the router and kv_a at 16 tokens 14 of 14 / 28, at 64 tokens 7 of 2, 4, 7, 14;
/// docs/perf-notes.md, sessions 19-20).
pub const MAX_SPLITS: [(i64, i64); 2] = [(16, 14), (64, 7)];

/// The K splits of a bf16 starting contract with `tile_n` tokens: the most that divide its
/// `k_blocks` K blocks and keep `tiles x splits` within one wave of [`WAVE_SMS`], at most
/// [`MAX_SPLITS`]'s.
pub fn bf16_splits(tiles: i64, k_blocks: i64, tile_n: i64) -> i64 {
    let cap = if tile_n > 16 {
        MAX_SPLITS[1].1
    } else {
        MAX_SPLITS[0].1
    };
    (1..=cap.min(k_blocks))
        .rev()
        .find(|s| k_blocks % s == 0 && tiles * s <= WAVE_SMS)
        .unwrap_or(1)
}

/// The bf16 pipeline in the form `mpkc bench` measured fastest at decode shapes (H200,
/// 2026-12-04, docs/perf-notes.md): 64-row weight tiles (twice the tasks of 128-row ones), tile K
/// 256 where K allows (two-page stage regions, which MPK's remap never moves onto the partial
/// page 13: contract doc §1.4, step 4e), and, where the tiles leave SMs idle, K split across
/// tasks with the last split of each tile summing the partials in the task (`split_k bf16`, as
/// stdlib/linear_bf16_splitk_sum64.mpk and examples/linear_bf16_splitk_sum_m64.mpk).
fn bf16_split_sum(w: &mut Writer, (n, k, m): (i64, i64, i64), ab: &str) {
    let tile_n = if m > 16 { 64 } else { 16 };
    let tk = if k % 256 == 0 { 256 } else { 128 };
    let tiles = (n + 63) / 64;
    let k_blocks = (k / tk).max(1);
    let splits = bf16_splits(tiles, k_blocks, tile_n);
    // Stage regions: 64 x TK weights, TILE_N x TK activations. Two-page regions fit three
    // (tile N 64) or four (tile N 16) stages after the task itself; one-page ones two or five.
    let max_stages = match (tile_n, tk) {
        (64, 256) => 3,
        (64, _) => 2,
        (_, 256) => 4,
        _ => 5,
    };
    let stages = max_stages.min((k_blocks / splits).max(1));
    w.blank();
    w.line(format!("param N: int = {n}"));
    w.line(format!("param K: int = {k}"));
    if splits > 1 {
        w.line(format!("param splits: int in 1..=K / {tk} = {splits}"));
    }
    w.line(format!("param m_real: int in 1..={tile_n} = {m}"));
    w.blank();
    let boxes = tk / 64;
    w.line(format!("tensor A: {ab}[m_real, K] in activation tma(box [64, {tile_n}, {boxes}], swizzle 128B, l2 evict_last)"));
    w.line(format!(
        "tensor W: {ab}[N, K] in weight tma(box [64, 64, {boxes}], swizzle 128B, l2 evict_first)"
    ));
    w.line("tensor C: bf16[m_real, N] out output");
    if splits > 1 {
        w.line("tensor P: f32[splits, m_real, N] out partials");
        w.line("tensor T: i32[ceil_div(N, tile.M)] out counters");
    }
    w.blank();
    w.line(format!("tile M 64, N {tile_n}, K {tk}"));
    w.line(format!(
        "mma tcgen05 f16 ({ab} x {ab} -> f32) m64 n{tile_n} k16"
    ));
    w.line(format!("tmem cols {}", if tile_n == 64 { 64 } else { 32 }));
    if splits > 1 {
        w.comment(format!(
            "{tiles} tiles x {splits} splits = {} tasks for the H200's {WAVE_SMS} SMs.",
            tiles * splits
        ));
        w.line(format!(
            "stages min({max_stages}, ceil_div(K, {tk} * splits))"
        ));
    } else {
        w.line(format!("stages {stages}"));
    }
    w.blank();
    let scratch = format!(
        "region scratch {{ holds tmem_addr; bytes 16; align 16; pack; release {} }}",
        max_stages + 1
    );
    // One-page 16 KB activation stages (tile N 64, tile K 128): after a task that left page 13
    // unused (itself), MPK's remap gives page 13 to the first single-page logical page, which
    // must then be the scratch's (E0107, plan::queue::after_itself).
    let scratch_first = tile_n == 64;
    if scratch_first {
        w.line(scratch.clone());
    }
    w.line("region W[stage] { bytes tile.M * tile.K * 2; align 1024; release stage + 1 }");
    // `pack` only where a stage is below a page: MPK's planner packs nothing larger (W0118).
    let pack = if tile_n * tk * 2 < crate::plan::pages::PAGE_SIZE {
        " pack;"
    } else {
        ""
    };
    w.line(format!(
        "region A[stage] {{ bytes tile.N * tile.K * 2; align 1024;{pack} release stage + 1 }}"
    ));
    if !scratch_first {
        w.line(scratch);
    }
    w.blank();
    rings_and_roles(w, false);
    epilogue_and_granularity(w, splits > 1);
}

/// The epilogue and granularity of a starting pipeline: with `split`, the in-task sum of the K
/// splits at named barrier 3 and a task per tile and split; else `store bf16`, a task per tile.
fn epilogue_and_granularity(w: &mut Writer, split: bool) {
    if split {
        w.line("barrier tile_arrival = named(3, threads 128)");
        w.line("epilogue split_k bf16 with tile_arrival");
        w.line("granularity per_tile(tasks ceil_div(N, tile.M) * splits, tiles_per_task 1)");
    } else {
        w.line("epilogue store bf16");
        w.line("granularity per_tile(tasks ceil_div(N, tile.M), tiles_per_task 1)");
    }
}

/// The body every consumer starting contract gets: the names in scope, to be replaced by the
/// op's code in Stage 2.
/// With `sync`, the body waits on the contract's named barrier `sync` between staging into SMEM
/// and reading what the other warps staged.
fn body(w: &mut Writer, uses: &[&str], sync: bool) {
    w.open("body cuda");
    w.comment("Stage 2: the op's code. In scope: the tensors as typed pointers, the params under");
    w.comment("`params::`, `task_offset`, `kNumTasks`, `kConsumerThreads` and the regions as `buf.<name>`.");
    w.comment("This task's tile, 0 .. kNumTasks - 1: what tells the step's tasks apart (E0406).");
    w.line("int64_t const tile = task_offset;");
    w.line("(void)tile;");
    for u in uses {
        w.line(format!("(void){u};"));
    }
    if sync {
        w.comment("Every consumer warp has staged its part: read the others' from here on.");
        w.line("mpkc::named_barrier_sync(BAR_SYNC, kConsumerThreads);");
    }
    w.close("");
}

fn consumer_gemv(w: &mut Writer, d: &Description) {
    let (n, k, m) = (
        d.extent_or("N", 1),
        d.extent_or("K", 1),
        d.extent_or("M", 1),
    );
    let (it, wt, ot) = dtypes(d);
    let bf16 = [it, wt, ot].iter().all(|t| *t == Dtype::Bf16);
    if bf16
        && !super::rules::batched_gemv(d)
        && k > 0
        && k % K_PER_WARP_LOAD == 0
        // `tokens_param` admits up to max(16, M) tokens; the template takes 32.
        && m.max(16) <= crate::templates::gemv::MAX_ACCUMULATORS
    {
        return gemv_template(w, n, k, m);
    }
    w.blank();
    w.line(format!("param N: int = {n}"));
    w.line(format!("param K: int = {k}"));
    tokens_param(w, "m", m);
    let (b, bt) = batch_param(w, d);
    w.blank();
    w.line(format!("tensor x: {}[{b}m, K] in activation", it.as_str()));
    w.line(format!("tensor W: {}[{b}N, K] in weight", wt.as_str()));
    w.line(format!("tensor y: {}[{b}m, N] out output", ot.as_str()));
    w.blank();
    w.comment("The activation rows, staged once per task and read by every warp.");
    w.line(format!(
        "region x_rows {{ bytes m * K * {}; align 128; pack; release 1 }}",
        esize(it)
    ));
    w.line("barrier sync = named(3, threads 128)");
    if b.is_empty() {
        w.comment("One task per 128 weight rows; nwarps by the wave-quant tie (design.md rule 4).");
    } else {
        w.comment("One task per problem and 128 of its weight rows; nwarps by the wave-quant tie (design.md rule 4).");
    }
    w.line(format!("granularity per_tile(tasks {bt}ceil_div(N, 128))"));
    body(w, &["x", "W", "y", "buf.x_rows"], true);
}

/// The stdlib's consumer GEMV (`body gemv`, stdlib/linear_bf16_gemv.mpk): `rows` weight rows per
/// task, ceil(N / 132), which gives every instance of the stdlib contract its measured count.
fn gemv_template(w: &mut Writer, n: i64, k: i64, m: i64) {
    let rows = crate::ir::exact::ceil_div(n, WAVE_SMS).max(1);
    // The stdlib's 96 KB, or the slots that put every group of a warp in flight where that is
    // less (W0116 past them).
    let r = crate::templates::gemv::ring_use(&crate::templates::gemv::layout(
        n,
        k,
        crate::ir::exact::ceil_div(n, rows),
    ));
    let ring = RING_BYTES.min(r.max_slots * r.slot_bytes);
    w.blank();
    w.line(format!("param N: int = {n}"));
    w.line(format!("param K: int = {k}"));
    w.line(format!(
        "param rows: int in 1..={} = {rows}",
        rows.max(2048)
    ));
    tokens_param(w, "m", m);
    w.line(format!(
        "param ring: int in {}..={RING_BYTES} = {ring}",
        MIN_RING_BYTES.min(ring)
    ));
    w.blank();
    w.line("tensor x: bf16[m, K] in activation");
    w.line("tensor W: bf16[N, K] in weight");
    w.line("tensor y: bf16[m, N] out output");
    w.blank();
    w.comment(
        "The weights' cp.async ring (`ring` bytes: more in flight per SM), the activation rows",
    );
    w.comment("(staged once per task) and one f32 partial per K group, row and token:");
    w.comment("a K of 256 is one K group, whose sums need none (16 * m * rows when K splits).");
    // No `pack`: the ring is two slots of the largest group or more, 32 KB at least, and MPK's
    // planner packs nothing of a page or more (W0118).
    w.line("region w_ring { bytes ring; align 1024; release 1 }");
    w.line("region x_rows { bytes align_up(2 * m * K, 1024); align 1024; pack; release 1 }");
    w.line("region partials { bytes 16; align 16; pack; release 1 }");
    w.line("barrier task_sync = named(3, threads 128)");
    w.comment(
        "The stdlib's consumer GEMV: nwarps by the wave-quant tie (design.md rule 4), the warps",
    );
    w.comment("it frees splitting each row's K (src/templates/gemv.rs).");
    w.line("body gemv(x, W -> y)");
    w.comment(format!(
        "`rows` weight rows per task puts the tasks near the H200's {WAVE_SMS} SMs."
    ));
    w.line("granularity per_tile(tasks ceil_div(N, rows))");
}

fn consumer_rows(w: &mut Writer, d: &Description) {
    let (n, m) = (d.extent_or("N", 1), d.extent_or("M", 1));
    let out_n = d.extent_or("out_n", 1);
    let (it, _, ot) = dtypes(d);
    w.blank();
    w.line(format!("param n: int = {n}"));
    w.line(format!("param out_n: int = {out_n}"));
    tokens_param(w, "m", m);
    let (b, bt) = batch_param(w, d);
    w.blank();
    w.line(format!("tensor x: {}[{b}m, n] in", it.as_str()));
    if let Some(wt) = d.dtype("weight") {
        w.line(format!("tensor w: {}[n] in weight", wt.as_str()));
    }
    w.line(format!("tensor y: {}[{b}m, out_n] out", ot.as_str()));
    w.blank();
    w.comment("Per-warp partial results (4 consumer warps x 8 bytes), combined after a barrier.");
    w.line("region partials { bytes 4 * 8; align 16; pack; release 1 }");
    w.line("barrier sync = named(3, threads 128)");
    w.line(format!("granularity per_tile(tasks {bt}m)"));
    let mut uses = vec!["x", "y", "buf.partials"];
    if d.dtype("weight").is_some() {
        uses.insert(1, "w");
    }
    body(w, &uses, true);
}

fn attention(w: &mut Writer, d: &Description) {
    let (m, heads, qk, v, kv) = (
        d.extent_or("M", 1),
        d.extent_or("heads", 1),
        d.extent_or("qk", 1),
        d.extent_or("v", 1),
        d.extent_or("kv_len", 1),
    );
    let (it, _, ot) = dtypes(d);
    let e = esize(it);
    w.blank();
    w.line(format!("param heads: int = {heads}"));
    w.line(format!("param qk: int = {qk}"));
    w.line(format!("param v: int = {v}"));
    w.line(format!("param kv_len: int = {kv}"));
    tokens_param(w, "m", m);
    let (b, bt) = batch_param(w, d);
    w.blank();
    w.line(format!("tensor q: {}[{b}m, heads, qk] in", it.as_str()));
    w.line(format!("tensor kv: {}[{b}kv_len, qk] in", it.as_str()));
    w.line(format!("tensor o: {}[{b}m, heads, v] out", ot.as_str()));
    w.blank();
    w.comment(format!(
        "One monolithic region: the queries of a head and a block of {KV_BLOCK} KV tokens, at the kernel's own offsets."
    ));
    w.line(format!(
        "region attention_smem {{ bytes (m + {KV_BLOCK}) * qk * {e}; align 1024 }}"
    ));
    w.line("barrier sync = named(3, threads 128)");
    w.line(format!("granularity per_tile(tasks {bt}heads)"));
    body(w, &["q", "kv", "o", "buf.attention_smem"], true);
}

fn no_smem(w: &mut Writer, d: &Description) {
    let (n, m) = (d.extent_or("N", 1), d.extent_or("M", 1));
    let (it, wt, ot) = dtypes(d);
    w.blank();
    w.line(format!("param n: int = {n}"));
    if d.kind.value == super::desc::Kind::Gather {
        w.line(format!("param rows: int = {}", d.extent_or("rows", 1)));
    }
    tokens_param(w, "m", m);
    let (b, _) = batch_param(w, d);
    w.line("param tasks: int in 1..=1024 = 8");
    w.blank();
    let uses: Vec<&str> = if d.kind.value == super::desc::Kind::Gather {
        w.line(format!("tensor ids: {}[{b}m] in", it.as_str()));
        w.line(format!("tensor table: {}[rows, n] in weight", wt.as_str()));
        w.line(format!("tensor y: {}[{b}m, n] out", ot.as_str()));
        vec!["ids", "table", "y"]
    } else {
        w.line(format!("tensor x: {}[{b}m, n] in", it.as_str()));
        // A weight the description names (a per-column scale, a bias): one row shared by every
        // row of x.
        let weighted = d.dtype("weight").is_some();
        if weighted {
            w.line(format!("tensor w: {}[n] in weight", wt.as_str()));
        }
        w.line(format!("tensor y: {}[{b}m, n] out", ot.as_str()));
        if weighted {
            vec!["x", "w", "y"]
        } else {
            vec!["x", "y"]
        }
    };
    w.blank();
    w.line("granularity per_tile(tasks tasks)");
    body(w, &uses, false);
}

fn helper(w: &mut Writer, d: &Description) {
    let (n, m) = (d.extent_or("N", 1), d.extent_or("M", 1));
    let out_n = d.extent_or("out_n", n);
    let (it, _, ot) = dtypes(d);
    w.blank();
    w.comment(
        "A helper is no task: its `__device__` function is called from the body of a task that",
    );
    w.comment("writes `use NAME from \"FILE.mpk\"`, on data already in that task's SMEM; mpkc emits it into");
    w.comment("that task's kernel (docs/language.md, \"Helpers\").");
    w.line(format!("param n: int = {n}"));
    w.line(format!("param out_n: int = {out_n}"));
    tokens_param(w, "m", m);
    let (b, _) = batch_param(w, d);
    w.blank();
    w.line(format!("tensor x: {}[{b}m, n] in", it.as_str()));
    w.line(format!("tensor y: {}[{b}m, out_n] out", ot.as_str()));
    w.blank();
    w.comment(
        "Stage 2: the function's code, run by the caller's 128 consumer threads with one pointer",
    );
    w.comment("per tensor.");
    w.open("body cuda");
    w.line("(void)x;");
    w.line("(void)y;");
    w.close("");
}

/// `(input, weight, output)` dtypes; the weight defaults to the input's.
fn dtypes(d: &Description) -> (Dtype, Dtype, Dtype) {
    let i = d.dtype("input").unwrap_or(Dtype::Bf16);
    (
        i,
        d.dtype("weight").unwrap_or(i),
        d.dtype("output").unwrap_or(i),
    )
}

#[cfg(test)]
mod tests {
    use super::{bf16_splits, fp8_splits};

    /// The rule gives the split counts `mpkc bench` / `mpkc tune` found fastest on the H200 for
    /// the DeepSeek-V3 bf16 shapes on 64-row tiles at tile K 256 (the stdlib's and examples'
    /// instances, 2026-12-04).
    #[test]
    fn splits_are_the_measured_ones_at_the_dsv3_shapes() {
        // (N, K, tile N, splits committed in linear_bf16_splitk_sum64 / _sum_m64)
        let cases = [
            (1536, 7168, 16, 4),
            (576, 7168, 16, 14),
            (4096, 7168, 16, 2),
            (1024, 7168, 16, 7),
            (256, 7168, 16, 14),
            (3072, 1536, 16, 2),
            (1536, 7168, 64, 4),
            (576, 7168, 64, 7),
            (3072, 1536, 64, 2),
            (4096, 7168, 64, 2),
            (256, 7168, 64, 7),
            // o_proj's 112 tiles fill the SMs without a split.
            (7168, 2048, 16, 1),
        ];
        for (n, k, tile_n, want) in cases {
            let tiles = (n + 63) / 64;
            assert_eq!(
                bf16_splits(tiles, k / 256, tile_n),
                want,
                "N {n} K {k} tile N {tile_n}"
            );
        }
    }

    /// The fp8 rule gives stdlib/linear_fp8_splitk_sum.mpk's committed counts, each measured the
    /// faster of two on the H200 (2026-12-04; dense gate+up's 3 with the uneven split).
    #[test]
    fn fp8_splits_are_the_committed_ones_at_the_dsv3_shapes() {
        // (N, K, splits): qkv_a, o_proj, expert gate+up, shared gate+up, q_b, expert down,
        // dense gate+up, dense down.
        let cases = [
            (2176, 7168, 7),
            (7168, 2048, 2),
            (1024, 7168, 14),
            (512, 7168, 14),
            (3072, 1536, 4),
            (7168, 512, 2),
            (4608, 7168, 3),
            (7168, 2304, 2),
        ];
        for (n, k, want) in cases {
            assert_eq!(fp8_splits((n + 127) / 128, k / 128), want, "N {n} K {k}");
        }
        // Tiles that fill the SMs alone: one split (the house form).
        assert_eq!(fp8_splits(132, 56), 1);
    }
}
