//! What `mpkc wire` renders, against the generated files and without an MPK tree: the
//! registration it writes states what the unit's `.cuh` states, an `inout` tensor is an input
//! (and again an output of MPK's graph),
//! the outputs a layer allocates zeroed, and `mpkc build`'s wiring snippet holds every piece.

use mpkc::driver::build::generate_all;
use mpkc::driver::{check_sources_with, Source};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use mpkc::wire::UnitFacts;
use std::path::Path;

#[path = "support/stdlib_units.rs"]
mod stdlib_units;
use stdlib_units::{stdlib_checked, stdlib_units};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The registration in task_register.cc and the `Registration` struct of the unit's generated
/// `.cuh` state the same page mode, automatic page steps and role bodies.
#[test]
fn the_wired_registration_matches_the_generated_registration_struct() {
    let checked = stdlib_checked();
    let outputs = generate_all(&checked);
    let mut seen = 0;
    for u in stdlib_units() {
        let out = outputs.iter().find(|o| o.unit == u.unit).unwrap();
        let cuh = out
            .files
            .iter()
            .find(|f| f.name == format!("{}.cuh", u.unit))
            .unwrap();
        let member = |name: &str| {
            let key = format!("static constexpr {name} = ");
            let at = cuh
                .text
                .find(&key)
                .unwrap_or_else(|| panic!("{}: no `{key}`", u.unit));
            cuh.text[at + key.len()..]
                .split(';')
                .next()
                .unwrap()
                .to_string()
        };
        let r = &u.registration;
        assert_eq!(
            member("int kPageMode"),
            r.page_mode.to_string(),
            "{}",
            u.unit
        );
        assert_eq!(
            member("bool kAutoLoaderPageLifecycle"),
            r.auto_loader_page_lifecycle.to_string()
        );
        assert_eq!(
            member("bool kAutoConsumerFinish"),
            r.auto_consumer_finish.to_string()
        );
        assert_eq!(member("int kTaskType"), u.task_id.to_string());
        for (role, body) in r.roles() {
            let calls = cuh
                .text
                .contains(&format!("::kernel::{}::{role}(task_desc", u.unit));
            assert_eq!(calls, body, "{}: the .cuh's {role} entry point", u.unit);
        }
        seen += 1;
    }
    assert!(seen > 0);
}

/// An `inout` tensor is an input of the registration's split (the kernel reads and writes it
/// through `input_ptrs`) and, for MPK's graph, an output again after the `out` tensors: MPK's
/// annotated graph binds an edge from the most recent task with a tensor among its *outputs*
/// (src/kernel/annotated_graph.cc, "most-recent-writer rule"), so an in-place update through an
/// input slot alone would leave a later reader racing it. The in-place kv_a norm registers two
/// inputs and its `x` again as its one output; `add_rmsnorm` its `y`, then its residual.
#[test]
fn an_inout_tensor_is_an_input_and_again_an_output_of_the_graph() {
    let units = stdlib_units();
    let u = units
        .iter()
        .find(|u| u.unit == "qkv_a_norm_kv_a")
        .expect("the dsv3 kv_a norm is wired");
    assert_eq!(u.inputs, ["x", "w"]);
    assert!(u.outputs.is_empty(), "{:?}", u.outputs);
    assert_eq!(u.written_inputs, ["x"]);
    assert_eq!(u.mpk_outputs(), ["x"]);
    let def = mpkc::wire::pieces::definition(u);
    assert!(def.contains("int num_inputs = 2;"), "{def}");
    assert!(def.contains("int num_outputs = 1;"), "{def}");
    assert!(mpkc::wire::pieces::graph_branch(u).contains("std::make_tuple(2, 1, "));
    let py = mpkc::wire::pieces::layer(u);
    assert!(
        py.contains("self.kn_graph.customized([x, w, x], tb_graph)"),
        "{py}"
    );
    assert_eq!(py.matches("tb_graph.new_input(x, ").count(), 2, "{py}");
    // The method takes each tensor once.
    assert_eq!(py.matches("        x: DTensor,").count(), 1, "{py}");
    let add = units
        .iter()
        .find(|u| u.unit == "add_rmsnorm")
        .expect("add_rmsnorm is wired");
    assert_eq!(
        add.mpk_outputs().last().map(String::as_str),
        Some("residual")
    );
    assert_eq!(add.mpk_outputs().len(), add.outputs.len() + 1);
}

/// The outputs a layer method says to allocate zeroed: `split_k bf16`'s counters (not its
/// partials, which each split overwrites) and `split_k atomic`'s counters and accumulator (every
/// split adds to it, the last split of each tile zeroes it).
#[test]
fn the_zeroed_outputs_are_the_counters_and_the_atomic_accumulator() {
    let path = "examples/linear_bf16_splitk_atomic_m64.mpk";
    let atomic = Source {
        path: path.into(),
        text: std::fs::read_to_string(root().join(path)).unwrap(),
    };
    let checked = check_sources_with(
        &[atomic],
        |_| SemaOptions::default(),
        &CheckOptions::default(),
    );
    let router = checked[0]
        .tasks
        .iter()
        .find(|t| t.ir.unit_name() == "linear_bf16_splitk_atomic_m64_router")
        .expect("the router instance checks");
    let facts = UnitFacts::of(router).unwrap();
    let zeroed: Vec<&str> = facts.zeroed.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(zeroed, ["P", "T"]);
    let ordered = stdlib_units()
        .into_iter()
        .find(|u| u.unit == "linear_bf16_splitk_sum_q_b")
        .expect("the stdlib's split sum");
    let zeroed: Vec<&str> = ordered.zeroed.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(zeroed, ["T"]);
}

/// `mpkc build`'s `<unit>_register.cc` holds every piece `mpkc wire` places, the same text
/// (one renderer on the same facts; a derived reduce under its parent's reduce TaskType), for
/// every stdlib unit wire registers; helpers and derived reduces without a TaskType get none.
#[test]
fn the_build_s_wiring_snippet_holds_the_pieces_wire_places() {
    use mpkc::wire::pieces;
    let checked = stdlib_checked();
    let outputs = generate_all(&checked);
    let units = stdlib_units();
    for u in &units {
        let out = outputs
            .iter()
            .find(|o| o.unit == u.unit)
            .unwrap_or_else(|| panic!("{}: not generated", u.unit));
        let snippet = out
            .files
            .iter()
            .find(|f| f.name == format!("{}_register.cc", u.unit))
            .unwrap_or_else(|| panic!("{}: no _register.cc", u.unit));
        for (what, piece) in [
            ("enum", pieces::enum_line(u)),
            ("declaration", pieces::declaration(u)),
            ("include", pieces::include(u)),
            ("definition", pieces::definition(u)),
            ("graph", pieces::graph_branch(u)),
            ("task_offset", pieces::task_offset(u, "      ")),
            ("name", pieces::name_entry(u)),
            ("layer", pieces::layer(u)),
        ] {
            assert!(
                snippet.text.contains(&piece),
                "{}: the {what} piece is not in the snippet:\n{piece}\n---\n{}",
                u.unit,
                snippet.text
            );
        }
    }
    // No snippet where wire registers nothing.
    for o in &outputs {
        let t = &checked[o.source].tasks[o.task];
        let wired = units.iter().any(|u| u.unit == o.unit);
        let has = o.files.iter().any(|f| f.name.ends_with("_register.cc"));
        if t.ir.family == mpkc::ir::Family::Helper || t.ir.task_id.is_none() {
            assert!(!has, "{}", o.unit);
        }
        if has {
            assert!(wired, "{}: a snippet for a unit wire leaves out", o.unit);
        }
    }
}
