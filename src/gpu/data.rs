//! Host tensors for `mpkc verify`: element types as bytes, random fills (never all zeros), the
//! output poison, and the conversions the references need (bf16 through `half`; e4m3, e5m2 and
//! ue8m0 here, each by its own encoding).

use crate::ir::Dtype;

/// A tensor on the host: element type, extents (outermost first) and little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    /// The contract's name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Extents, outermost first.
    pub dims: Vec<i64>,
    /// `elements × dtype.bytes()` bytes.
    pub bytes: Vec<u8>,
}

impl HostTensor {
    /// A tensor of `dims` filled with `byte`.
    pub fn filled(name: &str, dtype: Dtype, dims: &[i64], byte: u8) -> HostTensor {
        let n = elements(dims) * dtype.bytes() as usize;
        HostTensor {
            name: name.to_string(),
            dtype,
            dims: dims.to_vec(),
            bytes: vec![byte; n],
        }
    }

    /// An output `t` as it is before a run: [`POISON`] (so that an element never written shows),
    /// but zero where `zero` (the tensors a run must find and leave zero,
    /// [`crate::valid::CheckedTask::zero_between_runs`]: `split_k bf16`'s counters count arrivals from
    /// zero, `split_k atomic`'s accumulator adds to zero).
    pub fn output_before_run(t: &crate::ir::TensorIr, zero: bool) -> HostTensor {
        let byte = if zero { 0 } else { POISON };
        HostTensor::filled(&t.name, t.dtype, &t.dims, byte)
    }

    /// The bytes of the parent a row-strided view lies in (`view(stride, offset)`): `rows ×
    /// row_stride` elements, the view's row `r` at element `r × row_stride + offset`, every
    /// other byte [`POISON`]. The view's first element is `offset` elements into the result.
    pub fn to_parent(&self, row_stride: i64, offset: i64) -> Vec<u8> {
        let eb = self.dtype.bytes() as usize;
        let (rows, cols) = self.rows_cols();
        let (stride, offset) = (row_stride as usize, offset as usize);
        let mut parent = vec![POISON; rows * stride * eb];
        for r in 0..rows {
            let at = (r * stride + offset) * eb;
            parent[at..at + cols * eb]
                .copy_from_slice(&self.bytes[r * cols * eb..(r + 1) * cols * eb]);
        }
        parent
    }

    /// Reads this view's elements back from `parent` (as [`Self::to_parent`] lays them out).
    pub fn from_parent(&mut self, parent: &[u8], row_stride: i64, offset: i64) {
        let eb = self.dtype.bytes() as usize;
        let (rows, cols) = self.rows_cols();
        let (stride, offset) = (row_stride as usize, offset as usize);
        for r in 0..rows {
            let at = (r * stride + offset) * eb;
            self.bytes[r * cols * eb..(r + 1) * cols * eb]
                .copy_from_slice(&parent[at..at + cols * eb]);
        }
    }

    /// Rows (every dimension but the last) and columns.
    fn rows_cols(&self) -> (usize, usize) {
        let n = self.dims.len().saturating_sub(1);
        (
            elements(&self.dims[..n]),
            self.dims.last().map_or(1, |c| *c as usize),
        )
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        elements(&self.dims)
    }

    /// True for a tensor with no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as f64 (bf16, f16, f32, e4m3, e5m2 and ue8m0 decoded; integers converted).
    pub fn get(&self, i: usize) -> f64 {
        let b = &self.bytes;
        match self.dtype {
            Dtype::Bf16 => f64::from(half::bf16::from_le_bytes([b[2 * i], b[2 * i + 1]]).to_f32()),
            Dtype::F16 => f64::from(half::f16::from_le_bytes([b[2 * i], b[2 * i + 1]]).to_f32()),
            Dtype::F32 => f64::from(f32::from_le_bytes([
                b[4 * i],
                b[4 * i + 1],
                b[4 * i + 2],
                b[4 * i + 3],
            ])),
            Dtype::E4m3 => f64::from(e4m3_to_f32(b[i])),
            Dtype::E5m2 => f64::from(e5m2_to_f32(b[i])),
            Dtype::Ue8m0 => f64::from(ue8m0_to_f32(b[i])),
            Dtype::I32 => f64::from(self.get_i32(i)),
            Dtype::I64 => self.get_i64(i) as f64,
            Dtype::U8 => f64::from(b[i]),
        }
    }

    /// Element `i` of an i32 tensor.
    pub fn get_i32(&self, i: usize) -> i32 {
        let b = &self.bytes[4 * i..4 * i + 4];
        i32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Element `i` of an i64 tensor.
    pub fn get_i64(&self, i: usize) -> i64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.bytes[8 * i..8 * i + 8]);
        i64::from_le_bytes(a)
    }

    /// Stores `v` at element `i`, rounded to the element type as CUDA's conversions round: to
    /// nearest even (the fp8 types saturating at their largest finite value), ue8m0 |v| up to a
    /// power of two (`__nv_fp8_e8m0`'s constructor).
    pub fn set(&mut self, i: usize, v: f64) {
        match self.dtype {
            Dtype::Bf16 => {
                self.bytes[2 * i..2 * i + 2].copy_from_slice(&half::bf16::from_f64(v).to_le_bytes())
            }
            Dtype::F16 => {
                self.bytes[2 * i..2 * i + 2].copy_from_slice(&half::f16::from_f64(v).to_le_bytes())
            }
            Dtype::F32 => self.bytes[4 * i..4 * i + 4].copy_from_slice(&(v as f32).to_le_bytes()),
            Dtype::E4m3 => self.bytes[i] = f32_to_e4m3(v as f32),
            Dtype::E5m2 => self.bytes[i] = f32_to_e5m2(v as f32),
            Dtype::Ue8m0 => self.bytes[i] = f64_to_ue8m0(v),
            Dtype::I32 => self.bytes[4 * i..4 * i + 4].copy_from_slice(&(v as i32).to_le_bytes()),
            Dtype::I64 => self.set_i64(i, v as i64),
            Dtype::U8 => self.bytes[i] = v as u8,
        }
    }

    /// Stores an i64 at element `i`.
    pub fn set_i64(&mut self, i: usize, v: i64) {
        self.bytes[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// True when element `i` still holds the poison `verify` wrote before the run (NaN for the
    /// float types, all ones for the integers).
    pub fn is_poison(&self, i: usize) -> bool {
        let w = self.dtype.bytes() as usize;
        match self.dtype {
            Dtype::Bf16 | Dtype::F16 | Dtype::F32 | Dtype::E4m3 | Dtype::E5m2 | Dtype::Ue8m0 => {
                self.get(i).is_nan()
            }
            _ => self.bytes[w * i..w * i + w].iter().all(|b| *b == 0xFF),
        }
    }
}

/// Product of the extents (0 for a negative extent).
pub fn elements(dims: &[i64]) -> usize {
    dims.iter()
        .map(|d| usize::try_from(*d).unwrap_or(0))
        .product()
}

/// The byte every output is filled with before a run: NaN in bf16, f16, f32, e4m3, e5m2 and
/// ue8m0, -1 in the integer types.
pub const POISON: u8 = 0xFF;

/// A deterministic random source for one verification case.
pub struct Fill {
    rng: fastrand::Rng,
}

impl Fill {
    /// The source for `seed`.
    pub fn new(seed: u64) -> Fill {
        Fill {
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.rng.f64()
    }

    /// Uniform integer in [lo, hi).
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            lo
        } else {
            self.rng.i64(lo..hi)
        }
    }

    /// Values uniform in [-1, 1), rounded to the element type; e4m3 in [-2, 2), drawn as one of
    /// 65,536 evenly spaced points (finer than e4m3's smallest step, 2^-9) through a table of
    /// their codes: DeepSeek-V3's routed W13 is 940 M e4m3 weights, which a rounding per element
    /// took tens of seconds to fill.
    pub fn values(&mut self, t: &mut HostTensor) {
        if t.dtype == Dtype::E4m3 {
            static CODES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
            let codes = CODES.get_or_init(|| {
                (0..=u16::MAX)
                    .map(|u| f32_to_e4m3((-2.0 + 4.0 * (f64::from(u) + 0.5) / 65536.0) as f32))
                    .collect()
            });
            for b in t.bytes.iter_mut() {
                *b = codes[usize::from(self.rng.u16(..))];
            }
            return;
        }
        let span = 1.0;
        for i in 0..t.len() {
            let v = self.uniform(-span, span);
            t.set(i, v);
        }
    }

    /// Powers of two 2^e with e uniform in [lo, hi] (f32 block scales, exact in UE8M0).
    pub fn powers_of_two(&mut self, t: &mut HostTensor, lo: i32, hi: i32) {
        for i in 0..t.len() {
            let e = self.int(i64::from(lo), i64::from(hi) + 1) as i32;
            t.set(i, 2f64.powi(e));
        }
    }
}

/// The value of an e4m3 byte (OCP FP8 E4M3: bias 7, no infinities, 0x7F/0xFF NaN, max 448).
pub fn e4m3_to_f32(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let e = i32::from((b >> 3) & 0xF);
    let m = f32::from(b & 7);
    if e == 15 && b & 7 == 7 {
        return f32::NAN;
    }
    if e == 0 {
        sign * m / 8.0 * 2f32.powi(-6)
    } else {
        sign * (1.0 + m / 8.0) * 2f32.powi(e - 7)
    }
}

/// The value of an e5m2 byte (OCP FP8 E5M2: bias 15, IEEE 754-like: exponent 31 with mantissa 0
/// is ±infinity (0x7C, 0xFC), with a non-zero mantissa NaN (0x7D-0x7F, 0xFD-0xFF); max 57344).
pub fn e5m2_to_f32(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let e = i32::from((b >> 2) & 0x1F);
    let m = f32::from(b & 3);
    match e {
        31 if b & 3 == 0 => sign * f32::INFINITY,
        31 => f32::NAN,
        0 => sign * m / 4.0 * 2f32.powi(-14),
        _ => sign * (1.0 + m / 4.0) * 2f32.powi(e - 15),
    }
}

/// Rounds `v` to the nearest e5m2 (ties to even, saturating at ±57344 as `__nv_fp8_e5m2` does,
/// infinities included: its conversion is `__NV_SATFINITE`); NaN stays NaN (0x7F).
pub fn f32_to_e5m2(v: f32) -> u8 {
    if v.is_nan() {
        return 0x7F;
    }
    let sign = if v.is_sign_negative() { 0x80u8 } else { 0 };
    // The finite positive encodings 0x00..=0x7B increase with their value.
    static POSITIVE: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
    let table = POSITIVE.get_or_init(|| (0u8..=0x7B).map(e5m2_to_f32).collect());
    sign | nearest_code(table, v.abs())
}

/// The value of a UE8M0 byte (OCP MX scale: unsigned, exponent only, bias 127): 2^(b - 127),
/// 0x00 is 2^-127, 0xFE 2^127, 0xFF NaN.
pub fn ue8m0_to_f32(b: u8) -> f32 {
    if b == 0xFF {
        return f32::NAN;
    }
    // 2^-127 is an f32 subnormal: exact, as every other power here.
    (2f64.powi(i32::from(b) - 127)) as f32
}

/// Encodes `v` as `__nv_fp8_e8m0(v)` does (`__NV_SATFINITE`, `cudaRoundPosInf`): the sign is
/// dropped and |v| rounded up to a power of two, clipped to 2^-127..=2^127 (0 and the
/// subnormals below 2^-127 give 0x00, +∞ gives 0xFE); NaN is 0xFF.
pub fn f64_to_ue8m0(v: f64) -> u8 {
    if v.is_nan() {
        return 0xFF;
    }
    let a = v.abs();
    if a <= 2f64.powi(-127) {
        return 0x00;
    }
    if a == f64::INFINITY {
        return 0xFE;
    }
    // `a` is a normal f64 here: its exponent, one more unless it is a power of two.
    let bits = a.to_bits();
    let exp = ((bits >> 52) & 0x7FF) as i32 - 1023;
    let up = i32::from(bits & ((1u64 << 52) - 1) != 0);
    ((exp + up).clamp(-127, 127) + 127) as u8
}

/// The code of the value in `table` (a format's positive codes in increasing order) nearest to
/// `a` ≥ 0, ties to the even code, the last code for anything above it (saturation).
fn nearest_code(table: &[f32], a: f32) -> u8 {
    let above = table.partition_point(|x| *x < a);
    if above == 0 {
        return 0;
    }
    if above >= table.len() {
        return (table.len() - 1) as u8;
    }
    let (lo, hi) = ((above - 1) as u8, above as u8);
    let (dlo, dhi) = (a - table[lo as usize], table[hi as usize] - a);
    if dlo < dhi || (dlo == dhi && lo & 1 == 0) {
        lo
    } else {
        hi
    }
}

/// Rounds `v` to the nearest e4m3 (ties to even, saturating at ±448 as `__nv_fp8_e4m3` does for
/// finite inputs); NaN stays NaN.
pub fn f32_to_e4m3(v: f32) -> u8 {
    if v.is_nan() {
        return 0x7F;
    }
    let sign = if v.is_sign_negative() { 0x80u8 } else { 0 };
    // The positive encodings 0x00..=0x7E increase with their value.
    static POSITIVE: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
    let table = POSITIVE.get_or_init(|| (0u8..0x7F).map(e4m3_to_f32).collect());
    sign | nearest_code(table, v.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3_values_are_uniform_in_minus_two_two() {
        let mut t = HostTensor::filled("w", Dtype::E4m3, &[1 << 16], 0);
        Fill::new(5).values(&mut t);
        let v: Vec<f64> = (0..t.len()).map(|i| t.get(i)).collect();
        assert!(v.iter().all(|x| (-2.0..=2.0).contains(x)));
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let below_one = v.iter().filter(|x| x.abs() < 1.0).count() as f64 / v.len() as f64;
        assert!(mean.abs() < 0.02, "{mean}");
        assert!((below_one - 0.5).abs() < 0.02, "{below_one}");
        // The same seed, the same bytes.
        let mut u = HostTensor::filled("w", Dtype::E4m3, &[1 << 16], 0);
        Fill::new(5).values(&mut u);
        assert_eq!(t.bytes, u.bytes);
    }

    #[test]
    fn e4m3_round_trips_every_finite_byte() {
        for b in 0u8..=0xFF {
            if b & 0x7F == 0x7F {
                assert!(e4m3_to_f32(b).is_nan());
                continue;
            }
            let v = e4m3_to_f32(b);
            let back = f32_to_e4m3(v);
            // +0 and -0 both decode to 0.
            assert_eq!(e4m3_to_f32(back), v, "byte {b:#04x}");
        }
        assert_eq!(e4m3_to_f32(0x7E), 448.0);
        assert_eq!(f32_to_e4m3(1000.0), 0x7E);
        assert_eq!(e4m3_to_f32(0x01), 2f32.powi(-9));
    }

    /// Known bit patterns of the OCP FP8 formats (OCP 8-bit Floating Point Specification
    /// v1.0): E4M3 has no infinities and one NaN per sign (0x7F, 0xFF), so 0x7E is its largest
    /// value, 448; E5M2 is IEEE-like, 0x7C infinity and 0x7D-0x7F NaN.
    #[test]
    fn fp8_bytes_decode_by_their_own_format() {
        assert_eq!(e4m3_to_f32(0x38), 1.0);
        assert_eq!(e4m3_to_f32(0xB8), -1.0);
        assert_eq!(e4m3_to_f32(0x40), 2.0);
        assert_eq!(e4m3_to_f32(0x08), 2f32.powi(-6));
        assert_eq!(e4m3_to_f32(0x7E), 448.0);
        assert_eq!(e4m3_to_f32(0xFE), -448.0);
        assert!(e4m3_to_f32(0x7F).is_nan() && e4m3_to_f32(0xFF).is_nan());
        assert_eq!(e5m2_to_f32(0x3C), 1.0);
        assert_eq!(e5m2_to_f32(0xBC), -1.0);
        assert_eq!(e5m2_to_f32(0x3E), 1.5);
        assert_eq!(e5m2_to_f32(0x40), 2.0);
        assert_eq!(e5m2_to_f32(0x04), 2f32.powi(-14));
        assert_eq!(e5m2_to_f32(0x01), 2f32.powi(-16));
        assert_eq!(e5m2_to_f32(0x7B), 57344.0);
        assert_eq!(e5m2_to_f32(0x7C), f32::INFINITY);
        assert_eq!(e5m2_to_f32(0xFC), f32::NEG_INFINITY);
        for nan in [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF] {
            assert!(e5m2_to_f32(nan).is_nan(), "{nan:#04x}");
        }
        assert_eq!(ue8m0_to_f32(0x7F), 1.0);
        assert_eq!(ue8m0_to_f32(0x80), 2.0);
        assert_eq!(ue8m0_to_f32(0x7E), 0.5);
        assert_eq!(ue8m0_to_f32(0x00), 2f32.powi(-127));
        assert_eq!(ue8m0_to_f32(0xFE), 2f32.powi(127));
        assert!(ue8m0_to_f32(0xFF).is_nan());
    }

    /// Encoding as CUDA's conversions do: e5m2 to nearest, ties to the even code, saturating;
    /// ue8m0 rounds |v| up to a power of two (`__nv_fp8_e8m0`, `cudaRoundPosInf`).
    #[test]
    fn fp8_encodings_round_as_cuda_does() {
        assert_eq!(f32_to_e5m2(1.0), 0x3C);
        assert_eq!(f32_to_e5m2(-1.0), 0xBC);
        // 1.125 lies halfway between 1.0 (0x3C) and 1.25 (0x3D), 1.375 between 0x3D and 0x3E.
        assert_eq!(f32_to_e5m2(1.125), 0x3C);
        assert_eq!(f32_to_e5m2(1.375), 0x3E);
        assert_eq!(f32_to_e5m2(1e9), 0x7B);
        assert_eq!(f32_to_e5m2(f32::NEG_INFINITY), 0xFB);
        assert_eq!(f32_to_e5m2(2f32.powi(-17)), 0x00);
        assert!(e5m2_to_f32(f32_to_e5m2(f32::NAN)).is_nan());
        for b in 0u8..=0xFF {
            let v = e5m2_to_f32(b);
            if v.is_finite() {
                assert_eq!(f32_to_e5m2(v), b, "byte {b:#04x}");
            }
        }
        assert_eq!(f64_to_ue8m0(1.0), 0x7F);
        assert_eq!(f64_to_ue8m0(3.0), 0x81);
        assert_eq!(f64_to_ue8m0(0.3), 0x7E);
        assert_eq!(f64_to_ue8m0(-2.0), 0x80);
        assert_eq!(f64_to_ue8m0(0.0), 0x00);
        assert_eq!(f64_to_ue8m0(2f64.powi(-130)), 0x00);
        assert_eq!(f64_to_ue8m0(2f64.powi(-126)), 0x01);
        assert_eq!(f64_to_ue8m0(1e300), 0xFE);
        assert_eq!(f64_to_ue8m0(f64::INFINITY), 0xFE);
        assert_eq!(f64_to_ue8m0(f64::NAN), 0xFF);
        for b in 0u8..0xFF {
            assert_eq!(f64_to_ue8m0(f64::from(ue8m0_to_f32(b))), b, "byte {b:#04x}");
        }
    }

    /// A host tensor reads and writes e5m2 and ue8m0 elements as numbers, not raw bytes (a
    /// stored 1.0 is 0x3C and 0x7F, and reads back as 1.0).
    #[test]
    fn e5m2_and_ue8m0_tensors_hold_values() {
        let mut t = HostTensor::filled("y", Dtype::E5m2, &[3], 0);
        t.set(0, 1.0);
        t.set(1, -0.75);
        assert_eq!(t.bytes[..2], [0x3C, 0xBA]);
        assert_eq!((t.get(0), t.get(1)), (1.0, -0.75));
        let mut s = HostTensor::filled("s", Dtype::Ue8m0, &[3], 0);
        s.set(0, 1.0);
        s.set(1, 0.0625);
        s.set(2, 5.0);
        assert_eq!(s.bytes, [0x7F, 0x7B, 0x82]);
        assert_eq!((s.get(0), s.get(1), s.get(2)), (1.0, 0.0625, 8.0));
    }

    #[test]
    fn poison_reads_as_not_written() {
        for dt in [
            Dtype::Bf16,
            Dtype::F32,
            Dtype::E4m3,
            Dtype::E5m2,
            Dtype::Ue8m0,
            Dtype::I64,
            Dtype::I32,
        ] {
            let t = HostTensor::filled("t", dt, &[3], POISON);
            assert!((0..3).all(|i| t.is_poison(i)), "{dt}");
            let z = HostTensor::filled("t", dt, &[3], 0);
            assert!((0..3).all(|i| !z.is_poison(i)), "{dt}");
        }
    }

    #[test]
    fn fills_are_deterministic_and_not_zero() {
        let mut a = HostTensor::filled("a", Dtype::Bf16, &[64], 0);
        let mut b = a.clone();
        Fill::new(7).values(&mut a);
        Fill::new(7).values(&mut b);
        assert_eq!(a, b);
        assert!((0..64).any(|i| a.get(i) != 0.0));
    }

    #[test]
    fn a_view_round_trips_through_its_parent() {
        let mut v = HostTensor::filled("kv", Dtype::Bf16, &[2, 3], 0);
        for i in 0..6 {
            v.set(i, i as f64 + 1.0);
        }
        let parent = v.to_parent(8, 4);
        assert_eq!(parent.len(), 2 * 8 * 2);
        // Row 1 starts at element 8 + 4; the gap before it is poison.
        let p = HostTensor {
            name: "p".into(),
            dtype: Dtype::Bf16,
            dims: vec![16],
            bytes: parent.clone(),
        };
        assert_eq!(p.get(12), 4.0);
        assert_eq!(p.get(4), 1.0);
        assert!(p.is_poison(0) && p.is_poison(7) && p.is_poison(11) && p.is_poison(15));
        let mut back = HostTensor::filled("kv", Dtype::Bf16, &[2, 3], POISON);
        back.from_parent(&parent, 8, 4);
        assert_eq!(back, v);
    }
}
