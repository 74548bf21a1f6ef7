//! The one place API keys are redacted: a process-wide registry of every configured key's value
//! and the helpers that replace those values with `***` in text, JSON and raw response bodies.
//!
//! [`super::http::ApiKey::from_env`] registers each key it reads. Everything a provider receives
//! passes [`redact_body`] in `HttpProvider::exchange` before it is decoded, so a server that
//! echoes a key (in a 200 or an error body) cannot get it into the cache, samples, evidence,
//! reports or logs; error texts pass [`redact`]. Cache rows written before this existed are
//! cleaned again when read.
//!
//! Decision: values shorter than [`MIN_SECRET_CHARS`] are not registered. Local servers are
//! often given placeholder keys (`none`, `x`, `EMPTY`) and replacing those everywhere would
//! mangle ordinary model text; a provider's own key of any length is still removed from its
//! error texts (see [`redact`]).

use std::borrow::Cow;
use std::sync::RwLock;

use serde_json::Value;

/// Shortest key value that is redacted from successful responses.
pub const MIN_SECRET_CHARS: usize = 8;

/// What a redacted value is replaced with.
pub const MASK: &str = "***";

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Adds `value` to the redacted set (ignored when shorter than [`MIN_SECRET_CHARS`]).
pub fn register(value: &str) {
    let value = value.trim();
    if value.chars().count() < MIN_SECRET_CHARS {
        return;
    }
    let mut set = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    if !set.iter().any(|s| s == value) {
        set.push(value.to_string());
        // Longest first, so a key that contains another is replaced whole.
        set.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

fn registered() -> Vec<String> {
    SECRETS.read().unwrap_or_else(|p| p.into_inner()).clone()
}

fn replace_all(text: &str, secrets: &[String]) -> Option<String> {
    let mut out: Option<String> = None;
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        let cur = out.as_deref().unwrap_or(text);
        if cur.contains(s.as_str()) {
            out = Some(cur.replace(s.as_str(), MASK));
        }
    }
    out
}

/// `text` with every registered key and `extra` (a provider's own key, any length) replaced.
pub fn redact(text: &str, extra: Option<&str>) -> String {
    let mut secrets = registered();
    if let Some(e) = extra.filter(|e| !e.is_empty()) {
        secrets.insert(0, e.to_string());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
    replace_all(text, &secrets).unwrap_or_else(|| text.to_string())
}

/// Replaces registered keys in every string (and object key) of `v`; true when one was found.
pub fn redact_json(v: &mut Value) -> bool {
    redact_value(v, &registered())
}

fn redact_value(v: &mut Value, secrets: &[String]) -> bool {
    match v {
        Value::String(s) => {
            // A string that is JSON itself (a tool call's `arguments`) is decoded later: a key
            // behind its own escapes (`\u0073k-…`) is found in the decoded form.
            let nested = s.trim_start().starts_with(['{', '['])
                && serde_json::from_str::<Value>(s).is_ok_and(|mut inner| {
                    redact_value(&mut inner, secrets)
                        && serde_json::to_string(&inner).is_ok_and(|r| {
                            *s = r;
                            true
                        })
                });
            match replace_all(s, secrets) {
                Some(r) => {
                    *s = r;
                    true
                }
                None => nested,
            }
        }
        Value::Array(a) => a
            .iter_mut()
            .fold(false, |hit, x| redact_value(x, secrets) | hit),
        Value::Object(m) => {
            let mut hit = false;
            for (k, mut val) in std::mem::take(m) {
                hit |= redact_value(&mut val, secrets);
                let k = match replace_all(&k, secrets) {
                    Some(r) => {
                        hit = true;
                        r
                    }
                    None => k,
                };
                m.insert(k, val);
            }
            hit
        }
        _ => false,
    }
}

/// A response body with every registered key removed. JSON bodies are redacted value by value
/// (so a key hidden behind JSON escapes is found too) and re-encoded only when something was
/// replaced; other bodies are redacted as text. Borrowed, unchanged, in the common case.
pub fn redact_body(body: &[u8]) -> Cow<'_, [u8]> {
    let secrets = registered();
    if secrets.is_empty() {
        return Cow::Borrowed(body);
    }
    if let Ok(mut v) = serde_json::from_slice::<Value>(body) {
        if redact_value(&mut v, &secrets) {
            if let Ok(bytes) = serde_json::to_vec(&v) {
                return Cow::Owned(bytes);
            }
        }
        return Cow::Borrowed(body);
    }
    let text = String::from_utf8_lossy(body);
    match replace_all(&text, &secrets) {
        Some(r) => Cow::Owned(r.into_bytes()),
        None => Cow::Borrowed(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The registry is process-wide: every test uses its own values.
    #[test]
    fn registered_keys_are_redacted_in_text_json_and_bodies() {
        register("sk-secrets-unit-AAAA1111");
        assert_eq!(
            redact("a sk-secrets-unit-AAAA1111 b", None),
            "a *** b".to_string()
        );
        let body = br#"{"choices":[{"message":{"content":"key=sk-secrets-unit-AAAA1111"}}]}"#;
        let out = redact_body(body);
        assert!(matches!(out, Cow::Owned(_)));
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "key=***");
        // Hidden behind a JSON escape (`\u0073` = `s`).
        let escaped = br#"{"x":"\u0073k-secrets-unit-AAAA1111"}"#;
        assert!(!String::from_utf8_lossy(&redact_body(escaped)).contains("AAAA1111"));
        // Behind the escapes of a tool call's `arguments`, JSON in a JSON string, which the wire
        // parser decodes after this (an audit's server echoed the key so into samples.jsonl).
        let args = br#"{"tool_calls":[{"function":{"name":"read_file",
            "arguments":"{\"path\": \"/\\u0073k-secrets-unit-AAAA1111\"}"}}]}"#;
        let out = redact_body(args);
        let v: Value = serde_json::from_slice(&out).unwrap();
        let inner = v["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        let inner: Value = serde_json::from_str(inner).unwrap();
        assert_eq!(inner["path"], "/***");
        // Not JSON: as text.
        let plain = b"oops sk-secrets-unit-AAAA1111";
        assert_eq!(&*redact_body(plain), b"oops ***");
        // Untouched bodies are not re-encoded.
        let clean = br#"{ "a" : 1 }"#;
        assert!(matches!(redact_body(clean), Cow::Borrowed(_)));
        let mut v =
            serde_json::json!({"sk-secrets-unit-AAAA1111": [1, "sk-secrets-unit-AAAA1111"]});
        assert!(redact_json(&mut v));
        assert_eq!(v, serde_json::json!({"***": [1, "***"]}));
    }

    #[test]
    fn short_placeholders_are_not_registered_but_own_key_is_redacted() {
        register("none");
        assert_eq!(redact("none of this", None), "none of this");
        assert_eq!(redact("key none", Some("none")), "key ***");
        assert_eq!(redact("x", Some("")), "x");
    }
}
