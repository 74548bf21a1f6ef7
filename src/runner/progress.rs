//! The run's progress bar: units done/total, errors, tokens and dollars so far. Drawn on stderr
//! only when stdout is a terminal and `--quiet` is not given; otherwise silent.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// Running totals shown on the bar (also used for the final summary line).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub done: u64,
    pub errors: u64,
    pub tokens: u64,
    pub cost_usd: f64,
}

impl Tally {
    /// `"12/40 units · 1 error · 1.2M tokens · $0.0345"`
    pub fn line(&self, total: u64) -> String {
        format!(
            "{}/{} units · {} error{} · {} tokens · ${:.4}",
            self.done,
            total,
            self.errors,
            if self.errors == 1 { "" } else { "s" },
            human_tokens(self.tokens),
            self.cost_usd
        )
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

pub struct Progress {
    bar: ProgressBar,
    total: u64,
    tally: Tally,
}

impl Progress {
    /// A bar over `total` units, starting at `done` (resumed units). Visible only when
    /// `visible` (the caller passes `stdout_is_tty() && !quiet`).
    pub fn new(total: u64, done: u64, visible: bool) -> Progress {
        let bar = if visible {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {msg}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        } else {
            ProgressBar::hidden()
        };
        bar.set_position(done);
        let tally = Tally {
            done,
            ..Tally::default()
        };
        let p = Progress { bar, total, tally };
        p.bar.set_message(p.tally.line(total));
        p
    }

    pub fn record(&mut self, tokens: u64, cost: Option<f64>, failed: bool) {
        self.tally.done += 1;
        self.tally.tokens += tokens;
        self.tally.cost_usd += cost.unwrap_or(0.0);
        if failed {
            self.tally.errors += 1;
        }
        self.bar.set_position(self.tally.done);
        self.bar.set_message(self.tally.line(self.total));
    }

    /// Show a one-off status (e.g. "stopping: waiting for 3 running units").
    pub fn note(&self, msg: &str) {
        self.bar
            .set_message(format!("{} · {msg}", self.tally.line(self.total)));
    }

    pub fn tally(&self) -> Tally {
        self.tally
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_line_and_hidden_bar_counts() {
        let mut p = Progress::new(10, 2, false);
        p.record(12_345, Some(0.5), false);
        p.record(100, None, true);
        let t = p.tally();
        assert_eq!((t.done, t.errors, t.tokens), (4, 1, 12_445));
        assert_eq!(t.line(10), "4/10 units · 1 error · 12.4k tokens · $0.5000");
        assert_eq!(human_tokens(4_560_000), "4.56M");
    }
}
