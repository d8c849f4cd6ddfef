//! `mpkc wire`: inserts the registration pieces of contract doc §6.1 for checked units into an
//! MPK source tree, additively (lines are only added, never changed or removed) and idempotently
//! (a piece already present is left alone, so a second run changes nothing). Levers stay
//! compile-time defines defaulting off: wire defines none. docs/wire.md lists the pieces and
//! their anchors.
//!
//! The pieces are computed for every unit against the files as earlier units left them, all in
//! memory; nothing is written when any unit reports an error.

pub mod anchors;
pub mod facts;
pub mod pieces;

pub use facts::UnitFacts;

use crate::diag::{codes, Diagnostic};
use anchors::{lines, Position};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What happened to one piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Inserted by this run.
    Added,
    /// Already in the file: left alone.
    Present,
}

/// One piece of one unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PieceReport {
    /// The piece (`enum`, `declaration`, `include`, `definition`, `graph`, `task_offset`,
    /// `name`, `layer`).
    pub piece: &'static str,
    /// The file, relative to the tree.
    pub file: &'static str,
    /// Added or already present.
    pub status: Status,
}

/// The pieces of one unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitReport {
    /// The unit.
    pub unit: String,
    /// Its pieces, in §6.1 order.
    pub pieces: Vec<PieceReport>,
}

/// A file the wiring changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// Relative to the tree.
    pub file: &'static str,
    /// The text before.
    pub before: String,
    /// The text after.
    pub after: String,
}

impl FileChange {
    /// The unified diff (three lines of context), headed `a/<file>` and `b/<file>`.
    pub fn unified_diff(&self) -> String {
        similar::TextDiff::from_lines(&self.before, &self.after)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{}", self.file), &format!("b/{}", self.file))
            .to_string()
    }
}

/// The result of planning the wiring of some units into a tree.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// One report per unit that wired cleanly, in order.
    pub units: Vec<UnitReport>,
    /// Errors, each with the index of the unit (in the slice given to [`plan`]) it concerns.
    pub diags: Vec<(usize, Diagnostic)>,
    /// The changed files, in [`anchors::FILES`] order (none when `diags` holds an error).
    pub changes: Vec<FileChange>,
}

/// A file of the tree that could not be read (other than absent: an absent file is a missing
/// anchor, E0802).
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {source}", path.display())]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// The texts of the tree's files as the wiring goes (`None`: absent or not UTF-8).
struct Texts {
    root: PathBuf,
    before: BTreeMap<&'static str, Option<String>>,
    now: BTreeMap<&'static str, String>,
}

/// Why a file has no text.
enum NoText {
    Absent,
    NotUtf8,
}

impl Texts {
    fn read(root: &Path) -> Result<Texts, ReadError> {
        let mut before = BTreeMap::new();
        let mut now = BTreeMap::new();
        for f in anchors::FILES {
            let path = root.join(f);
            match std::fs::read(&path) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(t) => {
                        now.insert(f, t.clone());
                        before.insert(f, Some(t));
                    }
                    Err(_) => {
                        before.insert(f, None);
                    }
                },
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    before.insert(f, None);
                }
                Err(source) => return Err(ReadError { path, source }),
            }
        }
        Ok(Texts {
            root: root.to_path_buf(),
            before,
            now,
        })
    }

    fn get(&self, f: &'static str) -> Result<&String, NoText> {
        match self.now.get(f) {
            Some(t) => Ok(t),
            None if self.root.join(f).exists() => Err(NoText::NotUtf8),
            None => Err(NoText::Absent),
        }
    }
}

/// The diagnostic for a missing anchor (or file) that `piece` of `u` needs.
fn missing_anchor(u: &UnitFacts, file: &str, anchor: &str, piece: &str, why: NoText) -> Diagnostic {
    let message = match why {
        NoText::Absent => format!("the MPK tree has no `{file}`, where the {piece} piece of `{}` goes (anchor `{anchor}`)", u.unit),
        NoText::NotUtf8 => format!("`{file}` in the MPK tree is not UTF-8 text, so its anchor `{anchor}` for the {piece} piece of `{}` cannot be found", u.unit),
    };
    Diagnostic::error(codes::WIRE_ANCHOR, message)
        .primary(u.unit_span, format!("wiring `{}` needs `{file}`", u.unit))
        .help("point `--mirage` at the root of an MPK checkout (the folder holding `include/`, `src/` and `python/`); docs/wire.md lists the files and anchors")
}

/// Plans one piece: present, or inserted at the position `locate` finds, or a conflict where
/// `key` (what names this unit's piece) is in the file with other text.
#[allow(clippy::too_many_arguments)]
fn piece(
    texts: &mut Texts,
    u: &UnitFacts,
    name: &'static str,
    file: &'static str,
    anchor: &str,
    key: &str,
    block: impl Fn(&[&str]) -> Option<(Position, String)>,
) -> Result<PieceReport, Diagnostic> {
    let text = texts
        .get(file)
        .map_err(|why| missing_anchor(u, file, anchor, name, why))?;
    let ls = lines(text);
    let Some((at, block)) = block(&ls) else {
        return Err(Diagnostic::error(
            codes::WIRE_ANCHOR,
            format!(
                "`{file}` has no anchor `{anchor}`, where the {name} piece of `{}` goes",
                u.unit
            ),
        )
        .primary(u.unit_span, format!("wiring `{}` needs this anchor", u.unit))
        .note(format!("looked in {}", texts.root.join(file).display()))
        .help("restore the anchor line in the MPK tree, or add the piece by hand; docs/wire.md lists every anchor"));
    };
    if text.contains(&block) {
        return Ok(PieceReport {
            piece: name,
            file,
            status: Status::Present,
        });
    }
    if text.contains(key) {
        return Err(Diagnostic::error(
            codes::WIRE_TAKEN,
            format!(
                "`{file}` already has `{key}` with other text than the {name} piece `mpkc wire` writes for `{}`",
                u.unit
            ),
        )
        .primary(u.unit_span, format!("the {name} piece of `{}`", u.unit))
        .note(format!("the piece it would write:\n{}", block.trim_end()))
        .help(format!(
            "wire adds and never rewrites: remove the old {name} piece from `{file}` by hand (an earlier contract's, or one written by hand), then run `mpkc wire` again"
        )));
    }
    let after = anchors::insert(text, at, &block);
    texts.now.insert(file, after);
    Ok(PieceReport {
        piece: name,
        file,
        status: Status::Added,
    })
}

/// The enum line: present when the enum holds this name with this id; E0801 when the id is taken
/// by another name or the name holds another id.
fn enum_piece(texts: &mut Texts, u: &UnitFacts) -> Result<PieceReport, Diagnostic> {
    let file = anchors::RUNTIME_HEADER;
    let anchor = anchors::text::ENUM_OPEN;
    let text = texts
        .get(file)
        .map_err(|why| missing_anchor(u, file, anchor, "enum", why))?;
    let ls = lines(text);
    let entries = anchors::enum_entries(&ls);
    if entries
        .iter()
        .any(|(_, n, v)| *n == u.enum_name && *v == u.task_id)
    {
        return Ok(PieceReport {
            piece: "enum",
            file,
            status: Status::Present,
        });
    }
    let taken: std::collections::BTreeSet<i64> = entries.iter().map(|(_, _, v)| *v).collect();
    if let Some((line, other, _)) = entries.iter().find(|(_, _, v)| *v == u.task_id) {
        let free = (u.task_id.saturating_add(1)..=i64::MAX)
            .find(|v| !taken.contains(v))
            .unwrap_or(u.task_id);
        return Err(Diagnostic::error(
            codes::WIRE_TAKEN,
            format!(
                "TaskType {} is already `{other}` in MPK's `enum TaskType`, so `{}` cannot take it",
                u.task_id, u.enum_name
            ),
        )
        .primary(u.task_id_span, format!("`{}` asks for TaskType {}", u.task, u.task_id))
        .note(format!("{file}:{}: `{}`", line + 1, ls[*line].trim()))
        .help(format!(
            "choose a value no task uses, e.g. `task_id {free}` (the next free one); keep TMA tasks inside 232..=255 (contract doc §6.1)"
        )));
    }
    if let Some((line, _, v)) = entries.iter().find(|(_, n, _)| *n == u.enum_name) {
        return Err(Diagnostic::error(
            codes::WIRE_TAKEN,
            format!(
                "`{}` is already TaskType {v} in MPK's `enum TaskType`, and the contract says {}",
                u.enum_name, u.task_id
            ),
        )
        .primary(u.task_id_span, format!("the contract's TaskType is {}", u.task_id))
        .note(format!("{file}:{}: `{}`", line + 1, ls[*line].trim()))
        .help(format!(
            "set `task_id {v}` to match the tree, or renumber `{}` in the tree by hand (profilers switch on names, contract doc §6.1)",
            u.enum_name
        )));
    }
    let Some(at) = anchors::enum_position(&ls) else {
        return Err(Diagnostic::error(
            codes::WIRE_ANCHOR,
            format!(
                "`{file}` has no anchor `{anchor}` (with its closing `}};`), where the enum piece of `{}` goes",
                u.unit
            ),
        )
        .primary(u.unit_span, format!("wiring `{}` needs this anchor", u.unit))
        .help("restore `enum TaskType { … };` in the MPK tree; docs/wire.md lists every anchor"));
    };
    let after = anchors::insert(text, at, &pieces::enum_line(u));
    texts.now.insert(file, after);
    Ok(PieceReport {
        piece: "enum",
        file,
        status: Status::Added,
    })
}

/// Every piece of `u`, in §6.1 order; stops at the first error.
fn unit(texts: &mut Texts, u: &UnitFacts) -> Result<UnitReport, Diagnostic> {
    use anchors::text as t;
    let mut out = vec![enum_piece(texts, u)?];
    let reg_fn = format!("register_{}_task(", u.unit);
    out.push(piece(
        texts,
        u,
        "declaration",
        anchors::TASK_REGISTER_H,
        t::REGISTER_VARIANT,
        &format!("int {reg_fn}"),
        |ls| anchors::declaration_position(ls).map(|p| (p, pieces::declaration(u))),
    )?);
    let inc = pieces::include(u);
    out.push(piece(
        texts,
        u,
        "include",
        anchors::TASK_REGISTER_CC,
        t::REGISTER_INCLUDE,
        inc.trim_end(),
        |ls| anchors::include_position(ls).map(|p| (p, inc.clone())),
    )?);
    out.push(piece(
        texts,
        u,
        "definition",
        anchors::TASK_REGISTER_CC,
        t::NAMESPACE_END,
        &format!("TaskRegister::{reg_fn}"),
        |ls| anchors::definition_position(ls).map(|p| (p, pieces::definition(u))),
    )?);
    out.push(piece(
        texts,
        u,
        "graph",
        anchors::GRAPH_CC,
        "else { printf(\"Unsupported task name…",
        &format!("(name == \"{}\")", u.unit),
        |ls| anchors::graph_position(ls).map(|p| (p, pieces::graph_branch(u))),
    )?);
    out.push(piece(
        texts,
        u,
        "task_offset",
        anchors::RUNTIME_CC,
        t::INIT_INPUTS,
        &format!("task_type == {})", u.enum_name),
        |ls| {
            anchors::task_offset_position(ls)
                .map(|(p, indent)| (p, pieces::task_offset(u, &indent)))
        },
    )?);
    out.push(piece(
        texts,
        u,
        "name",
        anchors::RUNTIME_CC,
        t::NAME_TABLE,
        &format!("task_type_to_name[{}]", u.enum_name),
        |ls| anchors::name_position(ls).map(|p| (p, pieces::name_entry(u))),
    )?);
    out.push(piece(
        texts,
        u,
        "layer",
        anchors::PERSISTENT_KERNEL_PY,
        t::COMPILE,
        &format!("def {}_layer(", u.unit),
        |ls| anchors::layer_position(ls).map(|p| (p, pieces::layer(u))),
    )?);
    Ok(UnitReport {
        unit: u.unit.clone(),
        pieces: out,
    })
}

/// Plans the wiring of `units` (in order) into the MPK tree at `root`: reads the files, renders
/// each unit's pieces against the text the earlier units left, and returns the reports, the
/// diagnostics and the changed files. Writes nothing. Errors: a file that exists but cannot be
/// read.
pub fn plan(root: &Path, units: &[UnitFacts]) -> Result<Plan, ReadError> {
    let mut texts = Texts::read(root)?;
    let mut out = Plan::default();
    for (i, u) in units.iter().enumerate() {
        match unit(&mut texts, u) {
            Ok(r) => out.units.push(r),
            Err(d) => out.diags.push((i, d)),
        }
    }
    if out.diags.is_empty() {
        for f in anchors::FILES {
            if let (Some(Some(before)), Some(after)) = (texts.before.get(f), texts.now.get(f)) {
                if before != after {
                    out.changes.push(FileChange {
                        file: f,
                        before: before.clone(),
                        after: after.clone(),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// A changed file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// Writes `changes` into the tree at `root`, each file replaced whole through a temporary file
/// in its folder (a reader never sees half a file), keeping the file's permissions.
pub fn write(root: &Path, changes: &[FileChange]) -> Result<(), WriteError> {
    use std::io::Write as _;
    for c in changes {
        let path = root.join(c.file);
        let err = |source| WriteError {
            path: path.clone(),
            source,
        };
        let dir = path.parent().unwrap_or(root);
        let perms = std::fs::metadata(&path).map_err(err)?.permissions();
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
        tmp.write_all(c.after.as_bytes()).map_err(err)?;
        tmp.as_file().set_permissions(perms).map_err(err)?;
        tmp.persist(&path).map_err(|e| err(e.error))?;
    }
    Ok(())
}
