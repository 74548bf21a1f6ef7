//! `max_cost_usd`: decide before each dispatch whether the next unit fits the budget.
//!
//! The budget counts money actually spent on model calls: summarizer, judge and eval-agent
//! calls ([`CostByRole::spent`](crate::record::CostByRole::spent)), a failed unit's too (its sample records the calls made before it
//! failed). The agent cost of a sample is the *modelled* price of the replayed views
//! (what the recorded agent would have paid under the variant) — no call is made, so it does not
//! draw on the budget.
//!
//! The cost of a unit is estimated from what finished units cost: the mean of finished units of
//! the same eval when there is one, else the mean over all finished units. A unit is dispatched
//! only when `spent + estimate × (in_flight + 1) ≤ limit`. Until the first unit has finished
//! nothing is known, so at most one unit is in flight; and the first unit of each eval runs
//! alone too (it waits for the units in flight, and the next units of its eval for it): evals
//! cost very differently (a replay unit spends only its summaries, a needle unit asks the agent
//! a tool loop per needle), so another eval's mean is no estimate for running several at once. Units whose price is unknown count as $0
//! and are counted separately, so the report can say the budget could not see them.

use std::collections::HashMap;

/// What the dispatcher should do with the next unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Go,
    /// Wait for an in-flight unit to finish, then ask again.
    Wait,
    /// The next unit would exceed the budget: dispatch nothing more.
    Stop,
}

/// Dollars `sample` spent on model calls, or `None` when a spending role made calls (used
/// tokens) at an unknown price: the budget cannot count those, and says so
/// ([`Budget::unknown_price_units`]) instead of counting them as $0.
pub fn spend_of_sample(sample: &crate::record::Sample) -> Option<f64> {
    let t = &sample.tokens;
    let used = [&t.summarizer, &t.judge, &t.eval_agent].map(|r| r.total() > 0);
    let cost = sample.cost_usd.spent_roles();
    if used.iter().zip(cost).any(|(&u, c)| u && c.is_none()) {
        return None;
    }
    Some(sample.cost_usd.spent())
}

#[derive(Debug, Clone, Default)]
pub struct Budget {
    limit: Option<f64>,
    spent: f64,
    finished: u64,
    per_eval: HashMap<String, (f64, u64)>,
    unknown_price: u64,
    /// Evals with a finished unit (priced or not).
    seen: std::collections::HashSet<String>,
    /// Evals whose first unit is running: nothing else starts until it ends.
    probing: std::collections::HashSet<String>,
}

impl Budget {
    /// `spent_before`: what earlier attempts of this run (resume) already cost.
    pub fn new(limit: Option<f64>, spent_before: f64) -> Budget {
        Budget {
            limit,
            spent: spent_before,
            ..Budget::default()
        }
    }

    pub fn limit(&self) -> Option<f64> {
        self.limit
    }

    pub fn spent(&self) -> f64 {
        self.spent
    }

    /// Units that finished with an unknown price (not counted in `spent`).
    pub fn unknown_price_units(&self) -> u64 {
        self.unknown_price
    }

    /// Record a finished unit's cost (`None` = price unknown).
    pub fn record(&mut self, eval: &str, cost: Option<f64>) {
        if !self.seen.contains(eval) {
            self.seen.insert(eval.to_string());
        }
        self.probing.remove(eval);
        match cost {
            Some(c) if c.is_finite() && c >= 0.0 => {
                self.spent += c;
                self.finished += 1;
                let e = self.per_eval.entry(eval.to_string()).or_default();
                e.0 += c;
                e.1 += 1;
            }
            _ => self.unknown_price += 1,
        }
    }

    /// Record a finished sample ([`spend_of_sample`]): a unit whose spend is partly at an
    /// unknown price counts as unknown (not an estimate of its eval), and its priced roles'
    /// dollars are spent all the same (run.json's `spent_usd` counts them too).
    pub fn record_sample(&mut self, sample: &crate::record::Sample) {
        let spend = spend_of_sample(sample);
        self.record(&sample.eval, spend);
        if spend.is_none() {
            let known = sample.cost_usd.spent();
            if known.is_finite() && known > 0.0 {
                self.spent += known;
            }
        }
    }

    /// Estimated cost of one more unit of `eval`, if anything has finished.
    pub fn estimate(&self, eval: &str) -> Option<f64> {
        if let Some((sum, n)) = self.per_eval.get(eval) {
            if *n > 0 {
                return Some(sum / *n as f64);
            }
        }
        // Units with unknown prices finished but none priced: nothing to estimate from, and
        // waiting would only serialize the run; count them as $0 (reported separately).
        (self.finished + self.unknown_price > 0).then(|| self.spent_this_run_mean())
    }

    fn spent_this_run_mean(&self) -> f64 {
        let (sum, n) = self
            .per_eval
            .values()
            .fold((0.0, 0u64), |(s, n), (es, en)| (s + es, n + en));
        if n == 0 {
            0.0
        } else {
            sum / n as f64
        }
    }

    /// A unit of `eval` was dispatched ([`Decision::Go`]): with a limit, the first unit of an
    /// eval runs alone until it ends.
    pub fn started(&mut self, eval: &str) {
        if self.limit.is_some() && !self.seen.contains(eval) {
            self.probing.insert(eval.to_string());
        }
    }

    /// May a unit of `eval` start now, with `in_flight` units already running?
    pub fn decide(&self, eval: &str, in_flight: usize) -> Decision {
        let Some(limit) = self.limit else {
            return Decision::Go;
        };
        if self.spent >= limit {
            return Decision::Stop;
        }
        // The first unit of an eval runs alone: what it costs is the eval's estimate, and no
        // unit starts beside it on another eval's estimate.
        if in_flight > 0 && (!self.seen.contains(eval) || !self.probing.is_empty()) {
            return Decision::Wait;
        }
        match self.estimate(eval) {
            None if in_flight == 0 => Decision::Go,
            None => Decision::Wait,
            Some(est) => {
                if self.spent + est * (in_flight as f64 + 1.0) <= limit {
                    Decision::Go
                } else if in_flight > 0 {
                    Decision::Wait
                } else {
                    Decision::Stop
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_always_goes() {
        let b = Budget::new(None, 1e9);
        assert_eq!(b.decide("x", 100), Decision::Go);
    }

    #[test]
    fn first_unit_runs_alone_then_estimates_gate_dispatch() {
        let mut b = Budget::new(Some(3.5), 0.0);
        assert_eq!(b.decide("replay", 0), Decision::Go);
        assert_eq!(b.decide("replay", 1), Decision::Wait);
        b.record("replay", Some(1.0));
        assert_eq!(b.decide("replay", 0), Decision::Go); // 1 + 1 ≤ 3.5
        assert_eq!(b.decide("replay", 1), Decision::Go); // 1 + 2 ≤ 3.5
        assert_eq!(b.decide("replay", 2), Decision::Wait); // 1 + 3 > 3.5
        b.record("replay", Some(1.0));
        b.record("replay", Some(1.0));
        assert_eq!(b.decide("replay", 0), Decision::Stop); // 3 + 1 > 3.5
    }

    #[test]
    fn per_eval_estimates_and_resume_spend() {
        let mut b = Budget::new(Some(10.0), 4.0);
        b.record("replay", Some(0.01));
        b.record("needle", Some(5.0));
        assert_eq!(b.decide("replay", 0), Decision::Go);
        assert_eq!(b.decide("needle", 0), Decision::Stop); // 9.01 + 5 > 10
                                                           // Unknown eval: overall mean (2.505).
        assert_eq!(b.decide("drift", 0), Decision::Stop);
        assert!((b.spent() - 9.01).abs() < 1e-9);
    }

    #[test]
    fn the_first_unit_of_each_eval_runs_alone() {
        // Cheap replay units finish first; a needle unit costs 100 times more. Without running
        // one needle unit alone, 8 would start on the replay units' estimate.
        let mut b = Budget::new(Some(1.0), 0.0);
        b.record("replay", Some(0.001));
        assert_eq!(b.decide("replay", 3), Decision::Go);
        assert_eq!(
            b.decide("needle", 3),
            Decision::Wait,
            "not beside other units"
        );
        assert_eq!(b.decide("needle", 0), Decision::Go, "alone");
        b.started("needle");
        assert_eq!(
            b.decide("needle", 1),
            Decision::Wait,
            "its next units wait for it"
        );
        assert_eq!(
            b.decide("replay", 1),
            Decision::Wait,
            "and so do other evals' units"
        );
        b.record("needle", Some(0.1));
        assert_eq!(b.decide("needle", 1), Decision::Go); // 0.101 + 0.2 ≤ 1
        assert_eq!(b.decide("needle", 8), Decision::Wait); // 0.101 + 0.9 > 1
                                                           // An eval whose first unit had no price has finished a unit all the same.
        b.record("drift", None);
        assert_eq!(b.decide("drift", 2), Decision::Go);
    }

    #[test]
    fn unknown_prices_are_counted_not_spent() {
        let mut b = Budget::new(Some(1.0), 0.0);
        assert_eq!(b.decide("replay", 1), Decision::Wait);
        b.record("replay", None);
        assert_eq!(b.unknown_price_units(), 1);
        let c = crate::record::CostByRole {
            agent: Some(100.0),
            summarizer: Some(0.25),
            judge: None,
            eval_agent: None,
        };
        assert_eq!(c.spent(), 0.25, "modelled agent cost is not spent");
        assert_eq!(b.spent(), 0.0);
        // Only unknown prices so far: the run is not serialized waiting for an estimate.
        assert_eq!(b.decide("replay", 3), Decision::Go);
    }

    #[test]
    fn a_spending_role_that_made_calls_at_an_unknown_price_is_not_counted_as_zero() {
        let mut s = crate::record::Sample::builder().build();
        s.cost_usd.agent = None; // modelled, never spent: does not matter
        s.tokens.summarizer.input = 1_000;
        s.cost_usd.summarizer = Some(0.5);
        assert_eq!(spend_of_sample(&s), Some(0.5));
        // An unused role without a price is $0, not unknown.
        assert_eq!(s.cost_usd.judge, None);
        s.tokens.eval_agent.output = 10;
        s.cost_usd.eval_agent = None;
        assert_eq!(spend_of_sample(&s), None, "eval agent called, no price");
        // The budget counts it as unknown, and its summarizer's $0.5 as spent all the same.
        let mut b = Budget::new(Some(10.0), 0.0);
        b.record_sample(&s);
        assert_eq!((b.unknown_price_units(), b.spent()), (1, 0.5));
        s.cost_usd.eval_agent = Some(0.0);
        assert_eq!(spend_of_sample(&s), Some(0.5));
    }
}
