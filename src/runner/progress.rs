//! The run's progress on stderr: units done/total, errors, tokens, dollars (the modelled agent
//! cost, and what was spent on model calls once there is any) and ETA. A redrawn
//! bar when stderr is a terminal; a plain line at most every few seconds otherwise (CI logs, see
//! `output::progress_mode`); nothing with `--quiet`.

use crate::output::{human_duration, ProgressMode};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Running totals shown on the bar (also used for the final summary line).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub done: u64,
    pub errors: u64,
    pub tokens: u64,
    /// The replayed agent's views priced at its model's price: modelled, not spent (the run
    /// summary's "modelled agent cost").
    pub modelled_usd: f64,
    /// Dollars spent on model calls (summarizer, judge, eval agent: the run summary's "spent on
    /// model calls").
    pub spent_usd: f64,
}

impl Tally {
    /// `"12/40 units · 1 error · 1.2M tokens · modelled $0.0345"`, then `" · spent $0.0120"`
    /// once a unit spent on model calls (an offline run never does).
    pub fn line(&self, total: u64) -> String {
        let mut s = format!(
            "{}/{} units · {} error{} · {} tokens · modelled ${:.4}",
            self.done,
            total,
            self.errors,
            if self.errors == 1 { "" } else { "s" },
            human_tokens(self.tokens),
            self.modelled_usd
        );
        if self.spent_usd > 0.0 {
            s.push_str(&format!(" · spent ${:.4}", self.spent_usd));
        }
        s
    }
}

/// `950`, `12.3k`, `4.56M`.
pub fn human_tokens(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

/// Where progress lines go (stderr, or a buffer in tests).
pub type Sink = Box<dyn Write + Send>;

/// State of the line mode, shared with the heartbeat thread.
struct Lines {
    total: u64,
    tally: Tally,
    /// Units already done when the run started (resumed): not part of the rate.
    start_done: u64,
    started: Instant,
    last_line: Instant,
    every: Duration,
    note: Option<String>,
    sink: Sink,
}

impl Lines {
    /// `progress: 12/40 units · 1 error · 1.2M tokens · modelled $0.0345 · elapsed 1m02s · ETA 3m10s`.
    /// ETA is the time per unit finished in this session times the units left (`-` before the
    /// first one finishes).
    fn text(&self, now: Instant) -> String {
        let elapsed = now.saturating_duration_since(self.started);
        let this_session = self.tally.done.saturating_sub(self.start_done);
        let left = self.total.saturating_sub(self.tally.done);
        let eta = if left == 0 {
            "0s".to_string()
        } else if this_session == 0 {
            "-".to_string()
        } else {
            human_duration(elapsed.mul_f64(left as f64 / this_session as f64))
        };
        let mut s = format!(
            "progress: {} · elapsed {} · ETA {eta}",
            self.tally.line(self.total),
            human_duration(elapsed)
        );
        if let Some(n) = &self.note {
            s.push_str(" · ");
            s.push_str(n);
        }
        s
    }

    /// Write a line when `force` or when `every` has passed since the last one. A write
    /// error (closed stderr) is ignored: progress never stops a run.
    fn tick(&mut self, now: Instant, force: bool) {
        if force || now.saturating_duration_since(self.last_line) >= self.every {
            self.last_line = now;
            let line = self.text(now);
            let _ = writeln!(self.sink, "{line}");
            let _ = self.sink.flush();
        }
    }
}

enum View {
    Hidden,
    Bar(ProgressBar),
    Lines {
        state: Arc<Mutex<Lines>>,
        /// Dropping it stops the heartbeat thread.
        stop: Option<mpsc::Sender<()>>,
    },
}

pub struct Progress {
    view: View,
    total: u64,
    tally: Tally,
}

impl Progress {
    /// Progress over `total` units, starting at `done` (resumed units), shown as `mode` says
    /// (the caller passes `output::progress_mode(quiet)`).
    pub fn new(total: u64, done: u64, mode: ProgressMode) -> Progress {
        match mode {
            ProgressMode::Lines { every } => {
                Progress::with_sink(total, done, every, Box::new(std::io::stderr()))
            }
            ProgressMode::Bar => {
                let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
                b.set_style(
                    // A 20-column bar keeps the line (`… · modelled $12.3456`) within 100
                    // columns for runs of up to 999 units that spend nothing.
                    ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:20} {msg}")
                        .expect("static template")
                        .progress_chars("=> "),
                );
                b.enable_steady_tick(Duration::from_millis(200));
                b.set_position(done);
                Progress::build(total, done, View::Bar(b))
            }
            ProgressMode::Hidden => Progress::build(total, done, View::Hidden),
        }
    }

    /// Line mode writing to `sink`: a line at most every `every` as units finish, and a
    /// heartbeat line when no unit finished for `every` (not with `every` = 0, which prints a
    /// line after each unit).
    pub fn with_sink(total: u64, done: u64, every: Duration, sink: Sink) -> Progress {
        let now = Instant::now();
        let state = Arc::new(Mutex::new(Lines {
            total,
            tally: Tally {
                done,
                ..Tally::default()
            },
            start_done: done,
            started: now,
            last_line: now,
            every,
            note: None,
            sink,
        }));
        let stop = (!every.is_zero()).then(|| {
            let (tx, rx) = mpsc::channel::<()>();
            let heartbeat = state.clone();
            std::thread::spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                    if let Ok(mut s) = heartbeat.lock() {
                        s.tick(Instant::now(), false);
                    }
                }
            });
            tx
        });
        Progress::build(total, done, View::Lines { state, stop })
    }

    fn build(total: u64, done: u64, view: View) -> Progress {
        let tally = Tally {
            done,
            ..Tally::default()
        };
        let p = Progress { view, total, tally };
        if let View::Bar(b) = &p.view {
            b.set_message(p.tally.line(total));
        }
        p
    }

    /// A resumed run's progress counts what its journal already holds: the tokens, dollars and
    /// errors of the units done before (their number is the `done` it was made with), so every
    /// figure on the bar is of the whole run, as the closing lines are.
    pub fn resumed(mut self, tokens: u64, modelled_usd: f64, spent_usd: f64, errors: u64) -> Self {
        self.tally.tokens = tokens;
        self.tally.modelled_usd = modelled_usd;
        self.tally.spent_usd = spent_usd;
        self.tally.errors = errors;
        match &self.view {
            View::Hidden => {}
            View::Bar(b) => b.set_message(self.tally.line(self.total)),
            View::Lines { state, .. } => {
                if let Ok(mut s) = state.lock() {
                    s.tally = self.tally;
                }
            }
        }
        self
    }

    /// A finished unit: its tokens, its cost by role (`cost.agent` modelled, the other roles
    /// spent; an unknown price counts $0 here) and whether it failed.
    pub fn record(&mut self, tokens: u64, cost: &crate::record::CostByRole, failed: bool) {
        self.tally.done += 1;
        self.tally.tokens += tokens;
        self.tally.modelled_usd += cost.agent.unwrap_or(0.0);
        self.tally.spent_usd += cost.spent();
        if failed {
            self.tally.errors += 1;
        }
        match &self.view {
            View::Hidden => {}
            View::Bar(b) => {
                b.set_position(self.tally.done);
                b.set_message(self.tally.line(self.total));
            }
            View::Lines { state, .. } => {
                if let Ok(mut s) = state.lock() {
                    s.tally = self.tally;
                    s.tick(Instant::now(), false);
                }
            }
        }
    }

    /// Show a one-off status (e.g. "stopping: waiting for 3 running units"); in line mode it
    /// is printed at once and kept on later lines.
    pub fn note(&self, msg: &str) {
        // The bar and the line sink write to stderr themselves, not through `errln!`.
        let msg = crate::output::visible(msg);
        match &self.view {
            View::Hidden => {}
            View::Bar(b) => b.set_message(format!("{} · {msg}", self.tally.line(self.total))),
            View::Lines { state, .. } => {
                if let Ok(mut s) = state.lock() {
                    s.note = Some(msg.to_string());
                    s.tick(Instant::now(), true);
                }
            }
        }
    }

    /// Print a line on stderr, above the bar when there is one; also when progress is hidden
    /// (`--quiet`): the caller asked for the line.
    pub fn println(&self, msg: &str) {
        match &self.view {
            // The bar writes to stderr itself, not through `errln!` (which shows control
            // characters visibly): the line may quote a trace's ids.
            View::Bar(b) => b.println(crate::output::visible(msg)),
            View::Hidden | View::Lines { .. } => crate::output::errln!("{msg}"),
        }
    }

    pub fn tally(&self) -> Tally {
        self.tally
    }

    pub fn finish(&mut self) {
        match &mut self.view {
            View::Hidden => {}
            View::Bar(b) => b.finish_and_clear(),
            View::Lines { stop, .. } => {
                stop.take();
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::CostByRole;

    /// A unit's cost with only the (modelled) agent priced.
    fn agent(usd: Option<f64>) -> CostByRole {
        CostByRole {
            agent: usd,
            ..CostByRole::default()
        }
    }

    /// A sink the test can read back.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Buf {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn tally_line_and_hidden_bar_counts() {
        let mut p = Progress::new(10, 2, ProgressMode::Hidden);
        p.record(12_345, &agent(Some(0.5)), false);
        p.record(100, &agent(None), true);
        let t = p.tally();
        assert_eq!((t.done, t.errors, t.tokens), (4, 1, 12_445));
        // The dollars are labelled: the agent's are modelled, not spent; no spent figure
        // until a unit spends (an offline run).
        assert_eq!(
            t.line(10),
            "4/10 units · 1 error · 12.4k tokens · modelled $0.5000"
        );
        assert_eq!(human_tokens(4_560_000), "4.56M");
        // Spent on model calls (summarizer, judge, eval agent), apart from the modelled cost.
        let spent = CostByRole {
            agent: Some(1.0),
            summarizer: Some(0.25),
            judge: None,
            eval_agent: Some(0.5),
        };
        p.record(10, &spent, false);
        assert_eq!(
            p.tally().line(10),
            "5/10 units · 1 error · 12.5k tokens · modelled $1.5000 · spent $0.7500"
        );
    }

    #[test]
    fn a_resumed_runs_progress_counts_the_whole_run() {
        // 272 units done before, with their tokens, dollars and errors; then one more.
        let buf = Buf::default();
        let p = Progress::with_sink(1000, 272, Duration::ZERO, Box::new(buf.clone()));
        let mut p = p.resumed(128_620_000, 120.5, 0.25, 3);
        p.record(1_000_000, &agent(Some(0.5)), false);
        assert_eq!(
            p.tally().line(1000),
            "273/1000 units · 3 errors · 129.62M tokens · modelled $121.0000 · spent $0.2500"
        );
        assert!(
            buf.text()
                .contains("273/1000 units · 3 errors · 129.62M tokens"),
            "{}",
            buf.text()
        );
    }

    #[test]
    fn line_mode_with_no_interval_prints_a_line_per_unit() {
        let buf = Buf::default();
        let mut p = Progress::with_sink(3, 1, Duration::ZERO, Box::new(buf.clone()));
        p.record(20_000, &agent(Some(0.25)), false);
        p.record(10, &agent(None), true);
        p.note("interrupted");
        p.finish();
        let text = buf.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[0].starts_with(
                "progress: 2/3 units · 0 errors · 20.0k tokens · modelled $0.2500 · elapsed "
            ),
            "{text}"
        );
        // one unit left after one done in this session: an ETA is known
        assert!(!lines[0].ends_with("ETA -"), "{text}");
        assert!(
            lines[1].starts_with("progress: 3/3 units · 1 error · 20.0k tokens"),
            "{text}"
        );
        assert!(lines[1].ends_with("ETA 0s"), "{text}");
        assert!(lines[2].ends_with("ETA 0s · interrupted"), "{text}");
    }

    #[test]
    fn line_mode_waits_for_the_interval_and_estimates_from_this_session() {
        let t0 = Instant::now();
        let buf = Buf::default();
        let mut lines = Lines {
            total: 10,
            tally: Tally {
                done: 4,
                ..Tally::default()
            },
            start_done: 4,
            started: t0,
            last_line: t0,
            every: Duration::from_secs(10),
            note: None,
            sink: Box::new(buf.clone()),
        };
        lines.tick(t0 + Duration::from_secs(9), false);
        assert_eq!(buf.text(), "", "no line before the interval");
        assert!(lines.text(t0).ends_with("ETA -"), "no unit done yet");
        // 2 units in 20 s (resumed ones do not count), 4 left: 40 s.
        lines.tally.done = 6;
        lines.tick(t0 + Duration::from_secs(20), false);
        assert_eq!(
            buf.text(),
            "progress: 6/10 units · 0 errors · 0 tokens · modelled $0.0000 · elapsed 20s · ETA 40s\n"
        );
        lines.tick(t0 + Duration::from_secs(25), false);
        assert_eq!(
            buf.text().lines().count(),
            1,
            "interval counts from the last line"
        );
    }
}
