//! The mbarrier simulator of the protocol model check.
//!
//! An mbarrier has an arrival count per phase, pending arrivals and the number of completed
//! phases. `try_wait.parity P` passes when the current (incomplete) phase's parity differs from
//! P (PTX ISA, mbarrier): a fresh barrier passes parity 1 at once and blocks on parity 0.
//! Asynchronous arrivals (TMA complete_tx, tcgen05.commit) are in flight until delivered; the
//! schedules deliver them at once or as late as possible.

use crate::ir::RoleKind;
use crate::span::Span;

/// Where an operation comes from, for diagnostics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// What the operation is (`waits the full barrier`, `drains`, …).
    pub what: &'static str,
    /// The declaration that implies it.
    pub span: Span,
}

/// One operation of a role's program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `mbarrier.init` again at task start (role re-init, I-M4).
    Reinit(usize),
    /// `mbarrier.try_wait.parity` until it passes. `expect`: the phase index whose completion the
    /// waiter means to observe (`None`: the producer's pre-empty first lap, phase −1).
    Wait {
        bar: usize,
        parity: u32,
        expect: Option<u64>,
        site: Site,
    },
    /// `weight` arrivals (asynchronous ones stay in flight until delivered).
    Arrive {
        bar: usize,
        weight: i64,
        is_async: bool,
    },
    /// `bar.sync id`: blocks until `parties` programs (warps) reached it.
    Sync { id: u8, parties: u32, site: Site },
    /// A read of `res` (the TMEM accumulator, the task's SMEM pages).
    Read { res: Resource, site: Site },
    /// `res` is given back (TMEM dealloc, page release): a later read of it in this task reads
    /// memory that is no longer the task's.
    Reuse { res: Resource },
}

/// What a role reads and another gives back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// The task's TMEM columns.
    Tmem,
    /// The task's SMEM pages.
    Pages,
}

/// A role's program for one task.
#[derive(Clone, Debug)]
pub struct Program {
    /// The role.
    pub role: RoleKind,
    /// The warp of the role this program is, where the role is modelled warp by warp.
    pub warp: Option<u32>,
    /// Its operations in program order.
    pub ops: Vec<Op>,
}

#[derive(Clone, Debug)]
struct Bar {
    count: i64,
    pending: i64,
    phase: u64,
    /// Init generation: controller init and role re-init start a new one.
    epoch: u64,
    /// Pending arrivals that came from an earlier epoch (a stray from a previous task).
    stray_pending: bool,
}

#[derive(Clone, Debug)]
struct InFlight {
    bar: usize,
    weight: i64,
    epoch: u64,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// No role can proceed: `role` waits `bar` at `parity` forever.
    Deadlock {
        role: RoleKind,
        bar: usize,
        parity: u32,
        phase: u64,
        site: Site,
    },
    /// A wait passed on a phase other than the one it means (`phase` completed phases seen).
    EarlyFlip {
        role: RoleKind,
        bar: usize,
        expect: Option<u64>,
        phase: u64,
        site: Site,
        stray: bool,
    },
    /// A role read `res` after another gave it back.
    UseAfterRelease {
        role: RoleKind,
        warp: Option<u32>,
        res: Resource,
        site: Site,
    },
    /// A named barrier never gathers its parties: `arrived` of `parties` warps reached it.
    SyncDeadlock {
        role: RoleKind,
        id: u8,
        parties: u32,
        arrived: u32,
        site: Site,
    },
    /// At task end a barrier completed `completed` phases where the protocol fills `expected`,
    /// or holds arrivals that complete no phase.
    Arrivals {
        bar: usize,
        expected: u64,
        completed: u64,
        pending: i64,
        site: Option<Site>,
    },
}

/// How asynchronous arrivals are delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// As soon as issued.
    Immediate,
    /// Only when no role can proceed (and, at task end, after the next task's controller init).
    Lazy,
}

/// How roles interleave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interleave {
    /// One operation per role per turn.
    RoundRobin,
    /// Each role runs until it blocks, in turn.
    Greedy,
    /// Program `n` is the slowest: the others run until they block, and it takes one step only
    /// when none of them can (a warp that lags behind its warpgroup).
    Laggard(usize),
}

/// A barrier file shared by consecutive tasks on one ring slot.
#[derive(Clone, Debug)]
pub struct Machine {
    bars: Vec<Bar>,
    in_flight: Vec<InFlight>,
    epoch: u64,
    /// Named barriers: (id, arrived this generation, generation).
    syncs: Vec<(u8, u32, u64)>,
    /// Per program: the generation of the named barrier it waits at.
    at_sync: Vec<Option<u64>>,
    /// Resources given back in this task.
    released: Vec<Resource>,
}

impl Machine {
    /// Barriers with these init counts, before the first task's controller init.
    pub fn new(counts: &[i64]) -> Self {
        Machine {
            bars: counts
                .iter()
                .map(|&c| Bar {
                    count: c.max(1),
                    pending: 0,
                    phase: 0,
                    epoch: 0,
                    stray_pending: false,
                })
                .collect(),
            in_flight: Vec::new(),
            epoch: 0,
            syncs: Vec::new(),
            at_sync: Vec::new(),
            released: Vec::new(),
        }
    }

    /// The controller's `init_semaphores` at publish: every ordinal re-initialised.
    fn controller_init(&mut self) {
        self.epoch += 1;
        for b in &mut self.bars {
            b.pending = 0;
            b.phase = 0;
            b.epoch = self.epoch;
            b.stray_pending = false;
        }
    }

    fn land(&mut self, bar: usize, weight: i64, epoch: u64) {
        let b = &mut self.bars[bar];
        if epoch != b.epoch {
            b.stray_pending = true;
        }
        b.pending += weight;
        while b.pending >= b.count {
            b.pending -= b.count;
            b.phase += 1;
        }
    }

    /// Completed phases of each barrier (for the end-of-task accounting).
    pub fn phases(&self) -> Vec<(u64, i64)> {
        self.bars.iter().map(|b| (b.phase, b.pending)).collect()
    }

    /// Runs one task's programs. Returns the first fault, if any.
    pub fn run_task(
        &mut self,
        progs: &[Program],
        order: &[usize],
        il: Interleave,
        delivery: Delivery,
    ) -> Option<Fault> {
        self.controller_init();
        self.syncs.clear();
        self.at_sync = vec![None; progs.len()];
        self.released.clear();
        // Strays of the previous task land after the controller's init, before any role runs:
        // the worst case the role re-init must absorb (I-M4).
        for f in std::mem::take(&mut self.in_flight) {
            self.land(f.bar, f.weight, f.epoch);
        }
        let mut pc = vec![0usize; progs.len()];
        loop {
            let mut progressed = false;
            for &r in order {
                if il == Interleave::Laggard(r) {
                    continue;
                }
                let steps = if il == Interleave::RoundRobin {
                    1
                } else {
                    usize::MAX
                };
                for _ in 0..steps {
                    match self.step(r, &progs[r], &mut pc[r], delivery) {
                        Step::Done | Step::Blocked => break,
                        Step::Advanced => progressed = true,
                        Step::Fault(f) => return Some(f),
                    }
                }
            }
            if pc.iter().zip(progs).all(|(p, g)| *p >= g.ops.len()) {
                if delivery == Delivery::Immediate {
                    for f in std::mem::take(&mut self.in_flight) {
                        self.land(f.bar, f.weight, f.epoch);
                    }
                }
                return None;
            }
            if let (false, Interleave::Laggard(l)) = (progressed, il) {
                if l < progs.len() {
                    match self.step(l, &progs[l], &mut pc[l], delivery) {
                        Step::Advanced => continue,
                        Step::Fault(f) => return Some(f),
                        Step::Done | Step::Blocked => {}
                    }
                }
            }
            if !progressed {
                if let Some(f) = self.in_flight.first().cloned() {
                    self.in_flight.remove(0);
                    self.land(f.bar, f.weight, f.epoch);
                    continue;
                }
                // Name the root cause: a blocked wait that no role's remaining program arrives on.
                let arrives_later = |bar: usize| {
                    progs.iter().zip(&pc).any(|(g, &p)| {
                        g.ops
                            .iter()
                            .skip(p)
                            .any(|o| matches!(o, Op::Arrive { bar: b, .. } if *b == bar))
                    })
                };
                let blocked: Vec<(RoleKind, Op)> = progs
                    .iter()
                    .zip(&pc)
                    .filter_map(|(g, &p)| g.ops.get(p).map(|op| (g.role, op.clone())))
                    .collect();
                let (r, op) = blocked
                    .iter()
                    .find(|(_, op)| matches!(op, Op::Wait { bar, .. } if !arrives_later(*bar)))
                    .or_else(|| blocked.first())
                    .cloned()
                    .unwrap_or_else(|| unreachable!("a role is unfinished"));
                match op {
                    Op::Wait {
                        bar, parity, site, ..
                    } => {
                        return Some(Fault::Deadlock {
                            role: r,
                            bar,
                            parity,
                            phase: self.bars[bar].phase,
                            site,
                        })
                    }
                    Op::Sync { id, parties, site } => {
                        let arrived = self.syncs.iter().find(|s| s.0 == id).map_or(0, |s| s.1);
                        return Some(Fault::SyncDeadlock {
                            role: r,
                            id,
                            parties,
                            arrived,
                            site,
                        });
                    }
                    _ => unreachable!("only waits and named barriers block"),
                }
            }
        }
    }

    fn step(&mut self, r: usize, prog: &Program, pc: &mut usize, delivery: Delivery) -> Step {
        let Some(op) = prog.ops.get(*pc) else {
            return Step::Done;
        };
        match op {
            Op::Reinit(bar) => {
                self.epoch += 1;
                let b = &mut self.bars[*bar];
                b.pending = 0;
                b.phase = 0;
                b.epoch = self.epoch;
                b.stray_pending = false;
                // Arrivals still in flight now land in the new epoch's pending count.
            }
            Op::Wait {
                bar,
                parity,
                expect,
                site,
            } => {
                let b = &self.bars[*bar];
                if (b.phase & 1) as u32 == *parity {
                    return Step::Blocked;
                }
                let want = expect.map_or(0, |k| k + 1);
                if b.phase != want || (b.stray_pending && b.phase > 0) {
                    return Step::Fault(Fault::EarlyFlip {
                        role: prog.role,
                        bar: *bar,
                        expect: *expect,
                        phase: b.phase,
                        site: site.clone(),
                        stray: b.stray_pending,
                    });
                }
            }
            Op::Sync { id, parties, .. } => {
                let i = match self.syncs.iter().position(|s| s.0 == *id) {
                    Some(i) => i,
                    None => {
                        self.syncs.push((*id, 0, 0));
                        self.syncs.len() - 1
                    }
                };
                match self.at_sync[r] {
                    None => {
                        // Arrive at the barrier; the last party releases the generation.
                        self.at_sync[r] = Some(self.syncs[i].2);
                        self.syncs[i].1 += 1;
                        if self.syncs[i].1 >= *parties {
                            self.syncs[i].1 = 0;
                            self.syncs[i].2 += 1;
                        }
                        return Step::Advanced;
                    }
                    Some(g) if self.syncs[i].2 > g => self.at_sync[r] = None,
                    Some(_) => return Step::Blocked,
                }
            }
            Op::Read { res, site } => {
                if self.released.contains(res) {
                    return Step::Fault(Fault::UseAfterRelease {
                        role: prog.role,
                        warp: prog.warp,
                        res: *res,
                        site: site.clone(),
                    });
                }
            }
            Op::Reuse { res } => self.released.push(*res),
            Op::Arrive {
                bar,
                weight,
                is_async,
                ..
            } => {
                if *is_async && delivery == Delivery::Lazy {
                    self.in_flight.push(InFlight {
                        bar: *bar,
                        weight: *weight,
                        epoch: self.bars[*bar].epoch,
                    });
                } else {
                    let e = self.bars[*bar].epoch;
                    self.land(*bar, *weight, e);
                }
            }
        }
        *pc += 1;
        Step::Advanced
    }
}

enum Step {
    Advanced,
    Blocked,
    Done,
    Fault(Fault),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site {
        Site {
            what: "test",
            span: Span::default(),
        }
    }

    #[test]
    fn fresh_barrier_passes_parity_1_and_blocks_parity_0() {
        let p = Program {
            warp: None,
            role: RoleKind::Loader,
            ops: vec![Op::Wait {
                bar: 0,
                parity: 1,
                expect: None,
                site: site(),
            }],
        };
        let mut m = Machine::new(&[1]);
        assert_eq!(
            m.run_task(&[p], &[0], Interleave::RoundRobin, Delivery::Immediate),
            None
        );
        let p = Program {
            warp: None,
            role: RoleKind::Loader,
            ops: vec![Op::Wait {
                bar: 0,
                parity: 0,
                expect: Some(0),
                site: site(),
            }],
        };
        let mut m = Machine::new(&[1]);
        assert!(matches!(
            m.run_task(&[p], &[0], Interleave::RoundRobin, Delivery::Immediate),
            Some(Fault::Deadlock { .. })
        ));
    }

    #[test]
    fn a_double_arrival_flips_the_phase_early() {
        let prod = Program {
            warp: None,
            role: RoleKind::Launcher,
            ops: vec![
                Op::Arrive {
                    bar: 0,
                    weight: 1,
                    is_async: false,
                },
                Op::Arrive {
                    bar: 0,
                    weight: 1,
                    is_async: false,
                },
            ],
        };
        let cons = Program {
            warp: None,
            role: RoleKind::Consumer,
            ops: vec![Op::Wait {
                bar: 0,
                parity: 0,
                expect: Some(0),
                site: site(),
            }],
        };
        let mut m = Machine::new(&[1]);
        let f = m.run_task(
            &[prod, cons],
            &[0, 1],
            Interleave::Greedy,
            Delivery::Immediate,
        );
        assert!(
            matches!(
                f,
                Some(Fault::Deadlock { .. }) | Some(Fault::EarlyFlip { .. })
            ),
            "{f:?}"
        );
    }
}
