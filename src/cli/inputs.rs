//! The inputs of `check`, `plan`, `build`, `verify` and `fmt`: files, `-` for stdin, directories (their
//! own `*.mpk` files, sorted by name, not their subdirectories'), or the embedded stdlib when
//! none is given; a stdlib path (`stdlib/dsv3/rope.mpk`) not on disk names the embedded
//! contract. A file that is not UTF-8 becomes a diagnostic of that file
//! ([`driver::input::decode`]); a file or directory that cannot be read is a usage error.

use crate::driver::{self, Checked, Source};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The display name of standard input.
pub const STDIN_NAME: &str = "<stdin>";

/// One input: its contract, or (not UTF-8) its finished check.
pub type Loaded = Result<Source, Box<Checked>>;

fn display(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// The `*.mpk` files directly in `dir`, sorted by name.
fn contracts_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read directory {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for e in entries {
        let p = e
            .map_err(|e| format!("cannot read directory {}: {e}", dir.display()))?
            .path();
        if p.extension().is_some_and(|x| x == "mpk") && p.is_file() {
            files.push(p);
        }
    }
    if files.is_empty() {
        return Err(format!(
            "directory {} holds no `.mpk` file (mpkc reads a directory's own `*.mpk` files, not its subdirectories')",
            dir.display()
        ));
    }
    files.sort();
    Ok(files)
}

/// The most bytes one input may hold (16 MiB): a contract is a text of a few kilobytes, and
/// an input without an end (`/dev/zero`, `yes | mpkc check -`) is refused once past it instead
/// of being read until memory runs out.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// All of `r`, or the usage error for an input past [`MAX_INPUT_BYTES`].
fn read_capped(r: impl std::io::Read, name: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    r.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(format!(
            "{name} is larger than {} MiB: a contract is a text of a few kilobytes",
            MAX_INPUT_BYTES >> 20
        ));
    }
    Ok(bytes)
}

fn read(path: &Path) -> Result<Loaded, String> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {name}: {e}"))?;
    let bytes = read_capped(file, &name)?;
    Ok(driver::input::decode(display(path), bytes))
}

/// Reads the inputs named on the command line, in order (a directory's files in its place), or
/// the embedded stdlib when `files` is empty; a file named twice (directly or through its
/// directory) is read once, in its first place. `Err` is a usage error's message: an input that
/// cannot be read, a directory without contracts, `-` given twice.
pub fn load(files: &[PathBuf]) -> Result<Vec<Loaded>, String> {
    Ok(load_files(files)?.into_iter().map(|(_, l)| l).collect())
}

/// [`load`], each input with the file it came from (`-` for stdin, `None` for the stdlib):
/// what `fmt` writes back to.
pub fn load_files(files: &[PathBuf]) -> Result<Vec<(Option<PathBuf>, Loaded)>, String> {
    if files.is_empty() {
        return Ok(driver::stdlib::sources()
            .into_iter()
            .map(|s| (None, Ok(s)))
            .collect());
    }
    let mut out = Vec::new();
    let mut stdin_read = false;
    // A file named twice (`a.mpk a.mpk`, or `dir dir/a.mpk`) is read once, where it first
    // appears: checked twice, each of its units would clash with itself (E0012).
    let mut seen = std::collections::BTreeSet::new();
    let mut first =
        |p: &Path| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()));
    for f in files {
        if f.as_os_str() == "-" {
            if stdin_read {
                return Err("`-` (standard input) is given twice: it can be read once".into());
            }
            stdin_read = true;
            let bytes = read_capped(std::io::stdin().lock(), "standard input")?;
            out.push((
                Some(f.clone()),
                driver::input::decode(STDIN_NAME.to_string(), bytes),
            ));
        } else if f.is_dir() {
            for p in contracts_in(f)? {
                if first(&p) {
                    let l = read(&p)?;
                    out.push((Some(p), l));
                }
            }
        } else if let Some(s) = (!f.exists()).then(|| driver::stdlib::embedded(f)).flatten() {
            // An embedded stdlib contract by its stdlib path, from any directory (what `fmt`
            // would write back to is not on disk: none).
            if first(Path::new(&s.path)) {
                out.push((None, Ok(s)));
            }
        } else if first(f) {
            out.push((Some(f.clone()), read(f)?));
        }
    }
    Ok(out)
}

/// `checked` (the check of `loaded`'s contracts, in order, then the derived contracts) with the
/// inputs that were not UTF-8 put back in their place.
pub fn merge(loaded: Vec<Loaded>, checked: Vec<Checked>) -> Vec<Checked> {
    let mut checked = checked.into_iter();
    let mut out = Vec::new();
    for l in loaded {
        match l {
            Ok(_) => out.extend(checked.next()),
            Err(c) => out.push(*c),
        }
    }
    out.extend(checked);
    out
}
