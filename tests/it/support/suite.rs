//! Suite TOML texts for tests, built from the parts a test varies (`SuiteBuilder`) instead of
//! written out per test file; the shapes several tests share are named constructors.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The repository root (the package directory).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A bundled mini-swe-agent trajectory by file name, as an absolute path.
pub fn mini_swe(file: &str) -> PathBuf {
    repo().join("datasets/mini-swe-agent").join(file)
}

/// Every bundled mini-swe-agent trajectory, sorted.
pub fn mini_swe_all() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("datasets/mini-swe-agent"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".traj.json"))
        .collect();
    v.sort();
    v
}

/// evals/quickstart.toml with its paths made absolute, its output in `out`, and `providers`
/// (provider tables, e.g. from [`provider_table`]) instead of its offline ones.
pub fn quickstart_with(out: &Path, providers: &str) -> String {
    let repo = repo();
    let text = std::fs::read_to_string(repo.join("evals/quickstart.toml")).unwrap();
    let head = text.split("[providers.agent]").next().unwrap();
    let head = head
        .replace("\"../datasets/", &format!("\"{}/datasets/", repo.display()))
        .replace(
            "\"prompts/",
            &format!("\"{}/evals/prompts/", repo.display()),
        )
        .replace(
            "output_dir = \"../reports\"",
            &format!("output_dir = {:?}", out.display().to_string()),
        );
    format!("{head}\n{providers}")
}

/// A `[providers.<role>]` table of a real-API `kind` at `base_url`, uncached, without retries.
pub fn provider_table(role: &str, kind: &str, model: &str, base_url: &str) -> String {
    format!(
        "[providers.{role}]\nkind = \"{kind}\"\nmodel = \"{model}\"\nbase_url = \"{base_url}\"\n\
         cache = false\nmax_retries = 0\ntimeout_secs = 30\n"
    )
}

/// A variant line using one of the bundled summary prompts (`summary-a.md`).
pub fn prompt_file(file: &str) -> String {
    let path = repo().join("evals/prompts").join(file);
    format!("summarize.prompt.file = {:?}", path.display().to_string())
}

/// The variant table that compacts early: summarize at 15% of the window.
pub const AGGRESSIVE: &str = "summarize.trigger.fraction = 0.15";

/// The four real traces the CLI harness tests run (small, every one compacts under
/// [`AGGRESSIVE`] at a 20k window).
pub const HARNESS_TRACES: [&str; 4] = [
    "astropy__astropy-12907.traj.json",
    "psf__requests-1142.traj.json",
    "django__django-14771.traj.json",
    "sympy__sympy-13091.traj.json",
];

/// A suite's TOML text, section by section. Keys are TOML lines written verbatim; the builder
/// only fixes the order of the tables and writes paths as TOML strings.
#[derive(Clone, Debug)]
pub struct SuiteBuilder {
    suite: Vec<String>,
    traces: Vec<String>,
    engine: Vec<String>,
    base: Option<String>,
    variants: Vec<(String, String)>,
    tables: Vec<(String, String)>,
    tail: String,
}

impl SuiteBuilder {
    /// `[suite] name = "<name>"`, `output_dir = "out"`, nothing else.
    pub fn new(name: &str) -> Self {
        Self {
            suite: vec![format!("name = {name:?}"), "output_dir = \"out\"".into()],
            traces: Vec::new(),
            engine: Vec::new(),
            base: None,
            variants: Vec::new(),
            tables: Vec::new(),
            tail: String::new(),
        }
    }

    /// A `[suite]` line (`seed = 7`, `concurrency = 2`, ...).
    pub fn suite_line(mut self, line: impl Into<String>) -> Self {
        self.suite.push(line.into());
        self
    }

    pub fn seed(self, seed: u64) -> Self {
        self.suite_line(format!("seed = {seed}"))
    }

    /// Replace `output_dir = "out"` with an absolute directory.
    pub fn output_dir(mut self, dir: &Path) -> Self {
        self.suite.retain(|l| !l.starts_with("output_dir"));
        self.suite
            .push(format!("output_dir = {:?}", dir.display().to_string()));
        self
    }

    /// Drop `output_dir` (the run's directory comes from `-o`).
    pub fn no_output_dir(mut self) -> Self {
        self.suite.retain(|l| !l.starts_with("output_dir"));
        self
    }

    /// A trace path or glob, as given.
    pub fn trace(mut self, path: impl AsRef<Path>) -> Self {
        self.traces
            .push(format!("{:?}", path.as_ref().display().to_string()));
        self
    }

    /// Bundled mini-swe-agent trajectories by file name.
    pub fn mini_swe(self, files: &[&str]) -> Self {
        files.iter().fold(self, |b, f| b.trace(mini_swe(f)))
    }

    /// A bundled dataset file by its path under `datasets/`.
    pub fn dataset(self, rel: &str) -> Self {
        self.trace(repo().join("datasets").join(rel))
    }

    /// `[engine] baseline = "<name>"`.
    pub fn baseline(self, name: &str) -> Self {
        self.engine_line(format!("baseline = {name:?}"))
    }

    /// Another `[engine]` line (`on_summary_error = "skip"`).
    pub fn engine_line(mut self, line: impl Into<String>) -> Self {
        self.engine.push(line.into());
        self
    }

    /// `[engine.base]`'s body.
    pub fn base(mut self, body: impl Into<String>) -> Self {
        self.base = Some(body.into());
        self
    }

    /// `[engine.base]` = the deepagents preset at `window` tokens.
    pub fn deepagents(self, window: u64) -> Self {
        self.base(format!("preset = \"deepagents\"\nwindow = {window}"))
    }

    /// `[engine.variants.<name>]` with `body` (may be empty).
    pub fn variant(mut self, name: &str, body: impl Into<String>) -> Self {
        self.variants.push((name.into(), body.into()));
        self
    }

    /// `[evals.<name>]` with `body` (may be empty: the eval's defaults).
    pub fn eval(self, name: &str, body: impl Into<String>) -> Self {
        self.table(&format!("evals.{name}"), body)
    }

    /// Any other table (`providers.summary`, `pricing."m"`), after the evals added before it.
    pub fn table(mut self, header: &str, body: impl Into<String>) -> Self {
        self.tables.push((header.into(), body.into()));
        self
    }

    /// TOML text appended verbatim at the end (tables of the test's own).
    pub fn raw(mut self, text: impl AsRef<str>) -> Self {
        self.tail.push_str(text.as_ref());
        self
    }

    /// The TOML text.
    pub fn text(&self) -> String {
        let mut s = String::from("[suite]\n");
        lines(&mut s, &self.suite);
        if !self.traces.is_empty() {
            let _ = writeln!(s, "\n[traces]\npaths = [");
            for t in &self.traces {
                let _ = writeln!(s, "  {t},");
            }
            s.push_str("]\n");
        }
        if !self.engine.is_empty() || self.base.is_some() || !self.variants.is_empty() {
            s.push_str("\n[engine]\n");
            lines(&mut s, &self.engine);
        }
        if let Some(base) = &self.base {
            table(&mut s, "engine.base", base);
        }
        for (name, body) in &self.variants {
            table(&mut s, &format!("engine.variants.{name}"), body);
        }
        for (header, body) in &self.tables {
            s.push('\n');
            table(&mut s, header, body);
        }
        s.push_str(&self.tail);
        s
    }

    /// Write the text to `dir/<file>` and return that path.
    pub fn write(&self, dir: &Path, file: &str) -> PathBuf {
        let p = dir.join(file);
        std::fs::write(&p, self.text()).unwrap();
        p
    }
}

fn lines(s: &mut String, lines: &[String]) {
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
}

fn table(s: &mut String, header: &str, body: &str) {
    let _ = writeln!(s, "[{header}]");
    if !body.is_empty() {
        s.push_str(body);
        if !body.ends_with('\n') {
            s.push('\n');
        }
    }
}

/// Baseline `base` (the suite's engine as is) and `aggressive` ([`AGGRESSIVE`]).
pub fn base_and_aggressive(name: &str) -> SuiteBuilder {
    SuiteBuilder::new(name)
        .baseline("base")
        .variant("base", "")
        .variant("aggressive", AGGRESSIVE)
}

/// The CLI harness suite: the four [`HARNESS_TRACES`], `base` and `aggressive` at a 20k window,
/// needle at two depths and two positions (4 traces × 2 variants × (replay + 4 needle) = 40
/// units), seed 1.
pub fn harness(name: &str) -> SuiteBuilder {
    base_and_aggressive(name)
        .seed(1)
        .mini_swe(&HARNESS_TRACES)
        .base("window = 20000")
        .eval(
            "needle",
            "depths = [0.25, 0.75]\npositions = [\"tool\", \"user\"]",
        )
}

/// One real trace (astropy-12907) replayed under `aggressive` alone, its summaries asked of an
/// OpenAI-compatible server at `base_url` (`gpt-4o-mini`, no response cache); `provider` holds
/// further `[providers.summary]` lines.
pub fn remote_summaries(name: &str, base_url: &str, provider: &str) -> SuiteBuilder {
    SuiteBuilder::new(name)
        .mini_swe(&["astropy__astropy-12907.traj.json"])
        .baseline("aggressive")
        .deepagents(20000)
        .variant("aggressive", AGGRESSIVE)
        .eval("replay", "")
        .table(
            "providers.summary",
            format!(
                "kind = \"openai\"\nmodel = \"gpt-4o-mini\"\nbase_url = {base_url:?}\n\
                 cache = false\n{provider}"
            ),
        )
}
