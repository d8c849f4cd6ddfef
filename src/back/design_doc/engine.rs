//! "Engine": which family runs the task, on which engine per target, and why, step by step —
//! from the pipeline's linear binding and role programs, or from a consumer-only family's body
//! and regions.

use crate::ir::{BodyIr, Family, Target};
use crate::lower::{Epilogue, LinearMath, Operands};
use crate::valid::CheckedTask;
use std::fmt::Write as _;

/// Writes the "Engine" section of `task`.
pub(super) fn write(s: &mut String, task: &CheckedTask) {
    let _ = writeln!(s, "## Engine\n");
    match (task.ir.family, task.linear()) {
        (Family::Pipeline, Some(p)) => pipeline(s, task, p),
        (Family::Pipeline, None) => protocol_only(s, task),
        (Family::Helper, _) => helper(s, task),
        (f, _) => consumer_only(s, task, f),
    }
}

/// A helper (family E): its function, as each caller's kernel holds it (docs/language.md,
/// "Helpers").
fn helper(s: &mut String, task: &CheckedTask) {
    let _ = writeln!(
        s,
        "Family E (helper): a sub-op `__device__` function, not a task of its own: a consumer task that writes \
`use {} from \"…\"` gets it in its kernel (`helper_{}::{}`, the params as its `use` binds them) and calls it from its \
inline body by name; its regions and named barriers join that task's plan and registry as `{}_<name>`. mpkc generates \
no kernel and no registration for it, only its spec header and this document.\n",
        task.ir.name, task.ir.name, task.ir.name, task.ir.name
    );
    let lines = crate::back::helper::contract_lines(&task.ir);
    let _ = writeln!(s, "```cuda\n{}\n```\n", lines[0]);
    for l in &lines[1..] {
        let _ = writeln!(s, "- {l}");
    }
    let _ = writeln!(s);
}

/// The MMAs a stage issues on `target`, as its role program states them.
fn stage_mma(task: &CheckedTask, target: Target) -> Option<crate::lower::MmaShape> {
    task.program(target).and_then(|p| p.stage_mma())
}

fn protocol_only(s: &mut String, task: &CheckedTask) {
    let targets: Vec<String> = task.programs.iter().map(|p| p.target.to_string()).collect();
    let _ = writeln!(
        s,
        "Family A (pipeline), protocol only: the role programs of {} below passed the protocol model check, \
but the linear lowering does not express this contract (its MMA, tensors or epilogue are not the linear engine's), \
so mpkc generates no kernel for it: only its spec header, whose tables state the protocol.\n",
        targets.join(" and ")
    );
}

fn consumer_only(s: &mut String, task: &CheckedTask, family: Family) {
    let ir = &task.ir;
    let body = match (&ir.body, &task.binding) {
        (_, Some(b)) => format!("the body template `{}` ({})", b.sig.name, b.body_path),
        (Some(BodyIr::Cuda { .. }), _) => "the contract's inline CUDA body".to_string(),
        _ => "no body".to_string(),
    };
    let targets: Vec<String> = ir.targets.iter().map(|t| t.target.to_string()).collect();
    let rings: Vec<String> = ir
        .channels
        .values()
        .filter(|c| crate::valid::rings::is_consumer_ring(c))
        .map(|c| format!("`{}` ({} slots)", c.name, c.depth))
        .collect();
    let handoff = crate::plan::sems::needs_page_handoff(ir);
    let others = if rings.is_empty() && handoff {
        "The loader warp (W4) runs a generated body, the page prefix itself: once its lanes have waited the pages the task uses, its lane 0 arrives `pages_ready`, which the consumer body waits before it touches shared memory; then its lanes wait and free the unused pages. No other role has a body.".to_string()
    } else if rings.is_empty() {
        "No other role has a body: the runtime's loader prefix waits every page and frees them all, the task using none.".to_string()
    } else {
        format!(
            "The loader warp (W4) runs a generated body, the page prefix itself: once its lanes have waited the pages the task uses, its lane 0 arrives `pages_ready`, waits the task's dependency (`SEM_DEP_READY`, then the async-proxy fence) and runs the contract's loader body, which fills the consumer ring{} {} with TMA bulk copies; then its lanes wait and free the unused pages.",
            if rings.len() == 1 { "" } else { "s" },
            rings.join(", ")
        )
    };
    let _ = writeln!(
        s,
        "Family {} ({}) on {}: one `<unit>.cuh` for every target; {body} runs on the consumer warpgroup (W0-W3, threads 0..127), \
after the runtime's dependency prefix and before its page suffix, which frees the pages the task uses. {others}\n",
        family.letter(),
        family.as_str(),
        targets.join(" and ")
    );
    let _ = writeln!(s, "Why, step by step:\n");
    if rings.is_empty() {
        let _ = writeln!(
            s,
            "1. Its role program is the consumer's body{}: no asynchronous tensor-core MMA (tcgen05, wgmma; a body's warp `mma.sync` needs no launcher), no TMA ring and no op semaphore of its own (E0011), \
{}",
            if handoff { " and the loader's page hand-off" } else { " alone" },
            if handoff {
                "so a launcher would have nothing to do and the consumer-only idiom applies (contract doc §4), with one loader duty: its one ordinal, `pages_ready`, is mpkc's page hand-off, arrived by the loader's generated body once it has waited the pages the task uses (it waits and frees the unused ones after), and waited by the consumer body."
            } else {
                "so a loader and a launcher would have nothing to do and the consumer-only idiom applies (contract doc §4)."
            }
        );
    } else {
        let _ = writeln!(
            s,
            "1. Its role program is the consumer's body and the loader's fills of its consumer rings (docs/language.md, \
\"Consumer rings\"): no asynchronous tensor-core MMA (tcgen05, wgmma), so no launcher; the rings' barriers are op ordinals the model check runs on, \
every number of uses from 0."
        );
    }
    let smem = match family {
        Family::ConsumerNoSmem => "It keeps nothing in shared memory: family D, no regions and no dynamic SMEM (I-S11).".to_string(),
        Family::ConsumerMonolith => format!(
            "It keeps its data in one monolithic region with offsets of its own ({} bytes): family C.",
            ir.region_bytes()
        ),
        _ => format!(
            "It keeps its data in {} planner region(s) ({} bytes), each addressed only through `smem_region_offset` (I-S9): family B.",
            ir.regions.len(),
            ir.region_bytes()
        ),
    };
    let _ = writeln!(s, "2. {smem}");
    let tasks = match ir.granularity {
        crate::ir::GranularityIr::GridWide { .. } => "One task per worker (grid-wide)".to_string(),
        crate::ir::GranularityIr::PerTile { tasks, .. } => format!("{tasks} task(s)"),
    };
    let _ = writeln!(
        s,
        "3. {tasks} per step, each one slice of the op (see Granularity).\n"
    );
}

fn pipeline(s: &mut String, task: &CheckedTask, p: &LinearMath) {
    let ir = &task.ir;
    let w = &ir.tensors[p.weights];
    let a = &ir.tensors[p.acts];
    if let Some(m) = stage_mma(task, Target::Sm100a) {
        let _ = writeln!(
            s,
            "Family A (pipeline) on sm_100a: a TMA ring of {} stages feeds {} `{}` m{}n{}k{} per stage into TMEM; \
the consumer warpgroup runs the `{}` epilogue.\n",
            p.stages,
            m.count,
            m.ptx(),
            m.m,
            m.n,
            m.k,
            p.epilogue.as_str()
        );
    }
    let sm100 = stage_mma(task, Target::Sm100a).is_some();
    if let Some(m) = stage_mma(task, Target::Sm90a) {
        // The program's MMAs per stage are parts x K steps (`lower::target::mma`).
        let parts = m.count / (p.block_k / p.mma_k.max(1)).max(1);
        let short = if p.block_m < m.m {
            format!(
                "; the tile's {} rows are fewer than the MMA's {}: rows {} to {} of each wgmma read the next K chunk's (or the stage's padding) and are discarded",
                p.block_m,
                m.m,
                p.block_m,
                m.m - 1
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "{} {} `{}` per stage issued by the consumer warpgroup ({} m{} part{} per tile{short}), the accumulator in registers{}; \
the ring's stages are freed by the 128 consumer threads instead of a tcgen05.commit.\n",
            if sm100 {
                "On sm_90a the same contract lowers to".to_string()
            } else {
                format!(
                    "Family A (pipeline) on sm_90a, its only target: a TMA ring of {} stages feeds",
                    p.stages
                )
            },
            m.count,
            m.ptx(),
            parts,
            m.m,
            if parts == 1 { "" } else { "s" },
            if matches!(p.operands, Operands::Fp8BlockScale { .. }) {
                ", each 128-element K block's weight and activation scales applied in f32"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(s, "Why, step by step:\n");
    let _ = writeln!(s, "1. The op reduces K = {} of a weight matrix `{}` [{} x {}]: GEMM-shaped work, which is what the pipeline idiom is for (contract doc §8.2, U3).", p.k, w.name, p.n, p.k);
    let _ = writeln!(
        s,
        "2. At most {} tokens (`{}` has {} rows): swap-AB, so the {} weight rows of a tile are MMA-M and the tokens MMA-N = {}; \
a tile's accumulator is {} x {} f32{}.",
        p.block_n,
        a.name,
        p.m_real,
        p.block_m,
        p.block_n,
        p.block_m,
        p.block_n,
        if sm100 {
            format!(" = {} TMEM columns per slot", p.block_n)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "3. {} tiles of {} rows cover N = {}{}: {} tasks, one tile each (I-P6).",
        p.num_tiles,
        p.block_m,
        p.n,
        if p.splits > 1 {
            format!(", each split {} ways along K", p.splits)
        } else {
            String::new()
        },
        p.num_tiles * p.splits
    );
    let _ = writeln!(
        s,
        "4. {} K iterations of {} per task over {} stages{}; the protocol model check covers 1 to {} trips.",
        p.k_iters,
        p.block_k,
        p.stages,
        if p.k_iters < p.stages { " (fewer iterations than stages: proven safe, no end-of-task drain)" } else { "" },
        p.stages + 1
    );
    let epi = match p.epilogue {
        Epilogue::StoreBf16 => "the accumulator is stored as bf16".to_string(),
        Epilogue::ResidualAdd => "the accumulator is rounded to bf16 and added to the residual in f32, then stored as bf16".to_string(),
        Epilogue::SplitKF32 => format!("each split stores f32 partials; the derived task `{}_reduce` sums them into bf16", ir.unit_name()),
        Epilogue::SplitKBf16 => "each split stores f32 partials and adds one to its tile's arrival counter; the last split of the tile sums the partials in split order into the bf16 output and resets the counter (no reduce task)".to_string(),
        Epilogue::SplitKAtomic => "each split adds its f32 sums into the accumulator (red.global.add, in L2) and one to its tile's arrival counter; the last split of the tile stores the sums as bf16, zeroes the accumulator and resets the counter (no reduce task; the f32 additions follow the arrival order)".to_string(),
        Epilogue::QuantE4m3 => "the accumulator is quantized to e4m3 with one power-of-two scale per token and 128-column tile, the next fp8 GEMM's 1x128 activation scales".to_string(),
    };
    // The contract's epilogue map runs on each element before that (docs/language.md).
    let epi = if p.map {
        format!("each element is first mapped by the contract's `body cuda` (`epilogue_map(acc, n, row)`, an f32 in and out); then {epi}")
    } else {
        epi
    };
    let _ = writeln!(s, "5. Epilogue: {epi}.");
    let _ = writeln!(
        s,
        "\nAlternative: at a few tokens the consumer GEMV (`body gemv`, stdlib/linear_bf16_gemv.mpk: no tensor cores, \
each warp streaming its weight rows) may serve a projection better (the router at M = 1); that choice is made by \
`mpkc bench` against cuBLAS (docs/perf.md), not here.\n"
    );
}
