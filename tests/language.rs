//! The language reference (`docs/language.md`) against the code, and the grammar's keyword
//! choices: every item keyword has its section, every template its row, every code it names
//! exists; no ordered keyword choice lets a shorter keyword shadow a longer one (issue 13:
//! `("in" | "out" | "inout")` parsed `inout` as `in`, E0001).

use mpkc::diag::codes::REGISTRY;
use mpkc::driver::{check_sources, Source};
use std::path::Path;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

#[test]
fn every_item_keyword_has_a_section() {
    let doc = read("docs/language.md");
    let missing: Vec<&str> = mpkc::front::ITEM_KEYWORDS
        .iter()
        .copied()
        .filter(|k| !doc.contains(&format!("### `{k}`")))
        .collect();
    assert!(missing.is_empty(), "no `### `kw`` section for {missing:?}");
}

#[test]
fn every_template_has_a_row() {
    let doc = read("docs/language.md");
    let missing: Vec<&str> = mpkc::templates::CATALOGUE
        .iter()
        .map(|s| s.name)
        .filter(|n| !doc.contains(&format!("| `{n}(")))
        .collect();
    assert!(missing.is_empty(), "no table row for templates {missing:?}");
}

#[test]
fn every_code_the_reference_names_exists() {
    let doc = read("docs/language.md");
    let mut unknown = Vec::new();
    for (i, _) in doc.match_indices('E').chain(doc.match_indices('W')) {
        let Some(code) = doc.get(i..i + 5) else {
            continue;
        };
        if code[1..].chars().all(|c| c.is_ascii_digit()) {
            let before = doc[..i].chars().last();
            if before.is_some_and(|c| c.is_ascii_alphanumeric()) || code == "EXXXX" {
                continue;
            }
            if !REGISTRY.iter().any(|c| c.code == code) {
                unknown.push(code.to_string());
            }
        }
    }
    assert!(unknown.is_empty(), "codes not in the registry: {unknown:?}");
}

/// The alternatives of `@{ ("a" | "b" | …) ~ !ident_char }`-style keyword rules: no earlier
/// alternative may be a prefix of a later one (PEG takes the first that matches and does not
/// come back to the choice when the `!ident_char` after it fails).
#[test]
fn no_keyword_choice_shadows_a_longer_keyword() {
    let grammar = read("grammar/mpk.pest");
    let mut checked = 0;
    let mut bad = Vec::new();
    for line in grammar.lines() {
        let Some(open) = line.find("(\"") else {
            continue;
        };
        let Some(close) = line[open..].find(')') else {
            continue;
        };
        let group = &line[open + 1..open + close];
        let alts: Vec<&str> = group.split('|').map(str::trim).collect();
        if alts.len() < 2 || !alts.iter().all(|a| a.starts_with('"') && a.ends_with('"')) {
            continue;
        }
        checked += 1;
        let words: Vec<&str> = alts.iter().map(|a| a.trim_matches('"')).collect();
        for (i, a) in words.iter().enumerate() {
            for b in &words[i + 1..] {
                if b.starts_with(a) {
                    bad.push(format!("`{a}` before `{b}` in: {}", line.trim()));
                }
            }
        }
    }
    assert!(checked >= 10, "found only {checked} keyword choices");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The input, `tensor q: bf16[4] inout`, parses and checks in an inline body.
#[test]
fn inout_parses() {
    let text = "task t {\n  family consumer-no-smem\n  targets sm_90a\n  tensor q: bf16[4] inout\n  body cuda { q[0] = q[1]; }\n}\n";
    let checked = check_sources(
        &[Source {
            path: "t.mpk".into(),
            text: text.into(),
        }],
        &Default::default(),
        &Default::default(),
    );
    let diags: Vec<String> = checked
        .iter()
        .flat_map(|c| c.diags.iter().map(|d| format!("{} {}", d.code, d.message)))
        .collect();
    assert!(diags.is_empty(), "{diags:?}");
    let task = &checked[0].tasks[0];
    let (_, q) = task.ir.inputs().next().expect("q is an input slot");
    assert_eq!(q.direction, mpkc::ir::Direction::InOut);
    assert_eq!(task.ir.outputs().count(), 0);
}
