//! No input makes mpkc panic: random text, and random edits of real stdlib contracts (deleted,
//! duplicated and replaced spans, numbers swapped for extremes) go through parse, sema, check,
//! plan and code generation.

use mpkc::back::{self, ContractInfo};
use mpkc::driver::{check_source, stdlib, Source};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use proptest::prelude::*;

fn run_all(text: &str) {
    let src = Source {
        path: "fuzz.mpk".to_string(),
        text: text.to_string(),
    };
    let c = check_source(&src, &SemaOptions::default(), &CheckOptions::default());
    let info = ContractInfo::new(&src.path, &src.text);
    for t in &c.tasks {
        let _ = back::generate(t, &info);
    }
    let file = mpkc::diag::SourceFile::new("fuzz.mpk", text);
    for d in &c.diags {
        let _ = mpkc::diag::render_json(d, &file);
    }
}

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "17",
    "255",
    "256",
    "1023",
    "16384",
    "224256",
    "224257",
    "9223372036854775807",
    "-9223372036854775808",
    "0x7fffffffffffffff",
    "1e309",
    "(",
    ")",
    "{",
    "}",
    "[stage]",
    "stage",
    "stages",
    "tile.M",
    "tile.Q",
    "//",
    "/*",
    "\"",
    "cuda {",
    "}",
    "ceil_div(1, 0)",
    "align_up(7, 0)",
    "min()",
    "W0..W99",
];

fn mutate(base: &str, ops: &[(u8, usize, usize, usize)]) -> String {
    let mut s: Vec<char> = base.chars().collect();
    for &(kind, a, b, pick) in ops {
        if s.is_empty() {
            break;
        }
        let i = a % s.len();
        let j = (i + b % 64).min(s.len());
        match kind % 4 {
            0 => {
                s.drain(i..j);
            }
            1 => {
                let piece: Vec<char> = s[i..j].to_vec();
                for (k, c) in piece.into_iter().enumerate() {
                    s.insert(j + k, c);
                }
            }
            2 => {
                let rep: Vec<char> = EXTREMES[pick % EXTREMES.len()].chars().collect();
                s.splice(i..j, rep);
            }
            _ => {
                // Replace the number under the cursor (if any) by an extreme.
                let start = (0..=i)
                    .rev()
                    .take_while(|&k| s.get(k).is_some_and(|c| c.is_ascii_digit()))
                    .last();
                if let Some(st) = start {
                    let end = (st..s.len())
                        .find(|&k| !s[k].is_ascii_digit())
                        .unwrap_or(s.len());
                    let rep: Vec<char> = EXTREMES[pick % 12].chars().collect();
                    s.splice(st..end, rep);
                }
            }
        }
    }
    s.into_iter().collect()
}

/// Extremes that once overflowed size arithmetic.
#[test]
fn extreme_values_are_diagnostics() {
    let text = "task big {\n  family consumer\n  param eps: f32 = 1e309\n  stages 64\n  tmem cols 9223372036854775807\n  task_id 9223372036854775807\n  region a { bytes 9223372036854775807; align 16; pack }\n  region b[stage] { bytes 9223372036854775807; align 4611686018427387904 }\n  region c { bytes 100; align 16; pages 9223372036854775807 }\n  barrier s = named(9223372036854775807, threads -1)\n  granularity per_tile(tasks 9223372036854775807)\n  body cuda { }\n}\n";
    run_all(text);
    let rms = stdlib::sources()[1]
        .text
        .replace("= 7168", "= 2147483647")
        .replace("in 128..=16384 ", "");
    run_all(&rms);
    let src = Source {
        path: "x.mpk".into(),
        text: text.into(),
    };
    let c = check_source(&src, &SemaOptions::default(), &CheckOptions::default());
    assert!(c.has_errors());
}

/// A shrunk case of `edited_stdlib_contracts_never_panic` (2026-12-06): an edit that made a region
/// size huge overflowed the ring check's sum of the other regions' bytes
/// (`valid::ring_bytes`, now saturating).
#[test]
fn an_edit_to_a_huge_region_size_does_not_panic() {
    let sources = stdlib::sources();
    let base = &sources[12 % sources.len()].text;
    run_all(&mutate(
        base,
        &[(43, 6063857970724063519, 0, 3930841269854836234)],
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(text in "\\PC{0,300}") {
        run_all(&text);
    }

    #[test]
    fn edited_stdlib_contracts_never_panic(which in 0usize..16, ops in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>(), any::<usize>()), 1..6)) {
        let sources = stdlib::sources();
        let base = &sources[which % sources.len()].text;
        run_all(&mutate(base, &ops));
    }
}
