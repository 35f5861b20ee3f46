//! The lean reader (`AssistantMessage::from_json_lean`, the wasm bridge's fast way in for a model's final
//! message) against the full reader: whatever the lean one reads, the full one reads the same, extras
//! aside; and a plainly well-formed message is read lean, whatever provider fields it carries. The same for
//! a tool's output (`ToolOutput::from_json_lean`), where nothing may be skipped.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use tiny_pi::message::{AssistantBlock, AssistantMessage, Extra};
use tiny_pi::tools::ToolOutput;

/// A field that may be absent, right, or wrong in several ways.
fn field(right: BoxedStrategy<Value>) -> BoxedStrategy<Option<Value>> {
    prop_oneof![
        3 => right.prop_map(Some),
        1 => Just(None),
        1 => Just(Some(Value::Null)),
        1 => any::<i32>().prop_map(|n| Some(json!(n))),
        1 => Just(Some(json!(1.5))),
        1 => Just(Some(json!(false))),
        1 => Just(Some(json!(["x"]))),
        1 => Just(Some(json!({"x": 1}))),
    ]
    .boxed()
}

fn text() -> BoxedStrategy<Value> {
    prop_oneof![
        "[a-z ]{0,8}".prop_map(Value::from),
        Just(json!("emoji 🙂 and \u{7f} and \"quotes\"")),
    ]
    .boxed()
}

/// Provider fields: anything, under names SPEC does not use.
fn extras() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(
        prop_oneof![
            Just("usage".to_string()),
            Just("api".to_string()),
            Just("textSignature".to_string()),
            Just("partialJson".to_string()),
            Just("responseId".to_string()),
        ],
        prop_oneof![
            text(),
            Just(json!({"input": 3, "cost": {"total": 0.25}})),
            Just(Value::Null),
            Just(json!([1, {"a": [true]}])),
        ],
        0..3,
    )
    .prop_map(|m| m.into_iter().collect())
}

fn block() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![
        4 => Just(json!("text")),
        3 => Just(json!("toolCall")),
        2 => Just(json!("thinking")),
        1 => Just(json!("image")),
        1 => Just(json!(7)),
    ];
    let arguments = prop_oneof![
        3 => Just(json!({"path": "README.md"})),
        1 => Just(json!({"n": [1, 2, {"deep": null}]})),
        1 => Just(json!([])),
        1 => Just(json!("a string")),
    ];
    (
        prop::option::weighted(0.95, kind),
        field(text()),
        field(text()),
        field(text()),
        field(text()),
        field(arguments.boxed()),
        extras(),
    )
        .prop_map(|(kind, text, thinking, id, name, arguments, extra)| {
            let mut block = extra;
            let mut put = |key: &str, value: Option<Value>| {
                if let Some(value) = value {
                    block.insert(key.into(), value);
                }
            };
            put("type", kind.clone());
            // Mostly the fields of the block's own kind, sometimes another kind's (a mistyped one
            // there is an extra field to the full reader).
            match kind.as_ref().and_then(Value::as_str) {
                Some("text") => put("text", text),
                Some("thinking") => put("thinking", thinking),
                Some("toolCall") => {
                    put("id", id);
                    put("name", name);
                    put("arguments", arguments);
                }
                _ => {
                    put("text", text);
                    put("id", id);
                }
            }
            Value::Object(block)
        })
}

fn message() -> impl Strategy<Value = Value> {
    let reasons = prop_oneof![
        Just(json!("stop")),
        Just(json!("toolUse")),
        Just(json!("length")),
        Just(json!("error")),
        Just(json!("aborted")),
        Just(json!("done")),
    ];
    let role = prop_oneof![
        6 => Just(Some(json!("assistant"))),
        1 => Just(None),
        1 => Just(Some(json!("user"))),
    ];
    (
        role,
        field(
            prop::collection::vec(block(), 0..4)
                .prop_map(Value::from)
                .boxed(),
        ),
        field(reasons.boxed()),
        field(text()),
        field(prop_oneof![Just(json!(17)), Just(json!(1764000000000.5))].boxed()),
        extras(),
    )
        .prop_map(|(role, content, stop, error, timestamp, extra)| {
            let mut message = extra;
            for (key, value) in [
                ("role", role),
                ("content", content),
                ("stopReason", stop),
                ("errorMessage", error),
                ("timestamp", timestamp),
            ] {
                if let Some(value) = value {
                    message.insert(key.into(), value);
                }
            }
            Value::Object(message)
        })
}

fn without_extras(mut message: AssistantMessage) -> AssistantMessage {
    message.extra = Extra::new();
    for block in &mut message.content {
        match block {
            AssistantBlock::Text(b) => b.extra = Extra::new(),
            AssistantBlock::Thinking(b) => b.extra = Extra::new(),
            AssistantBlock::ToolCall(b) => b.extra = Extra::new(),
        }
    }
    message
}

/// The full reader's view of `text`, which must read whatever a lean reader read.
fn full<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, TestCaseError> {
    serde_json::from_str(text)
        .map_err(|e| TestCaseError::fail(format!("lean read {text} but full refused: {e}")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// What the lean reader reads, the full reader reads the same (extras aside): the lean one never
    /// accepts a message the full one refuses, nor reads a field differently.
    #[test]
    fn lean_reads_what_the_full_reader_reads(message in message()) {
        let text = message.to_string();
        if let Some(lean) = AssistantMessage::from_json_lean(&text) {
            prop_assert_eq!(lean, without_extras(full(&text)?), "{}", text);
        }
    }

    /// A well-formed message is read lean whatever provider fields it carries.
    #[test]
    fn a_well_formed_message_is_read_lean(
        extra in extras(),
        block_extras in prop::collection::vec(extras(), 3),
        texts in prop::collection::vec("[a-z]{0,6}", 3),
    ) {
        let mut blocks = vec![
            json!({"type": "text", "text": texts[0]}),
            json!({"type": "thinking", "thinking": texts[1]}),
            json!({"type": "toolCall", "id": texts[2], "name": "read", "arguments": {"path": "x"}}),
        ];
        for (block, extra) in blocks.iter_mut().zip(block_extras) {
            for (key, value) in extra {
                // Another kind's field name would make it a different test.
                block.as_object_mut().unwrap().entry(key).or_insert(value);
            }
        }
        let mut message = extra;
        message.insert("role".into(), json!("assistant"));
        message.insert("content".into(), Value::from(blocks));
        message.insert("stopReason".into(), json!("toolUse"));
        message.insert("timestamp".into(), json!(5));
        let text = Value::Object(message).to_string();
        let full: AssistantMessage = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(AssistantMessage::from_json_lean(&text), Some(without_extras(full)));
    }
}

#[test]
fn half_a_surrogate_pair_is_left_to_the_full_reader() {
    let text =
        r#"{"role":"assistant","content":[{"type":"text","text":"\ud83d"}],"stopReason":"stop"}"#;
    assert_eq!(AssistantMessage::from_json_lean(text), None);
}

/// A content block of a tool's output: text or image, sometimes with a field of the other kind or an
/// extra one (both must go through the full reader, which keeps them).
fn media_block() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![
        4 => Just(json!("text")),
        2 => Just(json!("image")),
        1 => Just(json!("video")),
        1 => Just(json!(3)),
    ];
    (
        kind,
        field(text()),
        field(text()),
        field(text()),
        extras(),
        0..4u8,
    )
        .prop_map(|(kind, text, data, mime, extra, mix)| {
            let mut block = Map::new();
            block.insert("type".into(), kind.clone());
            let mut put = |key: &str, value: Option<Value>| {
                if let Some(value) = value {
                    block.insert(key.into(), value);
                }
            };
            match kind.as_str() {
                Some("text") => {
                    put("text", text);
                    if mix == 0 {
                        put("data", data);
                    }
                }
                _ => {
                    put("data", data);
                    put("mimeType", mime);
                    if mix == 0 {
                        put("text", text);
                    }
                }
            }
            if mix == 1 {
                block.extend(extra);
            }
            Value::Object(block)
        })
}

fn tool_output() -> impl Strategy<Value = Value> {
    (
        field(
            prop::collection::vec(media_block(), 0..3)
                .prop_map(Value::from)
                .boxed(),
        ),
        field(
            prop_oneof![
                Just(json!({})),
                Just(json!({"lines": [1, 2]})),
                Just(json!("d"))
            ]
            .boxed(),
        ),
        field(prop_oneof![Just(json!(true)), Just(json!(false))].boxed()),
        extras(),
    )
        .prop_map(|(content, details, is_error, extra)| {
            let mut output = extra;
            for (key, value) in [
                ("content", content),
                ("details", details),
                ("isError", is_error),
            ] {
                if let Some(value) = value {
                    output.insert(key.into(), value);
                }
            }
            Value::Object(output)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// What the lean reader reads of a tool's output, the full reader reads exactly the same: nothing is
    /// skipped, so a block with any field beyond SPEC's is left to the full reader.
    #[test]
    fn lean_tool_output_is_the_full_readers(output in tool_output()) {
        let text = output.to_string();
        if let Some(lean) = ToolOutput::from_json_lean(&text) {
            prop_assert_eq!(lean, full::<ToolOutput>(&text)?, "{}", text);
        }
    }
}

#[test]
fn a_plain_tool_output_is_read_lean() {
    let text = r#"{"content":[{"type":"text","text":"ok"},{"type":"image","data":"AA==","mimeType":"image/png"}],"details":{"n":1},"isError":true,"other":5}"#;
    let full: ToolOutput = serde_json::from_str(text).unwrap();
    assert_eq!(ToolOutput::from_json_lean(text), Some(full));
    let with_extra = r#"{"content":[{"type":"text","text":"ok","cache":true}]}"#;
    assert_eq!(ToolOutput::from_json_lean(with_extra), None);
}
