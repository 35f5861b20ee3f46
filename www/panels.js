// The request inspector (what request N sent, what is new since request N-1, what of the transcript it left out),
// the decision table (SPEC §4, the rows that fired, §7's phases of a batch) and the approvals of a paused run
// (SPEC §8). Data from the model or tools is inserted as text.

import { t } from "./i18n.js";
import { DECISION_ROWS, PHASES, AROUND, ROW_STEP, callLabel } from "./explain.js";
import { h, blockNodes, ownerOfMessage, json, lastCompaction } from "./views.js";
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

/** The text of the user message that stands for everything before a compaction entry's cut (SPEC §13). */
export const SUMMARY_PREFIX = "The conversation so far, summarised:\n\n";

/**
 * Whether a request's first message is the summary of the transcript's last compaction entry: a user message whose
 * one text block is the summary after SUMMARY_PREFIX. Returns the entry's index, or -1.
 */
export function summaryEntry(transcript, request) {
  const last = lastCompaction(transcript);
  const first = request?.messages?.[0];
  if (last < 0 || first?.role !== "user" || !Array.isArray(first.content)) return -1;
  const text = first.content.map((b) => (b?.type === "text" ? b.text : "")).join("");
  return text === SUMMARY_PREFIX + transcript[last].summary ? last : -1;
}

/**
 * The transcript's messages a request did not carry, by index, and why: a custom-role message (never sent, SPEC §7),
 * a compaction entry (never sent, §13), a message before the last entry's cut (`compacted`: the summary stands for
 * it), or one prepareRequest took out (`prepareRequest`). The request is matched against the transcript from the end,
 * message by message (a request keeps the transcript's order; what it changed counts as left out).
 */
export function leftOut(transcript, sent, customRoles = []) {
  const out = [];
  const last = lastCompaction(transcript);
  const cut = last >= 0 ? transcript[last].firstKeptIndex : -1;
  const why = (m, index) => (customRoles.includes(m?.role) ? "custom" : m?.role === "compaction" ? "compaction" : index < cut ? "compacted" : "prepareRequest");
  let j = sent.length - 1;
  for (let index = transcript.length - 1; index >= 0; index--) {
    const m = transcript[index];
    if (j >= 0 && canonical(m) === canonical(sent[j])) j -= 1;
    else out.unshift({ index, role: String(m?.role), reason: why(m, index), ...(index < cut ? { entry: last } : {}) });
  }
  return out;
}

const mark = (state) => (state === "new" ? t("inspector.new") : state === "changed" ? t("inspector.changed") : null);

/** The fields of a message every request shows, first in this order, then any other field in the message's own order. */
const FIELD_ORDER = ["toolCallId", "toolName", "isError", "stopReason", "errorMessage", "details", "usage", "timestamp"];

/** Every field of a message but its role and content (shown as its head and blocks), as `[name, text]`. */
export function messageFields(m) {
  if (!m || typeof m !== "object") return [];
  const keys = Object.keys(m).filter((k) => k !== "role" && k !== "content");
  const ordered = [...FIELD_ORDER.filter((k) => keys.includes(k)), ...keys.filter((k) => !FIELD_ORDER.includes(k))];
  return ordered.map((k) => [k, typeof m[k] === "string" ? m[k] : json(m[k])]);
}

/** A message's fields as a list: `[data-field=<name>]` holds the name (dt) and the value (dd). */
export function fieldList(m) {
  const fields = messageFields(m);
  if (!fields.length) return null;
  return h(
    "dl",
    { class: "fields" },
    ...fields.map(([name, value]) => h("div", { "data-field": name }, h("dt", {}, name), h("dd", {}, value))),
  );
}

/**
 * Tokens of a response, from pi-ai's `usage` when it has one: {input, output, cacheRead, cacheWrite, totalTokens, cost}
 * (a field that is not a finite number is left out); null when the message reports none.
 */
export function tokensOf(message) {
  const u = message?.usage;
  if (!u || typeof u !== "object") return null;
  const out = {};
  for (const k of ["input", "output", "cacheRead", "cacheWrite", "totalTokens"]) if (Number.isFinite(u[k])) out[k] = u[k];
  const cost = typeof u.cost === "object" ? u.cost?.total : u.cost;
  if (Number.isFinite(cost)) out.cost = cost;
  return Object.keys(out).length ? out : null;
}

/** `input 12 · output 30 · total 42` in the page's words. */
export function tokensText(tokens) {
  return Object.entries(tokens)
    .map(([k, v]) => t(`tokens.${k}`, { n: v }))
    .join(" · ");
}

/**
 * The picker (one button per request) and the open request: `[data-testid=request-inspector]` with one `[data-role]`
 * element per message it sent (each with every field it carried, `[data-field]`), `[data-testid=request-tools]`
 * listing the tool names, the response that answered it (its stopReason and usage) and, on the live page, the
 * provider's HTTP request body. `raw` shows the request as exact JSON (`request-raw-json`), toggled by `request-raw`.
 */
/** The requests (numbered from 1) whose messages carry `message`, field for field. */
export function requestsCarrying(sent, message) {
  const key = canonical(message);
  return sent.flatMap((request, i) => (Array.isArray(request?.messages) && request.messages.some((m) => canonical(m) === key) ? [i + 1] : []));
}

/**
 * The request the inspector shows when a tool result is picked: the one shown (`shown`) if it carries the result,
 * else the first that does; `carried` false (and the shown request kept) when no request carried it.
 */
export function requestForMessage(sent, message, shown) {
  const carriers = requestsCarrying(sent, message);
  if (!carriers.length) return { request: shown ?? null, carried: false };
  return { request: carriers.includes(shown) ? shown : carriers[0], carried: true };
}

/**
 * The request inspector. `uncarried` ({id, ended}): the tool result the learner picked that no request carried
 * (`ended`: the run is over, so none ever will), said above the request shown (`inspector-uncarried`). `open` and
 * `data-request` count this run's requests; their labels number them after the `requestsBefore` requests the run's
 * transcript already holds (a resumed run's startSteps).
 */
export function renderInspector(box, sent, open, { onPick, originals = false, context = null, customRoles = [], raw = false, onRaw = () => {}, response = null, payload = undefined, retries = [], running = null, budget = null, uncarried = null, requestsBefore = 0 }) {
  const label = (n) => requestsBefore + n;
  const note = uncarried ? h("p", { class: "note", role: "note", "data-testid": "inspector-uncarried", "data-call": uncarried.id }, t(uncarried.ended ? "inspector.uncarriedEnded" : "inspector.uncarriedYet", { id: uncarried.id })) : null;
  if (!sent.length || !sent[open - 1]) {
    box.replaceChildren(...(note ? [note] : []), h("p", { class: "empty" }, t("inspector.empty")));
    return;
  }
  const request = sent[open - 1];
  const diff = requestDiff(request, sent[open - 2]);
  const picks = h(
    "div",
    { class: "picks", role: "group", "aria-label": t("inspector.pick") },
    ...sent.map((_, i) =>
      h("button", { type: "button", "aria-pressed": String(i + 1 === open), "data-request": i + 1, "data-focus-key": `req:${i + 1}`, onclick: () => onPick(i + 1) }, t("inspector.request", { n: label(i + 1) })),
    ),
    h("button", { type: "button", class: "raw-toggle", "data-testid": "request-raw", "aria-pressed": String(raw), "data-focus-key": "req:raw", onclick: () => onRaw(!raw) }, t("inspector.raw")),
  );
  const fresh = diff.messages.filter((s) => s === "new").length;
  // After a compaction the request opens with the entry's summary, as a user message (SPEC §13).
  const entry = context ? summaryEntry(context.transcript, request) : -1;
  const cut = entry >= 0 ? context.transcript[entry].firstKeptIndex : null;
  const messages = request.messages.map((m, i) =>
    h(
      "li",
      { class: `message role-${m?.role} owner-${ownerOfMessage(m)}`, "data-role": String(m?.role), "data-index": i, "data-diff": diff.messages[i], "data-source": entry >= 0 && i === 0 ? "summary" : undefined },
      h(
        "div",
        { class: "message-head" },
        h("span", { class: "index" }, `#${i}`),
        h("span", { class: "role" }, String(m?.role)),
        mark(diff.messages[i]) ? h("span", { class: "badge new" }, mark(diff.messages[i])) : null,
        entry >= 0 && i === 0 ? h("span", { class: "badge compacted", "data-testid": "request-summary" }, t("inspector.summary", { entry, k: cut, before: Math.max(0, cut - 1) })) : null,
      ),
      ...blockNodes(m?.content),
      fieldList(m),
    ),
  );
  // Against the transcript the loop built this request from: what the model did not receive, and why.
  const omitted = context ? leftOut(context.transcript, request.messages, customRoles) : [];
  // Nothing left out is one sentence: no "0 of N" heading before it.
  const against = !context
    ? []
    : omitted.length
      ? [
          h("h3", {}, t("inspector.leftOut", { count: omitted.length, total: context.transcript.length })),
          h(
            "ol",
            { class: "left-out", "data-testid": "request-left-out" },
            ...omitted.map((o) => h("li", { "data-index": o.index, "data-role": o.role, "data-reason": o.reason }, h("span", { class: "index" }, `#${o.index}`), " ", h("span", { class: "role" }, o.role), " — ", t(`inspector.leftOut.${o.reason}`, { entry: o.entry }))),
          ),
        ]
      : [h("p", { class: "empty", "data-testid": "request-left-out" }, t("inspector.leftOutNone"))];
  const tools = (request.tools ?? []).map((tool) =>
    h(
      "li",
      { "data-name": tool.name },
      h("code", { class: "tool-name" }, tool.name),
      tool.description ? ` — ${tool.description}` : "",
      h("details", {}, h("summary", {}, t("inspector.params")), h("pre", { tabindex: "0" }, JSON.stringify(tool.parameters, null, 2))),
    ),
  );
  // The response that answered this request, once it is in: its stop reason and what it used, the run's tokens so far
  // (against the budget); before it, each attempt that failed and was retried (SPEC §12).
  const tokens = tokensOf(response);
  const attempts = retries.length
    ? [
        h("h3", {}, t("inspector.attempts", { n: label(open), count: retries.length + 1 })),
        h(
          "ol",
          { "data-testid": "request-attempts", class: "attempts" },
          ...retries.map((r) =>
            h(
              "li",
              { "data-attempt": r.attempt, "data-delay": r.delayMs, "data-same": r.same === undefined ? undefined : String(r.same) },
              t("inspector.attemptFailed", { attempt: r.attempt, error: r.error, ms: r.delayMs }),
              r.same === undefined ? "" : ` ${t(r.same ? "inspector.attemptSame" : "inspector.attemptChanged", { next: r.attempt + 1 })}`,
            ),
          ),
        ),
      ]
    : [];
  const answer = response
    ? [
        h("h3", {}, t("inspector.response", { n: label(open) })),
        h(
          "div",
          { "data-testid": "request-response", class: "response" },
          h("p", {}, h("code", {}, `stopReason=${response.stopReason}`), " ", tokens ? h("span", { "data-testid": "request-tokens", "data-total": tokens.totalTokens ?? "" }, tokensText(tokens)) : h("span", { class: "help" }, t("inspector.noUsage"))),
          running && (tokens || budget)
            ? h("p", { "data-testid": "request-running", "data-total": running.totalTokens }, budget?.maxTokens ? t("inspector.runningBudget", { n: running.totalTokens, max: budget.maxTokens }) : t("inspector.running", { n: running.totalTokens }))
            : null,
        ),
      ]
    : [];
  const provider =
    payload === undefined
      ? []
      : [
          h("h3", {}, t("inspector.payload")),
          h("p", { class: "help" }, t("inspector.payloadHelp")),
          h("pre", { "data-testid": "request-payload", tabindex: "0", "aria-label": t("inspector.payload") }, JSON.stringify(payload, null, 2)),
        ];
  box.replaceChildren(
    picks,
    ...(note ? [note] : []),
    ...(originals ? [h("p", { class: "note", role: "note", "data-testid": "inspector-originals" }, t("inspector.originals"))] : []),
    h(
      "div",
      { "data-testid": "request-inspector", "data-request": open, class: "request" },
      raw
        ? h("div", { class: "raw" }, h("p", { class: "help" }, t("inspector.rawHelp", { n: label(open) })), h("pre", { "data-testid": "request-raw-json", tabindex: "0", "aria-label": t("inspector.raw") }, JSON.stringify(request, null, 2)))
        : null,
      h("h3", {}, t("inspector.system"), mark(diff.system) ? h("span", { class: "badge new" }, mark(diff.system)) : null),
      h("pre", { class: "system", tabindex: "0" }, request.systemPrompt ?? t("inspector.noSystem")),
      h("h3", {}, open === 1 ? t("inspector.messagesFirst", { count: messages.length }) : t("inspector.messages", { count: messages.length, fresh, prev: label(open - 1) })),
      h("ol", { class: "request-messages" }, ...messages),
      ...against,
      h("h3", {}, t("inspector.tools", { count: tools.length }), mark(diff.tools) ? h("span", { class: "badge new" }, mark(diff.tools)) : null),
      tools.length ? h("ul", { "data-testid": "request-tools", class: "request-tools" }, ...tools) : h("p", { class: "empty", "data-testid": "request-tools" }, t("inspector.noTools")),
      ...attempts,
      ...answer,
      ...provider,
    ),
  );
}

/**
 * The chapter's decision table, one row per line (`data-row`), each with the chapter step that teaches it; a row
 * that fired for a response of this run has `data-fired="true"` and a tag per request, the current response's row
 * `data-current="true"`. fired: Map rowId -> [request numbers]. The phases of a batch (tiny-pi's additions) only
 * with `partTwo`.
 */
export function renderDecisionTable(box, fired, currentRow, currentPhase = null, { partTwo = false, partThree = false, currentAround = null } = {}) {
  const cols = ["row", "stopReason", "calls", "runs", "appended", "ends", "step"];
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
      h("td", { "data-step": ROW_STEP[row.id] }, t(`step.${ROW_STEP[row.id]}`)),
    );
  });
  // SPEC §7 splits what the tooluse row does into phases (§8's approval first): a table of its own under this one.
  const phases = PHASES.map((phase) =>
    h(
      "tr",
      { "data-phase": phase.id, "data-current": phase.id === currentPhase ? "true" : undefined },
      h("th", { scope: "row" }, t(`phase.${phase.id}`)),
      h("td", {}, t(`phase.${phase.id}.what`)),
    ),
  );
  // Part three: what the loop does around the table (before a request, on a failed response, after a batch).
  const around = AROUND.map((step) =>
    h(
      "tr",
      { "data-around": step.id, "data-current": step.id === currentAround ? "true" : undefined },
      h("th", { scope: "row" }, t(`around.${step.id}`)),
      h("td", {}, t(`around.${step.id}.what`)),
    ),
  );
  box.replaceChildren(
    h("p", { class: "help" }, t("dt.help")),
    h("p", { class: "scroll-hint", "data-testid": "decision-scroll-hint" }, t("table.scroll", { n: cols.length })),
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
    ...(partTwo
      ? [
          h("h3", {}, t("phase.title")),
          h(
            "div",
            { class: "table-wrap", tabindex: "0", role: "region", "aria-label": t("phase.title") },
            h("table", { class: "decision phases", "data-testid": "phase-table" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("phase.col.phase")), h("th", { scope: "col" }, t("phase.col.what")))), h("tbody", {}, ...phases)),
          ),
        ]
      : []),
    ...(partThree
      ? [
          h("h3", {}, t("around.title")),
          h(
            "div",
            { class: "table-wrap", tabindex: "0", role: "region", "aria-label": t("around.title") },
            h("table", { class: "decision phases", "data-testid": "around-table" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("around.col.step")), h("th", { scope: "col" }, t("phase.col.what")))), h("tbody", {}, ...around)),
          ),
        ]
      : []),
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

// --- what if: fork a response, compare the runs ----------------------------------------------------------

const STOP_REASONS = ["stop", "length", "toolUse", "error", "aborted"];

/**
 * The fork editor for response `request` of the run: its stop reason (`fork-stop-reason`), its text (`fork-text`) and
 * its calls (`fork-call` rows: id, name, arguments as JSON), then `fork-run`. `draft` is edited in place as the
 * learner types; `onChange()` asks for a render (a call added or removed). The request is numbered after the
 * `requestsBefore` requests the run's transcript already holds.
 */
export function renderFork(box, fork, { tools = [], onChange, onRun, onCancel, requestsBefore = 0 }) {
  if (!fork) {
    box.replaceChildren(h("p", { class: "help" }, t("fork.help")));
    return;
  }
  const { draft } = fork;
  const select = h("select", { "data-testid": "fork-stop-reason", id: "fork-stop-reason" }, ...STOP_REASONS.map((r) => h("option", { value: r }, r)));
  select.value = draft.stopReason;
  select.addEventListener("change", () => {
    draft.stopReason = select.value;
  });
  const text = h("textarea", { "data-testid": "fork-text", id: "fork-text", rows: "2", spellcheck: "false" });
  text.value = draft.text;
  text.addEventListener("input", () => {
    draft.text = text.value;
  });
  const names = h("datalist", { id: "fork-tool-names" }, ...tools.map((n) => h("option", { value: n })));
  const calls = draft.calls.map((c, i) => {
    const field = (key, label, props = {}) => {
      const input = h(key === "args" ? "textarea" : "input", { "data-testid": `fork-call-${key}`, "aria-label": t(label, { n: i + 1 }), spellcheck: "false", ...props });
      input.value = c[key];
      input.addEventListener("input", () => {
        c[key] = input.value;
      });
      return input;
    };
    return h(
      "li",
      { "data-testid": "fork-call", "data-index": i },
      field("id", "fork.callId", { type: "text", size: "10" }),
      field("name", "fork.callName", { type: "text", size: "10", list: "fork-tool-names" }),
      field("args", "fork.callArgs", { rows: "1" }),
      h("button", { type: "button", "data-testid": "fork-call-remove", onclick: () => (draft.calls.splice(i, 1), onChange()) }, t("fork.remove")),
    );
  });
  box.replaceChildren(
    h("p", { class: "help" }, t("fork.editing", { n: requestsBefore + fork.request })),
    h("div", { class: "row" }, h("label", { for: "fork-stop-reason" }, "stopReason"), select),
    h("label", { for: "fork-text", class: "block-label" }, t("fork.text")),
    text,
    h("p", { class: "block-label" }, t("fork.calls", { n: draft.calls.length })),
    names,
    h("ol", { class: "fork-calls", "data-testid": "fork-calls" }, ...calls),
    h("div", { class: "row" }, h("button", { type: "button", "data-testid": "fork-call-add", onclick: () => (draft.calls.push({ id: `call-${draft.calls.length + 1}-fork`, name: tools[0] ?? "", args: "{}" }), onChange()) }, t("fork.add"))),
    ...(fork.error ? [h("p", { class: "bad", "data-testid": "fork-error", tabindex: "-1" }, fork.error)] : []),
    h(
      "div",
      { class: "row" },
      h("button", { type: "button", class: "primary", "data-testid": "fork-run", onclick: onRun }, t("fork.run", { n: requestsBefore + fork.request })),
      h("button", { type: "button", "data-testid": "fork-cancel", onclick: onCancel }, t("fork.cancel")),
    ),
  );
}

/**
 * The original run and the fork side by side (`compare`): reason, steps, tools executed and rows fired, one row each
 * (`[data-field]`, a cell per side `[data-side=original|fork]`), then the transcript difference (`compare-diff`, one
 * line per message: `data-op` same | removed | added). The fork's request is numbered after the `requestsBefore` its
 * transcript already holds (a resumed run's), as the rest of the page numbers it.
 */
export function renderCompare(box, compare, { diff, requestsBefore = 0 }) {
  if (!compare) {
    box.replaceChildren();
    return;
  }
  const { original, fork } = compare;
  const cell = (side, value) => h("td", { "data-side": side }, value);
  const list = (items) => (items.length ? items.join(", ") : "–");
  const fields = [
    ["reason", (s) => s.reason ?? "–"],
    ["steps", (s) => String(s.steps ?? "–")],
    ["requests", (s) => String(s.requests)],
    ["tools", (s) => list(s.tools)],
    ["rows", (s) => list(s.rows)],
  ];
  const rows = fields.map(([name, of]) => {
    const a = of(original);
    const b = fork ? of(fork) : t("fork.running");
    return h("tr", { "data-field": name, "data-same": String(fork !== null && a === b) }, h("th", { scope: "row" }, t(`compare.${name}`)), cell("original", a), cell("fork", b));
  });
  const lines = fork ? diff(original.transcript, fork.transcript) : [];
  const op = (line) => (line.startsWith("- ") ? "removed" : line.startsWith("+ ") ? "added" : "same");
  const n = requestsBefore + compare.request;
  box.replaceChildren(
    h(
      "div",
      { "data-testid": "compare", "data-state": fork ? "done" : "running", class: "compare" },
      h("h3", {}, t("compare.title", { n })),
      h(
        "div",
        { class: "table-wrap", tabindex: "0", role: "region", "aria-label": t("compare.title", { n }) },
        h("table", { class: "decision compare-table" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, ""), h("th", { scope: "col" }, t("compare.original")), h("th", { scope: "col" }, t("compare.fork", { n })))), h("tbody", {}, ...rows)),
      ),
      fork ? h("h3", {}, t("compare.diff")) : null,
      fork ? h("p", { class: "help" }, t("compare.diffHelp")) : null,
      fork ? h("ol", { class: "compare-diff", "data-testid": "compare-diff", tabindex: "0", "aria-label": t("compare.diff") }, ...lines.map((line) => h("li", { "data-op": op(line) }, line))) : null,
    ),
  );
}
