// One live run of the real runAgentLoop from the wasm package, held between events.
//
// Stepping works by returning a pending promise from onEvent: the loop awaits it (SPEC §4), so the run is
// really paused right after the event it just emitted, and Step resolves that promise. Tools are JS
// callbacks whose completion the learner can drive by hand (a "gate" resolved by a button). The model is
// wrapped so that every request it receives is recorded as sent, whatever the model (not only ScriptedModel).

import { toolCalls, callLabel } from "./explain.js";

const clone = (v) => structuredClone(v);

function toContent(value) {
  if (typeof value === "string") return [{ type: "text", text: value }];
  return Array.isArray(value) ? clone(value) : [];
}

/** JSON with object keys sorted, so two equal messages compare equal whatever their key order. */
export function canonical(value) {
  return JSON.stringify(value, (key, v) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

/** The calls that wait for a result (a paused run's, or a transcript saved mid-batch), in call order: the batch a
 * run started from these messages finishes first (SPEC §8). Which calls those are is the package's answer,
 * `validateTranscript`'s paused view (`pending`), here as the call objects; none when it refuses the messages. */
export function unansweredCalls(api, messages, customRoles) {
  let pending;
  try {
    pending = api.validateTranscript(messages, { customRoles, allowPending: true }).pending;
  } catch {
    return [];
  }
  return pending.map(({ toolCallId, index }) => toolCalls(messages[index]).find((c) => c.id === toolCallId));
}

/** From the last `keep` user messages on: older turns are left out of the request (each turn starts at a user
 * message, so every call in what is kept still has its results after it). */
function keepTurns(messages, keep) {
  const users = messages.flatMap((m, i) => (m.role === "user" ? [i] : []));
  return users.length > keep ? messages.slice(users[users.length - keep]) : null;
}

/**
 * SPEC §7's options of a definition, as runAgentLoop takes them: its hooks (data in the definition) turned into
 * functions, each queue answering with its next list every time it is asked. `onPrepare(request, ctx)` sees every
 * request the loop built, before the definition's prepareRequest changes it. Part three's options too: `budget` and
 * `retry` as they are, and `compaction` with the page's own summarizer, which answers the definition's `summary`
 * (the package's default estimate counts the tokens).
 */
export function controlOptions(def, onPrepare = () => {}) {
  const options = {};
  for (const key of ["toolExecution", "toolTimeoutMs", "startSteps"]) if (def[key] !== undefined) options[key] = def[key];
  for (const key of ["customRoles", "approvals", "budget", "retry"]) if (def[key] !== undefined) options[key] = clone(def[key]);
  if (def.compaction) {
    const { summary, ...limits } = def.compaction;
    options.compaction = { ...limits, summarize: () => summary };
  }
  const block = def.hooks?.beforeToolCall;
  if (block) options.beforeToolCall = (call) => (block.block.includes(call.name) ? { block: true, ...(block.reason !== undefined ? { reason: block.reason } : {}) } : undefined);
  const trim = def.hooks?.prepareRequest;
  options.prepareRequest = (request, ctx) => {
    onPrepare(request, ctx);
    const messages = trim ? keepTurns(request.messages, trim.keepTurns) : null;
    return messages ? { messages } : undefined;
  };
  for (const [queue, option] of [["steering", "getSteeringMessages"], ["followUp", "getFollowUpMessages"]]) {
    if (!def[queue]) continue;
    let asked = 0;
    options[option] = () => clone(def[queue][asked++] ?? []);
  }
  return options;
}

/** The tool call id an event is about, if any. */
export function eventCallId(e) {
  if (e.type === "tool_start") return e.call?.id;
  if (e.type === "tool_end" || e.type === "tool_skipped") return e.result?.toolCallId;
  if (e.type === "tool_progress") return e.callId;
  return undefined;
}

export class Run {
  /**
   * @param api   the tiny-pi module (runAgentLoop, ScriptedModel, ToolRegistry, ...)
   * @param def   a scenario definition (see scenarios.js)
   * @param hooks {onUpdate(): void, pace: ms between events in run mode (0 = no hold),
   *   model: a model to use instead of replaying def.script (the live model),
   *   autoRelease: call ids whose gates open by themselves, in this order, once all of them are waiting,
   *   followOrder: the run must get where it is going (its end, or stepTo's event) by autoRelease's order alone (a
   *   shared link): when the order cannot open any of the gates that wait, `stuck` says so; once stepTo's event is
   *   reached the run is the learner's,
   *   releaseToTarget: autoRelease opens gates only on the way to stepTo's event (the script's own order, when a link
   *   names none): from that event on, every gate waits for the learner,
   *   abortAt: {seq, tools}, an abort by hand made again (a link's abort=): right after event seq, as if the learner
   *   pressed Abort while the loop was held there; with `tools`, once the loop has gone on past event seq and its
   *   tools wait at their gates (before any of them is opened)}
   */
  constructor(api, def, { onUpdate = () => {}, pace = 0, model = null, autoRelease = null, releaseRest = false, replay = null, followOrder = false, releaseToTarget = false, abortAt = null } = {}) {
    this.api = api;
    this.def = def;
    this.onUpdate = onUpdate;
    this.pace = pace;
    this.liveModel = model;
    // A recorded run to step through instead of running tiny-pi's loop: {events, requests, result, threw, timedOut},
    // what a learner's loop did in the kit's sandbox.
    this.replay = replay;
    this.autoRelease = autoRelease;
    this.releaseRest = releaseRest; // after autoRelease's order, any other gate opens once it waits (a run that must end)
    this.followOrder = followOrder;
    this.releaseToTarget = releaseToTarget;
    this.abortAt = abortAt;
    this.stuck = null; // {next}: the order's next call id (undefined when it has no more) is not among the gates that wait
    this.stopped = null; // {seq, got}: a replayed loop emitted something that is no event, as event seq
    this.released = []; // call ids in the order their gates were opened (by hand or by autoRelease)
    this.target = null; // stepTo(n): run without holding until event n, then hold there
    this.passTarget = false; // stepTo(n, {wait}): at event n, go on without holding (its tools then wait at their gates)
    this.status = "ready"; // ready | active | done | failed
    this.mode = "step"; // step: hold every event; run: hold `pace` ms then go on
    this.events = []; // {seq, type, event, request, attempt?, dropped?, callId, batchDone?}
    this.sent = []; // each request the model received, as it received it (copies); a retried request once
    // Each call of the model, in order: {request, attempt, same?}. A retry (SPEC §12) sends the same request again
    // (`same`: what the model received equals what the first attempt received).
    this.calls = [];
    this.retrying = null; // the retry event the loop waits after, until the model is called again
    this.request = 0; // the number of the request the loop is on (a retried request keeps its number)
    this.payloads = []; // the live model: each request's HTTP body as the provider sent it (by request index)
    this.startedAt = null; // performance.now() when the run began: event times are ms since then
    this.times = []; // per event (by seq - 1): ms since the run began, when the page received it
    this.goneOn = []; // per event (by seq - 1): when the page let the loop go on after it (a hold's end)
    // For each request, the transcript the loop built it from (custom-role messages included): what the model
    // received is compared with it.
    this.contexts = [];
    this.transcript = clone(def.messages);
    this.requests = 0;
    this.executions = 0;
    this.steps = null;
    this.reason = null;
    this.result = null;
    this.failure = null; // the error when runAgentLoop rejected its input
    this.mismatch = false;
    this.execs = []; // one per executor call: {callId, name, state, release}
    // The tool batch in flight: {order: [callId], results: Map callId -> ToolResultMessage}. A run that starts from
    // unanswered calls finishes their batch first.
    const open = unansweredCalls(api, def.messages, def.customRoles).map((c) => c.id);
    this.batch = open.length ? { order: open, results: new Map() } : null;
    this.hold = null; // {seq, resolve} while the loop awaits our onEvent promise
    // When the signal was aborted: after which event, by whom, the tools running then, how many had been called, and
    // whether the loop had gone on past that event with tools out (`tools`: not held, tools running or at their gates).
    this.aborted = null; // {seq, by: "hand" | "scenario", running: ["name(id)"], execs, tools}
    this.timer = null;
    this.controller = new AbortController();
    this.disposed = false;
  }

  get held() {
    return this.hold !== null;
  }

  /** The request number n (from 1) as the model received it. */
  requestOf(n) {
    return this.sent[n - 1];
  }

  /** How many times request n was sent (more than once when it was retried). */
  attemptsOf(n) {
    return this.calls.filter((c) => c.request === n).length;
  }

  /** Which response of the script answered request n: the model's calls before its last attempt. */
  scriptIndexOf(n) {
    return this.calls.findLastIndex((c) => c.request === n);
  }

  /** Executions still waiting for their gate or running. */
  get pendingTools() {
    return this.execs.filter((x) => x.state === "running" || x.state === "gated");
  }

  /** A call only the learner's release ends: it waits at its gate, and no timeout (its tool's timeoutMs or the
   * run's toolTimeoutMs, SPEC §7) will answer it. */
  waitsOnlyForRelease(exec) {
    return exec.state === "gated" && (this.def.tools[exec.name]?.timeoutMs ?? this.def.toolTimeoutMs) === undefined;
  }

  /** The loop is not held and nothing happens until the learner releases a gate: every tool still out waits at
   * its gate with no timeout to answer it (none running, no retry timer), and autoRelease opens none of them. */
  get waitsForRelease() {
    const pending = this.pendingTools;
    if (this.status !== "active" || this.held || this.retrying || !pending.length || !pending.every((x) => this.waitsOnlyForRelease(x))) return false;
    const next = (this.autoRelease ?? []).find((id) => !this.released.includes(id));
    return !this.releaseRest && !pending.some((x) => x.callId === next);
  }

  start(mode) {
    if (this.status !== "ready") return;
    this.mode = mode;
    this.status = "active";
    this.startedAt = performance.now();
    if (this.replay) return this.startReplay();
    const { api, def } = this;
    let model;
    let tools;
    try {
      model = this.liveModel ?? new api.ScriptedModel(clone(def.script));
      tools = new api.ToolRegistry();
      for (const [name, b] of Object.entries(def.tools)) {
        const tool = { name, execute: (args, ctx) => this.behave(name, ctx.callId, ctx) };
        for (const key of ["description", "executionMode", "timeoutMs", "needsApproval"]) if (b[key] !== undefined) tool[key] = b[key];
        if (b.parameters !== undefined) tool.parameters = clone(b.parameters);
        tools.register(tool);
      }
    } catch (err) {
      if (model !== this.liveModel) model?.free();
      tools?.free();
      this.fail(err);
      return;
    }
    // The loop calls `stream` with the model as `this`; the wrapper passes the call on unchanged.
    const recorded = {
      stream: (request, streamOptions) => {
        // A retry sends the request it retries again (the same object; prepareRequest is not asked again).
        if (this.retrying) this.calls.push({ request: this.request, attempt: this.retrying.attempt + 1, same: canonical(request) === canonical(this.sent.at(-1)) });
        else {
          this.sent.push(clone(request));
          this.calls.push({ request: this.sent.length, attempt: 1 });
        }
        return model.stream(request, streamOptions);
      },
    };
    const onPrepare = (request, ctx) => this.contexts.push({ transcript: clone(ctx.messages) });
    const options = {
      ...controlOptions(def, onPrepare),
      context: { messages: clone(def.messages) },
      model: recorded,
      tools,
      signal: this.controller.signal,
      onEvent: (e) => this.onLoopEvent(e),
    };
    if (def.systemPrompt !== undefined) options.context.systemPrompt = def.systemPrompt;
    if (def.maxSteps !== undefined) options.maxSteps = def.maxSteps;
    if (def.executor === "custom") {
      // The seeds' injected executor: it may reject, and the loop must turn that into an error result.
      options.executeToolCall = async (call, ctx) => {
        if (!Object.hasOwn(def.tools, call.name)) throw new Error(`unknown tool: ${call.name}`);
        const out = await this.behave(call.name, call.id, ctx);
        const { terminate, ...rest } = out;
        const result = { role: "toolResult", toolCallId: call.id, toolName: call.name, content: rest.content, ...(rest.details !== undefined ? { details: rest.details } : {}), isError: rest.isError, timestamp: Date.now() };
        return terminate ? { ...result, terminate } : result;
      };
    }
    if (def.abort === "before-start") this.abortNow("scenario");
    if (this.abortAt?.seq === 0) this.abortNow("hand");

    let promise;
    try {
      promise = Promise.resolve(api.runAgentLoop(options));
    } catch (err) {
      promise = Promise.reject(err);
    }
    promise
      .then(
        (result) => this.finish(result),
        (err) => this.fail(err),
      )
      .finally(() => {
        if (model !== this.liveModel) model.free();
        tools.free();
      });
    this.onUpdate();
  }

  /** Steps through a recorded run: each recorded event is handed to onLoopEvent as the loop would (held in step mode),
   * each request the model received recorded when its `start` event comes; then the recorded result. */
  async startReplay() {
    const { events, requests, result, threw, timedOut } = this.replay;
    this.onUpdate();
    for (const [i, e] of events.entries()) {
      if (typeof e?.type !== "string") {
        // Not an event: the replay cannot go on from it (what the loop emitted is shown as JSON).
        let got;
        try {
          got = JSON.stringify(e) ?? String(e);
        } catch {
          got = String(e);
        }
        this.stopped = { seq: i + 1, got: got.length > 80 ? `${got.slice(0, 79)}…` : got };
        this.fail(new Error(`event ${i + 1} is not an event: ${got}`));
        return;
      }
      if (e?.type === "model_event" && e.event?.type === "start" && requests[this.sent.length]) {
        this.sent.push(clone(requests[this.sent.length]));
        this.calls.push({ request: this.sent.length, attempt: 1 });
        // What the loop sent is its transcript so far (as onPrepare's context is for tiny-pi's loop).
        const sent = this.sent.at(-1).messages;
        if (Array.isArray(sent)) this.contexts[this.sent.length - 1] = { transcript: clone(sent), loop: true };
      }
      if (e?.type === "tool_start") this.executions += this.ranAt(i);
      await this.onLoopEvent(e);
      if (this.disposed) return;
    }
    // Every call the kit recorded the loop running counts, one it ran without a tool_start too.
    if (Array.isArray(this.replay.executions)) this.executions = this.replay.executions.length;
    if (result && typeof result === "object" && Array.isArray(result.messages)) this.finish(result);
    else this.fail(new Error(threw ?? (timedOut ? "the loop did not settle within the time limit" : "the loop resolved to no result")));
  }

  /**
   * How many executions a replayed loop's tool_start (event index i) stands for: what the kit recorded it ran
   * (`executions`, the call ids in the order their executor was called), the runs of a call shared among its
   * tool_starts (the rest at its last); without that record, one.
   */
  ranAt(i) {
    const { events, executions } = this.replay;
    if (!Array.isArray(executions)) return 1;
    const id = events[i]?.call?.id;
    const starts = events.flatMap((e, j) => (e?.type === "tool_start" && e.call?.id === id ? [j] : []));
    const ran = executions.filter((x) => x === id).length;
    const each = Math.floor(ran / starts.length);
    return starts.at(-1) === i ? ran - each * (starts.length - 1) : each;
  }

  step() {
    if (this.status === "ready") return this.start("step");
    if (this.status !== "active") return;
    this.mode = "step";
    this.releaseHold();
  }

  run() {
    if (this.status === "ready") return this.start("run");
    if (this.status !== "active") return;
    this.mode = "run";
    this.releaseHold();
  }

  /** Run without holding until event n has been emitted, then hold right after it (a shared link's step); with
   * `wait`, go on past it as a Step there does, so the tools the loop starts next wait at their gates. */
  stepTo(n, { wait = false } = {}) {
    this.target = n;
    this.passTarget = wait;
    this.step();
  }

  pause() {
    if (this.status !== "active") return;
    this.mode = "step";
    // Keep the hold pending: only its automatic release is cancelled.
    clearTimeout(this.timer);
    this.timer = null;
    this.onUpdate();
  }

  abort() {
    if (this.status !== "active" || this.controller.signal.aborted) return;
    this.abortNow("hand");
    this.onUpdate();
  }

  /** Abort the signal and remember where: after which event, by whom, and which tools were running then. */
  abortNow(by, { tools } = {}) {
    if (this.controller.signal.aborted) return;
    const running = this.pendingTools.map((x) => callLabel(x.name, x.callId));
    this.aborted = { seq: this.events.length, by, running, execs: this.execs.length, tools: tools ?? (!this.held && running.length > 0) };
    this.abortAt = null;
    this.controller.abort();
  }

  /** abortAt's abort, when its moment has come: right after its event (called as the event is recorded), or, with
   * `tools`, once the loop went on past it and every tool out waits at its gate. True when it aborted. */
  abortIfDue() {
    const at = this.abortAt;
    if (!at || this.disposed || this.status !== "active" || this.controller.signal.aborted || this.events.length !== at.seq) return false;
    if (at.tools) {
      const pending = this.pendingTools;
      if (this.held || !pending.length || pending.some((x) => x.state !== "gated")) return false;
    }
    this.abortNow("hand", { tools: at.tools === true });
    this.onUpdate();
    return true;
  }

  /** abortIfDue one macrotask later: the calls of a parallel batch all start in the same turn. */
  abortSoon() {
    if (this.abortAt?.tools) setTimeout(() => this.abortIfDue(), 0);
  }

  setPace(ms) {
    this.pace = ms;
  }

  release(exec) {
    if (!exec.release) return;
    this.stuck = null;
    this.released.push(exec.callId);
    exec.release();
  }

  /** Open the gates of autoRelease in its order: the next one opens once it waits and no other call is still on
   * its way to its gate (in a parallel batch every call of the order waits first; in a sequential one, the one
   * running). One macrotask apart, so each tool_end is emitted before the next call finishes. */
  async releaseInOrder() {
    if (this.releasing || ((this.autoRelease ?? []).length === 0 && !this.releaseRest && !this.followOrder)) return;
    this.releasing = true;
    const macrotask = () => new Promise((resolve) => setTimeout(resolve, 0));
    await macrotask(); // the calls of a parallel batch all start in the same turn
    for (;;) {
      // Read each time: reaching stepTo's event may end the order (releaseToTarget).
      const next = (this.autoRelease ?? []).find((id) => !this.released.includes(id));
      const exec = next !== undefined ? this.execs.find((x) => x.callId === next && x.state === "gated") : this.releaseRest ? this.execs.find((x) => x.state === "gated") : undefined;
      if (!exec || this.pendingTools.some((x) => x.state === "running")) {
        // Only gates wait (none that times out), none of them the order's next: nothing opens them but the learner.
        const pending = this.pendingTools;
        const gated = !exec && pending.length > 0 && pending.every((x) => this.waitsOnlyForRelease(x));
        if (gated && this.followOrder && (this.target !== null || this.mode === "run") && !this.disposed) {
          this.stuck = { next };
          this.onUpdate();
        }
        break;
      }
      // A link's abort while its tools wait comes before any of them is opened.
      this.abortIfDue();
      this.release(exec);
      await macrotask();
    }
    this.releasing = false;
  }

  /** Let an abandoned run drain: every hold and gate resolves, the signal aborts, later events are ignored. */
  dispose() {
    this.disposed = true;
    this.mode = "run";
    this.pace = 0;
    this.releaseHold();
    for (const exec of this.execs) exec.release?.();
    this.controller.abort();
  }

  releaseHold() {
    clearTimeout(this.timer);
    this.timer = null;
    const hold = this.hold;
    this.hold = null;
    if (hold) {
      this.goneOn[hold.seq - 1] = this.now();
      hold.resolve();
      this.onUpdate();
    }
  }

  onLoopEvent(e) {
    if (this.disposed) return undefined;
    this.record(e);
    if (this.abortAt && !this.abortAt.tools) this.abortIfDue();
    else this.abortSoon();
    if (this.target !== null) {
      if (this.events.length < this.target) {
        this.onUpdate();
        return undefined;
      }
      this.reachTarget();
      if (this.passTarget) {
        this.passTarget = false;
        this.onUpdate();
        return undefined;
      }
    }
    if (this.mode === "run" && this.pace === 0) {
      this.onUpdate();
      return undefined;
    }
    return new Promise((resolve) => {
      this.hold = { seq: this.events.length, resolve };
      this.goneOn[this.hold.seq - 1] = undefined; // until the hold ends
      if (this.mode === "run") this.timer = setTimeout(() => this.releaseHold(), this.pace);
      this.onUpdate();
    });
  }

  /** stepTo's event is in: the run is the learner's from here, in step mode; gates open only in an order a link gave. */
  reachTarget() {
    // A link's abort happens on its way to its event (at it, at the latest), never after.
    if (this.abortAt && this.abortAt.seq > this.events.length) this.abortAt = null;
    this.target = null;
    this.mode = "step";
    this.followOrder = false;
    this.stuck = null;
    if (this.releaseToTarget) this.autoRelease = null;
  }

  /** ms since the run began. */
  now() {
    return this.startedAt === null ? 0 : performance.now() - this.startedAt;
  }

  /** Append the event and keep the live transcript in step with what the loop has appended so far. */
  record(e) {
    const rec = { seq: this.events.length + 1, type: e.type, event: e, request: this.request, callId: eventCallId(e) };
    this.times[rec.seq - 1] = this.now();
    // Until the page holds it, the loop goes on as soon as the event is recorded.
    this.goneOn[rec.seq - 1] = this.times[rec.seq - 1];
    if (e.type === "model_event" && e.event?.type === "start") {
      this.requests += 1;
      if (this.retrying) {
        // The same request again after a retry's wait: its number stays, its attempt goes up.
        rec.attempt = this.retrying.attempt + 1;
        this.retrying = null;
      } else {
        this.request += 1;
        rec.attempt = 1;
        // The transcript the loop built this request from is the authoritative transcript so far (what was sent may
        // be shorter: custom roles are left out, prepareRequest may trim, a compaction summarises).
        const context = this.contexts[this.request - 1];
        if (context) this.transcript = clone(context.transcript);
        if (context?.loop) rec.adopted = { request: this.request };
      }
      rec.request = this.request;
    } else if (e.type === "model_event") rec.attempt = this.events.findLast((r) => r.type === "model_event")?.attempt;
    this.events.push(rec);
    switch (e.type) {
      case "retry": {
        // The failed response is dropped (SPEC §12): nothing of it is appended, its calls never run. Its events
        // (from its attempt's start on) are marked, and the loop waits, then calls the model again.
        rec.attempt = e.attempt;
        this.retrying = { attempt: e.attempt, seq: rec.seq };
        for (const r of this.events) if (r.type === "model_event" && r.request === rec.request && r.attempt === e.attempt) r.dropped = true;
        break;
      }
      case "compaction":
        // The entry is appended to the transcript (nothing is removed); the next request carries its summary.
        rec.compaction = this.events.filter((r) => r.type === "compaction").length;
        rec.entryIndex = this.transcript.length;
        this.transcript.push(e.entry);
        break;
      case "assistant_message": {
        this.transcript.push(e.message);
        // A tooluse response with unique ids is a batch: its results (blocked and denied ones too) are appended in
        // call order once every call is answered (SPEC §4, §7). The other rows' skipped results come one by one.
        const ids = toolCalls(e.message).map((c) => c.id);
        this.batch = e.message.stopReason === "toolUse" && ids.length && new Set(ids).size === ids.length ? { order: ids, results: new Map() } : null;
        break;
      }
      case "tool_end":
      case "tool_skipped":
        if (this.batch?.order.includes(e.result.toolCallId)) {
          this.batch.results.set(e.result.toolCallId, e.result);
          if (this.batch.results.size === this.batch.order.length) {
            if (this.replay) this.appendAsTheLoopDid(rec);
            else for (const id of this.batch.order) this.transcript.push(this.batch.results.get(id));
            rec.batchDone = this.batch.order;
            this.batch = null;
          }
        } else if (e.type === "tool_skipped") this.transcript.push(e.result);
        break;
      case "queued_message":
        this.transcript.push(e.message);
        break;
      case "turn_end":
        this.reason = e.reason;
        this.steps = e.steps;
        break;
    }
    return rec;
  }

  /**
   * A replayed loop's batch is done: its results go into the transcript as the loop appended them, never as the
   * course's loop would. What it appended is in the next transcript it was recorded with (the messages of its next
   * model request, else the transcript it returned): that becomes the transcript (`rec.adopted` says which,
   * `rec.loopOrder` the batch's results in the order it holds them). A loop that left no later transcript (it threw,
   * or hung) is shown with the results in the order it emitted them.
   */
  appendAsTheLoopDid(rec) {
    const { requests, result } = this.replay;
    const next = requests[this.sent.length];
    const snapshot = Array.isArray(next?.messages) ? { messages: next.messages, from: { request: this.sent.length + 1 } } : Array.isArray(result?.messages) ? { messages: result.messages, from: { result: true } } : null;
    const ids = this.batch.order;
    if (!snapshot) {
      for (const result of this.batch.results.values()) this.transcript.push(result);
      return;
    }
    const before = this.transcript.length;
    this.transcript = clone(snapshot.messages);
    rec.adopted = snapshot.from;
    rec.loopOrder = this.transcript.slice(before).filter((m) => m?.role === "toolResult" && ids.includes(m.toolCallId)).map((m) => m.toolCallId);
  }

  async behave(name, callId, ctx) {
    const b = this.def.tools[name] ?? {};
    const exec = { callId, name, state: "running", release: null };
    this.execs.push(exec);
    this.executions += 1;
    if (this.def.abort === "during-tool") this.abortNow("scenario");
    this.onUpdate();
    if (b.delay > 0) await new Promise((resolve) => setTimeout(resolve, b.delay));
    if (b.gate && !this.disposed) {
      exec.state = "gated";
      const opened = new Promise((resolve) => {
        exec.release = resolve;
      });
      // The call's own signal aborting while the run's has not is its timeout (SPEC §7): the loop has answered
      // it already and ignores whatever it does now, so its gate goes away. A run aborted by hand keeps it: the
      // loop waits for running tools.
      ctx.signal?.addEventListener("abort", () => {
        if (this.controller.signal.aborted || exec.state !== "gated") return;
        exec.state = "timedOut";
        exec.release?.();
        this.onUpdate();
      });
      this.onUpdate();
      this.abortSoon();
      this.releaseInOrder();
      await opened;
      exec.release = null;
      if (exec.state === "timedOut") return { content: [], isError: true };
    }
    if (b.progress !== undefined) ctx.reportProgress(toContent(b.progress));
    if (typeof b.reject === "string") {
      exec.state = "rejected";
      this.onUpdate();
      throw new Error(b.reject);
    }
    exec.state = "finished";
    this.onUpdate();
    return {
      content: toContent(b.answer ?? ""),
      isError: b.isError === true,
      ...(b.details !== undefined ? { details: clone(b.details) } : {}),
      ...(b.terminate ? { terminate: true } : {}),
    };
  }

  finish(result) {
    if (this.disposed) return;
    // The events must tell the same story as the result: compare what was derived from them, field by field.
    this.mismatch = canonical(this.transcript) !== canonical(result.messages);
    this.result = result;
    this.transcript = result.messages;
    this.reason = result.reason;
    this.steps = result.steps;
    this.requests = this.calls.length;
    this.status = "done";
    this.onUpdate();
  }

  fail(err) {
    if (this.disposed) return;
    this.failure = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    this.status = "failed";
    this.onUpdate();
  }
}
