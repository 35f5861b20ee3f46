// The conformance check: runs any `runAgentLoop(options)` against the cases of cases.json and says, per case,
// which rule of chapter 07 the loop broke (one sentence, in Chinese or English, tied to the chapter's step) and then
// the evidence: what differs from what the case fixes. No imports and no platform API beyond timers and
// structuredClone, so the same file runs in Node (cli.js) and in the playground's sandboxed worker.
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
/**
 * How long the kit keeps watching once runAgentLoop has resolved: a call run, an event emitted or a request made
 * after that (a batch left running, a second turn_end from a timer) counts against the loop as if it came before.
 * Nothing the kit waits on can end sooner: this is a window on work nobody awaits, not a synchronisation.
 */
export const AFTER_RESOLVE_MS = 50;
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
      if (streamOptions?.signal !== controller.signal) seen.problems.push({ code: "noSignal", vars: { n: seen.requests.length } });
      const message = script[seen.requests.length - 1];
      if (message) return scriptedStream(message);
      seen.problems.push({ code: "extraRequest", vars: { n: seen.requests.length, have: script.length } });
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
    if (via === "tools" && def.executor === "custom") seen.problems.push({ code: "toolsExecute", vars: { id: call?.id } });
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
 * result by whether its text keeps the message and drops the stack (then shown as one text block holding just the
 * message); every result without its timestamp.
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
    // Kept: shown in the real shape, one text block with the message (the text around it is not compared).
    return { ...rest, content: kept ? [{ type: "text", text: rejected }] : rest.content, ...(expected.details === undefined ? { details: undefined } : {}) };
  }
  return rest;
}

/** A message as compared: a tool result through resultView, any other message as it is. */
export function messageView(message, expected, def) {
  return message?.role === "toolResult" ? resultView(message, expected, def) : message;
}

/** An event's SPEC §4 fields; anything else the loop adds is not compared. */
export function eventView(event, expected, def) {
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

/** A value as JSON, cut at `max` characters (a line of evidence, or of the page's words about a loop). */
export const short = (value, max = 400) => {
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

/**
 * A loop's list (its events, or the transcript it returned) against a case's (`expected`), each item seen through
 * `view` (eventView or messageView) as the expected item at its place sees it (what compare checks): `{index, want,
 * got}` (both lists as compared, `index` the first place they differ), or null when they agree.
 */
export function difference(expected, actual, view, def) {
  const want = expected.map((x) => view(x, x, def));
  const got = actual.map((x, i) => view(x, expected[i], def));
  const index = firstDifference(want, got);
  return index < 0 ? null : { index, want, got };
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
    problems.push({ code: "resolved", vars: { got: short(result, 200) } });
    return { problems, ...report };
  }
  if (result.reason !== expect.reason) problems.push({ code: "reason", vars: { want: expect.reason, got: short(result.reason) } });
  if (result.steps !== expect.steps) problems.push({ code: "steps", vars: { want: expect.steps, got: short(result.steps) } });

  const events = difference(expect.events, seen.events, eventView, def);
  if (events) {
    const { index, want, got } = events;
    report.firstEvent = { index, expected: want[index], actual: got[index] };
    problems.push({ code: "events", vars: { at: index + 1, want: want.length, got: got.length } });
  }

  const messages = difference(expect.messages, result.messages, messageView, def);
  if (messages) {
    report.transcriptDiff = transcriptDiff(messages.want, messages.got);
    problems.push({ code: "transcript", vars: { want: messages.want.length, got: messages.got.length } });
  }

  // Each model request as the model received it (SPEC §2, and chapter 07's "what the second request sees").
  const requests = expectedRequests(kase);
  if (seen.requests.length !== requests.length) problems.push({ code: "requests", vars: { want: requests.length, got: seen.requests.length } });
  const definitions = definitionsOf(def);
  seen.requests.slice(0, requests.length).forEach((request, k) => {
    const n = k + 1;
    if (canonical(request?.tools) !== canonical(definitions)) problems.push({ code: "requestTools", vars: { n, got: short(request?.tools, 200) } });
    if (request?.systemPrompt !== def.systemPrompt) problems.push({ code: "requestSystem", vars: { n, got: short(request?.systemPrompt, 120) } });
    const sent = difference(requests[k], Array.isArray(request?.messages) ? request.messages : [], messageView, def);
    if (sent) problems.push({ code: "requestMessages", vars: { n, diff: transcriptDiff(sent.want, sent.got).map((l) => `      ${l}`).join("\n") } });
  });

  // Which calls ran: the chapter's "executionCount" (none for length, error, aborted, stop with calls).
  const ran = expect.events.filter((e) => e.type === "tool_start").map((e) => e.call.id);
  if (canonical(seen.executions) !== canonical(ran)) problems.push({ code: "executed", vars: { want: ran.join(", "), got: seen.executions.join(", ") } });

  if (canonical(options.context.messages) !== canonical(input)) problems.push({ code: "inputChanged", vars: {} });
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
  if (!outcome.timedOut) {
    const settled = { executions: seen.executions.length, events: seen.events.length, requests: seen.requests.length };
    await new Promise((resolve) => setTimeout(resolve, AFTER_RESOLVE_MS));
    const [calls, events, requests] = Object.keys(settled).map((key) => seen[key].length - settled[key]);
    if (calls + events + requests > 0) seen.problems.push({ code: "afterResolve", vars: { calls, events, requests } });
  }
  return { ...outcome, seen, options, input };
}

// --- what a report says, in the page's language ------------------------------------------------------------

/** The chapter's steps (chapter 07, "第一步" to "第五步") and its optional exercise, as a report names them. */
export const STEP_NAMES = {
  zh: {
    1: "第一步：完成一次纯文本 stop",
    2: "第二步：把一个工具结果送回模型",
    3: "第三步：给不会执行的调用也配对",
    4: "第四步：同时执行，按调用顺序写回",
    5: "第五步：让控制器有明确边界",
    optional: "可选迁移练习：重复的 call id",
  },
  en: {
    1: "Step 1: a plain-text stop",
    2: "Step 2: send a tool result back to the model",
    3: "Step 3: pair the calls that will not run, too",
    4: "Step 4: run at once, append in call order",
    5: "Step 5: give the controller clear boundaries",
    optional: "Optional exercise: a repeated call id",
  },
};

/**
 * The rules a failing case can name, each in one sentence of the chapter's, with the step that teaches it. A case
 * whose evidence points at none of these names its own rule (cases.json's `rule`).
 */
export const RULES = {
  "no-run": {
    step: "3",
    zh: "stopReason 为 {reason} 的回复里的调用一个都不得执行：loop 保存这条 assistant 消息，再为每个调用写入一条 skipped 结果。",
    en: "No call of a response whose stopReason is {reason} may run: the loop keeps the assistant message and writes a skipped result for each call.",
  },
  "pair-all": {
    step: "3",
    zh: "不会执行的调用也要配对：stopReason 为 {reason} 的回复里的每个调用，都要得到一条同 toolCallId 的 skipped 结果（details.skipped 为 true），并发出 tool_skipped。",
    en: "Calls that will not run are paired too: each call of the response whose stopReason is {reason} gets a skipped result with its toolCallId (details.skipped true), announced by tool_skipped.",
  },
  concurrent: {
    step: "4",
    zh: "一批调用要同时启动：先为每个调用发出 tool_start，再用 Promise.all() 同时等待它们；不要等一个调用结束才开始下一个。",
    en: "A batch's calls start at once: emit every tool_start, then wait for them together with Promise.all(); do not wait for one call to end before starting the next.",
  },
  "call-order": {
    step: "4",
    zh: "按调用顺序写回：整批结束后，结果按 assistant 中调用的顺序追加，而不是按完成顺序；只有 tool_end 按完成顺序发出。",
    en: "Append in call order: once the whole batch is done, the results go into the messages in the order of the calls in the assistant message, not in the order they finished; only tool_end follows completion order.",
  },
  reject: {
    step: "4",
    zh: "executor 可能 reject：每个调用单独捕获 rejection，把它变成同 id、同 name 的错误结果（isError: true，保留 error.message，不写 stack）；runAgentLoop 本身不抛出，同批的其他调用照常完成。",
    en: "The executor may reject: catch each call's rejection on its own and turn it into an error result with the call's id and name (isError: true, error.message kept, no stack); runAgentLoop itself does not throw, and the other calls of the batch finish.",
  },
  "abort-check": {
    step: "5",
    zh: "loop 在两个位置检查 signal：发起模型请求之前，以及一批工具结果写入之后；signal 已取消就以 aborted 结束，不再请求模型。",
    en: "The loop checks the signal in two places: before each model request, and after a batch's results are appended; once it is aborted, the run ends with aborted and asks the model nothing more.",
  },
  "max-steps": {
    step: "5",
    zh: "maxSteps 限制模型请求数：最后一个允许的 toolUse 回合仍要写完工具结果，然后以 maxSteps 结束；不要伪造模型从未给出的回答。",
    en: "maxSteps caps the model requests: the last allowed toolUse round still appends its results, then the run ends with maxSteps; do not make up an answer the model never gave.",
  },
  "append-once": {
    step: "1",
    zh: "每轮模型流最终产生的 AssistantMessage 只加入消息列表一次（本章的第一个不变量）。",
    en: "Each model response's final AssistantMessage is appended to the messages exactly once (the chapter's first invariant).",
  },
  "pair-before-request": {
    step: "2",
    zh: "下一次模型请求发出前，每个 tool call 都恰好有一条同 id、在它之后的 tool result（本章的第二个不变量）。",
    en: "Before the next model request, every tool call has exactly one tool result with its id, after it (the chapter's second invariant).",
  },
  "one-turn-end": {
    step: "3",
    zh: "一次运行只发出一个 turn_end，而且它是最后一个事件（本章的第三个不变量）：终态分支里发了，就不要在函数末尾再补发。",
    en: "A run emits exactly one turn_end, as its last event (the chapter's third invariant): a final branch that emitted it must not emit it again at the end.",
  },
  "copy-input": {
    step: "1",
    zh: "context.messages 属于调用者：运行开始时用 structuredClone 深拷贝，之后只修改这份副本。",
    en: "context.messages belongs to the caller: deep-copy it with structuredClone at the start, and change only the copy.",
  },
  request: {
    step: "1",
    zh: "每次模型请求都带上 context.systemPrompt 和本次 Registry 的 options.tools.definitions()（不是 context.tools），并把 options.signal 交给 model.stream()。",
    en: "Every model request carries context.systemPrompt and this run's options.tools.definitions() (not context.tools), and model.stream() gets options.signal.",
  },
  progress: {
    step: "2",
    zh: "reportProgress 要转成带 callId 的 tool_progress 事件，UI 才知道进度属于哪个调用。",
    en: "reportProgress becomes a tool_progress event that carries the callId, so a UI knows which call the progress belongs to.",
  },
  "run-once": {
    step: "4",
    zh: "每个 tool call 只执行一次，运行的一切都在 runAgentLoop resolve 之前完成：一批调用各启动一次，用 Promise.all() 等它们全部结束；resolve 之后不再执行调用、不再发出事件。",
    en: "Each tool call runs exactly once, and all of a run's work is done before runAgentLoop resolves: start each call of a batch once and await them all with Promise.all(); after resolving, run no call and emit no event.",
  },
  settle: {
    step: "1",
    zh: "runAgentLoop 必须结束：resolve 成 { reason, messages, steps }，而不是抛出或一直挂起。",
    en: "runAgentLoop must settle: resolve with { reason, messages, steps }, never throw or hang.",
  },
};

/** The evidence lines, by code: what differs from what the case fixes. */
const EVIDENCE = {
  en: {
    noSignal: "model request {n} was not given options.signal (stream(request, { signal }))",
    extraRequest: "the loop made model request {n}; the case has {have} model response(s)",
    toolsExecute: "options.tools.execute ran {id} although options.executeToolCall was given (it replaces the executor)",
    resolved: "runAgentLoop resolved to {got}; expected { reason, messages, steps }",
    reason: 'reason: expected "{want}", got {got}',
    steps: "steps: expected {want}, got {got}",
    events: "events differ from event {at} on (of {want} expected, {got} emitted)",
    transcript: "transcript differs ({want} messages expected, {got} returned)",
    requests: "model requests: expected {want}, the loop made {got}",
    requestTools: "request {n}: tools must be options.tools.definitions() (got {got})",
    requestSystem: "request {n}: systemPrompt must be context.systemPrompt (got {got})",
    requestMessages: "request {n}: messages differ from the transcript so far:\n{diff}",
    executed: "calls executed: expected [{want}], the loop ran [{got}]",
    inputChanged: "the caller's context.messages was changed (it is copied at the start, never modified)",
    timedOut: "timed out after {ms} ms: runAgentLoop did not settle ({events} events, last {last}{started})",
    gated: "gated calls are released only once all of [{ids}] have started: a batch runs at once",
    threw: "runAgentLoop threw: {error}",
    afterResolve: "after runAgentLoop resolved, the loop went on: {calls} more call(s) run, {events} event(s), {requests} model request(s)",
    twice: "calls run more than once: {ids}",
    stuck: "stopped after {ms} ms: the loop blocked its thread (synchronous code that never returns); its worker was terminated",
    crashed: "the worker running the loop died: {error}",
    rejectedNoResult: "your loop added no result for call {id} ({name}), whose executor rejected with \"{error}\": the next request and the transcript have nothing for it",
  },
  zh: {
    noSignal: "模型请求 {n} 没有收到 options.signal（应为 stream(request, { signal })）",
    extraRequest: "loop 发起了第 {n} 次模型请求，而这个用例只有 {have} 条模型回复",
    toolsExecute: "已经传入 options.executeToolCall，options.tools.execute 却执行了 {id}（executeToolCall 取代默认 executor）",
    resolved: "runAgentLoop resolve 成了 {got}；应为 { reason, messages, steps }",
    reason: "reason：应为 \"{want}\"，实际是 {got}",
    steps: "steps：应为 {want}，实际是 {got}",
    events: "从第 {at} 个事件开始不同（应有 {want} 个，实际发出 {got} 个）",
    transcript: "transcript 不同（应有 {want} 条消息，返回了 {got} 条）",
    requests: "模型请求数：应为 {want}，loop 发起了 {got} 次",
    requestTools: "请求 {n}：tools 必须是 options.tools.definitions()（实际是 {got}）",
    requestSystem: "请求 {n}：systemPrompt 必须是 context.systemPrompt（实际是 {got}）",
    requestMessages: "请求 {n}：messages 与到那时为止的 transcript 不同：\n{diff}",
    executed: "执行过的调用：应为 [{want}]，你的 loop 执行了 [{got}]",
    inputChanged: "调用者的 context.messages 被改动了（应在开始时复制，之后不再修改）",
    timedOut: "{ms} 毫秒后仍未结束：runAgentLoop 没有 settle（{events} 个事件，最后一个是 {last}{started}）",
    gated: "带 gate 的调用要等 [{ids}] 全部开始后才放行：一批调用应同时启动",
    threw: "runAgentLoop 抛出了错误：{error}",
    afterResolve: "runAgentLoop resolve 之后 loop 还在继续：又执行了 {calls} 个调用，发出 {events} 个事件，发起 {requests} 次模型请求",
    twice: "执行了不止一次的调用：{ids}",
    stuck: "{ms} 毫秒后被停止：loop 阻塞了自己的线程（同步代码一直不返回），运行它的 worker 已被终止",
    crashed: "运行 loop 的 worker 意外退出：{error}",
    rejectedNoResult: "你的 loop 没有为调用 {id}（{name}）加入任何结果：它的 executor 以 \"{error}\" reject 了，之后的请求和 transcript 里都没有它的结果",
  },
};

const LABELS = {
  en: { rule: "rule: ", evidence: "evidence:", scenario: "scenario: ", open: "step through it in the playground: index.html?scenario={id}", firstEvent: "first differing event (#{n}):", expected: "expected", actual: "actual  ", none: "(none)", diff: "transcript (- expected, + the loop's):", optional: "(optional)", passed: "{passed} passed, {failed} failed", optionalNote: "note: {n} optional case(s) failed ({ids}): the chapter leaves this design choice to you, so the loop still passes.", optionalNoteFailing: "note: {n} optional case(s) failed too ({ids}), which does not count; but the required case(s) {required} failed, so the loop does not pass." },
  zh: { rule: "规则：", evidence: "证据：", scenario: "场景：", open: "在演练场里逐步查看：index.html?scenario={id}", firstEvent: "第一个不同的事件（#{n}）：", expected: "应为", actual: "实际", none: "（没有）", diff: "transcript（- 应为，+ 你的 loop）：", optional: "（可选）", passed: "{passed} 个通过，{failed} 个失败", optionalNote: "注意：{n} 个可选用例没有通过（{ids}）：章节把这个设计选择留给你，所以你的 loop 仍然算通过。", optionalNoteFailing: "注意：{n} 个可选用例也没有通过（{ids}），这不影响结果；但必选用例 {required} 没有通过，所以你的 loop 没有通过。" },
};

const fill = (template, vars = {}) => template.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
const langOf = (lang) => (lang === "zh" ? "zh" : "en");

/** One evidence line ({code, vars}) in a language. */
export function evidenceText(item, lang = "en") {
  return fill(EVIDENCE[langOf(lang)][item.code] ?? item.code, item.vars);
}

/** The rule a report leads with, as one sentence in a language. */
export function ruleText(rule, lang = "en") {
  return fill(rule.text?.[langOf(lang)] ?? "", rule.vars);
}

/** The name of a chapter step in a language. */
export const stepName = (step, lang = "en") => STEP_NAMES[langOf(lang)][step] ?? String(step ?? "");

/**
 * Whether a call of `messages` has more than one result after it (a second result, or one sent twice), or, with
 * `all`, none: a request's messages must pair every call before it; a transcript's unanswered calls are told
 * apart further on (a closed response's calls are the "pair-all" rule).
 */
function unpaired(messages, all) {
  return messages.some((m, i) => {
    if (m?.role !== "assistant") return false;
    return [...new Set(callIdsOf(m))].some((id) => {
      const n = messages.slice(i + 1).filter((r) => r?.role === "toolResult" && r.toolCallId === id).length;
      return n > 1 || (all && n === 0);
    });
  });
}

/** The ids a loop ran more often than the case runs them (and more than once), unless the case repeats ids. */
function ranTwice(kase, seen) {
  if (kase.def.script.some((m) => new Set(callIdsOf(m)).size < callIdsOf(m).length)) return [];
  const expected = kase.expect.events.filter((e) => e.type === "tool_start").map((e) => e.call.id);
  const count = (list, id) => list.filter((x) => x === id).length;
  return [...new Set(seen.executions)].filter((id) => count(seen.executions, id) > Math.max(1, count(expected, id)));
}

const callIdsOf = (message) => (Array.isArray(message?.content) ? message.content.filter((b) => b?.type === "toolCall").map((b) => b.id) : []);

/**
 * The calls the loop ran whose executor rejected (the case's caller executor rejects their tool) and for which it
 * added no result anywhere: not in the transcript it returned, not in any later request. One evidence item each.
 */
function rejectedWithoutResult(kase, outcome) {
  const { def } = kase;
  if (def.executor !== "custom" || "threw" in outcome || outcome.timedOut) return [];
  const messages = Array.isArray(outcome.result?.messages) ? outcome.result.messages : [];
  const lists = [messages, ...outcome.seen.requests.map((r) => (Array.isArray(r?.messages) ? r.messages : []))];
  const answered = (id) => lists.some((list) => list.some((m) => m?.role === "toolResult" && m.toolCallId === id));
  const calls = def.script.flatMap((m) => (Array.isArray(m.content) ? m.content.filter((b) => b?.type === "toolCall") : []));
  return calls
    .filter((c) => typeof def.tools?.[c.name]?.reject === "string" && outcome.seen.executions.includes(c.id) && !answered(c.id))
    .map((c) => ({ code: "rejectedNoResult", vars: { id: c.id, name: c.name, error: def.tools[c.name].reject } }));
}

/** The rule `id` (of RULES) with its values, or the case's own. */
function ruleOf(kase, id, vars = {}) {
  if (id && RULES[id]) return { id, step: RULES[id].step, text: { zh: RULES[id].zh, en: RULES[id].en }, vars };
  return { id: `case:${kase.id}`, step: kase.step ?? null, text: kase.rule ?? { zh: "", en: "" }, vars: {} };
}

/**
 * Which rule a failing case broke, read off what the loop did: a call that ran where none may, a throw, a batch that
 * never finished, a request too many, a call left unanswered, results out of call order, and so on, most telling
 * first; the case's own rule when nothing more specific shows.
 */
function diagnose(kase, outcome, evidence) {
  const { def, expect } = kase;
  const seen = outcome.seen;
  const has = (code) => evidence.some((e) => e.code === code);
  const aborts = def.abort && def.abort !== "none";
  const capped = def.maxSteps !== undefined && def.maxSteps < def.script.length;
  const repeated = def.script.some((m) => new Set(callIdsOf(m)).size < callIdsOf(m).length);
  // The response whose calls must never run (stop with calls, length, error, aborted), if the case has one.
  const closed = def.script.find((m) => m.stopReason !== "toolUse" && callIdsOf(m).length > 0);
  if ("threw" in outcome) return ruleOf(kase, def.executor === "custom" && Object.values(def.tools ?? {}).some((b) => typeof b.reject === "string") ? "reject" : "settle");
  // A call run twice (whether or not its batch then hung on the kit's gates, which release each call once).
  if (has("twice")) return ruleOf(kase, "run-once");
  // A batch with gates that never finished because not every call of it started: the calls ran one at a time.
  const gates = def.release ?? [];
  if (outcome.timedOut) return ruleOf(kase, seen.executions.length > 0 && gates.some((id) => !seen.executions.includes(id)) ? "concurrent" : "settle");
  const expectedRan = expect.events.filter((e) => e.type === "tool_start").map((e) => e.call.id);
  const extra = seen.executions.length > expectedRan.length || seen.executions.some((id) => !expectedRan.includes(id));
  if (extra) {
    if (repeated) return ruleOf(kase);
    if (closed) return ruleOf(kase, "no-run", { reason: closed.stopReason });
    if (aborts) return ruleOf(kase, "abort-check");
    if (capped) return ruleOf(kase, "max-steps");
    return ruleOf(kase);
  }
  if (has("resolved")) return ruleOf(kase, "settle");
  // A call whose executor rejected and that got no result at all: the rejection was not caught per call (step 4).
  if (has("rejectedNoResult")) return ruleOf(kase, "reject");
  // A request, or the transcript, where a call has no result after it, or more than one.
  if (!repeated && seen.requests.some((request) => unpaired(Array.isArray(request?.messages) ? request.messages : [], true))) return ruleOf(kase, "pair-before-request");
  const result = outcome.result;
  if (!repeated && unpaired(result.messages, false)) return ruleOf(kase, "pair-before-request");
  const wantRequests = expect.events.filter((e) => e.type === "model_event" && e.event.type === "start").length;
  if (seen.requests.length > wantRequests) {
    if (aborts) return ruleOf(kase, "abort-check");
    if (capped) return ruleOf(kase, "max-steps");
    return ruleOf(kase);
  }
  if (seen.events.filter((e) => e?.type === "turn_end").length !== 1 || seen.events.at(-1)?.type !== "turn_end") return ruleOf(kase, "one-turn-end");
  if (has("afterResolve")) return ruleOf(kase, "run-once");
  if (has("inputChanged")) return ruleOf(kase, "copy-input");
  const assistants = (list) => list.filter((m) => m?.role === "assistant").length;
  if (assistants(result.messages) > assistants(expect.messages)) return ruleOf(kase, capped ? "max-steps" : "append-once");
  // A call without one result after it: a closed response's (never run, never paired), or a batch's.
  const unanswered = [];
  result.messages.forEach((m, i) => {
    if (m?.role !== "assistant") return;
    for (const id of callIdsOf(m)) if (!result.messages.slice(i + 1).some((r) => r?.role === "toolResult" && r.toolCallId === id)) unanswered.push(m);
  });
  if (unanswered.length) {
    const m = unanswered[0];
    return m.stopReason !== "toolUse" || repeated ? (repeated ? ruleOf(kase) : ruleOf(kase, "pair-all", { reason: m.stopReason })) : ruleOf(kase, "pair-before-request");
  }
  // The same results, in another order.
  const ids = (list) => list.filter((m) => m?.role === "toolResult").map((m) => m.toolCallId);
  const want = ids(expect.messages);
  const got = ids(result.messages);
  if (want.length === got.length && canonical(want) !== canonical(got) && canonical([...want].sort()) === canonical([...got].sort())) return ruleOf(kase, "call-order");
  const progress = (list) => list.filter((e) => e?.type === "tool_progress");
  if (canonical(progress(expect.events)) !== canonical(progress(seen.events))) return ruleOf(kase, "progress");
  if (has("reason") || has("steps")) {
    if (aborts) return ruleOf(kase, "abort-check");
    if (capped) return ruleOf(kase, "max-steps");
  }
  if (has("requestTools") || has("requestSystem") || has("noSignal")) return ruleOf(kase, "request");
  if (has("executed") && def.executor === "custom") return ruleOf(kase, "reject");
  return ruleOf(kase);
}

/**
 * Runs one case against `runAgentLoop`. Resolves to `{ id, step, optional, title, pass, rule, evidence, problems,
 * firstEvent, transcriptDiff, timedOut }`: `rule` ({id, step, text: {zh, en}, vars}) is the rule the loop broke,
 * `evidence` what shows it ({code, vars}, see evidenceText), `problems` the same in English. With `record`, `run`
 * holds what the loop did (its events, the requests the model received, the result), for the playground to step
 * through.
 */
export async function checkCase(runAgentLoop, kase, { timeLimitMs = DEFAULT_TIME_LIMIT_MS, record = false } = {}) {
  const base = { id: kase.id, spec: kase.spec, step: kase.step ?? null, optional: kase.optional === true, title: kase.title };
  const outcome = await runCase(runAgentLoop, kase, { timeLimitMs });
  const { seen } = outcome;
  const recorded = record ? { run: { events: seen.events, requests: seen.requests, executions: seen.executions, result: outcome.result ? snapshot(outcome.result) : null, threw: "threw" in outcome ? describe(outcome.threw) : null, timedOut: Boolean(outcome.timedOut) } } : {};
  const twice = ranTwice(kase, seen);
  const dropped = rejectedWithoutResult(kase, outcome);
  const done = (evidence, extra = {}) => {
    const all = [...seen.problems, ...(twice.length ? [{ code: "twice", vars: { ids: twice.join(", ") } }] : []), ...dropped, ...evidence];
    const pass = all.length === 0;
    return {
      ...base,
      pass,
      timedOut: Boolean(outcome.timedOut),
      rule: pass ? null : diagnose(kase, outcome, all),
      evidence: all,
      problems: all.map((e) => evidenceText(e, "en")),
      firstEvent: null,
      transcriptDiff: null,
      ...extra,
      ...recorded,
    };
  };
  if (outcome.timedOut) {
    const started = seen.executions.length ? `; calls started: ${seen.executions.join(", ")}` : "";
    const last = seen.events.at(-1);
    const gated = kase.def.release ?? [];
    return done([
      { code: "timedOut", vars: { ms: timeLimitMs, events: seen.events.length, last: last ? short(eventView(last, last, kase.def), 160) : "none", started } },
      ...(gated.length ? [{ code: "gated", vars: { ids: gated.join(", ") } }] : []),
    ]);
  }
  if ("threw" in outcome) return done([{ code: "threw", vars: { error: describe(outcome.threw) } }]);
  const { problems, ...report } = compare(kase, outcome.result, seen, outcome.input, outcome.options);
  return done(problems.slice(seen.problems.length), report);
}

const describe = (err) => (err instanceof Error ? `${err.name}: ${err.message}` : short(err));

/**
 * How many cases passed and failed, the optional ones that failed apart: a loop that fails only those passes.
 * `requiredFailed` names the required cases that failed (`failed` of them).
 */
export function summarize(reports) {
  const passed = reports.filter((r) => r.pass).length;
  const optional = reports.filter((r) => !r.pass && r.optional).map((r) => r.id);
  const required = reports.filter((r) => !r.pass && !r.optional).map((r) => r.id);
  return { passed, failed: required.length, optionalFailed: optional, requiredFailed: required };
}

/** Runs every case in order; `onCase(report)` hears each as it ends. Resolves to { passed, failed, optionalFailed, reports }. */
export async function checkAll(runAgentLoop, cases, { timeLimitMs, onCase, record } = {}) {
  const reports = [];
  for (const kase of cases) {
    const report = await checkCase(runAgentLoop, kase, { timeLimitMs, record });
    reports.push(report);
    onCase?.(report);
  }
  return { ...summarize(reports), reports };
}

/**
 * One case as text, in `lang` (en or zh): `PASS id  step`, or `FAIL id  step` followed by the rule it broke (one
 * sentence), the scenario to step through, and then the evidence: each problem, the first differing event and the
 * transcript diff.
 */
export function formatCase(report, { lang = "en" } = {}) {
  const L = LABELS[langOf(lang)];
  const step = report.step ? `  · ${stepName(report.step, lang)}` : "";
  const status = report.pass ? "PASS" : report.optional ? `FAIL${lang === "zh" ? "" : " "}${L.optional}` : "FAIL";
  const head = `${status}  ${report.id}${step}`;
  if (report.pass) return head;
  const lines = [head];
  if (report.rule) lines.push(`    ${L.rule}${ruleText(report.rule, lang)}${report.rule.step && report.rule.step !== report.step ? ` (${stepName(report.rule.step, lang)})` : ""}`);
  lines.push(`    ${L.scenario}${fill(L.open, { id: report.id })}`);
  lines.push(`    ${L.evidence}`);
  for (const e of report.evidence ?? report.problems.map((text) => ({ code: text }))) lines.push(`    - ${evidenceText(e, lang)}`);
  if (report.firstEvent) {
    lines.push(`    ${fill(L.firstEvent, { n: report.firstEvent.index + 1 })}`);
    lines.push(`      ${L.expected} ${short(report.firstEvent.expected)}`);
    lines.push(`      ${L.actual} ${report.firstEvent.actual === undefined ? L.none : short(report.firstEvent.actual)}`);
  }
  if (report.transcriptDiff) {
    lines.push(`    ${L.diff}`);
    for (const line of report.transcriptDiff) lines.push(`      ${line}`);
  }
  return lines.join("\n");
}

/** `N passed, N failed`, and a note naming the optional cases that failed, if any. */
export function formatSummary({ passed, failed, optionalFailed = [], requiredFailed = [] }, { lang = "en" } = {}) {
  const L = LABELS[langOf(lang)];
  const line = fill(L.passed, { passed, failed });
  if (!optionalFailed.length) return line;
  const vars = { n: optionalFailed.length, ids: optionalFailed.join(", "), required: requiredFailed.join(", ") };
  // The loop passes all the same only when no required case failed (`failed` counts them when no ids are given).
  return `${line}\n${fill(requiredFailed.length || failed ? L.optionalNoteFailing : L.optionalNote, vars)}`;
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
 * Resolves to `{ passed, failed, optionalFailed, reports }`, or `{ loadError }`.
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
    const why = outcome.stuck ? { code: "stuck", vars: { ms: timeLimitMs + graceMs } } : { code: "crashed", vars: { error: outcome.crashed } };
    report({
      id: kase.id,
      spec: kase.spec,
      step: kase.step ?? null,
      optional: kase.optional === true,
      title: kase.title,
      pass: false,
      timedOut: Boolean(outcome.stuck),
      rule: ruleOf(kase, "settle"),
      evidence: [why],
      problems: [evidenceText(why, "en")],
      firstEvent: null,
      transcriptDiff: null,
    });
    const done = new Set(reports.map((r) => r.id));
    todo = todo.filter((c) => !done.has(c.id));
  }
  return { ...summarize(reports), reports };
}

/** The worker's side of superviseCases: check each case with the module's loop, saying so as it goes. */
export async function serveCases(loadModule, cases, { timeLimitMs = DEFAULT_TIME_LIMIT_MS, record = false } = {}, post) {
  let loop;
  try {
    loop = loopOf(await loadModule());
  } catch (err) {
    post({ type: "load-error", error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
    return;
  }
  for (const kase of cases) {
    post({ type: "start", id: kase.id });
    post({ type: "case", report: await checkCase(loop, kase, { timeLimitMs, record }) });
  }
  post({ type: "done" });
}
