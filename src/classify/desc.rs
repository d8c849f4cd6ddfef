//! The op description (`FILE.toml`) that `mpkc classify` and `mpkc new` read: the op's kind, its
//! shapes and its dtypes (docs/classify.md). Parsed with the `toml` crate into spanned serde
//! values, then checked here, so that every problem is a diagnostic with a span into the file.
//!
//! Codes (the meanings they have for contracts, applied to descriptions): `E0001` the file is
//! not TOML of the description's shape (a syntax error, a value of the wrong TOML type, an
//! unknown key); `E0008` an unknown `kind`; `E0007` a required shape extent or dtype is missing;
//! `E0006` an extent is not a positive integer; `E0005` an unknown dtype.

use crate::diag::{codes, Diagnostic};
use crate::ir::Dtype;
use crate::span::Span;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// What an op does, as the description's `kind` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `y[M, N] = x[M, K] · W[N, K]ᵀ`, a weight matrix streamed in tiles.
    Gemm,
    /// A GEMM at decode M (a matrix-vector product per token); classified by the same rules.
    Gemv,
    /// Scores, softmax and a weighted sum over a KV sequence.
    Attention,
    /// Each output element from the same position of the inputs.
    Elementwise,
    /// A row reduction (a norm, an argmax, a top-k).
    Reduction,
    /// Rows gathered from a table by index (an embedding).
    Gather,
    /// A small op run inside another task on data already in that task's SMEM.
    SubOp,
}

/// Every kind, as written in a description, in the order docs/classify.md lists them.
pub const KINDS: &[(&str, Kind)] = &[
    ("gemm", Kind::Gemm),
    ("gemv", Kind::Gemv),
    ("attention", Kind::Attention),
    ("elementwise", Kind::Elementwise),
    ("reduction", Kind::Reduction),
    ("gather", Kind::Gather),
    ("sub-op", Kind::SubOp),
];

impl Kind {
    /// The kind as written in a description.
    pub fn as_str(self) -> &'static str {
        KINDS
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(s, _)| *s)
            .unwrap_or("?")
    }

    /// True for the GEMM-shaped kinds (a weight matrix `[N, K]` streamed in tiles).
    pub fn gemm_shaped(self) -> bool {
        matches!(self, Kind::Gemm | Kind::Gemv)
    }

    /// The shape extents a description of this kind must give, and what each one is.
    pub fn required_extents(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kind::Gemm | Kind::Gemv => &[
                ("M", "tokens (activation rows)"),
                ("N", "output features (weight rows)"),
                ("K", "reduction length (weight columns)"),
            ],
            Kind::Attention => &[
                ("M", "tokens (queries per head)"),
                ("heads", "query heads"),
                ("qk", "query/key head dimension"),
                ("v", "value head dimension"),
                ("kv_len", "KV sequence length"),
            ],
            Kind::Elementwise | Kind::Reduction | Kind::SubOp => {
                &[("M", "tokens (rows)"), ("N", "elements per row")]
            }
            Kind::Gather => &[
                ("M", "rows gathered (tokens)"),
                ("N", "elements per row"),
                ("rows", "rows of the table"),
            ],
        }
    }

    /// The dtypes a description of this kind must give (`input` and `output` always; the
    /// `weight` of a GEMM and the `weight` table of a gather).
    pub fn required_dtypes(self) -> &'static [&'static str] {
        match self {
            Kind::Gemm | Kind::Gemv | Kind::Gather => &["input", "weight", "output"],
            _ => &["input", "output"],
        }
    }
}

/// Shape extents a description may give beyond its kind's required ones.
pub const OPTIONAL_EXTENTS: &[(&str, &str)] = &[
    (
        "batch",
        "independent problems of this shape (heads of a batched GEMV, active experts); default 1",
    ),
    (
        "out_n",
        "output elements per row of a reduction or sub-op; default 1 for a reduction, N otherwise",
    ),
];

/// The dtype names a description accepts (the contract language's names).
pub const DTYPES: &[&str] = &["bf16", "f16", "f32", "e4m3", "e5m2", "i32", "i64", "u8"];

/// The TOML as serde reads it; every value keeps its span.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Option<Spanned<String>>,
    kind: Option<Spanned<String>>,
    note: Option<Spanned<String>>,
    shape: Option<Spanned<BTreeMap<Spanned<String>, Spanned<i64>>>>,
    dtype: Option<Spanned<RawDtypes>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDtypes {
    input: Option<Spanned<String>>,
    weight: Option<Spanned<String>>,
    output: Option<Spanned<String>>,
}

/// A value with the span of its text in the description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct At<T> {
    /// The value.
    pub value: T,
    /// Where the description states it.
    pub span: Span,
}

/// A checked op description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    /// The op's name (`name`, else the file stem), a C identifier.
    pub name: String,
    /// The op's kind.
    pub kind: At<Kind>,
    /// Free text kept with the description (`note`), if any.
    pub note: Option<String>,
    /// Shape extents by name (the kind's required ones and any optional ones given).
    pub extents: BTreeMap<String, At<i64>>,
    /// `input`, `weight` (when given) and `output` dtypes.
    pub dtypes: BTreeMap<String, At<Dtype>>,
    /// The span of the `[shape]` table (where a missing extent belongs).
    pub shape_span: Span,
}

impl Description {
    /// The extent `name` (required ones are always present after [`parse`]).
    pub fn extent(&self, name: &str) -> Option<i64> {
        self.extents.get(name).map(|e| e.value)
    }

    /// The extent `name`, or `default` when the description does not give it.
    pub fn extent_or(&self, name: &str, default: i64) -> i64 {
        self.extent(name).unwrap_or(default)
    }

    /// The span of extent `name`, else of the `[shape]` table.
    pub fn extent_span(&self, name: &str) -> Span {
        self.extents
            .get(name)
            .map(|e| e.span)
            .unwrap_or(self.shape_span)
    }

    /// The dtype of `role` (`input`, `weight`, `output`).
    pub fn dtype(&self, role: &str) -> Option<Dtype> {
        self.dtypes.get(role).map(|d| d.value)
    }

    /// The span of the dtype of `role`, else of the kind.
    pub fn dtype_span(&self, role: &str) -> Span {
        self.dtypes
            .get(role)
            .map(|d| d.span)
            .unwrap_or(self.kind.span)
    }
}

fn span(r: std::ops::Range<usize>) -> Span {
    Span::new(r.start, r.end)
}

/// Turns `text` into an identifier: characters other than ASCII letters, digits and `_` become
/// `_`, and a leading digit gets `op_` before it.
pub fn identifier(text: &str) -> String {
    let mut s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "op_");
    }
    s
}

/// Parses and checks the description `text`; `stem` names the op when `name` is absent.
///
/// # Errors
/// Every problem found, as diagnostics with spans into `text` (codes in the module docs).
pub fn parse(text: &str, stem: &str) -> Result<Description, Vec<Diagnostic>> {
    let raw: Raw = toml::from_str(text).map_err(|e| {
        let at = e.span().map(span).unwrap_or_default();
        vec![Diagnostic::error(
            codes::SYNTAX,
            format!("the op description is not valid: {}", e.message().trim_end()),
        )
        .primary(at, "here")
        .help("an op description holds `name`, `kind`, `note`, a `[shape]` table of integer extents and a `[dtype]` table with `input`, `weight` and `output` (docs/classify.md)")]
    })?;
    let mut diags = Vec::new();
    let whole = Span::new(0, 0);
    let kind = match &raw.kind {
        None => {
            diags.push(
                Diagnostic::error(codes::MISSING, "the op description has no `kind`")
                    .primary(whole, "`kind` belongs at the top of the file")
                    .help(format!("add `kind = \"gemm\"` (one of {})", kind_list())),
            );
            None
        }
        Some(k) => match KINDS.iter().find(|(s, _)| *s == k.get_ref()) {
            Some((_, kind)) => Some(At {
                value: *kind,
                span: span(k.span()),
            }),
            None => {
                let mut d = Diagnostic::error(
                    codes::BAD_KEYWORD,
                    format!("unknown op kind `{}`", k.get_ref()),
                )
                .primary(span(k.span()), "not a kind mpkc classifies");
                d = match closest(k.get_ref(), KINDS.iter().map(|(s, _)| *s)) {
                    Some(c) => d.help(format!("did you mean `{c}`? the kinds are {}", kind_list())),
                    None => d.help(format!("the kinds are {}", kind_list())),
                };
                diags.push(d);
                None
            }
        },
    };
    let shape_span = raw.shape.as_ref().map(|s| span(s.span())).unwrap_or(whole);
    let mut extents = BTreeMap::new();
    if let Some(shape) = &raw.shape {
        for (name, v) in shape.get_ref() {
            let at = span(v.span());
            let known = kind.as_ref().is_none_or(|k| {
                k.value
                    .required_extents()
                    .iter()
                    .chain(OPTIONAL_EXTENTS)
                    .any(|(n, _)| n == name.get_ref())
            });
            if !known {
                let k = kind.as_ref().map(|k| k.value).unwrap_or(Kind::Gemm);
                diags.push(
                    Diagnostic::error(
                        codes::SYNTAX,
                        format!(
                            "a description of kind `{}` has no extent `{}`",
                            k.as_str(),
                            name.get_ref()
                        ),
                    )
                    .primary(span(name.span()), "unknown extent")
                    .help(format!("its extents are {}", extent_list(k))),
                );
                continue;
            }
            if *v.get_ref() < 1 {
                diags.push(
                    Diagnostic::error(
                        codes::OUT_OF_RANGE,
                        format!(
                            "extent `{}` is {}, and extents are at least 1",
                            name.get_ref(),
                            v.get_ref()
                        ),
                    )
                    .primary(at, "not a positive extent")
                    .help(format!("give `{}` as a positive integer", name.get_ref())),
                );
                continue;
            }
            extents.insert(
                name.get_ref().clone(),
                At {
                    value: *v.get_ref(),
                    span: at,
                },
            );
        }
    }
    if let Some(k) = &kind {
        let missing: Vec<&(&str, &str)> = k
            .value
            .required_extents()
            .iter()
            .filter(|(n, _)| {
                !extents.contains_key(*n)
                    && !raw
                        .shape
                        .as_ref()
                        .is_some_and(|s| s.get_ref().keys().any(|key| key.get_ref() == n))
            })
            .collect();
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|(n, _)| format!("`{n}`")).collect();
            let example: Vec<String> = missing
                .iter()
                .map(|(n, what)| format!("{n} = … ({what})"))
                .collect();
            let (at, label) = match &raw.shape {
                Some(s) => (span(s.span()), "the `[shape]` table"),
                None => (k.span, "this kind"),
            };
            diags.push(
                Diagnostic::error(
                    codes::MISSING,
                    format!(
                        "a description of kind `{}` needs shape extent{} {}",
                        k.value.as_str(),
                        if missing.len() == 1 { "" } else { "s" },
                        names.join(", ")
                    ),
                )
                .primary(at, format!("{label} lacks {}", names.join(", ")))
                .help(format!("add under `[shape]`: {}", example.join("; "))),
            );
        }
    }
    let mut dtypes = BTreeMap::new();
    let given = raw.dtype.as_ref().map(|d| {
        let r = d.get_ref();
        [
            ("input", &r.input),
            ("weight", &r.weight),
            ("output", &r.output),
        ]
    });
    for (role, v) in given.iter().flatten() {
        let Some(v) = v else { continue };
        match DTYPES
            .iter()
            .find(|d| *d == v.get_ref())
            .and_then(|d| Dtype::parse(d))
        {
            Some(dt) => {
                dtypes.insert(
                    role.to_string(),
                    At {
                        value: dt,
                        span: span(v.span()),
                    },
                );
            }
            None => {
                let mut d = Diagnostic::error(
                    codes::TYPE_MISMATCH,
                    format!("unknown dtype `{}` for the {role}", v.get_ref()),
                )
                .primary(span(v.span()), "not a dtype");
                let list = DTYPES
                    .iter()
                    .map(|d| format!("`{d}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                d = match closest(v.get_ref(), DTYPES.iter().copied()) {
                    Some(c) => d.help(format!("did you mean `{c}`? the dtypes are {list}")),
                    None => d.help(format!("the dtypes are {list}")),
                };
                diags.push(d);
            }
        }
    }
    if let Some(k) = &kind {
        for role in k.value.required_dtypes() {
            let stated = given
                .iter()
                .flatten()
                .any(|(r, v)| r == role && v.is_some());
            if !stated {
                let at = raw.dtype.as_ref().map(|d| span(d.span())).unwrap_or(k.span);
                diags.push(
                    Diagnostic::error(
                        codes::MISSING,
                        format!(
                            "a description of kind `{}` needs the {role} dtype",
                            k.value.as_str()
                        ),
                    )
                    .primary(at, format!("no `{role}` dtype"))
                    .help(format!(
                        "add `{role} = \"bf16\"` (or the op's dtype) under `[dtype]`"
                    )),
                );
            }
        }
    }
    let name = match &raw.name {
        Some(n) => identifier(n.get_ref()),
        None => identifier(stem),
    };
    diags.sort_by_key(|d| (d.main_span().start, d.code));
    match kind {
        Some(kind) if diags.is_empty() => Ok(Description {
            name,
            kind,
            note: raw.note.map(|n| n.into_inner()),
            extents,
            dtypes,
            shape_span,
        }),
        _ => Err(diags),
    }
}

fn kind_list() -> String {
    KINDS
        .iter()
        .map(|(s, _)| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn extent_list(k: Kind) -> String {
    k.required_extents()
        .iter()
        .chain(OPTIONAL_EXTENTS)
        .map(|(n, _)| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The candidate closest to `word` by Jaro-Winkler similarity, if close enough to suggest.
fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(s, _)| *s >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gemm_description_parses_with_spans() {
        let text = "kind = \"gemm\"\n[shape]\nM = 1\nN = 7168\nK = 2048\n[dtype]\ninput = \"bf16\"\nweight = \"e4m3\"\noutput = \"bf16\"\n";
        let d = parse(text, "o_proj").unwrap();
        assert_eq!(d.name, "o_proj");
        assert_eq!(d.kind.value, Kind::Gemm);
        assert_eq!(&text[d.kind.span.range()], "\"gemm\"");
        assert_eq!(d.extent("K"), Some(2048));
        assert_eq!(&text[d.extent_span("N").range()], "7168");
        assert_eq!(d.dtype("weight"), Some(Dtype::E4m3));
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let text = "kind = \"gemm\"\n[shape]\nM = 0\nN = 7\n[dtype]\ninput = \"bf17\"\noutput = \"bf16\"\n";
        let e = parse(text, "x").unwrap_err();
        let codes: Vec<&str> = e.iter().map(|d| d.code).collect();
        // In file order: K missing (at `[shape]`), M = 0, bf17, no weight dtype (at `[dtype]`).
        assert_eq!(codes, ["E0007", "E0006", "E0007", "E0005"]);
        assert!(e.iter().all(|d| d.help.is_some()));
    }

    #[test]
    fn identifiers_are_made_from_any_name() {
        assert_eq!(identifier("q_a/kv_a rmsnorm"), "q_a_kv_a_rmsnorm");
        assert_eq!(identifier("01_embedding"), "op_01_embedding");
        assert_eq!(identifier(""), "op_");
    }
}
