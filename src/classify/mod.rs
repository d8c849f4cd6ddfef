//! Stage 0 of a kernel: `mpkc classify FILE.toml` reads an op description ([`desc`]) and picks
//! the op's family by design.md's ordered rules ([`rules`]); `mpkc new FILE.toml` writes a
//! starting contract of that family ([`new`]). docs/classify.md describes the file format.

pub mod desc;
pub mod new;
pub mod rules;

pub use desc::{Description, Kind};
pub use rules::{classify, letter, Classification, Verdict};

use crate::diag::Diagnostic;

/// Parses the description `text` (from a file whose stem is `stem`) and classifies it.
///
/// # Errors
/// The description's problems, as diagnostics with spans into `text`.
pub fn classify_text(
    text: &str,
    stem: &str,
) -> Result<(Description, Classification), Vec<Diagnostic>> {
    let d = desc::parse(text, stem)?;
    let c = classify(&d);
    Ok((d, c))
}

/// The starting contract for the description `text`.
///
/// # Errors
/// The description's problems, or why no starting contract of its family fits it.
pub fn new_contract(text: &str, stem: &str) -> Result<String, Vec<Diagnostic>> {
    let d = desc::parse(text, stem)?;
    new::contract(&d).map_err(|e| vec![e])
}

/// The human report of a classification: the family, the rule that fired and why, then why
/// each earlier rule did not fire.
pub fn report_text(file: &str, d: &Description, c: &Classification) -> String {
    let mut s = format!(
        "{file}: `{}` is family {} ({})\n  rule {} fired ({}): {}\n",
        d.name,
        letter(c.family),
        c.family.as_str(),
        c.fired.rule,
        c.fired.title,
        c.fired.why
    );
    for v in &c.earlier {
        s.push_str(&format!(
            "  rule {} did not fire ({}): {}\n",
            v.rule, v.title, v.why
        ));
    }
    s
}

/// The JSON object of a classification (one line of `--message-format json`; docs/classify.md).
pub fn report_json(file: &str, d: &Description, c: &Classification) -> serde_json::Value {
    serde_json::json!({
        "file": file,
        "name": d.name,
        "kind": d.kind.value.as_str(),
        "family": c.family.as_str(),
        "letter": letter(c.family).to_string(),
        "rule": c.fired.rule,
        "why": c.fired.why,
        "earlier": c.earlier.iter().map(|v| serde_json::json!({
            "rule": v.rule,
            "title": v.title,
            "why_not": v.why,
        })).collect::<Vec<_>>(),
    })
}
