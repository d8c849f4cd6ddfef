//! Cooperative groups' barriers in an inline body (E0406, I-R2): `sync()` or `barrier_wait()` on
//! the block, cluster or grid group, found as C++ names them (qualified or not, on the group
//! directly, through `sync(group)`, or on a variable bound to it: initialised with the group, or
//! a function parameter of the group's type, `cg::thread_block b`). `valid::body` reports them.

/// A cooperative-groups barrier call found in an inline body.
pub(super) struct GroupBarrier {
    /// The call, from its first character to the end of the method's name.
    pub(super) at: std::ops::Range<usize>,
    /// The call as written, whitespace dropped (`cg::this_thread_block().sync()`).
    pub(super) call: String,
    /// The group it synchronises: `this_thread_block`, `this_grid` or `this_cluster`.
    pub(super) group: &'static str,
    /// Where the variable it is called on was bound to the group: the `this_thread_block()` it
    /// was initialised with, or its declaration as a parameter.
    pub(super) bound: Option<std::ops::Range<usize>>,
    /// When the variable is a function parameter, its type as written (`cg::thread_block`): a
    /// caller passes it the group, and only the group has that type.
    pub(super) param_type: Option<String>,
}

/// Cooperative groups' group types that stand for one whole group, with the function that
/// returns it (CUDA Programming Guide, "Cooperative Groups": a `thread_block` is made only by
/// `this_thread_block()`, a `grid_group` by `this_grid()`, a `cluster_group` by
/// `this_cluster()`), so a parameter of such a type is that group. `thread_group` (any group, a
/// warp tile too) and `thread_block_tile<N>` (a warp's own barrier) are not.
const GROUP_TYPES: [(&str, &str); 3] = [
    ("thread_block", "this_thread_block"),
    ("grid_group", "this_grid"),
    ("cluster_group", "this_cluster"),
];

/// Cooperative groups' barriers in `code` (comments and strings blanked): `sync()` or
/// `barrier_wait()` on `this_thread_block()`, `this_grid()` or `this_cluster()`, called on the
/// group directly (`cooperative_groups::this_thread_block().sync()`), through `sync(group)`
/// (`cg::sync(cg::this_grid())`), or on a variable bound to the group (`.` or `->`): initialised
/// with it (`auto block = cg::this_thread_block(); block.sync();`, `cg::sync(block)`) or a
/// function parameter of its type (`void f(const cg::thread_block &b) { b.sync(); }`,
/// [`GROUP_TYPES`]).
pub(super) fn group_barriers(code: &str) -> Vec<GroupBarrier> {
    let b = code.as_bytes();
    let skip_ws = |i| skip_ws(b, i);
    let back_ws = |i| back_ws(b, i);
    // The identifier ending at `end` (exclusive), if one does.
    let word_before = |end: usize| {
        let start = (0..end).rev().take_while(|&k| is_ident(b[k])).last()?;
        Some((start, &code[start..end]))
    };
    // The method after a group expression ending at `i`: `.sync(` or `.barrier_wait(`; returns
    // the method's end.
    let method_after = |i: usize| {
        let j = skip_ws(i);
        let k = match (b.get(j), b.get(j + 1)) {
            (Some(b'.'), _) => skip_ws(j + 1),
            (Some(b'-'), Some(b'>')) => skip_ws(j + 2),
            _ => return None,
        };
        ["sync", "barrier_wait"].into_iter().find_map(|m| {
            let end = k + m.len();
            (code[k..].starts_with(m)
                && !b.get(end).is_some_and(|c| is_ident(*c))
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
    // (variable, group, where it is bound, its type when it is a parameter)
    let mut bound: Vec<(String, &'static str, std::ops::Range<usize>, Option<String>)> = Vec::new();
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
                    param_type: None,
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
                        param_type: None,
                    });
                } else if let Some((_, name)) = word_before(back_ws(before - 1)) {
                    bound.push((name.to_string(), group, start..end, None));
                }
            } else if before > 1
                && b[before - 1] == b'='
                && !matches!(b[before - 2], b'=' | b'!' | b'<' | b'>')
            {
                if let Some((_, name)) = word_before(back_ws(before - 1)) {
                    bound.push((name.to_string(), group, start..end, None));
                }
            }
        }
    }
    for (ty, group) in GROUP_TYPES {
        for (name, decl, written) in group_params(code, ty) {
            bound.push((name, group, decl, Some(written)));
        }
    }
    for (name, group, bind, param_type) in bound {
        for (i, _) in code.match_indices(name.as_str()) {
            let end = i + name.len();
            if (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b'.'))
                || b.get(end).is_some_and(|c| is_ident(*c))
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
                    param_type: param_type.clone(),
                });
            }
        }
    }
    out.sort_by_key(|g| g.at.start);
    // A parameter with the group as its default (`cg::thread_block b = cg::this_thread_block()`)
    // is bound twice: its calls are reported once, as bound by the initialiser.
    out.dedup_by_key(|g| g.at.clone());
    out
}

/// The parameters of type `ty` (a [`GROUP_TYPES`] name, qualified or not, `const`, `&`, `&&` or
/// `*` around it) in `code`: `(name, the declaration from its type to its name, the type as
/// written)`. A parameter is a declaration that follows `(` or `,` and whose name is followed by
/// `,`, `)` or a default (`=`); a local variable (`cg::thread_block tb(...);`) is not one, and is
/// bound through its initialiser instead.
fn group_params(code: &str, ty: &str) -> Vec<(String, std::ops::Range<usize>, String)> {
    let b = code.as_bytes();
    let skip_ws = |i| skip_ws(b, i);
    let back_ws = |i| back_ws(b, i);
    // The identifier starting at `i`, if one does: its end.
    let word_at = |i: usize| {
        let end = (i..b.len()).find(|&k| !is_ident(b[k])).unwrap_or(b.len());
        (end > i && !b[i].is_ascii_digit()).then_some(end)
    };
    let qualifiers = ["const", "volatile"];
    let mut out = Vec::new();
    for (i, _) in code.match_indices(ty) {
        let end = i + ty.len();
        if (i > 0 && is_ident(b[i - 1])) || b.get(end).is_some_and(|c| is_ident(*c)) {
            continue;
        }
        // Before the type: `(` or `,`, past `const` / `volatile` (`const cg::thread_block &b`).
        let start = qualified_start(code, i);
        let mut before = back_ws(start);
        loop {
            let word = qualifiers.into_iter().find(|q| {
                before >= q.len()
                    && &b[before - q.len()..before] == q.as_bytes()
                    && !(before > q.len() && is_ident(b[before - q.len() - 1]))
            });
            match word {
                Some(q) => before = back_ws(before - q.len()),
                None => break,
            }
        }
        if before == 0 || !matches!(b[before - 1], b'(' | b',') {
            continue;
        }
        // After it: `const`, `&`, `&&` or `*`, then the name, then `,`, `)` or `=`.
        let mut k = skip_ws(end);
        let name = loop {
            match b.get(k) {
                Some(b'&' | b'*') => k = skip_ws(k + 1),
                Some(_) => {
                    let Some(w) = word_at(k) else { break None };
                    if qualifiers.contains(&&code[k..w]) {
                        k = skip_ws(w);
                        continue;
                    }
                    break Some(k..w);
                }
                None => break None,
            }
        };
        let Some(name) = name else { continue };
        let after = skip_ws(name.end);
        let follows = match b.get(after) {
            Some(b',' | b')') => true,
            Some(b'=') => b.get(after + 1) != Some(&b'='),
            _ => false,
        };
        if follows {
            let written: String = code[start..end]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            out.push((code[name.clone()].to_string(), start..name.end, written));
        }
    }
    out
}

/// The start of the qualified name whose last part starts at `i`: back over `::` and the
/// names before them (`cooperative_groups::this_grid`, `::cg::sync`).
fn qualified_start(code: &str, mut i: usize) -> usize {
    let b = code.as_bytes();
    loop {
        let j = back_ws(b, i);
        if j < 2 || &b[j - 2..j] != b"::" {
            return i;
        }
        let k = back_ws(b, j - 2);
        let name_start = (0..k).rev().take_while(|&x| is_ident(b[x])).last();
        i = name_start.unwrap_or(j - 2);
    }
}

/// Whether `c` may be part of a C++ identifier.
fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The first byte at or after `i` that is not whitespace (`b.len()` past the end).
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The start of the whitespace run that ends at `i` (exclusive): `i` when none does.
fn back_ws(b: &[u8], mut i: usize) -> usize {
    while i > 0 && b[i - 1].is_ascii_whitespace() {
        i -= 1;
    }
    i
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
    fn group_parameters_are_bound_to_their_group() {
        let code = "__device__ void f(cg::thread_block b) { b.sync(); } \
                    __device__ void g(int n, const cooperative_groups :: thread_block &blk, float x) { cg::sync(blk); } \
                    __device__ void h(cg::grid_group *grid) { grid->sync(); } \
                    __device__ void k(const cg::cluster_group c = cg::this_cluster()) { c.barrier_wait(); } \
                    __device__ void t(cg::thread_block_tile<32> w, cg::thread_group g) { w.sync(); g.sync(); } \
                    void u() { cg::thread_block tb(cg::this_thread_block()); bool e = a == thread_block; \
                    cg::thread_block const& r = tb; }";
        assert_eq!(
            calls(code),
            vec![
                ("b.sync()".to_string(), "this_thread_block", true),
                ("cg::sync(blk)".to_string(), "this_thread_block", true),
                ("grid->sync()".to_string(), "this_grid", true),
                ("c.barrier_wait()".to_string(), "this_cluster", true),
            ]
        );
        let params: Vec<Option<String>> = group_barriers(code)
            .into_iter()
            .map(|g| g.param_type)
            .collect();
        assert_eq!(
            params,
            vec![
                Some("cg::thread_block".to_string()),
                Some("cooperative_groups::thread_block".to_string()),
                Some("cg::grid_group".to_string()),
                // Bound by its default first: the initialiser's label.
                None,
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
            "(thread_block",
            "(thread_block &",
            "(const thread_block é)",
            "é(thread_block b",
            "(thread_block b)b->",
            "",
        ] {
            let _ = group_barriers(code);
        }
        assert_eq!(calls("é::this_grid().sync();").len(), 1);
    }
}
