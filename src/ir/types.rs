//! The node types of [`super::TaskIr`].

use super::{Dtype, Handle, L2Hint, Swizzle};
use crate::span::Span;
use std::fmt;

pub use crate::front::ast::Direction;

/// Task families (docs/design.md): how the task uses the runtime's roles and SMEM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// A: loader → launcher → consumer pipeline over a TMA ring.
    Pipeline,
    /// B: consumer-only body over planner regions.
    Consumer,
    /// C: consumer-only body with one monolithic region (hand-rolled internal offsets).
    ConsumerMonolith,
    /// D: consumer-only body that uses no dynamic SMEM.
    ConsumerNoSmem,
    /// E: a sub-op device helper called inside another task's body; not a task itself.
    Helper,
}

impl Family {
    /// Parses a family name as written in a contract.
    pub fn parse(s: &str) -> Option<Family> {
        Some(match s {
            "pipeline" => Family::Pipeline,
            "consumer" => Family::Consumer,
            "consumer-monolith" => Family::ConsumerMonolith,
            "consumer-no-smem" => Family::ConsumerNoSmem,
            "helper" => Family::Helper,
            _ => return None,
        })
    }

    /// The name as written in a contract.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Pipeline => "pipeline",
            Family::Consumer => "consumer",
            Family::ConsumerMonolith => "consumer-monolith",
            Family::ConsumerNoSmem => "consumer-no-smem",
            Family::Helper => "helper",
        }
    }

    /// The letter of docs/design.md's family table.
    pub fn letter(self) -> char {
        match self {
            Family::Pipeline => 'A',
            Family::Consumer => 'B',
            Family::ConsumerMonolith => 'C',
            Family::ConsumerNoSmem => 'D',
            Family::Helper => 'E',
        }
    }

    /// True for the consumer-only families (B, C, D), whose only non-empty role is the consumer.
    pub fn is_consumer_only(self) -> bool {
        matches!(
            self,
            Family::Consumer | Family::ConsumerMonolith | Family::ConsumerNoSmem
        )
    }
}

/// A compilation target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// Blackwell B200: tcgen05, TMEM, TMA.
    Sm100a,
    /// Hopper H100/H200: wgmma, TMA.
    Sm90a,
}

impl Target {
    /// Parses `sm_100a` / `sm_90a`.
    pub fn parse(s: &str) -> Option<Target> {
        match s {
            "sm_100a" => Some(Target::Sm100a),
            "sm_90a" => Some(Target::Sm90a),
            _ => None,
        }
    }

    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Sm100a => "sm_100a",
            Target::Sm90a => "sm_90a",
        }
    }

    /// nvcc's `-gencode` value for this target.
    pub fn gencode(self) -> &'static str {
        match self {
            Target::Sm100a => "arch=compute_100a,code=sm_100a",
            Target::Sm90a => "arch=compute_90a,code=sm_90a",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The planner capacity MPK's runtime sets on compute capability ≥ 9.0 with the 6 KB static
/// reserve of Grace builds: 225 KiB − 6 KiB = 224,256 bytes (contract doc §1.1, I-S3).
pub const DEFAULT_SMEM_CAPACITY_BYTES: i64 = 224_256;
/// The hardware opt-in maximum of dynamic SMEM per block on sm_90/sm_100 (232,448 bytes).
pub const MAX_OPTIN_SMEM_BYTES: i64 = 232_448;

/// A declared target with its SMEM capacity.
#[derive(Clone, Debug)]
pub struct TargetIr {
    /// Which target.
    pub target: Target,
    /// Dynamic SMEM capacity the planner may use, bytes.
    pub smem_capacity_bytes: i64,
    /// Where it was declared.
    pub span: Span,
}

/// The declared type of a param (README, "A tour of the language"): what values it takes and
/// the C++ type of its generated constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// `i32`: -2^31 ..= 2^31 - 1, emitted as `int32_t`.
    I32,
    /// `int` or `i64`: -2^63 ..= 2^63 - 1 (the 64-bit integers expressions compute in),
    /// emitted as `int64_t`.
    I64,
    /// `f32` (alias `float`): finite IEEE single values, emitted as a `float` literal.
    F32,
    /// `f64`: finite IEEE double values, emitted as a `double` literal.
    F64,
    /// `bool`.
    Bool,
}

impl ParamType {
    /// The type a declaration names (`int`, `i32`, `i64`, `f32`, `float`, `f64`, `bool`), if any.
    pub fn parse(name: &str) -> Option<ParamType> {
        Some(match name {
            "int" | "i64" => ParamType::I64,
            "i32" => ParamType::I32,
            "f32" | "float" => ParamType::F32,
            "f64" => ParamType::F64,
            "bool" => ParamType::Bool,
            _ => return None,
        })
    }

    /// The type's name (`int` for `int`/`i64`, `f32` for `f32`/`float`).
    pub fn name(self) -> &'static str {
        match self {
            ParamType::I32 => "i32",
            ParamType::I64 => "int",
            ParamType::F32 => "f32",
            ParamType::F64 => "f64",
            ParamType::Bool => "bool",
        }
    }

    /// The C++ type of the generated constant.
    pub fn c_type(self) -> &'static str {
        match self {
            ParamType::I32 => "int32_t",
            ParamType::I64 => "int64_t",
            ParamType::F32 => "float",
            ParamType::F64 => "double",
            ParamType::Bool => "bool",
        }
    }

    /// True for `i32` and `int`/`i64`.
    pub fn is_int(self) -> bool {
        matches!(self, ParamType::I32 | ParamType::I64)
    }

    /// True for `f32` and `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, ParamType::F32 | ParamType::F64)
    }
}

/// A parameter's value.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// `i32`, `int` or `i64` (within the declared type's range).
    Int(i64),
    /// `f32` or `f64`, as the f64 the value's text denotes (an `f32` value is finite in f32 and
    /// emitted from this text-exact double).
    Float(f64),
    /// `bool`.
    Bool(bool),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            // The shortest text that reads back as the same f64: `0.5`, `-1.0`, `1e-6`.
            ParamValue::Float(v) => write!(f, "{v:?}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// A parameter of this instance.
#[derive(Clone, Debug)]
pub struct ParamIr {
    /// Name.
    pub name: String,
    /// Declared type.
    pub ty: ParamType,
    /// Value after defaults, instance settings and `--param` overrides.
    pub value: ParamValue,
    /// The declaration.
    pub span: Span,
    /// Where the value came from (the default, an instance setting, or the declaration for CLI
    /// overrides).
    pub value_span: Span,
    /// `= runtime`: the token count MPK's runtime decides per step. `value` is then the range's
    /// upper end, the compile-time maximum every extent, plan and budget takes; the generated
    /// code reads the count at run time and clamps it to that maximum (docs/runtime-m.md).
    pub runtime: Option<RuntimeTokens>,
    /// The lowest and highest value of the declared integer range (`in LO..=HI`, or `in LO..HI`
    /// as `LO..=HI-1`); `None` without a range or for a float range. Helps that offer a new
    /// value for the param (W0116) keep to it.
    pub int_range: Option<(i64, i64)>,
    /// The declared range as text with its bounds exact (`128..=8192`, `0.0..=4.0`), integer or
    /// float; `None` without a range. The design document's "declared range" column.
    pub range_text: Option<String>,
}

impl ParamIr {
    /// The value as a contract would write it: an integer or `bool` as is, a float as the
    /// shortest text that reads back as the same value of the declared type (`f32`: `1.1`, not
    /// the f64 of its rounding, `1.100000023841858`; `0.5`, `-1.0`, `1e-6`).
    pub fn value_text(&self) -> String {
        match (&self.value, self.ty) {
            (ParamValue::Float(f), ParamType::F32) => format!("{:?}", *f as f32),
            (v, _) => v.to_string(),
        }
    }
}

/// A param decided at run time (`param m: int in LO..=MAX = runtime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeTokens {
    /// The `runtime` keyword.
    pub span: Span,
    /// The range's lower end: the fewest tokens the contract states a step runs (the count
    /// `mpkc verify` runs first). The maximum is the param's value.
    pub min: i64,
}

/// A row-strided view (`view(stride S, offset O)`): the tensor's rows (its last dimension) lie
/// `row_stride` elements apart inside a wider parent whose rows they start `offset` elements into.
/// The pointer the runtime passes is the view's first element (parent + `offset`); the kernel
/// needs only `row_stride` (a TMA map's global stride, a body's row step); the harness allocates
/// the parent and places the view at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewIr {
    /// Elements from one row to the next (≥ the row's length), the parent's row length.
    pub row_stride: i64,
    /// Elements from a parent row's start to the view's first column.
    pub offset: i64,
    /// The whole `view(...)`.
    pub span: Span,
}

/// `paged(page P, max_context C, requests R)`: the tensor (`[pages, P, row]`) is a pool of
/// KV-cache pages of `P` tokens that the task addresses through MPK's paged-KV page table
/// (`RuntimeConfig::paged_kv_indptr_buffer`, `paged_kv_indices_buffer`,
/// `paged_kv_last_page_len_buffer`): request `r`'s pages are
/// `paged_kv_indices_buffer[indptr[r] .. indptr[r + 1]]` and its context is
/// `(pages - 1) * P + last_page_len[r]` tokens (docs/language.md, "Paged KV caches"; E0028).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagedIr {
    /// Tokens per page (MPK_PAGE_SIZE; FlashMLA's 64).
    pub page_tokens: i64,
    /// The most tokens of context one request holds: what the pool and `mpkc verify` size for.
    pub max_context: i64,
    /// Requests of a step, one token each (decode): row `r` of the task's tokens is request `r`.
    pub requests: i64,
    /// Where `page`, `max_context` and `requests` are written.
    pub value_spans: [Span; 3],
    /// The whole `paged(...)`.
    pub span: Span,
}

impl PagedIr {
    /// Pages one request of `context` tokens holds.
    pub fn pages_of(&self, context: i64) -> i64 {
        if self.page_tokens <= 0 {
            return 0;
        }
        (context.max(0) + self.page_tokens - 1) / self.page_tokens
    }
}

/// A tensor's TMA description.
#[derive(Clone, Debug)]
pub struct TmaIr {
    /// Box extents in elements, innermost first.
    pub box_dims: Vec<i64>,
    /// Span of the `box [...]`.
    pub box_span: Span,
    /// Swizzle mode.
    pub swizzle: Swizzle,
    /// L2 hint.
    pub l2: Option<L2Hint>,
    /// The whole `tma(...)`.
    pub span: Span,
}

impl TmaIr {
    /// Bytes one box delivers: product of the box extents × element size.
    pub fn box_bytes(&self, dtype: Dtype) -> Option<i64> {
        self.box_dims
            .iter()
            .try_fold(dtype.bytes(), |acc, d| acc.checked_mul(*d))
    }
}

/// A tensor.
#[derive(Clone, Debug)]
pub struct TensorIr {
    /// Name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Extents, outermost first.
    pub dims: Vec<i64>,
    /// In, out or inout.
    pub direction: Direction,
    /// Row stride and offset inside a wider parent, for a view.
    pub view: Option<ViewIr>,
    /// A pool of KV-cache pages addressed through the runtime's page table.
    pub paged: Option<PagedIr>,
    /// TMA description.
    pub tma: Option<TmaIr>,
    /// What the tensor is to the op, as the contract states it, with the role's span.
    pub role: Option<(TensorRole, Span)>,
    /// Its leading extent is the run-time token count (`[m_real, K]` with `m_real = runtime`):
    /// `dims[0]` is the maximum, and rows at or past the count of a step are neither read into
    /// a result nor written.
    pub runtime_rows: bool,
    /// Declaration.
    pub span: Span,
}

/// What a tensor is to the op (`tensor W: … in weight`). The lowering binds tensors by role; the
/// direction must agree (`E0005`): `weight`, `activation`, `residual` and the scale of an input
/// are read (`in`), `output`, `partials` and the scale of an output are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorRole {
    /// `weight`: the read-only operand (a pipeline's MMA weights, an rmsnorm's gamma).
    Weight,
    /// `activation`: the per-token operand.
    Activation,
    /// `residual`: added to the result by the epilogue.
    Residual,
    /// `output`: the op's result.
    Output,
    /// `partials`: f32 split-K partial sums.
    Partials,
    /// `counters`: int32 arrival counters `[ceil(N / tile M)]`, one per output tile, for
    /// `split_k bf16`: zero before the first launch, and left zero by each run (the last split of
    /// a tile resets its counter after summing), so that one allocation serves every launch.
    Counters,
    /// `index`: int32 expert ids that a `route` reads at run time (`[m_real, slots]`).
    Index,
    /// `grid_barrier`: the monotonic counters of a grid-wide task's in-op grid barriers, one
    /// i64 per barrier site (`[sites]`, declared `inout`): site `s` of the task of step
    /// `iter_num` waits until its counter reaches `num_workers * (iter_num + 1)`, so the
    /// counters are zeroed once, at step 0 (`skip_after_step0`), and never reset (contract doc
    /// §5, I-H4).
    GridBarrier,
    /// `scratch`: global memory the op writes and reads for itself (a grid-wide task's
    /// per-task partials between two grid barriers): written, but not a result, so `mpkc
    /// verify` does not compare it and a reference does not return it.
    Scratch,
    /// `scale of T`: the block scales of tensor `T` (an input's scales are read, an output's
    /// written).
    ScaleOf(Handle<TensorIr>),
}

impl TensorRole {
    /// Whether a tensor of this role is written by the task, given whether the scaled tensor
    /// (for `scale of T`) is written.
    pub fn is_written(self, scaled_is_written: bool) -> bool {
        match self {
            TensorRole::Weight | TensorRole::Activation | TensorRole::Residual => false,
            TensorRole::Index => false,
            TensorRole::Output
            | TensorRole::Partials
            | TensorRole::Counters
            | TensorRole::GridBarrier
            | TensorRole::Scratch => true,
            TensorRole::ScaleOf(_) => scaled_is_written,
        }
    }

    /// The role word (`scale of` without the tensor's name).
    pub fn word(self) -> &'static str {
        match self {
            TensorRole::Weight => "weight",
            TensorRole::Activation => "activation",
            TensorRole::Residual => "residual",
            TensorRole::Output => "output",
            TensorRole::Partials => "partials",
            TensorRole::Counters => "counters",
            TensorRole::Index => "index",
            TensorRole::GridBarrier => "grid_barrier",
            TensorRole::Scratch => "scratch",
            TensorRole::ScaleOf(_) => "scale of",
        }
    }
}

impl TensorIr {
    /// The stated role, without its span.
    pub fn role(&self) -> Option<TensorRole> {
        self.role.map(|(r, _)| r)
    }

    /// Whether the tensor is the op's own state, written but not a result: `scratch` and
    /// `grid_barrier` ([`TensorRole`]). A reference does not return it, and `mpkc verify` does
    /// not compare it with one (a grid barrier's counters are checked against the task count).
    pub fn is_state(&self) -> bool {
        matches!(
            self.role(),
            Some(TensorRole::Scratch | TensorRole::GridBarrier)
        )
    }
    /// Number of elements (checked).
    pub fn elements(&self) -> Option<i64> {
        self.dims
            .iter()
            .try_fold(1i64, |acc, d| acc.checked_mul(*d))
    }

    /// The first extent above 2^31 - 1, which code holding extents or indices in 32-bit ints
    /// cannot take (a body template's E0009, the pipeline lowering's E0013).
    pub fn extent_past_i32(&self) -> Option<i64> {
        self.dims.iter().copied().find(|&d| d > i64::from(i32::MAX))
    }

    /// Elements from one row (last dimension) to the next: the view's stride, else the row's
    /// length.
    pub fn row_stride(&self) -> i64 {
        self.view
            .map_or_else(|| self.dims.last().copied().unwrap_or(1), |v| v.row_stride)
    }

    /// Rows: the product of every dimension but the last (checked).
    pub fn rows(&self) -> Option<i64> {
        let n = self.dims.len().saturating_sub(1);
        self.dims[..n]
            .iter()
            .try_fold(1i64, |acc, d| acc.checked_mul(*d))
    }

    /// Elements of the memory the tensor spans from its first element's parent row: `rows ×
    /// row_stride` for a view (the parent the harness allocates), else [`Self::elements`].
    pub fn parent_elements(&self) -> Option<i64> {
        match self.view {
            Some(v) => self.rows()?.checked_mul(v.row_stride),
            None => self.elements(),
        }
    }
}

/// `tile M.., N.., K..` (elements).
#[derive(Clone, Debug, Default)]
pub struct TileIr {
    /// Tile rows (MMA-M for swap-AB linears: weight rows).
    pub m: Option<i64>,
    /// Tile columns.
    pub n: Option<i64>,
    /// Tile depth.
    pub k: Option<i64>,
    /// Declaration.
    pub span: Span,
}

/// MMA engines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaEngine {
    /// `tcgen05.mma` (sm_100a).
    Tcgen05,
    /// `wgmma.mma_async` (sm_90a).
    Wgmma,
}

/// `mma ENGINE KIND (A x B -> D) mM nN kK`.
#[derive(Clone, Debug)]
pub struct MmaIr {
    /// Engine.
    pub engine: MmaEngine,
    /// Instruction kind as written (`f16`, `mxf8f6f4`, …).
    pub kind: String,
    /// A operand type.
    pub a: Dtype,
    /// B operand type.
    pub b: Dtype,
    /// Accumulator type.
    pub d: Dtype,
    /// Instruction M.
    pub m: i64,
    /// Instruction N.
    pub n: i64,
    /// Instruction K.
    pub k: i64,
    /// Declaration.
    pub span: Span,
}

/// One region after stage expansion. Its handle index is its ordinal (`REGION_<NAME>`), as MPK
/// assigns region ordinals by declaration index (contract doc §1.3).
#[derive(Clone, Debug)]
pub struct RegionIr {
    /// Expanded name (`W_0` for stage 0 of `W[stage]`).
    pub name: String,
    /// Index into [`super::TaskIr::region_groups`].
    pub group: usize,
    /// The stage index for stage arrays.
    pub stage: Option<u32>,
    /// Size in bytes (I-S1: ≥ 0).
    pub size: i64,
    /// Alignment in bytes for packing (I-S1: a power of two).
    pub align: i64,
    /// Explicit page count, or −1 to derive `ceil(size / 16384)`.
    pub page_count: i64,
    /// May share a page with other packable regions.
    pub can_pack: bool,
    /// Release step (ordering hint for the next task's preferred page order).
    pub release_step: i64,
    /// Must be true (I-S1).
    pub contiguous: bool,
    /// The declaration.
    pub span: Span,
    /// The `bytes` attribute (or the declaration).
    pub bytes_span: Span,
    /// The top-level terms of the `bytes` expression with their values, when it is a sum of
    /// two or more (for the size breakdown of E0103).
    pub bytes_terms: Vec<(String, i64)>,
    /// The param the `bytes` expression is, when it is a param's bare name (`bytes ring`):
    /// changing the size means changing that param, inside its range (W0116's help).
    pub bytes_param: Option<String>,
    /// The `align` attribute (or the declaration).
    pub align_span: Span,
    /// The `pages` attribute, if given.
    pub pages_span: Option<Span>,
    /// The typed members of `holds`, laid out in order (empty when the region states none).
    pub holds: Vec<super::HeldIr>,
    /// The `holds` attribute, if given.
    pub holds_span: Option<Span>,
}

/// A declared region or stage array.
#[derive(Clone, Debug)]
pub struct RegionGroup {
    /// Declared name.
    pub name: String,
    /// Expanded members in stage order.
    pub members: Vec<Handle<RegionIr>>,
    /// True for `NAME[stage]`.
    pub staged: bool,
    /// Declaration.
    pub span: Span,
    /// `region NAME[stage]`: the head of the declaration, for labels.
    pub head_span: Span,
}

/// The task body.
#[derive(Clone, Debug)]
pub enum BodyIr {
    /// A stdlib body template.
    Template {
        /// Template name.
        name: String,
        /// Input tensors.
        inputs: Vec<Handle<TensorIr>>,
        /// Output tensors.
        outputs: Vec<Handle<TensorIr>>,
        /// Scalar params by name.
        scalars: Vec<String>,
        /// Declaration.
        span: Span,
    },
    /// Inline CUDA.
    Cuda {
        /// The text between the braces.
        code: String,
        /// Its span (for `#line` mapping of nvcc errors).
        code_span: Span,
        /// Declaration.
        span: Span,
    },
}

impl BodyIr {
    /// The whole `body …` item.
    pub fn span(&self) -> Span {
        match self {
            BodyIr::Template { span, .. } | BodyIr::Cuda { span, .. } => *span,
        }
    }
}

/// Task granularity (contract doc §5).
#[derive(Clone, Debug)]
pub enum GranularityIr {
    /// One TaskDesc per tile; `tasks` TaskDescs in the grid.
    PerTile {
        /// Number of tasks of this op per graph step.
        tasks: i64,
        /// Tiles per task (linear family: must be 1, I-P6).
        tiles_per_task: i64,
        /// Declaration.
        span: Span,
    },
    /// One grid-wide task per worker with in-op grid barriers.
    GridWide {
        /// `skip_after_step0` seeding of the barrier scratch (I-H4).
        skip_after_step0: bool,
        /// `barrier NAME`: the consumer named barrier (128 threads) the generated
        /// `grid_sync(site)` gathers the warpgroup on around thread 0's counter update, with the
        /// name's span; `None` when not written (E0602).
        barrier: Option<(String, Span)>,
        /// Written justification.
        justification: Option<String>,
        /// Declaration.
        span: Span,
    },
}

impl GranularityIr {
    /// The `granularity` declaration.
    pub fn span(&self) -> Span {
        match self {
            GranularityIr::PerTile { span, .. } | GranularityIr::GridWide { span, .. } => *span,
        }
    }

    /// Whether the task is grid-wide: one task per worker, its count the runtime's
    /// (`num_workers`), synchronised by in-op grid barriers (contract doc §5, I-H4).
    pub fn is_grid_wide(&self) -> bool {
        matches!(self, GranularityIr::GridWide { .. })
    }

    /// Number of tasks (1 for grid-wide, per worker).
    pub fn tasks(&self) -> i64 {
        match self {
            GranularityIr::PerTile { tasks, .. } => *tasks,
            GranularityIr::GridWide { .. } => 1,
        }
    }
}

/// A lever: an MPK compile-time define.
#[derive(Clone, Debug)]
pub struct LeverIr {
    /// Define name.
    pub name: String,
    /// Default (I-H7: must be off).
    pub default_on: bool,
    /// What it changes when on; `None` is E0014 (a lever that changes nothing is not lowered).
    pub effect: Option<LeverEffect>,
    /// Declaration.
    pub span: Span,
}

/// What a lever changes when its define is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeverEffect {
    /// The L2 cache policy of every TMA load of `tensor` becomes `hint`.
    L2 {
        /// The tensor.
        tensor: TensorHandle,
        /// The policy with the lever on.
        hint: L2Hint,
        /// The effect's span.
        span: Span,
    },
}

/// Handle aliases.
pub type TensorHandle = Handle<TensorIr>;
/// Region handle.
pub type RegionHandle = Handle<RegionIr>;
