//! Names in generated code: every contract name becomes a C++ identifier (a namespace, an enum
//! constant, a struct member, a local, a macro), so it may not be a C++ keyword or CUDA built-in,
//! may not take a name mpkc generates itself, and may not collide with another name once
//! upper-cased (`REGION_A` from `a` and `A`).

use crate::back::names::{is_header_macro, upper, RESERVED};
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
    // A grid-wide consumer's barrier and its parameter (`back::grid`).
    "grid_sync",
    "mpkc_site",
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

/// Upper-case names the generated kernels and harnesses declare or test whatever the contract
/// says (with the support headers' identifiers, [`lever_name_taken`]'s fixed set): a lever is a
/// macro (`#define NAME 0`, `-DNAME`), which would rewrite every one of them. Kept complete by
/// tests/lever_names.rs.
const GENERATED_MACROS: &[&str] = &[
    "ACC_REGS",
    "ACC_SLOTS",
    "ASYNC_READER",
    "BLOCK_BYTES",
    "BLOCK_K",
    "BLOCK_M",
    "BLOCK_N",
    "BYTES",
    "B_BLOCKS",
    "B_OFFSET",
    "ELEM_BYTES",
    "EXPERTS",
    "FRAG_ELEMS",
    "HALVES",
    "INFINITY",
    "INT64_MAX",
    "INT_MAX",
    "I_DESC",
    "K_BLOCKS",
    "K_CHUNKS",
    "K_ITERS",
    "LD_COLS",
    "MMAS_PER_CHUNK",
    "MMAS_PER_STAGE",
    "MMA_K",
    "MPK_CONSUMER_REGS",
    "MPK_SETMAXNREG",
    // The C library's: `assert` is compiled out where it is defined, whatever its value.
    "NDEBUG",
    "NUM_OP_SEMS",
    "NUM_REGIONS",
    "NUM_STAGES",
    "NUM_TILES",
    "PAD_WORD",
    "PLANNER_CAPACITY_BYTES",
    "READ_TOKENS",
    "ROUTES_PER_TOKEN",
    "ROUTE_READS",
    "ROW_ELEMS",
    "SF_AHEAD",
    "SF_COL",
    "SF_DESC",
    "SF_STAGE_COLS",
    "SF_VEC",
    "SLOTS",
    "SLOT_K_ITERS",
    "SMEM_DESC",
    "SPLITS",
    "SUB_BLOCKS",
    "SWIZZLE_BYTES",
    // MPK's operator type the wiring's registrar asserts (`mirage::type::TB_INPUT_OP`).
    "TB_INPUT_OP",
    "TMEM_COLS",
    "TMEM_END",
    "TOKENS",
];

/// Whether `name` may not be a lever of `ir`: a lever is a macro, so it may not be any identifier
/// of mpkc's support headers ([`crate::back::SUPPORT_HEADERS`]), a name of [`GENERATED_MACROS`],
/// a name starting with `MPKC` in any case (the build's and `verify`'s own defines, e.g.
/// `MPKC_BOUNDED_WAITS`), `TASK_` (MPK's TaskType names, which the wiring names), `IN_` or `OUT_` (the slot constants of tensors and body formals), or a
/// constant derived from the task's own names: `<TENSOR>_BOX`, `<TENSOR>_L2_POLICY`, `<TENSOR>_STAGE_TX_BYTES`,
/// `<TENSOR>_K_BLOCKS` and the upper-cased params.
pub fn lever_name_taken(ir: &TaskIr, name: &str) -> bool {
    // `IN_X` / `OUT_X`: the slot constants of the body's formals and the tensors.
    if name.to_ascii_uppercase().starts_with("MPKC")
        // MPK's `enum TaskType` names (`TASK_<TASK>_V2`, the wiring snippet's and the
        // megakernel build's, where a lever is defined).
        || name.starts_with("TASK_")
        || name.starts_with("IN_")
        || name.starts_with("OUT_")
        || GENERATED_MACROS.contains(&name)
    {
        return true;
    }
    let derived = ir.tensors.values().any(|t| {
        let u = upper(&t.name);
        ["_BOX", "_L2_POLICY", "_STAGE_TX_BYTES", "_K_BLOCKS"]
            .iter()
            .any(|s| name == format!("{u}{s}"))
    }) || ir.params.values().any(|p| upper(&p.name) == name);
    derived || header_identifiers().contains(name)
}

/// The first place an inline body the task compiles (its consumer body or epilogue map, its
/// ring loader's, a used helper's) names `lever` as a word, with whose body it is: the lever's
/// `-D` would rewrite it (a body's local of that name stops compiling once the lever is on,
/// and a body reading the macro does not compile with it off, its default, I-H7). A helper's
/// body lies in another file: its `use` line stands for it.
fn lever_in_bodies(ir: &TaskIr, lever: &str) -> Option<(Span, String)> {
    use super::body::{strip_comments_and_strings, word_offsets};
    let first = |code: &str| word_offsets(&strip_comments_and_strings(code), lever).next();
    for (code, code_span) in super::body::inline_bodies(ir) {
        if let Some(k) = first(code) {
            let at = Span::new(code_span.start + k, code_span.start + k + lever.len());
            return Some((at, "an inline body".to_string()));
        }
    }
    ir.helpers.iter().find_map(|u| match &u.helper.body {
        Some(crate::ir::BodyIr::Cuda { code, .. }) if first(code).is_some() => {
            Some((u.span, format!("helper `{}`'s body", u.name)))
        }
        _ => None,
    })
}

/// Every identifier of the support headers (outside comments and literals), read once.
fn header_identifiers() -> &'static std::collections::BTreeSet<String> {
    static IDS: std::sync::OnceLock<std::collections::BTreeSet<String>> =
        std::sync::OnceLock::new();
    IDS.get_or_init(|| {
        crate::back::SUPPORT_HEADERS
            .iter()
            .flat_map(|(_, text)| crate::front::cuda::identifiers(text))
            .map(|(_, w)| w.to_string())
            .collect()
    })
}

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

/// Reports `name` if it is reserved or generated; returns whether it did.
fn check_one(sink: &mut Sink, kind: &str, name: &str, span: Span) -> bool {
    let before = sink.len();
    if RESERVED.contains(&name) {
        sink.push(clash(
            span,
            name,
            format!("the {kind} would be a C++ keyword or CUDA built-in in generated code"),
        ));
    } else if is_header_macro(name) {
        sink.push(clash(
            span,
            name,
            format!("the {kind} would be expanded as the C macro `{name}` in generated code"),
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
    } else if name.starts_with('_') && name[1..].starts_with(|c: char| c.is_ascii_uppercase()) {
        // ISO C++17 [lex.name]/3: reserved to the implementation, which defines many as macros
        // (`_GNU_SOURCE`, `_POSIX_C_SOURCE`).
        sink.push(clash(
            span,
            name,
            "names starting with `_` and an upper-case letter are reserved to the C++ implementation (its headers define many as macros)".to_string(),
        ));
    }
    sink.len() > before
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

/// The names an inline body sees side by side in its function (`back::consumer`): each
/// tensor's pointer, each view's `<tensor>_row_stride`, each paged tensor's `<tensor>_page_tokens`,
/// `<tensor>_max_context` and `<tensor>_requests`, each helper's function and each consumer
/// ring's end (a local of both bodies, `back::consumer_ring`). Two of one name would be declared
/// twice: reported on the later declaration.
fn body_scope(ir: &TaskIr, sink: &mut Sink) {
    // (name, what it is, its kind: "tensor", "constant", "helper" or "ring", span)
    let mut scope: Vec<(String, String, &str, Span)> = Vec::new();
    for t in ir.tensors.values() {
        scope.push((
            t.name.clone(),
            format!("tensor `{}`", t.name),
            "tensor",
            t.span,
        ));
        if t.view.is_some() {
            scope.push((
                format!("{}_row_stride", t.name),
                format!("the row step of view `{}`", t.name),
                "constant",
                t.span,
            ));
        }
        if t.paged.is_some() {
            for c in ["page_tokens", "max_context", "requests"] {
                scope.push((
                    format!("{}_{c}", t.name),
                    format!("the `{c}` constant of paged tensor `{}`", t.name),
                    "constant",
                    t.span,
                ));
            }
        }
    }
    for h in &ir.helpers {
        scope.push((
            h.name.clone(),
            format!("helper `{}`'s function", h.name),
            "helper",
            h.span,
        ));
    }
    for c in ir
        .channels
        .values()
        .filter(|c| super::rings::is_consumer_ring(c))
    {
        scope.push((
            c.name.clone(),
            format!("consumer ring `{}`'s end", c.name),
            "ring",
            c.span,
        ));
    }
    for (i, (name, what, kind, span)) in scope.iter().enumerate() {
        let Some((_, first, first_kind, _)) = scope[..i].iter().find(|(n, ..)| n == name) else {
            continue;
        };
        let why = if *kind == "ring" && matches!(*first_kind, "tensor" | "helper") {
            format!("the consumer ring's end, a local of the bodies, would collide with the {first_kind} `{name}`")
        } else {
            format!("{what} and {first} would both be `{name}` in the body's function")
        };
        sink.push(clash(*span, name, why));
    }
}

/// The `SEM_<NAME>` ordinal constants of the spec header ([`crate::plan::sems::constant`] of a
/// sem's name and of each channel's `full` and `empty` families) against the runtime's own
/// (`SEM_DEP_READY`, ordinal 0 of every task, I-M1; `SEM_OP_BASE`), the page hand-off's
/// `SEM_PAGES_READY` and each other. A sem named `dep_ready` would declare `SEM_DEP_READY` in the
/// task's namespace, hiding the runtime's: the dependency wait would wait the sem's ordinal.
/// Reported on the later declaration.
fn sem_constants(ir: &TaskIr, sink: &mut Sink) {
    use crate::plan::sems::{channel_family, constant, PAGES_READY};
    // constant -> (what it already is, the contract name that took it)
    let mut seen: BTreeMap<String, (String, Option<&str>)> = [
        (
            "SEM_DEP_READY".to_string(),
            "the runtime's dependency barrier (ordinal 0 of every task, I-M1)",
        ),
        ("SEM_OP_BASE".to_string(), "the runtime's first op ordinal"),
        (
            constant(PAGES_READY),
            "the page hand-off's, which mpkc generates for a consumer-only task's loader",
        ),
    ]
    .into_iter()
    .map(|(c, w)| (c, (w.to_string(), None)))
    .collect();
    let mut items: Vec<(String, String, &str, Span)> = Vec::new();
    for c in ir.channels.values() {
        for end in ["full", "empty"] {
            items.push((
                constant(&channel_family(&c.name, end)),
                format!("the constant of channel `{}`'s {end} barriers", c.name),
                &c.name,
                c.span,
            ));
        }
    }
    for x in ir.sems.values() {
        items.push((
            constant(&x.name),
            format!("the constant of sem `{}`", x.name),
            &x.name,
            x.span,
        ));
    }
    for (c_name, what, name, span) in items {
        match seen.get(&c_name) {
            // Two spellings of one name are `upper_unique`'s report.
            Some((_, Some(by))) if *by != name && upper(by) == upper(name) => {}
            Some((first, _)) => sink.push(clash(
                span,
                name,
                format!("the spec header would name its ordinal `{c_name}`, which is {first}"),
            )),
            None => {
                seen.insert(c_name, (what, Some(name)));
            }
        }
    }
}

/// Runs the name rules on one instance.
pub(super) fn names(ir: &TaskIr, sink: &mut Sink) {
    let _ = check_one(sink, "task", &ir.name, ir.name_span);
    if ir.unit_name().len() > MAX_UNIT_NAME {
        sink.push(clash(
            ir.name_span,
            &ir.unit_name(),
            format!("generated file names would exceed {MAX_UNIT_NAME} characters"),
        ));
    }
    for t in ir.tensors.values() {
        let _ = check_one(sink, "tensor", &t.name, t.span);
    }
    for g in &ir.region_groups {
        let _ = check_one(sink, "region", &g.name, g.head_span);
    }
    for c in ir.channels.values() {
        let _ = check_one(sink, "channel", &c.name, c.span);
    }
    for s in ir.sems.values() {
        let _ = check_one(sink, "sem", &s.name, s.span);
    }
    for b in ir.barriers.values() {
        let _ = check_one(sink, "barrier", &b.name, b.span);
    }
    for l in &ir.levers {
        if check_one(sink, "lever", &l.name, l.span) {
            continue;
        }
        if l.name.bytes().any(|c| c.is_ascii_lowercase()) {
            // Upper case keeps a macro off the generated code's locals and functions (all in
            // lower or mixed case), and is how MPK spells its own (`MPK_LINEAR_L2_NORMAL`).
            sink.push(
                clash(
                    l.span,
                    &l.name,
                    "a lever is a macro (`#define`, `-D`) and would rewrite any local or function of that name in the generated code: lever names are upper case".to_string(),
                )
                .help(format!("write it `{}`", l.name.to_ascii_uppercase())),
            );
        } else if lever_name_taken(ir, &l.name) {
            sink.push(clash(
                l.span,
                &l.name,
                "a lever is a macro (`#define`, `-D`), and the generated code or mpkc's headers use this name: the define would rewrite it (names starting with `MPKC` are mpkc's own defines)".to_string(),
            ));
        } else if let Some((at, whose)) = lever_in_bodies(ir, &l.name) {
            sink.push(
                clash(
                    l.span,
                    &l.name,
                    format!("a lever is a macro (`#define`, `-D`), and {whose} names `{}`: with the lever on, the define would rewrite it", l.name),
                )
                .secondary(at, "named here")
                .help("rename the lever, or the body's name"),
            );
        }
    }
    for p in ir.params.values() {
        let _ = check_one(sink, "param", &p.name, p.span);
    }
    body_scope(ir, sink);
    sem_constants(ir, sink);
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
