//! Element types and the TMA encodings of a tensor (`Dtype`, `Swizzle`, `L2Hint`).

use std::fmt;

/// Element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// bfloat16.
    Bf16,
    /// IEEE half.
    F16,
    /// IEEE single.
    F32,
    /// fp8 e4m3.
    E4m3,
    /// fp8 e5m2.
    E5m2,
    /// UE8M0 scale factors: an unsigned 8-bit exponent, value 2^(byte - 127), 0xFF NaN.
    Ue8m0,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// 8-bit unsigned integer.
    U8,
}

impl Dtype {
    /// Parses a dtype name as written in a contract.
    pub fn parse(s: &str) -> Option<Dtype> {
        Some(match s {
            "bf16" => Dtype::Bf16,
            "f16" => Dtype::F16,
            "f32" => Dtype::F32,
            "e4m3" | "fp8" => Dtype::E4m3,
            "e5m2" => Dtype::E5m2,
            "ue8m0" => Dtype::Ue8m0,
            "i32" => Dtype::I32,
            "i64" => Dtype::I64,
            "u8" => Dtype::U8,
            _ => return None,
        })
    }

    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
            Dtype::F32 => "f32",
            Dtype::E4m3 => "e4m3",
            Dtype::E5m2 => "e5m2",
            Dtype::Ue8m0 => "ue8m0",
            Dtype::I32 => "i32",
            Dtype::I64 => "i64",
            Dtype::U8 => "u8",
        }
    }

    /// Size of one element in bytes.
    pub fn bytes(self) -> i64 {
        match self {
            Dtype::Bf16 | Dtype::F16 => 2,
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::I64 => 8,
            Dtype::E4m3 | Dtype::E5m2 | Dtype::Ue8m0 | Dtype::U8 => 1,
        }
    }

    /// The CUDA type generated code uses for one element. The 8-bit floats are `<cuda_fp8.h>`'s
    /// one-byte types, whose converting constructors encode (`__nv_fp8_e8m0(v)` rounds |v| up to
    /// a power of two, CUDA 12.8 and later) and whose `.__x` is the raw byte: a float stored into
    /// a `ue8m0` element is encoded, or refused by nvcc, never truncated as an integer. Raw-byte
    /// paths (TMA boxes, the scale-factor staging in SMEM) address bytes and keep `uint8_t`.
    pub fn cuda_type(self) -> &'static str {
        match self {
            Dtype::Bf16 => "__nv_bfloat16",
            Dtype::F16 => "__half",
            Dtype::F32 => "float",
            Dtype::E4m3 => "__nv_fp8_e4m3",
            Dtype::E5m2 => "__nv_fp8_e5m2",
            Dtype::Ue8m0 => "__nv_fp8_e8m0",
            Dtype::U8 => "uint8_t",
            Dtype::I32 => "int32_t",
            Dtype::I64 => "int64_t",
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// TMA swizzle modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    /// No swizzle.
    None,
    /// 32-byte swizzle.
    B32,
    /// 64-byte swizzle.
    B64,
    /// 128-byte swizzle.
    B128,
}

impl Swizzle {
    /// Parses `128B`, `64B`, `32B`, `none`.
    pub fn parse(s: &str) -> Option<Swizzle> {
        Some(match s {
            "none" => Swizzle::None,
            "32B" => Swizzle::B32,
            "64B" => Swizzle::B64,
            "128B" => Swizzle::B128,
            _ => return None,
        })
    }

    /// Bytes of one swizzle span (the inner box extent it requires), 16 for none.
    pub fn span_bytes(self) -> i64 {
        match self {
            Swizzle::None => 16,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }

    /// Alignment a destination of this swizzle needs: the swizzle atom (8 rows × span), I-S8.
    pub fn atom_align_bytes(self) -> i64 {
        match self {
            Swizzle::None => 128,
            s => s.span_bytes() * 8,
        }
    }

    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Swizzle::None => "none",
            Swizzle::B32 => "32B",
            Swizzle::B64 => "64B",
            Swizzle::B128 => "128B",
        }
    }
}

/// L2 cache-policy hints for TMA loads (contract doc §7.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Hint {
    /// `EVICT_FIRST` 0x12F0000000000000.
    EvictFirst,
    /// `EVICT_LAST` 0x14F0000000000000.
    EvictLast,
    /// `EVICT_NORMAL` 0x16F0000000000000.
    EvictNormal,
}

impl L2Hint {
    /// Parses `evict_first`, `evict_last`, `evict_normal`.
    pub fn parse(s: &str) -> Option<L2Hint> {
        Some(match s {
            "evict_first" => L2Hint::EvictFirst,
            "evict_last" => L2Hint::EvictLast,
            "evict_normal" => L2Hint::EvictNormal,
            _ => return None,
        })
    }

    /// The contract's word: `evict_first`, `evict_last`, `evict_normal`.
    pub fn word(self) -> &'static str {
        match self {
            L2Hint::EvictFirst => "evict_first",
            L2Hint::EvictLast => "evict_last",
            L2Hint::EvictNormal => "evict_normal",
        }
    }

    /// The 64-bit cache-policy immediate.
    pub fn policy(self) -> u64 {
        match self {
            L2Hint::EvictFirst => 0x12F0_0000_0000_0000,
            L2Hint::EvictLast => 0x14F0_0000_0000_0000,
            L2Hint::EvictNormal => 0x16F0_0000_0000_0000,
        }
    }
}

/// Elements per scale along a row where scales of extents `scale` group the rows of a tensor of
/// extents `out`: the same rank, the same leading extents and a last extent dividing the row
/// (`[m, hidden / 128]` of `[m, hidden]`: 128), or one rank less with the leading extents (`[m]`:
/// one scale per row, the whole row). `None`: they group no rows (E0005 at check,
/// `sema::lower_roles`; `mpkc verify` pairs an fp8 output's scales so, `gpu::ref_compare`).
pub fn scale_group(scale: &[i64], out: &[i64]) -> Option<i64> {
    let (&n, lead) = out.split_last()?;
    if scale == lead {
        return (n > 0).then_some(n);
    }
    let (&last, s_lead) = scale.split_last()?;
    (s_lead == lead && last > 0 && n % last == 0).then(|| n / last)
}

#[cfg(test)]
mod tests {
    use super::scale_group;

    #[test]
    fn scales_group_a_row_by_blocks_or_whole() {
        // Per 128-element block, per token, and per group of a 2-D row-major tensor.
        assert_eq!(scale_group(&[4, 56], &[4, 7168]), Some(128));
        assert_eq!(scale_group(&[4], &[4, 7168]), Some(7168));
        assert_eq!(scale_group(&[2, 3, 4], &[2, 3, 512]), Some(128));
        // No grouping: a last extent that does not divide the row, other leading extents, a
        // rank two below.
        assert_eq!(scale_group(&[4, 3], &[4, 512]), None);
        assert_eq!(scale_group(&[2, 4], &[4, 512]), None);
        assert_eq!(scale_group(&[4], &[4, 2, 512]), None);
        assert_eq!(scale_group(&[], &[]), None);
    }
}
