//! What the pipeline lowerings for sm_100a (`sm100`) and sm_90a (`sm90`) share: the named
//! constants of the shape, the barrier names, the role re-init helpers, the loader (TMA is the
//! same on both), and the `Registration`.

use super::consumer::ROLE_PARAMS;
use super::names::upper;
use super::roles::{ops_of, render, RoleCx};
use super::writer::Writer;
use super::GenOptions;
use crate::ir::{RoleKind, TaskIr};
use crate::lower::{LinearMath, Operands};
use crate::lower::{Op, Operand, RoleProgram};
use crate::valid::CheckedTask;

/// The region ordinal name of the first stage of a ring, or of the scratch region.
pub(crate) fn region_base(ir: &TaskIr, group: usize) -> String {
    let g = &ir.region_groups[group];
    g.members.first().map_or_else(
        || "0".to_string(),
        |h| format!("REGION_{}", upper(&ir.regions[*h].name)),
    )
}

/// The region group a ring channel stores its stages in.
pub(crate) fn ring_group(ir: &TaskIr, ch: crate::ir::Handle<crate::ir::ChannelIr>) -> usize {
    ir.channels[ch].region_group()
}

/// Opens a pipeline kernel header: banner, `what` (the lowering in one line), includes of the
/// prelude, the ISA header `isa_header` and the spec, the unit's namespace, then the constants.
/// The caller closes the namespace.
pub(crate) fn kernel_prologue(
    w: &mut Writer,
    task: &CheckedTask,
    p: &LinearMath,
    prog: &RoleProgram,
    info: &super::banner::ContractInfo,
    what: &str,
    isa_header: &str,
) {
    let unit = task.ir.unit_name();
    w.line(super::banner::banner(&task.ir, info));
    w.line(format!(
        "// Pipeline task, family A, lowered for {what} -> epilogue `{}`.",
        p.epilogue.as_str()
    ));
    w.line("#pragma once");
    w.blank();
    w.line("#include \"mpkc_prelude.cuh\"");
    w.line(format!("#include \"{isa_header}\""));
    w.line(format!("#include \"{unit}_spec.h\""));
    w.line(format!("#include \"{}\"", super::layout::file_name(&unit)));
    w.blank();
    w.open_namespace(&format!("kernel::{unit}"));
    w.blank();
    constants(w, task, p, prog);
}

/// How a role function is linked into the worker that dispatches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Linkage {
    /// `__noinline__`: its own function (the sm_100a roles, whose MMAs are asynchronous tcgen05).
    Call,
    /// `__forceinline__`: inlined into the worker. A wgmma issuer must be: ptxas serialises every
    /// wgmma whose pipeline (fence .. commit .. wait) meets a function boundary, waiting each one
    /// before issuing the next (ptxas advisory C7510, "wgmma pipeline crossing function boundary").
    Inline,
}

/// Opens the consumer role (W0-3, threads 0..127): its SMEM, op semaphores, warp and lane; the
/// role program's operations follow.
pub(crate) fn open_consumer(w: &mut Writer, linkage: Linkage) {
    let kw = match linkage {
        Linkage::Call => "__noinline__",
        Linkage::Inline => "__forceinline__",
    };
    w.open(format!("__device__ {kw} void consumer({ROLE_PARAMS})"));
    w.line("(void)runtime_config;");
    w.line("(void)iter_num;");
    w.line("if (threadIdx.x >= 128) return;");
    w.line("extern __shared__ __align__(1024) char smem[];");
    w.line("uint64_t *const sem = mpkc::rt::op_sem_base(runtime_smem, instruction_index);");
    w.line("int const warp = mpkc::warp_id();");
    w.line("int const lane = mpkc::lane_id();");
}

/// The launcher's first step on both targets: lane 0 re-initialises the barriers the launcher
/// owns before anything lets a consumer arrive (consumer_done is load-bearing, contract doc §2.4).
pub(crate) fn launcher_reinit(w: &mut Writer) {
    w.comment("Re-init before anything that lets the consumers arrive (consumer_done is load-bearing, §2.4).");
    w.line("if (mpkc::lane_id() == 0) reinit_launcher(sem);");
    w.line("__syncwarp();");
}

/// The launcher's page mask, at its start where its program releases the used pages
/// ([`Step::PageRelease`]): `mpkc::used_page_mask`, a warp collective (one load and one
/// reduction, where a per-lane loop over the regions cost about 1 us on the critical path),
/// computed before anything waits so that the release after `consumer_done` is one step.
///
/// [`Step::PageRelease`]: crate::lower::Step::PageRelease
pub(crate) fn launcher_page_mask(w: &mut Writer, prog: &RoleProgram) {
    if super::roles::has_step(prog, RoleKind::Launcher, &crate::lower::Step::PageRelease) {
        w.line("uint32_t const used_pages = mpkc::used_page_mask(task_desc);  // a warp collective, for the page release");
    }
}

/// The launcher's last step on both targets, after `consumer_done`: lane p releases physical page
/// p once if the task uses it (I-P1, I-P3), from the warp's page mask `used_pages`
/// ([`launcher_page_mask`]). `mma` names the instruction whose completion makes the pages free (`MMA` of
/// tcgen05, `wgmma`).
pub(crate) fn release_used_pages(w: &mut Writer, mma: &str) {
    w.comment(format!(
        "Every {mma} completed and the consumers are done: release each used page once (I-P1, I-P3)."
    ));
    w.line("int const page = mpkc::lane_id();");
    w.line("if (page < MAX_SMEM_PAGES_PER_TASK && (used_pages >> page & 1u)) mpkc::rt::finish_page(runtime_smem, page);");
}

/// The shape constants, TMA byte counts and L2 policies, as named `constexpr`s.
pub(crate) fn constants(w: &mut Writer, task: &CheckedTask, p: &LinearMath, prog: &RoleProgram) {
    let ir = &task.ir;
    let wt = &ir.tensors[p.weights];
    let at = &ir.tensors[p.acts];
    let idx_in = |h| ir.inputs().position(|(x, _)| x == h).unwrap_or(0);
    w.comment("Shape (elements). Swap-AB: MMA-M = BLOCK_M weight rows, MMA-N = BLOCK_N tokens.");
    let c = |w: &mut Writer, name: &str, v: i64, why: &str| {
        w.line(format!("constexpr int {name} = {v};  // {why}"))
    };
    c(
        w,
        "BLOCK_M",
        p.block_m,
        "tile M: weight rows per task (MMA-M)",
    );
    c(w, "BLOCK_N", p.block_n, "tile N: tokens (MMA-N)");
    c(
        w,
        "BLOCK_K",
        p.block_k,
        "tile K: reduction elements per stage",
    );
    c(w, "ELEM_BYTES", p.elem_bytes, "bytes per operand element");
    c(w, "MMA_K", p.mma_k, "K per tcgen05.mma");
    c(
        w,
        "K_CHUNKS",
        p.block_k * p.elem_bytes / 128,
        "128-byte swizzle rows per stage",
    );
    c(
        w,
        "MMAS_PER_CHUNK",
        128 / (p.mma_k * p.elem_bytes),
        "MMAs per 128-byte swizzle row",
    );
    c(w, "NUM_STAGES", p.stages, "ring stages");
    c(w, "N", p.n, &format!("rows of `{}`", wt.name));
    c(w, "K", p.k, &format!("columns of `{}`", wt.name));
    let m_doc = match ir.runtime_tokens() {
        Some(rt) => format!("rows of `{}` (tokens) at most: `{}` is decided at run time (mpkc::runtime_tokens, clamped to this)", at.name, rt.name),
        None => format!("rows of `{}` (tokens)", at.name),
    };
    c(w, "M_REAL", p.m_real, &m_doc);
    c(w, "SPLITS", p.splits, "K splits");
    c(
        w,
        "K_BLOCKS",
        p.k_blocks,
        "K blocks of BLOCK_K along the activations' K",
    );
    c(
        w,
        "K_ITERS",
        p.k_iters,
        "the most K iterations a task runs: ceil(K_BLOCKS / SPLITS)",
    );
    c(w, "NUM_TILES", p.num_tiles, "tiles along N: ceil(N / BLOCK_M), the last partial where N % BLOCK_M != 0 (rows past N: TMA zero fill, not stored)");
    c(w, "ACC_SLOTS", p.acc_slots, "accumulator slots in TMEM");
    w.line(format!(
        "constexpr uint32_t TMEM_COLS = {};  // tcgen05.alloc columns (I-T1)",
        p.tmem_cols
    ));
    w.line(format!(
        "constexpr int IN_A = {};  // input_ptrs / input_tma_desc_ptrs index of `{}`",
        idx_in(p.acts),
        at.name
    ));
    w.line(format!(
        "constexpr int IN_W = {};  // input_ptrs / input_tma_desc_ptrs index of `{}`",
        idx_in(p.weights),
        wt.name
    ));
    // A TMA operand declared as a view: its tensor map's row stride is the view's, which the
    // host that encodes the map must use (MPK's create_tma_desc_by_task takes dim[1] today).
    for t in [at, wt] {
        if let Some(v) = &t.view {
            w.comment(format!(
                "`{}` is a view: its tensor map's global row stride is {} elements ({} bytes), not its {} columns; input_ptrs points {} elements into each parent row (TensorDesc::stride[0] = {}).",
                t.name,
                v.row_stride,
                v.row_stride * t.dtype.bytes(),
                t.dims.last().copied().unwrap_or(0),
                v.offset,
                v.row_stride
            ));
        }
    }
    if let Operands::Fp8BlockScale {
        w_scale, a_scale, ..
    } = &p.operands
    {
        w.line(format!(
            "constexpr int IN_W_SCALE = {};  // `{}`: f32 [N / 128, K / 128] weight block scales",
            idx_in(*w_scale),
            ir.tensors[*w_scale].name
        ));
        w.line(format!("constexpr int IN_A_SCALE = {};  // `{}`: f32 [M_REAL, K / 128] activation group scales", idx_in(*a_scale), ir.tensors[*a_scale].name));
    }
    if let Some(r) = p.residual {
        w.line(format!(
            "constexpr int IN_R = {};  // input_ptrs index of `{}`",
            idx_in(r),
            ir.tensors[r].name
        ));
    }
    w.line(format!(
        "constexpr int OUT_C = {};  // output_ptrs index of `{}`",
        ir.outputs().position(|(x, _)| x == p.output).unwrap_or(0),
        ir.tensors[p.output].name
    ));
    if let Some(s) = &p.split_sum {
        let pos = |h| ir.outputs().position(|(x, _)| x == h).unwrap_or(0);
        let what = if p.epilogue == crate::lower::Epilogue::SplitKAtomic {
            "f32 [M_REAL, N] accumulator, zero between runs"
        } else {
            "f32 [SPLITS, M_REAL, N] partials"
        };
        w.line(format!(
            "constexpr int OUT_P = {};  // output_ptrs index of `{}`: {what}",
            pos(s.partials),
            ir.tensors[s.partials].name
        ));
        w.line(format!(
            "constexpr int OUT_T = {};  // output_ptrs index of `{}`: int32 [NUM_TILES] arrival counters, zero between runs",
            pos(s.counters),
            ir.tensors[s.counters].name
        ));
    }
    if let Some(r) = &p.route {
        route_constants(w, task, p, r);
    }
    // Short tiles (a multiple of 8 rows below 64) are sm_90a's alone (`lower::linear::bind`).
    if prog.target == crate::ir::Target::Sm90a {
        w.line("static_assert(K_ITERS >= 1 && (BLOCK_M == 128 || (BLOCK_M <= 64 && BLOCK_M % 8 == 0)), \"E0013: the pipeline lowers 128- and 64-row tiles and short tiles (multiples of 8 below 64) with at least one K stage\");");
    } else {
        w.line("static_assert(K_ITERS >= 1 && (BLOCK_M == 128 || BLOCK_M == 64), \"E0013: the pipeline lowers 128- and 64-row tiles with at least one K stage\");");
    }
    w.line("static_assert(SPLITS >= 1 && SPLITS <= K_BLOCKS, \"E0013: every split runs at least one K iteration\");");
    w.comment("Split s (task_offset / NUM_TILES) takes K_BLOCKS / SPLITS K blocks, one more for the first");
    w.comment("K_BLOCKS % SPLITS splits (K_ITERS, or K_ITERS - 1 where SPLITS does not divide K_BLOCKS), from block");
    w.comment(
        "s * (K_BLOCKS / SPLITS) + min(s, K_BLOCKS % SPLITS): 32-bit, no product past K_BLOCKS.",
    );
    w.line("__device__ __forceinline__ int task_k_first(TaskDesc const *td) { int const s = td->task_metadata.task_offset / NUM_TILES; return SPLITS == 1 ? 0 : s * (K_BLOCKS / SPLITS) + (s < K_BLOCKS % SPLITS ? s : K_BLOCKS % SPLITS); }");
    if p.k_iters == 1 && p.splits == 1 {
        // One K iteration: a trip count ptxas can see is 1 lets it drop the loop, and it then
        // serialises a 128-row tile's wgmmas (advisory C7519, sm_90a; linear_sm100_v2 at K = 128,
        // the fixed-cost probe). Read from the TaskDesc (task_offset is never negative), the
        // count keeps the loop.
        w.comment("One K iteration, read from the TaskDesc so that the K loop stays a loop for ptxas (C7519 otherwise).");
        w.line("__device__ __forceinline__ int task_k_iters(TaskDesc const *td) { return td->task_metadata.task_offset < 0 ? 0 : 1; }");
    } else {
        w.line("__device__ __forceinline__ int task_k_iters(TaskDesc const *td) { return SPLITS == 1 ? K_ITERS : K_BLOCKS / SPLITS + (td->task_metadata.task_offset / NUM_TILES < K_BLOCKS % SPLITS ? 1 : 0); }");
    }
    w.blank();
    w.comment("Bytes each stage's TMA delivers: the expect_tx of its full barrier (I-M6), the role program's loads.");
    let loads = tma_loads(prog);
    for (name, operand, h) in [
        ("W", Operand::Weights, p.weights),
        ("A", Operand::Activations, p.acts),
    ] {
        let (bytes, dims) = loads
            .iter()
            .find(|l| l.operand == operand)
            .map_or((0, &[][..]), |l| (l.bytes, l.box_dims));
        w.line(format!(
            "constexpr uint32_t {name}_STAGE_TX_BYTES = {bytes};  // box {dims:?} of {}",
            ir.tensors[h].dtype
        ));
    }
    w.line(format!("static_assert(W_STAGE_TX_BYTES <= raw_{}_bytes() && A_STAGE_TX_BYTES <= raw_{}_bytes(), \"E0304: a stage receives more TMA bytes than it holds\");",
        ir.regions[ir.region_groups[ring_group(ir, p.w_ring)].members[0]].name.to_ascii_lowercase(),
        ir.regions[ir.region_groups[ring_group(ir, p.a_ring)].members[0]].name.to_ascii_lowercase()));
    l2_policies(w, ir, prog);
    w.blank();
}

/// The constants and the id read of a routed pipeline (`route W by ids …`).
fn route_constants(
    w: &mut Writer,
    task: &CheckedTask,
    p: &LinearMath,
    r: &crate::lower::RouteMath,
) {
    let ir = &task.ir;
    let idx_in = |h| ir.inputs().position(|(x, _)| x == h).unwrap_or(0);
    let per_slot = r.mode == crate::ir::RouteMode::PerSlot;
    w.comment(format!(
        "Routed experts (`route {} by {} {}`, docs/language.md \"Routed experts\"): `{}` is [EXPERTS, N, K], its tensor",
        ir.tensors[p.weights].name,
        ir.tensors[r.ids].name,
        r.mode.as_str(),
        ir.tensors[p.weights].name
    ));
    w.comment("map spans [EXPERTS * N, K]; a stage's weight box starts at row expert * N + tile * BLOCK_M. Task");
    if per_slot {
        w.comment("t = route * NUM_TILES + tile with route = token * SLOTS + slot: expert ids[token][slot]; its output");
        w.comment("row is `route` of [M_REAL * SLOTS, N].");
    } else {
        w.comment("t = token * NUM_TILES + tile: K iteration it multiplies slot it / SLOT_K_ITERS's expert with that");
        w.comment("slot's K block of the activations ([M_REAL, SLOTS * K]), so the accumulator sums the slots.");
    }
    w.comment(
        "Every token column is multiplied; the epilogue stores the task's token column only.",
    );
    w.line(format!(
        "constexpr int EXPERTS = {};  // experts of `{}`",
        r.experts, ir.tensors[p.weights].name
    ));
    w.line(format!(
        "constexpr int SLOTS = {};  // routed slots per token: columns of `{}`",
        r.slots, ir.tensors[r.ids].name
    ));
    w.line(format!(
        "constexpr int ROUTE_READS = {};  // experts one task reads: {}",
        if per_slot { 1 } else { r.slots },
        if per_slot {
            "its slot's"
        } else {
            "every slot's"
        }
    ));
    w.line(format!(
        "constexpr int ROUTES_PER_TOKEN = {};  // routes (task_offset / NUM_TILES) per token",
        if per_slot { r.slots } else { 1 }
    ));
    w.line(format!(
        "constexpr int SLOT_K_ITERS = {};  // K iterations per expert: K / BLOCK_K",
        r.slot_k_iters
    ));
    w.line(format!(
        "constexpr int IN_IDS = {};  // input_ptrs index of `{}`: int32 [M_REAL, SLOTS]",
        idx_in(r.ids),
        ir.tensors[r.ids].name
    ));
    w.line("static_assert(K_ITERS == ROUTE_READS * SLOT_K_ITERS, \"E0029: a routed task runs each expert's whole K\");");
    w.comment("The token of route `route`.");
    w.open("__device__ __forceinline__ int route_token(int route)");
    w.line("return route / ROUTES_PER_TOKEN;");
    w.close("");
    w.comment("Expert `s` of route `route` (ids[route * ROUTE_READS + s]: the route's row of `ids` is its token's, or");
    w.comment("its (token, slot) element), an L2 load (another task wrote it; read after the dependency wait): an");
    w.comment("id outside 0..EXPERTS becomes EXPERTS, whose weight rows lie past the tensor map (TMA zero fill: the");
    w.comment("slot adds nothing).");
    w.open("__device__ __forceinline__ int route_expert(int32_t const *ids, int route, int s)");
    w.line("int const e = __ldcg(ids + route * ROUTE_READS + s);");
    w.line("return static_cast<unsigned>(e) < static_cast<unsigned>(EXPERTS) ? e : EXPERTS;");
    w.close("");
}

/// A TMA load of the loader's program.
struct Load<'a> {
    operand: Operand,
    bytes: i64,
    box_dims: &'a [i64],
    l2: &'a crate::lower::L2Policy,
}

/// The loader's TMA loads in program order.
fn tma_loads(prog: &RoleProgram) -> Vec<Load<'_>> {
    crate::lower::flatten(ops_of(prog, RoleKind::Loader))
        .into_iter()
        .filter_map(|o| match o {
            Op::TmaLoad {
                operand,
                bytes,
                box_dims,
                l2,
                ..
            } => Some(Load {
                operand: *operand,
                bytes: *bytes,
                box_dims,
                l2,
            }),
            _ => None,
        })
        .collect()
}

/// The L2 policy of the loader's TMA loads of each operand (`W_L2_POLICY`, `A_L2_POLICY`), from
/// the role program: the tensor's, or a lever's when its define is on (I-H7: the define is 0
/// unless the build sets it; a lever declared `default on`, W0603, defines it 1).
fn l2_policies(w: &mut Writer, ir: &crate::ir::TaskIr, prog: &RoleProgram) {
    let all: Vec<_> = tma_loads(prog)
        .into_iter()
        .map(|l| (l.operand, l.l2.clone()))
        .collect();
    for (name, operand) in [
        ("W", crate::lower::Operand::Weights),
        ("A", crate::lower::Operand::Activations),
    ] {
        let Some((_, l2)) = all.iter().find(|(o, _)| *o == operand) else {
            continue;
        };
        match &l2.lever {
            None => w.line(format!(
                "constexpr uint64_t {name}_L2_POLICY = 0x{:016X}ull;  // {:?}",
                l2.default.policy(),
                l2.default
            )),
            Some((define, on)) => {
                w.line(format!("#ifndef {define}"));
                if ir.levers.iter().any(|l| l.name == *define && l.default_on) {
                    w.line(format!(
                        "#define {define} 1  // lever, declared default on (W0603: I-H7 wants off)"
                    ));
                } else {
                    w.line(format!("#define {define} 0  // lever, default off (I-H7)"));
                }
                w.line("#endif");
                w.line(format!(
                    "constexpr uint64_t {name}_L2_POLICY = {define} ? 0x{:016X}ull : 0x{:016X}ull;  // {on:?} with lever {define} on, else {:?}",
                    on.policy(),
                    l2.default.policy(),
                    l2.default
                ));
            }
        }
    }
}

/// One force-inlined re-init helper per role that re-initialises barriers in `prog` (I-M4,
/// I-M5): `mbarrier.init` of each with this target's count, then the init fence (as a call, nvcc
/// reorders the fence).
pub(crate) fn reinit_helpers(w: &mut Writer, prog: &RoleProgram, opts: &GenOptions) {
    let table = super::spec_h::sem_table_name(prog.target);
    for role in [RoleKind::Loader, RoleKind::Launcher] {
        let owned = super::roles::reinit_of(prog, role);
        w.comment(format!("Start-of-task re-init by the {role} of the barriers it arrives asynchronously or last (I-M4)."));
        w.open(format!(
            "__device__ __forceinline__ void reinit_{role}(uint64_t *sem)"
        ));
        for (k, b, slot) in prog.ordinals().filter(|(k, _, _)| owned.contains(k)) {
            let name = b.slot_name(slot);
            if opts.drop_reinit == Some(k) {
                w.line(format!("// fault injection (mpkc verify --inject reinit-drop): the re-init of {name} is dropped"));
                continue;
            }
            w.line(format!(
                "mpkc::rt::mbar_reinit(&sem[{table}[{k}].ordinal], {table}[{k}].count);  // {name}: {}",
                b.count(slot)
            ));
        }
        w.line("mpkc::rt::fence_mbar_init();");
        w.close("");
        w.blank();
    }
}

/// Loader (W4): the whole warp computes the task's addresses and page mask, one elected lane
/// prefetches the tensor maps and re-inits the loader's barriers, the warp waits the used pages
/// ([`Step::PageAcquire`]: the registration leaves the page prefix to this body), one elected
/// lane runs the loader's operations of `prog` (the TMA loads of each stage after the stage's
/// shared empty barrier frees it, producer cursor from parity 1; the dependency wait before the
/// first load of data another task wrote), and the warp then waits and frees the unused pages
/// ([`Step::PageFreeUnused`]). No end-of-task drain (I-M8).
///
/// [`Step::PageAcquire`]: crate::lower::Step::PageAcquire
pub(crate) fn loader(
    w: &mut Writer,
    task: &CheckedTask,
    prog: &RoleProgram,
    engine: &dyn super::roles::Engine,
) {
    let isa = engine.isa();
    w.comment("Loader (W4): TMA of the weight and activation stages.");
    w.open(format!(
        "__device__ __noinline__ void loader({ROLE_PARAMS})"
    ));
    w.line("(void)runtime_config;");
    w.line("(void)iter_num;");
    w.line("extern __shared__ __align__(1024) char smem[];");
    w.line("uint64_t *const sem = mpkc::rt::op_sem_base(runtime_smem, instruction_index);");
    w.line("CUtensorMap const *const map_w = task_desc->input_tma_desc_ptrs[IN_W][0];");
    w.line("CUtensorMap const *const map_a = task_desc->input_tma_desc_ptrs[IN_A][0];");
    super::page_prefix::used_mask(w);
    w.line(format!("if ({isa}::elect_one()) {{ {isa}::prefetch_tensormap(map_w); {isa}::prefetch_tensormap(map_a); }}"));
    w.line("int const tile = task_desc->task_metadata.task_offset % NUM_TILES;");
    if super::roles::routed(prog) {
        w.line("int const route = task_desc->task_metadata.task_offset / NUM_TILES;  // route_token(route) is the token");
        w.line("int32_t const *const ids = static_cast<int32_t const *>(task_desc->input_ptrs[IN_IDS]);");
        w.line("int expert = EXPERTS;  // this stage's expert, read after the dependency wait (route_expert)");
        w.line("int next_expert = EXPERTS;  // the next slot's, read a slot ahead");
    }
    w.line("uint64_t *const dep_ready = &runtime_smem.dynamic_semaphores[instruction_index % INSTRUCTION_RING_SIZE][SEM_DEP_READY];");
    let cx = RoleCx {
        ir: &task.ir,
        prog,
        role: RoleKind::Loader,
        engine,
    };
    render(w, &cx, ops_of(prog, RoleKind::Loader));
    w.close("");
    w.blank();
}

/// The loader's page acquire ([`crate::lower::Step::PageAcquire`], page mode 1 with
/// `auto_loader_page_lifecycle = false`, contract doc §1.5): after the elected re-inits
/// (`__syncwarp`, I-P4), lane p waits physical page p with the task's parity if the task uses it
/// (`used_pages`, the warp's mask computed before the wait), and the warp reconverges; the
/// elected lane's loads follow. The pages the task does not use are waited after the loads were
/// issued ([`super::page_prefix::free_unused`]): where MPK's planner gave this task pages the
/// task before it leaves unused (I-S12, single-page regions within 7 pages), the loads run while
/// that task computes, instead of after it releases its pages.
pub(crate) fn page_acquire(w: &mut Writer) {
    w.comment("The page prefix, this body's (the registration's auto_loader_page_lifecycle = false) so that the");
    w.comment("re-inits and prefetches above, which need no page, run while the task before this one holds them:");
    w.comment("lane p waits page p with this task's parity if the task uses it; the unused pages are waited and");
    w.comment("freed after the loads were issued, at the end of this body, so that the loads need not wait for");
    w.comment("the pages of the task before this one where MPK's planner gave this task others (I-S12). The");
    w.comment("__syncwarp after the wait orders the elected lane's TMA after every lane's acquire (PTX ISA,");
    w.comment("bar.warp.sync: memory ordering among the participating threads).");
    super::page_prefix::acquire_used(w);
}

/// The loader's fence between the generic stores earlier tasks made to this task's pages and the
/// TMA writes of this task (finding: no proxy fence on that path).
pub(crate) fn pages_fence(w: &mut Writer, isa: &str) {
    w.comment("An earlier task on this SM may have written this task's pages with generic stores (a consumer-only");
    w.comment("body's SMEM view, a TMEM-address scratch, an fp8 epilogue's amax); this task's TMA writes them in the");
    w.comment("async proxy. PTX ISA 9.0 §8.6 \"Proxies\" and §9.7.9.25.2 \"Async Proxy\": accesses to one location");
    w.comment("through two proxies need a proxy fence on the causality path between them. The reader fences, here,");
    w.comment("after the page acquire (the wait above) and before the first TMA: a proxy");
    w.comment("fence acts within its thread and composes with the release/acquire that ordered the writers");
    w.comment("before it (\"membar/fence\"), and this one fence in the only thread that issues TMA covers every");
    w.comment("earlier writer, generated by mpkc or not, where a writer-side fence would have to be in all of them.");
    w.line(format!("{isa}::fence_proxy_async_smem();"));
}

/// The loader's fence between the producer task's generic stores of the activations and this
/// task's TMA loads of them (finding: no proxy fence on that path).
pub(crate) fn activations_fence(w: &mut Writer, isa: &str) {
    w.comment("The activations were written by the producer task's generic stores, ordered before this thread by");
    w.comment("the event's release/acquire and SEM_DEP_READY; the TMA below reads them in the async proxy. As for");
    w.comment("the pages (PTX ISA 9.0 §8.6, §9.7.9.25.2), the reader fences after that acquire and before its first");
    w.comment("activation TMA: the producer may be any task of the launch, and the weights need none (written");
    w.comment("before the launch).");
    w.line(format!("{isa}::fence_proxy_async_global();"));
}

/// The `Registration` type: MPK's flags for the variant, `init_semaphores`, the role entry points.
pub(crate) fn registration(w: &mut Writer, task: &CheckedTask, prog: &RoleProgram) {
    let ir = &task.ir;
    w.comment("What task_register.cc registers for this variant (TaskRoleVariantCode, contract doc §3.3): every");
    w.comment("role body is non-empty but the storer's; page mode 1 (the loader prefix waits every page and frees");
    let releaser = if prog.page_releaser() == Some(RoleKind::Consumer) {
        "the consumer releases the used pages itself after its K loop"
    } else {
        "the launcher releases the used pages itself"
    };
    w.comment(format!(
        "the unused ones) with auto_consumer_finish = false: {releaser}."
    ));
    w.comment("The launcher runs the dependency prefix (mma = prefix + call); the loader waits the dependency");
    w.comment("inline before its first activation load.");
    w.open("struct Registration");
    match ir.task_id {
        Some(id) => w.line(format!("static constexpr int kTaskType = {id};")),
        None => w.line("static constexpr int kTaskType = -1;  // no `task_id` in the contract"),
    }
    let reg = super::registration::Registration::PIPELINE;
    reg.flag_members(w);
    super::setmaxnreg::registration_members(w, ir);
    super::registration::semaphore_members(w, prog, &[]);
    reg.role_members(w, &ir.unit_name());
    w.close(";");
    w.blank();
    super::setmaxnreg::cuh_guard(w, ir);
}
