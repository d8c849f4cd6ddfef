//! `rmsnorm(x, w -> y; eps)`: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, with fp32
//! accumulation. One task per `ceil(rows / tasks)` rows. Regions as MPK's rmsnorm_v2
//! (contract doc §1.6b): `input`, `weight`, `output` (2 × hidden bytes each) and `reduce`
//! (one fp32 partial sum per consumer warp).

use super::{int_const, Access, Constant, Formal, RegionNeed, Shapes, Signature};
use crate::diag::Diagnostic;
use crate::ir::Dtype;

/// The signature.
pub const SIG: Signature = Signature {
    name: "rmsnorm",
    inputs: &[
        Formal {
            name: "x",
            dtypes: &[Dtype::Bf16],
            rank: 2,
            access: Access::Activation,
        },
        Formal {
            name: "w",
            dtypes: &[Dtype::Bf16],
            rank: 1,
            access: Access::Weight,
        },
    ],
    outputs: &[Formal {
        name: "y",
        dtypes: &[Dtype::Bf16],
        rank: 2,
        access: Access::Activation,
    }],
    scalars: &[("eps", true)],
    positive: &[(
        "eps",
        "y = x / sqrt(mean(x^2) + eps) * w: with eps <= 0 an all-zero row of x gives inf or NaN",
    )],
    at_most: &[],
    needs_barrier: true,
    // Each row is staged whole in `input` before any of it is written: `y` may be `x` itself
    // (an `inout` tensor normalised in place), and both step rows by their own stride.
    strided: &["x", "y"],
    in_place: &[("x", "y")],
    token_rows: &["x", "y"],
    summary: "RMSNorm over the last dimension, fp32 accumulation",
};

type Bound = Result<(Vec<Constant>, Vec<RegionNeed>, &'static str, &'static str), Vec<Diagnostic>>;

/// Checks `w` is `[hidden]`, `y` is `x`'s shape and `hidden % 8 == 0` (16-byte vectors).
pub(super) fn bind(s: &Shapes<'_>) -> Bound {
    let x = s.dims("x");
    let (rows, hidden) = (x[0], x[1]);
    let mut errs = Vec::new();
    if s.dims("w") != [hidden] {
        errs.push(s.error(
            "w",
            format!(
                "`{}` must be [{hidden}] to scale rows of `{}`, but it is {:?}",
                s.tensor_name("w"),
                s.tensor_name("x"),
                s.dims("w")
            ),
            format!("declare `{}` with shape [{hidden}]", s.tensor_name("w")),
        ));
    }
    if s.dims("y") != x {
        errs.push(s.error(
            "y",
            format!(
                "`{}` must have the shape of `{}` {:?}, but it is {:?}",
                s.tensor_name("y"),
                s.tensor_name("x"),
                x,
                s.dims("y")
            ),
            format!("declare `{}` with shape {:?}", s.tensor_name("y"), x),
        ));
    }
    if hidden % 8 != 0 || hidden == 0 {
        errs.push(s.error(
            "x",
            format!("the hidden size {hidden} is not a positive multiple of 8 (the body moves 16-byte vectors of 8 bf16)"),
            "use a hidden size that is a multiple of 8".to_string(),
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let rows_per_task = crate::ir::exact::ceil_div(rows, s.tasks());
    let constants = vec![
        int_const("kRows", rows, format!("rows of `{}`", s.tensor_name("x"))),
        int_const(
            "kHidden",
            hidden,
            format!("elements per row of `{}`", s.tensor_name("x")),
        ),
        int_const("kRowsPerTask", rows_per_task, "ceil(kRows / kNumTasks)"),
        int_const(
            "kXRowStride",
            s.row_stride("x"),
            format!("elements between rows of `{}`", s.tensor_name("x")),
        ),
        int_const(
            "kYRowStride",
            s.row_stride("y"),
            format!("elements between rows of `{}`", s.tensor_name("y")),
        ),
    ];
    let regions = vec![
        RegionNeed {
            name: "input",
            min_bytes: 2 * hidden,
            what: "one bf16 row of x",
            min_align: 16,
            ring: None,
        },
        RegionNeed {
            name: "weight",
            min_bytes: 2 * hidden,
            what: "the bf16 weight vector",
            min_align: 16,
            ring: None,
        },
        RegionNeed {
            name: "output",
            min_bytes: 2 * hidden,
            what: "one bf16 row of y",
            min_align: 16,
            ring: None,
        },
        RegionNeed {
            name: "reduce",
            min_bytes: 4 * 4,
            what: "one fp32 partial sum per consumer warp",
            min_align: 4,
            ring: None,
        },
    ];
    Ok((
        constants,
        regions,
        include_str!("../../stdlib/bodies/rmsnorm.cu"),
        "stdlib/bodies/rmsnorm.cu",
    ))
}
