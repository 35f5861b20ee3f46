//! Objects keep their keys in the order they arrived (issue 17, item 2): a tool's JSON Schema reaches the
//! model with its properties as declared, and arguments, details and every extra field come out of a run
//! as they went in. Each object here has keys that are not sorted, so a sorting map would fail.

#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use std::rc::Rc;

use common::{fixed_clock, Recorder, Setup};
use serde_json::{json, Value};
use tiny_pi::*;

/// The keys of `value` at `pointer`, in order.
fn keys(value: &Value, pointer: &str) -> Vec<String> {
    let object = value.pointer(pointer).and_then(Value::as_object);
    let object = object.unwrap_or_else(|| panic!("{pointer} is not an object in {value}"));
    object.keys().cloned().collect()
}

fn schema() -> Value {
    // Written as JSON text: `json!` would already keep the order, text proves the reader does.
    serde_json::from_str(
        r#"{"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer", "minimum": 0}},
            "required": ["zeta"], "additionalProperties": false}"#,
    )
    .unwrap()
}

#[test]
fn schemas_arguments_details_and_extra_fields_keep_their_key_order_through_a_run() {
    let transcript: Vec<AgentMessage> = serde_json::from_str(
        r#"[{"role": "user", "content": "go", "timestamp": 1, "zz": 1, "aa": 2},
            {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "pick",
              "arguments": {"zeta": "z", "alpha": 1}, "yy": true, "bb": false}],
             "stopReason": "toolUse", "timestamp": 2, "usage": {"output": 3, "input": 2}, "api": "x"}]"#,
    )
    .unwrap();
    let AgentMessage::Assistant(first) = transcript[1].clone() else {
        panic!("an assistant message")
    };
    let model = ScriptedModel::new(vec![
        first,
        AssistantMessage::new(vec![AssistantBlock::text("done")], StopReason::Stop),
    ]);
    let mut registry = ToolRegistry::new();
    registry
        .register(Tool::new(
            ToolDefinition {
                name: "pick".into(),
                description: String::new(),
                parameters: schema(),
            },
            Rc::new(|args: Value, _ctx: ToolCallContext| async move {
                Ok(ToolOutput {
                    content: vec![MediaBlock::text("ok")],
                    details: Some(json!({"echo": args, "verdict": "fine", "at": 1})),
                    ..Default::default()
                })
            }),
        ))
        .unwrap();
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.context = AgentContext {
        system_prompt: None,
        messages: vec![transcript[0].clone()],
    };
    let result = setup.run();
    assert_eq!(result.reason, RunReason::Stop, "{:?}", result.error);

    // The model saw the schema as declared.
    let requests = serde_json::to_value(model.requests()).unwrap();
    assert_eq!(
        keys(&requests, "/0/tools/0/parameters"),
        ["type", "properties", "required", "additionalProperties"]
    );
    assert_eq!(
        keys(&requests, "/0/tools/0/parameters/properties"),
        ["zeta", "alpha"]
    );
    assert_eq!(
        keys(&requests, "/0/tools/0/parameters/properties/alpha"),
        ["type", "minimum"]
    );

    // The transcript comes back with every object's keys as they went in.
    let out = serde_json::to_value(&result.messages).unwrap();
    assert_eq!(
        keys(&out, "/0"),
        ["role", "content", "timestamp", "zz", "aa"]
    );
    assert_eq!(
        keys(&out, "/1"),
        ["role", "content", "stopReason", "timestamp", "usage", "api"]
    );
    assert_eq!(keys(&out, "/1/usage"), ["output", "input"]);
    assert_eq!(
        keys(&out, "/1/content/0"),
        ["type", "id", "name", "arguments", "yy", "bb"]
    );
    assert_eq!(keys(&out, "/1/content/0/arguments"), ["zeta", "alpha"]);
    assert_eq!(keys(&out, "/2/details"), ["echo", "verdict", "at"]);
    assert_eq!(keys(&out, "/2/details/echo"), ["zeta", "alpha"]);
}

#[test]
fn a_custom_executors_extra_fields_keep_their_order_when_its_pairing_fields_are_dropped() {
    // A reply as a custom executor may give it: pairing fields among its own (the loop writes those).
    let extra: Extra = serde_json::from_str(
        r#"{"role": "toolResult", "zeta": 1, "toolCallId": "wrong", "alpha": 2, "toolName": "wrong", "omega": 3}"#,
    )
    .unwrap();
    let reply = ToolReply {
        content: vec![],
        details: None,
        is_error: false,
        timestamp: Some(3.0),
        extra,
        ..Default::default()
    };
    let call = ToolCall {
        id: "c1".into(),
        name: "pick".into(),
        arguments: Some(json!({})),
        extra: Extra::new(),
    };
    let clock = fixed_clock();
    let result = reply.into_result(&call, || clock());
    let out = serde_json::to_value(result.tagged()).unwrap();
    assert_eq!([&out["toolCallId"], &out["toolName"]], ["c1", "pick"]);
    assert_eq!(
        keys(&out, ""),
        [
            "role",
            "toolCallId",
            "toolName",
            "content",
            "isError",
            "timestamp",
            "zeta",
            "alpha",
            "omega"
        ]
    );
}

#[test]
fn a_message_keeps_the_order_of_its_own_fields_among_the_others_through_a_run_and_a_session() {
    // pi-ai's assistant message puts api, provider, model and usage before stopReason; a hand-written
    // message may put anything anywhere. Each comes back exactly as it went in, every object at every
    // level (they came back with their own fields first: found by a third attack).
    let lines = [
        r#"{"content":"go","role":"user","timestamp":1}"#,
        r#"{"role":"assistant","content":[{"type":"thinking","signature":"s","thinking":"hm"},{"name":"pick","type":"toolCall","arguments":{"zeta":"z"},"id":"c1"}],"api":"openai-completions","provider":"openai","model":"m","usage":{"input":2,"output":3},"stopReason":"toolUse","timestamp":2}"#,
        r#"{"role":"toolResult","timestamp":3,"toolCallId":"c1","toolName":"pick","isError":false,"content":[{"text":"ok","type":"text"}]}"#,
        r#"{"role":"compaction","summary":"s","note":1,"firstKeptIndex":0,"timestamp":4,"tokensBefore":9}"#,
    ];
    let text = lines.map(|line| format!("{line}\n")).concat();
    let messages = parse_jsonl(&text).unwrap();
    assert_eq!(
        to_jsonl(&messages),
        text,
        "the session's round trip is exact"
    );
    let options = AgentOptions::new(
        ScriptedModel::new(vec![]),
        ToolRegistry::new(),
        fixed_clock(),
    );
    let agent = Agent::from_jsonl(&text, options).unwrap();
    assert_eq!(agent.to_jsonl(), text, "so is the Agent's");

    // The model's final message, stored and handed on as the model wrote it.
    let AgentMessage::Assistant(response) = messages[1].clone() else {
        panic!("an assistant message")
    };
    let said = serde_json::to_value(&messages[1]).unwrap();
    let model = ScriptedModel::new(vec![
        response,
        AssistantMessage::new(vec![AssistantBlock::text("done")], StopReason::Stop),
    ]);
    let mut registry = ToolRegistry::new();
    let definition = ToolDefinition {
        name: "pick".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    };
    let handler = |_: Value, _ctx: ToolCallContext| async { Ok(ToolOutput::default()) };
    registry
        .register(Tool::new(definition, Rc::new(handler)))
        .unwrap();
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.context.messages = vec![messages[0].clone()];
    let result = setup.run();
    let out = serde_json::to_value(&result.messages).unwrap();
    assert_eq!(keys(&out, "/0"), ["content", "role", "timestamp"]);
    assert_eq!(out[1], said);
    assert_eq!(
        keys(&out, "/1"),
        [
            "role",
            "content",
            "api",
            "provider",
            "model",
            "usage",
            "stopReason",
            "timestamp"
        ]
    );
    assert_eq!(
        keys(&out, "/1/content/1"),
        ["name", "type", "arguments", "id"]
    );

    // The order is how the data is written, not the data.
    let canonical =
        AgentMessage::from_value(json!({"role": "user", "content": "go", "timestamp": 1}));
    assert_eq!(canonical.unwrap(), messages[0]);
}

#[test]
fn an_optional_own_field_that_came_as_null_is_written_back_as_null() {
    // `details: null` on a result and `errorMessage: null` on a response were dropped (found by a fourth
    // attack): they are read as absent and written back as they came, in place.
    let lines = [
        r#"{"role":"assistant","content":[],"stopReason":"stop","errorMessage":null,"timestamp":2}"#,
        r#"{"role":"toolResult","toolCallId":"c","toolName":"t","content":[],"details":null,"isError":false,"timestamp":3}"#,
    ];
    for line in lines {
        let message = AgentMessage::from_value(serde_json::from_str(line).unwrap()).unwrap();
        match &message {
            AgentMessage::Assistant(m) => assert_eq!(m.error_message, None),
            AgentMessage::ToolResult(m) => assert_eq!(m.details, None),
            _ => unreachable!(),
        }
        assert_eq!(to_jsonl(&[message]), format!("{line}\n"));
    }
    // Set since, the field is written once, with its value.
    let mut message = AgentMessage::from_value(serde_json::from_str(lines[1]).unwrap()).unwrap();
    if let AgentMessage::ToolResult(m) = &mut message {
        m.details = Some(json!({"n": 1}));
    }
    assert_eq!(
        to_jsonl(&[message]),
        "{\"role\":\"toolResult\",\"toolCallId\":\"c\",\"toolName\":\"t\",\"content\":[],\"details\":{\"n\":1},\"isError\":false,\"timestamp\":3}\n"
    );
}

#[test]
fn a_tools_null_details_are_kept() {
    // A tool's `details: null` is a value (found by a fifth attack: it was dropped).
    let output: ToolOutput =
        serde_json::from_value(json!({"content": [], "details": null})).unwrap();
    assert_eq!(output.details, Some(Value::Null));
    let reply: ToolReply = serde_json::from_value(json!({"content": [], "details": null})).unwrap();
    let missing = serde_json::from_value::<ToolReply>(json!({"details": null})).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "content is missing",
        "a reply has content, as a tool's output has"
    );
    assert_eq!(reply.details, Some(Value::Null));
}

#[test]
fn a_call_that_came_without_arguments_is_kept_so_and_runs_as_if_they_were_empty() {
    // It was stored with "arguments": {} (found by a fifth attack).
    let line = r#"{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"pick"}],"stopReason":"toolUse","timestamp":1}"#;
    let messages = parse_jsonl(line).unwrap();
    assert_eq!(to_jsonl(&messages), format!("{line}\n"));
    let AgentMessage::Assistant(response) = messages[0].clone() else {
        panic!("an assistant message")
    };
    let call = response.tool_calls().next().unwrap().clone();
    assert_eq!(
        (&call.arguments, call.arguments_or_empty()),
        (&None, &json!({}))
    );
    let seen = Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut registry = ToolRegistry::new();
    let definition = ToolDefinition {
        name: "pick".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    };
    let log = seen.clone();
    let handler = move |args: Value, _ctx: ToolCallContext| {
        log.borrow_mut().push(args);
        async { Ok(ToolOutput::default()) }
    };
    registry
        .register(Tool::new(definition, Rc::new(handler)))
        .unwrap();
    let model = ScriptedModel::new(vec![
        response,
        AssistantMessage::new(vec![AssistantBlock::text("done")], StopReason::Stop),
    ]);
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.context.messages = vec![AgentMessage::user("go", 0.0)];
    let result = setup.run();
    assert_eq!(result.reason, RunReason::Stop);
    assert_eq!(*seen.borrow(), [json!({})]);
    let stored = serde_json::to_value(&result.messages[1]).unwrap();
    assert_eq!(keys(&stored, "/content/0"), ["type", "id", "name"]);
}

#[test]
fn a_message_read_on_its_own_must_say_its_role() {
    // A model's final message without `role` was stored with "role": "assistant" filled in (found by a
    // sixth attack); as in a transcript, it is refused naming the field.
    let bare = json!({"content": [], "stopReason": "stop", "timestamp": 1});
    assert_eq!(
        serde_json::from_value::<AssistantMessage>(bare)
            .unwrap_err()
            .to_string(),
        "role is missing"
    );
    let given = json!({"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 1});
    assert!(serde_json::from_value::<AssistantMessage>(given).is_ok());
}
