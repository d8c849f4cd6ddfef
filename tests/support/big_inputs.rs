//! Large contracts with one diagnostic per repeated piece, built from the stdlib's RMSNorm, for
//! the rendering tests (tests/rendering.rs) and the benchmark (benches/diagnostics.rs).

use mpkc::driver::{stdlib, Source};

/// The stdlib RMSNorm contract.
fn rmsnorm() -> String {
    stdlib::sources()
        .into_iter()
        .find(|s| s.path.contains("rmsnorm"))
        .expect("the stdlib has rmsnorm_v2")
        .text
}

/// RMSNorm with its `task_id` line repeated `n` more times: `n` E0003 errors, one per line.
pub fn duplicate_lines(n: usize) -> Source {
    let mut out = String::new();
    for line in rmsnorm().lines() {
        out.push_str(line);
        out.push('\n');
        if line.trim_start().starts_with("task_id") {
            for _ in 0..n {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Source {
        path: format!("duplicate_lines_{n}.mpk"),
        text: out,
    }
}

/// RMSNorm (one instance) with `n` more regions the body never addresses: `n` E0110 errors, and
/// one E0105 for the region count.
pub fn many_regions(n: usize) -> Source {
    let mut out = String::new();
    for line in rmsnorm().lines() {
        if line.trim_start().starts_with("instance") {
            continue;
        }
        if line.trim_start().starts_with("region reduce") {
            for k in 0..n {
                out.push_str(&format!("  region r{k} {{ bytes 16; align 16 }}\n"));
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    Source {
        path: format!("many_regions_{n}.mpk"),
        text: out,
    }
}

/// `n` RMSNorm tasks written on one line, each with one E0102 error (`align 1000`).
pub fn one_line(n: usize) -> Source {
    let text = rmsnorm();
    let items: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with("instance"))
        .filter(|l| !l.starts_with("task ") && *l != "}")
        .collect();
    let tasks: Vec<String> = (0..n)
        .map(|k| {
            let body: Vec<String> = items
                .iter()
                .map(|l| {
                    if l.starts_with("task_id") {
                        format!("task_id {}", 1000 + k)
                    } else if l.starts_with("region reduce") {
                        l.replace("align 1024", "align 1000")
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            format!("task t{k} {{ {} }}", body.join("; "))
        })
        .collect();
    Source {
        path: format!("one_line_{n}.mpk"),
        text: tasks.join(" ") + "\n",
    }
}
