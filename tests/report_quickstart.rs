//! The report's numbers on the real quickstart: every relative change's CI is the ratio's own
//! interval (never below −100% for the quickstart's non-negative metrics, holding the point
//! estimate), and each verdict item reads the same in the terminal, report.md, report.html and
//! summary.json.

use assert_cmd::Command;
use std::path::PathBuf;

fn ctxbench() -> Command {
    let mut c = Command::cargo_bin("ctxbench").unwrap();
    c.env_remove("GITHUB_STEP_SUMMARY");
    c
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn relative_change_cis_are_bounded_and_the_same_everywhere_on_the_quickstart() {
    let dir = tempfile::tempdir().unwrap();
    let out = ctxbench()
        .arg("run")
        .arg(repo().join("evals/quickstart.toml"))
        .args(["--run-id", "qs", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let terminal = String::from_utf8(out.stdout).unwrap();
    let run_dir = dir.path().join("qs");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    let comparisons = summary["summary"]["comparisons"].as_array().unwrap();
    let mut checked = 0;
    let mut wide = 0;
    let mut unbounded = 0;
    for c in comparisons {
        let Some(point) = c["delta_pct"].as_f64() else {
            continue;
        };
        let (b, m) = (c["baseline_mean"].as_f64().unwrap(), &c["metric"]);
        // A difference (`needle.recall_delta`) is centred on 0, not a non-negative quantity:
        // its verdict is an absolute change, never a percent.
        if m.as_str().is_some_and(|m| m.ends_with("_delta")) {
            continue;
        }
        assert!(b >= 0.0, "{m}: the quickstart's metrics are non-negative");
        let ci = &c["pct_ci"];
        if ci.is_null() {
            // Only where a baseline unit scores 0 (few traces): no finite interval.
            unbounded += 1;
            continue;
        }
        let (lo, hi) = (ci["lo"].as_f64().unwrap(), ci["hi"].as_f64().unwrap());
        assert!(lo >= -100.0 - 1e-9, "{m} {}: {lo}", c["candidate"]);
        assert!(
            lo - 1e-9 <= point && point <= hi + 1e-9,
            "{m} {}: {point} outside [{lo}, {hi}]",
            c["candidate"]
        );
        // The old scaled interval went below −100% on aggressive tokens; the ratio's own CI
        // must not be a copy of it.
        let scaled_lo = 100.0 * c["ci"]["lo"].as_f64().unwrap() / b;
        if scaled_lo < -100.0 {
            wide += 1;
        }
        checked += 1;
    }
    assert!(checked > 30, "{checked} comparisons with a relative change");
    assert!(
        unbounded < checked / 2,
        "{unbounded} of {checked} without a finite CI"
    );
    assert!(
        wide > 0,
        "the quickstart has a metric whose scaled CI passed −100%"
    );

    // Markdown escapes brackets and underscores: read it unescaped.
    let md = unescape_md(&std::fs::read_to_string(run_dir.join("report.md")).unwrap());
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    let mut items = 0;
    for line in summary["summary"]["verdicts"].as_array().unwrap() {
        for item in line["items"].as_array().unwrap() {
            let text = item["text"].as_str().unwrap();
            let collapsed: String = terminal.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(collapsed.contains(text), "terminal lacks {text:?}");
            assert!(md.contains(text), "report.md lacks {text:?}");
            assert!(html.contains(text), "report.html lacks {text:?}");
            items += 1;
        }
    }
    assert!(items >= 12, "{items}");
}

fn unescape_md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(n)) if n.is_ascii_punctuation() => {}
            _ => out.push(c),
        }
    }
    out
}
