//! The calls of a grid-wide task's `grid_sync(site)` (E0602, contract doc §5, I-H4): where the
//! body may call it (a statement of its top level, never before an early `return`/`goto`), what
//! a site may be (a constant in range, each passed once, every counter passed), what the body may
//! not do around it (name the counters, take `kNumTasks` for a constant), and where `grid_sync`
//! and the prelude's `mpkc::grid_barrier` are reserved calls (`reserved_calls`, every task).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, TaskIr};
use crate::span::Span;

/// The body's `grid_sync(site)` calls: at least one; each a statement of the body's top level
/// (not in a block, branch, loop, lambda, expression or preprocessor directive: every thread of
/// every task passes each of them once per step), with one site that is a constant expression
/// mpkc evaluates (a site computed at run time could differ between tasks or repeat), in
/// `0..sites` and written once (the second pass of a site would find the count the first reached
/// and not wait). The counters themselves are `grid_sync`'s: the body does not name them, and
/// `kNumTasks`, the runtime's worker count here, is no compile-time constant.
pub(super) fn sync_calls(
    ir: &TaskIr,
    code: &str,
    code_span: Span,
    (sites, counters): (Option<i64>, Option<(&str, Span)>),
    span: Span,
    sink: &mut Sink,
) {
    let stripped = super::body::strip_comments_and_strings(code);
    let at =
        |r: std::ops::Range<usize>| Span::new(code_span.start + r.start, code_span.start + r.end);
    let counters_span = counters.map(|(_, s)| s);
    if let Some((name, i)) = counters.and_then(|(n, _)| {
        super::body::word_offsets(&stripped, n)
            .next()
            .map(|i| (n, i))
    }) {
        sink.push(
            Diagnostic::error(codes::GRID_WIDE, format!("the body names the grid barrier counters `{name}`, which are `grid_sync`'s"))
                .primary(at(i..i + name.len()), format!("`{name}` read or written here"))
                .note("a counter written or read outside `grid_sync` breaks the count every task of every step waits for")
                .help("synchronise with `grid_sync(site)` only; keep the body's own data in other tensors (a `scratch` one for partials)"),
        );
    }
    for i in super::body::word_offsets(&stripped, "kNumTasks") {
        if let Some(what) = compile_time_context(&stripped, i) {
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, format!("`kNumTasks` in {what}, but a grid-wide task's count is known at run time only"))
                    .primary(at(i..i + "kNumTasks".len()), "the runtime's worker count (runtime_config.num_workers)")
                    .help("use `kNumTasks` in run-time code (a bound, a division) or check it at run time: `if (kNumTasks > LIMIT) __trap();`"),
            );
        }
    }
    let calls = super::body::calls_of(&stripped, "grid_sync");
    if calls.is_empty() {
        sink.push(
            Diagnostic::error(codes::GRID_WIDE, "a grid-wide task's body never calls `grid_sync`")
                .primary(span, "grid-wide: one task per worker for an in-op grid barrier")
                .secondary(code_span, "no `grid_sync(site)` here")
                .note("the exception to per-tile tasks exists for the grid barrier; without one the op is per-tile tasks the scheduler may place freely")
                .help("call `grid_sync(0);` at the body's top level where every task's writes must be seen by all, or write `granularity per_tile(tasks N)`"),
        );
        return;
    }
    if let Some((r, w)) = calls
        .last()
        .and_then(|(last, _)| early_return(&stripped, *last))
    {
        sink.push(
            Diagnostic::error(codes::GRID_WIDE, format!("the body may leave by `{w}` before a `grid_sync`"))
                .primary(at(r..r + w.len()), "a task leaving here skips the grid barrier after it")
                .note("every task of the op passes every site: one that left early leaves the others waiting for its arrival, a hang")
                .help("let every task reach each `grid_sync` (skip its work with a condition instead of leaving), or leave after the last one"),
        );
    }
    let consts = super::body_constants::body_constants(ir, code);
    let mut seen: Vec<(i64, Span)> = Vec::new();
    // Whether every call was read (placed, one constant site): only then are unpassed sites known.
    let mut complete = true;
    for (call_at, args_at) in calls {
        let args = super::body::call_args(&stripped[args_at..]);
        let len: usize = args.iter().map(|a| a.len() + 1).sum();
        let end = (args_at + len).min(stripped.len());
        let call = at(call_at..end);
        if let Some(place) = placement(&stripped, call_at, end) {
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, format!("`grid_sync` is called in {place}"))
                    .primary(call, "not a statement of the body's top level")
                    .note("every one of the 128 threads of every task passes each site exactly once per step; inside a branch, loop, lambda, macro or expression mpkc cannot see that it does, and a site passed twice or skipped releases early or hangs")
                    .help("write `grid_sync(SITE);` as a statement of the body itself, outside any block"),
            );
            complete = false;
            continue;
        }
        let site = match &args[..] {
            [one] if !one.trim().is_empty() => one.trim(),
            _ => {
                let n = if args.len() == 1 { 0 } else { args.len() };
                sink.push(
                    Diagnostic::error(
                        codes::GRID_WIDE,
                        format!("`grid_sync` takes one argument, the site; this call passes {n}"),
                    )
                    .primary(call, "here")
                    .help(
                        "write `grid_sync(SITE)` with SITE a constant in 0..the counters' extent",
                    ),
                );
                complete = false;
                continue;
            }
        };
        let Some(k) = super::body_constants::const_int_with(site, &consts) else {
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, format!("the site of `grid_sync({site})` is not a constant mpkc can evaluate"))
                    .primary(call, "the site")
                    .note("a site computed at run time may differ between tasks (each would wait at its own counter: a hang) or repeat in a step; mpkc checks constant sites only")
                    .help("write the site as an integer constant expression of numbers, `params::`, `kConsumerThreads` and `BAR_` names: `grid_sync(0)`"),
            );
            complete = false;
            continue;
        };
        if let Some(n) = sites.filter(|n| k < 0 || k >= *n) {
            let help = if k < 0 {
                format!("sites count from 0: use one in 0..{n}")
            } else {
                format!("use a site in 0..{n}, or declare {} counters", k + 1)
            };
            complete = false;
            sink.push(
                Diagnostic::error(
                    codes::GRID_WIDE,
                    format!(
                        "`grid_sync({k})` names site {k}, but the grid barrier counters hold {n}"
                    ),
                )
                .primary(call, format!("site {k}"))
                .help(help),
            );
        }
        if let Some((_, first)) = seen.iter().find(|(s, _)| *s == k) {
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, format!("site {k} is passed twice in one step"))
                    .primary(call, "the second `grid_sync` of this site")
                    .secondary(*first, "the first")
                    .note("each pass adds one per task and waits for `num_workers * (iter_num + 1)`: the second pass finds the count the first reached and goes through without waiting")
                    .help("give each barrier of the step its own site (and a counter for it)"),
            );
        } else {
            seen.push((k, call));
        }
    }
    // Every counter is passed (verify checks each reached the task count): a site never passed
    // is a counter the wiring seeds for nothing, or a call the body lost.
    if let Some(n) = sites.filter(|_| complete) {
        let missing: Vec<String> = (0..n.min(64))
            .filter(|k| !seen.iter().any(|(s, _)| s == k))
            .map(|k| k.to_string())
            .collect();
        if !missing.is_empty() {
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, format!("no `grid_sync` passes site(s) {} of the {n} grid barrier counters", missing.join(", ")))
                    .primary(counters_span.unwrap_or(span), format!("{n} site(s) declared"))
                    .note("each counter is one barrier of the step: a counter no `grid_sync` passes is seeded and checked for nothing (verify expects every counter at the task count)")
                    .help(format!("declare {} counter(s), one per `grid_sync` site, or pass the missing sites", seen.len())),
            );
        }
    }
}

/// What keeps the call of `stripped[at..end]` from being a statement of the body's top level,
/// if anything: a preprocessor directive or conditional, an enclosing block or parenthesis, a
/// preceding branch or loop header (`)`, `else`, `do`), or an expression around it.
fn placement(stripped: &str, at: usize, end: usize) -> Option<&'static str> {
    let before = &stripped[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    if stripped[line_start..at].trim_start().starts_with('#') {
        return Some("a preprocessor directive (a macro)");
    }
    let mut conditional = 0i32;
    for line in before.lines() {
        let l = line.trim_start();
        if let Some(d) = l.strip_prefix('#') {
            let d = d.trim_start();
            if d.starts_with("if") {
                conditional += 1;
            } else if d.starts_with("endif") {
                conditional -= 1;
            }
        }
    }
    if conditional > 0 {
        return Some("a preprocessor conditional");
    }
    let (mut braces, mut parens) = (0i32, 0i32);
    for c in before.chars() {
        match c {
            '{' => braces += 1,
            '}' => braces -= 1,
            '(' | '[' => parens += 1,
            ')' | ']' => parens -= 1,
            _ => {}
        }
    }
    if braces > 0 {
        return Some("a block (a branch, a loop or a lambda)");
    }
    if parens > 0 {
        return Some("an expression");
    }
    // The token before the call, over any preprocessor lines between (`#endif`).
    let mut prev = before.trim_end();
    while let Some(l) = prev
        .rsplit('\n')
        .next()
        .filter(|l| l.trim_start().starts_with('#'))
    {
        prev = prev[..prev.len() - l.len()].trim_end();
    }
    let prev_word: String = prev
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    match prev.chars().last() {
        None | Some(';') | Some('}') | Some('{') => {}
        Some(')') => return Some("a branch or a loop (after its condition)"),
        _ if prev_word == "else" || prev_word == "do" => {
            return Some("a branch or a loop (after its condition)")
        }
        _ => return Some("an expression"),
    }
    if !stripped[end..].trim_start().starts_with(';') {
        return Some("an expression");
    }
    None
}

/// Whether `kNumTasks` at byte `i` of `stripped` stands where C++ needs a compile-time constant:
/// in a `static_assert`, a `constexpr` declaration or `if constexpr`, or a template argument
/// list of the statement (its text from the previous `;`, `{` or `}`).
fn compile_time_context(stripped: &str, i: usize) -> Option<&'static str> {
    let from = stripped[..i].rfind([';', '{', '}']).map_or(0, |p| p + 1);
    let statement = &stripped[from..i];
    let has = |w: &str| super::body::names_word(statement, w);
    if has("static_assert") {
        Some("a `static_assert`")
    } else if has("constexpr") {
        Some("a `constexpr` expression")
    } else if array_bound(statement) {
        Some("an array bound")
    } else {
        None
    }
}

/// Whether `statement` (its text up to a `kNumTasks`) ends inside the brackets of an array
/// declaration, `TYPE NAME[…`: two words before the open bracket, the first not a keyword that
/// starts an expression (`return a[…]` indexes).
fn array_bound(statement: &str) -> bool {
    let mut depth = 0i32;
    let Some(open) = statement.char_indices().rev().find_map(|(i, c)| {
        match c {
            ']' => depth += 1,
            '[' if depth == 0 => return Some(i),
            '[' => depth -= 1,
            _ => {}
        }
        None
    }) else {
        return false;
    };
    let words: Vec<&str> = statement[..open]
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let tail = statement[..open].trim_end();
    let ends_with_word = tail.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
    let before_name = tail
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
        .trim_end();
    ends_with_word
        && words.len() >= 2
        && before_name
            .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '*' || c == '&')
        && !matches!(
            words[words.len() - 2],
            "return" | "case" | "else" | "do" | "throw" | "sizeof" | "co_return" | "delete"
        )
}

/// The first `return` or `goto` of the body that is not inside a lambda and comes before its
/// last `grid_sync` call (at `last`): the task would leave before a barrier the others wait at.
fn early_return(stripped: &str, last: usize) -> Option<(usize, &'static str)> {
    ["return", "goto"]
        .into_iter()
        .flat_map(|w| super::body::word_offsets(&stripped[..last], w).map(move |i| (i, w)))
        .filter(|&(i, _)| !in_lambda(stripped, i))
        .min_by_key(|&(i, _)| i)
}

/// Whether byte `i` of `stripped` lies in a lambda's body: one of its enclosing `{` follows a
/// lambda introducer (`]`, `](…)`, `](…) mutable`, `](…) noexcept`, `](…) -> T`,
/// `](…) __device__ -> decltype(…)`).
pub(super) fn in_lambda(stripped: &str, i: usize) -> bool {
    super::cxx_scan::enclosing_opens(stripped, i)
        .iter()
        .any(|&o| {
            let mut head = stripped[..o].trim_end();
            // `-> T`: the return type after the `)` (`-> float`, `-> decltype(a + b)`: balanced
            // parentheses, no statement between).
            if let Some(a) = head.rfind("->") {
                let ret = &head[a..];
                let balanced = ret.matches('(').count() == ret.matches(')').count();
                if balanced && !ret.contains([';', '{', '}']) {
                    head = head[..a].trim_end();
                }
            }
            // The specifiers between the parameter list and the body.
            loop {
                let stripped_spec = ["mutable", "noexcept", "constexpr", "__device__", "__host__"]
                    .iter()
                    .find_map(|w| {
                        head.strip_suffix(w).filter(|h| {
                            !h.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                        })
                    });
                match stripped_spec {
                    Some(h) => head = h.trim_end(),
                    None => break,
                }
            }
            if head.ends_with(']') {
                return true;
            }
            if !head.ends_with(')') {
                return false;
            }
            // The matching `(` of the parameter list, then `]` before it.
            super::cxx_scan::matching_backward(head, head.len() - 1, '(', ')')
                .is_some_and(|k| head[..k].trim_end().ends_with(']'))
        })
}

/// E0602 for the reserved calls outside their place, in every task: `mpkc::grid_barrier` is the
/// generated `grid_sync`'s (a body calling it directly bypasses the checks above, on a per-tile
/// task a deadlock); `grid_sync` exists only in the consumer body of a grid-wide task (a loader
/// body, a helper and a per-tile task have none: nvcc would reject the call).
pub(super) fn reserved_calls(ir: &TaskIr, sink: &mut Sink) {
    let grid_wide = ir.granularity.is_grid_wide();
    // A helper's function is emitted outside the consumer, where no `grid_sync` is in scope.
    for h in &ir.helpers {
        let Some(BodyIr::Cuda { code, .. }) = &h.helper.body else {
            continue;
        };
        let stripped = super::body::strip_comments_and_strings(code);
        if let Some(name) = ["grid_sync", "grid_barrier"]
            .into_iter()
            .find(|n| !super::body::calls_of(&stripped, n).is_empty())
        {
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, format!("helper `{}` calls `{name}`", h.name))
                    .primary(h.span, "its body is a function of its own")
                    .note("`grid_sync(site)` is a local of a grid-wide task's consumer body; a helper's function cannot see it")
                    .help("call `grid_sync(site)` in the task's body, between the helper calls"),
            );
        }
    }
    let bodies = [(&ir.body, false), (&ir.loader_body, true)];
    for (body, loader) in bodies {
        let Some(BodyIr::Cuda {
            code, code_span, ..
        }) = body
        else {
            continue;
        };
        let stripped = super::body::strip_comments_and_strings(code);
        let at = |r: std::ops::Range<usize>| {
            Span::new(code_span.start + r.start, code_span.start + r.end)
        };
        for (i, _) in super::body::calls_of(&stripped, "grid_barrier") {
            let help = if grid_wide {
                "call `grid_sync(site)`, the generated barrier over the task's counters"
            } else {
                "declare the task `granularity grid_wide(barrier NAME, skip_after_step0, justification \"…\")` with an `i64[SITES] inout grid_barrier` tensor and call `grid_sync(site)`"
            };
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, "the body calls `grid_barrier`, the prelude's barrier behind the generated `grid_sync`")
                    .primary(at(i..i + "grid_barrier".len()), "called directly")
                    .note("a grid barrier needs every task of the op resident at once and counters seeded once (I-H4): only a grid-wide task's `grid_sync(site)` is checked for that")
                    .help(help),
            );
        }
        if grid_wide && !loader {
            continue;
        }
        for (i, _) in super::body::calls_of(&stripped, "grid_sync") {
            let (what, help) = if loader {
                ("a loader body", "call `grid_sync(site)` in the consumer body; the loader warp is not one of the 128 threads it gathers")
            } else {
                ("a task that is not grid-wide", "write `granularity grid_wide(barrier NAME, skip_after_step0, justification \"…\")` with an `i64[SITES] inout grid_barrier` tensor, or order the tasks through the runtime's events")
            };
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, format!("`grid_sync` in {what}"))
                    .primary(at(i..i + "grid_sync".len()), "no `grid_sync` here")
                    .note("`grid_sync(site)` is generated in the consumer role of a grid-wide task only")
                    .help(help),
            );
        }
    }
}
