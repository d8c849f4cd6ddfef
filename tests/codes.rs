//! Keeps the explanation pages of `mpkc explain` honest, as rustc's tidy does for
//! `rustc_error_codes`: every code of the registry (but the `tools` family, whose codes come from
//! external programs) has a page `docs/codes/<CODE>.md`, every page belongs to a registered code,
//! each page is titled `# <CODE>: …`, its first ```mpk block makes `mpkc check` report the code and
//! its second checks without any diagnostic, and every registered code is emitted somewhere in
//! `src/` code (a mention in a comment does not count).

use mpkc::diag::codes::{long_doc, REGISTRY};
use mpkc::driver::{check_sources, Source};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `(code, text)` of every file in `docs/codes/`, keyed by file name.
fn pages() -> BTreeMap<String, String> {
    let dir = root().join("docs/codes");
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_file() {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            out.insert(
                name,
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
            );
        }
    }
    out
}

/// The `code` of a page file name `E0103.md` (or `W0603.md`), if it is shaped like one.
fn page_code(file: &str) -> Option<&str> {
    let code = file.strip_suffix(".md")?;
    let digits = code.strip_prefix('E').or_else(|| code.strip_prefix('W'))?;
    (digits.len() == 4 && digits.bytes().all(|b| b.is_ascii_digit())).then_some(code)
}

/// The contents of the ```mpk fenced blocks of `page`, in order.
fn mpk_blocks(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in page.lines() {
        match &mut current {
            None if line.trim_end() == "```mpk" => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_end() == "```" => out.push(current.take().unwrap()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    out
}

/// Checks a page's example as `mpkc check FILE` does: with the contracts mpkc derives from it and
/// the checks across a build's tasks (generated-file clashes, `setmaxnreg`, TaskTypes), every
/// diagnostic in the file's own result.
fn check(path: String, text: &str) -> mpkc::driver::Checked {
    check_sources(
        &[Source {
            path,
            text: text.to_string(),
        }],
        &SemaOptions::default(),
        &CheckOptions::default(),
    )
    .swap_remove(0)
}

fn summary(checked: &mpkc::driver::Checked) -> String {
    let ds: Vec<String> = checked
        .diags
        .iter()
        .map(|d| format!("{}[{}]: {}", d.severity.as_str(), d.code, d.message))
        .collect();
    if ds.is_empty() {
        "no diagnostics".to_string()
    } else {
        ds.join("; ")
    }
}

/// Every registered code but the tools family has a page, and every page is a registered code's.
#[test]
fn every_code_has_a_page_and_every_page_a_code() {
    let pages = pages();
    let mut problems = Vec::new();
    for c in REGISTRY
        .iter()
        .filter(|c| !matches!(c.family, "tools" | "backend"))
    {
        if !pages.contains_key(&format!("{}.md", c.code)) {
            problems.push(format!(
                "{} ({}) has no page docs/codes/{}.md",
                c.code, c.summary, c.code
            ));
        }
    }
    for file in pages.keys() {
        match page_code(file) {
            None => problems.push(format!("docs/codes/{file} is not named like a page (E0103.md)")),
            Some(code) if !REGISTRY.iter().any(|c| c.code == code) => {
                problems.push(format!("docs/codes/{file} explains {code}, which is not in the registry (src/diag/codes.rs)"))
            }
            Some(_) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Each page is titled `# <CODE>: …`, has both example sections, and is the text that
/// `mpkc explain` prints (build.rs embeds docs/codes).
#[test]
fn pages_are_well_formed_and_embedded() {
    let mut problems = Vec::new();
    for (file, text) in pages() {
        let Some(code) = page_code(&file) else {
            continue;
        };
        let prefix = format!("# {code}: ");
        let title = text.lines().next().unwrap_or("");
        if !title.starts_with(&prefix) || title.len() == prefix.len() {
            problems.push(format!("docs/codes/{file}: the title line must start with `{prefix}` and say what is wrong, found `{title}`"));
        }
        for heading in ["## Erroneous example", "## Fixed example"] {
            if !text.lines().any(|l| l.trim_end() == heading) {
                problems.push(format!("docs/codes/{file}: no `{heading}` section"));
            }
        }
        match long_doc(code) {
            Some(embedded) if embedded == text => {}
            Some(_) => problems.push(format!(
                "docs/codes/{file}: the embedded page differs from the file (stale build?)"
            )),
            None => problems.push(format!(
                "docs/codes/{file}: `mpkc explain {code}` does not find the page"
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The first ```mpk block of each page reports its code; the second checks with no diagnostic
/// at all (no error, and no warning: a warning code's fixed example must not report it either).
#[test]
fn examples_do_what_the_pages_say() {
    let mut problems = Vec::new();
    let mut checked_pages = 0;
    for (file, text) in pages() {
        let Some(code) = page_code(&file) else {
            continue;
        };
        let Some(info) = REGISTRY.iter().find(|c| c.code == code) else {
            continue;
        };
        // `mpk-tree` codes (`mpkc wire`) concern an MPK tree, which `check` does not read.
        // `internal` (E0030) is mpkc's own fault, which no contract is meant to trigger.
        if matches!(info.family, "tools" | "backend" | "mpk-tree" | "internal") {
            continue;
        }
        let blocks = mpk_blocks(&text);
        if blocks.len() < 2 {
            problems.push(format!("docs/codes/{file}: needs an erroneous and a fixed ```mpk example, found {} ```mpk block(s)", blocks.len()));
            continue;
        }
        checked_pages += 1;
        let bad = check(format!("docs/codes/{file} (erroneous example)"), &blocks[0]);
        if !bad.diags.iter().any(|d| d.code == code) {
            problems.push(format!(
                "docs/codes/{file}: the erroneous example does not report {code}: {}",
                summary(&bad)
            ));
        }
        let good = check(format!("docs/codes/{file} (fixed example)"), &blocks[1]);
        if !good.diags.is_empty() {
            problems.push(format!(
                "docs/codes/{file}: the fixed example has diagnostics: {}",
                summary(&good)
            ));
        }
    }
    assert!(checked_pages > 0, "no page with examples under docs/codes");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// What a Rust file names outside its comments: its string literals (as written, quotes and
/// all) and the `NAME` of each `codes::NAME` path. Read from the tokens proc-macro2 lexes the file
/// into: comments are no tokens, and doc comments, which become `#[doc = "…"]` attributes, are
/// skipped with every other `#[doc …]`. A code named only in a comment is not named.
#[derive(Default)]
struct Named {
    literals: BTreeSet<String>,
    constants: BTreeSet<String>,
}

fn is_doc_attribute(g: &Group) -> bool {
    g.delimiter() == Delimiter::Bracket
        && matches!(g.stream().into_iter().next(), Some(TokenTree::Ident(i)) if i == "doc")
}

fn collect_named(ts: TokenStream, out: &mut Named) {
    let tokens: Vec<TokenTree> = ts.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                // `#[doc = ".."]` or `#![doc = ".."]`: skip the attribute.
                let mut j = i + 1;
                if matches!(tokens.get(j), Some(TokenTree::Punct(b)) if b.as_char() == '!') {
                    j += 1;
                }
                if matches!(tokens.get(j), Some(TokenTree::Group(g)) if is_doc_attribute(g)) {
                    i = j + 1;
                    continue;
                }
            }
            TokenTree::Group(g) => collect_named(g.stream(), out),
            TokenTree::Literal(l) => {
                out.literals.insert(l.to_string());
            }
            TokenTree::Ident(id) if id == "codes" => {
                if let (
                    Some(TokenTree::Punct(a)),
                    Some(TokenTree::Punct(b)),
                    Some(TokenTree::Ident(n)),
                ) = (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3))
                {
                    if a.as_char() == ':' && b.as_char() == ':' {
                        out.constants.insert(n.to_string());
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
}

fn named_in(path: &Path) -> Named {
    let text = std::fs::read_to_string(path).unwrap();
    let ts: TokenStream = text
        .parse()
        .unwrap_or_else(|e| panic!("{}: does not lex as Rust: {e:?}", path.display()));
    let mut out = Named::default();
    collect_named(ts, &mut out);
    out
}

/// The scan sees code and only code: a literal and a path count, the same in comments do not.
#[test]
fn comments_name_no_code() {
    let dir = std::env::temp_dir().join(format!("mpkc-codes-scan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("x.rs");
    std::fs::write(
        &file,
        "//! Reports \"E0001\" through codes::MODULE_DOC.\n\
         /// Emits \"E0002\" and codes::ITEM_DOC.\n\
         // \"E0003\" codes::LINE_COMMENT\n\
         /* \"E0004\" codes::BLOCK_COMMENT */\n\
         fn f() -> (&'static str, &'static str) { (\"E0005\", codes::USED.code) }\n\
         fn g() { let _ = format!(\"{}\", codes::IN_MACRO); }\n",
    )
    .unwrap();
    let n = named_in(&file);
    let _ = std::fs::remove_dir_all(&dir);
    let lits: Vec<&str> = n.literals.iter().map(String::as_str).collect();
    assert_eq!(lits, ["\"E0005\"", "\"{}\""]);
    let consts: Vec<&str> = n.constants.iter().map(String::as_str).collect();
    assert_eq!(consts, ["IN_MACRO", "USED"]);
}

/// Every registered code is emitted: outside src/diag/codes.rs, src/ names it in code (not in a
/// comment, see [`Named`]) either as the string `"E0103"` or through its registry constant,
/// `codes::SMEM_BUDGET`.
#[test]
fn every_code_is_emitted_somewhere() {
    let registry_file = root().join("src/diag/codes.rs");
    let registry_text = std::fs::read_to_string(&registry_file).unwrap();
    // `SMEM_BUDGET = "E0103", …` lines of the `registry!` invocation.
    let mut constant = BTreeMap::new();
    for line in registry_text.lines() {
        let Some((name, rest)) = line.trim().split_once(" = \"") else {
            continue;
        };
        let Some((code, _)) = rest.split_once('"') else {
            continue;
        };
        if name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            constant.insert(code.to_string(), name.to_string());
        }
    }
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut named = Named::default();
    for p in files
        .iter()
        .filter(|p| p.as_path() != registry_file.as_path())
    {
        let n = named_in(p);
        named.literals.extend(n.literals);
        named.constants.extend(n.constants);
    }
    let mut problems = Vec::new();
    for c in REGISTRY {
        let literal = format!("\"{}\"", c.code);
        let name = constant.get(c.code);
        let emitted =
            named.literals.contains(&literal) || name.is_some_and(|n| named.constants.contains(n));
        if !emitted {
            let how = name.map_or(String::new(), |n| format!(" or `codes::{n}`"));
            problems.push(format!("{} ({}) is registered but src/ never names `{literal}`{how} outside src/diag/codes.rs and outside comments", c.code, c.summary));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
