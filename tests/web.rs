//! The bridge in real browsers (`wasm-pack test --headless --chrome` / `--firefox`): JS models and
//! executors, pi-ai-shaped streams, AbortController, awaited `onEvent`, and every bad input of SPEC §6
//! followed by a good call on the same instance.
#![cfg(all(target_arch = "wasm32", feature = "js"))]

use js_sys::{Array, Function, Reflect, JSON};
use serde_json::{json, Value};
use tiny_pi::wasm::{
    format_trace_js, parse_jsonl_js, prologue_trace_js, run_agent_loop_js, to_jsonl_js,
    validate_transcript_js, JsScriptedModel, JsToolRegistry,
};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen(inline_js = r##"
const read = { type: "toolCall", id: "call-1", name: "read", arguments: { path: "README.md" } };
export const SCRIPT = [
  { role: "assistant", content: [{ type: "text", text: "我先读取项目说明。" }, read], stopReason: "toolUse", timestamp: 1,
    usage: { input: 3, output: 4 }, api: "faux", provider: "faux", model: "m", responseId: "r-1" },
  { role: "assistant", content: [{ type: "text", text: "项目名是 tiny-pi。" }], stopReason: "stop", timestamp: 2 },
];
export function userInput() { return [{ role: "user", content: "请读取 README.md，并告诉我项目名。", timestamp: 0 }]; }

function eventsFor(message) {
  const events = [{ type: "start", partial: message }];
  message.content.forEach((block, contentIndex) => {
    if (block.type === "text") events.push({ type: "text_delta", contentIndex, delta: block.text, partial: message });
    if (block.type === "toolCall") {
      events.push({ type: "toolcall_delta", contentIndex, delta: JSON.stringify(block.arguments), partial: message });
      events.push({ type: "toolcall_end", contentIndex, toolCall: block, partial: message });
    }
  });
  events.push(["error", "aborted"].includes(message.stopReason)
    ? { type: "error", reason: message.stopReason, error: message }
    : { type: "done", reason: message.stopReason, message });
  return events;
}

// A push-based stream with result(), shaped like pi-ai's EventStream.
class EventStream {
  constructor() { this.queue = []; this.waiting = []; this.done = false; this.final = new Promise((r) => (this.resolve = r)); }
  push(event) {
    if (event.type === "done") { this.done = true; this.resolve(event.message); }
    if (event.type === "error") { this.done = true; this.resolve(event.error); }
    const waiter = this.waiting.shift();
    waiter ? waiter({ value: event, done: false }) : this.queue.push(event);
  }
  async *[Symbol.asyncIterator]() {
    while (true) {
      if (this.queue.length) yield this.queue.shift();
      else if (this.done) return;
      else { const r = await new Promise((res) => this.waiting.push(res)); if (r.done) return; yield r.value; }
    }
  }
  result() { return this.final; }
}

// kind: "generator" (async generator, no result()), "eventStream" (pi-ai shaped, result()), "sync" (plain array iterable).
export function makeModel(kind, script) {
  const model = { requests: [], yielded: [], signals: [] };
  model.stream = function (request, options) {
    model.requests.push(request);
    model.signals.push(options && options.signal);
    const message = script[model.requests.length - 1];
    if (!message) throw new Error("script exhausted");
    const events = eventsFor(message);
    model.yielded.push(...events);
    if (kind === "sync") return events;
    if (kind === "generator") return (async function* () { yield* events; })();
    const stream = new EventStream();
    Promise.resolve().then(() => events.forEach((e) => stream.push(e)));
    return stream;
  };
  return model;
}

export function recorder(gateEvent) {
  const rec = { events: [], released: [] };
  rec.onEvent = (event) => {
    rec.events.push(event);
    if (gateEvent && event.type === gateEvent) {
      return new Promise((resolve) => { rec.release = () => { rec.released.push(rec.events.length); resolve(); }; });
    }
  };
  return rec;
}

export function names(events) {
  return events.map((e) => (e.type === "model_event" ? "model_event:" + e.event.type : e.type));
}

export function sameObjects(events, yielded) {
  const got = events.filter((e) => e.type === "model_event").map((e) => e.event);
  return got.length === yielded.length && got.every((e, i) => e === yielded[i]);
}

export function gate() { let open; const promise = new Promise((r) => (open = r)); return { promise, open }; }

export function readTool(log) {
  return {
    name: "read", description: "Read a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    async execute(args, ctx) {
      log.push({ args, callId: ctx.callId, hasSignal: ctx.signal instanceof AbortSignal });
      ctx.reportProgress([{ type: "text", text: "reading " + args.path }]);
      return { content: [{ type: "text", text: "# tiny-pi\nA small agent runtime." }] };
    },
  };
}

// A tool that waits for its gate, then answers; the test opens gates in any order.
export function gatedTool(name, gates, log) {
  return {
    name, parameters: { type: "object" },
    async execute(args, ctx) { log.push("start:" + name); await gates[name].promise; log.push("end:" + name); return { content: [{ type: "text", text: name + " done" }] }; },
  };
}

export function rejectingExecutor() {
  return async (call) => { if (call.name === "boom") { const e = new Error("disk on fire"); e.stack = "SECRET STACK"; throw e; } return { content: [{ type: "text", text: "ok" }] }; };
}

export function options(fields) { return Object.assign({}, fields); }
export function abortController() { return new AbortController(); }
export function cyclic() { const o = { role: "user", content: "x", timestamp: 0 }; o.self = o; return o; }
export function bigint() { return [{ role: "user", content: "x", timestamp: 10n }]; }
export function withFunction() { return [{ role: "user", content: () => 1, timestamp: 0 }]; }
export function throwingGetter() { return { get model() { throw new Error("getter exploded"); } }; }
export function throwingModel(mode) {
  return { stream() {
    if (mode === "throws") throw new Error("model down");
    if (mode === "nonIterable") return 42;
    if (mode === "garbage") return (async function* () { yield 7; yield { type: "done", message: { role: "nope" } }; })();
    if (mode === "rejects") return { async *[Symbol.asyncIterator]() {}, result: () => Promise.reject(new Error("no result")) };
    if (mode === "empty") return (async function* () {})();
  } };
}
export function fakeSignal() { return Object.create(AbortSignal.prototype); }
export function fakePromise() { return Object.create(Promise.prototype); }
export function throwingThenPromise() { const p = Promise.resolve(1); p.then = () => { throw new Error("own then threw"); }; return p; }
export function throwingThenable() { return { then() { throw new Error("then threw"); } }; }
export function revokedArray() { const { proxy, revoke } = Proxy.revocable([], {}); revoke(); return proxy; }
export function loneSurrogateInput() { return [{ role: "user", content: "half an emoji: \ud83d", timestamp: 0 }]; }
export function errorName(e) { return e && e.constructor && e.constructor.name; }
export function errorText(e) { return e && e.message; }
export function script() { return SCRIPT; }
"##)]
extern "C" {
    fn script() -> JsValue;
    #[wasm_bindgen(js_name = userInput)]
    fn user_input() -> JsValue;
    #[wasm_bindgen(js_name = makeModel)]
    fn make_model(kind: &str, script: &JsValue) -> JsValue;
    fn recorder(gate_event: Option<String>) -> JsValue;
    fn names(events: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = sameObjects)]
    fn same_objects(events: &JsValue, yielded: &JsValue) -> bool;
    fn gate() -> JsValue;
    #[wasm_bindgen(js_name = readTool)]
    fn read_tool(log: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = gatedTool)]
    fn gated_tool(name: &str, gates: &JsValue, log: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = rejectingExecutor)]
    fn rejecting_executor() -> JsValue;
    #[wasm_bindgen(js_name = abortController)]
    fn abort_controller() -> JsValue;
    fn cyclic() -> JsValue;
    fn bigint() -> JsValue;
    #[wasm_bindgen(js_name = withFunction)]
    fn with_function() -> JsValue;
    #[wasm_bindgen(js_name = throwingGetter)]
    fn throwing_getter() -> JsValue;
    #[wasm_bindgen(js_name = throwingModel)]
    fn throwing_model(mode: &str) -> JsValue;
    #[wasm_bindgen(js_name = fakeSignal)]
    fn fake_signal() -> JsValue;
    #[wasm_bindgen(js_name = fakePromise)]
    fn fake_promise() -> JsValue;
    #[wasm_bindgen(js_name = throwingThenPromise)]
    fn throwing_then_promise() -> JsValue;
    #[wasm_bindgen(js_name = throwingThenable)]
    fn throwing_thenable() -> JsValue;
    #[wasm_bindgen(js_name = revokedArray)]
    fn revoked_array() -> JsValue;
    #[wasm_bindgen(js_name = loneSurrogateInput)]
    fn lone_surrogate_input() -> JsValue;
    #[wasm_bindgen(js_name = errorName)]
    fn error_name(e: &JsValue) -> String;
    #[wasm_bindgen(js_name = errorText)]
    fn error_text(e: &JsValue) -> String;
}

fn get(object: &JsValue, key: &str) -> JsValue {
    Reflect::get(object, &key.into()).unwrap()
}

fn set(object: &JsValue, key: &str, value: &JsValue) {
    Reflect::set(object, &key.into(), value).unwrap();
}

fn json_of(value: &JsValue) -> Value {
    serde_json::from_str(&String::from(JSON::stringify(value).unwrap())).unwrap()
}

fn object(pairs: &[(&str, &JsValue)]) -> JsValue {
    let o: JsValue = js_sys::Object::new().into();
    for (k, v) in pairs {
        set(&o, k, v);
    }
    o
}

fn context(messages: &JsValue) -> JsValue {
    object(&[("systemPrompt", &"sys".into()), ("messages", messages)])
}

async fn run(options: &JsValue) -> Result<JsValue, JsValue> {
    JsFuture::from(run_agent_loop_js(options.clone())).await
}

fn registry_with(tools: &[JsValue]) -> JsValue {
    let registry = JsToolRegistry::new();
    for tool in tools {
        registry.register(tool.clone()).unwrap();
    }
    registry.into()
}

/// The README round trip through a JS model of each stream kind.
async fn readme_round_trip(kind: &str) {
    let model = make_model(kind, &script());
    let rec = recorder(None);
    let log = Array::new();
    let input = user_input();
    let options = object(&[
        ("context", &context(&input)),
        ("model", &model),
        ("tools", &registry_with(&[read_tool(&log)])),
        ("onEvent", &get(&rec, "onEvent")),
    ]);
    let result = run(&options).await.unwrap();
    let events = get(&rec, "events");
    assert_eq!(
        json_of(&names(&events)),
        json!([
            "model_event:start",
            "model_event:text_delta",
            "model_event:toolcall_delta",
            "model_event:toolcall_end",
            "model_event:done",
            "assistant_message",
            "tool_start",
            "tool_progress",
            "tool_end",
            "model_event:start",
            "model_event:text_delta",
            "model_event:done",
            "assistant_message",
            "turn_end"
        ]),
        "{kind}"
    );
    assert!(
        same_objects(&events, &get(&model, "yielded")),
        "{kind}: onEvent gets the very objects the model yielded"
    );
    let result = json_of(&result);
    assert_eq!(result["reason"], "stop");
    assert_eq!(result["steps"], 2);
    let roles: Vec<&str> = result["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(
        result["messages"][1]["usage"],
        json!({"input": 3, "output": 4}),
        "extra fields survive"
    );
    assert_eq!(result["messages"][1]["responseId"], "r-1");
    assert_eq!(result["messages"][2]["toolCallId"], "call-1");
    assert_eq!(
        result["messages"][2]["content"][0]["text"],
        "# tiny-pi\nA small agent runtime."
    );
    assert_eq!(
        json_of(&log),
        json!([{"args": {"path": "README.md"}, "callId": "call-1", "hasSignal": false}])
    );
    assert_eq!(
        json_of(&input).as_array().unwrap().len(),
        1,
        "the caller's messages are untouched"
    );
    let requests = json_of(&get(&model, "requests"));
    assert_eq!(
        requests[0]["messages"].as_array().unwrap().len(),
        1,
        "a later append does not change an earlier request"
    );
    assert_eq!(requests[1]["messages"].as_array().unwrap().len(), 3);
    assert_eq!(requests[1]["systemPrompt"], "sys");
    assert_eq!(requests[1]["tools"][0]["name"], "read");
}

#[wasm_bindgen_test]
async fn readme_round_trip_with_an_event_stream_model() {
    readme_round_trip("eventStream").await;
}

#[wasm_bindgen_test]
async fn readme_round_trip_with_an_async_generator_and_no_result() {
    readme_round_trip("generator").await;
}

#[wasm_bindgen_test]
async fn readme_round_trip_with_a_plain_iterable() {
    readme_round_trip("sync").await;
}

#[wasm_bindgen_test]
async fn scripted_model_streams_to_js_and_runs_the_loop() {
    let model: JsValue = JsScriptedModel::new(script(), JsValue::UNDEFINED)
        .unwrap()
        .into();
    let log = Array::new();
    let options = object(&[
        ("context", &context(&user_input())),
        ("model", &model),
        ("tools", &registry_with(&[read_tool(&log)])),
    ]);
    let result = json_of(&run(&options).await.unwrap());
    assert_eq!(
        (result["reason"].as_str(), result["steps"].as_u64()),
        (Some("stop"), Some(2))
    );
    let requests = json_of(&get(&model, "requests"));
    assert_eq!(requests.as_array().unwrap().len(), 2);
    let messages = JSON::parse(&result["messages"].to_string()).unwrap();
    let trace = format_trace_js(prologue_trace_js(messages, None).unwrap()).unwrap();
    assert_eq!(trace.lines().count(), 7);
    assert!(trace.contains("04 tool_start owner=loop detail=\"name=read\" toolCallId=call-1"));
}

#[wasm_bindgen_test]
async fn on_event_promises_are_awaited_before_the_loop_goes_on() {
    let model = make_model("eventStream", &script());
    let rec = recorder(Some("tool_start".into()));
    let log = Array::new();
    let options = object(&[
        ("context", &context(&user_input())),
        ("model", &model),
        ("tools", &registry_with(&[read_tool(&log)])),
        ("onEvent", &get(&rec, "onEvent")),
    ]);
    let pending = run_agent_loop_js(options);
    // Let the loop run until it is held by the pending onEvent promise.
    for _ in 0..50 {
        JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL))
            .await
            .unwrap();
    }
    assert_eq!(
        log.length(),
        0,
        "the tool has not started while onEvent(tool_start) is pending"
    );
    assert_eq!(
        json_of(&names(&get(&rec, "events")))
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        "tool_start"
    );
    get(&rec, "release")
        .unchecked_into::<Function>()
        .call0(&JsValue::NULL)
        .unwrap();
    let result = json_of(&JsFuture::from(pending).await.unwrap());
    assert_eq!(result["reason"], "stop");
    assert_eq!(log.length(), 1);
}

#[wasm_bindgen_test]
async fn concurrent_tools_end_in_completion_order_and_append_in_call_order() {
    let script = JSON::parse(
        &json!([
            {"role": "assistant", "content": [{"type": "toolCall", "id": "slow-call", "name": "slow", "arguments": {}},
                                              {"type": "toolCall", "id": "fast-call", "name": "fast", "arguments": {}}], "stopReason": "toolUse", "timestamp": 1},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}], "stopReason": "stop", "timestamp": 2}
        ])
        .to_string(),
    )
    .unwrap();
    let gates = object(&[("slow", &gate()), ("fast", &gate())]);
    let log = Array::new();
    let rec = recorder(None);
    let options = object(&[
        ("context", &context(&user_input())),
        ("model", &make_model("eventStream", &script)),
        (
            "tools",
            &registry_with(&[
                gated_tool("slow", &gates, &log),
                gated_tool("fast", &gates, &log),
            ]),
        ),
        ("onEvent", &get(&rec, "onEvent")),
    ]);
    let pending = run_agent_loop_js(options);
    let open = |name: &str| {
        get(&get(&gates, name), "open")
            .unchecked_into::<Function>()
            .call0(&JsValue::NULL)
            .unwrap()
    };
    for _ in 0..50 {
        JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL))
            .await
            .unwrap();
    }
    assert_eq!(
        json_of(&log),
        json!(["start:slow", "start:fast"]),
        "both run at once"
    );
    open("fast");
    for _ in 0..50 {
        JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL))
            .await
            .unwrap();
    }
    open("slow");
    let result = json_of(&JsFuture::from(pending).await.unwrap());
    let ends: Vec<Value> = json_of(&get(&rec, "events"))
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_end")
        .map(|e| e["result"]["toolCallId"].clone())
        .collect();
    assert_eq!(ends, [json!("fast-call"), json!("slow-call")]);
    assert_eq!(result["messages"][2]["toolCallId"], "slow-call");
    assert_eq!(result["messages"][3]["toolCallId"], "fast-call");
}

#[wasm_bindgen_test]
async fn a_rejecting_executor_becomes_an_error_result_without_its_stack() {
    let script = JSON::parse(
        &json!([
            {"role": "assistant", "content": [{"type": "toolCall", "id": "b", "name": "boom", "arguments": {}},
                                              {"type": "toolCall", "id": "g", "name": "good", "arguments": {}}], "stopReason": "toolUse", "timestamp": 1},
            {"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 2}
        ])
        .to_string(),
    )
    .unwrap();
    let options = object(&[
        ("context", &context(&user_input())),
        ("model", &make_model("generator", &script)),
        ("executeToolCall", &rejecting_executor()),
        ("now", &Function::new_no_args("return 7")),
    ]);
    let result = json_of(&run(&options).await.unwrap());
    let bad = &result["messages"][2];
    assert_eq!(
        (
            bad["toolCallId"].as_str(),
            bad["toolName"].as_str(),
            bad["isError"].as_bool()
        ),
        (Some("b"), Some("boom"), Some(true))
    );
    assert_eq!(
        bad["content"],
        json!([{"type": "text", "text": "disk on fire"}])
    );
    assert!(!result.to_string().contains("SECRET STACK"));
    assert_eq!(
        bad["timestamp"], 7,
        "options.now stamps what the loop writes"
    );
    assert_eq!(result["messages"][3]["isError"], false);
}

/// `options.tools` as a tool source of the caller's own (issue 19): its definitions are offered, its `execute`
/// runs the call with the source as `this`.
#[wasm_bindgen_test]
async fn a_tool_source_offers_its_definitions_and_runs_the_call() {
    let source = Function::new_no_args(
        r#"return {
            definitions() { return [{ name: "read", description: "Read a file", parameters: { type: "object" } }]; },
            async execute(call) {
                return { role: "toolResult", toolCallId: call.id, toolName: call.name,
                         content: [{ type: "text", text: this.answer }], isError: false, timestamp: 5 };
            },
            answer: "from the source",
        };"#,
    )
    .call0(&JsValue::UNDEFINED)
    .unwrap();
    let requests = Array::new();
    let model = make_model("eventStream", &script());
    let recorded = object(&[(
        "stream",
        &Function::new_with_args("m, log", "return (req, opts) => { log.push(JSON.parse(JSON.stringify(req.tools))); return m.stream(req, opts); }")
            .call2(&JsValue::UNDEFINED, &model, &requests)
            .unwrap(),
    )]);
    let options = object(&[
        ("context", &context(&user_input())),
        ("model", &recorded),
        ("tools", &source),
    ]);
    let result = json_of(&run(&options).await.unwrap());
    assert_eq!(result["reason"], "stop");
    assert_eq!(
        result["messages"][2]["content"][0]["text"],
        "from the source"
    );
    let offered = json_of(&requests.into());
    assert_eq!(offered.as_array().map(Vec::len), Some(2));
    for tools in offered.as_array().unwrap() {
        assert_eq!(tools[0]["name"], "read");
        assert_eq!(tools[0]["description"], "Read a file");
    }
}

#[wasm_bindgen_test]
async fn abort_before_start_and_during_a_tool() {
    let controller = abort_controller();
    let signal = get(&controller, "signal");
    get(&controller, "abort")
        .unchecked_into::<Function>()
        .call0(&controller)
        .unwrap();
    let model = make_model("eventStream", &script());
    let input = user_input();
    let result = json_of(
        &run(&object(&[
            ("context", &context(&input)),
            ("model", &model),
            ("signal", &signal),
        ]))
        .await
        .unwrap(),
    );
    assert_eq!(
        (result["reason"].as_str(), result["steps"].as_u64()),
        (Some("aborted"), Some(0))
    );
    assert_eq!(result["messages"], json_of(&input));
    assert_eq!(json_of(&get(&model, "requests")), json!([]));

    // During a tool: the tool sees the signal, is waited for, and its result is kept.
    let controller = abort_controller();
    let gates = object(&[("read", &gate())]);
    let log = Array::new();
    let model = make_model("eventStream", &script());
    let options = object(&[
        ("context", &context(&user_input())),
        ("model", &model),
        ("tools", &registry_with(&[gated_tool("read", &gates, &log)])),
        ("signal", &get(&controller, "signal")),
    ]);
    let pending = run_agent_loop_js(options);
    for _ in 0..50 {
        JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL))
            .await
            .unwrap();
    }
    assert_eq!(json_of(&log), json!(["start:read"]));
    get(&controller, "abort")
        .unchecked_into::<Function>()
        .call0(&controller)
        .unwrap();
    get(&get(&gates, "read"), "open")
        .unchecked_into::<Function>()
        .call0(&JsValue::NULL)
        .unwrap();
    let result = json_of(&JsFuture::from(pending).await.unwrap());
    assert_eq!(
        (result["reason"].as_str(), result["steps"].as_u64()),
        (Some("aborted"), Some(1))
    );
    assert_eq!(result["messages"].as_array().unwrap().len(), 3);
    assert_eq!(result["messages"][2]["content"][0]["text"], "read done");
    assert_eq!(
        get(&model, "requests").unchecked_into::<Array>().length(),
        1
    );
    let signals = get(&model, "signals").unchecked_into::<Array>();
    assert!(
        signals.get(0).is_instance_of::<web_sys::AbortSignal>(),
        "the model gets the caller's signal"
    );
}

/// Every malformed input rejects or throws a TypeError naming the field; the next good run still works.
#[wasm_bindgen_test]
async fn bad_input_is_a_type_error_and_never_poisons_the_instance() {
    let good_model = || make_model("eventStream", &script());
    let messages = user_input();
    let with = |pairs: &[(&str, &JsValue)]| {
        let mut all: Vec<(&str, &JsValue)> = vec![];
        all.extend_from_slice(pairs);
        object(&all)
    };
    let ctx = context(&messages);
    let model = good_model();
    let empty = js_sys::Object::new().into();
    let cases: Vec<(JsValue, &str)> = vec![
        (JsValue::UNDEFINED, "options must be an object"),
        (JsValue::from(3), "options must be an object"),
        (with(&[("context", &ctx)]), "options.model"),
        (with(&[("context", &ctx), ("model", &empty)]), "options.model.stream is not a function"),
        (with(&[("model", &model)]), "options.context"),
        (with(&[("model", &model), ("context", &empty)]), "options.context.messages must be an array"),
        (with(&[("model", &model), ("context", &context(&JSON::parse(r#"[{"role":"bot"}]"#).unwrap()))]), "options.context.messages[0].role"),
        (with(&[("model", &model), ("context", &context(&JSON::parse(r#"[{"role":"assistant","content":[{"type":"toolCall","name":"x"}],"stopReason":"toolUse"}]"#).unwrap()))]), "options.context.messages[0]"),
        (with(&[("model", &model), ("context", &context(&Array::of1(&cyclic()).into()))]), "options.context.messages[0]: "),
        (with(&[("model", &model), ("context", &context(&bigint()))]), "options.context.messages[0].timestamp: "),
        (with(&[("model", &model), ("context", &context(&with_function()))]), "options.context.messages[0]"),
        (with(&[("model", &model), ("context", &ctx), ("maxSteps", &JsValue::from(-1))]), "options.maxSteps must be a non-negative integer"),
        (with(&[("model", &model), ("context", &ctx), ("maxSteps", &JsValue::from(1.5))]), "options.maxSteps must be a non-negative integer"),
        (with(&[("model", &model), ("context", &ctx), ("maxSteps", &JsValue::from("3"))]), "options.maxSteps must be a non-negative integer"),
        (with(&[("model", &model), ("context", &ctx), ("tools", &empty)]), "options.tools must be a ToolRegistry"),
        (with(&[("model", &model), ("context", &ctx), ("signal", &JsValue::from(5))]), "options.signal must be an AbortSignal"),
        (with(&[("model", &model), ("context", &ctx), ("onEvent", &JsValue::from("x"))]), "options.onEvent must be a function"),
        (with(&[("model", &model), ("context", &ctx), ("executeToolCall", &JsValue::from(1))]), "options.executeToolCall must be a function"),
        (with(&[("model", &model), ("context", &ctx), ("now", &JsValue::from(1))]), "options.now must be a function"),
        (with(&[("model", &model), ("context", &object(&[("messages", &messages), ("systemPrompt", &JsValue::from(1))]))]), "options.context.systemPrompt must be a string"),
        (throwing_getter(), "getter exploded"),
    ];
    let count = cases.len();
    for (options, expected) in cases {
        let error = run(&options).await.expect_err(expected);
        assert_eq!(error_name(&error), "TypeError", "{expected}");
        assert!(
            error_text(&error).contains(expected),
            "{:?} should contain {expected:?}",
            error_text(&error)
        );
        let good = json_of(
            &run(&with(&[("context", &ctx), ("model", &good_model())]))
                .await
                .unwrap(),
        );
        assert_eq!(
            (good["reason"].as_str(), good["steps"].as_u64()),
            (Some("stop"), Some(2)),
            "a good call works after a bad one"
        );
    }

    // A model that misbehaves at run time ends the run with reason error, never a trap.
    for (mode, expected) in [
        ("throws", "model down"),
        ("nonIterable", "must return an async iterable"),
        ("garbage", "model event done.message"),
        ("rejects", "no result"),
        ("empty", "ended without a final message"),
    ] {
        let result = json_of(
            &run(&with(&[
                ("context", &ctx),
                ("model", &throwing_model(mode)),
            ]))
            .await
            .unwrap(),
        );
        assert_eq!(
            (result["reason"].as_str(), result["steps"].as_u64()),
            (Some("error"), Some(1)),
            "{mode}"
        );
        assert!(
            result["error"].as_str().unwrap().contains(expected),
            "{mode}: {}",
            result["error"]
        );
    }

    // The other entry points.
    let registry = JsToolRegistry::new();
    for (tool, expected) in [
        (JsValue::NULL, "tool must be an object"),
        (
            JSON::parse(r#"{"name":""}"#).unwrap(),
            "tool.name must be a non-empty string",
        ),
        (
            JSON::parse(r#"{"name":"x"}"#).unwrap(),
            "tool.execute must be a function",
        ),
        (
            object(&[
                ("name", &"x".into()),
                ("parameters", &JSON::parse(r#"{"type":"strnig"}"#).unwrap()),
                ("execute", &Function::new_no_args("")),
            ]),
            "tool.parameters.type must be one of",
        ),
    ] {
        let error = registry.register(tool).expect_err(expected);
        assert!(
            error_text(&error).contains(expected),
            "{}",
            error_text(&error)
        );
    }
    assert!(JsScriptedModel::new(JsValue::from(1), JsValue::UNDEFINED).is_err());
    assert!(validate_transcript_js(JsValue::from("x"), JsValue::UNDEFINED).is_err());
    assert!(format_trace_js(JSON::parse(r#"[{"seq":1}]"#).unwrap()).is_err());
    let good = json_of(
        &run(&with(&[
            ("context", &ctx),
            ("model", &good_model()),
            ("tools", &registry_with(&[read_tool(&Array::new())])),
        ]))
        .await
        .unwrap(),
    );
    assert_eq!(good["reason"], "stop");
    assert!(count >= 20);
}

/// Look-alikes that used to throw from inside the bridge (unwinding through wasm, which leaks its shadow
/// stack until the instance traps): each is now an error or a rejection, thousands of times over.
#[wasm_bindgen_test]
async fn look_alikes_never_unwind_through_wasm() {
    let ctx = context(&user_input());
    for _ in 0..2_000 {
        let options = object(&[
            ("context", &ctx),
            ("model", &make_model("sync", &script())),
            ("signal", &fake_signal()),
        ]);
        let error = run(&options)
            .await
            .expect_err("a fake AbortSignal is refused");
        assert!(
            error_text(&error).starts_with("options.signal must be an AbortSignal"),
            "{}",
            error_text(&error)
        );
        assert!(validate_transcript_js(revoked_array(), JsValue::UNDEFINED).is_err());
    }
    // A returned value is awaited as `await` would: a `then` that throws is the observer's error, and a
    // native promise is adopted by the engine without asking its own (patched) `then`.
    for (returned, rejects) in [
        (fake_promise(), true),
        (throwing_thenable(), true),
        (throwing_then_promise(), false),
    ] {
        let on_event = Function::new_with_args("r", "return () => r")
            .call1(&JsValue::NULL, &returned)
            .unwrap();
        let options = object(&[
            ("context", &ctx),
            ("model", &make_model("sync", &script())),
            ("onEvent", &on_event),
        ]);
        let result = json_of(&run(&options).await.unwrap());
        assert_eq!(result["reason"], "stop", "{result}");
        assert_eq!(
            result["observerError"].is_string(),
            rejects,
            "a then that throws is the observer's error: {result}"
        );
    }
    // Half a surrogate pair is refused, never changed (SPEC §10).
    let options = object(&[
        ("context", &context(&lone_surrogate_input())),
        ("model", &make_model("sync", &script())),
    ]);
    let error = run(&options)
        .await
        .expect_err("a lone surrogate is refused");
    assert!(
        error_text(&error).contains("lone surrogate"),
        "{}",
        error_text(&error)
    );
    let good = json_of(
        &run(&object(&[
            ("context", &ctx),
            ("model", &make_model("eventStream", &script())),
            ("tools", &registry_with(&[read_tool(&Array::new())])),
        ]))
        .await
        .unwrap(),
    );
    assert_eq!(good["reason"], "stop");
}

/// A JS tool named `name` with `parameters` (JSON text) that answers "ran".
fn schema_tool(name: &str, parameters: &str) -> JsValue {
    object(&[
        ("name", &name.into()),
        ("parameters", &JSON::parse(parameters).unwrap()),
        (
            "execute",
            &Function::new_no_args("return { content: [{ type: 'text', text: 'ran' }] };"),
        ),
    ])
}

/// `[isError, text]` of the registry's answer to a call of `name` with `arguments` (JSON text).
async fn answer(registry: &JsToolRegistry, name: &str, arguments: &str) -> (bool, String) {
    let call = object(&[
        ("type", &"toolCall".into()),
        ("id", &"c1".into()),
        ("name", &name.into()),
        ("arguments", &JSON::parse(arguments).unwrap()),
    ]);
    let result = json_of(
        &JsFuture::from(registry.execute(call, JsValue::UNDEFINED))
            .await
            .unwrap(),
    );
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    (result["isError"] == json!(true), text.to_string())
}

#[wasm_bindgen_test]
async fn json_schema_patterns_mean_what_ecma_says_and_match_in_linear_time() {
    let registry = JsToolRegistry::new();
    registry
        .register(schema_tool(
            "read",
            r##"{"type": "object", "required": ["path"],
                "$defs": {"word": {"type": "string", "pattern": "^\\S+$"}},
                "properties": {"path": {"type": "string", "pattern": "^[a-z/]+$"}, "name": {"$ref": "#/$defs/word"},
                               "tags": {"type": "array", "uniqueItems": true, "items": {"not": {"const": ""}}},
                               "slow": {"type": "string", "pattern": "^(a+)+$"}},
                "patternProperties": {"^x-": {"type": "integer"}}}"##,
        ))
        .unwrap();
    let long = format!("{}!", "a".repeat(10_000));
    let slow = format!(r##"{{"path": "a", "slow": "{long}"}}"##);
    let cases = [
        (r##"{"path": "etc/hosts", "name": "école", "tags": ["a", "b"], "x-n": 1}"##, false, "ran"),
        (
            r##"{"path": "../../etc/passwd"}"##,
            true,
            "Invalid arguments for tool \"read\": arguments.path must match ^[a-z/]+$",
        ),
        // `\s` is ECMA-262's: U+00A0 is white space.
        (
            r##"{"path": "a", "name": "l'\u00a0école"}"##,
            true,
            "Invalid arguments for tool \"read\": arguments.name must match ^\\S+$",
        ),
        (
            r##"{"path": "a", "tags": ["a", "a"]}"##,
            true,
            "Invalid arguments for tool \"read\": arguments.tags must have unique items (arguments.tags[0] and arguments.tags[1] are equal)",
        ),
        (
            r##"{"path": "a", "x-n": "1"}"##,
            true,
            "Invalid arguments for tool \"read\": arguments.x-n must be an integer (got string)",
        ),
        // Exponential in a backtracking engine; linear here.
        (
            slow.as_str(),
            true,
            "Invalid arguments for tool \"read\": arguments.slow must match ^(a+)+$",
        ),
    ];
    for (arguments, is_error, text) in cases {
        assert_eq!(
            answer(&registry, "read", arguments).await,
            (is_error, text.to_string()),
            "{arguments}"
        );
    }
    // An invalid pattern, or one no linear-time engine runs, is a TypeError at register, and the registry
    // goes on working.
    for (parameters, expected) in [
        (
            r##"{"properties": {"p": {"pattern": "(unclosed"}}}"##,
            "tool.parameters.properties.p.pattern is not a valid regular expression",
        ),
        (
            r##"{"patternProperties": {"a{": true}}"##,
            "tool.parameters.patternProperties[\"a{\"] is not a valid regular expression",
        ),
        (
            r##"{"properties": {"p": {"pattern": "^\\p{Letter}+$"}}}"##,
            "tool.parameters.properties.p.pattern is not supported (a Unicode property escape at index 1)",
        ),
        (
            r##"{"$ref": "https://example.com/remote.json"}"##,
            "tool.parameters.$ref \"https://example.com/remote.json\" is not in this schema",
        ),
    ] {
        let error = registry
            .register(schema_tool("bad", parameters))
            .expect_err(expected);
        assert_eq!(error_name(&error), "TypeError");
        assert!(
            error_text(&error).contains(expected),
            "{}",
            error_text(&error)
        );
    }
    registry
        .register(schema_tool(
            "good",
            r##"{"properties": {"q": {"pattern": "^\\d+$"}}}"##,
        ))
        .unwrap();
    assert_eq!(
        answer(&registry, "good", r##"{"q": "42"}"##).await,
        (false, "ran".into())
    );
    assert!(answer(&registry, "good", r##"{"q": "4a"}"##).await.0);
}

// ---- SPEC §7 and §10 in the browser: the hooks and queues as JS functions, a real setTimeout timeout, and
// what is frozen.

#[wasm_bindgen(inline_js = r##"
const call = (id, name) => ({ type: "toolCall", id, name, arguments: { id } });
export function controlScript() {
  return [
    { role: "assistant", content: [call("a", "echo"), call("b", "echo"), call("h", "hang")], stopReason: "toolUse", timestamp: 1 },
    { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop", timestamp: 2 },
  ];
}

// "echo" answers at once; "hang" (timeoutMs 30) settles only when its signal aborts, and its late answer
// and progress must be ignored.
export function controlTools(log) {
  return [
    { name: "echo", async execute(_args, ctx) { log.push("run:" + ctx.callId); return { content: [{ type: "text", text: "echo " + ctx.callId }] }; } },
    { name: "hang", timeoutMs: 30, execute(_args, ctx) {
      log.push("hang:" + ctx.callId + ":" + (ctx.signal instanceof AbortSignal));
      return new Promise((resolve) => ctx.signal.addEventListener("abort", () => {
        log.push("aborted:" + ctx.callId);
        ctx.reportProgress([{ type: "text", text: "too late" }]);
        resolve({ content: [{ type: "text", text: "late" }] });
      }));
    } },
  ];
}

const frozen = (v) => typeof v !== "object" || v === null || (Object.isFrozen(v) && Object.values(v).every(frozen));

// Every hook and queue, each logging what it saw; onEvent tries to change a result.
export function controlOptions(log, events) {
  let steered = false;
  return {
    beforeToolCall: async (call, ctx) => {
      log.push(`before:${call.id}:${ctx.step}:${ctx.signal instanceof AbortSignal}:${frozen(call)}:${frozen(ctx.messages)}:${ctx.messages.length}`);
      return call.id === "b" ? { block: true, reason: "no b" } : undefined;
    },
    afterToolCall: (call, result, ctx) => {
      log.push(`after:${call.id}:${ctx.signal.aborted}:${frozen(result)}`);
      return call.id === "a" ? { details: { audited: true } } : undefined;
    },
    prepareRequest: (request, ctx) => {
      log.push(`prepare:${ctx.step}:${frozen(request.messages)}:${request.messages.length}`);
      return { systemPrompt: "prepared " + ctx.step };
    },
    getSteeringMessages: () => (steered ? [] : ((steered = true), [{ role: "user", content: "steer", timestamp: 3 }])),
    onEvent: (e) => {
      events.push(e);
      if (e.type === "tool_end" && e.result.toolCallId === "a") {
        try { e.result.content[0].text = "forged"; } catch (error) { log.push("frozen:" + error.constructor.name); }
      }
    },
  };
}
"##)]
extern "C" {
    #[wasm_bindgen(js_name = controlScript)]
    fn control_script() -> JsValue;
    #[wasm_bindgen(js_name = controlTools)]
    fn control_tools(log: &JsValue) -> Array;
    #[wasm_bindgen(js_name = controlOptions)]
    fn control_options(log: &JsValue, events: &JsValue) -> JsValue;
}

#[wasm_bindgen_test]
async fn hooks_queues_and_a_real_timeout_as_js_functions() {
    let log = Array::new();
    let events = Array::new();
    let model = make_model("eventStream", &control_script());
    let options = control_options(&log, &events);
    set(&options, "context", &context(&user_input()));
    set(&options, "model", &model);
    set(
        &options,
        "tools",
        &registry_with(&control_tools(&log).to_vec()),
    );
    let result = json_of(&run(&options).await.unwrap());

    assert_eq!(result["reason"], "stop", "{result}");
    assert_eq!(
        json_of(&log),
        json!([
            "prepare:1:true:1",
            "before:a:1:true:true:true:2",
            "before:b:1:true:true:true:2",
            "before:h:1:true:true:true:2",
            "run:a",
            "hang:h:true",
            "after:a:false:true",
            "frozen:TypeError",
            "aborted:h",
            "after:h:true:true",
            "prepare:2:true:6"
        ])
    );
    let results: Vec<&Value> = result["messages"].as_array().unwrap()[2..5]
        .iter()
        .collect();
    assert_eq!(
        (&results[0]["content"][0]["text"], &results[0]["details"]),
        (&json!("echo a"), &json!({"audited": true})),
        "afterToolCall's details; the observer's change did not stick"
    );
    assert_eq!(
        (&results[1]["content"][0]["text"], &results[1]["details"]),
        (
            &json!("no b"),
            &json!({"skipped": true, "reason": "blocked"})
        )
    );
    assert_eq!(
        (&results[2]["content"][0]["text"], &results[2]["details"]),
        (
            &json!("Tool call timed out after 30 ms."),
            &json!({"timedOut": true, "timeoutMs": 30})
        )
    );
    assert_eq!(result["messages"][5]["content"], "steer");
    let names = json_of(&names(&events));
    let names: Vec<&str> = names
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(names.contains(&"queued_message"));
    assert!(
        !names.contains(&"tool_progress"),
        "progress after the timeout is dropped"
    );
    let requests = json_of(&get(&model, "requests"));
    assert_eq!(
        (&requests[0]["systemPrompt"], &requests[1]["systemPrompt"]),
        (&json!("prepared 1"), &json!("prepared 2"))
    );
    assert_eq!(
        requests[1]["messages"][2]["content"][0]["text"], "echo a",
        "the next request sees the result, not the observer's change"
    );
}

#[wasm_bindgen_test]
async fn bad_loop_control_options_are_type_errors_and_the_instance_goes_on() {
    let good = || {
        object(&[
            ("context", &context(&user_input())),
            ("model", &make_model("sync", &script())),
            ("tools", &registry_with(&[read_tool(&Array::new())])),
        ])
    };
    for (field, value, expected) in [
        (
            "toolExecution",
            JsValue::from("serial"),
            "options.toolExecution must be \"parallel\" or \"sequential\"",
        ),
        (
            "toolTimeoutMs",
            JsValue::from(0),
            "options.toolTimeoutMs must be a positive integer",
        ),
        (
            "beforeToolCall",
            JsValue::from(1),
            "options.beforeToolCall must be a function",
        ),
        (
            "customRoles",
            JsValue::from("note"),
            "options.customRoles must be an array",
        ),
    ] {
        let options = good();
        set(&options, field, &value);
        let error = run(&options).await.expect_err(field);
        assert_eq!(error_name(&error), "TypeError");
        assert!(
            error_text(&error).starts_with(expected),
            "{}",
            error_text(&error)
        );
    }
    let result = json_of(&run(&good()).await.unwrap());
    assert_eq!(result["reason"], "stop");
}

#[wasm_bindgen(inline_js = r##"
export function approvalScript() {
  return [
    { role: "assistant", content: [
      { type: "toolCall", id: "c1", name: "delete", arguments: { path: "old.log" } },
      { type: "toolCall", id: "c2", name: "peek", arguments: {} },
    ], stopReason: "toolUse", timestamp: 1 },
    { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop", timestamp: 2 },
  ];
}
// `delete` asks for approval of .log files (answering later, as an app's check may); `peek` never does.
export function approvalTools(log) {
  return [
    { name: "delete", needsApproval: (args) => Promise.resolve(args.path.endsWith(".log")),
      execute: async (args) => { log.push("delete " + args.path); return { content: [{ type: "text", text: "deleted" }] }; } },
    { name: "peek", needsApproval: false,
      execute: async () => { log.push("peek"); return { content: [{ type: "text", text: "seen" }] }; } },
  ];
}
export function parsed(json) { return JSON.parse(json); }
export function deeplyFrozen(value) {
  if (typeof value !== "object" || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deeplyFrozen);
}
"##)]
extern "C" {
    #[wasm_bindgen(js_name = approvalScript)]
    fn approval_script() -> JsValue;
    #[wasm_bindgen(js_name = approvalTools)]
    fn approval_tools(log: &JsValue) -> Array;
    fn parsed(json: &str) -> JsValue;
    #[wasm_bindgen(js_name = deeplyFrozen)]
    fn deeply_frozen(value: &JsValue) -> bool;
}

/// SPEC §8 in the browser: a run pauses before anything of a batch with a call that needs approval, its
/// transcript is saved and read back as JSON Lines (as a page would across a reload), and running again
/// from it with the decisions finishes the batch first and goes on.
#[wasm_bindgen_test]
async fn a_run_pauses_for_approval_and_resumes_from_its_saved_transcript() {
    for (decision, expected_log, first_result) in [
        (
            r#"{"c1": {"approve": true}}"#,
            json!(["delete old.log", "peek"]),
            "deleted",
        ),
        (
            r#"{"c1": {"approve": false, "reason": "Keep the logs."}}"#,
            json!(["peek"]),
            "Keep the logs.",
        ),
    ] {
        let log = Array::new();
        let tools = registry_with(&approval_tools(&log).to_vec());
        let model: JsValue = JsScriptedModel::new(approval_script(), JsValue::UNDEFINED)
            .unwrap()
            .into();
        let paused = run(&object(&[
            ("context", &context(&user_input())),
            ("model", &model),
            ("tools", &tools),
        ]))
        .await
        .unwrap();
        let result = json_of(&paused);
        assert_eq!(result["reason"], "paused");
        assert_eq!(result["steps"], 1);
        assert_eq!(
            result["pending"],
            json!([
                {"toolCallId": "c1", "toolName": "delete", "arguments": {"path": "old.log"}, "needsApproval": true},
                {"toolCallId": "c2", "toolName": "peek", "arguments": {}, "needsApproval": false},
            ])
        );
        assert!(deeply_frozen(&get(&paused, "pending")));
        assert_eq!(json_of(&log), json!([]), "nothing of the batch ran");

        let saved = to_jsonl_js(get(&paused, "messages"), JsValue::UNDEFINED).unwrap();
        assert_eq!(saved.as_string().unwrap().lines().count(), 2);
        let restored: JsValue = parse_jsonl_js(saved, JsValue::UNDEFINED).unwrap().into();
        let view = validate_transcript_js(restored.clone(), parsed(r#"{"allowPending": true}"#));
        assert_eq!(
            json_of(&view.unwrap())["pending"],
            json!([{"toolCallId": "c1", "index": 1}, {"toolCallId": "c2", "index": 1}])
        );

        let resumed = run(&object(&[
            ("context", &context(&restored)),
            ("model", &model),
            ("tools", &tools),
            ("approvals", &parsed(decision)),
            ("startSteps", &JsValue::from(1)),
        ]))
        .await
        .unwrap();
        let result = json_of(&resumed);
        assert_eq!(result["reason"], "stop", "{decision}");
        assert_eq!(result["steps"], 2, "steps count on from startSteps");
        assert_eq!(json_of(&log), expected_log, "{decision}");
        let roles: Vec<&str> = (result["messages"].as_array().unwrap().iter())
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["user", "assistant", "toolResult", "toolResult", "assistant"]
        );
        assert_eq!(result["messages"][2]["content"][0]["text"], first_result);
        assert_eq!(result["messages"][3]["content"][0]["text"], "seen");
        let check = validate_transcript_js(get(&resumed, "messages"), JsValue::UNDEFINED);
        assert_eq!(json_of(&check.unwrap())["ok"], true, "{decision}");
    }
}
