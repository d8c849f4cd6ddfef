//! Family and body rules: what each family may declare, the template binding (E0009), and the
//! regions the body addresses (I-S9, I-S10, I-S11).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, Family, TaskIr};
use crate::templates::{self, Binding};

/// Items a family may not declare, and items it needs.
pub(super) fn family_items(ir: &TaskIr, sink: &mut Sink) {
    let fam = ir.family;
    if fam.is_consumer_only() {
        let not_here = |what: &str, span| {
            Diagnostic::error(codes::FAMILY_ITEM, format!("a `{}` task has no {what}", fam.as_str()))
                .primary(span, format!("{what} declared here"))
                .secondary(ir.family_span, format!("family {}", fam.as_str()))
                .help("declare `family pipeline` for loader/launcher rings and MMAs, or remove the item")
        };
        for ch in ir.channels.values() {
            sink.push(not_here("channels", ch.span));
        }
        if let Some(m) = &ir.mma {
            sink.push(not_here("MMA", m.span));
        }
        if let Some((_, s)) = ir.tmem_cols {
            sink.push(not_here("TMEM", s));
        }
    }
    if fam == Family::Pipeline {
        if ir.mma.is_none() {
            sink.push(
                Diagnostic::error(codes::MISSING, format!("pipeline task `{}` declares no MMA", ir.name))
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
                format!("a `consumer-no-smem` task declares {} region{}", ir.regions.len(), if ir.regions.len() == 1 { "" } else { "s" }),
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
                format!("a `consumer-monolith` task declares {} regions; it must declare exactly one", ir.regions.len()),
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

/// I-S9 / I-S10: every region the body addresses is declared and large enough, and every
/// declared region is addressed. Template bodies declare what they address; inline CUDA
/// addresses a region by writing `buf.<name>`.
pub(super) fn region_use(ir: &TaskIr, binding: Option<&Binding>, sink: &mut Sink) {
    // Pipelines address their rings through channels (issue 4's backend); region-less tasks
    // with regions are E0112's business.
    if matches!(ir.family, Family::Pipeline | Family::Helper | Family::ConsumerNoSmem) {
        return;
    }
    let body_span = match &ir.body {
        Some(BodyIr::Template { span, .. }) | Some(BodyIr::Cuda { span, .. }) => *span,
        None => return,
    };
    if let Some(b) = binding {
        for need in &b.regions {
            match ir.group_by_name(need.name) {
                None if ir.family != Family::ConsumerNoSmem => sink.push(
                    Diagnostic::error(codes::REGION_USE, format!("body `{}` addresses region `{}`, which the contract does not declare", b.sig.name, need.name))
                        .primary(body_span, format!("uses `{}` for {}", need.name, need.what))
                        .help(format!("declare `region {} {{ bytes {}; align 16; pack }}` (at least {} bytes)", need.name, need.min_bytes, need.min_bytes)),
                ),
                Some(g) => {
                    let size = g.members.first().map_or(0, |h| ir.regions[*h].size);
                    if size < need.min_bytes {
                        sink.push(
                            Diagnostic::error(
                                codes::REGION_USE,
                                format!("region `{}` has {size} bytes but body `{}` keeps {} there, {} bytes", need.name, b.sig.name, need.what, need.min_bytes),
                            )
                            .primary(g.head_span, format!("{size} bytes"))
                            .secondary(body_span, "the body")
                            .help(format!("make `{}` at least {} bytes", need.name, need.min_bytes)),
                        );
                    }
                }
                None => {}
            }
        }
        for g in &ir.region_groups {
            if !b.regions.iter().any(|n| n.name == g.name) {
                sink.push(unaddressed(g.head_span, &g.name, &format!("body `{}`", b.sig.name)));
            }
        }
    } else if let Some(BodyIr::Cuda { code, code_span, .. }) = &ir.body {
        // `buf.NAME` for a NAME that is no region: the body addresses an undeclared region.
        for (i, _) in code.match_indices("buf.") {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            let name: String = code[i + 4..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() && ir.group_by_name(&name).is_none() {
                let start = code_span.start + i;
                let known: Vec<&str> = ir.region_groups.iter().map(|g| g.name.as_str()).collect();
                let help = match crate::diag::suggest(&name, known.iter().copied()) {
                    Some(s) => format!("did you mean `buf.{s}`?"),
                    None => format!("declare `region {name} {{ bytes …; align 16; pack }}`"),
                };
                sink.push(
                    Diagnostic::error(codes::REGION_USE, format!("the inline CUDA body addresses `buf.{name}`, but the contract declares no region `{name}`"))
                        .primary(crate::span::Span::new(start, start + 4 + name.len()), "no such region")
                        .help(help),
                );
            }
        }
        for g in &ir.region_groups {
            let needle = format!("buf.{}", g.name);
            let used = code.match_indices(&needle).any(|(i, _)| {
                let next = code[i + needle.len()..].chars().next();
                !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            if !used {
                sink.push(unaddressed(g.head_span, &g.name, "the inline CUDA body"));
            }
        }
    }
}

fn unaddressed(span: crate::span::Span, name: &str, who: &str) -> Diagnostic {
    Diagnostic::error(codes::REGION_USE, format!("region `{name}` is declared but {who} never addresses it"))
        .primary(span, "never addressed")
        .note("a declared region takes planner pages; the device must address every region it declares (I-S10)")
        .help(format!("remove the region, or address it as `buf.{name}`"))
}
