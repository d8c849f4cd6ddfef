//! `mpkc fmt [--check] FILE...`: rewrite contracts in the canonical layout (`crate::fmt`), or
//! with `--check` list the ones that are not (exit 1). The inputs are read as `check` reads
//! them ([`super::inputs`]): `-` once (stdin, formatted to stdout, for editors), a directory for
//! its own `*.mpk` files, a file that is not UTF-8 as an `E0001` diagnostic at its first invalid
//! byte. A file with syntax errors is reported and left alone. With no file, `--check` checks
//! the embedded stdlib. A file that cannot be written back exits 4 (docs/design.md,
//! "Conventions": the run needs a writable place for its output and the environment lacks it).

use super::{exit, inputs};
use crate::diag::{render_human, ColorMode, SourceFile};
use std::io::Write as _;
use std::path::Path;

/// Diagnostics printed for a file that does not parse.
const MAX_SHOWN: usize = 10;

/// Runs `mpkc fmt`.
pub fn run(files: &[std::path::PathBuf], check: bool, color: ColorMode) -> u8 {
    if files.is_empty() && !check {
        errln!("error: name the files to format (or `-` for stdin); `mpkc fmt --check` alone checks the embedded stdlib");
        return exit::USAGE;
    }
    let sources = match inputs::load_files(files) {
        Ok(s) => s,
        Err(e) => {
            errln!("error: {e}");
            return exit::USAGE;
        }
    };
    let mut status = exit::OK;
    for (file, loaded) in &sources {
        let src = match loaded {
            Ok(src) => src,
            Err(not_utf8) => {
                let shown = SourceFile::new(&not_utf8.source.path, &not_utf8.source.text);
                for d in &not_utf8.diags {
                    err!("{}", render_human(d, &shown, color));
                }
                errln!(
                    "error: {} is not UTF-8; not formatted",
                    not_utf8.source.path
                );
                status = exit::ERRORS;
                continue;
            }
        };
        if let Err(diags) = crate::front::parse_file(&src.text) {
            // A few are enough to say why; `mpkc check` lists them all.
            let file = SourceFile::new(&src.path, &src.text);
            for d in diags.iter().take(MAX_SHOWN) {
                err!("{}", render_human(d, &file, color));
            }
            if diags.len() > MAX_SHOWN {
                errln!(
                    "… and {} more (`mpkc check {}` lists them)",
                    diags.len() - MAX_SHOWN,
                    src.path
                );
            }
            let mut codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
            codes.dedup();
            errln!(
                "error: {} does not parse ({}); not formatted",
                src.path,
                codes.join(", ")
            );
            status = exit::ERRORS;
            continue;
        }
        let formatted = crate::fmt::format(&src.text);
        let stdin = file.as_ref().is_some_and(|f| f.as_os_str() == "-");
        if stdin && !check {
            out!("{formatted}");
            continue;
        }
        if formatted == src.text {
            continue;
        }
        if check {
            outln!(
                "{} is not formatted (run `mpkc fmt {}`)",
                src.path,
                src.path
            );
            status = exit::ERRORS;
        } else if let Some(f) = file {
            if let Err(e) = write_in_place(f, &formatted) {
                errln!("error: cannot write {}: {e}", f.display());
                return exit::ABSENT;
            }
            outln!("formatted {}", src.path);
        }
    }
    status
}

/// Replaces the contents of `path` with `text` all at once: written to a temporary file beside
/// it (with its permissions) and renamed over it, so that a failed write (no space, a file-size
/// limit) leaves the contract as it was rather than cut short. A symbolic link is followed.
fn write_in_place(path: &Path, text: &str) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".mpkc-fmt-")
        .tempfile_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.as_file()
        .set_permissions(std::fs::metadata(&target)?.permissions())?;
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}
