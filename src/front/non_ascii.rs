//! A non-ASCII character where the grammar wants a token. Names are ASCII (`ident`: letters,
//! digits, `_`; they become C identifiers and macro names in the generated headers), so
//! `tâche` stops the name after `t` and pest reports "expected `{`" at the `â`, which reads as
//! if a brace were missing. The syntax error is restated to name the character.

use crate::diag::Diagnostic;

/// `d`, a syntax error, restated when its primary span is a non-ASCII character of `src`
/// (U+FEFF excepted: `front::bom` explains it): the message names the character and its code
/// point, the help says where such characters may stand, and the parser's message becomes a note.
pub(crate) fn explain_non_ascii(mut d: Diagnostic, src: &str) -> Diagnostic {
    let span = d.main_span();
    let Some(c) = src.get(span.range()).and_then(|s| s.chars().next()) else {
        return d;
    };
    if c.is_ascii() || c == '\u{feff}' {
        return d;
    }
    let in_name = src[..span.start]
        .chars()
        .next_back()
        .is_some_and(|p| p.is_ascii_alphanumeric() || p == '_');
    let code_point = format!("U+{:04X}", u32::from(c));
    // A letter or digit is shown; anything else may be invisible (U+200B, U+00A0) or look like
    // ASCII (U+2212 minus), so the code point alone names it.
    let shown = if c.is_alphanumeric() {
        format!("`{c}` ({code_point})")
    } else {
        code_point.clone()
    };
    let parser = std::mem::replace(
        &mut d.message,
        if in_name {
            format!("syntax error: {shown} in a name: names are ASCII letters, digits and `_`")
        } else {
            format!("syntax error: {shown} is not a token of the contract language")
        },
    );
    for l in d.labels.iter_mut().filter(|l| l.primary) {
        l.message = format!("{code_point} here");
    }
    d.notes.push(format!("the parser says: {parser}"));
    d.help = Some(if in_name {
        "spell the name in ASCII (it becomes a C identifier in the generated files); other characters may stand in comments, strings and CUDA bodies".to_string()
    } else {
        "remove it or replace it with its ASCII form; non-ASCII characters may stand only in comments, strings and CUDA bodies".to_string()
    });
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::codes;
    use crate::span::Span;

    fn syntax_at(start: usize, end: usize) -> Diagnostic {
        Diagnostic::error(codes::SYNTAX, "syntax error: expected `{`")
            .primary(Span::new(start, end), "expected `{`")
    }

    #[test]
    fn a_letter_in_a_name_is_named_with_its_code_point_and_ascii_is_left_alone() {
        let src = "task tâche {}";
        let d = explain_non_ascii(syntax_at(6, 8), src);
        assert!(
            d.message.contains("`â` (U+00E2) in a name"),
            "{}",
            d.message
        );
        assert_eq!(d.notes, vec!["the parser says: syntax error: expected `{`"]);
        let d = explain_non_ascii(syntax_at(5, 6), src);
        assert_eq!(d.message, "syntax error: expected `{`");
    }

    #[test]
    fn an_invisible_character_outside_a_name_is_shown_by_code_point_only() {
        let src = "task t \u{200b}{}";
        let d = explain_non_ascii(syntax_at(7, 10), src);
        assert!(
            d.message.starts_with("syntax error: U+200B is not a token"),
            "{}",
            d.message
        );
        let src = "task t {} \u{feff}";
        let d = explain_non_ascii(syntax_at(10, 13), src);
        assert_eq!(
            d.message, "syntax error: expected `{`",
            "U+FEFF is front::bom's"
        );
    }
}
