//! The parameters of a Python reference's function, read from its `def` (docs/references.md):
//! `mpkc verify` calls it with one positional argument per input the kernel reads (its `in` and
//! `inout` tensors in declaration order, the op's own state left out), plus `params=` when it
//! has a parameter of that name and `paged_kv=` for a task with a paged KV cache when it has
//! that one. A `def` that cannot take that call fails on the GPU after the build and the run
//! ("takes 2 positional arguments but 3 were given"); `check` says it at the `reference` line
//! (E0018). Only a plain top-level `def` is read: a function bound by assignment, an import or
//! under a decorator (which may change what it takes) is the run's to judge.

use crate::diag::{codes, Diagnostic};
use crate::ir::ReferenceIr;

/// The names verify passes by keyword when the function has a parameter so named.
const KEYWORDS: [&str; 2] = ["params", "paged_kv"];

/// What a `def` takes, as verify calls it.
#[derive(Debug, PartialEq)]
struct Signature {
    /// The 1-based line of the `def`.
    line: usize,
    /// Parameters that a positional argument can fill, in order, and whether each has a
    /// default (`/` and the names before it included; `self` is not special here).
    positional: Vec<(String, bool)>,
    /// Whether it takes `*args`.
    var_args: bool,
    /// Keyword-only parameters without a default (after `*` or `*args`). (`**kwargs` takes
    /// nothing verify passes: it passes `params=` only to a parameter so named.)
    required_keywords: Vec<String>,
}

/// E0018 when the last plain top-level `def NAME(` of `text` cannot take verify's call with
/// `inputs` positional arguments (`paged`: the task has a paged KV cache, so `paged_kv=` is
/// passed when named). `Ok` when the function is bound otherwise or decorated.
pub fn check(
    text: &str,
    r: &ReferenceIr,
    inputs: &[String],
    left_out: &[String],
    paged: bool,
) -> Result<(), Diagnostic> {
    let Some(sig) = signature(text, &r.function) else {
        return Ok(());
    };
    let passed_kw = |n: &str| n == "params" || (paged && n == "paged_kv");
    // Keyword-passed names take no positional argument: verify never fills them positionally
    // unless they come before an input's position, which the count below makes an error.
    let slots: Vec<&(String, bool)> = sig.positional.iter().collect();
    let n = inputs.len();
    let problem = if n > slots.len() && !sig.var_args {
        Some(format!(
            "`{}` takes {} positional parameter{} but verify passes {n} input{}",
            r.function,
            slots.len(),
            plural(slots.len()),
            plural(n)
        ))
    } else if let Some((name, _)) = slots.iter().take(n).find(|(p, _)| passed_kw(p)) {
        let at = slots.iter().position(|(p, _)| p == name).unwrap_or(0);
        Some(format!(
            "`{}`'s parameter `{name}` would take input `{}` (positional argument {}) and `{name}=` by keyword",
            r.function,
            inputs.get(at).map_or("?", String::as_str),
            at + 1
        ))
    } else if let Some((name, _)) = slots
        .iter()
        .skip(n)
        .find(|(p, default)| !default && !passed_kw(p))
    {
        Some(format!(
            "`{}`'s parameter `{name}` has no default and no input fills it: verify passes {n} input{}",
            r.function,
            plural(n)
        ))
    } else {
        sig.required_keywords
            .iter()
            .find(|k| !passed_kw(k))
            .map(|k| {
                format!(
                    "`{}`'s keyword-only parameter `{k}` has no default: verify passes only {}",
                    r.function,
                    if paged {
                        "`params=` and `paged_kv=`"
                    } else {
                        "`params=`"
                    }
                )
            })
    };
    let Some(message) = problem else {
        return Ok(());
    };
    let call = if inputs.is_empty() {
        "none".to_string()
    } else {
        inputs.join(", ")
    };
    let state = if left_out.is_empty() {
        String::new()
    } else {
        format!(
            " (the op's own state is not passed: {})",
            left_out.join(", ")
        )
    };
    Err(Diagnostic::error(codes::REFERENCE, message)
        .primary(r.span, format!("verify calls `{}` here", r.function))
        .note(format!(
            "{}:{}: the `def`; verify's positional arguments, the task's inputs in declaration order: {call}{state}",
            r.path, sig.line
        ))
        .note(format!(
            "by keyword: {} when the function has a parameter of that name",
            KEYWORDS
                .iter()
                .filter(|k| **k == "params" || paged)
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" and ")
        ))
        .help(format!(
            "give `{}` one parameter per input, in that order (docs/references.md)",
            r.function
        )))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The last plain top-level `def NAME(…)` of `text` (not under a decorator), read.
fn signature(text: &str, name: &str) -> Option<Signature> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = None;
    for (i, l) in lines.iter().enumerate() {
        let rest = l.strip_prefix("async ").unwrap_or(l);
        let Some(d) = rest.strip_prefix("def ") else {
            // A later top-level rebinding of the name (assignment, import) hides the `def`.
            if rebinds(l, name) {
                found = None;
            }
            continue;
        };
        let d = d.trim_start();
        if !d.starts_with(name) || !d[name.len()..].trim_start().starts_with('(') {
            continue;
        }
        let decorated = i > 0 && lines[i - 1].starts_with('@');
        found = if decorated { None } else { Some(i) };
    }
    let i = found?;
    let from = text.lines().take(i).map(|l| l.len() + 1).sum::<usize>();
    let open = from + text[from..].find('(')?;
    let list = parenthesised(&text[open..])?;
    Some(read_params(list, i + 1))
}

/// A top-level assignment to `name` or an import binding it.
fn rebinds(l: &str, name: &str) -> bool {
    let word = |l: &str| {
        l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == name)
    };
    l.strip_prefix(name).is_some_and(|t| {
        let t = t.trim_start();
        t.starts_with('=') && !t.starts_with("==")
    }) || ((l.starts_with("from ") || l.starts_with("import ")) && word(l))
}

/// The text inside the parentheses that `s` opens (comments and strings skipped).
fn parenthesised(s: &str) -> Option<&str> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut prev = '\0';
    for (i, c) in s.char_indices() {
        if comment {
            comment = c != '\n';
        } else if let Some(q) = quote {
            if c == q && prev != '\\' {
                quote = None;
            }
        } else {
            match c {
                '#' => comment = true,
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(&s[1..i]);
                    }
                }
                _ => {}
            }
        }
        prev = if prev == '\\' { '\0' } else { c };
    }
    None
}

/// The parameters of a `def`'s list (split at top-level commas).
fn read_params(list: &str, line: usize) -> Signature {
    let mut sig = Signature {
        line,
        positional: Vec::new(),
        var_args: false,
        required_keywords: Vec::new(),
    };
    let mut keyword_only = false;
    for p in split_top(list) {
        let p = p.trim();
        if p.is_empty() || p == "/" {
            continue;
        }
        if p == "*" {
            keyword_only = true;
        } else if p.starts_with("**") {
            continue;
        } else if p.starts_with('*') {
            sig.var_args = true;
            keyword_only = true;
        } else {
            let default = top_level_eq(p);
            let name: String = p
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if keyword_only {
                if !default {
                    sig.required_keywords.push(name);
                }
            } else {
                sig.positional.push((name, default));
            }
        }
    }
    sig
}

/// `list` split at commas outside brackets, strings and comments.
fn split_top(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut comment = false;
    for c in list.chars() {
        if comment {
            comment = c != '\n';
            continue;
        }
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '#') => {
                comment = true;
                continue;
            }
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

/// Whether parameter text `p` has a default: an `=` outside brackets (not `==`, `<=`, …).
fn top_level_eq(p: &str) -> bool {
    let b = p.as_bytes();
    let mut depth = 0i32;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'=' if depth == 0 => {
                let before = i.checked_sub(1).map(|j| b[j]);
                let after = b.get(i + 1).copied();
                if !matches!(before, Some(b'=' | b'<' | b'>' | b'!')) && after != Some(b'=') {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(text: &str) -> Option<Signature> {
        signature(text, "f")
    }

    #[test]
    fn a_def_is_read_across_lines_with_annotations_and_defaults() {
        let s = sig("import torch\n\ndef f(x: torch.Tensor,\n      w,  # the weights, (N, K)\n      scale: float = 1.0, *, params=None, **kw):\n    return x\n").unwrap();
        assert_eq!(s.line, 3);
        assert_eq!(
            s.positional,
            vec![
                ("x".into(), false),
                ("w".into(), false),
                ("scale".into(), true)
            ]
        );
        assert!(!s.var_args);
        assert!(s.required_keywords.is_empty());
        let t = sig("def f(a, b=(1, 2), *rest, k, m=dict(a=1)):\n  pass\n").unwrap();
        assert_eq!(t.positional, vec![("a".into(), false), ("b".into(), true)]);
        assert!(t.var_args);
        assert_eq!(t.required_keywords, vec!["k".to_string()]);
    }

    #[test]
    fn decorated_rebound_or_nested_defs_are_not_read() {
        assert!(sig("@torch.no_grad()\ndef f(x):\n  pass\n").is_none());
        assert!(sig("def f(x):\n  pass\nf = g\n").is_none());
        assert!(sig("class C:\n    def f(self, x):\n        pass\n").is_none());
        // The last `def` wins, as Python binds it.
        assert_eq!(
            sig("def f(x):\n  pass\ndef f(x, y):\n  pass\n")
                .unwrap()
                .positional
                .len(),
            2
        );
        assert!(sig("def fx(a):\n  pass\n").is_none());
    }

    fn reference() -> ReferenceIr {
        ReferenceIr {
            path: "r.ref.py".into(),
            path_span: crate::span::Span::new(0, 1),
            function: "f".into(),
            tolerances: Vec::new(),
            span: crate::span::Span::new(0, 1),
            file: crate::ir::ReferenceFile::Unresolved,
        }
    }

    #[test]
    fn the_call_verify_makes_is_checked_against_the_def() {
        let r = reference();
        let ins = |n: usize| (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>();
        assert!(check("def f(x, w):\n  pass\n", &r, &ins(2), &[], false).is_ok());
        assert!(check("def f(x, w, params):\n  pass\n", &r, &ins(2), &[], false).is_ok());
        assert!(check("def f(x, w, eps=1e-6):\n  pass\n", &r, &ins(2), &[], false).is_ok());
        assert!(check("def f(*xs):\n  pass\n", &r, &ins(5), &[], false).is_ok());
        assert!(check("def f(q, k, paged_kv):\n  pass\n", &r, &ins(2), &[], true).is_ok());
        let too_few = check("def f(x):\n  pass\n", &r, &ins(2), &[], false).unwrap_err();
        assert!(
            too_few
                .message
                .contains("takes 1 positional parameter but verify passes 2 inputs"),
            "{}",
            too_few.message
        );
        let missing = check("def f(x, w, b):\n  pass\n", &r, &ins(2), &[], false).unwrap_err();
        assert!(
            missing.message.contains("`b` has no default"),
            "{}",
            missing.message
        );
        // Not paged: `paged_kv` is not passed, so it needs a default.
        assert!(check("def f(q, k, paged_kv):\n  pass\n", &r, &ins(2), &[], false).is_err());
        // `params` in an input's position would get an input and the keyword both.
        assert!(check("def f(x, params, w):\n  pass\n", &r, &ins(2), &[], false).is_err());
        assert!(check("def f(x, w, *, scale):\n  pass\n", &r, &ins(2), &[], false).is_err());
        assert!(check("def f(x, w, *, params):\n  pass\n", &r, &ins(2), &[], false).is_ok());
    }
}
