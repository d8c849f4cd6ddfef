//! Unit-level tests of the language server's pieces (kept out of `src/lsp/` so that the server's
//! own code holds no panicking shortcut): UTF-16 positions, hover text, the symbol index, the
//! tolerant transport, and the documents' text synchronisation.

use lsp_server::Message;
use lsp_types::Position;
use mpkc::driver::cancel::Token;
use mpkc::lsp::convert::LineIndex;
use mpkc::lsp::document::Document;
use mpkc::lsp::hover::hover;
use mpkc::lsp::index::{build, Index, SymKind};
use mpkc::lsp::transport::{parse, read_frame, Frame, Incoming};
use mpkc::span::Span;

// ---- convert ----

#[test]
fn utf16_columns_round_trip() {
    let text = "ab\n// é𝄞x\nz";
    let li = LineIndex::new(text);
    let x = text.find('x').unwrap();
    let p = li.position(text, x);
    // `// ` 3 units, é 1 unit, 𝄞 2 units.
    assert_eq!(
        p,
        Position {
            line: 1,
            character: 6
        }
    );
    assert_eq!(li.offset(text, p), x);
    assert_eq!(
        li.position(text, text.len()),
        Position {
            line: 2,
            character: 1
        }
    );
    assert_eq!(
        li.offset(
            text,
            Position {
                line: 9,
                character: 0
            }
        ),
        text.len()
    );
}

#[test]
fn spans_inside_a_character_and_lone_carriage_returns() {
    let text = "ab\n= é\n";
    let li = LineIndex::new(text);
    let e = text.find('é').unwrap();
    // A one-byte span on the first byte of é covers the whole character.
    let r = li.range(text, Span::new(e, e + 1));
    assert_eq!(
        (r.start, r.end),
        (
            Position {
                line: 1,
                character: 2
            },
            Position {
                line: 1,
                character: 3
            }
        )
    );
    let text = "/* a\rb */ zz";
    let li = LineIndex::new(text);
    assert_eq!(
        li.position(text, text.find("zz").unwrap()),
        Position {
            line: 1,
            character: 5
        }
    );
    let text = "x\r\ny";
    assert_eq!(
        LineIndex::new(text).position(text, 3),
        Position {
            line: 1,
            character: 0
        }
    );
}

// ---- hover ----

fn house() -> Document {
    let text = mpkc::driver::stdlib::sources()
        .into_iter()
        .find(|s| s.path.ends_with("linear_sm100_v2.mpk"))
        .unwrap()
        .text;
    Document::analyze("linear_sm100_v2.mpk", text, &Token::new()).unwrap()
}

#[test]
fn task_hover_has_the_budget_and_the_page_map() {
    let d = house();
    let at = d.text.find("linear_sm100_v2").unwrap();
    let h = hover(&d, at).unwrap();
    assert!(
        h.contains("| - | sm_100a | 221200 | 224256 | 14 of 14 | 22 of 31 | 32 |"),
        "{h}"
    );
    assert!(h.contains("page 13 |"), "{h}");
}

#[test]
fn region_and_channel_hovers() {
    let d = house();
    let at = d.text.find("region W").unwrap() + "region ".len();
    let h = hover(&d, at).unwrap();
    assert!(
        h.contains("(6 stages)")
            && h.contains("`W_0` (REGION ordinal 0): 32768 B, pages 0-1, offset 0"),
        "{h}"
    );
    let at = d.text.find("channel w_ring").unwrap() + "channel ".len();
    let h = hover(&d, at).unwrap();
    assert!(
        h.contains("`w_ring.full[0]`") && h.contains("loader → launcher"),
        "{h}"
    );
}

/// The role words hover with what they mean; a tensor's hover names its role; `scale of W`
/// refers to `W`; completion offers the words.
#[test]
fn tensor_role_hovers_and_completion() {
    let text = mpkc::driver::stdlib::sources()
        .into_iter()
        .find(|s| s.path.ends_with("linear_fp8_blockscale.mpk"))
        .unwrap()
        .text;
    let d = Document::analyze("linear_fp8_blockscale.mpk", text, &Token::new()).unwrap();
    let at = d.text.find("in weight").unwrap() + "in ".len();
    let h = hover(&d, at).unwrap();
    assert!(h.contains("**tensor role `weight`**"), "{h}");
    let at = d.text.find("in scale of W").unwrap() + "in ".len();
    let h = hover(&d, at).unwrap();
    assert!(h.contains("The block scales of `W`"), "{h}");
    let at = d.text.find("tensor W_scale").unwrap() + "tensor ".len();
    let h = hover(&d, at).unwrap();
    assert!(h.contains("role: the block scales of `W`"), "{h}");
    // `W` in `scale of W` is a reference to the tensor W.
    let at = d.text.find("in scale of W").unwrap() + "in scale of ".len();
    let h = hover(&d, at).unwrap();
    assert!(
        h.starts_with("**tensor `W`**") && h.contains("role: weight"),
        "{h}"
    );
    let words: Vec<String> = mpkc::lsp::nav::completion(&d)
        .into_iter()
        .map(|c| c.label)
        .collect();
    for w in [
        "weight",
        "activation",
        "residual",
        "output",
        "partials",
        "scale",
        "of",
    ] {
        assert!(words.iter().any(|x| x == w), "no `{w}` in {words:?}");
    }
}

/// An `inout` view hovers with its input slot and its stride; completion offers `inout`,
/// `view`, `stride` and `offset`.
#[test]
fn inout_view_hovers_and_completion() {
    let text = mpkc::driver::stdlib::sources()
        .into_iter()
        .find(|s| s.path.ends_with("dsv3/qkv_a_norm.mpk"))
        .unwrap()
        .text;
    let d = Document::analyze("qkv_a_norm.mpk", text, &Token::new()).unwrap();
    let at = d.text.find("tensor x").unwrap() + "tensor ".len();
    let h = hover(&d, at).unwrap();
    assert!(h.contains("inout (input_ptrs[0])"), "{h}");
    assert!(
        h.contains("view: rows 2176 elements apart from column 1536 of the parent"),
        "{h}"
    );
    let words: Vec<String> = mpkc::lsp::nav::completion(&d)
        .into_iter()
        .map(|c| c.label)
        .collect();
    for w in ["inout", "view", "stride", "offset"] {
        assert!(words.iter().any(|x| x == w), "no `{w}` in {words:?}");
    }
}

// ---- index ----

fn index(text: &str) -> Index {
    build(&mpkc::front::parse_file(text).expect("parses"))
}

/// `epilogue quant e4m3 with B` names the barrier B (go to definition, references).
#[test]
fn with_names_its_barrier() {
    let text = "task t {\n  family pipeline\n  barrier sync = named(3, threads 128)\n  epilogue quant e4m3 with sync\n}\n";
    let ix = index(text);
    let b = ix
        .symbols
        .iter()
        .position(|s| s.kind == SymKind::Barrier && s.name == "sync")
        .unwrap();
    assert_eq!(ix.occurrences(b, false).len(), 1);
}

#[test]
fn the_house_linear_resolves_rings_roles_and_params() {
    let text = mpkc::driver::stdlib::sources()
        .into_iter()
        .find(|s| s.path.ends_with("linear_sm100_v2.mpk"))
        .unwrap()
        .text;
    let ix = index(&text);
    let find = |k, n: &str| {
        ix.symbols
            .iter()
            .position(|s| s.kind == k && s.name == n)
            .unwrap()
    };
    // `channel w_ring: W, …` names the region W, `(tma W)` the tensor W.
    let region_w = find(SymKind::Region, "W");
    let tensor_w = find(SymKind::Tensor, "W");
    assert_eq!(ix.occurrences(region_w, false).len(), 1);
    assert!(!ix.occurrences(tensor_w, false).is_empty());
    // The launcher is named by channels and sems.
    assert!(ix.occurrences(find(SymKind::Role, "launcher"), false).len() >= 4);
    // K appears in the tensor dims.
    assert!(ix.occurrences(find(SymKind::Param, "K"), false).len() >= 2);
    // A reference resolves back to its symbol.
    let (sym, span) = ix.refs[0];
    assert_eq!(ix.at(span.start), Some(sym));
}

#[test]
fn instances_name_params() {
    let ix = index("task t { param h: int = 4\n instance a(h = 8) }");
    let p = ix
        .symbols
        .iter()
        .position(|s| s.kind == SymKind::Param)
        .unwrap();
    assert_eq!(ix.occurrences(p, true).len(), 2);
}

// ---- transport ----

/// Reads every frame of `input`, and the number of garbage bytes skipped.
fn frames(input: &[u8]) -> (Vec<Frame>, usize) {
    let mut r = std::io::BufReader::with_capacity(7, input);
    let (mut out, mut skipped) = (Vec::new(), 0);
    while let Some(f) = read_frame(&mut r, &mut |n| skipped += n).unwrap() {
        out.push(f);
    }
    (out, skipped)
}

fn body(b: &[u8]) -> Frame {
    Frame::Body(b.to_vec())
}

#[test]
fn frames_with_loose_headers() {
    let (f, skipped) = frames(
        b"Content-Length:2\n\n{}content-length: 3\r\nX: y\r\n\r\n[1]Content-Length: abc\r\n\r\n",
    );
    assert_eq!(f.len(), 3, "{f:?}");
    assert_eq!(f[..2], [body(b"{}"), body(b"[1]")]);
    assert!(matches!(&f[2], Frame::Bad(m) if m.contains("bad Content-Length `abc`")));
    assert_eq!(skipped, 0);
}

#[test]
fn a_short_content_length_resynchronises_at_the_next_header() {
    // `Content-Length: 1` then `{}`: the body is `{`, then `}` is glued to the next header.
    let (f, skipped) = frames(
        b"Content-Length: 1\r\n\r\n{}Content-Length: 4\r\n\r\nnextContent-Length: 2\r\n\r\nok",
    );
    assert_eq!(f, [body(b"{"), body(b"next"), body(b"ok")]);
    assert_eq!(skipped, 1);
    // Too long by a few bytes: the clipped header is lost (an error), the frame after it is read.
    let (f, _) = frames(
        b"Content-Length: 5\r\n\r\n{}Content-Length: 4\r\n\r\nlostContent-Length: 2\r\n\r\nok",
    );
    assert_eq!(f.len(), 3, "{f:?}");
    assert_eq!(f[0], body(b"{}Con"));
    assert!(matches!(&f[1], Frame::Bad(m) if m.contains("without Content-Length")));
    assert_eq!(f[2], body(b"ok"));
    // Garbage lines between frames are skipped.
    let (f, skipped) = frames(b"garbage\r\n\r\nContent-Length: 2\r\n\r\nok");
    assert_eq!(f, [body(b"ok")]);
    assert_eq!(skipped, 7);
}

#[test]
fn huge_content_lengths_are_refused_without_allocating() {
    for n in [
        "100000000000",
        "18446744073709551615",
        "99999999999999999999999",
        "-1",
    ] {
        let input = format!("Content-Length: {n}\r\n\r\nContent-Length: 2\r\n\r\nok");
        let (f, _) = frames(input.as_bytes());
        assert_eq!(f.len(), 2, "{n}: {f:?}");
        assert!(matches!(&f[0], Frame::Bad(_)), "{n}: {f:?}");
        assert_eq!(f[1], body(b"ok"), "{n}");
    }
    let (f, _) = frames(b"Content-Length: 100000000000\r\n\r\n");
    assert!(
        matches!(&f[..], [Frame::Bad(m)] if m.contains("64 MiB")),
        "{f:?}"
    );
    // The limit itself is accepted; a body cut short is the end of input.
    let (f, _) = frames(
        format!(
            "Content-Length: {}\r\n\r\nshort",
            mpkc::lsp::transport::MAX_BODY
        )
        .as_bytes(),
    );
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn a_long_line_without_a_line_end_is_not_kept_whole() {
    // 10 MB of garbage without a line end, then a frame: skipped, the frame is read.
    let mut input = vec![b'x'; 10 << 20];
    input.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
    let (f, skipped) = frames(&input);
    assert_eq!(f, [body(b"ok")]);
    assert_eq!(skipped, 10 << 20);
    // A header with a value too long to keep is refused, and the next frame read.
    let mut input = b"Content-Length: ".to_vec();
    input.extend(std::iter::repeat_n(b'1', 10_000));
    input.extend_from_slice(b"\r\n\r\nContent-Length: 2\r\n\r\nok");
    let (f, _) = frames(&input);
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(matches!(&f[0], Frame::Bad(_)));
    assert_eq!(f[1], body(b"ok"));
}

#[test]
fn classifies_bad_messages() {
    assert!(matches!(
        parse(b"{abc}"),
        Incoming::Invalid {
            code: -32700,
            id: None,
            ..
        }
    ));
    assert!(matches!(
        parse(b"[]"),
        Incoming::Invalid { code: -32600, .. }
    ));
    assert!(matches!(
        parse(br#"{"id":9,"method":5}"#),
        Incoming::Invalid {
            code: -32600,
            id: Some(_),
            ..
        }
    ));
    assert!(matches!(
        parse(br#"{"id":2147483648,"method":"x"}"#),
        Incoming::Invalid {
            code: -32600,
            id: Some(_),
            ..
        }
    ));
    assert!(matches!(
        parse(br#"{"id":1.5,"method":"x"}"#),
        Incoming::Invalid { code: -32600, .. }
    ));
    assert!(matches!(
        parse(br#"{"id":3,"method":"x","params":null}"#),
        Incoming::Msg(Message::Request(_))
    ));
    assert!(matches!(
        parse(br#"{"method":"initialized","params":{}}"#),
        Incoming::Msg(Message::Notification(_))
    ));
}

// ---- text synchronisation ----

fn changed(
    uri: &str,
    version: i32,
    changes: serde_json::Value,
) -> lsp_types::DidChangeTextDocumentParams {
    serde_json::from_value(serde_json::json!({
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": changes,
    }))
    .unwrap()
}

#[test]
fn edits_apply_in_order_and_stale_versions_are_ignored() {
    use mpkc::lsp::sync::{Docs, Ignored};
    let uri: lsp_types::Uri = "file:///d/a.mpk".parse().unwrap();
    let mut docs = Docs::default();
    docs.open(uri.clone(), 1, "ab\ncd\n".into());
    // A whole-text change, then two ranged edits on its result, in order.
    docs.change(changed(
        "file:///d/a.mpk",
        2,
        serde_json::json!([
            {"text": "x\nyz\n"},
            {"range": {"start": {"line": 1, "character": 1}, "end": {"line": 1, "character": 2}}, "text": "é"},
            {"range": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 2}}, "text": "!"},
        ]),
    ))
    .unwrap();
    let doc = docs.get(&uri).unwrap();
    assert_eq!((doc.version, doc.text.as_str()), (2, "x\nyé!\n"));
    // Lower and repeated versions, and a document never opened: ignored.
    for v in [1, 2] {
        assert_eq!(
            docs.change(changed(
                "file:///d/a.mpk",
                v,
                serde_json::json!([{"text": "old"}])
            )),
            Err(Ignored::Stale {
                uri: "file:///d/a.mpk".into(),
                got: v,
                current: 2
            })
        );
    }
    assert_eq!(
        docs.change(changed(
            "file:///d/b.mpk",
            9,
            serde_json::json!([{"text": "b"}])
        )),
        Err(Ignored::NotOpen("file:///d/b.mpk".into()))
    );
    assert_eq!(docs.len(), 1);
    // No content changes: the version moves, the text stays.
    docs.change(changed("file:///d/a.mpk", 3, serde_json::json!([])))
        .unwrap();
    let doc = docs.get(&uri).unwrap();
    assert_eq!((doc.version, doc.text.as_str()), (3, "x\nyé!\n"));
}

#[test]
fn only_the_analysis_is_coalesced() {
    use mpkc::lsp::sync::Docs;
    let uri: lsp_types::Uri = "file:///d/c.mpk".parse().unwrap();
    let mut docs = Docs::default();
    docs.open(uri.clone(), 1, "task t {}".into());
    for v in 2..=50 {
        docs.change(changed(
            "file:///d/c.mpk",
            v,
            serde_json::json!([{"text": format!("// {v}")}]),
        ))
        .unwrap();
    }
    // One analysis waits, of the last version.
    let p = docs.next_pending().unwrap();
    assert_eq!((p.version, p.text.as_str()), (50, "// 50"));
    assert!(docs.next_pending().is_none());
    // A change while it runs: its result is stale, and the new version waits.
    docs.change(changed("file:///d/c.mpk", 51, serde_json::json!([])))
        .unwrap();
    let analysed =
        Document::analyze("c.mpk", p.text.to_string(), &Token::new()).map(std::sync::Arc::new);
    assert!(!docs.finished(&p, analysed));
    let q = docs.next_pending().unwrap();
    assert_eq!((q.version, q.text.as_str()), (51, "// 50"));
    let analysed =
        Document::analyze("c.mpk", q.text.to_string(), &Token::new()).map(std::sync::Arc::new);
    assert!(docs.finished(&q, analysed));
    assert!(docs.get(&uri).unwrap().current().is_some());
    assert!(docs.next_pending().is_none());
    // A cancelled analysis gives nothing.
    let token = Token::new();
    token.cancel();
    assert!(Document::analyze("c.mpk", house().text, &token).is_none());
}
