//! `<unit>.cuh` for the consumer-only families (B, C, D; contract doc §4): one
//! `__device__ __noinline__` consumer function for threads 0..127, its SMEM view built from the
//! planned region offsets, typed tensor pointers from `task_desc`, the body, and the
//! `Registration` that states what MPK's task_register.cc registers for the variant.

use super::banner::{banner, ContractInfo};
use super::names::upper;
use super::writer::Writer;
use crate::ir::{BodyIr, Direction, ParamValue, TaskIr, TensorIr};
use crate::templates::Access;
use crate::valid::CheckedTask;

/// The role-body parameter list every role function takes (contract doc §3.3).
pub(super) const ROLE_PARAMS: &str =
    "TaskDesc const *task_desc, RuntimeConfig const &runtime_config, \
RuntimeSMEM &runtime_smem, int instruction_index, int iter_num";
/// The matching argument list.
pub(super) const ROLE_ARGS: &str =
    "task_desc, runtime_config, runtime_smem, instruction_index, iter_num";

/// Emits the consumer kernel header.
pub fn emit(task: &CheckedTask, info: &ContractInfo) -> String {
    let ir = &task.ir;
    let unit = ir.unit_name();
    let mut w = Writer::new();
    w.line(banner(ir, info));
    let body_desc = match (&ir.body, &task.binding) {
        (_, Some(b)) => format!("body `{}` ({})", b.sig.name, b.body_path),
        (Some(BodyIr::Cuda { .. }), _) => "inline CUDA body".to_string(),
        _ => "no body".to_string(),
    };
    w.line(format!(
        "// Consumer-only task, family {} ({}), {body_desc}.",
        ir.family.letter(),
        ir.family.as_str()
    ));
    w.line("#pragma once");
    w.blank();
    w.line("#include \"mpkc_prelude.cuh\"");
    if super::consumer_ring::has_rings(ir) {
        w.line("#include \"mpkc_ring.cuh\"");
    }
    if uses_cooperative_groups(ir) {
        w.line("#include <cooperative_groups.h>");
    }
    w.line(format!("#include \"{unit}_spec.h\""));
    w.blank();
    w.open_namespace(&format!("kernel::{unit}"));
    w.blank();
    constants(&mut w, task);
    smem_view(&mut w, ir);
    super::helper::emit_all(&mut w, ir, &format!("{unit}.cuh"));
    consumer_fn(&mut w, task, info);
    registration(&mut w, task);
    w.close_namespace(&format!("kernel::{unit}"));
    w.finish()
}

fn constants(w: &mut Writer, task: &CheckedTask) {
    let ir = &task.ir;
    w.comment(
        "Threads of the consumer warpgroup (W0-3); the body runs on threads 0..127 only (I-R1).",
    );
    w.line("constexpr int kConsumerThreads = 128;");
    if ir.granularity.is_grid_wide() {
        w.comment("Grid-wide (I-H4): one task per worker, so the task count is the runtime's worker count,");
        w.comment("`kNumTasks` in each role function (runtime_config.num_workers); a task's index is task_offset.");
    } else {
        w.comment(
            "Tasks of this op per step (granularity); a task's index is task_metadata.task_offset.",
        );
        w.line(format!(
            "constexpr int kNumTasks = {};",
            ir.granularity.tasks()
        ));
    }
    if let Some(b) = &task.binding {
        let runtime = ir.runtime_tokens().is_some();
        for c in &b.constants {
            // A run-time token count: the rows constant is the maximum; the consumer reads
            // `kRows` from the runtime (`runtime_rows`).
            let name = match c.name.as_str() {
                "kRows" if runtime => "kMaxRows",
                n => n,
            };
            w.line(format!(
                "constexpr {} {name} = {};  // {}",
                c.cty, c.value, c.comment
            ));
        }
        for (formal, actual, v) in &b.scalars {
            let ty = match v {
                ParamValue::Float(_) => "float",
                ParamValue::Int(_) => "int64_t",
                ParamValue::Bool(_) => "bool",
            };
            w.line(format!(
                "constexpr {ty} {formal} = params::{actual};  // scalar `{formal}` of the body"
            ));
        }
        for need in &b.regions {
            if need.min_bytes == 0 {
                // `>= 0` could never fail: say instead that the region is planned but unused.
                w.line(format!(
                    "// region `{}`: the body keeps nothing there in this instance ({}, 0 B); its bytes are planned unused",
                    need.name, need.what
                ));
                continue;
            }
            w.line(format!(
                "static_assert(raw_{}_bytes() >= {}, \"E0110: region `{}` holds fewer bytes than the body keeps there ({}, {} B)\");",
                need.name.to_ascii_lowercase(),
                need.min_bytes,
                need.name,
                need.what,
                need.min_bytes
            ));
        }
        if b.sig.needs_barrier {
            if let Some(bar) = ir
                .barriers
                .values()
                .find(|b| b.by == crate::ir::RoleKind::Consumer)
            {
                w.line(format!(
                    "constexpr int kSyncBarrier = BAR_{};  // bar.sync {}, 128",
                    upper(&bar.name),
                    bar.id
                ));
            }
        }
    }
    w.blank();
}

fn smem_view(w: &mut Writer, ir: &TaskIr) {
    if ir.regions.is_empty() {
        w.comment("No SMEM regions: the task uses no dynamic shared memory (I-S11).");
        w.blank();
        return;
    }
    w.comment("The task's SMEM view: one pointer per planned region, only through smem_region_offset (I-S9);");
    w.comment("a stage array is a C array of its stages' pointers.");
    w.open("struct SmemView");
    for g in &ir.region_groups {
        let first = g.members.first().map(|h| &ir.regions[*h]);
        let size = first.map_or(0, |r| r.size);
        if g.staged {
            let sizes: Vec<String> = g
                .members
                .iter()
                .map(|h| ir.regions[*h].size.to_string())
                .collect();
            let bytes = if sizes.windows(2).all(|w| w[0] == w[1]) {
                format!("{size} B per stage")
            } else {
                format!("{} B by stage", sizes.join(" / "))
            };
            w.line(format!(
                "char *{}[{}];  // REGION_{}_0.., {bytes}",
                g.name,
                g.members.len(),
                upper(&g.name),
            ));
        } else if let Some(r) = first {
            w.line(format!(
                "char *{};  // REGION_{}, raw_{}_bytes() = {} B",
                r.name,
                upper(&r.name),
                r.name.to_ascii_lowercase(),
                r.size
            ));
        }
    }
    held_accessors(w, ir);
    w.line("__device__ SmemView(char *smem, TaskDesc const *task_desc)");
    let n = ir.region_groups.len();
    for (i, g) in ir.region_groups.iter().enumerate() {
        let lead = if i == 0 { "    : " } else { "      " };
        let tail = if i + 1 == n { " {}" } else { "," };
        let offs: Vec<String> = g
            .members
            .iter()
            .map(|h| {
                format!(
                    "smem + task_desc->smem_region_offset(REGION_{})",
                    upper(&ir.regions[*h].name)
                )
            })
            .collect();
        if g.staged {
            w.line(format!("{lead}{}{{{}}}{tail}", g.name, offs.join(", ")));
        } else if let Some(o) = offs.first() {
            w.line(format!("{lead}{}({o}){tail}", g.name));
        }
    }
    w.close(";");
    w.blank();
}

/// A typed accessor per named member a region holds (`holds f32[13] sums`): `buf.<group>_<member>()`
/// for a single region, `buf.<group>_<member>(stage)` for a stage array, the member's type at its
/// laid-out offset in that region (`ir::held`; per stage where the stages' layouts differ). A
/// helper's view (`back::helper`) has the same accessors, by the helper's own region names.
pub(super) fn held_accessors(w: &mut Writer, ir: &TaskIr) {
    for a in ir.member_accessors() {
        let (g, m) = (a.group, a.member);
        let ty = m.ty.cuda_type();
        let member = m.name.as_deref().unwrap_or_default();
        let what = format!("`{}` holds {}[{}] `{member}`", g.name, m.ty.name(), m.count);
        if !a.staged() {
            w.line(format!(
                "__device__ {ty} *{}() const {{ return reinterpret_cast<{ty} *>({} + {}); }}  // {what} at byte {}",
                a.name(),
                g.name,
                m.offset,
                m.offset
            ));
            continue;
        }
        // Each stage's region lays its members out alike unless a count depends on `stage`.
        let offsets: Vec<i64> = g
            .members
            .iter()
            .map(|h| ir.regions[*h].member_offset(member).unwrap_or(m.offset))
            .collect();
        let name = a.name();
        if offsets.iter().all(|o| *o == m.offset) {
            w.line(format!(
                "__device__ {ty} *{name}(int stage) const {{ return reinterpret_cast<{ty} *>({}[stage] + {}); }}  // {what} in each stage, at byte {}",
                g.name, m.offset, m.offset
            ));
        } else {
            let list: Vec<String> = offsets.iter().map(|o| o.to_string()).collect();
            w.line(format!(
                "__device__ {ty} *{name}(int stage) const {{ constexpr int kAt[] = {{{}}}; return reinterpret_cast<{ty} *>({}[stage] + kAt[stage]); }}  // {what} in each stage, at its byte",
                list.join(", "),
                g.name
            ));
        }
    }
}

/// The typed pointer of a tensor. An input read as [`Access::Weight`] is `const __restrict__`
/// (nvcc may read it with `ld.global.nc`); any other input has no `__restrict__`, so that nvcc
/// never turns its loads into non-coherent ones: a task of the same launch may have written it.
/// Where a body's pointer comes from, and how it may be used.
#[derive(Clone, Copy)]
enum Slot {
    /// `input_ptrs[i]`, read-only.
    Input(usize, Access),
    /// `input_ptrs[i]` of an inline body's input declared `weight`: no `__restrict__` (the body
    /// reads every input coherently), but no task of the launch writes it either.
    InlineWeight(usize),
    /// `input_ptrs[i]` of an `inout` tensor, written (and read) in place.
    InOut(usize),
    /// `output_ptrs[i]`.
    Output(usize),
}

fn pointer_decl(t: &TensorIr, name: &str, slot: Slot) -> String {
    let ty = t.dtype.cuda_type();
    let dims: Vec<String> = t.dims.iter().map(|d| d.to_string()).collect();
    match slot {
        // The op's scratch is read back after a grid barrier, written by other tasks: no
        // `__restrict__` promise about it.
        Slot::Output(index) if t.role() == Some(crate::ir::TensorRole::Scratch) => format!(
            "{ty} *const {name} = static_cast<{ty} *>(task_desc->output_ptrs[{index}]);  // `{}`: {}[{}], scratch: written and read by the op's tasks",
            t.name,
            t.dtype,
            dims.join(", ")
        ),
        Slot::Output(index) => format!(
            "{ty} *__restrict__ const {name} = static_cast<{ty} *>(task_desc->output_ptrs[{index}]);  // `{}`: {}[{}]",
            t.name,
            t.dtype,
            dims.join(", ")
        ),
        Slot::InOut(index) => format!(
            "{ty} *const {name} = static_cast<{ty} *>(task_desc->input_ptrs[{index}]);  // `{}`: {}[{}], inout: updated in place",
            t.name,
            t.dtype,
            dims.join(", ")
        ),
        Slot::InlineWeight(index) => format!(
            "{ty} const *const {name} = static_cast<{ty} const *>(task_desc->input_ptrs[{index}]);  // `{}`: {}[{}], weight: written by no task of this launch (read coherently through this pointer; mpkc::ld_global_nc_v8 may read it)",
            t.name,
            t.dtype,
            dims.join(", ")
        ),
        Slot::Input(index, access) => {
            let (restrict, what) = match access {
                Access::Weight => ("__restrict__ ", "weight, read-only for the launch"),
                Access::Activation => ("", "written in this launch: coherent loads only"),
            };
            format!(
                "{ty} const *{restrict}const {name} = static_cast<{ty} const *>(task_desc->input_ptrs[{index}]);  // `{}`: {}[{}], {what}",
                t.name,
                t.dtype,
                dims.join(", ")
            )
        }
    }
}

/// An inline body's row step of a view: `<name>_row_stride` (elements between rows).
fn row_stride_decl(w: &mut Writer, t: &TensorIr) {
    if let Some(v) = &t.view {
        w.line(format!(
            "constexpr int64_t {}_row_stride = {};  // `{}` is a view: rows {} elements apart (its columns start {} into each parent row)",
            t.name,
            crate::back::names::int_literal(v.row_stride),
            t.name,
            v.row_stride,
            v.offset
        ));
    }
}

/// An inline body's page geometry of a paged KV cache (`paged(page P, max_context C, requests
/// R)`): `<name>_page_tokens`, `<name>_max_context`, `<name>_requests`; the page table itself is
/// the runtime configuration's (`mpkc::paged_kv_request`, `mpkc_prelude.cuh`).
fn paged_decl(w: &mut Writer, t: &TensorIr) {
    if let Some(p) = &t.paged {
        let int = crate::back::names::int_literal;
        w.line(format!(
            "constexpr int {}_page_tokens = {};  // `{}` is a pool of pages of {} tokens, addressed through runtime_config.paged_kv_* (mpkc::paged_kv_request)",
            t.name,
            int(p.page_tokens),
            t.name,
            p.page_tokens
        ));
        w.line(format!(
            "constexpr int {}_max_context = {};  // tokens of context per request, at most",
            t.name,
            int(p.max_context)
        ));
        w.line(format!(
            "constexpr int {}_requests = {};  // requests per step, one token each: token row r is request r",
            t.name,
            int(p.requests)
        ));
    }
}

fn consumer_fn(w: &mut Writer, task: &CheckedTask, info: &ContractInfo) {
    let ir = &task.ir;
    let handoff = crate::plan::sems::needs_page_handoff(ir);
    let ring_loader = super::consumer_ring::loader_fn(w, task, info);
    if handoff && !ring_loader {
        w.comment("The loader role (W4), the page prefix itself (the registration's auto_loader_page_lifecycle =");
        w.comment("false): lane p waits page p with this task's parity if the task uses it, lane 0 hands the pages to");
        w.comment("the consumer warpgroup, then lane p waits and frees page p if the task does not use it. The one");
        w.comment("role observing page parity, on every page of every task of the queue (I-P5); the used pages");
        w.comment("first, so that where MPK's planner gave this task pages the task before it leaves unused (I-S12)");
        w.comment("the consumer starts without waiting for that task's release.");
        w.open(format!(
            "__device__ __noinline__ void loader({ROLE_PARAMS})"
        ));
        w.line("(void)runtime_config;");
        w.line("(void)iter_num;");
        super::page_prefix::used_mask(w);
        super::page_prefix::acquire_used(w);
        w.line("if (page == 0) mpkc::rt::mbar_arrive(&mpkc::rt::op_sem_base(runtime_smem, instruction_index)[SEM_PAGES_READY]);  // pages_ready: 1 arrival");
        super::page_prefix::free_unused(w);
        w.close("");
        w.blank();
    }
    w.comment("The consumer role (W0-3). The runtime runs the dependency prefix before it and the page suffix");
    w.comment("after it; see Registration.");
    w.open(format!(
        "__device__ __noinline__ void consumer({ROLE_PARAMS})"
    ));
    w.line("if (threadIdx.x >= kConsumerThreads) return;");
    if handoff {
        w.comment("The task's pages are the loader's once it saw each one released by the task before (I-P5).");
        w.line("mpkc::rt::mbar_wait(&mpkc::rt::op_sem_base(runtime_smem, instruction_index)[SEM_PAGES_READY], 0, \"sem_pages_ready\", 0);");
    }
    if !ir.regions.is_empty() {
        w.line("extern __shared__ __align__(1024) char smem[];");
        w.line("SmemView const buf(smem, task_desc);");
    }
    // Tensor pointers: named after the template's formals, or after the tensors for inline CUDA.
    // An `inout` tensor is an input slot: read through a `const` pointer where a template's input
    // formal takes it, written through a plain one (never `__restrict__`: both name one buffer).
    let formals_of = |h| -> Vec<&'static str> {
        task.binding.as_ref().map_or_else(Vec::new, |b| {
            b.tensors
                .iter()
                .filter(|(_, t)| *t == h)
                .map(|(f, _)| *f)
                .collect()
        })
    };
    let is_output_formal = |formal: &str| {
        task.binding
            .as_ref()
            .is_some_and(|b| b.sig.outputs.iter().any(|f| f.name == formal))
    };
    // The template says which inputs are weights; an inline body's inputs are all read as
    // activations whatever their role (the conservative default: coherent), its own code
    // choosing the non-coherent path for a weight.
    let access_of = |formal: &str| {
        task.binding
            .as_ref()
            .and_then(|b| b.sig.inputs.iter().find(|f| f.name == formal))
            .map_or(Access::Activation, |f| f.access)
    };
    if task.binding.is_none() && ir.inputs().next().is_some() {
        w.comment("Inline body: every input is read as one a task of this launch may write (no __restrict__,");
        w.comment(
            "so nvcc never emits ld.global.nc), whatever its role: a `weight` may be loaded with",
        );
        w.comment("mpkc::ld_global_nc_v8 by the body itself.");
    }
    if task.binding.is_none() {
        inline_tensor_decls(w, ir);
    }
    for (i, (h, t)) in ir.inputs().enumerate() {
        if task.binding.is_none() {
            continue;
        }
        for f in formals_of(h) {
            let slot = if is_output_formal(f) {
                Slot::InOut(i)
            } else {
                Slot::Input(i, access_of(f))
            };
            w.line(pointer_decl(t, f, slot));
        }
    }
    for (i, (h, t)) in ir.outputs().enumerate() {
        if task.binding.is_none() {
            continue;
        }
        for f in formals_of(h) {
            w.line(pointer_decl(t, f, Slot::Output(i)));
        }
    }
    w.line("int const task_offset = task_desc->task_metadata.task_offset;");
    super::grid::consumer_locals(w, ir);
    super::helper::bind_all(w, ir);
    super::consumer_ring::consumer_ends(w, task);
    runtime_rows(w, task);
    w.line("(void)runtime_config;");
    w.line("(void)runtime_smem;");
    w.line("(void)instruction_index;");
    w.line("(void)iter_num;");
    w.line("(void)task_offset;");
    // The role program of a consumer-only family is its body on the consumer warpgroup (the
    // runtime's page prefix and suffix around it); it has nothing else to render.
    let has_body = task.programs.first().is_some_and(|p| {
        crate::back::roles::ops_of(p, crate::ir::RoleKind::Consumer)
            .iter()
            .any(|o| matches!(o, crate::lower::Op::Step(crate::lower::Step::Body)))
    });
    match (&ir.body, &task.binding) {
        _ if !has_body => {}
        (_, Some(b)) => {
            w.comment(format!("---- body: {} ({}) ----", b.sig.name, b.body_path));
            w.open("");
            w.raw(b.body);
            w.close("");
        }
        (
            Some(BodyIr::Cuda {
                code, code_span, ..
            }),
            None,
        ) => {
            w.comment("---- body: inline CUDA from the contract ----");
            w.open("");
            super::banner::contract_block(w, info, code, *code_span, &ir.unit_name());
        }
        _ => {}
    }
    w.close("");
    w.blank();
}

/// An inline body's tensors: one typed pointer per tensor named after it (every input read
/// coherently, an `inout` one written in place), and each view's row stride and paged pool's
/// geometry. The consumer's body and a consumer ring's loader body see the same names.
pub(super) fn inline_tensor_decls(w: &mut Writer, ir: &TaskIr) {
    for (i, (_, t)) in ir.inputs().enumerate() {
        let slot = if t.direction == Direction::InOut {
            Slot::InOut(i)
        } else if t.role() == Some(crate::ir::TensorRole::Weight) {
            Slot::InlineWeight(i)
        } else {
            Slot::Input(i, Access::Activation)
        };
        w.line(pointer_decl(t, &t.name, slot));
        row_stride_decl(w, t);
        paged_decl(w, t);
    }
    for (i, (_, t)) in ir.outputs().enumerate() {
        w.line(pointer_decl(t, &t.name, Slot::Output(i)));
        row_stride_decl(w, t);
    }
}

/// For a run-time token count (`= runtime`, docs/runtime-m.md): `kRows`, the rows of this step,
/// read where MPK's runtime keeps the batch's token count and clamped to the compile-time
/// maximum `kMaxRows` (rows at or past it are neither read nor written by the body).
fn runtime_rows(w: &mut Writer, task: &CheckedTask) {
    let Some(p) = task.ir.runtime_tokens() else {
        return;
    };
    if task.binding.is_none() {
        return;
    }
    w.line(format!(
        "int const kRows = mpkc::runtime_tokens(runtime_config, kMaxRows);  // `{}`: this step's tokens, at most kMaxRows",
        p.name
    ));
}

fn registration(w: &mut Writer, task: &CheckedTask) {
    let ir = &task.ir;
    let reg = super::registration::Registration::of(task)
        .unwrap_or(super::registration::Registration::CONSUMER);
    w.comment("What task_register.cc registers for this variant (TaskRoleVariantCode, contract doc §3.3), as a");
    if reg.auto_loader_page_lifecycle {
        w.comment("type. Page mode 1: the runtime's loader prefix waits every page and frees the unused ones, and its");
        w.comment("consumer suffix frees the used ones (auto_loader_page_lifecycle, auto_consumer_finish).");
    } else {
        w.comment(
            "type. Page mode 1: the loader body waits every page and frees the unused ones itself",
        );
        w.comment("(auto_loader_page_lifecycle = false), and the runtime's consumer suffix frees the used ones");
        w.comment("(auto_consumer_finish).");
    }
    if reg.bodies[1] {
        w.comment("The loader body hands the pages to the consumer through `pages_ready` (I-P5).");
    } else {
        w.comment("Only the consumer body is non-empty: the task uses no page.");
    }
    w.open("struct Registration");
    match ir.task_id {
        Some(id) => w.line(format!("static constexpr int kTaskType = {id};")),
        None => w.line("static constexpr int kTaskType = -1;  // no `task_id` in the contract"),
    }
    reg.flag_members(w);
    super::setmaxnreg::registration_members(w, ir);
    match task.programs.first().filter(|p| p.ordinal_count() > 0) {
        // One kernel serves every declared target: their tables agree (a consumer-only role
        // program does not depend on the target), else each target gets its own under its
        // architecture's guard.
        Some(prog)
            if task
                .programs
                .iter()
                .all(|p| super::registration::same_ordinals(prog, p)) =>
        {
            let also: Vec<crate::ir::Target> =
                task.programs[1..].iter().map(|p| p.target).collect();
            super::registration::semaphore_members(w, prog, &also)
        }
        Some(_) => {
            for (i, p) in task.programs.iter().enumerate() {
                let guard = match p.target {
                    crate::ir::Target::Sm100a => "defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000",
                    crate::ir::Target::Sm90a => "defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 1000",
                };
                // The last target takes whatever the guards before it leave (nvcc's host pass
                // too, which defines no `__CUDA_ARCH__`).
                if i == 0 {
                    w.line(format!("#if {guard}"));
                } else if i + 1 == task.programs.len() {
                    w.line("#else");
                } else {
                    w.line(format!("#elif {guard}"));
                }
                super::registration::semaphore_members(w, p, &[]);
            }
            w.line("#endif");
        }
        None => {
            // No region, hence no hand-off: the role program has no barrier.
            w.line("__device__ static void init_semaphores(uint64_t *) {}");
            w.comment("No op-private barrier, hence none re-initialised by a role (harness checks, I-M4).");
            w.line("static constexpr uint32_t kReinitOrdinals = 0u;");
            w.line("__device__ static char const *ordinal_name(int) { return \"\"; }");
            w.line("__device__ static char const *reinit_owner(int) { return \"\"; }");
        }
    }
    reg.role_members(w, &ir.unit_name());
    w.close(";");
    w.blank();
    super::setmaxnreg::cuh_guard(w, ir);
}

/// Whether one of the task's inline bodies (the consumer's or a ring loader's), or a helper's it
/// uses, names `cooperative_groups` (a warp
/// tile's `shfl` or `sync`, a group's `size`): the kernel then includes `<cooperative_groups.h>`,
/// which neither mpkc's prelude nor the harness does, so that what check accepts builds. The
/// barriers that would synchronise the block are E0406 at check (`valid::group_barriers`).
fn uses_cooperative_groups(ir: &crate::ir::TaskIr) -> bool {
    let names = |b: &Option<BodyIr>| matches!(b, Some(BodyIr::Cuda { code, .. }) if code.contains("cooperative_groups"));
    names(&ir.body) || names(&ir.loader_body) || ir.helpers.iter().any(|h| names(&h.helper.body))
}
