// The conformance check: runs any `runAgentLoop(options)` against the cases of cases.json and says, per case,
// what differs from what SPEC §4 fixes. No imports and no platform API beyond timers and structuredClone, so
// the same file runs in Node (cli.js) and in the playground's sandboxed worker.
//
// The loop gets SPEC §4's options only, built from the case: `context`, a `model` of this file's own
// (`stream(request, {signal})`, the compact event grammar of SPEC §2, with `result()`), `tools` (an object with
// `definitions()` and `execute(call, {signal, reportProgress})`), `onEvent`, `signal`, `maxSteps`, `now`, and
// `executeToolCall` in the cases whose executor is the caller's. A loop written from chapter 07 needs no adapter.
//
// What is compared is what SPEC fixes and nothing more: the events (their SPEC fields, in order), the transcript,
// the reason and steps, what each model request held when it was made, which calls ran, and that the caller's
// messages were left alone. Not compared: timestamps of tool results, the text of a skipped result (except for
// `length`, whose text the chapter fixes), the text around a rejected executor's message, whether a request's
// array is shared with later appends, whether onEvent's promise is awaited, `result.error`.

/** A case that has not settled by then is reported as timed out (the loop is left to itself). */
export const DEFAULT_TIME_LIMIT_MS = 2000;
/** The clock handed to the loop as `options.now`. */
const CLOCK = 1000;

const clone = (value) => (value === undefined ? undefined : structuredClone(value));

/** JSON with object keys sorted: equal values give equal text whatever their key order. */
export function canonical(value) {
  return JSON.stringify(value ?? null, (key, v) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

/** A copy that survives whatever the loop hands us (functions and cycles become a note, not a crash). */
function snapshot(value) {
  try {
    return structuredClone(value);
  } catch {
    try {
      return JSON.parse(JSON.stringify(value));
    } catch (err) {
      return { unreadable: String(err?.message ?? err) };
    }
  }
}

const text = (t) => ({ type: "text", text: t });
const toContent = (value) => (typeof value === "string" ? [text(value)] : clone(value ?? []));

// --- the world of one case: model, tools, gates ------------------------------------------------------

/** SPEC §2's compact grammar for one scripted assistant message (what tiny-pi's ScriptedModel emits). */
export function compactEvents(message) {
  const events = [{ type: "start" }];
  message.content.forEach((block, contentIndex) => {
    if (block.type === "text") events.push({ type: "text_delta", contentIndex, delta: block.text });
    else if (block.type === "thinking") events.push({ type: "thinking_delta", contentIndex, delta: block.thinking });
    else if (block.type === "toolCall") {
      events.push({ type: "toolcall_delta", contentIndex, delta: JSON.stringify(block.arguments) });
      events.push({ type: "toolcall_end", contentIndex, toolCall: block });
    }
  });
  const failed = message.stopReason === "error" || message.stopReason === "aborted";
  events.push(failed ? { type: "error", reason: message.stopReason, error: message } : { type: "done", reason: message.stopReason, message });
  return events;
}

function scriptedStream(message) {
  const events = compactEvents(message);
  return {
    async *[Symbol.asyncIterator]() {
      for (const event of events) yield clone(event);
    },
    result: async () => clone(message),
  };
}

/** The definitions the case's tools are offered with, in the case's order. */
export function definitionsOf(def) {
  return Object.entries(def.tools ?? {}).map(([name, b]) => ({ name, description: b.description ?? "", parameters: clone(b.parameters ?? { type: "object" }) }));
}

/**
 * Everything the loop is handed for one case, and what it did with it. Gated tools (`gate: true`) wait until
 * every call in `def.release` has started, then are released in that order, one macrotask apart, so each
 * `tool_end` can be emitted before the next call finishes: a loop that runs a batch one call at a time never
 * starts the second call, and the case times out saying so.
 */
function world(kase) {
  const def = kase.def;
  const seen = { requests: [], executions: [], events: [], problems: [] };
  const controller = new AbortController();
  const script = clone(def.script);
  const release = def.release ?? [];
  const gates = new Map();
  let releasing = false;

  const model = {
    stream(request, streamOptions) {
      seen.requests.push(snapshot(request));
      if (streamOptions?.signal !== controller.signal) seen.problems.push(`model request ${seen.requests.length} was not given options.signal (SPEC §2: stream(request, { signal }))`);
      const message = script[seen.requests.length - 1];
      if (message) return scriptedStream(message);
      seen.problems.push(`the loop made model request ${seen.requests.length}; the case has ${script.length} model response(s)`);
      return scriptedStream({ role: "assistant", content: [], stopReason: "error", errorMessage: "no scripted response left", timestamp: CLOCK });
    },
  };

  async function releaseAll() {
    releasing = true;
    for (const id of release) {
      gates.get(id)?.();
      // One macrotask: every microtask the release started (the loop's tool_end included) runs first.
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }

  async function execute(call, context, via) {
    if (via === "tools" && def.executor === "custom") seen.problems.push(`options.tools.execute ran ${call?.id} although options.executeToolCall was given (SPEC §3: it replaces the executor)`);
    seen.executions.push(call?.id);
    const b = def.tools?.[call?.name] ?? {};
    if (def.abort === "during-tool") controller.abort();
    if (b.gate) {
      await new Promise((resolve) => {
        gates.set(call.id, resolve);
        if (!releasing && release.every((id) => gates.has(id))) releaseAll();
      });
    }
    if (b.progress !== undefined) context?.reportProgress?.(toContent(b.progress));
    if (typeof b.reject === "string") throw new Error(b.reject);
    const result = { role: "toolResult", toolCallId: call.id, toolName: call.name, content: toContent(b.answer ?? ""), isError: b.isError === true, timestamp: CLOCK };
    if (b.details !== undefined) result.details = clone(b.details);
    return result;
  }

  const options = {
    context: { messages: clone(def.messages) },
    model,
    tools: { definitions: () => definitionsOf(def), execute: (call, context) => execute(call, context, "tools") },
    onEvent: (event) => {
      seen.events.push(snapshot(event));
    },
    signal: controller.signal,
    maxSteps: def.maxSteps ?? 32,
    now: () => CLOCK,
  };
  if (def.systemPrompt !== undefined) options.context.systemPrompt = def.systemPrompt;
  if (def.executor === "custom") options.executeToolCall = (call, context) => execute(call, context, "executeToolCall");
  if (def.abort === "before-start") controller.abort();
  return { options, seen, input: clone(options.context.messages) };
}

// --- what is compared ------------------------------------------------------------------------------------

/**
 * A tool result as far as SPEC fixes it, read the way `expected` is: a skipped result by its id, name, error
 * flag, `details.skipped`/`reason` and one text block (its text only for `length`); a rejected executor's
 * result by whether its text keeps the message and drops the stack; every result without its timestamp.
 */
function resultView(result, expected, def) {
  if (!result || typeof result !== "object") return result;
  const { timestamp, ...rest } = result;
  // Loosened only when both are skipped results for the same reason: anything else shows as it is.
  const reason = expected?.details?.skipped && rest.details?.skipped === true && rest.details?.reason === expected.details.reason ? expected.details.reason : null;
  if (reason) {
    const content = Array.isArray(rest.content) ? rest.content : [];
    const loose = content.length === 1 && content[0]?.type === "text" && typeof content[0].text === "string";
    return {
      role: rest.role,
      toolCallId: rest.toolCallId,
      toolName: rest.toolName,
      isError: rest.isError,
      details: { skipped: true, reason },
      content: reason === "length" || !loose ? rest.content : [{ type: "text", text: "(any one sentence)" }],
    };
  }
  const rejected = def.executor === "custom" ? def.tools?.[expected?.toolName]?.reject : undefined;
  if (typeof rejected === "string" && expected?.isError) {
    const said = (rest.content ?? []).map((b) => b?.text ?? "").join("\n");
    const kept = said.includes(rejected) && !/\n\s+at /.test(said);
    return { ...rest, content: kept ? `(the text keeps "${rejected}", no stack)` : rest.content, ...(expected.details === undefined ? { details: undefined } : {}) };
  }
  return rest;
}

function messageView(message, expected, def) {
  return message?.role === "toolResult" ? resultView(message, expected, def) : message;
}

/** An event's SPEC §4 fields; anything else the loop adds is not compared. */
function eventView(event, expected, def) {
  switch (event?.type) {
    case "model_event":
      return { type: event.type, event: event.event };
    case "assistant_message":
      return { type: event.type, message: event.message };
    case "tool_start":
      return { type: event.type, call: event.call };
    case "tool_progress":
      return { type: event.type, callId: event.callId, content: event.content };
    case "tool_end":
    case "tool_skipped":
      return { type: event.type, result: resultView(event.result, expected?.result, def) };
    case "turn_end":
      return { type: event.type, reason: event.reason, steps: event.steps };
    default:
      return event;
  }
}

const short = (value, max = 400) => {
  const s = JSON.stringify(value) ?? String(value);
  return s.length > max ? `${s.slice(0, max)}…` : s;
};

/** The first index where two lists differ (by canonical JSON), or -1. */
function firstDifference(expected, actual) {
  const n = Math.max(expected.length, actual.length);
  for (let i = 0; i < n; i++) if (canonical(expected[i]) !== canonical(actual[i])) return i;
  return -1;
}

/** A line diff of two transcripts, one message a line: `  ` same, `- ` expected only, `+ ` the loop's only. */
export function transcriptDiff(expected, actual) {
  const a = expected.map((m) => short(m, 300));
  const b = actual.map((m) => short(m, 300));
  const ka = expected.map(canonical);
  const kb = actual.map(canonical);
  // Longest common subsequence over whole messages: a transcript is a few messages long.
  const lcs = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--) lcs[i][j] = ka[i] === kb[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const lines = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && ka[i] === kb[j]) {
      lines.push(`  ${i}: ${a[i]}`);
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lcs[i][j + 1] >= lcs[i + 1][j])) {
      lines.push(`+ ${j}: ${b[j]}`);
      j++;
    } else {
      lines.push(`- ${i}: ${a[i]}`);
      i++;
    }
  }
  return lines;
}

/** What each model request must have held when it was made: the expected transcript up to the k-th response. */
function expectedRequests(kase) {
  const { def, expect } = kase;
  const requests = [];
  expect.messages.forEach((m, index) => {
    if (m.role === "assistant" && index >= def.messages.length) requests.push(expect.messages.slice(0, index));
  });
  return requests.slice(0, expect.steps);
}

function compare(kase, result, seen, input, options) {
  const { def, expect } = kase;
  const problems = [...seen.problems];
  const report = { firstEvent: null, transcriptDiff: null };
  if (!result || typeof result !== "object" || !Array.isArray(result.messages)) {
    problems.push(`runAgentLoop resolved to ${short(result, 200)}; expected { reason, messages, steps }`);
    return { problems, ...report };
  }
  if (result.reason !== expect.reason) problems.push(`reason: expected "${expect.reason}", got ${short(result.reason)}`);
  if (result.steps !== expect.steps) problems.push(`steps: expected ${expect.steps}, got ${short(result.steps)}`);

  // Events, each seen through the expected event at its place.
  const want = expect.events.map((e) => eventView(e, e, def));
  const got = seen.events.map((e, i) => eventView(e, expect.events[i], def));
  const at = firstDifference(want, got);
  if (at >= 0) {
    report.firstEvent = { index: at, expected: want[at], actual: got[at] };
    problems.push(`events differ from event ${at + 1} on (of ${want.length} expected, ${got.length} emitted)`);
  }

  // The transcript, each message seen through the expected message at its place.
  const wantMessages = expect.messages.map((m) => messageView(m, m, def));
  const gotMessages = result.messages.map((m, i) => messageView(m, expect.messages[i], def));
  if (firstDifference(wantMessages, gotMessages) >= 0) {
    report.transcriptDiff = transcriptDiff(wantMessages, gotMessages);
    problems.push(`transcript differs (${wantMessages.length} messages expected, ${gotMessages.length} returned)`);
  }

  // Each model request as the model received it (SPEC §2, and chapter 07's "what the second request sees").
  const requests = expectedRequests(kase);
  if (seen.requests.length !== requests.length) problems.push(`model requests: expected ${requests.length}, the loop made ${seen.requests.length}`);
  const definitions = definitionsOf(def);
  seen.requests.slice(0, requests.length).forEach((request, k) => {
    const n = k + 1;
    if (canonical(request?.tools) !== canonical(definitions)) problems.push(`request ${n}: tools must be options.tools.definitions() (got ${short(request?.tools, 200)})`);
    if (request?.systemPrompt !== def.systemPrompt) problems.push(`request ${n}: systemPrompt must be context.systemPrompt (got ${short(request?.systemPrompt, 120)})`);
    const wantSeen = requests[k].map((m) => messageView(m, m, def));
    const gotSeen = (Array.isArray(request?.messages) ? request.messages : []).map((m, i) => messageView(m, requests[k][i], def));
    if (firstDifference(wantSeen, gotSeen) >= 0) problems.push(`request ${n}: messages differ from the transcript so far:\n${transcriptDiff(wantSeen, gotSeen).map((l) => `      ${l}`).join("\n")}`);
  });

  // Which calls ran: the chapter's "executionCount" (none for length, error, aborted, stop with calls).
  const ran = expect.events.filter((e) => e.type === "tool_start").map((e) => e.call.id);
  if (canonical(seen.executions) !== canonical(ran)) problems.push(`calls executed: expected [${ran.join(", ")}], the loop ran [${seen.executions.join(", ")}]`);

  if (canonical(options.context.messages) !== canonical(input)) problems.push("the caller's context.messages was changed (SPEC §4: copied at the start, never modified)");
  return { problems, ...report };
}

// --- running ----------------------------------------------------------------------------------------------

function timeLimit(ms) {
  let timer;
  const promise = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ timedOut: true }), ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/**
 * Runs the loop on one case's world, within the time limit. Resolves to `{ result }`, `{ threw }` or
 * `{ timedOut: true }`, with `seen` (events, requests, executions, problems), the options and a copy of the input.
 */
export async function runCase(runAgentLoop, kase, { timeLimitMs = DEFAULT_TIME_LIMIT_MS } = {}) {
  const { options, seen, input } = world(kase);
  const limit = timeLimit(timeLimitMs);
  let outcome;
  try {
    const running = Promise.resolve().then(() => runAgentLoop(options));
    running.catch(() => {}); // a loop that rejects after its time is up is not an unhandled rejection
    outcome = await Promise.race([running.then((result) => ({ result })), limit.promise]);
  } catch (err) {
    outcome = { threw: err };
  } finally {
    limit.cancel();
  }
  return { ...outcome, seen, options, input };
}

/**
 * Runs one case against `runAgentLoop`. Resolves to
 * `{ id, spec, title, pass, problems: string[], firstEvent: {index, expected, actual} | null, transcriptDiff: string[] | null, timedOut }`.
 */
export async function checkCase(runAgentLoop, kase, { timeLimitMs = DEFAULT_TIME_LIMIT_MS } = {}) {
  const base = { id: kase.id, spec: kase.spec, title: kase.title };
  const outcome = await runCase(runAgentLoop, kase, { timeLimitMs });
  const { seen } = outcome;
  const failed = (problems) => ({ ...base, pass: false, timedOut: Boolean(outcome.timedOut), problems: [...seen.problems, ...problems], firstEvent: null, transcriptDiff: null });
  if (outcome.timedOut) {
    const started = seen.executions.length ? `; calls started: ${seen.executions.join(", ")}` : "";
    const last = seen.events.at(-1);
    const gated = kase.def.release ?? [];
    return failed([
      `timed out after ${timeLimitMs} ms: runAgentLoop did not settle (${seen.events.length} events, last ${last ? short(eventView(last, last, kase.def), 160) : "none"}${started})`,
      ...(gated.length ? [`gated calls are released only once all of [${gated.join(", ")}] have started: a batch runs at once (SPEC §4)`] : []),
    ]);
  }
  if ("threw" in outcome) {
    const err = outcome.threw;
    return failed([`runAgentLoop threw: ${err instanceof Error ? `${err.name}: ${err.message}` : short(err)}`]);
  }
  const compared = compare(kase, outcome.result, seen, outcome.input, outcome.options);
  return { ...base, pass: compared.problems.length === 0, timedOut: false, ...compared };
}

/** Runs every case in order; `onCase(report)` hears each as it ends. Resolves to { passed, failed, reports }. */
export async function checkAll(runAgentLoop, cases, { timeLimitMs, onCase } = {}) {
  const reports = [];
  for (const kase of cases) {
    const report = await checkCase(runAgentLoop, kase, { timeLimitMs });
    reports.push(report);
    onCase?.(report);
  }
  const passed = reports.filter((r) => r.pass).length;
  return { passed, failed: reports.length - passed, reports };
}

/** One case as text: `PASS id` or `FAIL id` with its problems, the first differing event and the transcript diff. */
export function formatCase(report) {
  const head = `${report.pass ? "PASS" : "FAIL"}  ${report.id}${report.spec ? `  (${report.spec})` : ""}`;
  if (report.pass) return head;
  const lines = [head, ...report.problems.map((p) => `    - ${p}`)];
  if (report.firstEvent) {
    lines.push(`    first differing event (#${report.firstEvent.index + 1}):`);
    lines.push(`      expected ${short(report.firstEvent.expected)}`);
    lines.push(`      actual   ${report.firstEvent.actual === undefined ? "(none)" : short(report.firstEvent.actual)}`);
  }
  if (report.transcriptDiff) {
    lines.push("    transcript (- expected, + the loop's):");
    for (const line of report.transcriptDiff) lines.push(`      ${line}`);
  }
  return lines.join("\n");
}

export function formatSummary({ passed, failed }) {
  return `${passed} passed, ${failed} failed`;
}

/** The loop a module exports: `runAgentLoop`, or a default export that is the function or holds it. */
export function loopOf(module) {
  const candidates = [module?.runAgentLoop, module?.default?.runAgentLoop, module?.default];
  const loop = candidates.find((f) => typeof f === "function");
  if (!loop) throw new TypeError(`the module exports no runAgentLoop function (its exports: ${Object.keys(module ?? {}).join(", ") || "none"})`);
  return loop;
}

/**
 * Runs cases in a worker that can be stopped, so that a loop blocking its thread cannot hang the caller:
 * `spawn(cases, onMessage)` starts a worker on these cases and returns `{ terminate() }`; the worker posts
 * `{type: "start", id}` before each case, `{type: "case", report}` after it, then `{type: "done"}`, or
 * `{type: "load-error", error}` when the module cannot be used. A case silent for longer than its time limit plus
 * `graceMs` is reported as stopped, the worker terminated, and the remaining cases go on in a fresh one.
 * Resolves to `{ passed, failed, reports }`, or `{ loadError }`.
 */
export async function superviseCases(spawn, cases, { timeLimitMs = DEFAULT_TIME_LIMIT_MS, graceMs = 1000, onCase } = {}) {
  const reports = [];
  const report = (r) => {
    reports.push(r);
    onCase?.(r);
  };
  let todo = cases;
  while (todo.length) {
    const outcome = await new Promise((resolve) => {
      let current = null;
      let timer = null;
      const end = (value) => {
        clearTimeout(timer);
        worker.terminate();
        resolve(value);
      };
      const worker = spawn(todo, (msg) => {
        clearTimeout(timer);
        if (msg.type === "start") {
          current = msg.id;
          timer = setTimeout(() => end({ stuck: current }), timeLimitMs + graceMs);
        } else if (msg.type === "case") {
          current = null;
          report(msg.report);
        } else if (msg.type === "load-error") end({ loadError: msg.error });
        else if (msg.type === "done") end({});
        // A worker that dies before its first case could not load what it runs.
        else if (msg.type === "crash") end(current === null && reports.length === 0 ? { loadError: msg.error } : { crashed: msg.error, at: current });
      });
    });
    if (outcome.loadError) return { loadError: outcome.loadError };
    const stoppedAt = outcome.stuck ?? outcome.at;
    if (!stoppedAt) break;
    const kase = todo.find((c) => c.id === stoppedAt);
    const why = outcome.stuck
      ? `stopped after ${timeLimitMs + graceMs} ms: the loop blocked its thread (synchronous code that never returns); its worker was terminated`
      : `the worker running the loop died: ${outcome.crashed}`;
    report({ id: kase.id, spec: kase.spec, title: kase.title, pass: false, timedOut: Boolean(outcome.stuck), problems: [why], firstEvent: null, transcriptDiff: null });
    const done = new Set(reports.map((r) => r.id));
    todo = todo.filter((c) => !done.has(c.id));
  }
  const passed = reports.filter((r) => r.pass).length;
  return { passed, failed: reports.length - passed, reports };
}

/** The worker's side of superviseCases: check each case with the module's loop, saying so as it goes. */
export async function serveCases(loadModule, cases, { timeLimitMs = DEFAULT_TIME_LIMIT_MS } = {}, post) {
  let loop;
  try {
    loop = loopOf(await loadModule());
  } catch (err) {
    post({ type: "load-error", error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
    return;
  }
  for (const kase of cases) {
    post({ type: "start", id: kase.id });
    post({ type: "case", report: await checkCase(loop, kase, { timeLimitMs }) });
  }
  post({ type: "done" });
}
