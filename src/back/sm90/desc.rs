//! The wgmma SMEM matrix descriptor (CuTe `GMMA::GmmaDescriptor`, include/cute/arch/mma_sm90_desc.hpp;
//! PTX ISA "Matrix Descriptor Format" for wgmma), as a field table like the sm_100a ones.

use crate::back::sm100::desc::{encode, field, Field};

/// The 64-bit wgmma descriptor for a K-major operand under 128-byte swizzle, start address left 0
/// (OR-ed in per use as `smem_addr >> 4`): stride byte offset 1024 B (8 rows of 128 B), leading
/// byte offset unused for swizzled K-major layouts (1, as CuTe writes it), layout type 1
/// (SWIZZLE_128B in the sm_90 encoding, bits 62-63; sm_100 moved it to bits 61-63).
pub fn wgmma_smem_desc() -> (u64, Vec<Field>) {
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
            1,
            "LBO, unused for swizzled K-major (1)",
        ),
        field(
            "stride_byte",
            32,
            14,
            1024 >> 4,
            "SBO 1024 B >> 4 (8 rows x 128 B)",
        ),
        field("base_offset", 49, 3, 0, "operand bases 1024-aligned"),
        field("layout_type", 62, 2, 1, "SWIZZLE_128B"),
    ];
    (encode(&fields), fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CuTe's K-major SW128 GMMA descriptor for bf16: layout 1 << 62, SBO 64, LBO 1.
    #[test]
    fn k_major_sw128() {
        assert_eq!(wgmma_smem_desc().0, 0x4000_0040_0001_0000);
    }
}
