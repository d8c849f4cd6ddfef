//! Roles, threads and named barriers (I-R1, I-R2).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{RoleKind, TaskIr};

/// Ids the runtime keeps: 0 is the block-wide barrier, 8 the consumer page claim (§3.4).
const RESERVED_BARRIER_IDS: [(i64, &str); 2] = [
    (0, "the block-wide barrier"),
    (8, "the runtime's consumer page claim"),
];

/// I-R1: roles sit on the runtime's warps (consumer W0-3, loader W4, launcher W5, storer W6).
pub(super) fn roles(ir: &TaskIr, sink: &mut Sink) {
    for r in &ir.roles {
        let (f, l) = r.kind.runtime_warps();
        if (r.first_warp, r.last_warp) != (f, l) {
            let want = if f == l {
                format!("W{f}")
            } else {
                format!("W{f}..W{l}")
            };
            let got = if r.first_warp == r.last_warp {
                format!("W{}", r.first_warp)
            } else {
                format!("W{}..W{}", r.first_warp, r.last_warp)
            };
            let extra = if r.kind == RoleKind::Consumer {
                "; tcgen05.ld lane quarters tie consumer warp w to TMEM lanes 32w..32w+31"
            } else {
                ""
            };
            sink.push(
                Diagnostic::error(codes::ROLE_WARPS, format!("role `{}` is bound to {got}, but the runtime runs it on {want}", r.kind, ))
                    .primary(r.span, format!("{got} here"))
                    .note(format!("Runtime-V2 launches 8 warps: consumer W0-3, loader W4, launcher W5, storer W6, controller W7{extra}"))
                    .help(format!("bind `{} {want}`", r.kind)),
            );
        }
        if r.kind == RoleKind::Controller {
            sink.push(
                Diagnostic::error(
                    codes::ROLE_WARPS,
                    "the controller warp belongs to the runtime",
                )
                .primary(r.span, "bound here")
                .help("remove the controller binding; a task supplies only init_semaphores for it"),
            );
        }
    }
}

/// I-R2: named barrier ids in 1-15 and not reserved, one warp set per id, thread counts equal to
/// the warp set using the barrier (128 for the consumer warpgroup).
pub(super) fn barriers(ir: &TaskIr, sink: &mut Sink) {
    for (h, b) in ir.barriers.iter() {
        if !(0..=15).contains(&b.id) {
            sink.push(
                Diagnostic::error(
                    codes::BARRIER_ID,
                    format!(
                        "named barrier `{}` has id {}; hardware barriers are 0-15",
                        b.name, b.id
                    ),
                )
                .primary(b.id_span, format!("id {}", b.id))
                .help("pick an id in 1-15 other than 8"),
            );
        } else if let Some((_, who)) = RESERVED_BARRIER_IDS.iter().find(|(id, _)| *id == b.id) {
            sink.push(
                Diagnostic::error(codes::BARRIER_ID, format!("named barrier `{}` uses id {}, which is {who}", b.name, b.id))
                    .primary(b.id_span, format!("id {} is reserved", b.id))
                    .note("contract doc §3.4: id 0 is implicit block-wide, id 8 is `bar.sync 8, 128` of the consumer page claim")
                    .help("pick an id in 1-15 other than 8"),
            );
        }
        for (h2, b2) in ir.barriers.iter() {
            if h2 < h && b2.id == b.id && b2.by != b.by {
                sink.push(
                    Diagnostic::error(codes::BARRIER_ID, format!("barrier id {} is used by the {} warps and the {} warps", b.id, b2.by, b.by))
                        .primary(b.span, format!("{} warps here", b.by))
                        .secondary(b2.span, format!("{} warps here", b2.by))
                        .note("roles of different tasks run concurrently, so an id may serve only one warp set")
                        .help("give one of the two barriers another id"),
                );
            }
        }
        if b.by != RoleKind::Consumer {
            sink.push(
                Diagnostic::error(codes::BARRIER_THREADS, format!("named barrier `{}` is used by the {} warps; named barriers are the consumer warpgroup's", b.name, b.by))
                    .primary(b.span, format!("by {}", b.by))
                    .note("I-R2: role bodies other than the consumer's are one warp each and synchronise with __syncwarp, not named barriers")
                    .help("drop `by`, so that the 128 consumer threads use it"),
            );
            continue;
        }
        for (h2, b2) in ir.barriers.iter() {
            if h2 < h && b2.id == b.id && b2.by == b.by {
                sink.push(
                    Diagnostic::error(
                        codes::BARRIER_ID,
                        format!(
                            "barriers `{}` and `{}` are both hardware barrier {}",
                            b2.name, b.name, b.id
                        ),
                    )
                    .primary(b.id_span, format!("id {}", b.id))
                    .secondary(b2.span, "the same id here")
                    .note("two names for one bar.sync id interleave their arrivals")
                    .help("give each named barrier its own id, or use one name"),
                );
            }
        }
        // The runtime's warps for the role (I-R1): where the contract binds it elsewhere, E0403
        // says so, and where it binds it nowhere, E0405 (the kernel still runs it there): the
        // barrier must count what the runtime runs, not the binding.
        let want = {
            let (f, l) = b.by.runtime_warps();
            32 * (i64::from(l) - i64::from(f) + 1)
        };
        if b.threads != want {
            let why = if b.threads % 32 != 0 {
                "; barrier counts are whole warps, multiples of 32"
            } else {
                ""
            };
            sink.push(
                Diagnostic::error(
                    codes::BARRIER_THREADS,
                    format!("named barrier `{}` counts {} threads but the {} warps that use it are {want} threads{why}", b.name, b.threads, b.by),
                )
                .primary(b.threads_span, format!("{} threads", b.threads))
                .note("a bar.sync whose count differs from the arriving threads hangs or releases early")
                .help(format!("write `threads {want}`")),
            );
        }
    }
}

/// setmaxnreg (contract doc §3.5): targets are multiples of 8 in [24, 256] (PTX ISA), the
/// consumer target is at least the helpers' (ptxas C7406), and the two warpgroups' 128 threads
/// each fit the 65,536-register file.
pub(super) fn setmaxnreg(ir: &TaskIr, sink: &mut Sink) {
    let Some((consumer, helpers, span)) = ir.setmaxnreg else {
        return;
    };
    for (what, v) in [("consumer", consumer), ("helpers", helpers)] {
        if v % 8 != 0 || !(24..=256).contains(&v) {
            sink.push(
                Diagnostic::error(codes::SETMAXNREG, format!("setmaxnreg {what} {v} is not a multiple of 8 in [24, 256]"))
                    .primary(span, format!("{what} {v}"))
                    .note("setmaxnreg.inc/.dec take an immediate multiple of 8 between 24 and 256 (PTX ISA)")
                    .help(format!("use {}", (v.clamp(24, 256) + 7) / 8 * 8)),
            );
        }
    }
    // ptxas gives the kernel the consumer target as its register count at entry (capped at 255),
    // so warpgroup 0's `.inc` keeps it and warpgroup 1's `.dec` releases down to the helpers'
    // target; a helper target above the consumer one is ptxas's fatal C7406 ("setmaxnreg.dec has
    // register count larger than the largest temporal register count").
    let legal = |v: i64| v % 8 == 0 && (24..=256).contains(&v);
    if legal(consumer) && legal(helpers) && helpers > consumer {
        sink.push(
            Diagnostic::error(codes::SETMAXNREG, format!("setmaxnreg helpers {helpers} is above consumer {consumer}"))
                .primary(span, format!("consumer {consumer}, helpers {helpers}"))
                .note("warpgroup 0 raises its registers with setmaxnreg.inc and warpgroup 1 lowers them with setmaxnreg.dec from the kernel's count, which ptxas sets to the consumer target; a larger helper target is ptxas's fatal C7406")
                .help(format!("give the consumers at least the helpers' registers, e.g. `setmaxnreg consumer {helpers}, helpers {consumer}`")),
        );
    }
    // With both targets legal (at most 256), 128 x 256 x 2 = 65,536 always fits the register
    // file; the sum matters only for out-of-range values, which are reported above.
    let total = 128 * consumer + 128 * helpers;
    if total > 65_536 && (24..=256).contains(&consumer) && (24..=256).contains(&helpers) {
        sink.push(
            Diagnostic::error(codes::SETMAXNREG, format!("setmaxnreg asks for {total} registers: 128 x {consumer} + 128 x {helpers}, over the 65536 of the SM"))
                .primary(span, "too many registers")
                .help("lower one of the two warpgroups"),
        );
    }
}
