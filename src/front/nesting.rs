//! A bound on bracket nesting checked before the grammar runs. pest 2.9 stops a parse whose
//! native stack runs low ("stack limit reached", its stack guard), at a depth that varies with
//! where the thread's stack begins: the same 25,000-deep file gave its error at different
//! columns from run to run. Input nested deeper than [`MAX_NESTING`] is E0004 here, the same
//! on every run; below it the grammar's own recursion fits the stack (20,000 parentheses parse
//! on the main thread).

use crate::diag::{codes, Diagnostic};
use crate::span::Span;

/// The most `(`, `[` and `{` open at once that the parser is given. Contracts nest a handful
/// deep; an expression deeper than 64 is E0004 after parsing (`front::expr`).
pub const MAX_NESTING: usize = 2048;

/// E0004 at the first opening bracket of `src` that is [`MAX_NESTING`] + 1 deep, counting
/// outside `//` and `/* */` comments and string and character literals; `None` when the file
/// stays within the bound.
pub fn too_deep(src: &str) -> Option<Diagnostic> {
    let b = src.as_bytes();
    let (mut i, mut depth) = (0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = super::skip::block_comment_end(b, i);
                continue;
            }
            b'"' | b'\'' => i = super::skip::literal_close(b, i),
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(
                        Diagnostic::error(
                            codes::ARITH,
                            format!(
                                "nested too deep: more than {MAX_NESTING} brackets open at once"
                            ),
                        )
                        .primary(Span::new(i, i + 1), format!("bracket {}", MAX_NESTING + 1))
                        .help("split the expression with params, or the code into functions"),
                    );
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("task t {{ stages {}1{} }}", "(".repeat(n), ")".repeat(n))
    }

    #[test]
    fn the_bracket_past_the_bound_is_e0004_and_the_bound_itself_passes() {
        assert!(too_deep(&nested(MAX_NESTING - 1)).is_none());
        let Some(d) = too_deep(&nested(MAX_NESTING)) else {
            panic!("the task's brace and MAX_NESTING parentheses pass the bound")
        };
        assert_eq!(d.code, "E0004");
        let at = "task t { stages ".len() + MAX_NESTING - 1;
        assert_eq!(d.main_span(), Span::new(at, at + 1));
    }

    #[test]
    fn comments_and_literals_do_not_count() {
        let open = "(".repeat(MAX_NESTING + 5);
        for src in [
            format!("// {open}\ntask t {{}}"),
            format!("/* {open} */ task t {{}}"),
            format!("task t {{ body cuda {{ char const *s = \"{open}\"; }} }}"),
            "task t { body cuda { char c = '('; char d = '\\''; } }".to_string(),
        ] {
            assert!(too_deep(&src).is_none(), "{src:.60}");
        }
    }
}
