// What belongs to what across the views, so that selecting one item highlights the others, and the chapter-00
// trace in the order things really happened.
//
// Tokens: `e:<seq>` an event, `m:<index>` a message, `c:<index>:<callId>` a call of the assistant message at
// index (its blocks in the transcript and its pairing row), `t:<seq>` a trace record. A group is everything
// that is about one thing: a message and the events and records that made it; a call, its result message and
// the events and records of that result; a failed attempt the loop retried (its model events and its retry event,
// no message); a compaction entry and its event. Selecting a token highlights every group that holds it.

/**
 * Which message each record of prologueTrace(messages) comes from. The trace has one record per message, two
 * for an assistant message (model_start, assistant_message) and two for an executed result (tool_start,
 * tool_result): a record opens a new message unless it is the second of such a pair.
 */
export function traceMessageIndex(records) {
  let index = -1;
  let previous = null;
  return records.map((r) => {
    const second = (r.kind === "assistant_message" && previous === "model_start") || (r.kind === "tool_result" && previous === "tool_start");
    if (!second) index += 1;
    previous = r.kind;
    return index;
  });
}

/** The event that produced a trace record (its seq), or undefined for a message no event of this run made. */
function producingEvent(record, key, events) {
  if (!key) return undefined;
  const [kind, request, callId] = key.split(":");
  const k = Number(request);
  const find = (test) => events.find((e) => e.request === k && !e.dropped && test(e))?.seq;
  if (kind === "a") {
    if (record.kind === "model_start") return find((e) => e.type === "model_event" && e.event.event?.type === "start");
    return find((e) => e.type === "assistant_message");
  }
  if (kind === "r") {
    const id = key.slice(`r:${request}:`.length);
    if (record.kind === "tool_start") return find((e) => e.type === "tool_start" && e.callId === id);
    return find((e) => (e.type === "tool_end" || e.type === "tool_skipped") && e.callId === id);
  }
  return undefined;
}

/**
 * The records of prologueTrace(messages), each placed at the event that produced it (a concurrent batch then
 * shows its real start and end order), renumbered from 1. Records of messages that no event made (the input,
 * a pasted transcript) keep their transcript order, first. `fromEvents` says whether any event placed a record.
 * (prologueTrace itself gives no tool_start to a result that answers no call before it.)
 */
export function orderTrace(records, keys, events) {
  const indexes = traceMessageIndex(records);
  let at = 0;
  let fromEvents = false;
  const placed = records.map((record, i) => {
    const seq = producingEvent(record, keys[indexes[i]], events);
    if (seq !== undefined) {
      at = seq;
      fromEvents = true;
    }
    return { record, msgIndex: indexes[i], at, order: i, eventSeq: seq, key: keys[indexes[i]] };
  });
  placed.sort((a, b) => a.at - b.at || a.order - b.order);
  // A tool_start record stands for the loop starting a call. For a result this run appended, only a tool_start event
  // says that happened (a learner's loop stepped through may not have emitted one): no milestone the run did not have.
  const kept = placed.filter(({ record, eventSeq, key }) => record.kind !== "tool_start" || !(key?.startsWith("r:") && eventSeq === undefined && events.length > 0));
  return {
    fromEvents,
    records: kept.map(({ record, msgIndex }, i) => ({ record: { ...record, seq: i + 1 }, msgIndex })),
  };
}

/** Groups of tokens that belong together; `related(token)` is the union of the groups that hold the token. */
export function buildLinks({ messages, keys, events, rows, trace }) {
  const groups = [];
  const group = (...tokens) => {
    const g = new Set(tokens);
    groups.push(g);
    return g;
  };
  const indexOfKey = new Map(keys.map((k, i) => [k, i]));
  const calls = new Map(); // "index:callId" -> group
  const ofMessage = new Map(); // message index -> group
  for (const row of rows) {
    if (row.type !== "call") continue;
    const g = group(`c:${row.index}:${row.callId}`);
    calls.set(`${row.index}:${row.callId}`, g);
    if (row.resultIndex !== null) {
      g.add(`m:${row.resultIndex}`);
      ofMessage.set(row.resultIndex, g);
    }
  }
  messages.forEach((_, i) => {
    if (!ofMessage.has(i)) ofMessage.set(i, group(`m:${i}`));
  });
  const ofRequest = new Map(); // request k -> group (its message's, or its own while the response streams)
  const ofAttempt = new Map(); // "request:attempt" of a failed attempt -> its events and its retry
  for (const e of events) {
    const token = `e:${e.seq}`;
    const assistant = indexOfKey.get(`a:${e.request}`);
    if (e.dropped || e.type === "retry") {
      const at = `${e.request}:${e.attempt}`;
      if (!ofAttempt.has(at)) ofAttempt.set(at, group());
      ofAttempt.get(at).add(token);
    } else if (e.type === "compaction" && indexOfKey.has(`k:${e.compaction}`)) {
      ofMessage.get(indexOfKey.get(`k:${e.compaction}`))?.add(token);
    } else if (e.type === "model_event" || e.type === "assistant_message") {
      if (!ofRequest.has(e.request)) ofRequest.set(e.request, assistant !== undefined ? ofMessage.get(assistant) : group());
      ofRequest.get(e.request).add(token);
    } else if (e.callId !== undefined && calls.has(`${assistant}:${e.callId}`)) {
      calls.get(`${assistant}:${e.callId}`).add(token);
    } else group(token);
  }
  for (const { record, msgIndex } of trace?.records ?? []) ofMessage.get(msgIndex)?.add(`t:${record.seq}`);

  const byToken = new Map();
  for (const g of groups) for (const token of g) byToken.set(token, [...(byToken.get(token) ?? []), g]);
  return {
    related(token) {
      const out = new Set([token]);
      for (const g of byToken.get(token) ?? []) for (const x of g) out.add(x);
      return out;
    },
  };
}
