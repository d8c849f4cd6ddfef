//! `<unit>_register.cc`: the wiring snippet of one unit (docs/design.md, the outputs table), every
//! piece `mpkc wire --mirage DIR` places in an MPK tree (docs/wire.md, contract doc §6.1), each
//! under a comment naming its file and anchor: the `enum TaskType` line, the registrar's
//! declaration, the spec header's include, the registrar, the graph.cc branch, the runtime.cc
//! `task_offset` statement and name entry, and the Python layer method (inside `#if 0`: it is
//! Python). The text is the same renderer's ([`crate::wire::pieces`]) on the same facts
//! ([`crate::wire::facts::UnitFacts`]), so the snippet and `mpkc wire` cannot differ. A unit
//! without a `task_id` or a registration (a helper) has none.

use crate::valid::CheckedTask;
use crate::wire::facts::UnitFacts;
use crate::wire::pieces;

/// Whether `task` has a snippet: it has a `task_id` and a registration.
pub fn has_snippet(task: &CheckedTask) -> bool {
    UnitFacts::of(task).is_ok()
}

/// The snippet of `task`, or `None` where [`has_snippet`] is false.
pub fn emit(task: &CheckedTask, info: &super::ContractInfo) -> Option<String> {
    let mut f = UnitFacts::of(task).ok()?;
    // A derived reduce registers as a variant of its parent's reduce TaskType (`of_unit`).
    if let Some(t) = &info.derived_task {
        f.enum_name = crate::wire::facts::enum_name(t);
        f.task = t.clone();
    }
    let mut s = String::new();
    s.push_str(&super::banner::banner(&task.ir, info));
    s.push('\n');
    s.push_str(&format!(
        "// The wiring of `{}` into MPK (docs/wire.md): each piece below goes to the file and\n\
         // anchor its comment names. `mpkc wire FILE --mirage DIR` places them all (`--dry-run`\n\
         // shows the diff); this file is for review and hand-pasting, not for compiling.\n",
        f.unit
    ));
    let mut piece = |file: &str, anchor: &str, text: &str| {
        s.push_str(&format!("\n// ---- {file}: {anchor}\n"));
        s.push_str(text);
    };
    piece(
        "include/mirage/persistent_kernel/runtime_header.h",
        "in `enum TaskType`, before its closing `};` (the instances of a task share this line)",
        &pieces::enum_line(&f),
    );
    piece(
        "include/mirage/kernel/task_register.h",
        "before `int register_task_variant(TaskType type, std::string const &code);`",
        &pieces::declaration(&f),
    );
    piece(
        "src/kernel/task_register.cc",
        "after the include block that `#include \"mirage/kernel/task_register.h\"` starts",
        &pieces::include(&f),
    );
    piece(
        "src/kernel/task_register.cc",
        "before the last `} // namespace runtime`",
        &pieces::definition(&f),
    );
    piece(
        "src/kernel/graph.cc",
        "before the `else {` whose next line prints `Unsupported task name`",
        &pieces::graph_branch(&f),
    );
    piece(
        "src/kernel/runtime.cc",
        "before `// Initialize input tensors to the task`, at its indentation",
        &pieces::task_offset(&f, "      "),
    );
    piece(
        "src/kernel/runtime.cc",
        "after the last entry of `std::map<TaskType, std::string> task_type_to_name;`",
        &pieces::name_entry(&f),
    );
    piece(
        "python/mirage/mpk/persistent_kernel.py",
        "in `class PersistentKernel`, before `    def compile(` (Python)",
        &format!("#if 0\n{}#endif\n", pieces::layer(&f)),
    );
    Some(s)
}
