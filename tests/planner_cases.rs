//! Every planner case of `tests/cases/planner/` (copied from the shared reference set) must give
//! the plan, or the rejection, that MPK's algorithm gives.

use mpkc::plan::pages::{plan, Geometry, RegionRequest};
use serde_json::Value;
use std::path::Path;

fn region(v: &Value) -> RegionRequest {
    RegionRequest {
        name: v["name"].as_str().unwrap().to_string(),
        size: v["size"].as_i64().unwrap(),
        alignment: v["alignment"].as_i64().unwrap(),
        page_count: v["page_count"].as_i64().unwrap(),
        can_pack: v["can_pack"].as_bool().unwrap(),
        release_step: v["release_step"].as_i64().unwrap(),
        contiguous: v.get("contiguous").and_then(Value::as_bool).unwrap_or(true),
    }
}

fn check_case(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let g = Geometry {
        page_size: case["page_size"].as_i64().unwrap(),
        num_pages: case["num_pages"].as_u64().unwrap() as usize,
        capacity_bytes: case["capacity_bytes"].as_i64().unwrap(),
    };
    let preferred: Vec<usize> = case["preferred_physical_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let regions: Vec<RegionRequest> = case["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(region)
        .collect();
    let expect = &case["expect"];
    let got = plan(&regions, &preferred, &g);
    if !expect["ok"].as_bool().unwrap() {
        let want = expect["error"].as_str().unwrap();
        return match got {
            Err(e) if e.key() == want => Ok(()),
            Err(e) => Err(format!("expected error {want}, got {}", e.key())),
            Ok(p) => Err(format!("expected error {want}, got a plan: {p:?}")),
        };
    }
    let p = got.map_err(|e| format!("expected a plan, got error {e}"))?;
    let want_regions = expect["regions"].as_array().unwrap();
    if want_regions.len() != p.regions.len() {
        return Err("region count differs".into());
    }
    for (w, r) in want_regions.iter().zip(&p.regions) {
        let pages: Vec<usize> = w["pages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        let same = w["name"].as_str() == Some(r.name.as_str())
            && w["ordinal"].as_u64() == Some(r.ordinal as u64)
            && w["size"].as_i64() == Some(r.size)
            && pages == r.pages
            && w["offset"].as_i64() == Some(r.offset);
        if !same {
            return Err(format!(
                "region {} differs: want {w}, got pages {:?} offset {}",
                r.name, r.pages, r.offset
            ));
        }
    }
    let release: Vec<usize> = expect["release_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    if release != p.release_order {
        return Err(format!(
            "release order: want {release:?}, got {:?}",
            p.release_order
        ));
    }
    if expect["pages_used"].as_u64() != Some(p.pages_used as u64) {
        return Err(format!(
            "pages_used: want {}, got {}",
            expect["pages_used"], p.pages_used
        ));
    }
    if expect["max_byte_end"].as_i64() != Some(p.max_byte_end) {
        return Err(format!(
            "max_byte_end: want {}, got {}",
            expect["max_byte_end"], p.max_byte_end
        ));
    }
    if expect["exceeds_capacity_after_remap"].as_bool() != Some(p.exceeds_capacity(&g)) {
        return Err("exceeds_capacity_after_remap differs".into());
    }
    Ok(())
}

#[test]
fn every_planner_case_reproduces() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/planner");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 160,
        "expected the full case set, found {}",
        paths.len()
    );
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            check_case(p)
                .err()
                .map(|e| format!("{}: {e}", p.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}
