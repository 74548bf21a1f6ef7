//! The response cache: content-addressed (sha256 of a canonical JSON of what determines the
//! answer), stored in SQLite (WAL) under the cache directory, and the [`CachedProvider`] wrapper.
//!
//! The key covers: provider kind and endpoint (scheme/host/path, never credentials), model,
//! the messages as the model sees them (role, content, tool calls, tool call id, tool name,
//! error flag; not usage, timestamps or importer notes), tool definitions, every sampling
//! parameter, and the repeat nonce. It leaves out concurrency, retries, timeouts, rate limits
//! and the key. Object keys are sorted before hashing, so key order never changes the digest.
//!
//! Only successful, non-empty responses are stored; errors never are.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::{BoxFuture, ChatRequest, ChatResponse, Provider, ProviderError, ProviderInfo};

/// File name of the database inside the cache directory.
pub const DB_FILE: &str = "responses.sqlite";
/// Bumped when the key derivation or the stored format changes (old rows then never match).
const KEY_VERSION: u32 = 1;

/// A SQLite-backed store of responses by key. Cheap to clone; safe to share.
#[derive(Clone, Debug)]
pub struct ResponseCache {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
}

fn cache_err(path: &Path, what: &str, e: impl std::fmt::Display) -> ProviderError {
    ProviderError::Cache {
        message: format!("{}: {what}: {e}", path.display()),
    }
}

impl ResponseCache {
    /// Opens (creating if needed) `dir/responses.sqlite` in WAL mode.
    pub fn open(dir: &Path) -> Result<Self, ProviderError> {
        std::fs::create_dir_all(dir).map_err(|e| cache_err(dir, "cannot create directory", e))?;
        let path = dir.join(DB_FILE);
        let conn = Connection::open(&path).map_err(|e| cache_err(&path, "cannot open", e))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .and_then(|_| conn.pragma_update(None, "journal_mode", "WAL"))
            .and_then(|_| conn.pragma_update(None, "synchronous", "NORMAL"))
            .and_then(|_| {
                conn.execute_batch(
                    "CREATE TABLE IF NOT EXISTS responses (
                        key TEXT PRIMARY KEY,
                        model TEXT NOT NULL,
                        response TEXT NOT NULL,
                        created_unix INTEGER NOT NULL
                    );",
                )
            })
            .map_err(|e| cache_err(&path, "cannot initialise (is it a ctxbench cache?)", e))?;
        Ok(ResponseCache {
            conn: Arc::new(Mutex::new(conn)),
            path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The hex sha256 key of `request` as `info`'s provider would send it.
    pub fn key(info: &ProviderInfo, request: &ChatRequest) -> String {
        let r = info.resolve(request);
        let messages: Vec<Value> = r
            .messages
            .iter()
            .map(|m| {
                json!({
                    "role": m.role.as_str(),
                    "content": m.content,
                    "tool_calls": m.tool_calls.iter().map(|c| json!({
                        "id": c.id, "name": c.name, "arguments": c.arguments,
                    })).collect::<Vec<_>>(),
                    "tool_call_id": m.tool_call_id,
                    "name": m.name,
                    "is_error": m.is_error,
                })
            })
            .collect();
        let doc = json!({
            "v": KEY_VERSION,
            "kind": info.kind,
            "endpoint": info.endpoint,
            "tool_protocol": info.tool_protocol,
            "model": r.model,
            "messages": messages,
            "tools": r.tools,
            "sampling": r.sampling,
            "nonce": r.repeat_nonce,
        });
        let bytes = serde_json::to_vec(&canonical(&doc)).expect("a JSON value always serializes");
        hex::encode(Sha256::digest(&bytes))
    }

    /// The stored response for `key`, if any. A row that no longer decodes counts as a miss.
    pub async fn get(&self, key: &str) -> Result<Option<ChatResponse>, ProviderError> {
        let this = self.clone();
        let key = key.to_string();
        let text: Option<String> = tokio::task::spawn_blocking(move || {
            let conn = this.conn.lock().unwrap_or_else(|p| p.into_inner());
            conn.query_row(
                "SELECT response FROM responses WHERE key = ?1",
                params![key],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| cache_err(&this.path, "read failed", e))
        })
        .await
        .map_err(|e| cache_err(&self.path, "read task failed", e))??;
        // Rows written before keys were redacted at the HTTP layer are cleaned on the way out.
        Ok(text.and_then(|t| {
            let mut v: Value = serde_json::from_str(&t).ok()?;
            super::secrets::redact_json(&mut v);
            serde_json::from_value(v).ok()
        }))
    }

    /// Stores `response` under `key` (replacing any older row).
    pub async fn put(&self, key: &str, response: &ChatResponse) -> Result<(), ProviderError> {
        let mut value = serde_json::to_value(response)
            .map_err(|e| cache_err(&self.path, "cannot encode response", e))?;
        // Responses from HTTP providers are already clean; this covers any other provider.
        super::secrets::redact_json(&mut value);
        let text = value.to_string();
        let this = self.clone();
        let key = key.to_string();
        let model = response.model.clone();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        tokio::task::spawn_blocking(move || {
            let conn = this.conn.lock().unwrap_or_else(|p| p.into_inner());
            conn.execute(
                "INSERT OR REPLACE INTO responses (key, model, response, created_unix)
                 VALUES (?1, ?2, ?3, ?4)",
                params![key, model, text, now],
            )
            .map(|_| ())
            .map_err(|e| cache_err(&this.path, "write failed", e))
        })
        .await
        .map_err(|e| cache_err(&self.path, "write task failed", e))?
    }

    /// Number of stored responses.
    pub fn len(&self) -> Result<u64, ProviderError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.query_row("SELECT COUNT(*) FROM responses", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| cache_err(&self.path, "count failed", e))
    }

    pub fn is_empty(&self) -> Result<bool, ProviderError> {
        Ok(self.len()? == 0)
    }
}

/// `v` with every object's keys sorted (recursively), so equal content hashes equally.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&m[k]));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Cache hit/miss counters of a [`CachedProvider`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub stored: u64,
}

/// Serves repeated requests from a [`ResponseCache`]; forwards misses to the inner provider
/// and stores its successful, non-empty answers. Hits come back with `from_cache = true` and
/// `attempts = 0`, usage as originally reported.
///
/// Identical requests in flight at the same time are sent once: later ones wait for the first
/// and are then served from the cache (units of one run often ask for the very same summary).
/// If the first fails, each waiter makes its own call.
#[derive(Debug)]
pub struct CachedProvider {
    inner: Arc<dyn Provider>,
    cache: ResponseCache,
    in_flight: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    hits: AtomicU64,
    misses: AtomicU64,
    stored: AtomicU64,
}

impl CachedProvider {
    pub fn new(inner: Arc<dyn Provider>, cache: ResponseCache) -> Self {
        CachedProvider {
            inner,
            cache,
            in_flight: Mutex::new(HashMap::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stored: AtomicU64::new(0),
        }
    }

    pub fn cache(&self) -> &ResponseCache {
        &self.cache
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            stored: self.stored.load(Ordering::Relaxed),
        }
    }
}

impl Provider for CachedProvider {
    fn info(&self) -> &ProviderInfo {
        self.inner.info()
    }

    fn cache_stats(&self) -> Option<CacheStats> {
        Some(self.stats())
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let key = ResponseCache::key(self.inner.info(), request);
            if let Some(hit) = self.lookup(&key).await? {
                return Ok(hit);
            }
            // Single flight: one call per key at a time; the others re-check the cache after it.
            let gate = {
                let mut map = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
                Arc::clone(map.entry(key.clone()).or_default())
            };
            let result = {
                let _turn = gate.lock().await;
                match self.lookup(&key).await {
                    Ok(Some(hit)) => Ok(hit),
                    Err(e) => Err(e),
                    Ok(None) => self.call_and_store(&key, request).await,
                }
            };
            {
                let mut map = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
                // Only the map and this task hold it: nobody else is waiting on this key.
                if Arc::strong_count(&gate) == 2 {
                    map.remove(&key);
                }
            }
            result
        })
    }
}

impl CachedProvider {
    async fn lookup(&self, key: &str) -> Result<Option<ChatResponse>, ProviderError> {
        let hit = self.cache.get(key).await?;
        Ok(hit.map(|mut hit| {
            self.hits.fetch_add(1, Ordering::Relaxed);
            hit.from_cache = true;
            hit.attempts = 0;
            hit
        }))
    }

    async fn call_and_store(
        &self,
        key: &str,
        request: &ChatRequest,
    ) -> Result<ChatResponse, ProviderError> {
        self.misses.fetch_add(1, Ordering::Relaxed);
        let response = self.inner.chat(request).await?;
        if !response.is_empty() {
            self.cache.put(key, &response).await?;
            self.stored.fetch_add(1, Ordering::Relaxed);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::{Message, Sampling, ToolCall, ToolDef, Usage};
    use std::time::Duration;

    fn info() -> ProviderInfo {
        ProviderInfo {
            kind: "openai".into(),
            endpoint: Some("http://127.0.0.1:1/v1".into()),
            defaults: Sampling {
                temperature: Some(0.0),
                ..Default::default()
            },
            ..ProviderInfo::for_test("m")
        }
    }

    fn req() -> ChatRequest {
        ChatRequest::new(vec![
            Message::user("q"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "c".into(),
                    name: "grep".into(),
                    arguments: json!({"a": 1, "b": 2}),
                }],
            ),
        ])
    }

    #[test]
    fn key_depends_on_answer_inputs_only() {
        let base = ResponseCache::key(&info(), &req());
        // Relying on defaults = spelling them out.
        let mut explicit = req();
        explicit.model = Some("m".into());
        explicit.sampling.temperature = Some(0.0);
        assert_eq!(ResponseCache::key(&info(), &explicit), base);
        // Recorded-only fields do not matter; argument key order does not matter.
        let mut noted = req();
        noted.messages[0].usage = Some(Usage::default());
        noted.messages[0].timestamp = Some("t".into());
        noted.messages[1].tool_calls[0].arguments = json!({"b": 2, "a": 1});
        assert_eq!(ResponseCache::key(&info(), &noted), base);
        // Everything that can change the answer does.
        let variants: Vec<fn(&mut ChatRequest)> = vec![
            |r| r.model = Some("other".into()),
            |r| r.messages[0].content.push('!'),
            |r| r.sampling.temperature = Some(0.7),
            |r| r.sampling.max_tokens = Some(5),
            |r| {
                r.sampling.extra.insert("repeat_penalty".into(), json!(1.1));
            },
            |r| r.repeat_nonce = Some("repeat-2".into()),
            |r| {
                r.tools.to_mut().push(ToolDef {
                    name: "ls".into(),
                    description: String::new(),
                    parameters: json!({}),
                })
            },
            |r| r.messages[1].tool_calls[0].id = "d".into(),
        ];
        for (i, f) in variants.iter().enumerate() {
            let mut r = req();
            f(&mut r);
            assert_ne!(ResponseCache::key(&info(), &r), base, "variant {i}");
        }
        let mut other_endpoint = info();
        other_endpoint.endpoint = Some("http://127.0.0.1:2/v1".into());
        assert_ne!(ResponseCache::key(&other_endpoint, &req()), base);
        let mut text_tools = info();
        text_tools.tool_protocol = crate::providers::ToolProtocol::Text;
        assert_ne!(ResponseCache::key(&text_tools, &req()), base);
    }

    #[tokio::test]
    async fn stores_and_reads_back_in_wal_mode() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::open(dir.path()).unwrap();
        let mode: String = cache
            .conn
            .lock()
            .unwrap()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(cache.get("k").await.unwrap(), None);
        let resp = ChatResponse {
            message: Message::assistant("hi", vec![]),
            usage: Usage {
                input: 3,
                output: 1,
                cache_read: 0,
                cache_write: 0,
            },
            usage_reported: true,
            model: "m-1".into(),
            finish_reason: Some("stop".into()),
            latency: Duration::from_millis(12),
            attempts: 2,
            from_cache: false,
            text_tools: None,
            refusal: None,
            reasoning_tokens: None,
            prompt_truncated: false,
        };
        cache.put("k", &resp).await.unwrap();
        assert_eq!(cache.get("k").await.unwrap(), Some(resp));
        assert_eq!(cache.len().unwrap(), 1);
        // A second handle on the same directory sees it (shared between providers).
        let again = ResponseCache::open(dir.path()).unwrap();
        assert_eq!(again.len().unwrap(), 1);
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(DB_FILE), b"not sqlite at all, just text").unwrap();
        let e = ResponseCache::open(dir.path()).unwrap_err();
        assert!(e.to_string().contains(DB_FILE), "{e}");
    }
}
