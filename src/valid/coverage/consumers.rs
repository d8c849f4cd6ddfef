//! What consumes each declared item: the operations of each target's role program ([`Walk`]),
//! the linear engine's binding, and the generated files outside the program ([`elsewhere`]).

use super::decls::{declarations, Item};
use crate::ir::*;
use crate::lower::{BarRef, BarrierSource, Op, RoleProgram, Step};
use crate::lower::{Epilogue, LinearMath, Operands};
use crate::span::Span;
use crate::templates::Binding;
use std::collections::{BTreeMap, BTreeSet};

/// What consumes an item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Consumer {
    /// An operation of this target's role program.
    Program(Target),
    /// A generated file or a lowering stage outside the role program (the rule's words).
    Elsewhere(&'static str),
}

/// What the linear engine's steps read beyond their operands (the binding the lowering carries
/// next to the program).
struct Engine {
    /// Tensors the epilogue step reads or writes: the output, the residual, the output scales.
    epilogue: Vec<TensorHandle>,
    /// Tensors the scale staging reads (block-scaled fp8: the weight and activation scales).
    scales: Vec<TensorHandle>,
    /// Whether the epilogue meets its warps at `with B` (`quant e4m3`, `split_k bf16`).
    with: bool,
    /// Whether the epilogue writes split-K partials, so that mpkc derives a reduce task.
    split_k: bool,
    /// Whether the epilogue applies the contract's inline body to each element (its map).
    map: bool,
    /// What the binding requires on every target, whether or not a target's program reads it:
    /// the accumulator channel (its edges), the region holding the TMEM address (its
    /// `tmem_addr`) and `tmem cols` (an sm_90a-only contract keeps the accumulator in registers,
    /// yet `valid::pipeline` binds them: without them it is E0013, not E0014).
    bound: Vec<Item>,
}

impl Engine {
    fn of(ir: &TaskIr, p: &LinearMath) -> Engine {
        let mut epilogue = vec![p.output];
        epilogue.extend(p.residual);
        epilogue.extend(p.out_scale.map(|(t, _)| t));
        epilogue.extend(p.split_sum.iter().flat_map(|s| [s.partials, s.counters]));
        let scales = match &p.operands {
            Operands::Fp8BlockScale {
                w_scale, a_scale, ..
            } => vec![*w_scale, *a_scale],
            Operands::Bf16 => Vec::new(),
        };
        let mut bound = vec![
            Item::Full(p.acc.index()),
            Item::Empty(p.acc.index()),
            Item::Group(p.scratch),
            Item::TmemCols,
        ];
        bound.extend(
            ir.region_groups
                .get(p.scratch)
                .and_then(|g| g.members.first())
                .and_then(|r| {
                    ir.regions[*r]
                        .holds
                        .iter()
                        .position(|h| h.ty == HeldType::TmemAddr)
                })
                .map(|member| Item::Held {
                    group: p.scratch,
                    member,
                }),
        );
        Engine {
            epilogue,
            scales,
            with: matches!(
                p.epilogue,
                Epilogue::QuantE4m3 | Epilogue::SplitKBf16 | Epilogue::SplitKAtomic
            ),
            split_k: p.epilogue == Epilogue::SplitKF32,
            map: p.map,
            bound,
        }
    }
}

/// The consumers of each item of `ir`, over the programs of every declared target. `binding` is
/// the body template's; the linear engine's binding is the programs' `compute` where the contract
/// lowers to it.
pub fn consumers(
    ir: &TaskIr,
    binding: Option<&Binding>,
    programs: &[RoleProgram],
) -> BTreeMap<Item, Consumer> {
    let engine = programs
        .iter()
        .find_map(|p| p.compute.as_ref())
        .map(|p| Engine::of(ir, p));
    let mut out = BTreeMap::new();
    for p in programs {
        let mut w = Walk {
            ir,
            prog: p,
            binding,
            engine: engine.as_ref(),
            found: BTreeSet::new(),
        };
        for r in &p.roles {
            w.ops(&r.ops);
        }
        for item in w.found {
            out.entry(item).or_insert(Consumer::Program(p.target));
        }
    }
    for item in engine.iter().flat_map(|e| &e.bound) {
        out.entry(*item).or_insert(Consumer::Elsewhere(
            "the linear engine's binding, which requires it on every target (`lower::linear::bind`)",
        ));
    }
    // The derived reduce contract's `task_id` (`driver::derived_sources`): derived only from a
    // pipeline whose linear engine ends in the split-K epilogue.
    if engine.as_ref().is_some_and(|e| e.split_k) {
        out.entry(Item::ReduceTaskId).or_insert(Consumer::Elsewhere(
            "the `task_id` of the derived split-K reduce task (`driver::derived_sources`)",
        ));
    }
    for d in declarations(ir) {
        if let Some(why) = elsewhere(ir, programs, &d.item, &out) {
            out.entry(d.item).or_insert(Consumer::Elsewhere(why));
        }
    }
    out
}

/// Whether a helper's inline body synchronises on its barrier `b` (by `BAR_NAME` or its id).
fn helper_names_barrier(ir: &TaskIr, b: usize) -> bool {
    let Some((_, bar)) = ir.barriers.iter().find(|(h, _)| h.index() == b) else {
        return false;
    };
    let constant = format!("BAR_{}", bar.name.to_ascii_uppercase());
    crate::valid::body::bodies_name(ir, &constant)
        || crate::valid::body::inline_bodies(ir).any(|(code, _)| {
            crate::valid::asm_barriers::body_barrier_ids(ir, code).contains(&bar.id)
        })
}

/// Items consumed outside the role program, with where (None: only an operation consumes it).
fn elsewhere(
    ir: &TaskIr,
    programs: &[RoleProgram],
    item: &Item,
    found: &BTreeMap<Item, Consumer>,
) -> Option<&'static str> {
    match *item {
        // One role program per declared target (`lower::lower` in `valid::check_rules`).
        Item::Target(_) => Some("its role program"),
        // A helper has no Registration, dispatcher or worker prologue of its own: its function
        // runs in its callers' consumer bodies, under their TaskType, task count, warps and
        // register split, and its own unit writes only the spec header and design document.
        Item::TaskId | Item::SetMaxNReg | Item::Role(_) if ir.family == Family::Helper => None,
        // Undeclared, the granularity is the default one, placed at the task's name.
        Item::Granularity if ir.family == Family::Helper => {
            let (GranularityIr::PerTile { span, .. } | GranularityIr::GridWide { span, .. }) =
                &ir.granularity;
            (*span == ir.name_span).then_some("nothing: the default granularity")
        }
        // The Registration's `kTaskType` (`back/consumer.rs`, `back/pipeline.rs`).
        Item::TaskId => Some("the Registration's `kTaskType`"),
        // `spec.h` renders every param as `params::NAME` (`back/spec_h.rs` `params`), the host's
        // and the body's constant, and the variant string (I-H3); expressions read them in sema.
        Item::Param(_) => Some("`spec.h` (`params::NAME`)"),
        // The dispatcher runs each role on its warps; the program's `Role::threads` is the
        // binding's (the controller is the runtime's own). A role with no operation on any
        // target is an empty function whether declared or not (the Registration has all four):
        // declaring it changes only the design doc's "nothing" line.
        Item::Role(kind)
            if programs
                .iter()
                .any(|p| p.role(kind).is_some_and(|r| !r.ops.is_empty())) =>
        {
            Some("the role functions the dispatcher runs")
        }
        // The tasks per step the Registration declares (`back/consumer.rs`, `kNumTasks`), and
        // `RoleProgram::tiles`.
        Item::Granularity => Some("the Registration's task count"),
        // The registration's defines and the worker prologue (`back/setmaxnreg.rs`).
        Item::SetMaxNReg => Some("the worker prologue (`back/setmaxnreg.rs`)"),
        // Not a generated file: `mpkc verify` runs it on the kernel's inputs and compares
        // (`gpu/python.rs`); `mpkc build` never reads it, and sema rejects it where verify would
        // not run it (E0018).
        Item::Reference => {
            Some("`mpkc verify`, which runs it against the kernel (`gpu/python.rs`)")
        }
        // A helper's tensors, regions and barriers are its function's parameters, SMEM view and
        // barrier enum, emitted into each caller's kernel (`back/helper.rs`) and documented in
        // its spec header and design document.
        // Its tensors and regions are E0009 / E0110 where its body does not take them; a named
        // barrier is consumed where the body synchronises on it (`BAR_NAME` or its raw id), as
        // a consumer body's (`Walk::body`): one it never names is reserved for nothing.
        Item::Tensor(_) | Item::Group(_) | Item::Held { .. } if ir.family == Family::Helper => {
            Some("the helper's function, emitted into its callers' kernels (`back/helper.rs`)")
        }
        Item::NamedBarrier(b) if ir.family == Family::Helper && helper_names_barrier(ir, b) => {
            Some("the helper's function, emitted into its callers' kernels (`back/helper.rs`)")
        }
        // The helper's code in this kernel, which the body calls (E0027 when it does not).
        Item::Helper(_) => Some("the helper's function in this kernel (`back/helper.rs`)"),
        // A used helper's regions and barriers: its function's SMEM view and barrier enum.
        Item::Group(g) if ir.helpers.iter().any(|h| h.region_groups.contains(&g)) => {
            Some("the SMEM view of the helper that placed it (`back/helper.rs`)")
        }
        Item::Held { group, .. } if ir.helpers.iter().any(|h| h.region_groups.contains(&group)) => {
            Some("the helper that placed its region (`back/helper.rs`)")
        }
        Item::NamedBarrier(b)
            if ir
                .helpers
                .iter()
                .any(|h| h.barriers.iter().any(|x| x.index() == b)) =>
        {
            Some("the barrier enum of the helper that placed it (`back/helper.rs`)")
        }
        // A consumer family's `tile` is read by the expressions that use it (`tile.M`); the
        // engine reads a pipeline's (`Step::StageMma`).
        Item::Tile if ir.family != Family::Pipeline => Some("the expressions that read it"),
        // `stages N` sizes the stage arrays (`R[stage]`, sema's expansion) of a consumer body.
        Item::Stages
            if ir.family != Family::Pipeline && ir.region_groups.iter().any(|g| g.staged) =>
        {
            Some("the stage arrays it expands")
        }
        // A member of `holds` lays out the members after it: padding before a consumed member
        // is consumed by that member's offset; in a body's region, the body owns the layout
        // (its size and alignment, E0110/E0115).
        Item::Held { group, member } => {
            let r = &ir.regions[*ir.region_groups[group].members.first()?];
            let later = (member + 1..r.holds.len())
                .any(|m| found.contains_key(&Item::Held { group, member: m }));
            if later {
                Some("the offset of the member after it")
            } else if ir.family.is_consumer_only() && found.contains_key(&Item::Group(group)) {
                Some("the body that addresses its region")
            } else {
                None
            }
        }
        _ => None,
    }
}

struct Walk<'a> {
    ir: &'a TaskIr,
    prog: &'a RoleProgram,
    binding: Option<&'a Binding>,
    engine: Option<&'a Engine>,
    found: BTreeSet<Item>,
}

impl Walk<'_> {
    fn ops(&mut self, ops: &[Op]) {
        for op in ops {
            self.op(op);
        }
    }

    /// The barrier family behind `bar`: a channel's edge or a sem.
    fn bar(&mut self, bar: &BarRef) {
        self.family(self.prog.barrier(bar.bar).source);
    }

    fn family(&mut self, source: BarrierSource) {
        match source {
            BarrierSource::Full(h) => {
                self.found.insert(Item::Full(h.index()));
            }
            BarrierSource::Empty(owner) => {
                // The owner's empty edge, and every `shares_empty` of it.
                for (h, c) in self.ir.channels.iter() {
                    let shares = matches!(c.empty, EmptyEdge::Shared(o, _) if o == owner);
                    if h == owner || shares {
                        self.found.insert(Item::Empty(h.index()));
                    }
                }
            }
            BarrierSource::Sem(h) => {
                self.found.insert(Item::Sem(h.index()));
            }
            // Not declared in the contract: nothing of it to cover.
            BarrierSource::PagesReady => {}
        }
    }

    /// A named barrier synchronised at `span`, `after` of an arrival.
    fn named(&mut self, span: Span) {
        if let Some((h, _)) = self.ir.barriers.iter().find(|(_, b)| b.span == span) {
            self.found.insert(Item::NamedBarrier(h.index()));
        }
    }

    fn group(&mut self, g: usize) {
        self.found.insert(Item::Group(g));
    }

    /// Region group `g`'s `holds` member of type `ty` (the TMEM address), as the step reads it.
    fn held(&mut self, g: usize, pick: impl Fn(&HeldIr) -> bool) {
        let Some(r) = self.ir.region_groups[g].members.first() else {
            return;
        };
        if let Some(m) = self.ir.regions[*r].holds.iter().position(pick) {
            self.found.insert(Item::Held {
                group: g,
                member: m,
            });
        }
    }

    fn op(&mut self, op: &Op) {
        match op {
            // Initialisation is no use: a family only re-initialised is never waited or arrived.
            Op::Reinit { ordinals: _ } => {}
            Op::Wait { bar, .. } | Op::Arrive { bar, .. } => self.bar(bar),
            Op::Commit { bar } => {
                self.bar(bar);
                self.ring_fill(bar);
            }
            Op::EarlyExit { bar, span, .. } => {
                self.bar(bar);
                self.early_exit(*span);
            }
            Op::TmaLoad {
                tensor,
                operand: _,
                bar,
                group,
                bytes: _,
                box_dims: _,
                coords: _,
                l2,
            } => {
                self.bar(bar);
                self.group(*group);
                // The load is of every tensor of its channel's `tma …` arrival (one expect_tx).
                if let BarrierSource::Full(ch) = self.prog.barrier(bar.bar).source {
                    if let ArrivalIr::Tma(ts) = &self.ir.channels[ch].full_arrival {
                        for t in ts {
                            self.found.insert(Item::Tensor(t.index()));
                            self.found.insert(Item::Tma(t.index()));
                        }
                    }
                }
                self.found.insert(Item::Tensor(tensor.index()));
                self.found.insert(Item::Tma(tensor.index()));
                if let Some((name, _)) = &l2.lever {
                    if let Some(i) = self.ir.levers.iter().position(|l| l.name == *name) {
                        self.found.insert(Item::Lever(i));
                    }
                }
            }
            Op::StageScales { bar, group } => {
                self.bar(bar);
                self.group(*group);
                for t in self.engine.map(|e| e.scales.clone()).unwrap_or_default() {
                    self.found.insert(Item::Tensor(t.index()));
                }
            }
            Op::Step(s) => self.step(s),
            Op::NamedSync { span, .. } => self.named(*span),
            Op::Loop { kind: _, body } | Op::Elect { body } => self.ops(body),
            Op::Drain { bar, span } => {
                self.family(self.prog.barrier(*bar).source);
                if let Some((h, _)) = self
                    .ir
                    .channels
                    .iter()
                    .find(|(_, c)| c.drain == Some(*span))
                {
                    self.found.insert(Item::Drain(h.index()));
                }
            }
        }
    }

    fn early_exit(&mut self, span: Span) {
        if let Some((h, _)) = self
            .ir
            .channels
            .iter()
            .find(|(_, c)| c.early_exit.is_some_and(|e| e.2 == span))
        {
            self.found.insert(Item::EarlyExit(h.index()));
        }
    }

    fn step(&mut self, s: &Step) {
        let is_tmem_addr = |h: &HeldIr| h.ty == HeldType::TmemAddr;
        match s {
            Step::TmemAlloc { scratch } => {
                self.group(*scratch);
                self.held(*scratch, is_tmem_addr);
                self.found.insert(Item::TmemCols);
            }
            Step::TmemDealloc => {
                self.found.insert(Item::TmemCols);
            }
            Step::StageMma {
                span: _,
                w,
                a,
                sf,
                mma,
            } => {
                self.group(*w);
                self.group(*a);
                if let Some(sf) = sf {
                    self.group(*sf);
                }
                // The engine's instruction and tile constants (the stage's MMAs); the stage
                // count is the rings' depth and the K loop's modulus.
                if mma.is_some() {
                    self.found.insert(Item::Mma);
                    self.found.insert(Item::Tile);
                    self.found.insert(Item::Stages);
                }
            }
            Step::AccLoad { scratch, span: _ } => {
                self.group(*scratch);
                self.held(*scratch, is_tmem_addr);
            }
            Step::Epilogue {
                scratch,
                smem,
                span,
            } => {
                if let Some(i) = self.ir.epilogues.iter().position(|e| e.2 == *span) {
                    self.found.insert(Item::Epilogue(i));
                }
                // A pipeline's inline body is its epilogue's map (`back::epilogue::map_function`).
                if self.engine.is_some_and(|e| e.map) {
                    self.found.insert(Item::Body);
                }
                for t in self.engine.map(|e| e.epilogue.clone()).unwrap_or_default() {
                    self.found.insert(Item::Tensor(t.index()));
                }
                if *smem {
                    // `quant e4m3` meets the warps' maxima in the scratch's `amax` (back/epilogue.rs).
                    self.group(*scratch);
                    self.held(*scratch, |h| h.name.as_deref() == Some("amax"));
                }
                // `quant e4m3` (the maxima) and `split_k bf16` (the tile's arrival) meet the
                // consumer warps at the `with` barrier.
                if self.engine.is_some_and(|e| e.with) {
                    if let Some((b, _)) = self.ir.epilogue_with {
                        self.found.insert(Item::EpilogueWith);
                        self.found.insert(Item::NamedBarrier(b.index()));
                    }
                }
            }
            Step::PageAcquire
            | Step::PagesFence
            | Step::PageFreeUnused
            | Step::PageRelease
            | Step::ConsumerPageRelease
            | Step::DepWait
            | Step::SyncWarp => {}
            // The residual it loads is the epilogue's operand, found with the Epilogue step.
            Step::EpilogueLoads { .. } => {}
            Step::RouteRead => {
                if let Some(r) = &self.ir.route {
                    self.found.insert(Item::Route);
                    self.found.insert(Item::Tensor(r.ids.index()));
                }
            }
            Step::Body => self.body(),
        }
    }

    /// A consumer ring's fill (the loader body's bulk copies completing the slot's full barrier,
    /// `back::consumer_ring`): the ring's slots, the tensors its `bulk` arrival names and the
    /// tensors the loader body takes.
    fn ring_fill(&mut self, bar: &crate::lower::BarRef) {
        let BarrierSource::Full(ch) = self.prog.barrier(bar.bar).source else {
            return;
        };
        let ch = &self.ir.channels[ch];
        let ArrivalIr::Bulk(ts) = &ch.full_arrival else {
            return;
        };
        self.group(ch.region_group());
        for t in ts {
            self.found.insert(Item::Tensor(t.index()));
        }
        if let Some(BodyIr::Cuda { code, .. }) = &self.ir.loader_body {
            let code = crate::valid::body::strip_comments_and_strings(code);
            for (h, t) in self.ir.tensors.iter() {
                if crate::valid::body::names_word(&code, &t.name) {
                    self.found.insert(Item::Tensor(h.index()));
                }
            }
        }
    }

    /// A consumer family's body: the tensors it takes, the regions it addresses, the named
    /// barriers it synchronises on (a template's `kSyncBarrier`, the first consumer barrier,
    /// `back/consumer.rs`; inline CUDA's `BAR_NAME` or a raw PTX barrier on the id).
    fn body(&mut self) {
        let ir = self.ir;
        self.found.insert(Item::Body);
        let code = match &ir.body {
            Some(BodyIr::Cuda { code, .. }) => {
                Some(crate::valid::body::strip_comments_and_strings(code))
            }
            _ => None,
        };
        for (h, t) in ir.tensors.iter() {
            if crate::valid::body::body_takes(code.as_deref(), self.binding, h, &t.name) {
                self.found.insert(Item::Tensor(h.index()));
            }
        }
        for (g, group) in ir.region_groups.iter().enumerate() {
            if crate::valid::body::body_addresses(ir, code.as_deref(), self.binding, &group.name) {
                self.group(g);
            }
        }
        let raw = match &ir.body {
            Some(BodyIr::Cuda { code, .. }) => {
                crate::valid::asm_barriers::body_barrier_ids(ir, code)
            }
            _ => Vec::new(),
        };
        let template_bar = self
            .binding
            .filter(|b| b.sig.needs_barrier)
            .and_then(|_| ir.barriers.iter().find(|(_, b)| b.by == RoleKind::Consumer))
            .map(|(h, _)| h);
        // A grid-wide task's generated `grid_sync(site)` adds to the `grid_barrier` counters and
        // gathers the warpgroup on the granularity's `barrier` (`back/consumer.rs`).
        let grid_bar = match &ir.granularity {
            crate::ir::GranularityIr::GridWide {
                barrier: Some((name, _)),
                ..
            } => Some(name.as_str()),
            _ => None,
        };
        if grid_bar.is_some() {
            for (h, t) in ir.tensors.iter() {
                if t.role() == Some(crate::ir::TensorRole::GridBarrier) {
                    self.found.insert(Item::Tensor(h.index()));
                }
            }
        }
        for (h, b) in ir.barriers.iter() {
            if grid_bar == Some(b.name.as_str()) {
                self.found.insert(Item::NamedBarrier(h.index()));
            }
            let constant = format!("BAR_{}", b.name.to_ascii_uppercase());
            let named = code
                .as_deref()
                .is_some_and(|c| crate::valid::body::names_word(c, &constant));
            if named || raw.contains(&b.id) || template_bar == Some(h) {
                self.found.insert(Item::NamedBarrier(h.index()));
            }
        }
    }
}
