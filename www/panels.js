// The request inspector (what request N sent, what is new since request N-1) and the decision table (SPEC §4,
// the rows that fired). Data from the model or tools is inserted as text.

import { t } from "./i18n.js";
import { DECISION_ROWS, PHASES } from "./explain.js";
import { h, blockNodes, ownerOfMessage } from "./views.js";
import { canonical } from "./runner.js";

/** How request n differs from request n-1: per message "same" | "changed" | "new", and whether the prompt or tools changed. */
export function requestDiff(current, previous) {
  if (!previous) return { messages: current.messages.map(() => "input"), system: "same", tools: "same" };
  const before = previous.messages.map(canonical);
  return {
    messages: current.messages.map((m, i) => (i >= before.length ? "new" : before[i] === canonical(m) ? "same" : "changed")),
    system: current.systemPrompt === previous.systemPrompt ? "same" : "changed",
    tools: canonical(current.tools) === canonical(previous.tools) ? "same" : "changed",
  };
}

const mark = (state) => (state === "new" ? t("inspector.new") : state === "changed" ? t("inspector.changed") : null);

/**
 * The picker (one button per request) and the open request: `[data-testid=request-inspector]` with one `[data-role]`
 * element per message it sent and `[data-testid=request-tools]` listing the tool names.
 */
export function renderInspector(box, sent, open, { onPick }) {
  if (!sent.length || !sent[open - 1]) {
    box.replaceChildren(h("p", { class: "empty" }, t("inspector.empty")));
    return;
  }
  const request = sent[open - 1];
  const diff = requestDiff(request, sent[open - 2]);
  const picks = h(
    "div",
    { class: "picks", role: "group", "aria-label": t("inspector.pick") },
    ...sent.map((_, i) =>
      h("button", { type: "button", "aria-pressed": String(i + 1 === open), "data-request": i + 1, "data-focus-key": `req:${i + 1}`, onclick: () => onPick(i + 1) }, t("inspector.request", { n: i + 1 })),
    ),
  );
  const fresh = diff.messages.filter((s) => s === "new").length;
  const messages = request.messages.map((m, i) =>
    h(
      "li",
      { class: `message role-${m?.role} owner-${ownerOfMessage(m)}`, "data-role": String(m?.role), "data-index": i, "data-diff": diff.messages[i] },
      h("div", { class: "message-head" }, h("span", { class: "index" }, `#${i}`), h("span", { class: "role" }, String(m?.role)), mark(diff.messages[i]) ? h("span", { class: "badge new" }, mark(diff.messages[i])) : null),
      ...blockNodes(m?.content),
    ),
  );
  const tools = (request.tools ?? []).map((tool) =>
    h(
      "li",
      { "data-name": tool.name },
      h("code", { class: "tool-name" }, tool.name),
      tool.description ? ` — ${tool.description}` : "",
      h("details", {}, h("summary", {}, t("inspector.params")), h("pre", { tabindex: "0" }, JSON.stringify(tool.parameters, null, 2))),
    ),
  );
  box.replaceChildren(
    picks,
    h(
      "div",
      { "data-testid": "request-inspector", "data-request": open, class: "request" },
      h("h3", {}, t("inspector.system"), mark(diff.system) ? h("span", { class: "badge new" }, mark(diff.system)) : null),
      h("pre", { class: "system", tabindex: "0" }, request.systemPrompt ?? t("inspector.noSystem")),
      h("h3", {}, open === 1 ? t("inspector.messagesFirst", { count: messages.length }) : t("inspector.messages", { count: messages.length, fresh, prev: open - 1 })),
      h("ol", { class: "request-messages" }, ...messages),
      h("h3", {}, t("inspector.tools", { count: tools.length }), mark(diff.tools) ? h("span", { class: "badge new" }, mark(diff.tools)) : null),
      tools.length ? h("ul", { "data-testid": "request-tools", class: "request-tools" }, ...tools) : h("p", { class: "empty", "data-testid": "request-tools" }, t("inspector.noTools")),
    ),
  );
}

/**
 * SPEC §4's table, one row per line (`data-row`); a row that fired for a response of this run has
 * `data-fired="true"` and a tag per request, the current response's row `data-current="true"`.
 * fired: Map rowId -> [request numbers].
 */
export function renderDecisionTable(box, fired, currentRow) {
  const cols = ["row", "stopReason", "calls", "runs", "appended", "ends"];
  const ends = (row) => (row.ends === "continue" ? t("dt.ends.continue") : row.ends);
  const rows = DECISION_ROWS.map((row) => {
    const requests = fired.get(row.id) ?? [];
    return h(
      "tr",
      { "data-row": row.id, "data-fired": String(requests.length > 0), "data-current": row.id === currentRow ? "true" : undefined },
      h("th", { scope: "row" }, h("code", {}, row.id), ...requests.map((n) => h("span", { class: "fired-tag" }, t("dt.fired", { n })))),
      h("td", {}, h("code", {}, row.stopReason)),
      h("td", {}, t(`dt.calls.${row.calls}`)),
      h("td", {}, t(`dt.runs.${row.runs}`)),
      h("td", {}, t(`dt.appended.${row.appended}`, { skip: row.skip })),
      h("td", {}, h("code", {}, ends(row))),
    );
  });
  // SPEC §7 splits the tooluse row into phases; each would be one more row under it (PHASES is empty in part one).
  const phases = PHASES.map((phase) => h("tr", { "data-phase": phase.id }, h("td", { colspan: cols.length }, t(`phase.${phase.id}`), " — ", t(`phase.${phase.id}.what`))));
  box.replaceChildren(
    h("p", { class: "help" }, t("dt.help")),
    h(
      "div",
      { class: "table-wrap", tabindex: "0", role: "region", "aria-label": t("dt") },
      h(
        "table",
        { class: "decision", "data-testid": "decision-table" },
        h("thead", {}, h("tr", {}, ...cols.map((c) => h("th", { scope: "col" }, t(`dt.col.${c}`))))),
        h("tbody", {}, ...rows, ...phases),
      ),
    ),
  );
}
