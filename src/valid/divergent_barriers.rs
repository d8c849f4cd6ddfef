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
//! `lane_id` / `warp_id`, a cooperative group's `thread_rank` / `thread_index`, or a local whose
//! binding in force there (its declaration, an assignment, a compound assignment) names one of
//! these (to a fixed point: `int const warp = threadIdx.x >> 5;` makes `warp` one). A condition
//! over params, `task_offset`, values loaded from memory or `named_barrier_or`'s result is taken
//! for the same in every thread, and so is `threadIdx.x < kConsumerThreads`. A `for` loop's
//! condition is its middle clause. A thread-dependent `return` or `goto` counts before a barrier
//! unless the `goto` jumps to a label before it, or the exit lies in a fast path (a block entered
//! alike by every thread that ends in its own `return`).
//!
//! A thread-dependent `break` or `continue` counts for the barriers of its loop.
//!
//! Not read (known limits, each a hang the rule does not report): a `do … while` condition, the earlier
//! conditions of an `else if` chain, an `else` without braces, a barrier inside a local lambda
//! called under a condition, a lane read through `asm` (`%laneid`), a prelude function called
//! unqualified after `using namespace mpkc`.

use super::body::{call_args, calls_of, strip_comments_and_strings};
use super::cxx_scan::{
    enclosing_opens, end_at, is_member_or_qualified, matching_backward, matching_forward,
    statement_start,
};
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, TaskIr};
use crate::span::Span;
use std::collections::BTreeSet;
use std::ops::Range;

/// The names that differ between the threads of a warpgroup before any local is read.
const THREAD_NAMES: &[&str] = &[
    "threadIdx",
    "lane_id",
    "warp_id",
    "thread_rank",
    "thread_index",
];

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
            .find(|c| divergent(&stripped, c, &tainted))
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
            .find(|(r, w, _)| match *w {
                // A `break` leaves the loop's later iterations too; a `continue` the rest of this
                // one: barriers of the loop the exit belongs to.
                "break" | "continue" => loop_block(&stripped, r.start).is_some_and(|l| {
                    l.contains(&site.start) && (*w == "break" || r.start < site.start)
                }),
                _ => r.start < site.start && exit_skips(&stripped, r, w, site.start, &tainted),
            })
            .filter(|(r, _, _)| reported_exits.insert(r.start))
        {
            sink.push(
                Diagnostic::error(
                    codes::BODY_SYNC,
                    match *word {
                        "break" => format!("a thread may leave its loop by `break` and miss the inline body's {what}"),
                        "continue" => format!("a thread may skip the rest of its loop iteration by `continue` and miss the inline body's {what}"),
                        _ => format!("a thread may leave the inline body by `{word}` before its {what}"),
                    },
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
    // The prelude's other functions that sync (`mpkc::batch_argmax`, `mpkc::grid_barrier`).
    for name in super::warp_collectives::prelude_barrier_functions()
        .iter()
        .filter(|n| !matches!(n.as_str(), "named_barrier_sync" | "named_barrier_or"))
    {
        for i in super::body::word_offsets(stripped, name) {
            if !stripped[..i].trim_end().ends_with("mpkc::") {
                continue;
            }
            // `NAME(` or `NAME<…>(` (a template's arguments).
            let mut j = i + name.len();
            let rest = stripped[j..].trim_start();
            j += stripped[j..].len() - rest.len();
            if rest.starts_with('<') {
                let Some(close) = matching_forward(stripped, j, '<', '>') else {
                    continue;
                };
                j = close + 1;
            }
            if stripped[j..].trim_start().starts_with('(') {
                out.push((
                    i..j,
                    format!("`mpkc::{name}` (which syncs on a named barrier)"),
                ));
            }
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

/// One binding of a local: its name, where it is bound (the name's byte offset), the range
/// where the binding holds (the rest of its block, or its `for` statement when the header binds
/// it), the range of the value bound (the initialiser or the right-hand side), whether it adds
/// to the value before it (`+=`, `|=`, …), and whether the value depends on the thread.
#[derive(Clone, Debug)]
struct Binding {
    name: String,
    at: usize,
    scope: Range<usize>,
    value: Range<usize>,
    compound: bool,
    tainted: bool,
}

/// The bindings of the body's locals, each marked where its value depends on the thread.
type Tainted = Vec<Binding>;

/// C++ words that come before a name without declaring it (`return f(x)`, `else g(x)`).
const NOT_TYPES: &[&str] = &[
    "return",
    "else",
    "case",
    "do",
    "throw",
    "sizeof",
    "new",
    "delete",
    "goto",
    "co_return",
    "co_yield",
    "typeid",
    "alignof",
    "decltype",
];

/// The bindings of `stripped`'s locals (`NAME = …`, a compound assignment `NAME += …`, a
/// declaration `TYPE NAME(…)` or `TYPE NAME{…}`), each marked where its value names
/// [`THREAD_NAMES`] or a local whose binding in force there is marked, to a fixed point. A value
/// that is the result of `named_barrier_or` is the same in every thread (the barrier's
/// reduction), whatever its operands. A later binding of a name hides an earlier one where both
/// hold: a loop counter declared or reset from a constant (`for (int k = 0; …)`, `for (i = 0;
/// …)`) is uniform inside its loop though an earlier `k` or `i` came from `threadIdx`.
fn thread_locals(stripped: &str) -> Tainted {
    let ids = crate::front::cuda::identifiers(stripped);
    let mut out: Tainted = Vec::new();
    for (k, &(i, w)) in ids.iter().enumerate() {
        let after_at = i + w.len();
        let after = stripped[after_at..].trim_start();
        let op_at = after_at + (stripped[after_at..].len() - after.len());
        let before = stripped[..i].trim_end();
        // Not a member or a qualified name (`p.x = …`, `ns::x = …`).
        if is_member_or_qualified(stripped, i) {
            continue;
        }
        let compound = ["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]
            .iter()
            .find(|o| after.starts_with(**o))
            .map(|o| o.len());
        let value_from = if after.starts_with('=') && !after.starts_with("==") {
            op_at + 1
        } else if let Some(n) = compound {
            op_at + n
        } else if after.starts_with(['{', '('])
            && k > 0
            && ids[k - 1].0 + ids[k - 1].1.len() == before.len()
            && !NOT_TYPES.contains(&ids[k - 1].1)
        {
            // `TYPE NAME(…)` / `TYPE NAME{…}`: the previous token is a (type) name.
            op_at + 1
        } else {
            continue;
        };
        out.push(Binding {
            name: w.to_string(),
            at: i,
            scope: i..scope_end(stripped, i),
            value: value_from..end_at(stripped, value_from, &[';', ',']),
            compound: compound.is_some(),
            tainted: false,
        });
    }
    loop {
        let mut changed = false;
        for b in 0..out.len() {
            if out[b].tainted {
                continue;
            }
            let v = out[b].value.clone();
            let uniform_reduction = stripped[v.clone()].contains("named_barrier_or");
            let tainted = !uniform_reduction
                && (depends_on_thread(stripped, v, &out)
                    || (out[b].compound && binding_tainted(&out, &out[b].name, out[b].at)));
            if tainted {
                out[b].tainted = true;
                changed = true;
            }
        }
        if !changed {
            break out;
        }
    }
}

/// Whether the binding of `name` in force at byte `q` (the latest one before `q` whose scope
/// holds `q`) depends on the thread.
fn binding_tainted(bindings: &Tainted, name: &str, q: usize) -> bool {
    bindings
        .iter()
        .filter(|b| b.name == name && b.at < q && b.scope.contains(&q))
        .max_by_key(|b| b.at)
        .is_some_and(|b| b.tainted)
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
                    let Some(close) = matching_forward(s, j, '(', ')') else {
                        return s.len();
                    };
                    let rest = &s[close + 1..];
                    let body = close + 1 + (rest.len() - rest.trim_start().len());
                    return if s[body..].starts_with('{') {
                        crate::front::cuda::block_end(s, body).unwrap_or(s.len())
                    } else {
                        end_at(s, body, &[';'])
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

/// Whether the text of `stripped` at `r` names one of [`THREAD_NAMES`] (also as a member or a
/// qualified name: `mpkc::lane_id()`, `tile.thread_rank()`) or a local whose binding in force
/// there depends on the thread (a member `p.x` or a qualified `params::x` is no local).
fn depends_on_thread(stripped: &str, r: Range<usize>, tainted: &Tainted) -> bool {
    crate::front::cuda::identifiers(&stripped[r.clone()])
        .iter()
        .any(|&(k, w)| {
            if THREAD_NAMES.contains(&w) {
                return true;
            }
            let q = r.start + k;
            !is_member_or_qualified(stripped, q) && binding_tainted(tainted, w, q)
        })
}

/// Whether the condition at `c` may differ between the consumer threads.
fn divergent(stripped: &str, c: &Range<usize>, tainted: &Tainted) -> bool {
    !always_true_for_consumers(&stripped[c.clone()])
        && depends_on_thread(stripped, c.clone(), tainted)
}

/// Whether condition text `c` is true in each of the 128 consumer threads, whose `threadIdx.x`
/// is 0..127: `threadIdx.x < kConsumerThreads` or `< 128` (a guard, not a branch).
fn always_true_for_consumers(c: &str) -> bool {
    let t: String = c.split_whitespace().collect();
    matches!(
        t.as_str(),
        "threadIdx.x<kConsumerThreads" | "threadIdx.x<128" | "threadIdx.x<=127"
    )
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
    let opens = enclosing_opens(stripped, p);
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
                if let Some(open) = matching_backward(stripped, close_at, '{', '}') {
                    let s = statement_start(stripped, open);
                    out.extend(head_condition(stripped, s, open));
                }
            }
        }
    }
    out
}

/// The condition of the control statement that starts at `start` (after optional `else`) and
/// governs position `upto`: `if (…)`, `while (…)`, `for (…)`, `switch (…)` whose parenthesised
/// head ends before `upto`.
fn head_condition(s: &str, start: usize, upto: usize) -> Option<Range<usize>> {
    let text = &s[start..upto];
    let lead = text.len() - text.trim_start().len();
    let mut rest = text.trim_start();
    let mut at = start + lead;
    // Past preprocessor lines (`#pragma unroll 1`) and labels (`case 1:`, `default:`, `done:`).
    loop {
        if rest.starts_with('#') {
            let nl = rest.find('\n').map_or(rest.len(), |n| n + 1);
            let t = rest[nl..].trim_start();
            at += rest.len() - t.len();
            rest = t;
            continue;
        }
        let label_end = if rest.starts_with("case") {
            rest.find(':').filter(|&c| !rest[c..].starts_with("::"))
        } else {
            let w = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let after = rest[w..].trim_start();
            (w > 0 && after.starts_with(':') && !after.starts_with("::"))
                .then(|| rest.len() - after.len())
        };
        match label_end {
            Some(c) => {
                let t = rest[c + 1..].trim_start();
                at += rest.len() - t.len();
                rest = t;
            }
            None => break,
        }
    }
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
    let close = matching_forward(s, open, '(', ')')?;
    if close >= upto {
        return None;
    }
    if word == "for" {
        // The trip count is the condition's (the middle clause): `for (int s = 0, i =
        // threadIdx.x; s < n; …)` runs alike in every thread whatever `i` starts at.
        let mut depth = 0i32;
        let semis: Vec<usize> = s[open + 1..close]
            .char_indices()
            .filter_map(|(j, c)| {
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    ';' if depth == 0 => return Some(open + 1 + j),
                    _ => {}
                }
                None
            })
            .collect();
        if let [a, b, ..] = semis[..] {
            return Some(a + 1..b);
        }
    }
    Some(open + 1..close)
}

/// Each `return`, `goto`, `break` or `continue` of the body (outside lambdas) taken under a
/// condition that depends on the thread: its range, its word, and that condition's range.
fn thread_exits(
    stripped: &str,
    tainted: &Tainted,
) -> Vec<(Range<usize>, &'static str, Range<usize>)> {
    let mut out = Vec::new();
    for word in ["return", "goto", "break", "continue"] {
        for i in super::body::word_offsets(stripped, word) {
            if super::grid_sync::in_lambda(stripped, i) {
                continue;
            }
            if let Some(c) = governing_conditions(stripped, i)
                .into_iter()
                .find(|c| divergent(stripped, c, tainted))
            {
                out.push((i..i + word.len(), word, c));
            }
        }
    }
    out.sort_by_key(|(r, _, _)| r.start);
    out
}

/// The block of the innermost loop (`for`, `while`, `do`) holding position `i`, where no
/// `switch` lies between (a `break` there leaves the `switch`): from its `{` to past its `}`.
fn loop_block(s: &str, i: usize) -> Option<Range<usize>> {
    let opens = enclosing_opens(s, i);
    for &o in opens.iter().rev() {
        let head = s[statement_start(s, o)..o].trim_start();
        let head = head.strip_prefix("else").map_or(head, str::trim_start);
        let word: String = head
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        match word.as_str() {
            "for" | "while" | "do" => {
                return Some(o..crate::front::cuda::block_end(s, o).unwrap_or(s.len()))
            }
            "switch" => return None,
            _ => {}
        }
    }
    None
}

/// Whether a thread that takes the exit at `exit` (a `return` or `goto` of [`thread_exits`])
/// can otherwise reach `site`: not where a `goto` jumps forward to a label before `site`
/// (every thread arrives there), nor where the exit lies in a block that does not hold `site`,
/// is entered under a condition the same in every thread, and ends in a `return` of its own (a
/// fast path: the threads that enter it all leave, none reaches `site` that way).
fn exit_skips(
    stripped: &str,
    exit: &Range<usize>,
    word: &str,
    site: usize,
    tainted: &Tainted,
) -> bool {
    if word == "goto" {
        let rest = stripped[exit.end..].trim_start();
        let label: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let target = super::body::word_offsets(stripped, &label).find(|&k| {
            k > exit.end
                && stripped[k + label.len()..].trim_start().starts_with(':')
                && !stripped[k + label.len()..].trim_start().starts_with("::")
        });
        if target.is_some_and(|k| k < site) {
            return false;
        }
    }
    // The blocks holding the exit, innermost first.
    let opens = enclosing_opens(stripped, exit.start);
    for &o in opens.iter().rev() {
        let Some(close) = crate::front::cuda::block_end(stripped, o) else {
            continue;
        };
        if (o..close).contains(&site) {
            break;
        }
        let head_start = statement_start(stripped, o);
        let uniform_entry = head_condition(stripped, head_start, o)
            .is_some_and(|c| !divergent(stripped, &c, tainted));
        let last = stripped[o + 1..close - 1].trim_end();
        let ends_in_return = last.ends_with(';') && {
            let stmt = statement_start(stripped, o + 1 + last.len() - 1);
            stripped[stmt..].trim_start().starts_with("return")
        };
        if uniform_entry && ends_in_return {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conds(code: &str, marker: &str) -> Vec<String> {
        let Some(p) = code.find(marker) else {
            panic!("the test's code has no `{marker}`: {code}")
        };
        governing_conditions(code, p)
            .into_iter()
            .map(|r| code[r].to_string())
            .collect()
    }

    #[test]
    fn the_conditions_over_a_position_are_found() {
        let code = "int const warp = threadIdx.x >> 5; if (warp == 0) { for (int i = 0; i < 4; ++i) { X(); } } else { Y(); } if (n > 0) Z();";
        assert_eq!(conds(code, "X()"), [" i < 4", "warp == 0"]);
        assert_eq!(conds(code, "Y()"), ["warp == 0"]);
        assert_eq!(conds(code, "Z()"), ["n > 0"]);
        let tainted: Vec<String> = thread_locals(code)
            .into_iter()
            .filter(|b| b.tainted)
            .map(|b| b.name)
            .collect();
        assert_eq!(tainted, ["warp"]);
    }

    #[test]
    fn locals_taint_through_initialisers() {
        let code = "int const lane = threadIdx.x & 31; bool const leader = lane == 0; int64_t const row = task_offset; float v{mpkc::warp_id() * 2.f};";
        let names = |code: &str| -> Vec<String> {
            thread_locals(code)
                .into_iter()
                .filter(|b| b.tainted)
                .map(|b| b.name)
                .collect()
        };
        assert_eq!(names(code), ["lane", "leader", "v"]);
        // Not a declaration: a call after a product, a call after `return`.
        assert!(names("acc += 0.5f * f(threadIdx.x); float s = f(row);")
            .iter()
            .all(|n| n == "acc"));
        // A compound assignment adds the thread.
        assert_eq!(names("int col = 0; col += threadIdx.x * 4;"), ["col"]);
        // The result of `named_barrier_or` is the same in every thread.
        assert!(
            names("bool any = mpkc::named_barrier_or(BAR_B, 128, threadIdx.x == 0);").is_empty()
        );
        // A loop counter's scope is its loop: the second loop's `i` starts at 0.
        let loops = "for (int i = threadIdx.x; i < 64; i += 32) { y[i] = 0; } for (int i = 0; i < 2; ++i) X();";
        let t = thread_locals(loops);
        let Some(p) = loops.find("X()") else {
            panic!("the test's code has no `X()`: {loops}")
        };
        assert_eq!(
            governing_conditions(loops, p)
                .into_iter()
                .filter(|c| depends_on_thread(loops, c.clone(), &t))
                .count(),
            0
        );
    }
}
