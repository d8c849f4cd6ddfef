//! The GPUs' peaks a roofline floor is taken against: dense tensor-core throughput and HBM
//! bandwidth by the vendor's specification (issue 14), and, for the H200, the copy ceiling
//! measured on it (dsv3-decode-ops.md, "Bandwidth anchors": 4.25 TB/s).

use crate::traffic::MathKind;

/// One GPU's peaks.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Gpu {
    /// `h200` or `b200`, as `--gpu` takes it.
    pub name: &'static str,
    /// HBM bandwidth by spec, TB/s (10^12 bytes per second).
    pub hbm_tb_per_s: f64,
    /// A device-to-device copy's measured bandwidth, TB/s, where measured.
    pub copy_tb_per_s: Option<f64>,
    /// Dense bf16 tensor-core peak, TFLOPS (10^12 FLOP per second).
    pub bf16_tflops: f64,
    /// Dense fp8 (e4m3) tensor-core peak, TFLOPS.
    pub fp8_tflops: f64,
}

/// NVIDIA H200 (SXM): 4.8 TB/s HBM3e, 989 dense bf16 TFLOPS, 1,979 dense fp8; 4.25 TB/s is the
/// copy ceiling measured on this project's H200.
pub const H200: Gpu = Gpu {
    name: "h200",
    hbm_tb_per_s: 4.8,
    copy_tb_per_s: Some(4.25),
    bf16_tflops: 989.0,
    fp8_tflops: 1979.0,
};

/// NVIDIA B200: 8 TB/s HBM3e, 2,250 dense bf16 TFLOPS, 4,500 dense fp8 (no copy measured).
pub const B200: Gpu = Gpu {
    name: "b200",
    hbm_tb_per_s: 8.0,
    copy_tb_per_s: None,
    bf16_tflops: 2250.0,
    fp8_tflops: 4500.0,
};

/// Every GPU, in the order reports list them.
pub const GPUS: &[Gpu] = &[H200, B200];

impl Gpu {
    /// The tensor-core peak for `kind`, TFLOPS.
    pub fn tflops(&self, kind: MathKind) -> f64 {
        match kind {
            MathKind::Bf16 => self.bf16_tflops,
            MathKind::Fp8 => self.fp8_tflops,
        }
    }
}
