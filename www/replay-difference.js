// Where a learner's loop, stepped through in the page (the kit's recording of what it did on a case), first went
// another way than the course's, as data: which event or message, what each loop did there and how the two relate
// (missing, a second time, out of order, shifted by what is missing or extra before it, never done), or, when its
// events and transcript agree but the case failed, where else the kit found the difference. The words are i18n keys
// under `diff.` (their text, in both languages, is in i18n.js); app.js says them at the event the difference is at.

import { canonical, difference, eventView, messageView, short } from "./conformance/check.js";
import { callLabel } from "./explain.js";

/**
 * What the replay knows of each kind of event, one entry per type: `callId` (the call it is about, for the events
 * that are about one), `body` (the field that holds what it is about: its call, result, message or model event) and
 * `part` (it in words: an i18n key under `diff.ev.` and its values; `r` is the response it belongs to, from 0).
 */
const EVENT_TYPES = {
  model_event: {
    body: (e) => e.event,
    part: (e, r) => ({ key: "diff.ev.model_event", vars: { sub: e.event?.type, r: r + 1 } }),
  },
  assistant_message: {
    body: (e) => e.message,
    part: (e, r) => ({ key: "diff.ev.assistant_message", vars: { stop: e.message?.stopReason, r: r + 1 } }),
  },
  tool_start: {
    callId: (e) => e.call?.id,
    body: (e) => e.call,
    part: (e) => ({ key: "diff.ev.tool_start", vars: { call: callLabel(e.call?.name, e.call?.id) } }),
  },
  tool_progress: {
    callId: (e) => e.callId,
    body: (e) => e,
    part: (e) => ({ key: typeof e.callId === "string" ? "diff.ev.tool_progress" : "diff.ev.tool_progress.noId", vars: { id: e.callId } }),
  },
  tool_end: {
    callId: (e) => e.result?.toolCallId,
    body: (e) => e.result,
    part: (e) => ({ key: e.result?.isError ? "diff.ev.tool_end.error" : "diff.ev.tool_end", vars: { call: callLabel(e.result?.toolName, e.result?.toolCallId) } }),
  },
  tool_skipped: {
    callId: (e) => e.result?.toolCallId,
    body: (e) => e.result,
    part: (e) => ({ key: "diff.ev.tool_skipped", vars: { call: callLabel(e.result?.toolName, e.result?.toolCallId), reason: e.result?.details?.reason } }),
  },
  turn_end: {
    body: (e) => e,
    part: (e) => ({ key: "diff.ev.turn_end", vars: { reason: e.reason, steps: e.steps } }),
  },
};
const OTHER_EVENT = { body: (e) => e, part: (e) => ({ key: "diff.ev.other", vars: { json: short(e, 80) } }) };
const eventType = (e) => (e && typeof e === "object" && Object.hasOwn(EVENT_TYPES, e.type) ? EVENT_TYPES[e.type] : OTHER_EVENT);

/** The two lists a replay compares: how each names its items (`kind`, `callId`), which item is a response (the
 * count of those before an item is the response it belongs to), the item's body and the item in words. */
const EVENTS = {
  shown: (i) => i + 1, // numbered from 1, as the timeline numbers them
  kind: (e) => (e && typeof e === "object" ? (e.type === "model_event" ? `model_event:${e.event?.type}` : String(e.type)) : `?${JSON.stringify(e)}`),
  callId: (e) => eventType(e).callId?.(e),
  isResponse: (e) => e?.type === "assistant_message",
  body: (e) => eventType(e).body(e),
  part: (e, r) => (e === undefined ? { key: "diff.ev.none", vars: {} } : eventType(e).part(e, r)),
};
const MESSAGES = {
  shown: (i) => i, // by index, as the transcript numbers them
  kind: (m) => String(m?.role),
  callId: (m) => (m?.role === "toolResult" ? m.toolCallId : undefined),
  isResponse: (m) => m?.role === "assistant",
  body: (m) => m,
  part: (m) => {
    if (m === undefined) return { key: "diff.msg.none", vars: {} };
    if (m?.role === "toolResult") {
      const call = callLabel(m.toolName, m.toolCallId);
      return { key: m.details?.skipped ? "diff.msg.skipped" : m.isError ? "diff.msg.error" : "diff.msg.result", vars: { call, reason: m.details?.reason } };
    }
    if (m?.role === "assistant") return { key: "diff.msg.assistant", vars: { stop: m.stopReason } };
    if (m?.role === "user") return { key: "diff.msg.user", vars: {} };
    return { key: "diff.msg.other", vars: { json: short(m, 80) } };
  },
};

/**
 * What each item of a list is, whatever its fields: `id` names it by its kind and its call (an event or a result
 * about one), or by its kind and the response it belongs to (`r`: how many responses came before it; a model event,
 * a response, a user message). The same item in the other list is the one with the same `key`: the same id and, for
 * an item without a call, the same content; `#k` counts those before it, so a second one is another item (`again`,
 * a repeat of the one at `first`).
 */
function identities(list, how) {
  const seen = new Map();
  let r = 0;
  return list.map((x, i) => {
    const callId = how.callId(x);
    const call = typeof callId === "string";
    const id = call ? `${how.kind(x)}:${callId}` : `${how.kind(x)}@${r}`;
    const item = { id, r };
    if (how.isResponse(x)) r += 1;
    const same = call ? id : `${id}|${canonical(x)}`;
    const before = seen.get(same) ?? [];
    seen.set(same, [...before, i]);
    return { ...item, key: `${same}#${before.length}`, again: before.length > 0, first: before[0] ?? i };
  });
}

/** The first differing item of two lists (`found`: difference's `{index, want, got}`), in words. */
function itemDifference(where, { index, want, got }, how) {
  const a = got[index];
  const w = want[index];
  const wantIds = identities(want, how);
  const gotIds = identities(got, how);
  const n = how.shown(index);
  const part = (x, ids) => how.part(x, ids[index]?.r ?? 0);
  const parts = { actual: part(a, gotIds), expected: part(w, wantIds), actualNote: null, expectedNote: null };
  if (a !== undefined && w !== undefined && gotIds[index].id === wantIds[index].id) {
    // The same item with other fields: which ones (joined in the page's language when said).
    const [x, y] = [how.body(a), how.body(w)];
    const fields = x && y && typeof x === "object" && typeof y === "object" ? [...new Set([...Object.keys(y), ...Object.keys(x)])].filter((k) => canonical(x[k]) !== canonical(y[k])) : [];
    return { where, index, key: `diff.${where}.changed`, vars: { n, fields: fields.length ? fields : ["?"] }, parts };
  }
  // Where each item stands in the other list, if it does at all; and whether it stands there in another order than
  // the items around it (then it is out of order) or only moved by what one list lacks before it.
  const wantAt = new Map(wantIds.map((x, j) => [x.key, j]));
  const gotAt = new Map(gotIds.map((x, j) => [x.key, j]));
  const pairs = gotIds.flatMap((x, j) => (wantAt.has(x.key) ? [[j, wantAt.get(x.key)]] : []));
  const crossed = (g, e) => pairs.some(([j, m]) => j !== g && j > g !== m > e);
  if (a !== undefined) {
    const there = wantAt.get(gotIds[index].key);
    const note = there !== undefined ? (crossed(index, there) ? "later" : "shifted") : gotIds[index].again ? "again" : "never";
    parts.actualNote = { key: `diff.note.${where}.${note}`, vars: { n: how.shown(note === "again" ? gotIds[index].first : there ?? index) } };
  }
  if (w !== undefined) {
    const there = gotAt.get(wantIds[index].key);
    const note = there === undefined ? "yoursNever" : crossed(there, index) ? "yoursLater" : "yoursShifted";
    parts.expectedNote = { key: `diff.note.${where}.${note}`, vars: { n: how.shown(there ?? index) } };
  }
  return { where, index, key: `diff.${where}`, vars: { n }, parts };
}

/**
 * The first transcript the loop was recorded with that already held its message `index` as it returned it (and
 * everything before it): `{request}` (the number, from 1, of the model request that carried it) or `{result: true}`
 * (only the transcript it returned). The replay shows the difference from where the loop's transcript held it.
 */
function whereSent(recorded, messages, index) {
  const upTo = canonical(messages.slice(0, index + 1));
  const requests = Array.isArray(recorded?.requests) ? recorded.requests : [];
  const k = requests.findIndex((r) => Array.isArray(r?.messages) && r.messages.length > index && canonical(r.messages.slice(0, index + 1)) === upTo);
  return k >= 0 ? { request: k + 1 } : { result: true };
}

/**
 * When message `index` is a tool result of a batch whose results the loop holds in another order than its calls
 * (the same results, none missing or extra): the loop's order, the calls' order and whether the loop's is the order
 * the calls ended in (their tool_end events), as call ids. Else null.
 */
function batchOrder(want, got, events, index) {
  if (got[index]?.role !== "toolResult") return null;
  const start = got.findLastIndex((m, i) => i < index && m?.role === "assistant");
  if (start < 0) return null;
  const calls = Array.isArray(got[start].content) ? got[start].content.filter((b) => b?.type === "toolCall").map((b) => b.id) : [];
  let end = start + 1;
  while (got[end]?.role === "toolResult") end += 1;
  const ids = got.slice(start + 1, end).map((m) => m.toolCallId);
  if (ids.length !== calls.length || canonical([...ids].sort()) !== canonical([...calls].sort()) || canonical(ids) === canonical(calls)) return null;
  if (canonical(want[start]) !== canonical(got[start])) return null;
  const ended = events.filter((e) => e?.type === "tool_end" && calls.includes(e.result?.toolCallId)).map((e) => e.result.toolCallId);
  return { got: ids, want: calls, completion: canonical(ended) === canonical(ids) };
}

/**
 * Whether the loop ran a call another number of times than the correct loop (the kit records each call of the
 * executor: `executions`): the first such call in the order it ran, `where` "exec" at its first tool_start (or the
 * last event, when it has none), `vars` its label, how often it ran (`n`), how often it should (`want`) and every
 * call the loop ran (`ran`). Null when every call ran as often as it should, or there is no record.
 */
function executionDifference(kase, recorded, events) {
  const ran = recorded?.executions;
  if (!Array.isArray(ran)) return null;
  const want = kase.expect.events.filter((e) => e?.type === "tool_start").map((e) => e.call.id);
  const count = (list, id) => list.filter((x) => x === id).length;
  const id = [...new Set([...ran, ...want])].find((x) => count(ran, x) !== count(want, x));
  if (id === undefined) return null;
  const n = count(ran, id);
  const w = count(want, id);
  const name = kase.def.script.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((b) => b?.type === "toolCall" && b.id === id)?.name ?? "?";
  const start = events.findIndex((e) => e?.type === "tool_start" && e.call?.id === id);
  const key = n > w ? (w === 0 ? "diff.exec.never" : w === 1 ? "diff.exec.more.once" : "diff.exec.more") : "diff.exec.fewer";
  return { where: "exec", index: start >= 0 ? start : events.length - 1, key, vars: { call: callLabel(name, id), n, want: w, ran: ran.join(", ") }, parts: NO_PARTS };
}

const NO_PARTS = { actual: null, expected: null, actualNote: null, expectedNote: null };

/**
 * The first place a learner's loop (recorded by the kit: checkCase's `run`, `{events, result, threw, …}`) went another
 * way than the course's (`kase`, a kit case: its `expect`), as the kit compares them: the events first, then the
 * transcript it returned. `failed`: the kit failed the case (its report's `pass` is false).
 *
 * Null when the case passed: the events and the transcript agree and `failed` is not set. Else `{where, index, key,
 * vars, parts}`, `key` the sentence:
 * - `where` "event" or "message": `diff.<where>` (or, the same item with other fields, `diff.<where>.changed`,
 *   `vars.fields` the fields that differ), `vars.n` the event's number (from 1) or the message's index (from 0, as the
 *   transcript numbers them), and `parts` what each side did there and a note for each ({key, vars} or null): which
 *   of the two is missing, a second time ("again"), out of order ("later" in the other, around other items), only
 *   moved by what one list lacks before it ("shifted"), or never done by the correct loop;
 * - `where` "exec", at the call's first tool_start (`index`): the events agree, but the kit's record of the calls the
 *   loop ran (`executions`) has one run another number of times than the correct loop runs it (`diff.exec.*`);
 * - `at` (a message difference): the model request whose transcript, as the loop sent it, first held the message
 *   (`{request}`), else `{result: true}`; `order`: a batch's results in another order than their calls'
 *   (`{got, want, completion}`), else null;
 * - `where` "run", at the last event (`index`): the events agree but the loop returned no transcript
 *   (`diff.run.threw`, `diff.run.noResult`), or both agree and the kit failed the case on what else it checks, the
 *   requests or the calls run (`diff.run.agree`); the kit's report holds the evidence.
 */
export function replayDifference(kase, recorded, { failed = false } = {}) {
  const { def, expect } = kase;
  const events = Array.isArray(recorded?.events) ? recorded.events : [];
  const inEvents = difference(expect.events, events, eventView, def);
  if (inEvents) return itemDifference("event", inEvents, EVENTS);
  const last = { where: "run", index: events.length - 1, vars: { n: events.length }, parts: NO_PARTS };
  const inRuns = executionDifference(kase, recorded, events);
  if (inRuns) return inRuns;
  const messages = recorded?.result?.messages;
  if (!Array.isArray(messages)) return recorded?.threw ? { ...last, key: "diff.run.threw", vars: { ...last.vars, error: String(recorded.threw) } } : { ...last, key: "diff.run.noResult" };
  const inMessages = difference(expect.messages, messages, messageView, def);
  if (inMessages) return { ...itemDifference("message", inMessages, MESSAGES), at: whereSent(recorded, messages, inMessages.index), order: batchOrder(expect.messages, messages, events, inMessages.index) };
  return failed ? { ...last, key: "diff.run.agree" } : null;
}
