//! The module layering of `src/` (documented in `src/lib.rs`): every top-level module has a rank
//! and may import (`crate::x`, `use crate::{x, …}`) only modules of a strictly lower rank, so the
//! module graph has no cycles. A source scan: it reads every `.rs` file under `src/`, comments
//! stripped, test modules included (a test-only import is still an edge).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Rank per top-level module: lower may not import higher, equal ranks may not import each
/// other. Keep in step with the table in `src/lib.rs`.
const RANKS: &[(&str, u32)] = &[
    ("error", 0),
    ("output", 0),
    ("confcore", 0),
    ("trace", 1),
    ("record", 1),
    ("evalspec", 1),
    ("tokens", 2),
    ("pricing", 2),
    ("metrics", 2),
    ("gate", 3),
    ("engine", 4),
    ("report", 4),
    ("providers", 5),
    ("config", 6),
    ("runner", 7),
    ("evals", 8),
    ("cli", 9),
];

/// Known imports against the layering, each with the change that removes it. An entry that no
/// longer matches an import fails the test: delete it.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// Top-level modules named by `crate::` paths in `text` (comments ignored).
fn imports(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        // `crate` must start a path segment (not `ctxbench_crate::` or `my_crate::`).
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the first segment of each top-level item.
            let mut depth = 0usize;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        rest = &group[j..];
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        let name: String = group[j..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        out.insert(name);
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Edges between distinct top-level modules: (from, to) → the files that make them.
fn module_graph(src: &Path) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for to in imports(&text) {
            if to != module {
                edges
                    .entry((module.clone(), to))
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    edges
}

/// Every problem with `edges` under `ranks` and `exceptions`; empty when the layering holds.
fn problems(
    edges: &BTreeMap<(String, String), BTreeSet<String>>,
    ranks: &[(&str, u32)],
    exceptions: &[(&str, &str, &str)],
) -> Vec<String> {
    let rank: BTreeMap<&str, u32> = ranks.iter().copied().collect();
    let excused = |a: &str, b: &str| exceptions.iter().any(|(x, y, _)| *x == a && *y == b);
    let mut out = Vec::new();
    for ((from, to), files) in edges {
        let files = files.iter().cloned().collect::<Vec<_>>().join(", ");
        match (rank.get(from.as_str()), rank.get(to.as_str())) {
            (None, _) => out.push(format!("module `{from}` has no rank ({files})")),
            (_, None) => out.push(format!("`{from}` imports `{to}`, which has no rank ({files})")),
            (Some(a), Some(b)) if a <= b && !excused(from, to) => out.push(format!(
                "`{from}` (rank {a}) imports `{to}` (rank {b}): only lower ranks may be imported ({files})"
            )),
            _ => {}
        }
    }
    for (from, to, why) in exceptions {
        if !edges.contains_key(&(from.to_string(), to.to_string())) {
            out.push(format!(
                "exception `{from}` → `{to}` ({why}) no longer occurs: delete it"
            ));
        }
    }
    // Independent of the ranks: no cycle among the non-excused edges.
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        if !excused(from, to) {
            next.entry(from.as_str()).or_default().push(to.as_str());
        }
    }
    fn visit<'a>(
        n: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut BTreeMap<&'a str, bool>,
        path: &mut Vec<&'a str>,
        out: &mut Vec<String>,
    ) {
        match state.get(n) {
            Some(true) => return, // finished
            Some(false) => {
                let start = path.iter().position(|p| *p == n).unwrap();
                out.push(format!("cycle: {} → {n}", path[start..].join(" → ")));
                return;
            }
            None => {}
        }
        state.insert(n, false);
        path.push(n);
        for m in next.get(n).into_iter().flatten() {
            visit(m, next, state, path, out);
        }
        path.pop();
        state.insert(n, true);
    }
    let mut state = BTreeMap::new();
    for n in next.keys() {
        visit(n, &next, &mut state, &mut Vec::new(), &mut out);
    }
    out
}

#[test]
fn modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = module_graph(&src);
    assert!(
        edges.contains_key(&("cli".into(), "runner".into())),
        "the scan found no imports at all: {edges:?}"
    );
    let found = problems(&edges, RANKS, EXCEPTIONS);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
    // Every ranked module exists (a renamed module must be renamed here too).
    let modules: BTreeSet<&str> = edges.keys().map(|(a, _)| a.as_str()).collect();
    for (m, _) in RANKS {
        let exists = src.join(format!("{m}.rs")).exists() || src.join(m).is_dir();
        assert!(
            exists || modules.contains(m),
            "ranked module `{m}` is not in src/"
        );
    }
}

#[test]
fn the_scan_sees_paths_groups_and_skips_comments() {
    let text = "use crate::trace::Message;\n\
                use crate::{config::ConfigError, tokens::{self, approx},\n    pricing};\n\
                // use crate::cli::UsageError;\n\
                let x = crate::engine::replay(); // crate::evals\n\
                let s = my_crate::gate::x;\n";
    let got: Vec<String> = imports(text).into_iter().collect();
    assert_eq!(got, ["config", "engine", "pricing", "tokens", "trace"]);
}

#[test]
fn upward_imports_unranked_modules_stale_exceptions_and_cycles_are_reported() {
    let edge = |a: &str, b: &str| {
        (
            (a.to_string(), b.to_string()),
            BTreeSet::from(["f.rs".into()]),
        )
    };
    let ranks = [("low", 0), ("mid", 1), ("high", 2)];
    let ok: BTreeMap<_, _> = [edge("high", "low"), edge("mid", "low")].into();
    assert!(problems(&ok, &ranks, &[]).is_empty());

    let up: BTreeMap<_, _> = [edge("low", "high")].into();
    let p = problems(&up, &ranks, &[]);
    assert!(
        p[0].contains("`low` (rank 0) imports `high` (rank 2)"),
        "{p:?}"
    );

    let new: BTreeMap<_, _> = [edge("new", "low")].into();
    assert!(problems(&new, &ranks, &[])[0].contains("`new` has no rank"));

    let stale = problems(&ok, &ranks, &[("low", "mid", "why")]);
    assert!(stale[0].contains("no longer occurs"), "{stale:?}");

    // A cycle through equal ranks is reported twice: by rank and as a cycle.
    let cyc: BTreeMap<_, _> = [edge("mid", "high"), edge("high", "mid")].into();
    let p = problems(&cyc, &ranks, &[]);
    assert!(p.iter().any(|m| m.starts_with("cycle: ")), "{p:?}");
    // Excusing one edge removes both reports.
    assert!(problems(&cyc, &ranks, &[("mid", "high", "why")]).is_empty());
}

/// Test helpers do not ship: every module of `src/` named `testing`, `test_support` or
/// `mock…` is declared under `#[cfg(test)]` (so no build of the library has it, and nothing
/// outside the crate's own tests can use it). The integration tests keep theirs in
/// `tests/it/support/`.
#[test]
fn test_helpers_are_cfg_test_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut found = Vec::new();
    let mut shipped = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            let decl = ["mod ", "pub mod ", "pub(crate) mod ", "pub(super) mod "]
                .iter()
                .find_map(|p| line.strip_prefix(p));
            let Some(name) = decl.map(|d| d.trim_end_matches([';', '{', ' '])) else {
                continue;
            };
            if !(name == "testing" || name == "test_support" || name.starts_with("mock")) {
                continue;
            }
            let at = format!("{}:{}", f.strip_prefix(&src).unwrap().display(), i + 1);
            // The attributes right above the declaration.
            let attrs = lines[..i]
                .iter()
                .rev()
                .take_while(|l| l.starts_with("#[") || l.starts_with("///"));
            if attrs.clone().any(|l| *l == "#[cfg(test)]") {
                found.push(at);
            } else {
                shipped.push(at);
            }
        }
    }
    assert!(
        shipped.is_empty(),
        "test helpers without #[cfg(test)]: {shipped:?}"
    );
    assert!(
        found.iter().any(|f| f.starts_with("providers/mod.rs")),
        "the scan did not see `providers::testing` (renamed? update this test): {found:?}"
    );
}

/// `cargo test` links the whole library into every test binary, on a 2-core CI: the library's
/// unit tests, the binary's, this one (`tests/it/`, a module per topic) and the two
/// counting-allocator tests that replace the global allocator. A new `tests/x.rs` or
/// `tests/x/main.rs` is a new binary: add a module under `tests/it/` instead (at most 12).
#[test]
fn at_most_a_dozen_test_binaries() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut binaries = vec!["src/lib.rs".to_string(), "src/main.rs".to_string()];
    let bins = root.join("src/bin");
    for dir in [root.join("tests"), bins.clone()] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            let is_target = if p.is_dir() {
                p.join("main.rs").is_file()
            } else {
                p.extension().is_some_and(|x| x == "rs")
            };
            if is_target {
                binaries.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    binaries.sort();
    assert!(
        binaries.iter().any(|b| b == "tests/it"),
        "the scan sees tests/it: {binaries:?}"
    );
    assert!(
        binaries.len() <= 12,
        "{} test binaries: {binaries:?}",
        binaries.len()
    );
}
