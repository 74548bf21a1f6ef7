//! Path-aware access to parsed JSON for the importers: every lookup knows its JSON path, so a
//! wrong type or a missing field becomes an error naming e.g. `$.messages[3].content` and what
//! was expected, never a panic.

use serde_json::{Map, Value};

/// An error inside one input, before the file name is attached (`ImportError` adds it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// `line 12`, `$.messages[3].content`, `line 4: $.message.content[0]`, …
    pub location: String,
    pub message: String,
}

impl Located {
    pub fn new(location: impl Into<String>, message: impl Into<String>) -> Self {
        Located {
            location: location.into(),
            message: message.into(),
        }
    }
}

pub type Res<T> = Result<T, Located>;

static NULL: Value = Value::Null;

/// A JSON value together with its path from the document root.
#[derive(Clone, Debug)]
pub struct Node<'a> {
    pub v: &'a Value,
    pub path: String,
    /// False when the field does not exist at all (as opposed to an explicit `null`).
    present: bool,
}

fn is_plain_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl<'a> Node<'a> {
    /// The document root, path `$`.
    pub fn root(v: &'a Value) -> Self {
        Node {
            v,
            path: "$".into(),
            present: true,
        }
    }

    /// A root inside a JSON Lines file: path `line N: $`.
    pub fn line_root(v: &'a Value, line: usize) -> Self {
        Node {
            v,
            path: format!("line {line}: $"),
            present: true,
        }
    }

    /// A present value at a path built by the caller (for values moved out of their parent, so
    /// their paths read as if reached with [`Node::key`] and [`Node::idx`]).
    pub fn at(v: &'a Value, path: String) -> Self {
        Node {
            v,
            path,
            present: true,
        }
    }

    /// Child field `k` (a null node when absent or when `self` is not an object).
    pub fn key(&self, k: &str) -> Node<'a> {
        let child = self.v.as_object().and_then(|o| o.get(k));
        let path = if is_plain_key(k) {
            format!("{}.{k}", self.path)
        } else {
            format!("{}[{}]", self.path, Value::String(k.to_string()))
        };
        Node {
            v: child.unwrap_or(&NULL),
            path,
            present: child.is_some(),
        }
    }

    /// Element `i` of an array (a null node when out of range or not an array).
    pub fn idx(&self, i: usize) -> Node<'a> {
        let child = self.v.as_array().and_then(|a| a.get(i));
        Node {
            v: child.unwrap_or(&NULL),
            path: format!("{}[{i}]", self.path),
            present: child.is_some(),
        }
    }

    /// Child field `k`, which must be an array (else the error [`Node::items`] gives), moved
    /// out of `v` (the value this node was made from) with the path of each element, so each can
    /// be dropped once converted.
    pub fn take_items(v: &mut Value, path: String, k: &str) -> Res<Vec<(Value, String)>> {
        let field = Node::at(v, path).key(k);
        if !field.v.is_array() {
            return Err(field.expected("an array"));
        }
        let base = field.path;
        let items = match v.get_mut(k) {
            Some(Value::Array(a)) => std::mem::take(a),
            _ => Vec::new(),
        };
        Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, x)| (x, format!("{base}[{i}]")))
            .collect())
    }

    /// Missing or `null`.
    pub fn is_null(&self) -> bool {
        self.v.is_null()
    }

    /// Present and not `null`.
    pub fn has(&self, k: &str) -> bool {
        self.v
            .as_object()
            .and_then(|o| o.get(k))
            .is_some_and(|v| !v.is_null())
    }

    /// An error at this node: "expected {expected}, found …" (a short string, number or
    /// boolean is shown: `found the string "robot"`).
    pub fn expected(&self, expected: &str) -> Located {
        let found = if !self.present {
            "nothing (the field is missing)".to_string()
        } else {
            match self.v {
                Value::String(s) if s.chars().count() <= 40 && !s.contains('\n') => {
                    format!("the string {}", crate::output::quoted(s))
                }
                Value::Number(n) => format!("the number {n}"),
                Value::Bool(b) => format!("`{b}`"),
                v => crate::output::json_kind(v).to_string(),
            }
        };
        Located::new(
            self.path.clone(),
            format!("expected {expected}, found {found}"),
        )
    }

    /// An error at this node with a free-form message.
    pub fn error(&self, message: impl Into<String>) -> Located {
        Located::new(self.path.clone(), message)
    }

    pub fn str(&self) -> Res<&'a str> {
        self.v.as_str().ok_or_else(|| self.expected("a string"))
    }

    pub fn opt_str(&self) -> Res<Option<&'a str>> {
        match self.v {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s)),
            _ => Err(self.expected("a string or null")),
        }
    }

    pub fn obj(&self) -> Res<&'a Map<String, Value>> {
        self.v.as_object().ok_or_else(|| self.expected("an object"))
    }

    /// The elements of an array, each with its path.
    pub fn items(&self) -> Res<Vec<Node<'a>>> {
        let a = self.v.as_array().ok_or_else(|| self.expected("an array"))?;
        Ok((0..a.len()).map(|i| self.idx(i)).collect())
    }

    /// Like `items`, but missing or `null` is an empty list.
    pub fn opt_items(&self) -> Res<Vec<Node<'a>>> {
        if self.is_null() {
            Ok(Vec::new())
        } else {
            self.items()
        }
    }

    pub fn u64(&self) -> Res<u64> {
        match self.v {
            Value::Number(n) => n
                .as_u64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
                        .map(|f| f as u64)
                })
                .ok_or_else(|| self.expected("a non-negative integer")),
            _ => Err(self.expected("a non-negative integer")),
        }
    }

    pub fn opt_u64(&self) -> Res<Option<u64>> {
        if self.is_null() {
            Ok(None)
        } else {
            self.u64().map(Some)
        }
    }

    pub fn opt_f64(&self) -> Res<Option<f64>> {
        match self.v {
            Value::Null => Ok(None),
            Value::Number(n) => Ok(n.as_f64()),
            _ => Err(self.expected("a number or null")),
        }
    }

    pub fn opt_bool(&self) -> Res<Option<bool>> {
        match self.v {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(*b)),
            _ => Err(self.expected("a boolean or null")),
        }
    }

    /// A scalar rendered as text (string as is, numbers and booleans in JSON form), for ids.
    pub fn scalar_text(&self) -> Res<Option<String>> {
        match self.v {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            Value::Number(n) => Ok(Some(n.to_string())),
            Value::Bool(b) => Ok(Some(b.to_string())),
            _ => Err(self.expected("a string or a number")),
        }
    }
}

/// Message content that is a string, `null`, or a list of parts (`{"type":"text","text":…}`,
/// bare strings, images): the text parts joined by newlines; non-text parts become a short
/// placeholder such as `[image]` so their presence stays visible, each with a warning in
/// `warnings` ([`placeholder`]).
///
/// The warnings go to a `warnings` parameter, as `parse_arguments`' do, rather than to a sink
/// carried by [`Node`]: every caller must then say where they go (the compiler checks it), and no
/// node made without a sink (`Node::at`, `Node::root`) can drop one silently.
pub fn content_text(n: &Node<'_>, warnings: &mut Vec<String>) -> Res<String> {
    match n.v {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(_) => {
            let mut parts: Vec<String> = Vec::new();
            for p in n.items()? {
                parts.push(part_text(&p, warnings)?);
            }
            Ok(parts.join("\n"))
        }
        _ => Err(n.expected("a string, null or a list of content parts")),
    }
}

/// One part of a content list (see [`content_text`]): a bare string, a part with `text`, a
/// refusal, or a non-text part as its [`placeholder`].
///
/// A refusal is text, the model's answer: a part whose `refusal` is a string (OpenAI chat and
/// Responses `{"type": "refusal", "refusal": "…"}`) is that string, before any `text` (as the
/// Responses API writes it, a refusal part has no `text`). A `refusal` that is not a string
/// (Inspect's `ContentText.refusal: true` flag beside its `text`) is no refusal text.
pub fn part_text(p: &Node<'_>, warnings: &mut Vec<String>) -> Res<String> {
    match p.v {
        Value::String(s) => Ok(s.clone()),
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("refusal") {
                return Ok(r.clone());
            }
            let ty = p.key("type").opt_str()?.unwrap_or("text");
            if o.get("text").is_some_and(|t| !t.is_null()) {
                return Ok(p.key("text").str()?.to_string());
            }
            if ty == "text" {
                return Err(p.key("text").expected("a string"));
            }
            Ok(placeholder(p, ty, warnings))
        }
        _ => Err(p.expected("a string or a content part object")),
    }
}

/// The placeholder `[what]` of the non-text part at `at` (`what`: its type, e.g. `image_url`,
/// or Gemini's MIME type, e.g. `image/png`), and the warning that says so in `warnings`: the
/// part's tokens are in no count of the replay. One wording per kind of part (image, audio,
/// video, document, file, other), so `record::import_warnings` groups them (it elides the quoted
/// placeholder).
pub fn placeholder(at: &Node<'_>, what: &str, warnings: &mut Vec<String>) -> String {
    let p = format!("[{what}]");
    warnings.push(format!(
        "{}: {} was replaced by the placeholder {}; its tokens are not counted",
        at.path,
        PartKind::of(what).noun(),
        crate::output::quoted(&p)
    ));
    p
}

/// What a non-text part is, for the wording of its warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PartKind {
    Image,
    Audio,
    Video,
    Document,
    File,
    /// Any other type (one this tool does not know).
    Other,
}

impl PartKind {
    /// The kind of a part of type `what` (`image_url`, `input_audio`, `document`, `file`, …) or
    /// MIME type (`image/png`, `audio/wav`, `application/pdf`, `text/csv`, …).
    fn of(what: &str) -> PartKind {
        let w = what.to_ascii_lowercase();
        if let Some((top, sub)) = w.split_once('/') {
            return match top {
                "image" => PartKind::Image,
                "audio" => PartKind::Audio,
                "video" => PartKind::Video,
                "text" => PartKind::Document,
                _ if sub == "pdf" => PartKind::Document,
                _ => PartKind::File,
            };
        }
        let has = |word: &str| w.split('_').any(|x| x == word);
        if has("image") {
            PartKind::Image
        } else if has("audio") {
            PartKind::Audio
        } else if has("video") {
            PartKind::Video
        } else if has("document") || has("pdf") {
            PartKind::Document
        } else if has("file") {
            PartKind::File
        } else {
            PartKind::Other
        }
    }

    /// How a warning names a part of this kind.
    fn noun(self) -> &'static str {
        match self {
            PartKind::Image => "an image",
            PartKind::Audio => "an audio part",
            PartKind::Video => "a video part",
            PartKind::Document => "a document part",
            PartKind::File => "a file part",
            PartKind::Other => "a non-text part",
        }
    }
}

/// Tool-call arguments recorded as a JSON string (OpenAI) or as an object: parsed, key order
/// kept. A string that is not JSON is kept as a JSON string value and reported in `warnings`.
pub fn parse_arguments(n: &Node<'_>, warnings: &mut Vec<String>) -> Res<Value> {
    match n.v {
        Value::Null => Ok(Value::Object(Map::new())),
        Value::String(s) => {
            if s.trim().is_empty() {
                return Ok(Value::Object(Map::new()));
            }
            match serde_json::from_str::<Value>(s) {
                Ok(v) => Ok(v),
                Err(e) => {
                    warnings.push(format!(
                        "{}: arguments are not valid JSON ({e}); kept as a string",
                        n.path
                    ));
                    Ok(Value::String(s.clone()))
                }
            }
        }
        Value::Object(_) | Value::Array(_) => Ok(n.v.clone()),
        _ => Err(n.expected("a JSON string or an object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_name_the_failing_element() {
        let v = json!({"messages": [{"role": "user"}, {"role": 3}]});
        let root = Node::root(&v);
        let e = root.key("messages").idx(1).key("role").str().unwrap_err();
        assert_eq!(e.location, "$.messages[1].role");
        assert_eq!(e.message, "expected a string, found the number 3");
        let e = root
            .key("messages")
            .idx(0)
            .key("content")
            .str()
            .unwrap_err();
        assert!(e.message.contains("missing"), "{}", e.message);
        let e = root.key("odd key").u64().unwrap_err();
        assert_eq!(e.location, "$[\"odd key\"]");
    }

    #[test]
    fn line_roots_prefix_the_line() {
        let v = json!({"a": [1]});
        let e = Node::line_root(&v, 7).key("a").idx(0).str().unwrap_err();
        assert_eq!(e.location, "line 7: $.a[0]");
    }

    #[test]
    fn content_parts_join_and_reject_bad_parts() {
        let v = json!([{"type": "text", "text": "a"}, "b", {"type": "image_url", "image_url": {}}]);
        let mut w = Vec::new();
        assert_eq!(
            content_text(&Node::root(&v), &mut w).unwrap(),
            "a\nb\n[image_url]"
        );
        assert_eq!(
            w,
            ["$[2]: an image was replaced by the placeholder \"[image_url]\"; its tokens are not counted"]
        );
        let v = json!([{"type": "text", "text": 5}]);
        assert_eq!(
            content_text(&Node::root(&v), &mut w).unwrap_err().location,
            "$[0].text"
        );
    }

    /// Each non-text part replaced by a placeholder is warned of at its JSON path, in one wording
    /// per kind of part (`record::import_warnings` groups them so: it elides the quoted
    /// placeholder); text, even a line reading `[image]`, is not.
    #[test]
    fn every_placeholder_is_warned_of_by_kind() {
        let v = json!([
            "[image]",
            {"type": "text", "text": "[image]"},
            {"type": "input_image", "image_url": "data:…"},
            {"type": "input_audio", "input_audio": {"data": "…", "format": "wav"}},
            {"type": "file", "file": {"file_id": "file-1"}},
            {"type": "input_file", "file_id": "file-2"},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf"}},
            {"type": "video_url", "video_url": {}},
            {"type": "computer_screenshot", "data": "…"}
        ]);
        let mut w = Vec::new();
        let text = content_text(&Node::root(&v), &mut w).unwrap();
        assert_eq!(
            text,
            "[image]\n[image]\n[input_image]\n[input_audio]\n[file]\n[input_file]\n[document]\n[video_url]\n[computer_screenshot]"
        );
        let warned = |at: &str, noun: &str, p: &str| {
            format!("{at}: {noun} was replaced by the placeholder \"[{p}]\"; its tokens are not counted")
        };
        assert_eq!(
            w,
            [
                warned("$[2]", "an image", "input_image"),
                warned("$[3]", "an audio part", "input_audio"),
                warned("$[4]", "a file part", "file"),
                warned("$[5]", "a file part", "input_file"),
                warned("$[6]", "a document part", "document"),
                warned("$[7]", "a video part", "video_url"),
                warned("$[8]", "a non-text part", "computer_screenshot"),
            ]
        );
        // MIME types (Gemini's inline data) by their top-level type; a PDF is a document.
        for (mime, noun) in [
            ("image/png", "an image"),
            ("audio/wav", "an audio part"),
            ("video/mp4", "a video part"),
            ("application/pdf", "a document part"),
            ("text/csv", "a document part"),
            ("application/zip", "a file part"),
        ] {
            assert_eq!(PartKind::of(mime).noun(), noun, "{mime}");
        }
        // A string or a null content has no part to replace.
        for v in [json!("[image]\n[document]"), Value::Null] {
            let mut w = Vec::new();
            content_text(&Node::root(&v), &mut w).unwrap();
            assert!(w.is_empty(), "{w:?}");
        }
    }

    /// A refusal part is the model's answer: its text is imported, with no warning (it used to
    /// become a `[refusal]` placeholder, the text lost). A `refusal` flag that is not a string
    /// (Inspect's `ContentText`) leaves the part's `text`.
    #[test]
    fn a_refusal_part_is_its_text() {
        let v = json!([
            {"type": "text", "text": "Let me see."},
            {"type": "refusal", "refusal": "I can't help with that."},
            {"type": "text", "text": "flagged", "refusal": true},
            {"type": "refusal", "refusal": null}
        ]);
        let mut w = Vec::new();
        assert_eq!(
            content_text(&Node::root(&v), &mut w).unwrap(),
            "Let me see.\nI can't help with that.\nflagged\n[refusal]"
        );
        // A refusal part without its text still says it was there.
        assert_eq!(
            w,
            ["$[3]: a non-text part was replaced by the placeholder \"[refusal]\"; its tokens are not counted"]
        );
    }

    #[test]
    fn arguments_keep_order_and_tolerate_non_json() {
        let v = json!("{\"b\": 1, \"a\": 2}");
        let mut w = Vec::new();
        let a = parse_arguments(&Node::root(&v), &mut w).unwrap();
        assert_eq!(
            a.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["b", "a"]
        );
        let v = json!("not json");
        let a = parse_arguments(&Node::root(&v), &mut w).unwrap();
        assert_eq!(a, json!("not json"));
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn integers_accept_integral_floats_only() {
        let v = json!([3, 3.0, 3.5, -1]);
        let r = Node::root(&v);
        assert_eq!(r.idx(0).u64().unwrap(), 3);
        assert_eq!(r.idx(1).u64().unwrap(), 3);
        assert!(r.idx(2).u64().is_err());
        assert!(r.idx(3).u64().is_err());
    }
}
