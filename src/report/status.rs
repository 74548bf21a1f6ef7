//! What a unit's row says first, in report.html and results.csv: error, flagged, fail, pass
//! or done (`Status::of`), one word for one unit everywhere.

use crate::record::Row;

/// What a sample's row says first; the index table sorts by it (failures first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// The unit failed (no scores).
    Error,
    /// It succeeded, but a summary failed (and was kept), a compaction was futile, a request
    /// stayed over the window after compaction (`overflow`), a request was larger than the same
    /// call without compression (`flagged_calls`), an agent ran out of steps before answering
    /// (`step_limit`) or a server cut a prompt (`prompt_truncated`); its verdict, if any, is in
    /// `passed`.
    Flagged,
    /// Its verdict is fail.
    Fail,
    /// Its verdict is pass.
    Pass,
    /// It has scores and no verdict.
    Done,
}

impl Status {
    pub fn of(s: &Row<'_>) -> Status {
        if s.error.is_some() {
            Status::Error
        } else if s.scores.get("summary_failures").is_some_and(|n| *n > 0.0)
            || s.scores.get("step_limit").is_some_and(|n| *n > 0.0)
            || s.scores.get("prompt_truncated").is_some_and(|n| *n > 0.0)
            || s.scores.get("flagged_calls").is_some_and(|n| *n > 0.0)
            || ["futile", "overflow"]
                .iter()
                .any(|k| s.compactions.get(k).is_some_and(|n| *n > 0))
        {
            Status::Flagged
        } else {
            match s.passed {
                Some(false) => Status::Fail,
                Some(true) => Status::Pass,
                None => Status::Done,
            }
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Status::Error => "error",
            Status::Flagged => "flagged",
            Status::Fail => "fail",
            Status::Pass => "pass",
            Status::Done => "done",
        }
    }
}
