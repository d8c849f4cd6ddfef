//! Command-line arguments (clap derive).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The exit status table, printed in `--help`.
pub const EXIT_CODES: &str = "\
Exit status:
  0  success
  1  the contract has errors
  2  usage error
  3  an external program failed (nvcc, ptxas)
  4  something needed is absent (no nvcc for `build`), with what to install";

/// mpkc: MPK Runtime-V2 op contracts to spec headers, kernels and page plans.
#[derive(Debug, Parser)]
#[command(name = "mpkc", version, about, after_help = EXIT_CODES)]
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
    /// One JSON object per diagnostic per line on stdout (design.md, "Conventions").
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
        /// Output format.
        #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
        format: PlanFormat,
    },
    /// Check, plan, generate and compile with nvcc for every declared target.
    Build {
        /// Common options.
        #[command(flatten)]
        common: CommonArgs,
        /// Output directory for generated files and cubins.
        #[arg(long, default_value = "out")]
        out: PathBuf,
        /// Parallel nvcc jobs (default: available cores).
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
    },
    /// Print the long explanation of a diagnostic code, e.g. `mpkc explain E0103`.
    Explain {
        /// The code.
        code: String,
    },
}

/// Options shared by `check`, `plan` and `build`.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Contract files; none means the embedded stdlib.
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

fn parse_kv(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("expected NAME=VALUE, got `{s}`")),
    }
}
