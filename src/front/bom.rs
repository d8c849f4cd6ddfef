//! U+FEFF (ZERO WIDTH NO-BREAK SPACE, the byte-order mark) in a contract. It is accepted only as
//! the file's first character (the grammar's `bom`); it is not whitespace (Unicode's White_Space
//! property leaves it out), so one anywhere else outside a comment, string or CUDA body is a
//! syntax error. Being invisible, it gets its own message rather than pest's "expected …".

use crate::diag::Diagnostic;

/// `d`, a syntax error, restated when its primary span is a stray U+FEFF in `src`: the message
/// names the character, the help says to remove it, and the parser's own message becomes a note.
pub(crate) fn explain_stray(mut d: Diagnostic, src: &str) -> Diagnostic {
    let span = d.main_span();
    if src.get(span.range()) != Some("\u{feff}") {
        return d;
    }
    let parser = std::mem::replace(
        &mut d.message,
        "syntax error: U+FEFF (an invisible byte-order mark) is allowed only as the file's first character".to_string(),
    );
    for l in d.labels.iter_mut().filter(|l| l.primary) {
        l.message = "U+FEFF here".to_string();
    }
    d.notes.push(format!("the parser says: {parser}"));
    d.help = Some(
        "remove it: it is invisible in most editors and often comes from joining files that each began with a byte-order mark"
            .to_string(),
    );
    d
}
