//! Names in generated code: every contract name becomes a C++ identifier (a namespace, an enum
//! constant, a struct member, a local, a macro), so it may not be a C++ keyword or CUDA built-in,
//! may not take a name mpkc generates itself, and may not collide with another name once
//! upper-cased (`REGION_A` from `a` and `A`).

use crate::back::names::{upper, RESERVED};
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::TaskIr;
use crate::span::Span;
use std::collections::BTreeMap;

/// Names the generated headers declare in a task's namespace or consumer function.
const GENERATED: &[&str] = &[
    "SmemView",
    "Registration",
    "consumer",
    "loader",
    "launcher",
    "storer",
    "params",
    "kConsumerThreads",
    "kNumTasks",
    "kSyncBarrier",
    "make_smem_info",
    "kSems_sm100a",
    "kSems_sm90a",
    "NUM_REGIONS",
    "NUM_OP_SEMS",
    "PLANNER_CAPACITY_BYTES",
    // The op-semaphore base a consumer ring's ends and the page hand-off address (`back::consumer_ring`).
    "sem",
];

/// Prefixes of the constants mpkc generates (`SEM_<ORDINAL>`, `REGION_<REGION>`, `BAR_<BARRIER>`).
const GENERATED_PREFIXES: &[&str] = &["SEM_", "REGION_", "BAR_"];

/// The longest task or instance-qualified unit name (file names stay well inside 255 bytes).
pub const MAX_UNIT_NAME: usize = 100;

fn clash(span: Span, name: &str, why: String) -> Diagnostic {
    Diagnostic::error(
        codes::NAME_CLASH,
        format!("`{name}` cannot be used as a name: {why}"),
    )
    .primary(span, "this name")
    .help("rename it")
}

fn check_one(sink: &mut Sink, kind: &str, name: &str, span: Span) {
    if RESERVED.contains(&name) {
        sink.push(clash(
            span,
            name,
            format!("the {kind} would be a C++ keyword or CUDA built-in in generated code"),
        ));
    } else if GENERATED.contains(&name) {
        sink.push(clash(
            span,
            name,
            format!("the {kind} would collide with `{name}`, which mpkc generates"),
        ));
    } else if let Some(p) = GENERATED_PREFIXES.iter().find(|p| name.starts_with(*p)) {
        sink.push(clash(
            span,
            name,
            format!("names starting with `{p}` are the constants mpkc generates"),
        ));
    } else if name.starts_with("mpkc") || name.starts_with("__") {
        sink.push(clash(
            span,
            name,
            "names starting with `mpkc` or `__` are reserved for generated code".to_string(),
        ));
    }
}

/// Upper-case collisions within one generated namespace of constants.
fn upper_unique<'a>(sink: &mut Sink, kind: &str, names: impl Iterator<Item = (&'a str, Span)>) {
    let mut seen: BTreeMap<String, (&str, Span)> = BTreeMap::new();
    for (n, s) in names {
        let u = upper(n);
        if let Some((prev, _)) = seen.get(&u) {
            if *prev != n {
                sink.push(clash(
                    s,
                    n,
                    format!("the {kind} `{prev}` becomes the same C++ constant (`{u}`)"),
                ));
            }
        } else {
            seen.insert(u, (n, s));
        }
    }
}

/// Runs the name rules on one instance.
pub(super) fn names(ir: &TaskIr, sink: &mut Sink) {
    check_one(sink, "task", &ir.name, ir.name_span);
    if ir.unit_name().len() > MAX_UNIT_NAME {
        sink.push(clash(
            ir.name_span,
            &ir.unit_name(),
            format!("generated file names would exceed {MAX_UNIT_NAME} characters"),
        ));
    }
    for t in ir.tensors.values() {
        check_one(sink, "tensor", &t.name, t.span);
    }
    for g in &ir.region_groups {
        check_one(sink, "region", &g.name, g.head_span);
    }
    for c in ir.channels.values() {
        check_one(sink, "channel", &c.name, c.span);
    }
    for s in ir.sems.values() {
        check_one(sink, "sem", &s.name, s.span);
    }
    for b in ir.barriers.values() {
        check_one(sink, "barrier", &b.name, b.span);
    }
    for l in &ir.levers {
        check_one(sink, "lever", &l.name, l.span);
    }
    for p in ir.params.values() {
        check_one(sink, "param", &p.name, p.span);
    }
    // A consumer ring's end is a local of both bodies, next to the tensors' pointers and the
    // helpers' functions (`back::consumer_ring`).
    for c in ir
        .channels
        .values()
        .filter(|c| super::rings::is_consumer_ring(c))
    {
        let tensor = ir.tensors.values().any(|t| t.name == c.name);
        let helper = ir.helpers.iter().any(|h| h.name == c.name);
        if tensor || helper {
            sink.push(clash(
                c.span,
                &c.name,
                format!(
                    "the consumer ring's end, a local of the bodies, would collide with the {} `{}`",
                    if tensor { "tensor" } else { "helper" },
                    c.name
                ),
            ));
        }
    }
    // A named member's accessor `REGION_MEMBER()` sits in the view next to the regions'
    // pointers (`back::consumer`'s held accessors): no region's name, no other accessor's.
    let mut accessors: Vec<String> = Vec::new();
    for a in ir.member_accessors() {
        let (accessor, r, m) = (a.name(), a.group, a.member);
        let member = m.name.as_deref().unwrap_or_default();
        if ir.region_groups.iter().any(|o| o.name == accessor) {
            sink.push(clash(
                m.span,
                &accessor,
                format!("the view's accessor of `{}`'s member `{member}` would collide with region `{accessor}`", r.name),
            ));
        } else if accessors.contains(&accessor) {
            sink.push(clash(
                m.span,
                &accessor,
                format!("the view's accessor of `{}`'s member `{member}` would collide with another region's member accessor `{accessor}()`", r.name),
            ));
        }
        accessors.push(accessor);
    }
    upper_unique(
        sink,
        "region",
        ir.regions.values().map(|r| (r.name.as_str(), r.span)),
    );
    upper_unique(
        sink,
        "barrier",
        ir.barriers.values().map(|b| (b.name.as_str(), b.span)),
    );
    upper_unique(
        sink,
        "channel or sem",
        ir.channels
            .values()
            .map(|c| (c.name.as_str(), c.span))
            .chain(ir.sems.values().map(|s| (s.name.as_str(), s.span))),
    );
    // Inline bodies see tensors by name next to the staged regions' view and each other.
    upper_unique(
        sink,
        "tensor",
        ir.tensors.values().map(|t| (t.name.as_str(), t.span)),
    );
}
