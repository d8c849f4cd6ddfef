//! The stdlib contracts, embedded in the binary so that `mpkc build` with no file builds them.

use super::Source;

/// `(path, text)` of every stdlib contract, in build order.
pub const CONTRACTS: &[(&str, &str)] = &[
    (
        "stdlib/linear_sm100_v2.mpk",
        include_str!("../../stdlib/linear_sm100_v2.mpk"),
    ),
    (
        "stdlib/linear_bf16_residual.mpk",
        include_str!("../../stdlib/linear_bf16_residual.mpk"),
    ),
    (
        "stdlib/linear_bf16_runtime_m.mpk",
        include_str!("../../stdlib/linear_bf16_runtime_m.mpk"),
    ),
    (
        "stdlib/linear_bf16_splitk.mpk",
        include_str!("../../stdlib/linear_bf16_splitk.mpk"),
    ),
    (
        "stdlib/linear_bf16_splitk_sum.mpk",
        include_str!("../../stdlib/linear_bf16_splitk_sum.mpk"),
    ),
    (
        "stdlib/linear_bf16_splitk_sum64.mpk",
        include_str!("../../stdlib/linear_bf16_splitk_sum64.mpk"),
    ),
    (
        "stdlib/linear_bf16_gemv.mpk",
        include_str!("../../stdlib/linear_bf16_gemv.mpk"),
    ),
    (
        "stdlib/linear_bf16_gemv_mma.mpk",
        include_str!("../../stdlib/linear_bf16_gemv_mma.mpk"),
    ),
    (
        "stdlib/linear_fp8_blockscale.mpk",
        include_str!("../../stdlib/linear_fp8_blockscale.mpk"),
    ),
    (
        "stdlib/linear_fp8_splitk.mpk",
        include_str!("../../stdlib/linear_fp8_splitk.mpk"),
    ),
    (
        "stdlib/linear_fp8_splitk_sum.mpk",
        include_str!("../../stdlib/linear_fp8_splitk_sum.mpk"),
    ),
    (
        "stdlib/linear_fp8_qout.mpk",
        include_str!("../../stdlib/linear_fp8_qout.mpk"),
    ),
    (
        "stdlib/linear_fp8_gemv.mpk",
        include_str!("../../stdlib/linear_fp8_gemv.mpk"),
    ),
    (
        "stdlib/linear_fp8_gemv_mma.mpk",
        include_str!("../../stdlib/linear_fp8_gemv_mma.mpk"),
    ),
    (
        "stdlib/rmsnorm_v2.mpk",
        include_str!("../../stdlib/rmsnorm_v2.mpk"),
    ),
    (
        "stdlib/silu_mul_v2.mpk",
        include_str!("../../stdlib/silu_mul_v2.mpk"),
    ),
    (
        "stdlib/embedding_v2.mpk",
        include_str!("../../stdlib/embedding_v2.mpk"),
    ),
    (
        "stdlib/argmax_partial_v2.mpk",
        include_str!("../../stdlib/argmax_partial_v2.mpk"),
    ),
    (
        "stdlib/argmax_reduce_v2.mpk",
        include_str!("../../stdlib/argmax_reduce_v2.mpk"),
    ),
    // DeepSeek-V3 decode layer contracts (issue 13).
    (
        "stdlib/dsv3/qkv_a_norm.mpk",
        include_str!("../../stdlib/dsv3/qkv_a_norm.mpk"),
    ),
    (
        "stdlib/dsv3/q_b_strided.mpk",
        include_str!("../../stdlib/dsv3/q_b_strided.mpk"),
    ),
    (
        "stdlib/dsv3/silu_mul_fp8.mpk",
        include_str!("../../stdlib/dsv3/silu_mul_fp8.mpk"),
    ),
    (
        "stdlib/dsv3/mla_decode.mpk",
        include_str!("../../stdlib/dsv3/mla_decode.mpk"),
    ),
    (
        "stdlib/dsv3/w_uk_absorb.mpk",
        include_str!("../../stdlib/dsv3/w_uk_absorb.mpk"),
    ),
    (
        "stdlib/dsv3/w_uv_absorb.mpk",
        include_str!("../../stdlib/dsv3/w_uv_absorb.mpk"),
    ),
    (
        "stdlib/dsv3/add_rmsnorm.mpk",
        include_str!("../../stdlib/dsv3/add_rmsnorm.mpk"),
    ),
    (
        "stdlib/dsv3/router_topk.mpk",
        include_str!("../../stdlib/dsv3/router_topk.mpk"),
    ),
    (
        "stdlib/dsv3/lm_head.mpk",
        include_str!("../../stdlib/dsv3/lm_head.mpk"),
    ),
    (
        "stdlib/dsv3/moe_experts.mpk",
        include_str!("../../stdlib/dsv3/moe_experts.mpk"),
    ),
    // Helpers (family E) and the tasks that use them (docs/language.md, "Helpers").
    (
        "stdlib/dsv3/fp8_quant_1x128.mpk",
        include_str!("../../stdlib/dsv3/fp8_quant_1x128.mpk"),
    ),
    (
        "stdlib/dsv3/rmsnorm_fp8.mpk",
        include_str!("../../stdlib/dsv3/rmsnorm_fp8.mpk"),
    ),
    (
        "stdlib/dsv3/router_gate.mpk",
        include_str!("../../stdlib/dsv3/router_gate.mpk"),
    ),
    (
        "stdlib/dsv3/kv_append.mpk",
        include_str!("../../stdlib/dsv3/kv_append.mpk"),
    ),
    (
        "stdlib/dsv3/fp8_quant.mpk",
        include_str!("../../stdlib/dsv3/fp8_quant.mpk"),
    ),
    (
        "stdlib/dsv3/rope_yarn.mpk",
        include_str!("../../stdlib/dsv3/rope_yarn.mpk"),
    ),
    (
        "stdlib/dsv3/rope.mpk",
        include_str!("../../stdlib/dsv3/rope.mpk"),
    ),
];

/// `(path, text)` of every reference file a stdlib contract names (`reference python "…"`,
/// relative to the contract), embedded so that `mpkc verify` with no file runs them from anywhere.
pub const REFERENCES: &[(&str, &str)] = &[
    (
        "stdlib/dsv3/silu_mul_fp8.ref.py",
        include_str!("../../stdlib/dsv3/silu_mul_fp8.ref.py"),
    ),
    (
        "stdlib/dsv3/mla_decode.ref.py",
        include_str!("../../stdlib/dsv3/mla_decode.ref.py"),
    ),
    (
        "stdlib/dsv3/w_uk_absorb.ref.py",
        include_str!("../../stdlib/dsv3/w_uk_absorb.ref.py"),
    ),
    (
        "stdlib/dsv3/w_uv_absorb.ref.py",
        include_str!("../../stdlib/dsv3/w_uv_absorb.ref.py"),
    ),
    (
        "stdlib/dsv3/add_rmsnorm.ref.py",
        include_str!("../../stdlib/dsv3/add_rmsnorm.ref.py"),
    ),
    (
        "stdlib/dsv3/router_topk.ref.py",
        include_str!("../../stdlib/dsv3/router_topk.ref.py"),
    ),
    (
        "stdlib/dsv3/rmsnorm_fp8.ref.py",
        include_str!("../../stdlib/dsv3/rmsnorm_fp8.ref.py"),
    ),
    (
        "stdlib/dsv3/router_gate.ref.py",
        include_str!("../../stdlib/dsv3/router_gate.ref.py"),
    ),
    (
        "stdlib/dsv3/kv_append.ref.py",
        include_str!("../../stdlib/dsv3/kv_append.ref.py"),
    ),
    (
        "stdlib/dsv3/fp8_quant.ref.py",
        include_str!("../../stdlib/dsv3/fp8_quant.ref.py"),
    ),
    (
        "stdlib/dsv3/rope.ref.py",
        include_str!("../../stdlib/dsv3/rope.ref.py"),
    ),
];

/// The embedded stdlib contract at `path` (`stdlib/dsv3/fp8_quant_1x128.mpk`, `./` and `..`
/// resolved), so that a path the diagnostics name (a helper's file, E0026) can be checked from
/// any directory. `None` for a path the stdlib does not have.
pub fn embedded(path: &std::path::Path) -> Option<Source> {
    let key = super::reference::normalized(path);
    CONTRACTS
        .iter()
        .find(|(p, _)| *p == key)
        .map(|(p, t)| Source {
            path: (*p).to_string(),
            text: (*t).to_string(),
        })
}

/// The stdlib as sources.
pub fn sources() -> Vec<Source> {
    CONTRACTS
        .iter()
        .map(|(p, t)| Source {
            path: (*p).to_string(),
            text: (*t).to_string(),
        })
        .collect()
}

/// The checked stdlib unit `unit` (`<task>` or `<task>_<instance>`, derived reduces included),
/// for unit tests. Panics when there is none.
#[cfg(test)]
pub fn unit(unit: &str) -> crate::valid::CheckedTask {
    super::check_sources(&sources(), &Default::default(), &Default::default())
        .into_iter()
        .flat_map(|c| c.tasks)
        .find(|t| t.ir.unit_name() == unit)
        .expect("stdlib unit")
}
