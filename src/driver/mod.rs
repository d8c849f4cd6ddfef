//! The driver: runs the stages over contract sources, finds and runs nvcc, and writes outputs.

pub mod bench;
pub mod build;
pub mod cache;
pub mod cancel;
pub mod cc_nvcc;
pub mod chain;
mod clash;
mod derived;
pub mod fingerprint;
pub mod helpers;
pub mod in_place;
pub mod input;
mod levers;
pub mod nvcc;
pub mod outdir;
pub mod plan_view;
pub mod predecessors;
mod ref_signature;
pub mod reference;
mod reject;
pub mod sass;
pub mod sass_lint;
pub mod select;
mod setmaxnreg;
pub mod stdlib;
mod task_types;
pub mod tune;
pub mod verify;

pub use clash::unit_collisions;
pub use derived::{derived_sources, Derived};
pub use levers::lever_agreement;
pub use setmaxnreg::setmaxnreg_agreement;
pub use task_types::task_type_clashes;

use crate::diag::{Diagnostic, Severity, Sink};
use crate::front;
use crate::sema::{self, SemaOptions};
use crate::valid::{self, CheckOptions, CheckedTask};

/// A contract source: the path as the user gave it (or `stdlib/<file>`) and its text.
#[derive(Clone, Debug)]
pub struct Source {
    /// Display path.
    pub path: String,
    /// Contents.
    pub text: String,
}

/// The result of checking one source.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The source.
    pub source: Source,
    /// Diagnostics in report order.
    pub diags: Vec<Diagnostic>,
    /// The instances that passed every rule.
    pub tasks: Vec<CheckedTask>,
    /// Instances that lowered cleanly but failed a rule (for `plan` to show what MPK would do).
    pub rejected: Vec<crate::ir::TaskIr>,
    /// For a contract mpkc derived (a split-K pipeline's reduce task): where it comes from.
    /// Its diagnostics are then reported in the parent's [`Checked`], not here.
    pub derived: Option<Derived>,
}

impl Checked {
    /// What the generated files say of this contract: its path, hash and lines, and, for a
    /// derived contract, the task its units register under in MPK (the wiring snippet's).
    pub fn contract_info(&self) -> crate::back::ContractInfo {
        let mut info = crate::back::ContractInfo::new(&self.source.path, &self.source.text);
        info.derived_task = self.derived.as_ref().map(|d| d.task.clone());
        info
    }

    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }

    /// The first error, as `CODE: message`, or `None` when none is an error.
    pub fn first_error(&self) -> Option<String> {
        self.diags
            .iter()
            .find(|d| d.is_error())
            .map(|d| format!("{}: {}", d.code, d.message))
    }

    /// The source a diagnostic about this contract is shown in: the parent's file for a derived
    /// contract (see [`Checked::attribute`]), else its own.
    pub fn display_source(&self) -> &Source {
        self.derived.as_ref().map_or(&self.source, |d| &d.parent)
    }

    /// `d`, found in this contract, as shown in [`Checked::display_source`]: unchanged for a
    /// file, re-attributed to the parent instance for a derived contract.
    pub fn attribute(&self, d: Diagnostic) -> Diagnostic {
        match &self.derived {
            Some(origin) => origin.attribute(d, &self.source),
            None => d,
        }
    }
}

/// `diags` in report order (source position, then code), duplicates removed.
fn sorted(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut sink = Sink::new();
    sink.extend(diags);
    sink.into_sorted()
}

/// Parses, lowers and checks every task instance of `source`.
pub fn check_source(
    source: &Source,
    sema_opts: &SemaOptions,
    check_opts: &CheckOptions,
) -> Checked {
    check_parsed(
        source,
        front::parse_file(&source.text).as_ref(),
        sema_opts,
        check_opts,
    )
}

/// [`check_source`] on a parse the caller already has (the language server keeps the AST).
pub fn check_parsed(
    source: &Source,
    parsed: Result<&front::ast::File, &Vec<Diagnostic>>,
    sema_opts: &SemaOptions,
    check_opts: &CheckOptions,
) -> Checked {
    let mut sink = Sink::new();
    let mut tasks = Vec::new();
    let mut rejected = Vec::new();
    let mut not_clean = 0usize;
    match parsed {
        Err(ds) => sink.extend(ds.iter().cloned()),
        Ok(ast) => {
            let with_helpers;
            let sema_opts = if ast.tasks.iter().any(|t| {
                t.items
                    .iter()
                    .any(|i| matches!(i, front::ast::Item::Use(_)))
            }) {
                let found = helpers::helper_files(source, ast);
                with_helpers = SemaOptions {
                    helper_files: found.files,
                    helper_file_errors: found.file_errors,
                    ..sema_opts.clone()
                };
                &with_helpers
            } else {
                sema_opts
            };
            // Instances of one contract often share their protocol (only sizes differ): one
            // that passed the model check proves the others with the same key, and so do the
            // values of its param ranges checked after it.
            let mut proven: Vec<String> = Vec::new();
            // Tasks already warned of ranges past the corners checked (W0016), once each.
            let mut unjoined_warned: Vec<String> = Vec::new();
            let lowered_all = sema::lower_file(ast, sema_opts, &mut sink);
            not_clean = lowered_all.iter().filter(|l| !l.clean).count();
            // Each clean instance's param-range ends, lowered once: the instance is checked at
            // them (`range_ends_hold`), and they are builds of the task E0107's fixes must hold
            // for (`CheckOptions::siblings`).
            let range_ends: Vec<sema::RangeEnds> = lowered_all
                .iter()
                .map(|l| {
                    if l.clean {
                        sema::lower_range_ends(ast, sema_opts, &l.ir)
                    } else {
                        sema::RangeEnds::default()
                    }
                })
                .collect();
            let siblings = siblings_by_task(&lowered_all, &range_ends);
            // W0118: a `pack` no build of a task packs (its instances, its range values).
            let mut tasks_built: Vec<&String> = siblings.keys().collect();
            tasks_built.sort();
            for t in tasks_built {
                sink.extend(valid::pack_no_effect(&siblings[t]));
            }
            for (mut lowered, ends) in lowered_all.into_iter().zip(range_ends) {
                if cancel::requested() {
                    break;
                }
                let call = reference::Call::of(&lowered.ir, lowered.clean);
                // A reference that cannot be used (E0018) rejects the instance (`verify` has
                // nothing to run it against, and the summary must not count it as clean beside
                // its error), but the rules still run: its other errors are reported with it.
                let mut unusable_reference = false;
                if let Some(r) = &mut lowered.ir.reference {
                    if let Err(d) = reference::resolve(&source.path, r, &call) {
                        sink.push(d);
                        unusable_reference = true;
                    }
                }
                if !lowered.clean {
                    continue;
                }
                let key = valid::model_key(&lowered.ir);
                let opts = CheckOptions {
                    proven_models: std::sync::Arc::new(proven.clone()),
                    siblings: siblings.get(&lowered.ir.name).cloned().unwrap_or_default(),
                    ..check_opts.clone()
                };
                let checked = valid::check(lowered.ir.clone(), &opts, &mut sink);
                if checked.is_some() && !proven.contains(&key) {
                    proven.push(key);
                }
                match checked {
                    Some(t) if unusable_reference => rejected.push(t.ir),
                    Some(t)
                        if range_ends_hold(
                            ends,
                            &opts,
                            &t.ir,
                            &mut proven,
                            &mut unjoined_warned,
                            &mut sink,
                        ) =>
                    {
                        tasks.push(t)
                    }
                    Some(t) => rejected.push(t.ir),
                    None => rejected.push(lowered.ir),
                }
            }
        }
    }
    if !cancel::requested() {
        if let Some(d) = unexplained_rejection(&sink, not_clean, rejected.len()) {
            sink.push(d);
        }
    }
    let mut diags = sink.into_sorted();
    // Every consumer (the CLI's renderers, the language server) gets whole characters.
    for d in &mut diags {
        d.widen_to_chars(&source.text);
    }
    Checked {
        source: source.clone(),
        diags,
        tasks,
        rejected,
        derived: None,
    }
}

/// E0030 when instances were rejected (`not_clean` at lowering, `rejected` by a rule) or
/// follow-on errors dropped, yet `sink` holds no error: the cause went unreported, and without
/// this the file would check clean (exit 0) while its rejected instances generate nothing.
fn unexplained_rejection(sink: &Sink, not_clean: usize, rejected: usize) -> Option<Diagnostic> {
    let dropped = sink.suppressed();
    if sink.as_slice().iter().any(Diagnostic::is_error)
        || (dropped == 0 && not_clean == 0 && rejected == 0)
    {
        return None;
    }
    Some(
        Diagnostic::error(
            crate::diag::codes::INTERNAL,
            format!(
                "internal error: {} task instance{} rejected and {dropped} follow-on error{} dropped, but no error was reported",
                not_clean + rejected,
                if not_clean + rejected == 1 { "" } else { "s" },
                if dropped == 1 { "" } else { "s" },
            ),
        )
        .primary(crate::span::Span::new(0, 0), "in this file")
        .note("a bug in mpkc, not in the contract: the checker lost the reason it rejected something")
        .help("please report it with this contract; meanwhile, look for a name that refers to itself or to a rejected declaration"),
    )
}

/// Per task, every build of it the contract's text serves ([`CheckOptions::siblings`]): each
/// instance that lowered clean and its param-range ends (`range_ends`, one per instance) that
/// lowered clean.
fn siblings_by_task(
    lowered: &[sema::Lowered],
    range_ends: &[sema::RangeEnds],
) -> std::collections::HashMap<String, std::sync::Arc<Vec<crate::ir::TaskIr>>> {
    let mut by_task: std::collections::HashMap<String, Vec<crate::ir::TaskIr>> =
        std::collections::HashMap::new();
    for (l, ends) in lowered.iter().zip(range_ends).filter(|(l, _)| l.clean) {
        let builds = by_task.entry(l.ir.name.clone()).or_default();
        builds.push(l.ir.clone());
        builds.extend(
            ends.ends
                .iter()
                .filter(|e| e.lowering.is_empty())
                .map(|e| e.ir.clone()),
        );
    }
    by_task
        .into_iter()
        .map(|(k, v)| (k, std::sync::Arc::new(v)))
        .collect()
}

/// Checks `ir` (an instance that checked clean) again at `range_ends`, its lowerings with each
/// ranged integer param at each end of its declared range and at the corners where ranged params
/// sit at ends together, and at every value of a range of at most [`sema::MAX_INSIDE`] values
/// (issue 11, case 10; [`sema::lower_range_ends`]): what the ranges admit
/// must fit, not only the default. Each new error is reported once per item, with a note
/// naming the param's value and a label on its range. Returns false when any was reported.
/// `proven` holds the [`valid::model_key`]s already model-checked clean (`ir`'s among them):
/// a value with one of those protocols skips the model check, and each value that passes it
/// adds its own.
fn range_ends_hold(
    range_ends: sema::RangeEnds,
    check_opts: &CheckOptions,
    ir: &crate::ir::TaskIr,
    proven: &mut Vec<String>,
    unjoined_warned: &mut Vec<String>,
    sink: &mut Sink,
) -> bool {
    let mut seen: Vec<(&'static str, Option<crate::span::Span>)> = Vec::new();
    let mut held = true;
    let sema::RangeEnds { ends, unjoined } = range_ends;
    if !unjoined.is_empty() && !unjoined_warned.contains(&ir.name) {
        unjoined_warned.push(ir.name.clone());
        let names: Vec<String> = unjoined.iter().map(|(p, _)| format!("`{p}`")).collect();
        let mut d = crate::diag::Diagnostic::warning(
            crate::diag::codes::UNJOINED_RANGES,
            format!(
                "{} ranged params ({}): each end is checked with the others at their values, but no combination of ends is (that is done for {} at most)",
                unjoined.len(),
                names.join(", "),
                sema::MAX_JOINT
            ),
        );
        for (k, (p, span)) in unjoined.iter().enumerate() {
            d = if k == 0 {
                d.primary(*span, format!("`{p}`'s range"))
            } else {
                d.secondary(*span, format!("`{p}`'s range"))
            };
        }
        sink.push(d.note("a value inside the ranges may still fail where two of them meet (`mpkc check --param` checks a combination)").help(format!(
            "fix all but {} of them (a plain value, or `--param` at check time), or check the combinations you use with `--param`",
            sema::MAX_JOINT
        )));
    }
    // The proven keys as the checks read them, copied again only when one is added.
    let mut shared = std::sync::Arc::new(proven.clone());
    for end in ends {
        if cancel::requested() {
            break;
        }
        // Where lowering failed at the end (an extent of 0 at `m = 0`), its errors; else the
        // checker's.
        let diags = if end.lowering.is_empty() {
            let mut scratch = Sink::new();
            let key = valid::model_key(&end.ir);
            let opts = CheckOptions {
                proven_models: shared.clone(),
                ..check_opts.clone()
            };
            if valid::check(end.ir, &opts, &mut scratch).is_some() {
                if !proven.contains(&key) {
                    proven.push(key);
                    shared = std::sync::Arc::new(proven.clone());
                }
                continue;
            }
            scratch.into_sorted()
        } else {
            end.lowering
        };
        let at = end
            .at
            .iter()
            .map(|e| format!("`{} = {}`", e.param, e.value))
            .collect::<Vec<_>>()
            .join(", ");
        // The value the checked build itself has (its instance's, or the default), which the
        // end replaces: the instance note below names that build.
        let own = |p: &str| {
            ir.params
                .get(p)
                .map(|x| format!(" in place of its {}", x.value))
                .unwrap_or_default()
        };
        let note = match end.at.as_slice() {
            [e] => format!(
                "with `{} = {}`{}, {} its declared range `{}` admits: a range promises that every value in it checks",
                e.param,
                e.value,
                own(&e.param),
                match e.point {
                    sema::RangePoint::Lowest => "the lowest value",
                    sema::RangePoint::Highest => "the highest value",
                    sema::RangePoint::Inside => "a value",
                },
                e.range_text
            ),
            ends => format!(
                "with {at} together, each an end of its declared range ({}): ranges promise that every combination of their values checks",
                ends.iter()
                    .map(|e| format!("`{}`", e.range_text))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        for d in diags {
            if d.severity != crate::diag::Severity::Error {
                continue;
            }
            let key = (d.code, d.labels.iter().find(|l| l.primary).map(|l| l.span));
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            held = false;
            let mut d = end
                .at
                .iter()
                .fold(d, |d, e| {
                    d.secondary(e.range_span, format!("`{}` may be {}", e.param, e.value))
                })
                .note(note.clone());
            d.message = format!("at {at}: {}", d.message);
            sink.push(d);
        }
    }
    held
}

/// Checks every source, then the contracts mpkc derives from them (the reduce task of each
/// split-K pipeline), and reports generated-file collisions, disagreeing `setmaxnreg` lines
/// (E0404, register reallocation is megakernel-wide) and TaskTypes two tasks declare (E0605)
/// across all of them.
pub fn check_sources(
    sources: &[Source],
    sema_opts: &SemaOptions,
    check_opts: &CheckOptions,
) -> Vec<Checked> {
    check_sources_with(sources, |_| sema_opts.clone(), check_opts)
}

/// [`check_sources`] with options chosen per source (`mpkc verify --m` overrides a token-count
/// param only in the files that declare it).
///
/// Returns one [`Checked`] per source, in order, then one per derived contract (marked by
/// [`Checked::derived`], holding its tasks for `build` and `verify`). Every diagnostic is in the
/// `Checked` of the file it concerns: those found in a derived contract (its own rules, or a
/// generated-file clash) are re-attributed to the instance it is derived from
/// ([`Derived::attribute`]), so a derived `Checked` has none.
pub fn check_sources_with(
    sources: &[Source],
    sema_opts: impl Fn(&Source) -> SemaOptions,
    check_opts: &CheckOptions,
) -> Vec<Checked> {
    let mut checked: Vec<Checked> = sources
        .iter()
        .map(|s| check_source(s, &sema_opts(s), check_opts))
        .collect();
    if cancel::requested() {
        return checked;
    }
    let derived: Vec<(usize, Source, Derived)> = checked
        .iter()
        .enumerate()
        .flat_map(|(i, c)| derived_sources(c).into_iter().map(move |(s, d)| (i, s, d)))
        .collect();
    let plain = SemaOptions::default();
    let mut parents = Vec::new();
    for (parent, source, origin) in derived {
        let mut c = check_source(&source, &plain, check_opts);
        c.derived = Some(origin);
        parents.push(parent);
        checked.push(c);
    }
    unit_collisions(&mut checked);
    setmaxnreg_agreement(&mut checked);
    lever_agreement(&mut checked);
    let first_derived = sources.len();
    for (k, &parent) in parents.iter().enumerate() {
        let c = &mut checked[first_derived + k];
        let diags: Vec<Diagnostic> = std::mem::take(&mut c.diags)
            .into_iter()
            .map(|d| c.attribute(d))
            .collect();
        // A derived reduce with an error leaves its parent instance without a reduce: the parent
        // is not clean either (the summary does not count it, `build` and `verify` skip it).
        let failed = diags.iter().any(|d| d.severity == Severity::Error)
            || (c.tasks.is_empty() && !c.rejected.is_empty());
        let parent_unit = c.derived.as_ref().map(|o| o.parent_unit.clone());
        if !diags.is_empty() {
            let p = &mut checked[parent];
            p.diags.extend(diags);
            p.diags = sorted(std::mem::take(&mut p.diags));
        }
        if let (true, Some(unit)) = (failed, parent_unit) {
            let p = &mut checked[parent];
            if let Some(i) = p.tasks.iter().position(|t| t.ir.unit_name() == unit) {
                let t = p.tasks.remove(i);
                p.rejected.push(t.ir);
            }
        }
    }
    task_type_clashes(&mut checked, first_derived, &parents);
    checked
}

/// The params `source` declares, in any of its tasks (empty when it does not parse).
pub fn declared_params(source: &Source) -> Vec<String> {
    match front::parse_file(&source.text) {
        Ok(ast) => ast
            .tasks
            .iter()
            .flat_map(|t| t.items.iter())
            .filter_map(|i| match i {
                front::ast::Item::Param(p) => Some(p.name.node.clone()),
                _ => None,
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The token-count overrides `--m m` stands for in `source`: `m` and `m_real`, each where the
/// contract declares it with a compile-time value, set to `m` (`mpkc verify --m`, `mpkc bench
/// --m`). A param decided at run time (`= runtime`) is left alone: one build serves every count,
/// and verify runs it at `m` instead (docs/runtime-m.md).
pub fn token_overrides(source: &Source, m: i64) -> Vec<(String, String)> {
    let runtime = runtime_params(source);
    declared_params(source)
        .into_iter()
        .filter(|p| (p == "m" || p == "m_real") && !runtime.contains(p))
        .map(|p| (p, m.to_string()))
        .collect()
}

/// The params `source` declares `= runtime` in any of its tasks (empty when it does not parse).
pub fn runtime_params(source: &Source) -> Vec<String> {
    match front::parse_file(&source.text) {
        Ok(ast) => ast
            .tasks
            .iter()
            .flat_map(|t| t.items.iter())
            .filter_map(|i| match i {
                front::ast::Item::Param(p) if p.runtime.is_some() => Some(p.name.node.clone()),
                _ => None,
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_without_a_reported_error_is_e0030_and_one_with_an_error_is_not() {
        let mut sink = Sink::new();
        assert!(
            unexplained_rejection(&sink, 0, 0).is_none(),
            "nothing rejected"
        );
        let Some(d) = unexplained_rejection(&sink, 1, 0) else {
            panic!("an instance rejected at lowering with no error")
        };
        assert_eq!(d.code, "E0030");
        assert!(
            d.message
                .contains("1 task instance rejected and 0 follow-on errors"),
            "{}",
            d.message
        );
        sink.push(Diagnostic::error(
            crate::diag::FOLLOW_ON,
            "tensor `x` was rejected",
        ));
        let Some(d) = unexplained_rejection(&sink, 0, 0) else {
            panic!("a dropped follow-on error with no cause")
        };
        assert!(
            d.message.contains("1 follow-on error dropped"),
            "{}",
            d.message
        );
        sink.push(Diagnostic::warning(
            crate::diag::codes::UNJOINED_RANGES,
            "a warning",
        ));
        assert!(
            unexplained_rejection(&sink, 0, 2).is_some(),
            "a warning explains no rejection"
        );
        sink.push(Diagnostic::error(crate::diag::codes::SYNTAX, "the cause"));
        assert!(
            unexplained_rejection(&sink, 3, 2).is_none(),
            "the cause was reported"
        );
    }
}
