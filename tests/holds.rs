//! Typed region members (issue 11, C2): `region scratch { holds tmem_addr, u8[12] pad,
//! f32[4 * tile.N] amax; … }`. The members are laid out in order at their alignment; `bytes`
//! defaults to their size; the pipeline finds the TMEM-address region by `holds tmem_addr` and
//! the quant epilogue's maxima by the `amax` member.

use mpkc::driver::{check_source, Checked, Source};
use mpkc::ir::HeldType;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::path::Path;

fn stdlib(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("stdlib")
            .join(name),
    )
    .unwrap()
}

fn check(text: &str) -> Checked {
    let src = Source {
        path: "holds.mpk".into(),
        text: text.into(),
    };
    check_source(&src, &SemaOptions::default(), &CheckOptions::default())
}

/// The fp8 quant epilogue's scratch: the TMEM address at byte 0, the 4 x tile N maxima at byte
/// 16 (where the epilogue reads them), 16 + 16 x tile N bytes in all, as before `holds`.
#[test]
fn qout_scratch_members_match_the_epilogue() {
    let c = check(&stdlib("linear_fp8_qout.mpk"));
    assert!(!c.has_errors(), "{:#?}", c.diags);
    for t in &c.tasks {
        let shape = t.linear().unwrap();
        let g = &t.ir.region_groups[shape.scratch];
        let r = &t.ir.regions[g.members[0]];
        assert_eq!(g.name, "scratch");
        assert_eq!(r.member_of(HeldType::TmemAddr).map(|m| m.offset), Some(0));
        assert_eq!(r.member_offset("amax"), Some(16));
        assert_eq!(r.size, 16 + 16 * shape.block_n);
        assert_eq!(r.holds_align(), 4);
    }
}

#[test]
fn a_pipeline_without_holds_tmem_addr_is_not_lowered() {
    let text = stdlib("linear_sm100_v2.mpk").replace("holds tmem_addr; ", "");
    let c = check(&text);
    let d = c
        .diags
        .iter()
        .find(|d| d.code == "E0013")
        .unwrap_or_else(|| panic!("{:#?}", c.diags));
    assert!(
        d.message.contains("no region holds the TMEM address"),
        "{}",
        d.message
    );
    assert!(d
        .help
        .as_deref()
        .is_some_and(|h| h.contains("holds tmem_addr")));
    // Two holders are one too many.
    let text = stdlib("linear_sm100_v2.mpk")
        .replace("stages 6", "stages 4")
        .replace(
            "region A[stage] {",
            "region X { holds tmem_addr; align 16; pack; release 7 }\n  region A[stage] {",
        );
    let c = check(&text);
    assert!(
        c.diags
            .iter()
            .any(|d| d.code == "E0013" && d.message.contains("both hold the TMEM address")),
        "{:#?}",
        c.diags
    );
}

/// The amax member must sit where the epilogue reads it.
#[test]
fn a_misplaced_amax_is_not_lowered() {
    let text = stdlib("linear_fp8_qout.mpk").replace("u8[12] pad, ", "");
    let c = check(&text);
    assert!(
        c.diags
            .iter()
            .any(|d| d.code == "E0013" && d.message.contains("amax")),
        "{:#?}",
        c.diags
    );
}

#[test]
fn hover_shows_a_members_offset() {
    use mpkc::driver::cancel::Token;
    use mpkc::lsp::document::Document;
    let text = stdlib("linear_fp8_qout.mpk");
    let d = Document::analyze("linear_fp8_qout.mpk", text, &Token::new()).unwrap();
    let at = d.text.find("f32[4 * tile.N] amax").unwrap() + 1;
    let h = mpkc::lsp::hover::hover(&d, at).unwrap();
    assert!(
        h.contains("**member `amax` of region `scratch`**") && h.contains("at byte 16"),
        "{h}"
    );
    let words: Vec<String> = mpkc::lsp::nav::completion(&d)
        .into_iter()
        .map(|c| c.label)
        .collect();
    for w in ["holds", "mbarrier", "tmem_addr", "u64"] {
        assert!(words.iter().any(|x| x == w), "no `{w}`");
    }
}

/// `epilogue quant e4m3 with B` names the barrier the consumer warps meet at before reading the
/// maxima (it was "the first consumer barrier"); without it, or on another epilogue, the
/// lowering says so (E0013); an unknown name is E0002.
#[test]
fn quant_takes_its_barrier_from_with() {
    let text = stdlib("linear_fp8_qout.mpk");
    let c = check(&text);
    assert!(!c.has_errors(), "{:#?}", c.diags);
    let shape = c.tasks[0].linear().unwrap();
    assert_eq!(shape.out_scale.map(|(_, id)| id), Some(3));
    let c = check(&text.replace(" with epilogue_sync", ""));
    assert!(
        c.diags
            .iter()
            .any(|d| d.code == "E0013" && d.message.contains("`with B`")),
        "{:#?}",
        c.diags
    );
    let c = check(&text.replace("with epilogue_sync", "with epilogue_snyc"));
    assert!(c.diags.iter().any(|d| d.code == "E0002"), "{:#?}", c.diags);
    let house = stdlib("linear_sm100_v2.mpk").replace(
        "epilogue store bf16",
        "barrier sync = named(3, threads 128)\n  epilogue store bf16 with sync",
    );
    let c = check(&house);
    assert!(
        c.diags
            .iter()
            .any(|d| d.code == "E0013" && d.message.contains("`with` on a `store bf16`")),
        "{:#?}",
        c.diags
    );
}

/// The consumer view's member accessors compile: `buf.stats_warp_sums()` on a single region,
/// `buf.stats_tail(stage)` on a stage array, and per-stage offsets where a count depends on
/// `stage` (nvcc on the generated kernel, every declared target).
#[test]
fn member_accessors_compile_with_nvcc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let staged = std::fs::read_to_string(root.join("tests/ui/smem/pass_held_staged.mpk")).unwrap();
    let varying = staged.replace("f32[13] warp_sums", "f32[13 + 2 * stage] warp_sums");
    assert_ne!(staged, varying);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("holds-nvcc");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let varying_path = dir.join("varying.mpk");
    std::fs::write(&varying_path, &varying).unwrap();
    for (i, file) in [
        root.join("tests/ui/smem/pass_held_accessors.mpk"),
        root.join("tests/ui/smem/pass_held_staged.mpk"),
        varying_path,
    ]
    .iter()
    .enumerate()
    {
        let out = dir.join(format!("out{i}"));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_mpkc"))
            .current_dir(root)
            .arg("build")
            .arg(file)
            .args(["--no-cache", "--out"])
            .arg(&out)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let view = std::fs::read_dir(&out)
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| {
                e.file_name().to_string_lossy().starts_with("holds_")
                    && e.path().extension().is_some_and(|x| x == "cuh")
            })
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .unwrap();
        if i == 2 {
            assert!(view.contains("constexpr int kAt[] = {52, 60};"), "{view}");
        } else if i == 1 {
            assert!(
                view.contains("float *stats_tail(int stage) const"),
                "{view}"
            );
        }
    }
}
