//! `use HELPER [from "FILE"] [(PARAM = VALUE, …)]` (docs/language.md, "Helpers"): finds the
//! helper (family E) in the file the driver parsed ([`super::HelperFile`]), lowers it with the
//! params the `use` line binds, and places its regions and named barriers in the using task as
//! `<helper>_<name>`, spanned by the `use` line: the planner, the SMEM budget (E0103 and its
//! neighbours), the region count and the barrier registry see them as the task's own, and their
//! diagnostics point at the `use` line. Misuse: E0024 (no such helper), E0025 (a task that
//! cannot host it), E0026 (params), E0027 (the body's call).

use super::collect::{self, Collected};
use super::eval::Num;
use super::lower::{lower_instance, Cx};
use super::{HelperFile, HelperFileProblem, SemaOptions};
use crate::diag::{codes, Diagnostic, Severity, Sink};
use crate::front::ast;
use crate::ir::*;

/// Lowers every `use` of the task (after its regions, barriers and body).
pub(super) fn uses(cx: &mut Cx<'_>, c: &Collected<'_>, opts: &SemaOptions) {
    for u in &c.uses {
        if let Some(h) = one(cx, u, opts) {
            cx.ir.helpers.push(h);
        }
    }
}

fn one(cx: &mut Cx<'_>, u: &ast::Use, opts: &SemaOptions) -> Option<HelperUseIr> {
    let name = &u.name.node;
    host(cx, u)?;
    let written = u.from.as_ref().map(|f| f.node.as_str());
    let file = find_file(cx, u, opts, written)?;
    let task = find_task(cx, u, file)?;
    let mut scratch = Sink::new();
    let hc = collect::collect(task, &mut scratch);
    let family = hc
        .family
        .and_then(|f| Family::parse(&f.node))
        .unwrap_or(Family::Consumer);
    if family != Family::Helper {
        cx.report(
            Diagnostic::error(
                codes::HELPER_UNKNOWN,
                format!(
                    "`{name}` is not a helper: it is a `{}` task",
                    family.as_str()
                ),
            )
            .primary(u.name.span, "not a family helper task")
            .note(format!(
                "`{name}` is declared in {}; a task runs from its own TaskDesc, only a `family helper` generates a function another body calls",
                file.path
            ))
            .help(format!(
                "declare `{name}` `family helper`, or use a helper instead"
            )),
        );
        return None;
    }
    let overrides = bind_params(cx, u, &hc)?;
    let hopts = SemaOptions {
        overrides,
        instance: None,
        ..SemaOptions::default()
    };
    let helper = lower_instance(task, &hc, None, &hopts, &mut scratch);
    if let Some(first) = scratch
        .into_sorted()
        .into_iter()
        .find(|d| d.severity == Severity::Error)
    {
        let bound: Vec<String> = hopts
            .overrides
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        cx.report(
            Diagnostic::error(
                codes::HELPER_PARAMS,
                format!("helper `{name}` does not lower with the params this `use` binds"),
            )
            .primary(u.span, if bound.is_empty() {
                "at the helper's own values".to_string()
            } else {
                format!("with {}", bound.join(", "))
            })
            .note(format!(
                "{} (error[{}] in {})",
                // The binding is passed as an override: its wording is the command line's.
                first
                    .message
                    .strip_prefix("`--param ")
                    .and_then(|m| m.split_once("`: "))
                    .map_or(first.message.as_str(), |(_, rest)| rest),
                first.code,
                file.path
            ))
            .help(format!(
                "give `{name}` params its ranges admit, or fix the helper (`mpkc check {}` reports it at its own values)",
                file.path
            )),
        );
        return None;
    }
    if !helper.regions.is_empty()
        && matches!(
            cx.ir.family,
            Family::ConsumerNoSmem | Family::ConsumerMonolith
        )
    {
        cx.report(
            Diagnostic::error(
                codes::HELPER_HOST,
                format!(
                    "a `{}` task cannot host helper `{name}`, which takes {} SMEM region{}",
                    cx.ir.family.as_str(),
                    helper.regions.len(),
                    if helper.regions.len() == 1 { "" } else { "s" }
                ),
            )
            .primary(u.span, "the helper's regions would join this task's plan")
            .secondary(cx.ir.family_span, format!("family {}", cx.ir.family.as_str()))
            .note("a consumer-no-smem task has no dynamic SMEM (I-S11) and a consumer-monolith task exactly one region (I-S10)")
            .help("declare `family consumer`, whose planner regions the helper's join"),
        );
        return None;
    }
    // A helper that declares its targets is code for those only (its body may use an
    // instruction one of them lacks): each target of the using task must be among them. A helper
    // without a `targets` item follows its callers' targets.
    if hc.targets.is_some() {
        if let Some(t) = cx
            .ir
            .targets
            .iter()
            .find(|t| !helper.targets.iter().any(|h| h.target == t.target))
        {
            let declared: Vec<&str> = helper.targets.iter().map(|h| h.target.as_str()).collect();
            let (target, span) = (t.target.as_str(), t.span);
            cx.report(
                Diagnostic::error(
                    codes::HELPER_HOST,
                    format!("helper `{name}` is declared for {} only, but this task builds for {target}", declared.join(", ")),
                )
                .primary(u.span, format!("its code would be compiled into the {target} kernel"))
                .secondary(span, format!("{target} here"))
                .note(format!(
                    "`{name}` declares `targets {}` in {}: a helper's code is emitted into the kernel of every target of each task that uses it",
                    declared.join(", "),
                    file.path
                ))
                .help(format!(
                    "add {target} to `{name}`'s `targets` if its code serves it, or drop {target} from this task's"
                )),
            );
            return None;
        }
    }
    Some(place(cx, u, file, helper))
}

/// E0025 for a task that cannot host a helper: a helper (helpers do not nest), a pipeline, or a
/// body template (neither has an inline body to call it from).
fn host(cx: &mut Cx<'_>, u: &ast::Use) -> Option<()> {
    let name = &u.name.node;
    let fam = cx.ir.family;
    let (msg, note, help) = if fam == Family::Helper && *name == cx.ir.name {
        (
            format!("helper `{name}` uses itself"),
            "a helper's function is inlined into its caller's kernel: a helper calling itself would recurse without end",
            "remove the `use`".to_string(),
        )
    } else if fam == Family::Helper {
        (
            format!("helper `{}` uses helper `{name}`: helpers do not nest", cx.ir.name),
            "a helper's code, regions and barriers are placed in the task that uses it; only a consumer task's inline body calls one",
            format!("use `{name}` from the consumer task that uses `{}`, and pass what it needs", cx.ir.name),
        )
    } else if fam == Family::Pipeline {
        (
            format!("a pipeline task cannot host helper `{name}`"),
            "a pipeline's roles and epilogue are generated from its channels and `epilogue` item; it has no inline body to call a helper from",
            "call the helper from a consumer task's `body cuda { … }` that runs after this one".to_string(),
        )
    } else if let Some(BodyIr::Template { name: t, .. }) = &cx.ir.body {
        (
            format!("body template `{t}` cannot call helper `{name}`"),
            "a body template is stdlib code with a fixed set of formals; only an inline `body cuda { … }` calls a helper by name",
            "write the body as `body cuda { … }` and call the helper there".to_string(),
        )
    } else {
        return Some(());
    };
    cx.report(
        Diagnostic::error(codes::HELPER_HOST, msg)
            .primary(u.span, "used here")
            .secondary(cx.ir.family_span, format!("family {}", fam.as_str()))
            .note(note)
            .help(help),
    );
    None
}

fn find_file<'o>(
    cx: &mut Cx<'_>,
    u: &ast::Use,
    opts: &'o SemaOptions,
    written: Option<&str>,
) -> Option<&'o HelperFile> {
    let found = opts
        .helper_files
        .iter()
        .find(|f| f.from.as_deref() == written);
    if found.is_none() {
        let faulty = opts
            .helper_file_errors
            .iter()
            .find(|e| Some(e.from.as_str()) == written);
        if let (Some(f), Some(e)) = (&u.from, faulty) {
            let path = &e.path;
            let d = match &e.problem {
                HelperFileProblem::DoesNotParse(first) => Diagnostic::error(
                    codes::HELPER_UNKNOWN,
                    format!("helper file `{}` does not parse", f.node),
                )
                .primary(f.span, format!("{path}: {first}"))
                .note(format!(
                    "found {path}, but a file that does not parse declares no helper mpkc can read"
                ))
                .help(format!("fix {path} (`mpkc check {path}` shows every error)")),
                HelperFileProblem::NotAFile => Diagnostic::error(
                    codes::HELPER_UNKNOWN,
                    format!("helper file `{}` is not a regular file", f.node),
                )
                .primary(f.span, format!("{path} is a directory or a special file"))
                .help("name an `.mpk` file that declares the helper, relative to the contract's directory"),
                HelperFileProblem::Unreadable(why) => Diagnostic::error(
                    codes::HELPER_UNKNOWN,
                    format!("helper file `{}` cannot be read", f.node),
                )
                .primary(f.span, format!("{path}: {why}"))
                .help(format!("make {path} a readable UTF-8 `.mpk` file, or name another")),
            };
            cx.report(d);
        } else if let Some(f) = &u.from {
            cx.report(
                Diagnostic::error(
                    codes::HELPER_UNKNOWN,
                    format!("helper file `{}` is missing", f.node),
                )
                .primary(f.span, "no contract here")
                .note("looked for it relative to the contract's directory, then among the embedded stdlib contracts by that path and as written")
                .help(match stdlib_helper_path(&u.name.node) {
                    Some(p) => format!("`{}` is a stdlib helper: `from \"{p}\"` finds it from any directory", u.name.node),
                    None => "name an `.mpk` file that declares the helper, relative to the contract's directory, or a stdlib one by its stdlib path (e.g. `stdlib/dsv3/fp8_quant_1x128.mpk`)".to_string(),
                }),
            );
        }
    }
    found
}

/// The stdlib path of the embedded contract declaring helper `name` (`task NAME {` with
/// `family helper`), if one does.
fn stdlib_helper_path(name: &str) -> Option<&'static str> {
    let head = format!("task {name} {{");
    crate::driver::stdlib::CONTRACTS
        .iter()
        .find(|(_, t)| t.contains(&head) && t.contains("family helper"))
        .map(|(p, _)| *p)
}

fn find_task<'f>(cx: &mut Cx<'_>, u: &ast::Use, file: &'f HelperFile) -> Option<&'f ast::Task> {
    let name = &u.name.node;
    let found = file.ast.tasks.iter().find(|t| t.name.node == *name);
    if found.is_none() {
        let helpers: Vec<&str> = file
            .ast
            .tasks
            .iter()
            .filter(|t| {
                t.items
                    .iter()
                    .any(|i| matches!(i, ast::Item::Family(f) if f.node == Family::Helper.as_str()))
            })
            .map(|t| t.name.node.as_str())
            .collect();
        let help = match crate::diag::suggest(name, helpers.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None if helpers.is_empty() => format!(
                "{} declares no helper; declare `task {name} {{ family helper … }}` there",
                file.path
            ),
            None => format!(
                "helpers of {}: {}",
                file.path,
                helpers
                    .iter()
                    .map(|h| format!("`{h}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        cx.report(
            Diagnostic::error(
                codes::HELPER_UNKNOWN,
                format!("cannot find helper `{name}` in {}", file.path),
            )
            .primary(u.name.span, "no task of this name")
            .help(help),
        );
    }
    found
}

/// The `use` line's settings as `--param`-style overrides of the helper's params: each value is
/// evaluated in the using task (its params may appear) and checked by the helper's own param
/// rules when it is lowered.
fn bind_params(cx: &mut Cx<'_>, u: &ast::Use, hc: &Collected<'_>) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut ok = true;
    for (n, v) in &u.sets {
        if !hc.params.iter().any(|p| p.name.node == n.node) {
            let names: Vec<&str> = hc.params.iter().map(|p| p.name.node.as_str()).collect();
            let help = match crate::diag::suggest(&n.node, names.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None if names.is_empty() => {
                    "the helper declares no param: remove the setting".into()
                }
                None => format!(
                    "its params: {}",
                    names
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            cx.report(
                Diagnostic::error(
                    codes::HELPER_PARAMS,
                    format!("helper `{}` has no param `{}`", u.name.node, n.node),
                )
                .primary(n.span, "not a param of the helper")
                .help(help),
            );
            ok = false;
            continue;
        }
        let text = match v {
            ast::Value::Bool(b, _) => b.to_string(),
            ast::Value::Expr(e) => match cx.env().num(e) {
                Ok(Num::Int(i)) => i.to_string(),
                Ok(Num::Float(f)) => format!("{f:?}"),
                Err(d) => {
                    cx.report(d);
                    ok = false;
                    continue;
                }
            },
        };
        out.push((n.node.clone(), text));
    }
    ok.then_some(out)
}

/// Places the helper's regions and barriers in the using task.
fn place(cx: &mut Cx<'_>, u: &ast::Use, file: &HelperFile, helper: TaskIr) -> HelperUseIr {
    let name = u.name.node.clone();
    clashes(cx, u, &helper);
    let mut regions = Vec::new();
    let mut region_groups = Vec::new();
    for g in &helper.region_groups {
        let group = cx.ir.region_groups.len();
        let mut members = Vec::new();
        for h in &g.members {
            let r = &helper.regions[*h];
            let placed = RegionIr {
                name: HelperUseIr::placed_name(&name, &r.name),
                group,
                span: u.span,
                bytes_span: u.span,
                // The helper's own param, not one of this task's: the `use` binds it.
                bytes_param: None,
                align_span: u.span,
                pages_span: r.pages_span.map(|_| u.span),
                holds_span: r.holds_span.map(|_| u.span),
                holds: r
                    .holds
                    .iter()
                    .map(|m| HeldIr {
                        span: u.span,
                        ..m.clone()
                    })
                    .collect(),
                ..r.clone()
            };
            let handle = cx.ir.regions.append(placed);
            members.push(handle);
            regions.push(handle);
        }
        cx.ir.region_groups.push(RegionGroup {
            name: HelperUseIr::placed_name(&name, &g.name),
            members,
            staged: g.staged,
            span: u.span,
            head_span: u.span,
        });
        region_groups.push(group);
    }
    let mut barriers = Vec::new();
    for b in helper.barriers.values() {
        let placed = BarrierIr {
            name: HelperUseIr::placed_name(&name, &b.name),
            span: u.span,
            id_span: u.span,
            threads_span: u.span,
            ..b.clone()
        };
        barriers.push(cx.ir.barriers.append(placed));
    }
    let body_line = match &helper.body {
        Some(BodyIr::Cuda { code_span, .. }) => {
            1 + file.text[..code_span.start.min(file.text.len())]
                .bytes()
                .filter(|b| *b == b'\n')
                .count()
        }
        _ => 1,
    };
    HelperUseIr {
        name,
        span: u.span,
        path: file.path.clone(),
        body_line,
        text: file.text.clone(),
        helper: Box::new(helper),
        regions,
        region_groups,
        barriers,
    }
}

/// E0003 for a placed name (`<helper>_<name>`) the using task declares itself, or that an
/// earlier `use` already placed (`a`'s `b_c` and `a_b`'s `c` are both `a_b_c`).
fn clashes(cx: &mut Cx<'_>, u: &ast::Use, helper: &TaskIr) {
    let name = &u.name.node;
    let mut clash = |kind: &str,
                     mine: &str,
                     own: String,
                     span: crate::span::Span,
                     by: Option<String>| {
        let (label, help) = match by {
            Some(other) => {
                let theirs = own.strip_prefix(&format!("{other}_")).unwrap_or(&own);
                (
                    format!("helper `{other}` placed its {kind} `{theirs}` here as `{own}`"),
                    format!("rename {kind} `{mine}` of helper `{name}` or {kind} `{theirs}` of helper `{other}`: a helper's {kind} is placed as `<helper>_<{kind}>`"),
                )
            }
            None => (
                "declared here".to_string(),
                format!("rename this task's {kind} `{own}`"),
            ),
        };
        cx.sink.push(
            Diagnostic::error(
                codes::DUPLICATE,
                format!("{kind} `{own}` is declared more than once"),
            )
            .primary(
                u.span,
                format!("helper `{name}` places its {kind} here as `{own}`"),
            )
            .secondary(span, label)
            .help(help),
        );
    };
    for g in &helper.region_groups {
        let own = HelperUseIr::placed_name(name, &g.name);
        if let Some(i) = cx.ir.region_groups.iter().position(|g| g.name == own) {
            let by = cx
                .ir
                .helpers
                .iter()
                .find(|h| h.region_groups.contains(&i))
                .map(|h| h.name.clone());
            clash("region", &g.name, own, cx.ir.region_groups[i].head_span, by);
        }
    }
    for b in helper.barriers.values() {
        let own = HelperUseIr::placed_name(name, &b.name);
        if let Some((h, x)) = cx.ir.barriers.iter().find(|(_, x)| x.name == own) {
            let by = cx
                .ir
                .helpers
                .iter()
                .find(|u| u.barriers.contains(&h))
                .map(|u| u.name.clone());
            clash("barrier", &b.name, own, x.span, by);
        }
    }
}
