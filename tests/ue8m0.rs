//! `ue8m0` elements in generated CUDA are `<cuda_fp8.h>`'s `__nv_fp8_e8m0` (a tensor's pointer, a
//! helper's parameter, a region member's accessor), so that a float stored into one is encoded
//! as a power of two (`__nv_fp8_e8m0(v)`), never truncated to an integer byte as it was when
//! they were `uint8_t`: a plain `s[i] = v` of a float no longer compiles. nvcc on the generated
//! kernels, every declared target.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A consumer storing UE8M0 scales three ways: into its output tensor, into a region member
/// and through a helper's ue8m0 output parameter. `STORE` is the tensor's store.
const CONTRACT: &str = r#"task ue8m0_store {
  family consumer
  targets sm_100a, sm_90a
  param n: int = 256
  tensor x: f32[n] in
  tensor s: ue8m0[n] out
  tensor t: ue8m0[n] out
  region stage { holds ue8m0[256] sf; align 16; pack; release 1 }
  barrier sync = named(3, threads 128)
  use pow2(n = n)
  body cuda {
    for (int i = threadIdx.x; i < params::n; i += kConsumerThreads) buf.stage_sf()[i] = __nv_fp8_e8m0(x[i]);
    mpkc::named_barrier_sync(BAR_SYNC, kConsumerThreads);
    for (int i = threadIdx.x; i < params::n; i += kConsumerThreads) STORE;
    pow2(x, t);
  }
}

task pow2 {
  family helper
  param n: int = 256
  tensor x: f32[n] in
  tensor y: ue8m0[n] out
  body cuda {
    for (int i = threadIdx.x; i < params::n; i += kConsumerThreads) y[i] = __nv_fp8_e8m0(x[i]);
  }
}
"#;

fn build(name: &str, store: &str) -> (Output, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ue8m0-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ue8m0_store.mpk");
    std::fs::write(&file, CONTRACT.replace("STORE", store)).unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .arg("build")
        .arg(&file)
        .args(["--no-cache", "--out"])
        .arg(&out)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (o, out)
}

/// The store `s[i] = __nv_fp8_e8m0(v)`, a member's and a helper's, compile for both targets,
/// and every ue8m0 pointer the generated kernel declares is `__nv_fp8_e8m0`.
#[test]
fn ue8m0_elements_are_nv_fp8_e8m0_and_an_encoding_store_compiles() {
    let (o, out) = build("encoded", "s[i] = buf.stage_sf()[i]");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let cuh = std::fs::read_to_string(out.join("ue8m0_store.cuh")).unwrap();
    for decl in [
        "__nv_fp8_e8m0 *__restrict__ const s = static_cast<__nv_fp8_e8m0 *>(task_desc->output_ptrs[0]);",
        "__nv_fp8_e8m0 *stage_sf() const { return reinterpret_cast<__nv_fp8_e8m0 *>(",
        "__nv_fp8_e8m0 *y)",
    ] {
        assert!(cuh.contains(decl), "{decl}\n{cuh}");
    }
    assert!(!cuh.contains("uint8_t *"), "{cuh}");
}

/// A float stored as it is into a ue8m0 element is refused by nvcc (the type's converting
/// constructors are explicit), where a `uint8_t` element silently truncated it: 0.25 became 0.
#[test]
fn a_float_stored_into_a_ue8m0_element_does_not_compile() {
    let (o, _) = build("truncating", "s[i] = x[i]");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("error[E0701]: nvcc: no operator \"=\" matches these operands")
            && stderr.contains("s[i] = x[i]"),
        "{stderr}"
    );
}
