// The playground's pure modules, in Node (no browser): scenario data, the editor's checks, transcript
// parsing, the links between events and messages, the decision table, the strings of both languages, and
// the runner's request recording (with the package's Node build).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile, readdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { SCENARIOS, validateDefinition, jsonErrorIndex, parseTranscript, lineOfPath, responsesIn, loneSurrogates } from "../../www/scenarios.js";
import { detectLang, keysOf, textOf } from "../../www/i18n.js";
import { messageKeys, eventKey, pairRows } from "../../www/views.js";
import { DECISION_ROWS, PHASES, decisionRow, whyOf, phaseOf, isSequential } from "../../www/explain.js";
import { orderTrace, traceMessageIndex, buildLinks } from "../../www/links.js";
import { requestDiff, leftOut } from "../../www/panels.js";
import { Run, controlOptions, unansweredCalls } from "../../www/runner.js";
import { releaseParam, readRelease, stateUrl } from "../../www/shareable.js";

const WWW = new URL("../../www/", import.meta.url);

test("every scenario definition passes the editor's own check, and the ids are unique", () => {
  for (const s of SCENARIOS) assert.deepEqual(validateDefinition(s.def), [], s.id);
  assert.equal(new Set(SCENARIOS.map((s) => s.id)).size, SCENARIOS.length);
});

test("the editor's check names the path of each problem", () => {
  const good = structuredClone(SCENARIOS[0].def);
  const paths = (d) => validateDefinition(d).map((e) => e.path);
  assert.deepEqual(paths([]), ["$"]);
  assert.deepEqual(paths({ ...good, extra: 1 }), ["extra"]);
  assert.deepEqual(paths({ ...good, script: [{ ...good.script[0], stopReason: "done" }] }), ["script[0].stopReason"]);
  assert.deepEqual(paths({ ...good, script: [{ ...good.script[0], content: [{ type: "toolCall", id: "", name: "read", arguments: [] }] }] }), [
    "script[0].content[0].id",
    "script[0].content[0].arguments",
  ]);
  assert.deepEqual(paths({ ...good, tools: { read: { delay: -1, gate: "yes", reject: 3, colour: "red" } } }), [
    "tools.read.colour",
    "tools.read.gate",
    "tools.read.delay",
    "tools.read.reject",
  ]);
  assert.deepEqual(paths({ ...good, maxSteps: 1.5, abort: "later", executor: "mine" }), ["executor", "maxSteps", "abort"]);
  assert.deepEqual(paths({ ...good, messages: [{ role: "system", content: "x" }] }), ["messages[0].role"]);
});

test("jsonErrorIndex finds where JSON.parse gives up, and is null exactly when it parses", () => {
  const cases = {
    "{}": null,
    '{"a":[1,2.5e3,true,null,"x\\"y"]}': null,
    '{"script": [}': 12,
    '{"a":1,}': 7,
    '{"a" 1}': 5,
    "[1, 2": 5,
    '"x" y': 4,
    "-01": 2,
    "": 0,
  };
  for (const [source, at] of Object.entries(cases)) {
    assert.equal(jsonErrorIndex(source), at, source);
    let parses = true;
    try {
      JSON.parse(source);
    } catch {
      parses = false;
    }
    assert.equal(at === null, parses, `agrees with JSON.parse on ${source}`);
  }
});

test("a pasted transcript may be a JSON array or JSONL; a bad line is named", () => {
  const a = { role: "user", content: "hi", timestamp: 1 };
  const b = { role: "assistant", content: [], stopReason: "stop", timestamp: 2 };
  assert.deepEqual(parseTranscript(JSON.stringify([a, b])), [a, b]);
  assert.deepEqual(parseTranscript(`${JSON.stringify(a)}\n\n${JSON.stringify(b)}\n`), [a, b]);
  assert.deepEqual(parseTranscript("  "), []);
  assert.throws(() => parseTranscript(`${JSON.stringify(a)}\n{oops`), (err) => err.line === 2);
  assert.throws(() => parseTranscript('{"role":"user"} x'), (err) => err.line === 1);
});

test("the UI language follows the first Chinese or English preference", () => {
  assert.equal(detectLang(["zh-CN"]), "zh");
  assert.equal(detectLang(["fr-FR", "zh-TW", "en"]), "zh");
  assert.equal(detectLang(["en-US", "zh"]), "en");
  assert.equal(detectLang(["fr"]), "en");
  assert.equal(detectLang([]), "en");
});

const call = (id, name = "read") => ({ type: "toolCall", id, name, arguments: {} });
const result = (id, name = "read") => ({ role: "toolResult", toolCallId: id, toolName: name, content: [], isError: false, timestamp: 0 });
const user = { role: "user", content: "go", timestamp: 0 };
const assistant = (...content) => ({ role: "assistant", content, stopReason: "toolUse", timestamp: 0 });

test("an event's key names the message it produced", () => {
  const messages = [user, assistant(call("call-1")), result("call-1"), { ...assistant(), stopReason: "stop" }];
  assert.deepEqual(messageKeys(messages, 1), ["in:0", "a:1", "r:1:call-1", "a:2"]);
  assert.deepEqual(messageKeys(messages, 3), ["in:0", "in:1", "in:2", "a:1"], "imported messages are input");
  assert.equal(eventKey({ type: "model_event", request: 2 }), "a:2");
  assert.equal(eventKey({ type: "assistant_message", request: 1 }), "a:1");
  assert.equal(eventKey({ type: "tool_end", request: 1, callId: "call-1" }), "r:1:call-1");
  assert.equal(eventKey({ type: "turn_end", request: 2 }), null);
});

test("the pairing rows take every kind from validateTranscript's problems, per assistant message", () => {
  const messages = [user, result("early"), assistant(call("a"), call("b"), call("a")), result("b"), result("a"), result("x"), assistant(call("b")), result("b")];
  const problems = [
    { kind: "result_before_call", toolCallId: "early", index: 1 },
    { kind: "duplicate_call_id", toolCallId: "a", index: 2 },
    { kind: "orphan_result", toolCallId: "x", index: 5 },
  ];
  const rows = pairRows(messages, problems);
  assert.deepEqual(
    rows.map((r) => [r.type, r.callId, r.index, r.resultIndex ?? null, r.count ?? 1, r.kinds]),
    [
      ["result", "early", 1, null, 1, ["result_before_call"]],
      ["call", "a", 2, 4, 2, ["duplicate_call_id"]],
      ["call", "b", 2, 3, 1, []],
      ["result", "x", 5, null, 1, ["orphan_result"]],
      ["call", "b", 6, 7, 1, []],
    ],
  );
  // A call the validator says is missing its result stays unpaired, whatever a later message holds.
  const missing = pairRows([user, assistant(call("c")), user, assistant(call("d")), result("c")], [
    { kind: "missing_result", toolCallId: "c", index: 1 },
    { kind: "missing_result", toolCallId: "d", index: 3 },
    { kind: "orphan_result", toolCallId: "c", index: 4 },
  ]);
  assert.deepEqual(missing.map((r) => [r.type, r.callId, r.resultIndex ?? null, r.kinds]), [
    ["call", "c", null, ["missing_result"]],
    ["call", "d", null, ["missing_result"]],
    ["result", "c", null, ["orphan_result"]],
  ]);
});

test("the decision table has SPEC §4's eight rows, and a response falls on the row its stopReason and calls say", () => {
  assert.deepEqual(DECISION_ROWS.map((r) => r.id), ["stop", "stop-calls", "tooluse", "tooluse-repeated-id", "tooluse-no-calls", "length", "error", "aborted"]);
  const reply = (stopReason, ...content) => ({ role: "assistant", content, stopReason, timestamp: 0 });
  const cases = [
    [reply("stop"), "stop"],
    [reply("stop", call("a")), "stop-calls"],
    [reply("toolUse", call("a"), call("b")), "tooluse"],
    [reply("toolUse", call("a"), call("a")), "tooluse-repeated-id"],
    [reply("toolUse"), "tooluse-no-calls"],
    [reply("length"), "length"],
    [reply("length", call("a"), call("a")), "length"],
    [reply("error", call("a")), "error"],
    [reply("aborted"), "aborted"],
  ];
  for (const [message, row] of cases) assert.equal(decisionRow(message)?.id, row, JSON.stringify(message));
  // Every scenario's first response lands on a row.
  for (const s of SCENARIOS) assert.ok(decisionRow(s.def.script[0]), s.id);
});

test("a why-line is keyed by event kind, sub-type and reason, most specific first", () => {
  const skipped = { seq: 4, type: "tool_skipped", request: 1, event: { type: "tool_skipped", result: { toolName: "read", toolCallId: "call-1", details: { skipped: true, reason: "length" } } } };
  const response = { role: "assistant", content: [call("call-1")], stopReason: "length", timestamp: 0 };
  const why = whyOf(skipped, { response });
  assert.deepEqual(why.keys, ["why.tool_skipped.length", "why.tool_skipped"]);
  assert.equal(why.vars.call, "read(call-1)");
  assert.equal(why.vars.row, "length");
  const done = whyOf({ seq: 5, type: "model_event", request: 1, event: { type: "model_event", event: { type: "done", reason: "toolUse" } } });
  assert.deepEqual(done.keys, ["why.model_event.done", "why.model_event"]);
});

test("the trace is placed at its events: a concurrent batch keeps its real start and end order", () => {
  const batch = { role: "assistant", content: [call("slow"), call("fast")], stopReason: "toolUse", timestamp: 0 };
  const messages = [user, batch, result("slow"), result("fast")];
  const keys = messageKeys(messages, 1);
  // As prologueTrace gives it: transcript order, an executed result as tool_start + tool_result.
  const rec = (kind, owner, toolCallId) => ({ seq: 0, kind, owner, detail: "", toolCallId });
  const records = [
    rec("user_message", "user"),
    rec("model_start", "model"),
    rec("assistant_message", "model", "slow,fast"),
    rec("tool_start", "loop", "slow"),
    rec("tool_result", "tool", "slow"),
    rec("tool_start", "loop", "fast"),
    rec("tool_result", "tool", "fast"),
  ].map((r, i) => ({ ...r, seq: i + 1 }));
  assert.deepEqual(traceMessageIndex(records), [0, 1, 1, 2, 2, 3, 3]);
  const ev = (seq, type, extra) => ({ seq, type, request: 1, event: { type, ...extra }, ...extra });
  const events = [
    { seq: 1, type: "model_event", request: 1, event: { type: "model_event", event: { type: "start" } } },
    { seq: 2, type: "assistant_message", request: 1, event: { type: "assistant_message" } },
    ev(3, "tool_start", { callId: "slow" }),
    ev(4, "tool_start", { callId: "fast" }),
    ev(5, "tool_end", { callId: "fast" }),
    ev(6, "tool_end", { callId: "slow" }),
  ];
  const ordered = orderTrace(records, keys, events);
  assert.equal(ordered.fromEvents, true);
  assert.deepEqual(
    ordered.records.map(({ record }) => `${record.seq} ${record.kind} ${record.toolCallId ?? ""}`.trim()),
    ["1 user_message", "2 model_start", "3 assistant_message slow,fast", "4 tool_start slow", "5 tool_start fast", "6 tool_result fast", "7 tool_result slow"],
  );
  // With no events (a pasted transcript) the order is the transcript's.
  const pasted = orderTrace(records, messageKeys(messages, messages.length), []);
  assert.equal(pasted.fromEvents, false);
  assert.deepEqual(pasted.records.map(({ record }) => record.kind), records.map((r) => r.kind));

  // Links: the fast call's group holds its block, its result message, its events and its trace records.
  const rows = pairRows(messages, []);
  const links = buildLinks({ messages, keys, events, rows, trace: ordered });
  assert.deepEqual([...links.related("c:1:fast")].sort(), ["c:1:fast", "e:4", "e:5", "m:3", "t:5", "t:6"]);
  assert.deepEqual([...links.related("e:1")].sort(), ["e:1", "e:2", "m:1", "t:2", "t:3"]);
});

test("an editor error points at the line of the field it names (or of its nearest parent)", () => {
  const source = JSON.stringify({ script: [{ role: "assistant", stopReason: "x", content: [] }], tools: { read: { delay: -1 } } }, null, 2);
  const lineOf = (needle) => source.split("\n").findIndex((l) => l.includes(needle)) + 1;
  assert.equal(lineOfPath(source, "script[0].stopReason"), lineOf('"stopReason"'));
  assert.equal(lineOfPath(source, "tools.read.delay"), lineOf('"delay"'));
  assert.equal(lineOfPath(source, "script[0].timestamp"), lineOf('"role"') - 1, "a missing field: its object's line");
  assert.equal(lineOfPath(source, "messages"), 1);
  assert.equal(lineOfPath("{oops", "script"), 1);
  assert.equal(responsesIn([user, assistant(call("a")), result("a"), assistant()]), 2);
});

test("request N is compared with request N-1: new and changed messages, prompt and tools", () => {
  const first = { systemPrompt: "s", messages: [user], tools: [{ name: "read" }] };
  const second = { systemPrompt: "s", messages: [user, assistant(call("a")), result("a")], tools: [{ name: "read" }] };
  assert.deepEqual(requestDiff(first), { messages: ["input"], system: "same", tools: "same" });
  assert.deepEqual(requestDiff(second, first), { messages: ["same", "new", "new"], system: "same", tools: "same" });
  const rewritten = { systemPrompt: "t", messages: [{ ...user, content: "other" }], tools: [] };
  assert.deepEqual(requestDiff(rewritten, first), { messages: ["changed"], system: "changed", tools: "changed" });
});

test("the runner records each request as the model received it, for any model (not only ScriptedModel)", async () => {
  const require = createRequire(import.meta.url);
  const pkg = require("../../pkg/lesson/node.js");
  const script = SCENARIOS.find((s) => s.id === "readme").def.script;
  // A plain JS model in place of ScriptedModel: the runner wraps whatever `stream` it has.
  class PlainModel {
    constructor(replies) {
      this.replies = structuredClone(replies);
    }
    stream() {
      const message = this.replies.shift();
      return (async function* () {
        yield { type: "start" };
        yield { type: "done", reason: message.stopReason, message };
      })();
    }
    free() {}
  }
  const api = { ...pkg, ScriptedModel: PlainModel };
  const def = structuredClone(SCENARIOS.find((s) => s.id === "readme").def);
  const run = new Run(api, def);
  const finished = new Promise((resolve) => {
    run.onUpdate = () => run.status !== "active" && resolve();
  });
  run.run();
  await finished;
  assert.equal(run.status, "done", run.failure ?? "");
  assert.equal(run.sent.length, 2);
  assert.deepEqual(run.sent[1].messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
  assert.equal(run.sent[1].systemPrompt, def.systemPrompt);
  assert.deepEqual(run.sent[1].tools.map((t) => t.name), ["read"]);
  assert.deepEqual(run.requestOf(1).messages.map((m) => m.role), ["user"], "an earlier request is not changed by later appends");
  assert.deepEqual(run.transcript.at(-1), script[1]);
});

// --- the strings of both languages ------------------------------------------------------------

test("every UI string has a text in both languages, and every key the page asks for exists", async () => {
  const zh = keysOf("zh");
  const en = keysOf("en");
  assert.deepEqual(zh.filter((k) => !en.includes(k)), [], "keys only in Chinese");
  assert.deepEqual(en.filter((k) => !zh.includes(k)), [], "keys only in English");
  for (const k of zh) assert.ok(textOf("zh", k).trim() && textOf("en", k).trim(), `empty text: ${k}`);

  // Literal keys in the page's code and markup.
  const files = (await readdir(WWW)).filter((f) => f.endsWith(".js") || f.endsWith(".html"));
  const used = new Set();
  for (const f of files) {
    const src = await readFile(new URL(f, WWW), "utf8");
    for (const m of src.matchAll(/\bt\("([\w.-]+)"/g)) used.add(m[1]);
    for (const m of src.matchAll(/data-i18n(?:-title|-aria)?="([\w.-]+)"/g)) used.add(m[1]);
  }
  assert.ok(used.size > 50, `found the page's keys (${used.size})`);
  for (const k of used) assert.ok(zh.includes(k), `missing key: ${k}`);

  // Keys built from data: each kind, reason and row the package or the table can produce.
  const dts = await readFile(new URL("../../src/wasm/api/types.d.ts", import.meta.url), "utf8");
  const union = (name) => [...dts.match(new RegExp(`type ${name} = ([^;]+);`))[1].matchAll(/"([\w-]+)"/g)].map((m) => m[1]);
  const families = [
    ...union("TranscriptProblemKind").map((k) => `kind.${k}`),
    ...union("SkipReason").flatMap((r) => [`skip.${r}`, `why.tool_skipped.${r}`]),
    ...union("RunReason").flatMap((r) => [`reason.${r}`, `why.turn_end.${r}`]),
    ...union("TraceOwner").map((o) => `owner.${o}`),
    ...DECISION_ROWS.flatMap((r) => [`dt.calls.${r.calls}`, `dt.runs.${r.runs}`, `dt.appended.${r.appended}`, `why.assistant_message.${r.id}`]),
    ...["running", "gated", "finished", "rejected"].flatMap((s) => [`tools.state.${s}`, `pairing.${s}`]),
    ...["start", "text_delta", "thinking_delta", "toolcall_delta", "toolcall_end", "done", "error"].map((s) => `why.model_event.${s}`),
    ...["model_event", "model_event.end", "assistant_message", "tool_start", "tool_progress", "tool_end", "tool_skipped", "turn_end"].map((s) => `wait.${s}`),
  ];
  const src = await readFile(new URL("scenarios.js", WWW), "utf8");
  for (const m of src.matchAll(/code: "(\w+)"/g)) families.push(`def.${m[1]}`);
  for (const k of families) assert.ok(zh.includes(k), `missing key: ${k}`);
});

test("Chinese strings use full-width punctuation next to Chinese text", () => {
  const han = "\\p{Script=Han}";
  const halfWidth = new RegExp(`${han}[(),:;!?]|[(),:;!?]${han}|${han} [(:;]`, "u");
  const bad = keysOf("zh").filter((k) => halfWidth.test(textOf("zh", k)));
  assert.deepEqual(bad.map((k) => `${k}: ${textOf("zh", k)}`), []);
  const scenarioTexts = SCENARIOS.flatMap((s) => [s.title.zh, s.about.zh]);
  assert.deepEqual(scenarioTexts.filter((x) => halfWidth.test(x)), [], "the scenarios' Chinese titles and descriptions");
});

// --- SPEC part two: the page's own scenarios and the data that stands for hooks and queues -----------------------

test("the editor's check names the path of each problem in the part-two fields", () => {
  const good = structuredClone(SCENARIOS.find((s) => s.id === "readme").def);
  const paths = (d) => validateDefinition(d).map((e) => e.path);
  assert.deepEqual(
    paths({
      ...good,
      toolExecution: "later",
      toolTimeoutMs: 0,
      hooks: { beforeToolCall: { block: "delete" }, prepareRequest: { keepTurns: 0 }, afterToolCall: {} },
      steering: [{ role: "user", content: "x" }],
      followUp: [[{ role: "assistant", content: [], stopReason: "stop" }]],
      customRoles: ["user"],
      approvals: { "call-1": { approve: "yes" } },
      startSteps: -1,
    }),
    ["customRoles", "toolExecution", "toolTimeoutMs", "startSteps", "hooks.afterToolCall", "hooks.beforeToolCall", "hooks.prepareRequest", "steering", "followUp[0][0].role", "approvals.call-1"],
  );
  assert.deepEqual(paths({ ...good, tools: { read: { executionMode: "one", timeoutMs: 1.5, terminate: 1, needsApproval: "no" } } }), [
    "tools.read.executionMode",
    "tools.read.timeoutMs",
    "tools.read.terminate",
    "tools.read.needsApproval",
  ]);
  // A custom role named in customRoles may stand in the input and in a queue; another unknown role may not.
  const custom = { role: "notification", content: "x", timestamp: 1 };
  assert.deepEqual(paths({ ...good, customRoles: ["notification"], messages: [custom], steering: [[custom]] }), []);
  assert.deepEqual(paths({ ...good, messages: [custom] }), ["messages[0].role"]);
});

test("hooks and queues as data become the functions runAgentLoop takes", () => {
  const def = SCENARIOS.find((s) => s.id === "blocked").def;
  const seen = [];
  const options = controlOptions(def, (request) => seen.push(request.messages.length));
  assert.deepEqual(options.beforeToolCall({ name: "delete", id: "a", arguments: {} }), { block: true, reason: "delete is not allowed in the playground." });
  assert.equal(options.beforeToolCall({ name: "read", id: "b", arguments: {} }), undefined);
  assert.equal(options.prepareRequest({ messages: [{ role: "user", content: "x" }] }, {}), undefined, "no prepareRequest in the data: the request is kept");
  assert.deepEqual(seen, [1], "every request is seen");

  const trim = controlOptions(SCENARIOS.find((s) => s.id === "prepare-request").def);
  const input = SCENARIOS.find((s) => s.id === "prepare-request").def.messages;
  assert.deepEqual(trim.prepareRequest({ messages: input }, {}), { messages: input.slice(4) }, "from the last user message on");
  assert.equal(trim.prepareRequest({ messages: input.slice(4) }, {}), undefined, "nothing older to leave out");

  const queues = controlOptions({ ...def, steering: [[{ role: "user", content: "a" }], [{ role: "user", content: "b" }]] });
  assert.deepEqual([queues.getSteeringMessages(), queues.getSteeringMessages(), queues.getSteeringMessages()].map((l) => l.map((m) => m.content)), [["a"], ["b"], []]);
  assert.equal(queues.getFollowUpMessages, undefined, "a queue the data does not name is not given");
  assert.deepEqual(Object.keys(controlOptions({ ...def, toolExecution: "sequential", toolTimeoutMs: 5, customRoles: ["n"], approvals: {}, startSteps: 2 })).sort(), [
    "approvals", "beforeToolCall", "customRoles", "prepareRequest", "startSteps", "toolExecution", "toolTimeoutMs",
  ]);
});

test("a run starts from the unanswered calls of the last message; the inspector names what a request left out", () => {
  const call = (id) => ({ type: "toolCall", id, name: "read", arguments: {} });
  const result = (id) => ({ role: "toolResult", toolCallId: id, toolName: "read", content: [], isError: false, timestamp: 3 });
  const asked = { role: "assistant", content: [call("a"), call("b"), call("c")], stopReason: "toolUse", timestamp: 2 };
  const pkg = createRequire(import.meta.url)("../../pkg/node/tiny_pi.js");
  const asking = { role: "user", content: "x", timestamp: 1 };
  assert.deepEqual(unansweredCalls(pkg, [asking, asked, result("b")]).map((c) => c.id), ["a", "c"]);
  assert.deepEqual(unansweredCalls(pkg, [asking, asked, result("a"), result("b"), result("c")]), []);
  // The package's paused view decides (SPEC §8), not a rule of the page's: calls with a user message after them
  // are missing results, not pending; a custom-role message after them is no turn.
  assert.deepEqual(unansweredCalls(pkg, [asking, asked, result("b"), { role: "user", content: "y", timestamp: 4 }]), []);
  const noted = [asking, asked, { role: "note", text: "n", timestamp: 3 }];
  assert.deepEqual(unansweredCalls(pkg, noted, ["note"]).map((c) => c.id), ["a", "b", "c"]);
  assert.deepEqual(unansweredCalls(pkg, noted), [], "a transcript the package refuses has nothing pending");
  assert.equal(unansweredCalls(pkg, [asked])[0], asked.content[0], "the call objects themselves");

  const user = { role: "user", content: "x", timestamp: 1 };
  const note = { role: "notification", content: "y", timestamp: 2 };
  assert.deepEqual(leftOut([user, note, asked, user], [asked, user], ["notification"]), [
    { index: 0, role: "user", reason: "prepareRequest" },
    { index: 1, role: "notification", reason: "custom" },
  ]);
});

test("a batch's phase and whether it runs one call at a time are read off the events and the definition", () => {
  const ev = (event) => ({ event, type: event.type });
  const skipped = (reason) => ev({ type: "tool_skipped", result: { details: { skipped: true, reason } } });
  assert.deepEqual(PHASES.map((p) => p.id), ["approve", "prepare", "execute", "finish", "checks"]);
  assert.deepEqual(
    [skipped("denied"), skipped("blocked"), skipped("length"), ev({ type: "tool_start" }), ev({ type: "tool_end" }), ev({ type: "queued_message", queue: "steering" }), ev({ type: "queued_message", queue: "followUp" }), ev({ type: "turn_end", reason: "terminated" }), ev({ type: "turn_end", reason: "paused" }), ev({ type: "turn_end", reason: "stop" })].map(phaseOf),
    ["approve", "prepare", null, "execute", "finish", "checks", null, "checks", "approve", null],
  );
  const def = SCENARIOS.find((s) => s.id === "sequential").def;
  assert.equal(isSequential(def, [{ name: "read" }]), false);
  assert.equal(isSequential(def, [{ name: "read" }, { name: "write" }]), true, "a tool registered sequential makes its batch sequential");
  assert.equal(isSequential({ ...def, toolExecution: "sequential" }, [{ name: "read" }]), true);
});

test("each of the page's own scenarios runs to the counts it states, through the runner and the package's Node build", async () => {
  const require = createRequire(import.meta.url);
  const pkg = require("../../pkg/lesson/node.js");
  const own = JSON.parse(await readFile(new URL("scenarios.json", WWW), "utf8")).cases.map((c) => c.id);
  assert.deepEqual(own, ["blocked", "sequential", "timeout", "terminate", "steering", "follow-up", "prepare-request", "notification", "approval", "budget", "retry", "compaction"]);
  for (const id of own) {
    const scenario = SCENARIOS.find((s) => s.id === id);
    const run = new Run(pkg, structuredClone(scenario.def));
    const finished = new Promise((resolve) => {
      run.onUpdate = () => {
        // Open every gate as it waits, except the one the timeout scenario leaves to its timer.
        for (const x of run.execs) if (x.state === "gated" && id !== "timeout") run.release(x);
        if (run.status === "done" || run.status === "failed") resolve();
      };
    });
    run.run();
    await finished;
    assert.equal(run.failure, null, id);
    const { reason, steps, requests, executions } = run;
    assert.deepEqual({ reason, steps, requests, executions, messages: run.transcript.length }, scenario.expect, id);
    assert.equal(run.mismatch, false, `${id}: the transcript the page derives from the events is the result's`);
  }
});

// --- issue 29: the page teaches --------------------------------------------------------------------------------

test("a message's fields: every one but role and content, the pairing key first; tokens from usage only", async () => {
  const { messageFields, tokensOf } = await import("../../www/panels.js");
  const result = { role: "toolResult", toolCallId: "call-1", toolName: "read", content: [], details: { skipped: true, reason: "length" }, isError: true, timestamp: 3, extra: 1 };
  assert.deepEqual(messageFields(result), [["toolCallId", "call-1"], ["toolName", "read"], ["isError", "true"], ["details", '{"skipped":true,"reason":"length"}'], ["timestamp", "3"], ["extra", "1"]]);
  const assistant = { role: "assistant", content: [], stopReason: "toolUse", usage: { input: 1, output: 2, totalTokens: 3, cost: { total: 0.5 } }, timestamp: 2 };
  assert.deepEqual(messageFields(assistant).map(([k]) => k), ["stopReason", "usage", "timestamp"]);
  assert.deepEqual(tokensOf(assistant), { input: 1, output: 2, totalTokens: 3, cost: 0.5 });
  assert.equal(tokensOf({ role: "assistant" }), null, "no usage, no tokens");
  assert.deepEqual(tokensOf({ usage: { input: "x", totalTokens: Number.NaN, output: 4 } }), { output: 4 }, "a field that is no finite number is left out");
});

test("the waterfall is read off the events and their times: a bar per request and per executed call", async () => {
  const { waterfallRows } = await import("../../www/views.js");
  const rec = (seq, request, event) => ({ seq, type: event.type, request, event });
  const call = (id) => ({ type: "toolCall", id, name: "read", arguments: {} });
  const events = [
    rec(1, 1, { type: "model_event", event: { type: "start" } }),
    rec(2, 1, { type: "assistant_message", message: { stopReason: "toolUse", usage: { totalTokens: 9 } } }),
    rec(3, 1, { type: "tool_start", call: call("a") }),
    rec(4, 1, { type: "tool_start", call: call("b") }),
    rec(5, 1, { type: "tool_end", result: { toolCallId: "b", isError: false } }),
    rec(6, 1, { type: "tool_end", result: { toolCallId: "a", isError: true } }),
    rec(7, 2, { type: "model_event", event: { type: "start" } }),
  ];
  const rows = waterfallRows(events, [0, 5, 6, 7, 20, 30, 31], 40);
  assert.deepEqual(
    rows.map((r) => [r.kind, r.call ?? r.request, r.start, r.end, r.open ?? false]),
    [["request", 1, 0, 5, false], ["call", "a", 6, 30, false], ["call", "b", 7, 20, false], ["request", 2, 31, 40, true]],
  );
  assert.equal(rows[0].usage.totalTokens, 9);
  assert.equal(rows[1].isError, true);
});

test("English scenario data: every course string the scenarios hold has its English text, and nothing else changes", async () => {
  const { localizeDef } = await import("../../www/scenarios.js");
  const cjk = /[\u3400-\u9fff]/;
  for (const s of SCENARIOS) {
    const en = localizeDef(s.def, "en");
    assert.doesNotMatch(JSON.stringify(en), cjk, `${s.id}: a string left in Chinese`);
    assert.equal(en.systemPrompt, s.def.systemPrompt, `${s.id}: the English system prompt is the original`);
    assert.deepEqual(validateDefinition(en), [], s.id);
    // The same shape: only string values differ.
    const shape = (v) => (typeof v === "string" ? "s" : Array.isArray(v) ? v.map(shape) : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)])) : v);
    assert.deepEqual(shape(en), shape(s.def), s.id);
  }
});

test("Chinese scenario data: the system prompt and the tool descriptions (written in English) are shown in Chinese; the rest is the original", async () => {
  // The zh page shows the scenarios' system prompt and tool descriptions in Chinese, like the course's own words.
  const { localizeDef } = await import("../../www/scenarios.js");
  const cjk = /[\u3400-\u9fff]/;
  const english = /[A-Za-z]{3,} [A-Za-z]{3,}/; // an English phrase (names such as tiny-pi, README or agent may stay)
  for (const s of SCENARIOS) {
    const zh = localizeDef(s.def, "zh");
    assert.match(zh.systemPrompt, cjk, `${s.id}: the system prompt in Chinese`);
    assert.doesNotMatch(zh.systemPrompt, english, `${s.id}: ${zh.systemPrompt}`);
    for (const [name, tool] of Object.entries(zh.tools)) {
      if (tool.description === undefined) continue;
      assert.match(tool.description, cjk, `${s.id}: tool ${name}'s description in Chinese`);
      assert.doesNotMatch(tool.description, english, `${s.id}: ${tool.description}`);
    }
    // Nothing else changes: the course's own words are already Chinese, and the kit checks the originals.
    const without = (def) => ({ ...def, systemPrompt: null, tools: Object.fromEntries(Object.entries(def.tools).map(([n, b]) => [n, { ...b, description: null }])) });
    assert.deepEqual(without(zh), without(s.def), `${s.id}: only the system prompt and tool descriptions change`);
    assert.deepEqual(validateDefinition(zh), [], s.id);
  }
});

test("the chapter's steps: each kit case names one, part-two scenarios none of the chapter's, only repeated-id is optional", async () => {
  const { ROW_STEP, STEPS, isPartTwo } = await import("../../www/explain.js");
  for (const s of SCENARIOS) {
    if (s.part === "chapter") {
      assert.ok(STEPS.includes(s.step), `${s.id}: step ${s.step}`);
      assert.equal(isPartTwo(s.def), false, `${s.id} is the chapter's`);
      assert.ok(s.rule?.zh && s.rule?.en, `${s.id}: its rule in both languages`);
    } else {
      assert.equal(s.step, "two");
      assert.equal(isPartTwo(s.def), true, `${s.id} uses what the chapter does not teach`);
    }
  }
  assert.deepEqual(SCENARIOS.filter((s) => s.optional).map((s) => s.id), ["repeated-id"]);
  for (const row of DECISION_ROWS) assert.ok(STEPS.includes(ROW_STEP[row.id]), row.id);
});

test("a learner's files: the entry is the one exporting runAgentLoop, relative imports resolve as Node and TypeScript find them", async () => {
  const { importsOf, resolveIn, entryOf } = await import("../../www/loopcheck.js");
  assert.deepEqual(importsOf(`import { a } from "./a.js";\nimport "./side";\nexport * from "../b";\nconst c = await import("./c.mjs");\nimport type { T } from "./types";`), ["./a.js", "./side", "../b", "./c.mjs", "./types"]);
  const files = new Map([["src/agent-loop.ts", "export function runAgentLoop() {}"], ["src/executor.ts", ""], ["src/lib/index.js", ""], ["other.mjs", "export { runAgentLoop } from './src/agent-loop';"]]);
  assert.equal(resolveIn(files, "src/agent-loop.ts", "./executor.js"), "src/executor.ts", "a .js import of a .ts file");
  assert.equal(resolveIn(files, "src/agent-loop.ts", "./lib"), "src/lib/index.js");
  assert.equal(resolveIn(files, "src/agent-loop.ts", "../other.mjs"), "other.mjs");
  assert.equal(resolveIn(files, "src/agent-loop.ts", "./missing"), null);
  assert.equal(entryOf(files), "src/agent-loop.ts", "two export it: the one named agent-loop");
  assert.equal(entryOf(new Map([["x.js", "const y = 1;"]])), null);
});

// --- SPEC part three: budgets, retries, compaction on the page ------------------------------------------------

test("the editor's check names the path of each problem in the part-three fields; a compaction entry may stand in the input", () => {
  const good = structuredClone(SCENARIOS.find((s) => s.id === "readme").def);
  const paths = (d) => validateDefinition(d).map((e) => `${e.path} ${e.code}`);
  assert.deepEqual(paths({ ...good, budget: { maxTokens: 0, maxCost: Number.NaN, max: 1 } }), ["budget.maxTokens positive", "budget.maxCost positive", "budget.max unknownField"]);
  assert.deepEqual(paths({ ...good, retry: { maxRetries: 1.5, baseDelayMs: -1, maxDelayMs: 120000 } }), ["retry.maxRetries nonNegInt", "retry.baseDelayMs delay", "retry.maxDelayMs delay"]);
  assert.deepEqual(paths({ ...good, compaction: { keepRecentTokens: 10 } }), ["compaction.maxContextTokens required", "compaction.summary required"]);
  assert.deepEqual(paths({ ...good, compaction: { maxContextTokens: 100, summary: 3 } }), ["compaction.summary string"]);
  assert.deepEqual(paths({ ...good, budget: [] }), ["budget object"]);
  const entry = { role: "compaction", summary: "s", firstKeptIndex: 0, tokensBefore: 9, timestamp: 2 };
  assert.deepEqual(paths({ ...good, messages: [good.messages[0], entry] }), []);
  assert.deepEqual(paths({ ...good, messages: [{ ...entry, summary: null, firstKeptIndex: -1 }] }), ["messages[0].summary string", "messages[0].firstKeptIndex nonNegInt"]);
  assert.deepEqual(paths({ ...good, customRoles: ["compaction"] }), ["customRoles customRoles"], "compaction is a built-in role");
});

test("part three's options as runAgentLoop takes them: budget and retry as they are, compaction with the page's summarizer", async () => {
  const def = SCENARIOS.find((s) => s.id === "compaction").def;
  const options = controlOptions({ ...def, budget: { maxTokens: 5 }, retry: { maxRetries: 1 } });
  assert.deepEqual(options.budget, { maxTokens: 5 });
  assert.deepEqual(options.retry, { maxRetries: 1 });
  assert.deepEqual(Object.keys(options.compaction).sort(), ["keepRecentTokens", "maxContextTokens", "summarize"]);
  assert.equal(await options.compaction.summarize([], { signal: new AbortController().signal }), def.compaction.summary);
});

test("a retried request: its attempts, the dropped response's events, the same request sent again, the script's response per request", async () => {
  const require = createRequire(import.meta.url);
  const pkg = require("../../pkg/lesson/node.js");
  const run = new Run(pkg, structuredClone(SCENARIOS.find((s) => s.id === "retry").def));
  await new Promise((resolve) => {
    run.onUpdate = () => (run.status === "done" || run.status === "failed") && resolve();
    run.run();
  });
  assert.deepEqual(run.calls, [{ request: 1, attempt: 1 }, { request: 1, attempt: 2, same: true }, { request: 2, attempt: 1 }]);
  assert.equal(run.sent.length, 2, "a retried request is recorded once");
  assert.deepEqual([run.attemptsOf(1), run.attemptsOf(2), run.scriptIndexOf(1), run.scriptIndexOf(2)], [2, 1, 1, 2]);
  const starts = run.events.filter((r) => r.type === "model_event" && r.event.event?.type === "start");
  assert.deepEqual(starts.map((r) => [r.request, r.attempt, r.dropped ?? false]), [[1, 1, true], [1, 2, false], [2, 1, false]]);
  assert.deepEqual(run.events.filter((r) => r.dropped).map((r) => r.event.event.type), ["start", "text_delta", "toolcall_delta", "toolcall_end", "error"]);
  const retry = run.events.find((r) => r.type === "retry");
  assert.deepEqual([retry.request, retry.attempt, retry.event.delayMs], [1, 1, 1000]);
  assert.ok(run.goneOn[retry.seq - 1] !== undefined, "not held: the loop went on at once");
  assert.equal(run.result.retries, 1);
  assert.equal(run.mismatch, false);
});

test("the waterfall of a retry: a bar per attempt, the failed one's usage from its error event, the wait from when the loop went on", async () => {
  const { waterfallRows } = await import("../../www/views.js");
  const rec = (seq, request, event, extra = {}) => ({ seq, type: event.type, request, event, ...extra });
  const events = [
    rec(1, 1, { type: "model_event", event: { type: "start" } }, { attempt: 1, dropped: true }),
    rec(2, 1, { type: "model_event", event: { type: "error", error: { usage: { totalTokens: 7 } } } }, { attempt: 1, dropped: true }),
    rec(3, 1, { type: "retry", attempt: 1, delayMs: 1000, error: "503" }, { attempt: 1 }),
    rec(4, 1, { type: "model_event", event: { type: "start" } }, { attempt: 2 }),
    rec(5, 1, { type: "assistant_message", message: { stopReason: "stop", usage: { totalTokens: 9 } } }),
  ];
  const times = [0, 10, 20, 1500, 1600];
  const rows = waterfallRows(events, times, 1700, [0, 10, 400, 1500, 1600]);
  assert.deepEqual(
    rows.map((r) => [r.kind, r.attempt, r.start, r.end, r.failed ?? false, r.usage?.totalTokens ?? null]),
    [["request", 1, 0, 20, true, 7], ["wait", 1, 400, 1500, false, null], ["request", 2, 1500, 1600, false, 9]],
  );
  // Held at the retry event: the loop has not begun to wait, so there is no wait yet.
  const held = waterfallRows(events.slice(0, 3), times, 30, [0, 10, undefined]);
  assert.deepEqual(held.map((r) => r.kind), ["request"]);
});

test("a compacted request: the summary is its first message, and what it left out is named (compacted, the entry, a custom role)", async () => {
  const { summaryEntry, SUMMARY_PREFIX } = await import("../../www/panels.js");
  const msg = (role, text, timestamp) => ({ role, content: text, timestamp });
  const entry = { role: "compaction", summary: "read README", firstKeptIndex: 2, tokensBefore: 90, timestamp: 5 };
  const note = { role: "notification", content: "n", timestamp: 4 };
  const transcript = [msg("user", "a", 1), msg("assistant-less", "", 2), msg("user", "b", 3), note, entry];
  transcript[1] = { role: "assistant", content: [{ type: "text", text: "x" }], stopReason: "stop", timestamp: 2 };
  const summary = { role: "user", content: [{ type: "text", text: SUMMARY_PREFIX + entry.summary }], timestamp: 5 };
  const request = { messages: [summary, transcript[2]] };
  assert.equal(summaryEntry(transcript, request), 4);
  assert.equal(summaryEntry(transcript, { messages: [transcript[2]] }), -1, "no summary first");
  assert.equal(summaryEntry(transcript.slice(0, 4), request), -1, "no entry");
  assert.deepEqual(leftOut(transcript, request.messages, ["notification"]), [
    { index: 0, role: "user", reason: "compacted", entry: 4 },
    { index: 1, role: "assistant", reason: "compacted", entry: 4 },
    { index: 3, role: "notification", reason: "custom" },
    { index: 4, role: "compaction", reason: "compaction" },
  ]);
});

test("part three's why-lines and the steps around the table are read off the events", async () => {
  const { aroundOf, isPartThree, AROUND } = await import("../../www/explain.js");
  const retry = { seq: 6, type: "retry", request: 1, attempt: 1, event: { type: "retry", attempt: 1, delayMs: 1000, error: "503" } };
  const why = whyOf(retry, { retry: { maxRetries: 2 } });
  assert.deepEqual(why.keys, ["why.retry"]);
  assert.deepEqual([why.vars.attempt, why.vars.delayMs, why.vars.error, why.vars.maxRetries], [1, 1000, "503", 2]);
  const again = { seq: 7, type: "model_event", request: 1, attempt: 2, event: { type: "model_event", event: { type: "start" } } };
  assert.deepEqual(whyOf(again).keys, ["why.model_event.start.retry", "why.model_event.start", "why.model_event"]);
  const failed = { seq: 5, type: "model_event", request: 1, attempt: 1, dropped: true, event: { type: "model_event", event: { type: "error", reason: "error" } } };
  assert.deepEqual(whyOf(failed, { retry: { maxRetries: 2 } }).keys, ["why.model_event.error.retry", "why.model_event.dropped", "why.model_event.error", "why.model_event"]);
  const compaction = { seq: 1, type: "compaction", request: 0, entryIndex: 5, event: { type: "compaction", entry: { firstKeptIndex: 3, tokensBefore: 250 } } };
  const c = whyOf(compaction, { compaction: { maxContextTokens: 200 }, index: 5 });
  assert.deepEqual([c.keys, c.vars.n, c.vars.k, c.vars.keep, c.vars.index, c.vars.tokensBefore], [["why.compaction"], 1, 3, 100, 5, 250]);
  const end = { seq: 17, type: "turn_end", request: 2, event: { type: "turn_end", reason: "budget", steps: 2 } };
  const b = whyOf(end, { usage: { totalTokens: 2600, cost: 0 }, budget: { maxTokens: 2000 } });
  assert.deepEqual([b.keys[0], b.vars.total, b.vars.maxTokens], ["why.turn_end.budget", 2600, 2000]);
  assert.deepEqual([retry, failed, compaction, end, again].map(aroundOf), ["retry", "retry", "compaction", "budget", null]);
  assert.equal(phaseOf(end), "checks");
  assert.deepEqual(AROUND.map((a) => a.id), ["compaction", "retry", "budget"]);
  assert.deepEqual(["budget", "retry", "compaction", "readme", "blocked"].map((id) => isPartThree(SCENARIOS.find((s) => s.id === id).def)), [true, true, true, false, false]);
});

// --- input the page must survive ----------------------------------------------------------------

test("JSON nested deeper than the call stack: the editor's helpers need no recursion, and the check names the field", () => {
  assert.equal(jsonErrorIndex("[".repeat(20000)), 20000, "where the deep text stops");
  assert.equal(jsonErrorIndex(`${"[".repeat(20000)}${"]".repeat(20000)}`), null);
  const good = structuredClone(SCENARIOS[0].def);
  const withDetails = (def, depth) => JSON.stringify({ ...def, tools: { read: { ...def.tools.read, details: "@@" } } }, null, 2).replace('"@@"', "[".repeat(depth) + "]".repeat(depth));
  const deep = withDetails(good, 20000);
  const lines = deep.split("\n");
  assert.equal(lineOfPath(deep, "tools.read.details"), lines.findIndex((l) => l.includes('"details"')) + 1);
  const bad = withDetails({ ...good, maxSteps: -1 }, 20000);
  assert.equal(lineOfPath(bad, "maxSteps"), bad.split("\n").findIndex((l) => l.includes('"maxSteps"')) + 1);
  // 128 levels counted from the definition (the package reads no deeper).
  assert.deepEqual(validateDefinition(JSON.parse(deep)), [{ path: "tools.read.details", code: "tooDeep", vars: { max: 128 } }]);
  assert.deepEqual(validateDefinition(JSON.parse(withDetails(good, 125))), []);
  assert.deepEqual(validateDefinition(JSON.parse(withDetails(good, 126))).map((e) => e.path), ["tools.read.details"]);
  const nested = (n) => JSON.parse(`${"[".repeat(n)}${"]".repeat(n)}`);
  assert.deepEqual(validateDefinition({ ...good, messages: [nested(5000)] }).map((e) => e.path), ["messages[0]"]);
  let args = {};
  const top = args;
  for (let i = 0; i < 300; i++) args = args.a = {};
  const script = [{ role: "assistant", stopReason: "toolUse", content: [{ type: "toolCall", id: "c", name: "read", arguments: top }] }];
  assert.deepEqual(validateDefinition({ ...good, script }).map((e) => e.path), ["script[0].content[0].arguments"]);
});

test("jsonErrorIndex checks escapes as JSON.parse does; a pasted array's error names the line it is on", () => {
  for (const [source, at] of [[String.raw`"a\qb"`, 3], [String.raw`"a\u12x4"`, 6], [String.raw`"a\u12"`, 6], [String.raw`"\u00e9\n\/"`, null]]) {
    assert.equal(jsonErrorIndex(source), at, source);
    const v8 = (() => {
      try {
        JSON.parse(source);
        return null;
      } catch (err) {
        return Number(/position (\d+)/.exec(err.message)?.[1]);
      }
    })();
    assert.equal(at, v8, `the position V8 gives for ${source}`);
  }
  assert.throws(() => parseTranscript('[\n{"role": "user"},\n\n  }]'), (err) => err.line === 4);
  assert.throws(() => parseTranscript('\n\n[\n{"role": "user", "content": "a\\qb"}]'), (err) => err.line === 4);
});

test("a release order round-trips through the address whatever its ids hold; old links read as before", () => {
  const order = ["c", "a,b", "50%", "%2C", "call-1"];
  const href = stateUrl("http://x/?scenario=readme", { release: order });
  assert.deepEqual(readRelease(new URL(href).searchParams.get("release")), order);
  assert.equal(releaseParam(["call-1", "call-2"]), "call-1,call-2", "plain ids are written as before");
  assert.deepEqual(readRelease("fast-call,slow-call"), ["fast-call", "slow-call"]);
  assert.deepEqual(readRelease(""), []);
});

test("a lone surrogate anywhere in a script is refused at its field (the package would refuse the whole run); the fork's words stay its own", () => {
  const def = structuredClone(SCENARIOS.find((s) => s.id === "readme").def);
  def.script[0].content[0].text = "half \ud800";
  def.tools.read.description = "x\udfff";
  assert.deepEqual(validateDefinition(def), [
    { path: "script[0].content[0].text", code: "surrogate", vars: { code: "\\ud800" } },
    { path: "tools.read.description", code: "surrogate", vars: { code: "\\udfff" } },
  ]);
  // A key is named by its value's path, and the line of a path is found in the editor's text.
  const keyed = { ...structuredClone(SCENARIOS[0].def), tools: { "re\udc00d": {} } };
  assert.deepEqual(validateDefinition(keyed).filter((e) => e.code === "surrogate").map((e) => e.path), ["tools.re\udc00d"]);
  const source = JSON.stringify(def, null, 2);
  assert.equal(source.split("\n")[lineOfPath(source, "script[0].content[0].text") - 1].trim(), '"text": "half \\ud800"');
  // The walker the fork's form uses: the first, in the order of the JSON text, keys included; a pair is no surrogate.
  assert.deepEqual(loneSurrogates({ a: ["ok", "\ud83d\ude00"], ["k\udc00"]: "\ud800" }), [{ path: "k\udc00", code: "\\udc00" }, { path: "k\udc00", code: "\\ud800" }]);
  assert.deepEqual(loneSurrogates({ a: "\ud800", b: "\ud801" }, { first: true }), [{ path: "a", code: "\\ud800" }]);
});

test("a message that is not an object gets a key, and the views' helpers read it without throwing", () => {
  assert.deepEqual(messageKeys([user, null, 3, "x"], 1), ["in:0", "m:1", "m:2", "m:3"]);
});

test("stepping through a learner's loop that emitted something that is no event: the replay stops there and says why", async () => {
  const api = createRequire(import.meta.url)("../../pkg/lesson/node.js");
  const def = structuredClone(SCENARIOS.find((s) => s.id === "plain-stop").def);
  const replay = { events: [{ type: "model_event", event: { type: "start" } }, null, { type: "turn_end", reason: "stop", steps: 1 }], requests: [{ messages: def.messages }], result: null };
  const run = new Run(api, def, { replay });
  const settled = new Promise((resolve) => {
    run.onUpdate = () => run.status !== "active" && resolve();
  });
  run.run();
  await settled;
  assert.equal(run.status, "failed");
  assert.deepEqual(run.stopped, { seq: 2, got: "null" });
  assert.equal(run.events.length, 1, "the events before it are kept");
});

/** What the replay tests use: the kit (its cases and `checkCase`), the reference loop, the replay's module and the
 * page's words (with a stand-in `document`, as the page modules need one). */
async function replayKit() {
  const { checkCase } = await import("../../www/conformance/check.js");
  const { createLoop } = await import("../conformance/reference-loop.mjs");
  const { replayDifference } = await import("../../www/replay-difference.js");
  const { setLang, t } = await import("../../www/i18n.js");
  globalThis.document ??= { documentElement: {} };
  const kit = (await import("../../www/conformance/cases.json", { with: { type: "json" } })).default.cases;
  return { checkCase, createLoop, replayDifference, setLang, t, kit };
}

test("a learner's loop stepped through: the why-line at the first difference says what that loop did there and what the correct loop does", async () => {
  // The why-line at a replayed loop's first difference: what each loop did there, and how the two relate.
  const { checkCase, createLoop, replayDifference, setLang, t, kit } = await replayKit();
  // As the page says it (app.js's differenceText): the fields that differ joined in the language's way.
  const say = ({ key, vars, parts }) => {
    const part = (p) => (p ? t(p.key, p.vars) : "");
    const fields = Array.isArray(vars.fields) ? { fields: vars.fields.join(t("diff.fieldSeparator")) } : {};
    return t(key, { ...vars, ...fields, actual: part(parts.actual), expected: part(parts.expected), actualNote: part(parts.actualNote), expectedNote: part(parts.expectedNote) });
  };
  const differenceOf = async (id, bug) => {
    const kase = kit.find((c) => c.id === id);
    const loop = typeof bug === "function" ? bug : createLoop(bug ? { [bug]: true } : {});
    const report = await checkCase(loop, kase, { record: true });
    return { d: replayDifference(kase, report.run, { failed: !report.pass }), report };
  };
  const words = async (id, bug) => {
    const { d, report } = await differenceOf(id, bug);
    assert.ok(d, `${id}: a failing case (${report.pass ? "passed" : "failed"}) shows its difference`);
    setLang("zh");
    const zh = say(d);
    setLang("en");
    return { d, en: say(d), zh, report };
  };
  try {
    assert.equal((await differenceOf("readme")).d, null, "the reference loop goes the course's way");
    // A call run on a length response: the event that differs, what each loop did there, which one is missing.
    const length = await words("length", "lengthRunsTools");
    assert.deepEqual([length.d.where, length.d.index], ["event", 8]);
    assert.equal(length.en, "At event #9 your loop starts read(call-1) (the correct loop never does that); the correct loop emits a skipped result for read(call-1) (reason length) here (your loop never does: it is missing).");
    assert.equal(length.zh, "第 9 个事件：你的 loop 开始执行 read(call-1)（正确的 loop 从不这样做）；正确的 loop 在这里为 read(call-1) 发出 skipped 结果（reason length）（你的 loop 从没这样做，缺了这一步）。");
    // Results in completion order: the events agree, the transcript does not; both call ids, out of order.
    const order = await words("concurrency", "completionOrder");
    assert.deepEqual([order.d.where, order.d.index], ["message", 2]);
    assert.equal(order.en, "In the transcript your loop returned, message #2 is the result of fast(fast-call) (the correct transcript has it later, at message #3: out of order); the correct loop's message #2 is the result of slow(slow-call) (yours has it later, at message #3: out of order).");
    assert.equal(order.zh, "你的 loop 返回的 transcript 里，消息 #2 是调用 fast(fast-call) 的结果（正确的 transcript 到消息 #3 才有它，顺序不对）；正确的 loop 的消息 #2 是调用 slow(slow-call) 的结果（你的 transcript 到消息 #3 才有它，顺序不对）。");
    // A result appended twice: the duplicate, and where the first one is; the response after it is only moved by it.
    const twice = await words("readme", "resultAppendedTwice");
    assert.equal(twice.en, "In the transcript your loop returned, message #3 is the result of read(call-1) (a second time: message #2 is already it); the correct loop's message #3 is the model's response (stopReason stop) (yours has it too, but at message #4, after a message the correct transcript does not have).");
    assert.match(twice.zh, /消息 #3 是调用 read\(call-1\) 的结果（重复了：消息 #2 已经是它）/);
    // A loop whose events stop short (a batch run one call at a time never finishes): what it did not do.
    const short = await words("concurrency", "sequentialBatch");
    assert.equal(short.en, "At event #10 your loop emits no more events; the correct loop emits the result of fast(fast-call) here (your loop never does: it is missing).");
    // The same event with other fields: both sides, and which field.
    const reason = await words("abort-at-max-steps", "noCheckAfterBatch");
    assert.equal(reason.en, "At event #9 your loop ends the run (reason maxSteps, steps 1); the correct loop ends the run (reason aborted, steps 1) here: the same event, with another reason.");
  } finally {
    setLang("en");
  }
});

test("a replayed loop's first difference never calls another message or model event a second time, nor a shifted one out of order", async () => {
  const { checkCase, createLoop, replayDifference, setLang, t, kit } = await replayKit();
  setLang("en");
  const notes = async (id, bug) => {
    const kase = kit.find((c) => c.id === id);
    const report = await checkCase(createLoop({ [bug]: true }), kase, { record: true });
    const d = replayDifference(kase, report.run, { failed: !report.pass });
    return { d, actual: t(d.parts.actual.key, d.parts.actual.vars), actualNote: d.parts.actualNote?.key, expectedNote: d.parts.expectedNote?.key };
  };
  // A made-up final answer is another response than the first: no "a second time".
  const fabricated = await notes("max-steps-1", "maxStepsFabricates");
  assert.deepEqual([fabricated.d.where, fabricated.d.index, fabricated.actualNote], ["message", 3, "diff.note.message.never"]);
  // A second request's start is not the first request's start again; it says which response it belongs to.
  const again = await notes("tooluse-no-calls", "noCallsContinues");
  assert.deepEqual([again.d.index, again.actualNote, again.expectedNote], [4, "diff.note.event.never", "diff.note.event.yoursNever"]);
  assert.equal(again.actual, "passes on the model's start event of response #2");
  // A skipped result left out: the end of the run comes early, in the same order as the correct loop's (not out of order).
  const missing = await notes("error", "errorLeavesCallsOpen");
  assert.deepEqual([missing.d.index, missing.actualNote, missing.expectedNote], [5, "diff.note.event.shifted", "diff.note.event.yoursNever"]);
  assert.deepEqual(missing.d.parts.actualNote.vars, { n: 7 });
  // The same lists in another order are out of order, both ways.
  const swapped = await notes("concurrency", "completionOrder");
  assert.deepEqual([swapped.actualNote, swapped.expectedNote], ["diff.note.message.later", "diff.note.message.yoursLater"]);
  // Every broken loop the kit fails says where it first went another way: none is left without a difference.
  const { BUGS } = await import("../conformance/reference-loop.mjs");
  for (const bug of BUGS)
    for (const kase of kit) {
      const report = await checkCase(createLoop({ [bug]: true }), kase, { record: true });
      const d = replayDifference(kase, report.run, { failed: !report.pass });
      assert.equal(d === null, report.pass, `${bug} on ${kase.id}: ${report.pass ? "passed" : "failed"}, difference ${JSON.stringify(d?.key)}`);
      if (!d || d.where === "run") continue;
      for (const note of ["actualNote", "expectedNote"]) assert.ok(!d.parts[note] || !/undefined/.test(JSON.stringify(d.parts[note].vars)), `${bug} on ${kase.id}: ${note}`);
    }
});

test("a replayed loop the kit failed whose events and transcript agree: the why-line says so and where the difference is instead", async () => {
  const { checkCase, createLoop, replayDifference, setLang, t, kit } = await replayKit();
  const readme = kit.find((c) => c.id === "readme");
  const say = (d, lang) => (setLang(lang), t(d.key, d.vars));
  try {
    // The next request goes before the batch's results: the requests differ, the events and the transcript do not.
    for (const [bug, code] of [["batchNotAwaited", "requestMessages"]]) {
      const report = await checkCase(createLoop({ [bug]: true }), readme, { record: true });
      assert.equal(report.pass, false);
      assert.ok(report.evidence.some((e) => e.code === code), `${bug}: ${JSON.stringify(report.evidence)}`);
      const d = replayDifference(readme, report.run, { failed: true });
      assert.deepEqual([d.where, d.index, d.key], ["run", report.run.events.length - 1, "diff.run.agree"]);
      assert.equal(say(d, "en"), "Your loop's events and the transcript it returned agree with the correct loop's; what differs is elsewhere: in the requests its model received, the tool calls it ran, or the input messages it was handed. The evidence is under this case in the report of \"Check your own loop\".");
      assert.equal(say(d, "zh"), "你的 loop 发出的事件和它返回的 transcript 都与正确的 loop 一致；不同之处在别处：模型收到的请求、执行的工具调用，或传给它的输入消息。证据见“检查你自己的 loop”报告里的这个用例。");
      // Without the kit's verdict (a passing case), nothing differs.
      assert.equal(replayDifference(readme, report.run), null);
    }
    // A call run twice (the second time after the loop resolved): the events and the transcript agree, and the kit's
    // record of what ran names it at the call's tool_start.
    const twice = await checkCase(createLoop({ callRunTwice: true }), readme, { record: true });
    assert.ok(twice.evidence.some((e) => e.code === "twice"), JSON.stringify(twice.evidence));
    const dt = replayDifference(readme, twice.run, { failed: true });
    assert.deepEqual([dt.where, dt.index, dt.key], ["exec", twice.run.events.findIndex((e) => e.type === "tool_start"), "diff.exec.more.once"]);
    assert.equal(say(dt, "en"), "Your loop starts read(call-1) here, but the kit's record shows it ran that call 2 times (your loop ran [call-1, call-1]); the correct loop runs it once. The chapter's step 4: each tool call runs exactly once.");
    assert.equal(say(dt, "zh"), "你的 loop 在这里开始执行 read(call-1)，但 kit 的记录显示它把这个调用执行了 2 次（你的 loop 执行了 [call-1, call-1]）；正确的 loop 只执行它一次。本章第四步：每个 tool call 只执行一次。");
    // A loop that throws once every event was emitted: no transcript, said as such.
    const reference = createLoop();
    const late = async (options) => {
      await reference(options);
      throw new Error("late");
    };
    const report = await checkCase(late, readme, { record: true });
    const d = replayDifference(readme, report.run, { failed: !report.pass });
    assert.deepEqual([d.where, d.key], ["run", "diff.run.threw"]);
    assert.equal(say(d, "en"), "Your loop's events agree with the correct loop's, but it returned no transcript: it threw Error: late. The evidence is under this case in the report of \"Check your own loop\".");
    assert.equal(say(d, "zh"), "你的 loop 发出的事件与正确的 loop 一致，但它没有返回 transcript，而是抛出了 Error: late。证据见“检查你自己的 loop”报告里的这个用例。");
  } finally {
    setLang("en");
  }
});

test("a replayed event with other fields names them (the page joins them with 、 in Chinese)", async () => {
  const { checkCase, createLoop, replayDifference, kit } = await replayKit();
  const readme = kit.find((c) => c.id === "readme");
  const reference = createLoop();
  const renamed = (options) => reference({ ...options, onEvent: (e) => options.onEvent(e.type === "tool_start" ? { ...e, call: { ...e.call, name: "other", arguments: {} } } : e) });
  const report = await checkCase(renamed, readme, { record: true });
  const d = replayDifference(readme, report.run, { failed: !report.pass });
  assert.deepEqual([d.where, d.key, d.vars.fields], ["event", "diff.event.changed", ["name", "arguments"]]);
  const { t, setLang } = await import("../../www/i18n.js");
  globalThis.document ??= { documentElement: {} };
  try {
    setLang("zh");
    assert.equal(t("diff.fieldSeparator"), "、");
    setLang("en");
    assert.equal(t("diff.fieldSeparator"), ", ");
  } finally {
    setLang("en");
  }
});

test("the kit's outcome line says the loop still passes only when every required case passed; otherwise it names the required failures", async () => {
  const { setLang } = await import("../../www/i18n.js");
  const { summaryText } = await import("../../www/loopcheck.js");
  const { formatSummary, summarize } = await import("../../www/conformance/check.js");
  globalThis.document ??= { documentElement: {} };
  const report = (id, pass, optional = false) => ({ id, pass, optional });
  const onlyOptional = { reports: [report("readme", true), report("concurrency", true), report("repeated-id", false, true)] };
  const requiredToo = { reports: [report("readme", true), report("concurrency", false), report("repeated-id", false, true)] };
  assert.deepEqual(summarize(requiredToo.reports), { passed: 1, failed: 1, optionalFailed: ["repeated-id"], requiredFailed: ["concurrency"] });
  try {
    setLang("zh");
    assert.equal(summaryText(onlyOptional), "2 个通过，0 个失败。可选用例 repeated-id 没有通过：章节把这个设计选择留给你，所以你的 loop 仍然算通过。");
    assert.equal(
      summaryText(requiredToo),
      "1 个通过，1 个失败。可选用例 repeated-id 也没有通过（章节把这个设计选择留给你，它不影响结果）；但必选用例 concurrency 没有通过，所以你的 loop 还没有通过。",
    );
    setLang("en");
    assert.equal(summaryText(onlyOptional), "2 passed, 0 failed. The optional case(s) repeated-id failed: the chapter leaves this design choice to you, so your loop passes all the same.");
    assert.equal(
      summaryText(requiredToo),
      "1 passed, 1 failed. The optional case(s) repeated-id failed too (the chapter leaves that design choice to you, so it does not count); but the required case(s) concurrency failed, so your loop does not pass yet.",
    );
    // The command's summary says the same.
    assert.match(formatSummary(summarize(requiredToo.reports), { lang: "en" }), /but the required case\(s\) concurrency failed, so the loop does not pass\.$/);
    assert.match(formatSummary(summarize(requiredToo.reports), { lang: "zh" }), /但必选用例 concurrency 没有通过，所以你的 loop 没有通过。$/);
    assert.match(formatSummary(summarize(onlyOptional.reports), { lang: "en" }), /so the loop still passes\.$/);
  } finally {
    setLang("en");
  }
});

test("a loop that adds no result for the call whose executor rejected: rule and heading both cite step 4, the evidence says so plainly, the expected result in its real shape", async () => {
  const { checkCase, evidenceText, ruleText, stepName } = await import("../../www/conformance/check.js");
  const kase = (await import("../../www/conformance/cases.json", { with: { type: "json" } })).default.cases.find((c) => c.id === "executor-rejects");
  // The learner's loop: each call's rejection caught, but no result written for it.
  const loop = (keepResult) =>
    async function runAgentLoop(options) {
      const emit = (e) => options.onEvent?.(e);
      const messages = structuredClone(options.context.messages);
      for (let steps = 1; ; steps++) {
        const stream = options.model.stream({ systemPrompt: options.context.systemPrompt, messages, tools: options.tools.definitions() }, { signal: options.signal });
        for await (const event of stream) emit({ type: "model_event", event });
        const assistant = await stream.result();
        messages.push(assistant);
        emit({ type: "assistant_message", message: assistant });
        const calls = assistant.content.filter((b) => b.type === "toolCall");
        if (assistant.stopReason !== "toolUse") {
          emit({ type: "turn_end", reason: assistant.stopReason, steps });
          return { reason: assistant.stopReason, messages, steps };
        }
        for (const call of calls) emit({ type: "tool_start", call });
        const results = await Promise.all(
          calls.map(async (call) => {
            let result;
            try {
              result = await options.executeToolCall(call, { signal: options.signal, reportProgress: () => {} });
            } catch (err) {
              if (!keepResult) return null;
              result = { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text: `Error: ${err.message}` }], isError: true, timestamp: Date.now() };
            }
            emit({ type: "tool_end", result });
            return result;
          }),
        );
        for (const r of results) if (r) messages.push(r);
      }
    };
  const report = await checkCase(loop(false), kase);
  assert.equal(report.pass, false);
  assert.equal(report.rule.id, "reject");
  assert.equal(report.rule.step, "4");
  assert.equal(report.rule.step, report.step, "the rule cites the step the heading cites (the page adds no other step)");
  assert.match(stepName(report.rule.step, "zh"), /^第四步/);
  assert.match(ruleText(report.rule, "zh"), /^executor 可能 reject：每个调用单独捕获 rejection/);
  assert.deepEqual(report.evidence[0], { code: "rejectedNoResult", vars: { id: "call-2", name: "search", error: "search index unavailable" } });
  assert.equal(evidenceText(report.evidence[0], "zh"), '你的 loop 没有为调用 call-2（search）加入任何结果：它的 executor 以 "search index unavailable" reject 了，之后的请求和 transcript 里都没有它的结果');
  assert.equal(evidenceText(report.evidence[0], "en"), 'your loop added no result for call call-2 (search), whose executor rejected with "search index unavailable": the next request and the transcript have nothing for it');
  // The expected result as real messages carry it: a content array with a text block holding the error text.
  assert.deepEqual(report.firstEvent.expected.result.content, [{ type: "text", text: "search index unavailable" }]);
  assert.doesNotMatch(JSON.stringify(report), /the text keeps/);
  // A loop that keeps the message with text around it still passes: only the message is compared.
  assert.equal((await checkCase(loop(true), kase)).pass, true);
});

test("a picked tool result: the request shown if it carries it, else the first that does; none carried it is said", async () => {
  const { requestForMessage, requestsCarrying } = await import("../../www/panels.js");
  const user = { role: "user", content: "go", timestamp: 1 };
  const call = { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "read", arguments: {} }], stopReason: "toolUse", timestamp: 2 };
  const result = { role: "toolResult", toolCallId: "c1", toolName: "read", content: [{ type: "text", text: "ok" }], isError: false, timestamp: 3 };
  const last = { role: "toolResult", toolCallId: "c2", toolName: "read", content: [{ type: "text", text: "ok" }], isError: false, timestamp: 5 };
  const sent = [{ messages: [user] }, { messages: [user, call, result] }, { messages: [user, call, result, { role: "assistant", content: [], stopReason: "toolUse", timestamp: 4 }] }];
  assert.deepEqual(requestsCarrying(sent, result), [2, 3]);
  assert.deepEqual(requestForMessage(sent, result, 1), { request: 2, carried: true }, "request 1 does not carry it: the first that does");
  assert.deepEqual(requestForMessage(sent, result, 3), { request: 3, carried: true }, "the request shown carries it: kept");
  assert.deepEqual(requestForMessage(sent, last, 2), { request: 2, carried: false }, "none carried it: the request shown is kept");
  assert.deepEqual(requestForMessage(sent, { ...result, timestamp: 9 }, 1), { request: 1, carried: false }, "the same message, field for field");
});
