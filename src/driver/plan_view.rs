//! Rendering page plans: the JSON-lines form of docs/design.md ("Conventions") and a text page map.

use crate::ir::{TargetIr, TaskIr};
use crate::plan::pages::{Geometry, PagePlan, NUM_PAGES, PAGE_SIZE};
use serde_json::json;

/// An exact byte count as JSON: a number, or its decimal digits as a string beyond 64 bits (which
/// JSON numbers cannot carry exactly; a placed plan never gets there).
fn exact_json(n: i128) -> serde_json::Value {
    i64::try_from(n).map_or_else(|_| n.to_string().into(), serde_json::Value::from)
}

/// One JSON object (one line): `{task, instance, target, pages_used, bytes, max_byte_end,
/// release_order, regions: [{name, ordinal, size, pages, offset}]}`.
pub fn plan_json(ir: &TaskIr, target: &TargetIr, plan: &PagePlan) -> String {
    let regions: Vec<_> = plan
        .regions
        .iter()
        .map(|r| json!({"name": r.name, "ordinal": r.ordinal, "size": r.size, "pages": r.pages, "offset": r.offset}))
        .collect();
    json!({
        "task": ir.name,
        "instance": ir.instance,
        "target": target.target.as_str(),
        "pages_used": plan.pages_used,
        "bytes": exact_json(ir.region_bytes()),
        "max_byte_end": plan.max_byte_end,
        "release_order": plan.release_order,
        "regions": regions,
    })
    .to_string()
}

const COLS: i64 = 64;
const BYTES_PER_COL: i64 = PAGE_SIZE / COLS;

fn letter(i: usize) -> char {
    const L: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    L.get(i).map_or('?', |&b| b as char)
}

/// The page map: one row per physical page, 64 columns of 256 bytes, a letter per region,
/// `.` free, `#` past the page's capacity (page 13 holds 11,264 bytes) and `!` where a region
/// lies past it (I-S5).
pub fn plan_text(ir: &TaskIr, target: &TargetIr, g: &Geometry, plan: &PagePlan) -> String {
    let mut out = String::new();
    let inst = ir
        .instance
        .as_ref()
        .map(|i| format!(" [{i}]"))
        .unwrap_or_default();
    out.push_str(&format!(
        "{}{inst} on {}: {} regions, {} bytes, {} of {NUM_PAGES} pages, max byte end {} of {}\n",
        ir.name,
        target.target,
        ir.regions.len(),
        ir.region_bytes(),
        plan.pages_used,
        plan.max_byte_end,
        g.capacity_bytes
    ));
    for p in 0..g.num_pages {
        let cap = g.page_capacity(p);
        let mut row: Vec<char> = (0..COLS)
            .map(|c| if c * BYTES_PER_COL >= cap { '#' } else { '.' })
            .collect();
        let mut names = Vec::new();
        for r in &plan.regions {
            let Some(k) = r.pages.iter().position(|&x| x == p) else {
                continue;
            };
            let page_start = (k as i64) * PAGE_SIZE;
            let lo = (r.offset + page_start).max(page_start) - page_start;
            let hi = (r.offset + r.size - page_start).min(PAGE_SIZE);
            if hi <= lo && r.size > 0 {
                continue;
            }
            let (c0, c1) = (
                lo / BYTES_PER_COL,
                ((hi + BYTES_PER_COL - 1) / BYTES_PER_COL).min(COLS),
            );
            for c in c0..c1.max(c0 + 1).min(COLS) {
                // A region byte past the page's capacity (page 13 after a bad remap) shows as `!`.
                row[c as usize] = if c * BYTES_PER_COL >= cap {
                    '!'
                } else {
                    letter(r.ordinal)
                };
            }
            if k == 0 {
                names.push(format!("{}={} @{}", letter(r.ordinal), r.name, r.offset));
            } else {
                names.push(format!("{}={} (cont.)", letter(r.ordinal), r.name));
            }
        }
        let row: String = row.into_iter().collect();
        out.push_str(format!("  page {p:>2} |{row}| {}", names.join(", ")).trim_end());
        out.push('\n');
    }
    out.push_str(&format!("  release order: {:?}\n", plan.release_order));
    out
}
