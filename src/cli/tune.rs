//! `mpkc tune`: every combination of the `--vary` values of one instance, each checked at every
//! `--m` (a variant the checker rejects is listed with its first error, and costs no GPU time),
//! then built and timed as `mpkc bench` does; the table of variants, the fastest (geometric mean
//! of its times over the Ms) and the contract with its values in the instance (docs/bench.md,
//! "mpkc tune").

use super::args::{BenchArgs, BenchMethod, CommonArgs, TuneArgs, TuneMethod};
use super::{bench, exit, inputs};
use crate::diag::ColorMode;
use crate::driver::tune::{
    best, label, variant_instance, variants, variants_file, with_instance_params, Outcome,
};
use crate::driver::{self, Checked};
use serde::Serialize;

/// Version of the `--json` document's layout.
const SCHEMA: u32 = 1;

/// One variant in the report.
#[derive(Clone, Debug, Serialize)]
struct Variant {
    /// `p = v, ...`, in `--vary` order.
    label: String,
    /// The values tried, `param -> value`.
    params: serde_json::Map<String, serde_json::Value>,
    /// `ok`, `rejected` (the checker's error, not built), `mismatch` or `failed` at some M.
    status: String,
    /// Why not ok.
    reason: Option<String>,
    /// The bench case timed (the unit, or `linear -> reduce`).
    case: Option<String>,
    /// Microseconds per M (`--m` order), the method searched.
    us: Vec<Option<f64>>,
    /// The competitor's time over mpkc's, per M.
    speedup: Vec<Option<f64>>,
    /// Geometric mean of `us` when every M was timed.
    geomean_us: Option<f64>,
}

/// The `--json` document.
#[derive(Clone, Debug, Serialize)]
struct TuneReport {
    schema: u32,
    tool: String,
    file: String,
    instance: String,
    method: String,
    m: Vec<i64>,
    gpu: Option<String>,
    variants: Vec<Variant>,
    /// Index of the fastest variant.
    best: Option<usize>,
    /// The contract with the best values in the instance.
    contract: Option<String>,
}

fn usage(msg: &str) -> u8 {
    errln!("error: {msg}");
    exit::USAGE
}

/// The first error among `checked`, as `CODE: message`.
fn first_error(checked: &[Checked]) -> Option<String> {
    checked.iter().find_map(Checked::first_error)
}

/// Runs `mpkc tune`.
pub fn run(common: &CommonArgs, t: &TuneArgs, color: ColorMode) -> u8 {
    let [path] = common.files.as_slice() else {
        return usage(
            "mpkc tune takes one contract FILE: it prints that contract with the best values",
        );
    };
    if path.as_os_str() == "-" || path.is_dir() {
        return usage("mpkc tune takes one contract FILE (not stdin, not a folder): it prints that contract with the best values");
    }
    let ms = bench::distinct_ms(&t.m);
    let Some(instance) = common.instance.clone() else {
        return usage("mpkc tune needs `--instance NAME`: the values are tried, and printed, in that instance");
    };
    let vs = match variants(&t.vary) {
        Ok(v) => v,
        Err(e) => return usage(&e),
    };
    let sources: Vec<driver::Source> = match inputs::load(&common.files) {
        Ok(l) => l.into_iter().filter_map(Result::ok).collect(),
        Err(e) => return usage(&e.to_string()),
    };
    let Some(source) = sources.first() else {
        return usage(&format!("{} is not UTF-8 text", path.display()));
    };
    if let Ok(f) = crate::front::parse_file(&source.text) {
        if f.tasks.len() != 1 {
            return usage(&format!(
                "mpkc tune takes a file of one task, and {} has {}: put the task to tune in a file of its own",
                path.display(),
                f.tasks.len()
            ));
        }
    }
    let declared = driver::declared_params(source);
    for (p, _) in &t.vary {
        if p == "m" || p == "m_real" {
            return usage(&format!(
                "`--vary {p}`: the token count is `--m`, which every variant is timed at"
            ));
        }
        if !declared.contains(p) {
            return usage(&format!(
                "`--vary {p}`: {} declares no param `{p}` ({})",
                path.display(),
                if declared.is_empty() {
                    "it declares none".to_string()
                } else {
                    format!("it declares {}", declared.join(", "))
                }
            ));
        }
        if common.params.iter().any(|(q, _)| q == p) {
            return usage(&format!(
                "`--vary {p}` and `--param {p}=...` both set `{p}`: give one"
            ));
        }
    }
    // The contract at its own values: diagnostics printed, errors stop here.
    let task_name = match super::check_all(common, color) {
        Ok(c) if c.iter().any(Checked::has_errors) => {
            super::report::summary(&c, common.message_format);
            return exit::ERRORS;
        }
        Ok(c) => match c.iter().flat_map(|x| &x.tasks).next() {
            Some(t) => t.ir.name.clone(),
            None => return usage(&format!("{} declares no task", path.display())),
        },
        Err(code) => return code,
    };
    let b = BenchArgs {
        m: ms.clone(),
        json: false,
        method: match t.method {
            TuneMethod::Standalone => BenchMethod::Standalone,
            TuneMethod::Persistent => BenchMethod::Persistent,
        },
        fixed_cost: false,
        timeline: false,
        tasks_per_cta: 8,
        runs: t.runs,
        repeats: t.repeats,
        warmup: t.warmup,
        rotate: t.rotate,
        seed: t.seed,
        target: t.target.clone(),
        save_json: None,
        out: None,
        no_competitor: t.no_competitor,
    };
    let method = match t.method {
        TuneMethod::Standalone => "standalone",
        TuneMethod::Persistent => "persistent",
    };
    let mut out = TuneReport {
        schema: SCHEMA,
        tool: format!("mpkc {}", env!("CARGO_PKG_VERSION")),
        file: path.display().to_string(),
        instance: instance.clone(),
        method: method.to_string(),
        m: ms.clone(),
        gpu: None,
        variants: Vec::new(),
        best: None,
        contract: None,
    };
    // 1. The checker, per variant and M: a rejected variant costs no build and no GPU time.
    for v in &vs {
        let mut c = common.clone();
        c.params.extend(v.iter().cloned());
        let mut row = Variant {
            label: label(v),
            params: v
                .iter()
                .map(|(p, x)| (p.clone(), serde_json::Value::String(x.clone())))
                .collect(),
            status: "ok".into(),
            reason: None,
            case: None,
            us: vec![None; ms.len()],
            speedup: vec![None; ms.len()],
            geomean_us: None,
        };
        // At its own token count too: the bench of the variants checks them there first.
        let (sema, opts) = match super::options(&c) {
            Ok(x) => x,
            Err(e) => return usage(&e),
        };
        let own = driver::check_sources_with(&sources, |_| sema.clone(), &opts);
        if let Some(e) = first_error(&own) {
            row.status = "rejected".into();
            row.reason = Some(format!("at its own params: {e}"));
            errln!(
                "{}: rejected: {}",
                row.label,
                row.reason.as_deref().unwrap_or("")
            );
        }
        let checked_ms: &[i64] = if row.status == "ok" { &ms } else { &[] };
        for &m in checked_ms {
            let checked = match bench::check_at(&c, &sources, m) {
                Ok(x) => x,
                Err(code) => return code,
            };
            if let Some(e) = first_error(&checked) {
                row.status = "rejected".into();
                row.reason = Some(format!("at M = {m}: {e}"));
                errln!(
                    "{}: rejected: {}",
                    row.label,
                    row.reason.as_deref().unwrap_or("")
                );
                break;
            }
        }
        out.variants.push(row);
    }
    // 2. The accepted variants as the instances of one contract: one bench builds them all (nvcc
    // in parallel) and times each.
    let named: Vec<(String, Vec<(String, String)>)> = out
        .variants
        .iter()
        .enumerate()
        .filter(|(_, r)| r.status == "ok")
        .map(|(i, _)| (variant_instance(&instance, i), vs[i].clone()))
        .collect();
    let mut code = exit::OK;
    if !named.is_empty() {
        let text = match variants_file(&source.text, &instance, &named) {
            Ok(x) => x,
            Err(e) => return usage(&e),
        };
        // Next to FILE, so that what it names by relative path (`use ... from`, `reference
        // python`) resolves as it does for FILE.
        let stem = path
            .file_stem()
            .map_or_else(|| "contract".into(), |n| n.to_string_lossy().into_owned());
        // Not `*.mpk`: a directory input never reads it, should it outlive an interrupted run.
        let file = path.with_file_name(format!(".{stem}.mpk.mpkc-tune-{}", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        if let Err(e) = written {
            errln!(
                "error: cannot write the variants next to {} ({}): {e}",
                path.display(),
                file.display()
            );
            return exit::ABSENT;
        }
        let c = CommonArgs {
            files: vec![file],
            instance: None,
            ..common.clone()
        };
        let measured = bench::measure(&c, &b, color, "tune");
        let _ = std::fs::remove_file(&c.files[0]);
        let (report, status) = match measured {
            Ok(x) => x,
            Err(code) => return code,
        };
        if status == exit::EXTERNAL {
            code = exit::EXTERNAL;
        }
        out.gpu = Some(report.gpu.name.clone());
        for (iname, _) in &named {
            let unit = format!("{task_name}_{iname}");
            let i = out
                .variants
                .iter()
                .enumerate()
                .position(|(k, _)| variant_instance(&instance, k) == *iname)
                .unwrap_or(0);
            let row = &mut out.variants[i];
            for (k, &m) in ms.iter().enumerate() {
                let Some(case) = report.cases.iter().find(|x| {
                    x.m == m && (x.name == unit || x.name.starts_with(&format!("{unit} -> ")))
                }) else {
                    row.status = "failed".into();
                    row.reason = Some(format!("at M = {m}: bench ran no case {unit}"));
                    continue;
                };
                row.case = Some(case.name.clone());
                if case.status != "ok" {
                    row.status = case.status.clone();
                    row.reason = Some(format!(
                        "at M = {m}: {}",
                        case.reason.as_deref().unwrap_or("")
                    ));
                    continue;
                }
                if let Some(r) = case.methods.iter().find(|r| r.method == method) {
                    row.us[k] = Some(r.us);
                    row.speedup[k] = r.speedup;
                }
            }
            row.geomean_us = Outcome {
                variant: vs[i].clone(),
                us: row.us.clone(),
            }
            .geomean_us();
        }
    }
    let outcomes: Vec<Outcome> = vs
        .iter()
        .zip(&out.variants)
        .map(|(v, r)| Outcome {
            variant: v.clone(),
            us: r.us.clone(),
        })
        .collect();
    out.best = best(&outcomes);
    if let Some(bi) = out.best {
        // What was timed: the user's `--param` values as well as the variant's.
        let mut sets: Vec<(String, String)> = common
            .params
            .iter()
            .filter(|(p, _)| declared.contains(p) && p != "m" && p != "m_real")
            .cloned()
            .collect();
        sets.extend(vs[bi].iter().cloned());
        match with_instance_params(&source.text, &instance, &sets) {
            Ok(text) => out.contract = Some(text),
            Err(e) => {
                errln!("error: cannot print the best contract: {e}");
                code = exit::ERRORS;
            }
        }
    } else {
        code = exit::ERRORS;
    }
    if t.json {
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        out!("{}", table(&out));
    }
    if let (true, Some(text)) = (t.write, &out.contract) {
        if let Err(e) = std::fs::write(path, text) {
            errln!("error: cannot write {}: {e}", path.display());
            return exit::ABSENT;
        }
        errln!(
            "mpkc tune: wrote the best values into instance `{instance}` of {}",
            path.display()
        );
    } else if let (false, false, Some(text)) = (t.write, t.json, &out.contract) {
        outln!();
        outln!(
            "// {} with the best values in instance `{instance}`:",
            out.file
        );
        out!("{text}");
    }
    code
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

/// The table: one line per variant, its time per M and geomean, then the best.
fn table(r: &TuneReport) -> String {
    let ms: Vec<String> = r.m.iter().map(|m| m.to_string()).collect();
    let mut s = format!(
        "mpkc tune: {}, instance {}, {} method, M = {}{}\n",
        r.file,
        r.instance,
        r.method,
        ms.join(", "),
        r.gpu
            .as_deref()
            .map(|g| format!(", {g}"))
            .unwrap_or_default()
    );
    let width = r
        .variants
        .iter()
        .map(|v| label_of(v).len())
        .max()
        .unwrap_or(7)
        .max(7);
    s.push_str(&format!("{:<width$}", "variant"));
    for m in &r.m {
        s.push_str(&format!(" {:>10} {:>7}", format!("M={m} us"), "speedup"));
    }
    s.push_str(&format!(" {:>10}\n", "geomean us"));
    for (i, v) in r.variants.iter().enumerate() {
        s.push_str(&format!("{:<width$}", label_of(v)));
        if v.status != "ok" && v.geomean_us.is_none() {
            s.push_str(&format!(
                " {}: {}\n",
                v.status.to_uppercase(),
                v.reason.as_deref().unwrap_or("")
            ));
            continue;
        }
        for (us, sp) in v.us.iter().zip(&v.speedup) {
            s.push_str(&format!(" {:>10} {:>7}", opt(*us, 2), opt(*sp, 2)));
        }
        s.push_str(&format!(
            " {:>10}{}\n",
            opt(v.geomean_us, 2),
            if r.best == Some(i) { "  best" } else { "" }
        ));
    }
    match r.best {
        Some(i) => s.push_str(&format!(
            "best: {} (geomean {} us)\n",
            label_of(&r.variants[i]),
            opt(r.variants[i].geomean_us, 2)
        )),
        None => s.push_str("best: none (no variant was timed at every M)\n"),
    }
    s
}

fn label_of(v: &Variant) -> String {
    v.label.clone()
}
