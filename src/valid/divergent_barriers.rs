//! E0406, a named barrier some consumer threads may not reach (I-R2): a declared barrier counts
//! its threads (`named(ID, threads 128)`), so every one of them must arrive at each use. A use
//! under a condition that depends on the thread (`if (threadIdx.x < 64)`, a loop whose bound
//! does), or after a `return` taken under one, leaves the threads that arrived waiting for the
//! others: the worker hangs. The uses read here: the prelude's `mpkc::named_barrier_sync` /
//! `named_barrier_or`, CUDA's `__barrier_sync_count`, the PTX `bar.sync` / `barrier.sync` /
//! `bar.arrive` / `bar.red` of an `asm` string, and a call of a helper that declares a
//! barrier (its body syncs on it: E0014).
//!
//! "Depends on the thread" is read from the text: a condition naming `threadIdx`, the prelude's
//! `lane_id` / `warp_id`, or a local whose initialiser names one of these (to a fixed point:
//! `int const warp = threadIdx.x >> 5;` makes `warp` one). A condition over params,
//! `task_offset` or values loaded from memory is taken for the same in every thread.

use super::body::{call_args, calls_of, strip_comments_and_strings};
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, TaskIr};
use crate::span::Span;
use std::collections::BTreeSet;
use std::ops::Range;

/// The names that differ between the threads of a warpgroup before any local is read.
const THREAD_NAMES: &[&str] = &["threadIdx", "lane_id", "warp_id"];

/// E0406 for each barrier use of the task's inline body that some of its threads may skip.
pub(super) fn divergent_barriers(ir: &TaskIr, sink: &mut Sink) {
    let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.body
    else {
        return;
    };
    if ir.family == crate::ir::Family::Pipeline {
        return;
    }
    let stripped = strip_comments_and_strings(code);
    let at = |r: &Range<usize>| Span::new(code_span.start + r.start, code_span.start + r.end);
    let tainted = thread_locals(&stripped);
    let exits = thread_exits(&stripped, &tainted);
    // One report per exit: the first barrier after it.
    let mut reported_exits = BTreeSet::new();
    for (site, what) in barrier_sites(ir, code, &stripped) {
        if let Some(cond) = governing_conditions(&stripped, site.start)
            .into_iter()
            .find(|c| depends_on_thread(&stripped, c.clone(), &tainted))
        {
            sink.push(
                Diagnostic::error(
                    codes::BODY_SYNC,
                    format!("the inline body's {what} sits under a condition that depends on the thread"),
                )
                .primary(at(&site), "some threads may not reach this")
                .secondary(at(&cond), "differs between threads")
                .note("a declared barrier counts its threads (`named(ID, threads N)`): the threads that skip it never arrive, and the ones that arrived wait for them forever (I-R2)")
                .help("put the condition around the work, not the barrier: every thread reaches the barrier, the ones with nothing to do pass it idle"),
            );
            continue;
        }
        if let Some((exit, word, cond)) = exits
            .iter()
            .find(|(r, _, _)| r.start < site.start)
            .filter(|(r, _, _)| reported_exits.insert(r.start))
        {
            sink.push(
                Diagnostic::error(
                    codes::BODY_SYNC,
                    format!("a thread may leave the inline body by `{word}` before its {what}"),
                )
                .primary(at(&site), "the threads that left never arrive here")
                .secondary(at(exit), format!("`{word}` here"))
                .secondary(at(cond), "under a condition that differs between threads")
                .note("a declared barrier counts its threads (`named(ID, threads N)`): the ones that arrived wait for those that left, forever (I-R2)")
                .help("let every thread reach each barrier: skip the work under the condition instead of leaving, or leave after the last barrier"),
            );
        }
    }
}

/// Each barrier use of the body: its byte range (in `code` and `stripped` alike) and how a
/// message names it.
fn barrier_sites(ir: &TaskIr, code: &str, stripped: &str) -> Vec<(Range<usize>, String)> {
    let mut out = Vec::new();
    for name in [
        "named_barrier_sync",
        "named_barrier_or",
        "__barrier_sync_count",
    ] {
        for (i, args_at) in calls_of(stripped, name) {
            let len: usize = call_args(&stripped[args_at..])
                .iter()
                .map(|a| a.len() + 1)
                .sum();
            out.push((i..(args_at + len).min(stripped.len()), format!("`{name}`")));
        }
    }
    for r in super::asm_barriers::barrier_instructions(code) {
        out.push((r, "PTX barrier".to_string()));
    }
    for u in ir.helpers.iter().filter(|u| !u.helper.barriers.is_empty()) {
        for (i, args_at) in calls_of(stripped, &u.name) {
            out.push((
                i..args_at,
                format!("call of `{}` (whose body syncs on a named barrier)", u.name),
            ));
        }
    }
    out.sort_by_key(|(r, _)| r.start);
    out
}

/// A local whose value depends on the thread, and the byte range of `stripped` where its
/// declaration is in scope.
type Tainted = Vec<(String, Range<usize>)>;

/// The locals of `stripped` whose value depends on the thread: each name assigned or
/// initialised (`NAME = …`, `NAME{…}`, `NAME(…)` after a type) from an expression that names
/// [`THREAD_NAMES`] or such a local in scope there, to a fixed point; each with its scope (the
/// rest of its block, or of its `for` statement when its header declares it), so that a loop
/// counter `i` of one loop that starts at `threadIdx.x` says nothing of another loop's `i`.
fn thread_locals(stripped: &str) -> Tainted {
    let ids = crate::front::cuda::identifiers(stripped);
    let mut tainted: Tainted = Vec::new();
    loop {
        let before = tainted.len();
        for (k, &(i, w)) in ids.iter().enumerate() {
            let after = stripped[i + w.len()..].trim_start();
            let init = after.starts_with('=') && !after.starts_with("==")
                || (after.starts_with(['{', '('])
                    // A declaration `TYPE NAME(…)`: an identifier (or `*`, `&`, `>`) before it.
                    && k > 0
                    && stripped[..i]
                        .trim_end()
                        .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '*' || c == '&' || c == '>'));
            if !init || tainted.iter().any(|(n, r)| n == w && r.contains(&i)) {
                continue;
            }
            let from = i + w.len();
            let end = statement_end(stripped, from);
            if depends_on_thread(stripped, from..end, &tainted) {
                tainted.push((w.to_string(), i..scope_end(stripped, i)));
            }
        }
        if tainted.len() == before {
            break tainted;
        }
    }
}

/// Where the declaration at `i` goes out of scope: the end of the `for` statement whose header
/// holds it, else the `}` closing its block, else the end of the body.
fn scope_end(s: &str, i: usize) -> usize {
    // An unmatched `(` before `i` in the same statement, after `for`.
    let mut depth = 0i32;
    for (j, c) in s[..i].char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth > 0 => depth -= 1,
            '(' => {
                if s[..j].trim_end().ends_with("for") {
                    let Some(close) = matching_close(s, j) else {
                        return s.len();
                    };
                    let rest = &s[close + 1..];
                    let body = close + 1 + (rest.len() - rest.trim_start().len());
                    return if s[body..].starts_with('{') {
                        crate::front::cuda::block_end(s, body).unwrap_or(s.len())
                    } else {
                        statement_end(s, body)
                    };
                }
                break;
            }
            ';' | '{' | '}' => break,
            _ => {}
        }
    }
    let mut depth = 0i32;
    for (j, c) in s[i..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i + j,
            '}' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}

/// The end of the statement that continues at `from`: the first `;` (or an unmatched `}`)
/// outside parentheses, brackets and braces.
fn statement_end(s: &str, from: usize) -> usize {
    let mut depth = 0i32;
    for (j, c) in s[from..].char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            '}' => return from + j,
            ';' if depth == 0 => return from + j,
            _ => {}
        }
    }
    s.len()
}

/// Whether the text of `stripped` at `r` names one of [`THREAD_NAMES`] or a local of `tainted`
/// in its scope there.
fn depends_on_thread(stripped: &str, r: Range<usize>, tainted: &Tainted) -> bool {
    crate::front::cuda::identifiers(&stripped[r.clone()])
        .iter()
        .any(|&(k, w)| {
            THREAD_NAMES.contains(&w)
                || tainted
                    .iter()
                    .any(|(n, scope)| n == w && scope.contains(&(r.start + k)))
        })
}

/// The byte ranges of the conditions that decide whether position `p` of `stripped` runs: the
/// parenthesised head of each `if`, `while`, `for` or `switch` whose block (or single
/// statement) holds `p`, innermost first, and of an `if` whose `else` block holds it.
fn governing_conditions(stripped: &str, p: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    // The statement holding `p` itself: `if (c) f();`.
    let start = statement_start(stripped, p);
    out.extend(head_condition(stripped, start, p));
    // The enclosing blocks.
    let mut opens: Vec<usize> = Vec::new();
    for (j, c) in stripped[..p].char_indices() {
        match c {
            '{' => opens.push(j),
            '}' => {
                opens.pop();
            }
            _ => {}
        }
    }
    for &o in opens.iter().rev() {
        let head_start = statement_start(stripped, o);
        if let Some(c) = head_condition(stripped, head_start, o) {
            out.push(c);
            continue;
        }
        // `} else {`: the condition of the `if` whose block the `}` closes.
        let head = stripped[head_start..o].trim();
        if head == "else" {
            let close = stripped[..head_start].trim_end();
            if close.ends_with('}') {
                let close_at = close.len() - 1;
                if let Some(open) = matching_open(stripped, close_at) {
                    let s = statement_start(stripped, open);
                    out.extend(head_condition(stripped, s, open));
                }
            }
        }
    }
    out
}

/// The start of the statement that holds position `p`: just past the last `;`, `{` or `}`
/// before `p` outside parentheses (a `for` header's `;` is inside them).
fn statement_start(s: &str, p: usize) -> usize {
    let mut depth = 0i32;
    for (j, c) in s[..p].char_indices().rev() {
        match c {
            ')' | ']' => depth += 1,
            '(' | '[' => depth -= 1,
            ';' | '{' | '}' if depth <= 0 => return j + 1,
            _ => {}
        }
    }
    0
}

/// The condition of the control statement that starts at `start` (after optional `else`) and
/// governs position `upto`: `if (…)`, `while (…)`, `for (…)`, `switch (…)` whose parenthesised
/// head ends before `upto`.
fn head_condition(s: &str, start: usize, upto: usize) -> Option<Range<usize>> {
    let text = &s[start..upto];
    let lead = text.len() - text.trim_start().len();
    let mut rest = text.trim_start();
    let mut at = start + lead;
    if let Some(r) = rest.strip_prefix("else") {
        if r.starts_with(|c: char| c.is_whitespace()) {
            let t = r.trim_start();
            at += rest.len() - t.len();
            rest = t;
        }
    }
    let word = ["if", "while", "for", "switch"].into_iter().find(|w| {
        rest.starts_with(w)
            && !rest[w.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })?;
    let after = &rest[word.len()..];
    let open = at + word.len() + (after.len() - after.trim_start().len());
    if !s[open..].starts_with('(') {
        return None;
    }
    let close = matching_close(s, open)?;
    (close < upto).then_some(open + 1..close)
}

/// The `)` matching the `(` at `open`.
fn matching_close(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (j, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + j);
                }
            }
            _ => {}
        }
    }
    None
}

/// The `{` matching the `}` at `close`.
fn matching_open(s: &str, close: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (j, c) in s[..=close].char_indices().rev() {
        match c {
            '}' => depth += 1,
            '{' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// Each `return` or `goto` of the body (outside lambdas) taken under a condition that depends
/// on the thread: its range, its word, and that condition's range.
fn thread_exits(
    stripped: &str,
    tainted: &Tainted,
) -> Vec<(Range<usize>, &'static str, Range<usize>)> {
    let mut out = Vec::new();
    for word in ["return", "goto"] {
        for i in super::body::word_offsets(stripped, word) {
            if super::grid_sync::in_lambda(stripped, i) {
                continue;
            }
            if let Some(c) = governing_conditions(stripped, i)
                .into_iter()
                .find(|c| depends_on_thread(stripped, c.clone(), tainted))
            {
                out.push((i..i + word.len(), word, c));
            }
        }
    }
    out.sort_by_key(|(r, _, _)| r.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conds(code: &str, marker: &str) -> Vec<String> {
        let p = code.find(marker).unwrap();
        governing_conditions(code, p)
            .into_iter()
            .map(|r| code[r].to_string())
            .collect()
    }

    #[test]
    fn the_conditions_over_a_position_are_found() {
        let code = "int const warp = threadIdx.x >> 5; if (warp == 0) { for (int i = 0; i < 4; ++i) { X(); } } else { Y(); } if (n > 0) Z();";
        assert_eq!(conds(code, "X()"), ["int i = 0; i < 4; ++i", "warp == 0"]);
        assert_eq!(conds(code, "Y()"), ["warp == 0"]);
        assert_eq!(conds(code, "Z()"), ["n > 0"]);
        let tainted: Vec<String> = thread_locals(code).into_iter().map(|(n, _)| n).collect();
        assert_eq!(tainted, ["warp"]);
    }

    #[test]
    fn locals_taint_through_initialisers() {
        let code = "int const lane = threadIdx.x & 31; bool const leader = lane == 0; int64_t const row = task_offset; float v{mpkc::warp_id() * 2.f};";
        let t: Vec<String> = thread_locals(code).into_iter().map(|(n, _)| n).collect();
        assert_eq!(t, ["lane", "leader", "v"]);
        // A loop counter's scope is its loop: the second loop's `i` starts at 0.
        let loops = "for (int i = threadIdx.x; i < 64; i += 32) { y[i] = 0; } for (int i = 0; i < 2; ++i) X();";
        let t = thread_locals(loops);
        assert_eq!(t.len(), 1);
        let p = loops.find("X()").unwrap();
        assert_eq!(
            governing_conditions(loops, p)
                .into_iter()
                .filter(|c| depends_on_thread(loops, c.clone(), &t))
                .count(),
            0
        );
    }
}
