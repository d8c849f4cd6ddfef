//! The `static_assert`s an inline body states over its params (E0031), and those of the helpers
//! a task uses, with the values the `use` line binds (E0026): nvcc would reject the build where
//! one fails, so `check` evaluates each whose condition is an integer constant expression of
//! literals, `params::NAME` and the body's constants ([`super::const_expr`]) and reports the
//! ones that fail. A condition it cannot evaluate (a `constexpr` local, a type trait) is left to
//! nvcc. What check accepts, build then compiles (at every range end too: the ends are checked
//! with the same rules).

use super::body::{call_args, calls_of, strip_comments_and_strings};
use super::body_constants::body_constants;
use super::const_expr::Ty;
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, TaskIr};
use crate::span::Span;

/// One `static_assert` whose condition evaluates to false: its byte range in the body's code,
/// the condition and the message as written.
#[derive(Debug, PartialEq, Eq)]
struct Failed {
    at: std::ops::Range<usize>,
    condition: String,
    message: Option<String>,
    /// Why the condition has no value (`a division by zero`), where it has none rather than
    /// being false ([`super::const_expr::eval_or_fault`]).
    fault: Option<&'static str>,
}

/// Every `static_assert(COND[, "message"])` of `code` whose `COND` evaluates to 0 with `names`.
fn failing(code: &str, names: &dyn Fn(&str) -> Option<(i64, Ty)>) -> Vec<Failed> {
    let stripped = strip_comments_and_strings(code);
    let skipped = preprocessed(&stripped);
    let mut out = Vec::new();
    for (i, args_at) in calls_of(&stripped, "static_assert") {
        if skipped.iter().any(|r| r.contains(&i)) {
            continue;
        }
        let args = call_args(&stripped[args_at..]);
        let Some(cond) = args.first() else { continue };
        let fault = match super::const_expr::eval_or_fault(cond, names) {
            Ok(0) => None,
            Err(Some(why)) => Some(why),
            Ok(_) | Err(None) => continue,
        };
        // The message as written: the second argument's bytes (the stripped copy keeps every
        // offset; its literal is blanked there).
        let end = (args_at + args.iter().map(|a| a.len() + 1).sum::<usize>()).min(code.len());
        let message = args.get(1).and_then(|m| {
            let from = args_at + args[0].len() + 1;
            code.get(from..from + m.len()).map(|t| t.trim().to_string())
        });
        out.push(Failed {
            at: i..end,
            // One line, as a message shows it.
            condition: cond.split_whitespace().collect::<Vec<_>>().join(" "),
            message,
            fault,
        });
    }
    out
}

/// The byte ranges of `stripped` the preprocessor may drop or rewrite: the lines of each
/// `#if`/`#ifdef`/`#ifndef` … `#endif` block (nested too) and each `#define` with its `\`
/// continuation lines. An assertion there is left to nvcc (`#if __CUDA_ARCH__ >= 1000`, a macro
/// never expanded).
fn preprocessed(stripped: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut block_start = 0usize;
    let mut continued = false;
    let mut at = 0usize;
    for line in stripped.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let t = line.trim_start();
        let directive = t.strip_prefix('#').map(str::trim_start);
        let word = directive.map(|d| {
            d.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .next()
                .unwrap_or("")
        });
        match word {
            Some("if" | "ifdef" | "ifndef") => {
                if depth == 0 {
                    block_start = start;
                }
                depth += 1;
            }
            Some("endif") if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    out.push(block_start..at);
                }
            }
            _ => {}
        }
        // A macro definition and its continuation lines.
        if continued || word == Some("define") {
            out.push(start..at);
        }
        continued = (continued || word == Some("define")) && line.trim_end().ends_with('\\');
    }
    if depth > 0 {
        out.push(block_start..at);
    }
    out
}

/// The values `failed`'s condition reads, as a message's suffix ` at n = 7200` (the params it
/// names; empty where it names none).
fn at_values(ir: &TaskIr, condition: &str) -> String {
    let named: Vec<String> = ir
        .params
        .values()
        .filter(|p| {
            condition
                .match_indices(&format!("params::{}", p.name))
                .any(|(k, w)| {
                    !condition[k + w.len()..]
                        .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                })
        })
        .map(|p| format!("{} = {}", p.name, p.value_text()))
        .collect();
    if named.is_empty() {
        String::new()
    } else {
        format!(" at {}", named.join(", "))
    }
}

/// E0031 for each failing `static_assert` of the task's inline bodies (the consumer's and the
/// loader's), E0026 on the `use` line for each of a used helper's (evaluated with the helper's
/// params as the `use` line binds them).
pub(super) fn static_asserts(ir: &TaskIr, sink: &mut Sink) {
    for body in [&ir.body, &ir.loader_body] {
        let Some(BodyIr::Cuda {
            code, code_span, ..
        }) = body
        else {
            continue;
        };
        for f in failing(code, &body_constants(ir, code)) {
            let span = Span::new(code_span.start + f.at.start, code_span.start + f.at.end);
            let at = at_values(ir, &f.condition);
            let mut d = match f.fault {
                None => Diagnostic::error(
                    codes::STATIC_ASSERT,
                    format!("the inline body's `static_assert({})` fails{at}", f.condition),
                )
                .primary(span, "false with the instance's params"),
                Some(why) => Diagnostic::error(
                    codes::STATIC_ASSERT,
                    format!("the inline body's `static_assert({})` is not a constant expression{at}: {why}", f.condition),
                )
                .primary(span, format!("{why} with the instance's params"))
                .note("C++ gives the operation no value (undefined behaviour), so the condition is not a constant expression"),
            };
            if let Some(m) = &f.message {
                d = d.note(format!("its message: {m}"));
            }
            sink.push(d.note("nvcc would reject the build").help(
                "choose param values the assertion admits (a range on the param states them), or change the body",
            ));
        }
    }
    for u in &ir.helpers {
        let Some(BodyIr::Cuda { code, .. }) = &u.helper.body else {
            continue;
        };
        for f in failing(code, &body_constants(&u.helper, code)) {
            let at = at_values(&u.helper, &f.condition);
            let what = f.fault.map_or("fails".to_string(), |why| {
                format!("is not a constant expression ({why})")
            });
            let mut d = Diagnostic::error(
                codes::HELPER_PARAMS,
                format!(
                    "helper `{}`'s `static_assert({})` {what}{at}",
                    u.name, f.condition,
                ),
            )
            .primary(u.span, "the params this `use` binds");
            if let Some(m) = &f.message {
                d = d.note(format!("its message: {m}"));
            }
            sink.push(
                d.note(format!("in the helper's body, {}", u.path))
                    .note("nvcc would reject the build")
                    .help("bind values the helper's assertion admits"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_assertions_are_found_with_their_text() {
        let names = |n: &str| match n {
            "params::n" => Some((7200, Ty::Long)),
            "kConsumerThreads" => Some((128, Ty::Int)),
            _ => None,
        };
        let code = r#"
  static_assert(params::n % 128 == 0, "whole groups, of 128");
  static_assert(params::n > 0);
  static_assert(kConsumerThreads == 128, "four warps");
  static_assert(sizeof(float) == 4, "unknown to check");
  static_assert(params::m % 2 == 0, "an unknown param");
  // static_assert(params::n == 1, "a comment");
  constexpr char const *s = "static_assert(params::n == 1)";
"#;
        let f = failing(code, &names);
        assert_eq!(f.len(), 1, "{f:?}");
        // Under a preprocessor condition, or in a macro, the assertion is nvcc's to judge.
        let pre = r#"
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  static_assert(params::n % 256 == 0, "the sm_100 path");
#endif
#define SA static_assert(params::n == 1, "never expanded")
#define SB \
  static_assert(params::n == 2, "continued")
  static_assert(params::n % 7 == 0, "outside: evaluated");
"#;
        let g = failing(pre, &names);
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].condition, "params::n % 7 == 0");
        assert_eq!(f[0].condition, "params::n % 128 == 0");
        assert_eq!(f[0].message.as_deref(), Some("\"whole groups, of 128\""));
        assert_eq!(
            &code[f[0].at.clone()],
            r#"static_assert(params::n % 128 == 0, "whole groups, of 128")"#
        );
    }
}
