//! Statistics over results: bootstrap CIs, paired deltas, McNemar, pass@k (`stats`), metric
//! extraction, pairing and per-variant summaries (`aggregate`), token and cost totals split by
//! role and kind with unknown prices kept unknown (`cost`), sums of dollars that do not depend on
//! the order units finished in (`exact`), and the number formatting every text
//! output shares (`format`).

pub mod aggregate;
pub mod cost;
pub mod exact;
pub mod format;
pub mod stats;
