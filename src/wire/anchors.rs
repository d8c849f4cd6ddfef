//! Where each piece goes in MPK's files: the file (its path in an MPK checkout), the anchor
//! line the piece is placed against, and the insertion itself. Insertion only adds lines; a piece
//! whose block is already in the file is left alone, which makes wiring idempotent.

/// `enum TaskType` (§6.1 step 1).
pub const RUNTIME_HEADER: &str = "include/mirage/persistent_kernel/runtime_header.h";
/// `class TaskRegister` (§6.1 step 3).
pub const TASK_REGISTER_H: &str = "include/mirage/kernel/task_register.h";
/// The registrars (§6.1 step 4).
pub const TASK_REGISTER_CC: &str = "src/kernel/task_register.cc";
/// `Graph::register_task` (§6.1 step 5).
pub const GRAPH_CC: &str = "src/kernel/graph.cc";
/// The task list builder and the name table (§6.1 step 6).
pub const RUNTIME_CC: &str = "src/kernel/runtime.cc";
/// `PersistentKernel`'s layer methods (§6.1 step 7).
pub const PERSISTENT_KERNEL_PY: &str = "python/mirage/mpk/persistent_kernel.py";

/// Every file wire edits, in the order of §6.1.
pub const FILES: [&str; 6] = [
    RUNTIME_HEADER,
    TASK_REGISTER_H,
    TASK_REGISTER_CC,
    GRAPH_CC,
    RUNTIME_CC,
    PERSISTENT_KERNEL_PY,
];

/// The anchor lines, as docs/wire.md lists them (trimmed text).
pub mod text {
    /// Opens the enum; the piece goes before the enum's closing `};`.
    pub const ENUM_OPEN: &str = "enum TaskType {";
    /// The piece goes before this declaration.
    pub const REGISTER_VARIANT: &str =
        "int register_task_variant(TaskType type, std::string const &code);";
    /// The spec include goes after the include block this line starts.
    pub const REGISTER_INCLUDE: &str = "#include \"mirage/kernel/task_register.h\"";
    /// The definition goes before the last line that is this.
    pub const NAMESPACE_END: &str = "} // namespace runtime";
    /// The graph branch goes before the `else {` whose body prints this.
    pub const UNSUPPORTED: &str = "printf(\"Unsupported task name";
    /// The `task_offset` statement goes before this comment.
    pub const INIT_INPUTS: &str = "// Initialize input tensors to the task";
    /// The name entry goes after the last statement of the table this declares.
    pub const NAME_TABLE: &str = "std::map<TaskType, std::string> task_type_to_name;";
    /// The layer method goes before this method.
    pub const COMPILE: &str = "def compile(";
}

/// A piece's position: insert before line `n` (0-based; `lines.len()` appends).
pub type Position = usize;

/// The lines of `text`, each with its line ending.
pub fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn find(lines: &[&str], from: usize, pred: impl Fn(&str) -> bool) -> Option<usize> {
    (from..lines.len()).find(|&i| pred(lines[i].trim()))
}

/// The `enum TaskType` body: the line range between its opening line and its closing `};`.
pub fn enum_body(lines: &[&str]) -> Option<std::ops::Range<usize>> {
    let open = find(lines, 0, |l| l.starts_with(text::ENUM_OPEN))?;
    let close = find(lines, open + 1, |l| l.starts_with("};"))?;
    Some(open + 1..close)
}

/// `(name, value)` of each `NAME = value` entry of `enum TaskType`, with its line index.
pub fn enum_entries(lines: &[&str]) -> Vec<(usize, String, i64)> {
    let Some(body) = enum_body(lines) else {
        return Vec::new();
    };
    body.filter_map(|i| {
        let code = lines[i].split("//").next().unwrap_or("").trim();
        let code = code.trim_end_matches(',').trim();
        let (name, value) = code.split_once('=')?;
        let value = value.trim().parse::<i64>().ok()?;
        Some((i, name.trim().to_string(), value))
    })
    .collect()
}

/// runtime_header.h: before the enum's closing `};`.
pub fn enum_position(lines: &[&str]) -> Option<Position> {
    enum_body(lines).map(|r| r.end)
}

/// task_register.h: before `register_task_variant`'s declaration.
pub fn declaration_position(lines: &[&str]) -> Option<Position> {
    find(lines, 0, |l| l == text::REGISTER_VARIANT)
}

/// task_register.cc: after the include block that starts at task_register.h's include.
pub fn include_position(lines: &[&str]) -> Option<Position> {
    let first = find(lines, 0, |l| l == text::REGISTER_INCLUDE)?;
    let mut i = first + 1;
    while i < lines.len() && lines[i].trim().starts_with("#include") {
        i += 1;
    }
    Some(i)
}

/// task_register.cc: before the last `} // namespace runtime`.
pub fn definition_position(lines: &[&str]) -> Option<Position> {
    (0..lines.len())
        .rev()
        .find(|&i| lines[i].trim() == text::NAMESPACE_END)
}

/// graph.cc: before the `else {` whose next non-blank line prints "Unsupported task name".
pub fn graph_position(lines: &[&str]) -> Option<Position> {
    let print = find(lines, 0, |l| l.starts_with(text::UNSUPPORTED))?;
    let open = (0..print).rev().find(|&i| !lines[i].trim().is_empty())?;
    (lines[open].trim() == "else {").then_some(open)
}

/// runtime.cc: before the "Initialize input tensors" comment, with that line's indentation.
pub fn task_offset_position(lines: &[&str]) -> Option<(Position, String)> {
    let i = find(lines, 0, |l| l == text::INIT_INPUTS)?;
    let indent: String = lines[i].chars().take_while(|c| *c == ' ').collect();
    Some((i, indent))
}

/// runtime.cc: after the last `task_type_to_name[...] = ...;` statement after the table's
/// declaration (after the declaration when the table is empty).
pub fn name_position(lines: &[&str]) -> Option<Position> {
    let decl = find(lines, 0, |l| l == text::NAME_TABLE)?;
    let mut end = decl + 1;
    let mut i = decl + 1;
    while i < lines.len() {
        let l = lines[i].trim();
        if l.starts_with("task_type_to_name[") && !l.starts_with("task_type_to_name.") {
            // The statement may continue over the next lines, to its `;`.
            let mut j = i;
            while j < lines.len() && !lines[j].trim_end().ends_with(';') {
                j += 1;
            }
            end = j + 1;
            i = j + 1;
        } else if l.is_empty() || l.starts_with("//") {
            i += 1;
        } else {
            break;
        }
    }
    Some(end.min(lines.len()))
}

/// persistent_kernel.py: before `def compile(` of the class (four-space indent).
pub fn layer_position(lines: &[&str]) -> Option<Position> {
    (0..lines.len()).find(|&i| {
        lines[i].starts_with("    ")
            && !lines[i].starts_with("     ")
            && lines[i].trim().starts_with(text::COMPILE)
    })
}

/// `text` with `block` inserted before line `at`.
pub fn insert(text: &str, at: Position, block: &str) -> String {
    let ls = lines(text);
    let mut out = String::with_capacity(text.len() + block.len() + 1);
    for l in &ls[..at.min(ls.len())] {
        out.push_str(l);
    }
    if at >= ls.len() && !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(block);
    for l in &ls[at.min(ls.len())..] {
        out.push_str(l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_keeps_every_line_and_adds_the_block() {
        let t = "a\nb\nc";
        assert_eq!(insert(t, 1, "x\n"), "a\nx\nb\nc");
        assert_eq!(insert(t, 3, "x\n"), "a\nb\nc\nx\n");
        assert_eq!(insert("", 0, "x\n"), "x\n");
    }

    #[test]
    fn enum_entries_read_values_and_skip_comments() {
        let t = "enum TaskType {\n  TASK_A = 1, // one\n  // TASK_B = 2,\n  TASK_C = 3\n};\n";
        let ls = lines(t);
        let e: Vec<(String, i64)> = enum_entries(&ls)
            .into_iter()
            .map(|(_, n, v)| (n, v))
            .collect();
        assert_eq!(
            e,
            vec![("TASK_A".to_string(), 1), ("TASK_C".to_string(), 3)]
        );
        assert_eq!(enum_position(&ls), Some(4));
    }

    #[test]
    fn the_graph_anchor_needs_the_else_before_the_unsupported_print() {
        let ok = "  }\n\n  else {\n    printf(\"Unsupported task name: %s\\n\", name);\n";
        assert_eq!(graph_position(&lines(ok)), Some(2));
        let other = "  } else {\n    printf(\"Unsupported task name: %s\\n\", name);\n";
        assert_eq!(graph_position(&lines(other)), None);
    }

    #[test]
    fn the_name_entry_goes_after_a_multi_line_last_statement() {
        let t = "  std::map<TaskType, std::string> task_type_to_name;\n  task_type_to_name[TASK_A] = \"TASK_A\";\n  task_type_to_name[TASK_B] =\n      \"TASK_B\";\n\n  code.e(\"x\");\n";
        assert_eq!(name_position(&lines(t)), Some(4));
    }
}
