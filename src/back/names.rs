//! Names in generated code, derived from contract names only (never from arena indices), so
//! adding a region renames nothing else.

/// C++ keywords and CUDA built-ins a contract name may not take in generated code
/// (ISO C++17 [lex.key], CUDA C++ Programming Guide "Built-in Variables").
pub const RESERVED: &[&str] = &[
    "alignas",
    "alignof",
    "asm",
    "auto",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "constexpr",
    "const_cast",
    "continue",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "nullptr",
    "operator",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "buf",
    "smem",
    "task_desc",
    "runtime_config",
    "runtime_smem",
    "instruction_index",
    "iter_num",
    "task_offset",
    "and",
    "or",
    "not",
    "xor",
    "bitand",
    "bitor",
    "compl",
    "and_eq",
    "or_eq",
    "xor_eq",
    "not_eq",
    "char8_t",
    "char16_t",
    "char32_t",
    "concept",
    "requires",
    "co_await",
    "co_return",
    "co_yield",
    "consteval",
    "constinit",
    "kernel",
    "std",
    "cuda",
    "printf",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "half",
    "float2",
    "float4",
    "uint4",
    "dim3",
    "TaskDesc",
    "RuntimeConfig",
    "RuntimeSMEM",
    "CUtensorMap",
];

/// Function-like macros of the C headers every generated kernel sees through nvcc's CUDA runtime
/// headers (<cassert>, <cstddef>, <cmath>): `header_macros.txt` holds the object-like ones only,
/// and a contract name equal to one of these is rewritten too where it is followed by `(`.
const FUNCTION_LIKE_MACROS: &[&str] = &[
    "assert",
    "offsetof",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "fpclassify",
];

/// Whether `name` is a macro of a generated kernel's headers: the function-like ones of the C
/// headers ([`FUNCTION_LIKE_MACROS`]) and the object-like macros, named with a letter first, that
/// the preprocessor defines in every generated kernel: those of nvcc's CUDA headers, the host C library's headers they include
/// (glibc's `<stdlib.h>`, `<limits.h>`, `<time.h>`, …: `RAND_MAX`, `EXIT_FAILURE`,
/// `CLOCKS_PER_SEC`), `<cooperative_groups.h>` (which a body may pull in) and mpkc's support and
/// layout headers (`MPK_MAX_NUM_BATCHED_REQUESTS`, `MPKC_HD`). A contract name equal to one is
/// expanded inside the generated declaration (`params::RAND_MAX`), which nvcc then rejects.
/// One name per line in `header_macros.txt`, from `nvcc -E -Xcompiler -dM` over those headers
/// for sm_90a and sm_100a; tests/header_macros.rs checks it against the installed nvcc.
pub fn is_header_macro(name: &str) -> bool {
    if FUNCTION_LIKE_MACROS.contains(&name) {
        return true;
    }
    static SET: std::sync::OnceLock<std::collections::BTreeSet<&'static str>> =
        std::sync::OnceLock::new();
    SET.get_or_init(|| {
        include_str!("header_macros.txt")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect()
    })
    .contains(name)
}

/// `w_ring` → `W_RING`; `W_0` → `W_0`.
pub fn upper(name: &str) -> String {
    name.to_ascii_uppercase()
}

/// `w_ring` → `WRing`; `tmem_ready` → `TmemReady`.
pub fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// A C++ string literal for `s` (contract names are identifiers; quotes and backslashes are
/// escaped anyway).
pub fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A C++ `float` literal: the shortest digits that read back as `v` rounded to `f32`.
pub fn float_literal(v: f64) -> String {
    // `v` is an `f32` param's value (rounded to f32 by sema), so the shortest f32 text reads
    // back as exactly it.
    float_suffix(&format!("{:?}", v as f32))
}

fn float_suffix(s: &str) -> String {
    if s.contains(['.', 'e', 'E']) || s.contains("inf") || s.contains("NaN") {
        format!("{s}f")
    } else {
        format!("{s}.0f")
    }
}

/// A C++ integer constant of value `v`. `i64::MIN` is written `(-9223372036854775807 - 1)`: its
/// magnitude has no signed 64-bit literal, and `-9223372036854775808` is the negation of an
/// unsigned constant (g++: "integer constant is so large that it is unsigned").
pub fn int_literal(v: i64) -> String {
    if v == i64::MIN {
        format!("({} - 1)", i64::MIN + 1)
    } else {
        v.to_string()
    }
}

/// A C++ `double` literal with the exact shortest round-trip digits of `v` (`1e-300`, `2.0`).
pub fn double_literal(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains(['.', 'e', 'E']) || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_conversions() {
        assert_eq!(upper("w_ring"), "W_RING");
        assert_eq!(camel("tmem_ready"), "TmemReady");
        assert_eq!(float_literal(1e-6), "1e-6f");
        assert_eq!(float_literal(2.0), "2.0f");
        assert_eq!(double_literal(1e-300), "1e-300");
        assert_eq!(double_literal(7168.0), "7168.0");
        assert_eq!(c_string("a\"b"), "\"a\\\"b\"");
        assert_eq!(int_literal(i64::MIN), "(-9223372036854775807 - 1)");
        assert_eq!(int_literal(i64::MIN + 1), "-9223372036854775807");
        assert_eq!(int_literal(i64::MAX), "9223372036854775807");
    }
}
