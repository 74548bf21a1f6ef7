//! Report writers: one result model (`model`, its samples as compact rows in `rows`, loaded
//! from a journal in one streaming pass by `load`), the report's tables declared once (`sections`,
//! over the table model of `table`), pure writers per format (`csv`, `json`, `markdown`,
//! `html`, `terminal`, `junit`) and plots (`plots`), plus [`write_run_reports`], which renders
//! them all into a run directory.
//!
//! Dependencies run one way: `report` reads `gate`'s verdicts (JUnit, the Markdown summary,
//! terminal lines) and `metrics`' statistics; neither imports `report`.
//!
//! Run directory layout (see also `record`):
//!
//! ```text
//! reports/<run-id>/
//!   run.json  samples.jsonl          source of truth, written by the runner
//!   results.csv  summary.json        rendered here
//!   report.md  report.html           rendered here (HTML is self-contained, plots inline)
//!   plots/<name>.svg  plots/<name>.png
//! ```
// No `unsafe` here, not even with a bench behind it (docs/architecture.md, "No `unsafe`").
#![forbid(unsafe_code)]

pub mod csv;
pub mod headline;
pub mod html;
pub mod json;
pub mod junit;
pub mod load;
pub mod markdown;
pub mod model;
pub mod plots;
pub(crate) mod pricing_notes;
pub mod rows;
mod scan;
pub mod sections;
pub mod shown;
pub mod spill;
pub mod status;
pub mod table;
pub mod terminal;

pub use model::ReportModel;

use crate::record::{RunDir, RunInfo};
use std::path::{Path, PathBuf};

/// What `write_run_reports` wrote, and the plots it could not draw.
#[derive(Clone, Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    /// Plots skipped for lack of data, or that failed to draw (with the reason).
    pub plot_notes: Vec<String>,
    /// What the files lack that the run holds: summary texts report.html shows that could not
    /// be read (printed as `note:` lines by `run` and `report`).
    pub notes: Vec<String>,
}

/// Options of `write_run_reports`.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// Draw PNG files in addition to SVG (SVG is always drawn: the HTML embeds it).
    pub png: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions { png: true }
    }
}

fn write(path: PathBuf, bytes: &[u8], written: &mut Written) -> anyhow::Result<()> {
    std::fs::write(&path, bytes)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    written.files.push(path);
    Ok(())
}

/// Render every report file of a run into `dir`: results.csv, summary.json, report.md,
/// report.html and plots/. The long summary texts the page shows are read from the run
/// directory `source` (the same as `dir` unless the files go elsewhere: `report RUN -o OUT`).
/// Plot drawing failures become notes, not errors.
pub fn write_run_reports(
    dir: &Path,
    source: &RunDir,
    info: &RunInfo,
    model: &ReportModel,
    opts: WriteOptions,
) -> anyhow::Result<Written> {
    let mut written = Written::default();
    let dir = RunDir::new(dir);
    // results.csv goes to the file row by row (a big run's CSV is never in memory), on a
    // thread of its own while the other files are drawn: on a machine with a free core the
    // report is ready that much sooner (the CPU time is the same).
    let path = dir.results_csv();
    let write_csv = || {
        std::fs::File::create(&path)
            .and_then(|f| {
                let mut w = std::io::BufWriter::with_capacity(256 * 1024, f);
                csv::write(info, model, &mut w)?;
                std::io::Write::flush(&mut w)
            })
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
    };
    let (csv_done, rest) = std::thread::scope(|scope| {
        let csv = scope.spawn(write_csv);
        let rest = write_the_rest(&dir, source, info, model, opts, &mut written);
        (csv.join(), rest)
    });
    // A panic on the CSV thread is a bug: resume it here, as if it had happened on this one.
    csv_done.unwrap_or_else(|p| std::panic::resume_unwind(p))?;
    rest?;
    written.files.insert(0, path);
    Ok(written)
}

/// Everything `write_run_reports` writes but results.csv, in order.
fn write_the_rest(
    dir: &RunDir,
    source: &RunDir,
    info: &RunInfo,
    model: &ReportModel,
    opts: WriteOptions,
    written: &mut Written,
) -> anyhow::Result<()> {
    write(
        dir.summary_json(),
        json::render(info, model).as_bytes(),
        written,
    )?;
    write(
        dir.report_md(),
        markdown::render(info, model).as_bytes(),
        written,
    )?;

    let (specs, skipped) = plots::plan(model);
    written.plot_notes.extend(skipped);
    let plot_dir = dir.plots_dir();
    if !specs.is_empty() {
        std::fs::create_dir_all(&plot_dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", plot_dir.display()))?;
    }
    // One plot at a time: drawing them at the same time on the pool put two PNG rasters beside
    // each other at the report's heap peak, or not, by the threads' timing (tests/run_memory.rs
    // measures that peak per unit).
    let mut svgs = Vec::new();
    for spec in &specs {
        let (svg, png) = plots::render_both(model, spec, opts.png);
        match svg {
            Ok(svg) => {
                write(dir.plot(&spec.name, "svg"), svg.as_bytes(), written)?;
                svgs.push((spec.clone(), svg));
            }
            Err(err) => written
                .plot_notes
                .push(format!("{}: cannot draw SVG: {err}", spec.name)),
        }
        match png {
            Some(Ok(png)) => write(dir.plot(&spec.name, "png"), &png, written)?,
            Some(Err(err)) => written
                .plot_notes
                .push(format!("{}: cannot draw PNG: {err}", spec.name)),
            None => {}
        }
    }
    // Summary texts kept in files, for the samples the page shows in full (a text that cannot
    // be read is named by its file on the page, and said).
    let in_files = html::summaries_in_files(model);
    let (texts, failed): (html::SummaryTexts, _) =
        match source.summary_texts(in_files.iter().copied()) {
            Ok(t) => (t, None),
            Err(e) => (Default::default(), Some(e)),
        };
    let wanted: std::collections::BTreeSet<&str> =
        in_files.iter().map(|r| r.text_digest.as_str()).collect();
    let unread = wanted.iter().filter(|d| !texts.contains_key(**d)).count();
    if unread > 0 {
        let why = match failed {
            Some(e) => format!("reading it failed: {e}"),
            None => "missing, or not holding them".to_string(),
        };
        written.notes.push(format!(
            "{unread} long summary text(s) of the samples report.html shows could not be read \
             from {} ({why}): the page names their files instead of showing them",
            crate::output::display_path(&source.summaries_pack())
        ));
    }
    // The page goes to the file part by part (`html::write_page`), never whole in memory.
    let path = dir.report_html();
    std::fs::File::create(&path)
        .and_then(|f| {
            let mut w = std::io::BufWriter::with_capacity(256 * 1024, f);
            html::write_page(&mut w, info, model, &svgs, &written.plot_notes, &texts)?;
            std::io::Write::flush(&mut w)
        })
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    written.files.push(path);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_run_renders_every_file_with_notes_instead_of_plots() {
        let dir = tempfile::tempdir().unwrap();
        let mut info = RunInfo::new("empty");
        info.variants = vec!["a".into(), "b".into()];
        let model = ReportModel::build(&info, vec![]);
        let w = write_run_reports(
            dir.path(),
            &RunDir::new(dir.path()),
            &info,
            &model,
            WriteOptions::default(),
        )
        .unwrap();
        assert_eq!(w.files.len(), 4, "{:?}", w.files);
        assert_eq!(w.plot_notes.len(), 4, "{:?}", w.plot_notes);
        let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
        assert!(md.contains("No unit failed."));
        assert!(model.notes[0].contains("baseline variant `a` has no successful units"));
        assert!(md.contains("has no successful units"));
        let csv = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1, "header only");
    }
}
