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

use std::fmt;

/// Pages of the pool (`MAX_SMEM_PAGES_PER_TASK`).
pub const PAGES: usize = 14;
/// Ring slots (`INSTRUCTION_RING_SIZE`): the controller publishes task `s` after task `s - 3`
/// finished.
pub const RING: usize = 3;

/// How a task's pages are waited and released: the registration's page mode and hand-off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageRoles {
    /// Page mode 1, pipeline: the loader prefix waits every page and frees the unused ones; the
    /// loader's loads feed the consumer; the launcher frees the used pages after the consumer is
    /// done.
    Pipeline,
    /// Page mode 1, consumer-only with the `pages_ready` hand-off (what mpkc generates): the
    /// loader prefix waits every page and frees the unused ones, then arrives `pages_ready`; the
    /// consumer waits it, runs the body and frees the used pages.
    ConsumerHandoff,
    /// Page mode 2 (MPK's `consumer_owned_page_claim`): the loader prefix waits and frees only the
    /// unused pages; the consumer waits the used ones, runs the body and frees them.
    ConsumerClaim,
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
}

const WARPS: [Warp; 3] = [Warp::Consumer, Warp::Loader, Warp::Launcher];

/// One step of a warp's part of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Wait page `p` with the task's parity.
    WaitPage(usize),
    /// Release page `p`.
    Free(usize),
    /// Arrive the task's hand-off (`pages_ready`, or the pipeline's data to the consumer).
    Handoff,
    /// Wait the task's hand-off.
    WaitHandoff,
    /// Arrive `consumer_done`.
    Done,
    /// Wait `consumer_done`.
    WaitDone,
}

fn steps(t: QueueTask, warp: Warp) -> Vec<Step> {
    let used = |p: usize| t.used >> p & 1 == 1;
    let all = 0..PAGES;
    match (t.roles, warp) {
        (PageRoles::Pipeline | PageRoles::ConsumerHandoff, Warp::Loader) => {
            let mut s: Vec<Step> = all.clone().map(Step::WaitPage).collect();
            s.extend(all.filter(|&p| !used(p)).map(Step::Free));
            s.push(Step::Handoff);
            s
        }
        (PageRoles::ConsumerClaim, Warp::Loader) => {
            let unused: Vec<usize> = all.filter(|&p| !used(p)).collect();
            let mut s: Vec<Step> = unused.iter().map(|&p| Step::WaitPage(p)).collect();
            s.extend(unused.iter().map(|&p| Step::Free(p)));
            s
        }
        (PageRoles::Pipeline, Warp::Consumer) => vec![Step::WaitHandoff, Step::Done],
        (PageRoles::Pipeline, Warp::Launcher) => {
            let mut s = vec![Step::WaitDone];
            s.extend(all.filter(|&p| used(p)).map(Step::Free));
            s
        }
        (PageRoles::ConsumerHandoff, Warp::Consumer) => {
            let mut s = vec![Step::WaitHandoff];
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
        (PageRoles::ConsumerHandoff | PageRoles::ConsumerClaim, Warp::Launcher) => Vec::new(),
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
    (0..schedules).try_for_each(|seed| run(queue, seed))
}

fn run(queue: &[QueueTask], seed: u64) -> Result<(), PageFault> {
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
    let mut handoff = vec![false; n];
    let mut done = vec![false; n];
    // Per warp: (task, step index).
    let mut at = [(0usize, 0usize); 3];
    let fault = |what: String| Err(PageFault { seed, what });
    loop {
        // A task is published once the task RING places earlier finished (every warp past it).
        let finished = |task: usize, at: &[(usize, usize); 3]| at.iter().all(|&(t, _)| t > task);
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
                Some(Step::WaitHandoff) => handoff[t],
                Some(Step::WaitDone) => done[t],
                Some(_) => true,
            };
            if can {
                ready.push((w, weights[w]));
            }
        }
        if ready.is_empty() {
            if at.iter().all(|&(t, _)| t >= n) {
                return Ok(());
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
            Some(Step::Handoff) => handoff[t] = true,
            Some(Step::WaitHandoff | Step::WaitDone) => {}
            Some(Step::Done) => done[t] = true,
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

    #[test]
    fn a_homogeneous_queue_of_mode_2_tasks_is_sound() {
        // What MPK's fork ran mode 2 on alone: the consumer is then every used page's observer.
        assert_eq!(
            check_queue(&[task(PageRoles::ConsumerClaim, 0b11); 7], 500),
            Ok(())
        );
    }
}
