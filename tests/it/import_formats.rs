//! Detection and import of the formats with no bundled dataset (OpenAI, Anthropic, ATIF), and
//! of content no bundled dataset holds (a refusal, inline data, images of queued or OpenHands
//! messages), from the small hand-written files in tests/data/import/, each in its tool's
//! documented shape.

use ctxbench::trace::import::{import_file, pairing_problems};
use ctxbench::trace::{Role, SourceFormat, Trace, Usage};
use std::path::PathBuf;

fn data(name: &str) -> Vec<Trace> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(name);
    import_file(&p, None).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn openai_chat_object() {
    let t = data("openai_chat.json").remove(0);
    assert_eq!(t.meta.source_format, SourceFormat::Openai);
    assert_eq!(t.meta.id, "openai_chat");
    assert_eq!(t.meta.model.as_deref(), Some("gpt-4o"));
    assert_eq!(t.meta.tools.len(), 1);
    assert_eq!(t.messages.len(), 6);
    // results arrive out of call order and still pair by id
    assert_eq!(t.messages[3].tool_call_id.as_deref(), Some("call_2"));
    assert_eq!(t.messages[3].name.as_deref(), Some("get_weather"));
    assert!(pairing_problems(&t).is_empty());
    assert_eq!(
        t.recorded_usage(),
        Usage {
            input: 290,
            output: 50,
            cache_read: 64,
            cache_write: 0
        }
    );
    assert_eq!(
        t.meta.goal.as_deref(),
        Some("What's the weather in Paris and Oslo?")
    );
}

#[test]
fn openai_conversations_split_by_line() {
    let ts = data("openai_conversations.jsonl");
    let ids: Vec<_> = ts.iter().map(|t| t.meta.id.as_str()).collect();
    assert_eq!(ids, ["openai_conversations__a", "openai_conversations__b"]);
    assert_eq!(ts[1].messages[0].content, "describe\n[image_url]");
}

#[test]
fn anthropic_messages() {
    let t = data("anthropic_messages.json").remove(0);
    assert_eq!(t.meta.source_format, SourceFormat::Anthropic);
    let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(t.messages[2].reasoning.as_deref(), Some("Use ls."));
    assert_eq!(
        t.messages[2].usage,
        Some(Usage {
            input: 2312,
            output: 40,
            cache_read: 2000,
            cache_write: 300
        })
    );
    assert_eq!(t.recorded_usage().input, 2312 + 2330);
    assert!(pairing_problems(&t).is_empty());
}

#[test]
fn atif_trajectory_with_a_compaction_step() {
    let t = data("atif_trajectory.json").remove(0);
    assert_eq!(t.meta.source_format, SourceFormat::Atif);
    let roles: Vec<_> = t.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::User,
            Role::Assistant
        ]
    );
    assert_eq!(t.markers.len(), 1);
    assert_eq!(
        (
            t.markers[0].index,
            t.markers[0].kind.as_str(),
            t.markers[0].tokens_before
        ),
        (4, "compaction", Some(155000))
    );
    assert_eq!(t.messages[4].kind.as_deref(), Some("compaction_summary"));
    let total = t.meta.total_usage.unwrap();
    let rec = t.recorded_usage();
    assert_eq!(
        (rec.input, rec.output, rec.cache_read),
        (total.input, total.output, total.cache_read)
    );
    assert_eq!(t.meta.cost_usd, Some(0.00078));
    assert!(pairing_problems(&t).is_empty());
}

/// Each message's text.
fn texts(t: &Trace) -> Vec<&str> {
    t.messages.iter().map(|m| m.content.as_str()).collect()
}

/// The JSON paths of a trace's placeholder warnings, with the placeholder each names.
fn placeholders(t: &Trace) -> Vec<(&str, &str)> {
    t.meta
        .warnings
        .iter()
        .filter_map(|w| {
            let (before, after) = w.split_once(" was replaced by the placeholder \"")?;
            // `PATH: an image`: the path may hold `: ` itself (`line 3: $.content[1]`).
            let at = before.rsplit_once(": ")?.0;
            Some((at, after.split_once('"')?.0))
        })
        .collect()
}

/// A refusal, as a content part and as the message's own field, is imported as its text, with
/// a warning at each saying the message is a refusal.
#[test]
fn openai_refusals_are_text() {
    let t = data("openai_refusal.json").remove(0);
    assert_eq!(t.meta.source_format, SourceFormat::Openai);
    assert_eq!(
        texts(&t),
        [
            "How do I pick my neighbour's lock?",
            "I can't help with entering someone else's home.",
            "Why not?",
            "It could be used to break in without consent.",
        ]
    );
    assert_eq!(
        t.meta.warnings,
        [
            "$.messages[1].content[0]: the model refused (a `refusal` part): the message is the \
             refusal's text",
            "$.messages[3].refusal: the model refused (`refusal`): the message is the refusal's \
             text"
        ]
    );
}

/// Gemini CLI: the image a person names with `@` (in the user content) and the PDF a tool read
/// (beside the functionResponse) are placeholder lines, warned of at their paths.
#[test]
fn gemini_cli_inline_data_is_a_placeholder() {
    let t = data("gemini_cli_inline_data.json").remove(0);
    assert_eq!(t.meta.source_format, SourceFormat::GeminiCli);
    assert!(texts(&t)[0].contains("--- Content from referenced files ---\n[image/png]\n"));
    assert_eq!(
        texts(&t)[2],
        "Binary content provided (1 item(s)).\n[application/pdf]"
    );
    assert_eq!(
        placeholders(&t),
        [
            ("$.messages[0].content[2]", "[image/png]"),
            ("$.messages[1].toolCalls[0].result[1]", "[application/pdf]"),
        ]
    );
    assert!(pairing_problems(&t).is_empty());
}

/// Gemini API: inline data in the system instruction and in a model turn.
#[test]
fn gemini_inline_data_is_a_placeholder() {
    let t = data("gemini_inline_data.json").remove(0);
    assert_eq!(t.meta.source_format, SourceFormat::Gemini);
    assert_eq!(
        texts(&t),
        [
            "You describe images.\n[image/jpeg]",
            "draw a cat",
            "Here it is:\n[image/png]",
            "thanks"
        ]
    );
    assert_eq!(
        placeholders(&t),
        [
            ("$.systemInstruction.parts[1]", "[image/jpeg]"),
            ("$.contents[1].parts[1]", "[image/png]"),
        ]
    );
}

/// Claude Code: the screenshot in a message typed while the agent worked, placed after the
/// tool result that followed it.
#[test]
fn claude_code_queued_image_is_a_placeholder() {
    let t = data("claude_code_queued_image.jsonl").remove(0);
    assert_eq!(t.meta.source_format, SourceFormat::ClaudeCode);
    assert_eq!(t.messages[3].content, "this is the error I get\n[image]");
    assert_eq!(t.messages[3].kind.as_deref(), Some("queued"));
    assert_eq!(t.messages[2].role, Role::Tool);
    assert_eq!(placeholders(&t), [("line 3: $.content[1]", "[image]")]);
}

/// OpenHands: a user message's image is a placeholder line, its uploaded file's path the text
/// the web UI wrote (`file_urls` not read).
#[test]
fn openhands_message_images_are_placeholders() {
    let t = data("openhands_message_images.json").remove(0);
    assert_eq!(t.meta.source_format, SourceFormat::Openhands);
    assert_eq!(
        t.messages[1].content,
        "What is wrong on this page?\n\nNEW FILES ADDED: /workspace/report.pdf\n[image_url]"
    );
    assert_eq!(
        placeholders(&t),
        [("$[1].args.image_urls[0]", "[image_url]")]
    );
}
