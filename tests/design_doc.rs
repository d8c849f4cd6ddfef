//! The design document of every unit (stdlib and `examples/`) is rendered from the role program
//! and the layout math the kernels use: every descriptor it states is the one the generated
//! kernel's layout header defines, field by field (issue 11 B11; the fp8 document once stated the
//! bf16 `kind::f16` descriptor 0x08040490 while its kernel used 0x08840000, issue 14), and a unit
//! whose kernel has no descriptor says so. The example units' documents are snapshots.

use mpkc::back::{FileKind, GeneratedFile};
use mpkc::driver::build::{generate_all, UnitOutput};
use mpkc::driver::{check_sources, stdlib, Checked, Source};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `sources` checked, with the contracts mpkc derives from them (split-K reduce tasks): units too.
fn check(sources: &[Source]) -> Vec<Checked> {
    check_sources(sources, &SemaOptions::default(), &CheckOptions::default())
}

/// The contracts under `examples/`, by path.
fn example_sources() -> Vec<Source> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut out: Vec<Source> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mpk"))
        .map(|p| Source {
            path: format!("examples/{}", p.file_name().unwrap().to_string_lossy()),
            text: std::fs::read_to_string(&p).unwrap(),
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Every generated unit of the stdlib and the examples, each with its checked task.
fn all_units() -> Vec<(Checked, Vec<UnitOutput>)> {
    [stdlib::sources(), example_sources()]
        .into_iter()
        .flatten()
        .flat_map(|s| {
            let c = check(std::slice::from_ref(&s));
            assert!(c[0].diags.is_empty(), "{}: {:#?}", s.path, c[0].diags);
            // The contract, then each contract derived from it, with its own units.
            c.into_iter().map(|c| {
                let units = generate_all(std::slice::from_ref(&c));
                (c, units)
            })
        })
        .collect()
}

/// `(target, constant name)` of a descriptor.
type Key = (String, String);

/// A hex word as written (`0x08040490`, `0x4000404000000000ull`): its value.
fn parse_hex(word: &str) -> u64 {
    let digits: String = word
        .trim_start_matches("0x")
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    u64::from_str_radix(&digits, 16).unwrap_or_else(|e| panic!("`{word}`: {e}"))
}

/// The descriptor constants a generated file defines, by the target of the struct they are
/// members of (`struct Sm100` is sm_100a, `struct Sm90` sm_90a): every
/// `static constexpr uintNN_t <NAME>_DESC = 0x…;`.
fn kernel_descriptors(f: &GeneratedFile) -> BTreeMap<Key, u64> {
    let mut out = BTreeMap::new();
    let mut target = None;
    for line in f.text.lines() {
        let t = line.trim();
        if t.starts_with("struct Sm100") {
            target = Some("sm_100a");
        } else if t.starts_with("struct Sm90") {
            target = Some("sm_90a");
        } else if t.starts_with("struct ") {
            target = None;
        }
        let Some(rest) = t.strip_prefix("static constexpr uint") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(_ty), Some(name), Some("="), Some(value)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            continue;
        };
        if !name.ends_with("DESC") {
            continue;
        }
        let target = target.unwrap_or_else(|| panic!("{}: {name} outside Sm100/Sm90", f.name));
        let old = out.insert((target.to_string(), name.to_string()), parse_hex(value));
        assert!(old.is_none(), "{}: {target} {name} twice", f.name);
    }
    out
}

/// One descriptor the document states: its word and its decoded fields
/// (`name bits [lo,hi) = value meaning`).
struct Stated {
    value: u64,
    fields: Vec<(String, u32, u32, u64)>,
}

/// The descriptors the document's "Descriptors" section states: each heading
/// `### <target> \`<NAME>\` = \`0x…\``, then the fenced block of its fields.
fn doc_descriptors(doc: &GeneratedFile) -> BTreeMap<Key, Stated> {
    let section = doc
        .text
        .split_once("\n## Descriptors\n")
        .unwrap_or_else(|| panic!("{}: no Descriptors section", doc.name))
        .1;
    let mut out = BTreeMap::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        let Some(head) = line.strip_prefix("### ") else {
            continue;
        };
        let parts: Vec<&str> = head.split('`').collect();
        let [target, name, eq, value, ""] = parts.as_slice() else {
            panic!("{}: descriptor heading `{line}`", doc.name)
        };
        assert_eq!(eq.trim(), "=", "{}: `{line}`", doc.name);
        let mut fields = Vec::new();
        let mut fenced = false;
        for l in lines.by_ref() {
            if l == "```" {
                if fenced {
                    break;
                }
                fenced = true;
                continue;
            }
            if !fenced {
                continue;
            }
            // `n_dim          bits [17,23) = 2     N >> 3, N = 16`
            let (fname, rest) = l.split_once(" bits [").unwrap();
            let (range, rest) = rest.split_once(") = ").unwrap();
            let (lo, hi) = range.split_once(',').unwrap();
            let v = rest.split_whitespace().next().unwrap();
            fields.push((
                fname.trim().to_string(),
                lo.trim().parse().unwrap(),
                hi.trim().parse().unwrap(),
                v.parse().unwrap(),
            ));
        }
        assert!(!fields.is_empty(), "{}: {name} has no fields", doc.name);
        let key = (target.trim().to_string(), name.to_string());
        let stated = Stated {
            value: parse_hex(value),
            fields,
        };
        assert!(
            out.insert(key, stated).is_none(),
            "{}: `{line}` twice",
            doc.name
        );
    }
    out
}

#[test]
fn every_descriptor_of_every_document_is_the_kernels() {
    let mut docs = 0;
    let mut with_desc = 0;
    for (checked, units) in all_units() {
        for u in &units {
            let doc = u
                .files
                .iter()
                .find(|f| f.kind == FileKind::DesignDoc)
                .unwrap_or_else(|| {
                    panic!("{} ({}): no design document", u.unit, checked.source.path)
                });
            docs += 1;
            // What the generated kernel files define (the layout header both pipeline kernels
            // include, and any kernel).
            let mut kernel = BTreeMap::new();
            for f in u.files.iter().filter(|f| f.kind != FileKind::DesignDoc) {
                for (k, v) in kernel_descriptors(f) {
                    assert!(
                        kernel.insert(k.clone(), v).is_none(),
                        "{}: {k:?} twice",
                        u.unit
                    );
                }
            }
            let stated = doc_descriptors(doc);
            let doc_keys: Vec<&Key> = stated.keys().collect();
            let kernel_keys: Vec<&Key> = kernel.keys().collect();
            assert_eq!(
                doc_keys, kernel_keys,
                "{}: the document states other descriptors than the kernel defines",
                doc.name
            );
            for (k, d) in &stated {
                assert_eq!(
                    d.value, kernel[k],
                    "{}: {k:?} is 0x{:X} in the document, 0x{:X} in the kernel",
                    doc.name, d.value, kernel[k]
                );
                // The decoded fields re-encode to the stated word.
                let word = d.fields.iter().fold(0u64, |acc, (name, lo, hi, v)| {
                    assert!(hi > lo && *hi <= 64, "{}: {name} [{lo},{hi})", doc.name);
                    assert!(
                        *v < 1u64 << (hi - lo),
                        "{}: {name} = {v} overflows",
                        doc.name
                    );
                    acc | (v << lo)
                });
                assert_eq!(
                    word, d.value,
                    "{}: {k:?}'s fields encode 0x{word:X}",
                    doc.name
                );
            }
            // Each stated descriptor is one the kernel of its target computes with: that kernel
            // includes the layout header, and code (not a comment, not the definition) of the
            // two names it.
            let layout = format!("{}_layout.h", u.unit);
            for (target, name) in stated.keys() {
                let kernel_name = match target.as_str() {
                    "sm_100a" => format!("{}.cuh", u.unit),
                    _ => format!("{}_sm90.cuh", u.unit),
                };
                let file = |n: &str| {
                    u.files
                        .iter()
                        .find(|f| f.name == n)
                        .unwrap_or_else(|| panic!("{}: no {n}", u.unit))
                };
                let k = file(&kernel_name);
                assert!(
                    k.text.contains(&format!("#include \"{layout}\"")),
                    "{kernel_name} does not include {layout}"
                );
                let uses = [k, file(&layout)]
                    .iter()
                    .flat_map(|f| f.text.lines())
                    .map(|l| l.split("//").next().unwrap_or(""))
                    .filter(|code| !code.contains("static constexpr uint"))
                    .filter(|code| code.contains(name.as_str()))
                    .count();
                assert!(uses > 0, "{}: {target} {name} is stated but no code of {kernel_name} or {layout} uses it", doc.name);
            }
            if stated.is_empty() {
                assert!(
                    doc.text.contains("No descriptors: "),
                    "{}: states no descriptor and does not say why",
                    doc.name
                );
            } else {
                with_desc += 1;
            }
            // The MMA kind the document names is the one the sm_100a kernel calls.
            let sm100 = u.files.iter().find(|f| f.name == format!("{}.cuh", u.unit));
            if let (Some(k), false) = (sm100, stated.is_empty()) {
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
    }
    assert!(
        docs > 0 && with_desc > 0 && with_desc < docs,
        "{docs} documents, {with_desc} with descriptors"
    );
}

/// Every unit of every family has a design document with every section, and each consumer-only
/// unit's states the page lifecycle of its registration.
#[test]
fn every_unit_of_every_family_has_a_whole_document() {
    let mut families = std::collections::BTreeSet::new();
    for (checked, units) in all_units() {
        for u in &units {
            let t = checked
                .tasks
                .iter()
                .find(|t| t.ir.unit_name() == u.unit)
                .unwrap();
            families.insert(t.ir.family.as_str());
            let doc = u
                .files
                .iter()
                .find(|f| f.kind == FileKind::DesignDoc)
                .unwrap();
            // A helper has no kernel: one section says its roles, ordinals, pages and task
            // count are its caller's, and none of a task's three sections may claim otherwise.
            let helper = t.ir.family.as_str() == "helper";
            let own = ["## Semaphore ordinals", "## Roles", "## Granularity"];
            let caller = "## Roles, ordinals, pages and granularity";
            for section in ["## Engine", "## Region plan", "## Descriptors"]
                .into_iter()
                .chain(if helper { vec![caller] } else { own.to_vec() })
            {
                assert!(
                    doc.text.contains(&format!("\n{section}\n")),
                    "{}: no {section}",
                    doc.name
                );
            }
            if helper {
                for section in own {
                    assert!(
                        !doc.text.contains(&format!("\n{section}\n")),
                        "{}: a helper's document has {section}",
                        doc.name
                    );
                }
                assert!(!doc.text.contains("kNumTasks"), "{}", doc.name);
                continue;
            }
            for p in &t.programs {
                assert!(
                    doc.text.contains(&format!("\n### {}\n", p.target)),
                    "{}: no roles of {}",
                    doc.name,
                    p.target
                );
            }
            assert!(doc.text.contains("- Bounds-fail path: "), "{}", doc.name);
            assert!(
                doc.text.contains("\n## Verification\n\n`mpkc verify` "),
                "{}: no Verification section",
                doc.name
            );
            assert!(
                doc.text.contains(&format!("({})", t.ir.family.as_str()))
                    || t.ir.family.as_str() == "pipeline",
                "{}",
                doc.name
            );
        }
    }
    for f in ["pipeline", "consumer", "consumer-no-smem", "helper"] {
        assert!(families.contains(f), "no unit of family {f}: {families:?}");
    }
}

/// The design documents of the example units, as insta snapshots under `snapshots/design/`
/// (the stdlib units' are under `snapshots/gen/doc/`, tests/generated.rs).
#[test]
fn example_documents_snapshots() {
    let checked = check(&example_sources());
    for u in generate_all(&checked) {
        let doc = u
            .files
            .iter()
            .find(|f| f.kind == FileKind::DesignDoc)
            .unwrap();
        let (stem, _) = doc.name.split_once('.').unwrap();
        insta::with_settings!({snapshot_path => "../snapshots/design", prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_snapshot!(stem, doc.text);
        });
    }
}

/// The page map states, per page, the bytes its regions reach there: a page a multi-page region
/// continues onto holds that region's bytes (it once showed 0 B), and over the 14 pages the map
/// accounts for every byte of the task's regions (packing gaps only add).
#[test]
fn the_page_map_accounts_for_every_region_byte() {
    let checked = check(&stdlib::sources());
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

/// The design document of the one unit of contract `text` (which must check clean), as `path`.
fn design_doc_of(path: &str, text: &str) -> GeneratedFile {
    let checked = check(&[Source {
        path: path.into(),
        text: text.into(),
    }]);
    assert!(checked[0].diags.is_empty(), "{:#?}", checked[0].diags);
    design_doc_file(&checked)
}

/// The design document file of the first unit `checked` generates.
fn design_doc_file(checked: &[Checked]) -> GeneratedFile {
    generate_all(checked)[0]
        .files
        .iter()
        .find(|f| f.kind == FileKind::DesignDoc)
        .expect("a design document")
        .clone()
}

/// Targets of different SMEM capacities: the region plan states each one's and whether its plan
/// is the one shown (the spec header records the smallest capacity).
#[test]
fn the_region_plan_states_each_target_s_capacity() {
    let text = "task two_caps {\n  family consumer\n  targets sm_100a, sm_90a(smem 227328)\n  tensor y: f32[32] out\n  region stage { bytes 4096; align 16; pack }\n  body cuda { if (threadIdx.x < 32) y[threadIdx.x] = reinterpret_cast<float *>(buf.stage)[0]; }\n}\n";
    let doc = design_doc_of("two_caps.mpk", text);
    assert!(
        doc.text.contains("SMEM capacity per target: sm_100a 224256 bytes (the same plan), sm_90a 227328 bytes (the same plan); the spec header records the smallest."),
        "{}",
        doc.text
    );
}

/// `pack` on a region MPK's planner cannot pack (a page or more, or more than one page) changes
/// nothing in its placement: the region plan says so, where it once said "yes" as for a region
/// that shares its page.
#[test]
fn the_region_plan_says_which_pack_the_planner_ignores() {
    // `whole` is a page at n = 4 and packable below (so its `pack` is no W0118).
    let text = "task packs {\n  family consumer\n  param n: int in 1..=4 = 4\n  tensor y: f32[32] out\n  region whole { bytes 4096 * n; align 16; pack }\n  region small { bytes 256; align 16; pack }\n  body cuda { if (threadIdx.x < 32) y[threadIdx.x] = reinterpret_cast<float *>(buf.whole)[0] + reinterpret_cast<float *>(buf.small)[0]; }\n}\n";
    let doc = design_doc_of("packs.mpk", text);
    assert!(
        doc.text.contains(
            "| 0 | `whole` | 16384 | 16 | yes (a whole page or more: not packed) | 0 | 0 | 0 |"
        ),
        "{}",
        doc.text
    );
    assert!(
        doc.text
            .contains("| 1 | `small` | 256 | 16 | yes | 0 | 1 | 0 |"),
        "{}",
        doc.text
    );
}

/// The "Parameters" table: each param's value and where it came from, for one instance built
/// with a `--param` override and the runtime token count of stdlib/linear_bf16_runtime_m.mpk.
#[test]
fn the_parameters_say_where_each_value_came_from() {
    let text = "task sizes {\n  family consumer-no-smem\n  param n: int in 1..=64 = 8\n  param k: int = 4\n  param scale: f32 = 0.5\n  tensor y: f32[n] out\n  body cuda { if (threadIdx.x < params::n) y[threadIdx.x] = params::scale * params::k; }\n  instance small(n = 2)\n}\n";
    let source = Source {
        path: "sizes.mpk".into(),
        text: text.into(),
    };
    let opts = SemaOptions {
        overrides: vec![("k".into(), "6".into())],
        ..SemaOptions::default()
    };
    let checked = check_sources(&[source], &opts, &CheckOptions::default());
    assert!(checked[0].diags.is_empty(), "{:#?}", checked[0].diags);
    let doc = &design_doc_file(&checked).text;
    for row in [
        "| `n` | `int` | 2 | instance `small` | 1..=64 |",
        "| `k` | `int` | 6 | `--param` | - |",
        "| `scale` | `f32` | 0.5 | default | - |",
    ] {
        assert!(doc.contains(row), "{row}\n{doc}");
    }
    let runtime = stdlib::sources()
        .into_iter()
        .find(|s| s.path.ends_with("linear_bf16_runtime_m.mpk"))
        .expect("the stdlib's run-time token count contract");
    let doc = &design_doc_file(&check(&[runtime])).text;
    assert!(
        doc.contains("| `m_real` | `int` | 64 | the runtime's token count, 1..=64 (the kernel is sized for the maximum) | 1..=64 |"),
        "{doc}"
    );
}

/// The Verification section states the comparison `mpkc verify` makes of each output: the
/// reference's tolerances per output (mla_decode_partial: `o_partial.rel_l2 = 1e-3`,
/// `lse_partial.atol = 1e-3, lse_partial.rtol = 1e-4`), and where the reference declares none,
/// the dtype's default; an inline body without a reference says verify cannot run it.
#[test]
fn the_verification_section_states_each_output_s_comparison() {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("stdlib/dsv3/mla_decode.mpk"),
    )
    .unwrap();
    let checked = check(&[Source {
        path: "stdlib/dsv3/mla_decode.mpk".into(),
        text,
    }]);
    assert!(
        checked[0].diags.iter().all(|d| !d.is_error()),
        "{:#?}",
        checked[0].diags
    );
    let doc = design_doc_file(&checked);
    for row in [
        "| `o_partial` | f32 | relative L2 below 1e-3 |",
        "| `lse_partial` | f32 | every \\|out - ref\\| <= 1e-3 + 1e-4 \\|ref\\| |",
    ] {
        assert!(doc.text.contains(row), "no {row}:\n{}", doc.text);
    }
    assert!(
        doc.text
            .contains("`python stdlib/dsv3/mla_decode.ref.py:mla_decode_partial`"),
        "{}",
        doc.text
    );
    let text = "task no_ref {\n  family consumer\n  targets sm_90a\n  tensor y: f32[32] out\n  body cuda { if (threadIdx.x < 32) y[threadIdx.x] = 1.0f; }\n}\n";
    let doc = design_doc_of("no_ref.mpk", text);
    assert!(
        doc.text
            .contains("`mpkc verify` cannot run this unit: inline CUDA body without a reference"),
        "{}",
        doc.text
    );
}
