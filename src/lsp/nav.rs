//! Go to definition, find references, the outline (document symbols) and completion, from the
//! document's symbol index.

use super::document::Document;
use super::index::SymKind;
use lsp_types::{CompletionItem, CompletionItemKind, DocumentSymbol, Location, SymbolKind, Uri};
use std::collections::HashMap;

/// The declaration of the symbol at byte `offset`.
pub fn definition(doc: &Document, uri: &Uri, offset: usize) -> Option<Location> {
    let i = doc.index.at(offset)?;
    Some(Location {
        uri: uri.clone(),
        range: doc.lines.range(&doc.text, doc.index.symbols[i].name_span),
    })
}

/// Every place the symbol at byte `offset` is named.
pub fn references(
    doc: &Document,
    uri: &Uri,
    offset: usize,
    with_declaration: bool,
) -> Vec<Location> {
    let Some(i) = doc.index.at(offset) else {
        return Vec::new();
    };
    doc.index
        .occurrences(i, with_declaration)
        .into_iter()
        .map(|s| Location {
            uri: uri.clone(),
            range: doc.lines.range(&doc.text, s),
        })
        .collect()
}

fn lsp_kind(k: SymKind) -> SymbolKind {
    match k {
        SymKind::Task => SymbolKind::MODULE,
        SymKind::Param => SymbolKind::CONSTANT,
        SymKind::Tensor => SymbolKind::VARIABLE,
        SymKind::Region => SymbolKind::STRUCT,
        SymKind::Channel => SymbolKind::INTERFACE,
        SymKind::Sem => SymbolKind::EVENT,
        SymKind::Role => SymbolKind::CLASS,
        SymKind::Barrier => SymbolKind::OPERATOR,
        SymKind::Instance => SymbolKind::OBJECT,
    }
}

/// The outline: each task with its declarations as children.
#[allow(deprecated)] // `DocumentSymbol::deprecated` must be spelled out
pub fn document_symbols(doc: &Document) -> Vec<DocumentSymbol> {
    let sym = |s: &super::index::Symbol, children: Option<Vec<DocumentSymbol>>| DocumentSymbol {
        name: s.name.clone(),
        detail: Some(s.kind.keyword().to_string()),
        kind: lsp_kind(s.kind),
        tags: None,
        deprecated: None,
        range: doc.lines.range(&doc.text, s.span),
        selection_range: doc.lines.range(&doc.text, s.name_span),
        children,
    };
    // One pass: each declaration goes to its task's children (symbols are in source order, a
    // task before its declarations), so the outline costs O(symbols), not O(tasks × symbols).
    let mut outline: Vec<(usize, Vec<DocumentSymbol>)> = Vec::new();
    let mut task_of: HashMap<usize, usize> = HashMap::new();
    for (i, s) in doc.index.symbols.iter().enumerate() {
        if s.kind == SymKind::Task {
            task_of.insert(s.task, outline.len());
            outline.push((i, Vec::new()));
        } else if let Some(&t) = task_of.get(&s.task) {
            outline[t].1.push(sym(s, None));
        }
    }
    outline
        .into_iter()
        .map(|(i, kids)| sym(&doc.index.symbols[i], Some(kids)))
        .collect()
}

/// Words of the language other than the item keywords ([`crate::front::ITEM_KEYWORDS`]), for
/// completion.
const KEYWORDS: &[&str] = &[
    "task",
    "pipeline",
    "consumer",
    "consumer-monolith",
    "consumer-no-smem",
    "helper",
    "sm_100a",
    "sm_90a",
    "bf16",
    "f16",
    "f32",
    "e4m3",
    "e5m2",
    "ue8m0",
    "i32",
    "i64",
    "u8",
    "int",
    "f32",
    "bool",
    "runtime",
    "in",
    "step",
    "out",
    "inout",
    "view",
    "stride",
    "offset",
    "paged",
    "page",
    "max_context",
    "requests",
    "weight",
    "activation",
    "residual",
    "output",
    "partials",
    "counters",
    "index",
    "grid_barrier",
    "scratch",
    "per",
    "slot",
    "sum",
    "scale",
    "of",
    "holds",
    "mbarrier",
    "u64",
    "tmem_addr",
    "after",
    "with",
    "from",
    "tma",
    "box",
    "swizzle",
    "l2",
    "evict_first",
    "evict_last",
    "evict_normal",
    "bytes",
    "align",
    "pack",
    "release",
    "pages",
    "contiguous",
    "stage",
    "loader",
    "launcher",
    "storer",
    "empty",
    "by",
    "shares_empty",
    "reinit",
    "no_reinit",
    "count",
    "threads",
    "commit",
    "bulk",
    "named",
    "cuda",
    "per_tile",
    "grid_wide",
    "tiles_per_task",
    "tcgen05",
    "wgmma",
    "align_up",
    "ceil_div",
    "min",
    "max",
    "drain",
    "at",
    "start",
    "end",
    "slots",
    "cols",
    "default",
    "on",
    "off",
];

/// Completion: the keywords, then every name the file declares.
pub fn completion(doc: &Document) -> Vec<CompletionItem> {
    let mut items: Vec<CompletionItem> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for s in &doc.index.symbols {
        if seen.insert(s.name.clone()) {
            items.push(CompletionItem {
                label: s.name.clone(),
                kind: Some(match s.kind {
                    SymKind::Param => CompletionItemKind::CONSTANT,
                    SymKind::Tensor => CompletionItemKind::VARIABLE,
                    SymKind::Region => CompletionItemKind::STRUCT,
                    SymKind::Channel | SymKind::Sem => CompletionItemKind::EVENT,
                    _ => CompletionItemKind::REFERENCE,
                }),
                detail: Some(s.kind.keyword().to_string()),
                ..Default::default()
            });
        }
    }
    for k in crate::front::ITEM_KEYWORDS.iter().chain(KEYWORDS) {
        if seen.insert((*k).to_string()) {
            items.push(CompletionItem {
                label: (*k).to_string(),
                kind: Some(CompletionItemKind::KEYWORD),
                ..Default::default()
            });
        }
    }
    items
}
