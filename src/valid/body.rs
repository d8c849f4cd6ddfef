//! Family and body rules: what each family may declare, the template binding (E0009), and the
//! regions the body addresses (I-S9, I-S10, I-S11).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, Family, TaskIr};
use crate::templates::{self, Binding};

/// Items a family may not declare, and items it needs.
pub(super) fn family_items(ir: &TaskIr, sink: &mut Sink) {
    let fam = ir.family;
    if fam == Family::Helper {
        match &ir.body {
            Some(BodyIr::Template { name, span, .. }) => sink.push(
                Diagnostic::error(codes::FAMILY_ITEM, format!("a `helper` task's body is inline CUDA, not the template `{name}`"))
                    .primary(*span, "body template here")
                    .secondary(ir.family_span, "family helper")
                    .note("a helper's body is the code of the `__device__` function its callers' bodies call (docs/language.md, \"Helpers\")")
                    .help("write the helper's code as `body cuda { … }`, or declare this op as a consumer task with the template"),
            ),
            Some(BodyIr::Cuda { .. }) => {}
            None => sink.push(
                Diagnostic::error(codes::MISSING, format!("helper `{}` declares no body", ir.name))
                    .primary(ir.family_span, "family helper")
                    .help("add `body cuda { … }`: the code of the `__device__` function a caller's body calls"),
            ),
        }
    }
    if fam != Family::Pipeline {
        // Only a pipeline's launcher allocates TMEM and writes its base address to the member.
        for r in ir.regions.values() {
            if let Some(m) = r
                .holds
                .iter()
                .find(|m| m.ty == crate::ir::HeldType::TmemAddr)
            {
                sink.push(
                    Diagnostic::error(
                        codes::FAMILY_ITEM,
                        format!("region `{}` holds `tmem_addr` in a `{}` task", r.name, fam.as_str()),
                    )
                    .primary(m.span, "`tmem_addr` here")
                    .secondary(ir.family_span, format!("family {}", fam.as_str()))
                    .note("the member is the TMEM base address a pipeline's launcher allocates (tcgen05.alloc) and writes; no role of this family does")
                    .help("hold a plain `u64` or elements of a dtype, or remove the member"),
                );
            }
        }
        if let Some((_, _, span)) = ir.epilogues.first() {
            sink.push(
                Diagnostic::error(
                    codes::FAMILY_ITEM,
                    format!(
                        "a `{}` task has no epilogue; epilogues belong to pipelines",
                        fam.as_str()
                    ),
                )
                .primary(*span, "epilogue here")
                .secondary(ir.family_span, format!("family {}", fam.as_str()))
                .help("remove the `epilogue` item; a consumer body writes its outputs itself"),
            );
        }
    }
    if fam.is_consumer_only() {
        let not_here = |what: &str, span| {
            Diagnostic::error(
                codes::FAMILY_ITEM,
                format!("a `{}` task has no {what}", fam.as_str()),
            )
            .primary(span, format!("{what} declared here"))
            .secondary(ir.family_span, format!("family {}", fam.as_str()))
            .help(
                "declare `family pipeline` for loader/launcher rings and MMAs, or remove the item",
            )
        };
        // Families B and C may declare rings the loader body fills with TMA bulk copies
        // (`valid::rings`); family D has no region to hold one.
        if fam == Family::ConsumerNoSmem {
            for ch in ir.channels.values() {
                sink.push(not_here("channels", ch.span));
            }
        }
        if let Some(m) = &ir.mma {
            sink.push(not_here("MMA", m.span));
        }
        if let Some((_, s)) = ir.tmem_cols {
            sink.push(not_here("TMEM", s));
        }
        if let Some(t) = &ir.tile {
            sink.push(not_here("MMA tile", t.span));
        }
        // Op-private semaphores and tensor maps are lowered for the pipeline's roles only: a
        // consumer body gets no `init_semaphores` entry and no tensor map for them.
        for s in ir.sems.values() {
            sink.push(not_here("op-private semaphores", s.span));
        }
        for t in ir.tensors.values() {
            if let Some(tma) = &t.tma {
                sink.push(not_here("TMA loads (tensor maps)", tma.span));
            }
        }
    }
    if fam == Family::Pipeline {
        if ir.mma.is_none() {
            sink.push(
                Diagnostic::error(
                    codes::MISSING,
                    format!("pipeline task `{}` declares no MMA", ir.name),
                )
                .primary(ir.family_span, "family pipeline")
                .help("add e.g. `mma tcgen05 f16 (bf16 x bf16 -> f32) m128 n16 k16`"),
            );
        }
        if ir.channels.is_empty() {
            sink.push(
                Diagnostic::error(codes::MISSING, format!("pipeline task `{}` declares no channel", ir.name))
                    .primary(ir.family_span, "family pipeline")
                    .help("declare the TMA ring, e.g. `channel w_ring: W, loader -> launcher (tma W), empty by launcher (commit)`"),
            );
        }
    }
    match fam {
        Family::ConsumerNoSmem if !ir.regions.is_empty() => {
            let mut d = Diagnostic::error(
                codes::NO_SMEM_REGIONS,
                format!(
                    "a `consumer-no-smem` task declares {} region{}",
                    ir.regions.len(),
                    if ir.regions.len() == 1 { "" } else { "s" }
                ),
            );
            for g in &ir.region_groups {
                d = d.primary(g.head_span, "declared here");
            }
            sink.push(
                d.secondary(ir.family_span, "family consumer-no-smem")
                    .note("family D tasks have NUM_REGIONS = 0 and use no dynamic SMEM (I-S11)")
                    .help("declare `family consumer` to use regions, or remove them"),
            );
        }
        Family::ConsumerMonolith if ir.regions.len() != 1 => {
            let mut d = Diagnostic::error(
                codes::MONOLITH_REGIONS,
                format!(
                    "a `consumer-monolith` task declares {} regions; it must declare exactly one",
                    ir.regions.len()
                ),
            )
            .primary(ir.family_span, "family consumer-monolith");
            for g in &ir.region_groups {
                d = d.secondary(g.head_span, "declared here");
            }
            sink.push(
                d.note("a body with hand-rolled offsets declares one honest region covering its footprint (I-S10)")
                    .help("declare one region covering the whole layout, or use `family consumer` with a region per buffer"),
            );
        }
        _ => {}
    }
}

/// Binds the body template (E0009).
pub(super) fn template(ir: &TaskIr, sink: &mut Sink) -> Option<Binding> {
    match templates::bind(ir) {
        Ok(b) => b,
        Err(ds) => {
            sink.extend(ds);
            None
        }
    }
}

/// I-S9 / I-S10: every region the body addresses is declared, one region (a template addresses
/// no stage array), large enough and aligned for its widest access (I-S8 is the TMA case of
/// that), and every declared region is addressed. Template bodies declare what they address;
/// inline CUDA addresses a region by writing `buf.<name>`.
pub(super) fn region_use(ir: &TaskIr, binding: Option<&Binding>, sink: &mut Sink) {
    // Pipelines address their rings through channels (issue 4's backend); region-less tasks
    // with regions are E0112's business.
    if matches!(ir.family, Family::Pipeline | Family::ConsumerNoSmem) {
        return;
    }
    let Some(body_span) = ir.body.as_ref().map(BodyIr::span) else {
        return;
    };
    if let Some(b) = binding {
        for need in &b.regions {
            match ir.group_by_name(need.name) {
                None if ir.family != Family::ConsumerNoSmem => sink.push(
                    Diagnostic::error(
                        codes::REGION_USE,
                        format!(
                            "body `{}` addresses region `{}`, which the contract does not declare",
                            b.sig.name, need.name
                        ),
                    )
                    .primary(body_span, format!("uses `{}` for {}", need.name, need.what))
                    .help(match need.ring {
                        // A ring's least size is a synchronous one (W0117): suggest three slots.
                        Some(r) => format!(
                            "declare `region {} {{ bytes {}; align 1024; pack }}` (three slots of {} bytes: one computing, one in flight, one refilling; {} at the least)",
                            need.name,
                            3 * r.slot_bytes,
                            r.slot_bytes,
                            need.min_bytes
                        ),
                        None => format!(
                            "declare `region {} {{ bytes {}; align 16; pack }}` (at least {} bytes)",
                            need.name, need.min_bytes, need.min_bytes
                        ),
                    }),
                ),
                Some(g) if g.staged => sink.push(
                    Diagnostic::error(
                        codes::REGION_USE,
                        format!(
                            "body `{}` addresses region `{}` as one region, but it is a stage array",
                            b.sig.name, need.name
                        ),
                    )
                    .primary(g.head_span, "declared with `[stage]`")
                    .secondary(body_span, format!("uses `{}` for {}", need.name, need.what))
                    .help(format!("declare `region {} {{ … }}` without `[stage]`", need.name)),
                ),
                Some(g) => {
                    let size = g.members.first().map_or(0, |h| ir.regions[*h].size);
                    let (align, align_span) = g.members.first().map_or((1, g.head_span), |h| {
                        (ir.regions[*h].align, ir.regions[*h].align_span)
                    });
                    if align < need.min_align {
                        sink.push(
                            Diagnostic::error(
                                codes::REGION_USE,
                                format!("region `{}` is aligned to {align} bytes but body `{}` makes {}-byte accesses to {} there", need.name, b.sig.name, need.min_align, need.what),
                            )
                            .primary(align_span, format!("align {align}"))
                            .secondary(body_span, "the body")
                            .note("the planner starts a region at a multiple of its declared alignment only (contract doc §1.4; I-S8 is the TMA case of this rule): a narrower one can start mid-vector")
                            .help(format!("write `align {}` (or more) in `{}`", need.min_align, need.name)),
                        );
                    }
                    let at = super::ring_bytes::RingSite {
                        body: b.sig.name,
                        span: g.head_span,
                        body_span,
                        room: super::ring_bytes::RingSite::room(ir, g),
                        param: super::ring_bytes::SizeParam::of(ir, g),
                    };
                    if size < need.min_bytes {
                        sink.push(
                            Diagnostic::error(
                                codes::REGION_USE,
                                format!("region `{}` has {size} bytes but body `{}` keeps {} there, {} bytes", need.name, b.sig.name, need.what, need.min_bytes),
                            )
                            .primary(g.head_span, format!("{size} bytes"))
                            .secondary(body_span, "the body")
                            .help(match need.ring {
                                Some(r) => super::ring_bytes::short_help(&at, need, r),
                                None => format!("make `{}` at least {} bytes", need.name, need.min_bytes),
                            }),
                        );
                    } else if let Some(r) = need.ring {
                        super::ring_bytes::ring_use(sink, &at, need, r, size);
                    }
                }
                None => {}
            }
        }
        for (i, g) in ir.region_groups.iter().enumerate() {
            // A ring's region is the ring's (a template with a ring is E0011, `valid::rings`).
            let ring = ir
                .channels
                .values()
                .any(|c| matches!(c.storage, crate::ir::ChannelStorageIr::Region(x) if x == i));
            if !ring && !body_addresses(ir, None, Some(b), &g.name) {
                // A template's regions are fixed by its code: the body cannot be made to
                // address another one.
                let names: Vec<String> =
                    b.regions.iter().map(|n| format!("`{}`", n.name)).collect();
                let help = if names.is_empty() {
                    format!(
                        "remove the region: body `{}` addresses no region",
                        b.sig.name
                    )
                } else {
                    format!(
                        "remove or rename the region: body `{}` addresses {} only",
                        b.sig.name,
                        names.join(", ")
                    )
                };
                let mut d = unaddressed(g.head_span, &g.name, &format!("body `{}`", b.sig.name));
                d.help = Some(help);
                sink.push(d);
            }
        }
    } else if let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.body
    {
        let code = strip_comments_and_strings(code);
        // `buf.NAME` for a NAME that is no region: the body addresses an undeclared region.
        // Regions and member accessors, with how each is written (`buf.stats_sums()`).
        let accessors = ir.member_accessors();
        let mut known: Vec<(String, String)> = ir
            .region_groups
            .iter()
            .map(|g| (g.name.clone(), format!("buf.{}", g.name)))
            .collect();
        known.extend(accessors.iter().map(|a| (a.name(), a.call())));
        for (i, name) in buf_uses(&code) {
            let accessor = accessors.iter().find(|a| a.name() == name);
            if let Some(a) = accessor.filter(|_| ir.group_by_name(&name).is_none()) {
                // A member's accessor is a function of the view: `buf.GROUP_MEMBER()`, or
                // `buf.GROUP_MEMBER(stage)` for a stage array's member.
                let after = code[i + 4 + name.len()..].trim_start();
                let start = code_span.start + i;
                let at = crate::span::Span::new(start, start + 4 + name.len());
                let problem = if !after.starts_with('(') {
                    Some(format!("the inline CUDA body reads `buf.{name}` as a pointer, but it is the accessor of a region member"))
                } else if a.staged() && after[1..].trim_start().starts_with(')') {
                    Some(format!("the inline CUDA body calls `buf.{name}()` without a stage, but `{}` is a stage array: each stage holds its own `{}`", a.group.name, a.member.name.as_deref().unwrap_or_default()))
                } else {
                    None
                };
                if let Some(message) = problem {
                    sink.push(
                        Diagnostic::error(codes::REGION_USE, message)
                            .primary(at, "an accessor")
                            .help(format!("call it: `{}`", a.call())),
                    );
                }
                continue;
            }
            if ir.group_by_name(&name).is_some() {
                continue;
            }
            let start = code_span.start + i;
            let stage_member = name.rsplit_once('_').filter(|(g, k)| {
                ir.group_by_name(g).is_some_and(|g| g.staged)
                    && k.chars().all(|c| c.is_ascii_digit())
            });
            let help = match (
                stage_member,
                crate::diag::suggest(&name, known.iter().map(|(n, _)| n.as_str())),
            ) {
                (Some((g, k)), _) => {
                    format!("a stage array is a C array in the view: write `buf.{g}[{k}]`")
                }
                (None, Some(s)) => {
                    let written = known.iter().find(|(n, _)| n == s).map_or(s, |(_, w)| w);
                    format!("did you mean `{written}`?")
                }
                (None, None) => format!("declare `region {name} {{ bytes …; align 16; pack }}`"),
            };
            sink.push(
                Diagnostic::error(codes::REGION_USE, format!("the inline CUDA body addresses `buf.{name}`, but the contract declares no region `{name}`"))
                    .primary(crate::span::Span::new(start, start + 4 + name.len()), "no such region")
                    .help(help),
            );
        }
        for (i, g) in ir.region_groups.iter().enumerate() {
            // A helper's regions are addressed by its function, which the body calls; a
            // consumer ring's by the ring's two ends (`mpkc_ring.cuh`), which the bodies use.
            let placed = ir.helpers.iter().any(|h| h.region_groups.contains(&i));
            // (A channel of another shape is E0011, `valid::rings`: not E0110 too.)
            let ring = ir
                .channels
                .values()
                .any(|c| matches!(c.storage, crate::ir::ChannelStorageIr::Region(x) if x == i));
            if !placed && !ring && !body_addresses(ir, Some(&code), None, &g.name) {
                sink.push(unaddressed(g.head_span, &g.name, "the inline CUDA body"));
            }
        }
    }
}

/// Every declared tensor reaches the body: a template takes it, or inline CUDA names it.
pub(super) fn tensors_used(ir: &TaskIr, binding: Option<&Binding>, sink: &mut Sink) {
    if !ir.family.is_consumer_only() && ir.family != Family::Helper {
        return;
    }
    let code = match &ir.body {
        Some(BodyIr::Cuda { code, .. }) => Some(strip_comments_and_strings(code)),
        Some(BodyIr::Template { .. }) => None,
        None => return,
    };
    // A consumer ring's loader body takes tensors too (the bulk copies' sources).
    let code = match (code, &ir.loader_body) {
        (Some(c), Some(BodyIr::Cuda { code: l, .. })) => {
            Some(format!("{c}\n{}", strip_comments_and_strings(l)))
        }
        (c, _) => c,
    };
    // Grid barrier counters are taken by the generated `grid_sync` (`valid::grid` asks for its
    // calls, and rejects the counters on a per-tile task).
    for (h, t) in ir.tensors.iter() {
        if t.role() == Some(crate::ir::TensorRole::GridBarrier) {
            continue;
        }
        if !body_takes(code.as_deref(), binding, h, &t.name) {
            let note = if ir.family == crate::ir::Family::Helper {
                "a helper's tensor is a parameter of its function: every caller passes a pointer the function never reads or writes"
            } else {
                "every tensor is an input_ptrs/output_ptrs slot of the registration: an unused one still costs a pointer and wiring (I-H1)"
            };
            sink.push(
                Diagnostic::error(
                    codes::BODY_MISMATCH,
                    format!(
                        "tensor `{}` is declared but the body never takes it",
                        t.name
                    ),
                )
                .primary(t.span, "unused")
                .note(note)
                .help("pass it to the body, or remove it"),
            );
        }
    }
}

/// Whether the body takes tensor `h` (named `name`): a template binds it, or inline CUDA
/// (`code`, comments and strings blanked) names it as a word; true without either (no body to
/// ask). The rule of [`tensors_used`] and of the coverage check (`valid::coverage`).
pub(super) fn body_takes(
    code: Option<&str>,
    binding: Option<&Binding>,
    h: crate::ir::TensorHandle,
    name: &str,
) -> bool {
    match (code, binding) {
        (Some(c), _) => names_word(c, name),
        (None, Some(b)) => b.tensors.iter().any(|(_, x)| *x == h),
        (None, None) => true,
    }
}

/// The inline CUDA bodies of `ir` (its `body cuda`, a consumer ring's `body loader cuda`): each
/// one's text and that text's span. A body template is none.
pub(super) fn inline_bodies(ir: &TaskIr) -> impl Iterator<Item = (&str, crate::span::Span)> {
    [&ir.body, &ir.loader_body]
        .into_iter()
        .flatten()
        .filter_map(|b| match b {
            BodyIr::Cuda {
                code, code_span, ..
            } => Some((code.as_str(), *code_span)),
            BodyIr::Template { .. } => None,
        })
}

/// Whether an inline body of `ir` names `name` as a word ([`names_word`]; comments and
/// literals excluded).
pub(super) fn bodies_name(ir: &TaskIr, name: &str) -> bool {
    inline_bodies(ir).any(|(code, _)| names_word(&strip_comments_and_strings(code), name))
}

/// Whether `code` names `name` as a word (not a member `.name`, not part of a longer name).
pub(super) fn names_word(code: &str, name: &str) -> bool {
    word_offsets(code, name).next().is_some()
}

/// The byte offsets in `code` where `name` stands as a word, in order: the rule of
/// [`names_word`] (not a member `.name`, not part of a longer name).
pub(super) fn word_offsets<'a>(code: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(name).map(|(i, _)| i).filter(move |&i| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].chars().next();
        !name.is_empty()
            && !before.is_some_and(|x| x.is_ascii_alphanumeric() || x == '_' || x == '.')
            && !after.is_some_and(|x| x.is_ascii_alphanumeric() || x == '_')
    })
}

/// [`word_offsets`] of `name` that are no member of something else (`x->name`, `ns::name`):
/// the uses of a name in the body's own scope.
pub(super) fn unqualified_offsets<'a>(
    code: &'a str,
    name: &'a str,
) -> impl Iterator<Item = usize> + 'a {
    word_offsets(code, name)
        .filter(move |&i| !code[..i].ends_with("->") && !code[..i].ends_with("::"))
}

/// Whether the body addresses region group `name`: a template's binding needs it, or inline
/// CUDA (`code`, comments and strings blanked) writes `buf.NAME`. The rule of [`region_use`]'s
/// unaddressed regions and of the coverage check (`valid::coverage`).
pub(super) fn body_addresses(
    ir: &TaskIr,
    code: Option<&str>,
    binding: Option<&Binding>,
    name: &str,
) -> bool {
    match (binding, code) {
        (Some(b), _) => b.regions.iter().any(|n| n.name == name),
        (None, Some(c)) => buf_uses(c)
            .iter()
            .any(|(_, n)| addressed_group(ir, n) == Some(name)),
        (None, None) => false,
    }
}

/// The region group a view member `buf.NAME` reaches: the group NAME, or for an accessor of a
/// named member (`buf.REGION_MEMBER()`, `back::consumer`'s held accessors) its region.
pub(super) fn addressed_group<'a>(ir: &'a TaskIr, used: &str) -> Option<&'a str> {
    if let Some(g) = ir.group_by_name(used) {
        return Some(g.name.as_str());
    }
    ir.member_accessors()
        .into_iter()
        .find(|a| a.name() == used)
        .map(|a| a.group.name.as_str())
}

/// Every call of `name` in `code` (comments and strings blanked) as C++ lexes it: the word
/// `name` (not the tail of a longer identifier or a member after `.`/`->`), optional
/// whitespace, `(`. Returns (offset of the word, offset just after the `(`).
pub(super) fn calls_of(code: &str, name: &str) -> Vec<(usize, usize)> {
    code.match_indices(name)
        .filter(|(i, _)| {
            !code[..*i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .filter_map(|(i, _)| {
            let rest = &code[i + name.len()..];
            let ws = rest.len() - rest.trim_start().len();
            rest[ws..]
                .starts_with('(')
                .then_some((i, i + name.len() + ws + 1))
        })
        .collect()
}

/// The top-level comma-separated arguments of a call whose text after `(` is `rest` (up to its
/// matching `)`; brackets and parentheses nest).
pub(super) fn call_args(rest: &str) -> Vec<String> {
    let mut args = vec![String::new()];
    let mut depth = 0usize;
    for c in rest.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => return args,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                args.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(a) = args.last_mut() {
            a.push(c);
        }
    }
    args
}

/// `(offset, NAME)` of every `buf.NAME` in `code` (comments and strings already blanked).
fn buf_uses(code: &str) -> Vec<(usize, String)> {
    code.match_indices("buf.")
        .filter(|(i, _)| {
            !code[..*i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
        .map(|(i, _)| {
            (
                i,
                code[i + 4..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>(),
            )
        })
        .filter(|(_, n)| !n.is_empty())
        .collect()
}

/// `code` with comments and string/char literals (as C++ lexes them, [`crate::front::cuda`])
/// replaced by spaces (byte offsets and line breaks kept), so that scans for `buf.NAME` or
/// `__syncthreads` see only code.
pub(super) fn strip_comments_and_strings(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    for r in crate::front::cuda::comments_and_literals(code) {
        for x in &mut out[r] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

fn unaddressed(span: crate::span::Span, name: &str, who: &str) -> Diagnostic {
    Diagnostic::error(codes::REGION_USE, format!("region `{name}` is declared but {who} never addresses it"))
        .primary(span, "never addressed")
        .note("a declared region takes planner pages; the device must address every region it declares (I-S10)")
        .help(format!("remove the region, or address it as `buf.{name}`"))
}
