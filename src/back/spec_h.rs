//! `<unit>_spec.h`: the host-safe header MPK's registration and the kernel both include (I-H6:
//! no `__device__`, no asm). It holds the params, the region ordinals (assigned by declaration
//! index, contract doc §1.3), raw sizes, `make_smem_info()`, the capacity `static_assert`s, the
//! page plan as a comment, the semaphore table as data and the named-barrier registry.

use super::banner::{banner, ContractInfo};
use super::names::{c_string, double_literal, float_literal, int_literal, upper};
use super::writer::Writer;
use crate::ir::{ParamType, ParamValue, RoleKind, TaskIr};
use crate::lower::RoleProgram;
use crate::plan::pages::{PagePlan, NUM_PAGES, PAGE_SIZE};
use crate::valid::CheckedTask;

/// Emits the spec header.
pub fn emit(task: &CheckedTask, info: &ContractInfo) -> String {
    let ir = &task.ir;
    let unit = ir.unit_name();
    let mut w = Writer::new();
    w.line(banner(ir, info));
    w.line("// Host-safe (I-H6): included by MPK's task_register.cc and by the kernel; no device code.");
    w.line("#pragma once");
    w.blank();
    w.line("#include \"mpkc_spec_support.h\"");
    w.blank();
    w.open_namespace(&format!("kernel::{unit}"));
    w.blank();
    params(&mut w, ir);
    regions(&mut w, task);
    page_map(&mut w, ir, task.primary_plan());
    smem_info(&mut w, task);
    sems(&mut w, &task.programs);
    barriers(&mut w, ir);
    w.close_namespace(&format!("kernel::{unit}"));
    w.finish()
}

fn params(w: &mut Writer, ir: &TaskIr) {
    if ir.params.is_empty() {
        return;
    }
    w.comment("Params of this instance.");
    w.open_namespace("params");
    for p in ir.params.values() {
        let ty = p.ty.c_type();
        let val = match (&p.value, p.ty) {
            (ParamValue::Float(f), ParamType::F64) => double_literal(*f),
            (ParamValue::Float(f), _) => float_literal(*f),
            (ParamValue::Int(v), _) => int_literal(*v),
            (ParamValue::Bool(b), _) => b.to_string(),
        };
        match p.runtime {
            Some(_) => w.line(format!("inline constexpr {ty} {} = {val};  // the maximum: decided at run time (runtime_config.qo_indptr_buffer[MPK_MAX_NUM_BATCHED_REQUESTS], docs/runtime-m.md)", p.name)),
            None => w.line(format!("inline constexpr {ty} {} = {val};", p.name)),
        }
    }
    w.close_namespace("params");
    w.blank();
}

fn regions(w: &mut Writer, task: &CheckedTask) {
    let ir = &task.ir;
    w.comment(
        "SMEM regions. The ordinal of a region is its declaration index (contract doc §1.3);",
    );
    w.comment("device code addresses a region only through task_desc->smem_region_offset(REGION_*) (I-S9).");
    w.open("enum Region : int");
    for (h, r) in ir.regions.iter() {
        let pack = if r.can_pack { ", pack" } else { "" };
        w.line(format!(
            "REGION_{} = {},  // {} B, align {}{pack}, release {}",
            upper(&r.name),
            h.index(),
            r.size,
            r.align,
            r.release_step
        ));
    }
    w.line(format!("NUM_REGIONS = {},", ir.regions.len()));
    w.close(";");
    w.blank();
    w.comment("Raw region sizes in bytes: the same numbers make_smem_info() registers and the kernel views.");
    for r in ir.regions.values() {
        w.line(format!(
            "constexpr int raw_{}_bytes() {{ return {}; }}",
            r.name.to_ascii_lowercase(),
            r.size
        ));
    }
    if !ir.regions.is_empty() {
        w.blank();
    }
    let total = ir.region_bytes();
    let cap = task.capacity_bytes();
    if cap == crate::ir::DEFAULT_SMEM_CAPACITY_BYTES {
        w.comment("The planner's dynamic SMEM capacity: 225 KiB less the 6 KiB static reserve (contract doc §1.1).");
    } else {
        w.comment("The planner's dynamic SMEM capacity: the smallest `smem` of the declared targets (contract doc §1.1).");
    }
    w.line(format!(
        "inline constexpr int PLANNER_CAPACITY_BYTES = {cap};"
    ));
    w.line(format!("inline constexpr int kRegionBytesTotal = {total};"));
    w.line(format!(
        "inline constexpr int kPagesUsed = {};",
        task.primary_plan().pages_used
    ));
    w.line("static_assert(kRegionBytesTotal <= PLANNER_CAPACITY_BYTES, \"E0103: regions exceed the planner capacity (I-S3)\");");
    w.line("static_assert(NUM_REGIONS <= 16, \"E0105: at most 16 regions per task (I-S2)\");");
    w.line(format!(
        "static_assert(kPagesUsed <= {NUM_PAGES}, \"E0106: a task has {NUM_PAGES} pages of {PAGE_SIZE} bytes (I-S4)\");"
    ));
    w.blank();
}

fn page_map(w: &mut Writer, ir: &TaskIr, plan: &PagePlan) {
    if ir.regions.is_empty() {
        w.comment("Page plan: no regions; the planner forwards the previous task's release order (contract doc §1.6e).");
        w.blank();
        return;
    }
    w.comment("Page plan for a task with no predecessor (identity preferred order); see `mpkc plan --preferred`.");
    for p in 0..NUM_PAGES {
        let on: Vec<String> = plan
            .regions
            .iter()
            .filter(|r| r.pages.contains(&p))
            .map(|r| {
                if r.pages.len() > 1 {
                    format!(
                        "{} (pages {}-{}, {} B)",
                        r.name,
                        r.pages[0],
                        r.pages[r.pages.len() - 1],
                        r.size
                    )
                } else {
                    format!("{} @{} ({} B)", r.name, r.offset, r.size)
                }
            })
            .collect();
        let body = if on.is_empty() {
            "-".to_string()
        } else {
            on.join(", ")
        };
        w.comment(format!("  page {p:>2}: {body}"));
    }
    w.comment(format!(
        "  release order: {:?}; max byte end {}",
        plan.release_order, plan.max_byte_end
    ));
    w.blank();
}

fn smem_info(w: &mut Writer, task: &CheckedTask) {
    let ir = &task.ir;
    w.comment(
        "The registration's region declaration (register_variant_smem_info), assigned by ordinal.",
    );
    w.open("inline ::mpkc::TaskSmemInfo make_smem_info()");
    w.line("::mpkc::TaskSmemInfo info;");
    w.line("info.size = kRegionBytesTotal;");
    w.line("info.alignment = 1024;");
    w.line("info.regions.resize(NUM_REGIONS);");
    for r in ir.regions.values() {
        w.line(format!(
            "info.regions[REGION_{}] = ::mpkc::TaskSmemRegion{{{}, raw_{}_bytes(), {}, {}, {}, {}, {}}};",
            upper(&r.name),
            c_string(&format!("{}_{}", ir.name, r.name)),
            r.name.to_ascii_lowercase(),
            r.align,
            r.page_count,
            r.can_pack,
            r.release_step,
            r.contiguous
        ));
    }
    w.line("return info;");
    w.close("");
    w.blank();
}

fn role(r: Option<RoleKind>) -> &'static str {
    match r {
        None => "::mpkc::Role::None",
        Some(RoleKind::Consumer) => "::mpkc::Role::Consumer",
        Some(RoleKind::Loader) => "::mpkc::Role::Loader",
        Some(RoleKind::Launcher) => "::mpkc::Role::Launcher",
        Some(RoleKind::Storer) => "::mpkc::Role::Storer",
        Some(RoleKind::Controller) => "::mpkc::Role::Controller",
    }
}

/// The name of `target`'s semaphore table in `spec.h`: `kSems_sm100a`, `kSems_sm90a`.
pub(crate) fn sem_table_name(target: crate::ir::Target) -> String {
    format!("kSems_{}", target.as_str().replace('_', ""))
}

/// The ordinal enum, then one semaphore table per declared target, each read from that
/// target's role program: what that target's kernel initialises (its `init_semaphores` reads
/// the table) and what the model check proved (issue 11, case 12).
fn sems(w: &mut Writer, programs: &[RoleProgram]) {
    let n = programs.first().map_or(0, RoleProgram::ordinal_count);
    w.comment("Op-private semaphore ordinals (ordinal k at op_sem_base + 8k; at most 31, I-M1).");
    w.line(format!("inline constexpr int NUM_OP_SEMS = {n};"));
    w.line("static_assert(NUM_OP_SEMS <= 31, \"E0301: a ring slot holds 31 op-private mbarriers (I-M1)\");");
    let Some(first) = programs.first().filter(|_| n > 0) else {
        w.blank();
        return;
    };
    w.blank();
    w.comment("First ordinal of each channel edge and of each one-shot sem.");
    w.open("enum SemOrdinal : int");
    for b in &first.barriers {
        w.line(format!("{} = {},", b.c_name, b.first));
    }
    w.close(";");
    w.blank();
    for p in programs {
        w.comment(format!("{}: name | ordinal | count | producer -> consumer | arrival | re-init at task start by", p.target.as_str()));
        w.open(format!(
            "inline constexpr ::mpkc::SemSpec {}[NUM_OP_SEMS] =",
            sem_table_name(p.target)
        ));
        sem_rows(w, p);
        w.close(";");
    }
    w.blank();
}

fn sem_rows(w: &mut Writer, p: &RoleProgram) {
    for (k, b, slot) in p.ordinals() {
        let arrival = match b.arrival {
            crate::ir::ArrivalIr::Tma(_) | crate::ir::ArrivalIr::Bulk(_) => {
                "::mpkc::Arrival::TmaCompleteTx"
            }
            crate::ir::ArrivalIr::Commit => "::mpkc::Arrival::Commit",
            crate::ir::ArrivalIr::Threads(_) => "::mpkc::Arrival::Thread",
        };
        let name = b.slot_name(slot);
        w.line(format!(
            "{{{}, {k}, {}, {}, {}, {arrival}, {}}},",
            c_string(&name),
            b.count(slot),
            role(Some(b.producer)),
            role(Some(b.waiter)),
            role(b.reinit)
        ));
    }
}

fn barriers(w: &mut Writer, ir: &TaskIr) {
    if ir.barriers.is_empty() {
        return;
    }
    w.comment(
        "Named barriers (bar.sync id, threads); 0 and 8 belong to the runtime (contract doc §3.4).",
    );
    w.open("enum NamedBarrier : int");
    for b in ir.barriers.values() {
        w.line(format!(
            "BAR_{} = {},  // {} threads, {} warps",
            upper(&b.name),
            b.id,
            b.threads,
            b.by
        ));
    }
    w.close(";");
    w.blank();
}
