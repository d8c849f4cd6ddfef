//! tcgen05 descriptors as field tables: the same table encodes the constant and writes the
//! comment that decodes it (CuTe `UMMA::InstrDescriptor` and `UMMA::SmemDescriptor`,
//! include/cute/arch/mma_sm100_desc.hpp; contract doc §7.1-§7.2).

/// One bit field of a descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Field name as CuTe spells it.
    pub name: &'static str,
    /// First bit.
    pub lo: u32,
    /// Width in bits.
    pub width: u32,
    /// Encoded value.
    pub value: u64,
    /// What the value means.
    pub meaning: String,
}

/// Packs `fields` into one word. Values wider than their field are truncated (the callers
/// check ranges first).
pub fn encode(fields: &[Field]) -> u64 {
    fields.iter().fold(0u64, |acc, f| {
        acc | ((f.value & ((1u64 << f.width) - 1)) << f.lo)
    })
}

/// Comment lines decoding `fields`, one per field: `name bits [lo,hi) = value (meaning)`.
pub fn decode_lines(fields: &[Field]) -> Vec<String> {
    fields
        .iter()
        .map(|f| {
            format!(
                "{:<14} bits [{:>2},{:>2}) = {:<5} {}",
                f.name,
                f.lo,
                f.lo + f.width,
                f.value,
                f.meaning
            )
        })
        .collect()
}

pub(crate) fn field(
    name: &'static str,
    lo: u32,
    width: u32,
    value: u64,
    meaning: impl Into<String>,
) -> Field {
    Field {
        name,
        lo,
        width,
        value,
        meaning: meaning.into(),
    }
}

/// Operand formats of kind::f16 (CuTe `UMMA::F16F32Format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum F16Format {
    /// IEEE half.
    F16 = 0,
    /// bfloat16.
    Bf16 = 1,
}

/// The 32-bit instruction descriptor of `tcgen05.mma.kind::f16`: f32 accumulate, both operands
/// K-major, no sparsity, no negation. `m` ∈ {64, 128}, `n` a multiple of 8 (checked by E0503).
pub fn instr_desc_f16(a: F16Format, b: F16Format, m: u32, n: u32) -> (u32, Vec<Field>) {
    let fmt = |f: F16Format| if f == F16Format::Bf16 { "BF16" } else { "F16" };
    let fields = vec![
        field("sparse_id2", 0, 2, 0, "dense"),
        field("sparse_flag", 2, 1, 0, "dense"),
        field("saturate", 3, 1, 0, "no saturation"),
        field("c_format", 4, 2, 1, "D accumulates in F32"),
        field("a_format", 7, 3, a as u64, fmt(a)),
        field("b_format", 10, 3, b as u64, fmt(b)),
        field("a_negate", 13, 1, 0, "A not negated"),
        field("b_negate", 14, 1, 0, "B not negated"),
        field("a_major", 15, 1, 0, "A K-major"),
        field("b_major", 16, 1, 0, "B K-major"),
        field(
            "n_dim",
            17,
            6,
            u64::from(n >> 3),
            format!("N >> 3, N = {n}"),
        ),
        field(
            "m_dim",
            24,
            5,
            u64::from(m >> 4),
            format!("M >> 4, M = {m}"),
        ),
        field("max_shift", 30, 2, 0, "no .ws shift"),
    ];
    (encode(&fields) as u32, fields)
}

/// The 32-bit instruction descriptor of `tcgen05.mma.kind::mxf8f6f4.block_scale` (CuTe
/// `UMMA::InstrDescriptorBlockScaled`): e4m3 x e4m3 into f32, K-major, UE8M0 scales. The scale
/// ids (bits 4-5 for B, 29-30 for A) pick the byte of the 32-bit TMEM scale word an MMA uses;
/// they are OR-ed in per MMA (`(k << 4) | (k << 29)`).
pub fn instr_desc_mxf8f6f4(m: u32, n: u32) -> (u32, Vec<Field>) {
    let fields = vec![
        field("sparse_id2", 0, 2, 0, "dense"),
        field("sparse_flag", 2, 1, 0, "dense"),
        field(
            "b_sf_id",
            4,
            2,
            0,
            "byte of B's scale word, OR-ed in per MMA",
        ),
        field("a_format", 7, 3, 0, "E4M3"),
        field("b_format", 10, 3, 0, "E4M3"),
        field("a_negate", 13, 1, 0, "A not negated"),
        field("b_negate", 14, 1, 0, "B not negated"),
        field("a_major", 15, 1, 0, "A K-major"),
        field("b_major", 16, 1, 0, "B K-major"),
        field(
            "n_dim",
            17,
            6,
            u64::from(n >> 3),
            format!("N >> 3, N = {n}"),
        ),
        field("scale_format", 23, 1, 1, "UE8M0 scales"),
        field(
            "m_dim",
            24,
            5,
            u64::from(m >> 4),
            format!("M >> 4, M = {m}"),
        ),
        field(
            "a_sf_id",
            29,
            2,
            0,
            "byte of A's scale word, OR-ed in per MMA",
        ),
    ];
    (encode(&fields) as u32, fields)
}

/// SMEM layout types of the matrix descriptor (CuTe `UMMA::LayoutType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmemLayout {
    /// No swizzle (interleaved).
    SwizzleNone = 0,
    /// 128-byte swizzle.
    Swizzle128B = 2,
    /// 64-byte swizzle.
    Swizzle64B = 4,
    /// 32-byte swizzle.
    Swizzle32B = 6,
}

/// The 64-bit SMEM matrix descriptor with the start address left 0 (OR-ed in per use as
/// `smem_addr >> 4`). For K-major operands under 128-byte swizzle, the stride byte offset is
/// 1024 bytes (8 rows of 128 bytes) and the leading byte offset is unused (PTX ISA, tcgen05
/// "leading dimension byte offset": "not used, assumed to be 1"; MPK's linear writes 0). For
/// the scale-factor blocks of `tcgen05.cp.32x128b` (no swizzle, 16-byte rows) the stride is 128
/// bytes (8 rows of 16 bytes) and the leading byte offset 16, as CUTLASS writes it.
pub fn smem_desc(layout: SmemLayout, lbo_bytes: u32, sbo_bytes: u32) -> (u64, Vec<Field>) {
    let name = match layout {
        SmemLayout::SwizzleNone => "no swizzle",
        SmemLayout::Swizzle128B => "SWIZZLE_128B",
        SmemLayout::Swizzle64B => "SWIZZLE_64B",
        SmemLayout::Swizzle32B => "SWIZZLE_32B",
    };
    let fields = vec![
        field(
            "start_address",
            0,
            14,
            0,
            "smem_addr >> 4, OR-ed in per use",
        ),
        field(
            "leading_byte",
            16,
            14,
            u64::from((lbo_bytes & 0x3FFFF) >> 4),
            format!("LBO {lbo_bytes} B >> 4"),
        ),
        field(
            "stride_byte",
            32,
            14,
            u64::from((sbo_bytes & 0x3FFFF) >> 4),
            format!("SBO {sbo_bytes} B >> 4 (from one 8-row core matrix group to the next)"),
        ),
        field("version", 46, 2, 1, "1 on sm_100"),
        field("base_offset", 49, 3, 0, "operand bases 1024-aligned"),
        field("lbo_mode", 52, 1, 0, "relative LBO"),
        field("layout_type", 61, 3, layout as u64, name),
    ];
    (encode(&fields), fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MPK's linear: I_DESC = 0x08040490 (contract doc §7.1).
    #[test]
    fn house_linear_instruction_descriptor() {
        let (v, f) = instr_desc_f16(F16Format::Bf16, F16Format::Bf16, 128, 16);
        assert_eq!(v, 0x0804_0490);
        assert!(decode_lines(&f).iter().any(|l| l.contains("N = 16")));
    }

    /// MPK's v1 fp8 group GEMM base: ((BN/8) << 17) | (1 << 23) | ((BM/128) << 27) (contract doc §7.1).
    #[test]
    fn block_scaled_descriptor_matches_mpk_fp8() {
        let (v, _) = instr_desc_mxf8f6f4(128, 16);
        assert_eq!(v, (2 << 17) | (1 << 23) | (1 << 27));
    }

    /// MPK's linear: SMEM_DESC = 0x4000404000000000 (contract doc §7.2).
    #[test]
    fn house_linear_smem_descriptor() {
        assert_eq!(
            smem_desc(SmemLayout::Swizzle128B, 0, 1024).0,
            0x4000_4040_0000_0000
        );
    }

    #[test]
    fn field_positions_follow_cute() {
        // M = 64, N = 256: n_dim 32 at bit 17, m_dim 4 at bit 24.
        let (v, _) = instr_desc_f16(F16Format::F16, F16Format::F16, 64, 256);
        assert_eq!(v, (1 << 4) | (32 << 17) | (4 << 24));
    }
}
