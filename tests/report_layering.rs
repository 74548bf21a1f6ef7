//! The gate computes verdicts and the report renders them: `gate` and `metrics` must never
//! import `report` (that was a module cycle). A plain source scan.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn gate_and_metrics_do_not_import_report() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![root.join("gate.rs")];
    rust_files(&root.join("metrics"), &mut files);
    assert!(files.len() > 2, "{files:?}");
    let needles = ["crate::report", "super::report"];
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if needles.iter().any(|n| code.contains(n)) {
                offenders.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "imports against the layering:\n{}",
        offenders.join("\n")
    );
}
