//! Lowering one task instance: the simple items (family, targets, tensors, tile, stages, MMA,
//! TMEM, levers); regions, synchronisation and the body have their own files.

use super::collect::Collected;
use super::eval::Env;
use super::params;
use super::SemaOptions;
use crate::diag::{codes, Diagnostic, Sink};
use crate::front::ast;
use crate::ir::*;
use crate::span::Span;
use indexmap::IndexMap;

/// The lowering context of one instance.
pub(super) struct Cx<'s> {
    pub sink: &'s mut Sink,
    pub ir: TaskIr,
    /// Params whose value was rejected.
    pub poisoned: Vec<String>,
    /// Tensors whose declaration was rejected: uses of them are follow-on errors.
    pub rejected_tensors: Vec<String>,
    /// Region groups (names as declared) whose declaration was rejected: uses are follow-ons.
    pub rejected_regions: Vec<String>,
    /// Channels whose declaration was rejected: uses of them are follow-on errors.
    pub rejected_channels: Vec<String>,
}

impl Cx<'_> {
    /// The evaluation environment of what is lowered so far.
    pub fn env(&self) -> Env<'_> {
        Env {
            params: Some(&self.ir.params),
            stages: self.ir.stages.map(|(s, _)| i64::from(s)),
            stage: None,
            tile: self.ir.tile.as_ref(),
            poisoned: Some(&self.poisoned),
            unevaluated: None,
        }
    }

    /// Evaluates `e` as an integer, reporting failure.
    pub fn int(&mut self, e: &ast::Expr) -> Option<i64> {
        let r = self.env().int(e);
        self.take(r)
    }

    /// Evaluates `e` as a non-negative integer named `what`, reporting failure.
    pub fn non_negative(&mut self, e: &ast::Expr, what: &str) -> Option<i64> {
        let r = self.env().non_negative(e, what);
        self.take(r)
    }

    /// Unwraps a result, reporting its diagnostic.
    pub fn take<T>(&mut self, r: Result<T, Diagnostic>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(d) => {
                self.sink.push(d);
                None
            }
        }
    }

    /// Reports `d`.
    pub fn report(&mut self, d: Diagnostic) {
        self.sink.push(d);
    }

    /// Parses a role name, reporting unknown ones.
    pub fn role(&mut self, id: &ast::Ident) -> Option<RoleKind> {
        let r = RoleKind::parse(&id.node);
        if r.is_none() {
            self.report(
                Diagnostic::error(codes::BAD_KEYWORD, format!("unknown role `{}`", id.node))
                    .primary(id.span, "not a Runtime-V2 role")
                    .help("roles are `consumer` (W0-3), `loader` (W4), `launcher` (W5), `storer` (W6) and `controller` (W7)"),
            );
        }
        r
    }

    /// Resolves a tensor name (a tensor whose declaration was rejected is a follow-on error).
    pub fn tensor(&mut self, id: &ast::Ident) -> Option<TensorHandle> {
        let h = self.ir.tensor_by_name(&id.node);
        if h.is_none() && self.rejected_tensors.contains(&id.node) {
            self.report(Diagnostic::error(
                crate::diag::FOLLOW_ON,
                format!("tensor `{}` was rejected", id.node),
            ));
        } else if h.is_none() {
            let known: Vec<String> = self
                .ir
                .tensors
                .values()
                .map(|t| format!("`{}`", t.name))
                .collect();
            let close =
                crate::diag::suggest(&id.node, self.ir.tensors.values().map(|t| t.name.as_str()));
            self.report(
                Diagnostic::error(
                    codes::UNKNOWN_NAME,
                    format!("cannot find tensor `{}`", id.node),
                )
                .primary(id.span, "no tensor of this name")
                .help(if let Some(c) = close {
                    format!("did you mean `{c}`?")
                } else if known.is_empty() {
                    "declare it with `tensor NAME: DTYPE[dims] in|out`".to_string()
                } else {
                    format!("declared tensors: {}", known.join(", "))
                }),
            );
        }
        h
    }
}

/// Lowers `task` for `instance` (or its defaults).
pub(super) fn lower_instance(
    task: &ast::Task,
    c: &Collected<'_>,
    instance: Option<&ast::Instance>,
    opts: &SemaOptions,
    sink: &mut Sink,
) -> TaskIr {
    if let Some(inst) = instance {
        check_instance_names(c, inst, sink);
    }
    let (params, poisoned) = params::evaluate(&c.params, instance, opts, sink);
    let (family, family_span) = family(task, c, sink);
    let ir = TaskIr {
        name: task.name.node.clone(),
        name_span: task.name.span,
        span: task.span,
        instance: instance.map(|i| i.name.node.clone()),
        instance_span: instance.map(|i| i.span),
        family,
        family_span,
        targets: Vec::new(),
        task_id: None,
        task_id_span: task.name.span,
        reduce_task_id: None,
        route: None,
        params,
        tensors: Arena::new(),
        tile: None,
        stages: None,
        mma: None,
        tmem_cols: None,
        regions: Arena::new(),
        region_groups: Vec::new(),
        channels: Arena::new(),
        sems: Arena::new(),
        roles: Vec::new(),
        roles_declared: false,
        barriers: Arena::new(),
        body: None,
        loader_body: None,
        epilogues: Vec::new(),
        epilogue_with: None,
        granularity: GranularityIr::PerTile {
            tasks: 1,
            tiles_per_task: 1,
            span: task.name.span,
        },
        levers: Vec::new(),
        setmaxnreg: None,
        reference: None,
        helpers: Vec::new(),
    };
    let mut cx = Cx {
        sink,
        ir,
        poisoned,
        rejected_tensors: Vec::new(),
        rejected_regions: Vec::new(),
        rejected_channels: Vec::new(),
    };
    targets(&mut cx, c);
    super::lower_task_type::task_types(&mut cx, c);
    // The tile before `stages`: a stage count may read `tile.K` (`stages min(5, ceil_div(K,
    // tile.K * splits))`).
    tile(&mut cx, c);
    super::lower_stages::stages(&mut cx, c);
    super::require::requirements(&mut cx, c);
    tensors(&mut cx, c);
    super::lower_roles::roles(&mut cx, c);
    if let Some(r) = c.route {
        if let (Some(weights), Some(ids)) = (cx.tensor(&r.weights), cx.tensor(&r.ids)) {
            cx.ir.route = Some(RouteIr {
                weights,
                ids,
                mode: match r.mode {
                    ast::RouteMode::PerSlot => RouteMode::PerSlot,
                    ast::RouteMode::SumSlots => RouteMode::SumSlots,
                },
                span: r.span,
            });
        }
    }
    mma(&mut cx, c);
    if let Some((e, s)) = c.tmem {
        cx.ir.tmem_cols = cx.non_negative(e, "TMEM column count").map(|v| (v, s));
    }
    super::lower_regions::regions(&mut cx, c);
    super::lower_sync::roles(&mut cx, c);
    // Named barriers first: `threads N after B` in channels and sems names them.
    super::lower_sync::barriers(&mut cx, c);
    super::lower_sync::channels(&mut cx, c);
    super::lower_sync::sems(&mut cx, c);
    super::lower_body::body(&mut cx, c);
    super::lower_body::loader_body(&mut cx, c);
    super::lower_body::granularity(&mut cx, c);
    levers_and_epilogue(&mut cx, c);
    setmaxnreg(&mut cx, c);
    super::lower_reference::reference(&mut cx, c);
    super::lower_use::uses(&mut cx, c, opts);
    cx.ir
}

fn setmaxnreg(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let Some((items, span)) = c.setmaxnreg else {
        return;
    };
    let (mut consumer, mut helpers) = (None, None);
    let mut seen: Vec<&str> = Vec::new();
    for (k, e) in items {
        let key = match k.node.as_str() {
            "consumer" | "compute" => "consumer",
            "helpers" | "producer" => "helpers",
            other => other,
        };
        if seen.contains(&key) {
            cx.report(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("`setmaxnreg` gives `{key}` twice"),
                )
                .primary(k.span, "given again")
                .help("give `consumer` and `helpers` once each"),
            );
            continue;
        }
        seen.push(key);
        let v = cx.non_negative(e, "register count");
        match k.node.as_str() {
            "consumer" | "compute" => consumer = v,
            "helpers" | "producer" => helpers = v,
            other => cx.report(
                Diagnostic::error(codes::BAD_KEYWORD, format!("unknown setmaxnreg warpgroup `{other}`"))
                    .primary(k.span, "not a warpgroup")
                    .help("write `setmaxnreg consumer 232, helpers 40` (warpgroup 0 = W0-3, warpgroup 1 = W4-7)"),
            ),
        }
    }
    match (consumer, helpers) {
        (Some(a), Some(b)) => cx.ir.setmaxnreg = Some((a, b, span)),
        _ => cx.report(
            Diagnostic::error(codes::MISSING, "`setmaxnreg` needs both warpgroups")
                .primary(span, "here")
                .help("write `setmaxnreg consumer 232, helpers 40`"),
        ),
    }
}

fn check_instance_names(c: &Collected<'_>, inst: &ast::Instance, sink: &mut Sink) {
    let mut seen: IndexMap<&str, Span> = IndexMap::new();
    for (n, _) in &inst.sets {
        if let Some(prev) = seen.get(n.node.as_str()) {
            sink.push(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("instance `{}` sets `{}` twice", inst.name.node, n.node),
                )
                .primary(n.span, "set again here")
                .secondary(*prev, "first set here")
                .help("keep one setting"),
            );
        }
        seen.insert(n.node.as_str(), n.span);
        if !c.params.iter().any(|p| p.name.node == n.node) {
            sink.push(
                Diagnostic::error(
                    codes::UNKNOWN_INSTANCE,
                    format!(
                        "instance `{}` sets `{}`, which is not a param",
                        inst.name.node, n.node
                    ),
                )
                .primary(n.span, "no param of this name")
                .help("declare the param with `param NAME: TYPE`, or remove the setting"),
            );
        }
    }
}

fn family(task: &ast::Task, c: &Collected<'_>, sink: &mut Sink) -> (Family, Span) {
    match c.family {
        Some(f) => match Family::parse(&f.node) {
            Some(fam) => (fam, f.span),
            None => {
                sink.push(
                    Diagnostic::error(codes::BAD_KEYWORD, format!("unknown family `{}`", f.node))
                        .primary(f.span, "not a task family")
                        .help("families are `pipeline`, `consumer`, `consumer-monolith`, `consumer-no-smem` and `helper`"),
                );
                (Family::Consumer, f.span)
            }
        },
        None => {
            sink.push(
                Diagnostic::error(codes::MISSING, format!("task `{}` declares no family", task.name.node))
                    .primary(task.name.span, "no `family` item")
                    .help("add `family consumer` (or `pipeline`, `consumer-monolith`, `consumer-no-smem`, `helper`)"),
            );
            (Family::Consumer, task.name.span)
        }
    }
}

fn targets(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let Some((items, _)) = c.targets else {
        cx.ir.targets.push(TargetIr {
            target: Target::Sm100a,
            smem_capacity_bytes: DEFAULT_SMEM_CAPACITY_BYTES,
            span: cx.ir.name_span,
        });
        return;
    };
    for t in items {
        let Some(target) = Target::parse(&t.name.node) else {
            cx.report(
                Diagnostic::error(
                    codes::BAD_KEYWORD,
                    format!("unknown target `{}`", t.name.node),
                )
                .primary(t.name.span, "not a supported target")
                .help("targets are `sm_100a` (B200) and `sm_90a` (H100/H200)"),
            );
            continue;
        };
        if let Some(prev) = cx.ir.targets.iter().find(|x| x.target == target) {
            let prev = prev.span;
            cx.report(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("target `{target}` is listed twice"),
                )
                .primary(t.span, "listed again")
                .secondary(prev, "first listed here")
                .help("list each target once"),
            );
            continue;
        }
        let mut cap = DEFAULT_SMEM_CAPACITY_BYTES;
        if let Some((k, e)) = &t.setting {
            if k.node != "smem" {
                cx.report(
                    Diagnostic::error(
                        codes::BAD_KEYWORD,
                        format!("unknown target setting `{}`", k.node),
                    )
                    .primary(k.span, "not a target setting")
                    .help("the one target setting is `smem BYTES`, e.g. `sm_90a(smem 227328)`"),
                );
            } else if let Some(v) = cx.non_negative(e, "SMEM capacity") {
                cap = v;
            }
        }
        cx.ir.targets.push(TargetIr {
            target,
            smem_capacity_bytes: cap,
            span: t.span,
        });
    }
}

fn tile(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let Some((dims, span)) = c.tile else { return };
    let mut t = TileIr {
        span,
        ..TileIr::default()
    };
    let mut seen: Vec<(char, Span)> = Vec::new();
    for (name, e) in dims {
        let axis = match name.node.as_str() {
            "M" | "m" => 'M',
            "N" | "n" => 'N',
            "K" | "k" => 'K',
            other => {
                cx.report(
                    Diagnostic::error(
                        codes::BAD_KEYWORD,
                        format!("unknown tile dimension `{other}`"),
                    )
                    .primary(name.span, "not M, N or K")
                    .help("write `tile M 128, N 16, K 128`"),
                );
                continue;
            }
        };
        if let Some((_, prev)) = seen.iter().find(|(a, _)| *a == axis) {
            let prev = *prev;
            cx.report(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("tile dimension {axis} is given twice"),
                )
                .primary(name.span, "given again")
                .secondary(prev, "first given here")
                .help("give each of M, N, K once"),
            );
            continue;
        }
        seen.push((axis, name.span));
        let v = cx.non_negative(e, "tile extent");
        if v.is_none() {
            // Reported (or itself a follow-on): uses of `tile.M` are follow-on errors.
            cx.poisoned.push(format!("tile.{axis}"));
        }
        match axis {
            'M' => t.m = v,
            'N' => t.n = v,
            _ => t.k = v,
        }
    }
    cx.ir.tile = Some(t);
}

/// Parses a dtype name, reporting unknown ones.
pub(super) fn dtype(cx: &mut Cx<'_>, id: &ast::Ident) -> Option<Dtype> {
    let d = Dtype::parse(&id.node);
    if d.is_none() {
        cx.report(
            Diagnostic::error(
                codes::TYPE_MISMATCH,
                format!("unknown element type `{}`", id.node),
            )
            .primary(id.span, "not a dtype")
            .help("dtypes are bf16, f16, f32, e4m3, e5m2, ue8m0, i32, i64 and u8"),
        );
    }
    d
}

fn tensors(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let runtime = cx.ir.runtime_tokens().map(|p| p.name.clone());
    // Only the pipeline lowering and the consumer body templates read the count at run time
    // (valid::runtime_m, E0023): an inline consumer body or a helper sees compile-time sizes.
    let sizes_fixed = match cx.ir.family {
        Family::Pipeline => false,
        Family::Helper => true,
        _ => matches!(c.body, Some(ast::Body::Cuda { .. })),
    };
    for t in &c.tensors {
        let runtime_rows = match runtime
            .as_deref()
            .map(|r| super::param_runtime::leading_only(t, r, sizes_fixed))
        {
            Some(Ok(rows)) => rows,
            Some(Err(d)) => {
                cx.report(d);
                cx.rejected_tensors.push(t.name.node.clone());
                continue;
            }
            None => false,
        };
        let dt = dtype(cx, &t.dtype);
        if t.dims.is_empty() {
            cx.report(
                Diagnostic::error(
                    codes::MISSING,
                    format!("tensor `{}` has no dimensions", t.name.node),
                )
                .primary(t.span, "rank 0")
                .help("give its extents, e.g. `bf16[m, hidden]`; a scalar is a param"),
            );
            cx.rejected_tensors.push(t.name.node.clone());
            continue;
        }
        let dims: Vec<Option<i64>> = t
            .dims
            .iter()
            .map(|e| match cx.int(e) {
                Some(v) if v >= 1 => Some(v),
                Some(v) => {
                    cx.report(
                        Diagnostic::error(
                            codes::ARITH,
                            format!(
                                "tensor `{}` has extent {v}; extents are 1 or more",
                                t.name.node
                            ),
                        )
                        .primary(e.span, format!("evaluates to {v}"))
                        .help("give every dimension at least one element"),
                    );
                    None
                }
                None => None,
            })
            .collect();
        let tma = t.tma.as_ref().and_then(|spec| tma(cx, spec));
        let view = match &t.view {
            None => Some(None),
            Some(spec) => view(cx, spec).map(Some),
        };
        let paged = match &t.paged {
            None => Some(None),
            Some(spec) => paged(cx, spec).map(Some),
        };
        let (Some(dtype), Some(dims), Some(view), Some(paged)) = (
            dt,
            dims.into_iter().collect::<Option<Vec<i64>>>(),
            view,
            paged,
        ) else {
            cx.rejected_tensors.push(t.name.node.clone());
            continue;
        };
        // Its size in bytes must be a number: every allocation, offset and byte count the
        // generated code, the harness and `roofline` take of it is an `int64_t`.
        let bytes = dims
            .iter()
            .try_fold(1i64, |a, d| a.checked_mul(*d))
            .and_then(|e| e.checked_mul(dtype.bytes()));
        if bytes.is_none() {
            cx.report(
                Diagnostic::error(
                    codes::ARITH,
                    format!(
                        "tensor `{}` holds more than {} bytes",
                        t.name.node,
                        i64::MAX
                    ),
                )
                .primary(t.span, format!("{} x {} bytes", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" x "), dtype.bytes()))
                .note("the generated code, the harness and `mpkc roofline` take a tensor's elements and bytes as 64-bit integers")
                .help("check the extents: no device holds a tensor of this size"),
            );
            cx.rejected_tensors.push(t.name.node.clone());
            continue;
        }
        cx.ir.tensors.append(TensorIr {
            name: t.name.node.clone(),
            dtype,
            dims,
            direction: t.direction.node,
            view,
            paged,
            tma,
            role: None,
            runtime_rows,
            span: t.span,
        });
    }
}

/// `view(stride S, offset O)`: `stride` is required, `offset` defaults to 0, both ≥ 0. How they
/// must relate to the tensor (stride ≥ row, offset + row ≤ stride, 16-byte alignment) is
/// `valid/views.rs`'s.
fn view(cx: &mut Cx<'_>, spec: &ast::ViewSpec) -> Option<ViewIr> {
    let Some(stride) = &spec.stride else {
        cx.report(
            Diagnostic::error(codes::MISSING, "`view(...)` gives no row stride")
                .primary(spec.span, "no `stride`")
                .help("give the parent's row length in elements: `view(stride 2176, offset 1536)`"),
        );
        return None;
    };
    let row_stride = cx.non_negative(stride, "view stride")?;
    let offset = match &spec.offset {
        Some(e) => cx.non_negative(e, "view offset")?,
        None => 0,
    };
    Some(ViewIr {
        row_stride,
        offset,
        span: spec.span,
    })
}

/// `paged(page P, max_context C, requests R)`: all three required (E0007), each at least 1
/// (E0004 below 0, E0028 at 0). How they must relate to the tensor and the family is
/// `valid/paged.rs`'s.
fn paged(cx: &mut Cx<'_>, spec: &ast::PagedSpec) -> Option<PagedIr> {
    let mut get = |e: &Option<ast::Expr>, key: &str, example: &str| -> Option<(i64, Span)> {
        let Some(e) = e else {
            cx.report(
                Diagnostic::error(codes::MISSING, format!("`paged(...)` gives no `{key}`"))
                    .primary(spec.span, format!("no `{key}`"))
                    .help(format!(
                        "give all three: `paged(page 64, max_context 16384, requests m)` ({example})"
                    )),
            );
            return None;
        };
        Some((cx.non_negative(e, key)?, e.span))
    };
    let page = get(&spec.page, "page", "tokens per page");
    let max_context = get(
        &spec.max_context,
        "max_context",
        "tokens of context per request",
    );
    let requests = get(&spec.requests, "requests", "requests per step");
    let (page, max_context, requests) = (page?, max_context?, requests?);
    Some(PagedIr {
        page_tokens: page.0,
        max_context: max_context.0,
        requests: requests.0,
        value_spans: [page.1, max_context.1, requests.1],
        span: spec.span,
    })
}

fn tma(cx: &mut Cx<'_>, spec: &ast::TmaSpec) -> Option<TmaIr> {
    let Some(boxes) = &spec.boxes else {
        cx.report(
            Diagnostic::error(codes::MISSING, "`tma(...)` gives no box")
                .primary(spec.span, "no `box [...]`")
                .help("add the box extents in elements, innermost first: `box [64, 128, 2]`"),
        );
        return None;
    };
    let dims: Option<Vec<i64>> = boxes
        .node
        .iter()
        .map(|e| cx.non_negative(e, "TMA box extent"))
        .collect();
    let swizzle = match &spec.swizzle {
        None => Some(Swizzle::None),
        Some(s) => {
            let z = Swizzle::parse(&s.node);
            if z.is_none() {
                cx.report(
                    Diagnostic::error(codes::BAD_KEYWORD, format!("unknown swizzle `{}`", s.node))
                        .primary(s.span, "not a swizzle mode")
                        .help("swizzles are `128B`, `64B`, `32B` and `none`"),
                );
            }
            z
        }
    };
    let l2 = match &spec.l2 {
        None => None,
        Some(h) => match L2Hint::parse(&h.node) {
            Some(x) => Some(x),
            None => {
                cx.report(
                    Diagnostic::error(codes::BAD_KEYWORD, format!("unknown L2 hint `{}`", h.node))
                        .primary(h.span, "not an L2 cache policy")
                        .help("hints are `evict_first`, `evict_last` and `evict_normal`"),
                );
                None
            }
        },
    };
    Some(TmaIr {
        box_dims: dims?,
        box_span: boxes.span,
        swizzle: swizzle?,
        l2,
        span: spec.span,
    })
}

fn mma(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let Some(m) = c.mma else { return };
    let engine = match m.engine.node.as_str() {
        "tcgen05" => Some(MmaEngine::Tcgen05),
        "wgmma" => Some(MmaEngine::Wgmma),
        other => {
            cx.report(
                Diagnostic::error(codes::BAD_KEYWORD, format!("unknown MMA engine `{other}`"))
                    .primary(m.engine.span, "not an MMA engine")
                    .help("engines are `tcgen05` (sm_100a) and `wgmma` (sm_90a)"),
            );
            None
        }
    };
    let (a, b, d) = (dtype(cx, &m.a), dtype(cx, &m.b), dtype(cx, &m.d));
    let mut dims = [None, None, None];
    for (axis, e) in &m.dims {
        let i = match axis.node {
            'm' => 0,
            'n' => 1,
            _ => 2,
        };
        if dims[i].is_some() {
            cx.report(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("MMA extent `{}` is given twice", axis.node),
                )
                .primary(axis.span, "given again")
                .help("give each of m, n, k once"),
            );
        }
        dims[i] = cx.non_negative(e, "MMA extent");
    }
    for (i, n) in ['m', 'n', 'k'].iter().enumerate() {
        if dims[i].is_none() && !m.dims.iter().any(|(a, _)| a.node == *n) {
            cx.report(
                Diagnostic::error(codes::MISSING, format!("the MMA gives no `{n}` extent"))
                    .primary(m.span, format!("no `{n}…`"))
                    .help("write the instruction shape as `m128 n16 k16`"),
            );
        }
    }
    let (Some(engine), Some(a), Some(b), Some(d), [Some(mm), Some(nn), Some(kk)]) =
        (engine, a, b, d, dims)
    else {
        return;
    };
    cx.ir.mma = Some(MmaIr {
        engine,
        kind: m.kind.node.clone(),
        a,
        b,
        d,
        m: mm,
        n: nn,
        k: kk,
        span: m.span,
    });
}

fn levers_and_epilogue(cx: &mut Cx<'_>, c: &Collected<'_>) {
    for l in &c.levers {
        let effect = match &l.effect {
            None => None,
            Some((t, h, span)) => {
                let tensor = cx.tensor(t);
                let hint = L2Hint::parse(&h.node);
                if hint.is_none() {
                    cx.report(
                        Diagnostic::error(
                            codes::BAD_KEYWORD,
                            format!("unknown L2 hint `{}`", h.node),
                        )
                        .primary(h.span, "not an L2 cache policy")
                        .help("hints are `evict_first`, `evict_last` and `evict_normal`"),
                    );
                }
                match (tensor, hint) {
                    (Some(tensor), Some(hint)) => Some(LeverEffect::L2 {
                        tensor,
                        hint,
                        span: *span,
                    }),
                    _ => continue,
                }
            }
        };
        cx.ir.levers.push(LeverIr {
            name: l.name.node.clone(),
            default_on: l.default_on.node,
            effect,
            span: l.span,
        });
    }
    if let Some((alts, _)) = c.epilogue {
        for (k, v, with) in alts {
            if let Some(b) = with {
                cx.ir.epilogue_with = super::lower_sync::barrier_ref(cx, b);
            }
            cx.ir.epilogues.push((
                k.node.clone(),
                v.as_ref().map(|x| x.node.clone()),
                k.span.to(v.as_ref().map_or(k.span, |x| x.span)),
            ));
        }
    }
}
