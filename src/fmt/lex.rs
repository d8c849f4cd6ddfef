//! The formatter's lexer: every token of a contract, comments and the raw CUDA of `body cuda`
//! blocks included, with whether whitespace preceded it and whether a line break did. The
//! parser (pest) drops comments; the formatter must keep them, so it lexes on its own. The
//! lexer accepts any text: what it does not know becomes a one-character token.

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A name, keyword or number (`hidden`, `sm_100a`, `1e-6`, `0x400`, `m128`).
    Word,
    /// A string literal.
    Str,
    /// Punctuation or an operator (`{`, `->`, `..=`, `,`).
    Punct,
    /// `// …` to the end of the line.
    LineComment,
    /// `/* … */` (may span lines; kept verbatim).
    BlockComment,
    /// The balanced `{ … }` of a `body cuda` block, kept verbatim.
    Raw,
}

/// One token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// Kind.
    pub kind: Kind,
    /// The text as written.
    pub text: String,
    /// Whitespace (or a line break) came before it.
    pub space_before: bool,
    /// Line breaks before it (0: same line as the previous token).
    pub newlines_before: usize,
}

const PUNCT3: &[&str] = &["..="];
const PUNCT2: &[&str] = &["->", "..", "==", "!=", "<=", ">="];

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Lexes `text` completely.
pub fn lex(text: &str) -> Vec<Token> {
    let b = text.as_bytes();
    let mut out: Vec<Token> = Vec::new();
    let mut i = 0;
    let (mut space, mut newlines) = (false, 0usize);
    while i < b.len() {
        let c = b[i] as char;
        if c == '\n' {
            newlines += 1;
            space = true;
            i += 1;
            continue;
        }
        if c == ' ' || c == '\t' || c == '\r' {
            space = true;
            i += 1;
            continue;
        }
        let start = i;
        let kind = if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(b.len(), |e| i + e);
            Kind::LineComment
        } else if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            Kind::BlockComment
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            // The closing quote belongs to the string; a line break ending an unterminated one
            // does not.
            i = i.min(b.len());
            if b.get(i) == Some(&b'"') {
                i += 1;
            }
            Kind::Str
        } else if c == '{' && is_cuda_open(&out) {
            i = raw_block_end(text, i);
            Kind::Raw
        } else if c.is_ascii_digit() {
            i = number_end(text, i);
            Kind::Word
        } else if is_word_char(c) {
            while i < b.len() && is_word_char(b[i] as char) {
                i += 1;
            }
            Kind::Word
        } else {
            let rest = &text[i..];
            let len = PUNCT3
                .iter()
                .chain(PUNCT2)
                .find(|p| rest.starts_with(**p))
                .map_or_else(
                    || rest.chars().next().map_or(1, char::len_utf8),
                    |p| p.len(),
                );
            i += len;
            Kind::Punct
        };
        out.push(Token {
            kind,
            text: text[start..i].to_string(),
            space_before: space,
            newlines_before: newlines,
        });
        space = false;
        newlines = 0;
    }
    out
}

/// `{` opens raw CUDA right after `body cuda` or `body loader cuda` (comments between them
/// allowed, as the grammar).
fn is_cuda_open(out: &[Token]) -> bool {
    let mut words = out
        .iter()
        .rev()
        .filter(|t| !matches!(t.kind, Kind::LineComment | Kind::BlockComment));
    match (words.next(), words.next(), words.next()) {
        (Some(c), Some(b), _) if c.text == "cuda" && b.text == "body" => true,
        (Some(c), Some(l), Some(b)) => c.text == "cuda" && l.text == "loader" && b.text == "body",
        _ => false,
    }
}

/// End of a number starting at `start`: digits (or hex) with `_`, a fraction, an exponent.
fn number_end(text: &str, start: usize) -> usize {
    let b = text.as_bytes();
    let hex = text[start..].starts_with("0x");
    let mut i = start;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        // `1e-6`: an exponent sign belongs to the number.
        if !hex
            && (b[i] == b'e' || b[i] == b'E')
            && i + 1 < b.len()
            && (b[i + 1] == b'-' || b[i + 1] == b'+')
        {
            i += 2;
            continue;
        }
        i += 1;
    }
    if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
        i += 1;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            if (b[i] == b'e' || b[i] == b'E')
                && i + 1 < b.len()
                && (b[i + 1] == b'-' || b[i + 1] == b'+')
            {
                i += 2;
                continue;
            }
            i += 1;
        }
    }
    i
}

/// End (exclusive) of the balanced `{ … }` starting at `start`, lexed as C++ by
/// [`crate::front::cuda`] (as the grammar's `cuda_block`); the end of the text when it does not
/// close.
fn raw_block_end(text: &str, start: usize) -> usize {
    crate::front::cuda::block_end(text, start).unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        lex(s).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn numbers_paths_ranges_and_warps() {
        assert_eq!(
            texts("1e-6 0x400 224_256 2.5e3"),
            ["1e-6", "0x400", "224_256", "2.5e3"]
        );
        assert_eq!(texts("tile.M"), ["tile", ".", "M"]);
        assert_eq!(
            texts("1..=16 W0..W3 a->b"),
            ["1", "..=", "16", "W0", "..", "W3", "a", "->", "b"]
        );
        assert_eq!(
            texts("consumer-no-smem"),
            ["consumer", "-", "no", "-", "smem"]
        );
    }

    #[test]
    fn comments_strings_and_cuda_bodies_are_single_tokens() {
        let t = lex("a // c { }\n/* x\n y */ \"s}\" body cuda { if (x) { y(\"}\"); } // }\n }");
        let kinds: Vec<&Kind> = t.iter().map(|x| &x.kind).collect();
        assert_eq!(
            kinds,
            [
                &Kind::Word,
                &Kind::LineComment,
                &Kind::BlockComment,
                &Kind::Str,
                &Kind::Word,
                &Kind::Word,
                &Kind::Raw
            ]
        );
        assert_eq!(t[1].newlines_before, 0);
        assert_eq!(t[2].newlines_before, 1);
        assert!(t[6].text.ends_with("\n }"));
    }
}
