//! What `mpkc wire` says about one checked unit, taken from the checked task and from the
//! registration the generated `.cuh` states ([`crate::back::registration::Registration`]):
//! nothing here is recomputed from the contract text.

use crate::back::registration::Registration;
use crate::diag::{codes, Diagnostic};
use crate::driver::Checked;
use crate::ir::{Dtype, GranularityIr, TensorIr, TensorRole};
use crate::span::Span;
use crate::valid::CheckedTask;

/// The facts of one unit (`<task>` or `<task>_<instance>`) that the wiring pieces render.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitFacts {
    /// The unit name: the C++ namespace `kernel::<unit>`, the registrar
    /// `register_<unit>_task`, the graph name and the Python method `<unit>_layer`.
    pub unit: String,
    /// The task name as declared (shared by the instances of one task).
    pub task: String,
    /// The `enum TaskType` name: `TASK_<TASK>`, with `_V2` added unless the task name ends in
    /// `_v2` (contract doc §6.1 step 1: `TASK_<OP>_V2`). Instances share it: each is a variant.
    pub enum_name: String,
    /// The contract's `task_id`: the TaskType value.
    pub task_id: i64,
    /// The `task_id` item (for diagnostics).
    pub task_id_span: Span,
    /// The unit's declaration (for diagnostics about the unit as a whole).
    pub unit_span: Span,
    /// The registration the generated `.cuh` states.
    pub registration: Registration,
    /// Input tensor names (`in` and `inout`), in `input_ptrs` order.
    pub inputs: Vec<String>,
    /// Output tensor names (the `out` tensors; an `inout` one is an input), in `output_ptrs` order.
    pub outputs: Vec<String>,
    /// The `inout` tensors (each also among [`UnitFacts::inputs`]), in input order: MPK's graph
    /// also gets each as an output slot after [`UnitFacts::outputs`] (the same buffer), since
    /// its annotated graph makes a task the writer of a tensor through its output slots only
    /// ([`UnitFacts::mpk_outputs`]).
    pub written_inputs: Vec<String>,
    /// The outputs allocated zero and left zero by every run, each with what it is:
    /// [`CheckedTask::zero_between_runs`] (`split_k bf16`'s and `split_k atomic`'s counters, the
    /// latter's accumulator).
    pub zeroed: Vec<(String, &'static str)>,
    /// The grid barrier counters (`grid_barrier`) of a grid-wide task: seeded zero once, at
    /// step 0 (`tensor_init(..., skip_after_step0=True)`, I-H4).
    pub seeded_once: Vec<String>,
    /// `name=value` of every param of this instance, in declaration order: the plain variant
    /// string lists them all (I-H3).
    pub params: Vec<String>,
    /// Tasks per step (`per_tile`), or `None` for a grid-wide task (one per worker).
    pub tasks: Option<i64>,
    /// The lever defines the contract declares (compile-time, default off: wire defines none).
    pub levers: Vec<String>,
    /// `setmaxnreg consumer C, helpers H` (registers per thread), if declared: megakernel-wide
    /// build defines (contract doc §3.5) that wire reports but does not set.
    pub setmaxnreg: Option<(i64, i64)>,
    /// What the Python layer asserts of each DTensor it takes: [`UnitFacts::inputs`] then
    /// [`UnitFacts::outputs`], in that order.
    pub shapes: Vec<LayerTensor>,
}

/// The dtype and extents one DTensor handed to the Python layer must have: the generated kernel
/// compiles every extent in (no runtime params, I-H3), so a DTensor of another shape or element
/// type is read or written out of its bounds, silently. MPK's own layers assert `num_dims`
/// (python/mirage/mpk/persistent_kernel.py at de8745d9); mpkc asserts each extent too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerTensor {
    /// The contract's tensor name.
    pub name: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Its extents, outermost first (elements).
    pub dims: Vec<i64>,
    /// How the leading extent is held to `dims[0]`.
    pub leading: Leading,
    /// A row-strided view (`view(stride S, offset O)`): (S, O) in elements. Its extents are not
    /// asserted: MPK passes a DTensor's base pointer, and the DTensor that holds the view is its
    /// parent's storage, whose shape the contract does not state.
    pub view: Option<(i64, i64)>,
}

/// How the layer compares a DTensor's leading extent with the contract's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leading {
    /// Equal, as every other extent.
    Exact,
    /// At least `dims[0]`: the run-time token count's rows (`m_real = runtime`), whose buffer
    /// MPK may size for more tokens than the contract's maximum; the kernel touches rows below
    /// the step's count only, at most `dims[0]`.
    AtLeast,
    /// Any: a paged KV pool (`paged(...)`), whose page count is the allocation's, reached
    /// through MPK's page table.
    Any,
}

impl LayerTensor {
    fn of(t: &TensorIr) -> LayerTensor {
        let leading = if t.paged.is_some() {
            Leading::Any
        } else if t.runtime_rows {
            Leading::AtLeast
        } else {
            Leading::Exact
        };
        LayerTensor {
            name: t.name.clone(),
            dtype: t.dtype,
            dims: t.dims.clone(),
            leading,
            view: t.view.map(|v| (v.row_stride, v.offset)),
        }
    }
}

impl UnitFacts {
    /// The tensors MPK's graph takes as this task's outputs, in slot order: the `out` tensors,
    /// then each `inout` one again. MPK binds an edge of its task graph from the most recent
    /// task that has a tensor among its *outputs* to each later task that reads it
    /// (`build_annotated_graph`, src/kernel/annotated_graph.cc at de8745d9, "most-recent-writer
    /// rule"): a task that updates a tensor in place through an input slot alone is no writer of
    /// it, and a later task of the same step that reads the tensor would not wait for it. The
    /// kernel reads and writes an `inout` tensor through its `input_ptrs` slot; the output slot
    /// that repeats it is for the graph.
    pub fn mpk_outputs(&self) -> Vec<String> {
        self.outputs
            .iter()
            .chain(&self.written_inputs)
            .cloned()
            .collect()
    }

    /// The facts of `task`. Errors (diagnostics in `task`'s contract): no `task_id` (E0007), or
    /// a task with no registration to wire, such as a helper (E0803).
    pub fn of(task: &CheckedTask) -> Result<UnitFacts, Diagnostic> {
        let ir = &task.ir;
        let unit = ir.unit_name();
        let Some(registration) = Registration::of(task) else {
            return Err(Diagnostic::error(
                codes::WIRE_NO_REGISTRATION,
                format!(
                    "`{unit}` has no registration to wire: the {} family generates no task kernel",
                    ir.family.as_str()
                ),
            )
            .primary(ir.family_span, "this family is not a task of its own")
            .help("wire the task whose body calls this helper; `mpkc wire` registers task kernels only"));
        };
        let Some(task_id) = ir.task_id else {
            return Err(Diagnostic::error(
                codes::MISSING,
                format!("`{unit}` has no `task_id`: MPK's `enum TaskType` needs its value"),
            )
            .primary(ir.task_id_span, "this task declares no `task_id`")
            .help("add `task_id N` with a value free in MPK's `enum TaskType` (contract doc §6.1 step 1)"));
        };
        let enum_name = enum_name(&ir.name);
        let tasks = match &ir.granularity {
            GranularityIr::PerTile { tasks, .. } => Some(*tasks),
            GranularityIr::GridWide { .. } => None,
        };
        Ok(UnitFacts {
            unit,
            task: ir.name.clone(),
            enum_name,
            task_id,
            task_id_span: ir.task_id_span,
            unit_span: ir.unit_span(),
            registration,
            inputs: ir.inputs().map(|(_, t)| t.name.clone()).collect(),
            outputs: ir.outputs().map(|(_, t)| t.name.clone()).collect(),
            written_inputs: ir.in_place().map(|(_, t)| t.name.clone()).collect(),
            zeroed: ir
                .outputs()
                .filter(|(h, _)| task.zero_between_runs(*h))
                .map(|(_, t)| {
                    let what = if t.role() == Some(TensorRole::Counters) {
                        "arrival counters, one per output tile"
                    } else {
                        "the f32 sums the splits add to"
                    };
                    (t.name.clone(), what)
                })
                .collect(),
            seeded_once: ir
                .tensors
                .values()
                .filter(|t| t.role() == Some(TensorRole::GridBarrier))
                .map(|t| t.name.clone())
                .collect(),
            params: ir
                .params
                .values()
                .map(|p| format!("{}={}", p.name, p.value_text()))
                .collect(),
            tasks,
            levers: ir.levers.iter().map(|l| l.name.clone()).collect(),
            setmaxnreg: crate::back::setmaxnreg::targets(ir),
            shapes: ir
                .inputs()
                .chain(ir.outputs())
                .map(|(_, t)| LayerTensor::of(t))
                .collect(),
        })
    }

    /// The facts of `task`, checked in contract `c`: as [`UnitFacts::of`], except that a derived
    /// reduce unit belongs to the task its parent's instances share
    /// ([`crate::driver::Derived::task`], e.g. `linear_bf16_splitk_reduce`), so the reduces of all
    /// instances register as variants of one TaskType, the parent's `reduce_task_id`.
    pub fn of_unit(c: &Checked, task: &CheckedTask) -> Result<UnitFacts, Diagnostic> {
        let f = UnitFacts::of(task)?;
        Ok(match &c.derived {
            Some(d) => UnitFacts {
                enum_name: enum_name(&d.task),
                task: d.task.clone(),
                ..f
            },
            None => f,
        })
    }

    /// For a task mpkc derives (`derived`: the split-K reduce of a pipeline) that has no
    /// `task_id`: the W0804 warning saying that wire leaves it out. Its contract is generated, so
    /// there is no `task_id` for the user to add; MPK needs its registration from elsewhere.
    pub fn derived_without_id(task: &CheckedTask, derived: bool) -> Option<Diagnostic> {
        let ir = &task.ir;
        (derived && ir.task_id.is_none()).then(|| {
            Diagnostic::warning(
                codes::WIRE_DERIVED_SKIPPED,
                format!(
                    "`{}` is left out of the wiring: mpkc derives it and its contract has no TaskType",
                    ir.unit_name()
                ),
            )
            .primary(ir.task_id_span, "the derived contract declares no `task_id`")
            .help("declare the reduce task's TaskType in the split-K contract: `reduce_task_id N`, with N free in MPK's `enum TaskType` and outside the TMA range 232..=255 (the reduce loads no tensor maps)")
        })
    }

    /// The megakernel build defines this unit needs (`NAME=VALUE`, for `-D`): MPK's
    /// `MPK_SETMAXNREG`, `MPK_CONSUMER_REGS`, `MPK_HELPER_REGS` when the contract declares
    /// `setmaxnreg` (contract doc §3.5; its `.cuh` stops the compile when they disagree), else
    /// none. Wire edits no build file: it prints them.
    pub fn build_defines(&self) -> Vec<String> {
        match self.setmaxnreg {
            Some((c, h)) => vec![
                "MPK_SETMAXNREG=1".into(),
                format!("MPK_CONSUMER_REGS={c}"),
                format!("MPK_HELPER_REGS={h}"),
            ],
            None => Vec::new(),
        }
    }

    /// The plain variant string passed to `register_task_variant` (the variant key, deduplicated
    /// by string equality): the unit and every param, so that no two behaviours alias (I-H3).
    pub fn variant_key(&self) -> String {
        let mut s = format!("mpkc:{}", self.unit);
        for p in &self.params {
            s.push(' ');
            s.push_str(p);
        }
        s
    }
}

/// The `enum TaskType` name of task `task`: `TASK_<TASK>`, with `_V2` added unless the name ends in
/// `_v2` (contract doc §6.1 step 1: `TASK_<OP>_V2`).
pub(crate) fn enum_name(task: &str) -> String {
    let upper = task.to_ascii_uppercase();
    if upper.ends_with("_V2") {
        format!("TASK_{upper}")
    } else {
        format!("TASK_{upper}_V2")
    }
}
