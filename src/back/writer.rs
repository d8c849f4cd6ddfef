//! A small indenting text writer for generated C++/CUDA (naga's `Level` habit): lines are
//! written at the current depth, blocks open and close with matching braces, and raw text is
//! re-indented line by line. Output uses `\n` line ends and never trailing whitespace.

/// Spaces per indentation level.
pub const INDENT: usize = 2;

/// Accumulates generated text.
#[derive(Debug, Default)]
pub struct Writer {
    out: String,
    depth: usize,
}

impl Writer {
    /// An empty writer at depth 0.
    pub fn new() -> Self {
        Writer::default()
    }

    /// Writes one line at the current depth (an empty `text` writes an empty line).
    pub fn line(&mut self, text: impl AsRef<str>) {
        let t = text.as_ref();
        if t.is_empty() {
            self.out.push('\n');
            return;
        }
        for _ in 0..self.depth * INDENT {
            self.out.push(' ');
        }
        self.out.push_str(t.trim_end());
        self.out.push('\n');
    }

    /// Writes an empty line.
    pub fn blank(&mut self) {
        self.out.push('\n');
    }

    /// Writes `head {` and goes one level deeper.
    pub fn open(&mut self, head: impl AsRef<str>) {
        let h = head.as_ref();
        if h.is_empty() {
            self.line("{");
        } else {
            self.line(format!("{h} {{"));
        }
        self.depth += 1;
    }

    /// Goes one level up and writes `}` followed by `tail` (e.g. `;`).
    pub fn close(&mut self, tail: &str) {
        self.depth = self.depth.saturating_sub(1);
        self.line(format!("}}{tail}"));
    }

    /// Opens `namespace name {` without indenting its contents (C++ convention).
    pub fn open_namespace(&mut self, name: &str) {
        self.line(format!("namespace {name} {{"));
    }

    /// Closes a namespace opened with [`Writer::open_namespace`].
    pub fn close_namespace(&mut self, name: &str) {
        self.line(format!("}}  // namespace {name}"));
    }

    /// Goes one level up without writing the `}` (the caller wrote it itself).
    pub fn skip_close(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Writes a `//` comment line at the current depth.
    pub fn comment(&mut self, text: impl AsRef<str>) {
        for l in text.as_ref().lines() {
            if l.is_empty() {
                self.line("//");
            } else {
                self.line(format!("// {l}"));
            }
        }
    }

    /// Writes multi-line raw text, each line re-indented to the current depth, keeping the
    /// text's own relative indentation.
    pub fn raw(&mut self, text: &str) {
        let common = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        for l in text.lines() {
            if l.trim().is_empty() {
                self.blank();
            } else {
                self.line(&l[common.min(l.len())..]);
            }
        }
    }

    /// Writes raw text verbatim (no re-indentation), ending with a newline.
    pub fn verbatim(&mut self, text: &str) {
        self.out.push_str(text);
        if !text.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// Lines written so far.
    pub fn line_count(&self) -> usize {
        self.out.bytes().filter(|&b| b == b'\n').count()
    }

    /// The text written so far.
    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_indent_and_close() {
        let mut w = Writer::new();
        w.open("namespace a");
        w.line("int x;  ");
        w.raw("  if (x) {\n    y();\n  }\n");
        w.close("  // namespace a");
        assert_eq!(
            w.finish(),
            "namespace a {\n  int x;\n  if (x) {\n    y();\n  }\n}  // namespace a\n"
        );
    }
}
