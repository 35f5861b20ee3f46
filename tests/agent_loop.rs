//! The decision table and the course's timelines (SPEC §4, seeds 001/002), natively.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use futures::executor::LocalPool;
use futures::task::LocalSpawnExt;
use serde_json::json;
use tiny_pi::*;

#[test]
fn readme_round_trip_emits_13_events_and_4_messages() {
    let model = ScriptedModel::new(readme_script());
    let registry = readme_registry();
    let recorder = Recorder::default();
    let setup = Setup::new(&model, &registry, &recorder);
    let input = setup.context.clone();
    let result = setup.run();

    assert_eq!(
        recorder.lines(),
        [
            "model_event:start",
            "model_event:text_delta",
            "model_event:toolcall_delta",
            "model_event:toolcall_end",
            "model_event:done",
            "assistant_message:toolUse",
            "tool_start:call-1",
            "tool_end:call-1",
            "model_event:start",
            "model_event:text_delta",
            "model_event:done",
            "assistant_message:stop",
            "turn_end:stop:2",
        ]
    );
    assert_eq!(result.reason, RunReason::Stop);
    assert_eq!(result.steps, 2);
    assert_eq!(model.request_count(), 2);
    assert_eq!(
        roles(&result.messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    let read = results(&result.messages)[0];
    assert_eq!(
        (
            read.tool_call_id.as_str(),
            read.tool_name.as_str(),
            read.is_error
        ),
        ("call-1", "read", false)
    );
    assert_eq!(
        read.content,
        vec![MediaBlock::text("# tiny-pi\nA small agent runtime.")]
    );
    assert!(validate_transcript(&result.messages).ok);
    // The caller's context is the run's input, not its working copy.
    assert_eq!(input.messages.len(), 1);
}

#[test]
fn each_request_sees_its_own_snapshot_with_prompt_and_definitions() {
    let model = ScriptedModel::new(readme_script());
    let registry = readme_registry();
    Setup::new(&model, &registry, &NoObserver).run();
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(roles(&requests[0].messages), ["user"]);
    assert_eq!(
        roles(&requests[1].messages),
        ["user", "assistant", "toolResult"]
    );
    for request in &requests {
        assert_eq!(
            request.system_prompt.as_deref(),
            Some("You are a helpful assistant.")
        );
        assert_eq!(request.tools, registry.definitions());
    }
}

#[test]
fn plain_stop_ends_after_one_request() {
    let model = ScriptedModel::new(vec![assistant(vec![text("你好")], StopReason::Stop)]);
    let registry = readme_registry();
    let recorder = Recorder::default();
    let result = Setup::new(&model, &registry, &recorder).run();
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 1));
    assert_eq!(roles(&result.messages), ["user", "assistant"]);
    assert_eq!(recorder.lines().last().unwrap(), "turn_end:stop:1");
    assert_eq!(result.error, None);
}

/// Rows that never run a tool: (stop reason, calls, expected skip reason, run reason).
#[test]
fn non_executing_rows_answer_every_call_without_running_it() {
    let two_calls = || {
        vec![
            call("a", "read", json!({"path": "x"})),
            call("b", "read", json!({"path": "y"})),
        ]
    };
    let rows = [
        (
            StopReason::Length,
            Some(SkipReason::Length),
            RunReason::Length,
        ),
        (StopReason::Error, Some(SkipReason::Error), RunReason::Error),
        (
            StopReason::Aborted,
            Some(SkipReason::Aborted),
            RunReason::Aborted,
        ),
        (
            StopReason::Stop,
            Some(SkipReason::UnexpectedStop),
            RunReason::Error,
        ),
    ];
    for (stop, skip, reason) in rows {
        let model = ScriptedModel::new(vec![assistant(two_calls(), stop)]);
        let tools = GatedTools::default();
        let registry = readme_registry();
        let recorder = Recorder::default();
        let mut setup = Setup::new(&model, &registry, &recorder);
        setup.executor = Some(&tools);
        let result = setup.run();

        assert_eq!(tools.executions(), 0, "{stop:?}: no tool may run");
        assert_eq!(result.reason, reason, "{stop:?}");
        assert_eq!(result.steps, 1);
        assert_eq!(
            roles(&result.messages),
            ["user", "assistant", "toolResult", "toolResult"],
            "{stop:?}"
        );
        let skip = skip.unwrap();
        for (r, id) in results(&result.messages).iter().zip(["a", "b"]) {
            assert_eq!(r.tool_call_id, id);
            assert!(r.is_error);
            assert_eq!(
                r.details,
                Some(json!({"skipped": true, "reason": skip.as_str()}))
            );
            assert_eq!(r.content, vec![MediaBlock::text(skip.explanation())]);
            assert_eq!(r.timestamp, 42.0, "the loop's clock stamps what it writes");
        }
        let lines = recorder.lines();
        let tail: Vec<&str> = lines[lines.len() - 4..]
            .iter()
            .map(String::as_str)
            .collect();
        let end = format!(
            "turn_end:{}:1",
            serde_json::to_value(reason).unwrap().as_str().unwrap()
        );
        assert_eq!(
            tail,
            [
                &format!("assistant_message:{}", stop.as_str()),
                "tool_skipped:a",
                "tool_skipped:b",
                end.as_str()
            ]
        );
        assert!(!lines
            .iter()
            .any(|l| l.starts_with("tool_start") || l.starts_with("tool_end")));
        assert!(validate_transcript(&result.messages).ok, "{stop:?}");
        assert_eq!(result.error.is_some(), reason == RunReason::Error);
    }
}

#[test]
fn length_skip_text_is_exact() {
    assert_eq!(
        SkipReason::Length.explanation(),
        "Tool call was not executed because the model response was truncated."
    );
}

#[test]
fn tool_use_without_calls_is_an_error() {
    let model = ScriptedModel::new(vec![assistant(vec![text("hm")], StopReason::ToolUse)]);
    let registry = readme_registry();
    let recorder = Recorder::default();
    let result = Setup::new(&model, &registry, &recorder).run();
    assert_eq!(result.reason, RunReason::Error);
    assert!(result.error.unwrap().contains("no tool calls"));
    assert_eq!(roles(&result.messages), ["user", "assistant"]);
    assert_eq!(recorder.lines().last().unwrap(), "turn_end:error:1");
}

#[test]
fn repeated_call_id_runs_nothing_and_answers_each_distinct_id_once() {
    let model = ScriptedModel::new(vec![assistant(
        vec![
            call("dup", "read", json!({"path": "a"})),
            call("x", "read", json!({"path": "b"})),
            call("dup", "read", json!({"path": "c"})),
        ],
        StopReason::ToolUse,
    )]);
    let tools = GatedTools::default();
    let registry = readme_registry();
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.executor = Some(&tools);
    let result = setup.run();
    assert_eq!(tools.executions(), 0);
    assert_eq!(result.reason, RunReason::Error);
    assert!(result.error.as_deref().unwrap().contains("\"dup\""));
    let answered: Vec<&str> = results(&result.messages)
        .iter()
        .map(|r| r.tool_call_id.as_str())
        .collect();
    assert_eq!(answered, ["dup", "x"]);
    for r in results(&result.messages) {
        assert_eq!(
            r.details,
            Some(json!({"skipped": true, "reason": "duplicate-call-id"}))
        );
    }
    assert!(
        validate_transcript(&result.messages).ok,
        "the loop's own answer to a repeated id is a valid transcript"
    );
}

/// Two calls in one message, released fast-then-slow by explicit gates.
#[test]
fn concurrent_tools_end_in_completion_order_and_append_in_call_order() {
    let model = ScriptedModel::new(vec![
        assistant(
            vec![
                call("slow-call", "slow", json!({})),
                call("fast-call", "fast", json!({})),
            ],
            StopReason::ToolUse,
        ),
        assistant(vec![text("done")], StopReason::Stop),
    ]);
    let tools = GatedTools::default();
    tools.gate("slow-call");
    tools.gate("fast-call");
    let registry = ToolRegistry::new();
    let recorder = Rc::new(Recorder::default());
    let result = Rc::new(RefCell::new(None));

    let mut pool = LocalPool::new();
    {
        let (model, tools, recorder, result) = (
            Rc::new(model),
            tools.clone(),
            recorder.clone(),
            result.clone(),
        );
        pool.spawner()
            .spawn_local(async move {
                let mut setup = Setup::new(&model, &registry, &*recorder);
                setup.executor = Some(&tools);
                *result.borrow_mut() = Some(run_agent_loop(setup.options()).await.unwrap());
            })
            .unwrap();
    }
    pool.run_until_stalled();
    // Both started before either finished: they run at once.
    assert_eq!(*tools.started.borrow(), ["slow-call", "fast-call"]);
    let lines = recorder.lines();
    assert_eq!(
        &lines[lines.len() - 2..],
        ["tool_start:slow-call", "tool_start:fast-call"]
    );

    tools.release("fast-call", Ok("fast done"));
    pool.run_until_stalled();
    assert_eq!(recorder.lines().last().unwrap(), "tool_end:fast-call");
    assert!(result.borrow().is_none(), "the batch waits for slow");

    tools.release("slow-call", Ok("slow done"));
    pool.run_until_stalled();
    let result = result.borrow_mut().take().expect("run finished");
    let ends: Vec<String> = recorder
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("tool_end"))
        .collect();
    assert_eq!(ends, ["tool_end:fast-call", "tool_end:slow-call"]);
    let order: Vec<&str> = results(&result.messages)
        .iter()
        .map(|r| r.tool_call_id.as_str())
        .collect();
    assert_eq!(order, ["slow-call", "fast-call"]);
    assert_eq!(result.reason, RunReason::Stop);
}

#[test]
fn a_rejecting_executor_becomes_an_error_result_and_the_batch_completes() {
    let model = ScriptedModel::new(vec![
        assistant(
            vec![
                call("bad", "boom", json!({})),
                call("good", "ok", json!({})),
            ],
            StopReason::ToolUse,
        ),
        assistant(vec![text("done")], StopReason::Stop),
    ]);
    let tools = GatedTools::default();
    tools.gate("bad");
    tools.gate("good");
    tools.release("bad", Err("disk on fire"));
    tools.release("good", Ok("fine"));
    let registry = ToolRegistry::new();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.executor = Some(&tools);
    let result = setup.run();
    let rs = results(&result.messages);
    assert_eq!(
        (
            rs[0].tool_call_id.as_str(),
            rs[0].tool_name.as_str(),
            rs[0].is_error
        ),
        ("bad", "boom", true)
    );
    assert_eq!(rs[0].content, vec![MediaBlock::text("disk on fire")]);
    assert_eq!(
        (rs[1].tool_call_id.as_str(), rs[1].is_error),
        ("good", false)
    );
    assert_eq!(result.reason, RunReason::Stop);
}

#[test]
fn a_registered_handler_that_panics_has_thrown_its_call_is_answered_and_the_run_goes_on() {
    let model = ScriptedModel::new(vec![
        assistant(
            vec![
                call("now", "explode", json!({"when": "at once"})),
                call("later", "explode", json!({"when": "while running"})),
                call("fine", "explode", json!({})),
            ],
            StopReason::ToolUse,
        ),
        assistant(vec![text("done")], StopReason::Stop),
    ]);
    let mut registry = ToolRegistry::new();
    let definition = ToolDefinition {
        name: "explode".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    };
    let handler = |args: serde_json::Value, _: ToolCallContext| {
        if args["when"] == "at once" {
            panic!("no disk");
        }
        async move {
            if args["when"] == "while running" {
                let disks: Vec<&str> = Vec::new();
                assert!(!disks.is_empty(), "a disk");
            }
            Ok(ToolOutput::default())
        }
    };
    registry
        .register(Tool::new(definition, Rc::new(handler)))
        .unwrap();
    let result = Setup::new(&model, &registry, &NoObserver).run();
    let rs = results(&result.messages);
    let answers: Vec<(&MediaBlock, bool)> = rs[..2]
        .iter()
        .map(|r| (&r.content[0], r.is_error))
        .collect();
    let (no_disk, a_disk) = (
        MediaBlock::text("panicked: no disk"),
        MediaBlock::text("panicked: a disk"),
    );
    assert_eq!(answers, [(&no_disk, true), (&a_disk, true)]);
    assert!(!rs[2].is_error);
    assert_eq!(result.reason, RunReason::Stop);
    assert!(validate_transcript(&result.messages).ok);
}

#[test]
fn abort_before_start_makes_no_request() {
    let model = ScriptedModel::new(readme_script());
    let registry = readme_registry();
    let recorder = Recorder::default();
    let controller = AbortController::new();
    controller.abort();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.signal = controller.signal();
    let input = setup.context.messages.clone();
    let result = setup.run();
    assert_eq!((result.reason, result.steps), (RunReason::Aborted, 0));
    assert_eq!(result.messages, input);
    assert_eq!(model.request_count(), 0);
    assert_eq!(recorder.lines(), ["turn_end:aborted:0"]);
}

#[test]
fn abort_during_a_tool_waits_for_it_keeps_its_result_and_asks_no_more() {
    let model = ScriptedModel::new(readme_script());
    let tools = GatedTools::default();
    tools.gate("call-1");
    let registry = readme_registry();
    let controller = AbortController::new();
    let result = Rc::new(RefCell::new(None));
    let mut pool = LocalPool::new();
    let model = Rc::new(model);
    {
        let (model, tools, result, signal) = (
            model.clone(),
            tools.clone(),
            result.clone(),
            controller.signal(),
        );
        pool.spawner()
            .spawn_local(async move {
                let mut setup = Setup::new(&model, &registry, &NoObserver);
                setup.executor = Some(&tools);
                setup.signal = signal;
                *result.borrow_mut() = Some(run_agent_loop(setup.options()).await.unwrap());
            })
            .unwrap();
    }
    pool.run_until_stalled();
    assert_eq!(tools.executions(), 1);
    controller.abort();
    pool.run_until_stalled();
    assert!(
        result.borrow().is_none(),
        "the loop never kills a running tool: it waits"
    );
    tools.release("call-1", Ok("# tiny-pi"));
    pool.run_until_stalled();
    let result = result.borrow_mut().take().unwrap();
    assert_eq!((result.reason, result.steps), (RunReason::Aborted, 1));
    assert_eq!(roles(&result.messages), ["user", "assistant", "toolResult"]);
    assert_eq!(model.request_count(), 1);
    assert!(validate_transcript(&result.messages).ok);
}

#[test]
fn max_steps_1_executes_the_last_round_and_fabricates_nothing() {
    let model = ScriptedModel::new(readme_script());
    let registry = readme_registry();
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.max_steps = 1;
    let result = setup.run();
    assert_eq!((result.reason, result.steps), (RunReason::MaxSteps, 1));
    assert_eq!(model.request_count(), 1);
    assert_eq!(roles(&result.messages), ["user", "assistant", "toolResult"]);
    assert_eq!(recorder.lines().last().unwrap(), "turn_end:maxSteps:1");
}

#[test]
fn default_max_steps_is_32() {
    let forever: Vec<AssistantMessage> = (0..40)
        .map(|i| {
            assistant(
                vec![call(&format!("c{i}"), "read", json!({"path": "x"}))],
                StopReason::ToolUse,
            )
        })
        .collect();
    let model = ScriptedModel::new(forever);
    let registry = readme_registry();
    let result = Setup::new(&model, &registry, &NoObserver).run();
    assert_eq!((result.reason, result.steps), (RunReason::MaxSteps, 32));
    assert_eq!(model.request_count(), 32);
    assert_eq!(result.messages.len(), 1 + 2 * 32);
    assert!(validate_transcript(&result.messages).ok);
}

#[test]
fn max_steps_0_makes_no_request() {
    let model = ScriptedModel::new(readme_script());
    let registry = readme_registry();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.max_steps = 0;
    let result = setup.run();
    assert_eq!(
        (result.reason, result.steps, model.request_count()),
        (RunReason::MaxSteps, 0, 0)
    );
}

#[test]
fn a_script_past_its_end_is_an_error_not_a_hang() {
    let model = ScriptedModel::new(vec![readme_script().remove(0)]);
    let registry = readme_registry();
    let result = Setup::new(&model, &registry, &NoObserver).run();
    assert_eq!((result.reason, result.steps), (RunReason::Error, 2));
    assert!(result.error.unwrap().contains("request 2"));
    assert_eq!(
        roles(&result.messages),
        ["user", "assistant", "toolResult"],
        "nothing appended for the failed step"
    );
}

#[test]
fn an_observer_that_fails_cannot_stop_the_run() {
    let model = ScriptedModel::new(readme_script());
    let registry = readme_registry();
    let recorder = Recorder {
        fail_with: Some("observer broke".into()),
        ..Default::default()
    };
    let result = Setup::new(&model, &registry, &recorder).run();
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
    assert_eq!(result.observer_error.as_deref(), Some("observer broke"));
    assert_eq!(
        recorder.lines().len(),
        13,
        "every event was still delivered"
    );
}

#[test]
fn unknown_tools_and_bad_arguments_become_error_results() {
    let model = ScriptedModel::new(vec![
        assistant(
            vec![
                call("u", "nope", json!({})),
                call("v", "read", json!({"path": 7})),
            ],
            StopReason::ToolUse,
        ),
        assistant(vec![text("ok")], StopReason::Stop),
    ]);
    let registry = readme_registry();
    let result = Setup::new(&model, &registry, &NoObserver).run();
    let rs = results(&result.messages);
    assert!(rs.iter().all(|r| r.is_error));
    assert_eq!(
        rs[0].content,
        vec![MediaBlock::text("Tool \"nope\" not found")]
    );
    assert_eq!(
        rs[1].content,
        vec![MediaBlock::text(
            "Invalid arguments for tool \"read\": arguments.path must be a string (got integer)"
        )]
    );
}

#[test]
fn progress_is_reported_with_the_call_id_before_its_end() {
    let mut registry = ToolRegistry::new();
    registry
        .register(Tool::new(
            ToolDefinition {
                name: "work".into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            },
            Rc::new(
                |_args: serde_json::Value, ctx: ToolCallContext| async move {
                    (ctx.progress)(vec![MediaBlock::text("half way")]);
                    Ok(ToolOutput {
                        content: vec![MediaBlock::text("done")],
                        ..ToolOutput::default()
                    })
                },
            ),
        ))
        .unwrap();
    let model = ScriptedModel::new(vec![
        assistant(vec![call("w1", "work", json!({}))], StopReason::ToolUse),
        assistant(vec![text("ok")], StopReason::Stop),
    ]);
    let recorder = Recorder::default();
    Setup::new(&model, &registry, &recorder).run();
    let tool_lines: Vec<String> = recorder
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("tool"))
        .collect();
    assert_eq!(
        tool_lines,
        ["tool_start:w1", "tool_progress:w1", "tool_end:w1"]
    );
}

#[test]
fn unknown_fields_survive_a_run() {
    let mut first: AssistantMessage =
        serde_json::from_value(json!({"role": "assistant", "content": [{"type": "text", "text": "hi", "textSignature": "sig"}],
            "stopReason": "stop", "timestamp": 5, "usage": {"input": 3}, "api": "faux", "provider": "p", "model": "m", "responseId": "r1"}))
        .unwrap();
    first.timestamp = 5.0;
    let model = ScriptedModel::new(vec![first.clone()]);
    let registry = ToolRegistry::new();
    let result = Setup::new(&model, &registry, &NoObserver).run();
    let out = serde_json::to_value(&result.messages[1]).unwrap();
    assert_eq!(out["usage"], json!({"input": 3}));
    assert_eq!(out["responseId"], "r1");
    assert_eq!(out["content"][0]["textSignature"], "sig");
    assert_eq!(result.messages[1], AgentMessage::Assistant(first));
}

#[test]
fn events_and_standalone_messages_have_pi_ai_json_shapes() {
    let call = ToolCall {
        id: "c".into(),
        name: "read".into(),
        arguments: Some(json!({})),
        extra: Default::default(),
    };
    let result = ToolResultMessage::error(&call, "no", 1.0);
    let end = serde_json::to_value(LoopEvent::ToolEnd::<ModelEvent> {
        result: &result,
        index: 2,
    })
    .unwrap();
    assert_eq!(end["type"], "tool_end");
    assert_eq!(end["result"]["role"], "toolResult");
    assert_eq!(end["result"]["toolCallId"], "c");
    let start = serde_json::to_value(LoopEvent::ToolStart::<ModelEvent> { call: &call }).unwrap();
    assert_eq!(
        start["call"],
        json!({"type": "toolCall", "id": "c", "name": "read", "arguments": {}})
    );
    let script = ModelEvent::script(&assistant(
        vec![AssistantBlock::ToolCall(call.clone())],
        StopReason::ToolUse,
    ));
    let events = serde_json::to_value(&script).unwrap();
    assert_eq!(events[2]["toolCall"]["type"], "toolCall");
    assert_eq!(events[3]["message"]["role"], "assistant");
    assert_eq!(
        events[1],
        json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{}"})
    );

    // Read on its own, a message's tag is not kept as an extra field (it would be written twice).
    let standalone: AssistantMessage = serde_json::from_value(
        json!({"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 1}),
    )
    .unwrap();
    assert!(standalone.extra.is_empty());
    let text = serde_json::to_string(&AgentMessage::Assistant(standalone)).unwrap();
    assert_eq!(text.matches("\"role\"").count(), 1);
}

#[test]
fn malformed_messages_are_refused_naming_the_bad_field_as_the_shape_does() {
    // The reader names the field itself (`read_at`), and the shape of SPEC §1 says the same.
    let read = |v: serde_json::Value| -> String {
        let error = tiny_pi::reading::read_at::<Vec<AgentMessage>>(v.clone(), "messages")
            .expect_err("refused");
        let shape = tiny_pi::shape::explain("messages", &v, "messages")
            .expect("the shape finds the bad field");
        assert_eq!(error, shape, "{v}");
        error.into()
    };
    let bad_id = json!([{"role": "user", "content": "q", "timestamp": 1},
        {"role": "assistant", "content": [{"type": "toolCall", "id": 7, "name": "x", "arguments": {}}], "stopReason": "toolUse", "timestamp": 2}]);
    assert_eq!(
        read(bad_id),
        "messages[1].content[0].id must be a string (got integer)"
    );
    assert_eq!(
        read(json!([{"role": "bot"}])),
        "messages[0].role must be one of \"user\", \"assistant\", \"toolResult\", \"compaction\" (got \"bot\")"
    );
    assert_eq!(
        read(json!([{"role": "user", "content": 7, "timestamp": 1}])),
        "messages[0].content must be a string or an array (got integer)"
    );
    assert_eq!(
        read(json!([{"role": "assistant", "content": [], "stopReason": "done", "timestamp": 1}])),
        "messages[0].stopReason must be one of \"stop\", \"length\", \"toolUse\", \"error\", \"aborted\" (got \"done\")"
    );
    assert_eq!(
        read(
            json!([{"role": "toolResult", "toolCallId": "a", "toolName": "t", "content": [{"type": "image"}], "isError": false, "timestamp": 1}])
        ),
        "messages[0].content[0].data is missing"
    );
    // A timestamp is a number, and it is there (SPEC §1): one wording whether it is null, a string or
    // missing, the path kept.
    for (timestamp, error) in [
        (
            json!(null),
            "messages[0].timestamp must be a number (got null)",
        ),
        (
            json!("now"),
            "messages[0].timestamp must be a number (got string)",
        ),
    ] {
        assert_eq!(
            read(json!([{"role": "user", "content": "q", "timestamp": timestamp}])),
            error
        );
    }
    assert_eq!(
        read(json!([{"role": "user", "content": "q"}])),
        "messages[0].timestamp is missing"
    );
    // A field's own error comes before the missing timestamp, in the reader and in the shape.
    assert_eq!(
        read(json!([{"role": "user", "content": 5}])),
        "messages[0].content must be a string or an array (got integer)"
    );
    // A well-formed transcript has the shape.
    let good =
        json!([{"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": 1}]);
    assert!(serde_json::from_value::<Vec<AgentMessage>>(good.clone()).is_ok());
    assert_eq!(tiny_pi::shape::explain("messages", &good, "messages"), None);
    // On its own, a message must not claim another role.
    let wrong: Result<AssistantMessage, _> = serde_json::from_value(
        json!({"role": "user", "content": [], "stopReason": "stop", "timestamp": 1}),
    );
    assert!(wrong
        .unwrap_err()
        .to_string()
        .contains("role must be \"assistant\" (got \"user\")"));
}

#[test]
fn loop_options_new_is_a_run_with_every_default() {
    let model = ScriptedModel::new(readme_script());
    let registry = readme_registry();
    let mut options = LoopOptions::new(
        vec![user("What is in README.md?")],
        &model,
        &registry,
        registry.definitions(),
        fixed_clock(),
    );
    assert_eq!(
        (options.max_steps, options.signal.aborted()),
        (DEFAULT_MAX_STEPS, false)
    );
    options.max_steps = 1;
    let result = futures::executor::block_on(run_agent_loop(options)).unwrap();
    assert_eq!((result.reason, result.steps), (RunReason::MaxSteps, 1));
    assert_eq!(
        result
            .messages
            .iter()
            .map(AgentMessage::role)
            .collect::<Vec<_>>(),
        ["user", "assistant", "toolResult"]
    );
}
