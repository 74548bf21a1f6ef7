use super::*;

/// Every declared metric has a polarity and a kind, no eval declares a leaf twice, and no
/// eval's metric shadows a common one with another polarity. (`Polarity` has no "unset" value:
/// the test reads each declaration so a metric added without one does not compile, and one
/// whose name is empty or duplicated fails here.)
#[test]
fn every_registered_metric_is_declared_once_with_a_polarity() {
    let all = EVALS
        .iter()
        .flat_map(|s| s.metrics.iter().map(move |m| (s.name, m)))
        .chain(COMMON_METRICS.iter().map(|m| ("*", m)))
        .chain(RUN_METRICS.iter().map(|m| ("run", m)));
    let mut seen = std::collections::BTreeSet::new();
    for (eval, m) in all {
        assert!(!m.name.is_empty(), "{eval}: a metric without a name");
        assert!(
            matches!(
                m.polarity,
                Polarity::Higher | Polarity::Lower | Polarity::Neutral
            ),
            "{eval}.{}",
            m.name
        );
        assert!(
            seen.insert((eval, m.name)),
            "{eval}.{} declared twice",
            m.name
        );
        if eval != "*" && eval != "run" {
            let full = format!("{eval}.{}", m.name.trim_end_matches('*'));
            assert_eq!(
                metric(&full).map(|d| d.polarity),
                Some(m.polarity),
                "{full}"
            );
        }
    }
}

/// Failure, error, overflow and violation counts are lower-is-better wherever they are
/// declared; parameters are not metrics.
#[test]
fn breakage_counts_are_lower_is_better_and_params_are_not_metrics() {
    for s in EVALS {
        for m in s.metrics.iter().chain(COMMON_METRICS) {
            let n = m.name;
            if ["failure", "error", "overflow", "violation"]
                .iter()
                .any(|w| n.contains(w))
            {
                assert_eq!(m.polarity, Polarity::Lower, "{}.{n}", s.name);
            }
            assert!(
                !["fold", "after_compactions", "depth", "trigger", "judge"].contains(&n),
                "{}.{n} is a parameter",
                s.name
            );
        }
        assert_eq!(
            polarity(&format!("{}.summary_failures", s.name)),
            Polarity::Lower
        );
        assert_eq!(polarity(&format!("{}.fold", s.name)), Polarity::Neutral);
    }
    assert_eq!(polarity("tokens"), Polarity::Lower);
    assert_eq!(polarity("cost.judge"), Polarity::Lower);
    assert_eq!(polarity("rules.retained.language"), Polarity::Higher);
    assert_eq!(polarity("probes.judge_continuity"), Polarity::Higher);
    assert_eq!(polarity("replay.reference_tokens"), Polarity::Neutral);
    assert_eq!(polarity("nosuch.recall"), Polarity::Neutral);
}

/// The default headline: spend first, then needle recall, the quality scores, invariants,
/// futile compactions (the choice the report made by name before metrics were declared).
#[test]
fn default_headline_ranks() {
    let cases = [
        ("tokens", Some(0)),
        ("cost", Some(1)),
        ("needle.recall", Some(2)),
        ("needle.recall_delta", Some(2)),
        ("needle.reference_recall", None),
        ("drift.score", Some(3)),
        ("drift.judge_score", Some(3)),
        ("rules.score", Some(3)),
        ("invariants.pass", Some(4)),
        ("needle.pass", None),
        ("replay.futile_compactions", Some(5)),
        ("continuation.agreement", None),
        ("cost.agent", None),
    ];
    for (m, want) in cases {
        assert_eq!(headline_rank(m), want, "{m}");
    }
}

/// A typed params struct survives the params map unchanged, and defaults apply once.
#[test]
fn params_round_trip_through_the_map() {
    let p = needle::NeedleParams {
        depth: 0.2,
        position: needle::NeedlePosition::User,
        trigger: None,
        needles: 1,
        distractors: 2,
        max_steps: 8,
        ask_at: needle::AskAt::Call(4),
        search: needle::NeedleSearch::Auto,
        paraphrase: true,
        corrected: false,
        fold: Some(2),
        max_output_tokens: None,
    };
    let map = to_params(&p);
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "ask_at",
            "depth",
            "distractors",
            "fold",
            "max_steps",
            "needles",
            "paraphrase",
            "position"
        ]
    );
    assert_eq!(from_params::<needle::NeedleParams>(&map).unwrap(), p);
    let d: drift::DriftParams = from_params(&BTreeMap::new()).unwrap();
    assert_eq!((d.after_compactions, d.judge, d.fold), (3, false, None));
    let c: continuation::ContinuationParams = from_params(&BTreeMap::new()).unwrap();
    assert_eq!((c.fold, c.steps), (1, 3));
    let bad = BTreeMap::from([("kind".to_string(), Value::from("bogus"))]);
    assert!(from_params::<probes::ProbeParams>(&bad).is_err());
}

/// `<eval>.pass` is declared only by the evals whose units have a verdict: `drift.pass` passed
/// the suite's check of its gate rules and was refused by `ctxbench gate` as "not in the run"
/// (drift and replay units never record one); `invariants.pass` was listed twice.
#[test]
fn pass_is_a_metric_of_the_evals_with_a_verdict_only() {
    for eval in ["needle", "probes", "invariants"] {
        assert!(recorded_by(&format!("{eval}.pass"), &[eval]), "{eval}");
    }
    for eval in ["replay", "drift", "continuation", "rules"] {
        assert!(!recorded_by(&format!("{eval}.pass"), &[eval]), "{eval}");
    }
    let names = metric_names(&["invariants", "needle"]);
    for pass in ["invariants.pass", "needle.pass"] {
        assert_eq!(names.iter().filter(|n| *n == pass).count(), 1, "{names:?}");
    }
}
