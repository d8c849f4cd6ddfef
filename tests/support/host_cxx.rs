//! The host C++ compiler (`$CXX`, else `c++`) on a generated header's test translation unit:
//! spec and layout headers must compile as plain host C++17 (I-H6).

use std::path::Path;
use std::process::Command;

/// Compiles `dir/file` with `c++ -std=c++17 -Wall -Werror` plus `extra` (e.g. `-fsyntax-only`,
/// `-Wextra`, `-o host`) in `dir`; panics with the compiler's errors when it fails.
pub fn compile(dir: &Path, file: &str, extra: &[&str]) {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let out = Command::new(&cxx)
        .current_dir(dir)
        .args(["-std=c++17", "-Wall", "-Werror"])
        .args(extra)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("the host C++ compiler `{cxx}` is needed for this test: {e}"));
    assert!(
        out.status.success(),
        "{file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
