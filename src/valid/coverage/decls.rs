//! The items a contract declares ([`declarations`]): every IR struct destructured without `..`,
//! so a field added to the IR does not compile until it is enumerated or stated to be part of an
//! item.

use crate::ir::*;
use crate::span::Span;

/// One item a contract declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Item {
    /// A declared target (`targets sm_100a, …`), by index.
    Target(usize),
    /// `task_id N`.
    TaskId,
    /// `route W by ids …`.
    Route,
    /// `reduce_task_id N`.
    ReduceTaskId,
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
    /// `reference …`.
    Reference,
    /// A `use` of a helper, by index into `helpers`.
    Helper(usize),
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
        reduce_task_id,
        route,
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
        // Part of the consumer rings it fills: the consumer kernel renders it into the loader
        // role wherever a ring is (`back::consumer`), and `valid::rings` rejects one without a
        // ring (E0014) or in another family (E0011).
        loader_body: _,
        epilogues,
        epilogue_with,
        granularity,
        levers,
        setmaxnreg,
        reference,
        helpers,
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
    if let Some((_, span)) = reduce_task_id {
        push(Item::ReduceTaskId, *span, "`reduce_task_id`".into());
    }
    if let Some(RouteIr {
        // The routed weights and the ids are tensors of their own; the mode is the route's.
        weights: _,
        ids: _,
        mode: _,
        span,
    }) = route
    {
        push(Item::Route, *span, "`route`".into());
    }
    for (i, p) in params.values().enumerate() {
        let ParamIr {
            name,
            ty: _,
            value: _,
            span,
            value_span: _,
            // `= runtime` is part of the param: each lowering either reads the count at run time
            // or reports E0023 (`valid::runtime_m`), so it is never silently ignored.
            runtime: _,
            // What the range allows is checked where the value is read (E0006); helps read it.
            int_range: _,
            range_text: _,
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
            // A view is the tensor's layout: read with it (the tensor map's global stride, a
            // template's row step, an inline body's `<name>_row_stride`); `valid/views.rs`
            // rejects a view on a tensor none of those reads.
            view: _,
            // A paged pool is read through the runtime's page table: the inline body gets its
            // page size and context bound (`<name>_page_tokens`, `<name>_max_context`) and
            // `valid/paged.rs` rejects it where no inline body reads it (E0028).
            paged: _,
            // Rows decided at run time: read with the tensor, like its extents (E0023 where not).
            runtime_rows: _,
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
                bytes_param: _,
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
            // The barrier and the `grid_barrier` tensor are used by the generated `grid_sync`
            // (`coverage::consumers`, `back/consumer.rs`).
            barrier: _,
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
    if let Some(crate::ir::ReferenceIr {
        path: _,
        path_span: _,
        function,
        // Tolerances and the file are the reference's own: verify reads them with it.
        tolerances: _,
        file: _,
        span,
    }) = reference
    {
        push(Item::Reference, *span, format!("reference `{function}`"));
    }
    for (i, h) in helpers.iter().enumerate() {
        let HelperUseIr {
            name,
            span,
            // The helper's own file: its code goes into the caller's kernel with it.
            path: _,
            body_line: _,
            // The helper's own text and lowering: its rules are checked on them (E0026).
            text: _,
            helper: _,
            // Placed in `region_groups` and `barriers`: items of their own.
            regions: _,
            region_groups: _,
            barriers: _,
        } = h;
        push(Item::Helper(i), *span, format!("helper `{name}`"));
    }
    out
}
