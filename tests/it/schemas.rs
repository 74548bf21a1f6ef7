//! `ctxbench schema sample|summary|compare|trace|suite` against real files: a small quickstart
//! run (bundled traces, offline provider), `compare` of two such runs, an imported trace and the
//! bundled suites. Every
//! file must validate against the printed schema, which must also describe every field the file
//! has (an undeclared field is an error here, stricter than JSON Schema's default).

use crate::support::cli::ctxbench;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn schema(kind: &str) -> Value {
    let out = ctxbench()
        .args(["schema", kind])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// Resolve `#/$defs/Name` in `root`.
fn resolve<'a>(root: &'a Value, r: &str) -> &'a Value {
    let ptr = r
        .strip_prefix('#')
        .unwrap_or_else(|| panic!("external $ref {r}"));
    root.pointer(ptr)
        .unwrap_or_else(|| panic!("dangling $ref {r}"))
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        other => panic!("unknown type {other}"),
    }
}

/// The errors of `v` against `s` (the keywords schemars emits: $ref, type, properties,
/// required, additionalProperties, items, enum, const, anyOf, oneOf, allOf, minimum).
/// Property names declared by `s` together with the schemas it extends (`$ref`, `allOf`: how
/// schemars writes an internally tagged enum variant), and whether any allows others.
fn declared(root: &Value, s: &Value, names: &mut Vec<String>) -> bool {
    let Some(o) = s.as_object() else { return false };
    let mut open = o.contains_key("additionalProperties");
    if let Some(p) = o.get("properties").and_then(Value::as_object) {
        names.extend(p.keys().cloned());
    }
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        open |= declared(root, resolve(root, r), names);
    }
    for a in o
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        open |= declared(root, a, names);
    }
    open
}

fn check(root: &Value, s: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    check_in(root, s, v, at, errors, true)
}

/// `strict`: report object fields no part of the schema declares (off inside a `$ref` or
/// `allOf` member, whose referrer knows all the declared fields).
fn check_in(root: &Value, s: &Value, v: &Value, at: &str, errors: &mut Vec<String>, strict: bool) {
    if s == &Value::Bool(true) {
        return;
    }
    let Some(o) = s.as_object() else {
        errors.push(format!("{at}: schema {s} is not an object"));
        return;
    };
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        check_in(root, resolve(root, r), v, at, errors, false);
    }
    match o.get("type") {
        Some(Value::String(t)) if !type_ok(t, v) => {
            errors.push(format!("{at}: expected {t}, found {v}"));
            return;
        }
        Some(Value::Array(ts)) if !ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)) => {
            errors.push(format!("{at}: expected one of {ts:?}, found {v}"));
            return;
        }
        _ => {}
    }
    if let Some(e) = o.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!("{at}: {v} is not one of {e:?}"));
        }
    }
    if let Some(c) = o.get("const") {
        if c != v {
            errors.push(format!("{at}: {v} is not {c}"));
        }
    }
    if let (Some(min), Some(x)) = (o.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if x < min {
            errors.push(format!("{at}: {x} < minimum {min}"));
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = o.get(key).and_then(Value::as_array) {
            let ok = alts
                .iter()
                .filter(|a| {
                    let mut e = Vec::new();
                    check(root, a, v, at, &mut e);
                    e.is_empty()
                })
                .count();
            if ok == 0 || (key == "oneOf" && ok > 1) {
                errors.push(format!("{at}: {ok} of the {key} alternatives match {v}"));
            }
        }
    }
    if let Some(all) = o.get("allOf").and_then(Value::as_array) {
        for a in all {
            check_in(root, a, v, at, errors, false);
        }
    }
    if let (Some(items), Some(arr)) = (o.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(root, items, x, &format!("{at}[{i}]"), errors);
        }
    }
    if let Some(obj) = v.as_object() {
        let props = o.get("properties").and_then(Value::as_object);
        if let Some(req) = o.get("required").and_then(Value::as_array) {
            for r in req {
                if !obj.contains_key(r.as_str().unwrap()) {
                    errors.push(format!("{at}: required field {r} missing"));
                }
            }
        }
        let mut names = Vec::new();
        let open = declared(root, s, &mut names);
        let describes_objects = !names.is_empty() || open;
        for (k, x) in obj {
            let here = format!("{at}.{k}");
            match (props.and_then(|p| p.get(k)), o.get("additionalProperties")) {
                (Some(ps), _) => check(root, ps, x, &here, errors),
                (None, Some(Value::Bool(false))) => {
                    errors.push(format!("{here}: field not allowed"))
                }
                (None, Some(extra)) => check(root, extra, x, &here, errors),
                // Stricter than JSON Schema: a struct's schema must name every field written.
                (None, None) if strict && describes_objects && !open && !names.contains(k) => {
                    errors.push(format!("{here}: field not described by the schema"))
                }
                (None, None) => {}
            }
        }
    }
}

fn assert_valid(schema: &Value, doc: &Value, what: &str) {
    let mut errors = Vec::new();
    check(schema, schema, doc, "$", &mut errors);
    assert!(errors.is_empty(), "{what}:\n{}", errors.join("\n"));
}

fn quickstart(out: &Path, id: &str) -> PathBuf {
    ctxbench()
        .args(["run", "evals/quickstart.toml", "--quiet", "--limit", "1"])
        .args(["--variant", "baseline", "--variant", "aggressive"])
        .args(["--run-id", id, "-o"])
        .arg(out)
        .assert()
        .success();
    out.join(id)
}

#[test]
fn every_schema_validates_real_files_and_catches_wrong_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let a = quickstart(tmp.path(), "a");
    let b = quickstart(tmp.path(), "b");
    ctxbench()
        .args(["compare"])
        .arg(&a)
        .arg(&b)
        .assert()
        .success();

    let sample = schema("sample");
    let samples = std::fs::read_to_string(a.join("samples.jsonl")).unwrap();
    let mut evals = std::collections::BTreeSet::new();
    for (i, line) in samples.lines().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        evals.insert(v["eval"].as_str().unwrap().to_string());
        assert_valid(&sample, &v, &format!("samples.jsonl:{}", i + 1));
    }
    assert!(evals.len() >= 3, "the quickstart's evals: {evals:?}");

    let summary = schema("summary");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("summary.json")).unwrap()).unwrap();
    assert!(!doc["summary"]["comparisons"].as_array().unwrap().is_empty());
    assert_valid(&summary, &doc, "summary.json");

    let compare = schema("compare");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("compare.json")).unwrap()).unwrap();
    assert!(!doc["comparisons"].as_array().unwrap().is_empty());
    assert_valid(&compare, &doc, "compare.json");

    // The trace schema, on a trace written by `import`.
    let traces = tmp.path().join("traces");
    ctxbench()
        .args(["import", "datasets/tau2-bench", "-o"])
        .arg(&traces)
        .assert()
        .success();
    let trace = schema("trace");
    let file = std::fs::read_dir(&traces).unwrap().next().unwrap().unwrap();
    for line in std::fs::read_to_string(file.path()).unwrap().lines() {
        assert_valid(&trace, &serde_json::from_str(line).unwrap(), "trace line");
    }

    // The suite schema, on every bundled suite.
    let suite = schema("suite");
    let evals = Path::new(env!("CARGO_MANIFEST_DIR")).join("evals");
    let mut suites = 0;
    for entry in std::fs::read_dir(&evals).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let doc: toml::Value =
                toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let doc = serde_json::to_value(doc).unwrap();
            assert_valid(&suite, &doc, &path.display().to_string());
            suites += 1;
        }
    }
    assert!(suites >= 3);

    // The check discriminates: a wrong type, a missing required field and an undeclared field
    // are each caught.
    let first: Value = serde_json::from_str(samples.lines().next().unwrap()).unwrap();
    let mut bad = first.clone();
    bad["repeat"] = Value::from("twice");
    let mut missing = first.clone();
    missing.as_object_mut().unwrap().remove("unit_id");
    let mut extra = first.clone();
    extra["tokens"]["agent"]["surprise"] = Value::from(1);
    for (doc, want) in [
        (bad, "$.repeat: expected integer"),
        (missing, "required field \"unit_id\" missing"),
        (extra, "$.tokens.agent.surprise: field not described"),
    ] {
        let mut errors = Vec::new();
        check(&sample, &sample, &doc, "$", &mut errors);
        assert!(
            errors.iter().any(|e| e.contains(want)),
            "{want}: {errors:?}"
        );
    }
}
