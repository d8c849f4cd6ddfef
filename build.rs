//! Embeds the explanation pages `docs/codes/{E,W}*.md` for `mpkc explain`, and records the
//! host triple (`MPKC_HOST_TARGET`).

use std::fmt::Write as _;

fn main() {
    // The host triple, for the `cc::Build` that configures nvcc outside a build script
    // (src/driver/nvcc.rs).
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    println!("cargo:rustc-env=MPKC_HOST_TARGET={target}");
    // A missing path would make cargo rebuild every time: watch the folder only when it exists.
    if std::path::Path::new("docs/codes").is_dir() {
        println!("cargo:rerun-if-changed=docs/codes");
    } else {
        println!("cargo:rerun-if-changed=build.rs");
    }
    println!("cargo:rerun-if-changed=grammar/mpk.pest");
    let mut pages: Vec<String> = std::fs::read_dir("docs/codes")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| (n.starts_with('E') || n.starts_with('W')) && n.ends_with(".md"))
                .collect()
        })
        .unwrap_or_default();
    pages.sort();
    let mut src = String::from("/// Explanation pages, `(code, markdown)`, from docs/codes/.\npub const PAGES: &[(&str, &str)] = &[\n");
    for p in &pages {
        let code = p.trim_end_matches(".md");
        let _ = writeln!(src, "    ({code:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/docs/codes/{p}\"))),");
    }
    src.push_str("];\n");
    let out = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("code_pages.rs");
    std::fs::write(out, src).expect("write code_pages.rs");
}
