//! The descriptor constants of a pipeline's kernels, per target: one list that the layout header
//! (`struct Sm100`, `struct Sm90`, which both kernels use for every MMA) and the design document
//! (`<unit>.spec.md`, "Descriptors") both render, so the two cannot state different words (the
//! fp8 document once stated the bf16 `kind::f16` descriptor 0x08040490 while its kernel used the
//! block-scaled 0x08840000, issue 14).

use crate::back::sm100::desc::{
    instr_desc_f16, instr_desc_mxf8f6f4, smem_desc, F16Format, Field, SmemLayout,
};
use crate::back::sm90::desc::wgmma_smem_desc;
use crate::ir::Target;
use crate::lower::{LinearMath, Operands};

/// One descriptor constant of a kernel: its name in the layout header's struct of its target,
/// its word and the field table that encodes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// The target whose kernel uses it (`struct Sm100` for sm_100a, `struct Sm90` for sm_90a).
    pub target: Target,
    /// The constant's name (`I_DESC`, `SMEM_DESC`, `SF_DESC`).
    pub name: &'static str,
    /// Word width in bits: 32 (an instruction descriptor) or 64 (an SMEM matrix descriptor).
    pub bits: u32,
    /// The encoded word.
    pub value: u64,
    /// The fields, as CuTe names them (their decode lines are the header's comment).
    pub fields: Vec<Field>,
    /// What it is and where its encoding comes from, one line each (the header's comment).
    pub about: &'static [&'static str],
    /// What the kernel adds per use (a start address, the scale-factor ids), in words.
    pub per_use: &'static str,
}

impl Descriptor {
    /// The C++ type of the constant: `uint32_t` or `uint64_t`.
    pub fn c_type(&self) -> &'static str {
        if self.bits == 32 {
            "uint32_t"
        } else {
            "uint64_t"
        }
    }

    /// The C++ literal of the word, zero-padded to its width: `0x08040490u`, `0x…ull`.
    pub fn c_literal(&self) -> String {
        if self.bits == 32 {
            format!("0x{:08X}u", self.value)
        } else {
            format!("0x{:016X}ull", self.value)
        }
    }

    /// The word as hex without a suffix, zero-padded to its width (`0x08040490`).
    pub fn hex(&self) -> String {
        let digits = (self.bits / 4) as usize;
        format!("0x{:0digits$X}", self.value)
    }
}

/// The descriptors the kernel of `target` uses for pipeline `p`, in the order the layout header
/// defines them. sm_100a: the `tcgen05.mma` instruction descriptor (`kind::f16` bf16 x bf16, or
/// `kind::mxf8f6f4.block_scale` e4m3 x e4m3 for block-scaled fp8), the operands' SMEM descriptor
/// (K-major, 128-byte swizzle, SBO 1024 B) and, for fp8, the scale-factor blocks' SMEM descriptor
/// of `tcgen05.cp.32x128b` (no swizzle, LBO 16 B, SBO 128 B); sm_90a: the wgmma SMEM descriptor.
pub fn of(p: &LinearMath, target: Target) -> Vec<Descriptor> {
    match target {
        Target::Sm100a => sm100(p),
        Target::Sm90a => {
            let (value, fields) = wgmma_smem_desc();
            vec![Descriptor {
                target,
                name: "SMEM_DESC",
                bits: 64,
                value,
                fields,
                about: &["wgmma SMEM matrix descriptor of both operands, K-major under 128-byte swizzle (CuTe GMMA::GmmaDescriptor):"],
                per_use: "start address OR-ed in per use",
            }]
        }
    }
}

fn sm100(p: &LinearMath) -> Vec<Descriptor> {
    let (m, n) = (p.block_m as u32, p.block_n as u32);
    let fp8 = matches!(p.operands, Operands::Fp8BlockScale { .. });
    let (idesc, ifields) = if fp8 {
        instr_desc_mxf8f6f4(m, n)
    } else {
        instr_desc_f16(F16Format::Bf16, F16Format::Bf16, m, n)
    };
    let mut out = vec![Descriptor {
        target: Target::Sm100a,
        name: "I_DESC",
        bits: 32,
        value: u64::from(idesc),
        fields: ifields,
        about: if fp8 {
            &["Instruction descriptor of tcgen05.mma.kind::mxf8f6f4.block_scale (CuTe UMMA::InstrDescriptorBlockScaled):"]
        } else {
            &["Instruction descriptor of tcgen05.mma.kind::f16 (CuTe UMMA::InstrDescriptor):"]
        },
        per_use: if fp8 {
            "the scale-factor ids of B (bits 4-5) and A (bits 29-30) OR-ed in per MMA"
        } else {
            "used as is by every MMA"
        },
    }];
    let (sdesc, sfields) = smem_desc(SmemLayout::Swizzle128B, 0, 1024);
    out.push(Descriptor {
        target: Target::Sm100a,
        name: "SMEM_DESC",
        bits: 64,
        value: sdesc,
        fields: sfields,
        about: &[
            "SMEM matrix descriptor of both operands, K-major under 128-byte swizzle (CuTe UMMA::SmemDescriptor);",
            "LBO is not used for swizzled K-major layouts (PTX ISA, tcgen05 \"leading dimension byte offset\"):",
        ],
        per_use: "start address OR-ed in per use",
    });
    if fp8 {
        let (sf, sf_fields) = smem_desc(SmemLayout::SwizzleNone, 16, 128);
        out.push(Descriptor {
            target: Target::Sm100a,
            name: "SF_DESC",
            bits: 64,
            value: sf,
            fields: sf_fields,
            about: &[
                "SMEM descriptor of a scale-factor block for tcgen05.cp.32x128b: 8-row core matrices of 16 bytes,",
                "no swizzle, CUTLASS's get_utccp_smem_desc_tensor:",
            ],
            per_use: "start address OR-ed in per use",
        });
    }
    out
}
