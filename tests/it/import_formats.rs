//! Detection and import of the formats with no bundled dataset (OpenAI, Anthropic, ATIF), from
//! the small hand-written files in tests/data/import/.

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
