//! Hover text (markdown): on a task name its budget per instance and target (region bytes, pages
//! of 14, ordinals of 31, TMEM columns) and the page map; on a region its size, alignment,
//! physical pages and offset in the current plan; on a channel or sem its ordinals with counts,
//! producer → consumer, arrival and re-init owner; on a param, tensor, role or barrier its
//! value in each instance.

use super::document::Document;
use super::index::SymKind;
use crate::driver::plan_view::plan_text;
use crate::ir::{TaskIr, TensorRole, MAX_OPTIN_SMEM_BYTES};
use crate::plan::pages::NUM_PAGES;
use crate::valid::CheckedTask;
use std::fmt::Write as _;

/// Op-private ordinals per task (I-M1).
const MAX_ORDINALS: usize = 31;

fn inst(ir: &TaskIr) -> String {
    ir.instance.as_ref().map_or_else(
        || "(no instance)".to_string(),
        |i| format!("instance `{i}`"),
    )
}

/// The hover text of the symbol at byte `offset`, if any.
pub fn hover(doc: &Document, offset: usize) -> Option<String> {
    let Some(i) = doc.index.at(offset) else {
        return super::words::hover(doc, offset);
    };
    let sym = &doc.index.symbols[i];
    let task = doc
        .index
        .symbols
        .iter()
        .find(|s| s.kind == SymKind::Task && s.task == sym.task)?
        .name
        .clone();
    let mut out = String::new();
    let checked: Vec<&CheckedTask> = doc.instances(&task).collect();
    let rejected: Vec<&TaskIr> = doc.rejected(&task).collect();
    match sym.kind {
        SymKind::Task => task_hover(&mut out, &task, &checked, &rejected),
        SymKind::Region => region_hover(&mut out, &sym.name, &checked, &rejected),
        SymKind::Channel | SymKind::Sem => ordinal_hover(&mut out, sym.kind, &sym.name, &checked),
        SymKind::Param => {
            let _ = writeln!(out, "**param `{}`**\n", sym.name);
            for ir in checked
                .iter()
                .map(|t| &t.ir)
                .chain(rejected.iter().copied())
            {
                if let Some(p) = ir.params.get(&sym.name) {
                    let _ = writeln!(out, "- {}: {}", inst(ir), p.value_text());
                }
            }
        }
        SymKind::Tensor => {
            let _ = writeln!(out, "**tensor `{}`**\n", sym.name);
            for ir in checked
                .iter()
                .map(|t| &t.ir)
                .chain(rejected.iter().copied())
            {
                if let Some((_, t)) = ir.tensors.iter().find(|(_, t)| t.name == sym.name) {
                    let tma = t
                        .tma
                        .as_ref()
                        .map(|m| {
                            format!(
                                ", TMA box {:?} ({} B per box)",
                                m.box_dims,
                                // A rejected box may overflow 64 bits: say so, never a wrong number.
                                m.box_bytes(t.dtype).map_or_else(
                                    || format!("more than {}", i64::MAX),
                                    |b| b.to_string()
                                )
                            )
                        })
                        .unwrap_or_default();
                    let role = match t.role() {
                        Some(TensorRole::ScaleOf(x)) => {
                            format!(", role: the block scales of `{}`", ir.tensors[x].name)
                        }
                        Some(r) => format!(", role: {}", r.word()),
                        None => String::new(),
                    };
                    // The pointer slot: `inout` tensors are inputs (MPK's in-place convention).
                    let slot = match t.direction {
                        crate::ir::Direction::Out => ir
                            .outputs()
                            .position(|(_, x)| x.name == t.name)
                            .map(|i| format!("output_ptrs[{i}]")),
                        _ => ir
                            .inputs()
                            .position(|(_, x)| x.name == t.name)
                            .map(|i| format!("input_ptrs[{i}]")),
                    }
                    .unwrap_or_default();
                    let view = t
                        .view
                        .map(|v| {
                            format!(
                                ", view: rows {} elements apart from column {} of the parent",
                                v.row_stride, v.offset
                            )
                        })
                        .unwrap_or_default();
                    let paged = t
                        .paged
                        .map(|p| {
                            format!(
                                ", paged: pages of {} tokens, {} requests of up to {} tokens, through the runtime's page table",
                                p.page_tokens, p.requests, p.max_context
                            )
                        })
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "- {}: {}{:?} {} ({slot}){role}{view}{paged}{tma}",
                        inst(ir),
                        t.dtype,
                        t.dims,
                        t.direction.as_str()
                    );
                }
            }
        }
        SymKind::Role => {
            let _ = writeln!(out, "**role `{}`**\n", sym.name);
            if let Some(ir) = checked.first().map(|t| &t.ir).or(rejected.first().copied()) {
                for r in ir.roles.iter().filter(|r| r.kind.to_string() == sym.name) {
                    let _ = writeln!(
                        out,
                        "warps W{}..W{} (threads {}..{})",
                        r.first_warp,
                        r.last_warp,
                        r.first_warp * 32,
                        r.last_warp * 32 + 31
                    );
                }
            }
        }
        SymKind::Barrier => {
            let _ = writeln!(out, "**barrier `{}`**\n", sym.name);
            if let Some(ir) = checked.first().map(|t| &t.ir).or(rejected.first().copied()) {
                for (_, b) in ir.barriers.iter().filter(|(_, b)| b.name == sym.name) {
                    let _ = writeln!(
                        out,
                        "`bar.sync {}, {}` by the {} warps",
                        b.id, b.threads, b.by
                    );
                }
            }
        }
        SymKind::Instance => {
            let _ = writeln!(
                out,
                "**instance `{}`**: generates `{task}_{}.*`",
                sym.name, sym.name
            );
        }
    }
    // Nothing known to say (a task that failed before lowering): no hover rather than an empty one.
    let title_only =
        out.lines().filter(|l| !l.trim().is_empty()).count() <= 1 && sym.kind != SymKind::Instance;
    if out.trim().is_empty() || title_only {
        return None;
    }
    Some(out)
}

fn task_hover(out: &mut String, task: &str, checked: &[&CheckedTask], rejected: &[&TaskIr]) {
    let _ = writeln!(out, "**task `{task}`**\n");
    let _ = writeln!(
        out,
        "| instance | target | region bytes | capacity | pages | ordinals | TMEM cols |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for t in checked {
        let tmem =
            t.ir.tmem_cols
                .map_or("-".to_string(), |(c, _)| c.to_string());
        for (target, g, plan) in &t.plans {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} of {NUM_PAGES} | {} of {MAX_ORDINALS} | {tmem} |",
                t.ir.instance.as_deref().unwrap_or("-"),
                target.target,
                t.ir.region_bytes(),
                g.capacity_bytes,
                plan.pages_used,
                t.program(target.target).map_or(0, |p| p.ordinal_count())
            );
        }
    }
    for ir in rejected {
        for target in &ir.targets {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | rejected | - | - |",
                ir.instance.as_deref().unwrap_or("-"),
                target.target,
                ir.region_bytes(),
                target.smem_capacity_bytes
            );
        }
    }
    if !rejected.is_empty() {
        let _ = writeln!(out, "\nRejected instances: see the diagnostics (the hardware opt-in maximum is {MAX_OPTIN_SMEM_BYTES} B).");
    }
    if let Some(t) = checked.first() {
        if let Some((target, g, plan)) = t.plans.first() {
            let _ = writeln!(
                out,
                "\nPage map:\n```text\n{}```",
                plan_text(&t.ir, target, g, plan)
            );
        }
    }
}

fn region_hover(out: &mut String, name: &str, checked: &[&CheckedTask], rejected: &[&TaskIr]) {
    let Some(ir) = checked.first().map(|t| &t.ir).or(rejected.first().copied()) else {
        return;
    };
    let Some(g) = ir.region_groups.iter().find(|g| g.name == name) else {
        return;
    };
    let first = g.members.first().map(|h| &ir.regions[*h]);
    let _ = writeln!(
        out,
        "**region `{name}`**{}\n",
        if g.staged {
            format!(" ({} stages)", g.members.len())
        } else {
            String::new()
        }
    );
    if let Some(r) = first {
        let _ = writeln!(
            out,
            "{} B each, align {}, release step {}{}\n",
            r.size,
            r.align,
            r.release_step,
            if r.can_pack { ", packable" } else { "" }
        );
    }
    for t in checked {
        for (target, _, plan) in &t.plans {
            let _ = writeln!(out, "{} on {}:\n", inst(&t.ir), target.target);
            for h in &g.members {
                let rn = &t.ir.regions[*h].name;
                if let Some(p) = plan.regions.iter().find(|p| &p.name == rn) {
                    let pages = match (p.pages.first(), p.pages.last()) {
                        (Some(a), Some(b)) if a != b => format!("pages {a}-{b}"),
                        (Some(a), _) => format!("page {a}"),
                        _ => "no page".to_string(),
                    };
                    let _ = writeln!(
                        out,
                        "- `{rn}` (REGION ordinal {}): {} B, {pages}, offset {}",
                        p.ordinal, p.size, p.offset
                    );
                }
            }
            out.push('\n');
        }
    }
    if checked.is_empty() {
        let _ = writeln!(
            out,
            "Not planned: the task has errors (see the diagnostics); its regions need {} B in all.",
            ir.region_bytes()
        );
    }
}

fn ordinal_hover(out: &mut String, kind: SymKind, name: &str, checked: &[&CheckedTask]) {
    let _ = writeln!(out, "**{} `{name}`**\n", kind.keyword());
    let Some(t) = checked.first() else {
        let _ = writeln!(
            out,
            "No ordinals: the task has errors (see the diagnostics)."
        );
        return;
    };
    // One row per target and ordinal, from that target's role program: the counts and roles its
    // kernel initialises and the model check proved (sm_90a ring empties: 128 consumer threads).
    let mut rows = Vec::new();
    for p in &t.programs {
        for (k, b, slot) in p
            .ordinals()
            .filter(|(_, b, _)| b.label == name || b.label.starts_with(&format!("{name}.")))
        {
            let barrier = b.slot_name(slot);
            let reinit = b.reinit.map_or("none".to_string(), |r| r.to_string());
            rows.push(format!(
                "| {} | {k} | `{barrier}` | {} | {} → {} | {} | {reinit} |{}",
                p.target,
                b.count(slot),
                b.producer,
                b.waiter,
                b.arrival.kind_str(),
                if b.used { "" } else { " unused on this target" }
            ));
        }
    }
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "Shares the barriers of another channel (no ordinals of its own)."
        );
        return;
    }
    let _ = writeln!(
        out,
        "| target | ordinal | barrier | count | producer → waiter | arrival | re-init |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for r in rows {
        let _ = writeln!(out, "{r}");
    }
}
