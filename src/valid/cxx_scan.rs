//! Reading the structure of an inline body's C++ from its text (comments and literals blanked,
//! [`super::body::strip_comments_and_strings`]): the blocks open at a position, matching
//! brackets, statement bounds, and whether a name is a member or a qualified name. The rules
//! that follow control flow through a body (`valid::divergent_barriers`, `valid::grid_sync`,
//! `valid::tensor_access`) share these.

/// The byte offsets of the `{` open at position `p` of `s`, outermost first.
pub(super) fn enclosing_opens(s: &str, p: usize) -> Vec<usize> {
    let mut opens = Vec::new();
    for (j, c) in s[..p].char_indices() {
        match c {
            '{' => opens.push(j),
            '}' => {
                opens.pop();
            }
            _ => {}
        }
    }
    opens
}

/// The `close` matching the `open` bracket at byte `at` of `s` (`(`…`)`, `[`…`]`, `<`…`>`).
pub(super) fn matching_forward(s: &str, at: usize, open: char, close: char) -> Option<usize> {
    let mut depth = 0i32;
    for (j, c) in s[at..].char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(at + j);
            }
        }
    }
    None
}

/// The `open` matching the `close` bracket at byte `at` of `s`, searching backwards.
pub(super) fn matching_backward(s: &str, at: usize, open: char, close: char) -> Option<usize> {
    let mut depth = 0i32;
    for (j, c) in s[..=at].char_indices().rev() {
        if c == close {
            depth += 1;
        } else if c == open {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// The start of the statement that holds position `p`: just past the last `;`, `{` or `}`
/// before `p` outside parentheses (a `for` header's `;` is inside them).
pub(super) fn statement_start(s: &str, p: usize) -> usize {
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

/// The first of `stops` at byte `from` or after, outside parentheses, brackets and braces, or
/// the first closing one without its opening one (the end of the enclosing construct); the
/// end of `s` where there is none.
pub(super) fn end_at(s: &str, from: usize, stops: &[char]) -> usize {
    let mut depth = 0i32;
    for (j, c) in s[from..].char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ')' | ']' | '}' => return from + j,
            c if depth == 0 && stops.contains(&c) => return from + j,
            _ => {}
        }
    }
    s.len()
}

/// Whether the name at byte `i` of `s` is a member or a qualified name (`p.x`, `p->x`,
/// `ns::x`), not a local of that name.
pub(super) fn is_member_or_qualified(s: &str, i: usize) -> bool {
    let before = s[..i].trim_end();
    before.ends_with('.') || before.ends_with("->") || before.ends_with("::")
}
