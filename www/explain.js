// What the page says about each step, as data: the decision table of SPEC §4 and the keys of the one-line
// explanations (their text, in both languages, is in i18n.js). A new skip reason, run reason or event kind
// is one entry in each language there; a §7 phase is one entry in PHASES below.
//
// The page does not decide anything the loop decides: the row that fired is read off the response the
// way the table itself is written (its stopReason and its calls), and the rest comes from the events.

import { canonical, eventDifference, messageDifference, short } from "./conformance/check.js";

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

/** `name(id)` of a call or a result, as the timeline writes it. */
export const callLabel = (name, id) => `${name}(${id})`;

/**
 * The explanation of one recorded event: an i18n key and its values. Keys, most specific first:
 * `why.<type>.<sub or reason>`, then `why.<type>`; app.js takes the first that has a text.
 * `context` gives what the event alone does not say: the response of this request, the run's requests, whether the
 * batch runs one call at a time or waits for approval, whether this request is the last maxSteps allows, and part
 * three's options (`retry`, `budget`, `compaction`), the run's usage so far and where a compaction entry stands.
 */
export function whyOf(rec, { response, requestOf, sequential = false, approval = false, last = false, retry = null, usage = null, budget = null, compaction = null, index = "?" } = {}) {
  const e = rec.event;
  const row = response ? decisionRow(response) : null;
  const vars = { n: rec.request, row: row?.id ?? "?" };
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
      return { keys: ["why.compaction"], vars: { ...vars, n: rec.request + 1, k: entry.firstKeptIndex, index, tokensBefore: entry.tokensBefore, max, keep } };
    }
    case "assistant_message": {
      const variant = approval ? "approval" : sequential ? "sequential" : last ? "last" : budget ? "budget" : null;
      Object.assign(vars, { total: usage?.totalTokens ?? "?", maxTokens: budget?.maxTokens ?? "–" });
      return { keys: [variant ? `why.assistant_message.${row?.id}.${variant}` : null, `why.assistant_message.${row?.id}`, "why.assistant_message"].filter(Boolean), vars };
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
      return { keys: [`why.tool_skipped.${reason}`, "why.tool_skipped"], vars: { ...vars, call, id: e.result?.toolCallId, reason, text } };
    }
    case "queued_message": {
      const text = plainText(e.message?.content);
      return { keys: [`why.queued_message.${e.queue}`, "why.queued_message"], vars: { ...vars, role: e.message?.role, queue: e.queue, text } };
    }
    case "turn_end":
      return { keys: [`why.turn_end.${e.reason}`, "why.turn_end"], vars: { ...vars, reason: e.reason, steps: e.steps, total: usage?.totalTokens ?? "?", cost: usage?.cost ?? "?", maxTokens: budget?.maxTokens ?? "–", maxCost: budget?.maxCost ?? "–" } };
    default:
      return { keys: [`why.${e.type}`, "why.unknown"], vars: { ...vars, type: e.type } };
  }
}

// --- a learner's loop stepped through: where it first went another way than the course's -----------------------

/** What a list item is, whatever its fields: an event by its type and call (a model event by its own type), a
 * message by its role and call; with how many came before it with the same identity (`#k`), so a second one differs. */
function identities(list, idOf) {
  const seen = new Map();
  return list.map((x) => {
    const id = idOf(x);
    const k = seen.get(id) ?? 0;
    seen.set(id, k + 1);
    return { id, key: `${id}#${k}`, again: k > 0 };
  });
}

const eventIdOf = (e) => {
  if (!e || typeof e !== "object") return `?${JSON.stringify(e)}`;
  if (e.type === "model_event") return `model_event:${e.event?.type}`;
  if (e.type === "tool_start") return `tool_start:${e.call?.id}`;
  if (e.type === "tool_progress") return `tool_progress:${e.callId}`;
  if (e.type === "tool_end" || e.type === "tool_skipped") return `${e.type}:${e.result?.toolCallId}`;
  if (e.type === "turn_end") return `turn_end:${e.reason}`;
  return String(e.type);
};
const messageIdOf = (m) => (m?.role === "toolResult" ? `toolResult:${m.toolCallId}` : `?${m?.role}`);

/** The field of an event that holds what it is about (its call, result, message, model event), or the event. */
const bodyOf = (e) => (e?.type === "tool_start" ? e.call : e?.type === "tool_end" || e?.type === "tool_skipped" ? e.result : e?.type === "assistant_message" ? e.message : e?.type === "model_event" ? e.event : e);

/** One side of a difference in words: an i18n key under `diff.ev.` or `diff.msg.` and its values. */
function eventPart(e) {
  if (e === undefined) return { key: "diff.ev.none", vars: {} };
  switch (e?.type) {
    case "model_event":
      return { key: "diff.ev.model_event", vars: { sub: e.event?.type } };
    case "assistant_message":
      return { key: "diff.ev.assistant_message", vars: { stop: e.message?.stopReason } };
    case "tool_start":
      return { key: "diff.ev.tool_start", vars: { call: callLabel(e.call?.name, e.call?.id) } };
    case "tool_progress":
      return { key: typeof e.callId === "string" ? "diff.ev.tool_progress" : "diff.ev.tool_progress.noId", vars: { id: e.callId } };
    case "tool_end":
      return { key: e.result?.isError ? "diff.ev.tool_end.error" : "diff.ev.tool_end", vars: { call: callLabel(e.result?.toolName, e.result?.toolCallId) } };
    case "tool_skipped":
      return { key: "diff.ev.tool_skipped", vars: { call: callLabel(e.result?.toolName, e.result?.toolCallId), reason: e.result?.details?.reason } };
    case "turn_end":
      return { key: "diff.ev.turn_end", vars: { reason: e.reason, steps: e.steps } };
    default:
      return { key: "diff.ev.other", vars: { json: short(e, 80) } };
  }
}

function messagePart(m) {
  if (m === undefined) return { key: "diff.msg.none", vars: {} };
  if (m?.role === "toolResult") {
    const call = callLabel(m.toolName, m.toolCallId);
    return { key: m.details?.skipped ? "diff.msg.skipped" : m.isError ? "diff.msg.error" : "diff.msg.result", vars: { call, reason: m.details?.reason } };
  }
  if (m?.role === "assistant") return { key: "diff.msg.assistant", vars: { stop: m.stopReason } };
  if (m?.role === "user") return { key: "diff.msg.user", vars: {} };
  return { key: "diff.msg.other", vars: { json: short(m, 80) } };
}

/**
 * The first place a learner's loop (recorded by the kit: `{events, result}`) went another way than the course's
 * (`kase`, a kit case: its `expect`), as the kit compares them: the events first, then the transcript it returned.
 * Null when both agree. Else `{where: "event" | "message", index, key, vars, parts}`: `key` the sentence
 * (`diff.<where>` or, the same item with other fields, `diff.<where>.changed`), `vars.n` the event's number (from 1)
 * or the message's index (from 0, as the transcript numbers them), and `parts` what each side did there and a note
 * for each ({key, vars} or null): which of the two is missing, duplicated ("again"), out of order ("later" in the
 * other), or never done by the correct loop.
 */
export function replayDifference(kase, recorded) {
  const events = eventDifference(kase, recorded?.events ?? []);
  const messages = events || !Array.isArray(recorded?.result?.messages) ? null : messageDifference(kase, recorded.result.messages);
  const found = events ?? messages;
  if (!found) return null;
  const where = events ? "event" : "message";
  const { index, want, got } = found;
  const idOf = events ? eventIdOf : messageIdOf;
  const part = events ? eventPart : messagePart;
  const a = got[index];
  const w = want[index];
  const wantIds = identities(want, idOf);
  const gotIds = identities(got, idOf);
  // Events are numbered from 1 (as the timeline numbers them), messages by their index (as the transcript does).
  const shown = (x) => x + (events ? 1 : 0);
  const n = shown(index);
  if (a !== undefined && w !== undefined && gotIds[index].id === wantIds[index].id) {
    const [x, y] = [bodyOf(a), bodyOf(w)];
    const fields = x && y && typeof x === "object" && typeof y === "object" ? [...new Set([...Object.keys(y), ...Object.keys(x)])].filter((k) => canonical(x[k]) !== canonical(y[k])) : [];
    return { where, index, key: `diff.${where}.changed`, vars: { n, fields: fields.join(", ") || "?" }, parts: { actual: part(a), expected: part(w), actualNote: null, expectedNote: null } };
  }
  // Where the same item (its identity, the same how-many-th) stands in the other list, if it does at all.
  let actualNote = null;
  if (a !== undefined) {
    const later = wantIds.findIndex((x) => x.key === gotIds[index].key);
    const first = gotIds.findIndex((x) => x.id === gotIds[index].id);
    if (later > index) actualNote = { key: `diff.note.${where}.later`, vars: { n: shown(later) } };
    else if (gotIds[index].again) actualNote = { key: `diff.note.${where}.again`, vars: { n: shown(first) } };
    else actualNote = { key: `diff.note.${where}.never`, vars: {} };
  }
  let expectedNote = null;
  if (w !== undefined) {
    const later = gotIds.findIndex((x) => x.key === wantIds[index].key);
    expectedNote = later > index ? { key: `diff.note.${where}.yoursLater`, vars: { n: shown(later) } } : { key: `diff.note.${where}.yoursNever`, vars: {} };
  }
  return { where, index, key: `diff.${where}`, vars: { n }, parts: { actual: part(a), expected: part(w), actualNote, expectedNote } };
}

/** What the loop does once a hold on this event is released: the most specific key that has a text. */
export function waitOf(rec, { response, sequential = false, approval = false, retry = null } = {}) {
  const e = rec.event;
  const row = response ? decisionRow(response) : null;
  const sub = e.type === "model_event" ? e.event?.type : undefined;
  const keys =
    e.type === "model_event"
      ? [sub === "error" && retry ? "wait.model_event.end.retry" : null, sub === "done" || sub === "error" ? "wait.model_event.end" : "wait.model_event"].filter(Boolean)
      : [
          approval ? `wait.${e.type}.${row?.id}.approval` : null,
          sequential ? `wait.${e.type}.sequential` : null,
          e.type === "tool_skipped" ? `wait.tool_skipped.${e.result?.details?.reason}` : null,
          `wait.${e.type}.${row?.id}`,
          `wait.${e.type}`,
        ].filter(Boolean);
  return { keys: [...keys, "wait.unknown"], vars: { row: row?.id ?? "?", n: e.type === "compaction" ? rec.request + 1 : rec.request, delayMs: e.delayMs ?? "?" } };
}
