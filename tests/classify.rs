//! `mpkc classify` and `mpkc new` (issue 14, Deliver 1): the 19 DeepSeek-V3 decode ops of
//! dsv3-decode-ops.md, one description each under `tests/classify/`, land in the family the stdlib
//! contract for the op uses (read from the checked stdlib, not restated here); every starting
//! contract `mpkc new` writes checks with no diagnostic at all; bad descriptions are UI tests
//! (`tests/ui/classify/*.toml`, `#~ ERROR Exxxx` annotations, snapshots under
//! `snapshots/ui/classify/`).

use mpkc::classify::{classify_text, new_contract};
use mpkc::diag::{render_human, ColorMode, SourceFile};
use mpkc::driver::{check_source, stdlib, Source};
use mpkc::ir::Family;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn files_in(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// The 19 ops, by file stem, each with the stdlib unit that expresses it (docs/dsv3.md).
const OPS: &[(&str, &str)] = &[
    ("01_embedding", "embedding_v2"),
    ("02_input_rmsnorm", "rmsnorm_v2_h7168"),
    ("03_qkv_a", "linear_fp8_blockscale_qkv_a"),
    ("04_q_a_kv_a_rmsnorm", "qkv_a_norm_q_a"),
    ("05_q_b", "linear_fp8_blockscale_q_b"),
    ("06_rope", "rope_yarn"),
    ("07_w_uk_absorb", "w_uk_absorb"),
    ("08_mla_attention", "mla_decode_partial"),
    ("09_w_uv_absorb", "w_uv_absorb"),
    ("10_o_proj", "linear_fp8_blockscale_o_proj"),
    ("11_post_attn_rmsnorm", "add_rmsnorm"),
    ("12_router", "linear_bf16_splitk_router"),
    ("13_routed_w13", "moe_w13_dsv3"),
    ("14_silu_mul", "silu_mul_fp8_routed"),
    ("15_routed_w2", "moe_w2_dsv3"),
    ("16_shared_expert", "linear_fp8_blockscale_shared_gate_up"),
    ("17_dense_mlp", "linear_fp8_blockscale_dense_gate_up"),
    ("18_lm_head", "lm_head"),
    ("19_argmax", "argmax_partial_v2"),
];

fn stdlib_family(unit: &str) -> Family {
    stdlib::sources()
        .iter()
        .map(|s| check_source(s, &Default::default(), &Default::default()))
        .flat_map(|c| c.tasks)
        .find(|t| t.ir.unit_name() == unit)
        .unwrap_or_else(|| panic!("no stdlib unit {unit}"))
        .ir
        .family
}

#[test]
fn the_19_dsv3_ops_classify_into_their_stdlib_family() {
    let files = files_in("tests/classify", "toml");
    let stems: Vec<String> = files.iter().map(|p| stem(p)).collect();
    let listed: Vec<String> = OPS.iter().map(|(s, _)| s.to_string()).collect();
    assert_eq!(
        stems, listed,
        "one description per op of dsv3-decode-ops.md"
    );
    assert_eq!(files.len(), 19);
    let mut problems = Vec::new();
    for (file, (_, unit)) in files.iter().zip(OPS) {
        let text = std::fs::read_to_string(file).unwrap();
        let (d, c) = classify_text(&text, &stem(file))
            .unwrap_or_else(|e| panic!("{}: {e:?}", file.display()));
        let (want, why) = (stdlib_family(unit), format!("stdlib {unit}"));
        if c.family != want {
            problems.push(format!(
                "{}: `{}` classified {} by rule {} ({}), expected {} ({why})",
                file.display(),
                d.name,
                c.family.as_str(),
                c.fired.rule,
                c.fired.why,
                want.as_str()
            ));
        }
        // Every rule before the one that fired says why not.
        let earlier: Vec<u8> = c.earlier.iter().map(|v| v.rule).collect();
        assert_eq!(earlier, (1..c.fired.rule).collect::<Vec<u8>>());
        assert!(c.earlier.iter().all(|v| !v.fired && !v.why.is_empty()));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Descriptions beyond the 19 that reach the other starting contracts: bf16 at 64 tokens, a
/// tail tile (N = 576), a short-K GEMV, a softmax-like reduction, batched elementwise and
/// reduction ops, a small attention.
const MORE: &[(&str, &str)] = &[
    ("m64", "kind = \"gemm\"\n[shape]\nM = 64\nN = 7168\nK = 512\n[dtype]\ninput = \"bf16\"\nweight = \"bf16\"\noutput = \"bf16\"\n"),
    ("kv_a_tail", "kind = \"gemm\"\n[shape]\nM = 4\nN = 576\nK = 7168\n[dtype]\ninput = \"bf16\"\nweight = \"bf16\"\noutput = \"bf16\"\n"),
    ("short_k_bf16", "kind = \"gemv\"\n[shape]\nM = 1\nN = 2048\nK = 256\n[dtype]\ninput = \"bf16\"\nweight = \"bf16\"\noutput = \"bf16\"\n"),
    ("short_k", "kind = \"gemm\"\n[shape]\nM = 2\nN = 384\nK = 256\n[dtype]\ninput = \"f32\"\nweight = \"bf16\"\noutput = \"f32\"\n"),
    ("softmax", "kind = \"reduction\"\n[shape]\nM = 4\nN = 4096\nout_n = 4096\n[dtype]\ninput = \"f32\"\noutput = \"f32\"\n"),
    ("batched_weighted", "kind = \"elementwise\"\n[shape]\nM = 1\nN = 7168\nbatch = 8\n[dtype]\ninput = \"bf16\"\nweight = \"f32\"\noutput = \"bf16\"\n"),
    ("batched_rows", "kind = \"reduction\"\n[shape]\nM = 2\nN = 1024\nbatch = 4\n[dtype]\ninput = \"f32\"\noutput = \"f32\"\n"),
    ("kv_c", "kind = \"attention\"\n[shape]\nM = 2\nheads = 8\nqk = 128\nv = 128\nkv_len = 1024\n[dtype]\ninput = \"bf16\"\noutput = \"bf16\"\n"),
];

/// `batch` (independent problems of the shape) is the leading extent of each per-problem tensor
/// of a consumer starting contract and a factor of its task count; a weight the description
/// names reaches an elementwise contract (new-op pass 88: both were dropped without a word).
#[test]
fn batch_and_weight_reach_the_starting_contract() {
    let w_uk = std::fs::read_to_string("tests/classify/07_w_uk_absorb.toml").unwrap();
    let c = new_contract(&w_uk, "w_uk_absorb").unwrap();
    for line in [
        "param batch: int = 16",
        "tensor x: bf16[batch, m, K] in activation",
        "tensor W: bf16[batch, N, K] in weight",
        "tensor y: bf16[batch, m, N] out output",
        "granularity per_tile(tasks batch * ceil_div(N, 128))",
    ] {
        assert!(c.contains(line), "{line}:\n{c}");
    }
    let combine = "kind = \"elementwise\"\n[shape]\nM = 1\nN = 7168\nbatch = 8\n[dtype]\ninput = \"bf16\"\nweight = \"f32\"\noutput = \"bf16\"\n";
    let c = new_contract(combine, "combine").unwrap();
    for line in [
        "tensor x: bf16[batch, m, n] in",
        "tensor w: f32[n] in weight",
        "tensor y: bf16[batch, m, n] out",
    ] {
        assert!(c.contains(line), "{line}:\n{c}");
    }
    let one = combine.replace("batch = 8\n", "");
    assert!(!new_contract(&one, "combine").unwrap().contains("batch"));
}

#[test]
fn every_starting_contract_checks_with_no_diagnostic() {
    let mut inputs: Vec<(String, String)> = files_in("tests/classify", "toml")
        .iter()
        .map(|p| (stem(p), std::fs::read_to_string(p).unwrap()))
        .collect();
    inputs.extend(MORE.iter().map(|(n, t)| (n.to_string(), t.to_string())));
    let mut families = BTreeSet::new();
    for (name, text) in &inputs {
        let contract =
            new_contract(text, name).unwrap_or_else(|e| panic!("{name}: no contract: {e:?}"));
        let (_, c) = classify_text(text, name).unwrap();
        let checked = check_source(
            &Source {
                path: format!("{name}.mpk"),
                text: contract.clone(),
            },
            &Default::default(),
            &Default::default(),
        );
        let file = SourceFile::new(&checked.source.path, &contract);
        let rendered: String = checked
            .diags
            .iter()
            .map(|d| render_human(d, &file, ColorMode::Never))
            .collect();
        assert!(checked.diags.is_empty(), "{name}:\n{contract}\n{rendered}");
        let task = checked.tasks.first().expect("one task");
        assert_eq!(task.ir.family, c.family, "{name}: the contract's family");
        families.insert(c.family.as_str());
        // Deterministic: the same description gives the same bytes.
        assert_eq!(new_contract(text, name).unwrap(), contract);
    }
    assert_eq!(families.len(), 5, "every family reached: {families:?}");
}

#[test]
fn gemm_shapes_reach_the_contract_params() {
    let text = std::fs::read_to_string(root().join("tests/classify/10_o_proj.toml")).unwrap();
    let c = new_contract(&text, "10_o_proj").unwrap();
    assert!(c.contains("task o_proj {"), "{c}");
    assert!(c.contains("param N: int = 7168"), "{c}");
    assert!(c.contains("param K: int = 2048"), "{c}");
    assert!(c.contains("param m_real: int in 1..=16 = 1"), "{c}");
    assert!(c.contains("tensor W: e4m3[N, K]"), "{c}");
}

/// A bf16 GEMV too short for a pipeline starts from the stdlib's consumer GEMV (`body gemv`),
/// with `rows` = ceil(N / 132): the count measured best for every instance of
/// stdlib/linear_bf16_gemv.mpk (`mpkc tune --vary rows`, H200, 2026-12-04).
#[test]
fn a_bf16_short_k_gemv_starts_from_the_stdlib_template() {
    let stdlib = std::fs::read_to_string(root().join("stdlib/linear_bf16_gemv.mpk")).unwrap();
    let mut seen = 0;
    for line in stdlib
        .lines()
        .filter(|l| l.trim_start().starts_with("instance "))
    {
        let val = |key: &str| -> i64 {
            let at = line.find(&format!("{key} = ")).unwrap() + key.len() + 3;
            line[at..]
                .split([',', ')'])
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let (n, rows) = (val("N"), val("rows"));
        let text = format!("kind = \"gemv\"\n[shape]\nM = 1\nN = {n}\nK = 256\n[dtype]\ninput = \"bf16\"\nweight = \"bf16\"\noutput = \"bf16\"\n");
        let c = new_contract(&text, "proj").unwrap();
        assert!(c.contains("body gemv(x, W -> y)"), "{c}");
        assert!(
            c.contains(&format!("param rows: int in 1..=2048 = {rows}\n")),
            "N = {n}: {c}"
        );
        seen += 1;
    }
    assert_eq!(seen, 7, "the stdlib's seven instances");
    // Past the 32 tokens a lane keeps accumulators for, the GEMV is a `body cuda` to write.
    let text = "kind = \"gemv\"\n[shape]\nM = 40\nN = 2048\nK = 256\n[dtype]\ninput = \"bf16\"\nweight = \"bf16\"\noutput = \"bf16\"\n";
    let c = new_contract(text, "proj").unwrap();
    assert!(!c.contains("body gemv") && c.contains("body cuda"), "{c}");
}

fn line_of(text: &str, pos: usize) -> usize {
    text[..pos.min(text.len())].matches('\n').count() + 1
}

/// `(line, code)` of each `#~ ERROR Exxxx` annotation.
fn annotations(text: &str) -> BTreeSet<(usize, String)> {
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(pos) = line.find("#~ ERROR ") {
            out.insert((i + 1, line[pos + 9..].trim().to_string()));
        }
    }
    out
}

/// UI tests of bad descriptions: the diagnostics of `mpkc new` (which are `classify`'s, plus
/// why no starting contract fits) match the annotations, each has a help, and the rendered text
/// is the snapshot.
#[test]
fn ui_bad_descriptions() {
    let files = files_in("tests/ui/classify", "toml");
    assert!(files.len() >= 3);
    let mut problems = Vec::new();
    for f in &files {
        let path = f
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap();
        let diags = match new_contract(&text, &stem(f)) {
            Ok(_) => Vec::new(),
            Err(d) => d,
        };
        let got: BTreeSet<(usize, String)> = diags
            .iter()
            .map(|d| (line_of(&text, d.main_span().start), d.code.to_string()))
            .collect();
        let want = annotations(&text);
        let pass = stem(f).starts_with("pass_");
        if pass != want.is_empty() {
            problems.push(format!(
                "{path}: a `pass_` file has no annotations, any other has some"
            ));
        }
        if got != want {
            problems.push(format!("{path}: annotations {want:?}, diagnostics {got:?}"));
        }
        for d in &diags {
            if d.help.is_none() || d.labels.is_empty() {
                problems.push(format!("{path}: {} lacks a help or a span", d.code));
            }
        }
        let file = SourceFile::new(&path, &text);
        let rendered: String = diags
            .iter()
            .map(|d| render_human(d, &file, ColorMode::Never))
            .collect();
        insta::with_settings!({snapshot_path => "../snapshots/ui/classify", prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_snapshot!(stem(f), rendered);
        });
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn mpkc(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn cli_classify_prints_family_rule_and_earlier_rules() {
    let o = mpkc(&["classify", "tests/classify/07_w_uk_absorb.toml"]);
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(s.contains("family B (consumer)"), "{s}");
    assert!(s.contains("rule 4 fired"), "{s}");
    for r in 1..=3 {
        assert!(s.contains(&format!("rule {r} did not fire")), "{s}");
    }
    assert!(s.contains("K = 128 is 1 K-iteration of 128"), "{s}");
}

#[test]
fn cli_classify_json_is_one_object_per_line() {
    let o = mpkc(&[
        "classify",
        "tests/classify/08_mla_attention.toml",
        "--message-format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8(o.stdout).unwrap();
    assert_eq!(s.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(s.trim()).unwrap();
    assert_eq!(v["family"], "consumer-monolith");
    assert_eq!(v["letter"], "C");
    assert_eq!(v["rule"], 2);
    assert_eq!(v["earlier"].as_array().unwrap().len(), 1);
    assert_eq!(v["earlier"][0]["rule"], 1);

    let o = mpkc(&[
        "classify",
        "tests/ui/classify/bad_dtype.toml",
        "--message-format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let s = String::from_utf8(o.stdout).unwrap();
    assert_eq!(s.lines().count(), 2, "{s}");
    for l in s.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["code"], "E0005");
        assert_eq!(v["span"]["line_start"], v["span"]["line_end"]);
        assert!(v["help"].is_string());
    }
}

#[test]
fn cli_exit_statuses() {
    // Errors in the description: 1, rendered on stderr with the file's line.
    let o = mpkc(&["classify", "tests/ui/classify/unknown_kind.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(e.contains("error[E0008]: unknown op kind `gemmm`"), "{e}");
    assert!(e.contains("unknown_kind.toml:2:8"), "{e}");
    // A file that cannot be read: usage, 2.
    let o = mpkc(&["classify", "tests/classify/no_such_op.toml"]);
    assert_eq!(o.status.code(), Some(2));
    // An output that cannot be written: 4.
    let o = mpkc(&[
        "new",
        "tests/classify/10_o_proj.toml",
        "-o",
        "/nonexistent-dir/o_proj.mpk",
    ]);
    assert_eq!(o.status.code(), Some(4));
}

#[test]
fn cli_new_writes_a_contract_that_check_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("embedding.mpk");
    let o = mpkc(&[
        "new",
        "tests/classify/01_embedding.toml",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = mpkc(&["check", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Without -o the contract goes to stdout.
    let o = mpkc(&["new", "tests/classify/14_silu_mul.toml"]);
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(s.contains("family consumer-no-smem"), "{s}");
}
