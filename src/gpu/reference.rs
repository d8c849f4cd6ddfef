//! CPU references (float64 accumulation) for every stdlib body template and for the pipeline
//! family, and the inputs each needs (random, never all zeros, valid where the op requires it:
//! ids inside the table, packed argmax candidates inside their chunk, power-of-two scales).
//!
//! Each reference returns, per output, the expected values and how to compare them (gpu.md:
//! bf16 results by relative L2 below 1e-2, f32 below 1e-4, fp8 paths against a reference that
//! applies the same quantization and scales below 2e-2; indices exactly).

use super::data::{e4m3_to_f32, elements, f32_to_e4m3, Fill, HostTensor};
use crate::ir::{Dtype, ParamValue};
use crate::lower::{Epilogue, LinearMath, Operands};
use crate::valid::CheckedTask;

/// What a task computes, recognised from its body template or pipeline shape.
#[derive(Clone, Debug)]
pub enum Semantics {
    /// `rmsnorm(x, w -> y; eps)`.
    Rmsnorm {
        /// Epsilon.
        eps: f64,
    },
    /// `silu_mul(x -> y)`.
    SiluMul,
    /// `embedding(ids, table -> y)`.
    Embedding,
    /// `argmax_partial(logits -> val, idx; chunk)`.
    ArgmaxPartial {
        /// Vocabulary entries per task.
        chunk: i64,
    },
    /// `argmax_reduce(val, idx -> token; chunk)`.
    ArgmaxReduce {
        /// Vocabulary entries per candidate's chunk.
        chunk: i64,
    },
    /// `splitk_reduce(partials -> y)`.
    SplitkReduce,
    /// `gemv(x, W -> y)` and `gemv_mma(x, W -> y)`: y = x W^T.
    Gemv,
    /// `gemv_fp8(x, x_scale, W, W_scale -> y)` and `gemv_mma_fp8` (the same formals): y = (x · x_scale) (W · W_scale)^T, one scale per
    /// 1x128 group of `x` and per 128x128 block of `W`.
    GemvFp8,
    /// The pipeline linear (family A).
    Linear(Box<LinearMath>),
    /// An inline body's `reference python "FILE" fn NAME` ([`super::python`]).
    Python(Box<crate::ir::ReferenceIr>),
}

/// How an output is compared with its reference.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// ‖out − ref‖ / ‖ref‖ below the tolerance.
    RelL2(f64),
    /// Every element equal.
    Exact,
    /// fp8 values compared after dequantization with the scales in output `scales` (one per
    /// `group` consecutive elements of a row), by relative L2.
    Dequant {
        /// Output index of the scales (f32 or ue8m0, decoded).
        scales: usize,
        /// Elements per scale along the row.
        group: usize,
        /// Tolerance.
        tol: f64,
    },
    /// Checked through another output's `Dequant` (written, finite, positive).
    ScalesOf,
    /// Every |out − ref| ≤ atol + rtol·|ref| (numpy's `allclose`).
    Close {
        /// Absolute tolerance.
        atol: f64,
        /// Relative tolerance.
        rtol: f64,
    },
}

/// The expected contents of one output.
#[derive(Clone, Debug)]
pub struct Expected {
    /// Index into what the task writes, `ir.written()` order (its `out` and `inout` tensors).
    pub output: usize,
    /// Expected values, one per element (dequantized for `Dequant`).
    pub values: Vec<f64>,
    /// Comparison.
    pub check: Check,
}

/// Relative-L2 tolerance for a floating output type (gpu.md).
pub fn tolerance(dtype: Dtype, fp8_path: bool) -> f64 {
    if fp8_path {
        2e-2
    } else if dtype == Dtype::F32 {
        1e-4
    } else {
        1e-2
    }
}

fn int_param(task: &CheckedTask, name: &str) -> Option<i64> {
    task.binding
        .as_ref()?
        .scalars
        .iter()
        .find(|(f, _, _)| *f == name)
        .and_then(|(_, _, v)| match v {
            ParamValue::Int(i) => Some(*i),
            _ => None,
        })
}

/// The semantics of `task`, or why it has no reference (an inline CUDA body without a
/// `reference`, helper families).
pub fn semantics(task: &CheckedTask) -> Result<Semantics, String> {
    if let Some(p) = task.linear() {
        // An epilogue map is the contract's own CUDA: its Python reference states what it means.
        return match (&task.ir.reference, p.map) {
            (_, false) => Ok(Semantics::Linear(Box::new(p.clone()))),
            (Some(r), true) => Ok(Semantics::Python(Box::new(r.clone()))),
            (None, true) => Err("a pipeline with an epilogue map (`body cuda`) has no reference: add `reference python \"FILE.py\" fn NAME` (docs/references.md)".to_string()),
        };
    }
    if let Some(r) = &task.ir.reference {
        return Ok(Semantics::Python(Box::new(r.clone())));
    }
    let Some(b) = &task.binding else {
        return Err(
            "inline CUDA body without a reference: add `reference python \"FILE.py\" fn NAME` (docs/references.md)"
                .to_string(),
        );
    };
    Ok(match b.sig.name {
        "rmsnorm" => {
            let eps = b
                .scalars
                .iter()
                .find(|(f, _, _)| *f == "eps")
                .map_or(1e-6, |(_, _, v)| match v {
                    ParamValue::Float(x) => *x,
                    ParamValue::Int(i) => *i as f64,
                    ParamValue::Bool(_) => 1e-6,
                });
            Semantics::Rmsnorm { eps }
        }
        "silu_mul" => Semantics::SiluMul,
        "embedding" => Semantics::Embedding,
        "argmax_partial" => Semantics::ArgmaxPartial {
            chunk: int_param(task, "chunk").unwrap_or(2048),
        },
        "argmax_reduce" => Semantics::ArgmaxReduce {
            chunk: int_param(task, "chunk").unwrap_or(2048),
        },
        "splitk_reduce" => Semantics::SplitkReduce,
        "gemv" | "gemv_mma" => Semantics::Gemv,
        "gemv_fp8" | "gemv_mma_fp8" => Semantics::GemvFp8,
        other => return Err(format!("body template `{other}` has no reference")),
    })
}

/// The (first) formal name of the tensor named `name` of a template body.
fn formal(task: &CheckedTask, name: &str) -> Option<&'static str> {
    let b = task.binding.as_ref()?;
    b.tensors
        .iter()
        .find(|(_, h)| task.ir.tensors[*h].name == name)
        .map(|(f, _)| *f)
}

/// Whether the tensor named `name` is bound to formal `f` (an `inout` tensor is bound to an
/// input and an output formal).
fn bound_to(task: &CheckedTask, name: &str, f: &str) -> bool {
    task.binding.as_ref().is_some_and(|b| {
        b.tensors
            .iter()
            .any(|(x, h)| *x == f && task.ir.tensors[*h].name == name)
    })
}

/// The position, in `input_ptrs` order, of the input bound to the body template's formal `f`.
pub fn input_of(task: &CheckedTask, f: &str) -> Option<usize> {
    task.ir
        .inputs()
        .position(|(_, t)| bound_to(task, &t.name, f))
}

/// The position, in `ir.outputs()` order, of the output bound to the body template's formal `f`.
pub fn output_of(task: &CheckedTask, f: &str) -> Option<usize> {
    task.ir
        .outputs()
        .position(|(_, t)| bound_to(task, &t.name, f))
}

/// Random inputs for `task`, in `input_ptrs` order.
pub fn make_inputs(task: &CheckedTask, sem: &Semantics, fill: &mut Fill) -> Vec<HostTensor> {
    let ir = &task.ir;
    let mut out = Vec::new();
    for (h, t) in ir.inputs() {
        let mut x = HostTensor::filled(&t.name, t.dtype, &t.dims, 0);
        // Grid barrier counters start at zero, as `tensor_init` seeds them at step 0 (I-H4).
        if t.role() == Some(crate::ir::TensorRole::GridBarrier) {
            out.push(x);
            continue;
        }
        match (sem, formal(task, &t.name)) {
            (Semantics::Embedding, Some("ids")) => {
                let vocab = ir
                    .inputs()
                    .find(|(_, tb)| formal(task, &tb.name) == Some("table"))
                    .map_or(1, |(_, tb)| tb.dims[0]);
                for i in 0..x.len() {
                    x.set(i, fill.int(0, vocab) as f64);
                }
                // An id outside the table gives a zero row: exercise it when there are rows to spare.
                if x.len() >= 2 {
                    let last = x.len() - 1;
                    x.set(last, -1.0);
                }
            }
            (Semantics::ArgmaxReduce { chunk }, Some("idx")) => {
                let (rows, chunks) = (t.dims[0], t.dims[1]);
                let vocab = chunk * chunks;
                for r in 0..rows {
                    for c in 0..chunks {
                        let len = (vocab - c * chunk).min(*chunk);
                        let packed = (c << 32) | fill.int(0, len);
                        x.set_i64((r * chunks + c) as usize, packed);
                    }
                }
            }
            (Semantics::Linear(p), _) if p.route.is_some_and(|r| r.ids == h) => {
                if let Some(r) = &p.route {
                    super::routed::fill_ids(&mut x, r, fill);
                }
            }
            (Semantics::GemvFp8, Some("x_scale" | "W_scale")) => {
                fill.powers_of_two(&mut x, -4, 0);
            }
            (Semantics::Linear(p), _)
                if Some(h) == scale_input(p, true) || Some(h) == scale_input(p, false) =>
            {
                fill.powers_of_two(&mut x, -4, 0);
            }
            // A Python reference's integer inputs: uniform in [0, 128) (docs/references.md).
            (Semantics::Python(_), _) if matches!(t.dtype, Dtype::I32 | Dtype::I64 | Dtype::U8) => {
                for i in 0..x.len() {
                    x.set(i, fill.int(0, 128) as f64);
                }
            }
            _ => fill.values(&mut x),
        }
        out.push(x);
    }
    out
}

fn scale_input(p: &LinearMath, weights: bool) -> Option<crate::ir::TensorHandle> {
    match &p.operands {
        Operands::Fp8BlockScale {
            w_scale, a_scale, ..
        } => Some(if weights { *w_scale } else { *a_scale }),
        Operands::Bf16 => None,
    }
}

/// The expected outputs of `task` on `inputs`, for any semantics: a Python reference runs in
/// `scratch`, on GPU `cuda_device` where torch has CUDA ([`super::python::expected`]), with the
/// run's page table `paged` where the task has a paged KV cache. Errors: the Python reference's.
pub fn expected_in(
    task: &CheckedTask,
    sem: &Semantics,
    inputs: &[HostTensor],
    paged: Option<&super::paged::PagedRun>,
    scratch: &std::path::Path,
    cuda_device: usize,
) -> Result<Vec<Expected>, String> {
    match sem {
        Semantics::Python(r) => {
            super::python::expected(task, r, inputs, paged, scratch, cuda_device)
        }
        _ => Ok(expected(task, sem, inputs)),
    }
}

/// The expected final values of what `task` writes on `inputs` from mpkc's float64 references
/// (`Expected::output` indexes `ir.written()`: the `out` tensors and the `inout` ones, whose
/// initial values are inputs); none for a Python reference: [`expected_in`] runs it.
pub fn expected(task: &CheckedTask, sem: &Semantics, inputs: &[HostTensor]) -> Vec<Expected> {
    let ir = &task.ir;
    let outs: Vec<(Dtype, Vec<i64>)> = ir
        .written()
        .map(|(_, t)| (t.dtype, t.dims.clone()))
        .collect();
    let input = |f: &str| -> &HostTensor {
        let i = ir
            .inputs()
            .position(|(_, t)| bound_to(task, &t.name, f))
            .unwrap_or(0);
        &inputs[i]
    };
    let out_index = |f: &str| {
        ir.written()
            .position(|(_, t)| bound_to(task, &t.name, f))
            .unwrap_or(0)
    };
    let rel = |o: usize| Check::RelL2(tolerance(outs[o].0, false));
    match sem {
        Semantics::Rmsnorm { eps } => {
            let (x, w) = (input("x"), input("w"));
            let (rows, h) = (x.dims[0] as usize, x.dims[1] as usize);
            let mut y = vec![0.0; rows * h];
            for r in 0..rows {
                let ss: f64 = (0..h).map(|c| x.get(r * h + c).powi(2)).sum();
                let inv = 1.0 / (ss / h as f64 + eps).sqrt();
                for c in 0..h {
                    y[r * h + c] = x.get(r * h + c) * inv * w.get(c);
                }
            }
            let o = out_index("y");
            vec![Expected {
                output: o,
                values: y,
                check: rel(o),
            }]
        }
        Semantics::SiluMul => {
            let x = input("x");
            let (rows, n) = (x.dims[0] as usize, x.dims[1] as usize / 2);
            let mut y = vec![0.0; rows * n];
            for r in 0..rows {
                for c in 0..n {
                    let g = x.get(r * 2 * n + c);
                    let u = x.get(r * 2 * n + n + c);
                    y[r * n + c] = g / (1.0 + (-g).exp()) * u;
                }
            }
            let o = out_index("y");
            vec![Expected {
                output: o,
                values: y,
                check: rel(o),
            }]
        }
        Semantics::Embedding => {
            let (ids, table) = (input("ids"), input("table"));
            let (vocab, h) = (table.dims[0], table.dims[1] as usize);
            let mut y = vec![0.0; ids.len() * h];
            for r in 0..ids.len() {
                let id = i64::from(ids.get_i32(r));
                if (0..vocab).contains(&id) {
                    for c in 0..h {
                        y[r * h + c] = table.get(id as usize * h + c);
                    }
                }
            }
            vec![Expected {
                output: out_index("y"),
                values: y,
                check: Check::Exact,
            }]
        }
        Semantics::ArgmaxPartial { chunk } => {
            let logits = input("logits");
            let (rows, vocab) = (logits.dims[0], logits.dims[1]);
            let chunks = (vocab + chunk - 1) / chunk;
            let mut val = Vec::new();
            let mut idx = Vec::new();
            for r in 0..rows {
                for c in 0..chunks {
                    let (b, e) = (c * chunk, ((c + 1) * chunk).min(vocab));
                    let (bi, bv) =
                        argmax((b..e).map(|i| (i, logits.get((r * vocab + i) as usize))));
                    val.push(bv);
                    idx.push(((c << 32) | (bi - b)) as f64);
                }
            }
            vec![
                Expected {
                    output: out_index("val"),
                    values: val,
                    check: Check::Exact,
                },
                Expected {
                    output: out_index("idx"),
                    values: idx,
                    check: Check::Exact,
                },
            ]
        }
        Semantics::ArgmaxReduce { chunk } => {
            let (val, idx) = (input("val"), input("idx"));
            let (rows, chunks) = (val.dims[0], val.dims[1]);
            let mut token = Vec::new();
            for r in 0..rows {
                let cands = (0..chunks).map(|c| {
                    let at = (r * chunks + c) as usize;
                    let packed = idx.get_i64(at);
                    ((packed >> 32) * chunk + (packed & 0xFFFF_FFFF), val.get(at))
                });
                token.push(argmax(cands).0 as f64);
            }
            vec![Expected {
                output: out_index("token"),
                values: token,
                check: Check::Exact,
            }]
        }
        Semantics::SplitkReduce => {
            let p = input("partials");
            let (s, rest) = (p.dims[0] as usize, elements(&p.dims[1..]));
            let y: Vec<f64> = (0..rest)
                .map(|i| (0..s).map(|k| p.get(k * rest + i)).sum())
                .collect();
            let o = out_index("y");
            vec![Expected {
                output: o,
                values: y,
                check: rel(o),
            }]
        }
        Semantics::Gemv | Semantics::GemvFp8 => {
            let (x, w) = (input("x"), input("W"));
            let (m, k) = (x.dims[0] as usize, x.dims[1] as usize);
            let n = w.dims[0] as usize;
            // Decoded once (lm_head's weights are 116 M elements), as `linear` does; the fp8
            // GEMVs' dequantized: x by its 1x128 scales, W by its 128x128 blocks.
            let scales =
                matches!(sem, Semantics::GemvFp8).then(|| (input("x_scale"), input("W_scale")));
            let kb = k / 128;
            let xf: Vec<f64> = (0..x.len())
                .map(|i| x.get(i) * scales.map_or(1.0, |(xs, _)| xs.get(i / k * kb + i % k / 128)))
                .collect();
            let wf: Vec<f64> = (0..w.len())
                .map(|i| {
                    w.get(i) * scales.map_or(1.0, |(_, ws)| ws.get(i / k / 128 * kb + i % k / 128))
                })
                .collect();
            let mut y = vec![0.0; m * n];
            for (r, wr) in wf.chunks_exact(k).enumerate() {
                for (t, xr) in xf.chunks_exact(k).enumerate() {
                    y[t * n + r] = xr.iter().zip(wr).map(|(a, b)| a * b).sum();
                }
            }
            let o = out_index("y");
            vec![Expected {
                output: o,
                values: y,
                check: rel(o),
            }]
        }
        Semantics::Linear(p) => linear(task, p, inputs),
        Semantics::Python(_) => Vec::new(),
    }
}

/// Arg-max with ties to the lowest index.
fn argmax(items: impl Iterator<Item = (i64, f64)>) -> (i64, f64) {
    let mut best = (i64::MAX, f64::NEG_INFINITY);
    for (i, v) in items {
        if v > best.1 || (v == best.1 && i < best.0) {
            best = (i, v);
        }
    }
    best
}

/// The pipeline linear: `acc[n][row] = Σ_k A[n][k] · W[row][k]` in f64 (with the fp8 block scales
/// per 128-element K block), then the epilogue.
fn linear(task: &CheckedTask, p: &LinearMath, inputs: &[HostTensor]) -> Vec<Expected> {
    if let Some(r) = &p.route {
        return super::routed::expected(task, p, r, inputs);
    }
    let ir = &task.ir;
    let pos = |h| ir.inputs().position(|(x, _)| x == h).unwrap_or(0);
    let (a, w) = (&inputs[pos(p.acts)], &inputs[pos(p.weights)]);
    let (n_rows, k, m) = (p.n as usize, p.k as usize, p.m_real as usize);
    let fp8 = matches!(p.operands, Operands::Fp8BlockScale { .. });
    let scales = match &p.operands {
        Operands::Fp8BlockScale {
            w_scale, a_scale, ..
        } => Some((&inputs[pos(*w_scale)], &inputs[pos(*a_scale)])),
        Operands::Bf16 => None,
    };
    let af: Vec<f64> = (0..a.len()).map(|i| a.get(i)).collect();
    let wf: Vec<f64> = (0..w.len()).map(|i| w.get(i)).collect();
    let splits = p.splits as usize;
    // Split s's K range, in K blocks of tile K as the kernel takes them.
    let k_range = |s: usize| {
        let (first, count) = p.split_blocks(s as i64);
        let bk = p.block_k.max(1) as usize;
        (first as usize * bk, (first + count) as usize * bk)
    };
    // partial[s][n][row]
    let mut partial = vec![0.0f64; splits * m * n_rows];
    let threads = std::thread::available_parallelism()
        .map_or(4, |x| x.get())
        .min(32);
    let rows_per = n_rows.div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        let mut chunks: Vec<(usize, Vec<f64>)> = Vec::new();
        let handles: Vec<_> = (0..n_rows)
            .step_by(rows_per)
            .map(|r0| {
                let (af, wf) = (&af, &wf);
                sc.spawn(move || {
                    let r1 = (r0 + rows_per).min(n_rows);
                    let mut part = vec![0.0f64; splits * m * (r1 - r0)];
                    for row in r0..r1 {
                        for n in 0..m {
                            for s in 0..splits {
                                let mut acc = 0.0;
                                let (k0, k1) = k_range(s);
                                for kb in (k0..k1).step_by(128) {
                                    let kend = (kb + 128).min(k1);
                                    let dot: f64 = (kb..kend)
                                        .map(|kk| af[n * k + kk] * wf[row * k + kk])
                                        .sum();
                                    acc += match scales {
                                        Some((ws, as_)) => {
                                            dot * ws.get((row / 128) * (k / 128) + kb / 128)
                                                * as_.get(n * (k / 128) + kb / 128)
                                        }
                                        None => dot,
                                    };
                                }
                                part[(s * m + n) * (r1 - r0) + (row - r0)] = acc;
                            }
                        }
                    }
                    (r0, part)
                })
            })
            .collect();
        for h in handles {
            if let Ok(c) = h.join() {
                chunks.push(c);
            }
        }
        for (r0, part) in chunks {
            let width = part.len() / (splits * m).max(1);
            for s in 0..splits {
                for n in 0..m {
                    for j in 0..width {
                        partial[(s * m + n) * n_rows + r0 + j] = part[(s * m + n) * width + j];
                    }
                }
            }
        }
    });
    let out0 = ir.written().position(|(h, _)| h == p.output).unwrap_or(0);
    let tol = tolerance(ir.tensors[p.output].dtype, fp8);
    let acc = |n: usize, row: usize| partial[n * n_rows + row];
    match p.epilogue {
        Epilogue::StoreBf16 => {
            let values = (0..m * n_rows)
                .map(|i| acc(i / n_rows, i % n_rows))
                .collect();
            vec![Expected {
                output: out0,
                values,
                check: Check::RelL2(tol),
            }]
        }
        Epilogue::ResidualAdd => {
            let r = &inputs[p.residual.map_or(0, pos)];
            let values = (0..m * n_rows)
                .map(|i| bf16_round(acc(i / n_rows, i % n_rows)) + r.get(i))
                .collect();
            vec![Expected {
                output: out0,
                values,
                check: Check::RelL2(tol),
            }]
        }
        Epilogue::SplitKF32 => vec![Expected {
            output: out0,
            values: partial.clone(),
            check: Check::RelL2(tolerance(Dtype::F32, fp8)),
        }],
        Epilogue::SplitKBf16 => {
            let Some(s) = p.split_sum else {
                return Vec::new();
            };
            let at = |h| ir.written().position(|(x, _)| x == h).unwrap_or(0);
            let values = (0..m * n_rows)
                .map(|i| (0..splits).map(|sp| partial[sp * m * n_rows + i]).sum())
                .collect();
            vec![
                Expected {
                    output: out0,
                    values,
                    check: Check::RelL2(tol),
                },
                Expected {
                    output: at(s.partials),
                    values: partial.clone(),
                    check: Check::RelL2(tolerance(Dtype::F32, fp8)),
                },
                // Every split of every tile arrived, and the last reset the counter.
                Expected {
                    output: at(s.counters),
                    values: vec![0.0; p.num_tiles as usize],
                    check: Check::Exact,
                },
            ]
        }
        Epilogue::SplitKAtomic => {
            let Some(s) = p.split_sum else {
                return Vec::new();
            };
            let at = |h| ir.written().position(|(x, _)| x == h).unwrap_or(0);
            let values = (0..m * n_rows)
                .map(|i| (0..splits).map(|sp| partial[sp * m * n_rows + i]).sum())
                .collect();
            vec![
                Expected {
                    output: out0,
                    values,
                    check: Check::RelL2(tol),
                },
                // Each tile's last split read the accumulator and zeroed it for the next run.
                Expected {
                    output: at(s.partials),
                    values: vec![0.0; m * n_rows],
                    check: Check::Exact,
                },
                Expected {
                    output: at(s.counters),
                    values: vec![0.0; p.num_tiles as usize],
                    check: Check::Exact,
                },
            ]
        }
        Epilogue::QuantE4m3 => {
            let (sc, _) = p.out_scale.unwrap_or((p.output, 0));
            let so = ir.written().position(|(h, _)| h == sc).unwrap_or(1);
            let tiles = n_rows / 128;
            let mut values = vec![0.0; m * n_rows];
            let mut scale_values = vec![0.0; m * tiles];
            for n in 0..m {
                for t in 0..tiles {
                    let amax = (t * 128..(t + 1) * 128)
                        .map(|row| acc(n, row).abs())
                        .fold(0.0, f64::max);
                    let s = if amax > 0.0 {
                        2f64.powf((amax / 448.0).log2().ceil())
                    } else {
                        1.0
                    };
                    scale_values[n * tiles + t] = s;
                    for row in t * 128..(t + 1) * 128 {
                        values[n * n_rows + row] =
                            f64::from(e4m3_to_f32(f32_to_e4m3((acc(n, row) / s) as f32))) * s;
                    }
                }
            }
            vec![
                Expected {
                    output: out0,
                    values,
                    check: Check::Dequant {
                        scales: so,
                        group: 128,
                        tol: 2e-2,
                    },
                },
                Expected {
                    output: so,
                    values: scale_values,
                    check: Check::ScalesOf,
                },
            ]
        }
    }
}

/// `v` rounded to bf16 (the residual epilogue's round trip).
fn bf16_round(v: f64) -> f64 {
    f64::from(half::bf16::from_f64(v).to_f32())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_ties_go_to_the_lowest_index() {
        let (i, v) = argmax([(5, 1.0), (2, 3.0), (1, 3.0), (7, -1.0)].into_iter());
        assert_eq!((i, v), (1, 3.0));
    }

    fn stdlib_unit(unit: &str) -> CheckedTask {
        let sources = crate::driver::stdlib::sources();
        let checked = crate::driver::check_sources_with(
            &sources,
            |s| crate::sema::SemaOptions {
                overrides: crate::driver::token_overrides(s, 1),
                instance: None,
                ..Default::default()
            },
            &Default::default(),
        );
        checked
            .into_iter()
            .flat_map(|c| c.tasks)
            .find(|t| t.ir.unit_name() == unit)
            .expect("stdlib unit")
    }

    /// The consumer GEMV's reference and the pipeline linear's agree on the same [7168 x 2048]
    /// weights and token (o_proj against the house linear, both `y = bf16(x W^T)`).
    #[test]
    fn the_gemv_reference_is_the_linear_s() {
        let (g, l) = (
            stdlib_unit("linear_bf16_gemv_o_proj"),
            stdlib_unit("linear_sm100_v2"),
        );
        let (gs, ls) = (semantics(&g).unwrap(), semantics(&l).unwrap());
        let g_in = make_inputs(&g, &gs, &mut Fill::new(7));
        let Semantics::Linear(p) = &ls else {
            panic!("a pipeline linear")
        };
        let mut l_in = make_inputs(&l, &ls, &mut Fill::new(8));
        let at = |h| l.ir.inputs().position(|(x, _)| x == h).unwrap();
        l_in[at(p.acts)] = g_in[input_of(&g, "x").unwrap()].clone();
        l_in[at(p.weights)] = g_in[input_of(&g, "W").unwrap()].clone();
        let (ge, le) = (expected(&g, &gs, &g_in), expected(&l, &ls, &l_in));
        assert_eq!(ge[0].values.len(), 7168);
        // Summed in another order (the linear in 128-wide K blocks): equal to f64 rounding.
        for (a, b) in ge[0].values.iter().zip(&le[0].values) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }

    #[test]
    fn tolerances_follow_gpu_md() {
        assert_eq!(tolerance(Dtype::Bf16, false), 1e-2);
        assert_eq!(tolerance(Dtype::F32, false), 1e-4);
        assert_eq!(tolerance(Dtype::Bf16, true), 2e-2);
    }
}
