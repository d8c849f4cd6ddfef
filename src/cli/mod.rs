//! The command-line front: each subcommand runs the library and maps the outcome to the exit
//! status of docs/design.md ("Conventions"). Products go to stdout, human diagnostics to stderr,
//! JSON diagnostics to stdout.

/// `print!` that ignores a closed stdout (`mpkc plan | head`): printing stops, the exit status
/// still reports the run.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($t)*);
    }};
}
/// `println!` that ignores a closed stdout.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}
/// `eprint!` that ignores a closed stderr.
macro_rules! err {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($t)*);
    }};
}
/// `eprintln!` that ignores a closed stderr.
macro_rules! errln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($t)*);
    }};
}

pub mod args;
mod bench;
mod build;
mod classify;
mod explain;
mod fmt;
mod inputs;
mod progress;
mod report;
mod roofline;
mod tune;
mod verify;
mod wire;

pub use args::Cli;
use args::{ColorArg, Command, CommonArgs, MessageFormat, PlanFormat};

use crate::diag::ColorMode;
use crate::driver::{self, plan_view, Checked, Source};
use crate::sema::SemaOptions;
use crate::valid::CheckOptions;
use std::io::IsTerminal;

/// Exit statuses.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The contract has errors, or verification failed.
    pub const ERRORS: u8 = 1;
    /// Usage error.
    pub const USAGE: u8 = 2;
    /// An external program failed.
    pub const EXTERNAL: u8 = 3;
    /// Something needed is absent: nvcc, a GPU, or a writable place for an output (a file or
    /// folder that cannot be created, written or renamed: permission, space, a file-size limit).
    pub const ABSENT: u8 = 4;
}

/// Decides colour once: `--color`, then NO_COLOR, then CLICOLOR_FORCE, then "is stderr a terminal".
pub fn color_mode(arg: ColorArg) -> ColorMode {
    match arg {
        ColorArg::Always => ColorMode::Always,
        ColorArg::Never => ColorMode::Never,
        ColorArg::Auto => {
            if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                ColorMode::Never
            } else if std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0")
                || std::io::stderr().is_terminal()
            {
                ColorMode::Always
            } else {
                ColorMode::Never
            }
        }
    }
}

/// Runs a parsed command line; returns the exit status.
pub fn run(cli: Cli) -> u8 {
    let color = color_mode(cli.color);
    match cli.command {
        Command::Check {
            common,
            predecessors,
        } => check(&common, predecessors.is_some(), color),
        Command::Plan { common, format } => plan(&common, format, color),
        Command::Build {
            common,
            out,
            jobs,
            no_cache,
        } => build::run(
            &common,
            build::BuildOptions {
                out: &out,
                jobs,
                no_cache,
            },
            color,
        ),
        Command::Verify { common, verify } => verify::run(&common, &verify, color),
        Command::Bench { common, bench } => bench::run(&common, &bench, color),
        Command::Roofline { common, roofline } => roofline::run(&common, &roofline, color),
        Command::Tune { common, tune } => tune::run(&common, &tune, color),
        Command::Explain { code } => explain::run(&code),
        Command::Fmt { files, check } => fmt::run(&files, check, color),
        Command::Wire {
            common,
            mirage,
            dry_run,
        } => wire::run(&common, &mirage, dry_run, color),
        Command::Lsp => crate::lsp::run_stdio(),
        Command::Classify {
            file,
            message_format,
        } => classify::classify(&file, message_format, color),
        Command::New {
            file,
            out,
            message_format,
        } => classify::new(&file, out.as_deref(), message_format, color),
    }
}

/// Validates `--preferred` (a permutation of 0..13) and that no `--param` name is given twice
/// (as an instance setting one param twice is E0003: the later value would win silently).
pub(crate) fn options(common: &CommonArgs) -> Result<(SemaOptions, CheckOptions), String> {
    for (i, (name, value)) in common.params.iter().enumerate() {
        if let Some((_, first)) = common.params[..i].iter().find(|(n, _)| n == name) {
            return Err(format!(
                "--param {name} is given twice ({name}={first} and {name}={value}): give it once"
            ));
        }
    }
    if let Some(p) = &common.preferred {
        let mut sorted = p.clone();
        sorted.sort_unstable();
        if sorted != (0..14).collect::<Vec<usize>>() {
            return Err(format!(
                "--preferred must be a permutation of 0..13 (14 page ids), got {p:?}"
            ));
        }
    }
    Ok((
        SemaOptions {
            overrides: common.params.clone(),
            instance: common.instance.clone(),
            ..Default::default()
        },
        CheckOptions {
            preferred: common.preferred.clone(),
            ..CheckOptions::default()
        },
    ))
}

/// Loads and checks every source, printing diagnostics. `Err` carries an exit status.
pub(crate) fn check_all(common: &CommonArgs, color: ColorMode) -> Result<Vec<Checked>, u8> {
    check_all_with(common, color, |_| Vec::new(), &[])
}

/// [`check_all`] with `--param` overrides added per source by another option (`verify --m`),
/// and `restate`: `(as sema words it, as the user wrote it)` pairs, e.g. (`--param m=0`,
/// `--m 0`), so that a diagnostic about such a value names the option the user gave.
pub(crate) fn check_all_with(
    common: &CommonArgs,
    color: ColorMode,
    extra_overrides: impl Fn(&Source) -> Vec<(String, String)>,
    restate: &[(String, String)],
) -> Result<Vec<Checked>, u8> {
    let (sema, opts) = options(common).map_err(|e| {
        errln!("error: {e}");
        exit::USAGE
    })?;
    let loaded = inputs::load(&common.files).map_err(|e| {
        errln!("error: {e}");
        exit::USAGE
    })?;
    let sources: Vec<Source> = loaded
        .iter()
        .filter_map(|l| l.as_ref().ok())
        .cloned()
        .collect();
    // Whether an input that is not UTF-8 declares the instance or param is unknown: no verdict.
    if sources.len() == loaded.len() {
        let unmatched =
            driver::select::unmatched(&sources, common.instance.as_deref(), &common.params);
        for u in &unmatched {
            errln!(
                "error[{}]: {}\n  = help: {}",
                crate::diag::codes::UNKNOWN_INSTANCE,
                u.message,
                u.help
            );
        }
        if !unmatched.is_empty() {
            return Err(exit::USAGE);
        }
    }
    let checked = driver::check_sources_with(
        &sources,
        |s| {
            let mut o = sema.clone();
            o.overrides.extend(extra_overrides(s));
            o
        },
        &opts,
    );
    let mut checked = inputs::merge(loaded, checked);
    for d in checked.iter_mut().flat_map(|c| c.diags.iter_mut()) {
        for (said, written) in restate {
            let fix = |s: &mut String| {
                if s.contains(said.as_str()) {
                    *s = s.replace(said.as_str(), written);
                }
            };
            fix(&mut d.message);
            d.labels.iter_mut().for_each(|l| fix(&mut l.message));
            d.notes.iter_mut().for_each(fix);
            d.help.iter_mut().for_each(fix);
        }
    }
    for c in &checked {
        report::print_diagnostics(c, common.message_format, color);
    }
    Ok(checked)
}

fn check(common: &CommonArgs, predecessors: bool, color: ColorMode) -> u8 {
    let checked = match check_all(common, color) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if predecessors {
        // Known predecessors: the stdlib and the files checked, each after no predecessor.
        let stdlib: Vec<Checked> = driver::stdlib::sources()
            .iter()
            .map(|s| driver::check_source(s, &Default::default(), &Default::default()))
            .collect();
        let mut known: Vec<(String, Vec<usize>)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for c in stdlib.iter().chain(checked.iter()) {
            for t in &c.tasks {
                let entry = (t.ir.unit_name(), t.primary_plan().release_order.clone());
                if seen.insert(entry.clone()) {
                    known.push(entry);
                }
            }
        }
        let tasks: Vec<&crate::valid::CheckedTask> =
            checked.iter().flat_map(|c| c.tasks.iter()).collect();
        out!(
            "{}",
            match common.message_format {
                MessageFormat::Human => driver::predecessors::report(&tasks, &known),
                MessageFormat::Json => driver::predecessors::report_json(&tasks, &known),
            }
        );
    }
    report::summary(&checked, common.message_format);
    if checked.iter().any(Checked::has_errors) {
        exit::ERRORS
    } else {
        exit::OK
    }
}

fn plan(common: &CommonArgs, format: Option<PlanFormat>, color: ColorMode) -> u8 {
    let json = common.message_format == MessageFormat::Json;
    let format = match format {
        Some(PlanFormat::Text) if json => {
            errln!("error: `plan --format text` prints page maps on stdout, where `--message-format json` prints only JSON lines: use `--format json`, or drop one of them");
            return exit::USAGE;
        }
        Some(f) => f,
        None if json => PlanFormat::Json,
        None => PlanFormat::Text,
    };
    let checked = match check_all(common, color) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (_, opts) = match options(common) {
        Ok(o) => o,
        Err(_) => return exit::USAGE,
    };
    for c in &checked {
        for t in &c.tasks {
            for (target, g, p) in &t.plans {
                match format {
                    PlanFormat::Json => outln!("{}", plan_view::plan_json(&t.ir, target, p)),
                    PlanFormat::Text => out!("{}", plan_view::plan_text(&t.ir, target, g, p)),
                }
            }
        }
        // What MPK's planner would do for instances a rule rejects (text only: JSON lists
        // accepted plans).
        if format == PlanFormat::Text {
            for ir in &c.rejected {
                for (target, g, p) in crate::valid::raw_plans(ir, &opts) {
                    out!(
                        "REJECTED (see the errors above): {}",
                        plan_view::plan_text(ir, &target, &g, &p)
                    );
                }
            }
        }
    }
    if checked.iter().any(Checked::has_errors) {
        exit::ERRORS
    } else {
        exit::OK
    }
}
