//! `mpkc classify` and `mpkc new`: an op description in, its family (and the rules' reasons) or a
//! starting contract out. Exit statuses as every command's: 1 when the description has errors
//! (or, for `new`, the contract it would write does not check), 2 when the file cannot be read,
//! 4 when the output cannot be written.

use super::args::MessageFormat;
use super::exit;
use super::report::print_diagnostics;
use crate::diag::{render_human, render_json, ColorMode, Diagnostic, SourceFile};
use crate::driver::{self, Checked, Source};
use std::path::Path;

/// The description's text and display name, or the exit status after reporting why not.
fn load(file: &Path, format: MessageFormat, color: ColorMode) -> Result<Source, u8> {
    let bytes = std::fs::read(file).map_err(|e| {
        errln!("error: cannot read {}: {e}", file.display());
        exit::USAGE
    })?;
    let name = file.to_string_lossy().replace('\\', "/");
    driver::input::decode(name, bytes).map_err(|checked| {
        print_diagnostics(&checked, format, color);
        exit::ERRORS
    })
}

fn stem(file: &Path) -> String {
    file.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn report(src: &Source, diags: &[Diagnostic], format: MessageFormat, color: ColorMode) {
    let file = SourceFile::new(&src.path, &src.text);
    for d in diags {
        let mut d = d.clone();
        d.widen_to_chars(&src.text);
        match format {
            MessageFormat::Human => err!("{}", render_human(&d, &file, color)),
            MessageFormat::Json => outln!("{}", render_json(&d, &file)),
        }
    }
}

/// `mpkc classify FILE.toml`.
pub fn classify(file: &Path, format: MessageFormat, color: ColorMode) -> u8 {
    let src = match load(file, format, color) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match crate::classify::classify_text(&src.text, &stem(file)) {
        Ok((d, c)) => {
            match format {
                MessageFormat::Human => out!("{}", crate::classify::report_text(&src.path, &d, &c)),
                MessageFormat::Json => {
                    outln!("{}", crate::classify::report_json(&src.path, &d, &c))
                }
            }
            exit::OK
        }
        Err(diags) => {
            report(&src, &diags, format, color);
            exit::ERRORS
        }
    }
}

/// `mpkc new FILE.toml [-o OUT.mpk]`: the starting contract is checked before it is written;
/// should it not check, its diagnostics are shown against its own text and nothing is written.
pub fn new(file: &Path, out: Option<&Path>, format: MessageFormat, color: ColorMode) -> u8 {
    let src = match load(file, format, color) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let text = match crate::classify::new_contract(&src.text, &stem(file)) {
        Ok(t) => t,
        Err(diags) => {
            report(&src, &diags, format, color);
            return exit::ERRORS;
        }
    };
    let shown = out
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_else(|| "<new contract>".to_string());
    let checked: Checked = driver::check_source(
        &Source {
            path: shown,
            text: text.clone(),
        },
        &Default::default(),
        &Default::default(),
    );
    if checked.has_errors() {
        print_diagnostics(&checked, format, color);
        errln!("error: the starting contract for {} does not check (the diagnostics above are in the contract written from it: an extent past what a task takes, else a bug of `mpkc new`); nothing was written", src.path);
        return exit::ERRORS;
    }
    match out {
        None => {
            out!("{text}");
            exit::OK
        }
        Some(p) => match write_whole(p, &text) {
            Ok(()) => {
                if format == MessageFormat::Human {
                    errln!("wrote {} (family {})", p.display(), family_of(&text));
                }
                exit::OK
            }
            Err(e) => {
                errln!("error: cannot write {}: {e}", p.display());
                exit::ABSENT
            }
        },
    }
}

/// Writes `text` to `path` all at once: to a temporary file beside it, then renamed over it, so
/// that a failed write leaves an existing file as it was (docs/design.md: exit 4).
fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".mpkc-new-")
        .tempfile_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    // An existing file keeps its permissions; a new one gets a source file's (rw-r--r--), not
    // the temporary file's owner-only mode.
    match std::fs::metadata(path) {
        Ok(m) => tmp.as_file().set_permissions(m.permissions())?,
        Err(_) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                tmp.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(0o644))?;
            }
        }
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The family a generated contract declares (its `family` line).
fn family_of(text: &str) -> &str {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("family "))
        .unwrap_or("?")
}
