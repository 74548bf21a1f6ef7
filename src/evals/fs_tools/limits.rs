//! Caps on one tool call: the [`Limits`] and how they apply (the per-call deadline, cut lines,
//! capped listings and output).

use std::time::{Duration, Instant};

use super::Sandbox;

/// Caps on what one tool call may return.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Characters of output per call; longer output is cut with a notice.
    pub max_output_chars: usize,
    /// Matches returned by one `grep`.
    pub max_grep_matches: usize,
    /// Entries returned by one `ls` or `glob`.
    pub max_entries: usize,
    /// Default and maximum `limit` of `read_file`, in lines.
    pub default_read_lines: usize,
    /// Characters per line shown by `read_file` and `grep`.
    pub max_line_chars: usize,
    /// Bytes of one file that `read_file` and `grep` look at; the rest is not read.
    pub max_file_bytes: u64,
    /// Wall time of one call; a walk or search still running then stops with an error.
    pub call_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_output_chars: 20_000,
            max_grep_matches: 50,
            max_entries: 200,
            default_read_lines: 200,
            max_line_chars: 2_000,
            max_file_bytes: 8 * 1024 * 1024,
            call_timeout: Duration::from_secs(10),
        }
    }
}

impl Sandbox {
    pub(super) fn deadline(&self) -> Instant {
        Instant::now() + self.limits.call_timeout
    }

    pub(super) fn check_deadline(&self, deadline: Instant) -> Result<(), String> {
        if Instant::now() >= deadline {
            return Err(self.timeout_text());
        }
        Ok(())
    }

    /// What the model is told when a call runs out of time.
    pub fn timeout_text(&self) -> String {
        format!(
            "the call took longer than {}s and was stopped; narrow the path or pattern",
            self.limits.call_timeout.as_secs_f64()
        )
    }

    pub(super) fn entries_text(&self, mut lines: Vec<String>, empty: &str) -> String {
        if lines.is_empty() {
            return empty.to_string();
        }
        let total = lines.len();
        if total > self.limits.max_entries {
            lines.truncate(self.limits.max_entries);
            lines.push(format!(
                "… [{} more entries not shown]",
                total - self.limits.max_entries
            ));
        }
        lines.join("\n")
    }

    pub(super) fn cut_line(&self, line: &str) -> String {
        let max = self.limits.max_line_chars;
        match line.char_indices().nth(max) {
            Some((i, _)) => format!("{}… [line cut]", &line[..i]),
            None => line.to_string(),
        }
    }

    pub(super) fn cap(&self, text: String) -> String {
        let max = self.limits.max_output_chars;
        match text.char_indices().nth(max) {
            Some((i, _)) => format!(
                "{}\n… [output cut at {max} characters; narrow the request]",
                &text[..i]
            ),
            None => text,
        }
    }
}
