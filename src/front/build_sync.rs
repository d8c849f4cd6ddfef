//! Parse tree → AST for the synchronisation items: arrivals (`threads N after B`), channels,
//! one-shot sems, role bindings and named barriers. The helpers shared with the other items
//! (spans, identifiers, punctuation, values) live in `build.rs`.

use super::ast::*;
use super::build::{build_expr, ident, is_punct, parse_int, span_of, Diags};
use super::parse::Rule;
use crate::span::{Span, Spanned};
use pest::iterators::Pair;

fn build_arrival(p: Pair<'_, Rule>, d: &mut Diags) -> Arrival {
    let a = p
        .into_inner()
        .find(|c| !is_punct(c.as_rule()))
        .unwrap_or_else(|| unreachable!("arrival child"));
    let span = span_of(&a);
    match a.as_rule() {
        Rule::arrival_tma => Arrival::Tma(
            a.into_inner()
                .filter(|c| c.as_rule() == Rule::ident)
                .map(ident)
                .collect(),
            span,
        ),
        Rule::arrival_bulk => Arrival::Bulk(
            a.into_inner()
                .filter(|c| c.as_rule() == Rule::ident)
                .map(ident)
                .collect(),
            span,
        ),
        Rule::arrival_commit => Arrival::Commit(span),
        Rule::arrival_threads => {
            let mut e = None;
            let mut after = None;
            for c in a.into_inner() {
                match c.as_rule() {
                    Rule::expr => e = Some(build_expr(c, d)),
                    Rule::ident => after = Some(ident(c)),
                    _ => {}
                }
            }
            Arrival::Threads(
                e.unwrap_or_else(|| unreachable!("threads expr")),
                after,
                span,
            )
        }
        r => unreachable!("{r:?} in build_arrival"),
    }
}

pub(super) fn build_channel<'a>(
    mut i: impl Iterator<Item = Pair<'a, Rule>>,
    span: Span,
    d: &mut Diags,
) -> Channel {
    let name = ident(i.next().unwrap_or_else(|| unreachable!("channel name")));
    let st = i.next().unwrap_or_else(|| unreachable!("channel storage"));
    let storage_span = span_of(&st);
    let s = st
        .into_inner()
        .next()
        .unwrap_or_else(|| unreachable!("storage child"));
    let storage = match s.as_rule() {
        Rule::tmem_slots => {
            let e = s
                .into_inner()
                .find(|c| c.as_rule() == Rule::expr)
                .unwrap_or_else(|| unreachable!("slots expr"));
            ChannelStorage::Tmem {
                slots: build_expr(e, d),
            }
        }
        Rule::region_ring => {
            let mut j = s.into_inner();
            let region = ident(j.next().unwrap_or_else(|| unreachable!("ring region")));
            let depth = j.next().map(|e| build_expr(e, d));
            ChannelStorage::Region { region, depth }
        }
        r => unreachable!("{r:?} in build_channel"),
    };
    let mut clauses = Vec::new();
    for c in i {
        let cl = c
            .into_inner()
            .next()
            .unwrap_or_else(|| unreachable!("channel_clause child"));
        let cspan = span_of(&cl);
        let rule = cl.as_rule();
        let mut j = cl.into_inner().filter(|x| !is_punct(x.as_rule()));
        clauses.push(match rule {
            Rule::edge => {
                let producer = ident(j.next().unwrap_or_else(|| unreachable!("edge producer")));
                let consumer = ident(j.next().unwrap_or_else(|| unreachable!("edge consumer")));
                let arrival =
                    build_arrival(j.next().unwrap_or_else(|| unreachable!("edge arrival")), d);
                ChannelClause::Edge {
                    producer,
                    consumer,
                    arrival,
                    span: cspan,
                }
            }
            Rule::empty_by => {
                let role = ident(j.next().unwrap_or_else(|| unreachable!("empty_by role")));
                let arrival = build_arrival(
                    j.next().unwrap_or_else(|| unreachable!("empty_by arrival")),
                    d,
                );
                ChannelClause::EmptyBy {
                    role,
                    arrival,
                    span: cspan,
                }
            }
            Rule::shares_empty => ChannelClause::SharesEmpty(
                ident(j.next().unwrap_or_else(|| unreachable!("shares_empty"))),
                cspan,
            ),
            Rule::reinit_clause => ChannelClause::Reinit(
                ident(j.next().unwrap_or_else(|| unreachable!("reinit"))),
                cspan,
            ),
            Rule::drain_clause => ChannelClause::Drain(cspan),
            Rule::early_exit_clause => {
                let role = ident(j.next().unwrap_or_else(|| unreachable!("early_exit role")));
                let edge = j.next().unwrap_or_else(|| unreachable!("early_exit edge"));
                ChannelClause::EarlyExit {
                    role,
                    empty: edge.as_str().starts_with("empty"),
                    span: cspan,
                }
            }
            r => unreachable!("{r:?} in build_channel"),
        });
    }
    Channel {
        name,
        storage,
        storage_span,
        clauses,
        span,
    }
}

pub(super) fn build_sem<'a>(
    mut i: impl Iterator<Item = Pair<'a, Rule>>,
    span: Span,
    d: &mut Diags,
) -> Sem {
    let name = ident(i.next().unwrap_or_else(|| unreachable!("sem name")));
    let producer = ident(i.next().unwrap_or_else(|| unreachable!("sem producer")));
    let consumer = ident(i.next().unwrap_or_else(|| unreachable!("sem consumer")));
    let mut arrival = None;
    let mut clauses = Vec::new();
    for c in i {
        match c.as_rule() {
            Rule::arrival => arrival = Some(build_arrival(c, d)),
            Rule::sem_clause => {
                let cl = c
                    .into_inner()
                    .next()
                    .unwrap_or_else(|| unreachable!("sem_clause child"));
                let cspan = span_of(&cl);
                clauses.push(match cl.as_rule() {
                    Rule::sem_count => {
                        let e = cl
                            .into_inner()
                            .next()
                            .unwrap_or_else(|| unreachable!("count expr"));
                        SemClause::Count(build_expr(e, d), cspan)
                    }
                    Rule::reinit_clause => {
                        let r = cl
                            .into_inner()
                            .next()
                            .unwrap_or_else(|| unreachable!("reinit role"));
                        SemClause::Reinit(ident(r), cspan)
                    }
                    Rule::no_reinit => SemClause::NoReinit(cspan),
                    Rule::sem_when => {
                        let w = cl
                            .into_inner()
                            .next()
                            .unwrap_or_else(|| unreachable!("when word"));
                        SemClause::At {
                            end: w.as_str().starts_with("end"),
                            span: cspan,
                        }
                    }
                    r => unreachable!("{r:?} in build_sem"),
                });
            }
            r => unreachable!("{r:?} in build_sem"),
        }
    }
    Sem {
        name,
        producer,
        consumer,
        arrival,
        clauses,
        span,
    }
}

pub(super) fn build_role_binding(p: Pair<'_, Rule>, d: &mut Diags) -> Option<RoleBinding> {
    let span = span_of(&p);
    let mut i = p.into_inner();
    let role = ident(i.next()?);
    let ws = i.next()?;
    let mut warps = ws.into_inner().map(|w| {
        let s = span_of(&w);
        let v = parse_int(&w.as_str()[1..], s, d);
        Spanned::new(u32::try_from(v).unwrap_or(u32::MAX), s)
    });
    let first = warps.next()?;
    let last = warps.next().unwrap_or_else(|| first.clone());
    Some(RoleBinding {
        role,
        first,
        last,
        span,
    })
}

pub(super) fn build_barrier<'a>(
    mut i: impl Iterator<Item = Pair<'a, Rule>>,
    span: Span,
    d: &mut Diags,
) -> Barrier {
    let name = ident(i.next().unwrap_or_else(|| unreachable!("barrier name")));
    let id = build_expr(i.next().unwrap_or_else(|| unreachable!("barrier id")), d);
    let threads = build_expr(
        i.next().unwrap_or_else(|| unreachable!("barrier threads")),
        d,
    );
    let by = i.next().map(ident);
    Barrier {
        name,
        id,
        threads,
        by,
        span,
    }
}
