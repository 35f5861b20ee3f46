// Issue 26, item 1 (SPEC §10, "read once, as data"): generated odd final messages (getters that answer
// differently each read, toJSON, proxies, non-plain prototypes, lone surrogates, cycles, BigInts) from a
// JS model. For each run: the stored transcript, read in JS, pairs every call of every response with exactly
// one result after it; validateTranscript says ok exactly when that JS reading does; the tools ran exactly
// the calls the stored response holds (no call of another reading of the message ran); and what the loop
// stored is the plain data JSON.stringify wrote of the model's message.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { loadTinyPi } from "./app-fixture.mjs";
import { rng } from "./garbage-gen.mjs";
import { text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPi();
});

const CASES = Number(process.env.READ_ONCE_CASES ?? 600);

/** Every call of every assistant message has exactly one result after it, before the next assistant message
 * (per distinct id), and every result answers such a call: the pairing rule, read with plain JS. */
function pairedInJs(messages) {
  let open = null;
  for (const m of messages) {
    if (m.role === "assistant") {
      if (open && [...open.values()].some((n) => n !== 1)) return false;
      open = new Map();
      for (const block of m.content) if (block.type === "toolCall") open.set(block.id, 0);
    } else if (m.role === "toolResult") {
      if (!open || !open.has(m.toolCallId)) return false;
      open.set(m.toolCallId, open.get(m.toolCallId) + 1);
    }
  }
  return !open || [...open.values()].every((n) => n === 1);
}

/** A response's plain data: some text, some calls (an id repeated now and then), a stop reason. */
function data(r, i) {
  const calls = Array.from({ length: r.int(4) }, (_, k) => toolCall(r.chance(0.15) ? "dup" : `c${i}-${k}`, "read", { n: k }));
  const content = [...(r.chance(0.5) ? [text("thinking aloud")] : []), ...calls];
  const stopReason = calls.length ? r.pick(["toolUse", "toolUse", "toolUse", "stop", "length", "error"]) : r.pick(["stop", "toolUse", "length"]);
  return { role: "assistant", content, stopReason, timestamp: 5 };
}

/** Odd forms of a message whose data is `d`; each answers `d` (or something else) differently per reading. */
const ODD = [
  ["plain", (d) => d],
  ["content getter that answers differently each read", (d) => {
    let reads = 0;
    const other = [toolCall("other", "read", { n: 99 })];
    const m = { ...d };
    Object.defineProperty(m, "content", { enumerable: true, get: () => ((reads += 1) === 1 ? d.content : other) });
    return m;
  }],
  ["stopReason getter that flips", (d) => {
    let reads = 0;
    const m = { ...d };
    Object.defineProperty(m, "stopReason", { enumerable: true, get: () => ((reads += 1) % 2 === 1 ? d.stopReason : "stop") });
    return m;
  }],
  ["toJSON answering other calls than its fields", (d) => ({ ...d, content: [toolCall("shown-not-sent", "read")], toJSON: () => d })],
  ["Proxy whose content differs per get", (d) => {
    let reads = 0;
    return new Proxy({ ...d }, { get: (t, k) => (k === "content" && (reads += 1) > 1 ? [] : t[k]) });
  }],
  ["class instance with an inherited stopReason", (d) => {
    class Reply {
      get stopReason() {
        return "toolUse";
      }
    }
    const m = Object.assign(new Reply(), { role: d.role, content: d.content, timestamp: d.timestamp });
    return m;
  }],
  ["non-enumerable content", (d) => Object.defineProperty({ ...d }, "content", { value: d.content, enumerable: false })],
  ["a call whose arguments getter changes", (d) => {
    const content = d.content.map((b) => {
      if (b.type !== "toolCall") return b;
      let reads = 0;
      return Object.defineProperty({ ...b }, "arguments", { enumerable: true, get: () => ((reads += 1) === 1 ? b.arguments : { n: "changed" }) });
    });
    return { ...d, content };
  }],
  ["a lone surrogate in a call id", (d) => ({ ...d, content: [...d.content, toolCall("half\uD83D", "read")] })],
  ["a cycle in an extra field", (d) => {
    const m = { ...d, raw: {} };
    m.raw.self = m.raw;
    return m;
  }],
  ["a BigInt in usage", (d) => ({ ...d, usage: { input: 1n } })],
];

/** A model that answers `first` (whose plain stop reason is `reason`: the model never reads the odd object
 * itself) to its first request, from result() or the terminal event, then stops. */
function model(first, reason, viaResult) {
  let requests = 0;
  return {
    stream() {
      const firstRequest = requests++ === 0;
      const message = firstRequest ? first : { role: "assistant", content: [text("done")], stopReason: "stop", timestamp: 9 };
      const error = firstRequest && reason === "error";
      async function* events() {
        yield { type: "start" };
        yield error ? { type: "error", reason: "error", error: message } : { type: "done", reason: "stop", message };
      }
      const it = events();
      if (viaResult) it.result = async () => message;
      return it;
    },
  };
}

test(`${CASES} odd final messages: the stored transcript pairs in JS, validateTranscript agrees, the tools ran what was stored`, { timeout: 120_000 }, async () => {
  const seen = new Map();
  for (let i = 0; i < CASES; i += 1) {
    const r = rng(20261202 + i);
    const d = data(r, i);
    const [name, odd] = r.pick(ODD);
    const message = odd(d);
    // What JSON.stringify writes of a twin of the message (its own first reading: the odd forms count theirs).
    let written;
    try {
      written = JSON.stringify(odd(d));
    } catch {
      written = undefined;
    }
    const ran = [];
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", parameters: { type: "object" }, execute: async (args, { callId }) => (ran.push([callId, args]), { content: [text("read")] }) });
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model(message, d.stopReason, r.chance(0.5)), tools, maxSteps: 2 });
    const where = `case ${i} (${name}): ${written?.slice(0, 200)}`;
    seen.set(name, (seen.get(name) ?? 0) + 1);

    assert.ok(pairedInJs(result.messages), `${where}: a call without exactly one result`);
    assert.equal(tp.validateTranscript(result.messages).ok, pairedInJs(result.messages), `${where}: validateTranscript disagrees with the JS reading`);
    const stored = result.messages[1];
    if (stored?.role === "assistant") {
      // What the loop stored is what JSON.stringify wrote, read once.
      assert.deepEqual(stored, JSON.parse(written), `${where}: the stored message is not the data that was written`);
      // The tools ran exactly the distinct calls of the stored message, if it was a batch, with its arguments.
      const calls = stored.content.filter((b) => b.type === "toolCall");
      const ids = calls.map((c) => c.id);
      const batch = stored.stopReason === "toolUse" && new Set(ids).size === ids.length;
      const expected = batch ? calls.map((c) => [c.id, c.arguments]) : [];
      assert.deepEqual(ran.slice(0, expected.length), expected, `${where}: the tools ran other calls than the stored ones`);
    } else {
      // Refused (JSON cannot write it, or it holds what no string may): a model error, nothing appended.
      assert.equal(result.reason, "error", where);
      assert.equal(result.messages.length, 1, where);
      assert.deepEqual(ran, [], where);
    }
  }
  for (const [name] of ODD) assert.ok((seen.get(name) ?? 0) >= 10, `too few cases of ${name}: ${seen.get(name)}`);
});
