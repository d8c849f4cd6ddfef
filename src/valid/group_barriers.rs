//! Cooperative groups' barriers in an inline body (E0406, I-R2): `sync()` or `barrier_wait()` on
//! the block, cluster or grid group, found as C++ names them (qualified or not, on the group
//! directly, through `sync(group)`, or on a variable bound to it). `valid::body` reports them.

/// A cooperative-groups barrier call found in an inline body.
pub(super) struct GroupBarrier {
    /// The call, from its first character to the end of the method's name.
    pub(super) at: std::ops::Range<usize>,
    /// The call as written, whitespace dropped (`cg::this_thread_block().sync()`).
    pub(super) call: String,
    /// The group it synchronises: `this_thread_block`, `this_grid` or `this_cluster`.
    pub(super) group: &'static str,
    /// Where the variable it is called on was bound to the group (`this_thread_block()`).
    pub(super) bound: Option<std::ops::Range<usize>>,
}

/// Cooperative groups' barriers in `code` (comments and strings blanked): `sync()` or
/// `barrier_wait()` on `this_thread_block()`, `this_grid()` or `this_cluster()`, called on the
/// group directly (`cooperative_groups::this_thread_block().sync()`), through `sync(group)`
/// (`cg::sync(cg::this_grid())`), or on a variable initialised with the group (`auto block =
/// cg::this_thread_block(); block.sync();`, `cg::sync(block)`).
pub(super) fn group_barriers(code: &str) -> Vec<GroupBarrier> {
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let skip_ws = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let back_ws = |mut i: usize| {
        while i > 0 && b[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        i
    };
    // The identifier ending at `end` (exclusive), if one does.
    let word_before = |end: usize| {
        let start = (0..end).rev().take_while(|&k| ident(b[k])).last()?;
        Some((start, &code[start..end]))
    };
    // The method after a group expression ending at `i`: `.sync(` or `.barrier_wait(`; returns
    // the method's end.
    let method_after = |i: usize| {
        let j = skip_ws(i);
        if b.get(j) != Some(&b'.') {
            return None;
        }
        let k = skip_ws(j + 1);
        ["sync", "barrier_wait"].into_iter().find_map(|m| {
            let end = k + m.len();
            (code[k..].starts_with(m)
                && !b.get(end).is_some_and(|c| ident(*c))
                && b.get(skip_ws(end)) == Some(&b'('))
            .then_some(end)
        })
    };
    // `sync(` right before `open` (the `(` of its argument list), as the free function
    // `cooperative_groups::sync(group)`: the call's start.
    let sync_call_before = |open: usize| {
        let (start, w) = word_before(back_ws(open))?;
        (w == "sync" && !(start > 0 && matches!(b[start - 1], b'.' | b'>')))
            .then(|| qualified_start(code, start))
    };
    let squeeze = |r: std::ops::Range<usize>| -> String {
        code[r].chars().filter(|c| !c.is_whitespace()).collect()
    };
    let mut out = Vec::new();
    let mut bound: Vec<(String, &'static str, std::ops::Range<usize>)> = Vec::new();
    for group in ["this_thread_block", "this_grid", "this_cluster"] {
        for (i, args) in super::body::calls_of(code, group) {
            // `group()`: no arguments.
            let close = skip_ws(args);
            if b.get(close) != Some(&b')') {
                continue;
            }
            let start = qualified_start(code, i);
            let end = close + 1;
            if let Some(m) = method_after(end) {
                out.push(GroupBarrier {
                    at: start..m,
                    call: format!("{}()", squeeze(start..m)),
                    group,
                    bound: None,
                });
                continue;
            }
            let before = back_ws(start);
            if before > 0 && matches!(b[before - 1], b'(' | b'{') {
                // `sync(group())`, or a variable constructed from the group (`block(group())`).
                if let Some(s) = sync_call_before(before - 1) {
                    let close = skip_ws(end);
                    out.push(GroupBarrier {
                        at: s..close + usize::from(b.get(close) == Some(&b')')),
                        call: squeeze(s..close + usize::from(b.get(close) == Some(&b')'))),
                        group,
                        bound: None,
                    });
                } else if let Some((_, name)) = word_before(back_ws(before - 1)) {
                    bound.push((name.to_string(), group, start..end));
                }
            } else if before > 1
                && b[before - 1] == b'='
                && !matches!(b[before - 2], b'=' | b'!' | b'<' | b'>')
            {
                if let Some((_, name)) = word_before(back_ws(before - 1)) {
                    bound.push((name.to_string(), group, start..end));
                }
            }
        }
    }
    for (name, group, bind) in bound {
        for (i, _) in code.match_indices(name.as_str()) {
            let end = i + name.len();
            if (i > 0 && (ident(b[i - 1]) || b[i - 1] == b'.'))
                || b.get(end).is_some_and(|c| ident(*c))
            {
                continue;
            }
            let call = if let Some(m) = method_after(end) {
                Some(i..m)
            } else {
                // `sync(name)`.
                let open = back_ws(i);
                let close = skip_ws(end);
                (open > 0 && b[open - 1] == b'(' && b.get(close) == Some(&b')'))
                    .then(|| sync_call_before(open - 1))
                    .flatten()
                    .map(|s| s..close + 1)
            };
            if let Some(at) = call {
                let mut text = squeeze(at.clone());
                if !text.ends_with(')') {
                    text.push_str("()");
                }
                out.push(GroupBarrier {
                    at,
                    call: text,
                    group,
                    bound: Some(bind.clone()),
                });
            }
        }
    }
    out.sort_by_key(|g| g.at.start);
    out
}

/// The start of the qualified name whose last part starts at `i`: back over `::` and the
/// names before them (`cooperative_groups::this_grid`, `::cg::sync`).
fn qualified_start(code: &str, mut i: usize) -> usize {
    let b = code.as_bytes();
    loop {
        let mut j = i;
        while j > 0 && b[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        if j < 2 || &b[j - 2..j] != b"::" {
            return i;
        }
        let mut k = j - 2;
        while k > 0 && b[k - 1].is_ascii_whitespace() {
            k -= 1;
        }
        let name_start = (0..k)
            .rev()
            .take_while(|&x| b[x].is_ascii_alphanumeric() || b[x] == b'_')
            .last();
        i = name_start.unwrap_or(j - 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(code: &str) -> Vec<(String, &'static str, bool)> {
        group_barriers(code)
            .into_iter()
            .map(|g| (g.call, g.group, g.bound.is_some()))
            .collect()
    }

    #[test]
    fn group_barriers_direct_through_sync_and_bound() {
        let code = "auto b = cg::this_thread_block(); b.sync(); cg::sync( b ); \
                    ::cooperative_groups :: this_grid ( ) . sync ( ); \
                    auto w = cg::tiled_partition<32>(b); w.sync(); bool same = x == cg::this_grid(); \
                    cg::this_cluster().barrier_wait(); cg::this_thread_block().size();";
        assert_eq!(
            calls(code),
            vec![
                ("b.sync()".to_string(), "this_thread_block", true),
                ("cg::sync(b)".to_string(), "this_thread_block", true),
                (
                    "::cooperative_groups::this_grid().sync()".to_string(),
                    "this_grid",
                    false
                ),
                (
                    "cg::this_cluster().barrier_wait()".to_string(),
                    "this_cluster",
                    false
                ),
            ]
        );
    }

    #[test]
    fn group_barriers_never_panic_on_odd_text() {
        for code in [
            "é::this_grid().sync();",
            "::this_grid",
            "this_grid(",
            "= this_thread_block()",
            "(this_thread_block())",
            "sync(this_grid()",
            "x.sync(",
            "",
        ] {
            let _ = group_barriers(code);
        }
        assert_eq!(calls("é::this_grid().sync();").len(), 1);
    }
}
