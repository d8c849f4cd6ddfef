//! Command-line arguments (clap derive).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The exit status table, printed in `--help`.
pub const EXIT_CODES: &str = "\
Exit status:
  0  success
  1  the contract has errors, or verification failed (`verify`: a wrong result, a trap or a
     fault in the kernel)
  2  usage error
  3  an external program failed (nvcc, ptxas, a CUDA driver call outside the kernel)
  4  something needed is absent (no nvcc for `build`, no GPU or driver for `verify` or
     `bench`, no writable place for an output: permission, space, a file-size limit)";

/// mpkc: MPK Runtime-V2 op contracts to spec headers, kernels and page plans.
#[derive(Debug, Parser)]
#[command(name = "mpkc", version, about, after_help = EXIT_CODES, args_override_self = true)]
pub struct Cli {
    /// When to colour diagnostics: `auto` colours a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto, global = true)]
    pub color: ColorArg,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `--color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// Colour when stderr is a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it).
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// `--message-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MessageFormat {
    /// Rendered diagnostics on stderr.
    Human,
    /// One JSON object per diagnostic per line on stdout (docs/design.md, "Conventions").
    Json,
}

/// `check --predecessors`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Predecessors {
    /// Every release order (every position of page 13), and every known task's order.
    All,
}

/// `plan --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// A page map per task instance and target.
    Text,
    /// One JSON object per task instance and target per line.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check contracts against every rule (the embedded stdlib when no file is given).
    Check {
        /// Common options.
        #[command(flatten)]
        common: CommonArgs,
        /// `all`: also report which predecessor release orders expose each task to the
        /// page-13 remap overflow (I-S5), and which known tasks' orders do.
        #[arg(long, value_enum)]
        predecessors: Option<Predecessors>,
    },
    /// Print the SMEM page plan of each task instance and target.
    Plan {
        /// Common options.
        #[command(flatten)]
        common: CommonArgs,
        /// Output format (default: `text`, or `json` with `--message-format json`, whose
        /// stdout holds only JSON lines).
        #[arg(long, value_enum)]
        format: Option<PlanFormat>,
    },
    /// Check, plan, generate and compile with nvcc for every declared target.
    Build {
        /// Common options.
        #[command(flatten)]
        common: CommonArgs,
        /// Output directory for generated files and cubins, replaced whole by each build
        /// (it must be new, empty, or written by an earlier `mpkc build`; a file is refused).
        #[arg(long, default_value = "out", value_parser = out_dir)]
        out: PathBuf,
        /// Parallel nvcc jobs (default: available cores).
        #[arg(long, short = 'j', value_parser = parse_jobs)]
        jobs: Option<usize>,
        /// Always run nvcc: neither read nor write the build cache ($MPKC_CACHE_DIR, else
        /// $XDG_CACHE_HOME/mpkc, else ~/.cache/mpkc).
        #[arg(long)]
        no_cache: bool,
    },
    /// Run each contract's tasks on the GPU in mpkc's harness and compare with a float64 CPU
    /// reference (the embedded stdlib when no file is given).
    Verify {
        /// Common options.
        #[command(flatten)]
        common: CommonArgs,
        /// What to run and how.
        #[command(flatten)]
        verify: VerifyArgs,
    },
    /// Time the production build of each contract on the GPU (the whole op over every SM), each
    /// linear next to cuBLAS / cuBLASLt and each consumer op next to PyTorch eager on the same
    /// shapes and data, and print a table (docs/bench.md).
    Bench {
        /// Common options.
        #[command(flatten)]
        common: CommonArgs,
        /// What to time and how.
        #[command(flatten)]
        bench: BenchArgs,
    },
    /// Search contract params on the GPU: time every combination of the `--vary` values of one
    /// instance with `mpkc bench`, and print the fastest (geometric mean over `--m`) and the
    /// contract with its values in the instance (docs/bench.md, "mpkc tune").
    Tune {
        /// Common options: one FILE and `--instance` are required.
        #[command(flatten)]
        common: CommonArgs,
        /// What to try and how to time it.
        #[command(flatten)]
        tune: TuneArgs,
    },
    /// Bytes, FLOPs and the floor time of each task instance on the H200 and the B200 from
    /// their peaks, and the bound (docs/roofline.md); the embedded stdlib when no file is given.
    Roofline {
        /// Common options.
        #[command(flatten)]
        common: CommonArgs,
        /// What to count and how to print it.
        #[command(flatten)]
        roofline: RooflineArgs,
    },
    /// Rewrite contracts in the canonical layout (only whitespace changes; comments and inline
    /// CUDA are kept). `-` formats stdin to stdout.
    Fmt {
        /// Contract files (`-` for stdin); none with `--check` checks the embedded stdlib.
        files: Vec<PathBuf>,
        /// Change nothing; list the files that are not formatted and exit 1 if any.
        #[arg(long)]
        check: bool,
    },
    /// Insert the registration pieces of each task instance into an MPK source tree (contract
    /// doc §6.1): additive and idempotent; `--dry-run` prints the unified diff instead
    /// (docs/wire.md).
    Wire {
        /// Common options.
        #[command(flatten)]
        common: CommonArgs,
        /// The root of the MPK checkout (the folder holding `include/`, `src/` and `python/`).
        #[arg(long, value_name = "DIR", value_parser = mirage_dir)]
        mirage: PathBuf,
        /// Write nothing; print the unified diff of what would change.
        #[arg(long)]
        dry_run: bool,
    },
    /// Stage 0: read an op description (TOML: kind, shapes, dtypes; docs/classify.md) and print
    /// its family by design.md's ordered rules, the rule that fired and why.
    Classify {
        /// The op description.
        file: PathBuf,
        /// How to print the result and diagnostics (`json`: one object per line on stdout).
        #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
        message_format: MessageFormat,
    },
    /// Write a starting contract of the family `classify` picks for an op description; it
    /// checks clean (docs/classify.md).
    New {
        /// The op description.
        file: PathBuf,
        /// Write the contract here (default: stdout).
        #[arg(long, short = 'o', value_name = "OUT.mpk")]
        out: Option<PathBuf>,
        /// How to print diagnostics.
        #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
        message_format: MessageFormat,
    },
    /// Serve the Language Server Protocol on stdio (diagnostics, hover, definition,
    /// references, outline, completion, formatting).
    Lsp,
    /// Print the long explanation of a diagnostic code, e.g. `mpkc explain E0103`.
    Explain {
        /// The code.
        code: String,
    },
}

/// `mpkc verify`'s own options.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Target to build and run: sm_90a or sm_100a (default: the GPU's).
    #[arg(long, value_parser = ["sm_90a", "sm_100a"])]
    pub target: Option<String>,
    /// Tasks per CTA queue (ring-slot reuse, re-init and page parity across tasks), 1 to 4096
    /// (every queue's descriptors are uploaded at once).
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub tasks: usize,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Token count: sets `m` or `m_real` in every contract that declares it with a value; a
    /// count decided at run time (`= runtime`, docs/runtime-m.md) keeps its one build, run at this
    /// count (default: its range's lower end, one count between, its maximum).
    #[arg(long)]
    pub m: Option<i64>,
    /// Context length of a paged KV cache (`paged(...)`, docs/language.md "Paged KV caches"):
    /// the cases of a paged task run at this length alone (default: 1, one token past eight
    /// pages, a quarter of `max_context` and `max_context`); one build serves every length.
    #[arg(long)]
    pub context: Option<i64>,
    /// Only the cases whose name contains this text.
    #[arg(long)]
    pub only: Option<String>,
    /// Run a chain of units in dependency order in one launch and compare its output with the
    /// chain's reference (a `.chain.toml` manifest; docs/dsv3.md, "The MoE block as a chain"):
    /// the contracts are the files its stages name, not FILES.
    #[arg(long, value_name = "MANIFEST")]
    pub chain: Option<PathBuf>,
    /// Test-only fault injection: region-short[=NAME], page-skip[=P], page-double[=P],
    /// count-off[=K], reinit-drop[=K], bad-scale[=I]. The case must then fail with a message
    /// naming it.
    #[arg(long, value_name = "FAULT")]
    pub inject: Option<crate::driver::verify::Inject>,
    /// Keep the test build (sources, cubins, child logs) in this directory (created if
    /// absent; an existing file is refused).
    #[arg(long, value_parser = out_dir)]
    pub out: Option<PathBuf>,
    /// Seconds before a case that neither finishes nor traps is killed.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Milliseconds a wait of the test build may take before it traps with a report.
    #[arg(long, default_value_t = 4000)]
    pub wait_timeout_ms: u64,
    /// Print the cases (one name per line, skipped ones with why) and stop; needs no GPU.
    #[arg(long)]
    pub list: bool,
    /// The GPUs to spread the cases over, one child process per GPU at a time: `all` (the
    /// default: every device the driver shows, after `CUDA_VISIBLE_DEVICES`) or ordinals such as
    /// `0,1`. Results do not depend on it; only the wall time does.
    #[arg(long, default_value = "all", value_parser = parse_gpus, value_name = "all|N,M,...")]
    pub gpus: GpuSelection,
    /// Cases run at once on each GPU, each in its own child process (1 to 16). A case spends most
    /// of its time on the host (process start, its inputs, a Python reference), so a few at once
    /// shorten the wall time; results do not depend on it (each case has its own context, buffers
    /// and queues).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub per_gpu: u32,
    /// Internal: run one case (the parent runs each case in its own process).
    #[arg(long, hide = true)]
    pub child: Option<String>,
    /// Internal: the device ordinal a child runs its case on.
    #[arg(long, hide = true, default_value_t = 0)]
    pub device: usize,
}

/// `mpkc bench --method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchMethod {
    /// Each run its own launch of the whole op (CUDA-graph replay), as cuBLAS runs.
    Standalone,
    /// The op's tasks queued per CTA in one launch, as the megakernel runs them: the first
    /// task's publication to the last task's end (%globaltimer stamps).
    Persistent,
    /// Both.
    Both,
}

/// `mpkc bench`'s own options.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Token counts: each sets `m` or `m_real` in every contract that declares it; a contract
    /// that cannot take one is reported skipped with the checker's reason. A count decided at run
    /// time (`= runtime`) is not set: its one build runs at its maximum.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64", value_parser = clap::value_parser!(i64).range(1..), value_name = "M,M,...")]
    pub m: Vec<i64>,
    /// Print one JSON document (schema: docs/bench.md) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Which timing method(s).
    #[arg(long, value_enum, default_value_t = BenchMethod::Both)]
    pub method: BenchMethod,
    /// Measure the per-task fixed cost instead: one launch with 1 task per CTA and one with
    /// `--tasks-per-cta` (weights not rotated, resident in L2 when they fit), printing
    /// (Tp - T1) / (p - 1). Meant for a one-stage linear (`--param K=128`).
    #[arg(long)]
    pub fixed_cost: bool,
    /// Persistent method only: print CTA 0's timeline of the last launch under each case (per
    /// task: publication, each role's start / prefix end / end, the loader's page wait, the
    /// sm_90a consumer's K loop end; microseconds from the first publication) and every CTA's
    /// last K loop end and task end as min / median / max. Its stamps are compiled into the
    /// stamped build (MPKC_BENCH_TIMELINE) and perturb the persistent times: time without it.
    #[arg(long)]
    pub timeline: bool,
    /// Tasks per CTA of `--fixed-cost`'s second measurement.
    #[arg(long, default_value_t = 8, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=4096))]
    pub tasks_per_cta: usize,
    /// Back-to-back runs per timed sample (standalone), and launches timed (persistent).
    #[arg(long, default_value_t = 100, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100000))]
    pub runs: usize,
    /// Timed samples per case (standalone); the median is reported.
    #[arg(long, default_value_t = 9, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub repeats: usize,
    /// Untimed series (or launches) first.
    #[arg(long, default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1000))]
    pub warmup: usize,
    /// The weights rotate over copies totalling at least this many times the L2.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub rotate: u64,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Target to build for: sm_90a or sm_100a (default: the GPU's).
    #[arg(long, value_parser = ["sm_90a", "sm_100a"])]
    pub target: Option<String>,
    /// Also write the `--json` document to this file (the table still goes to stdout).
    #[arg(long, value_name = "FILE")]
    pub save_json: Option<PathBuf>,
    /// Keep the production builds (one folder per M) in this directory.
    #[arg(long, value_parser = out_dir)]
    pub out: Option<PathBuf>,
    /// Run no competitor (cuBLAS, cuBLASLt, PyTorch): check mpkc's result against the float64 CPU
    /// reference instead and time only mpkc's side (no speedup column). Saves the competitor's
    /// setup and timing, the PyTorch runner's start above all, where only mpkc's times matter.
    #[arg(long)]
    pub no_competitor: bool,
}

/// `mpkc tune --method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TuneMethod {
    /// `mpkc bench`'s standalone method (CUDA-graph replay of the whole op).
    Standalone,
    /// `mpkc bench`'s persistent method (the tasks queued per CTA, as the megakernel runs them).
    Persistent,
}

/// `mpkc tune`'s own options.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// A param and the values to try, e.g. `--vary splits=2,4,8`; repeat it for more params:
    /// every combination is tried (at most 64).
    #[arg(long = "vary", value_name = "NAME=V,V,...", value_parser = crate::driver::tune::parse_vary, required = true)]
    pub vary: Vec<(String, Vec<String>)>,
    /// Token counts; a variant's score is the geometric mean of its times over them.
    #[arg(long, value_delimiter = ',', default_value = "1,16", value_parser = clap::value_parser!(i64).range(1..), value_name = "M,M,...")]
    pub m: Vec<i64>,
    /// The timing method a variant is scored by.
    #[arg(long, value_enum, default_value_t = TuneMethod::Persistent)]
    pub method: TuneMethod,
    /// Print one JSON document (docs/bench.md, "mpkc tune") instead of the table and contract.
    #[arg(long)]
    pub json: bool,
    /// Rewrite FILE with the best values in the instance instead of printing the contract.
    #[arg(long)]
    pub write: bool,
    /// Back-to-back runs per timed sample (standalone), and launches timed (persistent).
    #[arg(long, default_value_t = 100, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100000))]
    pub runs: usize,
    /// Timed samples per case (standalone); the median is reported.
    #[arg(long, default_value_t = 9, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub repeats: usize,
    /// Untimed series (or launches) first.
    #[arg(long, default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1000))]
    pub warmup: usize,
    /// The weights rotate over copies totalling at least this many times the L2.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub rotate: u64,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Target to build for: sm_90a or sm_100a (default: the GPU's).
    #[arg(long, value_parser = ["sm_90a", "sm_100a"])]
    pub target: Option<String>,
    /// Run no competitor, as `mpkc bench --no-competitor`: each variant's result is checked
    /// against the float64 CPU reference and scored by mpkc's times alone (the report has no
    /// speedup). A sweep then starts no PyTorch runner per variant.
    #[arg(long)]
    pub no_competitor: bool,
}

/// `mpkc roofline --gpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RooflineGpu {
    /// NVIDIA H200: 4.8 TB/s (4.25 measured copy), 989 / 1,979 dense TFLOPS bf16 / fp8.
    H200,
    /// NVIDIA B200: 8 TB/s, 2,250 / 4,500 dense TFLOPS bf16 / fp8.
    B200,
}

/// `mpkc roofline`'s own options.
#[derive(Debug, Args)]
pub struct RooflineArgs {
    /// Only this GPU's floor (default: both).
    #[arg(long, value_enum)]
    pub gpu: Option<RooflineGpu>,
    /// Token counts: each sets `m` or `m_real` in every contract that declares it (default: each
    /// contract's own value); a contract that cannot take one is reported skipped.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(i64).range(1..), value_name = "M,M,...")]
    pub m: Vec<i64>,
    /// Print one JSON document (schema: docs/roofline.md) instead of the table (implied by
    /// `--message-format json`, whose stdout holds only JSON).
    #[arg(long)]
    pub json: bool,
    /// Also time each pipeline linear on this machine's GPU as `mpkc bench` does (standalone
    /// median) and print the measured time beside the floor, with the floor's share of it.
    #[arg(long)]
    pub measure: bool,
}

/// Which GPUs `mpkc verify` uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuSelection {
    /// Every device the driver shows.
    All,
    /// These ordinals, in this order, without repeats.
    List(Vec<usize>),
}

fn parse_gpus(s: &str) -> Result<GpuSelection, String> {
    if s.trim() == "all" {
        return Ok(GpuSelection::All);
    }
    let mut v: Vec<usize> = Vec::new();
    for part in s.split(',') {
        let n: usize = part
            .trim()
            .parse()
            .map_err(|_| format!("expected `all` or device ordinals such as `0,1`, got `{s}`"))?;
        if v.contains(&n) {
            return Err(format!("device {n} is named twice in `{s}`"));
        }
        v.push(n);
    }
    Ok(GpuSelection::List(v))
}

/// Options shared by `check`, `plan`, `build`, `verify` and `wire`.
#[derive(Clone, Debug, Args)]
pub struct CommonArgs {
    /// Contract files; `-` reads one from stdin (`verify`, `bench` and `tune` need a file); a
    /// directory stands for its own `*.mpk` files, sorted by name (subdirectories are not
    /// searched); a stdlib path not on disk names the embedded contract; none means the
    /// embedded stdlib.
    pub files: Vec<PathBuf>,
    /// Override a param for every instance: `--param hidden=4096`.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_kv)]
    pub params: Vec<(String, String)>,
    /// Only this instance.
    #[arg(long)]
    pub instance: Option<String>,
    /// Plan after a predecessor whose release order is this permutation of 0..13.
    #[arg(long, value_delimiter = ',', value_name = "P0,P1,...")]
    pub preferred: Option<Vec<usize>>,
    /// How to print diagnostics.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
    pub message_format: MessageFormat,
}

fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "expected a number of jobs of at least 1, got `{s}`"
        )),
    }
}

fn parse_kv(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("expected NAME=VALUE, got `{s}`")),
    }
}

/// `--out`: a directory, existing or not. An existing non-directory at the path (or at an
/// ancestor, which would make creating it fail) is refused, naming it.
fn out_dir(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    match p
        .ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.exists())
    {
        Some(a) if !a.is_dir() && a == p.as_path() => Err(format!(
            "`--out` must be a directory, and {} is a file",
            p.display()
        )),
        Some(a) if !a.is_dir() => Err(format!(
            "`--out` must be a directory, and {} cannot be created: {} is a file",
            p.display(),
            a.display()
        )),
        _ => Ok(p),
    }
}

/// `wire --mirage`: an existing directory.
fn mirage_dir(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    if p.is_dir() {
        Ok(p)
    } else if p.exists() {
        Err(format!(
            "`--mirage` must be the MPK checkout's root directory, and {} is not a directory",
            p.display()
        ))
    } else {
        Err(format!(
            "`--mirage` names {}, which does not exist",
            p.display()
        ))
    }
}
