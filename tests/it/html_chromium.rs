//! The HTML report opened in headless Chromium: it renders its tables and plots, logs no console
//! message (no error, no CSP violation) and makes no network request.
//!
//! Chromium comes from the distribution (`.ci/setup-chromium`). Under `CI=true` a missing
//! Chromium fails this test; elsewhere the test is skipped with a loud message. Set
//! `CHROMIUM_BIN` to use another binary.
//!
//! Evidence collected per page load: `--dump-dom` (the DOM after load), `--enable-logging=stderr`
//! (console messages appear as `:CONSOLE` lines) and `--log-net-log` (every URL request, with
//! the network isolation key that tells the page's requests from Chromium's own background
//! traffic). A control page with a `console.error` and a remote image proves that both
//! detectors see what they are meant to see.
//!
//! The interactive parts are driven through the page's own deep links: the page applies
//! `#sort=TABLE:COLUMN:DIR&filter=TABLE:TEXT` on load, so `--dump-dom` of such a URL shows the
//! sorted and filtered DOM (a script blocked by the CSP would leave it unsorted and log a
//! violation). Layout is measured in a wrapper page that frames the report at 1,400 px and
//! writes the report's `scrollWidth` and `clientWidth` into its own DOM (a control page that is
//! too wide proves the measure).

use crate::support;

use ctxbench::report::{write_run_reports, ReportModel, WriteOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM_BIN") {
        return Some(PathBuf::from(p));
    }
    for candidate in [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ] {
        if Path::new(candidate).exists() {
            return Some(PathBuf::from(candidate));
        }
    }
    None
}

static NET_LOGS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

struct Load {
    dom: String,
    console: Vec<String>,
    /// URLs the page itself requested (scheme other than file/data).
    page_requests: Vec<String>,
}

fn load(chromium: &Path, page: &Path, work: &Path) -> Load {
    load_with(chromium, page, "", &[], work)
}

/// Load `page` with `fragment` appended to its URL (`#sort=…`) and `extra` Chromium flags.
fn load_with(chromium: &Path, page: &Path, fragment: &str, extra: &[&str], work: &Path) -> Load {
    let profile = tempfile::tempdir_in(work).unwrap();
    let net_log = work.join(format!(
        "net-{}-{}.json",
        page.file_stem().unwrap().to_string_lossy(),
        NET_LOGS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let url = format!(
        "file://{}{fragment}",
        page.canonicalize().unwrap().display()
    );
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            // Nothing resolves: even a request that slipped through could not leave the machine.
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .args(extra)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--log-net-log={}", net_log.display()))
        .arg("--dump-dom")
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start chromium");
    // Read both pipes on threads so a full pipe never blocks chromium.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium exited with {status}");
            break;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!("chromium did not finish loading {url} within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let dom = t_out.join().unwrap();
    let stderr = t_err.join().unwrap();
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let log: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&net_log).expect("chromium wrote no net log"),
    )
    .expect("net log is not JSON");
    let mut page_requests = Vec::new();
    for ev in log["events"].as_array().expect("net log has no events") {
        let p = &ev["params"];
        let (Some(url), Some(nik)) = (p["url"].as_str(), p["network_isolation_key"].as_str())
        else {
            continue;
        };
        let from_page = nik.contains("file://")
            || p["initiator"]
                .as_str()
                .is_some_and(|i| i == "null" || i.starts_with("file:"));
        if from_page && !url.starts_with("file:") && !url.starts_with("data:") {
            page_requests.push(url.to_string());
        }
    }
    Load {
        dom,
        console,
        page_requests,
    }
}

#[test]
fn html_report_renders_in_chromium_without_console_errors_or_network() {
    let Some(chromium) = chromium() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true but chromium is missing: run .ci/setup-chromium");
        }
        eprintln!(
            "\n!!!!! SKIPPED html_chromium: no chromium found (run .ci/setup-chromium or set \
             CHROMIUM_BIN) !!!!!\n"
        );
        return;
    };
    let work = tempfile::tempdir().unwrap();

    // Control page: the detectors must see its console error and its remote request.
    let control = work.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><body><img src=\"http://ctxbench-control.invalid/x.png\">\
         <script>console.error(\"ctxbench-control-marker\")</script></body></html>",
    )
    .unwrap();
    let c = load(&chromium, &control, work.path());
    assert!(
        c.console
            .iter()
            .any(|l| l.contains("ctxbench-control-marker")),
        "console detector saw nothing on the control page: {:?}",
        c.console
    );
    assert!(
        c.page_requests
            .iter()
            .any(|u| u.contains("ctxbench-control.invalid")),
        "network detector saw nothing on the control page: {:?}",
        c.page_requests
    );

    // The real report, from the fixture with hostile trace text.
    let run = work.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let info = support::report::info("chromium-run");
    let model = ReportModel::build(&info, support::report::samples());
    let written = write_run_reports(
        &run,
        &ctxbench::record::RunDir::new(&run),
        &info,
        &model,
        WriteOptions { png: false },
    )
    .unwrap();
    let svg_plots = written
        .files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "svg"))
        .count();
    assert!(
        svg_plots >= 5,
        "expected the fixture to yield every plot kind"
    );
    let r = load(&chromium, &run.join("report.html"), work.path());
    assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
    assert!(
        r.page_requests.is_empty(),
        "network requests: {:#?}",
        r.page_requests
    );
    for id in [
        "summary-table",
        "comparison-table",
        "usage-table",
        "errors-table",
    ] {
        assert!(
            r.dom.contains(&format!("id=\"{id}\"")),
            "table {id} not in the DOM"
        );
    }
    assert_eq!(
        r.dom.matches("<figure class=\"plot\"").count(),
        svg_plots,
        "every plot is in the DOM"
    );
    assert!(
        r.dom.matches("<svg").count() > svg_plots,
        "timeline SVGs are in the DOM too"
    );
    assert!(r.dom.contains("<td>aggressive</td>"));
    // The hostile text stayed text: the only script element is the page's own.
    assert_eq!(
        r.dom.matches("<script").count(),
        1,
        "a script element was created from trace text"
    );
    assert!(r.dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

fn chromium_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true but chromium is missing: run .ci/setup-chromium");
        }
        eprintln!(
            "\n!!!!! SKIPPED html_chromium: no chromium found (run .ci/setup-chromium or set \
             CHROMIUM_BIN) !!!!!\n"
        );
    }
    found
}

/// The rows of table `id` in a dumped DOM: `(hidden, cell texts)`, and its header texts.
fn table_rows(dom: &str, id: &str) -> (Vec<String>, Vec<(bool, Vec<String>)>) {
    let start = dom
        .find(&format!("<table id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"));
    let table = &dom[start..start + dom[start..].find("</table>").unwrap()];
    let tag = regex::Regex::new(r"<[^>]+>").unwrap();
    let text = |html: &str| tag.replace_all(html, "").trim().to_string();
    let th = regex::Regex::new(r"<th[^>]*>(.*?)</th>").unwrap();
    let heads = th.captures_iter(table).map(|c| text(&c[1])).collect();
    let body = &table[table.find("<tbody>").unwrap()..];
    let tr = regex::Regex::new(r#"<tr( hidden="")?>(.*?)</tr>"#).unwrap();
    let td = regex::Regex::new(r"<td[^>]*>(.*?)</td>").unwrap();
    let rows = tr
        .captures_iter(body)
        .map(|c| {
            (
                c.get(1).is_some(),
                td.captures_iter(&c[2]).map(|d| text(&d[1])).collect(),
            )
        })
        .collect();
    (heads, rows)
}

fn column(heads: &[String], name: &str) -> usize {
    heads
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {heads:?}"))
}

/// `(scrollWidth, clientWidth)` of `page` framed 1,400 px wide (`fragment` appended to its URL).
fn width_at_1400(chromium: &Path, page: &Path, fragment: &str, work: &Path) -> (u64, u64) {
    // Beside the page: a relative `src`, same directory.
    let wrapper = page.parent().unwrap().join(format!(
        "frame-{}.html",
        NET_LOGS.load(std::sync::atomic::Ordering::SeqCst)
    ));
    std::fs::write(
        &wrapper,
        format!(
            "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"f\" src=\"{}{fragment}\" \
             style=\"width:1400px;height:900px;border:0\"></iframe><pre id=\"out\">pending</pre>\
             <script>window.addEventListener(\"load\",function(){{var d=document.getElementById(\"f\")\
             .contentDocument.documentElement;document.getElementById(\"out\").textContent=\
             \"scroll=\"+d.scrollWidth+\" client=\"+d.clientWidth;}});</script></body></html>",
            page.canonicalize().unwrap().file_name().unwrap().to_string_lossy()
        ),
    )
    .unwrap();
    let l = load_with(
        chromium,
        &wrapper,
        "",
        &["--allow-file-access-from-files", "--window-size=1400,900"],
        work,
    );
    let re = regex::Regex::new(r#"<pre id="out">scroll=(\d+) client=(\d+)</pre>"#).unwrap();
    let c = re
        .captures(&l.dom)
        .unwrap_or_else(|| panic!("the wrapper measured nothing: {}", l.dom));
    (c[1].parse().unwrap(), c[2].parse().unwrap())
}

/// Screenshot `page` in a 1400×900 window; returns the PNG's width.
fn screenshot_width(chromium: &Path, page: &Path, png: &Path, work: &Path) -> u32 {
    let profile = tempfile::tempdir_in(work).unwrap();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--window-size=1400,900",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cannot start chromium");
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!("chromium did not take the screenshot within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let bytes = std::fs::read(png).expect("chromium wrote no screenshot");
    assert_eq!(&bytes[1..4], b"PNG");
    u32::from_be_bytes(bytes[16..20].try_into().unwrap())
}

#[test]
fn html_report_sorts_filters_links_and_fits_1400_px_in_chromium() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let run = work.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let info = support::report::info("chromium-run");
    let mut samples = support::report::samples();
    support::report::add_summaries(&mut samples);
    let model = ReportModel::build(&info, samples);
    write_run_reports(
        &run,
        &ctxbench::record::RunDir::new(&run),
        &info,
        &model,
        WriteOptions { png: false },
    )
    .unwrap();
    let page = run.join("report.html");

    // As rendered: failures first, and not already in the order the test will ask for.
    let plain = load(&chromium, &page, work.path());
    assert!(plain.console.is_empty(), "console: {:#?}", plain.console);
    let (heads, rows) = table_rows(&plain.dom, "samples-table");
    let (status, variant, eval, tokens) = (
        column(&heads, "status"),
        column(&heads, "variant"),
        column(&heads, "eval"),
        column(&heads, "tokens"),
    );
    assert_eq!(rows[0].1[status], "error", "failures first");
    assert!(rows.iter().all(|(hidden, _)| !hidden));
    let tok = |rows: &[(bool, Vec<String>)]| -> Vec<u64> {
        rows.iter().map(|r| r.1[tokens].parse().unwrap()).collect()
    };
    assert!(
        !tok(&rows).windows(2).all(|w| w[0] >= w[1]),
        "precondition: the default order is not already by tokens, descending"
    );

    // A comparison row's link to its samples, plus two sorts, applied on load.
    let link =
        regex::Regex::new(r#"href="(#filter=samples-table:variant=aggressive%20eval=needle)""#)
            .unwrap()
            .captures(&plain.dom)
            .expect("a comparison row links to its samples")[1]
            .to_string();
    let fragment = format!("{link}&sort=samples-table:tokens:desc&sort=comparison-table:p:asc");
    let l = load_with(&chromium, &page, &fragment, &[], work.path());
    assert!(l.console.is_empty(), "console: {:#?}", l.console);
    let (_, sorted) = table_rows(&l.dom, "samples-table");
    assert_eq!(
        sorted.len(),
        rows.len(),
        "filtering hides rows, never drops them"
    );
    let t = tok(&sorted);
    assert!(
        t.windows(2).all(|w| w[0] >= w[1]),
        "not sorted by tokens: {t:?}"
    );
    let visible: Vec<&Vec<String>> = sorted.iter().filter(|r| !r.0).map(|r| &r.1).collect();
    assert!(!visible.is_empty() && visible.len() < sorted.len());
    for r in &visible {
        assert_eq!(
            (r[variant].as_str(), r[eval].as_str()),
            ("aggressive", "needle")
        );
    }
    let expected = rows
        .iter()
        .filter(|r| r.1[variant] == "aggressive" && r.1[eval] == "needle")
        .count();
    assert_eq!(visible.len(), expected, "every matching row stays visible");
    assert!(l
        .dom
        .contains(&format!("{expected} of {} rows", rows.len())));
    assert!(l.dom.contains("aria-sort=\"descending\">tokens"));
    // p-values sort as numbers (`<0.001` first), rows without one last.
    let (cheads, crow) = table_rows(&l.dom, "comparison-table");
    let p = column(&cheads, "p");
    let ps: Vec<&str> = crow.iter().map(|r| r.1[p].as_str()).collect();
    let key = |s: &str| match s {
        "–" => f64::INFINITY,
        "<0.001" => 0.0,
        x => x.parse().unwrap(),
    };
    assert!(
        ps.windows(2).all(|w| key(w[0]) <= key(w[1])),
        "p not ascending: {ps:?}"
    );
    assert!(ps.iter().any(|s| *s != "–") && ps.len() > 2);

    // 1,400 px: no horizontal scroll, closed and with a sample's side-by-side view open.
    let wide = work.path().join("wide.html");
    std::fs::write(
        &wide,
        "<!DOCTYPE html><div style=\"width:3000px\">wide</div>",
    )
    .unwrap();
    let (sw, cw) = width_at_1400(&chromium, &wide, "", work.path());
    assert!(
        sw > cw,
        "the width measure sees an over-wide page ({sw} vs {cw})"
    );
    let (sw, cw) = width_at_1400(&chromium, &page, "", work.path());
    assert!(
        sw <= cw,
        "report.html scrolls sideways at 1,400 px: {sw} > {cw}"
    );
    let ab = regex::Regex::new(r#"<details class="sample" id="(s\d+)">(?s:.)*?<div class="ab">"#)
        .unwrap();
    let first_ab = ab.captures(&l.dom).expect("a side-by-side summary view")[1].to_string();
    // A sample's anchor opens its view (the samples table's "view" links).
    let opened = load_with(&chromium, &page, &format!("#{first_ab}"), &[], work.path());
    assert!(opened.console.is_empty(), "console: {:#?}", opened.console);
    assert!(
        opened.dom.contains(&format!(
            "<details class=\"sample\" id=\"{first_ab}\" open=\"\">"
        )),
        "#{first_ab} did not open its sample view"
    );
    assert!(plain
        .dom
        .contains(&format!("<a href=\"#{first_ab}\">view</a>")));
    let (sw, cw) = width_at_1400(&chromium, &page, &format!("#{first_ab}"), work.path());
    assert!(
        sw <= cw,
        "an open sample view scrolls sideways: {sw} > {cw}"
    );
    let png = work.path().join("report-1400.png");
    assert_eq!(screenshot_width(&chromium, &page, &png, work.path()), 1400);
}
