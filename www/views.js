// Rendering of the synchronized views: timeline, transcript, pairing, findings, tools and trace. Everything that
// comes from a model, a tool or a pasted transcript is inserted as text (textContent / text nodes), never as HTML.
//
// Every item that belongs to something another view also shows carries a link token in `data-link`
// (see links.js); the items whose token is in the `highlight` set are marked, and a click selects the token.

import { t } from "./i18n.js";
import { toolCalls, callLabel } from "./explain.js";

/** Create an element: props are attributes (data-*, class, ...), children are nodes or strings (as text). */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "onclick") node.addEventListener("click", value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const short = (s, n = 90) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
export const json = (v) => {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
};

/** Scroll a list so that an item is in view, without scrolling the page (a phone reader keeps their place). */
function scrollWithin(container, item) {
  if (!item || container.scrollHeight <= container.clientHeight) return;
  const top = item.offsetTop - container.offsetTop;
  if (top < container.scrollTop) container.scrollTop = top;
  else if (top + item.offsetHeight > container.scrollTop + container.clientHeight) container.scrollTop = top + item.offsetHeight - container.clientHeight;
}

/** A click on the item selects its token, unless it lands on a child that selects its own (`data-select`). */
function selectable(node, token, onSelect) {
  node.addEventListener("click", (ev) => {
    if (ev.target instanceof Element && ev.target.closest("[data-select]")) return;
    onSelect(token);
  });
  return node;
}

const linkClass = (highlight, token) => (highlight.has(token) ? " highlight" : "");

/** Who a message or event belongs to, as the chapter-00 trace says: a skipped result is the loop's, and so is a
 * compaction entry (the loop appends it). */
export function ownerOfMessage(m) {
  if (m?.role === "user") return "user";
  if (m?.role === "assistant") return "model";
  if (m?.role === "toolResult") return m.details?.skipped ? "loop" : "tool";
  if (m?.role === "compaction") return "loop";
  return "custom"; // a custom-role message (SPEC §7): the app's own, never sent to the model
}

function ownerOfEvent(rec) {
  switch (rec.type) {
    case "model_event":
    case "assistant_message":
      return "model";
    case "tool_end":
    case "tool_progress":
      return "tool";
    case "queued_message":
      return ownerOfMessage(rec.event.message);
    default:
      return "loop";
  }
}

// --- keys linking events to the messages they produced ----------------------------------------

/**
 * A key per message: input messages `in:i`; the k-th appended assistant `a:k` (request k produced it);
 * a result appended after it `r:k:<callId>`; the k-th compaction entry the run appended `k:k`.
 */
export function messageKeys(messages, inputLength) {
  let request = 0;
  let compactions = 0;
  return messages.map((m, i) => {
    if (i < inputLength) return `in:${i}`;
    if (m?.role === "assistant") return `a:${++request}`;
    if (m?.role === "toolResult") return `r:${request}:${m.toolCallId}`;
    if (m?.role === "compaction") return `k:${++compactions}`;
    return `m:${i}`;
  });
}

/** The key of the message an event produced (a dropped attempt's events produced none). */
export function eventKey(rec) {
  if (rec.dropped) return null;
  if (rec.type === "model_event" || rec.type === "assistant_message") return rec.request > 0 ? `a:${rec.request}` : null;
  if (rec.type === "compaction") return rec.compaction ? `k:${rec.compaction}` : null;
  if (rec.callId !== undefined) return `r:${rec.request}:${rec.callId}`;
  return null;
}

// --- timeline --------------------------------------------------------------------------------------

function eventDetail(rec) {
  const e = rec.event;
  switch (e.type) {
    case "model_event": {
      const m = e.event ?? {};
      // As the course prints them: "text" for text, 'json' for tool-call arguments; newlines as ↵.
      const delta = String(m.delta ?? "").replace(/\n/g, "↵");
      if (m.type === "text_delta" || m.type === "thinking_delta") return short(`"${delta}"`);
      if (m.type === "toolcall_delta") return short(`'${delta}'`);
      if (m.type === "toolcall_end") return callLabel(m.toolCall?.name, m.toolCall?.id);
      if (m.type === "done") return `reason=${m.reason}`;
      if (m.type === "error") return `reason=${m.reason} ${m.error?.errorMessage ?? ""}`.trim();
      return "";
    }
    case "assistant_message": {
      const calls = toolCalls(e.message).map((b) => callLabel(b.name, b.id));
      return `stopReason=${e.message?.stopReason}${calls.length ? ` ${calls.join(", ")}` : ""}`;
    }
    case "tool_start":
      return `${callLabel(e.call?.name, e.call?.id)} ${short(json(e.call?.arguments ?? {}), 60)}`;
    case "tool_progress":
      return `${e.callId} ${short(contentText(e.content))}`;
    case "tool_end":
      return `${callLabel(e.result?.toolName, e.result?.toolCallId)}${e.result?.isError ? " isError" : ""}`;
    case "tool_skipped":
      return `${callLabel(e.result?.toolName, e.result?.toolCallId)} ${e.result?.details?.reason ?? ""}`;
    case "turn_end":
      return `reason=${e.reason} steps=${e.steps}`;
    case "queued_message":
      return `${e.queue}: ${e.message?.role} ${short(json(contentText(e.message?.content)), 60)}`;
    case "retry":
      return `attempt=${e.attempt} delayMs=${e.delayMs} ${short(json(e.error), 60)}`;
    case "compaction":
      return `firstKeptIndex=${e.entry?.firstKeptIndex} tokensBefore=${e.entry?.tokensBefore}`;
    default:
      return "";
  }
}

/** The name of an event as the status line gives it: `model_event › done (toolUse)`. */
export function eventLabel(rec) {
  if (rec.type !== "model_event") return rec.type;
  const m = rec.event.event ?? {};
  return `model_event › ${m.type}${m.reason ? ` (${m.reason})` : ""}`;
}

/** The wait after a retry event: planned while the page holds the loop at it, then from when the page let it go on to
 * the next call of the model (`waits` are the waterfall's wait rows, waterfallRows). */
function retryWait(rec, waits) {
  const wait = waits?.find((w) => w.seq === rec.seq);
  const ms = rec.event.delayMs;
  const state = !wait ? "planned" : wait.open ? "waiting" : "waited";
  return h(
    "span",
    { class: `wait ${state}`, "data-testid": "retry-wait", "data-state": state, "data-delay": ms, "data-start": wait ? Math.round(wait.start) : undefined, "data-end": wait && !wait.open ? Math.round(wait.end) : undefined },
    h("span", { class: "wait-bar", "aria-hidden": "true" }),
    state === "planned" ? t("timeline.retryPlanned", { ms }) : state === "waiting" ? t("timeline.retryWaiting", { ms }) : t("timeline.retryWaited", { ms, waited: Math.round(wait.end - wait.start) }),
  );
}

/**
 * One child per event (role option, data-type); model events carry their request number (`data-request`, of this
 * run) and the first one of a request is labelled (with its attempt, when it was retried), numbered after the
 * `requestsBefore` requests the run's transcript already holds (a resumed run's startSteps). A retry shows the wait that follows it, and the events
 * of the failed attempt it dropped are marked (`data-dropped`). One tab stop (`active`); the arrows, Home and End move
 * it and select as they go.
 */
export function renderTimeline(list, records, { heldSeq, selectedSeq, activeSeq, highlight, aborted, onSelect, waits = [], requestsBefore = 0 }) {
  const items = records.map((rec, i) => {
    const isModel = rec.type === "model_event";
    const sub = isModel ? rec.event.event?.type : null;
    const token = `e:${rec.seq}`;
    const classes = [
      "event",
      `owner-${ownerOfEvent(rec)}`,
      isModel || rec.type === "assistant_message" ? "in-request" : "",
      rec.dropped ? "dropped" : "",
      rec.seq === heldSeq ? "held" : "",
      rec.seq === selectedSeq ? "selected" : "",
    ].filter(Boolean);
    const abortHere = aborted && (aborted.seq === rec.seq || (aborted.seq === 0 && i === 0));
    const item = h(
      "li",
      {
        class: classes.join(" ") + linkClass(highlight, token),
        role: "option",
        "aria-selected": String(rec.seq === selectedSeq),
        "data-type": rec.type,
        "data-event": sub ?? undefined,
        "data-request": rec.request || undefined,
        "data-attempt": isModel || rec.type === "retry" ? rec.attempt : undefined,
        "data-dropped": rec.dropped ? "true" : undefined,
        "data-call-id": rec.callId,
        "data-seq": rec.seq,
        "data-link": token,
        "data-focus-key": token,
        "data-owner": ownerOfEvent(rec),
        "data-aborted": abortHere ? aborted.by : undefined,
        tabindex: rec.seq === activeSeq ? "0" : "-1",
        "aria-current": rec.seq === heldSeq ? "step" : undefined,
      },
      isModel && sub === "start" ? h("span", { class: "request-label" }, rec.attempt > 1 ? t("timeline.requestAttempt", { n: requestsBefore + rec.request, attempt: rec.attempt }) : t("timeline.request", { n: requestsBefore + rec.request })) : null,
      h("span", { class: "seq" }, String(rec.seq).padStart(2, "0")),
      h("span", { class: "kind" }, rec.type),
      sub ? h("span", { class: "sub" }, sub) : null,
      h("span", { class: "detail" }, eventDetail(rec)),
      rec.dropped && sub === "start" ? h("span", { class: "badge dropped" }, t("timeline.dropped")) : null,
      rec.type === "retry" ? retryWait(rec, waits) : null,
      abortHere
        ? h("span", { class: "abort-mark" }, h("span", { class: "stop-icon", "aria-hidden": "true" }), t(aborted.seq === 0 ? "timeline.abortedBefore" : aborted.by === "hand" ? "timeline.abortedHand" : "timeline.abortedScenario"))
        : null,
    );
    item.addEventListener("click", () => onSelect(rec.seq, { toggle: true }));
    item.addEventListener("keydown", (ev) => {
      const moves = { ArrowDown: i + 1, ArrowRight: i + 1, ArrowUp: i - 1, ArrowLeft: i - 1, Home: 0, End: records.length - 1 };
      if (ev.key === "Enter") onSelect(rec.seq, { toggle: true });
      else if (ev.key in moves) {
        ev.preventDefault();
        const next = records[Math.max(0, Math.min(records.length - 1, moves[ev.key]))];
        onSelect(next.seq, { focus: true });
      }
    });
    return item;
  });
  list.dataset.empty = t("timeline.empty");
  // A listbox must own options: the role comes with the first event.
  if (items.length) list.setAttribute("role", "listbox");
  else list.removeAttribute("role");
  list.replaceChildren(...items);
  scrollWithin(list, list.querySelector(".selected") ?? list.querySelector(".held"));
}

// --- transcript ------------------------------------------------------------------------------------

export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return json(content);
  return content.map((b) => (b?.type === "text" ? b.text : b?.type === "image" ? `[${b.mimeType}]` : json(b))).join("\n");
}

/** The blocks of a message; a tool call is a button that selects the call (`callToken(id)`), when given. */
export function blockNodes(content, { callToken, highlight = new Set(), onSelect } = {}) {
  if (typeof content === "string") return [h("div", { class: "block text" }, content)];
  if (!Array.isArray(content)) return [h("div", { class: "block raw" }, json(content))];
  return content.map((b, i) => {
    if (b?.type === "text") return h("div", { class: "block text" }, b.text);
    if (b?.type === "thinking") return h("div", { class: "block thinking" }, h("span", { class: "tag" }, t("block.thinking")), b.thinking);
    if (b?.type === "toolCall") {
      const token = callToken?.(b.id);
      const name = callLabel(b.name, b.id);
      return h(
        "div",
        { class: `block toolcall${token ? linkClass(highlight, token) : ""}`, "data-call-id": b.id, "data-link": token },
        token && onSelect
          ? h("button", { type: "button", class: "call-name link", "data-select": token, "data-focus-key": `${token}:${i}`, "aria-pressed": String(highlight.has(token)), onclick: () => onSelect(token) }, name)
          : h("span", { class: "call-name" }, name),
        " ",
        h("code", {}, json(b.arguments)),
      );
    }
    if (b?.type === "image") return h("div", { class: "block image" }, t("block.image", { mime: b.mimeType, size: String(b.data ?? "").length }));
    return h("div", { class: "block raw" }, json(b));
  });
}

/** The index of the last compaction entry of a transcript (-1 when none): requests carry its summary, then the
 * messages from its firstKeptIndex on. */
export function lastCompaction(messages) {
  return messages.findLastIndex((m) => m?.role === "compaction");
}

/**
 * One child per message, with data-role and data-owner; the validator's problems about a message as badges. A
 * compaction entry shows its summary and its cut; a message before the last entry's cut is marked as summarised
 * (`data-compacted`: the entry's index): it stays in the transcript, and requests carry the summary instead.
 */
export function renderTranscript(list, messages, keys, { highlight, selected, problems, inProgress = new Set(), paused = null, onSelect, onFork = null, requestsBefore = 0 }) {
  const last = lastCompaction(messages);
  // Only messages before the entry can be summarised by it, whatever its cut says.
  const cut = last >= 0 ? Math.min(messages[last].firstKeptIndex, last) : -1;
  const items = messages.map((m, i) => {
    const token = `m:${i}`;
    const role = m?.role; // a pasted transcript may hold anything (null) where a message goes
    const badges = [];
    const compacted = i < cut && ["user", "assistant", "toolResult"].includes(role);
    if (compacted) badges.push(h("span", { class: "badge compacted" }, t("badge.compacted", { entry: last })));
    if (role === "compaction") badges.push(h("span", { class: "badge" }, `firstKeptIndex=${m.firstKeptIndex}`), h("span", { class: "badge" }, m.tokensBefore === undefined ? "tokensBefore: none" : `tokensBefore=${m.tokensBefore}`));
    if (role === "assistant") badges.push(h("span", { class: `badge stop-${m.stopReason}` }, `stopReason=${m.stopReason}`));
    if (role === "toolResult") {
      badges.push(h("span", { class: "badge" }, callLabel(m.toolName, m.toolCallId)));
      if (m.details?.skipped) badges.push(h("span", { class: "badge skipped", title: t(`skip.${m.details.reason}`) }, t("badge.skipped", { reason: m.details.reason })));
      else if (m.isError) badges.push(h("span", { class: "badge error" }, t("badge.isError")));
    }
    for (const p of problems.filter((p) => p.index === i)) {
      const waiting = inProgress.has(`${p.index}:${p.toolCallId}`);
      badges.push(h("span", { class: `badge ${waiting ? "pending" : "problem"}`, "data-kind": p.kind, "data-call-id": p.toolCallId, "data-state": waiting ? (paused ? "paused" : "in-progress") : undefined }, waitingText(p.toolCallId, waiting, paused) ?? `${t(`kind.${p.kind}`)}${t("sep.colon")}${p.toolCallId}`));
    }
    const item = h(
      "li",
      {
        class: `message role-${role} owner-${ownerOfMessage(m)}${linkClass(highlight, token)}`,
        "data-role": String(role),
        "data-owner": ownerOfMessage(m),
        "data-key": keys[i],
        "data-index": i,
        "data-link": token,
        "data-compacted": compacted ? last : undefined,
      },
      h(
        "div",
        { class: "message-head" },
        h("button", { type: "button", class: "link", "data-focus-key": token, "aria-pressed": String(selected === token) }, h("span", { class: "index" }, `#${i}`), " ", h("span", { class: "role" }, String(role))),
        ...badges,
        // A response of this run (request k made it) can be edited and the run made again from there; its label
        // numbers it after the requests the run's transcript already holds.
        onFork && role === "assistant" && keys[i]?.startsWith("a:")
          ? h("button", { type: "button", class: "fork-button", "data-testid": "fork", "data-select": "fork", "data-request": keys[i].slice(2), "data-focus-key": `fork:${i}`, "aria-label": t("fork.button", { n: requestsBefore + Number(keys[i].slice(2)) }), onclick: () => onFork(Number(keys[i].slice(2))) }, t("fork.short"))
          : null,
      ),
      ...(role === "compaction"
        ? [h("div", { class: "block summary", "data-testid": "compaction-summary" }, h("span", { class: "tag" }, "summary"), m.summary)]
        : blockNodes(m?.content, { callToken: role === "assistant" ? (id) => `c:${i}:${id}` : null, highlight, onSelect })),
      role === "assistant" && m.errorMessage ? h("div", { class: "block error-text" }, m.errorMessage) : null,
    );
    return selectable(item, token, onSelect);
  });
  list.dataset.empty = t("transcript.empty");
  list.replaceChildren(...items);
  scrollWithin(list, list.querySelector(".highlight"));
}

// --- pairing ---------------------------------------------------------------------------------------

/**
 * The pairing view's rows, as validateTranscript sees the transcript (its `problems` decide every kind): one row
 * per distinct call id of each assistant message, then, where they stand, the results that answer no call of the
 * message before them. A result with no problem answers the call with its id in the last assistant message
 * before it; the kinds of a row are the validator's problems about that call or that result.
 */
export function pairRows(messages, problems) {
  const kindsAt = (index, id) => problems.filter((p) => p.index === index && p.toolCallId === id).map((p) => p.kind);
  const rows = [];
  let open = null; // the last assistant message's rows, by id
  messages.forEach((m, index) => {
    if (m?.role === "assistant") {
      open = new Map();
      for (const c of toolCalls(m)) {
        const row = open.get(c.id);
        if (row) row.count += 1;
        else {
          const fresh = { type: "call", callId: c.id, name: c.name, index, count: 1, resultIndex: null, result: null, kinds: [] };
          open.set(c.id, fresh);
          rows.push(fresh);
        }
      }
    } else if (m?.role === "toolResult") {
      const kinds = kindsAt(index, m.toolCallId);
      const row = open?.get(m.toolCallId);
      if (kinds.length === 0 && row && row.resultIndex === null) Object.assign(row, { resultIndex: index, result: m });
      else rows.push({ type: "result", callId: m.toolCallId, name: m.toolName, index, kinds, result: m });
    }
  });
  for (const row of rows) if (row.type === "call") row.kinds = kindsAt(row.index, row.callId);
  return rows;
}

/** The token of a pairing row: its call, or (a result that answers no call) its message. */
export const rowToken = (row) => (row.type === "call" ? `c:${row.index}:${row.callId}` : `m:${row.index}`);

/** What a call of a paused batch waits for (`paused`: the ids that wait for a decision), as `<prefix>.paused` or
 * `<prefix>.pausedBatch` says it. */
export const pausedText = (paused, prefix, id) => t(paused.has(id) ? `${prefix}.paused` : `${prefix}.pausedBatch`, { id });

/** How every view names a call that has no result yet but is not missing one: mid-run "in progress", or, in a
 * paused run, what it waits for. Null when the call is not waiting (then the validator's kind names it). */
export function waitingText(id, waiting, paused) {
  if (!waiting) return null;
  return paused ? pausedText(paused, "findings", id) : t("findings.inProgress", { id });
}

function kindBadges(kinds, id, inProgress, paused) {
  const waiting = paused ? pausedText(paused, "findings", id) : t("findings.inProgress", { id });
  return kinds.map((kind) => h("span", { class: `badge ${inProgress ? "pending" : "problem"}`, "data-kind": kind }, inProgress ? waiting : t(`kind.${kind}`)));
}

/** One child per row (data-call-id, data-paired, data-state, data-kinds). */
export function renderPairing(list, rows, { execs, live, paused = null, inProgress, highlight, selected, onSelect }) {
  // Each call's row is a pair, numbered in transcript order ("pair #n"); the numbers of messages say "message #i", so
  // that neither reads like a call's number or a step of the run.
  let pairs = 0;
  const items = rows.map((row) => {
    const token = rowToken(row);
    const pending = row.type === "call" && inProgress.has(`${row.index}:${row.callId}`);
    let state;
    let label;
    if (row.type === "result") {
      state = "orphan";
      label = [t("pairing.orphanAt", { index: row.index, call: callLabel(row.name, row.callId) })];
    } else if (row.result) {
      const r = row.result;
      state = r.details?.skipped ? "skipped" : r.isError ? "error" : "paired";
      label = [t("pairing.paired", { index: row.resultIndex })];
      if (r.details?.skipped) label.push(t("pairing.skipped", { reason: t(`skip.${r.details.reason}`) }));
      else if (r.isError) label.push(`${t("pairing.error")}${t("sep.colon")}${short(contentText(r.content), 60)}`);
      else label.push(short(contentText(r.content), 60));
    } else {
      const exec = pending && live ? [...execs].reverse().find((x) => x.callId === row.callId) : undefined;
      state = exec ? exec.state : pending ? (paused ? "paused" : "pending") : "missing";
      label = [state === "paused" ? pausedText(paused, "pairing", row.callId) : t(`pairing.${state}`)];
    }
    const callText = row.type === "call" ? t("pairing.key", { n: ++pairs, call: callLabel(row.name, row.callId), index: row.index }) : "?";
    return selectable(
      h(
        "li",
        {
          class: `pair state-${state}${linkClass(highlight, token)}`,
          "data-call-id": row.callId,
          "data-paired": row.type === "call" && row.result ? "true" : "false",
          "data-state": state,
          "data-orphan": row.type === "result" ? "true" : undefined,
          "data-kinds": row.kinds.join(" "),
          "data-link": token,
        },
        h("button", { type: "button", class: "call link", "data-focus-key": `p:${token}`, "aria-pressed": String(selected === token) }, callText),
        h("span", { class: "arrow", "aria-hidden": "true" }, row.type === "call" && row.result ? "→" : "⋯"),
        h("span", { class: "result" }, label.join(" · ")),
        row.count > 1 ? h("span", { class: "badge" }, t("pairing.shared", { n: row.count })) : null,
        ...kindBadges(row.kinds, row.callId, pending, paused),
      ),
      token,
      onSelect,
    );
  });
  list.dataset.empty = t("pairing.empty");
  list.replaceChildren(...items);
}

/** validateTranscript's answer; mid-run, a call of the current response that has no result yet is not an error. */
export function renderFindings(box, validation, { inProgress = new Set(), paused = null } = {}) {
  if (!validation) {
    box.replaceChildren();
    return;
  }
  if (validation.error) {
    box.replaceChildren(h("p", { class: "bad" }, `${t("findings")}${t("sep.colon")}${validation.error}`));
    return;
  }
  const pending = (p) => inProgress.has(`${p.index}:${p.toolCallId}`);
  const real = validation.problems.filter((p) => !pending(p));
  const waiting = validation.problems.filter(pending);
  let head;
  if (real.length) head = h("p", { class: "bad" }, `${t("findings")}: `, t("findings.problems", { n: real.length }));
  else if (waiting.length) head = h("p", { class: "pending" }, `${t("findings")}: `, t(paused ? "findings.pausedHead" : "findings.inProgressHead"));
  else head = h("p", { class: "good" }, `${t("findings")}: `, t("findings.ok"));
  const items = validation.problems.map((p) =>
    pending(p)
      ? h("li", { class: "pending", "data-kind": p.kind, "data-call-id": p.toolCallId, "data-state": paused ? "paused" : "in-progress" }, paused ? pausedText(paused, "findings", p.toolCallId) : t("findings.inProgress", { id: p.toolCallId }))
      : h("li", { class: "bad", "data-kind": p.kind, "data-call-id": p.toolCallId }, t("findings.item", { kindText: t(`kind.${p.kind}`), kind: p.kind, id: p.toolCallId, index: p.index })),
  );
  box.replaceChildren(head, items.length ? h("ul", {}, ...items) : "", waiting.length ? h("p", { class: "note" }, t(paused ? "findings.pausedNote" : "findings.live")) : "");
}

// --- tools bar -------------------------------------------------------------------------------------

export function renderTools(list, execs, onRelease) {
  list.dataset.empty = t("tools.empty");
  list.replaceChildren(
    ...execs.map((x) =>
      h(
        "li",
        { class: `exec state-${x.state}`, "data-call-id": x.callId, "data-state": x.state },
        h("span", { class: "call-name" }, callLabel(x.name, x.callId)),
        h("span", { class: "state" }, t(`tools.state.${x.state}`)),
        x.state === "gated" ? h("button", { type: "button", "data-testid": `release-${x.callId}`, onclick: () => onRelease(x) }, t("tools.release", { name: x.name })) : null,
      ),
    ),
  );
}

// --- chapter-00 trace ------------------------------------------------------------------------------

/**
 * trace: {records: [{record, msgIndex, ids}], formatted, validation, fromEvents} or {error}; rows link to their message.
 * A row shows validateTranscript's kinds about its message (as every other view does); the check under the
 * table is validateTrace's own verdict.
 */
export function renderTrace(box, trace, { highlight, selected, inProgressIds, paused = null, problems, onSelect }) {
  if (!trace || (!trace.error && trace.records.length === 0)) {
    box.replaceChildren(h("p", { class: "empty" }, t("trace.empty")));
    return;
  }
  if (trace.error) {
    box.replaceChildren(h("p", { class: "bad" }, trace.error));
    return;
  }
  // The record that stands for a message (its assistant_message, or its tool_result) carries its problems.
  const problemsOf = (r, msgIndex, ids) => {
    if (r.kind !== "assistant_message" && r.kind !== "tool_result") return [];
    return problems.filter((p) => p.index === msgIndex && ids.includes(p.toolCallId));
  };
  const rows = trace.records.map(({ record: r, msgIndex, ids }) => {
    const about = problemsOf(r, msgIndex, ids);
    const pending = (p) => p.kind === "missing_result" && inProgressIds.has(`${r.seq}:${p.toolCallId}`);
    const token = `t:${r.seq}`;
    return selectable(
      h(
        "tr",
        {
          "data-owner": r.owner,
          "data-kind": r.kind,
          "data-link": token,
          "data-kinds": about.map((p) => p.kind).join(" "),
          class: linkClass(highlight, token).trim() || undefined,
        },
        h("td", {}, h("button", { type: "button", class: "link", "data-focus-key": token, "aria-pressed": String(selected === token) }, String(r.seq).padStart(2, "0"))),
        h("td", {}, r.kind),
        h("td", {}, h("span", { class: `owner owner-${r.owner}` }, t(`owner.${r.owner}`) === r.owner ? r.owner : `${r.owner} · ${t(`owner.${r.owner}`)}`)),
        h("td", {}, r.detail),
        h(
          "td",
          {},
          r.toolCallId ?? "",
          ...about.map((p) => h("span", { class: `badge ${pending(p) ? "pending" : "problem"}`, "data-kind": p.kind, "data-call-id": p.toolCallId, "data-state": pending(p) ? (paused ? "paused" : "in-progress") : undefined }, waitingText(p.toolCallId, pending(p), paused) ?? t(`kind.${p.kind}`))),
        ),
      ),
      token,
      onSelect,
    );
  });
  const table = h(
    "table",
    { "data-testid": "trace-table" },
    h("thead", {}, h("tr", {}, ...["trace.seq", "trace.kind", "trace.owner", "trace.detail", "trace.call"].map((k) => h("th", { scope: "col" }, t(k))))),
    h("tbody", {}, ...rows),
  );
  const pending = (p) => p.kind === "missing_result" && inProgressIds.has(`${p.seq}:${p.toolCallId}`);
  const real = trace.validation.problems.filter((p) => !pending(p));
  const waiting = trace.validation.problems.filter(pending);
  const check = real.length
    ? h(
        "div",
        { class: "bad", "data-testid": "trace-check" },
        t("trace.invalid", { n: real.length }),
        h("ul", {}, ...real.map((p) => h("li", { "data-kind": p.kind, "data-call-id": p.toolCallId }, t("trace.problem", { kindText: t(`kind.${p.kind}`), kind: p.kind, id: p.toolCallId, seq: p.seq })))),
      )
    : waiting.length
      ? h("div", { class: "pending", "data-testid": "trace-check" }, ...waiting.map((p) => h("p", { "data-kind": p.kind, "data-call-id": p.toolCallId, "data-state": paused ? "paused" : "in-progress" }, paused ? pausedText(paused, "trace", p.toolCallId) : t("trace.inProgress", { id: p.toolCallId }))))
      : h("p", { class: "good", "data-testid": "trace-check" }, t("trace.valid"));
  box.replaceChildren(
    h("p", { class: "help", "data-testid": "trace-source", "data-source": trace.fromEvents ? "events" : "transcript" }, t(trace.fromEvents ? "trace.fromEvents" : "trace.fromTranscript")),
    h("div", { class: "table-wrap" }, table),
    check,
    h("pre", { class: "trace-text", "data-testid": "trace-text", tabindex: "0", "aria-label": t("trace") }, trace.formatted),
  );
}

// --- time and tokens -------------------------------------------------------------------------------

/**
 * What the waterfall shows, read off the run's events and the time each reached the page (ms since the run began):
 * per model request, a bar from its `start` to its final message (with the response's usage, when it has one),
 * and per executed call a bar from its tool_start to its tool_end, grouped by the batch (request) it answers.
 * A retried request has a bar per attempt: a failed one ends at its retry (its usage from the error event, which
 * carries the failed message), then the wait, from when the loop went on after the retry event (`goneOn`, the end
 * of a hold) to the next call of the model. Anything that has started and not ended yet runs to `now`.
 */
export function waterfallRows(events, times, now, goneOn = times) {
  const rows = [];
  const openCalls = new Map();
  let wait = null;
  for (const rec of events) {
    const at = times[rec.seq - 1] ?? 0;
    const e = rec.event;
    if (rec.type === "model_event" && e.event?.type === "start") {
      if (wait) wait.end = at;
      wait = null;
      rows.push({ kind: "request", request: rec.request, attempt: rec.attempt ?? 1, start: at, end: null, usage: null });
    } else if (rec.type === "model_event" && e.event?.type === "error" && rec.dropped) {
      const row = rows.findLast((r) => r.kind === "request" && r.request === rec.request);
      if (row) Object.assign(row, { usage: e.event.error?.usage ?? null });
    } else if (rec.type === "retry") {
      const row = rows.findLast((r) => r.kind === "request" && r.request === rec.request && r.end === null);
      if (row) Object.assign(row, { end: at, failed: true, error: e.error });
      // Held at the retry event, the loop has not begun to wait yet.
      const began = goneOn[rec.seq - 1];
      wait = began === undefined ? null : { kind: "wait", seq: rec.seq, request: rec.request, attempt: e.attempt, delay: e.delayMs, start: began, end: null };
      if (wait) rows.push(wait);
    } else if (rec.type === "assistant_message") {
      const row = rows.findLast((r) => r.kind === "request" && r.request === rec.request);
      if (row) Object.assign(row, { end: at, usage: e.message?.usage ?? null, stopReason: e.message?.stopReason });
    } else if (rec.type === "tool_start") {
      const row = { kind: "call", request: rec.request, call: e.call?.id, name: e.call?.name, start: at, end: null };
      openCalls.set(row.call, row);
      rows.push(row);
    } else if (rec.type === "tool_end") {
      const row = openCalls.get(e.result?.toolCallId);
      if (row) {
        row.end = at;
        row.isError = e.result?.isError === true;
        openCalls.delete(row.call);
      }
    }
  }
  for (const r of rows) if (r.end === null) Object.assign(r, { end: Math.max(now, r.start), open: true });
  return rows;
}

/** The waterfall: `[data-testid=waterfall]`, one `[data-call]` bar per executed call (`data-start`, `data-end` in ms
 * since the run began), one `[data-request]` bar per call of the model, with its tokens when its response has usage and
 * the run's total so far (`data-running`, against `budget.maxTokens` when the run has a budget), and one `[data-wait]`
 * bar per wait before a retry. Under it, the tokens the page added up and, once the run is over, the package's own
 * `result.usage` (`usage`). A request's label numbers it after the `requestsBefore` the run's transcript holds. */
export function renderWaterfall(box, rows, { tokensOf, tokensText, budget = null, usage = null, requestsBefore = 0 }) {
  if (!rows.length) {
    box.replaceChildren(h("p", { class: "empty" }, t("waterfall.empty")));
    return;
  }
  const span = Math.max(1, ...rows.map((r) => r.end));
  const ms = (v) => `${Math.round(v)} ms`;
  const bar = (r) => {
    const node = h("span", { class: "bar", "aria-hidden": "true" });
    node.style.left = `${(r.start / span) * 100}%`;
    node.style.width = `${Math.max(0.5, ((r.end - r.start) / span) * 100)}%`;
    return h("span", { class: "track" }, node);
  };
  let running = 0;
  const items = rows.map((r) => {
    const time = r.open ? `${ms(r.start)} → ${t("waterfall.runningFor", { ms: ms(r.end - r.start) })}` : `${ms(r.start)} → ${ms(r.end)} (${ms(r.end - r.start)})`;
    if (r.kind === "request") {
      const tokens = tokensOf({ usage: r.usage });
      if (tokens?.totalTokens !== undefined) running += tokens.totalTokens;
      const label = r.attempt > 1 || r.failed ? t("waterfall.requestAttempt", { n: requestsBefore + r.request, attempt: r.attempt }) : t("waterfall.request", { n: requestsBefore + r.request });
      const total = tokens?.totalTokens !== undefined ? h("span", { class: "running", "data-testid": "tokens-running" }, budget?.maxTokens ? t("waterfall.runningBudget", { n: running, max: budget.maxTokens }) : t("waterfall.runningTotal", { n: running })) : null;
      return h(
        "li",
        { class: `wf request${r.failed ? " failed" : ""}`, "data-request": r.request, "data-attempt": r.attempt, "data-failed": r.failed ? "true" : undefined, "data-start": Math.round(r.start), "data-end": Math.round(r.end), "data-tokens": tokens?.totalTokens ?? undefined, "data-running": tokens?.totalTokens !== undefined ? running : undefined },
        h("span", { class: "wf-label" }, label),
        bar(r),
        h(
          "span",
          { class: "wf-time" },
          time,
          " · ",
          tokens ? h("span", { class: "tokens" }, tokensText(tokens)) : h("span", { class: "help" }, t("waterfall.noUsage")),
          total ? " · " : null,
          total,
          r.failed ? h("span", { class: "help" }, " · ", t("waterfall.failed", { error: r.error })) : null,
        ),
      );
    }
    if (r.kind === "wait") {
      return h(
        "li",
        { class: `wf wait${r.open ? " open" : ""}`, "data-wait": r.attempt, "data-request": r.request, "data-delay": r.delay, "data-start": Math.round(r.start), "data-end": Math.round(r.end), "data-open": r.open ? "true" : undefined },
        h("span", { class: "wf-label" }, t("waterfall.wait", { attempt: r.attempt, n: requestsBefore + r.request })),
        bar(r),
        h("span", { class: "wf-time" }, time, " · ", t("waterfall.waitDelay", { ms: r.delay })),
      );
    }
    return h(
      "li",
      { class: `wf call${r.isError ? " error" : ""}`, "data-call": r.call, "data-batch": r.request, "data-start": Math.round(r.start), "data-end": Math.round(r.end), "data-open": r.open ? "true" : undefined },
      h("span", { class: "wf-label" }, callLabel(r.name, r.call)),
      bar(r),
      h("span", { class: "wf-time" }, time),
    );
  });
  const requests = rows.filter((r) => r.kind === "request");
  const totals = requests.map((r) => tokensOf({ usage: r.usage })?.totalTokens).filter((n) => n !== undefined);
  const spent = budget && usage ? (budget.maxTokens !== undefined && usage.totalTokens >= budget.maxTokens) || (budget.maxCost !== undefined && usage.cost >= budget.maxCost) : false;
  box.replaceChildren(
    h("p", { class: "help" }, t("waterfall.help")),
    h("ol", { class: "waterfall", "data-testid": "waterfall", "data-span": Math.round(span) }, ...items),
    ...(totals.length ? [h("p", { "data-testid": "tokens-total" }, t("waterfall.total", { n: totals.reduce((a, b) => a + b, 0), requests: totals.length }))] : []),
    ...(usage && (usage.totalTokens > 0 || usage.cost > 0 || budget)
      ? [h("p", { "data-testid": "usage", "data-total": usage.totalTokens, "data-cost": usage.cost }, t("waterfall.usage", { n: usage.totalTokens, cost: usage.cost }))]
      : []),
    ...(budget ? [h("p", { "data-testid": "budget", "data-spent": usage ? String(spent) : undefined }, t(!usage ? "waterfall.budget" : spent ? "waterfall.budgetSpent" : "waterfall.budgetLeft", { max: budget.maxTokens ?? "–", maxCost: budget.maxCost ?? "–" }))] : []),
  );
}
