//! `ScriptedModel`'s two event grammars (SPEC §2): the seeds' compact one (the default) and pi-ai's full
//! one, with `*_start`/`*_delta`/`*_end` per block and the `partial` message built up as a provider does.

#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use common::{readme_script, roles, Recorder, Setup};
use serde_json::{json, Value};
use tiny_pi::*;

/// A message with one block of each kind and provider fields, read from pi-ai's JSON.
fn provider_message() -> AssistantMessage {
    serde_json::from_value(json!({
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig-t"},
            {"type": "text", "text": "Reading.", "textSignature": "sig-x"},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "README.md"}}
        ],
        "api": "openai-completions", "provider": "openai", "model": "gpt-test",
        "usage": {"input": 1, "output": 2},
        "stopReason": "toolUse",
        "timestamp": 7
    }))
    .unwrap()
}

fn events(grammar: EventGrammar, message: &AssistantMessage) -> Vec<Value> {
    let events = ModelEvent::script_in(grammar, message);
    events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn the_pi_ai_grammar_starts_streams_and_ends_every_block_with_its_index() {
    let events = events(EventGrammar::PiAi, &provider_message());
    assert_eq!(
        types(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );
    let indexes: Vec<Value> = events[1..10]
        .iter()
        .map(|e| e["contentIndex"].clone())
        .collect();
    assert_eq!(indexes, [0, 0, 0, 1, 1, 1, 2, 2, 2].map(Value::from));
    assert_eq!(events[2]["delta"], "hmm");
    assert_eq!(events[3]["content"], "hmm");
    assert_eq!(events[5]["delta"], "Reading.");
    assert_eq!(events[6]["content"], "Reading.");
    assert_eq!(events[8]["delta"], r#"{"path":"README.md"}"#);
    assert_eq!(
        events[9]["toolCall"],
        json!({"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "README.md"}})
    );
    assert_eq!(events[10]["reason"], "toolUse");
    assert!(
        events[10].get("partial").is_none(),
        "the end carries the message, not a partial"
    );
}

#[test]
fn the_partial_message_grows_as_a_provider_builds_it() {
    let message = provider_message();
    let events = events(EventGrammar::PiAi, &message);
    let partial = |i: usize| events[i]["partial"].clone();
    let content = |i: usize| partial(i)["content"].clone();

    // The message's own fields are there from the start; only the content grows.
    let mut start = partial(0);
    assert_eq!(start["role"], "assistant");
    assert_eq!(start["usage"], json!({"input": 1, "output": 2}));
    assert_eq!(
        [&start["api"], &start["stopReason"]],
        ["openai-completions", "toolUse"]
    );
    assert_eq!(start["timestamp"].as_f64(), Some(7.0));
    start["content"] = json!(null);
    let mut last = serde_json::to_value(message.tagged()).unwrap();
    last["content"] = json!(null);
    assert_eq!(start, last);
    assert_eq!(content(0), json!([]));

    // A block starts empty, holds its streamed text after its delta, and is whole (signature too) at its end.
    assert_eq!(content(1), json!([{"type": "thinking", "thinking": ""}]));
    assert_eq!(content(2), json!([{"type": "thinking", "thinking": "hmm"}]));
    let thinking = json!({"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig-t"});
    assert_eq!(content(3), json!([thinking]));
    assert_eq!(content(4), json!([thinking, {"type": "text", "text": ""}]));
    assert_eq!(
        content(5),
        json!([thinking, {"type": "text", "text": "Reading."}])
    );
    let text = json!({"type": "text", "text": "Reading.", "textSignature": "sig-x"});
    assert_eq!(content(6), json!([thinking, text]));
    // A call's arguments stay `{}` while its JSON text streams, as pi-ai's providers parse it at the end.
    let empty_call = json!({"type": "toolCall", "id": "c1", "name": "read", "arguments": {}});
    assert_eq!(content(7), json!([thinking, text, empty_call]));
    assert_eq!(content(8), json!([thinking, text, empty_call]));
    assert_eq!(
        content(9),
        serde_json::to_value(message.tagged()).unwrap()["content"]
    );
}

#[test]
fn the_compact_grammar_is_the_default_and_carries_no_partial() {
    let message = provider_message();
    let compact = events(EventGrammar::Compact, &message);
    assert_eq!(
        types(&compact),
        [
            "start",
            "thinking_delta",
            "text_delta",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );
    assert!(compact.iter().all(|e| e.get("partial").is_none()));
    let script = ModelEvent::script(&message);
    assert_eq!(
        script,
        ModelEvent::script_in(EventGrammar::Compact, &message)
    );
    assert_eq!(EventGrammar::default(), EventGrammar::Compact);
    assert_eq!(EventGrammar::parse("pi-ai"), Some(EventGrammar::PiAi));
    assert_eq!(EventGrammar::parse("compact"), Some(EventGrammar::Compact));
    assert_eq!(EventGrammar::parse("PI-AI"), None);
}

#[test]
fn an_errored_message_ends_with_error_in_both_grammars() {
    let mut message = AssistantMessage::new(vec![AssistantBlock::text("par")], StopReason::Error);
    message.error_message = Some("boom".into());
    for grammar in [EventGrammar::Compact, EventGrammar::PiAi] {
        let events = events(grammar, &message);
        let end = events.last().unwrap();
        assert_eq!([&end["type"], &end["reason"]], ["error", "error"]);
        assert_eq!(end["error"]["errorMessage"], "boom");
    }
}

#[test]
fn a_run_with_the_pi_ai_grammar_forwards_every_event_and_appends_the_scripted_messages() {
    let script = readme_script();
    let model = ScriptedModel::new(script.clone()).with_grammar(EventGrammar::PiAi);
    let registry = common::readme_registry();
    let recorder = Recorder::default();
    let result = Setup::new(&model, &registry, &recorder).run();
    assert_eq!(result.reason, RunReason::Stop);
    assert_eq!(
        roles(&result.messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(
        result.messages[1],
        AgentMessage::Assistant(script[0].clone())
    );
    assert_eq!(
        result.messages[3],
        AgentMessage::Assistant(script[1].clone())
    );
    let model_events: Vec<String> = recorder
        .lines()
        .into_iter()
        .filter_map(|l| l.strip_prefix("model_event:").map(str::to_owned))
        .collect();
    assert_eq!(
        model_events,
        [
            "start",
            "text_start",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "done",
            "start",
            "text_start",
            "text_delta",
            "text_end",
            "done"
        ]
    );
}
