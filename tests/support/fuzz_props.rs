//! The properties the fuzz targets (`fuzz/fuzz_targets/*.rs`) assert, shared with the regression
//! test `tests/fuzz_regressions.rs` that replays every input the fuzzers ever found
//! (`tests/fuzz/<target>/`). A violated property panics, which libFuzzer reports as a crash.
//!
//! - [`check`]: any text goes through parse → sema → check (with the derived split-K reduce tasks
//!   and the output-name clash check, as `mpkc check` runs it) → plan → code generation without a
//!   panic; every diagnostic's spans lie inside the text on UTF-8 character boundaries and render
//!   as human text and as one JSON line; generation is deterministic.
//! - [`fmt`]: `mpkc fmt` of a parsing contract parses, keeps every token (comments and inline
//!   CUDA included) up to whitespace, gives the checker the same codes, and is idempotent.
//! - [`lsp`]: the language server's document path (open, full-text changes, requests at
//!   positions taken from the input) answers every request and never panics.

#![allow(dead_code)]

use mpkc::back::{self, ContractInfo};
use mpkc::diag::{render_human, render_json, ColorMode, Diagnostic, SourceFile};
use mpkc::driver::{check_sources, Source};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;

/// The name fuzz inputs are checked under.
pub const FILE: &str = "fuzz.mpk";

/// Bytes as a contract: invalid UTF-8 sequences become U+FFFD, as an editor would show them.
pub fn text_of(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

fn assert_span_ok(text: &str, d: &Diagnostic, start: usize, end: usize) {
    assert!(
        start <= end && end <= text.len(),
        "{} `{}`: span {start}..{end} outside the text of {} bytes",
        d.code,
        d.message,
        text.len()
    );
    assert!(
        text.is_char_boundary(start) && text.is_char_boundary(end),
        "{} `{}`: span {start}..{end} not on character boundaries",
        d.code,
        d.message
    );
}

/// Parse → check → plan → generate over `text`; panics on a violated property.
pub fn check(text: &str) {
    let src = Source {
        path: FILE.to_string(),
        text: text.to_string(),
    };
    let checked = check_sources(
        std::slice::from_ref(&src),
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    for c in &checked {
        let file = SourceFile::new(&c.source.path, &c.source.text);
        for d in &c.diags {
            for l in &d.labels {
                assert_span_ok(&c.source.text, d, l.span.start, l.span.end);
            }
            assert!(!d.message.is_empty(), "{}: empty message", d.code);
            let human = render_human(d, &file, ColorMode::Never);
            assert!(
                human.contains(d.code),
                "{}: rendering lost the code",
                d.code
            );
            let json = render_json(d, &file);
            assert!(!json.contains('\n'), "{}: JSON spans lines", d.code);
            let v: serde_json::Value = serde_json::from_str(&json).expect("JSON diagnostic parses");
            assert_eq!(v["code"], d.code);
        }
        let info = ContractInfo::new(&c.source.path, &c.source.text);
        for t in &c.tasks {
            assert!(
                !t.plans.is_empty(),
                "{}: a checked task without a plan",
                t.ir.unit_name()
            );
            let once = back::generate(t, &info);
            assert!(!once.is_empty());
            // What check accepts is what build generates (issue 11): a checked pipeline task has a
            // lowering, and every task gets a kernel for each target it declares.
            if t.ir.family == mpkc::ir::Family::Pipeline {
                assert!(
                    t.linear().is_some(),
                    "{}: checked clean but the backend cannot lower it",
                    t.ir.unit_name()
                );
            }
            if t.ir.family != mpkc::ir::Family::Helper {
                let kernels = once.iter().filter(|f| f.name.ends_with(".cuh")).count();
                let wanted = if t.ir.family == mpkc::ir::Family::Pipeline {
                    t.ir.targets.len()
                } else {
                    1
                };
                assert_eq!(
                    kernels,
                    wanted,
                    "{}: kernels per declared target",
                    t.ir.unit_name()
                );
            }
            assert_eq!(
                once,
                back::generate(t, &info),
                "generation is not deterministic"
            );
        }
    }
}

fn tokens(s: &str) -> Vec<String> {
    mpkc::fmt::lex::lex(s)
        .into_iter()
        .map(|t| t.text.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn codes(path: &str, text: &str) -> Vec<&'static str> {
    let c = mpkc::driver::check_source(
        &Source {
            path: path.into(),
            text: text.into(),
        },
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    let mut v: Vec<&'static str> = c.diags.iter().map(|d| d.code).collect();
    v.sort_unstable();
    v
}

/// `mpkc fmt` over `text`; panics on a violated property. Text that does not parse is left
/// alone by fmt and only has to not panic.
pub fn fmt(text: &str) {
    if mpkc::front::parse_file(text).is_err() {
        let _ = mpkc::fmt::lex::lex(text);
        return;
    }
    let once = mpkc::fmt::format(text);
    assert!(
        mpkc::front::parse_file(&once).is_ok(),
        "formatted text no longer parses:\n{once}"
    );
    assert_eq!(tokens(&once), tokens(text), "fmt changed a token");
    let twice = mpkc::fmt::format(&once);
    assert_eq!(twice, once, "fmt is not idempotent");
    assert_eq!(
        codes(FILE, &once),
        codes(FILE, text),
        "fmt changed the checker's verdict"
    );
}

/// Reads the fuzz input as a small program for the language server's document path.
struct Ops<'a>(&'a [u8]);

impl Ops<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }
    fn u16(&mut self) -> Option<u32> {
        Some(u32::from(self.byte()?) << 8 | u32::from(self.byte()?))
    }
    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, rest) = self.0.split_at(n);
        self.0 = rest;
        a
    }
}

fn position(ops: &mut Ops<'_>) -> Option<lsp_types::Position> {
    Some(lsp_types::Position {
        line: ops.u16()? % 512,
        character: ops.u16()? % 512,
    })
}

fn request(method: &str, id: i32, params: serde_json::Value) -> lsp_server::Request {
    lsp_server::Request {
        id: id.into(),
        method: method.to_string(),
        params,
    }
}

/// The language server's change path over `data`: the bytes up to the first NUL are the
/// opened text; the rest is a program of ranged edits (positions anywhere, in range or not),
/// full replacements, analyses and requests (hover, definition, references, symbols,
/// completion, formatting) at positions taken from the input. Every analysis publishes ranges
/// inside the text with start ≤ end, every request is answered without an error, and the
/// documents' text is the edits applied in order.
pub fn lsp(data: &[u8]) {
    use lsp_types::{Position, Range, TextDocumentContentChangeEvent};
    use mpkc::driver::cancel::Token;
    use mpkc::lsp::{analysis, requests, sync::Docs};
    use serde_json::json;

    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (text, mut ops) = (
        text_of(&data[..split]),
        Ops(data.get(split + 1..).unwrap_or(&[])),
    );
    let uri_text = "file:///fuzz/fuzz.mpk";
    let uri: lsp_types::Uri = uri_text.parse().expect("a valid URI");
    let mut docs = Docs::default();
    docs.open(uri.clone(), 1, text.clone());
    let mut expected = text;
    let mut version = 1;
    let mut id = 0;
    let analyse = |docs: &mut Docs| {
        while let Some(p) = docs.next_pending() {
            let a = analysis::analyse(&p, &Token::new()).expect("an analysis without a cancel");
            // Lines as the protocol counts them: `\n`, `\r\n` and a lone `\r` end a line.
            let lines = p.text.replace("\r\n", "\n").split(['\n', '\r']).count() as u32;
            for d in &a.publish.diagnostics {
                let (s, e) = (d.range.start, d.range.end);
                assert!(
                    (s.line, s.character) <= (e.line, e.character),
                    "inverted range {:?} for {}",
                    d.range,
                    d.message
                );
                assert!(e.line < lines.max(1), "range {:?} past the text", d.range);
            }
            docs.finished(&p, Some(a.doc));
        }
    };
    while let Some(op) = ops.byte() {
        match op % 4 {
            0 => {
                // A ranged edit.
                let (Some(a), Some(b), Some(n)) =
                    (position(&mut ops), position(&mut ops), ops.byte())
                else {
                    break;
                };
                let insert = text_of(ops.bytes(usize::from(n % 32)));
                let li = mpkc::lsp::convert::LineIndex::new(&expected);
                let (x, y) = (li.offset(&expected, a), li.offset(&expected, b));
                expected.replace_range(x.min(y)..x.max(y), &insert);
                version += 1;
                let change = TextDocumentContentChangeEvent {
                    range: Some(Range { start: a, end: b }),
                    range_length: None,
                    text: insert,
                };
                let p = lsp_types::DidChangeTextDocumentParams {
                    text_document: lsp_types::VersionedTextDocumentIdentifier {
                        uri: uri.clone(),
                        version,
                    },
                    content_changes: vec![change],
                };
                docs.change(p)
                    .expect("a newer version of an open document is applied");
            }
            1 => analyse(&mut docs),
            2 => {
                let Some(kind) = ops.byte() else { break };
                let pos = position(&mut ops).unwrap_or(Position {
                    line: 0,
                    character: 0,
                });
                let at = json!({"textDocument": {"uri": uri_text}, "position": pos});
                let doc = json!({"textDocument": {"uri": uri_text}});
                let req = match kind % 6 {
                    0 => request("textDocument/hover", id, at),
                    1 => request("textDocument/definition", id, at),
                    2 => request(
                        "textDocument/references",
                        id,
                        json!({"textDocument": {"uri": uri_text}, "position": pos,
                               "context": {"includeDeclaration": true}}),
                    ),
                    3 => request("textDocument/documentSymbol", id, doc),
                    4 => request("textDocument/completion", id, at),
                    _ => request(
                        "textDocument/formatting",
                        id,
                        json!({"textDocument": {"uri": uri_text},
                               "options": {"tabSize": 2, "insertSpaces": true}}),
                    ),
                };
                let resp = requests::answer(&docs, req);
                assert_eq!(resp.id, id.into());
                assert!(
                    resp.response_result.is_ok(),
                    "request {kind} failed: {:?}",
                    resp.response_result
                );
                id += 1;
            }
            _ => {
                // A full replacement by a slice of the input.
                let Some(n) = ops.byte() else { break };
                let t = text_of(ops.bytes(usize::from(n)));
                expected = t.clone();
                version += 1;
                let p = lsp_types::DidChangeTextDocumentParams {
                    text_document: lsp_types::VersionedTextDocumentIdentifier {
                        uri: uri.clone(),
                        version,
                    },
                    content_changes: vec![TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text: t,
                    }],
                };
                docs.change(p)
                    .expect("a newer version of an open document is applied");
            }
        }
        let current = docs.get(&uri).expect("the document stays open");
        assert_eq!(
            *current.text, expected,
            "the edits were not applied in order"
        );
    }
    analyse(&mut docs);
}
