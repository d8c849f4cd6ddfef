//! The float64 reference and the ids of a routed pipeline (`route W by ids …`, docs/language.md
//! "Routed experts"), written from the routing's definition, not from the kernel: per slot,
//! `C[t * slots + s] = A[t] · W[ids[t, s]]^T`; summing slots,
//! `C[t] = Σ_s A[t, s * K ..] · W[ids[t, s]]^T` (plus the bf16-rounded residual add). An id outside
//! `0..experts` contributes zero (another rank's expert). Weights are read element by element:
//! DeepSeek-V3's routed W13 is 940 MB at 128 experts, too large to widen to f64.

use super::data::{Fill, HostTensor};
use super::reference::{tolerance, Check, Expected};
use crate::ir::RouteMode;
use crate::lower::{Epilogue, LinearMath, Operands, RouteMath};
use crate::valid::CheckedTask;

/// Random ids for `[m_real, slots]`: per token, distinct experts in `0..experts`; the last slot
/// of the last token is past the experts (where there are two or more slots), so that the run
/// shows an id no expert of this rank holds adds nothing.
pub fn fill_ids(ids: &mut HostTensor, r: &RouteMath, fill: &mut Fill) {
    let (m, s) = (ids.dims[0] as usize, r.slots as usize);
    for t in 0..m {
        let mut chosen: Vec<i64> = Vec::with_capacity(s);
        while chosen.len() < s {
            let e = fill.int(0, r.experts);
            if !chosen.contains(&e) || chosen.len() as i64 >= r.experts {
                chosen.push(e);
            }
        }
        for (j, e) in chosen.into_iter().enumerate() {
            ids.set(t * s + j, e as f64);
        }
    }
    if m * s >= 2 {
        ids.set(m * s - 1, (r.experts + 3) as f64);
    }
}

/// The expected output of routed pipeline `p` on `inputs` (`input_ptrs` order).
pub fn expected(
    task: &CheckedTask,
    p: &LinearMath,
    r: &RouteMath,
    inputs: &[HostTensor],
) -> Vec<Expected> {
    let ir = &task.ir;
    let pos = |h| ir.inputs().position(|(x, _)| x == h).unwrap_or(0);
    let (a, w, ids) = (
        &inputs[pos(p.acts)],
        &inputs[pos(p.weights)],
        &inputs[pos(r.ids)],
    );
    let (n, k, m, slots) = (
        p.n as usize,
        p.k as usize,
        p.m_real as usize,
        r.slots as usize,
    );
    let act_k = r.act_k as usize;
    let scales = match &p.operands {
        Operands::Fp8BlockScale {
            w_scale, a_scale, ..
        } => Some((&inputs[pos(*w_scale)], &inputs[pos(*a_scale)])),
        Operands::Bf16 => None,
    };
    let fp8 = scales.is_some();
    let (ar, wr) = (reader(a), reader(w));
    // One expert's product for token t over its activation columns a0.. and expert e.
    let product = |t: usize, a0: usize, e: usize, row: usize| -> f64 {
        let mut acc = 0.0;
        for kb in (0..k).step_by(128) {
            let kend = (kb + 128).min(k);
            let dot: f64 = (kb..kend)
                .map(|kk| ar(t * act_k + a0 + kk) * wr((e * n + row) * k + kk))
                .sum();
            acc += match scales {
                Some((ws, as_)) => {
                    dot * ws.get((e * (n / 128) + row / 128) * (k / 128) + kb / 128)
                        * as_.get(t * (act_k / 128) + (a0 + kb) / 128)
                }
                None => dot,
            };
        }
        acc
    };
    let expert = |t: usize, s: usize| -> Option<usize> {
        let e = ids.get_i32(t * slots + s);
        (e >= 0 && i64::from(e) < r.experts).then_some(e as usize)
    };
    let out0 = ir.written().position(|(h, _)| h == p.output).unwrap_or(0);
    let tol = tolerance(ir.tensors[p.output].dtype, fp8);
    let values: Vec<f64> = match r.mode {
        RouteMode::PerSlot => (0..m * slots * n)
            .map(|i| {
                let (route, row) = (i / n, i % n);
                let (t, s) = (route / slots, route % slots);
                expert(t, s).map_or(0.0, |e| product(t, 0, e, row))
            })
            .collect(),
        RouteMode::SumSlots => {
            let res = p.residual.map(|h| &inputs[pos(h)]);
            (0..m * n)
                .map(|i| {
                    let (t, row) = (i / n, i % n);
                    let acc: f64 = (0..slots)
                        .filter_map(|s| expert(t, s).map(|e| product(t, s * k, e, row)))
                        .sum();
                    match (p.epilogue, res) {
                        (Epilogue::ResidualAdd, Some(rt)) => {
                            f64::from(half::bf16::from_f64(acc).to_f32()) + rt.get(i)
                        }
                        _ => acc,
                    }
                })
                .collect()
        }
    };
    vec![Expected {
        output: out0,
        values,
        check: Check::RelL2(tol),
    }]
}

/// Element reader of `t`: e4m3 through a 256-entry table (a routed reference reads up to a
/// billion weight elements), every other type through [`HostTensor::get`].
fn reader(t: &HostTensor) -> impl Fn(usize) -> f64 + '_ {
    let lut: Option<Vec<f64>> = (t.dtype == crate::ir::Dtype::E4m3).then(|| {
        (0..=255u8)
            .map(|b| f64::from(super::data::e4m3_to_f32(b)))
            .collect()
    });
    move |i| match &lut {
        Some(l) => l[usize::from(t.bytes[i])],
        None => t.get(i),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::reference::{expected as expected_of, make_inputs, semantics, Semantics};

    fn checked(unit: &str) -> crate::valid::CheckedTask {
        let text = include_str!("../../tests/ui/route/pass_e0029.mpk");
        let src = crate::driver::Source {
            path: "pass_e0029.mpk".into(),
            text: text.into(),
        };
        crate::driver::check_sources(&[src], &Default::default(), &Default::default())
            .into_iter()
            .flat_map(|c| c.tasks)
            .find(|t| t.ir.unit_name() == unit)
            .unwrap()
    }

    /// The reference against the definition written out directly (dense loops over the ids),
    /// on verify's own inputs: distinct experts per token, the last slot's id past the experts.
    #[test]
    fn the_routed_reference_is_the_routing_s_definition() {
        for unit in ["routed_per_slot", "routed_sum_slots"] {
            let t = checked(unit);
            let sem = semantics(&t).unwrap();
            let Semantics::Linear(p) = &sem else {
                panic!("{unit}")
            };
            let r = p.route.unwrap();
            let inputs = make_inputs(&t, &sem, &mut Fill::new(9));
            let pos = |h| t.ir.inputs().position(|(x, _)| x == h).unwrap();
            let (a, w, ids) = (
                &inputs[pos(p.acts)],
                &inputs[pos(p.weights)],
                &inputs[pos(r.ids)],
            );
            let (m, s, n, k) = (
                p.m_real as usize,
                r.slots as usize,
                p.n as usize,
                p.k as usize,
            );
            let last = ids.get_i32(m * s - 1);
            assert!(
                i64::from(last) >= r.experts,
                "{unit}: the last id is past the experts"
            );
            let got = &expected_of(&t, &sem, &inputs)[0].values;
            let dot = |tok: usize, a0: usize, e: usize, row: usize| -> f64 {
                (0..k)
                    .map(|kk| {
                        a.get(tok * r.act_k as usize + a0 + kk) * w.get((e * n + row) * k + kk)
                    })
                    .sum()
            };
            for tok in 0..m {
                for row in 0..n {
                    let ex = |sl: usize| {
                        let e = ids.get_i32(tok * s + sl);
                        (e >= 0 && i64::from(e) < r.experts).then_some(e as usize)
                    };
                    match r.mode {
                        RouteMode::PerSlot => {
                            for sl in 0..s {
                                let want = ex(sl).map_or(0.0, |e| dot(tok, 0, e, row));
                                let g = got[(tok * s + sl) * n + row];
                                assert!(
                                    (g - want).abs() <= 1e-9 * (1.0 + want.abs()),
                                    "{unit} {tok} {sl} {row}"
                                );
                            }
                        }
                        RouteMode::SumSlots => {
                            let acc: f64 = (0..s)
                                .filter_map(|sl| ex(sl).map(|e| dot(tok, sl * k, e, row)))
                                .sum();
                            let res = p
                                .residual
                                .map_or(0.0, |h| inputs[pos(h)].get(tok * n + row));
                            let want = f64::from(half::bf16::from_f64(acc).to_f32()) + res;
                            let g = got[tok * n + row];
                            assert!(
                                (g - want).abs() <= 1e-6 * (1.0 + want.abs()),
                                "{unit} {tok} {row}: {g} {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}
