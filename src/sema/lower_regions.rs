//! Regions: attribute evaluation and stage-array expansion (`W[stage]` → `W_0 … W_{stages-1}`,
//! `stage` bound to the index inside the block). Defaults follow MPK's `TaskSmemRegion`:
//! alignment 1, page count −1 (derive), not packable, release step 0, contiguous. A region that
//! `holds` typed members lays them out in order; its `bytes` defaults to their size, and a
//! smaller one is `E0110`.
//!
//! A declaration is lowered whole or not at all: a stage array with a rejected member (or a
//! rejected `stages`) adds no region, and its name goes to `Cx::rejected_regions`, so a channel
//! over it is a follow-on error rather than a ring of the wrong depth or an unknown name.

use super::lower::Cx;
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, RegionAttr};
use crate::ir::{layout_held, HeldType, RegionGroup, RegionIr};
use crate::span::Span;
use std::collections::HashMap;

/// Lowers every region declaration of the task, in declaration order.
pub(super) fn regions(cx: &mut Cx<'_>, c: &super::collect::Collected<'_>) {
    // Region names taken so far, with the first declaration's span (one lookup per region, not
    // a scan of the regions before it).
    let mut taken: HashMap<String, Span> = HashMap::new();
    for x in cx.ir.regions.values() {
        taken.entry(x.name.clone()).or_insert(x.span);
    }
    for r in &c.regions {
        let count = match r.staged {
            None => 1,
            Some(s) => match cx.ir.stages {
                Some((n, _)) => n,
                None if cx.poisoned.iter().any(|p| p == "stages") => {
                    cx.report(Diagnostic::error(crate::diag::FOLLOW_ON, "stages rejected"));
                    cx.rejected_regions.push(r.name.node.clone());
                    continue;
                }
                None => {
                    cx.report(
                        Diagnostic::error(
                            codes::MISSING,
                            format!("region `{}[stage]` needs a stage count", r.name.node),
                        )
                        .primary(s, "a stage array")
                        .help("declare `stages N` in the task"),
                    );
                    cx.rejected_regions.push(r.name.node.clone());
                    continue;
                }
            },
        };
        check_attr_duplicates(cx, r);
        let group = cx.ir.region_groups.len();
        let mut lowered = Vec::new();
        let mut whole = true;
        for stage in 0..count {
            let staged = r.staged.is_some();
            let name = if staged {
                format!("{}_{stage}", r.name.node)
            } else {
                r.name.node.clone()
            };
            if let Some(&prev) = taken.get(&name) {
                cx.report(
                    Diagnostic::error(
                        codes::DUPLICATE,
                        format!("region name `{name}` is used twice"),
                    )
                    .primary(r.name.span, "this declaration expands to it")
                    .secondary(prev, "already declared here")
                    .help("stage arrays expand to NAME_0, NAME_1, …; rename one region"),
                );
                whole = false;
                break;
            }
            let Some(region) = lower_one(cx, r, name, group, staged.then_some(stage)) else {
                whole = false;
                break;
            };
            taken.entry(region.name.clone()).or_insert(region.span);
            lowered.push(region);
        }
        if !whole {
            cx.rejected_regions.push(r.name.node.clone());
            continue;
        }
        let members = lowered
            .into_iter()
            .map(|region| cx.ir.regions.append(region))
            .collect();
        cx.ir.region_groups.push(RegionGroup {
            name: r.name.node.clone(),
            members,
            staged: r.staged.is_some(),
            span: r.span,
            head_span: Span::new(r.span.start, r.staged.map_or(r.name.span.end, |s| s.end)),
        });
    }
}

fn check_attr_duplicates(cx: &mut Cx<'_>, r: &ast::Region) {
    let mut seen: Vec<(&'static str, Span)> = Vec::new();
    for a in &r.attrs {
        let (k, s) = match a {
            RegionAttr::Bytes(_, s) => ("bytes", *s),
            RegionAttr::Align(_, s) => ("align", *s),
            RegionAttr::Pack(s) => ("pack", *s),
            RegionAttr::Release(_, s) => ("release", *s),
            RegionAttr::Pages(_, s) => ("pages", *s),
            RegionAttr::Contiguous(_, s) => ("contiguous", *s),
            RegionAttr::Holds(_, s) => ("holds", *s),
        };
        if let Some((_, prev)) = seen.iter().find(|(x, _)| *x == k) {
            let prev = *prev;
            cx.report(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("region `{}` gives `{k}` twice", r.name.node),
                )
                .primary(s, "given again")
                .secondary(prev, "first given here")
                .help(format!("keep one `{k}`")),
            );
        }
        seen.push((k, s));
    }
}

fn lower_one(
    cx: &mut Cx<'_>,
    r: &ast::Region,
    name: String,
    group: usize,
    stage: Option<u32>,
) -> Option<RegionIr> {
    let mut out = RegionIr {
        name,
        group,
        stage,
        size: -1,
        align: 1,
        page_count: -1,
        can_pack: false,
        release_step: 0,
        contiguous: true,
        span: r.span,
        bytes_span: r.span,
        bytes_terms: Vec::new(),
        bytes_param: None,
        align_span: r.span,
        pages_span: None,
        holds: Vec::new(),
        holds_span: None,
    };
    let mut env = cx.env();
    env.stage = stage.map(i64::from);
    let mut errors = Vec::new();
    let mut have_bytes = false;
    let mut held_size = None;
    let mut ok = true;
    for a in &r.attrs {
        // Region sizes and alignments are checked against I-S1 by `valid`, so negative values
        // are kept here and reported there, with the region's context.
        let mut eval = |e: &ast::Expr| match env.int(e) {
            Ok(v) => Some(v),
            Err(d) => {
                errors.push(d);
                None
            }
        };
        match a {
            RegionAttr::Bytes(e, s) => {
                have_bytes = true;
                out.bytes_span = *s;
                out.bytes_terms = sum_terms(e)
                    .iter()
                    .filter_map(|t| env.int(t).ok().map(|v| (t.to_string(), v)))
                    .collect();
                if out.bytes_terms.len() < 2 {
                    out.bytes_terms.clear();
                }
                out.bytes_param = match &e.kind {
                    ast::ExprKind::Path(p) if p.len() == 1 => env
                        .params
                        .and_then(|ps| ps.get(&p[0].node))
                        .map(|p| p.name.clone()),
                    _ => None,
                };
                match eval(e) {
                    Some(v) => out.size = v,
                    None => ok = false,
                }
            }
            RegionAttr::Align(e, s) => {
                out.align_span = *s;
                match eval(e) {
                    Some(v) => out.align = v,
                    None => ok = false,
                }
            }
            RegionAttr::Pack(_) => out.can_pack = true,
            RegionAttr::Release(e, _) => match eval(e) {
                Some(v) => out.release_step = v,
                None => ok = false,
            },
            RegionAttr::Pages(e, s) => {
                out.pages_span = Some(*s);
                match eval(e) {
                    Some(v) => out.page_count = v,
                    None => ok = false,
                }
            }
            RegionAttr::Contiguous(b, _) => out.contiguous = *b,
            RegionAttr::Holds(members, s) => {
                out.holds_span = Some(*s);
                let mut typed = Vec::new();
                for m in members {
                    let ty = HeldType::parse(&m.ty.node);
                    if ty.is_none() {
                        errors.push(
                            Diagnostic::error(
                                codes::TYPE_MISMATCH,
                                format!("unknown member type `{}`", m.ty.node),
                            )
                            .primary(m.ty.span, "not a member type")
                            .help("regions hold `mbarrier`, `u64`, `tmem_addr` or elements of a dtype (`f32[64] amax`)"),
                        );
                    }
                    let count = match &m.count {
                        None => Some(1),
                        Some(e) => match env.non_negative(e, "member count") {
                            Ok(v) => Some(v),
                            Err(d) => {
                                errors.push(d);
                                None
                            }
                        },
                    };
                    // A member name is an accessor of the view (`buf.REGION_NAME()`): once each.
                    if let Some(name) = &m.name {
                        let earlier = members[..]
                            .iter()
                            .take_while(|o| !std::ptr::eq(*o, m))
                            .find(|o| o.name.as_ref().is_some_and(|n| n.node == name.node));
                        if let Some(first) = earlier {
                            errors.push(
                                Diagnostic::error(
                                    codes::DUPLICATE,
                                    format!(
                                        "region `{}` holds two members named `{}`",
                                        r.name.node, name.node
                                    ),
                                )
                                .primary(name.span, "named again here")
                                .secondary(first.span, "first here")
                                .help("give each member its own name"),
                            );
                            ok = false;
                        }
                    }
                    match (ty, count) {
                        (Some(t), Some(n)) => {
                            typed.push((t, n, m.name.as_ref().map(|x| x.node.clone()), m.span))
                        }
                        _ => ok = false,
                    }
                }
                if ok {
                    match layout_held(&typed) {
                        Some((held, size)) => {
                            out.holds = held;
                            held_size = Some(size);
                        }
                        None => {
                            errors.push(
                                Diagnostic::error(
                                    codes::ARITH,
                                    format!(
                                        "the members of region `{}` overflow 64 bits",
                                        r.name.node
                                    ),
                                )
                                .primary(*s, "too large")
                                .help("give the members counts the SMEM can hold"),
                            );
                            ok = false;
                        }
                    }
                }
            }
        }
    }
    cx.sink.extend(errors);
    // `bytes` defaults to the members' laid-out size; a smaller one cannot hold them (E0110).
    if let Some(need) = held_size {
        if !have_bytes {
            out.size = need;
            have_bytes = true;
        } else if ok && out.size < need {
            let list: Vec<String> = out
                .holds
                .iter()
                .map(|h| {
                    format!(
                        "{}{} at {}",
                        h.ty.name(),
                        if h.count == 1 {
                            String::new()
                        } else {
                            format!("[{}]", h.count)
                        },
                        h.offset
                    )
                })
                .collect();
            cx.report(
                Diagnostic::error(
                    codes::REGION_USE,
                    format!(
                        "region `{}` is {} bytes but holds {need} ({})",
                        out.name,
                        out.size,
                        list.join(", ")
                    ),
                )
                .primary(out.bytes_span, format!("{} bytes", out.size))
                .secondary(
                    out.holds_span.unwrap_or(r.span),
                    format!("{need} bytes laid out"),
                )
                .help(format!(
                    "write `bytes {need}`, or leave `bytes` out: it defaults to the members' size"
                )),
            );
            return None;
        }
    }
    if !have_bytes {
        // A rejected `holds` was reported: its size is unknown, not missing.
        if stage.unwrap_or(0) == 0 && out.holds_span.is_none() {
            cx.report(
                Diagnostic::error(
                    codes::MISSING,
                    format!("region `{}` gives no size", r.name.node),
                )
                .primary(r.name.span, "no `bytes`")
                .help("add `bytes EXPR` (the region's size in bytes)"),
            );
        }
        return None;
    }
    ok.then_some(out)
}

/// The top-level additive terms of `e` (`a + b - c` gives `a`, `b`, `-c` as written).
fn sum_terms(e: &ast::Expr) -> Vec<&ast::Expr> {
    match &e.kind {
        ast::ExprKind::Binary(ast::BinOp::Add, l, r) => {
            let mut v = sum_terms(l);
            v.push(r);
            v
        }
        _ => vec![e],
    }
}
