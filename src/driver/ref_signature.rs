//! The parameters of a Python reference's function, read from its `def` (docs/references.md):
//! `mpkc verify` calls it with one positional argument per input the kernel reads (its `in` and
//! `inout` tensors in declaration order, the op's own state left out), plus `params=` when it
//! has a parameter of that name and `paged_kv=` for a task with a paged KV cache when it has
//! that one, and does not await what it returns. A `def` that cannot take that call fails on
//! the GPU after the build and the run ("takes 2 positional arguments but 3 were given");
//! `check` says it at the `reference` line (E0018). Only what is certain is read: the last
//! `def NAME(` at the top level, outside strings, with no decorator, no indented `def` of the
//! same name (a conditional definition, a method) and no later top-level rebinding; a
//! parameter list holding a `lambda` is not read. Anything else is the run's to judge.

use crate::diag::{codes, Diagnostic};
use crate::ir::ReferenceIr;

/// The names verify passes by keyword when the function has a parameter so named.
const KEYWORDS: [&str; 2] = ["params", "paged_kv"];

/// What a `def` takes, as verify calls it.
#[derive(Debug, PartialEq)]
struct Signature {
    /// The 1-based line of the `def`.
    line: usize,
    /// `async def`: calling it returns a coroutine, which verify does not await.
    is_async: bool,
    /// Parameters that a positional argument can fill, in order: the name, whether it has a
    /// default, and whether it is positional-only (before `/`).
    positional: Vec<(String, bool, bool)>,
    /// The name of `*args`, if it takes one.
    var_args: Option<String>,
    /// Keyword-only parameters without a default (after `*` or `*args`). (`**kwargs` takes
    /// nothing verify passes: it passes `params=` only to a parameter so named.)
    required_keywords: Vec<String>,
}

/// E0018 when the last plain top-level `def NAME(` of `text` cannot take verify's `call`: its
/// inputs as positional arguments (`paged`: the task has a paged KV cache, so `paged_kv=` is
/// passed when named). `Ok` when the function is bound otherwise or decorated.
pub fn check(text: &str, r: &ReferenceIr, call: &super::reference::Call) -> Result<(), Diagnostic> {
    let (inputs, left_out, paged) = (&call.inputs, &call.left_out, call.paged);
    let Some(sig) = signature(text, &r.function) else {
        return Ok(());
    };
    let passed_kw = |n: &str| n == "params" || (paged && n == "paged_kv");
    let n = inputs.len();
    let slots = &sig.positional;
    let kw = |k: &str| format!("`{k}=`");
    let problem = if sig.is_async {
        Some(format!(
            "`{}` is an `async def`: calling it returns a coroutine, which verify does not await",
            r.function
        ))
    } else if let Some(v) = sig.var_args.as_deref().filter(|v| passed_kw(v)) {
        Some(format!(
            "`{}`'s `*{v}` makes verify pass {} by keyword, which `*{v}` cannot take",
            r.function,
            kw(v)
        ))
    } else if n > slots.len() && sig.var_args.is_none() {
        Some(format!(
            "`{}` takes {} positional parameter{} but verify passes {n} input{}",
            r.function,
            slots.len(),
            plural(slots.len()),
            plural(n)
        ))
    } else if let Some(at) = slots.iter().take(n).position(|(p, _, _)| passed_kw(p)) {
        let name = &slots[at].0;
        Some(format!(
            "`{}`'s parameter `{name}` would take input `{}` (positional argument {}) and {} by keyword",
            r.function,
            inputs.get(at).map_or("?", String::as_str),
            at + 1,
            kw(name)
        ))
    } else if let Some((name, _, _)) = slots.iter().find(|(p, _, only)| *only && passed_kw(p)) {
        Some(format!(
            "`{}`'s parameter `{name}` is positional-only (before `/`) but verify passes {} by keyword",
            r.function,
            kw(name)
        ))
    } else if let Some((name, _, _)) = slots
        .iter()
        .skip(n)
        .find(|(p, default, _)| !default && !passed_kw(p))
    {
        Some(format!(
            "`{}`'s parameter `{name}` has no default and no input fills it: verify passes {n} input{}{}",
            r.function,
            plural(n),
            if call.outputs.iter().any(|o| o == name) {
                format!(" (`{name}` is an output: the function returns it)")
            } else {
                String::new()
            }
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

/// One line of a Python file: its 0-based byte offset, its text without the line end, and
/// whether it starts inside a triple-quoted string (a docstring's lines are no code).
struct Line<'a> {
    start: usize,
    text: &'a str,
    in_string: bool,
}

/// The lines of `text` (`\n` or `\r\n` ends), each marked when it starts inside a
/// triple-quoted string.
fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut open: Option<&str> = None;
    for raw in text.split_inclusive('\n') {
        let line = raw.trim_end_matches(['\n', '\r']);
        out.push(Line {
            start,
            text: line,
            in_string: open.is_some(),
        });
        open = triple_state(line, open);
        start += raw.len();
    }
    out
}

/// Whether a triple-quoted string is open after `line`, given `open` before it.
fn triple_state<'q>(line: &str, mut open: Option<&'q str>) -> Option<&'q str> {
    let b = line.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        match open {
            Some(q) => {
                if b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i..].starts_with(q.as_bytes()) {
                    open = None;
                    i += 3;
                    continue;
                }
            }
            None => {
                if let Some(qc) = quote {
                    if b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == qc {
                        quote = None;
                    }
                } else if b[i] == b'#' {
                    break;
                } else if b[i..].starts_with(b"\"\"\"") {
                    open = Some("\"\"\"");
                    i += 3;
                    continue;
                } else if b[i..].starts_with(b"\'\'\'") {
                    open = Some("\'\'\'");
                    i += 3;
                    continue;
                } else if b[i] == b'"' || b[i] == b'\'' {
                    quote = Some(b[i]);
                }
            }
        }
        i += 1;
    }
    open
}

/// Whether `c` continues a Python identifier (ASCII or not).
fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `line` holds `name` as a whole identifier (ASCII or not).
pub(super) fn has_word(line: &str, name: &str) -> bool {
    line.match_indices(name).any(|(i, _)| {
        !line[..i].chars().next_back().is_some_and(ident)
            && !line[i + name.len()..].chars().next().is_some_and(ident)
    })
}

/// `def NAME(` (after `def` and blanks) in `rest`, the text after `def`.
fn names_def(rest: &str, name: &str) -> bool {
    let r = rest.trim_start_matches([' ', '\t']);
    r.len() < rest.len()
        && r.starts_with(name)
        && r[name.len()..]
            .trim_start_matches([' ', '\t'])
            .starts_with('(')
}

/// A top-level statement `line` that may rebind `name`: an assignment to it (plain, annotated,
/// or among several targets), an import, a class, or a `for`/`with` target.
fn rebinds(line: &str, name: &str) -> bool {
    if !has_word(line, name) {
        return false;
    }
    let first = line.split([' ', '\t', '(']).next().unwrap_or("");
    if matches!(
        first,
        "import" | "from" | "class" | "for" | "with" | "global"
    ) {
        return true;
    }
    // A `=` that is no comparison, with the name before it.
    let b = line.as_bytes();
    (0..b.len()).any(|i| {
        b[i] == b'='
            && !matches!(b.get(i + 1), Some(b'='))
            && !matches!(
                i.checked_sub(1).map(|j| b[j]),
                Some(b'=' | b'<' | b'>' | b'!')
            )
            && has_word(&line[..i], name)
    })
}

/// The last plain top-level `def NAME(…)` of `text`, read; `None` where that is not certain
/// (decorated, defined again in an indented block, rebound after it, a `lambda` among its
/// parameters, a list that does not close).
fn signature(text: &str, name: &str) -> Option<Signature> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let ls = lines(text);
    let mut found: Option<(usize, bool)> = None;
    for (i, l) in ls.iter().enumerate() {
        if l.in_string {
            continue;
        }
        let t = l.text;
        let indented = t.starts_with([' ', '\t', '\x0c']);
        let body = t.trim_start_matches([' ', '\t', '\x0c']);
        let (is_async, rest) = match body.strip_prefix("async") {
            Some(r) if r.starts_with([' ', '\t']) => (true, r.trim_start_matches([' ', '\t'])),
            _ => (false, body),
        };
        let is_def = rest.strip_prefix("def").is_some_and(|r| names_def(r, name));
        if is_def && indented {
            // A conditional definition or a method of that name: not certain.
            return None;
        }
        if is_def {
            if decorated(&ls, i) {
                return None;
            }
            found = Some((i, is_async));
        } else if !indented && found.is_some() && rebinds(t, name) {
            return None;
        }
    }
    let (i, is_async) = found?;
    let from = ls[i].start;
    let open = from + text[from..].find('(')?;
    let params = parameters(&text[open..])?;
    let mut sig = read_params(&params, i + 1);
    sig.is_async = is_async;
    Some(sig)
}

/// Whether the top-level `def` on line `i` is under a decorator: the statement before it,
/// blank lines, comments and a multi-line decorator's continuation lines skipped, starts with
/// `@`.
fn decorated(ls: &[Line<'_>], i: usize) -> bool {
    for l in ls[..i].iter().rev() {
        let t = l.text;
        let body = t.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        if t.starts_with('@') {
            return true;
        }
        // An indented line or a closing bracket at the margin continues something above: a
        // decorator's arguments, or an earlier block (whose head is then no decorator).
        if l.in_string || t.starts_with([' ', '\t', ')', ']', '}']) {
            continue;
        }
        return false;
    }
    false
}

/// The parameters inside the parentheses that `s` opens, split at top-level commas (strings,
/// with their escapes, and comments skipped); `None` when the list does not close or holds a
/// `lambda` (whose own commas and colon read as the def's).
fn parameters(s: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut chars = s.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if comment {
            comment = c != '\n';
            continue;
        }
        if let Some(q) = quote {
            cur.push(c);
            if c == '\\' {
                if let Some((_, e)) = chars.next() {
                    cur.push(e);
                }
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '#' => {
                comment = true;
                continue;
            }
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => {
                depth += 1;
                if depth == 1 && c == '(' {
                    continue;
                }
            }
            ')' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    out.push(cur);
                    return out
                        .iter()
                        .all(|p| !has_word(&strings_blanked(p), "lambda"))
                        .then_some(out);
                }
            }
            ',' if depth == 1 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        if depth >= 1 {
            cur.push(c);
        }
    }
    None
}

/// `p` with the contents of its string literals blanked (each character a space).
fn strings_blanked(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in p.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                    out.push(' ');
                } else if c == '\\' {
                    escaped = true;
                    out.push(' ');
                } else if c == q {
                    quote = None;
                    out.push(c);
                } else {
                    out.push(' ');
                }
            }
            None => {
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// The parameters of a `def`'s list, read.
fn read_params(list: &[String], line: usize) -> Signature {
    let mut sig = Signature {
        line,
        is_async: false,
        positional: Vec::new(),
        var_args: None,
        required_keywords: Vec::new(),
    };
    let mut keyword_only = false;
    for p in list {
        let p = strings_blanked(p.trim());
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        if p == "/" {
            for q in &mut sig.positional {
                q.2 = true;
            }
            continue;
        }
        if p == "*" {
            keyword_only = true;
        } else if p.starts_with("**") {
            continue;
        } else if let Some(rest) = p.strip_prefix('*') {
            sig.var_args = Some(
                rest.trim_start()
                    .chars()
                    .take_while(|c| ident(*c))
                    .collect(),
            );
            keyword_only = true;
        } else {
            let default = top_level_eq(p);
            let name: String = p.chars().take_while(|c| ident(*c)).collect();
            if keyword_only {
                if !default {
                    sig.required_keywords.push(name);
                }
            } else {
                sig.positional.push((name, default, false));
            }
        }
    }
    sig
}

/// Whether parameter text `p` (strings blanked) has a default: an `=` outside brackets that is
/// no comparison (`==`, `<=`, `>=`, `!=`).
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

    fn names(s: &Signature) -> Vec<(&str, bool)> {
        s.positional
            .iter()
            .map(|(n, d, _)| (n.as_str(), *d))
            .collect()
    }

    #[test]
    fn a_def_is_read_across_lines_with_annotations_and_defaults() {
        let s = sig("import torch\n\ndef f(x: torch.Tensor,\n      w,  # the weights, (N, K)\n      scale: float = 1.0, *, params=None, **kw):\n    return x\n").unwrap();
        assert_eq!(s.line, 3);
        assert_eq!(names(&s), vec![("x", false), ("w", false), ("scale", true)]);
        assert!(s.var_args.is_none() && s.required_keywords.is_empty());
        let t = sig("def f(a, b=(1, 2), *rest, k, m=dict(a=1)):\n  pass\n").unwrap();
        assert_eq!(names(&t), vec![("a", false), ("b", true)]);
        assert_eq!(t.var_args.as_deref(), Some("rest"));
        assert_eq!(t.required_keywords, vec!["k".to_string()]);
        // Strings, their escapes and brackets in them are no syntax of the list.
        let u = sig("def f(x, sep=\"\\\"\", w: \"Tuple(\" = 1, v: \"a=b\", *, eps):\n  pass\n")
            .unwrap();
        assert_eq!(
            names(&u),
            vec![("x", false), ("sep", true), ("w", true), ("v", false)]
        );
        assert_eq!(u.required_keywords, vec!["eps".to_string()]);
        // Positional-only parameters, non-ASCII names.
        let v = sig("def f(x, params, /, données=1):\n  pass\n").unwrap();
        assert_eq!(v.positional[1], ("params".to_string(), false, true));
        assert_eq!(v.positional[2].0, "données");
        assert!(sig("async def f(x):\n  pass\n").unwrap().is_async);
        assert!(sig("def\tf (x):\n  pass\n").is_some());
    }

    #[test]
    fn crlf_lines_and_non_ascii_text_are_read_at_their_bytes() {
        let s = sig("# a\r\n# b\r\n# \u{e9}\r\ndef f(x, w):\r\n    return x\r\n").unwrap();
        assert_eq!((s.line, s.positional.len()), (4, 2));
        let t = sig("\"\"\"Reference.\"\"\"\r\n\r\nimport math\r\n\r\n\r\nSCALE = float(2)\r\ndef f(x, w):\r\n    return x\r\n").unwrap();
        assert_eq!(names(&t), vec![("x", false), ("w", false)]);
        assert!(sig("\u{feff}def f(x):\n  pass\n").is_some());
    }

    #[test]
    fn what_is_not_certain_is_not_read() {
        // Decorated, also through blank lines, comments and a multi-line decorator.
        assert!(sig("@torch.no_grad()\ndef f(x):\n  pass\n").is_none());
        assert!(sig("@d\n\n# note\ndef f(x):\n  pass\n").is_none());
        assert!(sig("@d(\n    1)\ndef f(x):\n  pass\n").is_none());
        // A block above is no decorator.
        assert!(sig("def g():\n    return 1\ndef f(x):\n  pass\n").is_some());
        // Rebound after the def, defined again in a block, a method.
        assert!(sig("def f(x):\n  pass\nf = g\n").is_none());
        assert!(sig("def f(x):\n  pass\nf: object = lambda x, w: x\n").is_none());
        assert!(sig("def f(x):\n  pass\nf, g = (lambda x, w: x), 1\n").is_none());
        assert!(sig("def f(x):\n  pass\nif True:\n    def f(x, w):\n        pass\n").is_none());
        assert!(sig("class C:\n    def f(self, x):\n        pass\n").is_none());
        // A call of it after the def is no rebinding.
        assert!(sig("def f(x):\n  pass\nprint(f(1))\n").is_some());
        // A lambda among the parameters.
        assert!(sig("def f(x, g=lambda a, b: a):\n  pass\n").is_none());
        // The last `def` wins, as Python binds it; one inside a docstring is no def.
        assert_eq!(
            sig("def f(x):\n  pass\ndef f(x, y):\n  pass\n")
                .unwrap()
                .positional
                .len(),
            2
        );
        let d = sig("def f(x, w):\n    return x\n\n\"\"\"Usage:\ndef f(a):\n\"\"\"\n").unwrap();
        assert_eq!((d.line, d.positional.len()), (1, 2));
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

    fn call(n: usize, paged: bool) -> super::super::reference::Call {
        super::super::reference::Call {
            inputs: (0..n).map(|i| format!("t{i}")).collect(),
            outputs: vec!["y".to_string()],
            paged,
            known: true,
            ..Default::default()
        }
    }

    #[test]
    fn the_call_verify_makes_is_checked_against_the_def() {
        let r = reference();
        let ok = |text: &str, n: usize, paged: bool| check(text, &r, &call(n, paged)).is_ok();
        assert!(ok("def f(x, w):\n  pass\n", 2, false));
        assert!(ok("def f(x, w, params):\n  pass\n", 2, false));
        assert!(ok("def f(x, w, eps=1e-6):\n  pass\n", 2, false));
        assert!(ok("def f(*xs):\n  pass\n", 5, false));
        assert!(ok("def f(q, k, paged_kv):\n  pass\n", 2, true));
        assert!(ok("def f(x, w, *, params):\n  pass\n", 2, false));
        assert!(ok("def f(x, /, w, params=None):\n  pass\n", 2, false));
        let too_few = check("def f(x):\n  pass\n", &r, &call(2, false)).unwrap_err();
        assert!(
            too_few
                .message
                .contains("takes 1 positional parameter but verify passes 2 inputs"),
            "{}",
            too_few.message
        );
        let missing = check("def f(x, w, b):\n  pass\n", &r, &call(2, false)).unwrap_err();
        assert!(
            missing.message.contains("`b` has no default"),
            "{}",
            missing.message
        );
        // Not paged: `paged_kv` is not passed, so it needs a default.
        assert!(!ok("def f(q, k, paged_kv):\n  pass\n", 2, false));
        // `params` in an input's position would get an input and the keyword both.
        assert!(!ok("def f(x, params, w):\n  pass\n", 2, false));
        assert!(!ok("def f(x, w, *, scale):\n  pass\n", 2, false));
        // Passed by keyword to what cannot take one.
        assert!(!ok("def f(x, params, /):\n  pass\n", 1, false));
        assert!(!ok("def f(ckv, paged_kv, /):\n  pass\n", 1, true));
        assert!(!ok("def f(*params):\n  pass\n", 1, false));
        assert!(!ok("def f(x, sep=\"\\\"\", *, eps):\n  pass\n", 1, false));
        assert!(!ok("def f(x, w: \"a=b\"):\n  pass\n", 1, false));
        assert!(!ok("async def f(x):\n  pass\n", 1, false));
    }

    proptest::proptest! {
        /// Any text, Python-like or not, is read without a panic (CRLF, non-ASCII, unclosed
        /// strings and brackets included).
        #[test]
        fn any_text_is_read_without_a_panic(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "def f(", "async def f(", "x", ", ", "w=", "\"", "'", "\\", "\"\"\"", "#",
                    "(", ")", "[", "]", ":", " = ", "/", "*", "**", "\r\n", "\n", "\u{e9}",
                    "lambda", "@d\n", "    ", "f = g\n", "params", "\u{feff}",
                ]),
                0..40,
            )
        ) {
            let text: String = parts.concat();
            let _ = signature(&text, "f");
            let _ = check(&text, &reference(), &call(1, true));
        }
    }
}
