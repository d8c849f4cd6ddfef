//! The text of each registration piece of contract doc §6.1, rendered from [`UnitFacts`].
//! Indentation follows MPK's files (two spaces in C++, four in Python); every piece is a whole
//! block of lines, so that its presence is a plain text test.

use super::facts::{LayerTensor, Leading, UnitFacts};
use crate::back::registration::Registration;
use crate::ir::Dtype;

/// The role-body argument list MPK's dispatchers pass (contract doc §3.3).
const ROLE_ARGS: &str = "task_desc, runtime_config, runtime_smem, instruction_index, iter_num";
/// The dependency prefix's argument list (contract doc §2.3: `runtime_config` first).
const DEP_PREFIX_ARGS: &str =
    "runtime_config, task_desc, runtime_smem, instruction_index, iter_num";

/// `  TASK_X_V2 = id,` for `enum TaskType` (§6.1 step 1).
pub fn enum_line(f: &UnitFacts) -> String {
    format!("  {} = {},\n", f.enum_name, f.task_id)
}

/// The registrar's declaration in `class TaskRegister` (§6.1 step 3).
pub fn declaration(f: &UnitFacts) -> String {
    format!(
        "  int register_{}_task(threadblock::Graph const &bgraph,\n      std::vector<int> const &params);\n",
        f.unit
    )
}

/// The spec header's include in task_register.cc (§6.1 steps 2 and 4: host-safe, I-H6).
pub fn include(f: &UnitFacts) -> String {
    format!(
        "#include \"mirage/persistent_kernel/tasks/blackwell_v2/{}_spec.h\"\n",
        f.unit
    )
}

/// A C++ string literal of `s` (which holds no quote, backslash or newline: identifiers, numbers
/// and the calls below).
fn lit(s: &str) -> String {
    format!("\"{s}\"")
}

/// The role bodies of `reg` as `(field, body)`: the fork's `TaskRoleVariantCode` fields. The
/// consumer body starts with the dependency prefix, as does the launcher's where the
/// registration says so (§2.3); the loader waits the dependency inline (its own code).
fn bodies(f: &UnitFacts, reg: &Registration) -> Vec<(&'static str, String)> {
    let prefix = format!("consumer_dep_prefix({DEP_PREFIX_ARGS}); ");
    reg.roles()
        .map(|(role, has)| {
            let body = if !has {
                String::new()
            } else {
                let call = format!("::kernel::{}::Registration::{role}({ROLE_ARGS});", f.unit);
                let needs_prefix =
                    role == "consumer" || (role == "launcher" && reg.launcher_dep_prefix);
                if needs_prefix {
                    format!("{prefix}{call}")
                } else {
                    call
                }
            };
            (role, body)
        })
        .collect()
}

/// The registrar's definition in task_register.cc (§6.1 step 4): checks the operator split,
/// registers the variant under its plain key, the role bodies with the page flags of the
/// generated `Registration`, and the SMEM declaration of the spec header.
pub fn definition(f: &UnitFacts) -> String {
    let reg = &f.registration;
    let (ni, no) = (f.inputs.len(), f.mpk_outputs().len());
    let mut s = String::new();
    let mut l = |t: &str| {
        s.push_str(t);
        s.push('\n');
    };
    l(&format!(
        "// mpkc wire: `{}` ({} = {}). Inputs: {}; outputs: {}.",
        f.unit,
        f.enum_name,
        f.task_id,
        names(&f.inputs),
        outputs_text(f)
    ));
    l(&format!(
        "int TaskRegister::register_{}_task(threadblock::Graph const &bgraph,",
        f.unit
    ));
    l("    std::vector<int> const &params) {");
    l("  // Every shape and param is compiled into the generated kernel: no runtime params.");
    l("  assert(params.size() == 0);");
    l(&format!("  int num_inputs = {ni};"));
    l(&format!("  int num_outputs = {no};"));
    l("  assert(bgraph.operators.size() == (size_t)num_inputs + num_outputs);");
    l("  for (auto const &op : bgraph.operators) {");
    l("    assert(op->op_type == mirage::type::TB_INPUT_OP);");
    l("  }");
    l(&format!(
        "  int variant_id = register_task_variant({}, {});",
        f.enum_name,
        lit(&f.variant_key())
    ));
    l("  TaskRoleVariantCode roles;");
    if reg.inits_semaphores {
        l(&format!(
            "  roles.init_semaphores = {};",
            lit(&format!(
                "::kernel::{}::Registration::init_semaphores(op_sem_base_addr(runtime_smem, instruction_index));",
                f.unit
            ))
        ));
    } else {
        l("  roles.init_semaphores = \"\";");
    }
    for (role, body) in bodies(f, reg) {
        l(&format!("  roles.{role} = {};", lit(&body)));
    }
    l(&format!(
        "  roles.auto_loader_page_lifecycle = {};",
        reg.auto_loader_page_lifecycle
    ));
    l(&format!(
        "  roles.auto_consumer_finish = {};",
        reg.auto_consumer_finish
    ));
    l(&format!(
        "  roles.consumer_owned_page_claim = {};  // page mode {}",
        reg.page_mode == 2,
        reg.page_mode
    ));
    l(&format!(
        "  register_v2_task_role_variant({}, variant_id, roles);",
        f.enum_name
    ));
    l(&format!(
        "  ::mpkc::TaskSmemInfo const spec = ::kernel::{}::make_smem_info();",
        f.unit
    ));
    l("  TaskSmemInfo info;");
    l("  info.size = spec.size;");
    l("  info.alignment = spec.alignment;");
    l("  for (auto const &r : spec.regions) {");
    l("    info.regions.push_back(TaskSmemRegion{r.name, r.size, r.alignment, r.page_count,");
    l("                                          r.can_pack, r.release_step, r.contiguous});");
    l("  }");
    l(&format!(
        "  register_variant_smem_info({}, variant_id, info);",
        f.enum_name
    ));
    l("  return variant_id;");
    l("}");
    l("");
    s
}

fn names(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

/// The outputs as the graph takes them ([`UnitFacts::mpk_outputs`]): the `out` tensors, then
/// each `inout` one marked as written in place (`y, residual (in place)`).
fn outputs_text(f: &UnitFacts) -> String {
    let v: Vec<String> = f
        .outputs
        .iter()
        .cloned()
        .chain(f.written_inputs.iter().map(|t| format!("{t} (in place)")))
        .collect();
    names(&v)
}

/// The graph.cc branch mapping the op name to the registrar and the tuple
/// `(NUM_IN, NUM_OUT, TaskType, variant)` (§6.1 step 5; I-H1: the registration's split).
pub fn graph_branch(f: &UnitFacts) -> String {
    format!(
        "  else if (name == \"{u}\") {{\n    int variant_id =\n        task_register->register_{u}_task(customized->bgraph, params);\n    task_config[op] =\n        std::make_tuple({ni}, {no}, {e}, variant_id);\n  }}\n",
        u = f.unit,
        ni = f.inputs.len(),
        no = f.mpk_outputs().len(),
        e = f.enum_name
    )
}

/// runtime.cc: the `task_offset = bid.x` statement for the type (§6.1 step 6a; every mpkc kernel
/// indexes its work by `task_metadata.task_offset`), indented as `indent`.
pub fn task_offset(f: &UnitFacts, indent: &str) -> String {
    format!(
        "{indent}if (task_type == {e}) {{\n{indent}  task.task_metadata.task_offset = bid.x;\n{indent}}}\n",
        e = f.enum_name
    )
}

/// runtime.cc: the `task_type_to_name` entry (§6.1 step 6b, I-H2).
pub fn name_entry(f: &UnitFacts) -> String {
    format!("  task_type_to_name[{e}] = \"{e}\";\n", e = f.enum_name)
}

/// Python keywords and `self`, which a tensor name may not be as a parameter name.
const PY_RESERVED: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "self", "try",
    "while", "with", "yield",
];

/// The names the layer method binds or reads besides its tensor parameters: a parameter of one
/// of these names would shadow it (`tb_graph = TBGraph(...)` rebinding a tensor, a tensor named
/// `CyTBGraph` called).
const LAYER_NAMES: &[&str] = &[
    "CyTBGraph",
    "DTensor",
    "TBGraph",
    "bfloat16",
    "float16",
    "float32",
    "float8",
    "float8_e4m3",
    "grid_dim",
    "int32",
    "int64",
    "num_tasks",
    "tb_graph",
    "tuple",
    "uint8",
];

/// The Python condition that DTensor `p`'s element type is `d`, in mirage's dtype objects
/// (python/mirage/_cython/core.pyx at de8745d9: `DTensor.dtype` maps the graph's data type back
/// through `convert_ctype_to_dtype`). `attach_input` gives every torch 8-bit float (e4m3, e5m2,
/// e8m0) the one `float8`, so an fp8 tensor is checked for one byte of float, not its format; a
/// `ue8m0` scale may also be attached as `uint8`.
fn dtype_condition(p: &str, d: Dtype) -> String {
    let one = |name: &str| format!("{p}.dtype == {name}");
    match d {
        Dtype::Bf16 => one("bfloat16"),
        Dtype::F16 => one("float16"),
        Dtype::F32 => one("float32"),
        Dtype::I32 => one("int32"),
        Dtype::I64 => one("int64"),
        Dtype::U8 => one("uint8"),
        Dtype::E4m3 | Dtype::E5m2 => format!("{p}.dtype in (float8, float8_e4m3)"),
        Dtype::Ue8m0 => format!("{p}.dtype in (float8, uint8)"),
    }
}

/// The layer's assertions on DTensor `p` (contract tensor `t`): its element type, its number of
/// extents and each extent ([`LayerTensor`]: the kernel compiles them in), as lines of Python
/// indented for the method body. A view's extents are not asserted: a comment says what the
/// DTensor must hold instead.
fn shape_asserts(unit: &str, p: &str, t: &LayerTensor) -> Vec<String> {
    // mirage attaches every torch 8-bit float as `float8`: the format itself is not visible.
    let unseen = match t.dtype {
        Dtype::E4m3 | Dtype::E5m2 => " (a float8 DTensor: mirage does not tell e4m3 from e5m2)",
        Dtype::Ue8m0 => {
            " (a float8 or uint8 DTensor: mirage does not tell the 8-bit formats apart)"
        }
        _ => "",
    };
    let dtype = format!(
        "        assert {}, \"{unit}: `{}` must be {}{unseen}\"",
        dtype_condition(p, t.dtype),
        t.name,
        t.dtype.as_str(),
    );
    if let Some((stride, offset)) = t.view {
        let dims: Vec<String> = t.dims.iter().map(|d| d.to_string()).collect();
        return vec![
            format!(
                "        # `{}` is a view {}[{}]: rows {stride} elements apart, from element {offset} of each parent row. The kernel",
                t.name,
                t.dtype.as_str(),
                dims.join(", ")
            ),
            "        # takes the view's first element as its pointer, and MPK passes a DTensor's base: pass a DTensor that".to_string(),
            "        # starts there, with the parent's row length. Its extents are not checked here.".to_string(),
            dtype,
        ];
    }
    // Each extent's condition (none for a paged pool's page count) and how the message shows it.
    let mut conds = vec![format!("{p}.num_dims == {}", t.dims.len())];
    let mut extents = Vec::with_capacity(t.dims.len());
    for (k, d) in t.dims.iter().enumerate() {
        match (k, t.leading) {
            (0, Leading::Any) => extents.push("pages".to_string()),
            (0, Leading::AtLeast) => {
                conds.push(format!("{p}.dim(0) >= {d}"));
                extents.push(format!(">= {d}"));
            }
            _ => {
                conds.push(format!("{p}.dim({k}) == {d}"));
                extents.push(d.to_string());
            }
        }
    }
    let want = format!("{}[{}]", t.dtype.as_str(), extents.join(", "));
    vec![
        format!(
            "        assert {}, \"{unit}: `{}` must be {want} (compiled into the kernel)\"",
            conds.join(" and "),
            t.name,
        ),
        dtype,
    ]
}

/// The Python parameter names of the tensors `ts`, in order: each tensor's name, with `_` added
/// while it is a Python keyword, `self`, a name the layer itself uses ([`LAYER_NAMES`]), another
/// tensor's name or one given before it (`lambda` and `lambda_` become `lambda_` and
/// `lambda__`): distinct parameters that shadow nothing.
fn py_names(ts: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(ts.len());
    for t in ts {
        let mut name = t.clone();
        let taken = |n: &str, out: &[String]| {
            PY_RESERVED.contains(&n)
                || LAYER_NAMES.contains(&n)
                || out.iter().any(|o| o == n)
                || (n != t && ts.iter().any(|o| o == n))
        };
        while taken(&name, &out) {
            name.push('_');
        }
        out.push(name);
    }
    out
}

/// The layer method of `PersistentKernel` (§6.1 step 7): asserts the v2 runtime, builds the
/// TB graph over the grid of the contract's granularity, passes the tensors unpartitioned
/// (inputs, then outputs, then each `inout` input again: [`UnitFacts::mpk_outputs`]) and
/// registers the task. A grid-wide task takes its grid from the
/// builder and asserts one task per worker (I-H4).
pub fn layer(f: &UnitFacts) -> String {
    let tensors = py_names(
        &f.inputs
            .iter()
            .chain(&f.outputs)
            .cloned()
            .collect::<Vec<_>>(),
    );
    // The graph's operands: the inputs, the outputs, then each `inout` input again as an output
    // (the same parameter): MPK's graph makes a task a tensor's writer through its output slots
    // only ([`UnitFacts::mpk_outputs`]).
    let operands: Vec<String> = tensors
        .iter()
        .cloned()
        .chain(f.written_inputs.iter().filter_map(|w| {
            f.inputs
                .iter()
                .position(|i| i == w)
                .map(|k| tensors[k].clone())
        }))
        .collect();
    let mut s = String::new();
    let mut l = |t: &str| {
        s.push_str(t);
        s.push('\n');
    };
    l(&format!("    def {}_layer(", f.unit));
    l("        self,");
    for t in &tensors {
        l(&format!("        {t}: DTensor,"));
    }
    if f.tasks.is_none() {
        l("        grid_dim: tuple,");
    }
    l("    ):");
    l(&format!(
        "        \"\"\"mpkc wire: `{}` ({} = {}); inputs {}, outputs {}.\"\"\"",
        f.unit,
        f.enum_name,
        f.task_id,
        names(&f.inputs),
        outputs_text(f)
    ));
    for t in &f.written_inputs {
        l(&format!(
            "        # `{t}` is updated in place: an input, and again an output so that the task graph makes this task"
        ));
        l("        # its writer (a later op reading it waits for this one); the kernel uses its input slot.");
    }
    for (t, what) in &f.zeroed {
        l(&format!(
            "        # `{t}`: {what}: allocate it zeroed (torch.zeros) once;"
        ));
        l("        # the last split of each tile resets it, so every run leaves it zero. Give each op");
        l("        # instance its own counters and partials: two ops that may run at once must not share them.");
    }
    for t in &f.seeded_once {
        l(&format!(
            "        # `{t}`: the grid barrier's monotonic counters, one i64 per site: seed them zero at step 0"
        ));
        l("        # only, with a tensor_init task registered with skip_after_step0=True (v2_params=[1]); zeroed");
        l("        # every step, they restart while the count each step waits for grows, and step 1 hangs (I-H4).");
    }
    l(&format!(
        "        assert self.use_v2_runtime, \"{} is a Runtime-V2 task\"",
        f.unit
    ));
    for (p, t) in tensors.iter().zip(&f.shapes) {
        for line in shape_asserts(&f.unit, p, t) {
            l(&line);
        }
    }
    match f.tasks {
        Some(n) => l(&format!("        grid_dim = ({n}, 1, 1)")),
        None => {
            l("        num_tasks = grid_dim[0] * grid_dim[1] * grid_dim[2]");
            l("        assert num_tasks == self.num_workers, \"a grid-wide task runs one task per worker\"");
            l("        # runtime.cc sets task_offset = bid.x: a 2-D or 3-D grid would repeat task indices.");
            l("        assert grid_dim[1] == 1 and grid_dim[2] == 1, \"a grid-wide task's grid is (num_workers, 1, 1)\"");
        }
    }
    // The logical body width (contract doc §3.1; the worker launches 256 threads whatever it
    // says): the consumer warpgroup (128) when only the consumer role has a body, the whole
    // worker (256) when another role has one: a pipeline, or a consumer task whose generated
    // loader body hands its pages over (`pages_ready`) or fills a consumer ring.
    let block = if f.registration.bodies[1..].iter().any(|b| *b) {
        256
    } else {
        128
    };
    l(&format!(
        "        tb_graph = TBGraph(CyTBGraph(grid_dim, ({block}, 1, 1), 1, 64))"
    ));
    for t in &operands {
        l(&format!(
            "        tb_graph.new_input({t}, (-1, -1, -1), -1, True)"
        ));
    }
    l(&format!(
        "        self.kn_graph.customized([{}], tb_graph)",
        operands.join(", ")
    ));
    l(&format!(
        "        self.kn_graph.register_task(tb_graph, \"{}\", [])",
        f.unit
    ));
    l("");
    s
}

#[cfg(test)]
mod tests {
    use super::py_names;

    fn names(ts: &[&str]) -> Vec<String> {
        py_names(&ts.iter().map(|t| t.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn python_parameters_are_distinct_and_shadow_nothing() {
        assert_eq!(names(&["x", "w", "y"]), ["x", "w", "y"]);
        // A keyword takes `_`; a tensor already named so takes another.
        assert_eq!(names(&["lambda", "lambda_"]), ["lambda__", "lambda_"]);
        assert_eq!(names(&["lambda_", "lambda"]), ["lambda_", "lambda__"]);
        // The layer's own locals and the names it calls.
        assert_eq!(
            names(&["tb_graph", "CyTBGraph", "grid_dim", "self"]),
            ["tb_graph_", "CyTBGraph_", "grid_dim_", "self_"]
        );
    }
}
