//! `mpkc fmt [--check] FILE...`: rewrite contracts in the canonical layout (`crate::fmt`), or
//! with `--check` list the ones that are not (exit 1). `-` reads stdin and writes stdout (for
//! editors). A file with syntax errors is reported and left alone. With no file, `--check`
//! checks the embedded stdlib.

use super::exit;
use crate::diag::{render_human, ColorMode, SourceFile};
use crate::driver::Source;
use std::io::Read as _;
use std::path::PathBuf;

/// Diagnostics printed for a file that does not parse.
const MAX_SHOWN: usize = 10;

/// Runs `mpkc fmt`.
pub fn run(files: &[PathBuf], check: bool, color: ColorMode) -> u8 {
    if files.is_empty() && !check {
        errln!("error: name the files to format (or `-` for stdin); `mpkc fmt --check` alone checks the embedded stdlib");
        return exit::USAGE;
    }
    let sources: Vec<(Option<PathBuf>, Source)> = if files.is_empty() {
        crate::driver::stdlib::sources()
            .into_iter()
            .map(|s| (None, s))
            .collect()
    } else {
        let mut v = Vec::new();
        for f in files {
            let (path, text) = if f.as_os_str() == "-" {
                let mut t = String::new();
                if let Err(e) = std::io::stdin().read_to_string(&mut t) {
                    errln!("error: cannot read stdin: {e}");
                    return exit::USAGE;
                }
                ("<stdin>".to_string(), t)
            } else {
                match std::fs::read_to_string(f) {
                    Ok(t) => (f.to_string_lossy().replace('\\', "/"), t),
                    Err(e) => {
                        errln!("error: cannot read {}: {e}", f.display());
                        return exit::USAGE;
                    }
                }
            };
            v.push((Some(f.clone()), Source { path, text }));
        }
        v
    };
    let mut status = exit::OK;
    for (file, src) in &sources {
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
            if let Err(e) = std::fs::write(f, &formatted) {
                errln!("error: cannot write {}: {e}", f.display());
                return exit::USAGE;
            }
            outln!("formatted {}", src.path);
        }
    }
    status
}
