//! Gate rules: the grammar (see the parent module's docs) and its parser, for one rule or a
//! rules file.

use serde::Serialize;

/// Comparison operator of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Op {
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = "<")]
    Lt,
}

impl Op {
    pub fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Op::Ge => value >= threshold,
            Op::Gt => value > threshold,
            Op::Le => value <= threshold,
            Op::Lt => value < threshold,
        }
    }
    pub(super) fn lower_bound(self) -> bool {
        matches!(self, Op::Ge | Op::Gt)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Lt => "<",
        }
    }
}

/// What a rule measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    Absolute,
    Delta,
    DeltaPct,
}

/// A parsed rule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rule {
    /// The rule as written.
    pub text: String,
    pub variant: Option<String>,
    /// Report metric name (suffix removed).
    pub metric: String,
    pub kind: RuleKind,
    pub op: Op,
    pub threshold: f64,
    /// Where the rule was written (`rules.toml:3`, `--rule`, `run.json: suite.gates.rules[0]`),
    /// for errors found after parsing (an unknown metric or variant).
    #[serde(skip)]
    pub source: Option<String>,
}

impl Rule {
    /// The rule tagged with where it was written.
    pub fn at(mut self, source: impl Into<String>) -> Rule {
        self.source = Some(source.into());
        self
    }

    /// `source: rule `text``, or `rule `text`` when the source is unknown: how errors name it.
    pub fn named(&self) -> String {
        match &self.source {
            Some(src) => format!("{src}: rule `{}`", self.text),
            None => format!("rule `{}`", self.text),
        }
    }
}

/// Parse one rule (see the module docs for the grammar).
pub fn parse_rule(text: &str) -> Result<Rule, String> {
    let t = text.trim();
    let ops = [">=", "<=", ">", "<"];
    let (pos, op_str) = ops
        .iter()
        .filter_map(|o| t.find(o).map(|p| (p, *o)))
        .min_by_key(|(p, o)| (*p, std::cmp::Reverse(o.len())))
        .ok_or_else(|| {
            format!("rule `{t}`: expected `METRIC OP NUMBER` with OP one of >=, >, <=, <")
        })?;
    let op = match op_str {
        ">=" => Op::Ge,
        "<=" => Op::Le,
        ">" => Op::Gt,
        _ => Op::Lt,
    };
    let lhs = t[..pos].trim();
    let rhs = t[pos + op_str.len()..].trim();
    let threshold: f64 = rhs
        .parse()
        .ok()
        .filter(|x: &f64| x.is_finite())
        .ok_or_else(|| format!("rule `{t}`: expected a number after `{op_str}`, found `{rhs}`"))?;
    let (variant, metric_full) = match lhs.split_once(':') {
        Some((v, m)) => (Some(v.trim().to_string()), m.trim()),
        None => (None, lhs),
    };
    if variant.as_deref() == Some("") {
        return Err(format!("rule `{t}`: empty variant name before `:`"));
    }
    let valid = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            })
    };
    if !valid(metric_full) {
        return Err(format!(
            "rule `{t}`: expected a metric name like `needle.recall` before `{op_str}`, found `{metric_full}`"
        ));
    }
    let (metric, kind) = if let Some(m) = metric_full.strip_suffix(".delta_pct") {
        (m, RuleKind::DeltaPct)
    } else if let Some(m) = metric_full.strip_suffix(".delta") {
        (m, RuleKind::Delta)
    } else {
        (metric_full, RuleKind::Absolute)
    };
    Ok(Rule {
        text: t.to_string(),
        variant,
        metric: metric.to_string(),
        kind,
        op,
        threshold,
        source: None,
    })
}

/// The 1-based line of `text` where the TOML string `rule` is written, if it can be found.
fn toml_line(text: &str, rule: &str) -> Option<usize> {
    let quoted = [format!("\"{rule}\""), format!("'{rule}'")];
    text.lines()
        .position(|l| quoted.iter().any(|q| l.contains(q.as_str())))
        .map(|i| i + 1)
}

/// Parse a rules file: one rule per line (`#` comments), or a TOML file (`*.toml`) with
/// `rules = [...]` at the top level or under `[gates]`. Errors name the file and line.
pub fn parse_rules_file(path: &std::path::Path) -> Result<Vec<Rule>, String> {
    // Said as `--rules FILE` and what it is: "emptyd: Is a directory (os error 21)" named
    // neither the flag nor what was expected, and a non-UTF-8 file no line.
    let what = "expected a rules file: one rule per line, or TOML with `rules = [...]`";
    let bytes = match std::fs::read(path) {
        Err(_) if path.is_dir() => {
            return Err(format!(
                "--rules {}: is a directory; {what}",
                path.display()
            ))
        }
        Err(e) => return Err(format!("--rules {}: cannot read: {e}", path.display())),
        Ok(b) => b,
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        format!("{}:{line}: not UTF-8 text; {what}", path.display())
    })?;
    if path.extension().is_some_and(|e| e == "toml") {
        let doc: toml::Table = text
            .parse()
            .map_err(|e| format!("{}: not valid TOML: {e}", path.display()))?;
        let rules = doc
            .get("gates")
            .and_then(|g| g.get("rules"))
            .or_else(|| doc.get("rules"))
            .and_then(|r| r.as_array())
            .ok_or_else(|| {
                format!(
                    "{}: expected `rules = [\"needle.recall >= 0.95\", …]` at the top level or under [gates]",
                    path.display()
                )
            })?;
        return rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let s = r.as_str().ok_or_else(|| {
                    format!("{}: rules[{i}]: expected a string rule", path.display())
                })?;
                let at = match toml_line(&text, s) {
                    Some(line) => format!("{}:{line}", path.display()),
                    None => format!("{}: rules[{i}]", path.display()),
                };
                parse_rule(s)
                    .map(|r| r.at(at.clone()))
                    .map_err(|e| format!("{at}: {e}"))
            })
            .collect();
    }
    let mut rules = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = without_comment(line).trim();
        if l.is_empty() {
            continue;
        }
        let at = format!("{}:{}", path.display(), i + 1);
        rules.push(
            parse_rule(l)
                .map(|r| r.at(at.clone()))
                .map_err(|e| format!("{at}: {e}"))?,
        );
    }
    Ok(rules)
}

/// `line` up to its comment: a `#` that starts the line or follows whitespace, to the end.
fn without_comment(line: &str) -> &str {
    let at = line
        .char_indices()
        .find(|&(i, c)| c == '#' && (i == 0 || line[..i].ends_with(char::is_whitespace)))
        .map_or(line.len(), |(i, _)| i);
    &line[..at]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rules_file_takes_whole_line_and_trailing_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rules.txt");
        std::fs::write(
            &path,
            "# recall floor\n  # indented\nneedle.recall >= 0.9  # trailing\n\
             tokens.delta_pct <= 5\t# after a tab\naggressive: cost.delta <= 0.01#not a comment\n",
        )
        .unwrap();
        let rules = parse_rules_file(&path);
        let err = rules.unwrap_err();
        // `0.01#not` is no number: a `#` inside a word starts no comment.
        assert!(err.contains("rules.txt:5"), "{err}");
        std::fs::write(
            &path,
            "# recall floor\nneedle.recall >= 0.9  # trailing\ntokens.delta_pct <= 5\t# tab\n",
        )
        .unwrap();
        let rules = parse_rules_file(&path).unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].threshold, 0.9);
        assert_eq!(rules[1].threshold, 5.0);
    }

    #[test]
    fn parses_the_documented_forms() {
        let r = parse_rule("needle.recall >= 0.95").unwrap();
        assert_eq!(
            (r.metric.as_str(), r.kind, r.op, r.threshold),
            ("needle.recall", RuleKind::Absolute, Op::Ge, 0.95)
        );
        let r = parse_rule("  cost.delta_pct<=5 ").unwrap();
        assert_eq!(
            (r.metric.as_str(), r.kind, r.op, r.threshold),
            ("cost", RuleKind::DeltaPct, Op::Le, 5.0)
        );
        let r = parse_rule("needle.recall.delta >= -0.02").unwrap();
        assert_eq!((r.kind, r.threshold), (RuleKind::Delta, -0.02));
        let r = parse_rule("aggressive: drift.score > 4").unwrap();
        assert_eq!(
            (r.variant.as_deref(), r.metric.as_str(), r.op),
            (Some("aggressive"), "drift.score", Op::Gt)
        );
        assert_eq!(parse_rule("tokens < 1e6").unwrap().threshold, 1e6);
    }

    #[test]
    fn rejects_malformed_rules_with_a_reason() {
        assert!(parse_rule("needle.recall 0.95")
            .unwrap_err()
            .contains("expected `METRIC OP NUMBER`"));
        assert!(parse_rule("needle.recall >= high")
            .unwrap_err()
            .contains("expected a number"));
        assert!(parse_rule(">= 3")
            .unwrap_err()
            .contains("expected a metric name"));
        assert!(parse_rule("needle..recall >= 3")
            .unwrap_err()
            .contains("expected a metric name"));
        assert!(parse_rule(": x >= 3")
            .unwrap_err()
            .contains("empty variant"));
        assert!(parse_rule("x >= nan").is_err());
    }

    #[test]
    fn rules_file_reports_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rules.txt");
        std::fs::write(
            &p,
            "# gates\nneedle.recall >= 0.9\n\ncost.delta_pct <= oops\n",
        )
        .unwrap();
        let err = parse_rules_file(&p).unwrap_err();
        assert!(err.contains("rules.txt:4:"), "{err}");
        let t = dir.path().join("g.toml");
        std::fs::write(
            &t,
            "[gates]\nrules = [\"needle.recall >= 0.9\", \"cost.delta_pct <= 5\"]\n",
        )
        .unwrap();
        let rules = parse_rules_file(&t).unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[1].named(),
            format!("{}:2: rule `cost.delta_pct <= 5`", t.display())
        );
        std::fs::write(
            &t,
            "rules = [\n  \"needle.recall >= 0.9\",\n  \"x >= oops\",\n]\n",
        )
        .unwrap();
        let err = parse_rules_file(&t).unwrap_err();
        assert!(err.contains("g.toml:3: rule `x >= oops`"), "{err}");
    }

    /// A `--rules` path that is no rules file says which flag and what was expected: a
    /// directory, a missing file, text that is not UTF-8 (at its line).
    #[test]
    fn a_rules_path_that_is_no_rules_file_names_the_flag_and_what_was_expected() {
        let dir = tempfile::tempdir().unwrap();
        let err = parse_rules_file(dir.path()).unwrap_err();
        assert!(
            err.starts_with("--rules ") && err.contains("is a directory; expected a rules file"),
            "{err}"
        );
        let missing = dir.path().join("nope.txt");
        let err = parse_rules_file(&missing).unwrap_err();
        assert!(
            err.contains("--rules") && err.contains("cannot read"),
            "{err}"
        );
        let p = dir.path().join("r.txt");
        std::fs::write(&p, b"needle.recall >= 0.9\n\xff\xfe\n").unwrap();
        let err = parse_rules_file(&p).unwrap_err();
        assert!(err.contains("r.txt:2: not UTF-8 text"), "{err}");
    }
}
