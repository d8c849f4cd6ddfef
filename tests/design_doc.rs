//! The design document is rendered from the role program and the layout math the kernels use:
//! every descriptor it states is the one the generated layout header defines (issue 11 B11; the
//! fp8 document once stated the bf16 `kind::f16` descriptor, issue 14).

use mpkc::back::FileKind;
use mpkc::driver::build::generate_all;
use mpkc::driver::{check_source, stdlib};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;

/// Every `0x…` after `needle` in `text`.
fn hex_after(text: &str, needle: &str) -> Vec<String> {
    text.match_indices(needle)
        .filter_map(|(i, _)| {
            let rest = &text[i + needle.len()..];
            let start = rest.find("0x")?;
            let hex: String = rest[start + 2..]
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .collect();
            Some(hex.to_ascii_uppercase())
        })
        .collect()
}

#[test]
fn every_descriptor_of_the_document_is_the_kernels() {
    let checked: Vec<_> = stdlib::sources()
        .iter()
        .map(|s| check_source(s, &SemaOptions::default(), &CheckOptions::default()))
        .collect();
    let mut docs = 0;
    for u in generate_all(&checked) {
        let Some(doc) = u.files.iter().find(|f| f.kind == FileKind::DesignDoc) else {
            continue;
        };
        let layout = u
            .files
            .iter()
            .find(|f| f.kind == FileKind::LayoutHeader)
            .expect("a pipeline unit has a layout header");
        docs += 1;
        let idesc = hex_after(&doc.text, "instruction descriptor `");
        let smem100 = hex_after(&doc.text, "sm_100a SMEM descriptor `");
        let smem90 = hex_after(&doc.text, "sm_90a wgmma SMEM descriptor `");
        let layout_idesc = hex_after(&layout.text, "I_DESC = ");
        let layout_smem = hex_after(&layout.text, "SMEM_DESC = ");
        assert!(
            !idesc.is_empty() || !smem90.is_empty(),
            "{}: no descriptor",
            doc.name
        );
        for d in &idesc {
            assert!(
                layout_idesc.contains(d),
                "{}: instruction descriptor 0x{d} is not the kernel's {layout_idesc:?}",
                doc.name
            );
        }
        for d in smem100.iter().chain(&smem90) {
            assert!(
                layout_smem.contains(d),
                "{}: SMEM descriptor 0x{d} is not the kernel's {layout_smem:?}",
                doc.name
            );
        }
        // The MMA kind named is the one the kernel calls.
        let kernel = u
            .files
            .iter()
            .find(|f| f.kind == FileKind::Kernel && !f.name.ends_with("_sm90.cuh"));
        if let Some(k) = kernel {
            let fp8 = k.text.contains("mma_mxf8f6f4_block_scale(");
            assert_eq!(
                doc.text.contains("kind::mxf8f6f4.block_scale"),
                fp8,
                "{}",
                doc.name
            );
            assert_eq!(doc.text.contains("kind::f16"), !fp8, "{}", doc.name);
        }
    }
    assert!(docs > 0);
}

/// The page map states, per page, the bytes its regions reach there: a page a multi-page region
/// continues onto holds that region's bytes (it once showed 0 B), and over the 14 pages the map
/// accounts for every byte of the task's regions (packing gaps only add).
#[test]
fn the_page_map_accounts_for_every_region_byte() {
    let checked: Vec<_> = stdlib::sources()
        .iter()
        .map(|s| check_source(s, &SemaOptions::default(), &CheckOptions::default()))
        .collect();
    let mut maps = 0;
    for u in generate_all(&checked) {
        let Some(t) = checked
            .iter()
            .flat_map(|c| c.tasks.iter())
            .find(|t| t.ir.unit_name() == u.unit)
        else {
            continue;
        };
        let Some(doc) = u.files.iter().find(|f| f.kind == FileKind::DesignDoc) else {
            continue;
        };
        let mut total = 0i64;
        // `page  3  16384 B  W_1 (cont.)`: the page lines of the map.
        let page_lines = doc.text.lines().filter(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some("page") && w.next().is_some_and(|n| n.parse::<usize>().is_ok())
        });
        for line in page_lines {
            let bytes: i64 = line
                .split_whitespace()
                .nth(2)
                .and_then(|b| b.parse().ok())
                .unwrap_or_else(|| panic!("{}: page line `{line}`", u.unit));
            assert!(
                !(line.contains("(cont.)") && bytes == 0),
                "{}: a continuation page shows 0 bytes: `{line}`",
                u.unit
            );
            total += bytes;
        }
        let sizes: i64 = t.ir.regions.iter().map(|(_, r)| r.size).sum();
        assert!(
            total >= sizes,
            "{}: the page map shows {total} bytes for {sizes} bytes of regions",
            u.unit
        );
        maps += 1;
    }
    assert!(maps > 0, "no design document with a page map");
}
