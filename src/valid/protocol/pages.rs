//! The page protocol across a worker's queue (contract doc §1.5; I-P1, I-P5): tasks of several
//! registrations, one after another on one SM, each role warp running its part of every task in
//! queue order, the controller publishing task `s` into the 3-slot ring once task `s - 3`
//! finished. Each of the 14 pages is a count-1 mbarrier, pre-armed; the task of sequence `s`
//! waits it with parity `s & 1` and releases it once. Parity cannot tell phase `s` from phase
//! `s - 2`: a role that skips a page's wait on some tasks (a sparse observer) can pass a later wait
//! on the wrong phase, which nothing in one task shows. This model runs a queue under many
//! seeded schedules and reports the first wait that passes on the wrong phase, the first release
//! into the wrong phase, or a deadlock.
//!
//! The per-task protocol of a contract's own barriers is `super`'s model check; here the roles
//! are what the runtime's wrapper and the registration make of each task (`back::registration`).
//!
//! The pipeline's loader waits the pages its task uses first, issues its loads, then waits and
//! frees the unused ones ([`PageRoles::Pipeline`]): where MPK's planner alternates a task's pages
//! (I-S12) the next task's loads start while this task computes ([`overlaps`]; issue 12, the
//! per-task fixed cost), and the loader stays every page's one observer. The model also holds a
//! design mpkc does not generate: the storer warp W6 as the one page observer
//! ([`PageRoles::PipelineStorer`], [`PageRoles::ConsumerStorer`]); the tests hold it sound on a
//! queue where every task uses it, and unsound mixed with the loader observer.

use std::fmt;

/// Pages of the pool (`MAX_SMEM_PAGES_PER_TASK`).
pub const PAGES: usize = 14;
/// Ring slots (`INSTRUCTION_RING_SIZE`): the controller publishes task `s` after task `s - 3`
/// finished.
pub const RING: usize = 3;

/// How a task's pages are waited and released: the registration's page mode and hand-off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageRoles {
    /// Page mode 1, pipeline, the loader's own prefix (`auto_loader_page_lifecycle = false`, what
    /// mpkc generates): the loader waits the used pages, issues the loads that feed the consumer,
    /// then waits and frees the unused ones; the launcher (or the sm_90a consumer) frees the used
    /// pages once the consumer is done with them.
    Pipeline,
    /// Page mode 1, consumer-only with the `pages_ready` hand-off, the loader's own prefix (what
    /// mpkc generates for a task with regions): the loader waits the used pages, arrives
    /// `pages_ready`, then waits and frees the unused ones; the consumer waits the hand-off, runs
    /// the body and frees the used pages.
    ConsumerHandoff,
    /// Page mode 1 with the runtime's loader prefix (`auto_loader_page_lifecycle = true`; what
    /// mpkc registers for a region-less consumer-only task, with no page to hand off): the loader
    /// waits every page and frees the unused ones before its hand-off; the consumer waits the
    /// hand-off, runs the body and its suffix frees the used ones.
    RuntimePrefix,
    /// Page mode 2 (MPK's `consumer_owned_page_claim`): the loader prefix waits and frees only the
    /// unused pages; the consumer waits the used ones, runs the body and frees them.
    ConsumerClaim,
    /// Not generated yet (issue 12): a pipeline whose storer (W6) observes every page, the task's
    /// used pages first, then hands them to the loader (`pages_ready`), then waits and frees the
    /// unused ones (the runtime's loader prefix off: `auto_loader_page_lifecycle = false`); the
    /// loader loads once handed the pages; the launcher frees the used pages after the consumer.
    PipelineStorer,
    /// Not generated yet (issue 12): a consumer-only task under the same storer observer: the
    /// storer waits the used pages, hands them to the consumer, then waits and frees the unused
    /// ones; the consumer runs the body and frees the used pages.
    ConsumerStorer,
}

/// One task of a queue: its roles and the pages it uses (bit `p` = page `p`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueTask {
    /// The registration's page roles.
    pub roles: PageRoles,
    /// Used pages, bit `p` for page `p` (the task's regions' physical pages).
    pub used: u16,
}

/// What went wrong, with the schedule's seed that showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageFault {
    /// The seed of the schedule.
    pub seed: u64,
    /// What happened.
    pub what: String,
}

impl fmt::Display for PageFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (schedule seed {})", self.what, self.seed)
    }
}

/// The role warps of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Warp {
    Consumer,
    Loader,
    Launcher,
    Storer,
}

const WARPS: [Warp; 4] = [Warp::Consumer, Warp::Loader, Warp::Launcher, Warp::Storer];

/// A one-shot signal of a task between two of its warps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sig {
    /// The task's hand-off to its consumer (`pages_ready`, or the pipeline's data).
    Handoff,
    /// `consumer_done`.
    Done,
    /// The storer's hand-off of the used pages to the loader (the storer-observer design).
    Pages,
}

const SIGS: usize = 3;

/// One step of a warp's part of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Wait page `p` with the task's parity.
    WaitPage(usize),
    /// Release page `p`.
    Free(usize),
    /// Arrive a signal of the task.
    Arrive(Sig),
    /// Wait a signal of the task.
    Wait(Sig),
}

fn steps(t: QueueTask, warp: Warp) -> Vec<Step> {
    use Step::{Arrive, Wait};
    let used = |p: usize| t.used >> p & 1 == 1;
    let all = 0..PAGES;
    // The used pages, the hand-off, then the unused pages: the generated loaders' own prefix
    // and the storer observer's.
    let used_first = |to: Sig| {
        let mut s: Vec<Step> = all
            .clone()
            .filter(|&p| used(p))
            .map(Step::WaitPage)
            .collect();
        s.push(Arrive(to));
        s.extend(all.clone().filter(|&p| !used(p)).map(Step::WaitPage));
        s.extend(all.clone().filter(|&p| !used(p)).map(Step::Free));
        s
    };
    match (t.roles, warp) {
        (PageRoles::PipelineStorer, Warp::Storer) => used_first(Sig::Pages),
        (PageRoles::PipelineStorer, Warp::Loader) => vec![Wait(Sig::Pages), Arrive(Sig::Handoff)],
        (PageRoles::PipelineStorer, Warp::Consumer) => vec![Wait(Sig::Handoff), Arrive(Sig::Done)],
        (PageRoles::PipelineStorer, Warp::Launcher) => {
            let mut s = vec![Wait(Sig::Done)];
            s.extend(all.filter(|&p| used(p)).map(Step::Free));
            s
        }
        (PageRoles::ConsumerStorer, Warp::Storer) => used_first(Sig::Handoff),
        (PageRoles::ConsumerStorer, Warp::Consumer) => {
            let mut s = vec![Wait(Sig::Handoff)];
            s.extend(all.filter(|&p| used(p)).map(Step::Free));
            s
        }
        (PageRoles::ConsumerStorer, _) => Vec::new(),
        (_, Warp::Storer) => Vec::new(),
        // The hand-off: the loads, or `pages_ready`.
        (PageRoles::Pipeline | PageRoles::ConsumerHandoff, Warp::Loader) => {
            used_first(Sig::Handoff)
        }
        (PageRoles::RuntimePrefix, Warp::Loader) => {
            let mut s: Vec<Step> = all.clone().map(Step::WaitPage).collect();
            s.extend(all.filter(|&p| !used(p)).map(Step::Free));
            s.push(Arrive(Sig::Handoff));
            s
        }
        (PageRoles::ConsumerClaim, Warp::Loader) => {
            let unused: Vec<usize> = all.filter(|&p| !used(p)).collect();
            let mut s: Vec<Step> = unused.iter().map(|&p| Step::WaitPage(p)).collect();
            s.extend(unused.iter().map(|&p| Step::Free(p)));
            s
        }
        (PageRoles::Pipeline, Warp::Consumer) => vec![Wait(Sig::Handoff), Arrive(Sig::Done)],
        (PageRoles::Pipeline, Warp::Launcher) => {
            let mut s = vec![Wait(Sig::Done)];
            s.extend(all.filter(|&p| used(p)).map(Step::Free));
            s
        }
        (PageRoles::ConsumerHandoff | PageRoles::RuntimePrefix, Warp::Consumer) => {
            let mut s = vec![Wait(Sig::Handoff)];
            s.extend(all.filter(|&p| used(p)).map(Step::Free));
            s
        }
        (PageRoles::ConsumerClaim, Warp::Consumer) => {
            let mut s: Vec<Step> = all
                .clone()
                .filter(|&p| used(p))
                .map(Step::WaitPage)
                .collect();
            s.extend(all.filter(|&p| used(p)).map(Step::Free));
            s
        }
        (
            PageRoles::ConsumerHandoff | PageRoles::RuntimePrefix | PageRoles::ConsumerClaim,
            Warp::Launcher,
        ) => Vec::new(),
    }
}

/// A small deterministic generator (SplitMix64) for the schedules.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Runs `queue` under `schedules` seeded schedules (seed `i` for schedule `i`): each step picks
/// one warp that can move, at random, weighted per schedule so that some warps run far ahead of
/// others. `Ok` when every schedule finished every task with every page wait passing on its
/// own phase and every release completing it.
pub fn check_queue(queue: &[QueueTask], schedules: u64) -> Result<(), PageFault> {
    (0..schedules).try_for_each(|seed| run(queue, seed).map(|_| ()))
}

/// Whether, under some of `schedules` seeded schedules, a task's loads are handed on (the
/// loader's hand-off to its consumer) while the consumer still has steps of the task ahead of it
/// left and that task holds pages: consecutive tasks overlap, so the fixed cost per task is not the whole serial chain (issue 12).
/// `Ok(None)` when no schedule overlaps; a fault as [`check_queue`]'s.
pub fn overlaps(queue: &[QueueTask], schedules: u64) -> Result<Option<u64>, PageFault> {
    for seed in 0..schedules {
        if run(queue, seed)? {
            return Ok(Some(seed));
        }
    }
    Ok(None)
}

/// One schedule; `Ok(true)` when some task's loader handed its loads on while the consumer still
/// had steps of the task ahead left.
fn run(queue: &[QueueTask], seed: u64) -> Result<bool, PageFault> {
    let n = queue.len();
    let mut rng = Rng(seed);
    // Per-schedule warp weights: a starved warp lets the others run ahead.
    let weights: Vec<u64> = WARPS.iter().map(|_| 1 + rng.next() % 16).collect();
    let progs: Vec<Vec<Vec<Step>>> = WARPS
        .iter()
        .map(|&w| queue.iter().map(|&t| steps(t, w)).collect())
        .collect();
    // Completed phases of each page (the pre-arm completed phase 0).
    let mut phases = [1u64; PAGES];
    let mut sigs = vec![[false; SIGS]; n];
    let sig = |x: Sig| x as usize;
    // Whether a task's loads were handed on before the consumer finished the task ahead.
    let mut overlapped = false;
    // Per warp: (task, step index).
    let mut at = [(0usize, 0usize); WARPS.len()];
    let fault = |what: String| Err(PageFault { seed, what });
    loop {
        // A task is published once the task RING places earlier finished (every warp past it).
        let finished =
            |task: usize, at: &[(usize, usize); WARPS.len()]| at.iter().all(|&(t, _)| t > task);
        let mut ready: Vec<(usize, u64)> = Vec::new();
        for w in 0..WARPS.len() {
            let (t, i) = at[w];
            if t >= n || (t >= RING && !finished(t - RING, &at)) {
                continue;
            }
            let can = match progs[w][t].get(i) {
                None => true,
                // try_wait.parity(t & 1) passes unless the current (incomplete) phase, whose
                // index is the count of completed ones, has parity t & 1.
                Some(Step::WaitPage(p)) => phases[*p] & 1 != t as u64 & 1,
                Some(Step::Wait(x)) => sigs[t][sig(*x)],
                Some(_) => true,
            };
            if can {
                ready.push((w, weights[w]));
            }
        }
        if ready.is_empty() {
            if at.iter().all(|&(t, _)| t >= n) {
                return Ok(overlapped);
            }
            let where_: Vec<String> = WARPS
                .iter()
                .zip(at)
                .map(|(w, (t, i))| format!("{w:?} at task {t} step {i}"))
                .collect();
            return fault(format!("deadlock: {}", where_.join(", ")));
        }
        let total: u64 = ready.iter().map(|r| r.1).sum();
        let mut pick = rng.next() % total;
        let w = ready
            .iter()
            .find(|r| {
                if pick < r.1 {
                    true
                } else {
                    pick -= r.1;
                    false
                }
            })
            .map_or(ready[0].0, |r| r.0);
        let (t, i) = at[w];
        let s = t as u64;
        match progs[w][t].get(i) {
            None => {
                at[w] = (t + 1, 0);
                continue;
            }
            Some(Step::WaitPage(p)) => {
                // Task s needs phase s complete: phases[p] == s + 1 exactly.
                if phases[*p] != s + 1 {
                    return fault(format!(
                        "the {:?} of task {t} passed its wait of page {p} (parity {}) with {} phases complete, not {}: \
                         it took the page while task {} still held it",
                        WARPS[w],
                        s & 1,
                        phases[*p],
                        s + 1,
                        phases[*p].saturating_sub(1)
                    ));
                }
            }
            Some(Step::Free(p)) => {
                if phases[*p] != s + 1 {
                    return fault(format!(
                        "the {:?} of task {t} released page {p} with {} phases complete, not {}: a release before the \
                         page was the task's",
                        WARPS[w],
                        phases[*p],
                        s + 1
                    ));
                }
                phases[*p] += 1;
            }
            Some(Step::Arrive(x)) => {
                sigs[t][sig(*x)] = true;
                // The consumer has steps of the task ahead left (it is computing it, or has not
                // started it), and that task holds pages: this task's loads overlap its work.
                let (ct, ci) = at[0];
                let consumer_busy = t > 0
                    && queue[t - 1].used != 0
                    && (ct < t - 1 || (ct == t - 1 && ci < progs[0][ct].len()));
                if WARPS[w] == Warp::Loader && *x == Sig::Handoff && consumer_busy {
                    overlapped = true;
                }
            }
            Some(Step::Wait(_)) => {}
        }
        at[w] = (t, i + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: u16 = (1 << PAGES) - 1;

    fn task(roles: PageRoles, used: u16) -> QueueTask {
        QueueTask { roles, used }
    }

    /// The MoE block's first stages on one SM: two norms on pages 0-1 (and 0-2), then linears
    /// on every page, then a SwiGLU on page 0.
    fn moe_like(consumer: PageRoles) -> Vec<QueueTask> {
        vec![
            task(consumer, 0b11),
            task(consumer, 0b111),
            task(PageRoles::Pipeline, ALL),
            task(PageRoles::Pipeline, ALL),
            task(consumer, 0b1),
            task(PageRoles::Pipeline, ALL),
            task(consumer, 0b11),
            task(consumer, 0),
            task(consumer, 0b1),
        ]
    }

    #[test]
    fn the_page_claim_of_mode_2_passes_a_wait_on_the_wrong_phase_in_a_mixed_queue() {
        let Err(err) = check_queue(&moe_like(PageRoles::ConsumerClaim), 500) else {
            panic!("page mode 2 on a mixed queue passed every schedule");
        };
        assert!(
            err.what.contains("passed its wait") || err.what.contains("released page"),
            "{err}"
        );
    }

    #[test]
    fn the_pages_ready_hand_off_keeps_every_wait_on_its_phase() {
        assert_eq!(
            check_queue(&moe_like(PageRoles::ConsumerHandoff), 3000),
            Ok(())
        );
        // Alone and with pipelines only, too.
        assert_eq!(
            check_queue(&[task(PageRoles::ConsumerHandoff, 0b11); 7], 500),
            Ok(())
        );
        assert_eq!(
            check_queue(&[task(PageRoles::Pipeline, ALL); 7], 500),
            Ok(())
        );
        let mixed: Vec<QueueTask> = (0..12)
            .map(|i| match i % 4 {
                0 => task(PageRoles::Pipeline, 0b0011_1111_1111),
                1 => task(PageRoles::ConsumerHandoff, 1 << (i % PAGES)),
                2 => task(PageRoles::ConsumerHandoff, 0),
                _ => task(PageRoles::Pipeline, ALL),
            })
            .collect();
        assert_eq!(check_queue(&mixed, 3000), Ok(()));
    }

    /// Pipelines on pages 0-6 and 7-13 by turns (single-page regions let MPK's planner alternate
    /// them, docs/perf-notes.md), with consumer-only tasks between, under `pipeline` / `consumer`.
    fn alternating(pipeline: PageRoles, consumer: PageRoles) -> Vec<QueueTask> {
        let (lo, hi) = (0b0000_0000_0111_1111, 0b0011_1111_1000_0000);
        vec![
            task(pipeline, lo),
            task(pipeline, hi),
            task(pipeline, lo),
            task(consumer, 0b1_0000_0000),
            task(pipeline, lo),
            task(pipeline, hi),
            task(consumer, 0),
            task(pipeline, lo),
        ]
    }

    #[test]
    fn the_storer_observer_is_sound_where_every_task_uses_it() {
        let q = alternating(PageRoles::PipelineStorer, PageRoles::ConsumerStorer);
        assert_eq!(check_queue(&q, 3000), Ok(()));
        assert_eq!(
            check_queue(
                &moe_like(PageRoles::ConsumerStorer)
                    .iter()
                    .map(|t| if t.roles == PageRoles::Pipeline {
                        task(PageRoles::PipelineStorer, t.used)
                    } else {
                        *t
                    })
                    .collect::<Vec<_>>(),
                3000
            ),
            Ok(())
        );
        // Every page in every task (no overlap possible), too.
        assert_eq!(
            check_queue(&[task(PageRoles::PipelineStorer, ALL); 7], 500),
            Ok(())
        );
    }

    #[test]
    fn the_used_pages_first_loaders_overlap_alternating_tasks_and_the_runtime_prefix_never_does() {
        // The generated loader waits its used pages first: on alternating pages, the next
        // task's loads start while this one computes, and every wait stays on its phase.
        let pipeline = alternating(PageRoles::Pipeline, PageRoles::ConsumerHandoff);
        assert_eq!(check_queue(&pipeline, 3000), Ok(()));
        assert!(matches!(overlaps(&pipeline, 2000), Ok(Some(_))));
        // With every page used it waits for the task ahead's release, as before.
        assert_eq!(
            overlaps(&[task(PageRoles::Pipeline, ALL); 5], 500),
            Ok(None)
        );
        // So does the consumer-only loader's hand-off, on its own and mixed with region-less
        // tasks under the runtime's prefix.
        let (lo, hi) = (0b0000_0000_0111_1111, 0b0011_1111_1000_0000);
        let handoff = |roles: PageRoles| -> Vec<QueueTask> {
            (0..8)
                .map(|i| task(roles, if i % 2 == 0 { lo } else { hi }))
                .collect()
        };
        assert_eq!(
            check_queue(&handoff(PageRoles::ConsumerHandoff), 3000),
            Ok(())
        );
        assert!(matches!(
            overlaps(&handoff(PageRoles::ConsumerHandoff), 2000),
            Ok(Some(_))
        ));
        let mixed = alternating(PageRoles::Pipeline, PageRoles::RuntimePrefix);
        assert_eq!(check_queue(&mixed, 3000), Ok(()));
        // The runtime's prefix waits all 14 pages before its hand-off: the next task's body
        // starts only after this one released, whatever the footprint.
        assert_eq!(overlaps(&handoff(PageRoles::RuntimePrefix), 2000), Ok(None));
    }

    #[test]
    fn the_storer_observer_overlaps_consecutive_tasks() {
        // The storer hands a task the pages the one ahead does not use at once.
        let storer = alternating(PageRoles::PipelineStorer, PageRoles::ConsumerStorer);
        assert!(matches!(overlaps(&storer, 2000), Ok(Some(_))));
        // With every page used, nothing can overlap under either.
        assert_eq!(
            overlaps(&[task(PageRoles::PipelineStorer, ALL); 5], 500),
            Ok(None)
        );
    }

    #[test]
    fn the_storer_observer_mixed_with_the_loader_prefix_passes_a_wait_on_the_wrong_phase() {
        // Two observers, each sparse: the hazard of page mode 2 again (I-P5).
        let q = alternating(PageRoles::PipelineStorer, PageRoles::ConsumerHandoff);
        let Err(err) = check_queue(&q, 3000) else {
            panic!("mixed observers passed every schedule");
        };
        assert!(
            err.what.contains("passed its wait") || err.what.contains("released page"),
            "{err}"
        );
    }

    #[test]
    fn a_homogeneous_queue_of_mode_2_tasks_is_sound() {
        // What MPK's fork ran mode 2 on alone: the consumer is then every used page's observer.
        assert_eq!(
            check_queue(&[task(PageRoles::ConsumerClaim, 0b11); 7], 500),
            Ok(())
        );
    }
}
