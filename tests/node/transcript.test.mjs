// validateTranscript and the chapter-00 prologue trace (SPEC §5), through the installed package.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { loadTinyPi } from "./app-fixture.mjs";
import { assistantMsg, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPi();
});

const result = (id, name = "read", extra = {}) => ({ role: "toolResult", toolCallId: id, toolName: name, content: [text("r")], isError: false, timestamp: 3, ...extra });

// The prologue's README run (seed 002 uses the id call_1).
const prologue = () => [
  userMsg("读取 README.md，并概括项目"),
  assistantMsg([toolCall("call_1", "read", { path: "README.md" })], "toolUse"),
  result("call_1", "read", { content: [text("README fixture")] }),
  assistantMsg([text("这是一个用于学习 Agent 内核的 TypeScript 项目。")], "stop"),
];

test("validateTranscript: a paired transcript is ok", () => {
  assert.deepEqual(tp.validateTranscript(prologue()), { ok: true, problems: [] });
  assert.deepEqual(tp.validateTranscript([]), { ok: true, problems: [] });
});

test("validateTranscript reports each kind with the call id and the message index", () => {
  const kinds = (messages) => tp.validateTranscript(messages).problems.map((p) => [p.kind, p.toolCallId, p.index]);
  const [u, a, r, done] = prologue();
  assert.deepEqual(kinds([u, a, done]), [["missing_result", "call_1", 1]]);
  // A result before its call; the call then also lacks a result after it, which may be reported too.
  const early = kinds([u, r, a, done]);
  assert.deepEqual(early[0], ["result_before_call", "call_1", 1]);
  assert.ok(early.slice(1).every(([k, id]) => k === "missing_result" && id === "call_1"), JSON.stringify(early));
  assert.deepEqual(kinds([u, result("ghost")]), [["orphan_result", "ghost", 1]]);
  assert.deepEqual(kinds([u, a, r, r]), [["duplicate_result", "call_1", 3]]);
  const dup = assistantMsg([toolCall("x", "read"), toolCall("x", "read")], "toolUse");
  assert.deepEqual(kinds([u, dup, result("x")]).map(([k, id]) => [k, id]), [["duplicate_call_id", "x"]]);
  assert.equal(tp.validateTranscript([u, a, done]).ok, false);
});

test("prologueTrace: the README run gives the seven milestones with their owners", () => {
  const records = tp.prologueTrace(prologue());
  assert.equal(records.length, 7);
  assert.deepEqual(records.map((r) => r.seq), [1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(records.map((r) => r.kind), ["user_message", "model_start", "assistant_message", "tool_start", "tool_result", "model_start", "assistant_message"]);
  assert.deepEqual(records.map((r) => r.owner), ["user", "model", "model", "loop", "tool", "model", "model"]);
  assert.deepEqual(records.map((r) => r.toolCallId ?? null), [null, null, "call_1", "call_1", "call_1", null, null]);
  const lines = tp.formatTrace(records).trimEnd().split("\n");
  assert.equal(lines.length, 7);
  assert.equal(lines[1], '02 model_start owner=model detail="turn=1"');
  assert.equal(lines[2], '03 assistant_message owner=model detail="stopReason=toolUse name=read" toolCallId=call_1');
  assert.equal(lines[3], '04 tool_start owner=loop detail="name=read" toolCallId=call_1');
  assert.equal(lines[5], '06 model_start owner=model detail="turn=2"');
  assert.equal(lines[6], '07 assistant_message owner=model detail="stopReason=stop"');
  assert.deepEqual(tp.validateTrace(records), { ok: true, problems: [] });
});

test("validateTrace: a dropped result is a missing paired result, a moved one is a result before its call", () => {
  const records = tp.prologueTrace(prologue());
  const renumber = (rs) => rs.map((r, i) => ({ ...r, seq: i + 1 }));
  const missing = tp.validateTrace(renumber(records.filter((r) => r.kind !== "tool_result")));
  assert.equal(missing.ok, false);
  assert.deepEqual(missing.problems.map((p) => [p.kind, p.toolCallId]), [["missing_result", "call_1"]]);
  assert.match(missing.problems[0].message, /missing paired result/);
  const res = records.find((r) => r.kind === "tool_result");
  const early = tp.validateTrace(renumber([records[0], res, ...records.slice(1).filter((r) => r !== res)]));
  assert.equal(early.ok, false);
  assert.ok(early.problems.some((p) => p.kind === "result_before_call" && p.toolCallId === "call_1" && /result before call/.test(p.message)), JSON.stringify(early.problems));
});

test("prologueTrace, validateTrace and formatTrace keep an id with a comma, a backslash or a newline whole", () => {
  const ids = ["a,b", "c\\", "d\ne"];
  const messages = [userMsg("go"), assistantMsg(ids.map((id) => toolCall(id, "read")), "toolUse"), result("a,b"), result("c\\")];
  const records = tp.prologueTrace(messages);
  assert.equal(records[2].toolCallId, "a\\,b,c\\\\,d\ne");
  assert.deepEqual(tp.validateTrace(records).problems.map((p) => [p.kind, p.toolCallId, p.seq]), [["missing_result", "d\ne", 3]],
    "the one call without a result, as validateTranscript has it");
  assert.deepEqual(tp.validateTranscript(messages).problems.map((p) => p.toolCallId), ["d\ne"]);
  const lines = tp.formatTrace(records).trimEnd().split("\n");
  assert.equal(lines.length, records.length, "one line a record");
  assert.equal(lines[2], '03 assistant_message owner=model detail="stopReason=toolUse name=read,read,read" toolCallId="a\\\\,b,c\\\\\\\\,d\\ne"');
});

test("prologueTrace reads custom-role messages with customRoles, and they make no record", () => {
  const messages = [userMsg("go"), { role: "note", text: "n", timestamp: 2 }, ...prologue().slice(1)];
  assert.throws(() => tp.prologueTrace(messages), { name: "TypeError", message: /^messages\[1\]\.role must be one of/ });
  assert.deepEqual(tp.prologueTrace(messages, { customRoles: ["note"] }).map((r) => r.kind), tp.prologueTrace(prologue()).map((r) => r.kind));
});

test("a backslash in a hand-made record's toolCallId escapes only a comma or a backslash", () => {
  const record = (seq, kind, owner, toolCallId) => ({ seq, kind, owner, detail: "", toolCallId });
  for (const [written, result] of [["a\\b", "a\\b"], ["c1\\", "c1\\"], ["x\\,y", "x,y"]]) {
    const records = [record(1, "user_message", "user"), record(2, "assistant_message", "model", written), record(3, "tool_result", "tool", result)];
    assert.deepEqual(tp.validateTrace(records), { ok: true, problems: [] }, written);
  }
  const mismatch = [record(1, "user_message", "user"), record(2, "assistant_message", "model", "c1\\"), record(3, "tool_result", "tool", "c1")];
  assert.deepEqual(tp.validateTrace(mismatch).problems.map((p) => [p.kind, p.toolCallId]), [["missing_result", "c1\\"], ["orphan_result", "c1"]]);
});

test("the trace of a real run matches the trace of its transcript", async () => {
  const messages = prologue();
  const tools = new tp.ToolRegistry();
  tools.register({ name: "read", execute: () => ({ content: [text("README fixture")] }) });
  const run = await tp.runAgentLoop({ context: { messages: messages.slice(0, 1) }, model: new tp.ScriptedModel([messages[1], messages[3]]), tools });
  const lines = tp.formatTrace(tp.prologueTrace(run.messages)).trimEnd().split("\n");
  assert.deepEqual(lines.map((l) => l.split(" ").slice(0, 3).join(" ")), [
    "01 user_message owner=user",
    "02 model_start owner=model",
    "03 assistant_message owner=model",
    "04 tool_start owner=loop",
    "05 tool_result owner=tool",
    "06 model_start owner=model",
    "07 assistant_message owner=model",
  ]);
});
