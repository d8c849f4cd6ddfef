//! The constants an inline body may name where the checker evaluates an expression of it (a
//! barrier id or count, a ring copy's bytes, a `static_assert`, a `grid_sync` site): what the
//! generated kernel defines (`BAR_<NAME>`, `kConsumerThreads`, `kNumTasks`, `params::NAME`),
//! unless the body declares a local of that name ([`declares`]).

use super::const_expr::Ty;
use crate::ir::TaskIr;

/// What evaluates a body's named constants ([`body_constants`]): a name's value and C++ type.
pub(super) type Names<'a> = dyn Fn(&str) -> Option<(i64, Ty)> + 'a;

/// The constants an inline body may name in a barrier id or thread count, as the generated
/// kernel defines them: each declared barrier's `BAR_<NAME>` (its id), `kConsumerThreads`
/// (128, `back::consumer`) and `params::NAME` (an integer or `bool` param's value).
pub(super) fn body_constants<'a>(
    ir: &'a TaskIr,
    code: &str,
) -> impl Fn(&str) -> Option<(i64, Ty)> + 'a {
    // A local of the body named like a generated constant (`constexpr int kConsumerThreads =
    // 64;` in a block) may hide it where the expression stands: such names are given up.
    let stripped = super::body::strip_comments_and_strings(code);
    let shadowed: Vec<String> = ["kConsumerThreads", "kNumTasks"]
        .into_iter()
        .map(str::to_string)
        .chain(
            ir.barriers
                .values()
                .map(|b| format!("BAR_{}", crate::back::names::upper(&b.name))),
        )
        .filter(|n| declares(&stripped, n))
        .collect();
    move |name: &str| {
        if shadowed.iter().any(|n| n == name) {
            return None;
        }
        if name == "kConsumerThreads" {
            return Some((128, Ty::Int));
        }
        // A per-tile task's count (`constexpr int kNumTasks`, back/consumer.rs); a grid-wide
        // task's is the runtime's worker count, no constant.
        if name == "kNumTasks" {
            return match ir.granularity {
                crate::ir::GranularityIr::PerTile { tasks, .. } => {
                    i32::try_from(tasks).ok().map(|t| (i64::from(t), Ty::Int))
                }
                crate::ir::GranularityIr::GridWide { .. } => None,
            };
        }
        // `params::NAME`: the instance's value of an integer or `bool` param, of the C++ type
        // the generated `params` namespace gives it (`int64_t`, `int32_t`, `bool`).
        if let Some(p) = name.strip_prefix("params::") {
            let p = ir.params.get(p)?;
            return match (&p.value, p.ty) {
                (crate::ir::ParamValue::Int(v), crate::ir::ParamType::I32) => Some((*v, Ty::Int)),
                (crate::ir::ParamValue::Int(v), _) => Some((*v, Ty::Long)),
                (crate::ir::ParamValue::Bool(b), _) => Some((i64::from(*b), Ty::Int)),
                _ => None,
            };
        }
        // A barrier declared with a reserved id is E0401 already: its uses are not reported again.
        ir.barriers
            .values()
            .filter(|b| b.id != 0 && b.id != 8)
            .find(|b| name == format!("BAR_{}", crate::back::names::upper(&b.name)))
            .map(|b| (b.id, Ty::Int))
    }
}

/// Whether `code` (comments and strings stripped) declares `name` itself: the identifier right
/// after a word that is not an expression keyword (`int kConsumerThreads`, `auto const BAR_X`,
/// `#define kConsumerThreads`), or after a `*` or `&` declarator that follows such a word.
pub(super) fn declares(code: &str, name: &str) -> bool {
    const NOT_A_TYPE: &[&str] = &[
        "return",
        "case",
        "else",
        "do",
        "throw",
        "sizeof",
        "alignof",
        "goto",
        "co_return",
        "co_yield",
        "co_await",
        "new",
        "delete",
        "if",
        "while",
        "for",
        "switch",
    ];
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(name).any(|(at, _)| {
        let whole = !code[..at].ends_with(ident) && !code[at + name.len()..].starts_with(ident);
        if !whole {
            return false;
        }
        let before = code[..at].trim_end();
        if before.ends_with("::") {
            return false;
        }
        // After `*` or `&`, a declarator (`int const *kConsumerThreads = p;`) is followed by an
        // initialiser or the declaration's end; `v * kConsumerThreads + tid` is a product.
        if before.ends_with(['*', '&']) {
            let after = code[at + name.len()..].trim_start();
            if !after.starts_with(['=', ';', ',', '{', '[']) || after.starts_with("==") {
                return false;
            }
        }
        let before = before.trim_end_matches(['*', '&']).trim_end();
        let word: String = before
            .chars()
            .rev()
            .take_while(|c| ident(*c))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        !word.is_empty()
            && !word.starts_with(|c: char| c.is_ascii_digit())
            && !NOT_A_TYPE.contains(&word.as_str())
    })
}

/// The value of an integer constant expression written with literals alone
/// ([`super::const_expr::eval`]: `1 + 7`, `2 * (3 + 1)`, `1 << 3`). `None` for anything else (a
/// name, a register `%0`) and on overflow.
pub(super) fn const_int(s: &str) -> Option<i64> {
    super::const_expr::eval(s, &|_| None)
}

/// [`const_int`] where a name (an identifier, `::` qualified or not) may also stand for a
/// constant: `names` gives its value, or `None` to give up (the body's `BAR_<NAME>` ids and
/// `kConsumerThreads`, which the generated kernel defines: `BAR_SYNC + 6`, `BAR_A << 1 | 2`).
pub(super) fn const_int_with(s: &str, names: &dyn Fn(&str) -> Option<(i64, Ty)>) -> Option<i64> {
    super::const_expr::eval(s, names)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_declaration_of_the_name_hides_the_generated_constant() {
        for (code, hides) in [
            ("constexpr int kConsumerThreads = 64;", true),
            ("int const *kConsumerThreads = p;", true),
            ("#define kConsumerThreads 64", true),
            ("auto const BAR_X = 3;", true),
            ("return kConsumerThreads / 32;", false),
            ("x = kConsumerThreads;", false),
            ("f(kConsumerThreads, 2)", false),
            ("int n = 4 * kConsumerThreads;", false),
            ("case kConsumerThreads: break;", false),
            ("mpkc::kConsumerThreads", false),
            ("int kConsumerThreadsX = 1;", false),
            ("s[(v * kConsumerThreads + tid) * 8] = 0;", false),
            ("int const n = (v * kConsumerThreads);", false),
            ("bool b = a & kConsumerThreads == 128;", false),
        ] {
            assert_eq!(
                super::declares(
                    code,
                    if code.contains("BAR_X") {
                        "BAR_X"
                    } else {
                        "kConsumerThreads"
                    }
                ),
                hides,
                "{code}"
            );
        }
    }
}
