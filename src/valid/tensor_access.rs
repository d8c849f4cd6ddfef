//! How an inline body reaches its tensors, against their declarations:
//!
//! - a write to a tensor declared `in` (`x[i] = v`, `x[i] += v`, `++x[i]`, `*x = v`) is E0009:
//!   the body gets an `in` tensor as a `const` pointer (docs/language.md, "`body cuda`"), so
//!   nvcc would reject the build, and the tensor is one other tasks may read while this one runs;
//! - a TaskDesc pointer slot read by hand (`task_desc->input_ptrs[5]`, `output_ptrs[k]`) at a
//!   constant index past the task's declared tensors is E0002: the slot holds no tensor of this
//!   task (I-H1; MPK fills `output_ptrs` past the `out` tensors with the `inout` ones again, for
//!   its graph, and `mpkc verify`'s harness leaves them empty).

use super::body::{strip_comments_and_strings, word_offsets};
use crate::diag::{codes, Diagnostic, Sink};
use crate::front::ast::Direction;
use crate::ir::TaskIr;
use crate::span::Span;

/// The rules of the module doc on the task's consumer and loader bodies.
pub(super) fn tensor_access(ir: &TaskIr, sink: &mut Sink) {
    for (code, code_span) in super::body::inline_bodies(ir) {
        let stripped = strip_comments_and_strings(code);
        let at = |r: std::ops::Range<usize>| {
            Span::new(code_span.start + r.start, code_span.start + r.end)
        };
        for t in ir.tensors.values().filter(|t| t.direction == Direction::In) {
            if let Some(r) =
                word_offsets(&stripped, &t.name).find_map(|i| write_at(&stripped, i, &t.name))
            {
                sink.push(
                    Diagnostic::error(
                        codes::BODY_MISMATCH,
                        format!("the inline body writes tensor `{}`, which is declared `in`", t.name),
                    )
                    .primary(at(r), "written here")
                    .secondary(t.span, "declared `in`: the body gets it as a `const` pointer")
                    .note("an `in` tensor is read-only to the task: nvcc rejects the store through its `const` pointer, and other tasks of the step may read the tensor while this one runs")
                    .help(format!("declare `{}` `inout` if the task updates it in place, or write an `out` tensor", t.name)),
                );
            }
        }
        let counts = [
            ("input_ptrs", ir.inputs().count()),
            ("output_ptrs", ir.outputs().count()),
        ];
        for (slots, count) in counts {
            for i in word_offsets(&stripped, slots) {
                let rest = &stripped[i + slots.len()..];
                let Some(inner) = rest.trim_start().strip_prefix('[') else {
                    continue;
                };
                let Some(close) = inner.find(']') else {
                    continue;
                };
                let Some(k) = super::body_constants::const_int(inner[..close].trim()) else {
                    continue;
                };
                if k >= 0 && (k as usize) < count {
                    continue;
                }
                let end = i + slots.len() + (rest.len() - inner.len()) + close + 1;
                let what = if slots == "input_ptrs" {
                    "input"
                } else {
                    "output"
                };
                sink.push(
                    Diagnostic::error(
                        codes::UNKNOWN_NAME,
                        format!("the inline body reads `{slots}[{k}]`, but the task declares {count} {what} tensor{}", if count == 1 { "" } else { "s" }),
                    )
                    .primary(at(i..end), format!("no {what} tensor of this task"))
                    .note(format!("`{slots}[0..{count}]` are the task's {what} tensors in declaration order (I-H1; an `inout` tensor is an input); a slot past them holds no tensor of this task"))
                    .help("use the tensor by its name: the body has a typed pointer for each declared tensor"),
                );
            }
        }
    }
}

/// Where the name at byte `i` of `code` (the body, comments and literals blanked) is written:
/// `name[…]` followed by an assignment, a compound assignment, `++` or `--`, preceded by `++` or
/// `--`, or `*name` followed by an assignment. The range runs from the name to the operator.
fn write_at(code: &str, i: usize, name: &str) -> Option<std::ops::Range<usize>> {
    // Not a member (`p.x`, `p->x`) or a qualified name (`ns::x`).
    if super::cxx_scan::is_member_or_qualified(code, i) {
        return None;
    }
    let before = code[..i].trim_end();
    let mut j = i + name.len();
    let after = &code[j..];
    let ws = after.len() - after.trim_start().len();
    j += ws;
    let deref = before.ends_with('*') && {
        // A unary `*`: after an operator, `(`, `;`, `{`, `}`, at the start, or after the head of
        // an `if`/`while`/`for` (`if (c) *x = v;`), not a product.
        let b = before[..before.len() - 1].trim_end();
        b.is_empty() || b.ends_with(['(', ';', '{', '}', '=', ',', '?', ':']) || closes_head(b)
    };
    if code[j..].starts_with('[') {
        j = super::cxx_scan::matching_forward(code, j, '[', ']')? + 1;
    } else if !deref {
        return None;
    }
    let op = code[j..].trim_start();
    let op_at = j + (code[j..].len() - op.len());
    let assigns = (op.starts_with('=') && !op.starts_with("=="))
        || [
            "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--",
        ]
        .iter()
        .any(|o| op.starts_with(o));
    if assigns {
        let len = if op.starts_with("<<=") || op.starts_with(">>=") {
            3
        } else if op.starts_with('=') {
            1
        } else {
            2
        };
        return Some(i..op_at + len);
    }
    // `++x[i]`, `--x[i]`.
    let pre = !deref && (before.ends_with("++") || before.ends_with("--"));
    pre.then_some(i..i + name.len())
}

/// Whether `b` ends with the `)` of an `if`, `while` or `for` head.
fn closes_head(b: &str) -> bool {
    if !b.ends_with(')') {
        return false;
    }
    super::cxx_scan::matching_backward(b, b.len() - 1, '(', ')').is_some_and(|k| {
        let w = b[..k].trim_end();
        ["if", "while", "for"].iter().any(|kw| {
            w.ends_with(kw)
                && !w[..w.len() - kw.len()]
                    .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::write_at;

    fn writes(code: &str) -> bool {
        super::word_offsets(code, "x").any(|i| write_at(code, i, "x").is_some())
    }

    #[test]
    fn writes_are_told_from_reads() {
        for w in [
            "x[i] = 1.f;",
            "x[i + 1] += v;",
            "x [ 2 ] -= v;",
            "++x[i];",
            "x[i]++;",
            "*x = v;",
            "if (c) *x = v;",
            "x[a[i]] = 0;",
        ] {
            assert!(writes(w), "{w}");
        }
        for r in [
            "float v = x[i];",
            "v = x[i] == 0.f;",
            "y[i] = x[i] * 2.f;",
            "v = a * x[i];",
            "v = *x;",
            "p.x = 1;",
            "q->x[0] = 1;",
            "float const *p = x + i;",
        ] {
            assert!(!writes(r), "{r}");
        }
    }
}
