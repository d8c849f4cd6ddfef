//! "Semaphore ordinals" and "Roles": the barrier table of each target's role program, each role's
//! operations in program order, who re-inits and releases what (the early-exit paths included),
//! and who releases the pages on every control path (the registration of the family).

use crate::back::registration::Registration;
use crate::ir::{GranularityIr, RoleKind};
use crate::lower::{flatten, BarrierSource, Op, RoleProgram, Step};
use crate::valid::CheckedTask;
use std::fmt::Write as _;

fn role_name(r: Option<RoleKind>) -> String {
    r.map_or("none".to_string(), |r| r.to_string())
}

/// Writes the "Named barriers" section: each `barrier` of the contract (its helpers' included)
/// as `spec.h` enumerates it, `bar.sync` id and threads. Ids are megakernel-wide: 0 and 8 are
/// the runtime's (contract doc §3.4), and two tasks' barriers meet only inside one task.
pub(super) fn named_barriers(s: &mut String, task: &CheckedTask) {
    let _ = writeln!(
        s,
        "## Named barriers
"
    );
    if task.ir.barriers.is_empty() {
        let _ = writeln!(
            s,
            "None declared: the kernels use only the runtime's (0 and 8, contract doc §3.4).\n"
        );
        return;
    }
    let _ = writeln!(
        s,
        "As `spec.h` enumerates them (`enum NamedBarrier`); 0 and 8 are the runtime's (contract doc §3.4).\n"
    );
    let _ = writeln!(s, "| barrier | C name | bar.sync id | threads | warps of |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    for b in task.ir.barriers.values() {
        let _ = writeln!(
            s,
            "| `{}` | `BAR_{}` | {} | {} | {} |",
            b.name,
            crate::back::names::upper(&b.name),
            b.id,
            b.threads,
            b.by
        );
    }
    let _ = writeln!(s);
}

/// Writes the "Semaphore ordinals" section: one table per target.
pub(super) fn sems(s: &mut String, task: &CheckedTask) {
    let _ = writeln!(s, "## Semaphore ordinals\n");
    if task.programs.is_empty() {
        let _ = writeln!(s, "No role program: the task has no op semaphore.\n");
    }
    for p in &task.programs {
        if p.ordinal_count() == 0 {
            let _ = writeln!(
                s,
                "{}: no op semaphore (0 of 31 ordinals): the role program waits and arrives on none, and the kernel's \
`init_semaphores` initialises nothing.\n",
                p.target
            );
            continue;
        }
        let _ = writeln!(
            s,
            "{}: {} of 31 ordinals (op_sem_base + 8k), as its kernel initialises them.\n",
            p.target,
            p.ordinal_count()
        );
        let _ = writeln!(
            s,
            "| ordinal | barrier | count | producer → waiter | arrival | re-init at task start by |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|");
        for (k, b, slot) in p.ordinals() {
            let name = b.slot_name(slot);
            let _ = writeln!(
                s,
                "| {k} | `{name}` | {} | {} → {} | {}{} | {} |",
                b.count(slot),
                b.producer,
                b.waiter,
                b.arrival.kind_str(),
                if b.used {
                    ""
                } else {
                    " (unused on this target)"
                },
                role_name(b.reinit)
            );
        }
        let _ = writeln!(s);
    }
}

/// Writes the "Roles" section: per target each role's operations, the re-init / release table,
/// then the page lifecycle on every control path.
pub(super) fn roles(s: &mut String, task: &CheckedTask) {
    let _ = writeln!(s, "## Roles\n");
    let _ = writeln!(
        s,
        "Each role's operations in program order, from the role program of each target (the model check ran on these; the kernels render them).\n"
    );
    if let Some((c, h)) = crate::back::setmaxnreg::targets(&task.ir) {
        let _ = writeln!(
            s,
            "Registers (`setmaxnreg consumer {c}, helpers {h}`, contract doc §3.5): the worker prologue raises warpgroup 0 (W0-W3) to {c} registers per thread (`setmaxnreg.inc`) and lowers warpgroup 1 (W4-W7) to {h} (`setmaxnreg.dec`). The setting is the megakernel's, not the task's: build MPK with `-DMPK_SETMAXNREG=1 -DMPK_CONSUMER_REGS={c} -DMPK_HELPER_REGS={h}` (`mpkc wire` names them); the `.cuh` stops the compile when they disagree.\n"
        );
    }
    for p in &task.programs {
        let _ = writeln!(s, "### {}\n", p.target);
        for r in &task.ir.roles {
            let warps = if r.first_warp == r.last_warp {
                format!("W{}", r.first_warp)
            } else {
                format!("W{}-W{}", r.first_warp, r.last_warp)
            };
            let text = crate::lower::dump::role_text(p, &task.ir, r.kind);
            if text.is_empty() {
                let _ = writeln!(s, "- {} ({warps}): nothing", r.kind);
                continue;
            }
            let _ = writeln!(s, "- {} ({warps}):\n\n```", r.kind);
            let _ = write!(s, "{text}");
            let _ = writeln!(s, "```");
        }
        let _ = writeln!(s);
        let kinds: Vec<RoleKind> = task.ir.roles.iter().map(|r| r.kind).collect();
        duties(s, p, &kinds);
    }
    pages(s, task);
}

/// The re-initialised `ordinals` of program `p` by barrier: `w_ring.full` (ordinals 0-5) where
/// every slot of a barrier is re-initialised, else its slots' names (`acc.full[0]` (18)).
fn reinit_names(p: &RoleProgram, ordinals: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    for b in &p.barriers {
        let mine: Vec<(usize, u32)> = (0..b.slots)
            .map(|slot| (b.first + slot as usize, slot))
            .filter(|(k, _)| ordinals.contains(k))
            .collect();
        match mine.as_slice() {
            [] => {}
            [(k, slot)] => out.push(format!("`{}` ({k})", b.slot_name(*slot))),
            [(k0, _), .., (k1, _)] if mine.len() == b.slots as usize => {
                out.push(format!("`{}` ({k0}-{k1})", b.label));
            }
            _ => out.extend(
                mine.iter()
                    .map(|(k, slot)| format!("`{}` ({k})", b.slot_name(*slot))),
            ),
        }
    }
    out
}

/// The table of who re-inits and releases what on `p`'s target, read from each role's ops.
/// Roles in `task_roles` order (the contract's).
fn duties(s: &mut String, p: &RoleProgram, task_roles: &[RoleKind]) {
    let _ = writeln!(
        s,
        "| role | re-inits at task start | frees / releases | early exit |"
    );
    let _ = writeln!(s, "|---|---|---|---|");
    for kind in task_roles {
        let Some(r) = p.role(*kind) else {
            continue;
        };
        let ops = flatten(&r.ops);
        let mut reinit = Vec::new();
        let mut frees: Vec<String> = Vec::new();
        let mut exits = Vec::new();
        let push = |v: &mut Vec<String>, x: String| {
            if !v.contains(&x) {
                v.push(x);
            }
        };
        for o in ops {
            match o {
                Op::Reinit { ordinals } => reinit.extend(reinit_names(p, ordinals)),
                Op::Commit { bar } | Op::Arrive { bar, .. } => {
                    let b = p.barrier(bar.bar);
                    if matches!(b.source, BarrierSource::Empty(_)) {
                        let how = if matches!(o, Op::Commit { .. }) {
                            "tcgen05.commit"
                        } else {
                            "arrive"
                        };
                        push(
                            &mut frees,
                            format!("each `{}` slot it consumed ({how})", b.label),
                        );
                    }
                }
                Op::Step(Step::PageFreeUnused) => push(
                    &mut frees,
                    "the unused pages, after its loads or hand-off".into(),
                ),
                Op::Step(Step::PageRelease) => push(&mut frees, "the task's used pages".into()),
                Op::Step(Step::Body) => push(
                    &mut frees,
                    "the task's used pages, in the runtime's consumer suffix after it".into(),
                ),
                Op::Step(Step::TmemDealloc) => push(&mut frees, "the TMEM columns".into()),
                Op::EarlyExit { bar, weight, .. } => {
                    exits.push(format!("arrives `{}` x{weight}", p.barrier(bar.bar).label));
                }
                _ => {}
            }
        }
        let join = |v: &[String], sep: &str| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(sep)
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            r.kind,
            join(&reinit, ", "),
            join(&frees, "; "),
            if exits.is_empty() {
                "none".to_string()
            } else {
                exits.join("; ")
            }
        );
    }
    let _ = writeln!(s);
}

/// Who releases the pages on every control path (contract doc §9.2, I-P1), from the family's
/// registration.
fn pages(s: &mut String, task: &CheckedTask) {
    let _ = writeln!(s, "### Pages on every control path\n");
    let Some(reg) = Registration::of(task) else {
        let _ = writeln!(
            s,
            "No generated kernel registers this task, so mpkc generates no page lifecycle for it.\n"
        );
        let exits: Vec<String> = task
            .programs
            .iter()
            .flat_map(|p| {
                p.roles.iter().flat_map(move |r| {
                    flatten(&r.ops).into_iter().filter_map(move |o| match o {
                        Op::EarlyExit { bar, weight, .. } => Some(format!(
                            "{} {} arrives `{}` x{weight}",
                            p.target,
                            r.kind,
                            p.barrier(bar.bar).label
                        )),
                        _ => None,
                    })
                })
            })
            .collect();
        let _ = writeln!(
            s,
            "- Bounds-fail path: {}.\n",
            if exits.is_empty() {
                "no role of the role programs exits early".to_string()
            } else {
                format!(
                    "the role programs' early exits (zero trips): {}",
                    exits.join("; ")
                )
            }
        );
        return;
    };
    let bodies: Vec<&str> = reg.roles().filter(|(_, b)| *b).map(|(r, _)| r).collect();
    let _ = writeln!(
        s,
        "Registered with page mode {}, `auto_loader_page_lifecycle = {}`, `auto_consumer_finish = {}`, `launcher dependency prefix = {}`; \
role bodies: {}.\n",
        reg.page_mode,
        reg.auto_loader_page_lifecycle,
        reg.auto_consumer_finish,
        reg.launcher_dep_prefix,
        bodies.join(", ")
    );
    let unused = if reg.auto_loader_page_lifecycle {
        "the runtime's loader prefix frees the pages the task does not use before any role body runs"
    } else {
        "the loader waits the pages the task uses before its loads or hand-off and frees the ones it does not use after them"
    };
    // Per target: the role whose program releases the used pages (the launcher, or on sm_90a
    // the consumer after its K loop, `Step::ConsumerPageRelease`).
    let releaser: Vec<String> = task
        .programs
        .iter()
        .filter_map(|p| {
            p.page_releaser()
                .map(|r| format!("the {r} on {}", p.target))
        })
        .collect();
    let used = if reg.auto_consumer_finish {
        "the runtime's consumer suffix releases the used ones once the consumer function returns"
            .to_string()
    } else if releaser.is_empty() {
        "the body releases the used ones itself, each page once (I-P3)".to_string()
    } else {
        let plural = releaser.len() > 1;
        format!(
            "{} {} the used ones {}, each page once (I-P3)",
            releaser.join(" and "),
            if plural { "release" } else { "releases" },
            if plural { "themselves" } else { "itself" }
        )
    };
    let _ = writeln!(s, "- Normal path: {unused}; {used}.");
    let tiles_per_task = match &task.ir.granularity {
        GranularityIr::PerTile { tiles_per_task, .. } => *tiles_per_task,
        GranularityIr::GridWide { .. } => 1,
    };
    let rings: Vec<String> = task
        .ir
        .channels
        .values()
        .filter(|c| crate::valid::rings::is_consumer_ring(c))
        .map(|c| format!("`{}`", c.name))
        .collect();
    let grid_wide = task.ir.granularity.is_grid_wide();
    let bounds = if grid_wide {
        "none before the last `grid_sync`: every task of a grid-wide op passes every site (a `return` or `goto` before one \
is E0602); after it, a `return` of the body leaves the consumer function and still reaches the runtime's suffix, so every \
used page is released exactly once (I-P1)"
            .to_string()
    } else if reg.auto_consumer_finish && !rings.is_empty() {
        format!(
            "a `return` of the body (a task index past the data) leaves the consumer function and still reaches the runtime's suffix, \
so every used page is released once (I-P1), provided the loader body makes no more uses of {} than the consumer body waits and \
releases before it returns: a fill past the consumer's last release waits an empty slot that never frees, and the loader hangs \
before it frees the unused pages (the model check takes both bodies to make the same number of uses; only `mpkc verify`'s \
bounded waits see a mismatch)",
            rings.join(", ")
        )
    } else if reg.auto_consumer_finish {
        "a `return` of the body (a task index past the data) leaves the consumer function and still reaches the runtime's suffix, \
so every used page is released exactly once (I-P1)"
            .to_string()
    } else {
        format!(
            "none in the kernel: {tiles_per_task} tile per task (I-P6, E0201), so every task's tile is in range and no role \
returns before the release"
        )
    };
    let _ = writeln!(s, "- Bounds-fail path: {bounds}.\n");
}
