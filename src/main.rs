//! The `mpkc` binary: parse the command line, run the library, map the outcome to an exit status
//! (0 success, 1 contract errors, 2 usage, 3 external program failed, 4 something absent).

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    ignore_file_size_signal();
    ExitCode::from(mpkc::cli::run(mpkc::cli::Cli::parse()))
}

/// A write past the file-size limit (`ulimit -f`) then fails with `EFBIG` and is reported like
/// any failed write (exit 4, the file or `--out` left as it was) instead of SIGXFSZ killing mpkc
/// halfway through an output. Children (nvcc) inherit the disposition and fail the same way.
#[cfg(target_os = "linux")]
fn ignore_file_size_signal() {
    // SAFETY: `signal` with `SIG_IGN` installs no handler code; it runs before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

#[cfg(not(target_os = "linux"))]
fn ignore_file_size_signal() {}
