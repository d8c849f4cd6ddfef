//! Params nothing uses (W0017): a declared `param` that no expression of the task names (a
//! tensor's extents, view or paging, a tile, a region, a channel, a barrier, the granularity,
//! another param's range or value, an instance's or a `use`'s value, …), that no body template
//! takes as a scalar, that no inline CUDA body (`body cuda`, `body loader cuda`) names as an
//! identifier (`params::NAME`, read from the text as C++ lexes it, comments and literals left
//! out), and that the lowering does not read by name (`splits` of a `split_k` epilogue). Checked
//! once per task, on its declarations: an instance cannot make a param used.
//!
//! A task with a `reference` is left alone: its Python function gets every param of the
//! instance (`params`, docs/references.md), which the checker does not read.

use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, Arrival, ChannelClause, ChannelStorage, Expr, ExprKind, Item};
use std::collections::BTreeSet;

fn value(v: &ast::Value) -> Option<&Expr> {
    match v {
        ast::Value::Expr(e) => Some(e),
        ast::Value::Bool(..) => None,
    }
}

fn arrival(a: &Arrival) -> Option<&Expr> {
    match a {
        Arrival::Threads(e, _, _) => Some(e),
        Arrival::Tma(..) | Arrival::Bulk(..) | Arrival::Commit(_) => None,
    }
}

/// The param names `task` uses, as [`unused_params`] counts them.
fn used_names(task: &ast::Task) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    let mut exprs: Vec<&Expr> = Vec::new();
    for item in &task.items {
        match item {
            Item::Targets(ts, _) => {
                exprs.extend(ts.iter().filter_map(|t| t.setting.as_ref().map(|(_, e)| e)))
            }
            Item::TaskId(e, _)
            | Item::ReduceTaskId(e, _)
            | Item::Stages(e, _)
            | Item::Tmem(e, _) => exprs.push(e),
            Item::Param(p) => {
                if let Some(r) = &p.range {
                    exprs.extend([&r.lo, &r.hi]);
                }
                exprs.extend(p.default.as_ref().and_then(value));
            }
            Item::Tensor(t) => {
                exprs.extend(&t.dims);
                if let Some(v) = &t.view {
                    exprs.extend(v.stride.iter().chain(&v.offset));
                }
                if let Some(p) = &t.paged {
                    exprs.extend(p.page.iter().chain(&p.max_context).chain(&p.requests));
                }
                if let Some(b) = t.tma.as_ref().and_then(|m| m.boxes.as_ref()) {
                    exprs.extend(&b.node);
                }
            }
            Item::Tile(dims, _) | Item::SetMaxNReg(dims, _) => {
                exprs.extend(dims.iter().map(|(_, e)| e))
            }
            Item::Mma(m) => exprs.extend(m.dims.iter().map(|(_, e)| e)),
            Item::Region(r) => {
                for a in &r.attrs {
                    match a {
                        ast::RegionAttr::Bytes(e, _)
                        | ast::RegionAttr::Align(e, _)
                        | ast::RegionAttr::Release(e, _)
                        | ast::RegionAttr::Pages(e, _) => exprs.push(e),
                        ast::RegionAttr::Holds(members, _) => {
                            exprs.extend(members.iter().filter_map(|m| m.count.as_ref()))
                        }
                        ast::RegionAttr::Pack(_) | ast::RegionAttr::Contiguous(..) => {}
                    }
                }
            }
            Item::Channel(c) => {
                match &c.storage {
                    ChannelStorage::Region { depth, .. } => exprs.extend(depth.as_ref()),
                    ChannelStorage::Tmem { slots } => exprs.push(slots),
                }
                for cl in &c.clauses {
                    match cl {
                        ChannelClause::Edge { arrival: a, .. }
                        | ChannelClause::EmptyBy { arrival: a, .. } => exprs.extend(arrival(a)),
                        ChannelClause::SharesEmpty(..)
                        | ChannelClause::Reinit(..)
                        | ChannelClause::Drain(_)
                        | ChannelClause::EarlyExit { .. } => {}
                    }
                }
            }
            Item::Sem(s) => {
                exprs.extend(s.arrival.as_ref().and_then(arrival));
                for cl in &s.clauses {
                    if let ast::SemClause::Count(e, _) = cl {
                        exprs.push(e);
                    }
                }
            }
            Item::Barrier(b) => exprs.extend([&b.id, &b.threads]),
            Item::Body(b) | Item::LoaderBody(b) => match b {
                ast::Body::Template { scalars, .. } => {
                    used.extend(scalars.iter().map(|s| s.node.clone()))
                }
                ast::Body::Cuda { code, .. } => used.extend(
                    crate::front::cuda::identifiers(code)
                        .into_iter()
                        .map(|(_, w)| w.to_string()),
                ),
            },
            Item::Epilogue(alts, _) => {
                // The split-K lowering reads `splits` by name (`lower::linear`).
                if alts.iter().any(|(kind, _, _)| kind.node == "split_k") {
                    used.insert("splits".to_string());
                }
            }
            Item::Granularity(g) => exprs.extend(g.args.iter().filter_map(|a| match &a.value {
                Some(ast::GranValue::Expr(e)) => Some(e),
                _ => None,
            })),
            Item::Instance(i) => exprs.extend(i.sets.iter().filter_map(|(_, v)| value(v))),
            Item::Use(u) => exprs.extend(u.sets.iter().filter_map(|(_, v)| value(v))),
            Item::Reference(r) => exprs.extend(r.tolerances.iter().filter_map(|(_, v)| value(v))),
            Item::Require(r) => exprs.extend([&r.lhs, &r.rhs]),
            Item::Family(_) | Item::Roles(..) | Item::Lever(_) | Item::Route(_) => {}
        }
    }
    while let Some(e) = exprs.pop() {
        match &e.kind {
            ExprKind::Path(p) if p.len() == 1 => {
                used.insert(p[0].node.clone());
            }
            ExprKind::Neg(x) => exprs.push(x),
            ExprKind::Binary(_, a, b) => exprs.extend([&**a, &**b]),
            ExprKind::Call(_, args) => exprs.extend(args),
            ExprKind::Path(_) | ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::BadLit(_) => {}
        }
    }
    used
}

/// W0017 for every param of `task` that nothing uses (see the module's doc), with a help that
/// removes it and, where instances set it, their settings. `lowered` are the task's instances
/// this run lowered: a task none was lowered of (`--instance` selected others) is left alone.
/// The caller asks only for a task that lowered without error: an error may hide a use (a
/// misspelt name, `hiden` for `hidden`), and a rejected value is reported once.
pub(super) fn unused_params(task: &ast::Task, lowered: &[&crate::ir::TaskIr]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if lowered.is_empty() || task.items.iter().any(|i| matches!(i, Item::Reference(_))) {
        return out;
    }
    let used = used_names(task);
    let mut seen = BTreeSet::new();
    for item in &task.items {
        let Item::Param(p) = item else { continue };
        let name = &p.name.node;
        // A second declaration of a name is E0003's.
        if !seen.insert(name.clone())
            || used.contains(name)
            || lowered.iter().any(|ir| !ir.params.contains_key(name))
        {
            continue;
        }
        let settings: Vec<&ast::Instance> = task
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Instance(i) if i.sets.iter().any(|(k, _)| &k.node == name) => Some(i),
                _ => None,
            })
            .collect();
        let mut d =
            Diagnostic::warning(codes::UNUSED_PARAM, format!("param `{name}` is never used"))
                .primary(p.name.span, "declared here, used nowhere");
        for i in &settings {
            if let Some((k, _)) = i.sets.iter().find(|(k, _)| &k.node == name) {
                d = d.secondary(k.span, format!("set by instance `{}`", i.name.node));
            }
        }
        d = d.note(
            "no extent, tile, region, channel, barrier, granularity, other param's value or range, \
             `use` binding or body scalar names it, and no inline body mentions it",
        );
        out.push(d.help(match settings.len() {
            0 => format!("remove `param {name}`, or use it"),
            1 => format!(
                "remove `param {name}` and its setting in instance `{}`, or use it",
                settings[0].name.node
            ),
            _ => format!(
                "remove `param {name}` and its settings in instances {}, or use it",
                settings
                    .iter()
                    .map(|i| format!("`{}`", i.name.node))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }));
    }
    out
}
