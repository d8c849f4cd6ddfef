//! The whole-chain reference of `mpkc verify --chain` (`driver::chain`): the exchange with the
//! Python runner of `gpu/python.rs` for one function of the chain's tensors by `unit.tensor`.

use super::data::{elements, HostTensor};
use super::python::{file_name, python, run, stored, stored_value, Stored, RUNNER, RUNNER_FILE};
use crate::ir::Dtype;
use serde_json::json;
use std::path::Path;

/// Runs the whole-chain reference `layer` (`mpkc verify --chain`) in `dir`: its inputs are the
/// chain's unlinked inputs (`inputs[stage][input]`) and the fed tensors the kernels wrote
/// (`written[stage][i]`, each stage's `TaskIr::written` order), passed to the function as one dict by `unit.tensor`; its one
/// result is the chain's output, `out` (name, dtype, dims). A chain with a paged KV cache passes
/// the run's page table `paged` as the function's `paged_kv` argument, as a task's reference gets
/// it (docs/references.md). Returns its values. Errors: the exchange cannot be written, the
/// runner fails, the result has the wrong size.
pub fn run_chain_reference(
    layer: &super::run::LayerReference,
    inputs: &[Vec<HostTensor>],
    written: &[Vec<HostTensor>],
    out: (&str, Dtype, &[i64]),
    paged: Option<&super::paged::PagedRun>,
    dir: &Path,
    cuda_device: usize,
) -> Result<Vec<f64>, String> {
    let io = |e: std::io::Error| {
        format!(
            "cannot write the chain reference's exchange in {}: {e}",
            dir.display()
        )
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let module = std::path::absolute(&layer.module).map_err(io)?;
    let mut ins = Vec::new();
    let named = layer
        .inputs
        .iter()
        .map(|(n, (st, i))| (n, &inputs[*st][*i]))
        .chain(
            layer
                .feeds
                .iter()
                .map(|(n, (st, o))| (n, &written[*st][*o])),
        );
    for (i, (name, x)) in named.enumerate() {
        let f = file_name("in", i, name);
        std::fs::write(dir.join(&f), &x.bytes).map_err(io)?;
        ins.push(json!({"name": name, "dtype": x.dtype.as_str(), "shape": x.dims, "file": f}));
    }
    let (out_name, dtype, dims) = out;
    let out_file = file_name("out", 0, out_name);
    let mut manifest = json!({
        "format": "mpkc-reference-1",
        "unit": "chain",
        "module": module,
        "function": layer.function,
        "params": {},
        "call": "dict",
        "inputs": ins,
        "outputs": [{"name": out_name, "dtype": dtype.as_str(), "shape": dims,
            "file": out_file, "stored": match stored(dtype) { Stored::F64 => "f64", Stored::I64 => "i64" }}],
    });
    if let (Some(p), Some(m)) = (paged, manifest.as_object_mut()) {
        m.insert("paged_kv".into(), p.to_json());
    }
    let path = dir.join("manifest.json");
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(io)?;
    std::fs::write(dir.join(RUNNER_FILE), RUNNER).map_err(io)?;
    run(&python(), &path, cuda_device)?;
    let bytes = std::fs::read(dir.join(&out_file))
        .map_err(|e| format!("the chain reference wrote no output `{out_name}` ({e})"))?;
    let n = elements(dims);
    if bytes.len() != 8 * n {
        return Err(format!(
            "the chain reference's output `{out_name}` has {} values, the chain's has {n}",
            bytes.len() / 8
        ));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| stored_value(dtype, c.try_into().unwrap_or([0; 8])))
        .collect())
}
