//! Parameter values of one instance: a param's value is its `--param` override, else its
//! `instance` setting, else its default. All three are the same grammar's `value` (the override's
//! text is parsed by [`crate::front::parse_value`]) and go through the one value path,
//! [`param_value`](super::param_value::param_value). A param whose type, range or value is
//! rejected is poisoned: its uses are follow-on errors, so one problem gives one report.

use super::eval::Env;
use super::param_range::declared_range;
use super::param_ty;
use super::param_value::param_value;
use crate::diag::{codes, Diagnostic, Sink};
use crate::front::{self, ast};
use crate::ir::ParamIr;
use indexmap::IndexMap;

/// Evaluates every param of `task` for one instance. `instance` settings override defaults and
/// `overrides` (`--param name=value`, the last one of a name wins) override both. Errors go to
/// `sink`; params without a usable value are returned as poisoned names, whose uses are
/// follow-on errors.
pub fn evaluate(
    params: &[&ast::Param],
    instance: Option<&ast::Instance>,
    opts: &super::SemaOptions,
    sink: &mut Sink,
) -> (IndexMap<String, ParamIr>, Vec<String>) {
    let mut out: IndexMap<String, ParamIr> = IndexMap::new();
    let mut poisoned = Vec::new();
    super::param_runtime::only_one(params, sink);
    let declared: Vec<(String, crate::span::Span)> = params
        .iter()
        .map(|p| (p.name.node.clone(), p.name.span))
        .collect();
    for (i, p) in params.iter().enumerate() {
        let env = Env {
            params: Some(&out),
            poisoned: Some(&poisoned),
            unevaluated: Some(&declared[i..]),
            ..Env::default()
        };
        match one_param(p, instance, opts, &env, sink) {
            Some(ir) => {
                out.insert(p.name.node.clone(), ir);
            }
            None => poisoned.push(p.name.node.clone()),
        }
    }
    (out, poisoned)
}

/// The value of `p`, or `None` after reporting why it has none.
fn one_param(
    p: &ast::Param,
    instance: Option<&ast::Instance>,
    opts: &super::SemaOptions,
    env: &Env<'_>,
    sink: &mut Sink,
) -> Option<ParamIr> {
    let ty = param_ty::resolve(p, sink)?;
    let range = declared_range(p, ty, env, sink).ok()?;
    let cli = opts.overrides.iter().rev().find(|(n, _)| *n == p.name.node);
    // An end of the declared range the driver checks (`lower_range_ends`), not the command line.
    let range_end = opts.range_end_overrides.contains(&p.name.node);
    let inst_set = instance.and_then(|i| i.sets.iter().find(|(n, _)| n.node == p.name.node));
    if let Some(kw) = p.runtime {
        let set = super::param_runtime::Setters {
            cli: cli.map(|(_, t)| t.as_str()),
            instance: inst_set.map(|(_, v)| v.span()),
        };
        return super::param_runtime::value(p, kw, ty, range.as_ref(), set, sink);
    }
    let cli_value;
    let (value, from_cli) = match (cli, inst_set, &p.default) {
        (Some((_, text)), _, _) => match front::parse_value(text, p.name.span) {
            Ok(v) => {
                cli_value = v;
                (&cli_value, Some(text.as_str()))
            }
            Err(diags) => {
                for d in diags {
                    sink.push(cli_diagnostic(d, p, text));
                }
                return None;
            }
        },
        (None, Some((_, v)), _) => (v, None),
        (None, None, Some(v)) => (v, None),
        (None, None, None) => {
            sink.push(missing(p, instance));
            return None;
        }
    };
    match param_value(p, ty, range.as_ref(), value, env) {
        Ok(v) => Some(ParamIr {
            name: p.name.node.clone(),
            ty,
            value: v,
            span: p.span,
            value_span: match (from_cli, &range) {
                (Some(_), Some(r)) if range_end => r.span,
                (Some(_), _) => p.span,
                (None, _) => value.span(),
            },
            runtime: None,
            int_range: range.as_ref().and_then(|r| r.int_ends()),
            range_text: range.as_ref().map(|r| r.text()),
        }),
        Err(d) => {
            sink.push(match from_cli {
                Some(text) => cli_diagnostic(d, p, text),
                None => d,
            });
            None
        }
    }
}

/// A diagnostic about the value of `--param NAME=TEXT`: its code is the one the same value
/// written in the contract gets; the message and the label at the param's name (where the
/// value's spans point) say that it came from the command line.
fn cli_diagnostic(mut d: Diagnostic, p: &ast::Param, text: &str) -> Diagnostic {
    let flag = format!("`--param {}={text}`", p.name.node);
    d.message = format!("{flag}: {}", d.message);
    let anchor = p.name.span;
    let mut labelled = false;
    for l in d.labels.iter_mut().filter(|l| l.span == anchor) {
        l.message = format!("{}, from {flag}", l.message);
        labelled = true;
    }
    if !labelled {
        d = d.primary(anchor, format!("set by {flag}"));
    }
    d.note(CLI_NOTE)
}

/// The note every diagnostic about a `--param` value carries ([`cli_diagnostic`]).
const CLI_NOTE: &str = "`--param` values are read as values in a contract are: a number \
     (`4096`, `0x400`, `1e-6`), `true` or `false`, or an integer expression over earlier params";

/// Whether `d` is about a `--param` value: the value is the command line's, not an instance's,
/// so `sema::lower_file` does not note the instance it was found in.
pub fn about_cli_value(d: &Diagnostic) -> bool {
    d.notes.iter().any(|n| n == CLI_NOTE || n == CLI_VALUE_NOTE)
}

/// The note of a later check's diagnostic on a value `--param` set (E0009's positive scalars):
/// [`about_cli_value`] reads it, so the diagnostic is not noted with the instances it was found in.
pub const CLI_VALUE_NOTE: &str =
    "the value is the command line's `--param`, which every instance takes";

fn missing(p: &ast::Param, instance: Option<&ast::Instance>) -> Diagnostic {
    let mut d = Diagnostic::error(
        codes::MISSING,
        format!("param `{}` has no value", p.name.node),
    )
    .primary(p.name.span, "declared without a default");
    if let Some(i) = instance {
        d = d.secondary(
            i.name.span,
            format!("instance `{}` does not set it", i.name.node),
        );
    }
    d.help(format!(
        "give it a default (`= …`), set it in the instance, or pass `--param {}=VALUE`",
        p.name.node
    ))
}

/// The errors in defaults that no instance reads: when every instance of the task sets a param
/// (or `--param` overrides it), [`evaluate`] never looks at its default, so an unknown name or
/// an out-of-range value there went unreported although the contract holds it (a later
/// instance, or `plan --instance` of a new one, would read it). The defaults are evaluated
/// once, without an instance, and only the diagnostics whose main span lies in such a default
/// are kept, noted as such; a default some instance reads was checked with that instance.
pub fn unread_default_errors(
    params: &[&ast::Param],
    instances: &[&ast::Instance],
    overrides: &[(String, String)],
    sink: &mut Sink,
) {
    let unread: Vec<(&str, crate::span::Span)> = params
        .iter()
        .filter(|p| p.runtime.is_none())
        .filter_map(|p| {
            let default = p.default.as_ref()?;
            let name = p.name.node.as_str();
            let set_everywhere = overrides.iter().any(|(n, _)| n == name)
                || (!instances.is_empty()
                    && instances
                        .iter()
                        .all(|i| i.sets.iter().any(|(n, _)| n.node == name)));
            set_everywhere.then(|| (name, default.span()))
        })
        .collect();
    if unread.is_empty() {
        return;
    }
    let mut defaults = Sink::new();
    evaluate(params, None, &super::SemaOptions::default(), &mut defaults);
    for mut d in defaults.into_sorted() {
        let at = d.main_span();
        let Some((name, _)) = unread
            .iter()
            .find(|(_, s)| s.start <= at.start && at.end <= s.end)
        else {
            continue;
        };
        d.notes.push(format!(
            "in the default of `{name}`, which {} (nothing reads it)",
            if overrides.iter().any(|(n, _)| n == name) {
                "`--param` overrides"
            } else {
                "every instance sets"
            }
        ));
        sink.push(d);
    }
}
