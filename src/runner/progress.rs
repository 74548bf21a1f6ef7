//! The run's progress: units done/total, errors, tokens, dollars and ETA, on stderr. A bar when
//! stderr is a terminal; without one (CI logs) a plain line every few seconds
//! (`CTXBENCH_PROGRESS_SECS`, default 5); nothing with `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    Hidden,
    /// An indicatif bar (stderr is a terminal).
    Bar,
    /// A line on stderr every `every` (and a last one at the end).
    Lines {
        every: Duration,
    },
}

impl ProgressMode {
    /// `Hidden` when `visible` is false (`--quiet`), else a bar on a terminal and lines
    /// otherwise.
    pub fn detect(visible: bool) -> ProgressMode {
        if !visible {
            ProgressMode::Hidden
        } else if std::io::stderr().is_terminal() {
            ProgressMode::Bar
        } else {
            let secs = std::env::var("CTXBENCH_PROGRESS_SECS")
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(5.0);
            ProgressMode::Lines {
                every: Duration::from_secs_f64(secs),
            }
        }
    }
}

/// `45s`, `3m05s`, `2h10m`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The line a non-terminal run prints: the tally and, once a unit finished, the ETA from this
/// invocation's pace.
pub fn status_line(t: &Tally, total: u64, done_at_start: u64, elapsed: Duration) -> String {
    let mut line = format!("progress {}", t.line(total));
    let done_now = t.done.saturating_sub(done_at_start);
    if done_now > 0 && t.done < total {
        let per_unit = elapsed.as_secs_f64() / done_now as f64;
        let eta = Duration::from_secs_f64(per_unit * (total - t.done) as f64);
        line.push_str(&format!(" · ETA {}", human_duration(eta)));
    }
    line.push_str(&format!(" · {} elapsed", human_duration(elapsed)));
    line
}

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
    /// Shared with the line printer (`ProgressMode::Lines`).
    shared: Arc<Mutex<Tally>>,
    ticker: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    started: Instant,
    done_at_start: u64,
}

impl Progress {
    /// Progress over `total` units, starting at `done` (resumed units), shown as
    /// [`ProgressMode::detect`] decides (`visible` is false with `--quiet`).
    pub fn new(total: u64, done: u64, visible: bool) -> Progress {
        Self::with_mode(total, done, ProgressMode::detect(visible))
    }

    pub fn with_mode(total: u64, done: u64, mode: ProgressMode) -> Progress {
        let bar = if mode == ProgressMode::Bar {
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
        let shared = Arc::new(Mutex::new(tally));
        let started = Instant::now();
        let ticker = match mode {
            ProgressMode::Lines { every } => {
                let stop = Arc::new(AtomicBool::new(false));
                let (s, t) = (stop.clone(), shared.clone());
                let handle = std::thread::spawn(move || {
                    let step = Duration::from_millis(50).min(every);
                    let mut next = Instant::now() + every;
                    while !s.load(Ordering::Relaxed) {
                        std::thread::sleep(step);
                        if Instant::now() >= next {
                            let tally = *t.lock().unwrap_or_else(|e| e.into_inner());
                            eprintln!("{}", status_line(&tally, total, done, started.elapsed()));
                            next += every;
                        }
                    }
                });
                Some((stop, handle))
            }
            _ => None,
        };
        let p = Progress {
            bar,
            total,
            tally,
            shared,
            ticker,
            started,
            done_at_start: done,
        };
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
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = self.tally;
        self.bar.set_position(self.tally.done);
        self.bar.set_message(self.tally.line(self.total));
    }

    /// Show a one-off status (e.g. "stopping: waiting for 3 running units").
    pub fn note(&self, msg: &str) {
        if self.ticker.is_some() {
            eprintln!("progress {msg}");
        }
        self.bar
            .set_message(format!("{} · {msg}", self.tally.line(self.total)));
    }

    pub fn tally(&self) -> Tally {
        self.tally
    }

    pub fn finish(&mut self) {
        self.bar.finish_and_clear();
        if let Some((stop, handle)) = self.ticker.take() {
            stop.store(true, Ordering::Relaxed);
            handle.join().ok();
            eprintln!(
                "{}",
                status_line(
                    &self.tally,
                    self.total,
                    self.done_at_start,
                    self.started.elapsed()
                )
            );
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some((stop, handle)) = self.ticker.take() {
            stop.store(true, Ordering::Relaxed);
            handle.join().ok();
        }
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

    #[test]
    fn status_lines_carry_an_eta_from_this_invocations_pace() {
        let t = Tally {
            done: 12,
            errors: 0,
            tokens: 2_000,
            cost_usd: 0.01,
        };
        // 10 units in 20 s since the start (2 were resumed): 28 left at 2 s each.
        assert_eq!(
            status_line(&t, 40, 2, Duration::from_secs(20)),
            "progress 12/40 units · 0 errors · 2000 tokens · $0.0100 · ETA 56s · 20s elapsed"
        );
        assert!(!status_line(&t, 40, 12, Duration::from_secs(1)).contains("ETA"));
        assert_eq!(human_duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(human_duration(Duration::from_secs(7800)), "2h10m");
    }
}
