//! The part of a file one diagnostic shows, handed to codespan-reporting instead of the whole
//! file. codespan renders every line a label touches in full and walks every line a multi-line
//! label spans; on a file written on one line, or with labels spanning thousands of lines, that
//! makes each diagnostic cost the size of the file. An [`Excerpt`] holds only the lines the
//! rendering shows, so its size is bounded by the number of labels, not by the file:
//!
//! - the lines of each label's start and end, and the context lines codespan shows inside a
//!   multi-line label (`start_context_lines` after its start, `end_context_lines` before its
//!   end); a single line between two shown lines is kept (codespan prints it), a longer gap
//!   becomes two placeholder lines, which codespan never prints but shows as its `·` break;
//! - a line longer than [`LONG_LINE_CHARS`] characters is cut to windows of [`WINDOW_CHARS`]
//!   characters around the labels on it (labels close together share a window; a label wider
//!   than a window is cut at the window's end), each marked with `…` where the line goes on. A
//!   long line without labels (context) shows its first [`WINDOW_CHARS`] characters.
//!
//! Line numbers and the header's `line:column` are those of the real file. Lines up to
//! [`LONG_LINE_CHARS`] characters render exactly as codespan renders the whole file (tested
//! against codespan's own `SimpleFile`).

use super::source::SourceFile;
use crate::span::Span;
use codespan_reporting::files::{Error, Files, Location};
use std::collections::BTreeSet;
use std::ops::Range;

/// Lines longer than this (in characters) are shown as windows around their labels.
pub const LONG_LINE_CHARS: usize = 200;
/// Characters of source text in one window of a long line.
pub const WINDOW_CHARS: usize = 120;
/// Marks where a window cuts a line.
const CUT: &str = "…";

/// One line of the excerpt.
#[derive(Clone, Debug)]
struct Line {
    /// Where it starts in the excerpt's text.
    at: usize,
    /// Its 1-based number in the real file.
    number: usize,
    /// The real bytes it shows (empty for a placeholder).
    real: Range<usize>,
    /// Bytes of the `…` before the shown text (0 or `CUT.len()`).
    prefix: usize,
}

/// The lines of a file one diagnostic shows, as a codespan [`Files`] (file id `()`).
pub struct Excerpt<'f> {
    file: &'f SourceFile<'f>,
    text: String,
    lines: Vec<Line>,
    ranges: Vec<Range<usize>>,
}

/// A place a label marks on one real line: bytes `start..end` of the file.
#[derive(Clone, Copy, Debug)]
struct Point {
    line: usize,
    start: usize,
    end: usize,
}

impl<'f> Excerpt<'f> {
    /// The excerpt of `file` for labels at `spans` (widened to character boundaries here),
    /// with codespan's context settings.
    pub fn new(
        file: &'f SourceFile<'f>,
        spans: &[Span],
        start_context_lines: usize,
        end_context_lines: usize,
    ) -> Excerpt<'f> {
        let spans: Vec<Span> = spans.iter().map(|s| file.widen(*s)).collect();
        // Each label's points: one for a single-line label, its start and its end otherwise.
        let mut points: Vec<Point> = Vec::new();
        let mut label_points: Vec<(usize, usize)> = Vec::new();
        let mut needed = BTreeSet::new();
        for s in &spans {
            let (l0, l1) = (file.line_index(s.start), file.line_index(s.end));
            needed.insert(l0);
            needed.insert(l1);
            if l0 == l1 {
                points.push(Point {
                    line: l0,
                    start: s.start,
                    end: s.end,
                });
                label_points.push((points.len() - 1, points.len() - 1));
            } else {
                points.push(Point {
                    line: l0,
                    start: s.start,
                    end: s.start,
                });
                points.push(Point {
                    line: l1,
                    start: s.end,
                    end: s.end,
                });
                label_points.push((points.len() - 2, points.len() - 1));
                let first = (l0 + 1..l1).take(start_context_lines);
                let last = (l0 + 1..l1).rev().take(end_context_lines);
                needed.extend(first.chain(last));
            }
        }
        let mut ex = Excerpt {
            file,
            text: String::new(),
            lines: Vec::new(),
            ranges: Vec::new(),
        };
        // Points grouped by line, in order along it.
        let mut order: Vec<usize> = (0..points.len()).collect();
        order.sort_by_key(|&i| (points[i].line, points[i].start, points[i].end));
        // point index -> excerpt line of its window
        let mut point_line = vec![0usize; points.len()];
        let mut prev: Option<usize> = None;
        let mut next = 0;
        for &line in &needed {
            match prev.map(|p| line - p) {
                Some(2) => {
                    ex.push_line(line - 1, &[]);
                }
                Some(gap) if gap > 2 => {
                    ex.push_placeholder();
                    ex.push_placeholder();
                }
                _ => {}
            }
            let here = next;
            while next < order.len() && points[order[next]].line == line {
                next += 1;
            }
            let pts: Vec<Point> = order[here..next].iter().map(|&i| points[i]).collect();
            for (k, l) in ex.push_line(line, &pts).into_iter().enumerate() {
                point_line[order[here + k]] = l;
            }
            prev = Some(line);
        }
        ex.ranges = label_points
            .iter()
            .map(|&(a, b)| {
                let start = ex.to_excerpt(point_line[a], points[a].start);
                let end = ex.to_excerpt(point_line[b], points[b].end);
                start..end.max(start)
            })
            .collect();
        ex
    }

    /// Each label's range in the excerpt, in the order of the spans given to [`Excerpt::new`].
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// The excerpt's text (for tests and measurements).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Appends real line `line`, cut into windows when long, and returns the excerpt line
    /// holding each of `pts` (points on that line, sorted by start).
    fn push_line(&mut self, line: usize, pts: &[Point]) -> Vec<usize> {
        let content = self.file.line_content(line);
        let (windows, window_of) = self.windows(content.clone(), pts);
        let first = self.lines.len();
        for w in &windows {
            let prefix = if w.start > content.start {
                CUT.len()
            } else {
                0
            };
            self.lines.push(Line {
                at: self.text.len(),
                number: line + 1,
                real: w.clone(),
                prefix,
            });
            if prefix > 0 {
                self.text.push_str(CUT);
            }
            self.text.push_str(&self.file.text[w.clone()]);
            if w.end < content.end {
                self.text.push_str(CUT);
            }
            self.text.push('\n');
        }
        window_of.into_iter().map(|w| first + w).collect()
    }

    fn push_placeholder(&mut self) {
        let (number, at_real) = self.lines.last().map_or((1, 0), |l| (l.number, l.real.end));
        self.lines.push(Line {
            at: self.text.len(),
            number,
            real: at_real..at_real,
            prefix: 0,
        });
        self.text.push('\n');
    }

    /// The windows of the real line `content` showing points `pts` (sorted by start), and the
    /// window of each point.
    #[allow(clippy::single_range_in_vec_init)] // a list of one window, not the range's items
    fn windows(&self, content: Range<usize>, pts: &[Point]) -> (Vec<Range<usize>>, Vec<usize>) {
        let f = self.file;
        if f.chars_between(content.start, content.end) <= LONG_LINE_CHARS {
            return (vec![content], vec![0; pts.len()]);
        }
        if pts.is_empty() {
            let end = f.forward(content.start, WINDOW_CHARS, content.end);
            return (vec![content.start..end], Vec::new());
        }
        // Clusters of points that fit in one window together, each cut to one window.
        let mut clusters: Vec<Range<usize>> = Vec::new();
        let mut cluster_of = Vec::with_capacity(pts.len());
        for p in pts {
            let end = p.end.min(content.end);
            match clusters.last_mut() {
                Some(c) if f.chars_between(c.start, end.max(c.end)) <= WINDOW_CHARS => {
                    c.end = c.end.max(end);
                }
                _ => clusters.push(p.start..end.max(p.start)),
            }
            cluster_of.push(clusters.len() - 1);
        }
        let n = clusters.len();
        for k in 0..n {
            let mut end = f.forward(clusters[k].start, WINDOW_CHARS, clusters[k].end);
            if k + 1 < n {
                end = end.min(clusters[k + 1].start);
            }
            clusters[k].end = end.max(clusters[k].start);
        }
        // Context around each cluster, up to a window's width, never overlapping a neighbour.
        let mut windows: Vec<Range<usize>> = Vec::with_capacity(n);
        for (k, c) in clusters.iter().enumerate() {
            let pad = WINDOW_CHARS.saturating_sub(f.chars_between(c.start, c.end));
            let lo = windows.last().map_or(content.start, |w| w.end);
            let hi = clusters.get(k + 1).map_or(content.end, |next| next.start);
            let room_left = f.chars_between(lo, c.start);
            let room_right = f.chars_between(c.end, hi);
            let right = (pad - pad / 2).min(room_right);
            let left = (pad - right).min(room_left);
            let right = (pad - left).min(room_right);
            windows.push(f.backward(c.start, left, lo)..f.forward(c.end, right, hi));
        }
        (windows, cluster_of)
    }

    /// The excerpt offset of real byte `pos` shown on excerpt line `line`.
    fn to_excerpt(&self, line: usize, pos: usize) -> usize {
        let l = &self.lines[line];
        let pos = pos.clamp(l.real.start, l.real.end);
        l.at + l.prefix + (pos - l.real.start)
    }

    /// The real byte shown at excerpt offset `at`.
    fn to_real(&self, at: usize) -> (usize, &Line) {
        let i = self.line_of(at);
        let l = &self.lines[i];
        let off = at.saturating_sub(l.at + l.prefix);
        ((l.real.start + off).min(l.real.end), l)
    }

    fn line_of(&self, at: usize) -> usize {
        self.lines.partition_point(|l| l.at <= at).saturating_sub(1)
    }
}

impl<'a> Files<'a> for Excerpt<'_> {
    type FileId = ();
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, (): ()) -> Result<&'a str, Error> {
        Ok(self.file.name)
    }

    fn source(&'a self, (): ()) -> Result<&'a str, Error> {
        Ok(&self.text)
    }

    fn line_index(&'a self, (): (), byte_index: usize) -> Result<usize, Error> {
        Ok(self.line_of(byte_index))
    }

    fn line_number(&'a self, (): (), line_index: usize) -> Result<usize, Error> {
        self.lines
            .get(line_index)
            .map(|l| l.number)
            .ok_or(Error::LineTooLarge {
                given: line_index,
                max: self.lines.len().saturating_sub(1),
            })
    }

    fn location(&'a self, (): (), byte_index: usize) -> Result<Location, Error> {
        if self.lines.is_empty() {
            return Ok(Location {
                line_number: 1,
                column_number: 1,
            });
        }
        let (pos, line) = self.to_real(byte_index);
        Ok(Location {
            line_number: line.number,
            column_number: self.file.char_column(pos),
        })
    }

    fn line_range(&'a self, (): (), line_index: usize) -> Result<Range<usize>, Error> {
        let start = self
            .lines
            .get(line_index)
            .map(|l| l.at)
            .ok_or(Error::LineTooLarge {
                given: line_index,
                max: self.lines.len().saturating_sub(1),
            })?;
        let end = self
            .lines
            .get(line_index + 1)
            .map_or(self.text.len(), |l| l.at);
        Ok(start..end)
    }
}
