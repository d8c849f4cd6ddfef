//! E0406, the synchronisation and identity rules of inline bodies (I-R2, I-R3, I-S11): no
//! block-wide barrier (`__syncthreads`, cooperative groups' `sync()`, `bar.sync 0`), no named
//! barrier on a reserved id or with another thread count, no `blockIdx` (or `%ctaid`) for task
//! identity, nothing the preprocessor builds, hides or brings past these rules (`##`, `#include`,
//! `#define`, `#if`, `#line`, `#error`; `#pragma` is the compiler's and allowed), no `exit`
//! instruction in an `asm` string, and a consumer ring's loader body on its one lane.

use super::body::{call_args, calls_of, strip_comments_and_strings};
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, Family, TaskIr};

/// I-R2, I-R3, I-S11 in inline bodies: no block-wide barrier (`__syncthreads`, `bar.sync 0`),
/// no named barrier on a reserved id written as a literal, no `blockIdx` for task identity, and
/// no dynamic SMEM of its own in a region-less task.
pub(super) fn inline_body_rules(ir: &TaskIr, sink: &mut Sink) {
    if let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.body
    {
        let stripped = strip_comments_and_strings(code);
        inline_rules(ir, &stripped, *code_span, sink);
        ptx_block_index(code, *code_span, sink);
        ptx_exit(code, *code_span, sink);
        ptx_cluster_barrier(code, *code_span, sink);
        unidentified_task(ir, sink);
        if ir.family == Family::Pipeline {
            epilogue_map_collectives(code, &stripped, *code_span, sink);
        }
    }
    if let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.loader_body
    {
        let stripped = strip_comments_and_strings(code);
        inline_rules(ir, &stripped, *code_span, sink);
        loader_rules(code, &stripped, *code_span, sink);
        ptx_block_index(code, *code_span, sink);
        ptx_exit(code, *code_span, sink);
    }
}

/// I-R1 in an inline body's `asm` strings: PTX `exit` (PTX ISA, "Control Flow Instructions:
/// exit") ends the thread, not the task: the persistent worker's warp loses its lanes for every
/// later task, and the named barriers, `grid_sync` and the runtime's page and event protocol
/// that count them wait forever.
fn ptx_exit(raw: &str, code_span: crate::span::Span, sink: &mut Sink) {
    for s in super::asm_text::asm_strings(raw) {
        for start in super::asm_text::instruction_starts(&s.text, "exit") {
            let r = s.source(start..start + 4);
            sink.push(
                Diagnostic::error(codes::BODY_SYNC, "the inline body's `asm` executes `exit`")
                    .primary(
                        crate::span::Span::new(code_span.start + r.start, code_span.start + r.end),
                        "ends the thread",
                    )
                    .note("the thread belongs to the persistent worker, which runs every later task of its CTA on it: after `exit` the named barriers, `grid_sync` and the runtime's page and event waits count arrivals that never come (I-R1)")
                    .help("let the thread reach the end of the body: guard the work it must skip with `if`"),
            );
        }
    }
}

/// I-R2 in an inline body's `asm` strings: PTX `barrier.cluster.arrive` / `.wait` (PTX ISA,
/// "barrier.cluster") waits for every thread of every CTA of the cluster, the asm form of
/// cooperative groups' `this_cluster().sync()`: the worker's other warps run other roles and
/// never arrive. (A ring loader body's are reported with its other PTX barriers.)
fn ptx_cluster_barrier(raw: &str, code_span: crate::span::Span, sink: &mut Sink) {
    for s in super::asm_text::asm_strings(raw) {
        let t = s.text.as_str();
        let starts = t
            .match_indices("barrier.cluster")
            .map(|(k, _)| k)
            .filter(|&k| {
                super::asm_text::starts_instruction(t, k)
                    && !t[k + 15..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            });
        for start in starts {
            let r = s.source(start..start + "barrier.cluster".len());
            sink.push(
                Diagnostic::error(codes::BODY_SYNC, "the inline body's `asm` issues `barrier.cluster`, a cluster-wide barrier")
                    .primary(
                        crate::span::Span::new(code_span.start + r.start, code_span.start + r.end),
                        "here",
                    )
                    .note("`barrier.cluster` waits for every thread of every CTA in the cluster (a CTA alone is a cluster of one): the worker's other warps run other tasks' roles and never arrive (I-R2)")
                    .help("declare `barrier NAME = named(ID, threads 128)` (an id in 1-15 other than 8) and synchronise the 128 consumer threads on it: `mpkc::named_barrier_sync(BAR_<NAME>, kConsumerThreads)`"),
            );
        }
    }
}

/// A pipeline's epilogue map (its `body cuda`) is called once per stored element, under the
/// consumer's `n < M_REAL && row < N` guard: on sm_90a a lane's accumulator columns are its own
/// (`layout::Sm90::acc_col(lane, i)`), so lanes of one warp take the guard differently at a
/// token count below the tile's, and a tail tile's rows do on either target. A warp-collective
/// there ([`super::warp_collectives`]) runs with lanes missing: undefined (E0406).
fn epilogue_map_collectives(
    raw: &str,
    stripped: &str,
    code_span: crate::span::Span,
    sink: &mut Sink,
) {
    let mut lines = std::collections::BTreeSet::new();
    for c in super::warp_collectives::collectives(raw, stripped) {
        if !lines.insert(raw[..c.at.start].matches('\n').count()) {
            continue;
        }
        sink.push(
            Diagnostic::error(codes::BODY_SYNC, format!("the epilogue map {}", c.what))
                .primary(crate::span::Span::new(code_span.start + c.at.start, code_span.start + c.at.end), "here")
                .note("the map is called once per stored element under the consumer's `n < M_REAL && row < N` guard, which splits a warp's lanes (sm_90a's accumulator columns are per lane; a tail tile's rows): a collective there runs with lanes missing, which is undefined")
                .help("compute the element from `acc`, `n`, `row` and `params::` alone; a reduction across elements is a task of its own"),
        );
    }
}

/// I-R3: a consumer-only task of several tasks per step whose inline body (and loader body)
/// never reads `task_offset`, the one value that tells its tasks apart (the runtime's
/// `task_metadata.task_offset`, `back/consumer.rs`): every task then computes and writes the
/// same tile, and the rest of the outputs stay unwritten (found by `mpkc verify`, or never).
fn unidentified_task(ir: &TaskIr, sink: &mut Sink) {
    let crate::ir::GranularityIr::PerTile { tasks, span, .. } = &ir.granularity else {
        return;
    };
    if *tasks <= 1 || !ir.family.is_consumer_only() {
        return;
    }
    if super::body::bodies_name(ir, "task_offset") {
        return;
    }
    let (body_span, label) = match &ir.body {
        // The body's opening (`body cuda {`), not its whole text.
        Some(BodyIr::Cuda {
            span, code_span, ..
        }) => (
            crate::span::Span::new(span.start, code_span.start.max(span.start)),
            "never reads `task_offset`",
        ),
        _ => return,
    };
    sink.push(
        Diagnostic::error(
            codes::BODY_SYNC,
            format!("the granularity makes {tasks} tasks per step, but the inline body never reads `task_offset`, so every task does the same work"),
        )
        .primary(body_span, label)
        .secondary(*span, format!("{tasks} tasks"))
        .note("`task_offset` is the only value that tells a step's tasks apart (the runtime's task_metadata.task_offset, 0..tasks): without it each task computes and writes the same tile, and the rest of the outputs stay unwritten (I-R3)")
        .help("index the task's tile by `task_offset` (e.g. `int64_t const row = task_offset;`), or declare `granularity per_tile(tasks 1)` if one task covers the whole op"),
    );
}

/// I-R3 in an inline body's `asm` strings: `%ctaid` (and `%clusterid`, `%cluster_ctaid`)
/// is `blockIdx` read through PTX (PTX ISA, "Special Registers"), the SM's CTA, not the task.
/// `raw` is the body as written.
fn ptx_block_index(raw: &str, code_span: crate::span::Span, sink: &mut Sink) {
    for s in super::asm_text::asm_strings(raw) {
        let t = s.text.as_str();
        for reg in ["ctaid", "clusterid", "cluster_ctaid"] {
            for (k, _) in t.match_indices(&format!("%{reg}")) {
                let end = k + 1 + reg.len();
                // `%ctaid` itself, not the start of a longer name (`%ctaid_x` is no register).
                if t[end..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                let r = s.source(k..end);
                sink.push(
                    Diagnostic::error(codes::BODY_SYNC, format!("the inline body's `asm` reads `%{reg}`"))
                        .primary(crate::span::Span::new(code_span.start + r.start, code_span.start + r.end), "here")
                        .note("the PTX special register of the CTA: a persistent worker runs many tasks per CTA, so it is the SM, not the task (I-R3)")
                        .help("use `task_offset` (task_desc->task_metadata.task_offset)"),
                );
            }
        }
    }
}

/// A consumer ring's loader body runs on the loader warp's lane 0 alone, while lanes 1-31 wait
/// at the role's end (I-R1: single-thread issue): a named barrier (its 128 threads are the
/// consumers'), a raw PTX barrier or a warp-collective (`__syncwarp`, `__shfl_sync`, …, which
/// pairs with the other lanes' end-of-role sync) hangs or desynchronises the warp (E0406).
/// `raw` is the body as written (its asm strings hold the PTX), `code` the same with comments
/// and literals blanked.
fn loader_rules(raw: &str, code: &str, code_span: crate::span::Span, sink: &mut Sink) {
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // One report per line (`named_barrier_sync(BAR_B, 128)` is one mistake).
    let mut lines = std::collections::BTreeSet::new();
    let mut report = |i: usize, len: usize, what: &str| {
        if !lines.insert(raw[..i].matches('\n').count()) {
            return;
        }
        sink.push(
            Diagnostic::error(codes::BODY_SYNC, format!("the loader body {what}"))
                .primary(crate::span::Span::new(code_span.start + i, code_span.start + i + len), "here")
                .note("the loader body runs on the loader warp's lane 0 alone while lanes 1-31 wait at the role's end; named barriers gather the 128 consumer threads (I-R1, I-R2)")
                .help("synchronise with the consumers through the ring (`load`/`acquire` waits a slot the consumers freed)"),
        );
    };
    let mut i = 0;
    while i < bytes.len() {
        if !ident(bytes[i]) || (i > 0 && ident(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let end = (i..bytes.len())
            .find(|&j| !ident(bytes[j]))
            .unwrap_or(bytes.len());
        let w = &code[i..end];
        if matches!(
            w,
            "named_barrier_sync" | "named_barrier_or" | "__barrier_sync_count"
        ) || w.starts_with("BAR_")
        {
            report(i, w.len(), &format!("uses a named barrier (`{w}`)"));
        }
        i = end;
    }
    // Raw PTX barriers sit in the asm strings, which the scan above blanked: read the `asm`
    // statements' strings alone (a comment or a `static_assert` message that mentions `bar.sync`
    // issues nothing), adjacent literals joined as C++ concatenates them (`"bar" ".sync 0;"`).
    for s in super::asm_text::asm_strings(raw) {
        for pat in [
            "bar.sync",
            "bar.arrive",
            "bar.red",
            "barrier.",
            "bar.warp.sync",
        ] {
            for (k, _) in s.text.match_indices(pat) {
                if super::asm_text::starts_instruction(&s.text, k) {
                    let r = s.source(k..k + pat.len());
                    report(
                        r.start,
                        r.end - r.start,
                        &format!("issues the PTX barrier `{pat}`"),
                    );
                }
            }
        }
    }
    // Warp intrinsics, the prelude's collectives, PTX `.sync` / `.aligned` instructions: the
    // other 31 lanes are waiting at the role's end, not here.
    for c in super::warp_collectives::collectives(raw, code) {
        report(c.at.start, c.at.len(), &c.what);
    }
}

/// The rules of [`inline_body_rules`] on one inline body at `code_span` (`code`: its text with
/// comments and literals blanked).
fn inline_rules(ir: &TaskIr, code: &str, code_span: crate::span::Span, sink: &mut Sink) {
    let at = |i: usize, len: usize| {
        crate::span::Span::new(code_span.start + i, code_span.start + i + len)
    };
    let word_at = |i: usize, w: &str| {
        let before = code[..i].chars().next_back();
        let after = code[i + w.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let mut report = |i: usize, len: usize, msg: String, note: &str, help: &str| {
        sink.push(
            Diagnostic::error(codes::BODY_SYNC, msg)
                .primary(at(i, len), "here")
                .note(note.to_string())
                .help(help.to_string()),
        );
    };
    preprocessed(code, &mut report);
    // `__barrier_sync(id)` is `barrier.sync id` without a count: every thread of the CTA.
    for w in [
        "__syncthreads",
        "__syncthreads_count",
        "__syncthreads_and",
        "__syncthreads_or",
        "__barrier_sync",
    ] {
        for (i, _) in code.match_indices(w).filter(|(i, _)| word_at(*i, w)) {
            report(i, w.len(), format!("the inline body calls `{w}`, a block-wide barrier"), "the other warps of the CTA run other tasks' roles: a block-wide barrier deadlocks them (I-R2)", "declare `barrier NAME = named(ID, threads 128)` (an id in 1-15 other than 8) and synchronise the 128 consumer threads on it: `mpkc::named_barrier_sync(BAR_<NAME>, kConsumerThreads)`");
        }
    }
    // Raw PTX barriers live in string literals, blanked here: `asm_barriers` reads them.
    for call in [
        "named_barrier_sync",
        "named_barrier_or",
        "__barrier_sync_count",
    ] {
        for (i, args) in calls_of(code, call) {
            // The id: a literal or a constant expression (`1 + 7`, `BAR_SYNC + 6`).
            let arg = call_args(&code[args..]).swap_remove(0);
            let id = super::body_constants::const_int_with(
                &arg,
                &super::body_constants::body_constants(ir, code),
            );
            if let Some(id @ (0 | 8)) = id {
                let shown = arg.trim();
                let written = if shown == id.to_string() {
                    String::new()
                } else {
                    format!(" (`{shown}`)")
                };
                report(i, args - i + arg.len(), format!("the inline body's `{call}` uses named barrier {id}{written}, which the runtime reserves"), "0 is the block-wide barrier and 8 the runtime's consumer page claim (contract doc §3.4)", "declare `barrier NAME = named(ID, threads 128)` with another id and use BAR_<NAME>");
            }
        }
    }
    for (i, _) in code
        .match_indices("blockIdx")
        .filter(|(i, _)| word_at(*i, "blockIdx"))
    {
        let help = if ir.family == Family::Pipeline {
            "use the map's arguments: `n` (the element's token) and `row` (its output column)"
        } else {
            "use `task_offset` (task_desc->task_metadata.task_offset)"
        };
        report(
            i,
            8,
            "the inline body reads `blockIdx`".to_string(),
            "a persistent worker runs many tasks per CTA: blockIdx is the SM, not the task (I-R3)",
            help,
        );
    }
    for b in super::group_barriers::group_barriers(code) {
        let (scope, note, help) = match b.group {
            "this_thread_block" => ("a block-wide barrier", "the other warps of the CTA run other tasks' roles: a block-wide barrier deadlocks them (I-R2)", "declare `barrier NAME = named(ID, threads 128)` (an id in 1-15 other than 8) and synchronise the 128 consumer threads on it: `mpkc::named_barrier_sync(BAR_<NAME>, kConsumerThreads)`"),
            "this_cluster" => ("a cluster-wide barrier", "the other warps of the CTA and the other CTAs run other tasks' roles: a cluster barrier deadlocks them (I-R2)", "declare `barrier NAME = named(ID, threads 128)` (an id in 1-15 other than 8) and synchronise the 128 consumer threads on it: `mpkc::named_barrier_sync(BAR_<NAME>, kConsumerThreads)`"),
            _ if ir.granularity.is_grid_wide() => ("a grid-wide barrier", "every CTA of the persistent worker runs other tasks' roles, and a cooperative grid sync needs a cooperative launch the runtime does not make: it deadlocks (I-R2)", "call the generated in-op grid barrier instead: `grid_sync(site);` (docs/language.md, \"granularity\")"),
            _ => ("a grid-wide barrier", "every CTA of the persistent worker runs other tasks' roles, and a grid barrier needs a cooperative launch the runtime does not make: it deadlocks (I-R2)", "order tasks through the runtime's events (a task that reads another's output depends on it), and declare `barrier NAME = named(ID, threads 128)` (an id in 1-15 other than 8) and synchronise the 128 consumer threads on it: `mpkc::named_barrier_sync(BAR_<NAME>, kConsumerThreads)`"),
        };
        let msg = format!("the inline body calls `{}`, {scope}", b.call);
        let mut d =
            Diagnostic::error(codes::BODY_SYNC, msg).primary(at(b.at.start, b.at.len()), "here");
        if let Some(bind) = b.bound {
            let label = match &b.param_type {
                Some(ty) => format!(
                    "a `{ty}` parameter: a caller can pass it only `{}()`",
                    b.group
                ),
                None => format!("bound to `{}()` here", b.group),
            };
            d = d.secondary(at(bind.start, bind.len()), label);
        }
        sink.push(d.note(note).help(help));
    }
    for (i, _) in code
        .match_indices("__shared__")
        .filter(|(i, _)| word_at(*i, "__shared__"))
    {
        let d = if ir.family == Family::ConsumerNoSmem {
            Diagnostic::error(codes::NO_SMEM_REGIONS, "a `consumer-no-smem` body declares shared memory of its own")
                .primary(at(i, 10), "here")
                .note("region-less tasks use no dynamic SMEM at all; the pages belong to other tasks (I-S11)")
                .help("declare `family consumer` with a region and address it as `buf.<name>`")
        } else {
            // The worker's dynamic SMEM is the planner's 14 pages (I-S3): static `__shared__`
            // comes on top of it, past what a block may hold, and `extern __shared__` is the
            // pages themselves, which other tasks own.
            Diagnostic::error(codes::REGION_USE, "the inline body declares shared memory of its own")
                .primary(at(i, 10), "not a region")
                .note("the worker's dynamic SMEM is the 14 pages MPK's planner hands out (I-S3): a static `__shared__` array comes on top of them, past the 227 KB a block may hold, so the megakernel fails to launch, and `extern __shared__` is those pages themselves, which other tasks' regions hold")
                .help("declare a region (`region NAME { bytes N; align A }`) and address it as `buf.NAME`")
        };
        sink.push(d);
    }
}

/// What the preprocessor builds or brings past the rules (`code` with comments and literals
/// blanked; `report(offset, len, message, note, help)`): token pasting (`##`), which makes
/// names the rules read as words (`__sync ## threads`, `block ## Idx`), `#include`, which
/// lands inside the generated function with code no rule sees, resolved beside the generated
/// files rather than the contract, `#define` / `#undef` (a macro outlives the body),
/// conditional compilation (what check reads is not what nvcc compiles), `#line` (it unmaps
/// nvcc's errors) and `#error` / `#warning` (`static_assert` is checked).
fn preprocessed(code: &str, report: &mut impl FnMut(usize, usize, String, &str, &str)) {
    for (i, _) in code.match_indices("##") {
        report(
            i,
            2,
            "the inline body pastes tokens (`##`)".to_string(),
            "a pasted name is made by the preprocessor, where the body's rules cannot see it: a block-wide barrier or `blockIdx` built so would pass check and deadlock or misindex the persistent worker (I-R2, I-R3)",
            "write the names out, or use a constexpr function or a template instead of the macro",
        );
    }
    let mut line_start = 0;
    for line in code.split_inclusive('\n') {
        let t = line.trim_start();
        let directive = t.strip_prefix('#').map(str::trim_start);
        let word: String = directive
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        let at = line_start + (line.len() - t.len());
        let len = t.trim_end().len();
        match word.as_str() {
            "include" | "import" => report(
                at,
                len,
                "the inline body includes a file".to_string(),
                "the body is pasted inside a generated function: an `#include` there brings code the body's rules never see (a block-wide barrier in it deadlocks the persistent worker, I-R2), resolved beside the generated files rather than the contract",
                "write the code in the body, or make it a helper (`family helper`, `use`) whose body mpkc checks",
            ),
            "define" | "undef" => report(
                at,
                len,
                format!("the inline body {} a macro", if word == "define" { "defines" } else { "undefines" }),
                "a macro is the preprocessor's, not the function's: it stays defined past the body, through the rest of the generated kernel and every header the MPK build includes after it (`#define false true` turns the Registration's constants), and its expansions are made where the body's rules cannot see them",
                "use a `constexpr` variable or function, or a lambda, inside the body",
            ),
            "if" | "ifdef" | "ifndef" | "elif" | "elifdef" | "elifndef" | "else" | "endif" => report(
                at,
                len,
                format!("the inline body compiles conditionally (`#{word}`)"),
                "mpkc reads the body as written, the preprocessor as its conditions leave it: a branch `#if` drops can hold the brace that closes the body, or the code a rule is about, so what check accepts would not be what nvcc compiles",
                "branch on the params with `if constexpr (params::NAME …)`, or declare an instance per variant",
            ),
            "line" => report(
                at,
                len,
                "the inline body sets nvcc's line numbers (`#line`)".to_string(),
                "mpkc writes the `#line` directives that map nvcc's errors in the body to the contract's lines; another moves them to lines that do not exist",
                "remove the directive",
            ),
            "error" | "warning" => report(
                at,
                len,
                format!("the inline body stops or warns the preprocessor (`#{word}`)"),
                "mpkc evaluates a body's `static_assert` over the params at check time (E0031); a preprocessor diagnostic is seen by nvcc only",
                "write the condition as `static_assert(COND, \"why\")` over `params::` values",
            ),
            _ => {}
        }
        line_start += line.len();
    }
}
