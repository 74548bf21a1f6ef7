//! The one deep-merge rule for configuration: suite variants over `[engine.base]`, grid
//! combinations, `--set` overrides and per-layer overrides over a preset's layer all use
//! [`merge`].
//!
//! Tables merge key by key; anything else (numbers, strings, arrays) replaces. One exception:
//! a *one-of choice* — a table with exactly one key naming the alternative, such as
//! `trigger = { fraction = 0.5 }` or `{ tokens = 9000 }`, `prompt = { file = … }` or
//! `{ text = … }` — is replaced, not mixed, when the override names another alternative.
//! Which keys hold such choices is [`CHOICE_KEYS`]; a patch of the same alternative
//! (`{ fraction = 0.6 }` over `{ fraction = 0.5 }`) merges as usual.

use serde_json::Value;

/// Keys whose value is a one-of choice: `trigger`, `keep`, `threshold`, `prompt`, and the
/// trigger-valued `max_tokens` (turn_trim) and `limit` (emergency).
pub const CHOICE_KEYS: [&str; 6] = [
    "trigger",
    "keep",
    "threshold",
    "prompt",
    "max_tokens",
    "limit",
];

/// Merge `patch` into `target` (see the module documentation for the rule).
pub fn merge(target: &mut Value, patch: Value) {
    merge_at(target, patch, None);
}

fn merge_at(target: &mut Value, patch: Value, key: Option<&str>) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            if key.is_some_and(|k| CHOICE_KEYS.contains(&k)) && p.keys().any(|k| !t.contains_key(k))
            {
                t.clear();
            }
            for (k, v) in p {
                match t.get_mut(&k) {
                    Some(slot) => merge_at(slot, v, Some(&k)),
                    None => {
                        t.insert(k, v);
                    }
                }
            }
        }
        (slot, p) => *slot = p,
    }
}

/// [`merge`] for TOML tables (suite variants and grids): the same rule, applied to the JSON
/// form of both tables. TOML values map one to one onto JSON ones (date-times become strings,
/// which no engine key accepts anyway).
pub fn merge_toml(target: &mut toml::Table, patch: &toml::Table) {
    let mut t = serde_json::to_value(&*target).expect("TOML tables are JSON");
    merge(
        &mut t,
        serde_json::to_value(patch).expect("TOML tables are JSON"),
    );
    *target = toml::Table::try_from(t).expect("merged TOML tables stay TOML");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_merge_choices_switch_and_arrays_replace() {
        let mut v = json!({"window": 1, "summarize": {"trigger": {"fraction": 0.5}, "keep": {"messages": 3}}, "tools": ["a", "b"]});
        merge(
            &mut v,
            json!({"preset": "none", "summarize": {"trigger": {"tokens": 9}}, "tools": ["c"]}),
        );
        assert_eq!(
            v,
            json!({"window": 1, "summarize": {"trigger": {"tokens": 9}, "keep": {"messages": 3}}, "tools": ["c"], "preset": "none"})
        );
        // Same alternative: merged as usual.
        merge(&mut v, json!({"summarize": {"trigger": {"tokens": 10}}}));
        assert_eq!(v["summarize"]["trigger"], json!({"tokens": 10}));
    }

    #[test]
    fn emergency_limit_is_a_choice_too() {
        // The case that used to merge into an invalid `{fraction, tokens}` in suite variants.
        let mut base: toml::Table = toml::from_str("emergency.limit = { fraction = 0.9 }").unwrap();
        let over: toml::Table = toml::from_str("emergency.limit = { tokens = 9000 }").unwrap();
        merge_toml(&mut base, &over);
        let limit = base["emergency"]["limit"].as_table().unwrap();
        assert_eq!(limit.len(), 1, "{limit:?}");
        assert_eq!(limit["tokens"].as_integer(), Some(9000));
        let mut tt: toml::Table = toml::from_str("turn_trim.max_tokens.tokens = 5").unwrap();
        merge_toml(
            &mut tt,
            &toml::from_str("turn_trim.max_tokens.fraction = 0.5").unwrap(),
        );
        assert_eq!(
            tt["turn_trim"]["max_tokens"].as_table().unwrap().len(),
            1,
            "{tt:?}"
        );
    }
}
