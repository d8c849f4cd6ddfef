//! LSP base-protocol framing, read defensively: header blocks of `Name: value` lines (`\r\n` or
//! `\n` line ends, any spacing, names case-insensitive) ended by a blank line, then
//! `Content-Length` bytes of body.
//!
//! A sender that gets the framing wrong never wedges the stream:
//! - a `Content-Length` above [`MAX_BODY`] (64 MiB), or one that is not a decimal number, is
//!   answered with an error and its body is not read: the reader resynchronises at the next
//!   header;
//! - a line that is not a header (e.g. the rest of a body whose `Content-Length` was too short,
//!   glued to the next frame's header) is skipped up to the next `Content-Length:` found in it,
//!   which starts a new header block; lines without one are skipped whole;
//! - a header block without `Content-Length` is answered with an error, and the reader goes on
//!   with the next line.
//!
//! Nothing is allocated ahead of the bytes that actually arrive (a body grows as it is read), and
//! a line without a line end keeps at most [`MAX_LINE`] bytes in memory.

use std::io::{BufRead, Read};

/// The largest body accepted: 64 MiB (a 5 MB contract, JSON-escaped, is well inside it).
pub const MAX_BODY: u64 = 64 << 20;

/// The most bytes of one header line kept in memory (longer lines are garbage between frames:
/// only the part from their last `Content-Length:` is kept).
pub const MAX_LINE: usize = 4096;

const CONTENT_LENGTH: &[u8] = b"content-length:";

/// What one call of [`read_frame`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A body, exactly `Content-Length` bytes.
    Body(Vec<u8>),
    /// A header block that cannot be used (said why); the reader resynchronises.
    Bad(String),
}

/// Reads the next frame; `Ok(None)` at the end of input (also inside a body cut short). `Err`
/// only for an I/O error of `r`. Garbage skipped while looking for a header is reported through
/// `skipped` (the number of bytes), for the caller to log.
pub fn read_frame(
    r: &mut impl BufRead,
    skipped: &mut impl FnMut(usize),
) -> std::io::Result<Option<Frame>> {
    let mut length: Option<Result<u64, String>> = None;
    let mut in_block = false;
    let mut line = Vec::new();
    loop {
        let dropped = next_line(r, &mut line)?;
        if line.is_empty() && dropped == 0 {
            return Ok(None);
        }
        let mut text = trim_line_end(&line);
        let mut garbage = dropped;
        let header = match find_content_length(text) {
            // The rest of a mis-framed body, then a header: a new block starts there.
            Some(at) if at > 0 => {
                garbage += at;
                text = &text[at..];
                length = None;
                in_block = false;
                header(text)
            }
            _ => match header(text) {
                Some(h) => Some(h),
                None => {
                    garbage += text.len();
                    None
                }
            },
        };
        if garbage > 0 {
            skipped(garbage);
        }
        if text.is_empty() {
            if in_block {
                break;
            }
            continue;
        }
        let Some((name, value)) = header else {
            continue;
        };
        in_block = true;
        if name.eq_ignore_ascii_case(b"content-length") {
            length = Some(parse_length(value));
        }
    }
    match length {
        None => Ok(Some(Frame::Bad(
            "a header block without Content-Length".into(),
        ))),
        Some(Err(e)) => Ok(Some(Frame::Bad(e))),
        Some(Ok(n)) => {
            let mut body = Vec::new();
            r.take(n).read_to_end(&mut body)?;
            if (body.len() as u64) < n {
                return Ok(None);
            }
            Ok(Some(Frame::Body(body)))
        }
    }
}

/// The value of a `Content-Length` header, within [`MAX_BODY`].
fn parse_length(value: &[u8]) -> Result<u64, String> {
    let shown = String::from_utf8_lossy(&value[..value.len().min(40)]).into_owned();
    let n: u64 = std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("bad Content-Length `{shown}`: not a byte count; the reader skips to the next header"))?;
    if n > MAX_BODY {
        return Err(format!(
            "Content-Length {n} exceeds the limit of {MAX_BODY} bytes (64 MiB); the body is skipped up to the next header"
        ));
    }
    Ok(n)
}

/// `name: value` when `line` is a header line: a non-empty RFC 9110 token, a colon, a value
/// (both trimmed of spaces and tabs).
fn header(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = line.iter().position(|&b| b == b':')?;
    let name = trim(&line[..colon]);
    let token = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    (!name.is_empty() && name.iter().all(token)).then(|| (name, trim(&line[colon + 1..])))
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b" \t".contains(b))
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b" \t".contains(b))
        .map_or(start, |e| e + 1);
    &s[start..end]
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && (line[end - 1] == b'\n' || line[end - 1] == b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// The offset of the last `Content-Length:` (any case) in `s`.
fn find_content_length(s: &[u8]) -> Option<usize> {
    s.windows(CONTENT_LENGTH.len())
        .rposition(|w| w.eq_ignore_ascii_case(CONTENT_LENGTH))
}

/// Reads one line (up to and with its `\n`, or to the end of input) into `line`, keeping at most
/// [`MAX_LINE`] bytes: from a longer line only the part from its last `Content-Length:` (or its
/// last few bytes, which may begin one) is kept. Returns how many bytes were dropped.
fn next_line(r: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<usize> {
    line.clear();
    let mut dropped = 0;
    loop {
        let available = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(dropped);
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..take]);
        r.consume(take);
        if line.len() > MAX_LINE {
            let keep_from = match find_content_length(line) {
                Some(at) => at,
                None => line.len() - (CONTENT_LENGTH.len() - 1),
            };
            dropped += keep_from;
            line.drain(..keep_from);
            if line.len() > MAX_LINE {
                // A header line this long is not a usable header: keep its start, which
                // fails to parse as a length, and drop the rest.
                dropped += line.len() - MAX_LINE;
                line.truncate(MAX_LINE);
            }
        }
        if done {
            return Ok(dropped);
        }
    }
}
