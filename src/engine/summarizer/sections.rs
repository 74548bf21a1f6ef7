//! The summary sections the offline summarizer can fill ([`Section`], each with its extractive
//! [`Body`] kind) and how they are read from a summary prompt.

/// The sections the offline summarizer knows how to fill: deepagents' four (the default
/// prompt), core-agent's five-section handover and six-section checkpoint record, and
/// digitorn's recap. Each is filled from one of four extractive [`Body`] kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    SessionIntent,
    Summary,
    Artifacts,
    NextSteps,
    // core-agent handover (`CORE_AGENT_COMPACTION_PROMPT`) and checkpoint (`CHECKPOINT_PROMPT`).
    CurrentState,
    FilesAndChanges,
    TechnicalContext,
    StrategyAndApproach,
    ExactNextSteps,
    Task,
    VerificationAndNextSteps,
    WhereWeAre,
    // digitorn's recap (`DIGITORN_SUMMARY_PROMPT`).
    Decisions,
    FilesTouched,
    KeyFacts,
}

/// What an extractive section is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// First human request and later corrections.
    Intent,
    /// Counts, tools, failures, first lines of assistant turns (newest first), chained.
    Digest,
    /// Paths written by tool calls, accumulated.
    Files,
    /// Last assistant intents.
    Next,
    /// Later human statements (corrections, facts given by the user), accumulated.
    Facts,
}

impl Section {
    pub const ALL: [Section; 15] = [
        Section::SessionIntent,
        Section::Summary,
        Section::Artifacts,
        Section::NextSteps,
        Section::CurrentState,
        Section::FilesAndChanges,
        Section::TechnicalContext,
        Section::StrategyAndApproach,
        Section::ExactNextSteps,
        Section::Task,
        Section::VerificationAndNextSteps,
        Section::WhereWeAre,
        Section::Decisions,
        Section::FilesTouched,
        Section::KeyFacts,
    ];
    /// deepagents' four: what a prompt that names no known section gets.
    pub const DEFAULT: [Section; 4] = [
        Section::SessionIntent,
        Section::Summary,
        Section::Artifacts,
        Section::NextSteps,
    ];
    pub fn title(self) -> &'static str {
        match self {
            Section::SessionIntent => "SESSION INTENT",
            Section::Summary => "SUMMARY",
            Section::Artifacts => "ARTIFACTS",
            Section::NextSteps => "NEXT STEPS",
            Section::CurrentState => "Current state",
            Section::FilesAndChanges => "Files & changes",
            Section::TechnicalContext => "Technical context",
            Section::StrategyAndApproach => "Strategy & approach",
            Section::ExactNextSteps => "Exact next steps",
            Section::Task => "Task",
            Section::VerificationAndNextSteps => "Verification & next steps",
            Section::WhereWeAre => "Where we are",
            Section::Decisions => "DECISIONS",
            Section::FilesTouched => "FILES TOUCHED",
            Section::KeyFacts => "KEY FACTS",
        }
    }
    /// The extractive body that fills it.
    pub fn body(self) -> Body {
        match self {
            Section::SessionIntent | Section::CurrentState | Section::Task => Body::Intent,
            Section::Summary
            | Section::TechnicalContext
            | Section::WhereWeAre
            | Section::Decisions => Body::Digest,
            Section::Artifacts | Section::FilesAndChanges | Section::FilesTouched => Body::Files,
            Section::NextSteps
            | Section::ExactNextSteps
            | Section::VerificationAndNextSteps
            | Section::StrategyAndApproach => Body::Next,
            Section::KeyFacts => Body::Facts,
        }
    }
}

/// The sections a prompt asks for, in the prompt's order: a line that is (after an optional
/// `#`, list marker or number) exactly a section title. A prompt naming none gets deepagents'
/// four.
pub fn prompt_sections(prompt: &str) -> Vec<Section> {
    let found = title_lines(prompt);
    if found.is_empty() {
        return Section::DEFAULT.to_vec();
    }
    found.into_iter().map(|(_, s)| s).collect()
}

/// The line index of each section title the prompt names (first occurrence).
fn title_lines(prompt: &str) -> Vec<(usize, Section)> {
    let mut found: Vec<(usize, Section)> = Vec::new();
    for (lineno, line) in prompt.lines().enumerate() {
        let t = line
            .trim()
            .trim_start_matches('#')
            .trim_start_matches(['-', '*'])
            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ')')
            .trim()
            .trim_end_matches(':')
            .trim_matches('*')
            .trim();
        for s in Section::ALL {
            if t.eq_ignore_ascii_case(s.title()) && !found.iter().any(|(_, f)| *f == s) {
                found.push((lineno, s));
            }
        }
    }
    found.sort_by_key(|(l, _)| *l);
    found
}

/// Whether the prompt's description of section `s` (the lines after its title, up to the next
/// title or a blank line) asks for values verbatim: it says `verbatim` and names values,
/// identifiers or tokens. Such a section also lists the value statements (`the <key> is
/// <value>`) of the summarized turns, oldest first after the previous summary's.
pub fn asks_for_values(prompt: &str, s: Section) -> bool {
    let titles = title_lines(prompt);
    let Some(i) = titles.iter().position(|(_, t)| *t == s) else {
        return false;
    };
    let lines: Vec<&str> = prompt.lines().collect();
    let end = titles.get(i + 1).map_or(lines.len(), |(l, _)| *l);
    let desc = lines[titles[i].0 + 1..end]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.to_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    desc.contains("verbatim")
        && ["value", "identifier", "token"]
            .iter()
            .any(|w| desc.contains(w))
}
