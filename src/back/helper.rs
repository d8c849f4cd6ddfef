//! Helpers (family E) in their callers' kernels (docs/language.md, "Helpers"). For each `use` of
//! a consumer task, its `<unit>.cuh` holds a namespace `helper_<name>` with the helper's params
//! (as the `use` line binds them), its named barriers, its SMEM view and its `__device__
//! __forceinline__` function:
//!
//! ```text
//! void NAME(SmemView const buf, <one pointer per tensor: T const *x for in, T *x for out/inout>)
//! ```
//!
//! called by all 128 consumer threads (W0-3), converged, with the same arguments; it syncs only
//! on its own named barriers (`bar.sync ID, 128`) and uses only its own regions, which sit in
//! the caller's plan as `<helper>_<region>`. The consumer binds the view in a lambda of the
//! helper's name, so the body calls `NAME(pointers…)`.

use super::names::{c_string, double_literal, float_literal, int_literal, upper};
use super::writer::Writer;
use crate::ir::{helper_params, BodyIr, HelperUseIr, ParamType, ParamValue, TaskIr};

/// The namespace of helper `name` inside its caller's namespace.
pub fn namespace(name: &str) -> String {
    format!("helper_{name}")
}

/// What a helper's function is, line by line: its signature, who calls it, what it syncs on and
/// what SMEM it takes (the kernel's comment and the design document's section).
pub fn contract_lines(helper: &TaskIr) -> Vec<String> {
    let mut out = vec![format!(
        "__device__ __forceinline__ void {}(SmemView const buf{})",
        helper.name,
        helper_params(helper)
            .iter()
            .map(|p| format!(", {p}"))
            .collect::<String>()
    )];
    out.push("Called by all 128 consumer threads (W0-3) of the calling task, converged, with the same arguments.".into());
    if helper.barriers.is_empty() {
        out.push("Syncs on no named barrier (warp-level collectives at most).".into());
    } else {
        let bars: Vec<String> = helper
            .barriers
            .values()
            .map(|b| format!("`{}` (bar.sync {}, {})", b.name, b.id, b.threads))
            .collect();
        out.push(format!(
            "Syncs on its named barrier{} {}.",
            if bars.len() == 1 { "" } else { "s" },
            bars.join(", ")
        ));
    }
    if helper.regions.is_empty() {
        out.push("Takes no SMEM.".into());
    } else {
        let regs: Vec<String> = helper
            .regions
            .values()
            .map(|r| format!("`{}` ({} B, align {})", r.name, r.size, r.align))
            .collect();
        out.push(format!(
            "Takes SMEM region{} {}, placed in the caller's plan as `{}_<region>`.",
            if regs.len() == 1 { "" } else { "s" },
            regs.join(", "),
            helper.name
        ));
    }
    out
}

/// The helper namespaces of every `use` of `ir` (nothing without one).
/// `file` is the generated file's name, which a `#line` restores after the helper's code.
pub fn emit_all(w: &mut Writer, ir: &TaskIr, file: &str) {
    for h in &ir.helpers {
        emit(w, h, file);
    }
}

fn emit(w: &mut Writer, h: &HelperUseIr, file: &str) {
    let helper = &h.helper;
    let ns = namespace(&h.name);
    w.comment(format!(
        "Helper `{}` ({}), family E, as this task's `use` binds it.",
        h.name, h.path
    ));
    w.open_namespace(&ns);
    w.blank();
    if !helper.params.is_empty() {
        w.open_namespace("params");
        for p in helper.params.values() {
            let val = match (&p.value, p.ty) {
                (ParamValue::Float(f), ParamType::F64) => double_literal(*f),
                (ParamValue::Float(f), _) => float_literal(*f),
                (ParamValue::Int(v), _) => int_literal(*v),
                (ParamValue::Bool(b), _) => b.to_string(),
            };
            w.line(format!(
                "inline constexpr {} {} = {val};",
                p.ty.c_type(),
                p.name
            ));
        }
        w.close_namespace("params");
        w.blank();
    }
    w.line("constexpr int kConsumerThreads = 128;");
    if !helper.barriers.is_empty() {
        w.comment("Its named barriers (the caller's registry holds them as BAR_<HELPER>_<NAME>).");
        w.open("enum NamedBarrier : int");
        for b in helper.barriers.values() {
            w.line(format!(
                "BAR_{} = {},  // {} threads",
                upper(&b.name),
                b.id,
                b.threads
            ));
        }
        w.close(";");
    }
    if helper.region_groups.is_empty() {
        w.comment("Its SMEM view: empty, the helper takes no SMEM.");
        w.line("struct SmemView {};");
    } else {
        smem_view(w, helper);
    }
    w.blank();
    for l in contract_lines(helper).iter().skip(1) {
        w.comment(l);
    }
    function(w, h, file);
    w.close_namespace(&ns);
    w.blank();
}

fn smem_view(w: &mut Writer, helper: &TaskIr) {
    w.comment("Its SMEM view: the caller's regions the helper placed, by the helper's own names.");
    w.open("struct SmemView");
    for g in &helper.region_groups {
        let size = g.members.first().map_or(0, |m| helper.regions[*m].size);
        if g.staged {
            w.line(format!(
                "char *{}[{}];  // {size} B per stage",
                g.name,
                g.members.len()
            ));
        } else {
            w.line(format!("char *{};  // {size} B", g.name));
        }
    }
    // Its named members' typed accessors (`buf.cand_val()`), as a consumer's view has them:
    // `valid::body` accepts them in a helper's body as in a task's.
    super::consumer::held_accessors(w, helper);
    w.close(";");
}

fn function(w: &mut Writer, h: &HelperUseIr, file: &str) {
    let helper = &h.helper;
    w.open(&contract_lines(helper)[0]);
    w.line("(void)buf;");
    if let Some(BodyIr::Cuda { code, .. }) = &helper.body {
        w.verbatim(&format!("#line {} {}", h.body_line, c_string(&h.path)));
        w.verbatim(&format!("{code}}}"));
        line_back(w, file);
        w.skip_close();
    } else {
        w.close("");
    }
    w.blank();
}

/// Restores the generated file's own line numbers after a helper's `#line` (the caller passes
/// the writer's next line and its file name).
pub fn line_back(w: &mut Writer, file: &str) {
    let next = w.line_count() + 2;
    w.verbatim(&format!("#line {next} \"{file}\""));
}

/// In the consumer function: one lambda per helper, named after it, that binds the helper's
/// SMEM view to the caller's placed regions, so the body calls `NAME(pointers…)`.
pub fn bind_all(w: &mut Writer, ir: &TaskIr) {
    for h in &ir.helpers {
        let ns = namespace(&h.name);
        let params = helper_params(&h.helper);
        let args: Vec<&str> = h.helper.tensors.values().map(|t| t.name.as_str()).collect();
        let view: Vec<String> = h
            .region_groups
            .iter()
            .map(|g| {
                let g = &ir.region_groups[*g];
                if g.staged {
                    let stages: Vec<String> = (0..g.members.len())
                        .map(|k| format!("buf.{}[{k}]", g.name))
                        .collect();
                    format!("{{{}}}", stages.join(", "))
                } else {
                    format!("buf.{}", g.name)
                }
            })
            .collect();
        let capture = if view.is_empty() { "" } else { "&buf" };
        w.line(format!(
            "auto const {} = [{capture}]({}) {{ {ns}::{}({ns}::SmemView{{{}}}{}); }};  // helper `{}` ({})",
            h.name,
            params.join(", "),
            h.name,
            view.join(", "),
            args.iter().map(|a| format!(", {a}")).collect::<String>(),
            h.name,
            h.path
        ));
    }
}
