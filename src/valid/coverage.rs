//! Coverage (issue 11 Deliver 3, E0014): every item a contract declares is consumed by the
//! lowering of some declared target, or rejected here. What `check` accepts is what `build`
//! generates, so an item no generated file reads is an error at its span, never dropped.
//!
//! [`declarations`] enumerates the items of a [`TaskIr`] by destructuring every IR struct without
//! `..`: a field added to the IR is a compile error here until it is enumerated (as an [`Item`]) or
//! stated to be part of another item. [`consumers`] walks each target's [`RoleProgram`] and names
//! what reads each item; an item is covered when ANY declared target consumes it (sm_90a keeps the
//! accumulator in registers: a TMEM channel is covered by sm_100a's program). Items consumed
//! outside the role program say where ([`Consumer::Elsewhere`], each rule at its match arm).
//!
//! Slots: a barrier family of `slots` slots whose operations reach only some of them leaves the
//! rest initialised and never waited or arrived. `Index::Fixed(i)` reaches slot `i % slots`,
//! `Index::Iter(Tiles)` the first `min(tiles, slots)`, `Index::Iter(KIters)` the first
//! `min(k_iters, slots)` where the engine's K trip count is known, else all; a drain waits all.
//! Unreached slots of a TMEM slot channel or a fixed index are E0014; ring stages beyond the K
//! iterations are W0015, a warning: K and the split count are params, and the stage count is a
//! latency choice another instance of the same contract (or `--param K=…`) may fill.

use super::{Epilogue, Operands, PipelineShape};
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::*;
use crate::lower::{BarRef, BarrierSource, Index, LoopKind, Op, RoleProgram, Step};
use crate::span::Span;
use crate::templates::Binding;
use std::collections::{BTreeMap, BTreeSet};

/// One item a contract declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Item {
    /// A declared target (`targets sm_100a, …`), by index.
    Target(usize),
    /// `task_id N`.
    TaskId,
    /// A param, by declaration index.
    Param(usize),
    /// A tensor.
    Tensor(usize),
    /// A tensor's `tma(...)`.
    Tma(usize),
    /// `tile M.., N.., K..`.
    Tile,
    /// `stages N`.
    Stages,
    /// `mma …`.
    Mma,
    /// `tmem cols N`.
    TmemCols,
    /// A region group (a region or a stage array), by index into `region_groups`.
    Group(usize),
    /// Member `member` of `holds` of region group `group`.
    Held {
        /// The region group.
        group: usize,
        /// The member's index.
        member: usize,
    },
    /// A channel's full edge (the channel itself: its producer, consumer, arrival, storage).
    Full(usize),
    /// A channel's own empty edge (`empty by …`) or its `shares_empty`.
    Empty(usize),
    /// A channel's `drain`.
    Drain(usize),
    /// A channel's `early_exit`.
    EarlyExit(usize),
    /// A one-shot sem.
    Sem(usize),
    /// A declared role binding.
    Role(RoleKind),
    /// A named barrier.
    NamedBarrier(usize),
    /// The body.
    Body,
    /// An epilogue, by index.
    Epilogue(usize),
    /// `with B` of the epilogue.
    EpilogueWith,
    /// `granularity …`.
    Granularity,
    /// A lever, by index.
    Lever(usize),
    /// `setmaxnreg …`.
    SetMaxNReg,
}

/// A declaration: the item, its span and how diagnostics name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decl {
    /// What it is.
    pub item: Item,
    /// Where it is declared.
    pub span: Span,
    /// `tensor \`X\``, `sem \`tmem_ready\``: the item as a message names it.
    pub label: String,
}

/// What consumes an item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Consumer {
    /// An operation of this target's role program.
    Program(Target),
    /// A generated file or a lowering stage outside the role program (the rule's words).
    Elsewhere(&'static str),
}

/// Every item `ir` declares, in declaration order of their kinds. Exhaustive by construction:
/// every IR struct is destructured without `..`.
pub fn declarations(ir: &TaskIr) -> Vec<Decl> {
    let TaskIr {
        // The task itself: its name, instance and family name the unit and choose the lowering.
        name: _,
        name_span: _,
        span: _,
        instance: _,
        instance_span: _,
        family: _,
        family_span: _,
        targets,
        task_id,
        task_id_span,
        params,
        tensors,
        tile,
        stages,
        mma,
        tmem_cols,
        // Stage members are laid out by their group's declaration: items of the group.
        regions: _,
        region_groups,
        channels,
        sems,
        roles,
        roles_declared,
        barriers,
        body,
        epilogues,
        epilogue_with,
        granularity,
        levers,
        setmaxnreg,
    } = ir;
    let mut out = Vec::new();
    let mut push = |item, span, label: String| out.push(Decl { item, span, label });
    for (i, t) in targets.iter().enumerate() {
        let TargetIr {
            target,
            smem_capacity_bytes: _,
            span,
        } = t;
        push(Item::Target(i), *span, format!("target `{target}`"));
    }
    if task_id.is_some() {
        push(Item::TaskId, *task_id_span, "`task_id`".into());
    }
    for (i, p) in params.values().enumerate() {
        let ParamIr {
            name,
            ty: _,
            value: _,
            span,
            value_span: _,
        } = p;
        push(Item::Param(i), *span, format!("param `{name}`"));
    }
    for (h, t) in tensors.iter() {
        let TensorIr {
            name,
            // Type, extents, direction and role are the tensor's: read with it.
            dtype: _,
            dims: _,
            direction: _,
            role: _,
            tma,
            span,
        } = t;
        push(Item::Tensor(h.index()), *span, format!("tensor `{name}`"));
        if let Some(TmaIr {
            box_dims: _,
            box_span: _,
            swizzle: _,
            l2: _,
            span,
        }) = tma
        {
            push(
                Item::Tma(h.index()),
                *span,
                format!("the `tma(...)` of `{name}`"),
            );
        }
    }
    if let Some(TileIr {
        m: _,
        n: _,
        k: _,
        span,
    }) = tile
    {
        push(Item::Tile, *span, "`tile`".into());
    }
    if let Some((n, span)) = stages {
        push(Item::Stages, *span, format!("`stages {n}`"));
    }
    if let Some(MmaIr {
        engine: _,
        kind: _,
        a: _,
        b: _,
        d: _,
        m: _,
        n: _,
        k: _,
        span,
    }) = mma
    {
        push(Item::Mma, *span, "`mma`".into());
    }
    if let Some((n, span)) = tmem_cols {
        push(Item::TmemCols, *span, format!("`tmem cols {n}`"));
    }
    for (g, group) in region_groups.iter().enumerate() {
        let RegionGroup {
            name,
            members,
            staged: _,
            span: _,
            head_span,
        } = group;
        push(Item::Group(g), *head_span, format!("region `{name}`"));
        // `holds` is the same on every stage: the first member's.
        if let Some(r) = members.first().map(|h| &ir.regions[*h]) {
            let RegionIr {
                // Name, size, alignment, pages, packing, release step and contiguity are the
                // region's attributes: the page plan reads them (`plan::pages`).
                name: _,
                group: _,
                stage: _,
                size: _,
                align: _,
                page_count: _,
                can_pack: _,
                release_step: _,
                contiguous: _,
                span: _,
                bytes_span: _,
                bytes_terms: _,
                align_span: _,
                pages_span: _,
                holds,
                holds_span: _,
            } = r;
            for (m, held) in holds.iter().enumerate() {
                let HeldIr {
                    ty,
                    count,
                    name: mname,
                    offset: _,
                    span,
                } = held;
                let what = match mname {
                    Some(n) => format!("`{n}`"),
                    None if *count == 1 => format!("`{}`", ty.name()),
                    None => format!("`{}[{count}]`", ty.name()),
                };
                push(
                    Item::Held {
                        group: g,
                        member: m,
                    },
                    *span,
                    format!("member {what} of region `{name}`"),
                );
            }
        }
    }
    for (h, c) in channels.iter() {
        let ChannelIr {
            name,
            // Storage, depth, roles, arrival and re-init are the channel's full edge.
            storage: _,
            depth: _,
            producer: _,
            consumer: _,
            full_arrival: _,
            empty,
            reinit: _,
            drain,
            early_exit,
            span,
        } = c;
        let i = h.index();
        push(Item::Full(i), *span, format!("channel `{name}`"));
        match empty {
            EmptyEdge::Own {
                role: _,
                arrival: _,
                span,
                // The named barrier of `after` is an item of its own (`barrier …`).
                after: _,
            } => push(Item::Empty(i), *span, format!("the empty edge of `{name}`")),
            EmptyEdge::Shared(_, span) => {
                push(Item::Empty(i), *span, format!("`shares_empty` of `{name}`"))
            }
            EmptyEdge::None => {}
        }
        if let Some(span) = drain {
            push(Item::Drain(i), *span, format!("`drain` of `{name}`"));
        }
        if let Some((_, _, span)) = early_exit {
            push(
                Item::EarlyExit(i),
                *span,
                format!("`early_exit` of `{name}`"),
            );
        }
    }
    for (h, s) in sems.iter() {
        let SemIr {
            name,
            producer: _,
            consumer: _,
            arrival: _,
            count: _,
            reinit: _,
            at_end: _,
            after: _,
            span,
        } = s;
        push(Item::Sem(h.index()), *span, format!("sem `{name}`"));
    }
    if *roles_declared {
        for r in roles {
            let RoleIr {
                kind,
                first_warp: _,
                last_warp: _,
                span,
            } = r;
            push(Item::Role(*kind), *span, format!("role `{kind}`"));
        }
    }
    for (h, b) in barriers.iter() {
        let BarrierIr {
            name,
            id: _,
            threads: _,
            by: _,
            span,
            id_span: _,
            threads_span: _,
        } = b;
        push(
            Item::NamedBarrier(h.index()),
            *span,
            format!("barrier `{name}`"),
        );
    }
    match body {
        Some(BodyIr::Template {
            name,
            // The template binds these (E0009 when they disagree).
            inputs: _,
            outputs: _,
            scalars: _,
            span,
        }) => push(Item::Body, *span, format!("body `{name}`")),
        Some(BodyIr::Cuda {
            code: _,
            code_span: _,
            span,
        }) => push(Item::Body, *span, "the inline CUDA body".into()),
        None => {}
    }
    for (i, (k, v, span)) in epilogues.iter().enumerate() {
        let v = v.as_ref().map(|v| format!(" {v}")).unwrap_or_default();
        push(Item::Epilogue(i), *span, format!("`epilogue {k}{v}`"));
    }
    if let Some((_, span)) = epilogue_with {
        push(Item::EpilogueWith, *span, "`with` of the epilogue".into());
    }
    match granularity {
        GranularityIr::PerTile {
            tasks: _,
            tiles_per_task: _,
            span,
        }
        | GranularityIr::GridWide {
            skip_after_step0: _,
            justification: _,
            span,
        } => push(Item::Granularity, *span, "`granularity`".into()),
    }
    for (i, l) in levers.iter().enumerate() {
        let LeverIr {
            name,
            default_on: _,
            effect: _,
            span,
        } = l;
        push(Item::Lever(i), *span, format!("lever `{name}`"));
    }
    if let Some((_, _, span)) = setmaxnreg {
        push(Item::SetMaxNReg, *span, "`setmaxnreg`".into());
    }
    out
}

/// What the linear engine's steps read beyond their operands (the binding the lowering carries
/// next to the program).
struct Engine {
    /// Tensors the epilogue step reads or writes: the output, the residual, the output scales.
    epilogue: Vec<TensorHandle>,
    /// Tensors the scale staging reads (block-scaled fp8: the weight and activation scales).
    scales: Vec<TensorHandle>,
    /// Whether the epilogue meets its warps at `with B`.
    quant: bool,
    /// What the binding requires on every target, whether or not a target's program reads it:
    /// the accumulator channel (its edges), the region holding the TMEM address (its
    /// `tmem_addr`) and `tmem cols` (an sm_90a-only contract keeps the accumulator in registers,
    /// yet `valid::pipeline` binds them: without them it is E0013, not E0014).
    bound: Vec<Item>,
}

impl Engine {
    fn of(ir: &TaskIr, p: &PipelineShape) -> Engine {
        let mut epilogue = vec![p.output];
        epilogue.extend(p.residual);
        epilogue.extend(p.out_scale.map(|(t, _)| t));
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
            quant: p.epilogue == Epilogue::QuantE4m3,
            bound,
        }
    }
}

/// The consumers of each item of `ir`, over the programs of every declared target. `binding` is
/// the body template's; `linear` the linear engine's binding when the contract lowers to it.
pub fn consumers(
    ir: &TaskIr,
    binding: Option<&Binding>,
    linear: Option<&PipelineShape>,
    programs: &[RoleProgram],
) -> BTreeMap<Item, Consumer> {
    let engine = linear.map(|p| Engine::of(ir, p));
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
            "the linear engine's binding, which requires it on every target (`valid::pipeline`)",
        ));
    }
    for d in declarations(ir) {
        if let Some(why) = elsewhere(ir, &d.item, &out) {
            out.entry(d.item).or_insert(Consumer::Elsewhere(why));
        }
    }
    out
}

/// Items consumed outside the role program, with where (None: only an operation consumes it).
fn elsewhere(ir: &TaskIr, item: &Item, found: &BTreeMap<Item, Consumer>) -> Option<&'static str> {
    match *item {
        // One role program per declared target (`lower::lower` in `valid::check_rules`).
        Item::Target(_) => Some("its role program"),
        // The Registration's task type (`back/files.rs`, `spec.h`'s banner).
        Item::TaskId => Some("the Registration"),
        // `spec.h` renders every param as `params::NAME` (`back/spec_h.rs` `params`), the host's
        // and the body's constant, and the variant string (I-H3); expressions read them in sema.
        Item::Param(_) => Some("`spec.h` (`params::NAME`)"),
        // The dispatcher runs each role on its warps; the program's `Role::threads` is the
        // binding's (the controller is the runtime's own).
        Item::Role(_) => Some("the role functions the dispatcher runs"),
        // The grid of tasks the Registration declares, and `RoleProgram::tiles`.
        Item::Granularity => Some("the Registration's task grid"),
        // The registration's defines and the worker prologue (`back/setmaxnreg.rs`).
        Item::SetMaxNReg => Some("the worker prologue (`back/setmaxnreg.rs`)"),
        // A helper's code is its caller's body: its spec header (regions, barriers, params) is
        // its whole output (`back/spec_h.rs`).
        Item::Tensor(_) | Item::Group(_) | Item::NamedBarrier(_) | Item::Held { .. }
            if ir.family == Family::Helper =>
        {
            Some("the helper's spec header, which its caller's body reads")
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
            Op::Wait { bar, .. } | Op::Arrive { bar, .. } | Op::Commit { bar } => self.bar(bar),
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
            Step::StageMma { span: _, w, a, sf } => {
                self.group(*w);
                self.group(*a);
                if let Some(sf) = sf {
                    self.group(*sf);
                }
                // The engine's instruction and tile constants (the stage's MMAs); the stage
                // count is the rings' depth and the K loop's modulus.
                if self.prog.lowered {
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
                for t in self.engine.map(|e| e.epilogue.clone()).unwrap_or_default() {
                    self.found.insert(Item::Tensor(t.index()));
                }
                if *smem {
                    // `quant e4m3` meets the warps' maxima in the scratch's `amax`, after the
                    // `with` barrier (back/epilogue.rs).
                    self.group(*scratch);
                    self.held(*scratch, |h| h.name.as_deref() == Some("amax"));
                    if self.engine.is_some_and(|e| e.quant) {
                        if let Some((b, _)) = self.ir.epilogue_with {
                            self.found.insert(Item::EpilogueWith);
                            self.found.insert(Item::NamedBarrier(b.index()));
                        }
                    }
                }
            }
            Step::PageRelease | Step::DepWait | Step::SyncWarp => {}
            Step::Body => self.body(),
        }
    }

    /// A consumer family's body: the tensors it takes, the regions it addresses, the named
    /// barriers it synchronises on (a template's `kSyncBarrier`, the first consumer barrier,
    /// `back/consumer.rs`; inline CUDA's `BAR_NAME` or a raw PTX barrier on the id).
    fn body(&mut self) {
        let ir = self.ir;
        self.found.insert(Item::Body);
        let code = match &ir.body {
            Some(BodyIr::Cuda { code, .. }) => Some(super::body::strip_comments_and_strings(code)),
            _ => None,
        };
        for (h, t) in ir.tensors.iter() {
            if super::body::body_takes(code.as_deref(), self.binding, h, &t.name) {
                self.found.insert(Item::Tensor(h.index()));
            }
        }
        for (g, group) in ir.region_groups.iter().enumerate() {
            if super::body::body_addresses(code.as_deref(), self.binding, &group.name) {
                self.group(g);
            }
        }
        let raw = match &ir.body {
            Some(BodyIr::Cuda { code, .. }) => super::asm_barriers::literal_ids(code),
            _ => Vec::new(),
        };
        let template_bar = self
            .binding
            .filter(|b| b.sig.needs_barrier)
            .and_then(|_| ir.barriers.iter().find(|(_, b)| b.by == RoleKind::Consumer))
            .map(|(h, _)| h);
        for (h, b) in ir.barriers.iter() {
            let constant = format!("BAR_{}", b.name.to_ascii_uppercase());
            let named = code
                .as_deref()
                .is_some_and(|c| super::body::names_word(c, &constant));
            if named || raw.contains(&b.id) || template_bar == Some(h) {
                self.found.insert(Item::NamedBarrier(h.index()));
            }
        }
    }
}

/// E0014 (and W0015) for `ir`: every declaration no program consumes, and every barrier slot no
/// operation reaches.
pub(super) fn check(
    ir: &TaskIr,
    binding: Option<&Binding>,
    linear: Option<&PipelineShape>,
    programs: &[RoleProgram],
    sink: &mut Sink,
) {
    let found = consumers(ir, binding, linear, programs);
    for d in declarations(ir) {
        if !found.contains_key(&d.item) {
            sink.push(unconsumed(ir, &d, programs));
        }
    }
    slots(ir, linear, programs, sink);
}

fn unconsumed(ir: &TaskIr, d: &Decl, programs: &[RoleProgram]) -> Diagnostic {
    let targets: Vec<&str> = programs.iter().map(|p| p.target.as_str()).collect();
    let on = targets.join(", ");
    let (label, help): (&str, String) = match d.item {
        Item::Tensor(_) => (
            "no load, step or body reads or writes it",
            "remove the tensor, or give it the role the lowering reads (`weight`, `activation`, `scale of …`, `residual`, `output`, `partials`)".into(),
        ),
        Item::Tma(_) => (
            "no TMA load reads it",
            "remove `tma(...)`, or load the tensor through a channel (`channel …: R, loader -> launcher (tma T)`)".into(),
        ),
        Item::Group(_) => (
            "no ring, step or body addresses it",
            "remove the region, or use it as a channel's stages (`channel …: NAME, …`) or the scratch that `holds tmem_addr`".into(),
        ),
        Item::Held { .. } => (
            "no step reads this member",
            "remove the member, or hold what a step reads (`tmem_addr`, the quant epilogue's `amax`)".into(),
        ),
        Item::Full(_) | Item::Empty(_) => (
            "its barriers are initialised and never waited or arrived",
            format!("remove the channel (or the edge); on {on} nothing waits on it"),
        ),
        Item::Sem(_) => (
            "initialised and never waited or arrived",
            "remove the sem, or give it a producer and a consumer role the lowering runs".into(),
        ),
        Item::NamedBarrier(_) => (
            "no `bar.sync` of the lowering or the body uses it",
            "remove the barrier, or use it: `threads N after NAME` on an arrival, `epilogue quant e4m3 with NAME`, or `mpkc::named_barrier_sync(BAR_NAME, …)` in the body".into(),
        ),
        Item::TmemCols => (
            "no target allocates TMEM",
            format!("remove `tmem cols` (on {on} the accumulator is in registers), or declare `targets sm_100a`"),
        ),
        Item::Body => (
            "the kernels are generated from the channels; the body is not",
            "remove the body: a pipeline's work is its channels, MMA and epilogue".into(),
        ),
        Item::Lever(_) => (
            "no TMA load reads its policy",
            "point the lever at a tensor a pipeline loads by TMA".into(),
        ),
        _ => (
            "nothing in the generated files reads it",
            "remove it, or add the construct that uses it".into(),
        ),
    };
    Diagnostic::error(
        codes::NOT_LOWERED,
        format!("{} is declared but not lowered on any target", d.label),
    )
    .primary(d.span, label)
    .note(format!(
        "what `check` accepts is what `build` generates: an item no generated file reads for {} (targets {on}) would be dropped without a word",
        ir.unit_name()
    ))
    .help(help)
}

/// Slot coverage of every barrier family, over every target's program.
fn slots(ir: &TaskIr, linear: Option<&PipelineShape>, programs: &[RoleProgram], sink: &mut Sink) {
    let k_iters = linear.and_then(|p| u32::try_from(p.k_iters).ok().filter(|k| *k > 0));
    // source → (slots, reached without the K limit, reached with it)
    let mut reach: Vec<(BarrierSource, u32, BTreeSet<u32>, BTreeSet<u32>)> = Vec::new();
    for p in programs {
        let mut uses = Vec::new();
        for r in &p.roles {
            collect(&r.ops, &mut uses);
        }
        for (id, index) in uses {
            let b = p.barrier(id);
            let pos = match reach.iter().position(|e| e.0 == b.source) {
                Some(i) => i,
                None => {
                    reach.push((b.source, b.slots, BTreeSet::new(), BTreeSet::new()));
                    reach.len() - 1
                }
            };
            let e = &mut reach[pos];
            let n = b.slots.max(1);
            let upto = |k: u32| 0..k.min(n);
            match index {
                Some(Index::Fixed(i)) => {
                    e.2.insert(i % n);
                    e.3.insert(i % n);
                }
                Some(Index::Iter(LoopKind::Tiles)) => {
                    e.2.extend(upto(p.tiles));
                    e.3.extend(upto(p.tiles));
                }
                Some(Index::Iter(LoopKind::KIters)) => {
                    e.2.extend(upto(n));
                    e.3.extend(upto(k_iters.unwrap_or(n)));
                }
                None => {
                    e.2.extend(upto(n));
                    e.3.extend(upto(n));
                }
            }
        }
    }
    let mut rings_short: Vec<(String, Span)> = Vec::new();
    let mut reported: BTreeSet<usize> = BTreeSet::new();
    for (source, n, all, with_k) in &reach {
        let ch = match source {
            BarrierSource::Full(h) | BarrierSource::Empty(h) => *h,
            BarrierSource::Sem(_) => continue,
        };
        let c = &ir.channels[ch];
        let unreached: Vec<u32> = (0..*n).filter(|s| !all.contains(s)).collect();
        if !unreached.is_empty() {
            if reported.insert(ch.index()) {
                sink.push(unreached_slots(ir, c, *n, &unreached));
            }
            continue;
        }
        if with_k.len() < *n as usize && !rings_short.iter().any(|(n, _)| *n == c.name) {
            rings_short.push((c.name.clone(), c.span));
        }
    }
    if let (Some(k), Some((first, span))) = (k_iters, rings_short.first()) {
        let stages = ir.stages.map_or(0, |s| s.0);
        let unused: Vec<String> = (k..stages).map(|s| s.to_string()).collect();
        let rings: Vec<String> = rings_short.iter().map(|(n, _)| format!("`{n}`")).collect();
        let its = if k == 1 { "iteration" } else { "iterations" };
        let mut d = Diagnostic::warning(
            codes::UNREACHED_STAGES,
            format!(
                "`stages {stages}` but the task runs {k} K {its}: stage {} of {} is never used",
                unused.join(", "),
                rings.join(", ")
            ),
        );
        d = match ir.stages {
            Some((_, s)) => d
                .primary(s, format!("{stages} stages"))
                .secondary(*span, format!("`{first}` fills {k}")),
            None => d.primary(*span, format!("{k} of {stages} stages filled")),
        };
        sink.push(
            d.note("each K iteration fills the next stage; a task restarts at stage 0, so stages past its K iterations take SMEM and are never filled")
                .note("a warning, not an error: K and the split count are params, and another instance (or `--param`) may run more iterations")
                .help(format!("`stages {k}`, or more K per task")),
        );
    }
}

fn unreached_slots(ir: &TaskIr, c: &ChannelIr, n: u32, unreached: &[u32]) -> Diagnostic {
    let tiles = match &ir.granularity {
        GranularityIr::PerTile { tiles_per_task, .. } => *tiles_per_task,
        GranularityIr::GridWide { .. } => 1,
    };
    let reached = n as usize - unreached.len();
    let list: Vec<String> = unreached.iter().map(|s| s.to_string()).collect();
    let (decl, what) = match c.storage {
        ChannelStorageIr::Tmem => (format!("tmem slots {n}"), "slot"),
        ChannelStorageIr::Region(_) => (format!("{n} stages"), "stage"),
    };
    let s = if unreached.len() == 1 { "" } else { "s" };
    let t = if tiles == 1 { "" } else { "s" };
    let is = if unreached.len() == 1 { "is" } else { "are" };
    Diagnostic::error(
        codes::NOT_LOWERED,
        format!(
            "`{decl}` but the task runs {tiles} tile{t} per task: {what}{s} {} of `{}` {is} never used",
            list.join(", "),
            c.name
        ),
    )
    .primary(c.span, format!("{n} {what}s, {reached} used"))
    .note("each tile of a task takes the next slot and a task restarts at slot 0: the barriers of the other slots are initialised and never waited or arrived")
    .help(format!(
        "write `{}`",
        match c.storage {
            ChannelStorageIr::Tmem => format!("tmem slots {reached}"),
            ChannelStorageIr::Region(_) => format!("stages {reached}"),
        }
    ))
}

/// Every barrier use in `ops`: (family, index), `None` for a use of every slot (a drain).
fn collect(ops: &[Op], out: &mut Vec<(crate::lower::BarrierId, Option<Index>)>) {
    for op in ops {
        match op {
            Op::Wait { bar, .. }
            | Op::Arrive { bar, .. }
            | Op::Commit { bar }
            | Op::TmaLoad { bar, .. }
            | Op::StageScales { bar, .. }
            | Op::EarlyExit { bar, .. } => out.push((bar.bar, Some(bar.index))),
            Op::Drain { bar, .. } => out.push((*bar, None)),
            Op::Loop { body, .. } | Op::Elect { body } => collect(body, out),
            Op::Reinit { .. } | Op::Step(_) | Op::NamedSync { .. } => {}
        }
    }
}
