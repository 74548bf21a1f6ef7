//! The streaming report path (compact rows, heavy parts only for the samples shown in full)
//! renders the same report as the whole-samples path on a real run, the quickstart: results.csv
//! byte for byte (also the file the run itself wrote while streaming), summary.json, report.md
//! and report.html. On the quickstart run the other quickstart tests of this binary read.

use ctxbench::record::RunDir;
use ctxbench::report::{csv, html, json, load, markdown, ReportModel};

#[test]
fn the_streamed_report_of_the_quickstart_equals_the_one_from_whole_samples() {
    let run_dir = RunDir::new(&crate::support::cli::quickstart().run_dir);

    // The old path: every sample read whole.
    let run = run_dir.read().unwrap();
    let n = run.samples.len();
    assert!(n > 50, "the quickstart has {n} units");
    let full = ReportModel::build(&run.info, run.samples);
    // The streaming path `report`, `compare` and the end of `run` use.
    let (info, streamed, torn) = load::load_model(&run_dir).unwrap();
    assert!(torn.is_none());
    assert_eq!(streamed.samples.len(), n);
    let loaded = (0..n).filter(|&i| streamed.has_detail(i)).count();
    assert!(
        loaded < n,
        "only the samples shown in full carry their heavy part ({loaded} of {n})"
    );

    let full_csv = csv::render(&run.info, &full);
    assert_eq!(csv::render(&info, &streamed), full_csv, "results.csv");
    assert_eq!(
        std::fs::read_to_string(run_dir.results_csv()).unwrap(),
        full_csv,
        "the results.csv the run wrote row by row"
    );
    assert_eq!(
        json::render(&info, &streamed),
        json::render(&run.info, &full),
        "summary.json"
    );
    let md = markdown::render(&info, &streamed);
    assert_eq!(md, markdown::render(&run.info, &full), "report.md");
    // The pricing notes come from each sample's evidence, which the streamed rows keep only
    // in part (window and pricing model): they are there all the same.
    assert!(md.contains("agent views priced as"), "{md}");
    let page = |m: &ReportModel| {
        let (specs, notes) = ctxbench::report::plots::plan(m);
        let svgs: Vec<_> = specs
            .iter()
            .map(|s| {
                (
                    s.clone(),
                    ctxbench::report::plots::render_svg(m, s).unwrap(),
                )
            })
            .collect();
        html::render_page(&info, m, &svgs, &notes, &Default::default())
    };
    assert_eq!(page(&streamed), page(&full), "report.html");
}
