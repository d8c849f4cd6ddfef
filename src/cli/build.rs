//! `mpkc build`: the budget table, the generated files, the nvcc runs and their ptxas reports.

use super::args::CommonArgs;
use super::{check_all, exit};
use crate::diag::{render_human, ColorMode, SourceFile};
use crate::driver::build::{compile_all, generate_all, map_errors, write_all};
use crate::driver::{nvcc, Checked};
use std::path::Path;

/// Runs `mpkc build`.
pub fn run(common: &CommonArgs, out: &Path, jobs: Option<usize>, color: ColorMode) -> u8 {
    let checked = match check_all(common, color) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if checked.iter().any(Checked::has_errors) {
        super::report::summary(&checked, common.message_format);
        return exit::ERRORS;
    }
    print_budget_table(&checked);
    let units = generate_all(&checked);
    if let Err(e) = write_all(out, &units) {
        eprintln!("error: cannot write to {}: {e}", out.display());
        return exit::ABSENT;
    }
    let files: usize = units.iter().map(|u| u.files.len()).sum();
    println!(
        "\nwrote {files} generated files for {} task instance{} (and {} support headers) to {}",
        units.len(),
        if units.len() == 1 { "" } else { "s" },
        crate::back::SUPPORT_HEADERS.len(),
        out.display()
    );
    let tc = match nvcc::find() {
        Ok(tc) => tc,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::ABSENT;
        }
    };
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let results = compile_all(&tc, out, &checked, &units, jobs);
    println!("\ncompiled with nvcc {} ({}), -Xptxas -v:", tc.version, tc.found_by);
    println!("  {:<34} {:<8} {:>5} {:>6} {:>6} {:>6}  cubin", "unit", "target", "regs", "spill", "stack", "smem");
    let mut status = exit::OK;
    let mut reported = std::collections::BTreeSet::new();
    for j in &results {
        let unit = &units[j.unit];
        match &j.result {
            Ok((cubin, r)) => println!(
                "  {:<34} {:<8} {:>5} {:>6} {:>6} {:>6}  {}",
                unit.unit,
                j.target.as_str(),
                r.registers,
                r.spill_stores + r.spill_loads,
                r.stack_bytes,
                r.smem_bytes,
                cubin.display()
            ),
            Err(f) => {
                status = exit::EXTERNAL;
                println!("  {:<34} {:<8} FAILED", unit.unit, j.target.as_str());
                let c = &checked[unit.source];
                let mapped = map_errors(c, &f.stderr);
                let file = SourceFile { name: &c.source.path, text: &c.source.text };
                for d in &mapped {
                    // The same contract error fails every target: report it once.
                    if reported.insert((unit.source, d.main_span(), d.message.clone())) {
                        eprint!("{}", render_human(d, file, color));
                    }
                }
                eprintln!("error: nvcc failed for {} ({}):\n  {}\n{}", j.file, j.target, f.command, f.stderr.trim_end());
            }
        }
    }
    for u in &units {
        let t = &checked[u.source].tasks[u.task];
        if !u.files.iter().any(|f| f.kind == crate::back::FileKind::WorkerUnit) {
            let targets: Vec<&str> = t.ir.targets.iter().map(|x| x.target.as_str()).collect();
            println!(
                "  {:<34} {:<8} spec header only: the {} family's kernel backend is not written yet",
                u.unit,
                targets.join(","),
                t.ir.family.as_str()
            );
        }
    }
    status
}

fn print_budget_table(checked: &[Checked]) {
    println!(
        "{:<26} {:<3} {:<18} {:>7} {:>8} {:>8} {:>9} {:>5}  targets",
        "task instance", "fam", "body", "regions", "bytes", "pages", "ordinals", "tmem"
    );
    for c in checked {
        for t in &c.tasks {
            let ir = &t.ir;
            let body = match (&t.binding, &ir.body) {
                (Some(b), _) => b.sig.name.to_string(),
                (None, Some(crate::ir::BodyIr::Cuda { .. })) => "cuda".to_string(),
                _ => "-".to_string(),
            };
            let tmem = ir.tmem_cols.map_or("-".to_string(), |(c, _)| c.to_string());
            let targets: Vec<&str> = ir.targets.iter().map(|t| t.target.as_str()).collect();
            println!(
                "{:<26} {:<3} {:<18} {:>7} {:>8} {:>8} {:>9} {:>5}  {}",
                ir.unit_name(),
                ir.family.letter(),
                body,
                ir.regions.len(),
                ir.region_bytes(),
                format!("{}/14", t.primary_plan().pages_used),
                format!("{}/31", t.ordinals.len()),
                tmem,
                targets.join(", ")
            );
        }
    }
}
