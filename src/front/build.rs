//! Parse tree → AST: one `build_<rule>` per grammar rule. Nothing past `front/` sees a pest pair.
//!
//! Shapes the grammar guarantees are taken for granted (`unreachable!` names the rule); anything
//! numeric from the user goes through checked conversion into a diagnostic.

use super::ast::*;
use super::parse::{syntax_diagnostic, MpkParser, Rule};
use crate::diag::{codes, Diagnostic};
use crate::span::{Span, Spanned};
use pest::iterators::Pair;
use pest::Parser;

use super::build_sync::{build_barrier, build_channel, build_role_binding, build_sem};
use super::build_tensor::build_tensor;
pub(super) use super::expr::build_expr;

pub(super) type Diags = Vec<Diagnostic>;

/// The pair's span, ending at its last token: an optional that fails after pest skipped
/// whitespace and comments can leave them inside the pair, so the end is taken from the last
/// inner pair (a leaf ends at its trimmed text).
pub(super) fn span_of(p: &Pair<'_, Rule>) -> Span {
    let start = p.as_span().start();
    Span::new(start, token_end(p))
}

fn token_end(p: &Pair<'_, Rule>) -> usize {
    match p.clone().into_inner().last() {
        Some(last) => token_end(&last),
        None => p.as_span().start() + p.as_str().trim_end().len(),
    }
}

pub(super) fn ident(p: Pair<'_, Rule>) -> Ident {
    Spanned::new(p.as_str().to_string(), span_of(&p))
}

/// Parses a whole file. On a syntax error, reports it and keeps looking for further syntax
/// errors piece by piece ([`super::recover`], linear in the file); the AST is returned only when there were none.
pub fn parse_file(src: &str) -> Result<File, Diags> {
    // Bracket nesting past the bound is E0004 before pest runs (its stack guard's limit varies
    // from run to run: `front::nesting`).
    if let Some(d) = super::nesting::too_deep(src) {
        return Err(vec![d]);
    }
    // A lone CR inside a `//` comment ends no line (`front::line_ends`).
    if let Some(d) = super::line_ends::cr_in_line_comment(src) {
        return Err(vec![d]);
    }
    match MpkParser::parse(Rule::file, src) {
        Ok(mut pairs) => {
            let file = pairs
                .next()
                .unwrap_or_else(|| unreachable!("file rule yields one pair"));
            let mut diags = Vec::new();
            let ast = build_file(file, &mut diags);
            if diags.is_empty() {
                Ok(ast)
            } else {
                Err(diags)
            }
        }
        Err(e) => {
            let first = syntax_diagnostic(&e, src);
            let mut diags = vec![first.clone()];
            diags.extend(super::recover::further_errors(src, first.main_span().start));
            Err(diags)
        }
    }
}

fn build_file(p: Pair<'_, Rule>, d: &mut Diags) -> File {
    let mut tasks = Vec::new();
    for t in p.into_inner() {
        match t.as_rule() {
            Rule::task => tasks.push(build_task(t, d)),
            Rule::EOI => {}
            r => unreachable!("{r:?} in build_file"),
        }
    }
    File { tasks }
}

fn build_task(p: Pair<'_, Rule>, d: &mut Diags) -> Task {
    let span = span_of(&p);
    let mut name = None;
    let mut items = Vec::new();
    for c in p.into_inner() {
        match c.as_rule() {
            Rule::ident => name = Some(ident(c)),
            Rule::kw_task | Rule::lbrace | Rule::rbrace | Rule::semi => {}
            _ => {
                if let Some(item) = build_item(c, d) {
                    items.push(item);
                }
            }
        }
    }
    Task {
        name: name.unwrap_or_else(|| unreachable!("task has a name")),
        span,
        items,
    }
}

fn build_item(p: Pair<'_, Rule>, d: &mut Diags) -> Option<Item> {
    let span = span_of(&p);
    let rule = p.as_rule();
    let mut inner = p.into_inner().filter(|c| !is_punct(c.as_rule()));
    Some(match rule {
        Rule::family_decl => Item::Family(ident(inner.nth(1)?)),
        Rule::targets_decl => {
            let items = inner.skip(1).map(|t| build_target(t, d)).collect();
            Item::Targets(items, span)
        }
        Rule::task_id_decl => Item::TaskId(build_expr(inner.nth(1)?, d), span),
        Rule::reduce_task_id_decl => Item::ReduceTaskId(build_expr(inner.nth(1)?, d), span),
        Rule::param_decl => Item::Param(build_param(inner.skip(1), span, d)),
        Rule::tensor_decl => Item::Tensor(Box::new(build_tensor(inner.skip(1), span, d))),
        Rule::tile_decl => {
            let dims = inner
                .skip(1)
                .map(|td| {
                    let mut i = td.into_inner();
                    let n = ident(i.next().unwrap_or_else(|| unreachable!("tile_dim name")));
                    let e =
                        build_expr(i.next().unwrap_or_else(|| unreachable!("tile_dim expr")), d);
                    (n, e)
                })
                .collect();
            Item::Tile(dims, span)
        }
        Rule::setmaxnreg_decl => {
            let dims = inner
                .skip(1)
                .map(|td| {
                    let mut i = td.into_inner();
                    let n = ident(i.next().unwrap_or_else(|| unreachable!("setmaxnreg name")));
                    let e = build_expr(
                        i.next().unwrap_or_else(|| unreachable!("setmaxnreg expr")),
                        d,
                    );
                    (n, e)
                })
                .collect();
            Item::SetMaxNReg(dims, span)
        }
        Rule::stages_decl => Item::Stages(build_expr(inner.nth(1)?, d), span),
        Rule::mma_decl => Item::Mma(build_mma(inner.skip(1), span, d)),
        Rule::tmem_decl => Item::Tmem(build_expr(inner.nth(1)?, d), span),
        Rule::region_decl => Item::Region(build_region(inner.skip(1), span, d)),
        Rule::channel_decl => Item::Channel(build_channel(inner.skip(1), span, d)),
        Rule::sem_decl => Item::Sem(build_sem(inner.skip(1), span, d)),
        Rule::roles_decl => {
            let bs = inner
                .skip(1)
                .filter_map(|b| build_role_binding(b, d))
                .collect();
            Item::Roles(bs, span)
        }
        Rule::barrier_decl => Item::Barrier(build_barrier(inner.skip(1), span, d)),
        Rule::body_decl => {
            let b = inner.nth(1)?;
            if b.as_rule() == Rule::body_loader {
                let cuda = b.into_inner().find(|c| c.as_rule() == Rule::body_cuda)?;
                Item::LoaderBody(build_body(cuda, span))
            } else {
                Item::Body(build_body(b, span))
            }
        }
        Rule::epilogue_decl => {
            let alts = inner
                .skip(1)
                .map(|a| {
                    let (mut kind, mut ty, mut with, mut after_with) = (None, None, None, false);
                    for c in a.into_inner() {
                        match c.as_rule() {
                            Rule::kw_with => after_with = true,
                            Rule::ident if after_with => with = Some(ident(c)),
                            Rule::ident if kind.is_none() => kind = Some(ident(c)),
                            Rule::ident => ty = Some(ident(c)),
                            r => unreachable!("{r:?} in epilogue_alt"),
                        }
                    }
                    let kind = kind.unwrap_or_else(|| unreachable!("epilogue_alt kind"));
                    (kind, ty, with)
                })
                .collect();
            Item::Epilogue(alts, span)
        }
        Rule::granularity_decl => Item::Granularity(build_granularity(inner.skip(1), span, d)),
        Rule::lever_decl => {
            let mut i = inner.skip(1);
            let name = ident(i.next()?);
            let oo = i.next()?;
            let on = oo.as_str().starts_with("on");
            let effect = i.find(|p| p.as_rule() == Rule::lever_effect).and_then(|e| {
                let es = span_of(&e);
                let mut w = e.into_inner().filter(|p| p.as_rule() == Rule::ident);
                Some((ident(w.next()?), ident(w.next()?), es))
            });
            Item::Lever(Lever {
                name,
                default_on: Spanned::new(on, span_of(&oo)),
                effect,
                span,
            })
        }
        Rule::instance_decl => {
            let mut i = inner.skip(1);
            let name = ident(i.next()?);
            let sets = i
                .map(|ps| {
                    let mut j = ps.into_inner().filter(|c| !is_punct(c.as_rule()));
                    let n = ident(j.next().unwrap_or_else(|| unreachable!("param_set name")));
                    let v = build_value(
                        j.next().unwrap_or_else(|| unreachable!("param_set value")),
                        d,
                    );
                    (n, v)
                })
                .collect();
            Item::Instance(Instance { name, sets, span })
        }
        Rule::reference_decl => {
            let mut i = inner.skip(1);
            let language = ident(i.next()?);
            let path = string_lit(&i.next()?);
            let function = ident(i.nth(1)?);
            let tolerances = i
                .filter(|t| t.as_rule() == Rule::ref_tol)
                .map(|t| {
                    let mut j = t.into_inner().filter(|c| !is_punct(c.as_rule()));
                    let key = ident(j.next().unwrap_or_else(|| unreachable!("ref_tol key")));
                    let v =
                        build_value(j.next().unwrap_or_else(|| unreachable!("ref_tol value")), d);
                    (key, v)
                })
                .collect();
            Item::Reference(Reference {
                language,
                path,
                function,
                tolerances,
                span,
            })
        }
        Rule::use_decl => {
            let mut name = None;
            let mut from = None;
            let mut sets = Vec::new();
            for c in inner.skip(1) {
                match c.as_rule() {
                    Rule::ident => name = Some(ident(c)),
                    Rule::string_lit => from = Some(string_lit(&c)),
                    Rule::param_set => {
                        let mut j = c.into_inner().filter(|c| !is_punct(c.as_rule()));
                        let n = ident(j.next().unwrap_or_else(|| unreachable!("param_set name")));
                        let v = build_value(
                            j.next().unwrap_or_else(|| unreachable!("param_set value")),
                            d,
                        );
                        sets.push((n, v));
                    }
                    _ => {}
                }
            }
            Item::Use(Use {
                name: name.unwrap_or_else(|| unreachable!("use_decl name")),
                from,
                sets,
                span,
            })
        }
        Rule::route_decl => {
            let weights = ident(inner.nth(1)?);
            let ids = ident(inner.nth(1)?);
            let m = inner.next()?;
            let mode_span = span_of(&m);
            let mode = match m.into_inner().next().map(|x| x.as_rule()) {
                Some(Rule::route_sum_slots) => RouteMode::SumSlots,
                _ => RouteMode::PerSlot,
            };
            Item::Route(Route {
                weights,
                ids,
                mode,
                mode_span,
                span,
            })
        }
        Rule::require_decl => {
            let lhs = build_expr(inner.nth(1)?, d);
            let op_pair = inner.next()?;
            let op_span = span_of(&op_pair);
            let op = CmpOp::parse(op_pair.as_str())?;
            let rhs = build_expr(inner.next()?, d);
            let message = inner
                .find(|c| c.as_rule() == Rule::string_lit)
                .map(|c| string_lit(&c))
                // An empty message says nothing: the item's own label stands.
                .filter(|m| !m.node.is_empty());
            Item::Require(Require {
                lhs,
                op,
                op_span,
                rhs,
                message,
                span,
            })
        }
        r => unreachable!("{r:?} in build_item"),
    })
}

/// A `string_lit`'s text without its quotes, `\\"` and `\\\\` unescaped (the only escapes the
/// grammar admits), with the literal's span.
fn string_lit(p: &Pair<'_, Rule>) -> Spanned<String> {
    let text = p.as_str();
    let inner = text
        .get(1..text.len().saturating_sub(1))
        .unwrap_or_default()
        .replace("\\\"", "\"")
        .replace("\\\\", "\\");
    Spanned::new(inner, span_of(p))
}

pub(super) fn is_punct(r: Rule) -> bool {
    matches!(
        r,
        Rule::lbrace
            | Rule::rbrace
            | Rule::lparen
            | Rule::rparen
            | Rule::lbracket
            | Rule::rbracket
            | Rule::comma
            | Rule::colon
            | Rule::semi
            | Rule::equals
            | Rule::arrow
    )
}

fn build_target(p: Pair<'_, Rule>, d: &mut Diags) -> TargetItem {
    let span = span_of(&p);
    let mut i = p.into_inner().filter(|c| !is_punct(c.as_rule()));
    let name = ident(i.next().unwrap_or_else(|| unreachable!("target_item name")));
    let setting = match (i.next(), i.next()) {
        (Some(k), Some(v)) => Some((ident(k), build_expr(v, d))),
        _ => None,
    };
    TargetItem {
        name,
        setting,
        span,
    }
}

fn build_param<'a>(
    mut i: impl Iterator<Item = Pair<'a, Rule>>,
    span: Span,
    d: &mut Diags,
) -> Param {
    let name = ident(i.next().unwrap_or_else(|| unreachable!("param name")));
    let ty = ident(i.next().unwrap_or_else(|| unreachable!("param type")));
    let mut range = None;
    let mut default = None;
    let mut runtime = None;
    for c in i {
        match c.as_rule() {
            Rule::param_range => {
                let rspan = span_of(&c);
                let mut j = c.into_inner();
                let _kw = j.next();
                let lo = build_expr(j.next().unwrap_or_else(|| unreachable!("range lo")), d);
                let op = j.next().unwrap_or_else(|| unreachable!("range op"));
                let hi = build_expr(j.next().unwrap_or_else(|| unreachable!("range hi")), d);
                let _step_kw = j.next();
                let step = j.next().map(|e| build_expr(e, d));
                range = Some(ParamRange {
                    lo,
                    hi,
                    inclusive: op.as_rule() == Rule::range_incl,
                    step,
                    span: rspan,
                });
            }
            Rule::value => default = Some(build_value(c, d)),
            Rule::kw_runtime => runtime = Some(span_of(&c)),
            r => unreachable!("{r:?} in build_param"),
        }
    }
    Param {
        name,
        ty,
        range,
        default,
        runtime,
        span,
    }
}

pub(super) fn build_value(p: Pair<'_, Rule>, d: &mut Diags) -> Value {
    let c = p
        .into_inner()
        .next()
        .unwrap_or_else(|| unreachable!("value has a child"));
    match c.as_rule() {
        Rule::bool_lit => Value::Bool(c.as_str() == "true", span_of(&c)),
        Rule::expr => Value::Expr(build_expr(c, d)),
        r => unreachable!("{r:?} in build_value"),
    }
}

fn build_mma<'a>(mut i: impl Iterator<Item = Pair<'a, Rule>>, span: Span, d: &mut Diags) -> Mma {
    let mut next_ident = || ident(i.next().unwrap_or_else(|| unreachable!("mma ident")));
    let engine = next_ident();
    let kind = next_ident();
    let a = next_ident();
    let b = next_ident();
    let dd = next_ident();
    let mut dims = Vec::new();
    for md in i {
        let mspan = span_of(&md);
        let mut j = md.into_inner().filter(|c| !is_punct(c.as_rule()));
        let first = j.next().unwrap_or_else(|| unreachable!("mma_dim child"));
        match first.as_rule() {
            Rule::mma_dim_tok => {
                let s = first.as_str();
                let axis = s.chars().next().unwrap_or('m');
                let digits = &s[1..];
                let e = Expr {
                    kind: super::literal::int_literal(digits),
                    span: Span::new(mspan.start + 1, mspan.end),
                };
                dims.push((
                    Spanned::new(axis, Span::new(mspan.start, mspan.start + 1)),
                    e,
                ));
            }
            Rule::mma_axis => {
                let axis = first.as_str().chars().next().unwrap_or('m');
                let e = build_expr(j.next().unwrap_or_else(|| unreachable!("mma_dim expr")), d);
                dims.push((Spanned::new(axis, span_of(&first)), e));
            }
            r => unreachable!("{r:?} in build_mma"),
        }
    }
    Mma {
        engine,
        kind,
        a,
        b,
        d: dd,
        dims,
        span,
    }
}

fn build_region<'a>(
    mut i: impl Iterator<Item = Pair<'a, Rule>>,
    span: Span,
    d: &mut Diags,
) -> Region {
    let name = ident(i.next().unwrap_or_else(|| unreachable!("region name")));
    let mut staged = None;
    let mut attrs = Vec::new();
    for c in i {
        match c.as_rule() {
            Rule::stage_suffix => staged = Some(span_of(&c)),
            Rule::region_attr => {
                let a = c
                    .into_inner()
                    .next()
                    .unwrap_or_else(|| unreachable!("region_attr child"));
                let aspan = span_of(&a);
                let rule = a.as_rule();
                let expr_child = || {
                    a.clone()
                        .into_inner()
                        .find(|x| x.as_rule() == Rule::expr)
                        .unwrap_or_else(|| unreachable!("attr expr"))
                };
                attrs.push(match rule {
                    Rule::attr_bytes => RegionAttr::Bytes(build_expr(expr_child(), d), aspan),
                    Rule::attr_align => RegionAttr::Align(build_expr(expr_child(), d), aspan),
                    Rule::attr_pack => RegionAttr::Pack(aspan),
                    Rule::attr_release => RegionAttr::Release(build_expr(expr_child(), d), aspan),
                    Rule::attr_pages => RegionAttr::Pages(build_expr(expr_child(), d), aspan),
                    Rule::attr_holds => RegionAttr::Holds(
                        a.clone()
                            .into_inner()
                            .filter(|x| x.as_rule() == Rule::held)
                            .map(|h| build_held(h, d))
                            .collect(),
                        aspan,
                    ),
                    Rule::attr_contiguous => {
                        let b = a
                            .clone()
                            .into_inner()
                            .next()
                            .map(|x| x.as_str() == "true")
                            .unwrap_or(true);
                        RegionAttr::Contiguous(b, aspan)
                    }
                    r => unreachable!("{r:?} in build_region"),
                });
            }
            r => unreachable!("{r:?} in build_region"),
        }
    }
    Region {
        name,
        staged,
        attrs,
        span,
    }
}

fn build_held(p: Pair<'_, Rule>, d: &mut Diags) -> Held {
    let span = span_of(&p);
    let mut ty = None;
    let mut count = None;
    let mut name = None;
    for c in p.into_inner() {
        match c.as_rule() {
            Rule::ident => ty = Some(ident(c)),
            Rule::expr => count = Some(build_expr(c, d)),
            Rule::held_name => name = Some(ident(c)),
            Rule::lbracket | Rule::rbracket => {}
            r => unreachable!("{r:?} in build_held"),
        }
    }
    Held {
        ty: ty.unwrap_or_else(|| unreachable!("held type")),
        count,
        name,
        span,
    }
}

fn build_body(p: Pair<'_, Rule>, span: Span) -> Body {
    match p.as_rule() {
        Rule::body_template => {
            let mut name = None;
            // Lists belong to the section opened by the separator before them:
            // inputs, then `->` outputs, then `;` scalars.
            let (mut inputs, mut outputs, mut scalars) = (Vec::new(), Vec::new(), Vec::new());
            let mut section = 0u8;
            for c in p.into_inner() {
                match c.as_rule() {
                    Rule::ident => name = Some(ident(c)),
                    Rule::arrow => section = 1,
                    Rule::semi => section = 2,
                    Rule::ident_list => {
                        let l: Vec<Ident> = c
                            .into_inner()
                            .filter(|x| x.as_rule() == Rule::ident)
                            .map(ident)
                            .collect();
                        match section {
                            0 => inputs = l,
                            1 => outputs = l,
                            _ => scalars = l,
                        }
                    }
                    _ => {}
                }
            }
            Body::Template {
                name: name.unwrap_or_else(|| unreachable!("body_template name")),
                inputs,
                outputs,
                scalars,
                span,
            }
        }
        Rule::body_cuda => {
            let block = p
                .into_inner()
                .next()
                .unwrap_or_else(|| unreachable!("cuda block"));
            let bs = block.as_span();
            let text = block.as_str();
            let code = text[1..text.len() - 1].to_string();
            Body::Cuda {
                code,
                code_span: Span::new(bs.start() + 1, bs.end() - 1),
                span,
            }
        }
        r => unreachable!("{r:?} in build_body"),
    }
}

fn build_granularity<'a>(
    mut i: impl Iterator<Item = Pair<'a, Rule>>,
    span: Span,
    d: &mut Diags,
) -> Granularity {
    let kind = ident(i.next().unwrap_or_else(|| unreachable!("granularity kind")));
    let mut args = Vec::new();
    for a in i.filter(|c| c.as_rule() == Rule::gran_arg) {
        let aspan = span_of(&a);
        let mut j = a.into_inner();
        let key = ident(j.next().unwrap_or_else(|| unreachable!("gran_arg key")));
        let value = j.next().map(|v| match v.as_rule() {
            Rule::string_lit => GranValue::Str(string_lit(&v)),
            _ => GranValue::Expr(build_expr(v, d)),
        });
        args.push(GranArg {
            key,
            value,
            span: aspan,
        });
    }
    Granularity { kind, args, span }
}

/// Parses the digits of a warp name (`W4`); overflow is an `E0004` diagnostic. (Literals in
/// expressions are [`super::literal`]'s: they are reported when evaluated.)
pub(super) fn parse_int(text: &str, span: Span, d: &mut Diags) -> i64 {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let parsed = if let Some(h) = clean.strip_prefix("0x") {
        i64::from_str_radix(h, 16)
    } else {
        clean.parse::<i64>()
    };
    parsed.unwrap_or_else(|_| {
        d.push(
            Diagnostic::error(
                codes::ARITH,
                format!("integer literal `{text}` does not fit in 64 bits"),
            )
            .primary(span, "too large")
            .help(format!("integers are 64-bit: {}..={}", i64::MIN, i64::MAX)),
        );
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(src: &str) -> File {
        match parse_file(src) {
            Ok(f) => f,
            Err(ds) => panic!("unexpected errors: {ds:#?}"),
        }
    }

    #[test]
    fn precedence_and_spans() {
        let f = parse_ok("task t { stages 1 + 2 * (3 - 1) % 4 }");
        let Item::Stages(e, _) = &f.tasks[0].items[0] else {
            panic!()
        };
        let ExprKind::Binary(BinOp::Add, l, r) = &e.kind else {
            panic!("{e:?}")
        };
        assert!(matches!(l.kind, ExprKind::Int(1)));
        assert!(matches!(r.kind, ExprKind::Binary(BinOp::Rem, _, _)));
        assert_eq!(
            &"task t { stages 1 + 2 * (3 - 1) % 4 }"[e.span.range()],
            "1 + 2 * (3 - 1) % 4"
        );
    }

    #[test]
    fn subtraction_is_left_associative() {
        let f = parse_ok("task t { stages 10 - 3 - 2 }");
        let Item::Stages(e, _) = &f.tasks[0].items[0] else {
            panic!()
        };
        let ExprKind::Binary(BinOp::Sub, l, _) = &e.kind else {
            panic!()
        };
        assert!(matches!(l.kind, ExprKind::Binary(BinOp::Sub, _, _)));
    }

    #[test]
    fn cuda_body_keeps_text_and_nested_braces() {
        let src = "task t { body cuda { if (x) { y(\"}\"); } // }\n } }";
        let f = parse_ok(src);
        let Item::Body(Body::Cuda {
            code, code_span, ..
        }) = &f.tasks[0].items[0]
        else {
            panic!()
        };
        assert_eq!(&src[code_span.range()], code);
        assert!(code.contains("y(\"}\")"));
    }

    #[test]
    fn body_template_lists() {
        let f = parse_ok("task t { body rmsnorm(x, w -> y; eps) }");
        let Item::Body(Body::Template {
            inputs,
            outputs,
            scalars,
            ..
        }) = &f.tasks[0].items[0]
        else {
            panic!()
        };
        assert_eq!((inputs.len(), outputs.len(), scalars.len()), (2, 1, 1));
        let f = parse_ok("task t { body argmax_reduce(v, i -> o) }");
        let Item::Body(Body::Template {
            inputs,
            outputs,
            scalars,
            ..
        }) = &f.tasks[0].items[0]
        else {
            panic!()
        };
        assert_eq!((inputs.len(), outputs.len(), scalars.len()), (2, 1, 0));
    }

    #[test]
    fn several_syntax_errors_are_reported() {
        let src = "task t {\n  stages 6 +\n  tmem cols 32\n  region A { bytes ; }\n}\n";
        let errs = parse_file(src).unwrap_err();
        assert!(errs.len() >= 2, "{errs:#?}");
        assert!(errs.iter().all(|e| e.code == "E0001"));
    }

    #[test]
    fn holds_members_stop_at_the_next_attribute() {
        let f = parse_ok("task t { region s { holds tmem_addr, f32[4] amax bytes 32 pack } }");
        let Item::Region(r) = &f.tasks[0].items[0] else {
            panic!()
        };
        let RegionAttr::Holds(m, _) = &r.attrs[0] else {
            panic!("{:?}", r.attrs)
        };
        assert_eq!(m.len(), 2);
        assert!(m[0].name.is_none() && m[0].count.is_none());
        assert_eq!(m[1].name.as_ref().map(|n| n.node.as_str()), Some("amax"));
        assert!(matches!(r.attrs[1], RegionAttr::Bytes(..)));
        assert!(matches!(r.attrs[2], RegionAttr::Pack(..)));
    }

    #[test]
    fn huge_literal_is_kept_for_evaluation() {
        // Not a parse error (it would hide the rest of the file): evaluation reports it, E0004.
        let f = parse_ok("task t { stages 99999999999999999999999 }");
        let Item::Stages(e, _) = &f.tasks[0].items[0] else {
            panic!()
        };
        let ExprKind::BadLit(b) = &e.kind else {
            panic!("{e:?}")
        };
        assert_eq!(b.text, "99999999999999999999999");
        assert_eq!(b.diagnostic(e.span).code, "E0004");
    }
}
