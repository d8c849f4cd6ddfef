//! `mpkc roofline`: for each task instance, the bytes it moves and the tensor-core FLOPs it does
//! (from the contract's shapes, [`crate::traffic`]), and the floor time on each GPU of [`peaks`]:
//! the longer of bytes / bandwidth and FLOPs / peak, which names the bound. docs/roofline.md.

pub mod peaks;
pub mod report;

use crate::traffic::{instance_bytes, tensor_flops, MathKind};
use crate::valid::CheckedTask;
use peaks::Gpu;
use serde::Serialize;

/// What limits a task instance on a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Bytes / bandwidth is the longer time.
    Memory,
    /// FLOPs / peak is the longer time.
    Compute,
}

/// The floor of one task instance on one GPU. Times in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Floor {
    /// The GPU (`h200`, `b200`).
    pub gpu: &'static str,
    /// bytes / spec HBM bandwidth.
    pub memory_us: f64,
    /// bytes / measured copy bandwidth, where the GPU has one.
    pub copy_us: Option<f64>,
    /// FLOPs / dense tensor-core peak of the operands' kind (0 without tensor-core work).
    pub compute_us: f64,
    /// The longer of `memory_us` and `compute_us`.
    pub floor_us: f64,
    /// Which of the two it is (memory on a tie).
    pub bound: Bound,
    /// The peak's ridge point: FLOPs per byte at which compute and memory times are equal.
    pub ridge_flop_per_byte: f64,
}

/// One task instance's row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The unit (`<task>` or `<task>_<instance>`).
    pub unit: String,
    /// The contract's family.
    pub family: &'static str,
    /// Tokens (the `m` or `m_real` param), when the contract has one.
    pub m: Option<i64>,
    /// Bytes read and written: every input and output tensor of the instance, once (a gather:
    /// only the table rows it reads), [`crate::traffic::instance_bytes`].
    pub bytes: u64,
    /// Tensor-core FLOPs (`2 · M · N · K` for a linear; 0 for the consumer families).
    pub flops: u64,
    /// The operands' kind of the tensor-core work, if any.
    pub math: Option<MathKind>,
    /// FLOPs per byte.
    pub intensity: f64,
    /// The floor on each GPU asked for.
    pub floors: Vec<Floor>,
    /// The time `mpkc bench` measured (`--measure`), if it ran this unit at this M.
    pub measured: Option<Measured>,
}

/// A measured time beside the floor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    /// The GPU it ran on, as the driver names it.
    pub device: String,
    /// The floor it is held against (`h200` or `b200`), when the device is one of them.
    pub against: Option<&'static str>,
    /// The bench case (the unit, or `linear -> reduce` for split-K: both tasks timed).
    pub case: String,
    /// `mpkc bench`'s standalone median, microseconds per run.
    pub us: f64,
    /// floor / measured (1.0 = at the floor).
    pub floor_share: Option<f64>,
    /// copy floor / measured, where the GPU has a measured copy bandwidth.
    pub copy_share: Option<f64>,
}

/// Which of [`peaks::GPUS`] a device named `device` by the driver is (`NVIDIA H200` → `h200`).
pub fn gpu_of_device(device: &str) -> Option<&'static Gpu> {
    let d = device.to_ascii_lowercase();
    peaks::GPUS.iter().find(|g| d.contains(g.name))
}

impl Row {
    /// Records `us` measured on `device` for bench case `case`, with the shares of this row's
    /// floor on that GPU (when it is one of the row's GPUs).
    pub fn measure(&mut self, device: &str, case: &str, us: f64) {
        let g = gpu_of_device(device);
        let f = g.and_then(|g| self.floors.iter().find(|f| f.gpu == g.name));
        self.measured = Some(Measured {
            device: device.to_string(),
            against: f.map(|f| f.gpu),
            case: case.to_string(),
            us,
            floor_share: f.filter(|_| us > 0.0).map(|f| f.floor_us / us),
            copy_share: f
                .and_then(|f| f.copy_us)
                .filter(|_| us > 0.0)
                .map(|c| c / us),
        });
    }
}

/// Microseconds to move `bytes` at `tb_per_s` TB/s.
pub fn us_at(bytes: u64, tb_per_s: f64) -> f64 {
    bytes as f64 / (tb_per_s * 1e12) * 1e6
}

/// The floor of `bytes` and `flops` (of `math` operands) on `gpu`.
pub fn floor(gpu: &Gpu, bytes: u64, flops: u64, math: Option<MathKind>) -> Floor {
    let memory_us = us_at(bytes, gpu.hbm_tb_per_s);
    let peak = gpu.tflops(math.unwrap_or(MathKind::Bf16));
    let compute_us = flops as f64 / (peak * 1e12) * 1e6;
    let (floor_us, bound) = if compute_us > memory_us {
        (compute_us, Bound::Compute)
    } else {
        (memory_us, Bound::Memory)
    };
    Floor {
        gpu: gpu.name,
        memory_us,
        copy_us: gpu.copy_tb_per_s.map(|c| us_at(bytes, c)),
        compute_us,
        floor_us,
        bound,
        ridge_flop_per_byte: peak / gpu.hbm_tb_per_s,
    }
}

/// The token count of a task instance: its `m_real` or `m` param.
pub fn tokens(task: &CheckedTask) -> Option<i64> {
    ["m_real", "m"]
        .iter()
        .find_map(|p| match task.ir.params.get(*p) {
            Some(crate::ir::ParamIr {
                value: crate::ir::ParamValue::Int(v),
                ..
            }) => Some(*v),
            _ => None,
        })
}

/// The row of one task instance on `gpus`.
pub fn row(task: &CheckedTask, gpus: &[Gpu]) -> Row {
    let bytes = instance_bytes(task);
    let (flops, math) = match tensor_flops(task) {
        Some((f, k)) => (f, Some(k)),
        None => (0, None),
    };
    Row {
        unit: task.ir.unit_name(),
        family: task.ir.family.as_str(),
        m: tokens(task),
        bytes,
        flops,
        math,
        intensity: if bytes == 0 {
            0.0
        } else {
            flops as f64 / bytes as f64
        },
        floors: gpus.iter().map(|g| floor(g, bytes, flops, math)).collect(),
        measured: None,
    }
}
