//! What MPK's `task_register.cc` registers for a task variant (`TaskRoleVariantCode`, contract
//! doc §3.3, §6.1 step 4): the page mode, the runtime's automatic page steps, whether the launcher
//! runs the dependency prefix, and which roles have a body. One value per family; the `Registration`
//! struct of the generated `.cuh` (`back::consumer`, `back::pipeline`) and `mpkc wire`'s registration
//! definition both render it, so the two cannot disagree.

use super::writer::Writer;
use crate::lower::RoleProgram;
use crate::valid::CheckedTask;

/// The role bodies of a variant, in the order MPK's `TaskRoleVariantCode` lists them after
/// `init_semaphores`.
pub const ROLES: [&str; 4] = ["consumer", "loader", "launcher", "storer"];

/// The registration facts of one variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    /// Page mode (contract doc §1.5): 1 = the loader prefix waits every page and frees the unused
    /// ones; 2 = the consumer claims its used pages, the loader frees the unused ones (never
    /// generated: see [`Registration::CONSUMER_HANDOFF`]).
    pub page_mode: u8,
    /// The runtime emits the loader's page prefix (`auto_loader_page_lifecycle`).
    pub auto_loader_page_lifecycle: bool,
    /// The runtime emits the consumer's page suffix (`auto_consumer_finish`); false where the
    /// launcher releases the used pages itself.
    pub auto_consumer_finish: bool,
    /// The launcher runs the dependency prefix (`mma = prefix + call`).
    pub launcher_dep_prefix: bool,
    /// Whether each of [`ROLES`] has a body (an empty body is registered as `""`).
    pub bodies: [bool; 4],
    /// Whether `init_semaphores` initialises op ordinals (false: the family declares none).
    pub inits_semaphores: bool,
}

impl Registration {
    /// The consumer-only families (B, C, D) without regions: only the consumer body, page mode 1
    /// (the runtime's loader prefix waits and frees all 14 pages, none used), both automatic page
    /// steps, no op semaphore.
    pub const CONSUMER: Registration = Registration {
        page_mode: 1,
        auto_loader_page_lifecycle: true,
        auto_consumer_finish: true,
        launcher_dep_prefix: false,
        bodies: [true, false, false, false],
        inits_semaphores: false,
    };

    /// The consumer-only families with regions: page mode 1 with the loader's page prefix in the
    /// generated loader body (`auto_loader_page_lifecycle = false`: the loader waits the used
    /// pages, arrives the `pages_ready` hand-off, then waits and frees the unused ones; the one
    /// role observing page parity, I-P5), the consumer body after waiting the hand-off, and the
    /// runtime's consumer suffix freeing the used pages. MPK's page mode 2 (the consumer claims
    /// its used pages) is not used: on a queue mixing it with page-mode-1 tasks the loader, a
    /// sparse observer there, can pass a page wait two tasks ahead (`plan::sems::needs_page_handoff`).
    pub const CONSUMER_HANDOFF: Registration = Registration {
        page_mode: 1,
        auto_loader_page_lifecycle: false,
        auto_consumer_finish: true,
        launcher_dep_prefix: false,
        bodies: [true, true, false, false],
        inits_semaphores: true,
    };

    /// The pipeline family (A): every body but the storer's, page mode 1 with the loader's page
    /// prefix in the generated loader body (`auto_loader_page_lifecycle = false`: the loader waits
    /// every page and frees the unused ones itself, after its page-free setup, so that the re-inits
    /// and tensor-map prefetches run while the task before computes; issue 12), the launcher (or on
    /// sm_90a the consumer) releases the used pages (`auto_consumer_finish = false`), the launcher
    /// runs the dependency prefix.
    pub const PIPELINE: Registration = Registration {
        page_mode: 1,
        auto_loader_page_lifecycle: false,
        auto_consumer_finish: false,
        launcher_dep_prefix: true,
        bodies: [true, true, true, false],
        inits_semaphores: true,
    };

    /// The registration of `task`: `None` for a task with no generated kernel (a helper, or a
    /// pipeline the lowering does not express), which MPK cannot register.
    pub fn of(task: &CheckedTask) -> Option<Registration> {
        if task.ir.family.is_consumer_only() {
            Some(if crate::plan::sems::needs_page_handoff(&task.ir) {
                Registration::CONSUMER_HANDOFF
            } else {
                Registration::CONSUMER
            })
        } else if task.linear().is_some() {
            Some(Registration::PIPELINE)
        } else {
            None
        }
    }

    /// `(role, has a body)` in [`ROLES`] order.
    pub fn roles(&self) -> impl Iterator<Item = (&'static str, bool)> + '_ {
        ROLES.iter().copied().zip(self.bodies)
    }

    /// The flag members of the generated `Registration` struct.
    pub(crate) fn flag_members(&self, w: &mut Writer) {
        w.line(format!(
            "static constexpr int kPageMode = {};",
            self.page_mode
        ));
        w.line(format!(
            "static constexpr bool kAutoLoaderPageLifecycle = {};",
            self.auto_loader_page_lifecycle
        ));
        w.line(format!(
            "static constexpr bool kAutoConsumerFinish = {};",
            self.auto_consumer_finish
        ));
        w.line(format!(
            "static constexpr bool kLauncherDepPrefix = {};",
            self.launcher_dep_prefix
        ));
    }

    /// The role entry points of the generated `Registration` struct: a call of the unit's role
    /// function where the role has a body, an empty function otherwise.
    pub(crate) fn role_members(&self, w: &mut Writer, unit: &str) {
        use super::consumer::{ROLE_ARGS, ROLE_PARAMS};
        for (role, body) in self.roles() {
            if body {
                w.line(format!(
                    "__device__ static void {role}({ROLE_PARAMS}) {{ ::kernel::{unit}::{role}({ROLE_ARGS}); }}"
                ));
            } else {
                w.line(format!("__device__ static void {role}(TaskDesc const *, RuntimeConfig const &, RuntimeSMEM &, int, int) {{}}"));
            }
        }
    }
}

/// The semaphore members of the generated `Registration` struct for `prog`'s target:
/// `init_semaphores` (every ordinal with its count from spec.h's table of that target, then the
/// init fence; I-M2), `kReinitOrdinals` and the ordinal names the harness's checks print (I-M4).
///
/// `also` names the other targets whose role programs have the same ordinal table (one
/// consumer-only `.cuh` serves every target it declares; [`same_ordinals`]).
pub(crate) fn semaphore_members(w: &mut Writer, prog: &RoleProgram, also: &[crate::ir::Target]) {
    let table = super::spec_h::sem_table_name(prog.target);
    w.comment(format!(
        "init_semaphores: every ordinal with its arrival count from spec.h's {table} (the table of"
    ));
    if also.is_empty() {
        w.comment("this target's lowering), then the init fence (I-M2).");
    } else {
        let others: Vec<String> = also.iter().map(|t| t.to_string()).collect();
        w.comment(format!(
            "{}'s lowering; {}'s has the same ordinals, counts and re-init owners, so this one kernel",
            prog.target,
            others.join(" and ")
        ));
        w.comment("serves every target), then the init fence (I-M2).");
    }
    w.open("__device__ static void init_semaphores(uint64_t *sem)");
    for (k, b, slot) in prog.ordinals() {
        w.line(format!(
            "mpkc::rt::mbar_init(&sem[{table}[{k}].ordinal], {table}[{k}].count);  // {}: {}",
            b.slot_name(slot),
            b.count(slot)
        ));
    }
    w.line("mpkc::rt::fence_mbar_init();");
    w.close("");
    let mask: u32 = prog
        .ordinals()
        .filter(|(k, b, _)| b.reinit.is_some() && *k < 31)
        .fold(0, |m, (k, _, _)| m | (1u32 << k));
    w.comment("Op ordinals a role re-initialises at task start (bit k = ordinal k; the harness checks them).");
    w.line(format!(
        "static constexpr uint32_t kReinitOrdinals = 0x{mask:08X}u;"
    ));
    w.open("__device__ static char const *ordinal_name(int k)");
    w.open("switch (k)");
    for (k, b, slot) in prog.ordinals() {
        w.line(format!("case {k}: return \"{}\";", b.slot_name(slot)));
    }
    w.line("default: return \"?\";");
    w.close("");
    w.close("");
    w.open("__device__ static char const *reinit_owner(int k)");
    w.open("switch (k)");
    for (k, b, _) in prog.ordinals() {
        if let Some(r) = b.reinit {
            w.line(format!("case {k}: return \"{r}\";"));
        }
    }
    w.line("default: return \"none\";");
    w.close("");
    w.close("");
}

/// Whether `a` and `b` (the role programs of two targets) have the same semaphore table: each
/// ordinal's barrier slot, arrival count and re-init owner, in order.
pub(crate) fn same_ordinals(a: &RoleProgram, b: &RoleProgram) -> bool {
    let key = |p: &RoleProgram| -> Vec<(usize, String, i64, Option<crate::ir::RoleKind>)> {
        p.ordinals()
            .map(|(k, bar, slot)| (k, bar.slot_name(slot), bar.count(slot), bar.reinit))
            .collect()
    };
    key(a) == key(b)
}
