//! `--instance NAME` and `--param NAME=VALUE` over several inputs. A filter selects what matches
//! in each input and leaves the rest alone (a task without the instance lowers nothing, a file
//! without the param ignores it); it is an error only when it matches nothing in any input.

use super::Source;
use crate::diag::suggest;
use crate::front::{self, ast};
use std::collections::HashSet;

/// A command-line selection that matches nothing in any input (code `E0010`, a usage error: it
/// names no place in a file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmatched {
    /// What is wrong, naming the option.
    pub message: String,
    /// What exists instead.
    pub help: String,
}

/// What the inputs declare: `(task, instance)` pairs and param names, in input order (each
/// param name once; `seen` makes that test constant-time, so collecting is linear in the items).
#[derive(Debug, Default)]
struct Declared {
    instances: Vec<(String, String)>,
    params: Vec<String>,
    seen: HashSet<String>,
}

/// The declarations of `sources`, or `None` when one does not parse (its syntax errors are
/// reported by the check; whether it declares the name is then unknown).
fn declared(sources: &[Source]) -> Option<Declared> {
    let mut d = Declared::default();
    for s in sources {
        let file = front::parse_file(&s.text).ok()?;
        for t in &file.tasks {
            for item in &t.items {
                match item {
                    ast::Item::Instance(i) => {
                        d.instances.push((t.name.node.clone(), i.name.node.clone()))
                    }
                    ast::Item::Param(p) if !d.seen.contains(&p.name.node) => {
                        d.seen.insert(p.name.node.clone());
                        d.params.push(p.name.node.clone())
                    }
                    _ => {}
                }
            }
        }
    }
    Some(d)
}

/// The `--instance` and `--param` names that match nothing in any of `sources` (one entry per
/// option, however many inputs). Empty when every one matches somewhere, or when an input does
/// not parse.
pub fn unmatched(
    sources: &[Source],
    instance: Option<&str>,
    params: &[(String, String)],
) -> Vec<Unmatched> {
    if instance.is_none() && params.is_empty() {
        return Vec::new();
    }
    let Some(d) = declared(sources) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(want) = instance {
        if !d.instances.iter().any(|(_, i)| i == want) {
            let listed: Vec<String> = d
                .instances
                .iter()
                .map(|(t, i)| format!("{i} (task {t})"))
                .collect();
            let mean = suggest(want, d.instances.iter().map(|(_, i)| i.as_str()))
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            out.push(Unmatched {
                message: format!("`--instance {want}` matches no instance of any input"),
                help: if listed.is_empty() {
                    "no input declares an instance: drop `--instance`".to_string()
                } else {
                    format!(
                        "{mean}the inputs declare {}: {}",
                        if listed.len() == 1 {
                            "one instance"
                        } else {
                            "these instances"
                        },
                        listed.join(", ")
                    )
                },
            });
        }
    }
    let mut reported: HashSet<&str> = HashSet::new();
    for (name, value) in params {
        if d.seen.contains(name) || !reported.insert(name) {
            continue;
        }
        let mean = suggest(name, d.params.iter().map(String::as_str))
            .map(|s| format!("did you mean `{s}`? "))
            .unwrap_or_default();
        out.push(Unmatched {
            message: format!("`--param {name}={value}` names no param of any input"),
            help: if d.params.is_empty() {
                "no input declares a param: drop `--param`".to_string()
            } else {
                format!(
                    "{mean}the inputs declare the params {}",
                    d.params.join(", ")
                )
            },
        });
    }
    out
}
