// Sessions as JSON Lines (SPEC §9) through the installed package: toJSONL / parseJSONL (exact round trip,
// every kind of bad line named by its number and field), and a paused run carried across two processes with
// nothing but the JSONL file and the decisions.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { before, describe, test } from "node:test";
import { promisify } from "node:util";
import { appSrcDir, ensureFixture, loadTinyPiSessions } from "./app-fixture.mjs";
import { assistantMsg, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPiSessions();
});

const T = { timeout: 60_000 };

/** A transcript with what a provider writes: extra fields in their own order, numbers of every layout, and
 * text JSON must escape. */
function transcript() {
  return [
    { role: "user", content: "Read README.md\u2028and \"quote\" \\ it 😀", timestamp: 1700000000000 },
    {
      role: "assistant",
      content: [{ type: "thinking", thinking: "hm", thinkingSignature: "sig" }, text("Reading."), toolCall("call_1", "read", { zeta: 1, alpha: [0.1, 1e21, 1e-7, 123456789012345680000] })],
      api: "openai-responses",
      provider: "openai",
      model: "gpt-4o-mini",
      usage: { input: 12, output: 30, cost: { input: 0.000003, output: 0.30000000000000004, total: 5e-324 } },
      stopReason: "toolUse",
      timestamp: 1700000000001.5,
      responseId: "r-1",
    },
    { role: "toolResult", toolCallId: "call_1", toolName: "read", content: [text("an emoji: 😀"), { type: "image", data: "aGk=", mimeType: "image/png" }], details: { bytes: 9, nested: { b: 2, a: 1 } }, isError: false, timestamp: -1 },
    { role: "assistant", content: [text("It says hi.")], stopReason: "stop", timestamp: 1700000000003, errorMessage: "none" },
  ];
}

describe("toJSONL / parseJSONL", () => {
  test("one JSON.stringify'd message per line, each ended by a newline; none is the empty text", () => {
    const messages = transcript();
    const jsonl = tp.toJSONL(messages);
    assert.equal(jsonl, messages.map((m) => `${JSON.stringify(m)}\n`).join(""));
    assert.equal(jsonl.split("\n").length, messages.length + 1, "U+2028 and escapes stay inside their line");
    assert.equal(tp.toJSONL([]), "");
    assert.deepEqual(tp.parseJSONL(""), []);
  });

  test("the round trip is exact both ways: same objects, same field order, every number as it was", () => {
    const messages = transcript();
    const jsonl = tp.toJSONL(messages);
    const back = tp.parseJSONL(jsonl);
    assert.deepEqual(back, messages);
    assert.equal(JSON.stringify(back), JSON.stringify(messages), "field order kept");
    assert.equal(back[1].usage.cost.output, 0.30000000000000004, "a 17-digit double comes back as itself");
    assert.equal(tp.toJSONL(back), jsonl);
    assert.ok(!Object.isFrozen(back[0]), "fresh objects for the caller");
  });

  test("a paused run's transcript survives the trip and resumes", async () => {
    const tools = new tp.ToolRegistry();
    const ran = [];
    tools.register({ name: "delete", needsApproval: true, execute: async (args, { callId }) => (ran.push(callId), { content: [text("gone")] }) });
    const script = [assistantMsg([toolCall("c1", "delete", { path: "x" })], "toolUse"), assistantMsg([text("done")], "stop")];
    const model = new tp.ScriptedModel(script);
    const paused = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, tools });
    assert.equal(paused.reason, "paused");
    const saved = tp.toJSONL(paused.messages);
    const restored = tp.parseJSONL(saved);
    assert.deepEqual(restored, paused.messages);
    assert.deepEqual(tp.validateTranscript(restored, { allowPending: true }).pending, [{ toolCallId: "c1", index: 1 }]);
    const done = await tp.runAgentLoop({ context: { messages: restored }, model, tools, approvals: { c1: { approve: true } }, startSteps: paused.steps });
    assert.equal(done.reason, "stop");
    assert.equal(done.steps, 2);
    assert.deepEqual(ran, ["c1"]);
  });

  test("blank lines (and a CRLF file's carriage returns) are skipped; line numbers count them", () => {
    const good = JSON.stringify(userMsg("hi"));
    assert.deepEqual(tp.parseJSONL(`\n${good}\n   \n\t\n${good}\r\n\n`), [userMsg("hi"), userMsg("hi")]);
    assert.throws(() => tp.parseJSONL(`\n${good}\n\n{"role":"user"}\n`), { name: "TypeError", message: /^line 4: / });
  });

  test("custom roles read only when listed, kept verbatim, and written back as they were", () => {
    const note = { role: "notification", text: "build finished", level: 2, timestamp: 5 };
    const jsonl = `${JSON.stringify(userMsg("hi"))}\n${JSON.stringify(note)}\n`;
    assert.throws(() => tp.parseJSONL(jsonl), { name: "TypeError", message: 'line 2: message.role must be one of "user", "assistant", "toolResult", "compaction" (got "notification")' });
    const back = tp.parseJSONL(jsonl, { customRoles: ["notification"] });
    assert.deepEqual(back[1], note);
    assert.throws(() => tp.toJSONL(back), { name: "TypeError", message: /^messages\[1\].*"notification"/ });
    assert.equal(tp.toJSONL(back, { customRoles: ["notification"] }), jsonl);
  });

  test("every kind of bad line is a TypeError naming its line and the field", () => {
    const good = JSON.stringify(userMsg("hi"));
    const cases = [
      // not JSON
      ['{"role":"user",', "line 3: not valid JSON: EOF while parsing"],
      ["hello", "line 3: not valid JSON: expected value at column 1"],
      ['{"role":"user"} trailing', "line 3: not valid JSON: trailing characters"],
      // JSON, not a message object
      ["[1, 2]", "line 3: message must be an object (got array)"],
      ['"hi"', "line 3: message must be an object (got string)"],
      ["null", "line 3: message must be an object (got null)"],
      ["42", "line 3: message must be an object (got integer)"],
      // the role
      ['{"content":"hi"}', "line 3: message.role is missing"],
      ['{"role":7,"content":"hi"}', "line 3: message.role must be a string (got integer)"],
      ['{"role":"system","content":"hi"}', 'line 3: message.role must be one of "user", "assistant", "toolResult", "compaction" (got "system")'],
      // a user message
      ['{"role":"user"}', "line 3: message.content is missing"],
      ['{"role":"user","content":5}', "line 3: message.content must be a string or an array (got integer)"],
      ['{"role":"user","content":[{"type":"video"}]}', 'line 3: message.content[0].type must be one of "text", "image" (got "video")'],
      ['{"role":"user","content":"hi","timestamp":"now"}', "line 3: message.timestamp must be a number (got string)"],
      ['{"role":"user","content":"hi","timestamp":null}', "line 3: message.timestamp must be a number (got null)"],
      ['{"role":"user","content":"hi"}', "line 3: message.timestamp is missing"],
      // an assistant message
      ['{"role":"assistant","content":[]}', "line 3: message.stopReason is missing"],
      ['{"role":"assistant","content":[],"stopReason":"done"}', "line 3: message.stopReason must be one of"],
      ['{"role":"assistant","content":[{"type":"toolCall","id":3,"name":"read"}],"stopReason":"toolUse"}', "line 3: message.content[0].id must be a string (got integer)"],
      ['{"role":"assistant","content":[{"type":"text"}],"stopReason":"stop"}', "line 3: message.content[0].text is missing"],
      // a tool result
      ['{"role":"toolResult","toolCallId":"a","toolName":"read","content":[]}', "line 3: message.isError is missing"],
      ['{"role":"toolResult","toolCallId":"a","toolName":"read","content":"text","isError":false}', "line 3: message.content must be an array (got string)"],
      ['{"role":"toolResult","toolCallId":"a","toolName":"read","content":[{"type":"image","data":"x"}],"isError":false}', 'line 3: message.content[0].mimeType is missing'],
    ];
    for (const [line, expected] of cases) {
      assert.throws(
        () => tp.parseJSONL(`${good}\n${good}\n${line}\n${good}\n`),
        (e) => e instanceof TypeError && e.message.startsWith(expected),
        `${line} should fail with: ${expected}`,
      );
    }
    // The instance is fine after every one of them.
    assert.equal(tp.parseJSONL(`${good}\n`).length, 1);
  });

  test("a lone surrogate is refused, never changed (SPEC §10): the message and the line are named", () => {
    const half = [userMsg("half an emoji: " + "😀".slice(0, 1))];
    assert.throws(() => tp.toJSONL(half), { name: "TypeError", message: /^messages\[0\]: .*lone surrogate/ });
    const line = `${JSON.stringify(userMsg("ok"))}\n${JSON.stringify(half[0])}\n`;
    assert.throws(() => tp.parseJSONL(line), { name: "TypeError", message: /^line 2: .*lone surrogate/ });
  });

  test("bad arguments are a TypeError naming them", () => {
    assert.throws(() => tp.parseJSONL(42), { name: "TypeError", message: "text must be a string (got number)" });
    assert.throws(() => tp.parseJSONL("", { customRoles: "note" }), { name: "TypeError", message: /^options\.customRoles must be an array/ });
    assert.throws(() => tp.toJSONL("x"), { name: "TypeError", message: "messages must be an array (got string)" });
    assert.throws(() => tp.toJSONL([{ role: "user", content: 5, timestamp: 1 }]), { name: "TypeError", message: /^messages\[0\]\.content must be a string or an array \(got integer\)/ });
    assert.throws(() => tp.toJSONL([], 3), { name: "TypeError", message: "options must be an object (got number)" });
    assert.throws(() => tp.toJSONL([{ role: "user", content: "a", timestamp: 1 }, { role: "user", content: "b", timestamp: 2n }]), { name: "TypeError", message: /^messages\[1\]\.timestamp: .*BigInt/ });
  });
});

describe("a paused run across two processes", () => {
  const runApp = promisify(execFile);
  let script;
  before(async () => {
    const fixture = await ensureFixture();
    script = path.join(fixture, "resume-later.mjs");
    fs.copyFileSync(path.join(appSrcDir, "sessions", "resume-later.mjs"), script);
  });

  /** Runs one phase of the app in a process of its own; its printed JSON. */
  async function phase(...args) {
    const { stdout } = await runApp(process.execPath, [script, ...args]);
    return JSON.parse(stdout);
  }

  for (const [name, decisions] of [
    ["approved", { c1: { approve: true } }],
    ["denied", { c1: { approve: false, reason: "Not /tmp, please." } }],
  ]) {
    test(`process 1 pauses and saves JSONL; process 2 resumes from the file alone (${name}); the transcript is the uninterrupted run's`, T, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-session-"));
      try {
        const file = path.join(dir, "session.jsonl");
        const paused = await phase("pause", file);
        assert.equal(paused.reason, "paused");
        assert.deepEqual(paused.pending.map((p) => [p.toolCallId, p.needsApproval]), [["c1", true], ["c2", false]]);
        const saved = fs.readFileSync(file, "utf8");
        assert.equal(saved.trimEnd().split("\n").length, 2, "the user message and the paused response");

        const resumed = await phase("resume", file, JSON.stringify(decisions));
        const whole = await phase("whole", "-", JSON.stringify(decisions));
        assert.notEqual(resumed.pid, paused.pid, "two processes");
        assert.equal(resumed.reason, "stop");
        assert.deepEqual(resumed.messages, whole.messages);
        assert.equal(JSON.stringify(resumed.messages), JSON.stringify(whole.messages), "field order too");
        assert.equal(resumed.reason, whole.reason);
        assert.equal(paused.steps + resumed.steps, whole.steps);
        assert.equal(tp.toJSONL(resumed.messages).startsWith(saved), true, "the saved lines are the transcript's start");
        const results = resumed.messages.filter((m) => m.role === "toolResult").map((m) => [m.toolCallId, m.details?.reason ?? "ran"]);
        assert.deepEqual(results, [["c1", name === "denied" ? "denied" : "ran"], ["c2", "ran"]]);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
