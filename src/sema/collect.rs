//! Sorting a task's items by kind, with the duplicate checks (`E0003`): single-use items declared
//! twice, and names declared twice within one namespace.

use crate::diag::{codes, Diagnostic, Sink};
use crate::front::ast::{self, Item};
use crate::span::Span;
use std::collections::BTreeMap;

/// A task's items, sorted by kind, in source order within each kind.
#[derive(Default)]
pub struct Collected<'a> {
    pub family: Option<&'a ast::Ident>,
    pub targets: Option<(&'a [ast::TargetItem], Span)>,
    pub task_id: Option<(&'a ast::Expr, Span)>,
    pub reduce_task_id: Option<(&'a ast::Expr, Span)>,
    pub params: Vec<&'a ast::Param>,
    pub tensors: Vec<&'a ast::Tensor>,
    pub tile: Option<(&'a [(ast::Ident, ast::Expr)], Span)>,
    pub stages: Option<(&'a ast::Expr, Span)>,
    pub mma: Option<&'a ast::Mma>,
    pub tmem: Option<(&'a ast::Expr, Span)>,
    pub regions: Vec<&'a ast::Region>,
    pub channels: Vec<&'a ast::Channel>,
    pub sems: Vec<&'a ast::Sem>,
    pub roles: Option<(&'a [ast::RoleBinding], Span)>,
    pub barriers: Vec<&'a ast::Barrier>,
    pub body: Option<&'a ast::Body>,
    pub loader_body: Option<&'a ast::Body>,
    pub epilogue: Option<(&'a [ast::EpilogueAlt], Span)>,
    pub granularity: Option<&'a ast::Granularity>,
    pub levers: Vec<&'a ast::Lever>,
    pub instances: Vec<&'a ast::Instance>,
    pub setmaxnreg: Option<(&'a [(ast::Ident, ast::Expr)], Span)>,
    pub reference: Option<&'a ast::Reference>,
    pub uses: Vec<&'a ast::Use>,
    pub route: Option<&'a ast::Route>,
    pub requires: Vec<&'a ast::Require>,
}

fn item_span(item: &Item) -> Span {
    match item {
        Item::Family(i) => i.span,
        Item::Targets(_, s)
        | Item::TaskId(_, s)
        | Item::ReduceTaskId(_, s)
        | Item::Tile(_, s)
        | Item::Stages(_, s)
        | Item::Tmem(_, s)
        | Item::Roles(_, s)
        | Item::Epilogue(_, s) => *s,
        Item::Param(p) => p.span,
        Item::Tensor(t) => t.span,
        Item::Mma(m) => m.span,
        Item::Region(r) => r.span,
        Item::Channel(c) => c.span,
        Item::Sem(s) => s.span,
        Item::Barrier(b) => b.span,
        Item::Body(b) | Item::LoaderBody(b) => match b {
            ast::Body::Template { span, .. } | ast::Body::Cuda { span, .. } => *span,
        },
        Item::Granularity(g) => g.span,
        Item::Lever(l) => l.span,
        Item::Instance(i) => i.span,
        Item::SetMaxNReg(_, s) => *s,
        Item::Reference(r) => r.span,
        Item::Use(u) => u.span,
        Item::Route(r) => r.span,
        Item::Require(r) => r.span,
    }
}

fn set_once<T>(
    slot: &mut Option<T>,
    value: T,
    item: &Item,
    first: &mut BTreeMap<&'static str, Span>,
    sink: &mut Sink,
) {
    let kw = item.keyword();
    let span = item_span(item);
    if let Some(prev) = first.get(kw) {
        sink.push(
            Diagnostic::error(
                codes::DUPLICATE,
                format!("`{kw}` is declared more than once"),
            )
            .primary(span, "declared again here")
            .secondary(*prev, "first declared here")
            .help(format!(
                "a task has one `{kw}`; merge the two or remove one"
            )),
        );
        return;
    }
    first.insert(kw, span);
    *slot = Some(value);
}

/// Sorts `task`'s items by kind, reporting duplicates.
pub fn collect<'a>(task: &'a ast::Task, sink: &mut Sink) -> Collected<'a> {
    let mut c = Collected::default();
    let mut first: BTreeMap<&'static str, Span> = BTreeMap::new();
    for item in &task.items {
        match item {
            Item::Family(f) => set_once(&mut c.family, f, item, &mut first, sink),
            Item::Targets(t, s) => {
                set_once(&mut c.targets, (t.as_slice(), *s), item, &mut first, sink)
            }
            Item::TaskId(e, s) => set_once(&mut c.task_id, (e, *s), item, &mut first, sink),
            Item::ReduceTaskId(e, s) => {
                set_once(&mut c.reduce_task_id, (e, *s), item, &mut first, sink)
            }
            Item::Param(p) => c.params.push(p),
            Item::Tensor(t) => c.tensors.push(t),
            Item::Tile(d, s) => set_once(&mut c.tile, (d.as_slice(), *s), item, &mut first, sink),
            Item::Stages(e, s) => set_once(&mut c.stages, (e, *s), item, &mut first, sink),
            Item::Mma(m) => set_once(&mut c.mma, m, item, &mut first, sink),
            Item::Tmem(e, s) => set_once(&mut c.tmem, (e, *s), item, &mut first, sink),
            Item::Region(r) => c.regions.push(r),
            Item::Channel(ch) => c.channels.push(ch),
            Item::Sem(se) => c.sems.push(se),
            Item::Roles(r, s) => set_once(&mut c.roles, (r.as_slice(), *s), item, &mut first, sink),
            Item::Barrier(b) => c.barriers.push(b),
            Item::Body(b) => set_once(&mut c.body, b, item, &mut first, sink),
            Item::LoaderBody(b) => set_once(&mut c.loader_body, b, item, &mut first, sink),
            Item::Epilogue(e, s) => {
                set_once(&mut c.epilogue, (e.as_slice(), *s), item, &mut first, sink)
            }
            Item::Granularity(g) => set_once(&mut c.granularity, g, item, &mut first, sink),
            Item::Lever(l) => c.levers.push(l),
            Item::Instance(i) => c.instances.push(i),
            Item::SetMaxNReg(d, s) => set_once(
                &mut c.setmaxnreg,
                (d.as_slice(), *s),
                item,
                &mut first,
                sink,
            ),
            Item::Reference(r) => set_once(&mut c.reference, r, item, &mut first, sink),
            Item::Use(u) => c.uses.push(u),
            Item::Route(r) => set_once(&mut c.route, r, item, &mut first, sink),
            Item::Require(r) => c.requires.push(r),
        }
    }
    unique_names(sink, "param", c.params.iter().map(|p| &p.name));
    unique_names(sink, "tensor", c.tensors.iter().map(|t| &t.name));
    unique_names(sink, "region", c.regions.iter().map(|r| &r.name));
    unique_names(sink, "channel", c.channels.iter().map(|x| &x.name));
    unique_names(sink, "sem", c.sems.iter().map(|x| &x.name));
    unique_names(sink, "barrier", c.barriers.iter().map(|x| &x.name));
    unique_names(sink, "lever", c.levers.iter().map(|x| &x.name));
    unique_names(sink, "instance", c.instances.iter().map(|x| &x.name));
    unique_names(sink, "helper use", c.uses.iter().map(|x| &x.name));
    c
}

/// Reports every name declared twice among `names` (one namespace).
pub(crate) fn unique_names<'a>(
    sink: &mut Sink,
    kind: &str,
    names: impl Iterator<Item = &'a ast::Ident>,
) {
    let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
    for n in names {
        if let Some(prev) = seen.get(n.node.as_str()) {
            sink.push(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("{kind} `{}` is declared more than once", n.node),
                )
                .primary(n.span, "declared again here")
                .secondary(*prev, "first declared here")
                .help(format!("rename one of the two {kind}s")),
            );
        } else {
            seen.insert(n.node.as_str(), n.span);
        }
    }
}
