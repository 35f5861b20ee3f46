// Issue 5, item 2: the JS boundary under garbage. A seeded, deterministic generator of malformed values,
// a mutator that takes a VALID call of each tiny-pi entry point and puts garbage at one or two random
// paths of its arguments, and a driver that runs the cases against one instance of the package.
// Plain ES module with no Node imports: the Node test (garbage.test.mjs) and the headless-Chromium test
// (tests/e2e/garbage.test.mjs) run this same file.
//
// Every case must end in one of the allowed outcomes:
//   named     the call threw/rejected an Error whose message names the field (a segment of a mutated path)
//   completed the call resolved/returned a well-formed value
//   fault     a model/tool fault: the run resolved with reason "error" (and `error` set), or the tool call
//             got an error result (isError), as SPEC §3-4 say
// and after it a good README round trip must pass on the SAME instance. Anything else is a finding:
//   unnamed   an Error whose message names neither the field nor anything we changed
//   non-error a rejection/throw that is not an Error
//   malformed the call resolved with a value of the wrong shape (or an unpaired transcript)
//   escape    an exception escaped to the host (uncaught error / unhandled rejection) during the case
//   hang      the call did not settle (no settle within the deadline)
//   trap      a WebAssembly.RuntimeError (`unreachable`), or the good run after the case failed
import { readmeRoundTrip, readmeScript } from "../app/round-trip.mjs";

export const ALLOWED = ["named", "completed", "fault"];
export const FINDINGS = ["unnamed", "non-error", "malformed", "escape", "hang", "trap"];

// --- deterministic randomness --------------------------------------------------------------------

/** mulberry32: small, fast, and the same sequence in every JS engine. */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    chance: (p) => next() < p,
  };
}

/** Each case has its own stream, so case i replays alone from (seed, i). */
export const caseRng = (seed, i) => rng(Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(i + 1, 0xc2b2ae35));

// --- the garbage ---------------------------------------------------------------------------------

let huge;
const hugeString = () => (huge ??= "x".repeat(5 * 1024 * 1024)); // 5 MB; strings are immutable, so one is enough

/** Rejected promises get a no-op handler here, so only a rejection the LOOP drops shows up as unhandled. */
const rejected = (e) => {
  const p = Promise.reject(e);
  p.catch(() => {});
  return p;
};

function throwingProxy(target = {}) {
  const boom = (trap) => () => {
    throw new Error(`proxy trap ${trap}`);
  };
  const handler = {};
  for (const trap of ["get", "set", "has", "deleteProperty", "ownKeys", "getOwnPropertyDescriptor", "defineProperty",
    "getPrototypeOf", "setPrototypeOf", "isExtensible", "preventExtensions", "apply", "construct"]) handler[trap] = boom(trap);
  const proxy = new Proxy(target, handler);
  proxies.add(proxy);
  return proxy;
}

function revoked(target) {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  proxies.add(proxy);
  return proxy;
}

function nested(depth) {
  let v = { type: "text", text: "bottom" };
  for (let i = 0; i < depth; i += 1) v = { x: v };
  return v;
}

/** The same value with another JSON type: what a caller mixing up fields would pass. */
function flipped(original) {
  if (typeof original === "string") return original.length;
  if (typeof original === "number") return String(original);
  if (typeof original === "boolean") return original ? 1 : 0;
  if (Array.isArray(original)) return Object.assign({}, original);
  if (original && typeof original === "object") return [original];
  return original === undefined ? null : undefined;
}

/**
 * [label, make(r, ctx)] — ctx = { tp, original }. Values are made fresh per case (except the shared 5 MB string).
 * No value is a promise or thenable that never settles: awaiting one is a legitimate wait, not a fault.
 */
export const KINDS = [
  ["undefined", () => undefined],
  ["null", () => null],
  ["true", () => true],
  ["0", () => 0],
  ["-1", () => -1],
  ["1.5", () => 1.5],
  ["NaN", () => NaN],
  ["Infinity", () => Infinity],
  ["-Infinity", () => -Infinity],
  ["-0", () => -0],
  ["2**53 + 2", () => 2 ** 53 + 2],
  ["1e308", () => 1e308],
  ["empty string", () => ""],
  ["a string", () => "garbage"],
  ["lone high surrogate", () => "\uD800"],
  ["lone low surrogate in text", () => "ab\uDC00cd"],
  ["control characters", () => "\u0000\u0001\u001f\u2028"],
  ["5 MB string", hugeString],
  ["BigInt", () => 10n],
  ["object holding a BigInt", () => ({ type: "text", text: "n", n: 10n })],
  ["Symbol", () => Symbol("garbage")],
  ["function", () => function garbage() {}],
  ["async function that throws", () => async () => {
    throw new Error("garbage function threw");
  }],
  ["function that throws", () => () => {
    throw new Error("garbage function threw");
  }],
  ["function returning garbage", () => () => Symbol("returned")],
  ["class", () => class Garbage {}],
  ["empty object", () => ({})],
  ["empty array", () => []],
  ["array of garbage", () => [null, 42, "x", undefined]],
  ["Object.create(null)", () => Object.assign(Object.create(null), { type: "text", text: "no prototype" })],
  ["cyclic object", () => {
    const o = { type: "text", text: "cycle" };
    o.self = o;
    return o;
  }],
  ["cyclic array", () => {
    const a = [{ type: "text", text: "cycle" }];
    a.push(a);
    return a;
  }],
  ["nested 200 levels", () => nested(200)],
  ["nested 5,000 levels", () => nested(5000)],
  ["sparse array", () => {
    const a = [];
    a[3] = { type: "text", text: "sparse" };
    return a;
  }],
  ["frozen object", () => Object.freeze({ type: "text", text: "frozen" })],
  ["frozen array", () => Object.freeze([Object.freeze({ type: "text", text: "frozen" })])],
  ["object with a getter that throws", () => Object.defineProperty({ type: "text" }, "text", { enumerable: true, get() {
    throw new Error("getter threw");
  } })],
  ["Proxy that throws on every trap", () => throwingProxy()],
  ["array Proxy that throws on every trap", () => throwingProxy([])],
  ["revoked Proxy", () => revoked({})],
  ["revoked array Proxy", () => revoked([])],
  // JSON.parse makes __proto__ / constructor / prototype OWN properties (an object literal would set the prototype).
  ["__proto__/constructor/prototype keys", () => JSON.parse('{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"prototype":{"polluted":"yes"},"type":"text","text":"p"}')],
  ["toJSON that throws", () => ({ toJSON() {
    throw new Error("toJSON threw");
  } })],
  ["toJSON returning undefined", () => ({ toJSON: () => undefined })],
  ["Date", () => new Date(0)],
  ["invalid Date", () => new Date(NaN)],
  ["Map", () => new Map([["type", "text"]])],
  ["Set", () => new Set([1, 2])],
  ["WeakMap", () => new WeakMap()],
  ["RegExp", () => /garbage/g],
  ["Uint8Array", () => new Uint8Array([1, 2, 3])],
  ["Float64Array of NaN", () => new Float64Array([NaN, Infinity])],
  ["ArrayBuffer", () => new ArrayBuffer(8)],
  ["DataView", () => new DataView(new ArrayBuffer(8))],
  ["Error object", () => new TypeError("a garbage error object")],
  ["promise of garbage", () => Promise.resolve(Symbol("in a promise"))],
  ["rejected promise", () => rejected(new Error("garbage rejection"))],
  ["promise rejecting with a non-Error", () => rejected(42)],
  ["thenable whose then throws", () => ({ then() {
    throw new Error("thenable's then threw");
  } })],
  ["promise whose own then throws", () => {
    const p = Promise.resolve({ content: [] });
    p.then = () => {
      throw new Error("promise's then threw");
    };
    return p;
  }],
  ["Object.create(Promise.prototype)", () => Object.create(Promise.prototype)],
  ["Object.create(AbortSignal.prototype)", () => Object.create(AbortSignal.prototype)],
  ["an already aborted AbortSignal", () => AbortSignal.abort()],
  ["async iterable whose next throws", () => ({ [Symbol.asyncIterator]() {
    return { next() {
      throw new Error("next threw");
    } };
  } })],
  ["iterable that yields garbage forever-ish (3 values)", () => [Symbol("a"), null, () => {}][Symbol.iterator]()],
  ["10,000 text blocks", () => Array.from({ length: 10_000 }, (_, i) => ({ type: "text", text: `block ${i}` }))],
  ["10,000 garbage blocks", () => Array.from({ length: 10_000 }, (_, i) => [null, i, "s", {}][i % 4])],
  ["block with a numeric type", () => ({ type: 5, text: "x" })],
  ["block with an unknown type", () => ({ type: "video", url: "x" })],
  ["message with a bad role", () => ({ role: "robot", content: "beep", timestamp: 1 })],
  ["a ScriptedModel (wrong class)", (_r, { tp }) => new tp.ScriptedModel([])],
  ["a ToolRegistry (wrong class)", (_r, { tp }) => new tp.ToolRegistry()],
  ["Object.create(ToolRegistry.prototype)", (_r, { tp }) => Object.create(tp.ToolRegistry.prototype)],
  ["same value, another JSON type", (_r, { original }) => flipped(original)],
  // Odd model messages (issue 26): read once, as the data JSON.stringify writes, whatever they answer later.
  ["a message whose content getter answers differently each read", () => {
    let reads = 0;
    return Object.defineProperty({ role: "assistant", stopReason: "toolUse", timestamp: 2 }, "content", { enumerable: true, get: () => ((reads += 1) === 1 ? [call("g1")] : [call("g2"), call("g3")]) });
  }],
  ["a message whose toJSON answers another message", () => ({ role: "assistant", content: [], stopReason: "stop", timestamp: 2, toJSON: () => assistant([call("j1")], "toolUse") })],
  ["a Proxy message whose stopReason flips", () => {
    let reads = 0;
    return new Proxy(assistant([call("p1")], "toolUse"), { get: (t, k) => (k === "stopReason" ? ((reads += 1) % 2 ? "toolUse" : "stop") : t[k]) });
  }],
  // Edited transcripts (issue 27): a line that answers, or calls, what it should not.
  ["a result for a call made elsewhere", () => toolResult("c1")],
  ["a result for no call", () => toolResult("ghost")],
  ["an assistant message repeating a call id", () => assistant([call("c1"), call("c1")], "toolUse")],
  // Forged handles (issue 27): what runAgentLoop looks a registry up by, never trusted as a pointer.
  ["a forged registry handle", () => ({ __tinyPiRegistry: () => 987654 })],
  ["a freed registry's handle", (_r, { tp }) => {
    const freed = new tp.ToolRegistry();
    const number = freed.__tinyPiRegistry();
    freed.free();
    return { __tinyPiRegistry: () => number, definitions: () => [], execute: () => ({ content: [] }) };
  }],
  ["a handle answering a pointer-like object", () => ({ __tinyPiRegistry: () => ({ __wbg_ptr: 8 }) })],
  // Pathological patterns (issue 27): matched in linear time, or refused at register naming the keyword.
  ["a schema with a backtracking pattern", () => ({ type: "string", pattern: "^(a+)+$" })],
  ["a schema with a lookbehind pattern", () => ({ type: "string", pattern: "(?<=a)b" })],
  ["a long near-miss for a nested quantifier", () => `${"a".repeat(5000)}!`],
];

export function garbage(r, ctx) {
  const [label, make] = r.pick(KINDS);
  return { label, value: make(r, ctx) };
}

// --- paths and mutation --------------------------------------------------------------------------

const isPlain = (v) => {
  if (v === null || typeof v !== "object") return false;
  if (isProxy(v)) return false;
  if (Array.isArray(v)) return true;
  if (v === null || typeof v !== "object") return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

// Proxies made here are remembered, so the walker never touches their traps.
const proxies = new WeakSet();
const isProxy = (v) => proxies.has(v);

/** Every path of a plain-data tree (class instances, functions and signals are leaves). */
export function paths(tree, prefix = []) {
  const out = [prefix];
  if (isPlain(tree)) {
    for (const key of Object.keys(tree)) out.push(...paths(tree[key], [...prefix, Array.isArray(tree) ? Number(key) : key]));
  }
  return out;
}

export const formatPath = (path) => path.map((s, i) => (typeof s === "number" ? `[${s}]` : i === 0 ? s : `.${s}`)).join("");

/** The value at `path`, or {found: false} (also when an earlier mutation left a throwing getter or proxy on the way). */
function at(tree, path) {
  let v = tree;
  try {
    for (const s of path) {
      if (!isPlain(v) || !Object.hasOwn(v, s)) return { found: false };
      v = v[s];
    }
  } catch {
    return { found: false };
  }
  return { found: true, value: v };
}

/** Applies one mutation in place; returns its description, or null when the path no longer exists. */
function mutate(tree, path, r, ctx) {
  const parentPath = path.slice(0, -1);
  const key = path.at(-1);
  const parent = at(tree, parentPath);
  const current = at(tree, path);
  if (!parent.found || !current.found || !isPlain(parent.value)) return null;
  const roll = r.next();
  if (path.length > 1 && roll < 0.15) {
    if (Array.isArray(parent.value)) parent.value.splice(key, 1);
    else delete parent.value[key];
    return { path, op: "delete", label: "missing" };
  }
  if (path.length > 1 && roll < 0.2) {
    Object.defineProperty(parent.value, key, { enumerable: true, configurable: true, get() {
      throw new Error("getter threw");
    } });
    return { path, op: "getter", label: "a getter that throws" };
  }
  const g = garbage(r, { ...ctx, original: current.value });
  parent.value[key] = g.value;
  return { path, op: "replace", label: g.label };
}

// --- valid calls of every entry point --------------------------------------------------------------

const text = (t) => ({ type: "text", text: t });
const user = (c) => ({ role: "user", content: c, timestamp: 1 });
const call = (id, args = { path: "README.md" }) => ({ type: "toolCall", id, name: "read", arguments: args });
const assistant = (content, stopReason) => ({ role: "assistant", content, stopReason, timestamp: 2 });
const toolResult = (id) => ({ role: "toolResult", toolCallId: id, toolName: "read", content: [text("# tiny-pi")], isError: false, timestamp: 3 });
const transcript = () => [user("read it"), assistant([text("reading"), call("c1")], "toolUse"), toolResult("c1"), assistant([{ type: "thinking", thinking: "done" }, text("tiny-pi")], "stop")];
const script = () => [assistant([text("reading"), call("s1")], "toolUse"), assistant([text("tiny-pi")], "stop")];
const readSchema = () => ({ type: "object", properties: { path: { type: "string", minLength: 1 }, lines: { type: "integer", minimum: 0 } }, required: ["path"], additionalProperties: false });

/** A JS model streaming pi-ai events for each scripted message (data only, so the mutator can reach it). */
function eventsFor(message) {
  const events = [{ type: "start", partial: { ...message, content: [] } }];
  message.content.forEach((block, contentIndex) => {
    if (block.type === "text") events.push({ type: "text_delta", contentIndex, delta: block.text });
    if (block.type === "toolCall") {
      events.push({ type: "toolcall_delta", contentIndex, delta: JSON.stringify(block.arguments) });
      events.push({ type: "toolcall_end", contentIndex, toolCall: block });
    }
  });
  events.push({ type: "done", reason: message.stopReason, message });
  return events;
}

/** stream() answers from `responses[i]`: {events, result?}; a non-plain response is returned as is. */
function dataModel(responses) {
  let i = 0;
  return {
    stream() {
      const response = responses[Math.min(i, responses.length - 1)];
      i += 1;
      if (!isPlain(response) || Array.isArray(response)) return response;
      const { events } = response;
      const stream = Array.isArray(events)
        ? (async function* () {
          for (const e of events) yield e;
        })()
        : { [Symbol.asyncIterator]: () => events };
      if ("result" in response) stream.result = () => response.result;
      return stream;
    },
  };
}

const isResult = (v) => v && typeof v === "object" && ["stop", "length", "error", "aborted", "maxSteps"].includes(v.reason) &&
  Array.isArray(v.messages) && Number.isInteger(v.steps);

/** A run whose model or tools misbehaved: must resolve (reason error => `error` set) with a paired transcript. */
function checkFaultRun(result, tp) {
  if (!isResult(result)) return { outcome: "malformed", message: `not a run result: ${describe(result)}` };
  if (result.reason === "error" && !(typeof result.error === "string" && result.error.length > 0)) {
    return { outcome: "malformed", message: "reason error without an error message" };
  }
  const v = tp.validateTranscript(result.messages);
  if (!v.ok) return { outcome: "malformed", message: `unpaired transcript: ${JSON.stringify(v.problems)}` };
  const toolError = result.messages.some((m) => m.role === "toolResult" && m.isError);
  return { outcome: result.reason === "error" || toolError ? "fault" : "completed", message: result.error };
}

function runOk(result) {
  return isResult(result) ? { outcome: "completed" } : { outcome: "malformed", message: `not a run result: ${describe(result)}` };
}

/**
 * The entry points. build(r, env) -> the argument tree (a plain object; its keys are the argument names);
 * call(tree, env) -> what the case resolved to ({outcome, message}); it throws/rejects on a rejection.
 * `skip` lists top-level names that every message repeats (so they do not count as naming the field).
 */
export const ENTRIES = [
  {
    // An edited session file (issue 27): refused naming its line, or resumed with every call answered once.
    name: "Agent.fromJSONL(line) + resume",
    skip: [],
    build: () => ({ line: [user("read it"), assistant([text("reading"), call("c1"), call("c2")], "toolUse"), toolResult("c1")] }),
    async call(tree, { tp, reg }) {
      // The file is text: garbage JSON cannot write (a cycle, a BigInt, a getter that throws) never reaches it.
      let jsonl;
      try {
        jsonl = tree.line.map((m) => JSON.stringify(m)).join("\n");
      } catch (e) {
        return { outcome: "completed", message: `no file to read: ${message(e)}` };
      }
      const agent = tp.Agent.fromJSONL(jsonl, { model: new tp.ScriptedModel([assistant([text("done")], "stop")]), tools: reg, maxSteps: 2 });
      const result = agent.pending ? await agent.resume({}) : await agent.prompt("go on");
      const checked = checkFaultRun(result, tp);
      if (checked.outcome === "malformed") return checked;
      // No call id is answered twice, whatever the file held.
      const ids = result.messages.filter((m) => m.role === "toolResult").map((m) => m.toolCallId);
      return new Set(ids).size === ids.length ? checked : { outcome: "malformed", message: `a call answered twice: ${ids.join(",")}` };
    },
  },
  {
    name: "runAgentLoop(options)",
    skip: ["options"],
    build(r, { tp, reg }) {
      const options = {
        context: { systemPrompt: "You are terse.", messages: r.chance(0.5) ? [user("hi")] : [...transcript(), user("again")] },
        model: r.chance(0.5) ? new tp.ScriptedModel(script()) : dataModel(script().map((m) => ({ events: eventsFor(m), result: m }))),
        tools: reg,
        signal: new AbortController().signal,
        maxSteps: 8,
        onEvent: () => {},
        now: () => 7,
      };
      if (r.chance(0.3)) options.executeToolCall = async (c) => ({ role: "toolResult", toolCallId: c.id, toolName: c.name, content: [text("ok")], isError: false, timestamp: 5 });
      return { options };
    },
    call: async (tree, { tp }) => runOk(await tp.runAgentLoop(tree.options)),
  },
  {
    name: "new ScriptedModel(messages) + a run",
    skip: [],
    build: () => ({ messages: script() }),
    async call(tree, { tp, reg }) {
      const model = new tp.ScriptedModel(tree.messages);
      try {
        const result = await tp.runAgentLoop({ context: { messages: [user("hi")] }, model, tools: reg });
        return checkFaultRun(result, tp);
      } finally {
        model.free();
      }
    },
  },
  {
    name: "ScriptedModel.stream(request, options)",
    skip: [],
    build: (r) => ({ request: { systemPrompt: "s", messages: transcript(), tools: [{ name: "read", description: "d", parameters: readSchema() }] }, options: { signal: r.chance(0.5) ? new AbortController().signal : undefined } }),
    async call(tree, { tp }) {
      const model = new tp.ScriptedModel(script());
      // A refused request must leave the model usable: its next (good) request replays the first message.
      return withObject(model, "the ScriptedModel", async () => {
        const stream = model.stream(tree.request, tree.options);
        for await (const e of stream) if (!e || typeof e.type !== "string") return { outcome: "malformed", message: `event ${describe(e)}` };
        const message = await stream.result();
        return message?.role === "assistant" ? { outcome: "completed" } : { outcome: "malformed", message: describe(message) };
      }, async () => {
        const stream = model.stream({ messages: [user("again")], tools: [] }, {});
        for await (const _ of stream);
        return (await stream.result())?.role === "assistant";
      });
    },
  },
  {
    name: "ToolRegistry.register(tool) + execute",
    skip: [],
    build: () => ({ tool: { name: "read", description: "Read a file", parameters: readSchema(), execute: async (args) => ({ content: [text(`read ${args.path}`)] }) } }),
    async call(tree, { tp }) {
      const reg = new tp.ToolRegistry();
      // A refused tool must leave the registry usable: it still registers and runs a good tool.
      return withObject(reg, "the ToolRegistry", async () => {
        reg.register(tree.tool);
        const defs = reg.definitions();
        if (!Array.isArray(defs) || defs.length !== 1) return { outcome: "malformed", message: `definitions() ${describe(defs)}` };
        const result = await reg.execute(call("x1"), {});
        if (result?.role !== "toolResult" || result.toolCallId !== "x1") return { outcome: "malformed", message: describe(result) };
        return { outcome: result.isError ? "fault" : "completed", message: result.content?.[0]?.text };
      }, async () => {
        reg.register({ name: "other", execute: () => ({ content: [text("fine")] }) });
        const r = await reg.execute({ type: "toolCall", id: "o1", name: "other", arguments: {} });
        return r?.isError === false;
      });
    },
  },
  {
    name: "ToolRegistry.execute(call, context)",
    skip: [],
    build: (r) => ({ call: call("e1", { path: "README.md", lines: 3 }), context: { signal: new AbortController().signal, reportProgress: r.chance(0.5) ? () => {} : undefined } }),
    async call(tree, { reg }) {
      const result = await reg.execute(tree.call, tree.context);
      if (result?.role !== "toolResult" || typeof result.toolCallId !== "string") return { outcome: "malformed", message: describe(result) };
      return { outcome: result.isError ? "fault" : "completed", message: result.content?.[0]?.text };
    },
  },
  {
    name: "validateTranscript(messages)",
    skip: [],
    build: () => ({ messages: transcript() }),
    call(tree, { tp }) {
      const v = tp.validateTranscript(tree.messages);
      return typeof v?.ok === "boolean" && Array.isArray(v.problems) ? { outcome: "completed" } : { outcome: "malformed", message: describe(v) };
    },
  },
  {
    name: "prologueTrace(messages)",
    skip: [],
    build: () => ({ messages: transcript() }),
    call(tree, { tp }) {
      const records = tp.prologueTrace(tree.messages);
      return Array.isArray(records) ? { outcome: "completed" } : { outcome: "malformed", message: describe(records) };
    },
  },
  {
    name: "formatTrace(records)",
    skip: [],
    build: (_r, { tp }) => ({ records: tp.prologueTrace(transcript()) }),
    call(tree, { tp }) {
      const out = tp.formatTrace(tree.records);
      return typeof out === "string" ? { outcome: "completed" } : { outcome: "malformed", message: describe(out) };
    },
  },
  {
    name: "validateTrace(records)",
    skip: [],
    build: (_r, { tp }) => ({ records: tp.prologueTrace(transcript()) }),
    call(tree, { tp }) {
      const v = tp.validateTrace(tree.records);
      return typeof v?.ok === "boolean" && Array.isArray(v.problems) ? { outcome: "completed" } : { outcome: "malformed", message: describe(v) };
    },
  },
  {
    // A JS model whose stream yields garbage events, whose result() resolves garbage, or whose stream() returns garbage.
    name: "a JS model's stream",
    fault: true,
    skip: [],
    build: (r) => ({ responses: script().map((m) => (r.chance(0.6) ? { events: eventsFor(m), result: m } : { events: eventsFor(m) })) }),
    async call(tree, { tp, reg }) {
      return checkFaultRun(await tp.runAgentLoop({ context: { messages: [user("hi")] }, model: dataModel(tree.responses), tools: reg }), tp);
    },
  },
  {
    name: "a registered tool's result",
    fault: true,
    skip: [],
    build: (r) => ({ returned: { content: [text("half"), { type: "image", data: "AAAA", mimeType: "image/png" }], details: { lines: 2 }, isError: false }, progress: r.chance(0.5) ? [text("25%")] : undefined }),
    async call(tree, { tp }) {
      const reg = new tp.ToolRegistry();
      reg.register({ name: "read", execute: (_args, ctx) => {
        if (tree.progress !== undefined) {
          try {
            ctx.reportProgress(tree.progress);
          } catch (e) {
            if (!(e instanceof Error)) throw new Error(`reportProgress threw a non-Error: ${describe(e)}`);
          }
        }
        return tree.returned;
      } });
      const model = new tp.ScriptedModel(script());
      try {
        return checkToolRun(await tp.runAgentLoop({ context: { messages: [user("hi")] }, model, tools: reg }), tp);
      } finally {
        model.free();
        reg.free();
      }
    },
  },
  {
    name: "executeToolCall's reply",
    fault: true,
    skip: [],
    build: () => ({ reply: { role: "toolResult", toolCallId: "s1", toolName: "read", content: [text("ok")], details: { n: 1 }, isError: false, timestamp: 5 } }),
    async call(tree, { tp }) {
      const model = new tp.ScriptedModel(script());
      try {
        return checkToolRun(await tp.runAgentLoop({ context: { messages: [user("hi")] }, model, executeToolCall: () => tree.reply }), tp);
      } finally {
        model.free();
      }
    },
  },
  {
    // What onEvent returns is awaited when it is a promise/thenable; garbage must not stop the run (SPEC §4).
    name: "onEvent's return value",
    fault: true,
    skip: [],
    build: () => ({ returned: undefined }),
    async call(tree, { tp, reg }) {
      const model = new tp.ScriptedModel(script());
      try {
        const result = await tp.runAgentLoop({ context: { messages: [user("hi")] }, model, tools: reg, onEvent: () => tree.returned });
        const checked = checkFaultRun(result, tp);
        if (checked.outcome === "completed" && result.reason !== "stop") return { outcome: "malformed", message: `reason ${result.reason}` };
        return checked;
      } finally {
        model.free();
      }
    },
  },
];

/**
 * Runs `fn` on a tiny-pi object; whether it resolved or threw, the object must still work (`stillWorks`) and
 * free() cleanly. A failure there is reported as malformed, and never hides the call's own error.
 */
async function withObject(object, name, fn, stillWorks) {
  let outcome;
  let thrown;
  try {
    outcome = await fn();
  } catch (e) {
    thrown = { e };
  }
  let broken;
  try {
    if (!(await stillWorks())) broken = "a good call on it failed";
  } catch (e) {
    broken = message(e);
  }
  try {
    object.free();
  } catch (e) {
    broken ??= `free() threw: ${message(e)}`;
  }
  if (broken) {
    const first = thrown ? `the call threw "${message(thrown.e)}"; ` : "";
    return { outcome: "malformed", message: `${first}then ${name} was unusable: ${broken}` };
  }
  if (thrown) throw thrown.e;
  return outcome;
}

/** A run whose single tool call answered garbage: it resolves, the call has exactly one result, paired. */
function checkToolRun(result, tp) {
  const checked = checkFaultRun(result, tp);
  if (checked.outcome === "malformed") return checked;
  const r = result.messages[2];
  if (r?.role !== "toolResult" || r.toolCallId !== "s1") return { outcome: "malformed", message: `messages[2] ${describe(r)}` };
  return checked;
}

// --- one case ------------------------------------------------------------------------------------

/** A short, safe description of any value (never throws, never huge). */
export function describe(v) {
  try {
    if (typeof v === "string") return JSON.stringify(v.length > 120 ? `${v.slice(0, 120)}…` : v);
    if (typeof v === "bigint") return `${v}n`;
    if (typeof v === "symbol" || typeof v === "function" || v === undefined) return String(v);
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s.length > 160 ? `${s.slice(0, 160)}…` : s;
  } catch {
    return Object.prototype.toString.call(v);
  }
}

/** The words a helpful message would use: each mutated path's string segments (minus the entry's `skip`). */
export function fieldNames(mutations, entry) {
  const names = new Set();
  for (const { path } of mutations) {
    const segments = path.filter((s) => typeof s === "string");
    const useful = segments.filter((s) => !entry.skip.includes(s));
    for (const s of useful.length ? useful : segments) names.add(s);
  }
  return [...names];
}

/** Builds case i: an entry, its valid arguments, and one or two mutations. */
export function makeCase(seed, i, env) {
  const r = caseRng(seed, i);
  const entry = ENTRIES[r.int(ENTRIES.length)];
  const tree = entry.build(r, env);
  const all = paths(tree).filter((p) => p.length > 0);
  const picks = [r.pick(all)];
  if (r.chance(0.35)) picks.push(r.pick(all));
  const mutations = picks.map((p) => {
    try {
      return mutate(tree, p, r, env);
    } catch {
      return null; // the first mutation froze or replaced what the second one aimed at
    }
  }).filter(Boolean);
  const what = `${entry.name}: ${mutations.map((m) => `${formatPath(m.path)} := ${m.label}`).join("; ")}`;
  return { i, entry, tree, mutations, what };
}

const message = (e) => {
  try {
    return String(e?.message ?? e);
  } catch {
    return Object.prototype.toString.call(e);
  }
};

/**
 * Classifies what a call did. `settled` is {ok: value} | {error} | {hang: true}; `escapes` the host-level
 * errors seen while the case ran.
 */
export function classify(c, settled, escapes) {
  if (settled.error !== undefined || "error" in settled) {
    const e = settled.error;
    const m = message(e);
    if (e instanceof WebAssembly.RuntimeError || /unreachable|RuntimeError|panicked/i.test(m)) return { outcome: "trap", message: m };
    if (escapes.length) return { outcome: "escape", message: escapes.join(" | ") };
    if (!(e instanceof Error)) return { outcome: "non-error", message: describe(e) };
    const names = fieldNames(c.mutations, c.entry);
    if (c.entry.fault && /model|stream|event|result|tool|execute|onEvent/i.test(m)) return { outcome: "named", message: m };
    return names.some((n) => m.includes(n)) ? { outcome: "named", message: m } : { outcome: "unnamed", message: `${m} (expected a mention of ${names.join(" / ")})` };
  }
  if (escapes.length) {
    const trapped = escapes.some((m) => /unreachable|RuntimeError/i.test(m));
    return { outcome: trapped ? "trap" : "escape", message: `${escapes.join(" | ")}${settled.hang ? " (and the call never settled)" : ""}` };
  }
  if (settled.hang) return { outcome: "hang", message: "the call did not settle" };
  return settled.ok;
}

/** Resolves with {ok} / {error} / {hang}; stops waiting early once an exception escaped and things went quiet. */
async function settle(fn, { deadlineMs, escapes, macrotask }) {
  let done;
  const p = (async () => fn())().then((ok) => (done = { ok }), (error) => (done = { error }));
  const start = Date.now();
  let quietTurns = 0;
  while (!done) {
    await Promise.race([p, macrotask()]);
    if (done) break;
    if (escapes.length && ++quietTurns > 20) return { hang: true };
    if (Date.now() - start > deadlineMs) return { hang: true };
  }
  return done;
}

/**
 * Runs cases [from, to) on one instance. env: { tp, macrotask(), onEscape(fn) -> uninstall, deadlineMs, report(line) }.
 * Stops early when the instance is poisoned (the good run after a case failed): returns { next, poisoned }.
 */
export async function runCases(env, { seed, from, to, regressions = false }) {
  const escapes = [];
  const uninstall = env.onEscape((m) => escapes.push(m));
  const reg = new env.tp.ToolRegistry();
  reg.register({ name: "read", description: "Read a file", parameters: readSchema(), execute: async (args) => ({ content: [text(`read ${args.path}`)] }) });
  const ctx = { ...env, reg };
  try {
    for (let i = from; i < to; i += 1) {
      escapes.length = 0;
      let c;
      let result;
      try {
        c = regressions ? makeRegression(i, ctx) : makeCase(seed, i, ctx);
      } catch (e) {
        // A bug in the generator, not in tiny-pi: say so loudly.
        env.report({ i, outcome: "generator-error", what: `case ${i}`, message: message(e) });
        continue;
      }
      env.report({ start: i, what: c.what });
      result = await runOne(c, ctx, escapes);
      // A repeated case (see REGRESSIONS) makes the same call again on fresh arguments; its verdict is its
      // first disallowed outcome, and the good run afterwards shows whether the repeats wore the instance out.
      for (let k = 1; k < (c.repeat ?? 1); k += 1) {
        const again = await runOne(regressions ? makeRegression(i, ctx) : c, ctx, escapes);
        if (ALLOWED.includes(result.outcome) && !ALLOWED.includes(again.outcome)) result = { ...again, message: `call ${k + 1} of ${c.repeat}: ${again.message}` };
      }
      const good = await goodRun(ctx, escapes);
      const line = { i, entry: c.entry.name, outcome: result.outcome, what: c.what };
      if (result.outcome !== "completed" && result.message) line.message = String(result.message).slice(0, 400);
      if (!good.ok) {
        line.outcome = "trap";
        line.message = `${line.message ? `${line.message}; ` : ""}the good run after it failed: ${good.why}`;
        env.report(line);
        return { next: i + 1, poisoned: true };
      }
      env.report(line);
    }
    return { next: to, poisoned: false };
  } finally {
    uninstall();
    try {
      reg.free();
    } catch {}
  }
}

async function runOne(c, ctx, escapes) {
  escapes.length = 0;
  const settled = await settle(() => c.entry.call(c.tree, ctx), { deadlineMs: ctx.deadlineMs, escapes, macrotask: ctx.macrotask });
  // Let stray microtasks of this case surface before judging it and before the good run.
  for (let k = 0; k < 3; k += 1) await ctx.macrotask();
  return classify(c, settled, escapes);
}

/** The README round trip on the same instance, plus a run through the shared registry. */
async function goodRun(ctx, escapes) {
  escapes.length = 0;
  const settled = await settle(async () => {
    const { problems } = await readmeRoundTrip(ctx.tp);
    if (problems.length) throw new Error(problems.join("; "));
    const { input, script: s } = readmeScript();
    const model = new ctx.tp.ScriptedModel(s);
    const r = await ctx.tp.runAgentLoop({ context: { messages: input }, model, tools: ctx.reg });
    model.free();
    if (r.reason !== "stop" || r.messages[2]?.isError) throw new Error(`shared registry run: ${describe(r)}`);
  }, { deadlineMs: ctx.deadlineMs, escapes, macrotask: ctx.macrotask });
  if (escapes.length) return { ok: false, why: escapes.join(" | ") };
  if (settled.hang) return { ok: false, why: "it did not settle" };
  if ("error" in settled) return { ok: false, why: message(settled.error) };
  return { ok: true };
}

// --- findings kept as explicit cases ------------------------------------------------------------------

const throwingThen = () => {
  const p = Promise.resolve({ content: [text("never seen")] });
  p.then = () => {
    throw new Error("promise's then threw");
  };
  return p;
};

/** A schema nesting `keyword` `depth` times around {type: "integer"} (so the string argument fails at the bottom). */
export function nestedSchema(keyword, depth) {
  let schema = { type: "integer" };
  for (let k = 0; k < depth; k += 1) schema = { [keyword]: [schema] };
  return { type: "object", properties: { path: schema } };
}

/**
 * Inputs the generator found (or that are its kinds at the one place where they hurt), each as a fixed case:
 * [name, entry name, {repeat}?, [path, label, value(env)]...]. Run in order by `runCases(env, {regressions: true})`.
 */
export const REGRESSIONS = [
  ["signal made with Object.create(AbortSignal.prototype)", "runAgentLoop(options)", [["options", "signal"], "Object.create(AbortSignal.prototype)", () => Object.create(AbortSignal.prototype)]],
  ["onEvent returns a promise whose own then throws", "onEvent's return value", [["returned"], "promise whose own then throws", throwingThen]],
  ["onEvent returns Object.create(Promise.prototype)", "onEvent's return value", [["returned"], "Object.create(Promise.prototype)", () => Object.create(Promise.prototype)]],
  ["a tool returns a promise whose own then throws", "a registered tool's result", [["returned"], "promise whose own then throws", throwingThen]],
  ["executeToolCall returns a promise whose own then throws", "executeToolCall's reply", [["reply"], "promise whose own then throws", throwingThen]],
  ["a model's result() gives Object.create(Promise.prototype)", "a JS model's stream", [["responses", 0, "result"], "Object.create(Promise.prototype)", () => Object.create(Promise.prototype)]],
  ["context.messages is a revoked Proxy", "runAgentLoop(options)", [["options", "context", "messages"], "revoked array Proxy", () => revoked([])]],
  ["validateTranscript(a revoked Proxy)", "validateTranscript(messages)", [["messages"], "revoked array Proxy", () => revoked([])]],
  ["ScriptedModel.stream(request, options whose getters throw)", "ScriptedModel.stream(request, options)", [["options"], "Proxy that throws on every trap", () => throwingProxy()]],
  // The exception unwinds out of register() while the registry is borrowed: the object stays locked for good.
  ["register({description: a revoked Proxy}), then the same registry", "ToolRegistry.register(tool) + execute", [["tool", "description"], "revoked Proxy", () => revoked({})]],
  // One escaped exception also leaves the wasm shadow stack pointer lowered (the frames it unwound never
  // restored it): a few thousand of them and every later call fails with "memory access out of bounds".
  ["validateTranscript(a revoked Proxy), 10,000 times", "validateTranscript(messages)", { repeat: 10_000 }, [["messages"], "revoked array Proxy", () => revoked([])]],
  ["signal made with Object.create(AbortSignal.prototype), 3,000 runs", "runAgentLoop(options)", { repeat: 3_000 }, [["options", "signal"], "Object.create(AbortSignal.prototype)", () => Object.create(AbortSignal.prototype)]],
  ["onEvent returns Object.create(Promise.prototype), 2,000 runs", "onEvent's return value", { repeat: 2_000 }, [["returned"], "Object.create(Promise.prototype)", () => Object.create(Promise.prototype)]],
  // Control: errors the bridge raises itself unwind nothing, so the same count of them leaves the instance fine.
  ["control: a bad field the bridge reports itself (user content 42), 5,000 runs", "runAgentLoop(options)", { repeat: 5_000 }, [["options", "context", "messages", 0, "content"], "42", () => 42]],
  // A promise where SPEC wants a value: not awaited, and its rejection must not reach the host unhandled.
  ["options.now is an async function that throws", "runAgentLoop(options)", [["options", "now"], "async function that throws", () => async () => { throw new Error("garbage function threw"); }]],
  ["options.model.stream is an async function that throws", "runAgentLoop(options)", [["options", "model", "stream"], "async function that throws", () => async () => { throw new Error("garbage function threw"); }]],
  // An app's code that calls the package while the package reads it, without end: ~300 deep, the wasm stack ran out.
  ["validateTranscript([a message whose toJSON validates it again])", "validateTranscript(messages)", [["messages", 0], "message whose toJSON calls validateTranscript on it", ({ tp }) => {
    const message = { toJSON: () => (tp.validateTranscript([message]), { role: "user", content: "go", timestamp: 1 }) };
    return message;
  }]],
  ["tool parameters: anyOf nested 40 deep, arguments failing at the bottom", "ToolRegistry.register(tool) + execute", [["tool", "parameters"], "anyOf nested 40 deep", () => nestedSchema("anyOf", 40)]],
  ["tool parameters: oneOf nested 40 deep, arguments failing at the bottom", "ToolRegistry.register(tool) + execute", [["tool", "parameters"], "oneOf nested 40 deep", () => nestedSchema("oneOf", 40)]],
];

export function makeRegression(k, env) {
  const [name, entryName, ...rest] = REGRESSIONS[k];
  const { repeat } = Array.isArray(rest[0]) ? {} : rest.shift();
  const changes = rest;
  const entry = ENTRIES.find((e) => e.name === entryName);
  const tree = entry.build(rng(k), env);
  const mutations = changes.map(([path, label, value]) => {
    const parent = at(tree, path.slice(0, -1)).value;
    parent[path.at(-1)] = value(env);
    return { path, op: "replace", label };
  });
  return { i: k, entry, tree, mutations, repeat, what: `regression "${name}": ${entry.name}: ${mutations.map((m) => `${formatPath(m.path)} := ${m.label}`).join("; ")}` };
}

/** Tallies report lines into counts per outcome and the distinct findings. */
export function tally(lines) {
  const counts = Object.fromEntries([...ALLOWED, ...FINDINGS, "generator-error"].map((k) => [k, 0]));
  const findings = [];
  for (const l of lines) {
    if (!("outcome" in l)) continue;
    counts[l.outcome] = (counts[l.outcome] ?? 0) + 1;
    if (!ALLOWED.includes(l.outcome)) findings.push(l);
  }
  return { counts, findings, total: lines.filter((l) => "outcome" in l).length };
}

export function summary({ counts, total }, where, seed, seconds) {
  const bad = [...FINDINGS, "generator-error"].map((k) => `${counts[k]} ${k}`).join(", ");
  return `garbage (${where}, seed ${seed}): ${total} cases in ${seconds.toFixed(1)}s: ${counts.named} rejected naming the field, ` +
    `${counts.completed} completed, ${counts.fault} model/tool faults -> reason error / error result; findings: ${bad}`;
}
