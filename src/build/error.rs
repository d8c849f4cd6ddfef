//! The error of [`super::Builder::compile`]: its text is what the build shows.

/// Why a build failed. `Display` and `Debug` both give the text a build script should show
/// (the rendered diagnostics as `mpkc check` prints them, or one sentence), so a `main`
/// returning `Result<(), Error>` fails the build with the diagnostics as they are.
#[derive(Clone, PartialEq, Eq)]
pub enum Error {
    /// Contract errors, or nvcc failures mapped to the contract, rendered (codespan-reporting
    /// text, no colour), warnings included.
    Diagnostics {
        /// The errors among them.
        errors: usize,
        /// The rendered diagnostics.
        rendered: String,
    },
    /// No nvcc (what was tried and how to install one).
    Toolchain(String),
    /// A file that cannot be read, or an output that cannot be written (the path and why).
    Io(String),
    /// The builder is used wrongly (no `$OUT_DIR`, an unknown stdlib contract).
    Usage(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Diagnostics { errors, rendered } => {
                let s = if *errors == 1 { "" } else { "s" };
                write!(
                    f,
                    "{}\nmpkc: {errors} error{s}; the kernels were not built",
                    rendered.trim_end()
                )
            }
            Error::Toolchain(m) => write!(f, "mpkc: {m}"),
            Error::Io(m) => write!(f, "mpkc: {m}"),
            Error::Usage(m) => write!(f, "mpkc: {m}"),
        }
    }
}

/// The same text as `Display`: `fn main() -> Result<(), Error>` prints the `Debug` form.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}
