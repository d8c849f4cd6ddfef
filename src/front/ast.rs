//! The abstract syntax tree of a contract file: plain data, a [`Span`] on every node.
//!
//! Nothing here is resolved or evaluated; `sema` does that. Names are kept as written.

use crate::span::{Span, Spanned};

/// A name as written, with its span.
pub type Ident = Spanned<String>;

/// A whole `.mpk` file.
#[derive(Clone, Debug, Default)]
pub struct File {
    /// The tasks, in source order.
    pub tasks: Vec<Task>,
}

/// One `task NAME { … }` block.
#[derive(Clone, Debug, Default)]
pub struct Task {
    /// The task's name.
    pub name: Ident,
    /// The span of the whole block.
    pub span: Span,
    /// The items, in source order.
    pub items: Vec<Item>,
}

/// One declaration inside a task.
#[derive(Clone, Debug)]
pub enum Item {
    /// `family NAME`.
    Family(Ident),
    /// `targets t1, t2`.
    Targets(Vec<TargetItem>, Span),
    /// `task_id N`.
    TaskId(Expr, Span),
    /// `reduce_task_id N`: the TaskType of the derived split-K reduce task.
    ReduceTaskId(Expr, Span),
    /// `param …`.
    Param(Param),
    /// `tensor …`.
    Tensor(Box<Tensor>),
    /// `tile M 128, N 16, K 128`.
    Tile(Vec<(Ident, Expr)>, Span),
    /// `stages N`.
    Stages(Expr, Span),
    /// `mma …`.
    Mma(Mma),
    /// `tmem cols N`.
    Tmem(Expr, Span),
    /// `region …`.
    Region(Region),
    /// `channel …`.
    Channel(Channel),
    /// `sem …`.
    Sem(Sem),
    /// `roles …`.
    Roles(Vec<RoleBinding>, Span),
    /// `barrier …`.
    Barrier(Barrier),
    /// `body …`.
    Body(Body),
    /// `body loader cuda { … }`: the loader warp's code of a consumer family with a ring
    /// (always [`Body::Cuda`]).
    LoaderBody(Body),
    /// `epilogue a | b c | d e with B | …`: kind, type and the named barrier of `with`.
    Epilogue(Vec<EpilogueAlt>, Span),
    /// `granularity KIND(args)`.
    Granularity(Granularity),
    /// `lever NAME default on|off`.
    Lever(Lever),
    /// `instance NAME(p = v, …)`.
    Instance(Instance),
    /// `setmaxnreg consumer N, helpers M`.
    SetMaxNReg(Vec<(Ident, Expr)>, Span),
    /// `reference LANG "PATH" fn NAME (KEY = VALUE, …)`.
    Reference(Reference),
    /// `use HELPER [from "FILE.mpk"] [(PARAM = VALUE, …)]`.
    Use(Use),
    /// `route W by IDS per slot | sum slots`.
    Route(Route),
    /// `require A OP B [, "message"]`.
    Require(Require),
}

/// One alternative of an `epilogue` line: the epilogue's name, then its optional second word
/// and `with` operand (`split_k bf16 with B`).
pub type EpilogueAlt = (Ident, Option<Ident>, Option<Ident>);

impl Item {
    /// The item's keyword, for messages.
    pub fn keyword(&self) -> &'static str {
        match self {
            Item::Family(_) => "family",
            Item::Targets(..) => "targets",
            Item::TaskId(..) => "task_id",
            Item::ReduceTaskId(..) => "reduce_task_id",
            Item::Param(_) => "param",
            Item::Tensor(_) => "tensor",
            Item::Tile(..) => "tile",
            Item::Stages(..) => "stages",
            Item::Mma(_) => "mma",
            Item::Tmem(..) => "tmem",
            Item::Region(_) => "region",
            Item::Channel(_) => "channel",
            Item::Sem(_) => "sem",
            Item::Roles(..) => "roles",
            Item::Barrier(_) => "barrier",
            Item::Body(_) => "body",
            Item::LoaderBody(_) => "body loader",
            Item::Epilogue(..) => "epilogue",
            Item::Granularity(_) => "granularity",
            Item::Lever(_) => "lever",
            Item::Instance(_) => "instance",
            Item::SetMaxNReg(..) => "setmaxnreg",
            Item::Reference(_) => "reference",
            Item::Use(_) => "use",
            Item::Route(_) => "route",
            Item::Require(_) => "require",
        }
    }
}

/// A target with an optional capacity override: `sm_90a(smem 227328)`.
#[derive(Clone, Debug)]
pub struct TargetItem {
    /// The target name (`sm_100a`, `sm_90a`).
    pub name: Ident,
    /// `(key value)` override, e.g. `smem 227328`.
    pub setting: Option<(Ident, Expr)>,
    /// Whole item.
    pub span: Span,
}

/// `param NAME: TYPE [in LO..=HI] [= VALUE]`.
#[derive(Clone, Debug)]
pub struct Param {
    /// The parameter's name.
    pub name: Ident,
    /// Its type as written (`int`, `f32`, `bool`).
    pub ty: Ident,
    /// Allowed range, inclusive bounds after normalisation (`..` is turned into `..=hi-1` by sema).
    pub range: Option<ParamRange>,
    /// Default value.
    pub default: Option<Value>,
    /// `= runtime`: the value is the token count MPK's runtime decides per step (at most the
    /// range's upper end, which every compile-time use takes); the keyword's span.
    pub runtime: Option<Span>,
    /// Whole declaration.
    pub span: Span,
}

/// `in LO..=HI` or `in LO..HI`.
#[derive(Clone, Debug)]
pub struct ParamRange {
    /// Lower bound.
    pub lo: Expr,
    /// Upper bound.
    pub hi: Expr,
    /// True for `..=`.
    pub inclusive: bool,
    /// `step S`: only `lo + k * S` lies in the range (integer ranges).
    pub step: Option<Expr>,
    /// Whole range.
    pub span: Span,
}

/// A parameter value.
#[derive(Clone, Debug)]
pub enum Value {
    /// `true` / `false`.
    Bool(bool, Span),
    /// Any expression (integer or float literal).
    Expr(Expr),
}

impl Value {
    /// The value's span.
    pub fn span(&self) -> Span {
        match self {
            Value::Bool(_, s) => *s,
            Value::Expr(e) => e.span,
        }
    }
}

/// Direction of a tensor relative to the task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Read by the task (`input_ptrs`).
    In,
    /// Written by the task (`output_ptrs`).
    Out,
    /// Read and written in place (`input_ptrs`, as MPK's in-place tensors: the KV cache its
    /// attention tasks append to is among their inputs).
    InOut,
}

impl Direction {
    /// Whether the task reads the tensor (`in`, `inout`): it is in `input_ptrs`.
    pub fn is_read(self) -> bool {
        self != Direction::Out
    }

    /// Whether the task writes the tensor (`out`, `inout`).
    pub fn is_written(self) -> bool {
        self != Direction::In
    }

    /// The keyword as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
            Direction::InOut => "inout",
        }
    }
}

/// A tensor's role as written: what the tensor is to the op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensorRole {
    /// `weight`: read-only operand of the op (the MMA's weights in a pipeline).
    Weight,
    /// `activation`: the per-token operand.
    Activation,
    /// `residual`: added to the result in the epilogue.
    Residual,
    /// `output`: the op's result.
    Output,
    /// `partials`: f32 split-K partial sums.
    Partials,
    /// `counters`: int32 arrival counters, one per output tile (`split_k bf16`).
    Counters,
    /// `index`: int32 expert ids a `route` reads at run time.
    Index,
    /// `grid_barrier`: the i64 counters of a grid-wide task's in-op grid barriers.
    GridBarrier,
    /// `scratch`: GMEM the op writes and reads for itself; no result.
    Scratch,
    /// `scale of T`: the block scales of tensor `T`.
    ScaleOf(Ident),
}

impl TensorRole {
    /// The role as written (`scale of W`).
    pub fn text(&self) -> String {
        match self {
            TensorRole::Weight => "weight".into(),
            TensorRole::Activation => "activation".into(),
            TensorRole::Residual => "residual".into(),
            TensorRole::Output => "output".into(),
            TensorRole::Partials => "partials".into(),
            TensorRole::Counters => "counters".into(),
            TensorRole::Index => "index".into(),
            TensorRole::GridBarrier => "grid_barrier".into(),
            TensorRole::Scratch => "scratch".into(),
            TensorRole::ScaleOf(t) => format!("scale of {}", t.node),
        }
    }
}

/// `view(stride S, offset O)`: a row-strided view of a wider parent tensor.
#[derive(Clone, Debug, Default)]
pub struct ViewSpec {
    /// Elements from one row of the view to the next (the parent's row length).
    pub stride: Option<Expr>,
    /// Elements from the start of a parent row to the view's first column.
    pub offset: Option<Expr>,
    /// Whole `view(...)`.
    pub span: Span,
}

/// `paged(page 64, max_context 16384, requests m)`: a pool of KV-cache pages addressed through
/// MPK's paged-KV page table (docs/language.md, "Paged KV caches").
#[derive(Clone, Debug, Default)]
pub struct PagedSpec {
    /// Tokens per page (the tensor's second extent).
    pub page: Option<Expr>,
    /// The most tokens of context one request holds.
    pub max_context: Option<Expr>,
    /// Requests of a step (one token each: decode), at most MPK_MAX_NUM_BATCHED_REQUESTS.
    pub requests: Option<Expr>,
    /// Whole `paged(...)`.
    pub span: Span,
}

/// `tensor NAME: DTYPE[dims] in|out|inout [ROLE] [view(...)] [paged(...)] [tma(...)]`.
#[derive(Clone, Debug)]
pub struct Tensor {
    /// Name.
    pub name: Ident,
    /// Element type as written.
    pub dtype: Ident,
    /// Shape, outermost first.
    pub dims: Vec<Expr>,
    /// In, out or inout.
    pub direction: Spanned<Direction>,
    /// What the tensor is to the op (`weight`, `scale of W`, …), when stated.
    pub role: Option<Spanned<TensorRole>>,
    /// Row stride and column offset, when the tensor is a view of a wider parent.
    pub view: Option<ViewSpec>,
    /// Page size, context and requests, when the tensor is a paged KV cache.
    pub paged: Option<PagedSpec>,
    /// TMA description, if loaded through a tensor map.
    pub tma: Option<TmaSpec>,
    /// Whole declaration.
    pub span: Span,
}

/// `tma(box [...], swizzle 128B, l2 evict_first)`.
#[derive(Clone, Debug, Default)]
pub struct TmaSpec {
    /// Box extents in elements, innermost first (as `cuTensorMapEncodeTiled` takes them).
    pub boxes: Option<Spanned<Vec<Expr>>>,
    /// Swizzle mode as written (`128B`, `64B`, `32B`, `none`).
    pub swizzle: Option<Ident>,
    /// L2 hint as written (`evict_first`, `evict_last`, `evict_normal`).
    pub l2: Option<Ident>,
    /// Whole `tma(...)`.
    pub span: Span,
}

/// `mma ENGINE KIND (A x B -> D) m.. n.. k..`.
#[derive(Clone, Debug)]
pub struct Mma {
    /// `tcgen05` or `wgmma`.
    pub engine: Ident,
    /// Instruction kind (`f16`, `mxf8f6f4`, …).
    pub kind: Ident,
    /// A operand dtype.
    pub a: Ident,
    /// B operand dtype.
    pub b: Ident,
    /// Accumulator dtype.
    pub d: Ident,
    /// Shape components (`m`, `n`, `k`) with their extents.
    pub dims: Vec<(Spanned<char>, Expr)>,
    /// Whole declaration.
    pub span: Span,
}

/// `region NAME[stage] { … }`.
#[derive(Clone, Debug)]
pub struct Region {
    /// Name (stage arrays expand to `NAME_0`, `NAME_1`, …).
    pub name: Ident,
    /// Present for `[stage]` arrays.
    pub staged: Option<Span>,
    /// Attributes in source order.
    pub attrs: Vec<RegionAttr>,
    /// Whole declaration.
    pub span: Span,
}

/// One attribute of a region.
#[derive(Clone, Debug)]
pub enum RegionAttr {
    /// `bytes EXPR`: size in bytes.
    Bytes(Expr, Span),
    /// `align EXPR`: alignment in bytes.
    Align(Expr, Span),
    /// `pack`: may share a page with other packable regions.
    Pack(Span),
    /// `release EXPR`: release step (ordering hint).
    Release(Expr, Span),
    /// `pages EXPR`: explicit page count.
    Pages(Expr, Span),
    /// `contiguous BOOL`.
    Contiguous(bool, Span),
    /// `holds T[n] name, …`: the typed members the region holds, in layout order.
    Holds(Vec<Held>, Span),
}

/// One member of `holds`: `mbarrier[6]`, `tmem_addr`, `f32[4 * tile.N] amax`.
#[derive(Clone, Debug)]
pub struct Held {
    /// The member type as written (`mbarrier`, `u64`, `tmem_addr` or a dtype).
    pub ty: Ident,
    /// The element count (`[n]`; one when absent).
    pub count: Option<Expr>,
    /// The member's name, if given.
    pub name: Option<Ident>,
    /// The whole member.
    pub span: Span,
}

/// How a barrier is arrived.
#[derive(Clone, Debug)]
pub enum Arrival {
    /// TMA byte delivery (`complete_tx`), naming the tensors whose boxes land on it.
    Tma(Vec<Ident>, Span),
    /// TMA bulk copies (`cp.async.bulk`, no tensor map) of the named tensors' bytes, issued by a
    /// consumer family's loader body (`bulk ckv`).
    Bulk(Vec<Ident>, Span),
    /// `tcgen05.commit` (one arrival).
    Commit(Span),
    /// N threads arrive, after the named barrier (`threads 32 after B`) when given.
    Threads(Expr, Option<Ident>, Span),
}

impl Arrival {
    /// The arrival's span.
    pub fn span(&self) -> Span {
        match self {
            Arrival::Tma(_, s)
            | Arrival::Bulk(_, s)
            | Arrival::Commit(s)
            | Arrival::Threads(_, _, s) => *s,
        }
    }
}

/// Where a channel's data lives.
#[derive(Clone, Debug)]
pub enum ChannelStorage {
    /// A staged region ring, with an optional explicit depth.
    Region { region: Ident, depth: Option<Expr> },
    /// TMEM accumulator slots.
    Tmem { slots: Expr },
}

/// A clause of a channel declaration.
#[derive(Clone, Debug)]
pub enum ChannelClause {
    /// `PRODUCER -> CONSUMER (ARRIVAL)`: the full edge.
    Edge {
        producer: Ident,
        consumer: Ident,
        arrival: Arrival,
        span: Span,
    },
    /// `empty by ROLE (ARRIVAL)`: the empty edge.
    EmptyBy {
        role: Ident,
        arrival: Arrival,
        span: Span,
    },
    /// `shares_empty CHANNEL`.
    SharesEmpty(Ident, Span),
    /// `reinit ROLE`.
    Reinit(Ident, Span),
    /// `drain`: the producer waits every stage's empty barrier at task end.
    Drain(Span),
    /// `early_exit ROLE arrives full|empty`.
    EarlyExit {
        role: Ident,
        empty: bool,
        span: Span,
    },
}

/// `channel NAME: STORAGE, clauses…`.
#[derive(Clone, Debug)]
pub struct Channel {
    /// Name.
    pub name: Ident,
    /// Storage.
    pub storage: ChannelStorage,
    /// Storage span.
    pub storage_span: Span,
    /// Clauses in order.
    pub clauses: Vec<ChannelClause>,
    /// Whole declaration.
    pub span: Span,
}

/// A clause of a one-shot semaphore.
#[derive(Clone, Debug)]
pub enum SemClause {
    /// `count N`.
    Count(Expr, Span),
    /// `reinit ROLE`.
    Reinit(Ident, Span),
    /// `no_reinit`.
    NoReinit(Span),
    /// `at start` / `at end`.
    At { end: bool, span: Span },
}

/// `sem NAME: PRODUCER -> CONSUMER [(ARRIVAL)], …`.
#[derive(Clone, Debug)]
pub struct Sem {
    /// Name.
    pub name: Ident,
    /// Arriving role.
    pub producer: Ident,
    /// Waiting role.
    pub consumer: Ident,
    /// Arrival kind (default: thread arrivals).
    pub arrival: Option<Arrival>,
    /// Clauses.
    pub clauses: Vec<SemClause>,
    /// Whole declaration.
    pub span: Span,
}

/// `ROLE Wa[..Wb]`.
#[derive(Clone, Debug)]
pub struct RoleBinding {
    /// Role name.
    pub role: Ident,
    /// First warp index.
    pub first: Spanned<u32>,
    /// Last warp index (inclusive).
    pub last: Spanned<u32>,
    /// Whole binding.
    pub span: Span,
}

/// `barrier NAME = named(ID, threads N[, by ROLE])`.
#[derive(Clone, Debug)]
pub struct Barrier {
    /// Name.
    pub name: Ident,
    /// Hardware barrier id.
    pub id: Expr,
    /// Participating threads.
    pub threads: Expr,
    /// Role whose warps use it (default: consumer).
    pub by: Option<Ident>,
    /// Whole declaration.
    pub span: Span,
}

/// The task body.
#[derive(Clone, Debug)]
pub enum Body {
    /// `NAME(inputs -> outputs; scalars)`: a stdlib body template.
    Template {
        /// Template name.
        name: Ident,
        /// Input tensors.
        inputs: Vec<Ident>,
        /// Output tensors.
        outputs: Vec<Ident>,
        /// Scalar params.
        scalars: Vec<Ident>,
        /// Whole body.
        span: Span,
    },
    /// `cuda { … }`: inline CUDA, kept verbatim (the text between the braces).
    Cuda {
        /// The CUDA text.
        code: String,
        /// Span of the text between the braces.
        code_span: Span,
        /// Whole body.
        span: Span,
    },
}

/// `reference python "silu_mul_fp8.ref.py" fn silu_mul_fp8 (rel_l2 = 2e-2)`: the function
/// `mpkc verify` runs on the kernel's inputs to check an inline body (docs/references.md).
#[derive(Clone, Debug)]
pub struct Reference {
    /// The language (`python`, the only one).
    pub language: Ident,
    /// The file, relative to the contract, without its quotes (the span covers the quotes).
    pub path: Spanned<String>,
    /// The function the file defines.
    pub function: Ident,
    /// Tolerances: the key as written (`rel_l2`, `y.atol`) and its value.
    pub tolerances: Vec<(Ident, Value)>,
    /// Whole declaration.
    pub span: Span,
}

/// `use fp8_quant_1x128 from "fp8_quant_1x128.mpk" (n = hidden)`: a helper (family E) whose
/// `__device__` function the task's inline body calls by name (docs/language.md, "Helpers").
#[derive(Clone, Debug)]
pub struct Use {
    /// The helper's task name (the function's name).
    pub name: Ident,
    /// The file that declares it, relative to the contract, without its quotes (the span covers
    /// the quotes); `None` for a helper of the same file.
    pub from: Option<Spanned<String>>,
    /// Settings of the helper's params, as an `instance` writes them; values are evaluated in
    /// the using task (its params may appear in them).
    pub sets: Vec<(Ident, Value)>,
    /// Whole declaration.
    pub span: Span,
}

/// `granularity KIND(args)`.
#[derive(Clone, Debug)]
pub struct Granularity {
    /// `per_tile`, `grid_wide`.
    pub kind: Ident,
    /// Arguments.
    pub args: Vec<GranArg>,
    /// Whole declaration.
    pub span: Span,
}

/// One granularity argument: `tasks 4`, `skip_after_step0`, `justification "…"`.
#[derive(Clone, Debug)]
pub struct GranArg {
    /// Key.
    pub key: Ident,
    /// Value.
    pub value: Option<GranValue>,
    /// Whole argument.
    pub span: Span,
}

/// The value of a granularity argument.
#[derive(Clone, Debug)]
pub enum GranValue {
    /// An expression (or a bare name, as a path expression).
    Expr(Expr),
    /// A string literal (unquoted content).
    Str(Spanned<String>),
}

/// `lever NAME default on|off`.
#[derive(Clone, Debug)]
pub struct Lever {
    /// Name (an MPK compile-time define).
    pub name: Ident,
    /// The default.
    pub default_on: Spanned<bool>,
    /// What it changes when on: `l2 TENSOR HINT` (the tensor and the policy), with the span of
    /// the effect.
    pub effect: Option<(Ident, Ident, Span)>,
    /// Whole declaration.
    pub span: Span,
}

/// `instance NAME(p = v, …)`.
#[derive(Clone, Debug)]
pub struct Instance {
    /// Instance name (suffix of generated file names).
    pub name: Ident,
    /// Parameter settings.
    pub sets: Vec<(Ident, Value)>,
    /// Whole declaration.
    pub span: Span,
}

/// An integer (or, in param values, float) expression.
#[derive(Clone, Debug)]
pub struct Expr {
    /// The expression.
    pub kind: ExprKind,
    /// Its span.
    pub span: Span,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (truncating integer division)
    Div,
    /// `%`
    Rem,
}

impl BinOp {
    /// The operator's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }
}

/// Expression forms.
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// Integer literal that fits in `i64`.
    Int(i64),
    /// Float literal.
    Float(f64),
    /// A number literal no `i64`/`f64` holds as written; evaluating it reports it (see
    /// `front::literal`).
    BadLit(BadLit),
    /// A name (`hidden`, `stages`, `stage`) or dotted name (`tile.N`).
    Path(Vec<Ident>),
    /// `-e`.
    Neg(Box<Expr>),
    /// `a op b`.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `f(args)`.
    Call(Ident, Vec<Expr>),
}

/// A literal kept as written because no `i64`/`f64` holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLit {
    /// The literal as written.
    pub text: String,
    /// Why it has no value.
    pub kind: BadLitKind,
}

/// Why a literal has no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadLitKind {
    /// An integer of 2^63 or more; `is_i64_min_magnitude`: exactly 2^63, which `-` makes
    /// `i64::MIN`.
    IntTooLarge {
        /// The literal is 2^63.
        is_i64_min_magnitude: bool,
    },
    /// A float with a non-zero digit that reads as 0 (`2.4e-324`).
    FloatTooSmall,
}

impl std::fmt::Display for Expr {
    /// The expression as source-like text (fully parenthesised where precedence needs it).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn prec(e: &Expr) -> u8 {
            match &e.kind {
                ExprKind::Binary(BinOp::Add | BinOp::Sub, ..) => 1,
                ExprKind::Binary(..) => 2,
                _ => 3,
            }
        }
        match &self.kind {
            ExprKind::Int(v) => write!(f, "{v}"),
            ExprKind::Float(v) => write!(f, "{v:?}"),
            ExprKind::BadLit(b) => write!(f, "{}", b.text),
            ExprKind::Path(p) => {
                let parts: Vec<&str> = p.iter().map(|i| i.node.as_str()).collect();
                write!(f, "{}", parts.join("."))
            }
            ExprKind::Neg(e) if prec(e) < 3 => write!(f, "-({e})"),
            ExprKind::Neg(e) => write!(f, "-{e}"),
            ExprKind::Binary(op, l, r) => {
                let p = prec(self);
                let lp = if prec(l) < p {
                    format!("({l})")
                } else {
                    l.to_string()
                };
                let rp = if prec(r) <= p && prec(r) < 3 {
                    format!("({r})")
                } else {
                    r.to_string()
                };
                write!(f, "{lp} {} {rp}", op.symbol())
            }
            ExprKind::Call(n, args) => {
                let a: Vec<String> = args.iter().map(|x| x.to_string()).collect();
                write!(f, "{}({})", n.node, a.join(", "))
            }
        }
    }
}

/// How a routed pipeline spends its routed slots (`route … per slot | sum slots`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteMode {
    /// `per slot`: one task per (token, slot, tile), its output row `token * slots + slot`.
    PerSlot,
    /// `sum slots`: one task per (token, tile); its K loop runs over every slot's expert and
    /// sums (the activations hold one K block per slot: `[m_real, slots * K]`).
    SumSlots,
}

/// `route W by IDS per slot | sum slots`: the weights' expert (outermost) index is read at run
/// time from the int32 index tensor `IDS`.
#[derive(Clone, Debug)]
pub struct Route {
    /// The routed weight tensor.
    pub weights: Ident,
    /// The index tensor.
    pub ids: Ident,
    /// The mode.
    pub mode: RouteMode,
    /// The mode's span.
    pub mode_span: Span,
    /// The whole item.
    pub span: Span,
}

pub use super::ast_require::{CmpOp, Require};
