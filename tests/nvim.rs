//! The done-when of the editor integration, in a real editor: headless Neovim (Debian's 0.7,
//! installed by `scripts/setup`) opens the stdlib's house linear through `mpkc lsp`, raising
//! its stage count to 7 brings the over-budget diagnostic onto the region declarations,
//! lowering it back clears it, and hover shows the page map (tests/editors/nvim_session.lua).
//!
//! Without `nvim` the test says so and passes, unless MPKC_REQUIRE_NVIM is set (as
//! `scripts/test`, and so CI, does).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn nvim() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nvim"))
        .find(|p| p.is_file())
}

#[test]
fn headless_neovim_sees_the_budget_while_editing() {
    let Some(nvim) = nvim() else {
        assert!(
            std::env::var_os("MPKC_REQUIRE_NVIM").is_none(),
            "nvim not found: run scripts/setup (installs Debian's neovim)"
        );
        eprintln!("skipped: nvim not found (scripts/setup installs it; MPKC_REQUIRE_NVIM makes this an error)");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvim");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("linear_sm100_v2.mpk");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/stdlib/linear_sm100_v2.mpk"),
        &file,
    )
    .unwrap();
    let out = dir.join("session.log");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/editors/nvim_session.lua"
    );
    let mut child = Command::new(nvim)
        .args([
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-n",
            "-c",
            &format!("luafile {script}"),
        ])
        .env("MPKC", env!("CARGO_BIN_EXE_mpkc"))
        .env("MPKC_FILE", &file)
        .env("MPKC_OUT", &out)
        .env(
            "MPKC_EDITORS",
            concat!(env!("CARGO_MANIFEST_DIR"), "/editors"),
        )
        .env("HOME", &dir)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()) && log.ends_with("RESULT ok\n"),
        "neovim session failed ({status:?}):\n{log}"
    );
    assert!(
        log.contains("E0103 at line") && log.contains("region W[stage]"),
        "{log}"
    );
    assert!(log.contains("hover: "), "{log}");
}
