//! The `mpkc` binary: parse the command line, run the library, map the outcome to an exit status
//! (0 success, 1 contract errors, 2 usage, 3 external program failed, 4 something absent).

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(mpkc::cli::run(mpkc::cli::Cli::parse()))
}
