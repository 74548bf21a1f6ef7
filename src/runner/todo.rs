//! The units a run still has to execute: the plan's units in this shard without a sample,
//! produced one at a time as the dispatcher pulls them (nothing per unit is kept).

use super::plan::{Plan, Unit};
use super::resume::DoneIds;
use super::shard::Shard;
use std::sync::Arc;

/// Units of this shard that have no sample yet, in plan order.
pub struct Todo {
    plan: Arc<Plan>,
    shard: Option<Shard>,
    done: DoneIds,
    len: usize,
}

impl Todo {
    /// The units of `plan` in `shard` (all when `None`) not in `done`, and how many units the
    /// shard holds (done or not).
    pub fn new(plan: Arc<Plan>, shard: Option<Shard>, done: DoneIds) -> (Todo, u64) {
        let (mut planned, mut len) = (0u64, 0usize);
        for i in 0..plan.len() {
            let id = plan.id(i);
            if shard.is_none_or(|s| s.contains(&id)) {
                planned += 1;
                if !done.contains(&id) {
                    len += 1;
                }
            }
        }
        let todo = Todo {
            plan,
            shard,
            done,
            len,
        };
        (todo, planned)
    }

    /// Units still to run.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl IntoIterator for Todo {
    type Item = Arc<Unit>;
    type IntoIter = TodoIter;
    fn into_iter(self) -> TodoIter {
        TodoIter {
            left: self.len,
            todo: self,
            next: 0,
        }
    }
}

/// Builds each unit still to run as it is pulled.
pub struct TodoIter {
    todo: Todo,
    next: usize,
    /// Units not yet produced.
    left: usize,
}

impl Iterator for TodoIter {
    type Item = Arc<Unit>;
    fn next(&mut self) -> Option<Arc<Unit>> {
        let t = &self.todo;
        while self.next < t.plan.len() {
            let i = self.next;
            self.next += 1;
            let id = t.plan.id(i);
            if t.shard.is_none_or(|s| s.contains(&id)) && !t.done.contains(&id) {
                self.left = self.left.saturating_sub(1);
                return Some(Arc::new(t.plan.unit(i)));
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for TodoIter {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LoadedSuite;
    use crate::runner::plan::{build, TraceEntry};
    use std::path::Path;

    fn plan() -> Arc<Plan> {
        let s = LoadedSuite::from_str(
            "[suite]\nname = \"t\"\nrepeats = 3\n[traces]\npaths = [\"x\"]\n[engine]\nbaseline = \"z\"\n[engine.variants.a]\n[engine.variants.z]\n",
            Path::new("s.toml"),
        )
        .unwrap();
        let traces = ["a", "b"]
            .iter()
            .map(|id| TraceEntry {
                id: id.to_string(),
                file: format!("{id}.jsonl"),
                sha256: String::new(),
                trace: None,
            })
            .collect();
        Arc::new(build(&s, traces).unwrap())
    }

    #[test]
    fn todo_skips_done_units_and_other_shards_in_plan_order() {
        let p = plan();
        let all: Vec<Unit> = p.units().collect();
        let mut done = DoneIds::default();
        done.insert(&all[1].id);
        done.insert(&all[4].id);
        let (todo, planned) = Todo::new(p.clone(), None, done.clone());
        assert_eq!(planned, all.len() as u64);
        assert_eq!(todo.len(), all.len() - 2);
        let ids: Vec<String> = todo.into_iter().map(|u| u.id.clone()).collect();
        let want: Vec<String> = all
            .iter()
            .filter(|u| !done.contains(&u.id))
            .map(|u| u.id.clone())
            .collect();
        assert_eq!(ids, want);

        // Two shards split the plan: together every unit once, each counted in its shard.
        let mut seen = Vec::new();
        let mut planned_sum = 0;
        for index in 1..=2 {
            let shard = Shard { index, count: 2 };
            let (todo, planned) = Todo::new(p.clone(), Some(shard), DoneIds::default());
            assert_eq!(todo.len() as u64, planned);
            planned_sum += planned;
            let units: Vec<Arc<Unit>> = todo.into_iter().collect();
            assert_eq!(units.len() as u64, planned);
            assert!(units.iter().all(|u| shard.contains(&u.id)));
            seen.extend(units.iter().map(|u| u.index));
        }
        assert_eq!(planned_sum, all.len() as u64);
        seen.sort();
        assert_eq!(seen, (0..all.len()).collect::<Vec<_>>());
    }
}
