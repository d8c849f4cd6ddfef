//! The stages of a chain (`mpkc verify --chain`, [`super::chain`]) that the harness cannot check
//! on their own because a tensor they read or wrote is updated in place (`inout`) in the same
//! launch: the chain runs once, so a buffer holds only its final value. Such a stage is checked
//! through the chain's output alone, and `mpkc verify` says which and why.
//!
//! Buffers: a linked input is its producer's output buffer (a view lies in it at its columns); an
//! input that takes an earlier stage's `inout` input (the KV cache the append writes) is that
//! stage's buffer; any other input has its own. A stage cannot be checked alone when
//! - one of its `inout` tensors lies in a buffer that is not its own (what it read before it
//!   wrote is gone), or
//! - a later stage updates in place columns of a buffer it read or wrote (the final value is not
//!   what it saw).

use crate::gpu::run::Link;
use crate::ir::{Direction, TensorIr};
use crate::valid::CheckedTask;

/// A device buffer of a chain run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Buffer {
    /// Output `.1` of stage `.0`.
    Output(usize, usize),
    /// Input `.1` of stage `.0`, uploaded for it.
    Input(usize, usize),
}

/// The columns `[start, end)` of each `stride`-element row a tensor covers in its buffer, as
/// `(stride, start, end)`; `None` for the whole buffer.
type Columns = Option<(i64, i64, i64)>;

/// One tensor of a stage as the buffer sees it.
struct Access<'a> {
    buffer: Buffer,
    columns: Columns,
    name: &'a str,
    /// Updated in place (`inout`).
    inout: bool,
}

/// The columns of `t` in its buffer ([`Columns`]).
fn columns(t: &TensorIr) -> Columns {
    let cols = t.dims.last().copied().unwrap_or(1);
    t.view.map(|v| (v.row_stride, v.offset, v.offset + cols))
}

/// Whether two tensors in one buffer share an element (different strides: assumed so).
fn overlap(a: Columns, b: Columns) -> bool {
    match (a, b) {
        (Some((sa, a0, a1)), Some((sb, b0, b1))) if sa == sb => a0 < b1 && b0 < a1,
        _ => true,
    }
}

/// The buffer input `input` of stage `stage` lies in.
fn buffer_of(
    tasks: &[&CheckedTask],
    links: &[Link],
    shared: &[Link],
    stage: usize,
    input: usize,
) -> Buffer {
    let to = |l: &&Link| l.to_task == stage && l.to_input == input;
    if let Some(l) = links.iter().find(to) {
        return Buffer::Output(l.from_task, l.from_output);
    }
    // An earlier stage's `inout` input's buffer, not a copy of its values.
    match shares_inout_buffer(tasks, shared, stage, input) {
        Some((st, si)) => buffer_of(tasks, links, shared, st, si),
        None => Buffer::Input(stage, input),
    }
}

/// Whether input `input` of stage `stage` shares the buffer of an earlier stage's `inout` input
/// (rather than a copy of its values): what the harness must give it.
pub fn shares_inout_buffer(
    tasks: &[&CheckedTask],
    shared: &[Link],
    stage: usize,
    input: usize,
) -> Option<(usize, usize)> {
    let l = shared
        .iter()
        .find(|l| l.to_task == stage && l.to_input == input)?;
    let source = tasks[l.from_task]
        .ir
        .inputs()
        .nth(l.from_output)
        .map(|(_, t)| t)?;
    (source.direction == Direction::InOut).then_some((l.from_task, l.from_output))
}

/// The stages that cannot be checked on their own, each with why, in stage order.
pub fn unchecked_alone(
    tasks: &[&CheckedTask],
    links: &[Link],
    shared: &[Link],
) -> Vec<(usize, String)> {
    let accesses: Vec<Vec<Access>> = tasks
        .iter()
        .enumerate()
        .map(|(s, t)| {
            let ins = t.ir.inputs().enumerate().map(move |(i, (_, x))| Access {
                buffer: buffer_of(tasks, links, shared, s, i),
                columns: columns(x),
                name: x.name.as_str(),
                inout: x.direction == Direction::InOut,
            });
            let outs = t.ir.outputs().enumerate().map(move |(o, (_, x))| Access {
                buffer: Buffer::Output(s, o),
                columns: columns(x),
                name: x.name.as_str(),
                inout: false,
            });
            ins.chain(outs).collect()
        })
        .collect();
    let mut out = Vec::new();
    for (s, acc) in accesses.iter().enumerate() {
        // Inputs come first, so an input's position is its index.
        let own = acc.iter().enumerate().find(|(i, a)| {
            a.inout && !matches!(a.buffer, Buffer::Input(st, ii) if st == s && ii == *i)
        });
        if let Some((_, a)) = own {
            out.push((s, format!("{}: `{}` is updated in place in an earlier stage's buffer, so the values it read are gone", tasks[s].ir.unit_name(), a.name)));
            continue;
        }
        let later = acc.iter().find_map(|a| {
            accesses.iter().enumerate().skip(s + 1).find_map(|(k, ak)| {
                ak.iter()
                    .find(|b| b.inout && b.buffer == a.buffer && overlap(a.columns, b.columns))
                    .map(|b| (k, a.name, b.name))
            })
        });
        if let Some((k, name, nk)) = later {
            out.push((
                s,
                format!(
                    "{}: `{name}` is updated in place afterwards (`{}.{nk}`)",
                    tasks[s].ir.unit_name(),
                    tasks[k].ir.unit_name()
                ),
            ));
        }
    }
    out
}

/// The later stage's `unit.tensor` that updates in place what written tensor `written` (its index
/// among `TaskIr::written`: an output, or an `inout` tensor) of stage `stage` holds, if any.
pub fn updated_after(
    tasks: &[&CheckedTask],
    links: &[Link],
    shared: &[Link],
    stage: usize,
    written: usize,
) -> Option<String> {
    let t = tasks.get(stage)?;
    let (h, x) = t.ir.written().nth(written)?;
    let buffer = match x.direction {
        Direction::InOut => {
            let i = t.ir.inputs().position(|(hi, _)| hi == h)?;
            buffer_of(tasks, links, shared, stage, i)
        }
        _ => Buffer::Output(stage, t.ir.outputs().position(|(ho, _)| ho == h)?),
    };
    tasks
        .iter()
        .enumerate()
        .skip(stage + 1)
        .find_map(|(k, tk)| {
            tk.ir.inputs().enumerate().find_map(|(i, (_, y))| {
                (y.direction == Direction::InOut
                    && buffer_of(tasks, links, shared, k, i) == buffer
                    && overlap(columns(x), columns(y)))
                .then(|| format!("{}.{}", tk.ir.unit_name(), y.name))
            })
        })
}
