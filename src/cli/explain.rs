//! `mpkc explain CODE`: the registry entry and the long explanation page of a code.

use super::exit;
use crate::diag::codes;

/// Prints the explanation of `code`.
pub fn run(code: &str) -> u8 {
    let Some(info) = codes::lookup(code) else {
        errln!("error: `{code}` is not an mpkc diagnostic code; codes look like E0103");
        return exit::USAGE;
    };
    match codes::long_doc(info.code) {
        Some(page) => out!("{page}"),
        None => {
            outln!("{}: {}", info.code, info.summary);
            if let Some(inv) = info.invariant {
                outln!("\nEnforces {inv} of mpk-v2-contract.md §9.");
            }
        }
    }
    exit::OK
}
