//! The symbols of a contract file and every place they are named: what go-to-definition, find
//! references, the outline and completion read. Built from the AST (byte spans), resolved per
//! task: a name in an expression is a param (or a named barrier), a channel's storage is a
//! region, a TMA arrival names tensors, a role position names a role of `roles`.

use crate::front::ast::{
    self, Arrival, ChannelClause, ChannelStorage, Expr, ExprKind, GranValue, Ident, Item,
    RegionAttr, SemClause, TensorRole, Value,
};
use crate::span::Span;
use std::collections::HashMap;

/// What a symbol is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymKind {
    /// `task NAME`.
    Task,
    /// `param`.
    Param,
    /// `tensor`.
    Tensor,
    /// `region` (a stage array is one symbol).
    Region,
    /// `channel`.
    Channel,
    /// `sem`.
    Sem,
    /// A role bound in `roles`.
    Role,
    /// `barrier`.
    Barrier,
    /// `instance`.
    Instance,
}

impl SymKind {
    /// The keyword that declares it.
    pub fn keyword(self) -> &'static str {
        match self {
            SymKind::Task => "task",
            SymKind::Param => "param",
            SymKind::Tensor => "tensor",
            SymKind::Region => "region",
            SymKind::Channel => "channel",
            SymKind::Sem => "sem",
            SymKind::Role => "role",
            SymKind::Barrier => "barrier",
            SymKind::Instance => "instance",
        }
    }
}

/// A declared name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Kind.
    pub kind: SymKind,
    /// Name as written.
    pub name: String,
    /// The name's span in the declaration.
    pub name_span: Span,
    /// The whole declaration.
    pub span: Span,
    /// Index of the task it belongs to (for a task, its own index).
    pub task: usize,
}

/// Every symbol of a file and every reference to one.
#[derive(Clone, Debug, Default)]
pub struct Index {
    /// Symbols in source order.
    pub symbols: Vec<Symbol>,
    /// `(symbol, span of the name where it is used)`, declarations excluded.
    pub refs: Vec<(usize, Span)>,
}

impl Index {
    /// The symbol whose declaration name or one of whose references covers byte `offset`.
    pub fn at(&self, offset: usize) -> Option<usize> {
        let covers = |s: &Span| s.start <= offset && offset <= s.end;
        self.symbols
            .iter()
            .position(|s| covers(&s.name_span))
            .or_else(|| self.refs.iter().find(|(_, s)| covers(s)).map(|(i, _)| *i))
    }

    /// The spans naming symbol `i`, declaration first when asked for.
    pub fn occurrences(&self, i: usize, with_declaration: bool) -> Vec<Span> {
        let mut v: Vec<Span> = Vec::new();
        if with_declaration {
            v.push(self.symbols[i].name_span);
        }
        v.extend(self.refs.iter().filter(|(s, _)| *s == i).map(|(_, sp)| *sp));
        v
    }
}

/// Builds the index of `file`.
pub fn build(file: &ast::File) -> Index {
    let mut ix = Index::default();
    for (ti, task) in file.tasks.iter().enumerate() {
        ix.symbols.push(Symbol {
            kind: SymKind::Task,
            name: task.name.node.clone(),
            name_span: task.name.span,
            span: task.span,
            task: ti,
        });
        let first = ix.symbols.len();
        for item in &task.items {
            declare(&mut ix, ti, item);
        }
        let mut by_name = HashMap::new();
        for (i, s) in ix.symbols.iter().enumerate().skip(first) {
            by_name.entry((s.kind, s.name.clone())).or_insert(i);
        }
        let mut r = Resolver {
            ix: &mut ix,
            by_name,
        };
        for item in &task.items {
            r.item(item);
        }
    }
    ix
}

fn declare(ix: &mut Index, task: usize, item: &Item) {
    let mut add = |kind, name: &Ident, span: Span| {
        ix.symbols.push(Symbol {
            kind,
            name: name.node.clone(),
            name_span: name.span,
            span,
            task,
        });
    };
    match item {
        Item::Param(p) => add(SymKind::Param, &p.name, p.span),
        Item::Tensor(t) => add(SymKind::Tensor, &t.name, t.span),
        Item::Region(r) => add(SymKind::Region, &r.name, r.span),
        Item::Channel(c) => add(SymKind::Channel, &c.name, c.span),
        Item::Sem(s) => add(SymKind::Sem, &s.name, s.span),
        Item::Barrier(b) => add(SymKind::Barrier, &b.name, b.span),
        Item::Instance(i) => add(SymKind::Instance, &i.name, i.span),
        Item::Roles(bs, _) => {
            for b in bs {
                add(SymKind::Role, &b.role, b.span);
            }
        }
        _ => {}
    }
}

/// Resolves the names of one task: `by_name` maps a kind and a name to the task's first symbol
/// of that kind with that name, so each reference costs one lookup, not a scan of the task's
/// symbols (a task with `n` declarations that name each other resolves in `O(n)`).
struct Resolver<'a> {
    ix: &'a mut Index,
    by_name: HashMap<(SymKind, String), usize>,
}

impl Resolver<'_> {
    /// Records `name` as a reference to the first symbol of one of `kinds` with that name.
    fn name(&mut self, name: &Ident, kinds: &[SymKind]) {
        let found = kinds
            .iter()
            .find_map(|k| self.by_name.get(&(*k, name.node.clone())).copied());
        if let Some(i) = found {
            self.ix.refs.push((i, name.span));
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Path(p) if p.len() == 1 => {
                self.name(&p[0], &[SymKind::Param, SymKind::Barrier])
            }
            ExprKind::Neg(x) => self.expr(x),
            ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Call(_, args) => args.iter().for_each(|a| self.expr(a)),
            _ => {}
        }
    }

    fn value(&mut self, v: &Value) {
        if let Value::Expr(e) = v {
            self.expr(e);
        }
    }

    fn arrival(&mut self, a: &Arrival) {
        match a {
            Arrival::Tma(ts, _) | Arrival::Bulk(ts, _) => {
                ts.iter().for_each(|t| self.name(t, &[SymKind::Tensor]))
            }
            Arrival::Threads(e, after, _) => {
                self.expr(e);
                if let Some(b) = after {
                    self.name(b, &[SymKind::Barrier]);
                }
            }
            Arrival::Commit(_) => {}
        }
    }

    fn item(&mut self, item: &Item) {
        const ROLE: &[SymKind] = &[SymKind::Role];
        match item {
            Item::Targets(ts, _) => ts
                .iter()
                .filter_map(|t| t.setting.as_ref())
                .for_each(|(_, e)| self.expr(e)),
            Item::TaskId(e, _)
            | Item::ReduceTaskId(e, _)
            | Item::Stages(e, _)
            | Item::Tmem(e, _) => self.expr(e),
            Item::Param(p) => {
                if let Some(r) = &p.range {
                    self.expr(&r.lo);
                    self.expr(&r.hi);
                }
                if let Some(v) = &p.default {
                    self.value(v);
                }
            }
            Item::Tensor(t) => {
                t.dims.iter().for_each(|d| self.expr(d));
                if let Some(TensorRole::ScaleOf(of)) = t.role.as_ref().map(|r| &r.node) {
                    self.name(of, &[SymKind::Tensor]);
                }
                if let Some(b) = t.tma.as_ref().and_then(|m| m.boxes.as_ref()) {
                    b.node.iter().for_each(|d| self.expr(d));
                }
            }
            Item::Require(r) => {
                self.expr(&r.lhs);
                self.expr(&r.rhs);
            }
            Item::Route(r) => {
                self.name(&r.weights, &[SymKind::Tensor]);
                self.name(&r.ids, &[SymKind::Tensor]);
            }
            Item::Tile(dims, _) | Item::SetMaxNReg(dims, _) => {
                dims.iter().for_each(|(_, e)| self.expr(e))
            }
            Item::Mma(m) => m.dims.iter().for_each(|(_, e)| self.expr(e)),
            Item::Region(r) => {
                for a in &r.attrs {
                    match a {
                        RegionAttr::Bytes(e, _)
                        | RegionAttr::Align(e, _)
                        | RegionAttr::Release(e, _)
                        | RegionAttr::Pages(e, _) => self.expr(e),
                        RegionAttr::Holds(members, _) => members
                            .iter()
                            .filter_map(|m| m.count.as_ref())
                            .for_each(|e| self.expr(e)),
                        RegionAttr::Pack(_) | RegionAttr::Contiguous(..) => {}
                    }
                }
            }
            Item::Channel(c) => {
                match &c.storage {
                    ChannelStorage::Region { region, depth } => {
                        self.name(region, &[SymKind::Region]);
                        if let Some(d) = depth {
                            self.expr(d);
                        }
                    }
                    ChannelStorage::Tmem { slots } => self.expr(slots),
                }
                for cl in &c.clauses {
                    match cl {
                        ChannelClause::Edge {
                            producer,
                            consumer,
                            arrival,
                            ..
                        } => {
                            self.name(producer, ROLE);
                            self.name(consumer, ROLE);
                            self.arrival(arrival);
                        }
                        ChannelClause::EmptyBy { role, arrival, .. } => {
                            self.name(role, ROLE);
                            self.arrival(arrival);
                        }
                        ChannelClause::SharesEmpty(ch, _) => self.name(ch, &[SymKind::Channel]),
                        ChannelClause::Reinit(role, _) | ChannelClause::EarlyExit { role, .. } => {
                            self.name(role, ROLE)
                        }
                        ChannelClause::Drain(_) => {}
                    }
                }
            }
            Item::Sem(s) => {
                self.name(&s.producer, ROLE);
                self.name(&s.consumer, ROLE);
                if let Some(a) = &s.arrival {
                    self.arrival(a);
                }
                for cl in &s.clauses {
                    match cl {
                        SemClause::Count(e, _) => self.expr(e),
                        SemClause::Reinit(r, _) => self.name(r, ROLE),
                        SemClause::NoReinit(_) | SemClause::At { .. } => {}
                    }
                }
            }
            Item::Barrier(b) => {
                self.expr(&b.id);
                self.expr(&b.threads);
                if let Some(r) = &b.by {
                    self.name(r, ROLE);
                }
            }
            Item::Body(ast::Body::Template {
                inputs,
                outputs,
                scalars,
                ..
            }) => {
                inputs
                    .iter()
                    .chain(outputs)
                    .for_each(|t| self.name(t, &[SymKind::Tensor]));
                scalars.iter().for_each(|s| self.name(s, &[SymKind::Param]));
            }
            Item::Granularity(g) => {
                for a in &g.args {
                    if let Some(GranValue::Expr(e)) = &a.value {
                        self.expr(e);
                    }
                }
            }
            Item::Instance(i) => {
                for (k, v) in &i.sets {
                    self.name(k, &[SymKind::Param]);
                    self.value(v);
                }
            }
            Item::Epilogue(alts, _) => alts
                .iter()
                .filter_map(|(_, _, with)| with.as_ref())
                .for_each(|b| self.name(b, &[SymKind::Barrier])),
            Item::Family(_)
            | Item::Roles(..)
            | Item::Body(_)
            | Item::LoaderBody(_)
            | Item::Lever(_)
            | Item::Reference(_)
            | Item::Use(_) => {}
        }
    }
}
