//! Needle planting: put an unguessable fact (`deploy token: teal-otter-7731`) at a chosen depth
//! of a real trace — as a user message, inside a tool result, or inside an assistant message —
//! with optional distractors of the same shape, all derived from a seed. With `paraphrase`, the
//! question avoids the key (a seeded paraphrase per fact kind) and the distractors share part
//! of the needle's key, so matching the question's words is not enough.
//!
//! Planting never breaks the trace's structure: a new user message goes only at a boundary where
//! no tool call is waiting for its result, and facts placed in tool results or assistant text are
//! added as a line of that message, so call/result pairing is untouched.

use crate::trace::{Message, Role, Trace};
use serde::{Deserialize, Serialize};

/// Where a needle goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// A new user message at the nearest safe boundary.
    User,
    /// A line inside the nearest tool result.
    Tool,
    /// A line inside the nearest assistant message's text.
    Assistant,
}

impl Position {
    pub fn as_str(self) -> &'static str {
        match self {
            Position::User => "user",
            Position::Tool => "tool",
            Position::Assistant => "assistant",
        }
    }
}

/// One planted fact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// The key phrase, e.g. `deploy token`.
    pub key: String,
    /// The unguessable value, e.g. `teal-otter-7731`.
    pub value: String,
    /// Index of the message that carries it in the planted trace.
    pub index: usize,
    pub position: Position,
    /// False for distractors.
    pub is_needle: bool,
    /// The words the question uses instead of the key (`paraphrase = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_as: Option<String>,
}

impl Fact {
    /// The text line that carries the fact.
    pub fn line(&self) -> String {
        format!("Note for later: the {} is {}.", self.key, self.value)
    }

    /// The question that asks for it (in other words than the key when paraphrased).
    pub fn question(&self) -> String {
        if let Some(p) = &self.asked_as {
            return format!(
                "Earlier in this session we noted it down. What exactly is the {p}? \
                 Answer with the value only."
            );
        }
        format!(
            "Earlier in this session a {} was mentioned. What exactly is the {}? \
             Answer with the value only.",
            self.key, self.key
        )
    }
}

const KEYS: [&str; 16] = [
    "deploy token",
    "staging database password",
    "release codename",
    "on-call pager id",
    "feature flag secret",
    "backup bucket suffix",
    "license activation code",
    "vpn pre-shared phrase",
    "canary cluster tag",
    "audit ticket handle",
    "build cache salt",
    "signing key alias",
    "metrics namespace tag",
    "migration batch label",
    "incident bridge code",
    "vault unseal hint",
];
const ADJECTIVES: [&str; 24] = [
    "teal", "amber", "crimson", "silent", "brisk", "hollow", "velvet", "frosty", "gilded",
    "rustic", "lunar", "mellow", "nimble", "obsidian", "placid", "quartz", "rapid", "sable",
    "tawny", "umber", "vivid", "woolly", "zesty", "cobalt",
];
const ANIMALS: [&str; 24] = [
    "otter", "heron", "lynx", "marmot", "ibis", "gecko", "bison", "falcon", "newt", "tapir",
    "walrus", "yak", "quokka", "raven", "stoat", "viper", "wombat", "egret", "ferret", "koala",
    "lemur", "moose", "okapi", "puffin",
];

/// A fact kind for paraphrased questions: the planted key, ways to ask for it that avoid the
/// key's words as a phrase, and sibling keys that share part of it (the distractors).
struct Kind {
    key: &'static str,
    paraphrases: [&'static str; 2],
    siblings: [&'static str; 2],
}

const KINDS: [Kind; 8] = [
    Kind {
        key: "staging deploy token",
        paraphrases: [
            "token we deploy staging with",
            "credential our staging deploys use",
        ],
        siblings: ["production deploy token", "staging read token"],
    },
    Kind {
        key: "primary database password",
        paraphrases: [
            "password of the main database",
            "password for logging into our primary db",
        ],
        siblings: ["replica database password", "primary cache password"],
    },
    Kind {
        key: "next release codename",
        paraphrases: [
            "name we gave the upcoming release",
            "codename of the release after this one",
        ],
        siblings: ["previous release codename", "next sprint codename"],
    },
    Kind {
        key: "on-call pager id",
        paraphrases: [
            "id of the pager for whoever is on call",
            "pager the on-call engineer carries",
        ],
        siblings: ["backup pager id", "on-call phone id"],
    },
    Kind {
        key: "backup bucket suffix",
        paraphrases: [
            "suffix of the bucket our backups go to",
            "ending of the backups bucket name",
        ],
        siblings: ["logs bucket suffix", "backup volume suffix"],
    },
    Kind {
        key: "canary cluster tag",
        paraphrases: [
            "tag on the cluster that runs canaries",
            "label of the canary deployment cluster",
        ],
        siblings: ["main cluster tag", "canary node tag"],
    },
    Kind {
        key: "signing key alias",
        paraphrases: [
            "alias of the key we sign releases with",
            "name the signing key goes by",
        ],
        siblings: ["encryption key alias", "signing cert alias"],
    },
    Kind {
        key: "incident bridge code",
        paraphrases: [
            "code to join the incident call",
            "dial-in code for the incident bridge line",
        ],
        siblings: ["standup bridge code", "incident room code"],
    },
];

/// A deterministic generator of keys and values.
struct Values(fastrand::Rng);

impl Values {
    fn value(&mut self) -> String {
        format!(
            "{}-{}-{:04}",
            ADJECTIVES[self.0.usize(..ADJECTIVES.len())],
            ANIMALS[self.0.usize(..ANIMALS.len())],
            self.0.u32(1000..10000)
        )
    }
}

/// What to plant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlantSpec {
    /// Fraction of the trace (0.0 = start, 1.0 = end) where the first needle goes.
    pub depth: f64,
    pub position: Position,
    /// Number of needles (spread evenly from `depth` towards the end).
    pub needles: usize,
    /// Distractor facts (same shape, other keys), spread over the trace.
    pub distractors: usize,
    pub seed: u64,
    /// Ask in other words than the key (a seeded paraphrase per fact kind), with distractors
    /// whose keys share part of the needle's (`production deploy token` for `staging deploy
    /// token`).
    #[serde(default)]
    pub paraphrase: bool,
}

/// The planted trace and what was planted where.
#[derive(Clone, Debug)]
pub struct Planted {
    pub trace: Trace,
    /// Needles first (in planting order), then distractors.
    pub facts: Vec<Fact>,
}

impl Planted {
    pub fn needles(&self) -> impl Iterator<Item = &Fact> {
        self.facts.iter().filter(|f| f.is_needle)
    }
}

/// Plant needles and distractors into a copy of `trace`.
pub fn plant(trace: &Trace, spec: &PlantSpec) -> Result<Planted, String> {
    if !(0.0..=1.0).contains(&spec.depth) {
        return Err(format!("needle depth {} is not within 0..=1", spec.depth));
    }
    if spec.needles == 0 {
        return Err("at least one needle is needed".into());
    }
    if spec.needles + spec.distractors > KEYS.len() {
        return Err(format!(
            "at most {} needles + distractors fit in one trace",
            KEYS.len()
        ));
    }
    let mut rng = Values(fastrand::Rng::with_seed(spec.seed));
    let mut keys: Vec<&str> = KEYS.to_vec();
    rng.0.shuffle(&mut keys);
    let mut asked: Vec<Option<String>> = vec![None; keys.len()];
    if spec.paraphrase {
        (keys, asked) = paraphrased_keys(spec, &mut rng.0)?;
    }

    // Depths: needles from `depth` towards the end; distractors evenly over the whole trace.
    let mut wanted: Vec<(f64, Position, bool)> = Vec::new();
    for k in 0..spec.needles {
        let d = spec.depth + (1.0 - spec.depth) * k as f64 / spec.needles as f64;
        wanted.push((d, spec.position, true));
    }
    for k in 0..spec.distractors {
        let d = (k as f64 + 0.5) / spec.distractors as f64;
        let pos = [Position::User, Position::Tool, Position::Assistant][k % 3];
        wanted.push((d, pos, false));
    }

    let mut out = trace.clone();
    let mut facts: Vec<Fact> = Vec::new();
    for (i, (depth, position, is_needle)) in wanted.into_iter().enumerate() {
        let key = keys[i].to_string();
        let value = rng.value();
        let index = place(&mut out, depth, position, &key, &value)?;
        // Later insertions shift earlier facts' indexes.
        if position == Position::User {
            for f in facts.iter_mut() {
                if f.index >= index {
                    f.index += 1;
                }
            }
        }
        facts.push(Fact {
            key,
            value,
            index,
            position,
            is_needle,
            asked_as: asked[i].clone(),
        });
    }
    Ok(Planted { trace: out, facts })
}

/// Keys in planting order (needles, then distractors) for `paraphrase = true`: needle kinds
/// drawn by the seed, each asked with one of its paraphrases; distractors are the needles'
/// siblings first (round-robin), then other kinds' keys.
fn paraphrased_keys(
    spec: &PlantSpec,
    rng: &mut fastrand::Rng,
) -> Result<(Vec<&'static str>, Vec<Option<String>>), String> {
    if spec.needles > KINDS.len() {
        return Err(format!(
            "at most {} paraphrased needles fit in one trace",
            KINDS.len()
        ));
    }
    let mut order: Vec<usize> = (0..KINDS.len()).collect();
    rng.shuffle(&mut order);
    let needles = &order[..spec.needles];
    let mut keys: Vec<&'static str> = Vec::new();
    let mut asked: Vec<Option<String>> = Vec::new();
    for &k in needles {
        keys.push(KINDS[k].key);
        asked.push(Some(KINDS[k].paraphrases[rng.usize(..2)].to_string()));
    }
    let mut pool: Vec<&'static str> = Vec::new();
    for j in 0..2 {
        pool.extend(needles.iter().map(|&k| KINDS[k].siblings[j]));
    }
    pool.extend(order[spec.needles..].iter().map(|&k| KINDS[k].key));
    if spec.distractors > pool.len() {
        return Err(format!(
            "at most {} distractors fit with {} paraphrased needles",
            pool.len(),
            spec.needles
        ));
    }
    keys.extend(&pool[..spec.distractors]);
    asked.resize(keys.len(), None);
    Ok((keys, asked))
}

/// Put one fact into the trace; returns the index of the message that carries it.
fn place(
    trace: &mut Trace,
    depth: f64,
    position: Position,
    key: &str,
    value: &str,
) -> Result<usize, String> {
    let n = trace.messages.len();
    if n == 0 {
        return Err("cannot plant a needle in an empty trace".into());
    }
    let target = ((depth * n as f64).round() as usize).min(n - 1);
    let line = Fact {
        key: key.into(),
        value: value.into(),
        index: 0,
        position,
        is_needle: true,
        asked_as: None,
    }
    .line();
    match position {
        Position::User => {
            let at = nearest(n + 1, target, |i| is_safe_boundary(trace, i))
                .ok_or("the trace has no boundary where a user message can go")?;
            let mut m = Message::user(line);
            m.kind = Some("planted".into());
            trace.messages.insert(at, m);
            for marker in trace.markers.iter_mut() {
                if marker.index >= at {
                    marker.index += 1;
                }
            }
            Ok(at)
        }
        Position::Tool | Position::Assistant => {
            let role = if position == Position::Tool {
                Role::Tool
            } else {
                Role::Assistant
            };
            let at = nearest(n, target, |i| trace.messages[i].role == role)
                .ok_or_else(|| format!("the trace has no {} message", role.as_str()))?;
            let content = &mut trace.messages[at].content;
            insert_line_in_middle(content, &line);
            Ok(at)
        }
    }
}

/// A user message may be inserted before index `i` when every tool call so far has its result.
fn is_safe_boundary(trace: &Trace, i: usize) -> bool {
    if i == 0 {
        return false; // keep the system prompt / task first
    }
    let prev = &trace.messages[i - 1];
    if prev.role == Role::Assistant && !prev.tool_calls.is_empty() {
        return false;
    }
    // Not between a tool result and further results of the same assistant turn.
    !(prev.role == Role::Tool && trace.messages.get(i).is_some_and(|m| m.role == Role::Tool))
}

/// The index in `0..len` closest to `target` that satisfies `ok` (ties go to the earlier one).
fn nearest(len: usize, target: usize, ok: impl Fn(usize) -> bool) -> Option<usize> {
    (0..len)
        .filter(|&i| ok(i))
        .min_by_key(|&i| (i.abs_diff(target), i))
}

/// Insert `line` on its own line near the middle of `content` (at a line break).
fn insert_line_in_middle(content: &mut String, line: &str) {
    if content.is_empty() {
        content.push_str(line);
        return;
    }
    let mid = content.len() / 2;
    let cut = content[mid..]
        .find('\n')
        .map(|p| mid + p + 1)
        .unwrap_or(content.len());
    let mut insert = String::new();
    if cut == content.len() && !content.ends_with('\n') {
        insert.push('\n');
    }
    insert.push_str(line);
    insert.push('\n');
    content.insert_str(cut, &insert);
}

/// Normalize an answer for exact matching: lowercase, alphanumerics and dashes only.
pub fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric() || *c == '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// True when `answer` states `value` (normalized containment; values are unguessable, so
/// containment is exact recovery).
pub fn recovered(answer: &str, value: &str) -> bool {
    let v = normalize(value);
    !v.is_empty() && normalize(answer).contains(&v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{SourceFormat, ToolCall, TraceMeta};
    use serde_json::json;

    fn sample_trace() -> Trace {
        let mut t = Trace::new(TraceMeta::new("t", SourceFormat::Canonical));
        t.messages.push(Message::system("sys"));
        t.messages.push(Message::user("fix the bug"));
        for k in 0..10 {
            let id = format!("c{k}");
            t.messages.push(Message::assistant(
                format!("step {k}"),
                vec![ToolCall {
                    id: id.clone(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls"}),
                }],
            ));
            t.messages
                .push(Message::tool(id, "bash", format!("out {k}\nmore {k}\nend")));
        }
        t.messages.push(Message::assistant("done", vec![]));
        t
    }

    fn spec(depth: f64, position: Position) -> PlantSpec {
        PlantSpec {
            depth,
            position,
            needles: 1,
            distractors: 0,
            seed: 7,
            paraphrase: false,
        }
    }

    #[test]
    fn same_seed_same_plant_and_different_seed_differs() {
        let t = sample_trace();
        let a = plant(&t, &spec(0.3, Position::Tool)).unwrap();
        let b = plant(&t, &spec(0.3, Position::Tool)).unwrap();
        assert_eq!(a.facts, b.facts);
        assert_eq!(a.trace, b.trace);
        let c = plant(
            &t,
            &PlantSpec {
                seed: 8,
                ..spec(0.3, Position::Tool)
            },
        )
        .unwrap();
        assert_ne!(a.facts[0].value, c.facts[0].value);
        let re = regex::Regex::new(r"^[a-z]+-[a-z]+-\d{4}$").unwrap();
        assert!(re.is_match(&a.facts[0].value), "{}", a.facts[0].value);
    }

    #[test]
    fn tool_position_goes_into_a_tool_result_near_depth() {
        let t = sample_trace();
        let p = plant(&t, &spec(0.5, Position::Tool)).unwrap();
        let f = &p.facts[0];
        let m = &p.trace.messages[f.index];
        assert_eq!(m.role, Role::Tool);
        assert!(m.content.contains(&f.line()));
        assert!(f.index.abs_diff(t.messages.len() / 2) <= 1);
        assert_eq!(p.trace.messages.len(), t.messages.len());
        // The content around it is intact.
        assert!(m.content.starts_with("out ") && m.content.ends_with("end"));
    }

    #[test]
    fn user_position_inserts_at_a_safe_boundary() {
        let t = sample_trace();
        for depth in [0.0, 0.1, 0.33, 0.5, 0.9, 1.0] {
            let p = plant(&t, &spec(depth, Position::User)).unwrap();
            let f = &p.facts[0];
            assert_eq!(p.trace.messages.len(), t.messages.len() + 1);
            let m = &p.trace.messages[f.index];
            assert_eq!(m.role, Role::User);
            assert_eq!(m.content, f.line());
            let prev = &p.trace.messages[f.index - 1];
            assert!(
                prev.role != Role::Assistant || prev.tool_calls.is_empty(),
                "depth {depth}: planted between a call and its result"
            );
        }
    }

    #[test]
    fn assistant_position_and_distractors() {
        let t = sample_trace();
        let p = plant(
            &t,
            &PlantSpec {
                depth: 0.2,
                position: Position::Assistant,
                needles: 2,
                distractors: 3,
                seed: 1,
                paraphrase: false,
            },
        )
        .unwrap();
        assert_eq!(p.needles().count(), 2);
        assert_eq!(p.facts.len(), 5);
        let keys: std::collections::HashSet<_> = p.facts.iter().map(|f| &f.key).collect();
        assert_eq!(keys.len(), 5, "every fact has its own key");
        for f in &p.facts {
            assert!(
                p.trace.messages[f.index].content.contains(&f.line()),
                "fact {f:?} not at its index"
            );
        }
    }

    #[test]
    fn paraphrased_questions_avoid_the_key_and_distractors_share_it() {
        let t = sample_trace();
        let p = plant(
            &t,
            &PlantSpec {
                distractors: 2,
                paraphrase: true,
                ..spec(0.3, Position::Tool)
            },
        )
        .unwrap();
        let needle = &p.facts[0];
        let asked = needle.asked_as.as_deref().unwrap();
        let q = needle.question().to_lowercase();
        assert!(!q.contains(&needle.key), "{q}");
        assert!(q.contains(asked), "{q}");
        for d in &p.facts[1..] {
            assert!(d.asked_as.is_none());
            let shared = d
                .key
                .split_whitespace()
                .filter(|w| needle.key.split_whitespace().any(|n| n == *w))
                .count();
            assert!(shared >= 1, "{} vs {}", d.key, needle.key);
            assert_ne!(d.key, needle.key);
        }
        let again = plant(
            &t,
            &PlantSpec {
                distractors: 2,
                paraphrase: true,
                ..spec(0.3, Position::Tool)
            },
        )
        .unwrap();
        assert_eq!(p.facts, again.facts);
    }

    #[test]
    fn bad_specs_are_errors() {
        let t = sample_trace();
        assert!(plant(&t, &spec(1.5, Position::Tool)).is_err());
        let empty = Trace::new(TraceMeta::new("e", SourceFormat::Canonical));
        assert!(plant(&empty, &spec(0.5, Position::Tool)).is_err());
    }

    #[test]
    fn recovery_is_normalized_containment() {
        assert!(recovered(
            "The deploy token is `Teal-Otter-7731`.",
            "teal-otter-7731"
        ));
        assert!(!recovered("teal-otter-7732", "teal-otter-7731"));
        assert!(!recovered("I don't know", "teal-otter-7731"));
        assert!(!recovered("anything", ""));
    }
}
