// What the page says about each step, as data: the decision table of SPEC §4 and the keys of the one-line
// explanations (their text, in both languages, is in i18n.js). A new skip reason, run reason or event kind
// is one entry in each language there; a §7 phase is one entry in PHASES below.
//
// The page does not decide anything the loop decides: the row that fired is read off the response the
// way the table itself is written (its stopReason and its calls), and the rest comes from the events. Where a
// learner's loop, stepped through, first went another way than the course's is replay-difference.js's.

/**
 * SPEC §4, one row per line of the table, in its order. `calls` says which responses a row covers:
 * none (no call), unique (calls, every id once), repeated (calls, an id twice), some (one call or more),
 * any (with or without calls). The other columns are i18n keys under `dt.`.
 */
export const DECISION_ROWS = [
  { id: "stop", stopReason: "stop", calls: "none", runs: "no", appended: "none", ends: "stop" },
  { id: "stop-calls", stopReason: "stop", calls: "some", runs: "no", appended: "skipped", skip: "unexpected-stop", ends: "error" },
  { id: "tooluse", stopReason: "toolUse", calls: "unique", runs: "all", appended: "real", ends: "continue" },
  { id: "tooluse-repeated-id", stopReason: "toolUse", calls: "repeated", runs: "no", appended: "skippedPerId", skip: "duplicate-call-id", ends: "error" },
  { id: "tooluse-no-calls", stopReason: "toolUse", calls: "none", runs: "no", appended: "none", ends: "error" },
  { id: "length", stopReason: "length", calls: "any", runs: "no", appended: "skipped", skip: "length", ends: "length" },
  { id: "error", stopReason: "error", calls: "any", runs: "no", appended: "skipped", skip: "error", ends: "error" },
  { id: "aborted", stopReason: "aborted", calls: "any", runs: "no", appended: "skipped", skip: "aborted", ends: "aborted" },
];

/**
 * The chapter's five steps ("第一步" to "第五步" of chapter 07) and its optional exercise, each an i18n key
 * `step.<id>`; `two` is what lies beyond the chapter (tiny-pi's loop control, approvals). A decision-table row is
 * taught in one step.
 */
export const STEPS = ["1", "2", "3", "4", "5", "optional"];
export const ROW_STEP = { stop: "1", "stop-calls": "3", tooluse: "2", "tooluse-repeated-id": "optional", "tooluse-no-calls": "3", length: "3", error: "3", aborted: "3" };

/** A definition's options and tool fields that the chapter does not teach (tiny-pi's loop control and approvals, and
 * what a long-running app needs: budgets, retries, compaction). */
const PART_THREE_KEYS = ["budget", "retry", "compaction"];
const PART_TWO_KEYS = ["toolExecution", "toolTimeoutMs", "hooks", "steering", "followUp", "customRoles", "approvals", "startSteps", ...PART_THREE_KEYS];
const PART_TWO_TOOL_KEYS = ["executionMode", "timeoutMs", "terminate", "needsApproval"];

/** Whether a definition uses anything beyond chapter 07: then the page shows the phases of a batch too. */
export function isPartTwo(def) {
  if (!def || typeof def !== "object") return false;
  if (PART_TWO_KEYS.some((k) => def[k] !== undefined)) return true;
  return Object.values(def.tools ?? {}).some((b) => PART_TWO_TOOL_KEYS.some((k) => b?.[k] !== undefined));
}

/** Whether a definition uses part three's options: then the page shows what the loop does around the table too. */
export function isPartThree(def) {
  return Boolean(def && typeof def === "object" && PART_THREE_KEYS.some((k) => def[k] !== undefined));
}

/** What tiny-pi's loop does around the decision table (SPEC part three), in the order a request meets it: before a
 * request it may compact, a failed response may be retried (then no row applies to it), and after a batch a spent
 * budget ends the run. Each has its i18n keys `around.<id>` and `around.<id>.what`. */
export const AROUND = [{ id: "compaction" }, { id: "retry" }, { id: "budget" }];

/** The step around the table an event belongs to, or null: a compaction, a retry and the model events it drops, a
 * run ended by its budget. */
export function aroundOf(rec) {
  if (rec.type === "compaction") return "compaction";
  if (rec.type === "retry" || rec.dropped) return "retry";
  if (rec.type === "turn_end" && rec.event.reason === "budget") return "budget";
  return null;
}

/** The phases a `tooluse` batch goes through with tiny-pi's additions (approval first), shown under the tooluse row
 * for the scenarios that use them; each has its i18n keys `phase.<id>` and `phase.<id>.what`. */
export const PHASES = [{ id: "approve" }, { id: "prepare" }, { id: "execute" }, { id: "finish" }, { id: "checks" }];

/** The phase of a batch an event belongs to, or null: read off the event's kind and reason only. */
export function phaseOf(rec) {
  const e = rec.event;
  switch (e.type) {
    case "tool_skipped":
      return { denied: "approve", blocked: "prepare" }[e.result?.details?.reason] ?? null;
    case "tool_start":
    case "tool_progress":
      return "execute";
    case "tool_end":
      return "finish";
    case "queued_message":
      return e.queue === "steering" ? "checks" : null;
    case "turn_end":
      return { paused: "approve", aborted: "checks", terminated: "checks", budget: "checks", maxSteps: "checks" }[e.reason] ?? null;
    default:
      return null;
  }
}

/** Whether a batch pauses before anything of it happens (SPEC §8): a call to a tool registered `needsApproval`
 * with no decision in the definition's `approvals`. */
export function awaitsApproval(def, calls) {
  return calls.some((c) => def?.tools?.[c.name]?.needsApproval === true && !def?.approvals?.[c.id]);
}

/** Whether a batch runs one call at a time: `toolExecution: "sequential"`, or a call of it names a tool registered
 * `executionMode: "sequential"` (SPEC §7). `calls` are the batch's calls. */
export function isSequential(def, calls) {
  return def?.toolExecution === "sequential" || calls.some((c) => def?.tools?.[c.name]?.executionMode === "sequential");
}

export function toolCalls(message) {
  return Array.isArray(message?.content) ? message.content.filter((b) => b?.type === "toolCall") : [];
}

function callsCover(kind, calls) {
  const ids = calls.map((c) => c.id);
  const repeated = new Set(ids).size < ids.length;
  switch (kind) {
    case "none":
      return calls.length === 0;
    case "some":
      return calls.length > 0;
    case "unique":
      return calls.length > 0 && !repeated;
    case "repeated":
      return repeated;
    default:
      return true;
  }
}

/** The row of the table a final assistant message falls under (null for a stopReason the table lacks). */
export function decisionRow(message) {
  const calls = toolCalls(message);
  return DECISION_ROWS.find((row) => row.stopReason === message?.stopReason && callsCover(row.calls, calls)) ?? null;
}

/** The text of a message's content (a string, or its blocks' text run together), for an explanation. */
const plainText = (content) => (Array.isArray(content) ? content.map((b) => b?.text ?? "").join("") : String(content ?? ""));

/** A message's text as a Chinese why-line quotes it inside a sentence of its own (`quote`): its closing full stop
 * left out, since the sentence has one after the quote (“…。”。 is doubled). */
const quoted = (content) => plainText(content).replace(/[。.]+$/u, "");

/** `name(id)` of a call or a result, as the timeline writes it. */
export const callLabel = (name, id) => `${name}(${id})`;

/** The queues a run asks at a point, in the order it asks them (`asks`: their getters joined by " → "), or null when
 * it has none there: after a `stop` answer, the steering queue then the follow-up queue; after a batch, the steering
 * queue only. `queues` is {steering, followUp}, whether the run's definition has each. */
function queuesAsked(queues, afterStop) {
  const names = [queues?.steering ? "getSteeringMessages" : null, afterStop && queues?.followUp ? "getFollowUpMessages" : null].filter(Boolean);
  return names.length ? names.join(" → ") : null;
}

/**
 * The explanation of one recorded event: an i18n key and its values. Keys, most specific first:
 * `why.<type>.<sub or reason>`, then `why.<type>`; app.js takes the first that has a text.
 * `context` gives what the event alone does not say: the response of this request, the run's requests, whether the
 * batch runs one call at a time or waits for approval, whether this request is the last maxSteps allows, and part
 * three's options (`retry`, `budget`, `compaction`), the run's usage so far and where a compaction entry stands, and
 * the queues it has (`queues`: {steering, followUp}).
 * A request is named by its number after the `requestsBefore` requests the run's transcript already holds.
 */
export function whyOf(rec, { response, requestOf, sequential = false, approval = false, last = false, retry = null, usage = null, budget = null, compaction = null, index = "?", requestsBefore = 0, queues = null } = {}) {
  const e = rec.event;
  const row = response ? decisionRow(response) : null;
  const vars = { n: requestsBefore + rec.request, row: row?.id ?? "?", calls: response ? toolCalls(response).length : 0 };
  switch (e.type) {
    case "model_event": {
      const m = e.event ?? {};
      const sent = requestOf?.(rec.request);
      Object.assign(vars, {
        sub: m.type,
        reason: m.reason ?? "",
        messages: sent?.messages?.length ?? "?",
        tools: sent?.tools?.length ?? "?",
        call: m.toolCall ? callLabel(m.toolCall.name, m.toolCall.id) : "",
        attempt: rec.attempt ?? 1,
        maxRetries: retry?.maxRetries ?? 0,
      });
      // A retried request's attempt; a response that fails while the run has a retry policy; a dropped attempt's.
      const variant = m.type === "start" && rec.attempt > 1 ? "retry" : m.type === "error" && retry ? "retry" : rec.dropped ? "dropped" : null;
      return { keys: [variant ? `why.model_event.${m.type}.${variant}` : null, rec.dropped ? "why.model_event.dropped" : null, `why.model_event.${m.type}`, "why.model_event"].filter(Boolean), vars };
    }
    case "retry":
      return { keys: ["why.retry"], vars: { ...vars, attempt: e.attempt, delayMs: e.delayMs, error: e.error, maxRetries: retry?.maxRetries ?? "?" } };
    case "compaction": {
      const entry = e.entry ?? {};
      const max = compaction?.maxContextTokens ?? "?";
      const keep = compaction?.keepRecentTokens ?? (typeof max === "number" ? max / 2 : "?");
      return { keys: ["why.compaction"], vars: { ...vars, n: requestsBefore + rec.request + 1, k: entry.firstKeptIndex, index, tokensBefore: entry.tokensBefore, max, keep } };
    }
    case "assistant_message": {
      const variant = approval ? "approval" : sequential ? "sequential" : last ? "last" : budget ? "budget" : null;
      // A stop answer is not the end while a queue may still give a message; after a batch the steering queue is asked.
      const asks = row?.id === "stop" ? queuesAsked(queues, true) : row?.id === "tooluse" ? queuesAsked(queues, false) : null;
      Object.assign(vars, { total: usage?.totalTokens ?? "?", maxTokens: budget?.maxTokens ?? "–", asks: asks ?? "" });
      const keys = [variant ? `why.assistant_message.${row?.id}.${variant}` : null, asks ? `why.assistant_message.${row?.id}.queues` : null, `why.assistant_message.${row?.id}`, "why.assistant_message"];
      return { keys: keys.filter(Boolean), vars };
    }
    case "tool_start":
      return { keys: [sequential ? "why.tool_start.sequential" : "why.tool_start"], vars: { ...vars, call: callLabel(e.call?.name, e.call?.id) } };
    case "tool_progress":
      return { keys: ["why.tool_progress"], vars: { ...vars, call: e.callId } };
    case "tool_end": {
      const call = callLabel(e.result?.toolName, e.result?.toolCallId);
      const done = rec.batchDone;
      const order = done ? done.join(" → ") : "";
      const key = done ? "why.tool_end.last" : "why.tool_end";
      const timeoutMs = e.result?.details?.timedOut ? e.result.details.timeoutMs : undefined;
      const keys = [timeoutMs !== undefined ? `${key}.timeout` : null, e.result?.isError ? `${key}.error` : null, key].filter(Boolean);
      return { keys, vars: { ...vars, call, order, timeoutMs } };
    }
    case "tool_skipped": {
      const reason = e.result?.details?.reason;
      const call = callLabel(e.result?.toolName, e.result?.toolCallId);
      const text = plainText(e.result?.content);
      return { keys: [`why.tool_skipped.${reason}`, "why.tool_skipped"], vars: { ...vars, call, id: e.result?.toolCallId, reason, text, quote: quoted(e.result?.content) } };
    }
    case "queued_message": {
      const text = plainText(e.message?.content);
      return { keys: [`why.queued_message.${e.queue}`, "why.queued_message"], vars: { ...vars, role: e.message?.role, queue: e.queue, text, quote: quoted(e.message?.content) } };
    }
    case "turn_end":
      // The row of the last response names the cause when it is the one that ended the run (an aborted response is
      // not an aborted signal; an error end says which row).
      return { keys: [row ? `why.turn_end.${e.reason}.${row.id}` : null, `why.turn_end.${e.reason}`, "why.turn_end"].filter(Boolean), vars: { ...vars, reason: e.reason, steps: e.steps, total: usage?.totalTokens ?? "?", cost: usage?.cost ?? "?", maxTokens: budget?.maxTokens ?? "–", maxCost: budget?.maxCost ?? "–" } };
    default:
      return { keys: [`why.${e.type}`, "why.unknown"], vars: { ...vars, type: e.type } };
  }
}

/** What the loop does once a hold on this event is released: the most specific key that has a text (a request
 * numbered as whyOf numbers it). After a batch, the checks the run has (`budget`) and the steering queue it asks
 * (`queues`) are named; after a stop answer, the queues it asks before it ends. */
export function waitOf(rec, { response, sequential = false, approval = false, retry = null, requestsBefore = 0, budget = null, queues = null } = {}) {
  const e = rec.event;
  const row = response ? decisionRow(response) : null;
  const sub = e.type === "model_event" ? e.event?.type : undefined;
  const asks = e.type === "assistant_message" && row?.id === "stop" ? queuesAsked(queues, true) : e.type === "tool_end" ? queuesAsked(queues, false) : null;
  const checks = e.type === "tool_end" ? [budget ? "budget" : null, asks ? "steering" : null].filter(Boolean).join("-") : "";
  const keys =
    e.type === "model_event"
      ? [sub === "error" && retry ? "wait.model_event.end.retry" : null, sub === "done" || sub === "error" ? "wait.model_event.end" : "wait.model_event"].filter(Boolean)
      : [
          approval ? `wait.${e.type}.${row?.id}.approval` : null,
          sequential ? `wait.${e.type}.sequential` : null,
          e.type === "tool_skipped" ? `wait.tool_skipped.${e.result?.details?.reason}` : null,
          checks ? `wait.tool_end.${checks}` : null,
          asks && e.type === "assistant_message" ? `wait.assistant_message.${row?.id}.queues` : null,
          `wait.${e.type}.${row?.id}`,
          `wait.${e.type}`,
        ].filter(Boolean);
  return { keys: [...keys, "wait.unknown"], vars: { row: row?.id ?? "?", n: requestsBefore + (e.type === "compaction" ? rec.request + 1 : rec.request), delayMs: e.delayMs ?? "?", asks: asks ?? "" } };
}
