//! The role programs of the consumer-only families: the body on the consumer warpgroup, the
//! page hand-off, and each consumer ring's fills and uses (docs/language.md, "Consumer rings").

use super::Cx;
use crate::ir::{ChannelIr, EmptyEdge, Handle, RoleKind};
use crate::lower::program::*;
use crate::lower::target;

impl Cx<'_> {
    /// Consumer-only families: the body on the consumer warpgroup (their contracts hold no
    /// channel and no op semaphore, E0011), after the page hand-off where the task uses pages:
    /// the loader, once its own page prefix has waited the pages the task uses (it waits and
    /// frees the unused ones last: the one role that observes page parity, I-P5), arrives
    /// `pages_ready`; the consumer waits it first.
    /// A consumer ring (docs/language.md, "Consumer rings") adds, per ring, the loader body's
    /// fills (wait the slot free from phase 1, its bulk copies' complete_tx) and the consumer
    /// body's uses (wait the slot full from phase 0, every thread frees it), each a loop of
    /// as many uses as the bodies decide at run time: the model check sweeps them from 0.
    pub(super) fn consumer_only_role(&self, role: RoleKind) -> Vec<Op> {
        let mut ops = Vec::new();
        let handoff = target::find(&self.bars, BarrierSource::PagesReady);
        let rings: Vec<Handle<ChannelIr>> = self
            .ir
            .channels
            .iter()
            .filter(|(_, c)| crate::valid::rings::is_consumer_ring(c))
            .map(|(h, _)| h)
            .collect();
        match (role, handoff) {
            (RoleKind::Loader, handoff) => {
                // I-M4: the rings' barriers are arrived asynchronously; the loader re-inits
                // them before the hand-off that lets the consumer wait them.
                let owned = self.reinit_owned(role);
                if !owned.is_empty() {
                    ops.push(Op::Reinit { ordinals: owned });
                }
                // With pages to hand off, the loader runs the page prefix itself (the used
                // pages first, `back::registration::Registration::CONSUMER_HANDOFF`).
                // A ring's copies write the pages in the async proxy and read what the
                // tasks this one depends on wrote: the proxy fence after the page acquire
                // and before the hand-off, then the dependency wait (I-M9), before the
                // loader body (`back::consumer_ring`). Neither moves a barrier the model
                // tracks.
                if let Some(bar) = handoff {
                    ops.push(Op::Step(Step::PageAcquire));
                    if !rings.is_empty() {
                        ops.push(Op::Step(Step::PagesFence));
                    }
                    ops.push(Op::Arrive {
                        bar: BarRef {
                            bar,
                            index: Index::Fixed(0),
                        },
                        by: ThreadSet::Lane0,
                        threads: 1,
                    });
                }
                if !rings.is_empty() {
                    ops.push(Op::Step(Step::DepWait));
                }
                for &h in &rings {
                    self.ring_uses(role, h, &mut ops);
                }
                if handoff.is_some() {
                    ops.push(Op::Step(Step::PageFreeUnused));
                }
            }
            (RoleKind::Consumer, _) => {
                if let Some(bar) = handoff {
                    ops.push(Op::Wait {
                        bar: BarRef {
                            bar,
                            index: Index::Fixed(0),
                        },
                        start: 0,
                        site: Site {
                            what: "waits the loader's page acquire before the body",
                            span: self.ir.span,
                        },
                    });
                }
                if self.ir.body.is_some() {
                    ops.push(Op::Step(Step::Body));
                }
                for &h in &rings {
                    self.ring_uses(role, h, &mut ops);
                }
            }
            _ => {}
        }
        ops
    }

    /// One consumer ring's uses by `role` (the loader fills, the consumer drains), as a loop of
    /// the bodies' run-time trip count.
    fn ring_uses(&self, role: RoleKind, h: Handle<ChannelIr>, ops: &mut Vec<Op>) {
        let ch = &self.ir.channels[h];
        let index = Index::Iter(LoopKind::KIters);
        let mut body = Vec::new();
        if ch.producer == role {
            if let Some(bar) = self.empty(h) {
                body.push(Op::Wait {
                    bar: BarRef { bar, index },
                    start: 1,
                    site: Site {
                        what: "waits the slot free before its bulk copies",
                        span: ch.span,
                    },
                });
            }
            if let Some(bar) = self.full(h) {
                body.push(Op::Commit {
                    bar: BarRef { bar, index },
                });
            }
        }
        if ch.consumer == role {
            if let Some(bar) = self.full(h) {
                body.push(Op::Wait {
                    bar: BarRef { bar, index },
                    start: 0,
                    site: Site {
                        what: "waits the slot's bulk copies",
                        span: ch.span,
                    },
                });
            }
            if let (Some(bar), EmptyEdge::Own { arrival, .. }) = (self.empty(h), &ch.empty) {
                body.push(self.arrive(role, arrival, BarRef { bar, index }, false));
            }
        }
        if !body.is_empty() {
            ops.push(Op::Loop {
                kind: LoopKind::KIters,
                body,
            });
        }
    }
}
