//! Hardware barriers written as raw PTX inside an inline body's `asm(...)` strings (I-R2).
//!
//! `bar.sync`, `bar.arrive`, `bar.red` and their `barrier[.cta]` spellings (PTX ISA, "Parallel
//! Synchronization and Communication Instructions: bar, barrier") name a CTA barrier by id and,
//! optionally, the number of threads taking part. In a persistent worker the other warps run
//! other tasks' roles, so every id and count an inline body uses must be one the contract
//! declares (`barrier NAME = named(ID, threads N)`): id 0 is the block-wide barrier, id 8 the
//! runtime's consumer page claim (contract doc §3.4), and an instruction without a count waits
//! for every thread of the CTA. An id or count given as an `asm` operand (`%0`) is read through
//! the operand's expression (`"r"(BAR_ROWMAX)`, `"n"(3)`); one check cannot evaluate is an error
//! (it could be 0, 8 or another count).

use super::asm_text::{asm_operands, asm_statements, asm_strings, starts_instruction};
use super::body_constants::{body_constants, const_int, const_int_with, declares, Names};
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, TaskIr};
use crate::span::Span;

/// One barrier instruction found in a string literal: byte range (in the body's code), the
/// operation, and the literal id and count if written as numbers.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    at: std::ops::Range<usize>,
    op: String,
    id: Operand,
    count: Option<Operand>,
}

/// An instruction operand: a decimal or hex literal, an `asm` operand `%N` (its number), or
/// anything else.
#[derive(Debug, PartialEq, Eq)]
enum Operand {
    Literal(i64),
    Asm(usize),
    Other,
}

/// I-R2: every PTX barrier instruction in an inline body's string literals uses an id and a
/// thread count the contract declares, never 0 or 8, and never the whole CTA (E0406).
pub(super) fn asm_barriers(ir: &TaskIr, sink: &mut Sink) {
    let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.body
    else {
        return;
    };
    let at =
        |r: &std::ops::Range<usize>| Span::new(code_span.start + r.start, code_span.start + r.end);
    let consts = body_constants(ir, code);
    for f in scan_with(code, Some(&consts)) {
        let span = at(&f.at);
        let error = |msg: String| Diagnostic::error(codes::BODY_SYNC, msg).primary(span, "here");
        let Operand::Literal(id) = f.id else {
            sink.push(
                error(format!("the inline body's `{}` takes its barrier id from an `asm` operand check cannot evaluate", f.op))
                    .note("a raw PTX barrier's id and thread count are checked against the declared barriers (an undeclared id, 0, 8 or another count deadlocks the worker, I-R2): an operand (`%0`) hides them")
                    .help("use the prelude: `mpkc::named_barrier_sync(BAR_NAME, kConsumerThreads)`, or write the declared id and count as numbers in the instruction"),
            );
            continue;
        };
        if id == 0 || id == 8 {
            sink.push(
                error(format!("the inline body's `{}` uses hardware barrier {id}, which the runtime reserves", f.op))
                    .note("barrier 0 spans all 256 threads of the worker; 8 is the runtime's consumer page claim (contract doc §3.4)")
                    .help("declare `barrier NAME = named(ID, threads 128)` with an id in 1-15 other than 8, and use that id"),
            );
            continue;
        }
        let Some((_, decl)) = ir.barriers.iter().find(|(_, b)| b.id == id) else {
            let declared: Vec<String> = ir
                .barriers
                .values()
                .map(|b| format!("`{}` = {}", b.name, b.id))
                .collect();
            let mut d = error(format!(
                "the inline body's `{}` uses barrier {id}, which no `barrier` of the contract declares",
                f.op
            ))
            .note("an undeclared id may be another role's or another task's barrier in the same CTA");
            if !declared.is_empty() {
                d = d.note(format!("declared: {}", declared.join(", ")));
            }
            sink.push(d.help(format!(
                "declare `barrier NAME = named({id}, threads N)` and use its id"
            )));
            continue;
        };
        match f.count {
            None => sink.push(
                error(format!("the inline body's `{}` on barrier {id} gives no thread count, so it waits for every thread of the CTA", f.op))
                    .secondary(decl.span, format!("`{}` has {} threads", decl.name, decl.threads))
                    .note("without a count, bar.sync/bar.arrive expect all 256 threads of the worker; the other warps run other roles and never arrive")
                    .help(format!("write the count: `bar.sync {id}, {};`", decl.threads)),
            ),
            Some(Operand::Asm(_) | Operand::Other) => sink.push(
                error(format!("the inline body's `{}` on barrier {id} takes its thread count from an `asm` operand check cannot evaluate", f.op))
                    .secondary(decl.span, format!("`{}` has {} threads", decl.name, decl.threads))
                    .note("every use of a barrier id must agree on its thread count, or the barrier completes early or never (I-R2)")
                    .help(format!("write the count: `{} {id}, {};`", f.op, decl.threads)),
            ),
            Some(Operand::Literal(n)) if n != decl.threads => sink.push(
                error(format!("the inline body's `{}` on barrier {id} counts {n} threads, but `{}` is declared for {}", f.op, decl.name, decl.threads))
                    .secondary(decl.threads_span, format!("threads {}", decl.threads))
                    .note("every use of a barrier id must agree on its thread count, or the barrier completes early or never")
                    .help(format!("write `{}` or change the declaration", decl.threads)),
            ),
            Some(_) => {}
        }
    }
}

/// I-R2 for the named barrier calls, the prelude's `mpkc::named_barrier_sync(ID, THREADS)` and
/// `mpkc::named_barrier_or(ID, THREADS, p)` and CUDA's `__barrier_sync_count(ID, THREADS)`, in
/// an inline body: an id that is a constant
/// expression of numbers and the body's constants ([`body_constants`]: `BAR_<NAME>`,
/// `kConsumerThreads`) must be declared, and such a count must be its declared thread count
/// (E0406). Ids 0 and 8 are the body rules' (`valid::body`); an id or count check cannot
/// evaluate (a `constexpr` local, a variable, a macro) is E0406 too.
pub(super) fn prelude_barrier_calls(ir: &TaskIr, sink: &mut Sink) {
    let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.body
    else {
        return;
    };
    let consts = body_constants(ir, code);
    let stripped = super::body::strip_comments_and_strings(code);
    for c in prelude_calls(&stripped) {
        let [id_text, count_text, ..] = &c.args[..] else {
            continue;
        };
        let (id_text, count_text) = (id_text.trim(), count_text.trim());
        let span = Span::new(code_span.start + c.at.start, code_span.start + c.at.end);
        let name = c.name;
        let decl = match const_int_with(id_text, &consts) {
            Some(0 | 8) => continue,
            // An undeclared `BAR_<NAME>` is E0002's (`valid::barrier_names`), reported once.
            None if is_undeclared_barrier(ir, &stripped, id_text) => continue,
            None => {
                sink.push(unchecked(name, "id", id_text, span));
                continue;
            }
            Some(id) => match ir.barriers.values().find(|b| b.id == id) {
                Some(b) => b,
                None => {
                    let declared: Vec<String> = ir
                        .barriers
                        .values()
                        .map(|b| format!("`{}` = {}", b.name, b.id))
                        .collect();
                    let written = if id_text == id.to_string() {
                        String::new()
                    } else {
                        format!(" (`{id_text}`)")
                    };
                    let mut d = Diagnostic::error(
                            codes::BODY_SYNC,
                            format!("the inline body's `{name}` uses barrier {id}{written}, which no `barrier` of the contract declares"),
                        )
                        .primary(span, "here")
                        .note("an undeclared id may be another role's or another task's barrier in the same CTA");
                    if !declared.is_empty() {
                        d = d.note(format!("declared: {}", declared.join(", ")));
                    }
                    sink.push(d.help(format!(
                        "declare `barrier NAME = named({id}, threads N)` and pass `BAR_NAME`"
                    )));
                    continue;
                }
            },
        };
        let Some(count) = const_int_with(count_text, &consts) else {
            sink.push(unchecked(name, "thread count", count_text, span));
            continue;
        };
        if count != decl.threads {
            sink.push(
                    Diagnostic::error(
                        codes::BODY_SYNC,
                        format!("the inline body's `{name}` on barrier {} counts {count} threads, but `{}` is declared for {}", decl.id, decl.name, decl.threads),
                    )
                    .primary(span, "here")
                    .secondary(decl.threads_span, format!("threads {}", decl.threads))
                    .note("every use of a barrier id must agree on its thread count, or the barrier completes early or never")
                    .help(format!("pass {} or change the declaration", decl.threads)),
                );
        }
    }
}

/// Whether `text` is a `BAR_<NAME>` constant whose error is another rule's: one no barrier of
/// `ir` declares and the body does not declare itself (E0002, `valid::barrier_names`), or one of
/// a barrier declared on a reserved id (E0401).
fn is_undeclared_barrier(ir: &TaskIr, stripped: &str, text: &str) -> bool {
    if !text.starts_with("BAR_") || !text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return false;
    }
    match ir
        .barriers
        .values()
        .find(|b| text == format!("BAR_{}", crate::back::names::upper(&b.name)))
    {
        Some(b) => (b.id == 0 || b.id == 8) && !declares(stripped, text),
        None => !declares(stripped, text),
    }
}

/// E0406 for a barrier id or thread count the check cannot read (a variable, a `constexpr`
/// local, a macro, an `asm` operand): id 0 or 8, or a count other than the barrier's, would
/// pass it and hang the worker (I-R2).
fn unchecked(what: &str, part: &str, text: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        codes::BODY_SYNC,
        format!("the inline body's `{what}` takes its barrier {part} from `{text}`, which check cannot evaluate"),
    )
    .primary(span, "here")
    .note("a barrier's id and thread count are checked against the declared barriers (an undeclared id, 0, 8 or another count deadlocks the worker, I-R2): they must be written so that check can read them")
    .help("pass the declared barrier's constant and its count: `mpkc::named_barrier_sync(BAR_NAME, kConsumerThreads)` (or a constant expression of numbers, `BAR_<NAME>`, `kConsumerThreads` and `params::`)")
}

/// One call of a named barrier in a body (comments and literals blanked): the prelude's
/// `mpkc::named_barrier_sync(ID, THREADS)` or `mpkc::named_barrier_or(ID, THREADS, p)`, or
/// CUDA's `__barrier_sync_count(ID, THREADS)` (`barrier.sync ID, THREADS`).
struct PreludeCall {
    name: &'static str,
    /// From the function's name to just past its `)`.
    at: std::ops::Range<usize>,
    /// Its top-level arguments, as written.
    args: Vec<String>,
}

/// Every prelude barrier call of `stripped`, the body with comments and literals blanked.
fn prelude_calls(stripped: &str) -> Vec<PreludeCall> {
    let mut out = Vec::new();
    for name in [
        "named_barrier_sync",
        "named_barrier_or",
        "__barrier_sync_count",
    ] {
        for (i, args_at) in super::body::calls_of(stripped, name) {
            let args = super::body::call_args(&stripped[args_at..]);
            let len: usize = args.iter().map(|a| a.len() + 1).sum();
            out.push(PreludeCall {
                name,
                at: i..args_at + len,
                args,
            });
        }
    }
    out
}

/// Every barrier id an inline body of `ir` names where it can be read: its PTX barriers'
/// literal ids ([`literal_ids`]) and the ids of its prelude barrier calls
/// (`mpkc::named_barrier_sync(3, 128)`, `named_barrier_or`) that evaluate over the body's
/// constants ([`body_constants`]): a barrier used by its number is used (E0014's coverage).
pub(super) fn body_barrier_ids(ir: &TaskIr, code: &str) -> Vec<i64> {
    let consts = body_constants(ir, code);
    let calls = prelude_calls(&super::body::strip_comments_and_strings(code));
    let evaluated = calls
        .iter()
        .filter_map(|c| const_int_with(c.args.first()?.trim(), &consts));
    literal_ids(code).into_iter().chain(evaluated).collect()
}

/// The byte ranges (in `code`) of an inline body's raw PTX barrier instructions
/// (`bar.sync`, `barrier.sync`, `bar.arrive`, `bar.red`, with their operands).
pub(super) fn barrier_instructions(code: &str) -> Vec<std::ops::Range<usize>> {
    scan(code).into_iter().map(|f| f.at).collect()
}

/// The barrier ids an inline body's raw PTX barrier instructions name as literals.
fn literal_ids(code: &str) -> Vec<i64> {
    scan(code)
        .into_iter()
        .filter_map(|f| match f.id {
            Operand::Literal(id) => Some(id),
            Operand::Asm(_) | Operand::Other => None,
        })
        .collect()
}

/// Every barrier instruction inside the strings of `code`, adjacent string literals joined as
/// C++ concatenates them (`"bar" ".sync 0;"` is `bar.sync 0;`, [`joined_strings`]); each
/// found instruction's range is its source text, from its first character to its last.
fn scan(code: &str) -> Vec<Found> {
    scan_with(code, None)
}

/// [`scan`], with an id or count written as an `asm` operand (`%N`) read through that operand's
/// expression (`"r"(BAR_ROWMAX)`) where `names` evaluates it ([`body_constants`]).
fn scan_with(code: &str, names: Option<&Names<'_>>) -> Vec<Found> {
    let stripped = super::body::strip_comments_and_strings(code);
    let statements = asm_statements(&stripped);
    let mut out = Vec::new();
    for s in asm_strings(code) {
        let operands =
            s.at.first()
                .and_then(|a| statements.iter().find(|r| r.contains(a)))
                .map(|r| asm_operands(&stripped, r))
                .unwrap_or_default();
        let resolve = |o: Operand| match (o, names) {
            (Operand::Asm(n), Some(names)) => operands
                .get(n)
                .and_then(|e| const_int_with(e.trim(), names))
                .map_or(Operand::Asm(n), Operand::Literal),
            (o, _) => o,
        };
        out.extend(scan_text(&s.text).into_iter().map(|f| Found {
            at: s.source(f.at.clone()),
            id: resolve(f.id),
            count: f.count.map(resolve),
            op: f.op,
        }));
    }
    out
}

/// The barrier instructions of one string's text, each with its byte range in it.
fn scan_text(lit: &str) -> Vec<Found> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(k) = lit[i..].find("bar") {
        let start = i + k;
        i = start + 3;
        if !starts_instruction(lit, start) {
            continue;
        }
        let Some((end, found)) = instruction(lit, start) else {
            continue;
        };
        out.push(Found {
            at: start..end,
            ..found
        });
        i = end;
    }
    out
}

/// Parses `bar[rier][.cta].{sync,arrive,red}[.modifiers] a[, b[, c[, d]]]` at `start`.
fn instruction(lit: &str, start: usize) -> Option<(usize, Found)> {
    let rest = &lit[start..];
    let name_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
        .unwrap_or(rest.len());
    let name = &rest[..name_len];
    let parts: Vec<&str> = name.split('.').collect();
    let mut p = parts.iter().copied();
    if !matches!(p.next(), Some("bar" | "barrier")) {
        return None;
    }
    let mut kind = p.next()?;
    if kind == "cta" {
        kind = p.next()?;
    }
    if !matches!(kind, "sync" | "arrive" | "red") {
        return None;
    }
    // Operands up to `;`, a newline, or the end of the literal. A `\t` escape is the tab it
    // stands for (`"bar.sync\t0;"` is `bar.sync 0`): two spaces, the escape's length.
    let ops_text = rest[name_len..].replace("\\t", "  ");
    let ops_text = ops_text.as_str();
    // (`\\` starts any other escape sequence: `"bar.sync 1, 64\n"` ends at the `\n`.)
    let ops_end = ops_text
        .find([';', '\n', '"', '\\'])
        .unwrap_or(ops_text.len());
    let ops: Vec<&str> = ops_text[..ops_end]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    // bar.red's first operand is its destination register.
    let ops = if kind == "red" {
        ops.get(1..)?
    } else {
        &ops[..]
    };
    let id = operand(ops.first()?);
    let count = match kind {
        // bar.red.op d, a{, b}, {!}c: a count exists only when three source operands are given.
        "red" => (ops.len() == 3).then(|| operand(ops[1])),
        _ => ops.get(1).map(|s| operand(s)),
    };
    let end = start + name_len + ops_end;
    Some((
        end,
        Found {
            at: 0..0,
            op: name.to_string(),
            id,
            count,
        },
    ))
}

/// An operand: [`Operand::Literal`] where [`const_int`] evaluates it.
fn operand(s: &str) -> Operand {
    if let Some(n) = s.strip_prefix('%').and_then(|n| n.parse::<usize>().ok()) {
        return Operand::Asm(n);
    }
    const_int(s).map_or(Operand::Other, Operand::Literal)
}

#[cfg(test)]
mod tests {

    use super::*;

    fn ops(code: &str) -> Vec<(String, Operand, Option<Operand>)> {
        scan(code)
            .into_iter()
            .map(|f| (f.op, f.id, f.count))
            .collect()
    }

    #[test]
    fn finds_every_spelling_in_literals_only() {
        use Operand::*;
        let code = r#"asm volatile("bar.sync 5, 64;"); asm("barrier.cta.arrive.aligned 3, 128;\n");
            // asm("bar.sync 0;");
            asm("bar.red.popc.u32 %0, 7, 128, %1;" : "=r"(x) : "r"(p)); int bar = 0;
            asm volatile("barrier.sync %0, 128;" :: "r"(id)); asm("bar.sync 9;");"#;
        assert_eq!(
            ops(code),
            vec![
                ("bar.sync".into(), Literal(5), Some(Literal(64))),
                (
                    "barrier.cta.arrive.aligned".into(),
                    Literal(3),
                    Some(Literal(128))
                ),
                ("bar.red.popc.u32".into(), Literal(7), Some(Literal(128))),
                ("barrier.sync".into(), Asm(0), Some(Literal(128))),
                ("bar.sync".into(), Literal(9), None),
            ]
        );
    }

    /// An `asm` operand (`%N`) is read through its expression, numbered outputs first: `%1` of
    /// `asm("…" : "=r"(d) : "r"(BAR_X), "n"(128))` is `BAR_X`; a scope (`params::n`) is no
    /// section break, an empty output section (`::`) is.
    #[test]
    fn asm_operands_resolve_through_their_expressions() {
        use Operand::*;
        let names = |n: &str| match n {
            "BAR_X" => Some((3, crate::valid::const_expr::Ty::Int)),
            "params::n" => Some((128, crate::valid::const_expr::Ty::Long)),
            _ => None,
        };
        let code = r#"asm volatile("bar.red.or.pred %0, %1, %2, p;" : "=r"(d) : "r"(BAR_X), "n"(params::n));
            asm volatile("barrier.sync %0, %1;" :: "r"(BAR_X), "r"(count));"#;
        let found: Vec<_> = scan_with(code, Some(&names))
            .into_iter()
            .map(|f| (f.id, f.count))
            .collect();
        assert_eq!(
            found,
            vec![(Literal(3), Some(Literal(128))), (Literal(3), Some(Asm(1)))]
        );
    }

    #[test]
    fn an_escape_sequence_separates_instructions() {
        use Operand::*;
        let code = r#"asm volatile("\tbar.sync 0;"); asm("{\n\tbarrier.sync 3, 128;\n}");
            asm("membar.cta;\n\tbar.sync 1, 64\n");"#;
        assert_eq!(
            ops(code),
            vec![
                ("bar.sync".into(), Literal(0), None),
                ("barrier.sync".into(), Literal(3), Some(Literal(128))),
                ("bar.sync".into(), Literal(1), Some(Literal(64))),
            ]
        );
    }

    #[test]
    fn adjacent_literals_are_one_instruction() {
        use Operand::*;
        let code = r#"asm volatile("bar" ".sync 0;"); asm("barrier.sync " /* id */ "3, " "128;");"#;
        assert_eq!(
            ops(code),
            vec![
                ("bar.sync".into(), Literal(0), None),
                ("barrier.sync".into(), Literal(3), Some(Literal(128))),
            ]
        );
        // The range runs from the first character of the instruction to its last operand.
        let f = &scan(code)[0];
        assert_eq!(&code[f.at.clone()], r#"bar" ".sync 0"#);
    }

    #[test]
    fn instruction_operands_are_constant_expressions() {
        // The expressions themselves: `super::const_expr`'s tests.
        assert_eq!(
            ops(r#"asm("bar.sync 4+4, 2*64;");"#),
            vec![(
                "bar.sync".into(),
                Operand::Literal(8),
                Some(Operand::Literal(128))
            )]
        );
    }

    #[test]
    fn names_that_merely_contain_bar_are_not_instructions() {
        assert!(
            scan(r#"asm("foobar.sync 1, 2;"); asm("mbarrier.arrive.b64 %0, [%1];");"#).is_empty()
        );
    }
}
