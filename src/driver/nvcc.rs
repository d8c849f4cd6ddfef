//! Finding nvcc and compiling generated translation units with it, with the `-Xptxas -v` report
//! parsed (registers, spills, stack, SMEM) and nvcc's errors mapped back to the contract.
//!
//! Search order (docs/design.md, `driver/`): `$NVCC`, `$CUDA_HOME/bin/nvcc`, `nvcc` on `PATH`, then
//! the project's local toolchain `.toolchain/cuda/nvidia/cu13/bin/nvcc` (installed from PyPI by
//! `scripts/setup`), looked up from the current directory upwards and from the executable's
//! directory upwards.

use crate::ir::Target;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The local toolchain's nvcc, relative to the project root.
pub const LOCAL_NVCC: &str = ".toolchain/cuda/nvidia/cu13/bin/nvcc";

/// A usable nvcc.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// The nvcc executable.
    pub nvcc: PathBuf,
    /// How it was found (`NVCC`, `CUDA_HOME`, `PATH`, `local toolchain`).
    pub found_by: &'static str,
    /// Extra include directories (the PyPI layout keeps CCCL under `include/cccl`).
    pub includes: Vec<PathBuf>,
    /// `release X.Y` from `nvcc --version`.
    pub version: String,
}

impl Toolchain {
    /// `cuobjdump` next to nvcc (the PyPI layout ships it in the same `bin/`), else on PATH.
    pub fn cuobjdump(&self) -> Option<PathBuf> {
        let local = self
            .nvcc
            .parent()
            .map(|d| d.join("cuobjdump"))
            .filter(|p| p.is_file());
        local.or_else(|| on_path("cuobjdump"))
    }

    /// The SASS of `cubin` (`cuobjdump --dump-sass`).
    pub fn sass(&self, cubin: &Path) -> Result<String, String> {
        let tool = self
            .cuobjdump()
            .ok_or_else(|| "no cuobjdump next to nvcc or on PATH".to_string())?;
        let out = Command::new(&tool)
            .arg("--dump-sass")
            .arg(cubin)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

fn is_file(p: &Path) -> bool {
    p.is_file()
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_file(p))
}

fn upwards(start: &Path, rel: &str) -> Option<PathBuf> {
    start.ancestors().map(|d| d.join(rel)).find(|p| is_file(p))
}

/// Finds nvcc, or says what was tried.
pub fn find() -> Result<Toolchain, String> {
    let mut tried = Vec::new();
    let mut candidates: Vec<(PathBuf, &'static str)> = Vec::new();
    if let Some(v) = std::env::var_os("NVCC").filter(|v| !v.is_empty()) {
        candidates.push((PathBuf::from(v), "NVCC"));
    }
    if let Some(v) = std::env::var_os("CUDA_HOME").filter(|v| !v.is_empty()) {
        candidates.push((PathBuf::from(v).join("bin/nvcc"), "CUDA_HOME"));
    }
    if let Some(p) = on_path("nvcc") {
        candidates.push((p, "PATH"));
    }
    if let Ok(cwd) = std::env::current_dir() {
        if let Some(p) = upwards(&cwd, LOCAL_NVCC) {
            candidates.push((p, "local toolchain"));
        }
    }
    if let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        if let Some(p) = upwards(&exe_dir, LOCAL_NVCC) {
            candidates.push((p, "local toolchain"));
        }
    }
    for (nvcc, found_by) in candidates {
        let explicit = found_by == "NVCC";
        match Command::new(&nvcc).arg("--version").output() {
            Ok(out) if out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Cuda compilation tools") => {
                let text = String::from_utf8_lossy(&out.stdout);
                let version = text
                    .lines()
                    .find_map(|l| l.split("release ").nth(1).map(|r| r.split(',').next().unwrap_or(r).trim().to_string()))
                    .unwrap_or_else(|| "unknown".to_string());
                let mut includes = Vec::new();
                if let Some(root) = nvcc.parent().and_then(Path::parent) {
                    let cccl = root.join("include/cccl");
                    if cccl.is_dir() {
                        includes.push(cccl);
                    }
                }
                return Ok(Toolchain { nvcc, found_by, includes, version });
            }
            _ if explicit => {
                return Err(format!(
                    "$NVCC is {}, which is not a working nvcc (`--version` does not answer as nvcc); unset it or point it at nvcc",
                    nvcc.display()
                ))
            }
            _ => tried.push(format!("{} ({found_by})", nvcc.display())),
        }
    }
    let tried = if tried.is_empty() {
        "nothing found".to_string()
    } else {
        format!("not runnable: {}", tried.join(", "))
    };
    Err(format!(
        "no nvcc: looked at $NVCC, $CUDA_HOME/bin/nvcc, PATH and {LOCAL_NVCC} ({tried}); run `scripts/setup` to install the CUDA compiler from PyPI into .toolchain/"
    ))
}

/// What ptxas reported for one kernel entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
    /// Bytes of stack frame (local memory).
    pub stack_bytes: u32,
    /// Bytes of static shared memory.
    pub smem_bytes: u32,
}

/// Parses `-Xptxas -v` output for the entry function `entry`.
pub fn parse_ptxas(stderr: &str, entry: &str) -> Option<PtxasReport> {
    let mut r = PtxasReport::default();
    let mut in_entry = false;
    let mut found = false;
    for line in stderr.lines() {
        if line.contains("Compiling entry function") || line.contains("Function properties for") {
            in_entry = line.contains(entry);
            found |= in_entry;
            continue;
        }
        if !in_entry {
            continue;
        }
        let num_before = |key: &str| -> Option<u32> {
            let i = line.find(key)?;
            line[..i].split_whitespace().last()?.parse().ok()
        };
        if line.contains("stack frame") {
            r.stack_bytes = num_before("bytes stack frame").unwrap_or(0);
            r.spill_stores = num_before("bytes spill stores").unwrap_or(0);
            r.spill_loads = num_before("bytes spill loads").unwrap_or(0);
        }
        if line.contains("Used") && line.contains("registers") {
            r.registers = num_before("registers").unwrap_or(0);
            r.smem_bytes = num_before("bytes smem").unwrap_or(0);
        }
    }
    found.then_some(r)
}

/// A failed nvcc run.
#[derive(Clone, Debug)]
pub struct CompileFailure {
    /// The command line, for the message.
    pub command: String,
    /// nvcc's stderr.
    pub stderr: String,
    /// Whether nvcc could not be started at all.
    pub not_started: bool,
}

/// Compiles `unit` (a `.cu` in `dir`) for `target` into `<stem>.<target>.cubin` next to it.
/// Returns the cubin path and the ptxas report of `entry`.
pub fn compile(
    tc: &Toolchain,
    dir: &Path,
    unit: &str,
    entry: &str,
    target: Target,
) -> Result<(PathBuf, PtxasReport), CompileFailure> {
    compile_with(tc, dir, unit, entry, target, &[])
}

/// [`compile`] with extra nvcc flags (`mpkc verify`'s test builds: `-DMPKC_BOUNDED_WAITS`,
/// fault-injection defines, `-lineinfo`).
pub fn compile_with(
    tc: &Toolchain,
    dir: &Path,
    unit: &str,
    entry: &str,
    target: Target,
    extra: &[String],
) -> Result<(PathBuf, PtxasReport), CompileFailure> {
    let cubin = crate::back::files::cubin_name(unit, target);
    // A failed compile must not leave an earlier cubin next to the new sources.
    let _ = std::fs::remove_file(dir.join(&cubin));
    let mut cmd = Command::new(&tc.nvcc);
    cmd.current_dir(dir)
        .arg("-std=c++17")
        .arg(format!("-gencode={}", target.gencode()))
        .arg("-cubin")
        .arg("-Xptxas")
        .arg("-v")
        .arg("-I.")
        .args(extra);
    for inc in &tc.includes {
        cmd.arg("-isystem").arg(inc);
    }
    cmd.arg("-o").arg(&cubin).arg(unit);
    let mut command = format!(
        "{} -std=c++17 -gencode={} -cubin -Xptxas -v -I.",
        tc.nvcc.display(),
        target.gencode()
    );
    for e in extra {
        command.push(' ');
        command.push_str(e);
    }
    command.push_str(&format!(" -o {cubin} {unit}"));
    let out = cmd.output().map_err(|e| CompileFailure {
        command: command.clone(),
        stderr: e.to_string(),
        not_started: true,
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(CompileFailure {
            command,
            stderr,
            not_started: false,
        });
    }
    if !dir.join(&cubin).is_file() {
        return Err(CompileFailure {
            command,
            stderr: format!("nvcc exited 0 but wrote no {cubin}\n{stderr}"),
            not_started: false,
        });
    }
    let report = parse_ptxas(&stderr, entry).unwrap_or_default();
    Ok((dir.join(cubin), report))
}

/// An nvcc error located in a file: `(file, line, message)`, from `file(line): error: message`.
pub fn error_locations(stderr: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for l in stderr.lines() {
        let Some(open) = l.find('(') else { continue };
        let Some(close) = l[open..].find("): ").map(|c| open + c) else {
            continue;
        };
        let Ok(line) = l[open + 1..close].parse::<usize>() else {
            continue;
        };
        let rest = &l[close + 3..];
        if rest.starts_with("error") {
            let msg = rest
                .split_once(": ")
                .map_or(rest, |(_, m)| m)
                .trim()
                .to_string();
            out.push((l[..open].to_string(), line, msg));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'mpkc_harness_rmsnorm_v2_h4096' for 'sm_100a'\n\
ptxas info    : Function properties for mpkc_harness_rmsnorm_v2_h4096\n\
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\
ptxas info    : Used 40 registers, used 1 barriers, 3264 bytes smem\n";

    #[test]
    fn parses_the_ptxas_report() {
        let r = parse_ptxas(SAMPLE, "mpkc_harness_rmsnorm_v2_h4096").unwrap();
        assert_eq!(
            r,
            PtxasReport {
                registers: 40,
                spill_stores: 4,
                spill_loads: 4,
                stack_bytes: 8,
                smem_bytes: 3264
            }
        );
        assert!(parse_ptxas(SAMPLE, "other").is_none());
    }

    #[test]
    fn finds_error_locations() {
        let e = "k.mpk(12): error: identifier \"foo\" is undefined\nk.mpk(3): warning: x\n";
        assert_eq!(
            error_locations(e),
            vec![(
                "k.mpk".to_string(),
                12,
                "identifier \"foo\" is undefined".to_string()
            )]
        );
    }
}
