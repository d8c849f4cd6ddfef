//! Greedy argmax in two task types (contract doc §4): `argmax_partial(logits -> val, idx; chunk)`
//! scans one vocabulary chunk per task and writes the chunk's best value and
//! `(chunk << 32) | index-in-chunk`; `argmax_reduce(val, idx -> token; chunk)` reduces the chunks
//! to one token index per row. Ties go to the lowest index. Regions as MPK's argmax_v2
//! (contract doc §1.6c): 32 candidates each in `idx` (8 B) and `val` (2 B), one per consumer warp
//! (4) for each row of a batch of 8, so that both bodies reduce 8 rows between two barriers.

use super::{int_const, Access, Constant, Formal, RegionNeed, Shapes, Signature};
use crate::diag::Diagnostic;
use crate::ir::{Dtype, ParamValue};

/// `argmax_partial(logits -> val, idx; chunk)`.
pub const PARTIAL: Signature = Signature {
    name: "argmax_partial",
    inputs: &[Formal {
        name: "logits",
        dtypes: &[Dtype::Bf16],
        rank: 2,
        access: Access::Activation,
    }],
    outputs: &[
        Formal {
            name: "val",
            dtypes: &[Dtype::Bf16],
            rank: 2,
            access: Access::Activation,
        },
        Formal {
            name: "idx",
            dtypes: &[Dtype::I64],
            rank: 2,
            access: Access::Activation,
        },
    ],
    scalars: &[("chunk", false)],
    positive: &[("chunk", CHUNK_POSITIVE)],
    at_most: &[("chunk", i32::MAX as i64, CHUNK_MAX)],
    needs_barrier: true,
    strided: &[],
    in_place: &[],
    token_rows: &["logits", "val", "idx"],
    summary: "per-chunk argmax of bf16 logits, packed (chunk << 32) | index",
};

/// `argmax_reduce(val, idx -> token; chunk)`.
pub const REDUCE: Signature = Signature {
    name: "argmax_reduce",
    inputs: &[
        Formal {
            name: "val",
            dtypes: &[Dtype::Bf16],
            rank: 2,
            access: Access::Activation,
        },
        Formal {
            name: "idx",
            dtypes: &[Dtype::I64],
            rank: 2,
            access: Access::Activation,
        },
    ],
    outputs: &[Formal {
        name: "token",
        dtypes: &[Dtype::I64],
        rank: 1,
        access: Access::Activation,
    }],
    scalars: &[("chunk", false)],
    positive: &[("chunk", CHUNK_POSITIVE)],
    at_most: &[("chunk", i32::MAX as i64, CHUNK_MAX)],
    needs_barrier: true,
    strided: &[],
    in_place: &[],
    token_rows: &["val", "idx", "token"],
    summary: "reduction of per-chunk argmax candidates to token indices",
};

type Bound = Result<(Vec<Constant>, Vec<RegionNeed>, &'static str, &'static str), Vec<Diagnostic>>;

fn regions() -> Vec<RegionNeed> {
    vec![
        RegionNeed {
            name: "idx",
            min_bytes: 8 * 32,
            min_align: 8,
            what: "32 int64 candidate indices: one per consumer warp for each of a batch of 8 rows",
            ring: None,
        },
        RegionNeed {
            name: "val",
            min_bytes: 2 * 32,
            min_align: 2,
            what: "32 bf16 candidate values: one per consumer warp for each of a batch of 8 rows",
            ring: None,
        },
    ]
}

/// Why `chunk` must be positive (E0009).
const CHUNK_POSITIVE: &str =
    "a task scans `chunk` logits of each row: a chunk of none scans nothing";
/// Why `chunk` must fit in an `int` (E0009).
const CHUNK_MAX: &str = "the body holds the chunk as `int kChunk` and a logit's index within its chunk in the low 32 bits of the packed candidate (chunk << 32 | index)";

fn chunk_of(scalars: &[(&'static str, ParamValue)]) -> i64 {
    scalars
        .iter()
        .find_map(|(n, v)| match (n, v) {
            (&"chunk", ParamValue::Int(c)) => Some(*c),
            _ => None,
        })
        .unwrap_or(1)
}

/// Checks `val`/`idx` are `[rows, ceil(vocab / chunk)]` and one task per chunk.
pub(super) fn bind_partial(s: &Shapes<'_>, scalars: &[(&'static str, ParamValue)]) -> Bound {
    let chunk = chunk_of(scalars);
    let l = s.dims("logits");
    let (rows, vocab) = (l[0], l[1]);
    let mut errs = Vec::new();
    // The signature's bounds report a chunk outside 1..=i32::MAX at its param (E0009); the
    // shapes below are not worked out for one.
    if chunk <= 0 || chunk > i32::MAX as i64 {
        return Err(errs);
    }
    let chunks = crate::ir::exact::ceil_div(vocab, chunk);
    for f in ["val", "idx"] {
        if s.dims(f) != [rows, chunks] {
            errs.push(s.error(
                f,
                format!("`{}` must be [{rows}, {chunks}] (one candidate per chunk of {chunk} logits), but it is {:?}", s.tensor_name(f), s.dims(f)),
                format!("declare `{}` as [{rows}, ceil_div({vocab}, {chunk})]", s.tensor_name(f)),
            ));
        }
    }
    if s.tasks() != chunks {
        errs.push(s.error(
            "logits",
            format!(
                "argmax_partial runs one task per chunk: {chunks} chunks but {} tasks",
                s.tasks()
            ),
            format!("write `granularity per_tile(tasks ceil_div({vocab}, {chunk}))`"),
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let constants = vec![
        int_const(
            "kRows",
            rows,
            format!("rows of `{}`", s.tensor_name("logits")),
        ),
        int_const(
            "kVocab",
            vocab,
            format!("logits per row of `{}`", s.tensor_name("logits")),
        ),
        int_const("kChunk", chunk, "logits per chunk (param chunk)"),
        int_const("kChunks", chunks, "ceil(kVocab / kChunk)"),
    ];
    Ok((
        constants,
        regions(),
        include_str!("../../stdlib/bodies/argmax_partial.cu"),
        "stdlib/bodies/argmax_partial.cu",
    ))
}

/// Checks `val`/`idx` are `[rows, chunks]` and `token` is `[rows]`.
pub(super) fn bind_reduce(s: &Shapes<'_>, scalars: &[(&'static str, ParamValue)]) -> Bound {
    let chunk = chunk_of(scalars);
    let v = s.dims("val");
    let (rows, chunks) = (v[0], v[1]);
    let mut errs = Vec::new();
    if s.dims("idx") != v {
        errs.push(s.error(
            "idx",
            format!(
                "`{}` must have the shape of `{}` {v:?}, but it is {:?}",
                s.tensor_name("idx"),
                s.tensor_name("val"),
                s.dims("idx")
            ),
            format!("declare `{}` as {v:?}", s.tensor_name("idx")),
        ));
    }
    if s.dims("token") != [rows] {
        errs.push(s.error(
            "token",
            format!(
                "`{}` must be [{rows}] (one token per row), but it is {:?}",
                s.tensor_name("token"),
                s.dims("token")
            ),
            format!("declare `{}` as [{rows}]", s.tensor_name("token")),
        ));
    }
    // A chunk outside 1..=i32::MAX is the signature's E0009, at its param.
    if !errs.is_empty() {
        return Err(errs);
    }
    let constants = vec![
        int_const("kRows", rows, format!("rows of `{}`", s.tensor_name("val"))),
        int_const(
            "kChunks",
            chunks,
            format!("candidates per row of `{}`", s.tensor_name("val")),
        ),
        int_const(
            "kChunk",
            chunk,
            "logits per chunk (param chunk), to unpack the indices",
        ),
    ];
    Ok((
        constants,
        regions(),
        include_str!("../../stdlib/bodies/argmax_reduce.cu"),
        "stdlib/bodies/argmax_reduce.cu",
    ))
}
