//! The stdlib body templates: for each op kind, its signature (formal tensors with dtypes and
//! ranks, scalars, the regions its body addresses), the binding of a contract's tensors to the
//! formals (shape relations checked, constants derived), and the CUDA body text
//! (`stdlib/bodies/<name>.cu`), which the consumer backend pastes into the generated `.cuh`.
//!
//! Inside a body these names are in scope: the role parameters (`task_desc`, `runtime_config`,
//! `runtime_smem`, `instruction_index`, `iter_num`); `buf.<region>` (a `char *` per planned
//! region, from `smem_region_offset`); each formal tensor as a typed pointer (`const __restrict__`
//! only for an [`Access::Weight`] input; a body reads every other input with coherent loads,
//! never `mpkc::ld_global_nc_v8`); the binding's
//! constants; `kConsumerThreads` (128), `kNumTasks`, `task_offset`, and `kSyncBarrier` when the
//! template synchronises the consumer warpgroup.

mod argmax;
mod elementwise;
pub mod gemv;
pub mod gemv_fp8;
pub mod gemv_mma;
pub mod gemv_mma_fp8;
mod rmsnorm;

use crate::diag::{codes, Diagnostic};
use crate::ir::{BodyIr, Dtype, ParamType, ParamValue, TaskIr, TensorHandle};
use crate::span::Span;

/// How a body may read an input: whether a task of the same persistent launch can write it.
///
/// A contract does not say which of its tensors are model weights (a tensor is only `in` or
/// `out`), so the template states it for each input formal from what the op is; an inline
/// `body cuda` gets [`Access::Activation`] for every input, the conservative default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A model parameter (a norm weight, an embedding table): written by the host before the
    /// launch and by no task during it, so the body may read it through the non-coherent path
    /// (a `const __restrict__` pointer, `mpkc::ld_global_nc_v8`, i.e. `ld.global.nc`).
    Weight,
    /// Data a task of the same launch may have written moments before (activations, token ids,
    /// partial results): read only with coherent loads, never `ld.global.nc`, whose data the PTX
    /// ISA requires to be read-only for the whole kernel. The pointer has no `__restrict__`;
    /// 16-byte vectors go through `mpkc::ld_global_v8` (`ld.global.cg`). Outputs are this too.
    Activation,
}

/// A formal tensor of a template.
#[derive(Clone, Copy, Debug)]
pub struct Formal {
    /// Name used in the body text.
    pub name: &'static str,
    /// Accepted element types.
    pub dtypes: &'static [Dtype],
    /// Number of dimensions.
    pub rank: usize,
    /// How the body reads it.
    pub access: Access,
}

/// A template's signature.
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    /// Template name as written in `body NAME(...)`.
    pub name: &'static str,
    /// Input formals, in order.
    pub inputs: &'static [Formal],
    /// Output formals, in order.
    pub outputs: &'static [Formal],
    /// Scalar formals: (name, is_float).
    pub scalars: &'static [(&'static str, bool)],
    /// Scalar formals whose value must be above zero (`E0009`), each with the reason (a note):
    /// rmsnorm's `eps`, which keeps `1 / sqrt(mean(x^2) + eps)` finite on an all-zero row.
    pub positive: &'static [(&'static str, &'static str)],
    /// Integer scalar formals with the largest value the body takes (`E0009`), each with the
    /// reason (a note): argmax's `chunk`, the body's `int kChunk`.
    pub at_most: &'static [(&'static str, i64, &'static str)],
    /// Whether the body synchronises the consumer warpgroup with a named barrier.
    pub needs_barrier: bool,
    /// Formals whose rows the body steps by a row-stride constant (`k<F>RowStride`), so that they
    /// may be bound to a `view(stride …)`; every other formal is indexed as contiguous rows.
    pub strided: &'static [&'static str],
    /// (input formal, output formal) pairs the body may bind to one `inout` tensor: it reads all
    /// it needs of the input before it writes the output over it.
    pub in_place: &'static [(&'static str, &'static str)],
    /// The formals whose rows are the tokens, where the body takes a token count decided at run
    /// time (`kRows` then read from the runtime, docs/runtime-m.md); empty where it cannot (its
    /// layout strides by the row count, as the split-K reduce's partials do): E0023.
    pub token_rows: &'static [&'static str],
    /// One-line description for docs.
    pub summary: &'static str,
}

/// A constant emitted for the body.
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    /// C++ name.
    pub name: String,
    /// C++ type.
    pub cty: &'static str,
    /// Value as C++ text.
    pub value: String,
    /// What it is and where it comes from.
    pub comment: String,
}

/// A region the body addresses, with the bytes it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionNeed {
    /// Region name the body uses (`buf.<name>`).
    pub name: &'static str,
    /// Minimum size in bytes.
    pub min_bytes: i64,
    /// Minimum alignment in bytes: the widest access the body makes there (16 for a 16-byte
    /// vector, 8 for an int64, 4 for an f32); a region aligned to less is E0110.
    pub min_align: i64,
    /// What the body keeps there.
    pub what: &'static str,
    /// For a ring the body fills in whole slots: how it uses the declared bytes (`None`: the
    /// body uses every byte up to `min_bytes` and no more).
    pub ring: Option<RingUse>,
}

/// How a body uses a ring region's bytes: whole slots of `slot_bytes`, as many as fit, at most
/// `max_slots` (W0116 where a page or more is left over, W0117 at two slots of a longer stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingUse {
    /// Bytes of one slot (one cp.async group of every consumer thread).
    pub slot_bytes: i64,
    /// Groups a thread streams at most: `stream_groups + 1` slots put every one in flight at the
    /// start (one slot stays free for the refill), so more change nothing.
    pub stream_groups: i64,
    /// The most slots the body uses: `stream_groups + 1`, or fewer where the body caps its depth.
    pub max_slots: i64,
}

impl RingUse {
    /// A ring of `slot_bytes` slots over a stream of `stream_groups` groups, at most `cap` slots.
    pub fn new(slot_bytes: i64, stream_groups: i64, cap: i64) -> RingUse {
        RingUse {
            slot_bytes,
            stream_groups,
            max_slots: stream_groups.saturating_add(1).min(cap).max(2),
        }
    }

    /// Slots a region of `bytes` gives the body: whole slots, at most `max_slots`.
    pub fn slots(&self, bytes: i64) -> i64 {
        (bytes / self.slot_bytes.max(1)).min(self.max_slots)
    }
}

/// A contract bound to a template.
#[derive(Clone, Debug)]
pub struct Binding {
    /// The template.
    pub sig: Signature,
    /// Formal name → the contract's tensor.
    pub tensors: Vec<(&'static str, TensorHandle)>,
    /// Formal scalar name → (the contract's param name, its value).
    pub scalars: Vec<(&'static str, String, ParamValue)>,
    /// Constants for the body.
    pub constants: Vec<Constant>,
    /// Regions the body addresses.
    pub regions: Vec<RegionNeed>,
    /// The CUDA body text.
    pub body: &'static str,
    /// Source path of the body text, for the comment in the `.cuh`.
    pub body_path: &'static str,
}

/// Every template.
pub const CATALOGUE: &[Signature] = &[
    rmsnorm::SIG,
    elementwise::SILU_MUL,
    elementwise::EMBEDDING,
    argmax::PARTIAL,
    argmax::REDUCE,
    elementwise::SPLITK_REDUCE,
    gemv::SIG,
    gemv_mma::SIG,
    gemv_fp8::SIG,
    gemv_mma_fp8::SIG,
];

/// Looks up a template by name.
pub fn signature(name: &str) -> Option<Signature> {
    CATALOGUE.iter().copied().find(|s| s.name == name)
}

/// Shapes of the bound tensors, by formal name, for the template-specific checks.
pub(crate) struct Shapes<'a> {
    ir: &'a TaskIr,
    tensors: &'a [(&'static str, TensorHandle)],
    span: Span,
}

impl Shapes<'_> {
    /// The dims of formal `f`.
    pub fn dims(&self, f: &str) -> &[i64] {
        self.tensors
            .iter()
            .find(|(n, _)| *n == f)
            .map(|(_, h)| self.ir.tensors[*h].dims.as_slice())
            .unwrap_or(&[])
    }

    /// Elements between rows of formal `f`'s tensor (its view's stride, else its row length).
    pub fn row_stride(&self, f: &str) -> i64 {
        self.tensors
            .iter()
            .find(|(n, _)| *n == f)
            .map_or(1, |(_, h)| self.ir.tensors[*h].row_stride())
    }

    /// The contract's name for formal `f`.
    pub fn tensor_name<'b>(&'b self, f: &'b str) -> &'b str {
        self.tensors
            .iter()
            .find(|(n, _)| *n == f)
            .map(|(_, h)| self.ir.tensors[*h].name.as_str())
            .unwrap_or(f)
    }

    /// The declaration span of formal `f`'s tensor.
    pub fn tensor_span(&self, f: &str) -> Span {
        self.tensors
            .iter()
            .find(|(n, _)| *n == f)
            .map(|(_, h)| self.ir.tensors[*h].span)
            .unwrap_or(self.span)
    }

    /// An `E0009` error about formal `f`.
    pub fn error(&self, f: &str, message: String, help: String) -> Diagnostic {
        Diagnostic::error(codes::BODY_MISMATCH, message)
            .primary(self.tensor_span(f), format!("bound to `{f}` of the body"))
            .secondary(self.span, "the body")
            .help(help)
    }

    /// The declared size in bytes of region `name` (its first member), if the contract declares
    /// it.
    pub fn region_bytes(&self, name: &str) -> Option<i64> {
        let g = self.ir.group_by_name(name)?;
        g.members.first().map(|h| self.ir.regions[*h].size)
    }

    /// Number of tasks of the task's granularity.
    pub fn tasks(&self) -> i64 {
        self.ir.granularity.tasks()
    }
}

/// Binds `ir`'s body to its template: arity, dtypes and ranks (`E0009`), then the template's own
/// shape relations. Returns `None` for inline CUDA bodies and bodies that fail to bind.
pub fn bind(ir: &TaskIr) -> Result<Option<Binding>, Vec<Diagnostic>> {
    let Some(BodyIr::Template {
        name,
        inputs,
        outputs,
        scalars,
        span,
    }) = &ir.body
    else {
        return Ok(None);
    };
    let Some(sig) = signature(name) else {
        let known: Vec<String> = CATALOGUE.iter().map(|s| format!("`{}`", s.name)).collect();
        return Err(vec![Diagnostic::error(
            codes::BODY_MISMATCH,
            format!("unknown body template `{name}`"),
        )
        .primary(*span, "not a stdlib template")
        .help(format!(
            "templates: {}; or write `body cuda {{ … }}`",
            known.join(", ")
        ))]);
    };
    let mut errs = Vec::new();
    let mut bound = Vec::new();
    check_list(
        ir, &sig, "input", sig.inputs, inputs, *span, &mut bound, &mut errs,
    );
    check_list(
        ir,
        &sig,
        "output",
        sig.outputs,
        outputs,
        *span,
        &mut bound,
        &mut errs,
    );
    // A tensor passed as an input and as an output is updated in place: say `inout`.
    for d in errs.iter_mut() {
        for h in inputs.iter().filter(|h| outputs.contains(h)) {
            let name = &ir.tensors[*h].name;
            if d.message.starts_with(&format!("`{name}` is passed as an ")) {
                d.help = Some(format!(
                    "`{name}` is both read and written: declare it `inout` (updated in place through its input slot)"
                ));
            }
        }
    }
    let mut scalar_vals = Vec::new();
    if scalars.len() != sig.scalars.len() {
        errs.push(arity(
            &sig,
            "scalar",
            sig.scalars.len(),
            scalars.len(),
            *span,
        ));
    } else {
        for ((formal, is_float), actual) in sig.scalars.iter().zip(scalars) {
            let Some(p) = ir.params.get(actual) else {
                continue;
            };
            // Template scalars are `float` or integer: an `f64` (or `bool`) param does not fit.
            let ok = if *is_float {
                p.ty == ParamType::F32
            } else {
                p.ty.is_int()
            };
            if !ok {
                errs.push(
                    Diagnostic::error(
                        codes::BODY_MISMATCH,
                        format!(
                            "scalar `{formal}` of `{}` must be {}, but `{actual}` is the `{}` {}",
                            sig.name,
                            kind(*is_float),
                            p.ty.name(),
                            p.value
                        ),
                    )
                    .primary(p.span, "param declared here")
                    .secondary(*span, "passed here")
                    .help(format!(
                        "pass a param of type {}",
                        if *is_float { "`f32`" } else { "`int`" }
                    )),
                );
            }
            let non_positive = match p.value {
                ParamValue::Int(v) => v <= 0,
                ParamValue::Float(v) => v <= 0.0,
                ParamValue::Bool(_) => false,
            };
            let positive = sig
                .positive
                .iter()
                .find(|(f, _)| f == formal)
                .map(|(_, w)| *w);
            if let (true, true, Some(why)) = (ok, non_positive, positive) {
                errs.push(out_of_bounds(
                    (sig.name, formal, actual),
                    p,
                    "above zero".into(),
                    why,
                    ("a small positive value", Some("1e-6")),
                    *span,
                ));
            }
            if let (true, ParamValue::Int(v)) = (ok, &p.value) {
                if let Some((_, max, why)) = sig.at_most.iter().find(|(f, ..)| f == formal) {
                    if v > max {
                        errs.push(out_of_bounds(
                            (sig.name, formal, actual),
                            p,
                            format!("at most {max}"),
                            why,
                            (&format!("a value of at most {max}"), None),
                            *span,
                        ));
                    }
                }
            }
            scalar_vals.push((*formal, actual.clone(), p.value.clone()));
        }
    }
    for (formal, h) in &bound {
        let t = &ir.tensors[*h];
        if t.extent_past_i32().is_none() && t.elements().is_none() {
            // Every extent fits 32 bits but their product does not fit 64: say that, exactly.
            errs.push(
                Diagnostic::error(codes::BODY_MISMATCH, format!("the extents of `{}` multiply to more than {} elements, which body `{}` cannot index", t.name, i64::MAX, sig.name))
                    .primary(t.span, format!("{:?}", t.dims))
                    .secondary(*span, format!("bound to `{formal}` here"))
                    .help(format!("declare `{}` smaller: its elements must count at most {} (give each instance a part of a larger tensor)", t.name, i64::MAX)),
            );
        } else if t.extent_past_i32().is_some() {
            errs.push(
                Diagnostic::error(codes::BODY_MISMATCH, format!("`{}` has an extent above 2^31 - 1, which body `{}` indexes with 32-bit ints", t.name, sig.name))
                    .primary(t.span, format!("{:?}", t.dims))
                    .secondary(*span, format!("bound to `{formal}` here"))
                    .help(format!("declare each extent of `{}` at most 2147483647 (2^31 - 1): give each instance a part of a larger tensor", t.name)),
            );
        }
    }
    views_and_in_place(ir, &sig, &bound, *span, &mut errs);
    if !errs.is_empty() {
        return Err(errs);
    }
    if sig.needs_barrier
        && !ir
            .barriers
            .values()
            .any(|b| b.by == crate::ir::RoleKind::Consumer)
    {
        return Err(vec![Diagnostic::error(codes::BODY_MISMATCH, format!("body `{}` synchronises the consumer warpgroup but the contract declares no named barrier of the consumers", sig.name))
            .primary(*span, "needs a consumer named barrier")
            .help("declare one, e.g. `barrier task_sync = named(2, threads 128)` (ids 1-15 except 8)")]);
    }
    let shapes = Shapes {
        ir,
        tensors: &bound,
        span: *span,
    };
    let values: Vec<(&'static str, ParamValue)> = scalar_vals
        .iter()
        .map(|(f, _, v)| (*f, v.clone()))
        .collect();
    let specific = match sig.name {
        "rmsnorm" => rmsnorm::bind(&shapes),
        "silu_mul" => elementwise::bind_silu_mul(&shapes),
        "embedding" => elementwise::bind_embedding(&shapes),
        "argmax_partial" => argmax::bind_partial(&shapes, &values),
        "argmax_reduce" => argmax::bind_reduce(&shapes, &values),
        "splitk_reduce" => elementwise::bind_splitk_reduce(&shapes),
        "gemv" => gemv::bind(&shapes),
        "gemv_mma" => gemv_mma::bind(&shapes),
        "gemv_fp8" => gemv_fp8::bind(&shapes),
        "gemv_mma_fp8" => gemv_mma_fp8::bind(&shapes),
        _ => unreachable!("template {} has no binder", sig.name),
    };
    let (constants, regions, body, body_path) = specific?;
    Ok(Some(Binding {
        sig,
        tensors: bound,
        scalars: scalar_vals,
        constants,
        regions,
        body,
        body_path,
    }))
}

/// A view bound to a formal the body indexes as contiguous rows (`E0020`), and an `inout` tensor
/// not bound to exactly one of the body's in-place (input, output) pairs (`E0021`); a tensor
/// passed as an input and an output but declared `in` or `out` is `E0009` (`check_list`).
/// `docs/language.md`, "Tensor views" and "`inout`".
fn views_and_in_place(
    ir: &TaskIr,
    sig: &Signature,
    bound: &[(&'static str, TensorHandle)],
    span: Span,
    errs: &mut Vec<Diagnostic>,
) {
    for (formal, h) in bound {
        let t = &ir.tensors[*h];
        if let Some(v) = &t.view {
            if !sig.strided.contains(formal) {
                errs.push(
                    Diagnostic::error(
                        codes::TENSOR_VIEW,
                        format!(
                            "body `{}` indexes `{formal}` as contiguous rows, so `{}` cannot be a view",
                            sig.name, t.name
                        ),
                    )
                    .primary(v.span, "a row-strided view")
                    .secondary(span, format!("bound to `{formal}` here"))
                    .note(format!(
                        "formals of `{}` that take a view: {}",
                        sig.name,
                        list_or_none(sig.strided.iter().copied())
                    ))
                    .help(format!(
                        "pass a contiguous tensor (copy the slice first), or write `body cuda {{ … }}` stepping rows by `{}_row_stride`",
                        t.name
                    )),
                );
            }
        }
    }
    for (h, t) in ir.tensors.iter() {
        let formals: Vec<&'static str> = bound
            .iter()
            .filter(|(_, x)| *x == h)
            .map(|(f, _)| *f)
            .collect();
        let pair = match formals.as_slice() {
            [i, o] => sig.in_place.iter().any(|(a, b)| a == i && b == o),
            _ => false,
        };
        if t.direction == crate::ir::Direction::InOut && !pair {
            let pairs: Vec<String> = sig
                .in_place
                .iter()
                .map(|(a, b)| format!("`{a}` and `{b}`"))
                .collect();
            errs.push(
                Diagnostic::error(
                    codes::IN_PLACE,
                    format!(
                        "`{}` is `inout` but body `{}` does not read and write it in place",
                        t.name, sig.name
                    ),
                )
                .primary(t.span, "declared `inout`")
                .secondary(
                    span,
                    format!(
                        "bound to {}",
                        list_or_none(formals.iter().map(|f| format!("`{f}`")))
                    ),
                )
                .note(format!(
                    "in-place pairs of `{}`: {}",
                    sig.name,
                    if pairs.is_empty() {
                        "none".to_string()
                    } else {
                        pairs.join(", ")
                    }
                ))
                .help(match sig.in_place.first() {
                    Some((a, b)) => format!(
                        "pass `{}` as both `{a}` and `{b}`, or declare it `in` or `out`",
                        t.name
                    ),
                    None => format!(
                        "declare `{}` `in` or `out` and give the result its own tensor",
                        t.name
                    ),
                }),
            );
        }
    }
}

fn list_or_none<S: std::fmt::Display>(items: impl Iterator<Item = S>) -> String {
    let v: Vec<String> = items.map(|s| s.to_string()).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

fn kind(is_float: bool) -> &'static str {
    if is_float {
        "an `f32`"
    } else {
        "an integer"
    }
}

/// E0009 for scalar `formal` of body `body` bound to param `actual` (`p`) whose value is not
/// `bound` ("above zero", "at most 2147483647"), with the reason `why` and a value to suggest
/// (what it is, and an example where one helps). A `--param` override's
/// value span is the whole declaration (`sema::params`): the label and help then name the
/// command line, and the note [`crate::sema::CLI_VALUE_NOTE`] keeps it from being noted with the
/// instances that found it.
fn out_of_bounds(
    (body, formal, actual): (&str, &str, &str),
    p: &crate::ir::ParamIr,
    bound: String,
    why: &str,
    (suggestion, example): (&str, Option<&str>),
    call: Span,
) -> Diagnostic {
    let cli = p.value_span == p.span;
    let (label, help) = if cli {
        (
            format!("`{actual}` = {} from `--param`", p.value_text()),
            match example {
                Some(e) => format!("pass {suggestion}, e.g. `--param {actual}={e}`"),
                None => format!("pass {suggestion} with `--param {actual}=…`"),
            },
        )
    } else {
        (
            format!("`{actual}` = {}", p.value_text()),
            match example {
                Some(e) => format!("give `{actual}` {suggestion}, e.g. {e}"),
                None => format!("give `{actual}` {suggestion}"),
            },
        )
    };
    let mut d = Diagnostic::error(
        codes::BODY_MISMATCH,
        format!(
            "scalar `{formal}` of `{body}` must be {bound}, but `{actual}` is {}",
            p.value_text()
        ),
    )
    .primary(p.value_span, label)
    .secondary(call, "passed here")
    .note(why);
    if cli {
        d = d.note(crate::sema::CLI_VALUE_NOTE);
    }
    d.help(help)
}

fn arity(sig: &Signature, what: &str, want: usize, got: usize, span: Span) -> Diagnostic {
    Diagnostic::error(
        codes::BODY_MISMATCH,
        format!(
            "`{}` takes {want} {what} argument{} but {got} {} given",
            sig.name,
            plural(want),
            if got == 1 { "was" } else { "were" }
        ),
    )
    .primary(span, format!("{got} {what}s here"))
    .help(format!("write `body {}`", usage(sig)))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The usage line of a template: `rmsnorm(x, w -> y; eps)`.
pub fn usage(sig: &Signature) -> String {
    let ins: Vec<&str> = sig.inputs.iter().map(|f| f.name).collect();
    let outs: Vec<&str> = sig.outputs.iter().map(|f| f.name).collect();
    let sc: Vec<&str> = sig.scalars.iter().map(|s| s.0).collect();
    let mut s = format!("{}({} -> {}", sig.name, ins.join(", "), outs.join(", "));
    if !sc.is_empty() {
        s.push_str("; ");
        s.push_str(&sc.join(", "));
    }
    s.push(')');
    s
}

#[allow(clippy::too_many_arguments)]
fn check_list(
    ir: &TaskIr,
    sig: &Signature,
    what: &str,
    formals: &[Formal],
    actuals: &[TensorHandle],
    span: Span,
    bound: &mut Vec<(&'static str, TensorHandle)>,
    errs: &mut Vec<Diagnostic>,
) {
    if formals.len() != actuals.len() {
        errs.push(arity(sig, what, formals.len(), actuals.len(), span));
        return;
    }
    for (f, h) in formals.iter().zip(actuals) {
        let t = &ir.tensors[*h];
        let want_dir_out = what == "output";
        // An input formal reads (`in`, `inout`), an output formal writes (`out`, `inout`).
        let fits = if want_dir_out {
            t.direction.is_written()
        } else {
            t.direction.is_read()
        };
        if !fits {
            errs.push(
                Diagnostic::error(
                    codes::BODY_MISMATCH,
                    format!(
                        "`{}` is passed as an {what} of `{}` but declared `{}`",
                        t.name,
                        sig.name,
                        t.direction.as_str()
                    ),
                )
                .primary(t.span, "declared here")
                .secondary(span, "passed here")
                .help(format!(
                    "declare `{}` as `{}`",
                    t.name,
                    if want_dir_out { "out" } else { "in" }
                )),
            );
        }
        // A weight formal is read through `ld.global.nc`, whose data must be read-only for the
        // whole kernel (PTX ISA): a tensor the contract calls something else may be written by
        // another task of the launch (an activation, a residual) or by this one.
        if let (Access::Weight, Some((role, role_span))) = (f.access, t.role) {
            if role != crate::ir::TensorRole::Weight {
                errs.push(
                    Diagnostic::error(
                        codes::BODY_MISMATCH,
                        format!(
                            "`{}` of `{}` is read as a weight, data no task of the launch writes, but `{}` is declared `{}`",
                            f.name,
                            sig.name,
                            t.name,
                            role.word()
                        ),
                    )
                    .primary(role_span, format!("`{}` here", role.word()))
                    .secondary(span, "passed here")
                    .note("a weight formal's pointer is `const __restrict__`: the body (rmsnorm's, the embedding's `mpkc::ld_global_nc_v8`) or the compiler may read it through the non-coherent path (`ld.global.nc`), which may return stale data for memory another task of the launch wrote; the GEMVs stream it with an L2 evict-first policy, read once per step")
                    .help(format!(
                        "pass a tensor declared `in weight` (written by no task of the launch) as `{}`",
                        f.name
                    )),
                );
            }
        }
        if !f.dtypes.contains(&t.dtype) {
            let want: Vec<&str> = f.dtypes.iter().map(|d| d.as_str()).collect();
            errs.push(
                Diagnostic::error(
                    codes::BODY_MISMATCH,
                    format!(
                        "`{}` of `{}` takes {} but `{}` is {}",
                        f.name,
                        sig.name,
                        want.join(" or "),
                        t.name,
                        t.dtype
                    ),
                )
                .primary(t.span, format!("{} here", t.dtype))
                .secondary(span, "passed here")
                .help(format!(
                    "declare `{}` with element type {}",
                    t.name,
                    want.join(" or ")
                )),
            );
        }
        if t.dims.len() != f.rank {
            errs.push(
                Diagnostic::error(
                    codes::BODY_MISMATCH,
                    format!(
                        "`{}` of `{}` has {} dimension{} but `{}` has {}",
                        f.name,
                        sig.name,
                        f.rank,
                        plural(f.rank),
                        t.name,
                        t.dims.len()
                    ),
                )
                .primary(t.span, format!("{} dimensions", t.dims.len()))
                .secondary(span, "passed here")
                .help(format!("`{}` expects `{}`", sig.name, usage(sig))),
            );
        }
        bound.push((f.name, *h));
    }
}

/// A constant of C++ type `int`.
pub(crate) fn int_const(name: &str, value: i64, comment: impl Into<String>) -> Constant {
    Constant {
        name: name.to_string(),
        cty: "int",
        value: crate::back::names::int_literal(value),
        comment: comment.into(),
    }
}
