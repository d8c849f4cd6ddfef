//! Finding nvcc and compiling generated translation units with it, with the `-Xptxas -v` report
//! parsed (registers, spills, stack, SMEM) and nvcc's errors mapped back to the contract.
//!
//! Search order (docs/design.md, `driver/`): `$NVCC`, `$CUDA_HOME/bin/nvcc`, `nvcc` on `PATH`, then
//! the project's local toolchain `.toolchain/cuda/nvidia/cu13/bin/nvcc` (installed from PyPI by
//! `scripts/setup`), looked up from the current directory upwards and from the executable's
//! directory upwards.
//!
//! Every compile runs the command the `cc` crate configures for that nvcc (`cuda(true)`, see
//! [`super::cc_nvcc`]) with mpkc's arguments appended.
//!
//! `$MPKC_NVCC_WRAPPER` (a program name on `PATH` or a path, e.g. `sccache`) runs every compile
//! as `<wrapper> <nvcc> <arguments>`; `nvcc --version` is always asked of nvcc itself.
//!
//! Determinism: ptxas 13.5 for sm_100a is not deterministic under address-space layout
//! randomization: the same PTX assembles into one of two cubins that differ only in the uniform
//! registers chosen for the tcgen05 MMA descriptors (`UTCHMMA gdesc[UR36], gdesc[UR38]` or
//! `gdesc[UR38], gdesc[UR36]`, and the `R2UR`/`UIADD3.64` that fill them; about 3 runs in 10 give
//! the other one), in `.text` and `.nv.capmerc.text`. The PTX from cicc is identical every time,
//! and ptxas run without randomization gives the same cubin every time. So on Linux nvcc runs
//! with `ADDR_NO_RANDOMIZE` (personality(2)), which its children (cicc, ptxas) inherit. Through a
//! wrapper whose server runs the compile (sccache), the server's own layout applies.

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
    /// The whole `nvcc --version` output (part of the build cache's key).
    pub version_text: String,
    /// The program every compile runs through (`$MPKC_NVCC_WRAPPER`), if any.
    pub wrapper: Option<PathBuf>,
    /// `cc`'s configured compiler for `nvcc` ([`super::cc_nvcc::configured`]).
    pub cc: cc::Tool,
}

impl Toolchain {
    /// The arguments `cc` puts before mpkc's (e.g. `$CXXFLAGS` through `-Xcompiler`).
    pub fn cc_arguments(&self) -> Vec<String> {
        super::cc_nvcc::arguments(&self.cc)
    }

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

/// The environment variable naming a compiler wrapper (e.g. `sccache`) for every nvcc compile.
pub const WRAPPER_ENV: &str = "MPKC_NVCC_WRAPPER";

/// `$MPKC_NVCC_WRAPPER` resolved to a file: a value with a `/` is a path, else a name on `PATH`.
fn wrapper() -> Result<Option<PathBuf>, String> {
    let Some(v) = std::env::var_os(WRAPPER_ENV).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let p = PathBuf::from(&v);
    let found = if p.components().count() > 1 {
        Some(p.clone()).filter(|p| is_file(p))
    } else {
        on_path(&v.to_string_lossy())
    };
    found.map(Some).ok_or_else(|| {
        format!(
            "${WRAPPER_ENV} is {}, which is neither a file nor a program on PATH; unset it or install the wrapper (scripts/setup installs sccache into .toolchain/sccache/bin)",
            p.display()
        )
    })
}

/// Finds nvcc (and the wrapper of `$MPKC_NVCC_WRAPPER`), or says what was tried.
pub fn find() -> Result<Toolchain, String> {
    let wrapper = wrapper()?;
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
                // Through a symlink to the PyPI layout, CCCL is beside the real nvcc.
                let real = nvcc.canonicalize().unwrap_or_else(|_| nvcc.clone());
                if let Some(root) = real.parent().and_then(Path::parent) {
                    let cccl = root.join("include/cccl");
                    if cccl.is_dir() {
                        includes.push(cccl);
                    }
                }
                let cc = super::cc_nvcc::configured(&nvcc)?;
                return Ok(Toolchain {
                    cc,
                    nvcc,
                    found_by,
                    includes,
                    version,
                    version_text: text.into_owned(),
                    wrapper,
                });
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
    /// ptxas's "Potential Performance Loss" advisories for the unit (e.g. C7510 / C7519: wgmma
    /// serialised), each the text after `ptxas info    : `, in ptxas's order.
    pub advisories: Vec<String>,
}

/// Parses `-Xptxas -v` output for the entry function `entry`.
pub fn parse_ptxas(stderr: &str, entry: &str) -> Option<PtxasReport> {
    let mut r = PtxasReport::default();
    let mut in_entry = false;
    let mut found = false;
    for line in stderr.lines() {
        if line.contains("Potential Performance Loss") {
            let text = line.split_once("ptxas info").map_or(line, |(_, t)| t);
            let text = text.trim_start_matches([' ', ':']).trim_end();
            r.advisories.push(text.to_string());
            continue;
        }
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

/// The cubin nvcc writes for `unit` (`<stem>.cu`) and `target`: `<stem>.<target>.cubin`.
pub fn cubin_name(unit: &str, target: Target) -> String {
    crate::back::files::cubin_name(unit, target)
}

/// The arguments of nvcc (without the program) that compile `unit` for `target` into
/// [`cubin_name`], relative to the build directory, with `extra` flags after mpkc's own.
pub fn arguments(tc: &Toolchain, unit: &str, target: Target, extra: &[String]) -> Vec<String> {
    let mut a = vec![
        "-std=c++17".to_string(),
        format!("-gencode={}", target.gencode()),
        "-cubin".to_string(),
        "-Xptxas".to_string(),
        "-v".to_string(),
        "-I.".to_string(),
    ];
    a.extend(extra.iter().cloned());
    for inc in &tc.includes {
        a.push("-isystem".to_string());
        a.push(inc.to_string_lossy().into_owned());
    }
    a.push("-o".to_string());
    a.push(cubin_name(unit, target));
    a.push(unit.to_string());
    a
}

/// A successful nvcc run: the cubin it wrote and its stderr (the `-Xptxas -v` report).
#[derive(Clone, Debug)]
pub struct NvccOutput {
    /// The cubin, in the build directory.
    pub cubin: PathBuf,
    /// nvcc's stderr.
    pub stderr: String,
}

/// Runs `cc`'s nvcc command (through the wrapper, if any) in `dir` with `args` (from
/// [`arguments`]) after `cc`'s own, which
/// write `cubin` (a file name in `dir`). An earlier `cubin` is removed first, so a failed
/// compile leaves none. Errors: nvcc could not start, exited non-zero, wrote no cubin, or
/// wrote an sm_90a cubin whose SASS holds a form that faults on the GPU
/// ([`super::sass_lint`]; checked where cuobjdump is found).
pub fn run(
    tc: &Toolchain,
    dir: &Path,
    args: &[String],
    cubin: &str,
) -> Result<NvccOutput, CompileFailure> {
    let _ = std::fs::remove_file(dir.join(cubin));
    let (mut cmd, mut shown) = super::cc_nvcc::command(&tc.cc, tc.wrapper.as_deref());
    shown.extend(args.iter().cloned());
    let command = shown.join(" ");
    cmd.current_dir(dir).args(args);
    without_aslr(&mut cmd);
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
    if !dir.join(cubin).is_file() {
        return Err(CompileFailure {
            command,
            stderr: format!("nvcc exited 0 but wrote no {cubin}\n{stderr}"),
            not_started: false,
        });
    }
    // ptxas's output, checked for forms that fault on the GPU (super::sass_lint, whose rules
    // are sm_90's: other targets' cubins are not read); without cuobjdump (scripts/setup
    // installs it next to nvcc) there is nothing to read.
    let sm90 = cubin.ends_with(&format!(".{}.cubin", Target::Sm90a));
    if let Some(sass) = sm90.then(|| tc.sass(&dir.join(cubin)).ok()).flatten() {
        let findings = super::sass_lint::check(&sass);
        if !findings.is_empty() {
            let _ = std::fs::remove_file(dir.join(cubin));
            return Err(CompileFailure {
                command,
                stderr: super::sass_lint::message(cubin, &findings),
                not_started: false,
            });
        }
    }
    Ok(NvccOutput {
        cubin: dir.join(cubin),
        stderr,
    })
}

/// Makes `cmd` (and the processes it starts) run without address-space layout randomization,
/// for ptxas's sake (see the module documentation). Where personality(2) is refused, nothing
/// changes.
#[cfg(target_os = "linux")]
fn without_aslr(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and only makes two
    // personality(2) system calls, which are async-signal-safe and touch no shared state.
    unsafe {
        cmd.pre_exec(|| {
            let current = libc::personality(0xffff_ffff);
            if current != -1 {
                libc::personality(
                    current as libc::c_ulong | libc::ADDR_NO_RANDOMIZE as libc::c_ulong,
                );
            }
            Ok(())
        });
    }
}

/// Elsewhere nvcc runs as it is.
#[cfg(not(target_os = "linux"))]
fn without_aslr(_: &mut Command) {}

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
    let args = arguments(tc, unit, target, extra);
    let out = run(tc, dir, &args, &cubin_name(unit, target))?;
    let report = parse_ptxas(&out.stderr, entry).unwrap_or_default();
    Ok((out.cubin, report))
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
                smem_bytes: 3264,
                advisories: Vec::new(),
            }
        );
        assert!(parse_ptxas(SAMPLE, "other").is_none());
        let adv = format!("{SAMPLE}ptxas info    : (C7519) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.AR in divergent path in the function 'mpkc_harness_rmsnorm_v2_h4096'\n");
        let r = parse_ptxas(&adv, "mpkc_harness_rmsnorm_v2_h4096").unwrap();
        assert_eq!(r.registers, 40);
        assert_eq!(r.advisories.len(), 1);
        assert!(
            r.advisories[0].starts_with("(C7519) Potential Performance Loss"),
            "{:?}",
            r.advisories
        );
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
