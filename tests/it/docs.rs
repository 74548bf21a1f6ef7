//! The README stays a front door and the documentation's links resolve: README.md is at most
//! 300 lines and not a lab notebook again; every relative link in README.md, docs/*.md and
//! benches/{,peers/}README.md points at a file that exists (and, for `#anchor`s into Markdown, at a
//! heading that exists); the exit codes documented in docs/reliability.md and src/cli/mod.rs are
//! exactly the ones src/error.rs defines; every command the README's command list shows exists;
//! the estimate and unit counts the README and docs/evals.md quote are what `--dry-run` prints;
//! the README's verdict block is what the quickstart prints.

use crate::support::cli::ctxbench;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const README_MAX_LINES: usize = 300;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The Markdown files whose links are checked, relative to the crate root.
fn checked_files() -> Vec<PathBuf> {
    let mut files = vec![
        PathBuf::from("README.md"),
        PathBuf::from("benches/README.md"),
        PathBuf::from("benches/peers/README.md"),
    ];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Lines outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// Inline link targets `](target)` of a line (not inside inline code).
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                if let Some(end) = line[i + 2..].find(')') {
                    out.push(line[i + 2..i + 2 + end].to_string());
                    i += 2 + end;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose_lines(text)
        .into_iter()
        .filter_map(|(_, l)| {
            let t = l.trim_start_matches('#');
            (l.starts_with('#') && t.starts_with(' ')).then(|| slug(t))
        })
        .collect()
}

/// Every broken relative link of `file` (relative to `base`), as "file:line: message".
fn broken_links(base: &Path, file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(base.join(file)).unwrap();
    let dir = file.parent().unwrap_or(Path::new(""));
    let mut broken = Vec::new();
    for (n, line) in prose_lines(&text) {
        for target in link_targets(line) {
            let target = target.split_whitespace().next().unwrap_or("").to_string();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.to_path_buf()
            } else {
                dir.join(path)
            };
            let full = base.join(&resolved);
            let here = format!("{}:{n}", file.display());
            if !full.exists() {
                broken.push(format!(
                    "{here}: `{target}` -> {} is missing",
                    resolved.display()
                ));
                continue;
            }
            if let Some(anchor) = anchor {
                if full.extension().is_some_and(|x| x == "md") {
                    let headings = anchors(&std::fs::read_to_string(&full).unwrap());
                    if !headings.contains(anchor) {
                        broken.push(format!(
                            "{here}: `{target}`: no heading with anchor #{anchor} in {}",
                            resolved.display()
                        ));
                    }
                }
            }
        }
    }
    broken
}

#[test]
fn readme_is_a_front_door_of_at_most_300_lines() {
    let readme = read("README.md");
    let n = readme.lines().count();
    assert!(
        n <= README_MAX_LINES,
        "README.md has {n} lines (at most {README_MAX_LINES}): move reference material to docs/ \
         and speed figures to benches/README.md"
    );
    // Dated measurements belong in benches/README.md beside their commands, not here.
    for word in ["load average", " UTC"] {
        assert!(
            !readme.contains(word),
            "README.md mentions `{word}`: measurements go to benches/README.md"
        );
    }
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let files = checked_files();
    assert!(files.len() >= 10, "{files:?}");
    let broken: Vec<String> = files.iter().flat_map(|f| broken_links(root(), f)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_checker_finds_a_missing_file_and_a_missing_anchor() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(
        dir.path().join("other.md"),
        "# Title\n\n## A `code` heading, here\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("docs/page.md"),
        "[ok](../other.md#a-code-heading-here) [top](#page) [web](https://example.com/x)\n\
         [gone](missing.md) [bad anchor](../other.md#nope) `[in code](missing-too.md)`\n\
         ```\n[fenced](missing-three.md)\n```\n# Page\n",
    )
    .unwrap();
    let broken = broken_links(dir.path(), Path::new("docs/page.md"));
    assert_eq!(broken.len(), 2, "{broken:#?}");
    assert!(broken[0].contains("missing.md"), "{broken:#?}");
    assert!(broken[1].contains("#nope"), "{broken:#?}");
}

/// The codes of a Markdown table's first column under `## Exit codes`.
fn documented_codes(markdown: &str) -> BTreeSet<u8> {
    let section = markdown
        .split("## Exit codes")
        .nth(1)
        .expect("an `## Exit codes` section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter_map(|l| {
            l.strip_prefix("| ")?
                .split(" |")
                .next()?
                .trim()
                .parse()
                .ok()
        })
        .collect()
}

fn defined_codes() -> BTreeSet<u8> {
    use ctxbench::error::*;
    [
        EXIT_OK,
        EXIT_FAILURE,
        EXIT_USAGE,
        EXIT_GATE_FAILED,
        EXIT_INTERRUPTED,
        EXIT_TERMINATED,
    ]
    .into_iter()
    .collect()
}

#[test]
fn documented_exit_codes_are_the_defined_ones() {
    let defined = defined_codes();
    assert_eq!(
        documented_codes(&read("docs/reliability.md")),
        defined,
        "docs/reliability.md"
    );
    for src in ["src/cli/mod.rs", "src/error.rs"] {
        let listed: BTreeSet<u8> = read(src)
            .lines()
            .filter_map(|l| {
                l.strip_prefix("//! - ")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .collect();
        assert_eq!(listed, defined, "the exit-code list in {src}'s module docs");
    }
}

#[test]
fn every_command_in_the_readme_exists() {
    let readme = read("README.md");
    let block = readme
        .split("## Commands")
        .nth(1)
        .and_then(|s| s.split("```").nth(1))
        .expect("a code block under `## Commands`");
    let mut seen = 0;
    for line in block.lines().filter(|l| l.starts_with("ctxbench ")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        // `traces stats` is a subcommand of a subcommand.
        let cmd: Vec<&str> = if words[1] == "traces" {
            words[1..3].to_vec()
        } else {
            words[1..2].to_vec()
        };
        let out = ctxbench().args(&cmd).arg("--help").output().unwrap();
        assert!(
            out.status.success(),
            "`ctxbench {} --help` failed: {}",
            cmd.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        seen += 1;
    }
    assert!(
        seen >= 8,
        "only {seen} commands found in the README's command list"
    );
}

/// The README's command list names every kind `ctxbench schema KIND` prints (it left out
/// `engine-protocol`, the external-engine protocol).
#[test]
fn the_readme_names_every_schema_kind() {
    use clap::ValueEnum as _;
    let readme = read("README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("ctxbench schema KIND"))
        .expect("the README's command list shows `ctxbench schema KIND`");
    let listed: Vec<&str> = line
        .split_once("JSON Schema:")
        .expect("`# JSON Schema: KIND, …`")
        .1
        .split(',')
        .map(str::trim)
        .collect();
    let kinds: Vec<String> = ctxbench::cli::schema::SchemaKind::value_variants()
        .iter()
        .filter_map(|k| Some(k.to_possible_value()?.get_name().to_string()))
        .collect();
    assert_eq!(listed, kinds, "{line}");
}

/// The README's first real use shows `evals/real-provider.toml`'s estimate: the suite loads
/// (no key, no network: `--dry-run`) and its printed estimate is, line for line, the one the
/// README shows, so neither can drift from the other.
#[test]
fn the_readmes_real_api_estimate_is_what_dry_run_prints() {
    let out = ctxbench()
        .args(["run", "evals/real-provider.toml", "--dry-run"])
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let block = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("estimate (offline replay"))
            .take_while(|l| !l.starts_with("```") && !l.trim().is_empty())
            .map(|l| l.trim_end().to_string())
            .collect()
    };
    let printed = block(&stdout);
    assert!(
        printed.len() >= 6 && printed.iter().any(|l| l.starts_with("total spent")),
        "{stdout}"
    );
    let readme = read("README.md");
    assert!(readme.contains("ctxbench run evals/real-provider.toml --dry-run"));
    assert_eq!(
        block(&readme),
        printed,
        "README.md's estimate of evals/real-provider.toml is stale: paste what \
         `ctxbench run evals/real-provider.toml --dry-run` prints"
    );
}

/// docs/evals.md's unit counts of the quickstart (all units, and as many with one drift sample
/// per trace × variant) are what `run evals/quickstart.toml --dry-run` plans.
#[test]
fn the_evals_docs_quickstart_unit_counts_are_what_dry_run_plans() {
    let out = ctxbench()
        .args(["run", "evals/quickstart.toml", "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // `plan     quickstart: … = 280 units`
    let total: u64 = stdout
        .lines()
        .find(|l| l.starts_with("plan "))
        .and_then(|l| l.rsplit_once(" = "))
        .and_then(|(_, n)| n.strip_suffix(" units"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no plan line:\n{stdout}"));
    // `drift   2   2   56`: samples, units per trace × variant, units
    let drift: Vec<u64> = stdout
        .lines()
        .find(|l| l.starts_with("drift "))
        .unwrap_or_else(|| panic!("no drift row:\n{stdout}"))
        .split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect();
    let (per_pair, units) = (drift[1], drift[2]);
    let one_per_pair = total - units + units / per_pair;
    let doc = read("docs/evals.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let want = format!("the quickstart plans {total} units instead of {one_per_pair}");
    assert!(
        doc.contains(&want),
        "docs/evals.md is stale: it should say `{want}`"
    );
    let folds = format!(
        "{per_pair} folds = {units} drift units, not {}",
        units / per_pair
    );
    assert!(doc.contains(&folds), "docs/evals.md should say `{folds}`");
}

/// The README's verdict block ("This is the quickstart's, verbatim") is what `run
/// evals/quickstart.toml` prints at 100 columns, line for line: a change to a statistic, a
/// formatter or the offline provider that moves a printed figure must update the README.
#[test]
fn the_readmes_verdict_block_is_what_the_quickstart_prints() {
    let readme = read("README.md");
    let start = readme
        .find("\naggressive  tokens")
        .unwrap_or_else(|| panic!("README.md has no quickstart verdict block"))
        + 1;
    let block = &readme[start..start + readme[start..].find("```").unwrap()];
    let tmp = tempfile::tempdir().unwrap();
    let out = ctxbench()
        .env("COLUMNS", "100")
        .args(["run", "evals/quickstart.toml", "-o"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let printed = &stdout[stdout
        .find("aggressive  tokens")
        .unwrap_or_else(|| panic!("no verdict lines:\n{stdout}"))..];
    let printed: Vec<&str> = printed.lines().take(block.lines().count() + 1).collect();
    assert_eq!(
        block.lines().collect::<Vec<_>>(),
        printed[..printed.len() - 1],
        "README.md's verdict block differs from the quickstart's output"
    );
    // The block is the whole of the verdict lines: the legend comes next.
    assert!(
        printed
            .last()
            .is_some_and(|l| l.starts_with("better/WORSE:")),
        "the quickstart prints more verdict lines than README.md shows: {printed:?}"
    );
}

/// The words of `text` (backticked or bare, split at spaces, commas and parentheses) that
/// `pattern` picks.
fn listed(text: &str, pattern: impl Fn(&str) -> bool) -> BTreeSet<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | '`' | '(' | ')'))
        .filter(|w| !w.is_empty() && pattern(w))
        .map(str::to_string)
        .collect()
}

/// The lists of trace formats and of the file extensions a folder walk keeps, wherever a reader
/// meets them (docs/suite.md, `import --help`, the suite schema's `from`), are the registry's
/// (`SourceFormat::ALL`, `TRACE_EXTENSIONS`): a format or extension added to the code and not
/// to a list fails here.
#[test]
fn format_and_extension_lists_are_the_registrys() {
    use ctxbench::trace::SourceFormat;
    let formats: BTreeSet<String> = SourceFormat::ALL
        .iter()
        .map(|f| f.as_str().to_string())
        .collect();
    let extensions: BTreeSet<String> = ctxbench::trace::import::TRACE_EXTENSIONS
        .iter()
        .map(|e| format!("*.{e}"))
        .collect();
    let is_ext = |w: &str| w.starts_with("*.") && !w.contains('/');

    // docs/suite.md: the folder walk's extensions and the `from` comment's formats.
    let suite = read("docs/suite.md");
    let walk = suite
        .split("keeping only")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .expect("docs/suite.md says which extensions a walk keeps");
    assert_eq!(
        listed(walk, is_ext),
        extensions,
        "docs/suite.md: the walk's extensions"
    );
    let from: String = suite
        .lines()
        .skip_while(|l| !l.starts_with("from = \"auto\""))
        .take_while(|l| l.starts_with("from = ") || l.trim_start().starts_with("#     "))
        .map(|l| l.split('#').nth(1).unwrap_or_default().replace("or:", ""))
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(
        listed(&from, |_| true),
        formats,
        "docs/suite.md: the formats `from` takes"
    );

    // `import --help`: the detection list names every format, and the walk's extensions.
    let help = ctxbench::cli::import::LONG_ABOUT;
    let detected: BTreeSet<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("The format is detected"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert_eq!(detected, formats, "import --help: the detection list");
    let walk = help
        .split("only")
        .nth(1)
        .and_then(|rest| rest.split("files are read").next())
        .expect("import --help says which extensions a walk reads");
    let walk = walk.replace(" and ", " ");
    assert_eq!(
        listed(&walk, is_ext),
        extensions,
        "import --help: the walk's extensions"
    );

    // The suite schema's description of `from`.
    let schema = serde_json::to_value(ctxbench::config::suite::schema()).unwrap();
    let text = schema["$defs"]["TracesSection"]["properties"]["from"]["description"]
        .as_str()
        .expect("`from` is described")
        .to_string();
    let named = listed(&text.replace(['.', ':'], " "), |w| formats.contains(w));
    assert_eq!(named, formats, "the suite schema's `from`");
}
