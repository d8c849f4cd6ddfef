//! Issue 9, class 7 (linear time), hostile findings 1-3: work grows linearly with the input.
//! Where the work can be counted it is counted; elsewhere the time at 10x the input is compared
//! with the time at 1x (best of three runs each) on a bound of 30x, which linear work meets with
//! room to spare and quadratic work (100x) cannot.

#[path = "support/hostile_inputs.rs"]
mod hostile_inputs;

use hostile_inputs::*;
use lsp_types::Position;
use mpkc::driver::cancel::Token;
use mpkc::lsp::convert::{bytes_scanned, LineIndex};
use mpkc::lsp::document::Document;
use mpkc::lsp::nav::document_symbols;
use std::time::{Duration, Instant};

/// The best of three runs of `f`.
fn best_of_three(mut f: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// Asserts that `f(10 n)` takes at most 30 times as long as `f(n)`.
fn assert_linear_time(what: &str, n: usize, mut f: impl FnMut(usize)) {
    let small = best_of_three(|| f(n));
    let large = best_of_three(|| f(10 * n));
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    assert!(
        ratio < 30.0,
        "{what}: {n} -> {small:?}, {} -> {large:?} ({ratio:.1}x)",
        10 * n
    );
}

/// The UTF-16 position of `offset` counted the slow way, from the line's start.
fn naive_position(text: &str, offset: usize) -> Position {
    let before = &text[..offset];
    let line_start = before.rfind(['\n', '\r']).map_or(0, |i| i + 1);
    let line = before
        .replace("\r\n", "\n")
        .chars()
        .filter(|&c| c == '\n' || c == '\r')
        .count();
    Position {
        line: line as u32,
        character: text[line_start..offset]
            .chars()
            .map(char::len_utf16)
            .sum::<usize>() as u32,
    }
}

/// Converts the start of every item on the long line both ways; returns the bytes scanned.
fn convert_every_item(n: usize) -> usize {
    // Non-ASCII in every item, so that UTF-16 units and bytes differ all along the line.
    let text = many_params_line(n).replace("; param", "; /* é𝄞 */ param");
    let lines = LineIndex::new(&text);
    let before = bytes_scanned();
    let starts: Vec<usize> = text.match_indices("param q").map(|(i, _)| i).collect();
    assert_eq!(starts.len(), n);
    for (k, &at) in starts.iter().enumerate() {
        let p = lines.position(&text, at);
        assert_eq!(lines.offset(&text, p), at);
        if k % 97 == 0 {
            assert_eq!(p, naive_position(&text, at), "item {k}");
        }
    }
    bytes_scanned() - before
}

#[test]
fn lsp_positions_on_one_long_line_cost_the_same_per_item() {
    let small = convert_every_item(1_000);
    let large = convert_every_item(10_000);
    // A conversion scans at most a few 256-byte chunks, wherever it is on the line.
    assert!(small <= 1_000 * 4 * 256, "{small} bytes for 1,000 items");
    assert!(large <= 15 * small, "{small} bytes at 1x, {large} at 10x");
}

#[test]
fn lsp_positions_match_the_naive_count_across_chunks() {
    // Lines of every kind of ending and characters of 1 to 4 bytes, crossing chunk boundaries.
    let unit = "ab é\r\nx𝄞€\ry\n";
    let text: String = (0..400)
        .map(|i| {
            if i % 7 == 0 {
                "𝄞".repeat(90)
            } else {
                unit.to_string()
            }
        })
        .collect();
    let lines = LineIndex::new(&text);
    for (at, _) in text.char_indices().step_by(3) {
        let p = lines.position(&text, at);
        assert_eq!(p, naive_position(&text, at), "offset {at}");
        assert_eq!(lines.offset(&text, p), at, "offset {at}");
    }
}

#[test]
fn lsp_outline_and_index_of_long_lines_take_linear_time() {
    let token = Token::new();
    assert_linear_time("outline of tasks on one line", 100, |n| {
        let doc = Document::analyze("t.mpk", tasks_one_line(n), &token).unwrap();
        assert_eq!(document_symbols(&doc).len(), n);
    });
    assert_linear_time("index of unresolved names on one line", 300, |n| {
        let file = mpkc::front::parse_file(&many_errors_line(n)).unwrap();
        let ix = mpkc::lsp::index::build(&file);
        assert_eq!(ix.symbols.len(), n + 3);
    });
}

/// The syntax errors of `text`: the strict parse's first one and the recovery's.
fn syntax_errors(text: &str) -> Vec<mpkc::diag::Diagnostic> {
    match mpkc::front::parse_file(text) {
        Ok(_) => Vec::new(),
        Err(d) => d,
    }
}

#[test]
fn one_syntax_error_per_line_is_each_reported_in_linear_time() {
    for make in [stray_token_lines, bad_param_lines] {
        let text = make(50);
        let errors = syntax_errors(&text);
        assert_eq!(errors.len(), 50, "{text}");
        let line_starts: Vec<usize> = text.match_indices("task").map(|(i, _)| i).collect();
        for (k, d) in errors.iter().enumerate() {
            assert_eq!(d.code, "E0001");
            let at = d.main_span().start;
            assert!(
                line_starts[k] < at && line_starts.get(k + 1).is_none_or(|&n| at < n),
                "error {k} at {at}"
            );
        }
        assert_linear_time("syntax errors, one per line", 200, |n| {
            assert_eq!(syntax_errors(&make(n)).len(), n);
        });
    }
}

/// `check --predecessors all` over `region_tasks(n)` (JSON lines).
fn predecessors_report(n: usize) -> String {
    let path =
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("region_tasks_{n}.mpk"));
    std::fs::write(&path, region_tasks(n)).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .args(["check", "--predecessors", "all", "--message-format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn the_predecessors_report_grows_linearly_with_the_tasks() {
    let small = predecessors_report(100);
    let large = predecessors_report(1000);
    assert!(
        large.len() < 12 * small.len(),
        "{} bytes for 100 tasks, {} for 1000",
        small.len(),
        large.len()
    );
    let lines: Vec<serde_json::Value> = large
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v.get("reason").is_some())
        .collect();
    let reports: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|v| v["reason"] == "predecessors")
        .collect();
    assert_eq!(reports.len(), 1000);
    let mut cut = false;
    for r in &reports {
        let named = r["exposed_after"].as_array().unwrap().len();
        let total = r["exposed_after_total"].as_u64().unwrap() as usize;
        assert_eq!(named, total.min(8), "{r}");
        cut |= total > named;
    }
    assert!(cut, "some task is exposed after more than 8 known tasks");
    // Every known release order is listed once, at the end.
    let last = lines.last().unwrap();
    assert_eq!(last["reason"], "predecessor-orders");
    let units: Vec<&str> = last["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["unit"].as_str().unwrap())
        .collect();
    for k in 0..1000 {
        let name = format!("r{k}");
        assert_eq!(units.iter().filter(|u| **u == name).count(), 1, "{name}");
    }
}

#[test]
fn the_predecessors_report_takes_linear_time() {
    use mpkc::driver::{check_source, predecessors, Source};
    assert_linear_time("check --predecessors all", 30, |n| {
        let c = check_source(
            &Source {
                path: "r.mpk".into(),
                text: region_tasks(n),
            },
            &Default::default(),
            &Default::default(),
        );
        let known: Vec<(String, Vec<usize>)> = c
            .tasks
            .iter()
            .map(|t| (t.ir.unit_name(), t.primary_plan().release_order.clone()))
            .collect();
        let tasks: Vec<_> = c.tasks.iter().collect();
        assert!(predecessors::report(&tasks, &known).lines().count() >= n);
    });
}
