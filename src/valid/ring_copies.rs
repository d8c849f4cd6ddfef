//! E0110 for a consumer ring's copies that do not fit its slot: the loader body's
//! `RING.load(src, BYTES)`, `RING.acquire(BYTES)` and `RING.copy(OFFSET, src, BYTES)` calls
//! (`mpkc_ring.cuh`) whose byte counts are constant expressions at the instance's params. A bulk
//! copy writes `BYTES` at byte `OFFSET` of the slot: past its end it overwrites the next slot (or,
//! from the last slot, the next region), and the production kernel does not check it (only
//! `mpkc verify`'s test build traps it, `report_bad_copy`). `cp.async.bulk` also moves multiples
//! of 16 bytes at 16-byte aligned offsets (PTX ISA 9.0, "cp.async.bulk"): a count or offset off
//! that grain has no defined effect.
//!
//! A byte count is read with [`super::const_expr`] over the body's constants
//! ([`super::body_constants::body_constants`]: `params::NAME`, …), after two rewrites of the C++
//! the bodies write: `sizeof(T)` of a CUDA scalar or vector type becomes its size, and a cast to
//! an integer type (`uint32_t(x)`, `static_cast<uint32_t>(x)`, `(uint32_t)x`) becomes its
//! operand in parentheses (so a value the cast would wrap is not read: a negative one is given
//! up). Anything else (a local, a run-time value) is left alone: the copy is not checked.

use super::body::{call_args, calls_of, strip_comments_and_strings};
use super::body_constants::{body_constants, Names};
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, TaskIr};
use crate::span::Span;

/// The bulk-copy grain of `cp.async.bulk`: sizes and shared-memory offsets in multiples of it.
const BULK_ALIGN: i64 = 16;

/// Sizes in bytes of the types a body's `sizeof` names besides the contract's element types
/// (whose CUDA names and sizes are [`crate::ir::Dtype::cuda_type`] and [`crate::ir::Dtype::bytes`]): aliases, vector
/// types and the integer types.
const OTHER_SIZES: &[(&str, i64)] = &[
    ("nv_bfloat16", 2),
    ("half", 2),
    ("__nv_bfloat162", 4),
    ("__half2", 4),
    ("half2", 4),
    ("double", 8),
    ("float2", 8),
    ("float4", 16),
    ("int4", 16),
    ("uint4", 16),
    ("char", 1),
    ("int8_t", 1),
    ("int16_t", 2),
    ("uint16_t", 2),
    ("int", 4),
    ("unsigned", 4),
    ("uint32_t", 4),
    ("uint64_t", 8),
    ("size_t", 8),
    ("mpkc::Bf16x8", 16),
];

/// `sizeof(ty)` where `ty` names an element type or one of [`OTHER_SIZES`].
fn size_of(ty: &str) -> Option<i64> {
    use crate::ir::Dtype;
    [
        Dtype::Bf16,
        Dtype::F16,
        Dtype::F32,
        Dtype::E4m3,
        Dtype::E5m2,
        Dtype::Ue8m0,
        Dtype::U8,
        Dtype::I32,
        Dtype::I64,
    ]
    .into_iter()
    .find(|d| d.cuda_type() == ty)
    .map(Dtype::bytes)
    .or_else(|| OTHER_SIZES.iter().find(|(t, _)| *t == ty).map(|(_, n)| *n))
}

/// Integer types a cast may name.
const INT_TYPES: &[&str] = &[
    "int", "unsigned", "int32_t", "uint32_t", "int64_t", "uint64_t", "size_t", "long",
];

/// `text` with `sizeof(T)` of a known type replaced by its size and integer casts by their
/// operand in parentheses; `None` where a `sizeof` names a type [`size_of`] does not know.
fn rewrite(text: &str) -> Option<String> {
    let mut s = text.to_string();
    while let Some(at) = s.find("sizeof") {
        let rest = s[at + 6..].trim_start();
        let inner = rest.strip_prefix('(')?;
        let close = inner.find(')')?;
        let ty = inner[..close].trim();
        let size = size_of(ty)?;
        let end = s.len() - inner.len() + close + 1;
        s.replace_range(at..end, &size.to_string());
    }
    for t in INT_TYPES {
        s = s.replace(&format!("static_cast<{t}>"), "");
        s = s.replace(&format!("({t})"), "");
        // `uint32_t(x)`: the type name before `(`, not the tail of a longer name.
        let mut out = String::with_capacity(s.len());
        let mut rest = s.as_str();
        while let Some(i) = rest.find(t) {
            let before_ok = !rest[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
            let after = &rest[i + t.len()..];
            let after_ok = after.trim_start().starts_with('(');
            out.push_str(&rest[..i]);
            if !(before_ok && after_ok) {
                out.push_str(t);
            }
            rest = after;
        }
        out.push_str(rest);
        s = out;
    }
    Some(s)
}

/// The value of a byte argument, where it is a constant expression (see the module doc) in
/// `0..=u32::MAX`.
fn bytes_of(arg: &str, names: &Names<'_>) -> Option<i64> {
    value_of(arg, names).filter(|v| UINT32.contains(v))
}

/// The value of a ring call's byte argument `arg` where it is a constant expression over the
/// body's constants `names`, in `0..=u32::MAX` (the rewrites of the module doc): what
/// `valid::ring_uses` adds up.
pub(super) fn constant_bytes(arg: &str, names: &Names<'_>) -> Option<i64> {
    bytes_of(arg, names)
}

/// The value of a byte argument written without a cast to an integer type, where it is a
/// constant expression outside `0..=u32::MAX` (what the `uint32_t` parameter wraps).
fn wrapping(arg: &str, names: &Names<'_>) -> Option<i64> {
    let arg = arg.trim();
    if arg.contains("_cast") || arg.contains("int") || arg.contains("unsigned") {
        return None;
    }
    value_of(arg, names).filter(|v| !UINT32.contains(v))
}

/// The values the ring's `uint32_t` byte counts and offsets take as they are.
const UINT32: std::ops::RangeInclusive<i64> = 0..=u32::MAX as i64;

/// The value of a byte argument as a constant expression at the instance's params (after the
/// rewrites of the module doc), whatever its range.
fn value_of(arg: &str, names: &Names<'_>) -> Option<i64> {
    super::const_expr::eval(&rewrite(arg.trim())?, names)
}

/// E0110 for each copy of a consumer ring in the loader body whose constant byte count (and
/// offset) does not fit the ring's slot, or is not a multiple of 16 bytes.
pub(super) fn ring_copies(ir: &TaskIr, sink: &mut Sink) {
    let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.loader_body
    else {
        return;
    };
    let names = body_constants(ir, code);
    let text = strip_comments_and_strings(code);
    for ch in ir
        .channels
        .values()
        .filter(|c| super::rings::is_consumer_ring(c))
    {
        let slot = super::rings::slot_bytes(ir, ch);
        // A slot that is no whole number of 16-byte units is E0306's already.
        if slot < BULK_ALIGN || slot % BULK_ALIGN != 0 {
            continue;
        }
        // (method, index of the byte count, index of the offset) in its arguments.
        for (method, n, off) in [
            ("load", 1, None),
            ("acquire", 0, None),
            ("copy", 2, Some(0)),
        ] {
            let call = format!("{}.{method}", ch.name);
            for (at, args_at) in calls_of(&text, &call) {
                let args = call_args(&text[args_at..]);
                let close = args_at + args.iter().map(|a| a.len() + 1).sum::<usize>();
                let span = Span::new(
                    code_span.start + at,
                    code_span.start + close.min(text.len()),
                );
                // A constant outside the `uint32_t` the ring's calls take, passed as it is: the
                // conversion wraps it (-16 becomes 4,294,967,280 bytes).
                let mut wrapped = false;
                for k in std::iter::once(n).chain(off) {
                    let Some((a, v)) = args
                        .get(k)
                        .and_then(|a| Some((a.trim(), wrapping(a, &names)?)))
                    else {
                        continue;
                    };
                    wrapped = true;
                    sink.push(
                        Diagnostic::error(
                            codes::REGION_USE,
                            format!("ring `{}`'s `{method}` passes `{a}` = {v}, which its `uint32_t` {} wraps to {}", ch.name, if Some(k) == off { "offset" } else { "byte count" }, v as u32),
                        )
                        .primary(span, format!("`{a}` is {v} with the instance's params"))
                        .note("the ring's `load`, `acquire` and `copy` take byte counts and offsets as `uint32_t`: a negative or oversized constant becomes a copy of gigabytes into the slot, which the production kernel does not check")
                        .help(format!("pass a count in 0..={} that fits the slot", u32::MAX)),
                    );
                }
                if wrapped {
                    continue;
                }
                let Some(bytes) = args.get(n).and_then(|a| bytes_of(a, &names)) else {
                    continue;
                };
                let offset = match off {
                    Some(k) => match args.get(k).and_then(|a| bytes_of(a, &names)) {
                        Some(o) => o,
                        None => continue,
                    },
                    None => 0,
                };
                let shown = args.get(n).map_or("", |a| a.trim());
                let size_help = "size the region to depth x the largest use, or copy less per use (several `copy` calls of one `acquire`, or more uses)".to_string();
                let (problem, help) = if offset + bytes > slot {
                    (
                        format!(
                            "writes bytes {offset}..{} of a {slot}-byte slot",
                            offset + bytes
                        ),
                        size_help,
                    )
                } else if bytes % BULK_ALIGN != 0 || offset % BULK_ALIGN != 0 {
                    // Rows per copy that make whole units: 16 / gcd(bytes, 16).
                    let gcd = |mut a: i64, mut b: i64| {
                        while b != 0 {
                            (a, b) = (b, a % b);
                        }
                        a.max(1)
                    };
                    let rows = BULK_ALIGN / gcd(bytes.max(1), BULK_ALIGN);
                    (
                        format!("copies {bytes} bytes at offset {offset}, not multiples of {BULK_ALIGN}"),
                        format!(
                            "copy whole {BULK_ALIGN}-byte units at {BULK_ALIGN}-byte offsets: join {rows} copies of {bytes} bytes into one of {} (contiguous in the source), or stage data of this size through registers; rounding the count up would read past the source",
                            rows * bytes
                        ),
                    )
                } else {
                    continue;
                };
                sink.push(
                    Diagnostic::error(
                        codes::REGION_USE,
                        format!(
                            "ring `{}`'s `{method}` {problem}",
                            ch.name
                        ),
                    )
                    .primary(span, format!("`{shown}` is {bytes} bytes with the instance's params"))
                    .note(format!(
                        "ring `{}` has {} slots of {slot} bytes (its region's bytes / depth); a bulk copy past its slot overwrites the next one, and `cp.async.bulk` moves multiples of {BULK_ALIGN} bytes at {BULK_ALIGN}-byte offsets (PTX ISA, cp.async.bulk); the production kernel does not check it",
                        ch.name, ch.depth
                    ))
                    .help(help),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizeof_and_casts_are_read() {
        let names =
            |n: &str| (n == "params::cols").then_some((1024, super::super::const_expr::Ty::Long));
        for (arg, want) in [
            ("uint32_t(params::cols) * sizeof(__nv_bfloat16)", Some(2048)),
            (
                "static_cast<uint32_t>(params::cols) * sizeof(float)",
                Some(4096),
            ),
            ("(uint32_t)params::cols * 2", Some(2048)),
            ("params::cols * sizeof(mpkc::Bf16x8)", Some(16384)),
            ("row_bytes", None),
            ("sizeof(MyType) * 4", None),
            ("uint32_t(-1)", None),
        ] {
            assert_eq!(bytes_of(arg, &names), want, "{arg}");
        }
    }
}
