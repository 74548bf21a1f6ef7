//! Needle planting: put an unguessable fact (`deploy token: teal-otter-7731`) at a chosen depth
//! of a real trace — as a user message, inside a tool result, or inside an assistant message —
//! with optional distractors of the same shape, all derived from a seed. With `paraphrase`, the
//! question avoids the key (a seeded paraphrase per fact kind) and the distractors share part
//! of the needle's key, so matching the question's words is not enough. With `corrected`, a
//! later message corrects each needle (`Update: the deploy token is now amber-yak-1234.`) at a
//! seeded depth after it, so the expected answer is the latest value and the first one is stale.
//!
//! Planting never breaks the trace's structure: a new user message goes only at a boundary where
//! no tool call is waiting for its result, and facts placed in tool results or assistant text are
//! added as a line of that message, so call/result pairing is untouched.

use crate::evalspec::needle::capacity_error;
use crate::trace::{ContextMarker, Message, Role, Trace};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use vocab::{ADJECTIVES, ANIMALS, KEYS, KINDS};

mod vocab;

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
    /// The first value, when a later correction replaced it (`corrected = true`): `value` is
    /// then the corrected, latest one, and answering this one is a stale answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<String>,
    /// Index of the message that carries the correction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected_at: Option<usize>,
}

impl Fact {
    /// The value first planted (the stale one when the fact was corrected).
    pub fn first_value(&self) -> &str {
        self.stale.as_deref().unwrap_or(&self.value)
    }

    /// The text line that first states the fact.
    pub fn line(&self) -> String {
        format!(
            "Note for later: the {} is {}.",
            self.key,
            self.first_value()
        )
    }

    /// The text line that corrects it, when it was corrected.
    pub fn correction_line(&self) -> Option<String> {
        self.stale
            .as_ref()
            .map(|_| format!("Update: the {} is now {}.", self.key, self.value))
    }

    /// What a question asked before trace index `cut` expects: the latest value stated before
    /// it, and the superseded one when the correction came before `cut`.
    pub fn expected_before(&self, cut: usize) -> (&str, Option<&str>) {
        match (self.corrected_at, self.stale.as_deref()) {
            (Some(at), Some(old)) if at < cut => (&self.value, Some(old)),
            _ => (self.first_value(), None),
        }
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
    /// Correct every needle later in the trace (at a seeded depth after it).
    #[serde(default)]
    pub corrected: bool,
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

/// A planted trace's messages, those planting left alone shared with the trace planted into
/// ([`plant_shared`]).
#[derive(Clone, Debug)]
pub struct PlantedMessages {
    pub messages: Vec<Arc<Message>>,
    pub markers: Vec<ContextMarker>,
    /// Needles first (in planting order), then distractors.
    pub facts: Vec<Fact>,
}

/// Plant needles and distractors into a copy of `trace`.
pub fn plant(trace: &Trace, spec: &PlantSpec) -> Result<Planted, String> {
    let messages: Vec<Arc<Message>> = trace.messages.iter().cloned().map(Arc::new).collect();
    let p = plant_shared(&messages, &trace.markers, spec)?;
    drop(messages);
    let messages = p
        .messages
        .into_iter()
        .map(|m| Arc::try_unwrap(m).unwrap_or_else(|m| (*m).clone()))
        .collect();
    Ok(Planted {
        trace: Trace {
            meta: trace.meta.clone(),
            markers: p.markers,
            messages,
        },
        facts: p.facts,
    })
}

/// [`plant`] over a trace's messages behind `Arc`s: the planted list shares every message
/// planting does not change (a needle sweep plants each unit into the same loaded trace; only
/// the few messages that carry a fact are copied).
pub fn plant_shared(
    messages: &[Arc<Message>],
    markers: &[ContextMarker],
    spec: &PlantSpec,
) -> Result<PlantedMessages, String> {
    if !(0.0..=1.0).contains(&spec.depth) {
        return Err(format!("needle depth {} is not within 0..=1", spec.depth));
    }
    if spec.needles == 0 {
        return Err("at least one needle is needed".into());
    }
    if let Some(why) = capacity_error(spec.needles, spec.distractors, spec.paraphrase) {
        return Err(why);
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
        // A trace without tool results (or assistant text) takes that distractor as a user
        // message: distractors are noise, and they fit any trace.
        let pos = match missing_position(messages, pos, d) {
            Some(_) => Position::User,
            None => pos,
        };
        wanted.push((d, pos, false));
    }

    let mut out = Msgs {
        messages: messages.to_vec(),
        markers: markers.to_vec(),
    };
    let mut facts: Vec<Fact> = Vec::new();
    for (i, (depth, position, is_needle)) in wanted.into_iter().enumerate() {
        let key = keys[i].to_string();
        let value = rng.value();
        let line = format!("Note for later: the {key} is {value}.");
        let index = place(&mut out, depth, position, &line, None)?;
        if position == Position::User {
            shift(&mut facts, index);
        }
        facts.push(Fact {
            key,
            value,
            index,
            position,
            is_needle,
            asked_as: asked[i].clone(),
            stale: None,
            corrected_at: None,
        });
    }
    if spec.corrected {
        correct(&mut out, &mut facts, spec, &mut rng)?;
    }
    Ok(PlantedMessages {
        messages: out.messages,
        markers: out.markers,
        facts,
    })
}

/// The messages and markers being planted into.
struct Msgs {
    messages: Vec<Arc<Message>>,
    markers: Vec<ContextMarker>,
}

/// A message inserted at `at` shifts the facts (and corrections) at or after it.
fn shift(facts: &mut [Fact], at: usize) {
    for f in facts.iter_mut() {
        if f.index >= at {
            f.index += 1;
        }
        if let Some(c) = f.corrected_at.as_mut().filter(|c| **c >= at) {
            *c += 1;
        }
    }
}

/// Correct every needle: a new value, stated in the same kind of message at a seeded depth
/// between a fifth and seven tenths of the way from the needle to the end of the trace.
fn correct(
    out: &mut Msgs,
    facts: &mut [Fact],
    spec: &PlantSpec,
    rng: &mut Values,
) -> Result<(), String> {
    for i in 0..facts.len() {
        if !facts[i].is_needle {
            continue;
        }
        let mut value = rng.value();
        while value == facts[i].value {
            value = rng.value();
        }
        let n = out.messages.len().max(1) as f64;
        let from = facts[i].index as f64 / n;
        let depth = from + (1.0 - from) * (0.2 + 0.5 * rng.0.f64());
        let line = format!("Update: the {} is now {value}.", facts[i].key);
        let at = place(out, depth, spec.position, &line, Some(facts[i].index)).map_err(|e| {
            format!(
                "no place for the correction of the needle at depth {}: {e}",
                spec.depth
            )
        })?;
        if spec.position == Position::User {
            shift(facts, at);
        }
        let f = &mut facts[i];
        f.stale = Some(std::mem::replace(&mut f.value, value));
        f.corrected_at = Some(at);
    }
    Ok(())
}

/// Keys in planting order (needles, then distractors) for `paraphrase = true`: needle kinds
/// drawn by the seed, each asked with one of its paraphrases; distractors are the needles'
/// siblings first (round-robin), then other kinds' keys.
fn paraphrased_keys(
    spec: &PlantSpec,
    rng: &mut fastrand::Rng,
) -> Result<(Vec<&'static str>, Vec<Option<String>>), String> {
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
    // `capacity_error` (checked by `plant_shared`) keeps both within the pool.
    keys.extend(&pool[..spec.distractors]);
    asked.resize(keys.len(), None);
    Ok((keys, asked))
}

/// Why a needle at `position` cannot be planted in `messages` at all: the trace has no
/// message of that role (a tool-result needle in a trace without tool calls). `None` when it
/// can (a user needle always can, at some boundary).
pub fn missing_position(
    messages: &[Arc<Message>],
    position: Position,
    depth: f64,
) -> Option<String> {
    let role = match position {
        Position::User => return None,
        Position::Tool => Role::Tool,
        Position::Assistant => Role::Assistant,
    };
    (!messages.iter().any(|m| m.role == role)).then(|| {
        format!(
            "the trace has no {r} message to plant the needle of depth {depth}, position \
             \"{r}\" in ({} messages, none of them {r}): the sample does not apply to this \
             trace; use `positions = [\"user\"]` (a user message fits any trace) or leave \
             such traces out",
            messages.len(),
            r = role.as_str()
        )
    })
}

/// Put one line into the trace (in a message after index `after`, when given); returns the
/// index of the message that carries it.
fn place(
    trace: &mut Msgs,
    depth: f64,
    position: Position,
    line: &str,
    after: Option<usize>,
) -> Result<usize, String> {
    let n = trace.messages.len();
    if n == 0 {
        return Err("cannot plant a needle in an empty trace".into());
    }
    let target = ((depth * n as f64).round() as usize).min(n - 1);
    let later = |i: usize| after.is_none_or(|a| i > a);
    match position {
        Position::User => {
            let at = nearest(n + 1, target, |i| later(i) && is_safe_boundary(trace, i))
                .ok_or("the trace has no boundary where a user message can go")?;
            let mut m = Message::user(line);
            m.kind = Some("planted".into());
            trace.messages.insert(at, Arc::new(m));
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
            let at = nearest(n, target, |i| later(i) && trace.messages[i].role == role)
                .ok_or_else(|| match after {
                    Some(a) => format!(
                        "the trace has no {r} message after message {a} (where the needle it \
                         corrects is) for the correction at depth {depth}, position \"{r}\"",
                        r = role.as_str()
                    ),
                    None => format!(
                        "the trace has no {r} message to plant at depth {depth}, position \
                         \"{r}\"",
                        r = role.as_str()
                    ),
                })?;
            let content = &mut Arc::make_mut(&mut trace.messages[at]).content;
            insert_line_in_middle(content, line);
            Ok(at)
        }
    }
}

/// A user message may be inserted before index `i` when every tool call so far has its result.
fn is_safe_boundary(trace: &Msgs, i: usize) -> bool {
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
mod tests;
