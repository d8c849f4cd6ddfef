//! The sm_100a lowering of the pipeline family (family A): `<unit>.cuh` with one
//! `__device__ __noinline__` function per role (loader W4 issuing TMA, launcher W5 issuing
//! tcgen05.mma into TMEM, consumers W0-3 running the epilogue), force-inlined role re-inits
//! ending with the init fence, `init_semaphores`, the descriptors as decoded constants, and the
//! `Registration` that states MPK's flags (page mode 1, the launcher's blanket release).
//!
//! The protocol is the house linear's (contract doc §3.2), with one deliberate change for race
//! freedom: the launcher allocates TMEM (writing its address into the scratch region) only after
//! the first stage landed, i.e. after the loader, the pages' dense observer, saw every page
//! ready (I-P5); and it releases the used pages after `consumer_done`, when every MMA has
//! completed and no role reads SMEM any more.

pub mod desc;
mod roles;

use super::banner::{banner, ContractInfo};
use super::names::upper;
use super::writer::Writer;
use crate::ir::{ChannelStorageIr, TaskIr};
use crate::plan::sems::{empty_of, full_of};
use crate::valid::{CheckedTask, Operands, PipelineShape};
use desc::{decode_lines, instr_desc_f16, instr_desc_mxf8f6f4, smem_desc, F16Format, SmemLayout};

/// The first ordinal of each barrier group the roles use, by name in the spec's `SemOrdinal`.
pub(super) struct Sems {
    pub sf_full: String,
    pub w_full: String,
    pub a_full: String,
    pub ring_empty: String,
    pub acc_full: String,
    pub acc_empty: String,
    pub tmem_ready: String,
    pub consumer_done: String,
}

fn sem_names(task: &CheckedTask, p: &PipelineShape) -> Sems {
    let ir = &task.ir;
    let t = &task.ordinals;
    let name_of = |ord: Option<usize>| -> String {
        ord.map(|o| {
            let base = t[o].name.split('[').next().unwrap_or(&t[o].name).replace('.', "_");
            format!("SEM_{}", upper(&base))
        })
        .unwrap_or_else(|| "0".to_string())
    };
    let sf_full = match &p.operands {
        Operands::Fp8BlockScale { sf_ring, .. } => name_of(full_of(t, *sf_ring, 0)),
        Operands::Bf16 => "0".to_string(),
    };
    Sems {
        sf_full,
        w_full: name_of(full_of(t, p.w_ring, 0)),
        a_full: name_of(full_of(t, p.a_ring, 0)),
        ring_empty: name_of(empty_of(ir, t, p.w_ring, 0)),
        acc_full: name_of(full_of(t, p.acc, 0)),
        acc_empty: name_of(empty_of(ir, t, p.acc, 0)),
        tmem_ready: format!("SEM_{}", upper(&ir.sems[p.tmem_ready].name)),
        consumer_done: format!("SEM_{}", upper(&ir.sems[p.consumer_done].name)),
    }
}

/// The region ordinal name of the first stage of a ring, or of the scratch region.
fn region_base(ir: &TaskIr, group: usize) -> String {
    let g = &ir.region_groups[group];
    g.members.first().map_or_else(|| "0".to_string(), |h| format!("REGION_{}", upper(&ir.regions[*h].name)))
}

fn ring_group(ir: &TaskIr, ch: crate::ir::Handle<crate::ir::ChannelIr>) -> usize {
    match ir.channels[ch].storage {
        ChannelStorageIr::Region(g) => g,
        ChannelStorageIr::Tmem => 0,
    }
}

/// Emits the pipeline kernel header.
pub fn emit(task: &CheckedTask, p: &PipelineShape, info: &ContractInfo) -> String {
    let ir = &task.ir;
    let unit = ir.unit_name();
    let mut w = Writer::new();
    w.line(banner(ir, info));
    w.line(format!(
        "// Pipeline task, family A, lowered for sm_100a: TMA ring -> tcgen05.mma into TMEM -> epilogue `{}`.",
        p.epilogue.as_str()
    ));
    w.line("#pragma once");
    w.blank();
    w.line("#include \"mpkc_prelude.cuh\"");
    w.line("#include \"mpkc_sm100.cuh\"");
    w.line(format!("#include \"{unit}_spec.h\""));
    w.blank();
    w.open_namespace(&format!("kernel::{unit}"));
    w.blank();
    constants(&mut w, task, p);
    descriptors(&mut w, p);
    let sems = sem_names(task, p);
    roles::reinit_helpers(&mut w, task);
    roles::loader(&mut w, task, p, &sems);
    roles::launcher(&mut w, task, p, &sems);
    roles::consumer(&mut w, task, p, &sems);
    registration(&mut w, task);
    w.close_namespace(&format!("kernel::{unit}"));
    w.finish()
}

fn constants(w: &mut Writer, task: &CheckedTask, p: &PipelineShape) {
    let ir = &task.ir;
    let wt = &ir.tensors[p.weights];
    let at = &ir.tensors[p.acts];
    let idx_in = |h| ir.inputs().position(|(x, _)| x == h).unwrap_or(0);
    w.comment("Shape (elements). Swap-AB: MMA-M = BLOCK_M weight rows, MMA-N = BLOCK_N tokens.");
    let c = |w: &mut Writer, name: &str, v: i64, why: &str| w.line(format!("constexpr int {name} = {v};  // {why}"));
    c(w, "BLOCK_M", p.block_m, "tile M: weight rows per task (MMA-M)");
    c(w, "BLOCK_N", p.block_n, "tile N: tokens (MMA-N)");
    c(w, "BLOCK_K", p.block_k, "tile K: reduction elements per stage");
    c(w, "ELEM_BYTES", p.elem_bytes, "bytes per operand element");
    c(w, "MMA_K", p.mma_k, "K per tcgen05.mma");
    c(w, "K_CHUNKS", p.block_k * p.elem_bytes / 128, "128-byte swizzle rows per stage");
    c(w, "MMAS_PER_CHUNK", 128 / (p.mma_k * p.elem_bytes), "MMAs per 128-byte swizzle row");
    c(w, "NUM_STAGES", p.stages, "ring stages");
    c(w, "N", p.n, &format!("rows of `{}`", wt.name));
    c(w, "K", p.k, &format!("columns of `{}`", wt.name));
    c(w, "M_REAL", p.m_real, &format!("rows of `{}` (tokens)", at.name));
    c(w, "SPLITS", p.splits, "K splits");
    c(w, "K_ITERS", p.k_iters, "stages per task: K / (BLOCK_K * SPLITS)");
    c(w, "NUM_TILES", p.num_tiles, "tiles along N: N / BLOCK_M");
    c(w, "ACC_SLOTS", p.acc_slots, "accumulator slots in TMEM");
    w.line(format!("constexpr uint32_t TMEM_COLS = {};  // tcgen05.alloc columns (I-T1)", p.tmem_cols));
    w.line(format!("constexpr int IN_A = {};  // input_ptrs / input_tma_desc_ptrs index of `{}`", idx_in(p.acts), at.name));
    w.line(format!("constexpr int IN_W = {};  // input_ptrs / input_tma_desc_ptrs index of `{}`", idx_in(p.weights), wt.name));
    if let Operands::Fp8BlockScale { w_scale, a_scale, .. } = &p.operands {
        w.line(format!("constexpr int IN_W_SCALE = {};  // `{}`: f32 [N / 128, K / 128] weight block scales", idx_in(*w_scale), ir.tensors[*w_scale].name));
        w.line(format!("constexpr int IN_A_SCALE = {};  // `{}`: f32 [M_REAL, K / 128] activation group scales", idx_in(*a_scale), ir.tensors[*a_scale].name));
        w.line("constexpr int K_BLOCKS = K / 128;  // 128-wide scale blocks along K");
        w.line(format!("constexpr uint32_t SFA_COL = {};  // TMEM column of stage 0's A scales (4 per stage)", p.acc_slots * p.block_n));
        w.line(format!("constexpr uint32_t SFB_COL = {};  // TMEM column of stage 0's B scales (4 per stage)", p.acc_slots * p.block_n + p.stages * 4));
    }
    if let Some(r) = p.residual {
        w.line(format!("constexpr int IN_R = {};  // input_ptrs index of `{}`", idx_in(r), ir.tensors[r].name));
    }
    w.line(format!("constexpr int OUT_C = {};  // output_ptrs index of `{}`", ir.outputs().position(|(x, _)| x == p.output).unwrap_or(0), ir.tensors[p.output].name));
    w.line(format!("static_assert(K_ITERS >= 1 && BLOCK_M == 128, \"E0013: the house pipeline lowers 128-row tiles with at least one K stage\");"));
    w.blank();
    let box_bytes = |h| {
        let t = &ir.tensors[h];
        t.tma.as_ref().and_then(|m| m.box_bytes(t.dtype)).unwrap_or(0)
    };
    w.comment("Bytes each stage's TMA delivers: the expect_tx of its full barrier (I-M6).");
    let wb = box_bytes(p.weights);
    let ab = box_bytes(p.acts);
    w.line(format!("constexpr uint32_t W_STAGE_TX_BYTES = {wb};  // box {:?} of {}", wt.tma.as_ref().map(|m| m.box_dims.clone()).unwrap_or_default(), wt.dtype));
    w.line(format!("constexpr uint32_t A_STAGE_TX_BYTES = {ab};  // box {:?} of {}", at.tma.as_ref().map(|m| m.box_dims.clone()).unwrap_or_default(), at.dtype));
    w.line(format!("static_assert(W_STAGE_TX_BYTES <= raw_{}_bytes() && A_STAGE_TX_BYTES <= raw_{}_bytes(), \"E0304: a stage receives more TMA bytes than it holds\");",
        ir.regions[ir.region_groups[ring_group(ir, p.w_ring)].members[0]].name.to_ascii_lowercase(),
        ir.regions[ir.region_groups[ring_group(ir, p.a_ring)].members[0]].name.to_ascii_lowercase()));
    let hint = |h| ir.tensors[h].tma.as_ref().and_then(|m| m.l2).map_or(crate::ir::L2Hint::EvictNormal, |x| x);
    w.line(format!("constexpr uint64_t W_L2_POLICY = 0x{:016X}ull;  // {:?}", hint(p.weights).policy(), hint(p.weights)));
    w.line(format!("constexpr uint64_t A_L2_POLICY = 0x{:016X}ull;  // {:?}", hint(p.acts).policy(), hint(p.acts)));
    w.blank();
}

fn descriptors(w: &mut Writer, p: &PipelineShape) {
    let fp8 = matches!(p.operands, Operands::Fp8BlockScale { .. });
    let (idesc, ifields) = if fp8 {
        instr_desc_mxf8f6f4(p.block_m as u32, p.block_n as u32)
    } else {
        instr_desc_f16(F16Format::Bf16, F16Format::Bf16, p.block_m as u32, p.block_n as u32)
    };
    w.comment(if fp8 {
        "Instruction descriptor of tcgen05.mma.kind::mxf8f6f4.block_scale (CuTe UMMA::InstrDescriptorBlockScaled):"
    } else {
        "Instruction descriptor of tcgen05.mma.kind::f16 (CuTe UMMA::InstrDescriptor):"
    });
    for l in decode_lines(&ifields) {
        w.comment(format!("  {l}"));
    }
    w.line(format!("constexpr uint32_t I_DESC = 0x{idesc:08X}u;"));
    w.blank();
    let (sdesc, sfields) = smem_desc(SmemLayout::Swizzle128B, 0, 1024);
    w.comment("SMEM matrix descriptor of both operands, K-major under 128-byte swizzle (CuTe UMMA::SmemDescriptor):");
    for l in decode_lines(&sfields) {
        w.comment(format!("  {l}"));
    }
    w.line(format!("constexpr uint64_t SMEM_DESC = 0x{sdesc:016X}ull;"));
    w.comment("Within a stage: the next 128-byte K chunk of W is BLOCK_M rows of 128 bytes further, of A");
    w.comment("BLOCK_N rows; the next MMA inside a chunk is MMA_K elements = 32 bytes further (stays in the atom, I-T5).");
    w.line("constexpr uint32_t W_CHUNK_BYTES = BLOCK_M * 128;");
    w.line("constexpr uint32_t A_CHUNK_BYTES = BLOCK_N * 128;");
    w.line("constexpr uint32_t MMA_K_STEP_BYTES = MMA_K * ELEM_BYTES;");
    w.blank();
    if fp8 {
        let (sf, sfields) = smem_desc(SmemLayout::SwizzleNone, 0, 128);
        w.comment("SMEM descriptor of a scale-factor block for tcgen05.cp.32x128b: 32 rows of 16 bytes, no swizzle:");
        for l in decode_lines(&sfields) {
            w.comment(format!("  {l}"));
        }
        w.line(format!("constexpr uint64_t SF_DESC = 0x{sf:016X}ull;"));
        w.blank();
    }
    w.comment("The descriptor of the operand at `p`: SMEM_DESC with the start address (>> 4) OR-ed in.");
    w.open("__device__ __forceinline__ uint64_t smem_desc(void const *p)");
    w.line("return SMEM_DESC | static_cast<uint64_t>((mpkc::sm100::smem_u32(p) & 0x3FFFFu) >> 4);");
    w.close("");
    w.blank();
}

fn registration(w: &mut Writer, task: &CheckedTask) {
    let ir = &task.ir;
    w.comment("What task_register.cc registers for this variant (TaskRoleVariantCode, contract doc §3.3): every");
    w.comment("role body is non-empty but the storer's; page mode 1 (the loader prefix waits every page and frees");
    w.comment("the unused ones) with auto_consumer_finish = false: the launcher releases the used pages itself.");
    w.comment("The launcher runs the dependency prefix (mma = prefix + call); the loader waits the dependency");
    w.comment("inline before its first activation load.");
    w.open("struct Registration");
    match ir.task_id {
        Some(id) => w.line(format!("static constexpr int kTaskType = {id};")),
        None => w.line("static constexpr int kTaskType = -1;  // no `task_id` in the contract"),
    }
    w.line("static constexpr int kPageMode = 1;");
    w.line("static constexpr bool kAutoLoaderPageLifecycle = true;");
    w.line("static constexpr bool kAutoConsumerFinish = false;");
    w.line("static constexpr bool kLauncherDepPrefix = true;");
    w.comment("init_semaphores: every ordinal with its arrival count, then the init fence (I-M2).");
    w.open("__device__ static void init_semaphores(uint64_t *sem)");
    for o in &task.ordinals {
        w.line(format!("mpkc::rt::mbar_init(&sem[{}], {});  // {}", o.ordinal, o.count, o.name));
    }
    w.line("mpkc::rt::fence_mbar_init();");
    w.close("");
    let p = super::consumer::ROLE_PARAMS;
    let a = super::consumer::ROLE_ARGS;
    let unit = ir.unit_name();
    for role in ["consumer", "loader", "launcher"] {
        w.line(format!("__device__ static void {role}({p}) {{ ::kernel::{unit}::{role}({a}); }}"));
    }
    w.line("__device__ static void storer(TaskDesc const *, RuntimeConfig const &, RuntimeSMEM &, int, int) {}");
    w.close(";");
    w.blank();
}
