//! Atomic build output (README, "Build output"): a build writes every file into a staging folder
//! beside `--out` (`.<name>.mpkc-staging` in the same parent, so the final rename stays on one
//! file system) and, when every file is written, puts the staging folder in the place of
//! `--out` whole. A failed write names the file and leaves `--out` as it was (the staging folder
//! is removed).
//!
//! The staging folder has a fixed name, so nvcc sees the same paths from build to build (a
//! compiler cache such as sccache keys on them); builds of the same `--out` take turns through
//! an advisory lock on `.<name>.mpkc-lock` beside it (released when the process ends, however it
//! ends). A staging folder left by a build that was killed is removed by the next one.
//!
//! The output folder is mpkc's: it holds [`STAMP`], and each build replaces all of it, so files
//! of a previous build that this build does not write (a renamed task, a dropped target) are
//! gone afterwards, and so is anything else put into it (but a contract the build reads: the build
//! is refused, [`refuse_inputs`]). A folder that exists, is not empty and
//! has no stamp is refused rather than replaced. On Linux the swap is one `renameat2`
//! `RENAME_EXCHANGE` (a reader sees the old set or the new one, never neither); where the file
//! system does not support it, the old folder is renamed aside first (a moment without
//! `--out`), and put back if the second rename fails.

use std::io;
use std::path::{Path, PathBuf};

/// The file that marks a folder as written by `mpkc build`.
pub const STAMP: &str = ".mpkc-build";

/// The stamp's contents (fixed: outputs are byte-identical from build to build).
const STAMP_TEXT: &str =
    "This folder is written by `mpkc build` and replaced whole by each build.\n";

/// An output problem, naming the file or folder concerned.
#[derive(Debug, thiserror::Error)]
pub enum OutError {
    /// `--out` is something other than a folder.
    #[error("--out {0} exists and is not a folder")]
    NotAFolder(PathBuf),
    /// `--out` is a non-empty folder that `mpkc build` did not write.
    #[error("--out {0} is a folder that `mpkc build` did not write (it is not empty and has no {STAMP}); a build replaces its --out whole, so name a new or empty folder, or remove this one")]
    NotOurs(PathBuf),
    /// `--out` holds a file the build reads (a contract in the folder an earlier build wrote):
    /// replacing the folder would delete it.
    #[error("--out {out} holds {input}, an input of this build; a build replaces its --out whole, which would delete it: name another folder, or move the input out")]
    HoldsInput {
        /// `--out`.
        out: PathBuf,
        /// The input inside it.
        input: PathBuf,
    },
    /// The staging folder could not be made.
    #[error("cannot create a staging folder in {folder}: {source}")]
    Staging {
        /// Where.
        folder: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {file} (staged as {staged}): {source}; {out} is unchanged")]
    Write {
        /// The file in `--out`.
        file: PathBuf,
        /// Where it was being written.
        staged: PathBuf,
        /// `--out`.
        out: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The staging folder could not take the place of `--out`.
    #[error(
        "cannot move the new build {staged} into place as {out}: {source}; {out} is unchanged"
    )]
    Swap {
        /// The staging folder.
        staged: PathBuf,
        /// `--out`.
        out: PathBuf,
        /// Why.
        source: io::Error,
    },
}

impl OutError {
    /// Whether the command line is at fault (`--out` names something a build may not replace:
    /// exit 2) rather than the environment (a folder or file that cannot be created, written or
    /// renamed: no permission, no space, a file-size limit; exit 4, docs/design.md "Conventions").
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            OutError::NotAFolder(_) | OutError::NotOurs(_) | OutError::HoldsInput { .. }
        )
    }
}

/// Refuses an `out` that holds one of `inputs` (the contracts the build read): the build replaces
/// `out` whole and would delete them. An `out` that does not exist yet holds nothing; an input
/// that is not a file (the embedded stdlib's display paths) is skipped.
///
/// # Errors
///
/// [`OutError::HoldsInput`] naming the first such input.
pub fn refuse_inputs<'a>(
    out: &Path,
    inputs: impl IntoIterator<Item = &'a Path>,
) -> Result<(), OutError> {
    let Ok(folder) = out.canonicalize() else {
        return Ok(());
    };
    for input in inputs {
        if input
            .canonicalize()
            .is_ok_and(|real| real.starts_with(&folder))
        {
            return Err(OutError::HoldsInput {
                out: out.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// A build's staging folder for `--out`, and the lock that keeps other builds of the same
/// `--out` waiting. Dropped without [`Staging::commit`], it removes the staging folder.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    out: PathBuf,
    _lock: std::fs::File,
    committed: bool,
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `<parent>/.<name>.<suffix>`.
fn beside(out: &Path, suffix: &str) -> PathBuf {
    let name = out
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy());
    out.with_file_name(format!(".{name}.{suffix}"))
}

/// Takes the exclusive lock on `file`, calling `waiting` first if another process holds it.
#[cfg(unix)]
fn lock(file: &std::fs::File, waiting: impl FnOnce()) -> io::Result<()> {
    use rustix::fs::{flock, FlockOperation};
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
            waiting();
            flock(file, FlockOperation::LockExclusive).map_err(io::Error::from)
        }
        Err(e) => Err(io::Error::from(e)),
    }
}

/// No advisory locks elsewhere: builds of the same `--out` must not overlap.
#[cfg(not(unix))]
fn lock(_: &std::fs::File, _: impl FnOnce()) -> io::Result<()> {
    Ok(())
}

/// Whether `out` may be replaced: absent, an empty folder, or a folder with the stamp.
fn check_replaceable(out: &Path) -> Result<(), OutError> {
    match std::fs::metadata(out) {
        Err(_) => Ok(()),
        Ok(m) if !m.is_dir() => Err(OutError::NotAFolder(out.to_path_buf())),
        Ok(_) => {
            let empty = std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_none());
            if empty || out.join(STAMP).is_file() {
                Ok(())
            } else {
                Err(OutError::NotOurs(out.to_path_buf()))
            }
        }
    }
}

impl Staging {
    /// Makes the staging folder for `out` (the folder itself when it is a symlink to one) and
    /// writes the stamp into it, after taking the lock of `out` (`waiting` is called when
    /// another build holds it). Refuses an `out` that may not be replaced.
    pub fn create(out: &Path, waiting: impl FnOnce()) -> Result<Staging, OutError> {
        let out = if std::fs::symlink_metadata(out).is_ok_and(|m| m.file_type().is_symlink()) {
            out.canonicalize().unwrap_or_else(|_| out.to_path_buf())
        } else {
            out.to_path_buf()
        };
        check_replaceable(&out)?;
        // `.` or `..` have no name to rename; their real path has.
        let out = match out.file_name() {
            Some(_) => out,
            None => out.canonicalize().map_err(|source| OutError::Staging {
                folder: out.clone(),
                source,
            })?,
        };
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let out = parent.join(out.file_name().unwrap_or_default());
        let dir = beside(&out, "mpkc-staging");
        let staging_error = |source| OutError::Staging {
            folder: parent.clone(),
            source,
        };
        std::fs::create_dir_all(&parent).map_err(staging_error)?;
        let lock_file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(beside(&out, "mpkc-lock"))
            .map_err(staging_error)?;
        lock(&lock_file, waiting).map_err(staging_error)?;
        if std::fs::symlink_metadata(&dir).is_ok() {
            std::fs::remove_dir_all(&dir)
                .or_else(|_| std::fs::remove_file(&dir))
                .map_err(staging_error)?;
        }
        std::fs::create_dir(&dir).map_err(staging_error)?;
        let s = Staging {
            dir,
            out,
            _lock: lock_file,
            committed: false,
        };
        s.write(STAMP, STAMP_TEXT.as_bytes())?;
        Ok(s)
    }

    /// The staging folder (where nvcc runs).
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The final `--out`.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// Writes `name` into the staging folder; the error names the file as it would be in
    /// `--out` and where it was staged.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), OutError> {
        let staged = self.dir.join(name);
        std::fs::write(&staged, bytes).map_err(|source| OutError::Write {
            file: self.out.join(name),
            staged,
            out: self.out.clone(),
            source,
        })
    }

    /// Puts the staging folder in the place of `--out` and removes the previous build. Returns
    /// a warning when the previous build could not be removed (the new one is in place).
    pub fn commit(mut self) -> Result<Option<String>, OutError> {
        let staged = self.dir.clone();
        let out = self.out.clone();
        let fail = |source: io::Error| OutError::Swap {
            staged: staged.clone(),
            out: out.clone(),
            source,
        };
        // Checked again: the folder may have changed while nvcc ran.
        check_replaceable(&out)?;
        if std::fs::symlink_metadata(&out).is_err() {
            std::fs::rename(&staged, &out).map_err(fail)?;
            self.committed = true;
            return Ok(None);
        }
        // `staged` holds the previous build after the swap.
        let old = match exchange(&staged, &out) {
            Ok(()) => staged.clone(),
            Err(_) => {
                let aside = beside(&out, "mpkc-old");
                let _ = std::fs::remove_dir_all(&aside);
                std::fs::rename(&out, &aside).map_err(fail)?;
                if let Err(e) = std::fs::rename(&staged, &out) {
                    let _ = std::fs::rename(&aside, &out);
                    return Err(fail(e));
                }
                aside
            }
        };
        self.committed = true;
        Ok(std::fs::remove_dir_all(&old).err().map(|e| {
            format!(
                "the previous build, moved to {}, could not be removed: {e}",
                old.display()
            )
        }))
    }
}

/// Swaps two paths atomically (Linux `renameat2(RENAME_EXCHANGE)`).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(io::Error::from)
}

/// No atomic swap elsewhere: the caller renames aside.
#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no atomic exchange",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn tree(d: &Path) -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_a_previous_build_whole_and_leaves_nothing_beside_it() {
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("out");
        let s = Staging::create(&out, || {}).unwrap();
        s.write("a.cu", b"1").unwrap();
        s.write("stale.cu", b"old").unwrap();
        assert_eq!(s.commit().unwrap(), None);
        let s = Staging::create(&out, || {}).unwrap();
        s.write("a.cu", b"2").unwrap();
        assert_eq!(s.commit().unwrap(), None);
        assert_eq!(
            tree(&out),
            vec![
                (STAMP.to_string(), STAMP_TEXT.as_bytes().to_vec()),
                ("a.cu".to_string(), b"2".to_vec())
            ]
        );
        assert_eq!(
            names(parent.path()),
            vec![".out.mpkc-lock".to_string(), "out".to_string()]
        );
    }

    #[test]
    fn refuses_a_folder_it_did_not_write_and_a_file() {
        let parent = tempfile::tempdir().unwrap();
        let mine = parent.path().join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::write(mine.join("notes.txt"), "keep").unwrap();
        assert!(matches!(
            Staging::create(&mine, || {}),
            Err(OutError::NotOurs(_))
        ));
        let file = parent.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(
            Staging::create(&file, || {}),
            Err(OutError::NotAFolder(_))
        ));
        // An empty folder is taken.
        let empty = parent.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        Staging::create(&empty, || {}).unwrap().commit().unwrap();
        assert!(empty.join(STAMP).is_file());
    }

    #[test]
    fn an_abandoned_staging_folder_is_removed() {
        let parent = tempfile::tempdir().unwrap();
        let s = Staging::create(&parent.path().join("out"), || {}).unwrap();
        s.write("a.cu", b"1").unwrap();
        drop(s);
        assert_eq!(names(parent.path()), vec![".out.mpkc-lock".to_string()]);
        // A staging folder left by a killed build is replaced.
        std::fs::create_dir(parent.path().join(".out.mpkc-staging")).unwrap();
        std::fs::write(parent.path().join(".out.mpkc-staging/junk"), "x").unwrap();
        let s = Staging::create(&parent.path().join("out"), || {}).unwrap();
        assert_eq!(names(s.path()), vec![STAMP.to_string()]);
    }
}
