//! What MPK's `task_register.cc` registers for a task variant (`TaskRoleVariantCode`, contract
//! doc §3.3, §6.1 step 4): the page mode, the runtime's automatic page steps, whether the launcher
//! runs the dependency prefix, and which roles have a body. One value per family; the `Registration`
//! struct of the generated `.cuh` (`back::consumer`, `back::pipeline`) and `mpkc wire`'s registration
//! definition both render it, so the two cannot disagree.

use super::writer::Writer;
use crate::valid::CheckedTask;

/// The role bodies of a variant, in the order MPK's `TaskRoleVariantCode` lists them after
/// `init_semaphores`.
pub const ROLES: [&str; 4] = ["consumer", "loader", "launcher", "storer"];

/// The registration facts of one variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    /// Page mode (contract doc §1.5): 1 = the loader prefix waits every page and frees the unused
    /// ones; 2 = the consumer claims its used pages, the loader frees the unused ones.
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
    /// The consumer-only families (B, C, D): only the consumer body, page mode 2, both automatic
    /// page steps, no op semaphore.
    pub const CONSUMER: Registration = Registration {
        page_mode: 2,
        auto_loader_page_lifecycle: true,
        auto_consumer_finish: true,
        launcher_dep_prefix: false,
        bodies: [true, false, false, false],
        inits_semaphores: false,
    };

    /// The pipeline family (A): every body but the storer's, page mode 1, the launcher releases
    /// the used pages (`auto_consumer_finish = false`) and runs the dependency prefix.
    pub const PIPELINE: Registration = Registration {
        page_mode: 1,
        auto_loader_page_lifecycle: true,
        auto_consumer_finish: false,
        launcher_dep_prefix: true,
        bodies: [true, true, true, false],
        inits_semaphores: true,
    };

    /// The registration of `task`: `None` for a task with no generated kernel (a helper, or a
    /// pipeline the lowering does not express), which MPK cannot register.
    pub fn of(task: &CheckedTask) -> Option<Registration> {
        if task.ir.family.is_consumer_only() {
            Some(Registration::CONSUMER)
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
