// The request inspector (what request N sent, what is new since request N-1, what of the transcript it left out),
// the decision table (SPEC §4, the rows that fired, §7's phases of a batch) and the approvals of a paused run
// (SPEC §8). Data from the model or tools is inserted as text.

import { t } from "./i18n.js";
import { DECISION_ROWS, PHASES, callLabel } from "./explain.js";
import { h, blockNodes, ownerOfMessage, json } from "./views.js";
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

/**
 * The transcript's messages a request did not carry, by index: a custom-role message (never sent, SPEC §7) or one
 * prepareRequest took out (`prepareRequest`). The request is matched against the transcript from the end, message
 * by message (a request keeps the transcript's order; what it changed counts as left out).
 */
export function leftOut(transcript, sent, customRoles = []) {
  const out = [];
  let j = sent.length - 1;
  for (let index = transcript.length - 1; index >= 0; index--) {
    const m = transcript[index];
    if (j >= 0 && canonical(m) === canonical(sent[j])) j -= 1;
    else out.unshift({ index, role: String(m?.role), reason: customRoles.includes(m?.role) ? "custom" : "prepareRequest" });
  }
  return out;
}

const mark = (state) => (state === "new" ? t("inspector.new") : state === "changed" ? t("inspector.changed") : null);

/**
 * The picker (one button per request) and the open request: `[data-testid=request-inspector]` with one `[data-role]`
 * element per message it sent and `[data-testid=request-tools]` listing the tool names.
 */
export function renderInspector(box, sent, open, { onPick, context = null, customRoles = [] }) {
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
  // Against the transcript the loop built this request from: what the model did not receive, and why.
  const omitted = context ? leftOut(context.transcript, request.messages, customRoles) : [];
  const against = context
    ? [
        h("h3", {}, t("inspector.leftOut", { count: omitted.length, total: context.transcript.length })),
        omitted.length
          ? h(
              "ol",
              { class: "left-out", "data-testid": "request-left-out" },
              ...omitted.map((o) => h("li", { "data-index": o.index, "data-role": o.role, "data-reason": o.reason }, h("span", { class: "index" }, `#${o.index}`), " ", h("span", { class: "role" }, o.role), " — ", t(`inspector.leftOut.${o.reason}`))),
            )
          : h("p", { class: "empty", "data-testid": "request-left-out" }, t("inspector.leftOutNone")),
      ]
    : [];
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
      ...against,
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
export function renderDecisionTable(box, fired, currentRow, currentPhase = null) {
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
  // SPEC §7 splits what the tooluse row does into phases (§8's approval first): a table of its own under this one.
  const phases = PHASES.map((phase) =>
    h(
      "tr",
      { "data-phase": phase.id, "data-current": phase.id === currentPhase ? "true" : undefined },
      h("th", { scope: "row" }, t(`phase.${phase.id}`), " ", h("span", { class: "phase-spec" }, phase.spec)),
      h("td", {}, t(`phase.${phase.id}.what`)),
    ),
  );
  box.replaceChildren(
    h("p", { class: "help" }, t("dt.help")),
    h(
      "div",
      { class: "table-wrap", tabindex: "0", role: "region", "aria-label": t("dt") },
      h(
        "table",
        { class: "decision", "data-testid": "decision-table" },
        h("thead", {}, h("tr", {}, ...cols.map((c) => h("th", { scope: "col" }, t(`dt.col.${c}`))))),
        h("tbody", {}, ...rows),
      ),
    ),
    h("h3", {}, t("phase.title")),
    h(
      "div",
      { class: "table-wrap", tabindex: "0", role: "region", "aria-label": t("phase.title") },
      h("table", { class: "decision phases", "data-testid": "phase-table" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("phase.col.phase")), h("th", { scope: "col" }, t("phase.col.what")))), h("tbody", {}, ...phases)),
    ),
  );
}

/**
 * The calls of a paused run (or of a transcript a run starts from) with their decisions (SPEC §8): Approve / Deny
 * (with an optional reason) on each call that needs one, Resume once each has one; for a paused run, its JSON Lines
 * to download or copy. `[data-testid=approvals-list] > li[data-call-id]`, `data-decision` approve | deny | none.
 */
export function renderApprovals(box, pending, decisions, { paused, jsonl, onDecide, onReason, onResume, onDownload }) {
  const decided = (p) => typeof decisions[p.toolCallId]?.approve === "boolean";
  const items = pending.map((p) => {
    const id = p.toolCallId;
    const d = decisions[id];
    const call = callLabel(p.toolName, id);
    const decision = !p.needsApproval ? "none" : !decided(p) ? "undecided" : d.approve ? "approve" : "deny";
    const controls = p.needsApproval
      ? h(
          "div",
          { class: "decide", role: "group", "aria-label": t("approvals.decide", { call }) },
          h("button", { type: "button", class: "approve", "data-testid": `approve-${id}`, "data-focus-key": `approve:${id}`, "aria-pressed": String(decision === "approve"), onclick: () => onDecide(id, true) }, t("approvals.approve")),
          h("button", { type: "button", class: "deny", "data-testid": `deny-${id}`, "data-focus-key": `deny:${id}`, "aria-pressed": String(decision === "deny"), onclick: () => onDecide(id, false) }, t("approvals.deny")),
          decision === "deny" ? denyReason(id, d.reason, onReason, call) : null,
        )
      : h("span", { class: "help" }, t("approvals.noDecision"));
    return h(
      "li",
      { "data-call-id": id, "data-needs-approval": String(p.needsApproval), "data-decision": decision },
      h("div", {}, h("code", { class: "call-name" }, call), " ", h("code", {}, json(p.arguments))),
      controls,
    );
  });
  const ready = pending.every((p) => !p.needsApproval || decided(p));
  const exportPart = paused && jsonl && !jsonl.error
    ? [
        h("h3", {}, t("approvals.export")),
        h("p", { class: "help" }, t("approvals.exportHelp")),
        h("div", { class: "row" }, h("button", { type: "button", "data-testid": "export-jsonl", onclick: () => onDownload(jsonl) }, t("approvals.download"))),
        h("textarea", { "data-testid": "jsonl-text", readonly: true, rows: "4", spellcheck: "false", "aria-label": t("approvals.jsonl") }, jsonl),
      ]
    : [];
  box.replaceChildren(
    h("p", { class: "help" }, t(paused ? "approvals.pausedHelp" : "approvals.readyHelp", { n: pending.filter((p) => p.needsApproval).length })),
    h("ul", { class: "approvals-list", "data-testid": "approvals-list" }, ...items),
    h(
      "div",
      { class: "row" },
      h("button", { type: "button", "data-testid": "resume", class: "primary", disabled: !ready, onclick: onResume }, t("approvals.resume")),
      ready ? null : h("span", { class: "help" }, t("approvals.undecided")),
    ),
    ...exportPart,
  );
}

function denyReason(id, value, onReason, call) {
  const input = h("input", { type: "text", "data-testid": `deny-reason-${id}`, "data-focus-key": `reason:${id}`, "aria-label": t("approvals.reasonFor", { call }), placeholder: t("approvals.reasonPlaceholder") });
  input.value = value ?? "";
  input.addEventListener("input", () => onReason(id, input.value));
  return h("label", { class: "reason" }, h("span", {}, t("approvals.reason")), " ", input);
}
