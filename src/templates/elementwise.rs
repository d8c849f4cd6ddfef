//! Region-less consumer bodies (family D): `silu_mul(x -> y)` and `embedding(ids, table -> y)`.
//! Each task covers one slice of the last dimension for every row, in 8-element (16-byte) steps.

use super::{int_const, Access, Constant, Formal, RegionNeed, Shapes, Signature};
use crate::diag::Diagnostic;
use crate::ir::Dtype;

/// `silu_mul(x -> y)`: y = silu(x[:, :n]) * x[:, n:], fp32 math.
pub const SILU_MUL: Signature = Signature {
    name: "silu_mul",
    inputs: &[Formal {
        name: "x",
        dtypes: &[Dtype::Bf16],
        rank: 2,
        access: Access::Activation,
    }],
    outputs: &[Formal {
        name: "y",
        dtypes: &[Dtype::Bf16],
        rank: 2,
        access: Access::Activation,
    }],
    scalars: &[],
    positive: &[],
    at_most: &[],
    needs_barrier: false,
    strided: &[],
    in_place: &[],
    token_rows: &["x", "y"],
    summary: "SwiGLU: y = silu(gate) * up with x = [gate | up]",
};

/// `embedding(ids, table -> y)`: y[r, :] = table[ids[r], :] (rows of an out-of-range id are zero).
pub const EMBEDDING: Signature = Signature {
    name: "embedding",
    inputs: &[
        Formal {
            name: "ids",
            dtypes: &[Dtype::I32],
            rank: 1,
            access: Access::Activation,
        },
        Formal {
            name: "table",
            dtypes: &[Dtype::Bf16],
            rank: 2,
            access: Access::Weight,
        },
    ],
    outputs: &[Formal {
        name: "y",
        dtypes: &[Dtype::Bf16],
        rank: 2,
        access: Access::Activation,
    }],
    scalars: &[],
    positive: &[],
    at_most: &[],
    needs_barrier: false,
    strided: &[],
    in_place: &[],
    token_rows: &["ids", "y"],
    summary: "row gather from an embedding table",
};

type Bound = Result<(Vec<Constant>, Vec<RegionNeed>, &'static str, &'static str), Vec<Diagnostic>>;

/// Columns per task: `ceil(cols / tasks)` rounded up to a multiple of 8.
fn cols_per_task(cols: i64, tasks: i64) -> i64 {
    let per = crate::ir::exact::ceil_div(cols, tasks);
    // `cols` ≤ 2^31 - 1 here (bound extents are checked first), so this cannot overflow.
    crate::ir::exact::ceil_div(per, 8) * 8
}

/// Checks `x` is `[rows, 2n]`, `y` is `[rows, n]`, `n % 8 == 0`.
pub(super) fn bind_silu_mul(s: &Shapes<'_>) -> Bound {
    let (x, y) = (s.dims("x"), s.dims("y"));
    let mut errs = Vec::new();
    let (rows, n) = (y[0], y[1]);
    if x != [rows, 2 * n] {
        errs.push(s.error(
            "x",
            format!("`{}` must be [{rows}, {}] (gate and up halves of `{}`'s {n} columns), but it is {x:?}", s.tensor_name("x"), 2 * n, s.tensor_name("y")),
            format!("declare `{}` as [{rows}, 2 * {n}]", s.tensor_name("x")),
        ));
    }
    if n % 8 != 0 || n == 0 {
        errs.push(s.error(
            "y",
            format!(
                "the output width {n} is not a positive multiple of 8 (16-byte vectors of 8 bf16)"
            ),
            "use a width that is a multiple of 8".to_string(),
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let constants = vec![
        int_const("kRows", rows, format!("rows of `{}`", s.tensor_name("y"))),
        int_const(
            "kCols",
            n,
            format!(
                "columns of `{}` (half the columns of `{}`)",
                s.tensor_name("y"),
                s.tensor_name("x")
            ),
        ),
        int_const(
            "kColsPerTask",
            cols_per_task(n, s.tasks()),
            "ceil(kCols / kNumTasks), rounded up to 8",
        ),
    ];
    Ok((
        constants,
        Vec::new(),
        include_str!("../../stdlib/bodies/silu_mul.cu"),
        "stdlib/bodies/silu_mul.cu",
    ))
}

/// Checks `ids` is `[rows]`, `y` is `[rows, hidden]` with the table's hidden, `hidden % 8 == 0`.
pub(super) fn bind_embedding(s: &Shapes<'_>) -> Bound {
    let (ids, table, y) = (s.dims("ids"), s.dims("table"), s.dims("y"));
    let mut errs = Vec::new();
    let (vocab, hidden) = (table[0], table[1]);
    if y != [ids[0], hidden] {
        errs.push(s.error(
            "y",
            format!(
                "`{}` must be [{}, {hidden}] (one row of `{}` per id), but it is {y:?}",
                s.tensor_name("y"),
                ids[0],
                s.tensor_name("table")
            ),
            format!("declare `{}` as [{}, {hidden}]", s.tensor_name("y"), ids[0]),
        ));
    }
    if hidden % 8 != 0 || hidden == 0 {
        errs.push(s.error(
            "table",
            format!("the row width {hidden} is not a positive multiple of 8 (16-byte vectors of 8 bf16)"),
            "use a width that is a multiple of 8".to_string(),
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let constants = vec![
        int_const(
            "kRows",
            ids[0],
            format!("ids in `{}`", s.tensor_name("ids")),
        ),
        int_const(
            "kVocab",
            vocab,
            format!("rows of `{}`", s.tensor_name("table")),
        ),
        int_const(
            "kHidden",
            hidden,
            format!("columns of `{}`", s.tensor_name("table")),
        ),
        int_const(
            "kColsPerTask",
            cols_per_task(hidden, s.tasks()),
            "ceil(kHidden / kNumTasks), rounded up to 8",
        ),
    ];
    Ok((
        constants,
        Vec::new(),
        include_str!("../../stdlib/bodies/embedding.cu"),
        "stdlib/bodies/embedding.cu",
    ))
}

/// `splitk_reduce(partials -> y)`: y = bf16(sum over splits of the f32 partials), the reduce task
/// mpkc generates for a pipeline with a `split_k f32` epilogue.
pub const SPLITK_REDUCE: Signature = Signature {
    name: "splitk_reduce",
    inputs: &[Formal {
        name: "partials",
        dtypes: &[Dtype::F32],
        rank: 3,
        access: Access::Activation,
    }],
    outputs: &[Formal {
        name: "y",
        dtypes: &[Dtype::Bf16],
        rank: 2,
        access: Access::Activation,
    }],
    scalars: &[],
    positive: &[],
    at_most: &[],
    needs_barrier: false,
    strided: &[],
    in_place: &[],
    token_rows: &[],
    summary: "sum of split-K f32 partials into bf16",
};

/// Checks `partials` is `[splits, rows, cols]` and `y` is `[rows, cols]`.
pub(super) fn bind_splitk_reduce(s: &Shapes<'_>) -> Bound {
    let (p, y) = (s.dims("partials"), s.dims("y"));
    if p[1..] != *y {
        return Err(vec![s.error(
            "y",
            format!(
                "`{}` must be [{}, {}] (the partials without the split dimension), but it is {y:?}",
                s.tensor_name("y"),
                p[1],
                p[2]
            ),
            format!("declare `{}` as [{}, {}]", s.tensor_name("y"), p[1], p[2]),
        )]);
    }
    let constants = vec![
        int_const(
            "kSplits",
            p[0],
            format!("splits of `{}`", s.tensor_name("partials")),
        ),
        int_const("kRows", y[0], format!("rows of `{}`", s.tensor_name("y"))),
        int_const(
            "kCols",
            y[1],
            format!("columns of `{}`", s.tensor_name("y")),
        ),
    ];
    // The task grid: column slices of 128 (the linear's tile) times row groups where the task
    // count is a multiple of the slices (the derived reduce at M > 1, `driver::derived`); else
    // kNumTasks column slices of all the rows.
    let t = s.tasks().max(1);
    let slices = crate::ir::exact::ceil_div(y[1], 128).max(1);
    let (col_tasks, cols_per_task, rows_per_task) = if t > slices && t % slices == 0 {
        (slices, 128, crate::ir::exact::ceil_div(y[0], t / slices))
    } else {
        (t, crate::ir::exact::ceil_div(y[1], t), y[0])
    };
    let mut constants = constants;
    constants.push(int_const(
        "kColTasks",
        col_tasks,
        "column slices: ceil(kCols / 128) where kNumTasks is a multiple of it (then row groups too), else kNumTasks",
    ));
    constants.push(int_const(
        "kColsPerTask",
        cols_per_task,
        "columns of a slice: 128, else ceil(kCols / kNumTasks)",
    ));
    constants.push(int_const(
        "kRowsPerTask",
        rows_per_task,
        "rows of a row group: ceil(kRows / (kNumTasks / kColTasks))",
    ));
    Ok((
        constants,
        Vec::new(),
        include_str!("../../stdlib/bodies/splitk_reduce.cu"),
        "stdlib/bodies/splitk_reduce.cu",
    ))
}
