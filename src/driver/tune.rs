//! `mpkc tune`, host side (issue 12, Deliver 4: "a `tune` step may search contract parameters
//! and print the best contract"): the variants a search tries (every combination of the
//! `--vary` values), the choice of the best from their timings, and the contract rewritten with
//! the winner's values in its instance.

use crate::front::ast::Item;

/// Most variants one search may try (each is a production build and a GPU timing).
pub const MAX_VARIANTS: usize = 64;

/// Every combination of `vary`'s values, in order (the first param varies slowest): each variant
/// is `(param, value)` per varied param. Errors: a param varied twice, a param with no value, or
/// more than [`MAX_VARIANTS`] combinations.
pub fn variants(vary: &[(String, Vec<String>)]) -> Result<Vec<Vec<(String, String)>>, String> {
    for (i, (p, vs)) in vary.iter().enumerate() {
        if vary[..i].iter().any(|(q, _)| q == p) {
            return Err(format!(
                "`--vary {p}=...` is given twice: list its values once"
            ));
        }
        if vs.is_empty() {
            return Err(format!("`--vary {p}=` lists no value"));
        }
    }
    let total = vary
        .iter()
        .try_fold(1usize, |n, (_, vs)| n.checked_mul(vs.len()))
        .filter(|n| *n <= MAX_VARIANTS)
        .ok_or_else(|| {
            format!(
                "the `--vary` values make more than {MAX_VARIANTS} variants: search in parts (each variant is a build and a GPU timing)"
            )
        })?;
    let mut out = Vec::with_capacity(total);
    for i in 0..total {
        let mut rest = i;
        let mut v = vec![(String::new(), String::new()); vary.len()];
        for (j, (p, vs)) in vary.iter().enumerate().rev() {
            v[j] = (p.clone(), vs[rest % vs.len()].clone());
            rest /= vs.len();
        }
        out.push(v);
    }
    Ok(out)
}

/// `name=v1,v2,...` as `--vary` takes it.
pub fn parse_vary(s: &str) -> Result<(String, Vec<String>), String> {
    let (k, v) = s
        .split_once('=')
        .filter(|(k, _)| !k.trim().is_empty())
        .ok_or_else(|| format!("expected NAME=V1,V2,..., got `{s}`"))?;
    if v.trim().is_empty() {
        return Err(format!("`{s}` lists no value after `=`"));
    }
    let mut values: Vec<String> = Vec::new();
    for x in v.split(',').map(str::trim) {
        if x.is_empty() {
            return Err(format!(
                "`{s}` has an empty value: list values as NAME=V1,V2,..."
            ));
        }
        // A value given twice would be built and timed twice.
        if !values.iter().any(|y| y == x) {
            values.push(x.to_string());
        }
    }
    Ok((k.trim().to_string(), values))
}

/// `p1 = v1, p2 = v2` for a variant.
pub fn label(variant: &[(String, String)]) -> String {
    variant
        .iter()
        .map(|(p, v)| format!("{p} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One variant's outcome: its time per M (the method searched), or why it has none.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The variant's params.
    pub variant: Vec<(String, String)>,
    /// Microseconds per M, in `--m` order; `None` where that M was not timed.
    pub us: Vec<Option<f64>>,
}

impl Outcome {
    /// The geometric mean of its times over every M, `None` unless every M was timed.
    pub fn geomean_us(&self) -> Option<f64> {
        let t: Option<Vec<f64>> = self.us.iter().copied().collect();
        t.filter(|t| !t.is_empty() && t.iter().all(|x| x.is_finite() && *x > 0.0))
            .and_then(|t| crate::gpu::bench::stats::geomean(&t))
    }
}

/// The index of the fastest outcome by [`Outcome::geomean_us`] (the first on a tie), `None`
/// when none was timed at every M.
pub fn best(outcomes: &[Outcome]) -> Option<usize> {
    outcomes
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.geomean_us().map(|g| (i, g)))
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .map(|(i, _)| i)
}

/// The one declaration `instance NAME(...)` of `file`. Errors: none, or more than one.
fn find_instance<'a>(
    file: &'a crate::front::ast::File,
    instance: &str,
) -> Result<&'a crate::front::ast::Instance, String> {
    let found: Vec<&crate::front::ast::Instance> = file
        .tasks
        .iter()
        .flat_map(|t| t.items.iter())
        .filter_map(|i| match i {
            Item::Instance(x) if x.name.node == instance => Some(x),
            _ => None,
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!(
            "the contract declares no `instance {instance}(...)`"
        )),
        _ => Err(format!(
            "the contract declares `instance {instance}` more than once"
        )),
    }
}

/// `instance NAME(...)` setting `inst`'s values (as written in `src`) with `sets` on top: a
/// param it already sets takes the new value in place, one it does not is appended.
fn declaration(
    src: &str,
    inst: &crate::front::ast::Instance,
    name: &str,
    sets: &[(String, String)],
) -> String {
    let mut args: Vec<(String, String)> = inst
        .sets
        .iter()
        .map(|(k, v)| {
            let s = v.span();
            (k.node.clone(), src[s.start..s.end].to_string())
        })
        .collect();
    for (p, v) in sets {
        match args.iter_mut().find(|(k, _)| k == p) {
            Some(a) => a.1 = v.clone(),
            None => args.push((p.clone(), v.clone())),
        }
    }
    format!("instance {name}({})", label(&args))
}

fn parse(src: &str) -> Result<crate::front::ast::File, String> {
    crate::front::parse_file(src)
        .map_err(|_| "the contract does not parse: run `mpkc check` on it".to_string())
}

/// `src` with the declaration `instance NAME(...)` rewritten to set `sets` (a param it already
/// sets takes the new value in place; one it does not is appended): the contract a search
/// prints for its winner. Everything else, comments included, is kept byte for byte. Errors: the
/// file does not parse, or declares no instance `instance` (or more than one).
pub fn with_instance_params(
    src: &str,
    instance: &str,
    sets: &[(String, String)],
) -> Result<String, String> {
    let file = parse(src)?;
    let inst = find_instance(&file, instance)?;
    let text = declaration(src, inst, instance, sets);
    Ok(format!(
        "{}{text}{}",
        &src[..inst.span.start],
        &src[inst.span.end..]
    ))
}

/// The name of variant `i` of instance `instance` in [`variants_file`].
pub fn variant_instance(instance: &str, i: usize) -> String {
    format!("{instance}_v{i}")
}

/// `src` (one task) with its instance declarations replaced by one instance per variant, named
/// `name` and setting `instance`'s own values with the variant's on top, in place of the first
/// instance: one contract whose instances are the variants, so that one `mpkc bench` builds them
/// all at once (nvcc in parallel) and times each. Errors: the file does not parse, holds more
/// than one task, or its task declares no instance `instance`.
pub fn variants_file(
    src: &str,
    instance: &str,
    named: &[(String, Vec<(String, String)>)],
) -> Result<String, String> {
    let file = parse(src)?;
    let [task] = file.tasks.as_slice() else {
        return Err(format!(
            "mpkc tune takes a file of one task, and this one has {}",
            file.tasks.len()
        ));
    };
    let inst = find_instance(&file, instance)?;
    let spans: Vec<crate::span::Span> = task
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Instance(x) => Some(x.span),
            _ => None,
        })
        .collect();
    let first = spans.first().copied().unwrap_or(inst.span);
    let line_start = src[..first.start].rfind('\n').map_or(0, |i| i + 1);
    let indent: String = src[line_start..first.start]
        .chars()
        .take_while(|c| c.is_whitespace())
        .collect();
    let lines: Vec<String> = named
        .iter()
        .map(|(name, sets)| declaration(src, inst, name, sets))
        .collect();
    let mut out = String::new();
    let mut at = 0;
    for (k, sp) in spans.iter().enumerate() {
        out.push_str(&src[at..sp.start]);
        if k == 0 {
            out.push_str(&lines.join(&format!("\n{indent}")));
        }
        at = sp.end;
    }
    out.push_str(&src[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination_in_order_and_the_cap() {
        let v = variants(&[
            ("splits".into(), vec!["2".into(), "4".into()]),
            ("K".into(), vec!["64".into(), "128".into(), "256".into()]),
        ])
        .expect("six");
        assert_eq!(v.len(), 6);
        assert_eq!(label(&v[0]), "splits = 2, K = 64");
        assert_eq!(label(&v[1]), "splits = 2, K = 128");
        assert_eq!(label(&v[5]), "splits = 4, K = 256");
        let many: Vec<String> = (0..9).map(|i| i.to_string()).collect();
        let err = variants(&[("a".into(), many.clone()), ("b".into(), many)]).unwrap_err();
        assert!(err.contains("more than 64"), "{err}");
        let twice = variants(&[
            ("a".into(), vec!["1".into()]),
            ("a".into(), vec!["2".into()]),
        ]);
        assert!(twice.unwrap_err().contains("twice"));
    }

    #[test]
    fn vary_is_name_equals_values() {
        assert_eq!(
            parse_vary("splits=2, 4,8").expect("ok"),
            (
                "splits".to_string(),
                vec!["2".into(), "4".into(), "8".into()]
            )
        );
        assert!(parse_vary("splits=").is_err());
        assert!(parse_vary("splits=2,,4").is_err());
        assert!(parse_vary("splits=5,").is_err());
        assert_eq!(
            parse_vary("splits=5,5").expect("ok").1,
            vec!["5".to_string()]
        );
        assert!(parse_vary("=2").is_err());
        assert!(parse_vary("splits").is_err());
    }

    #[test]
    fn the_best_is_the_lowest_geomean_over_every_m() {
        let o = |us: Vec<Option<f64>>| Outcome {
            variant: Vec::new(),
            us,
        };
        let all = [
            o(vec![Some(10.0), Some(10.0)]),
            o(vec![Some(4.0), None]),
            o(vec![Some(8.0), Some(9.0)]),
            o(vec![Some(9.0), Some(8.0)]),
        ];
        // 8 x 9 = 9 x 8: the first of the tie; the one with an M missing never wins.
        assert_eq!(best(&all), Some(2));
        assert_eq!(best(&all[1..2]), None);
        assert!((all[0].geomean_us().expect("timed") - 10.0).abs() < 1e-9);
    }

    #[test]
    fn the_instance_is_rewritten_and_the_rest_kept() {
        let src = crate::driver::stdlib::sources()
            .into_iter()
            .find(|s| s.path.ends_with("linear_bf16_splitk_sum64.mpk"))
            .expect("stdlib contract")
            .text;
        let sets = [("splits".to_string(), "7".to_string())];
        let out = with_instance_params(&src, "q_a", &sets).expect("rewritten");
        assert!(
            out.contains("instance q_a(N = 1536, K = 7168, splits = 7)"),
            "{out}"
        );
        assert!(out.contains("instance kv_a(N = 576, K = 7168, splits = 14)"));
        assert_eq!(out.len(), src.len());
        // A param the instance does not set is appended.
        let out = with_instance_params(&src, "router", &[("m_real".into(), "1".into())])
            .expect("rewritten");
        assert!(out.contains("instance router(N = 256, K = 7168, splits = 14, m_real = 1)"));
        assert!(with_instance_params(&src, "nope", &sets)
            .unwrap_err()
            .contains("no `instance nope"));
        assert!(with_instance_params("task {", "q_a", &sets).is_err());
    }

    #[test]
    fn the_variants_file_holds_one_instance_per_variant_and_checks() {
        let stdlib = crate::driver::stdlib::sources();
        let source = stdlib
            .iter()
            .find(|s| s.path.ends_with("linear_bf16_splitk_sum64.mpk"))
            .expect("stdlib contract");
        let named = vec![
            (
                variant_instance("q_a", 0),
                vec![("splits".to_string(), "2".to_string())],
            ),
            (
                variant_instance("q_a", 2),
                vec![("splits".to_string(), "7".to_string())],
            ),
        ];
        let text = variants_file(&source.text, "q_a", &named).expect("variants");
        assert!(
            text.contains("instance q_a_v0(N = 1536, K = 7168, splits = 2)"),
            "{text}"
        );
        assert!(
            text.contains("instance q_a_v2(N = 1536, K = 7168, splits = 7)"),
            "{text}"
        );
        assert!(!text.contains("instance kv_a"), "{text}");
        assert!(!text.contains("instance q_a("), "{text}");
        let v = crate::driver::Source {
            text,
            ..source.clone()
        };
        let checked =
            crate::driver::check_sources_with(&[v], |_| Default::default(), &Default::default());
        assert!(!checked[0].has_errors(), "{:?}", checked[0].diags);
        let units: Vec<String> = checked[0].tasks.iter().map(|t| t.ir.unit_name()).collect();
        assert_eq!(
            units,
            vec![
                "linear_bf16_splitk_sum64_q_a_v0",
                "linear_bf16_splitk_sum64_q_a_v2"
            ]
        );
    }
}
