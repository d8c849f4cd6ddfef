//! Turning an input's bytes into a contract source. A file that is not UTF-8 is not a usage
//! error: it gets one diagnostic at its first invalid byte, and the other inputs are checked.

use super::{Checked, Source};
use crate::diag::{codes, Diagnostic};
use crate::span::Span;

/// What stands for each byte that is not UTF-8 in the text a non-UTF-8 file is shown with: one
/// ASCII byte per invalid byte, so that every offset, line and column of the shown text is the
/// file's own (U+FFFD would take three bytes and shift everything after it).
pub const INVALID_BYTE_SHOWN_AS: u8 = b'?';

/// `bytes` with each byte of each invalid UTF-8 sequence replaced by [`INVALID_BYTE_SHOWN_AS`]:
/// valid UTF-8 of exactly the same length, whose byte offsets are the file's.
fn shown_text(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.extend_from_slice(chunk.valid().as_bytes());
        out.extend(std::iter::repeat_n(
            INVALID_BYTE_SHOWN_AS,
            chunk.invalid().len(),
        ));
    }
    String::from_utf8(out).unwrap_or_else(|e| unreachable!("only ASCII was added: {e}"))
}

/// The contract in `bytes`, displayed as `path`; or, when they are not UTF-8, the result of
/// checking it: one `E0001` error whose span is exactly the first invalid sequence's bytes
/// (`0xFF` alone, or `0xE2 0x82` of a cut three-byte character), naming them with their byte
/// offset, line and column (columns in bytes, as the JSON form counts). The file is shown with
/// each invalid byte as `?` ([`INVALID_BYTE_SHOWN_AS`]), so all offsets are the real file's.
pub fn decode(path: String, bytes: Vec<u8>) -> Result<Source, Box<Checked>> {
    let err = match String::from_utf8(bytes) {
        Ok(text) => return Ok(Source { path, text }),
        Err(e) => e,
    };
    let at = err.utf8_error().valid_up_to();
    let bytes = err.into_bytes();
    // The first invalid sequence: `error_len`, or (cut off by the end of the file) the rest.
    let len = std::str::from_utf8(&bytes[at..])
        .err()
        .and_then(|e| e.error_len())
        .unwrap_or(bytes.len() - at);
    let bad: Vec<String> = bytes[at..at + len]
        .iter()
        .map(|b| format!("0x{b:02X}"))
        .collect();
    let text = shown_text(&bytes);
    let prefix = &bytes[..at];
    let line = prefix.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = at
        - prefix
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    let what = if len == 1 {
        format!("byte {}", bad[0])
    } else {
        format!("bytes {}", bad.join(" "))
    };
    let d = Diagnostic::error(
        codes::SYNTAX,
        format!(
            "the file is not UTF-8: {what} at byte offset {at} (line {line}, column {column}) {} not valid UTF-8",
            if len == 1 { "is" } else { "are" }
        ),
    )
    .primary(Span::new(at, at + len), if len == 1 { "first invalid byte (shown as `?`)" } else { "first invalid sequence (shown as `?`)" })
    .note("mpkc reads contracts as UTF-8 text; nothing else in this file was checked")
    .help("save the file as UTF-8 (e.g. `iconv -f LATIN1 -t UTF-8`), or remove the byte");
    Err(Box::new(Checked {
        source: Source { path, text },
        diags: vec![d],
        tasks: Vec::new(),
        rejected: Vec::new(),
        derived: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_a_source() {
        let s = decode("a.mpk".into(), b"task t {}\n".to_vec()).unwrap();
        assert_eq!(s.text, "task t {}\n");
    }

    #[test]
    fn the_first_invalid_byte_is_named_with_offset_line_and_column() {
        let c = decode("a.mpk".into(), b"task t {\n  x \xff\xfe }\n".to_vec()).unwrap_err();
        let d = &c.diags[0];
        assert_eq!(d.code, "E0001");
        assert!(
            d.message
                .contains("byte 0xFF at byte offset 13 (line 2, column 5)"),
            "{}",
            d.message
        );
        assert_eq!(d.main_span().range(), 13..14);
        assert_eq!(c.source.text, "task t {\n  x ?? }\n");
    }
}
