//! The block-scaled fp8 operands of a pipeline: the `scale of` tensors and the scale-factor ring
//! beside the weight ring (contract doc §7.1).

use super::bind::{role_tensor, unsupported};
use super::Operands;
use crate::diag::Sink;
use crate::ir::*;

/// The scale tensors and the scale-factor ring of a block-scaled fp8 pipeline. A stage holds one
/// 128-wide K block (tile K 128: four UE8M0 scale ids of the 32-wide MMA K, CuTe's
/// `InstrDescriptorBlockScaled::a_sf_id_`); its scale factors take 512 bytes and 4 TMEM columns
/// for the 128 weight rows and as much again per 128 tokens (CUTLASS's K-major scale-factor atom,
/// `Sm1xxBlockScaledBasicChunk`, with MMA-N rounded up to 128).
#[allow(clippy::too_many_arguments)]
pub(super) fn fp8_scales(
    ir: &TaskIr,
    w: TensorHandle,
    a: TensorHandle,
    w_ring: Handle<ChannelIr>,
    (experts, n, k): (Option<i64>, i64, i64),
    act_k: i64,
    m_real: i64,
    (bn, bk): (i64, i64),
    stages: i64,
    acc_slots: i64,
    tmem_cols: i64,
    sink: &mut Sink,
) -> Option<Operands> {
    // Bound by `scale of W` / `scale of A`; their shapes must be the block-scale shapes.
    let shaped = |h: Option<TensorHandle>, dims: Vec<i64>| {
        h.filter(|h| ir.tensors[*h].dtype == Dtype::F32 && ir.tensors[*h].dims == dims)
    };
    // Routed weights have one block-scale matrix per expert: `[experts, N / 128, K / 128]`.
    let w_dims: Vec<i64> = experts.into_iter().chain([n / 128, k / 128]).collect();
    let w_scale = shaped(role_tensor(ir, TensorRole::ScaleOf(w)), w_dims.clone());
    let a_scale = shaped(
        role_tensor(ir, TensorRole::ScaleOf(a)),
        vec![m_real, act_k / 128],
    );
    let (Some(w_scale), Some(a_scale)) = (w_scale, a_scale) else {
        sink.push(unsupported(
            ir.family_span,
            format!("block-scaled fp8 needs `scale of` inputs f32 {w_dims:?} for the weights (128x128 blocks) and [{m_real}, {}] for the activations (1x128 groups)", act_k / 128),
            &if experts.is_some() {
                format!("declare `tensor W_scale: f32[experts, N / 128, K / 128] in scale of W` and `tensor A_scale: f32[m_real, {}] in scale of A` (one scale per 128 of the activations' {act_k} columns)", act_k / 128)
            } else {
                "declare `tensor W_scale: f32[N / 128, K / 128] in scale of W` and `tensor A_scale: f32[m_real, K / 128] in scale of A`".to_string()
            },
        ));
        return None;
    };
    let sf = ir.channels.iter().find(|(_, c)| {
        c.full_arrival == ArrivalIr::Threads(1)
            && c.producer == RoleKind::Loader
            && matches!(c.empty, EmptyEdge::Shared(o, _) if o == w_ring)
    });
    let Some((sf_ring, c)) = sf else {
        sink.push(unsupported(ir.family_span, "block-scaled fp8 needs a scale-factor ring `loader -> launcher (threads 1), shares_empty` the weight ring".into(), "declare `region SF[stage] { bytes 1024; align 128; pack }` and `channel sf_ring: SF, loader -> launcher (threads 1), shares_empty w_ring`"));
        return None;
    };
    if bk != 128 {
        let span = ir.tile.as_ref().map_or(ir.family_span, |t| t.span);
        sink.push(unsupported(span, format!("block-scaled fp8 stages one 128-wide scale block per stage (4 scale ids of the MMA's K 32), not tile K {bk}"), "write `tile M 128, N …, K 128` and a box of one 128-byte row per stage"));
        return None;
    }
    // Exact (tile N is any i64 here): the byte and column counts are i128.
    let b_blocks = i128::from(crate::ir::exact::ceil_div(bn, 128));
    let sf_bytes = 512 * (1 + b_blocks);
    if let ChannelStorageIr::Region(g) = c.storage {
        let size = ir.region_groups[g]
            .members
            .first()
            .map_or(0, |h| ir.regions[*h].size);
        if i128::from(size) < sf_bytes {
            sink.push(unsupported(ir.region_groups[g].head_span, format!("a scale-factor stage holds 32 rows of 16 bytes for the 128 weight rows and as many per 128 tokens, {sf_bytes} bytes for tile N {bn}, not {size}"), &format!("write `bytes {sf_bytes}`")));
            return None;
        }
    }
    let need = i128::from(acc_slots) * i128::from(bn) + i128::from(stages) * 4 * (1 + b_blocks);
    if i128::from(tmem_cols) < need {
        sink.push(unsupported(ir.family_span, format!("TMEM needs {acc_slots} x {bn} accumulator columns and {} scale columns per stage ({stages} stages): {need} > {tmem_cols}", 4 * (1 + b_blocks)), "allocate more `tmem cols` (a power of two)"));
        return None;
    }
    Some(Operands::Fp8BlockScale {
        w_scale,
        a_scale,
        sf_ring,
    })
}
