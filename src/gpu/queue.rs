//! The per-CTA queues of a verify or bench launch and the events between the stages of a chain:
//! a single op's tasks dealt round-robin (repeated to fill the queues, but an op that updates a
//! tensor in place), or a chain's stages in dependency order, each stage's tasks behind the
//! previous stage's in every queue, stage `k` waiting on event `k - 1`, which every task of
//! stage `k - 1` triggers (MPK's `TaskDesc::dependent_event` / `trigger_event`).

use super::run::Case;

/// Per task type: (task offset, registration) lists per CTA: `per_cta` tasks at least in each
/// queue, a single task type's tasks dealt round-robin and repeated to fill them (each once for
/// an op with an `inout` tensor, a repeat would update its own output again, or `counters`, a
/// repeat would arrive twice; a grid-wide task once on every SM: one task per worker), a chain's
/// stages once each, in order, every stage's tasks dealt round-robin behind the previous stage's.
pub fn queues(case: &Case<'_>, per_cta: usize, sms: usize) -> Vec<Vec<(usize, i32)>> {
    let per_cta = per_cta.max(1);
    let grid_wide = |t: &crate::valid::CheckedTask| t.ir.granularity.is_grid_wide();
    let per_tile: Vec<usize> = case
        .tasks
        .iter()
        .map(|t| t.ir.granularity.tasks().max(1) as usize)
        .collect();
    // A chain spreads over as many CTAs as its widest stage fills; a grid-wide task runs one
    // task per worker (I-H4), on every SM, whatever `per_cta` says.
    let widest = per_tile.iter().copied().max().unwrap_or(1);
    let ctas = if case.tasks.iter().any(|t| grid_wide(t)) {
        sms.max(1)
    } else {
        widest.div_ceil(per_cta).clamp(1, sms.max(1))
    };
    let counts: Vec<usize> = case
        .tasks
        .iter()
        .zip(&per_tile)
        .map(|(t, n)| if grid_wide(t) { ctas } else { *n })
        .collect();
    let first = counts[0];
    let mut q: Vec<Vec<(usize, i32)>> = vec![Vec::new(); ctas];
    if case.tasks.len() == 1 {
        // Deal the op's tasks round-robin and repeat them until every queue holds per_cta; an
        // op that updates a tensor in place (`inout`) runs each task once, since a repeat would
        // apply it to its own output, and so does one that counts its tasks' arrivals
        // (`counters`, `split_k bf16`): a repeated split would arrive twice.
        let once = case.tasks[0].ir.tensors.iter().any(|(_, x)| {
            x.direction == crate::ir::Direction::InOut
                || x.role() == Some(crate::ir::TensorRole::Counters)
        });
        let per = per_cta.max(first.div_ceil(ctas));
        for (c, queue) in q.iter_mut().enumerate() {
            for i in 0..per {
                let off = c + ctas * i;
                if once && off >= first {
                    break;
                }
                queue.push((off % first, 0));
            }
        }
    } else {
        // A chain: every stage's tasks once, dealt round-robin, each stage behind the previous
        // one in every queue (a task waits only on tasks queued before it in every queue, so the
        // co-resident CTAs cannot deadlock).
        for (reg, n) in counts.iter().enumerate() {
            for off in 0..*n {
                q[off % ctas].push((off, reg as i32));
            }
        }
    }
    q
}

/// The page plan of every queued task on `target`, queue by queue: MPK's planner walks each
/// worker's queue, planning a task after the one before it (`plan::queue::walk`, contract doc
/// §1.4 step 3), so the plan, and the pages, of a task depend on its predecessor; a task
/// without regions gets an empty plan. `Err` names the CTA, the task and its region when a plan
/// puts a byte past the capacity (I-S5, E0107: the launch would write past the SMEM) or MPK's
/// planner rejects it.
pub fn plans(
    case: &Case<'_>,
    target: crate::ir::Target,
    queues: &[Vec<(usize, i32)>],
) -> Result<Vec<Vec<crate::plan::pages::PagePlan>>, String> {
    use crate::plan::pages::Geometry;
    let task = |reg: i32| case.tasks[usize::try_from(reg).unwrap_or(0)];
    let reqs: Vec<Vec<crate::plan::pages::RegionRequest>> = case
        .tasks
        .iter()
        .map(|t| crate::valid::smem::request_list(&t.ir))
        .collect();
    let geometries: Vec<Geometry> = case
        .tasks
        .iter()
        .map(|t| super::run::plan_for(t, target).map_or_else(Geometry::default, |(_, g, _)| *g))
        .collect();
    let geometry = |reg: i32| geometries[usize::try_from(reg).unwrap_or(0)];
    queues
        .iter()
        .enumerate()
        .map(|(cta, q)| {
            let items = q.iter().map(|&(_, reg)| {
                (
                    reqs[usize::try_from(reg).unwrap_or(0)].as_slice(),
                    geometry(reg),
                )
            });
            let plans = crate::plan::queue::walk(items).map_err(|(i, e)| {
                format!(
                    "CTA {cta}, task {i} ({}): MPK's planner rejects its regions after the task before it: {e}",
                    task(q[i].1).ir.unit_name()
                )
            })?;
            for (i, p) in plans.iter().enumerate() {
                let g = geometry(q[i].1);
                if p.exceeds_capacity(&g) {
                    let worst = p.regions.iter().max_by_key(|r| r.end_bytes());
                    return Err(format!(
                        "CTA {cta}, task {i} ({}): after the previous task's release order {:?}, MPK's planner puts region `{}` at bytes up to {}, past the {} bytes of SMEM (I-S5, E0107)",
                        task(q[i].1).ir.unit_name(),
                        p.preferred,
                        worst.map_or("?", |r| r.name.as_str()),
                        p.max_byte_end,
                        g.capacity_bytes
                    ));
                }
            }
            Ok(plans)
        })
        .collect()
}

/// The page protocol of `queues` (from [`queues`]) on `target`, modelled before the launch
/// (`valid::protocol::pages`, I-P5): each distinct queue under `schedules` seeded schedules of
/// its role warps, with each task's registration and the pages of its plan in the queue
/// ([`plans`]). `Err` names the CTA and the wait or release that went wrong (the launch would
/// hang or race on a page), or the plan that overflows the SMEM.
pub fn check_pages(
    case: &Case<'_>,
    target: crate::ir::Target,
    queues: &[Vec<(usize, i32)>],
    schedules: u64,
) -> Result<(), String> {
    check_pages_of(case, queues, &plans(case, target, queues)?, schedules)
}

/// [`check_pages`] with the queues' plans already made ([`plans`]), for a caller that also
/// builds the task tables from them.
pub fn check_pages_of(
    case: &Case<'_>,
    queues: &[Vec<(usize, i32)>],
    plans: &[Vec<crate::plan::pages::PagePlan>],
    schedules: u64,
) -> Result<(), String> {
    use crate::back::registration::Registration;
    use crate::valid::protocol::pages::{check_queue, PageRoles, QueueTask};
    let of = |reg: i32| -> QueueTask {
        let task = case.tasks[usize::try_from(reg).unwrap_or(0)];
        // Who waits and frees the pages, as the registration says (`back::registration`).
        let roles = match Registration::of(task) {
            Some(r) if r.page_mode == 2 => PageRoles::ConsumerClaim,
            Some(r) if r.auto_loader_page_lifecycle => PageRoles::RuntimePrefix,
            Some(r) if r.auto_consumer_finish => PageRoles::ConsumerHandoff,
            _ => PageRoles::Pipeline,
        };
        QueueTask { roles, used: 0 }
    };
    let used = |p: &crate::plan::pages::PagePlan| {
        p.regions
            .iter()
            .flat_map(|r| r.pages.iter())
            .filter(|&&pg| pg < crate::valid::protocol::pages::PAGES)
            .fold(0u16, |m, &pg| m | 1 << pg)
    };
    let mut seen = std::collections::BTreeSet::new();
    for (cta, (q, ps)) in queues.iter().zip(plans).enumerate() {
        let model: Vec<QueueTask> = q
            .iter()
            .zip(ps)
            .map(|(&(_, reg), p)| QueueTask {
                used: used(p),
                ..of(reg)
            })
            .collect();
        let key: Vec<(u8, u16)> = model.iter().map(|t| (t.roles as u8, t.used)).collect();
        if !seen.insert(key) {
            continue;
        }
        check_queue(&model, schedules).map_err(|f| {
            format!(
                "the page protocol of CTA {cta}'s queue ({} tasks) fails in the model (I-P5): {f}",
                q.len()
            )
        })?;
    }
    Ok(())
}

/// The events of a task of chain stage `stage`: the event it triggers when done (the next stage
/// waits on it) and the event it waits, with the number of triggers that complete it (every
/// task of the previous stage). `-1`: none (a single op; the first stage waits nothing, the last
/// triggers nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageEvents {
    /// Event triggered when the task completes.
    pub trigger: i32,
    /// Event waited before the task's dependency (`SEM_DEP_READY`).
    pub waits: i32,
    /// Triggers that complete the waited event.
    pub triggers: i32,
}

/// The events of stage `stage` of `case` queued as `queues` ([`queues`]): the waited event
/// completes after every queued task of the previous stage triggered it (its per-tile count, or
/// one per worker for a grid-wide stage).
pub fn stage_events(case: &Case<'_>, queues: &[Vec<(usize, i32)>], stage: usize) -> StageEvents {
    let n = case.tasks.len();
    let mut ev = StageEvents {
        trigger: -1,
        waits: -1,
        triggers: 0,
    };
    if n > 1 {
        if stage + 1 < n {
            ev.trigger = stage as i32;
        }
        if stage > 0 {
            ev.waits = stage as i32 - 1;
            let prev = stage as i32 - 1;
            ev.triggers = queues
                .iter()
                .flatten()
                .filter(|(_, r)| *r == prev)
                .count()
                .max(1) as i32;
        }
    }
    ev
}

/// Event counters a launch of `case` needs (8, the runtime's, or one per stage boundary).
pub fn event_count(case: &Case<'_>) -> usize {
    case.tasks.len().saturating_sub(1).max(8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::stdlib::unit as stdlib_task;
    use crate::valid::CheckedTask;

    /// A case of `tasks` and nothing else.
    fn case_of<'a>(tasks: Vec<&'a CheckedTask>) -> Case<'a> {
        Case {
            name: "c".into(),
            tasks,
            ..Default::default()
        }
    }

    #[test]
    fn a_single_task_op_repeats_in_one_queue() {
        let t = stdlib_task("argmax_reduce_v2");
        let case = case_of(vec![&t]);
        let q = queues(&case, 4, 132);
        assert_eq!(q, vec![vec![(0, 0), (0, 0), (0, 0), (0, 0)]]);
    }

    #[test]
    fn an_in_place_op_runs_each_task_once() {
        // qkv_a_norm normalises its `inout` rows in place: a repeated task would normalise the
        // normalised row (the H200 run of 2026-12-01 failed at M = 1, 4 tasks per CTA).
        let t = stdlib_task("qkv_a_norm_q_a");
        let case = case_of(vec![&t]);
        let n = t.ir.granularity.tasks() as usize;
        let q = queues(&case, 4, 132);
        let mut seen: Vec<usize> = q.iter().flatten().map(|(o, _)| *o).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn a_grid_wide_op_runs_one_task_on_every_sm() {
        // One task per worker (I-H4), whatever tasks per CTA were asked for.
        let c = crate::driver::check_sources(
            &[crate::driver::Source {
                path: "examples/softmax_grid.mpk".into(),
                text: include_str!("../../examples/softmax_grid.mpk").into(),
            }],
            &Default::default(),
            &Default::default(),
        );
        let t = &c[0].tasks[0];
        let case = case_of(vec![t]);
        let q = queues(&case, 4, 132);
        assert_eq!(q.len(), 132);
        assert!(
            q.iter().enumerate().all(|(c, x)| x == &vec![(c, 0)]),
            "{q:?}"
        );
    }

    #[test]
    fn every_task_offset_is_queued() {
        let t = stdlib_task("argmax_partial_v2");
        let n = t.ir.granularity.tasks() as usize;
        let case = case_of(vec![&t]);
        let q = queues(&case, 3, 132);
        assert!(q.iter().all(|x| x.len() >= 3));
        let mut seen: Vec<usize> = q.iter().flatten().map(|(o, _)| *o).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn a_chain_queues_dependents_behind_producers() {
        let (p, r) = (
            stdlib_task("argmax_partial_v2"),
            stdlib_task("argmax_reduce_v2"),
        );
        let case = case_of(vec![&p, &r]);
        let q = queues(&case, 4, 132);
        let producers = q.iter().flatten().filter(|(_, reg)| *reg == 0).count();
        assert_eq!(producers as i64, p.ir.granularity.tasks());
        for queue in &q {
            let first_dep = queue
                .iter()
                .position(|(_, reg)| *reg == 1)
                .unwrap_or(queue.len());
            assert!(queue[first_dep..].iter().all(|(_, reg)| *reg == 1));
        }
    }

    #[test]
    fn a_three_stage_chain_waits_stage_by_stage() {
        let (a, b, c) = (
            stdlib_task("linear_bf16_splitk_router"),
            stdlib_task("linear_bf16_splitk_router_reduce"),
            stdlib_task("router_topk"),
        );
        let case = case_of(vec![&a, &b, &c]);
        let q = queues(&case, 4, 132);
        for queue in &q {
            let regs: Vec<i32> = queue.iter().map(|(_, r)| *r).collect();
            assert!(regs.windows(2).all(|w| w[0] <= w[1]), "{regs:?}");
        }
        for (stage, t) in case.tasks.iter().enumerate() {
            let n = q
                .iter()
                .flatten()
                .filter(|(_, r)| *r == stage as i32)
                .count();
            assert_eq!(n as i64, t.ir.granularity.tasks());
        }
        let ev: Vec<StageEvents> = (0..3).map(|s| stage_events(&case, &q, s)).collect();
        assert_eq!((ev[0].trigger, ev[0].waits), (0, -1));
        assert_eq!(
            (ev[1].trigger, ev[1].waits, ev[1].triggers as i64),
            (1, 0, a.ir.granularity.tasks())
        );
        assert_eq!(
            (ev[2].trigger, ev[2].waits, ev[2].triggers as i64),
            (-1, 1, b.ir.granularity.tasks())
        );
        assert!(event_count(&case) >= 2);
    }

    #[test]
    fn the_moe_block_s_queues_keep_the_page_protocol() {
        // The MoE block's stages (stdlib/dsv3/moe_block.chain.toml) in one launch: norms and a
        // SwiGLU (consumer-only, pages_ready) queued with linears (page mode 1). With page
        // mode 2 this failed on the H200 (2026-12-01) and fails in the model.
        let names = [
            "rmsnorm_fp8",
            "rmsnorm_v2_h7168",
            "linear_bf16_splitk_router",
            "linear_bf16_splitk_router_reduce",
            "router_topk",
            "moe_w13_dsv3",
            "silu_mul_fp8_weighted_routed",
            "linear_fp8_blockscale_shared_gate_up",
            "silu_mul_fp8_shared",
            "linear_fp8_blockscale_shared_down",
            "moe_w2_dsv3",
        ];
        let tasks: Vec<CheckedTask> = names.iter().map(|n| stdlib_task(n)).collect();
        let case = case_of(tasks.iter().collect());
        for per_cta in [1, 4, 7] {
            let q = queues(&case, per_cta, 132);
            for target in [crate::ir::Target::Sm90a, crate::ir::Target::Sm100a] {
                check_pages(&case, target, &q, 64).unwrap();
            }
        }
    }
}
