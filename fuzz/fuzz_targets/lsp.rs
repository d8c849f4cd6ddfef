//! Fuzz target `lsp`: see `tests/support/fuzz_props.rs` for the properties it asserts.
#![no_main]

#[path = "../../tests/support/fuzz_props.rs"]
mod props;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    props::lsp(data);
});
