//! The inputs of issue 9's hostile findings 1-3 (class 7, linear time), as the tester's
//! generators wrote them: many items or tasks on one line, one syntax error per line, and tasks
//! with regions for `--predecessors all`. Used by tests/linear_time.rs and the benchmarks.
#![allow(dead_code)]

const TAIL: &str = "\n  param m: int in 1..=16 = 1\n  tensor y: bf16[m] out\n  granularity per_tile(tasks m)\n  body cuda { y[task_offset] = 0; }\n}\n";

/// `n` valid `param qI: int = I` items on one line of one task.
pub fn many_params_line(n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| format!("param q{i}: int = {i}")).collect();
    format!(
        "task t {{\n  family consumer-no-smem\n  {}{TAIL}",
        items.join("; ")
    )
}

/// `n` items on one line, each naming an undeclared param (`n` E0002 errors on one line).
pub fn many_errors_line(n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| format!("param q{i}: int = x{i}")).collect();
    format!(
        "task t {{\n  family consumer-no-smem\n  {}{TAIL}",
        items.join("; ")
    )
}

/// `n` valid tasks written on one line.
pub fn tasks_one_line(n: usize) -> String {
    let tasks: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "task t{i} {{ family consumer-no-smem; param m: int in 1..=16 = 1; tensor y: bf16[m] out; granularity per_tile(tasks m); body cuda {{ y[task_offset] = 0; }} }}"
            )
        })
        .collect();
    tasks.join(" ") + "\n"
}

/// `n` one-line tasks, each with a stray `@` (one syntax error per line).
pub fn stray_token_lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("task t{i} {{ family consumer-no-smem; @ }}\n"))
        .collect()
}

/// `n` one-line tasks, each with a param missing its type and value (one syntax error per
/// line).
pub fn bad_param_lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("task t{i} {{ family consumer-no-smem; param x: = ; body cuda {{ }} }}\n"))
        .collect()
}

/// `n` consumer tasks with six regions each (for `check --predecessors all`).
pub fn region_tasks(n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        out += &format!(
            "task r{i} {{\n  family consumer\n  param m: int in 1..=16 = 1\n  tensor y: bf16[m] out\n  granularity per_tile(tasks m)\n"
        );
        for j in 0..6 {
            out += &format!(
                "  region g{j} {{ bytes {}; align 1024; pack; release {} }}\n",
                1024 * (1 + (i + j) % 20),
                1 + (i * 7 + j) % 3
            );
        }
        let uses: Vec<String> = (0..6).map(|j| format!("(void)buf.g{j};")).collect();
        out += &format!(
            "  body cuda {{ y[task_offset] = 0; {} }}\n}}\n",
            uses.join(" ")
        );
    }
    out
}
