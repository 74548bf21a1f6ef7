//! Token and dollar totals split by role (agent, summarizer, judge, eval agent) and kind (input, cached,
//! cache write, output). An unknown price stays unknown: a role's total is `None` as soon as
//! one unit used that role with no price, and the known part is kept separately.

use super::exact::ExactSum;
#[cfg(test)]
use crate::record::Sample;
use crate::record::{Row, TokenSplit, TokensByRole};
use serde::Serialize;

/// Dollars of one role over many units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RoleCost {
    /// Total, or `None` when any unit used this role with an unknown price.
    pub usd: Option<f64>,
    /// Sum over the units whose price is known.
    pub known_usd: f64,
    /// Units that used this role with no known price.
    pub unknown_units: usize,
    /// `known_usd` as it is summed (the same float whatever order the units finished in).
    #[serde(skip)]
    #[schemars(skip)]
    known: ExactSum,
}

impl RoleCost {
    fn add(&mut self, tokens: &TokenSplit, cost: Option<f64>) {
        match cost {
            Some(c) => self.known.add(c),
            None if tokens.total() > 0 => self.unknown_units += 1,
            None => {}
        }
    }
    fn finish(&mut self) {
        self.known_usd = nano_dollars(self.known.value());
        self.usd = (self.unknown_units == 0).then_some(self.known_usd);
    }
    /// The exact sum, when every unit's price is known.
    fn exact(&self) -> Option<ExactSum> {
        (self.unknown_units == 0).then_some(self.known)
    }
}

/// Dollars by role and in total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CostTotals {
    pub agent: RoleCost,
    pub summarizer: RoleCost,
    pub judge: RoleCost,
    pub eval_agent: RoleCost,
    /// Sum of the roles, `None` when any is unknown.
    pub total_usd: Option<f64>,
    /// The run's one cost line (the terminal, report.md, report.html, run.json and
    /// summary.json all show this, with the same labels).
    pub headline: CostHeadline,
}

/// The cost figures every output shows, under the same labels:
/// - **modelled agent cost**: the replayed agent views priced at the agent model's price (the
///   calls were not made; this is what the agent would have paid);
/// - **spent on model calls**: summarizer, judge and eval-agent calls actually made, failed
///   units' included (the offline provider is a known $0);
/// - **total**: their sum.
///
/// A figure is `None` ("unknown") when a unit used that role with a model that has no price;
/// `unknown_units` counts those units, whose known part is never shown as the whole.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct CostHeadline {
    pub modelled_agent_usd: Option<f64>,
    pub spent_usd: Option<f64>,
    pub total_usd: Option<f64>,
    pub unknown_units: usize,
}

impl CostHeadline {
    /// `modelled agent cost $X · spent on model calls $Y · total $Z`, plus the number of units
    /// with an unknown price when there are any.
    pub fn line(&self) -> String {
        let mut s = format!(
            "modelled agent cost {} · spent on model calls {} · total {}",
            format_usd(self.modelled_agent_usd),
            format_usd(self.spent_usd),
            format_usd(self.total_usd)
        );
        if self.unknown_units > 0 {
            s.push_str(&format!(
                " ({} unit(s) with an unknown price: price their models under the suite's \
                 [pricing], or set agent_model where the traces record none)",
                self.unknown_units
            ));
        }
        s
    }
}

/// Token and cost totals of a set of units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct UsageTotals {
    pub units: usize,
    pub tokens: TokensByRole,
    pub cost: CostTotals,
}

impl UsageTotals {
    /// Tokens of all roles, input + output.
    pub fn tokens_total(&self) -> u64 {
        self.tokens.total()
    }
}

/// Sum tokens and cost over units.
pub fn totals<'a>(samples: impl IntoIterator<Item = Row<'a>>) -> UsageTotals {
    let mut t = UsageSum::default();
    for s in samples {
        t.add(&s);
    }
    t.finish()
}

/// [`totals`] one unit at a time (a journal streamed line by line): [`UsageSum::add`] each unit,
/// then [`UsageSum::finish`].
#[derive(Clone, Copy, Debug, Default)]
pub struct UsageSum {
    t: UsageTotals,
    unknown_units: usize,
}

impl UsageSum {
    pub fn add(&mut self, s: &Row<'_>) {
        let t = &mut self.t;
        t.units += 1;
        self.unknown_units += usize::from(s.cost_total().is_none());
        t.tokens.agent.add(&s.tokens.agent);
        t.tokens.summarizer.add(&s.tokens.summarizer);
        t.tokens.judge.add(&s.tokens.judge);
        t.cost.agent.add(&s.tokens.agent, s.cost_usd.agent);
        t.cost
            .summarizer
            .add(&s.tokens.summarizer, s.cost_usd.summarizer);
        t.cost.judge.add(&s.tokens.judge, s.cost_usd.judge);
        t.tokens.eval_agent.add(&s.tokens.eval_agent);
        t.cost
            .eval_agent
            .add(&s.tokens.eval_agent, s.cost_usd.eval_agent);
    }

    pub fn finish(self) -> UsageTotals {
        let (mut t, unknown_units) = (self.t, self.unknown_units);
        t.cost.agent.finish();
        t.cost.summarizer.finish();
        t.cost.judge.finish();
        t.cost.eval_agent.finish();
        let c = &t.cost;
        // Summed exactly and rounded once, so the total is the roles' exact sum whatever the
        // order (run.json's `cost_usd` sums each unit's roles the same way).
        let spent = match (c.summarizer.exact(), c.judge.exact(), c.eval_agent.exact()) {
            (Some(s), Some(j), Some(e)) => Some(s + j + e),
            _ => None,
        };
        let total = c.agent.exact().zip(spent).map(|(a, s)| a + s);
        let dollars = |x: ExactSum| nano_dollars(x.value());
        t.cost.total_usd = total.map(dollars);
        t.cost.headline = CostHeadline {
            modelled_agent_usd: t.cost.agent.usd,
            spent_usd: spent.map(dollars),
            total_usd: t.cost.total_usd,
            unknown_units,
        };
        t
    }
}

/// `usd` rounded to a nano-dollar, as every dollar total of a run is kept (run.json,
/// summary.json, every report): the nearest float to an exact sum can still read
/// `1.8599999999999999` or `0.5940000000000001`.
pub fn nano_dollars(usd: f64) -> f64 {
    (usd * 1e9).round() / 1e9
}

/// `$1.2345` with enough digits for small amounts, or `unknown`.
pub fn format_usd(usd: Option<f64>) -> String {
    match usd {
        None => "unknown".to_string(),
        Some(v) if v != 0.0 && v.abs() < 0.01 => format!("${v:.6}"),
        Some(v) => format!("${v:.4}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::CostByRole;

    fn unit(
        agent_in: u64,
        agent_cost: Option<f64>,
        judge_in: u64,
        judge_cost: Option<f64>,
    ) -> Sample {
        let mut tokens = TokensByRole::default();
        tokens.agent.input = agent_in;
        tokens.agent.cached = agent_in / 2;
        tokens.agent.output = 10;
        tokens.judge.input = judge_in;
        Sample::builder()
            .eval("e")
            .tokens(tokens)
            .cost(CostByRole {
                agent: agent_cost,
                summarizer: None,
                judge: judge_cost,
                eval_agent: None,
            })
            .build()
    }

    #[test]
    fn totals_split_by_role_and_kind() {
        let t = totals(
            [unit(100, Some(0.5), 0, None), unit(300, Some(1.0), 0, None)]
                .iter()
                .map(Sample::row),
        );
        assert_eq!(t.units, 2);
        assert_eq!(t.tokens.agent.input, 400);
        assert_eq!(t.tokens.agent.cached, 200);
        assert_eq!(t.tokens.agent.output, 20);
        assert_eq!(t.tokens_total(), 420);
        assert_eq!(t.cost.agent.usd, Some(1.5));
        // Summarizer and judge used no tokens: known to cost nothing.
        assert_eq!(t.cost.summarizer.usd, Some(0.0));
        assert_eq!(t.cost.total_usd, Some(1.5));
    }

    /// Units that finish in another order give the same dollars to the last bit, and the
    /// total is the roles' exact sum (a float sum read 0.9360000000000006 for 0.936).
    #[test]
    fn dollar_totals_do_not_depend_on_the_order_units_finished_in() {
        let units: Vec<Sample> = (0..500)
            .map(|i: u32| {
                let c = |m: u32| 1e-3 * f64::from((i * 7919) % m) / 7.0;
                unit(100, Some(c(997)), 10, Some(c(89)))
            })
            .collect();
        let forward = totals(units.iter().map(Sample::row));
        let backward = totals(units.iter().rev().map(Sample::row));
        let naive_forward: f64 = units.iter().map(|u| u.cost_usd.agent.unwrap()).sum();
        let naive_backward: f64 = units.iter().rev().map(|u| u.cost_usd.agent.unwrap()).sum();
        assert_ne!(
            naive_forward.to_bits(),
            naive_backward.to_bits(),
            "the costs must show the problem"
        );
        let bits = |t: &UsageTotals| {
            [
                t.cost.agent.usd,
                t.cost.judge.usd,
                t.cost.total_usd,
                t.cost.headline.total_usd,
            ]
            .map(|x| x.unwrap().to_bits())
        };
        assert_eq!(bits(&forward), bits(&backward));
        let exact: ExactSum = units
            .iter()
            .flat_map(|u| [u.cost_usd.agent.unwrap(), u.cost_usd.judge.unwrap()])
            .sum();
        assert_eq!(forward.cost.total_usd, Some(nano_dollars(exact.value())));
    }

    #[test]
    fn unknown_price_is_never_zero() {
        let t = totals(
            [
                unit(100, Some(0.5), 50, None),
                unit(100, Some(0.5), 50, Some(0.1)),
            ]
            .iter()
            .map(Sample::row),
        );
        assert_eq!(t.cost.judge.usd, None);
        assert_eq!(t.cost.judge.unknown_units, 1);
        assert!((t.cost.judge.known_usd - 0.1).abs() < 1e-12);
        assert_eq!(t.cost.total_usd, None);
        assert_eq!(format_usd(t.cost.total_usd), "unknown");
        assert_eq!(format_usd(Some(0.0)), "$0.0000");
        assert_eq!(format_usd(Some(0.00123)), "$0.001230");
        assert_eq!(t.cost.headline.unknown_units, 1);
        assert_eq!(t.cost.headline.modelled_agent_usd, Some(1.0));
        assert_eq!(t.cost.headline.spent_usd, None);
        assert!(t.cost.headline.line().starts_with(
            "modelled agent cost $1.0000 · spent on model calls unknown · total unknown (1 unit(s)"
        ));
    }
}
