// Rendering of the three synchronized views, the tools panel and the trace. Everything that comes from a
// model, a tool or a pasted transcript is inserted as text (textContent / text nodes), never as HTML.

import { t } from "./i18n.js";

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
const json = (v) => {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
};

// --- keys linking events to the messages they produced ----------------------------------------

/**
 * A key per message: input messages `in:i`; the k-th appended assistant `a:k` (request k produced it);
 * a result appended after it `r:k:<callId>`.
 */
export function messageKeys(messages, inputLength) {
  let request = 0;
  return messages.map((m, i) => {
    if (i < inputLength) return `in:${i}`;
    if (m.role === "assistant") return `a:${++request}`;
    if (m.role === "toolResult") return `r:${request}:${m.toolCallId}`;
    return `m:${i}`;
  });
}

export function eventKey(rec) {
  if (rec.type === "model_event" || rec.type === "assistant_message") return rec.request > 0 ? `a:${rec.request}` : null;
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
      if (m.type === "toolcall_end") return `${m.toolCall?.name}(${m.toolCall?.id})`;
      if (m.type === "done") return `reason=${m.reason}`;
      if (m.type === "error") return `reason=${m.reason} ${m.error?.errorMessage ?? ""}`.trim();
      return "";
    }
    case "assistant_message": {
      const calls = (e.message?.content ?? []).filter((b) => b?.type === "toolCall").map((b) => `${b.name}(${b.id})`);
      return `stopReason=${e.message?.stopReason}${calls.length ? ` ${calls.join(", ")}` : ""}`;
    }
    case "tool_start":
      return `${e.call?.name}(${e.call?.id}) ${short(json(e.call?.arguments ?? {}), 60)}`;
    case "tool_progress":
      return `${e.callId} ${short(contentText(e.content))}`;
    case "tool_end":
      return `${e.result?.toolName}(${e.result?.toolCallId})${e.result?.isError ? " isError" : ""}`;
    case "tool_skipped":
      return `${e.result?.toolName}(${e.result?.toolCallId}) ${e.result?.details?.reason ?? ""}`;
    case "turn_end":
      return `reason=${e.reason} steps=${e.steps}`;
    default:
      return "";
  }
}

/** One child per event, with data-type; model events carry their request number and the first one is labelled. */
export function renderTimeline(list, records, { heldSeq, selectedSeq, onSelect }) {
  const items = records.map((rec) => {
    const isModel = rec.type === "model_event";
    const sub = isModel ? rec.event.event?.type : null;
    const classes = [
      "event",
      isModel || rec.type === "assistant_message" ? "in-request" : "",
      rec.type.startsWith("tool_") ? "tool-event" : "",
      rec.seq === heldSeq ? "held" : "",
      rec.seq === selectedSeq ? "selected" : "",
    ].filter(Boolean);
    const item = h(
      "li",
      {
        class: classes.join(" "),
        "data-type": rec.type,
        "data-event": sub ?? undefined,
        "data-request": rec.request || undefined,
        "data-call-id": rec.callId,
        "data-seq": rec.seq,
        tabindex: "0",
        "aria-current": rec.seq === heldSeq ? "step" : undefined,
      },
      isModel && sub === "start" ? h("span", { class: "request-label" }, t("timeline.request", { n: rec.request })) : null,
      h("span", { class: "seq" }, String(rec.seq).padStart(2, "0")),
      h("span", { class: "kind" }, rec.type),
      sub ? h("span", { class: "sub" }, sub) : null,
      h("span", { class: "detail" }, eventDetail(rec)),
    );
    const select = () => onSelect(rec.seq);
    item.addEventListener("click", select);
    item.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") select();
    });
    return item;
  });
  list.dataset.empty = t("timeline.empty");
  list.replaceChildren(...items);
  list.querySelector(".held")?.scrollIntoView({ block: "nearest" });
}

// --- transcript ------------------------------------------------------------------------------------

export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return json(content);
  return content.map((b) => (b?.type === "text" ? b.text : b?.type === "image" ? `[${b.mimeType}]` : json(b))).join("\n");
}

function blockNodes(content) {
  if (typeof content === "string") return [h("div", { class: "block text" }, content)];
  if (!Array.isArray(content)) return [h("div", { class: "block raw" }, json(content))];
  return content.map((b) => {
    if (b?.type === "text") return h("div", { class: "block text" }, b.text);
    if (b?.type === "thinking") return h("div", { class: "block thinking" }, h("span", { class: "tag" }, t("block.thinking")), b.thinking);
    if (b?.type === "toolCall")
      return h("div", { class: "block toolcall", "data-call-id": b.id }, h("span", { class: "call-name" }, `${b.name}(${b.id})`), " ", h("code", {}, json(b.arguments)));
    if (b?.type === "image") return h("div", { class: "block image" }, t("block.image", { mime: b.mimeType, size: String(b.data ?? "").length }));
    return h("div", { class: "block raw" }, json(b));
  });
}

/** One child per message, with data-role. */
export function renderTranscript(list, messages, keys, { highlight }) {
  const items = messages.map((m, i) => {
    const badges = [];
    if (m.role === "assistant") badges.push(h("span", { class: `badge stop-${m.stopReason}` }, `stopReason=${m.stopReason}`));
    if (m.role === "toolResult") {
      badges.push(h("span", { class: "badge" }, `${m.toolName}(${m.toolCallId})`));
      if (m.details?.skipped) badges.push(h("span", { class: "badge skipped" }, `skipped: ${m.details.reason}`));
      else if (m.isError) badges.push(h("span", { class: "badge error" }, "isError"));
    }
    return h(
      "li",
      { class: `message role-${m.role}${highlight.has(keys[i]) ? " highlight" : ""}`, "data-role": String(m.role), "data-key": keys[i], "data-index": i },
      h("div", { class: "message-head" }, h("span", { class: "index" }, `#${i}`), h("span", { class: "role" }, String(m.role)), ...badges),
      ...blockNodes(m.content),
      m.role === "assistant" && m.errorMessage ? h("div", { class: "block error-text" }, m.errorMessage) : null,
    );
  });
  list.dataset.empty = t("transcript.empty");
  list.replaceChildren(...items);
  list.querySelector(".highlight")?.scrollIntoView({ block: "nearest" });
}

// --- pairing ---------------------------------------------------------------------------------------

/** Link each tool call to the first later result with its id; results with no such call are orphans. */
export function pairCalls(messages) {
  const calls = [];
  const orphans = [];
  messages.forEach((m, index) => {
    if (m?.role === "assistant" && Array.isArray(m.content)) {
      const seen = new Set();
      for (const b of m.content) {
        if (b?.type !== "toolCall") continue;
        calls.push({ callId: b.id, name: b.name, index, resultIndex: null, result: null, duplicate: seen.has(b.id) });
        seen.add(b.id);
      }
    } else if (m?.role === "toolResult") {
      const open = calls.filter((c) => c.callId === m.toolCallId && c.resultIndex === null);
      if (open.length === 0) {
        orphans.push({ callId: m.toolCallId, name: m.toolName, index });
        return;
      }
      // Calls of one message that repeat an id share the one result written for that id.
      for (const c of open.filter((c) => c.index === open[0].index)) Object.assign(c, { resultIndex: index, result: m });
    }
  });
  for (const c of calls) c.duplicate ||= calls.some((d) => d !== c && d.callId === c.callId && d.index === c.index);
  return { calls, orphans };
}

/** One child per tool call (data-call-id, data-paired), then one per orphan result. */
export function renderPairing(list, messages, keys, { execs, active, problems, highlight }) {
  const { calls, orphans } = pairCalls(messages);
  const problemsFor = (id) => problems.filter((p) => p.toolCallId === id).map((p) => h("span", { class: "badge problem" }, p.kind));
  const items = calls.map((c) => {
    let state;
    let label;
    if (c.result) {
      const r = c.result;
      state = r.details?.skipped ? "skipped" : r.isError ? "error" : "paired";
      label = [t("pairing.paired", { index: c.resultIndex })];
      if (r.details?.skipped) label.push(t("pairing.skipped", { reason: r.details.reason }));
      else if (r.isError) label.push(`${t("pairing.error")}: ${short(contentText(r.content), 60)}`);
      else label.push(short(contentText(r.content), 60));
    } else {
      const exec = active ? [...execs].reverse().find((x) => x.callId === c.callId) : undefined;
      state = exec ? exec.state : active ? "pending" : "missing";
      label = [t(`pairing.${state}`)];
    }
    const keyOfCall = keys[c.index];
    const resultKey = c.resultIndex !== null ? keys[c.resultIndex] : null;
    return h(
      "li",
      {
        class: `pair state-${state}${highlight.has(keyOfCall) || (resultKey && highlight.has(resultKey)) ? " highlight" : ""}`,
        "data-call-id": c.callId,
        "data-paired": c.result ? "true" : "false",
        "data-state": state,
      },
      h("span", { class: "call" }, `#${c.index} ${c.name}(${c.callId})`),
      h("span", { class: "arrow", "aria-hidden": "true" }, c.result ? "→" : "⋯"),
      h("span", { class: "result" }, label.join(" · ")),
      c.duplicate ? h("span", { class: "badge problem" }, t("pairing.duplicate")) : null,
      ...problemsFor(c.callId),
    );
  });
  for (const o of orphans) {
    items.push(
      h(
        "li",
        { class: "pair state-orphan", "data-call-id": o.callId, "data-paired": "false", "data-state": "orphan", "data-orphan": "true" },
        h("span", { class: "call" }, "?"),
        h("span", { class: "arrow", "aria-hidden": "true" }, "→"),
        h("span", { class: "result" }, `#${o.index} ${o.name}(${o.callId}) · ${t("pairing.orphan")}`),
        ...problemsFor(o.callId),
      ),
    );
  }
  list.dataset.empty = t("pairing.empty");
  list.replaceChildren(...items);
}

export function renderFindings(box, validation, { live = false } = {}) {
  if (!validation) {
    box.replaceChildren();
    return;
  }
  if (validation.error) {
    box.replaceChildren(h("p", { class: "bad" }, `${t("findings")}: ${validation.error}`));
    return;
  }
  const head = h(
    "p",
    { class: validation.ok ? "good" : "bad" },
    `${t("findings")}: `,
    validation.ok ? t("findings.ok") : t("findings.problems", { n: validation.problems.length }),
  );
  const items = validation.problems.map((p) =>
    h("li", { "data-kind": p.kind, "data-call-id": p.toolCallId }, t("findings.item", { kind: p.kind, id: p.toolCallId, index: p.index })),
  );
  box.replaceChildren(head, items.length ? h("ul", {}, ...items) : "", live && !validation.ok ? h("p", { class: "note" }, t("findings.live")) : "");
}

// --- tools panel -----------------------------------------------------------------------------------

export function renderTools(list, execs, onRelease) {
  list.dataset.empty = t("tools.empty");
  list.replaceChildren(
    ...execs.map((x) =>
      h(
        "li",
        { class: `exec state-${x.state}`, "data-call-id": x.callId, "data-state": x.state },
        h("span", { class: "call-name" }, `${x.name}(${x.callId})`),
        h("span", { class: "state" }, t(`tools.state.${x.state}`)),
        x.state === "gated" ? h("button", { type: "button", "data-testid": `release-${x.callId}`, onclick: () => onRelease(x) }, t("tools.release", { name: x.name })) : null,
      ),
    ),
  );
}

// --- chapter-00 trace ------------------------------------------------------------------------------

export function renderTrace(box, trace) {
  if (!trace) {
    box.replaceChildren(h("p", { class: "empty" }, t("trace.empty")));
    return;
  }
  if (trace.error) {
    box.replaceChildren(h("p", { class: "bad" }, trace.error));
    return;
  }
  if (trace.records.length === 0) {
    box.replaceChildren(h("p", { class: "empty" }, t("trace.empty")));
    return;
  }
  const rows = trace.records.map((r) =>
    h(
      "tr",
      { "data-owner": r.owner, "data-kind": r.kind },
      h("td", {}, String(r.seq).padStart(2, "0")),
      h("td", {}, r.kind),
      h("td", {}, h("span", { class: `owner owner-${r.owner}` }, t(`owner.${r.owner}`) === r.owner ? r.owner : `${r.owner} · ${t(`owner.${r.owner}`)}`)),
      h("td", {}, r.detail),
      h("td", {}, r.toolCallId ?? ""),
    ),
  );
  const table = h(
    "table",
    { "data-testid": "trace-table" },
    h("thead", {}, h("tr", {}, ...["trace.seq", "trace.kind", "trace.owner", "trace.detail", "trace.call"].map((k) => h("th", { scope: "col" }, t(k))))),
    h("tbody", {}, ...rows),
  );
  const check = trace.validation.ok
    ? h("p", { class: "good" }, t("trace.valid"))
    : h("div", { class: "bad" }, t("trace.invalid", { n: trace.validation.problems.length }), h("ul", {}, ...trace.validation.problems.map((p) => h("li", {}, `${p.kind} ${p.toolCallId} (seq ${p.seq}): ${p.message}`))));
  box.replaceChildren(h("div", { class: "table-wrap" }, table), check, h("pre", { class: "trace-text", "data-testid": "trace-text" }, trace.formatted));
}
