//! pest over `grammar/mpk.pest`, and the mapping of pest's errors to diagnostics.

use crate::diag::{codes, Diagnostic};
use crate::span::Span;
use pest::error::{ErrorVariant, InputLocation};
use pest_derive::Parser;

/// The generated pest parser.
///
/// The path is the crate root's `grammar/mpk.pest`: pest_generator tries a grammar path
/// relative to `CARGO_MANIFEST_DIR` before `CARGO_MANIFEST_DIR/src`, so the old
/// `../grammar/mpk.pest` compiled the file of the clone's *parent* folder where one existed
/// (a stale grammar, silently; a new user's clone, 2026-12-05).
#[derive(Parser)]
#[grammar = "grammar/mpk.pest"]
pub(crate) struct MpkParser;

/// The phrase used for a grammar rule in syntax errors (pest_meta's `renamed_rules` habit).
pub(crate) fn rule_phrase(rule: Rule) -> &'static str {
    match rule {
        Rule::EOI => "end of file",
        Rule::ident => "a name",
        Rule::int_lit => "an integer",
        Rule::float_lit => "a number",
        Rule::string_lit => "a string",
        Rule::bool_lit => "`true` or `false`",
        Rule::lbrace => "`{`",
        Rule::rbrace => "`}`",
        Rule::lparen => "`(`",
        Rule::rparen => "`)`",
        Rule::lbracket => "`[`",
        Rule::rbracket => "`]`",
        Rule::comma => "`,`",
        Rule::colon => "`:`",
        Rule::semi => "`;`",
        Rule::equals => "`=`",
        Rule::arrow => "`->`",
        Rule::range_incl => "`..=`",
        Rule::range_excl => "`..`",
        Rule::kw_task | Rule::rec_task_head => "`task`",
        Rule::expr | Rule::primary | Rule::path | Rule::call | Rule::paren_expr => "an expression",
        Rule::neg => "`-`",
        Rule::add | Rule::sub | Rule::mul | Rule::div | Rule::rem => "an operator",
        Rule::value | Rule::value_text => "a value",
        Rule::value_end => "the end of the value",
        Rule::family_decl | Rule::kw_family => "`family`",
        Rule::targets_decl | Rule::kw_targets => "`targets`",
        Rule::task_id_decl | Rule::kw_task_id => "`task_id`",
        Rule::reduce_task_id_decl | Rule::kw_reduce_task_id => "`reduce_task_id`",
        Rule::param_decl | Rule::kw_param => "`param`",
        Rule::tensor_decl | Rule::kw_tensor => "`tensor`",
        Rule::tile_decl | Rule::kw_tile => "`tile`",
        Rule::stages_decl | Rule::kw_stages => "`stages`",
        Rule::mma_decl | Rule::kw_mma => "`mma`",
        Rule::tmem_decl | Rule::kw_tmem => "`tmem`",
        Rule::region_decl | Rule::kw_region => "`region`",
        Rule::channel_decl | Rule::kw_channel => "`channel`",
        Rule::sem_decl | Rule::kw_sem => "`sem`",
        Rule::roles_decl | Rule::kw_roles => "`roles`",
        Rule::barrier_decl | Rule::kw_barrier => "`barrier`",
        Rule::body_decl | Rule::kw_body => "`body`",
        Rule::epilogue_decl | Rule::kw_epilogue => "`epilogue`",
        Rule::granularity_decl | Rule::kw_granularity => "`granularity`",
        Rule::lever_decl | Rule::kw_lever => "`lever`",
        Rule::instance_decl | Rule::kw_instance => "`instance`",
        Rule::setmaxnreg_decl | Rule::kw_setmaxnreg => "`setmaxnreg`",
        Rule::reference_decl | Rule::kw_reference => "`reference`",
        Rule::kw_fn => "`fn`",
        Rule::use_decl | Rule::kw_use => "`use`",
        Rule::kw_from => "`from`",
        Rule::route_decl | Rule::kw_route => "`route`",
        Rule::require_decl | Rule::kw_require => "`require`",
        Rule::cmp_op => "a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`)",
        Rule::kw_by => "`by`",
        Rule::route_mode
        | Rule::route_per_slot
        | Rule::route_sum_slots
        | Rule::kw_per
        | Rule::kw_slot
        | Rule::kw_sum
        | Rule::kw_slots => "`per slot` or `sum slots`",
        Rule::ref_tol | Rule::ref_key => "a tolerance like `rel_l2 = 1e-2`",
        Rule::direction => "`in`, `out` or `inout`",
        Rule::tensor_role | Rule::role_word | Rule::role_scale | Rule::kw_scale | Rule::kw_of => {
            "a tensor role (`weight`, `activation`, `residual`, `output`, `partials`, `counters`, `index`, `scale of T`)"
        }
        Rule::param_range | Rule::kw_in => "`in LO..=HI`",
        Rule::kw_step => "`step S`",
        Rule::tma_spec | Rule::kw_tma => "`tma(...)`",
        Rule::paged_spec | Rule::kw_paged => "`paged(...)`",
        Rule::paged_opt
        | Rule::paged_page
        | Rule::paged_max_context
        | Rule::paged_requests
        | Rule::kw_page
        | Rule::kw_max_context
        | Rule::kw_requests => "`page`, `max_context` or `requests`",
        Rule::tma_opt | Rule::tma_box | Rule::tma_swizzle | Rule::tma_l2 => "`box`, `swizzle` or `l2`",
        Rule::swizzle_mode => "`128B`, `64B`, `32B` or `none`",
        Rule::tile_dim => "a tile dimension like `M 128`",
        Rule::mma_dim | Rule::mma_dim_tok | Rule::mma_axis => "an MMA extent like `m128`",
        Rule::stage_suffix | Rule::kw_stage => "`[stage]`",
        Rule::attr_holds | Rule::kw_holds | Rule::held | Rule::held_name => {
            "a member like `mbarrier[6]`, `tmem_addr` or `f32[64] amax`"
        }
        Rule::region_attr
        | Rule::attr_bytes
        | Rule::attr_align
        | Rule::attr_pack
        | Rule::attr_release
        | Rule::attr_pages
        | Rule::attr_contiguous => "a region attribute (`holds`, `bytes`, `align`, `pack`, `release`, `pages`, `contiguous`)",
        Rule::channel_storage | Rule::tmem_slots | Rule::region_ring => "a region ring or `tmem slots N`",
        Rule::channel_clause
        | Rule::edge
        | Rule::empty_by
        | Rule::shares_empty
        | Rule::reinit_clause
        | Rule::drain_clause
        | Rule::early_exit_clause
        | Rule::edge_name => {
            "a channel clause (`P -> C (arrival)`, `empty by R (arrival)`, `shares_empty C`, `reinit R`, `drain`, `early_exit R arrives empty`)"
        }
        Rule::arrival
        | Rule::arrival_tma
        | Rule::arrival_bulk
        | Rule::kw_bulk
        | Rule::arrival_commit
        | Rule::arrival_threads => {
            "an arrival kind (`(tma X)`, `(bulk X)`, `(commit)`, `(threads N)`)"
        }
        Rule::sem_clause | Rule::sem_count | Rule::no_reinit | Rule::sem_when | Rule::when_word => {
            "`count N`, `reinit ROLE`, `no_reinit` or `at start|end`"
        }
        Rule::role_binding => "a role binding like `loader W4`",
        Rule::warp_set | Rule::warp => "a warp like `W4` or `W0..W3`",
        Rule::body_template | Rule::ident_list => "a body template like `rmsnorm(x, w -> y; eps)`",
        Rule::body_cuda | Rule::cuda_block => "`cuda { ... }`",
        Rule::body_loader | Rule::kw_loader => "`loader cuda { ... }`",
        Rule::epilogue_alt | Rule::kw_with => "an epilogue",
        Rule::gran_arg => "a granularity argument",
        Rule::on_off => "`on` or `off`",
        Rule::param_set => "`name = value`",
        Rule::target_item => "a target like `sm_100a`",
        Rule::family_name => "a family name",
        Rule::task => "a task",
        _ => "a token",
    }
}

/// Converts a pest error on `src` into an `E0001` diagnostic with a span and the expected
/// tokens. A position error marks the whole character at the position (none at the end of the
/// text), so the span ends on a character boundary.
pub(crate) fn syntax_diagnostic(err: &pest::error::Error<Rule>, src: &str) -> Diagnostic {
    let src_len = src.len();
    let span = match err.location {
        InputLocation::Pos(p) => {
            let width = src
                .get(p..)
                .and_then(|s| s.chars().next())
                .map_or(0, char::len_utf8);
            Span::new(p, p + width).widen_to_chars(src)
        }
        InputLocation::Span((a, b)) => Span::new(a, b).widen_to_chars(src),
    };
    let (message, label, help) = match &err.variant {
        ErrorVariant::ParsingError {
            positives,
            negatives,
        } => {
            let mut expected: Vec<&str> = positives.iter().map(|r| rule_phrase(*r)).collect();
            expected.sort_unstable();
            expected.dedup();
            let n_items = expected
                .iter()
                .filter(|e| ITEM_KEYWORDS.contains(e))
                .count();
            if n_items >= 4 {
                expected.retain(|e| !ITEM_KEYWORDS.contains(e));
                expected.push("an item (`param`, `tensor`, `region`, …)");
            }
            let exp = join_or(&expected);
            let msg = if expected.is_empty() {
                let un: Vec<&str> = negatives.iter().map(|r| rule_phrase(*r)).collect();
                format!("unexpected {}", join_or(&un))
            } else {
                format!("expected {exp}")
            };
            let help = if span.start >= src_len {
                "the file ends early: close every `{` of the task".to_string()
            } else {
                "see the language tour in the README for the item's form".to_string()
            };
            (msg.clone(), msg, help)
        }
        ErrorVariant::CustomError { message } => (message.clone(), message.clone(), String::new()),
    };
    let mut d =
        Diagnostic::error(codes::SYNTAX, format!("syntax error: {message}")).primary(span, label);
    if !help.is_empty() {
        d = d.help(help);
    }
    super::non_ascii::explain_non_ascii(super::bom::explain_stray(d, src), src)
}

/// Phrases of the item keywords, collapsed into one phrase when many are expected at once.
const ITEM_KEYWORDS: &[&str] = &[
    "`family`",
    "`targets`",
    "`task_id`",
    "`param`",
    "`tensor`",
    "`tile`",
    "`stages`",
    "`mma`",
    "`tmem`",
    "`region`",
    "`channel`",
    "`sem`",
    "`roles`",
    "`barrier`",
    "`body`",
    "`epilogue`",
    "`granularity`",
    "`lever`",
    "`instance`",
    "`setmaxnreg`",
    "`reduce_task_id`",
    "`reference`",
    "`use`",
    "`route`",
    "`require`",
];

fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [a, b] => format!("{a} or {b}"),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    /// The parser was generated from this crate's own grammar file, not a same-named file
    /// elsewhere that pest's path lookup reached first.
    #[test]
    fn the_parser_is_generated_from_the_crates_grammar() {
        let ours = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/grammar/mpk.pest"));
        assert_eq!(super::_PEST_GRAMMAR_MpkParser, [ours]);
    }
}
