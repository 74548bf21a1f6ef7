//! JUnit XML for `ctxbench gate`: one test case per rule × variant; failures and skips carry
//! the gate's message. Readable by GitHub, GitLab and Jenkins test reporters.

use crate::gate::{GateOutcome, RuleKind, Verdict};
use std::fmt::Write;

/// Escape text for XML content and attribute values (control characters other than tab and
/// newline are not allowed in XML 1.0 and are replaced). Shares the HTML report's escaping.
pub fn xml_escape(text: &str) -> String {
    super::html::escape_markup(text, super::html::Markup::Xml)
}

/// Render the gate outcome as JUnit XML.
pub fn render(outcome: &GateOutcome) -> String {
    let tests = outcome.run_checks.len() + outcome.results.len();
    let failures = outcome.failed();
    let skipped = outcome.skipped();
    let suite = format!(
        "ctxbench gate: {} vs {}",
        outcome.candidate_run, outcome.baseline_run
    );
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"ctxbench gate\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">",
        xml_escape(&suite)
    );
    // The candidate run's own checks (complete, failed units) first, one test case each.
    for c in &outcome.run_checks {
        let _ = write!(
            out,
            "    <testcase classname=\"ctxbench.gate.run\" name=\"{}\"",
            xml_escape(&c.check)
        );
        let _ = match c.verdict {
            Verdict::Fail => writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"run_{}\">{}</failure>\n    </testcase>",
                xml_escape(&c.message),
                xml_escape(&c.check),
                xml_escape(&format!("run {}: {}", outcome.candidate_run, c.message))
            ),
            Verdict::Pass | Verdict::Skipped => writeln!(
                out,
                ">\n      <system-out>{}</system-out>\n    </testcase>",
                xml_escape(&c.message)
            ),
        };
    }
    for r in &outcome.results {
        let _ = write!(
            out,
            "    <testcase classname=\"ctxbench.gate.{}\" name=\"{}\"",
            xml_escape(&r.variant),
            xml_escape(&r.rule)
        );
        match r.verdict {
            Verdict::Pass => {
                let _ = writeln!(
                    out,
                    ">\n      <system-out>{}</system-out>\n    </testcase>",
                    xml_escape(&r.message)
                );
            }
            Verdict::Fail => {
                // An absolute rule misses a threshold; a delta rule regresses against the
                // baseline run, or changes the wanted way but not far enough (a miss too).
                let kind = match r.kind {
                    RuleKind::Delta | RuleKind::DeltaPct if r.regression => "regression",
                    _ => "threshold_miss",
                };
                let _ = writeln!(
                    out,
                    ">\n      <failure message=\"{}\" type=\"{kind}\">{}</failure>\n    </testcase>",
                    xml_escape(&r.message),
                    xml_escape(&format!("rule `{}` on variant `{}`: {}", r.rule, r.variant, r.message))
                );
            }
            Verdict::Skipped => {
                let _ = writeln!(
                    out,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    xml_escape(&r.message)
                );
            }
        }
    }
    if !outcome.notes.is_empty() {
        let _ = writeln!(
            out,
            "    <system-out>{}</system-out>",
            xml_escape(&outcome.notes.join("\n"))
        );
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::RuleResult;

    #[test]
    fn junit_counts_and_escapes() {
        let r = |verdict, variant: &str| RuleResult {
            rule: "needle.recall >= 0.9".into(),
            kind: RuleKind::Absolute,
            variant: variant.into(),
            verdict,
            value: Some(0.5),
            ci: None,
            p_value: None,
            beyond: Some(0.4),
            regression: false,
            message: "mean < 0.9 & \"bad\"".into(),
        };
        let o = GateOutcome {
            candidate_run: "a".into(),
            baseline_run: "b".into(),
            run_checks: vec![],
            results: vec![
                r(Verdict::Pass, "x"),
                r(Verdict::Fail, "<y>"),
                r(Verdict::Skipped, "z"),
            ],
            notes: vec![],
        };
        let xml = render(&o);
        assert!(xml.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""));
        assert!(xml.contains("classname=\"ctxbench.gate.&lt;y&gt;\""));
        assert!(xml.contains("name=\"needle.recall &gt;= 0.9\""));
        assert!(xml.contains("<failure message=\"mean &lt; 0.9 &amp; &quot;bad&quot;\""));
        assert!(xml.contains("type=\"threshold_miss\""), "{xml}");
        assert_eq!(xml.matches("<testcase").count(), 3);
        assert_eq!(
            xml_escape("a\u{1}b\u{1b}]0;T\u{7}\u{202e}c"),
            "a\\x01b\\x1b]0;T\\x07\\u{202e}c"
        );
    }

    /// The candidate run's checks are test cases (a failed one a failure), the notes the
    /// suite's output.
    #[test]
    fn junit_has_the_run_checks_and_the_notes() {
        let check = |check: &str, verdict| crate::gate::RunCheck {
            check: check.into(),
            verdict,
            message: format!("{check} <said>"),
        };
        let o = GateOutcome {
            candidate_run: "a".into(),
            baseline_run: "b".into(),
            run_checks: vec![
                check("complete", Verdict::Fail),
                check("errors", Verdict::Pass),
            ],
            results: vec![],
            notes: vec!["baseline b: partial & more".into()],
        };
        let xml = render(&o);
        assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
        assert!(
            xml.contains("classname=\"ctxbench.gate.run\" name=\"complete\">\n      <failure message=\"complete &lt;said&gt;\" type=\"run_complete\""),
            "{xml}"
        );
        assert!(
            xml.contains("name=\"errors\">\n      <system-out>errors &lt;said&gt;</system-out>"),
            "{xml}"
        );
        assert!(
            xml.contains(
                "    <system-out>baseline b: partial &amp; more</system-out>\n  </testsuite>"
            ),
            "{xml}"
        );
    }
}
