//! Turning an input's bytes into a contract source. A file that is not UTF-8 is not a usage
//! error: it gets one diagnostic at its first invalid byte, and the other inputs are checked.

use super::{Checked, Source};
use crate::diag::{codes, Diagnostic};
use crate::span::Span;

/// The contract in `bytes`, displayed as `path`; or, when they are not UTF-8, the result of
/// checking it: one `E0001` error at the first invalid byte (its byte offset, line and column
/// in the message), shown in the text decoded with U+FFFD replacements (the bytes before the
/// first invalid one, so the error's offset, are the file's own).
pub fn decode(path: String, bytes: Vec<u8>) -> Result<Source, Box<Checked>> {
    let err = match String::from_utf8(bytes) {
        Ok(text) => return Ok(Source { path, text }),
        Err(e) => e,
    };
    let at = err.utf8_error().valid_up_to();
    let bytes = err.into_bytes();
    let bad = bytes.get(at).copied().unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let prefix = &bytes[..at];
    let line = prefix.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = at
        - prefix
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    // The replacement character that stands for the invalid byte in `text`.
    let width = text[at..].chars().next().map_or(0, char::len_utf8);
    let d = Diagnostic::error(
        codes::SYNTAX,
        format!(
            "the file is not UTF-8: byte 0x{bad:02X} at byte offset {at} (line {line}, column {column}) is not valid UTF-8"
        ),
    )
    .primary(Span::new(at, at + width), "first invalid byte")
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
        assert_eq!(d.main_span().start, 13);
        assert_eq!(&c.source.text[d.main_span().range()], "\u{FFFD}");
    }
}
