//! `mpkc verify --chain FILE.chain.toml`: a chain of task units run in dependency order in one
//! launch (issue 13, Deliver 3: a DeepSeek-V3 MoE block for one rank), each stage checked
//! against its own reference on the inputs it actually received, and the chain's final output
//! against a reference of the whole chain (a Python function written from the model's math, fed
//! what the manifest names from the kernels' outputs, e.g. the expert ids they chose).
//!
//! The manifest (TOML, paths relative to it):
//!
//! ```toml
//! name = "dsv3_moe_block"
//! m = 1                                   # tokens, unless `--m` says otherwise
//! output = "moe_w2_dsv3.C"                # the chain's result: unit.tensor
//! [reference]
//! python = "moe_block.ref.py"
//! function = "moe_block"
//! feed = ["router_topk.ids"]              # what kernels wrote (outputs, or `inout` tensors
//!                                         # after the launch, passed as `unit.tensor@after`)
//!                                         # that the reference also receives
//! rel_l2 = 2e-2
//! [[stage]]
//! unit = "rmsnorm_fp8"
//! file = "rmsnorm_fp8.mpk"
//! [[link]]
//! to = "moe_w13_dsv3.A"                   # an input of a later stage
//! from = "rmsnorm_fp8.y"                  # an output of an earlier stage (its buffer), or an
//!                                         # input of one (the same random values)
//! ```
//!
//! A linked pair must have the same dtype and element count (a `[m * 8, 512]` output is a
//! `[m, 8 * 512]` input, row-major). Every unit's other inputs are random, as `mpkc verify`
//! fills them; the chain reference receives them all, stage by stage in declaration order
//! (`unit.tensor` names), then the fed outputs.

use super::verify::CaseSpec;
use super::Checked;
use crate::gpu::run::{LayerReference, Link};
use crate::ir::Target;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The manifest as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The case's name.
    pub name: String,
    /// Tokens (`m` / `m_real` of every stage) unless `--m` is given.
    #[serde(default)]
    pub m: Option<i64>,
    /// The chain's result, `unit.tensor` (an output of a stage).
    pub output: String,
    /// The whole chain's reference.
    pub reference: ManifestReference,
    /// The stages, in dependency order.
    #[serde(rename = "stage")]
    pub stages: Vec<ManifestStage>,
    /// Tensors passed between stages.
    #[serde(rename = "link", default)]
    pub links: Vec<ManifestLink>,
}

/// `[reference]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestReference {
    /// The Python file, relative to the manifest.
    pub python: String,
    /// The function it defines.
    pub function: String,
    /// Kernel outputs (`unit.tensor`) passed after the inputs.
    #[serde(default)]
    pub feed: Vec<String>,
    /// Relative-L2 tolerance of the chain's output.
    pub rel_l2: f64,
}

/// `[[stage]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestStage {
    /// The unit (`<task>` or `<task>_<instance>`).
    pub unit: String,
    /// The contract file, relative to the manifest.
    pub file: String,
}

/// `[[link]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestLink {
    /// `unit.tensor`: an input of a later stage.
    pub to: String,
    /// `unit.tensor`: an output, or an input, of an earlier stage.
    pub from: String,
}

/// A loaded chain: the manifest and where its files are.
#[derive(Clone, Debug)]
pub struct Chain {
    /// What the file says.
    pub manifest: Manifest,
    /// The manifest's path.
    pub path: PathBuf,
    /// Each stage's contract file, resolved.
    pub files: Vec<PathBuf>,
    /// The reference file, resolved.
    pub reference: PathBuf,
}

/// Reads and parses the manifest at `path`. Errors: the file cannot be read or is not a valid
/// manifest (the message names the field).
pub fn load(path: &Path) -> Result<Chain, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the chain {}: {e}", path.display()))?;
    let manifest: Manifest = toml::from_str(&text)
        .map_err(|e| format!("{}: not a chain manifest: {e}", path.display()))?;
    let name_ok = !manifest.name.is_empty()
        && manifest.name.len() <= 64
        && manifest
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !name_ok {
        return Err(format!(
            "{}: the chain's name `{}` is not 1-64 letters, digits or `_` (it names the harness file)",
            path.display(),
            manifest.name.escape_debug()
        ));
    }
    let tol = manifest.reference.rel_l2;
    if !(tol.is_finite() && tol > 0.0) {
        return Err(format!(
            "{}: the reference's `rel_l2` is {tol}; it must be a finite number above 0",
            path.display()
        ));
    }
    if let Some((i, f)) = manifest
        .reference
        .feed
        .iter()
        .enumerate()
        .find(|(i, f)| manifest.reference.feed[..*i].contains(f))
    {
        return Err(format!(
            "{}: `{f}` is fed twice (feed entry {})",
            path.display(),
            i + 1
        ));
    }
    if manifest.stages.len() < 2 {
        return Err(format!(
            "{}: a chain has at least two stages",
            path.display()
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let resolve = |f: &str| PathBuf::from(super::reference::normalized(&dir.join(f)));
    let mut files: Vec<PathBuf> = Vec::new();
    for s in &manifest.stages {
        files.push(resolve(&s.file));
    }
    let reference = resolve(&manifest.reference.python);
    if !reference.is_file() {
        return Err(format!(
            "{}: the chain's reference {} is not a file",
            path.display(),
            reference.display()
        ));
    }
    Ok(Chain {
        reference,
        files,
        path: path.to_path_buf(),
        manifest,
    })
}

impl Chain {
    /// The distinct contract files of the stages, in first-use order.
    pub fn contract_files(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for f in &self.files {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }
}

/// ` view(stride S, offset O)` of a view, else nothing.
fn view_words(t: &crate::ir::TensorIr) -> String {
    t.view.map_or_else(String::new, |v| {
        format!(" view(stride {}, offset {})", v.row_stride, v.offset)
    })
}

/// `unit.tensor` split at its last dot.
fn split(s: &str) -> Result<(&str, &str), String> {
    s.rsplit_once('.')
        .ok_or_else(|| format!("`{s}` is not `unit.tensor` (a stage's unit, a dot, a tensor)"))
}

/// The verify case of `chain` over `checked` (the stage files, checked): every stage's unit,
/// the links, the chain reference. Errors: a unit that is in no file, a tensor a unit does not
/// have, a link from a later stage or between tensors of different types or sizes.
pub fn case(checked: &[Checked], chain: &Chain, target: Target) -> Result<CaseSpec, String> {
    let m = &chain.manifest;
    let mut units = Vec::new();
    for (s, file) in m.stages.iter().zip(&chain.files) {
        let norm = |p: &str| PathBuf::from(super::reference::normalized(Path::new(p)));
        let found = checked.iter().enumerate().find_map(|(si, c)| {
            // A derived unit (a split-K reduce) is found in the file of the contract it comes from.
            let path = c
                .derived
                .as_ref()
                .map_or(&c.source.path, |d| &d.parent.path);
            let same_file = norm(path) == *file;
            c.tasks
                .iter()
                .position(|t| t.ir.unit_name() == s.unit)
                .filter(|_| same_file)
                .map(|ti| (si, ti))
        });
        match found {
            Some(u) => units.push(u),
            None => {
                return Err(format!(
                    "{}: no unit `{}` in {}",
                    chain.path.display(),
                    s.unit,
                    file.display()
                ))
            }
        }
    }
    if let Some(dup) = m
        .stages
        .iter()
        .enumerate()
        .find(|(i, s)| m.stages[..*i].iter().any(|x| x.unit == s.unit))
    {
        return Err(format!(
            "{}: unit `{}` is a stage twice (a chain names each unit once)",
            chain.path.display(),
            dup.1.unit
        ));
    }
    let task = |i: usize| &checked[units[i].0].tasks[units[i].1];
    let stage_of = |name: &str| -> Result<usize, String> {
        m.stages
            .iter()
            .position(|s| s.unit == name)
            .ok_or_else(|| format!("{}: no stage `{name}`", chain.path.display()))
    };
    // (stage, input index) or (stage, output index) of `unit.tensor`.
    let input = |s: &str| -> Result<(usize, usize), String> {
        let (u, t) = split(s)?;
        let st = stage_of(u)?;
        let i = task(st)
            .ir
            .inputs()
            .position(|(_, x)| x.name == t)
            .ok_or_else(|| format!("{}: `{u}` has no input `{t}`", chain.path.display()))?;
        Ok((st, i))
    };
    let output = |s: &str| -> Result<(usize, usize), String> {
        let (u, t) = split(s)?;
        let st = stage_of(u)?;
        let i = task(st)
            .ir
            .outputs()
            .position(|(_, x)| x.name == t)
            .ok_or_else(|| format!("{}: `{u}` has no output `{t}`", chain.path.display()))?;
        Ok((st, i))
    };
    let (mut links, mut shared) = (Vec::new(), Vec::new());
    for (i, l) in m.links.iter().enumerate() {
        if m.links[..i].iter().any(|x| x.to == l.to) {
            return Err(format!(
                "{}: `{}` is linked twice",
                chain.path.display(),
                l.to
            ));
        }
        let (to_task, to_input) = input(&l.to)?;
        let to_t = task(to_task).ir.inputs().nth(to_input).map(|(_, x)| x);
        let (from, is_output) = match output(&l.from) {
            Ok(x) => (x, true),
            Err(_) => (
                input(&l.from).map_err(|e| e.replace("has no input", "has no output or input"))?,
                false,
            ),
        };
        let from_t = if is_output {
            task(from.0).ir.outputs().nth(from.1)
        } else {
            task(from.0).ir.inputs().nth(from.1)
        }
        .map(|(_, x)| x);
        if from.0 >= to_task {
            return Err(format!(
                "{}: link `{}` <- `{}`: the source is not an earlier stage",
                chain.path.display(),
                l.to,
                l.from
            ));
        }
        if let (Some(a), Some(b)) = (from_t, to_t) {
            // The consumer's tensor spans the producer's whole buffer: the same elements, or the
            // parent a row-strided view of it lies in (`view(stride, offset)`: q_nope in q_b's
            // output). A source that is itself a view would need its parent named instead.
            let spans = a.elements().is_some()
                && match b.view {
                    Some(_) => b.parent_elements() == a.elements() && is_output,
                    None => b.elements() == a.elements(),
                };
            if a.dtype != b.dtype || !spans || a.view.is_some() {
                return Err(format!(
                    "{}: link `{}` <- `{}`: {}{:?}{} and {}{:?}{} differ (a link needs one dtype and one element count; a view reads a whole output)",
                    chain.path.display(),
                    l.to,
                    l.from,
                    b.dtype,
                    b.dims,
                    view_words(b),
                    a.dtype,
                    a.dims,
                    view_words(a),
                ));
            }
        }
        // An input's values (or, for an `inout` one, its buffer) are passed on as generated: a
        // source input that is itself linked would pass on values nothing computed.
        if !is_output {
            if let Some(src) = m.links.iter().find(|x| x.to == l.from) {
                return Err(format!(
                    "{}: link `{}` <- `{}`: `{}` is itself linked (from `{}`); link `{}` from there",
                    chain.path.display(),
                    l.to,
                    l.from,
                    l.from,
                    src.from,
                    l.to
                ));
            }
        }
        let link = Link {
            from_task: from.0,
            from_output: from.1,
            to_task,
            to_input,
        };
        if is_output {
            links.push(link);
        } else {
            shared.push(link);
        }
    }
    let linked = |st: usize, i: usize| {
        links
            .iter()
            .chain(&shared)
            .any(|l: &Link| l.to_task == st && l.to_input == i)
    };
    let mut inputs = Vec::new();
    for st in 0..units.len() {
        for (i, (_, x)) in task(st).ir.inputs().enumerate() {
            if !linked(st, i) {
                inputs.push((format!("{}.{}", m.stages[st].unit, x.name), (st, i)));
            }
        }
    }
    // A fed tensor is something a stage writes: an output or an `inout` tensor (its value after
    // the launch), by its index among the stage's written tensors.
    let written = |s: &str| -> Result<(usize, usize), String> {
        let (u, t) = split(s)?;
        let st = stage_of(u)?;
        let i = task(st)
            .ir
            .written()
            .position(|(_, x)| x.name == t)
            .ok_or_else(|| {
                format!(
                    "{}: `{u}` writes no `{t}` (a fed tensor is an output or `inout`)",
                    chain.path.display()
                )
            })?;
        Ok((st, i))
    };
    // An `inout` tensor is also an input the reference receives as generated, so its value after
    // the launch is passed as `unit.tensor@after`.
    let feeds = m
        .reference
        .feed
        .iter()
        .map(|f| {
            let (st, i) = written(f)?;
            let inout = task(st)
                .ir
                .written()
                .nth(i)
                .is_some_and(|(_, x)| x.direction == crate::ir::Direction::InOut);
            Ok((
                if inout {
                    format!("{f}@after")
                } else {
                    f.clone()
                },
                (st, i),
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let result = output(&m.output)?;
    let tasks: Vec<&crate::valid::CheckedTask> = (0..units.len()).map(task).collect();
    let skip = tasks.iter().find_map(|t| {
        (!t.ir.targets.iter().any(|x| x.target == target)).then(|| {
            format!(
                "`{}` does not declare {}",
                t.ir.unit_name(),
                target.as_str()
            )
        })
    });
    // One page table serves the launch: every paged stage must describe the same pool.
    let paged: Vec<(usize, &crate::ir::TensorIr, crate::ir::PagedIr)> = tasks
        .iter()
        .enumerate()
        .filter_map(|(i, t)| crate::gpu::paged::paged_of(t).map(|(x, p)| (i, x, p)))
        .collect();
    if let Some(((i0, x0, p0), rest)) = paged.split_first() {
        let key = |x: &crate::ir::TensorIr, p: &crate::ir::PagedIr| {
            (p.page_tokens, p.max_context, p.requests, x.dims.clone())
        };
        if let Some((i, x, _)) = rest.iter().find(|(_, x, p)| key(x, p) != key(x0, p0)) {
            return Err(format!(
                "{}: `{}.{}` and `{}.{}` are paged KV pools of different shapes or page tables; the launch has one page table, so every paged stage states the same `paged(...)` and pool",
                chain.path.display(),
                m.stages[*i0].unit,
                x0.name,
                m.stages[*i].unit,
                x.name
            ));
        }
    }
    // What the reference receives of the kernels is read after the launch: a tensor a later
    // stage updates in place would arrive as that stage left it.
    for (what, (st, wi)) in feeds
        .iter()
        .map(|(n, at)| (n.as_str(), *at))
        .chain(std::iter::once((m.output.as_str(), {
            let (st, oi) = result;
            let name = &task(st).ir.outputs().nth(oi).map(|(_, x)| x.name.clone());
            let wi = task(st)
                .ir
                .written()
                .position(|(_, x)| Some(&x.name) == name.as_ref())
                .unwrap_or(0);
            (st, wi)
        })))
    {
        if let Some(by) = super::in_place::updated_after(&tasks, &links, &shared, st, wi) {
            return Err(format!(
                "{}: `{what}` is updated in place afterwards by `{by}`, so after the launch it holds that stage's result; name the last stage's tensor",
                chain.path.display()
            ));
        }
    }
    let alone_unchecked = super::in_place::unchecked_alone(&tasks, &links, &shared);
    Ok(CaseSpec {
        name: m.name.clone(),
        units,
        links,
        shared,
        file: format!("chain_{}.cu", m.name),
        entry: crate::back::harness::chain_entry_name(&tasks),
        skip,
        tokens: None,
        context: None,
        reference: Some(format!(
            "chain: each stage's own; the output: python {}:{}",
            m.reference.python, m.reference.function
        )),
        layer: Some(LayerReference {
            module: chain.reference.clone(),
            function: m.reference.function.clone(),
            inputs,
            feeds,
            output: result,
            rel_l2: m.reference.rel_l2,
            alone_unchecked,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stdlib's MoE block manifest with `edit` applied, loaded from a scratch copy next to
    /// the stdlib files it names (so that its relative paths resolve), and its case or error.
    fn edited(edit: impl Fn(String) -> String) -> Result<CaseSpec, String> {
        edited_chain("moe_block", edit)
    }

    /// The stdlib manifest `stdlib/dsv3/<stem>.chain.toml` with `edit` applied, its stage files
    /// and reference resolved to the stdlib's, and its case or error.
    fn edited_chain(stem: &str, edit: impl Fn(String) -> String) -> Result<CaseSpec, String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let text =
            std::fs::read_to_string(root.join(format!("stdlib/dsv3/{stem}.chain.toml"))).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("edited.chain.toml");
        let text = edit(text)
            .replace(
                "file = \"",
                &format!("file = \"{}/stdlib/dsv3/", root.display()),
            )
            .replace(
                &format!("python = \"{stem}.ref.py\""),
                &format!("python = \"{}/stdlib/dsv3/{stem}.ref.py\"", root.display()),
            );
        std::fs::write(&path, text).unwrap();
        let chain = load(&path)?;
        case(&checked_at_m1(&chain), &chain, Target::Sm90a)
    }

    /// The chain's stage files, checked at one token.
    fn checked_at_m1(chain: &Chain) -> Vec<super::super::Checked> {
        let sources: Vec<super::super::Source> = chain
            .contract_files()
            .iter()
            .map(|f| super::super::Source {
                path: f.display().to_string(),
                text: std::fs::read_to_string(f).unwrap(),
            })
            .collect();
        super::super::check_sources_with(
            &sources,
            |s| crate::sema::SemaOptions {
                overrides: super::super::token_overrides(s, 1),
                ..Default::default()
            },
            &Default::default(),
        )
    }

    #[test]
    fn a_bad_manifest_is_an_error_naming_what() {
        let err = |edit: &dyn Fn(String) -> String| edited(edit).unwrap_err();
        let e = err(&|t| t.replace("unit = \"router_topk\"", "unit = \"router_top8\""));
        assert!(e.contains("no unit `router_top8`"), "{e}");
        let e = err(&|t| t.replace("to = \"moe_w13_dsv3.A\"", "to = \"moe_w13_dsv3.Q\""));
        assert!(e.contains("`moe_w13_dsv3` has no input `Q`"), "{e}");
        let e = err(&|t| {
            t.replace(
                "from = \"silu_mul_fp8_shared.y\"",
                "from = \"silu_mul_fp8_shared.y_scale\"",
            )
        });
        assert!(e.contains("differ"), "{e}");
        let e = err(&|t| {
            t.replace(
                "to = \"router_topk.logits\"\nfrom = \"linear_bf16_splitk_sum64_router.Y\"",
                "to = \"router_topk.logits\"\nfrom = \"moe_w2_dsv3.C\"",
            )
        });
        assert!(
            e.contains("not an earlier stage") || e.contains("differ"),
            "{e}"
        );
        let e = err(&|t| t.replace("rel_l2 = 2e-2", "rel_l2 = 2e-2\nextra = 1"));
        assert!(e.contains("not a chain manifest"), "{e}");
        let e = err(&|t| {
            t.replace(
                "[[link]]\nto = \"moe_w2_dsv3.shared\"",
                "[[link]]\nto = \"moe_w2_dsv3.ids\"\nfrom = \"router_topk.ids\"\n\n[[link]]\nto = \"moe_w2_dsv3.shared\"",
            )
        });
        assert!(e.contains("linked twice"), "{e}");
        let e = err(&|t| t.replace("moe_block.ref.py", "missing.ref.py"));
        assert!(e.contains("is not a file"), "{e}");
        let e = err(&|t| t.replace("rel_l2 = 2e-2", "rel_l2 = inf"));
        assert!(e.contains("finite number above 0"), "{e}");
        let e = err(&|t| t.replace("name = \"dsv3_moe_block\"", "name = \"a\\nb\""));
        assert!(e.contains("letters, digits or `_`"), "{e}");
        let e = err(&|t| {
            t.replace(
                "feed = [\"router_topk.ids\"]",
                "feed = [\"router_topk.ids\", \"router_topk.ids\"]",
            )
        });
        assert!(e.contains("fed twice"), "{e}");
        // An input that is itself linked passes on nothing it computed.
        let e = err(&|t| {
            t.replace(
                "to = \"moe_w2_dsv3.ids\"\nfrom = \"router_topk.ids\"",
                "to = \"moe_w2_dsv3.ids\"\nfrom = \"moe_w13_dsv3.ids\"",
            )
        });
        assert!(e.contains("is itself linked"), "{e}");
        assert!(edited(|t| t).is_ok());
    }

    #[test]
    fn the_moe_block_chain_resolves() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let chain = load(&root.join("stdlib/dsv3/moe_block.chain.toml")).unwrap();
        let c = case(&checked_at_m1(&chain), &chain, Target::Sm90a).unwrap();
        assert_eq!(c.units.len(), chain.manifest.stages.len());
        assert!(c.skip.is_none());
        let layer = c.layer.unwrap();
        assert!(layer.inputs.iter().any(|(n, _)| n == "rmsnorm_fp8.x"));
        assert!(!layer.inputs.iter().any(|(n, _)| n == "moe_w13_dsv3.A"));
        assert_eq!(layer.feeds[0].0, "router_topk.ids");
    }

    /// Every queue of both chains plans within the SMEM when each task is planned after the one
    /// before it, as MPK's planner does (`gpu::queue::plans`, I-S5), and keeps the page protocol
    /// with those pages, on both targets, at 1, 4 and 7 tasks per CTA.
    #[test]
    fn the_chains_plan_within_the_smem_after_their_predecessors() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for stem in ["moe_block", "decode_layer"] {
            let chain = load(&root.join(format!("stdlib/dsv3/{stem}.chain.toml"))).unwrap();
            let checked = checked_at_m1(&chain);
            for target in [Target::Sm90a, Target::Sm100a] {
                let c = case(&checked, &chain, target).unwrap();
                let gc = crate::gpu::run::Case {
                    name: c.name.clone(),
                    tasks: c.units.iter().map(|u| &checked[u.0].tasks[u.1]).collect(),
                    ..Default::default()
                };
                for per_cta in [1, 4, 7] {
                    let q = crate::gpu::queue::queues(&gc, per_cta, 132);
                    crate::gpu::queue::check_pages(&gc, target, &q, 8)
                        .unwrap_or_else(|e| panic!("{stem}, {target}, {per_cta} per CTA: {e}"));
                }
            }
        }
    }

    /// The whole decode layer: views into qkv_a's and q_b's outputs, `inout` links (the norms
    /// and rope in place), the KV cache shared with the append; the stages an in-place update
    /// hides from their own check are exactly the ones whose buffers change after them.
    #[test]
    fn the_decode_layer_chain_resolves_with_its_in_place_stages() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let chain = load(&root.join("stdlib/dsv3/decode_layer.chain.toml")).unwrap();
        let c = case(&checked_at_m1(&chain), &chain, Target::Sm90a).unwrap();
        assert_eq!(c.units.len(), 24);
        let layer = c.layer.unwrap();
        let unchecked: Vec<&str> = layer
            .alone_unchecked
            .iter()
            .map(|(s, _)| chain.manifest.stages[*s].unit.as_str())
            .collect();
        assert_eq!(
            unchecked,
            [
                "linear_fp8_blockscale_qkv_a",
                "qkv_a_norm_q_a",
                "qkv_a_norm_kv_a",
                "linear_fp8_blockscale_q_b",
                "rope"
            ],
            "{:?}",
            layer.alone_unchecked
        );
        // The cache the append writes is the attention's input buffer, not a copy.
        let (kv, mla) = (7, 9);
        assert!(c
            .shared
            .iter()
            .any(|l| (l.from_task, l.to_task) == (kv, mla)));
        assert!(!layer
            .inputs
            .iter()
            .any(|(n, _)| n == "mla_decode_partial.ckv"));
        assert!(layer.inputs.iter().any(|(n, _)| n == "kv_append.ckv"));
        // Fed: an output (the ids, the query) and an `inout` tensor after the launch.
        let fed: Vec<&str> = layer.feeds.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            fed,
            ["router_topk.ids", "w_uk_absorb.q", "kv_append.ckv@after"]
        );
    }

    /// A tensor a later stage updates in place cannot be fed or be the chain's output: after
    /// the launch it holds the later stage's result.
    #[test]
    fn a_tensor_updated_in_place_later_is_neither_fed_nor_the_output() {
        let e = edited_chain("decode_layer", |t| {
            t.replace(
                "feed = [\"router_topk.ids\",",
                "feed = [\"linear_fp8_blockscale_qkv_a.C\", \"router_topk.ids\",",
            )
        })
        .unwrap_err();
        assert!(
            e.contains("updated in place afterwards by `qkv_a_norm_q_a.x`"),
            "{e}"
        );
    }

    #[test]
    fn a_view_link_must_span_the_whole_output() {
        // q_nope (view, stride 192) read from qkv_a's output (2176 wide): not its parent.
        let e = edited_chain("decode_layer", |t| {
            t.replace(
                "to = \"w_uk_absorb.q_nope\"\nfrom = \"linear_fp8_blockscale_q_b.C\"",
                "to = \"w_uk_absorb.q_nope\"\nfrom = \"linear_fp8_blockscale_qkv_a.C\"",
            )
        })
        .unwrap_err();
        assert!(
            e.contains("differ") && e.contains("view(stride 192, offset 0)"),
            "{e}"
        );
    }
}
