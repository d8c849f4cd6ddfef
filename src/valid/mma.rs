//! MMA rules: tcgen05 and wgmma instruction shapes and operand types (I-T4, PTX ISA), which
//! engine exists on which target, and whether the accumulator fits where the target keeps it
//! (TMEM on sm_100a, the registers of one warpgroup on sm_90a).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{exact, Dtype, MmaEngine, MmaIr, Target, TaskIr};

/// The register budget of one thread under `__launch_bounds__(256, 1)` (contract doc §3.5).
pub const MAX_REGS_PER_THREAD: i64 = 255;

/// The K extent one instruction consumes for `kind` with A operands of `a`, or why the pair is
/// illegal. tcgen05 kinds per the PTX ISA: f16 (f16/bf16, K 16), tf32 (K 8), f8f6f4 and
/// mxf8f6f4 (e4m3/e5m2, K 32).
fn tcgen05_k(kind: &str, a: Dtype, b: Dtype, d: Dtype) -> Result<i64, String> {
    let fp8 = |t: Dtype| matches!(t, Dtype::E4m3 | Dtype::E5m2);
    match kind {
        "f16" => {
            if !matches!(a, Dtype::F16 | Dtype::Bf16)
                || !matches!(b, Dtype::F16 | Dtype::Bf16)
                || a != b
            {
                return Err(format!(
                    "kind::f16 takes f16 or bf16 operands of one type, not {a} x {b}"
                ));
            }
            if !matches!(d, Dtype::F32 | Dtype::F16) {
                return Err(format!("kind::f16 accumulates in f32 or f16, not {d}"));
            }
            Ok(16)
        }
        "tf32" => {
            if a != Dtype::F32 || b != Dtype::F32 || d != Dtype::F32 {
                return Err(format!(
                    "kind::tf32 takes f32 (tf32) operands into f32, not {a} x {b} -> {d}"
                ));
            }
            Ok(8)
        }
        "f8f6f4" | "mxf8f6f4" => {
            if !fp8(a) || !fp8(b) {
                return Err(format!(
                    "kind::{kind} takes e4m3 or e5m2 operands here, not {a} x {b}"
                ));
            }
            if d != Dtype::F32 {
                return Err(format!("kind::{kind} accumulates in f32, not {d}"));
            }
            Ok(32)
        }
        other => Err(format!(
            "`{other}` is not a tcgen05.mma kind (f16, tf32, f8f6f4, mxf8f6f4)"
        )),
    }
}

/// tcgen05.mma cta_group::1 shapes (CuTe SM100_MMA_* static_asserts): M 64 with N a multiple of
/// 8 in [8, 256], or M 128 with N a multiple of 16 in [16, 256]; block-scaled mxf8f6f4 takes
/// M 128 and N a multiple of 8 in [8, 256].
fn tcgen05_shape(kind: &str, m: i64, n: i64) -> Result<(), String> {
    if kind == "mxf8f6f4" {
        if m != 128 {
            return Err(format!(
                "block-scaled kind::mxf8f6f4 takes M = 128, not {m}"
            ));
        }
        if n % 8 != 0 || !(8..=256).contains(&n) {
            return Err(format!(
                "kind::mxf8f6f4 takes N a multiple of 8 in [8, 256], not {n}"
            ));
        }
        return Ok(());
    }
    match m {
        64 if n % 8 == 0 && (8..=256).contains(&n) => Ok(()),
        64 => Err(format!(
            "with M = 64, N must be a multiple of 8 in [8, 256], not {n}"
        )),
        128 if n % 16 == 0 && (16..=256).contains(&n) => Ok(()),
        128 => Err(format!(
            "with M = 128, N must be a multiple of 16 in [16, 256], not {n}"
        )),
        _ => Err(format!("M must be 64 or 128 for cta_group::1, not {m}")),
    }
}

/// wgmma.mma_async shapes: M 64, N a multiple of 8 in [8, 256], K 16 for f16/bf16, 8 for tf32,
/// 32 for e4m3/e5m2 (PTX ISA, "Matrix shape" of wgmma).
fn wgmma_check(m: &MmaIr) -> Result<(), String> {
    let want_kind = match (m.a, m.b) {
        (Dtype::F16, Dtype::F16) | (Dtype::Bf16, Dtype::Bf16) => "f16",
        (Dtype::F32, Dtype::F32) => "tf32",
        _ => "f8f6f4",
    };
    if m.kind != want_kind {
        return Err(format!(
            "{} x {} operands are kind `{want_kind}`, not `{}`",
            m.a, m.b, m.kind
        ));
    }
    let k = match (m.a, m.b) {
        (Dtype::F16, Dtype::F16) | (Dtype::Bf16, Dtype::Bf16) => 16,
        (Dtype::F32, Dtype::F32) => 8,
        (a, b)
            if matches!(a, Dtype::E4m3 | Dtype::E5m2) && matches!(b, Dtype::E4m3 | Dtype::E5m2) =>
        {
            32
        }
        (a, b) => {
            return Err(format!(
                "wgmma takes f16, bf16, tf32 or fp8 operands of matching width, not {a} x {b}"
            ))
        }
    };
    if m.m != 64 {
        return Err(format!("wgmma has M = 64 (one warpgroup), not {}", m.m));
    }
    if m.n % 8 != 0 || !(8..=256).contains(&m.n) {
        return Err(format!(
            "wgmma takes N a multiple of 8 in [8, 256], not {}",
            m.n
        ));
    }
    if m.k != k {
        return Err(format!(
            "wgmma with {} operands consumes K = {k} per instruction, not {}",
            m.a, m.k
        ));
    }
    if !matches!(m.d, Dtype::F32 | Dtype::F16) {
        return Err(format!("wgmma accumulates in f32 or f16, not {}", m.d));
    }
    Ok(())
}

/// A legal shape close to `m`'s, for the help line.
fn nearest_tcgen05(m: &MmaIr) -> String {
    let k = tcgen05_k(&m.kind, m.a, m.b, m.d).unwrap_or(16);
    let (mm, step) = if m.kind == "mxf8f6f4" {
        (128, 8)
    } else if m.m == 64 {
        (64, 8)
    } else {
        (128, 16)
    };
    let n = ((m.n.clamp(step, 256) + step - 1) / step * step).min(256);
    // Block-scaled kind::mxf8f6f4 has no M = 64 form: do not offer one.
    if m.kind == "mxf8f6f4" {
        return format!("use `m{mm} n{n} k{k}`");
    }
    format!(
        "use `m{mm} n{n} k{k}` (or `m64 n{}` for a narrower tile)",
        ((m.n.clamp(8, 256) + 7) / 8) * 8
    )
}

/// I-T4 and the wgmma shape table.
pub(super) fn shapes(ir: &TaskIr, sink: &mut Sink) {
    let Some(m) = &ir.mma else { return };
    match m.engine {
        MmaEngine::Tcgen05 => {
            let err = tcgen05_k(&m.kind, m.a, m.b, m.d).and_then(|k| {
                tcgen05_shape(&m.kind, m.m, m.n)?;
                if m.k != k {
                    return Err(format!(
                        "kind::{} consumes K = {k} per instruction, not {}",
                        m.kind, m.k
                    ));
                }
                Ok(())
            });
            if let Err(why) = err {
                sink.push(
                    Diagnostic::error(codes::TCGEN05_SHAPE, format!("illegal tcgen05.mma m{}n{}k{} ({} x {} -> {}, kind::{}): {why}", m.m, m.n, m.k, m.a, m.b, m.d, m.kind))
                        .primary(m.span, "this instruction")
                        .note("cta_group::1: M 64 with N % 8 == 0 in [8, 256], or M 128 with N % 16 == 0 in [16, 256]; K 16 (f16), 8 (tf32), 32 (fp8)")
                        .help(nearest_tcgen05(m)),
                );
            }
        }
        MmaEngine::Wgmma => {
            if let Err(why) = wgmma_check(m) {
                sink.push(
                    Diagnostic::error(codes::WGMMA_SHAPE, format!("illegal wgmma m{}n{}k{} ({} x {} -> {}): {why}", m.m, m.n, m.k, m.a, m.b, m.d))
                        .primary(m.span, "this instruction")
                        .help("wgmma shapes are m64nNk16 (f16/bf16), m64nNk8 (tf32), m64nNk32 (fp8), N a multiple of 8 up to 256"),
                );
            }
        }
    }
}

/// Which engine exists where: tcgen05/TMEM only on sm_100a (the sm_90a lowering maps a tcgen05
/// contract to wgmma), wgmma only on sm_90a.
pub(super) fn target_isa(ir: &TaskIr, sink: &mut Sink) {
    let Some(m) = &ir.mma else { return };
    for t in &ir.targets {
        if m.engine == MmaEngine::Wgmma && t.target == Target::Sm100a {
            sink.push(
                Diagnostic::error(codes::TARGET_ISA, "wgmma does not exist on sm_100a")
                    .primary(m.span, "wgmma here")
                    .secondary(t.span, "sm_100a declared here")
                    .note("Blackwell replaced wgmma with tcgen05.mma; mpkc lowers a tcgen05 contract to wgmma for sm_90a, not the reverse")
                    .help("write the MMA as `mma tcgen05 …` and keep both targets, or drop sm_100a"),
            );
        }
    }
}

/// On sm_90a the accumulator lives in the registers of the consumer warpgroup: a tile of
/// M x N f32 takes M * N / 128 registers per thread, which must stay within 255.
pub(super) fn accumulator_registers(ir: &TaskIr, sink: &mut Sink) {
    let Some(m) = &ir.mma else { return };
    let Some(t90) = ir.targets.iter().find(|t| t.target == Target::Sm90a) else {
        return;
    };
    let (tm, tn) = match &ir.tile {
        Some(t) => (t.m.unwrap_or(m.m), t.n.unwrap_or(m.n)),
        None => (m.m, m.n),
    };
    let per_elem = if m.d == Dtype::F16 { 1 } else { 2 };
    let regs = exact::mul(tm, tn) * i128::from(per_elem) / 2 / 128;
    if regs > i128::from(MAX_REGS_PER_THREAD) {
        let fits_tmem = ir.tmem_cols.is_some_and(|(c, _)| tn <= c) && tn <= 512;
        let on100 = if fits_tmem && ir.targets.iter().any(|t| t.target == Target::Sm100a) {
            " (on sm_100a it lives in TMEM and fits)"
        } else {
            ""
        };
        sink.push(
            Diagnostic::error(
                codes::ACC_REGISTERS,
                format!("on sm_90a the {tm}x{tn} {} accumulator needs {regs} registers per thread of one warpgroup, over the {MAX_REGS_PER_THREAD}-register limit{on100}", m.d),
            )
            .primary(m.span, format!("{tm} x {tn} accumulator"))
            .secondary(t90.span, "sm_90a declared here")
            .note("the sm_90a lowering keeps the accumulator in the 128 consumer threads' registers: M x N / 128 f32 values each")
            .help(format!("halve the tile's N (to {}) for sm_90a, or drop sm_90a from `targets`", tn / 2)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcgen05_shape_table() {
        assert!(tcgen05_shape("f16", 128, 16).is_ok());
        assert!(tcgen05_shape("f16", 128, 24).is_err());
        assert!(tcgen05_shape("f16", 64, 24).is_ok());
        assert!(tcgen05_shape("f16", 64, 264).is_err());
        assert!(tcgen05_shape("f16", 256, 16).is_err());
        assert!(tcgen05_shape("mxf8f6f4", 128, 24).is_ok());
        assert!(tcgen05_shape("mxf8f6f4", 64, 16).is_err());
        assert_eq!(
            tcgen05_k("f16", Dtype::Bf16, Dtype::Bf16, Dtype::F32),
            Ok(16)
        );
        assert!(tcgen05_k("f16", Dtype::Bf16, Dtype::F16, Dtype::F32).is_err());
        assert_eq!(
            tcgen05_k("mxf8f6f4", Dtype::E4m3, Dtype::E4m3, Dtype::F32),
            Ok(32)
        );
    }
}
