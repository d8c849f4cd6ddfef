//! The editor configurations under `editors/` are well-formed and cover the language: the VS
//! Code manifest and TextMate grammar are valid JSON naming each other, the grammar highlights
//! every item keyword of `grammar/mpk.pest`, and the Helix and Neovim files start `mpkc lsp`.
//! (The Neovim file is also exercised by tests/nvim.rs in a real editor.)

use serde_json::Value;

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{}/{rel}", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn vscode_extension_and_grammar() {
    let pkg: Value = serde_json::from_str(&read("editors/vscode/package.json")).unwrap();
    assert_eq!(pkg["contributes"]["languages"][0]["extensions"][0], ".mpk");
    let grammar_path = pkg["contributes"]["grammars"][0]["path"]
        .as_str()
        .unwrap()
        .trim_start_matches("./");
    let grammar: Value =
        serde_json::from_str(&read(&format!("editors/vscode/{grammar_path}"))).unwrap();
    assert_eq!(
        grammar["scopeName"],
        pkg["contributes"]["grammars"][0]["scopeName"]
    );
    let _: Value =
        serde_json::from_str(&read("editors/vscode/language-configuration.json")).unwrap();
    assert!(read("editors/vscode/extension.js").contains("args: ['lsp']"));
    // Every item keyword of the grammar's recovery list is highlighted as a keyword.
    let pest = read("grammar/mpk.pest");
    let kw_block = pest
        .split("item_keyword = _{")
        .nth(1)
        .unwrap()
        .split('}')
        .next()
        .unwrap();
    // `kw_family | kw_targets | …`: each rule `kw_X` is the keyword `X`.
    let keywords: Vec<&str> = kw_block
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter_map(|w| w.strip_prefix("kw_"))
        .collect();
    assert!(keywords.len() >= 20, "{keywords:?}");
    let kw_regex = grammar["repository"]["keywords"]["patterns"][0]["match"]
        .as_str()
        .unwrap();
    for k in keywords {
        assert!(
            kw_regex.contains(&format!("|{k}|"))
                || kw_regex.contains(&format!("({k}|"))
                || kw_regex.contains(&format!("|{k})")),
            "keyword `{k}` not highlighted"
        );
    }
}

#[test]
fn helix_and_neovim_start_the_server() {
    let helix = read("editors/helix/languages.toml");
    assert!(
        helix.contains("command = \"mpkc\"")
            && helix.contains("args = [\"lsp\"]")
            && helix.contains("file-types = [\"mpk\"]")
    );
    assert!(helix.contains("args = [\"fmt\", \"-\"]"));
    let nvim = read("editors/nvim/mpkc.lua");
    assert!(nvim.contains("cmd = { 'mpkc', 'lsp' }") && nvim.contains("*.mpk"));
}
