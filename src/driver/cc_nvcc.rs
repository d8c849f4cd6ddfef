//! nvcc as the `cc` crate configures it: `cc::Build::cuda(true)` gives the command every compile
//! of mpkc runs (`mpkc build`, `verify`, `bench`, and [`crate::build::Builder`] in build scripts).
//!
//! `cc` compiles sources to objects and archives them. `compile_intermediates` with
//! `.flag("-cubin")` would make nvcc write cubins (nvcc lets `-cubin` override `cc`'s `-c`), but
//! under `cc`'s own names (`<hash>-<stem>.o`), and `cc` forwards nvcc's stderr as
//! `cargo:warning` lines instead of returning it: the `-Xptxas -v` report and nvcc's errors would
//! be lost, and the build cache, `$MPKC_NVCC_WRAPPER` and the compile without ASLR have no place
//! there. So mpkc takes `cc`'s configured compiler ([`cc::Build::try_get_compiler`], then
//! [`cc::Tool::to_command`]: the nvcc program, `cc`'s arguments and environment) and appends its
//! own arguments (`-gencode`, `-cubin`, `-Xptxas -v`, `-o`). `cc` reads nvcc from `$NVCC`; mpkc gives it the nvcc of its own search order
//! (`nvcc::find`) through the `Build`'s environment. `cc`'s default flags (`-m64`, `-fPIC`,
//! optimisation and debug levels) and rustc's inherited flags are off: they are host-compiler
//! flags for objects mpkc does not build. `cc` always sets a host warning level (`-Wall` unless
//! told otherwise); mpkc asks for `-Xcompiler -w`, keeping host-compiler noise out of the ptxas
//! report it parses. What `cc` still adds is what a user asks of it: flags in `$CXXFLAGS` (`NVCC_CXXFLAGS`, `CXXFLAGS_<target>`, ...), passed to the host compiler through
//! `-Xcompiler`. They are part of the build cache's key (`fingerprint::key`). `cc` would also run
//! nvcc through `$RUSTC_WRAPPER` when that is sccache; mpkc hides it from `cc`, so that the only
//! wrapper is `$MPKC_NVCC_WRAPPER`, as before (an sccache older than 0.19 misreads nvcc 13.3+).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// The triple mpkc was built for: `cc`'s target and host, since device code does not depend on
/// them and outside a build script there is no `$TARGET`.
pub const HOST_TARGET: &str = env!("MPKC_HOST_TARGET");

/// `cc`'s nvcc for `nvcc` (a path): `cuda(true)`, no default or inherited flags, the host
/// compiler left to nvcc (`ccbin(false)`), no `cargo:` output. Errors: `cc`'s message (e.g. a
/// malformed `$CXXFLAGS`), or no temporary folder for its compiler detection.
pub fn configured(nvcc: &Path) -> Result<cc::Tool, String> {
    // cc probes the host compiler's family with a small file in its out_dir: a scratch folder,
    // never the build directory.
    let scratch = tempfile::tempdir().map_err(|e| format!("no temporary folder for cc: {e}"))?;
    let vars = std::env::vars_os()
        .filter(|(k, _)| k != "NVCC" && k != "RUSTC_WRAPPER")
        .chain(std::iter::once((
            OsString::from("NVCC"),
            nvcc.as_os_str().to_owned(),
        )));
    let mut b = cc::Build::new();
    b.set_envs_snapshot(vars)
        .cuda(true)
        .cudart("none")
        .ccbin(false)
        .no_default_flags(true)
        .inherit_rustflags(false)
        .inherit_trim_paths(false)
        .warnings(false)
        .extra_warnings(false)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .emit_rerun_if_env_changed(false)
        .target(HOST_TARGET)
        .host(HOST_TARGET)
        .opt_level(3)
        .debug(false)
        .out_dir(scratch.path());
    b.try_get_compiler()
        .map_err(|e| format!("cc could not configure nvcc: {e}"))
}

/// `cc`'s arguments of `tool` (before mpkc's), as text.
pub fn arguments(tool: &cc::Tool) -> Vec<String> {
    tool.args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// The command of `tool` ([`cc::Tool::to_command`]), or, with a `wrapper`
/// (`$MPKC_NVCC_WRAPPER`), `<wrapper> <nvcc> <cc's arguments>` with `cc`'s environment. Returns
/// the command and its text (program and arguments so far) for messages.
pub fn command(tool: &cc::Tool, wrapper: Option<&Path>) -> (Command, Vec<String>) {
    let mut shown = Vec::new();
    let cmd = match wrapper {
        Some(w) => {
            let mut c = Command::new(w);
            c.arg(tool.path()).args(tool.args());
            for (k, v) in tool.get_envs() {
                c.env(k, v);
            }
            shown.push(w.to_string_lossy().into_owned());
            c
        }
        None => tool.to_command(),
    };
    shown.push(cmd.get_program().to_string_lossy().into_owned());
    shown.dedup();
    shown.extend(
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
    );
    (cmd, shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cc_runs_the_given_nvcc_without_host_flags() {
        let tool = configured(Path::new("/opt/cuda/bin/nvcc")).expect("cc configures nvcc");
        assert_eq!(tool.path(), Path::new("/opt/cuda/bin/nvcc"));
        let args = arguments(&tool);
        for host_only in ["-m64", "-fPIC", "-O3", "-G", "-ccbin", "-Wall"] {
            assert!(
                !args.iter().any(|a| a.contains(host_only)),
                "{host_only} in {args:?}"
            );
        }
        let (cmd, shown) = command(&tool, Some(Path::new("/usr/bin/sccache")));
        assert_eq!(cmd.get_program(), "/usr/bin/sccache");
        assert_eq!(shown[..2], ["/usr/bin/sccache", "/opt/cuda/bin/nvcc"]);
    }
}
