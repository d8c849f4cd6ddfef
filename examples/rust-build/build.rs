//! Builds the stdlib's rmsnorm_v2 with mpkc: checked, generated into `$OUT_DIR/mpkc`, and
//! compiled by nvcc (through the `cc` crate) into a cubin per declared target (sm_90a, sm_100a).
//! `$MPKC_EXAMPLE_CONTRACT`, when set, names a contract file of your own to build with it.
//! A contract error fails the build with mpkc's diagnostics.

fn main() -> Result<(), mpkc::build::Error> {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MPKC_EXAMPLE_CONTRACT");
    let mut b = mpkc::build::Builder::new();
    b.stdlib("rmsnorm_v2");
    if let Some(own) = std::env::var_os("MPKC_EXAMPLE_CONTRACT").filter(|v| !v.is_empty()) {
        b.file(own);
    }
    b.compile()?;
    Ok(())
}
