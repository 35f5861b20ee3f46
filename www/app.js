// The playground page: loads the tiny-pi wasm package, runs a scenario with the real runAgentLoop (runner.js)
// and keeps every view in step with it: timeline, transcript, pairing, request inspector, decision table and
// trace, each step explained (explain.js), and a selection in one view highlighted in the others (links.js).
// The URL follows the state (shareable.js): ?scenario=<id>&lang=zh|en&step=<n>|end&wait=tools&release=…&abort=…&speed=…, a
// custom script in the hash; ?embed=1&panels=…&autoplay=1 shows one scenario sized for a lesson's iframe (embed.js).

import { t, tFirst, setLang, getLang, applyI18n, detectLang } from "./i18n.js";
import { SCENARIOS, CASES, scenarioById, cloneDef, localizeDef, validateDefinition, parseTranscript, jsonErrorIndex, lineOfPath, responsesIn, loneSurrogate, loneSurrogates } from "./scenarios.js";
import { Run, unansweredCalls } from "./runner.js";
import { whyOf, waitOf, decisionRow, phaseOf, aroundOf, isSequential, awaitsApproval, isPartTwo, isPartThree, toolCalls, callLabel } from "./explain.js";
import { replayDifference } from "./replay-difference.js";
import { orderTrace, buildLinks } from "./links.js";
import * as views from "./views.js";
import { renderInspector, requestForMessage, requestsCarrying, renderDecisionTable, renderApprovals, renderFork, renderCompare, tokensOf, tokensText } from "./panels.js";
import { canonical, transcriptDiff } from "./conformance/check.js";
import { readEmbed, applyEmbed, reportHeight } from "./embed.js";
import { encodeHash, decodeHash, stateUrl, readRelease, readAbort } from "./shareable.js";
import { wireLoopCheck } from "./loopcheck.js";
import { wireLive, liveModel, liveReady, diagnoseConnection, LIVE } from "./live.js";

// Relative to this file: the site (dist/) holds the package's lesson entry in pkg/lesson/ (the whole package with
// ScriptedModel and the trace checks, in one .wasm), at any path.
const PKG_URL = new URL("./pkg/lesson/tiny_pi_lesson.js", import.meta.url).href;
const SPEEDS = { instant: 0, normal: 350, slow: 1000 };
const CUSTOM_KEY = "tiny-pi-custom"; // localStorage: {def, base, origin?} of the last edited or imported script
const params = new URLSearchParams(location.search);
const embed = readEmbed(params);

const $ = (id) => document.querySelector(`[data-testid="${id}"]`);
let loopCheck = null; // the "Check your own loop" panel (loopcheck.js)

const state = {
  api: null,
  scenarioId: "readme", // a scenario id, or "custom" for an edited/imported script
  baseId: "readme", // the scenario an edited script started from (what Revert goes back to)
  def: null, // the definition the next run uses
  custom: null, // the edited/imported definition, kept while other scenarios are tried
  origin: null, // how the page made `custom` from the base scenario's run (readOrigin): a resume, a fork, or null
  run: null,
  selection: null, // a link token (links.js) the learner clicked, or null: then the held event is the selection
  inspect: null, // the request the inspector shows when the learner picked one
  shown: null, // the request the inspector showed at the last render
  uncarried: null, // a tool result picked that no request carried: {token, message}
  checked: null, // a pasted transcript being shown instead of the run: {messages}
  focusNext: null, // the focus key to move keyboard focus to after the next render (arrow keys on the timeline)
  speed: Object.hasOwn(SPEEDS, params.get("speed") ?? "") ? params.get("speed") : "normal",
  customHash: null, // the hash that carries the custom script (#script=…), once encoded
  raw: false, // the inspector shows the request as raw JSON
  fork: null, // a response being edited: {request, draft: {stopReason, text, calls: [{id, name, args}]}, error}
  compare: null, // the original run and its fork: {request, def, original, fork, run, shared} (summaries; fork null while
  // it runs; `shared` what a link needs to make the original again: {request, original: its script, order})
  replay: null, // a learner's loop being stepped through: {name, id, run, difference, hash} (what it did on kit case id)
  decisions: {}, // the learner's decisions on the calls that wait for one (SPEC §8): callId -> {approve, reason}
  continued: null, // the last import: {def (the script it made), base (the script it went on with), scenario (or null)}
};

// --- storage (blocked in some embedded frames: then nothing is kept, and the page works the same) ---------

function load(key) {
  try {
    return JSON.parse(localStorage.getItem(key) ?? "null");
  } catch {
    return null;
  }
}

function save(key, value) {
  try {
    localStorage.setItem(key, typeof value === "string" ? value : JSON.stringify(value));
  } catch {
    // not persisted; the page goes on
  }
}

function forget(key) {
  try {
    localStorage.removeItem(key);
  } catch {
    // storage blocked: nothing was saved either
  }
}

// --- language --------------------------------------------------------------------------------------

function initialLang() {
  const fromUrl = params.get("lang");
  if (fromUrl === "zh" || fromUrl === "en") return fromUrl;
  let saved = null;
  try {
    saved = localStorage.getItem("tiny-pi-lang");
  } catch {
    // storage blocked: the browser's language decides
  }
  if (saved === "zh" || saved === "en") return saved;
  return detectLang(navigator.languages?.length ? navigator.languages : [navigator.language]);
}

function applyLang() {
  applyI18n();
  // The button names the other language in that language.
  $("lang-toggle").lang = t("lang.switchCode");
}

function switchLang() {
  setLang(getLang() === "zh" ? "en" : "zh");
  save("tiny-pi-lang", getLang());
  applyLang();
  fillScenarioSelect();
  loopCheck?.relabel();
  if (state.scenarioId !== "custom" && state.run && !state.replay) relocalize();
  render();
  syncUrl();
}

/**
 * A course scenario in the other language: its words change (localizeDef), and the run is made again to the point it
 * had reached, as its address says it (runPoint): held at the same event, waiting there for the same gates, or run
 * out, gated tools opening in the order the learner opened them.
 */
function relocalize() {
  const run = state.run;
  const scenario = scenarioById(state.scenarioId);
  if (!scenario) return;
  // What the learner typed stays: the editor takes the other language's words only when it holds the script as shown.
  const edited = $("editor").value !== editorText(state.def);
  state.def = localizeDef(scenario.def, getLang());
  if (edited) readEditor();
  else setEditorText(state.def);
  const point = runPoint(run);
  const order = run.released.length ? [...run.released] : null;
  // An abort by hand is part of where the run is: it happens again at the same place.
  const abort = abortOf(run);
  // The run is made again to the same point: the decisions taken on its calls (and reasons typed) stay too.
  const decisions = state.decisions;
  if (run.status === "ready") newRun();
  else if (point.step !== null) restoreRun({ ...point, order, abort });
  else {
    newRun({ autoRelease: order ?? state.def.release ?? null, abortAt: abort });
    state.run.run();
  }
  state.decisions = decisions;
}

function scenarioTitle(s) {
  return s.title[getLang()] ?? s.title.en;
}

/**
 * How the page made a custom script, as the address and storage keep it: `{kind: "resume"}` (a paused run resumed
 * with the learner's decisions) or `{kind: "fork", request}` (response `request` of the run edited); null for any
 * other value (a script edited or imported).
 */
function readOrigin(value) {
  if (value?.kind === "resume") return { kind: "resume" };
  if (value?.kind === "fork" && Number.isInteger(value.request) && value.request > 0) return { kind: "fork", request: value.request };
  return null;
}

/** The custom script's name (`scenario.*`) or its about line (`about.*`): a resume or a fork of a course scenario
 * keeps that scenario's name and says how the page made it; any other is the edited script. */
function customText(family, def) {
  const base = scenarioById(state.baseId);
  if (!state.origin || !base || !def) return t("scenario.custom");
  const steps = def.startSteps ?? 0;
  // A fork's request is numbered as the page numbers it: after the requests its transcript already holds.
  return t(`${family}.${state.origin.kind}`, { title: scenarioTitle(base), n: (state.origin.request ?? 0) + steps, steps });
}

function fillScenarioSelect() {
  const select = $("scenario-select");
  const options = SCENARIOS.map((s) => views.h("option", { value: s.id }, scenarioTitle(s)));
  if (state.custom) options.push(views.h("option", { value: "custom" }, customText("scenario", state.custom)));
  select.replaceChildren(...options);
  select.value = state.scenarioId;
}

// --- runs ------------------------------------------------------------------------------------------

/** A fresh run of the current script; `autoRelease` opens its gates by themselves (autoplay, a shared step). */
function newRun({ autoRelease = null, releaseRest = false, followOrder = false, releaseToTarget = false, abortAt = null } = {}) {
  state.run?.dispose();
  state.fork = null;
  // A comparison stays while the fork's script is the one that runs (a Reset runs the fork again).
  if (state.compare && state.compare.def !== state.def) state.compare = null;
  state.selection = null;
  state.inspect = null;
  state.checked = null;
  state.decisions = structuredClone(state.def.approvals ?? {});
  const def = cloneDef(state.def);
  const replay = state.replay?.run ?? null;
  const model = LIVE && !replay
    ? liveModel({
        onPayload: (payload) => {
          // Requests are made one at a time: this body is the last request's.
          const run = state.run;
          if (run?.sent.length) run.payloads[run.sent.length - 1] = payload;
          render();
        },
      })
    : null;
  state.run = new Run(state.api, def, { onUpdate: render, pace: SPEEDS[state.speed], model, autoRelease, releaseRest, followOrder, releaseToTarget, replay, abortAt: replay ? null : abortAt });
  if (state.compare) Object.assign(state.compare, { run: state.run, fork: null });
  render();
}

/**
 * Step through what a learner's loop did on a kit case (the events it emitted, the requests its model received,
 * its result, recorded in the sandbox): the case's scenario, replayed in the page's views one event at a time.
 */
function stepThroughLoop(report, name) {
  if (!showReplay({ name, id: report.id, run: report.run, failed: report.pass === false })) return;
  $("step").focus();
  $("timeline").scrollIntoView({ block: "nearest" });
}

/** A recording as the kit makes one (checkCase's `run`): what a replay needs, whatever else it holds. */
const isRecording = (run) => Boolean(run) && typeof run === "object" && Array.isArray(run.events) && Array.isArray(run.requests);

/**
 * Show a recorded run of a learner's loop on kit case `id` (from the kit's report, or a shared link's hash), with
 * where it first went another way than the course's (`difference`, said by the why-line there; `failed`, whether
 * the kit failed the case, lets it say so when the events and the transcript agree). The address names the replay,
 * not the plain scenario: `replay=<id>` and the recording packed in the hash with the name and `failed` (`hash`, the
 * link's own when it came from one). False when there is no such case or recording.
 */
function showReplay({ name, id, run, failed = false }, { hash = null } = {}) {
  const kase = CASES.find((c) => c.id === id);
  if (!kase || !isRecording(run)) return false;
  chooseScenario(id);
  // The case as the kit gave it to the loop (its words untranslated: what the loop received, and so what it sent), in
  // the script, the transcript before the first request and every view.
  state.def = cloneDef(kase.def);
  setEditorText(state.def);
  state.replay = { name: String(name ?? ""), id, run, failed: failed === true, difference: replayDifference(kase, run, { failed: failed === true }), hash };
  newRun();
  if (!hash)
    encodeHash({ name: state.replay.name, run, failed: failed === true }).then((encoded) => {
      if (state.replay?.run !== run) return; // another run took its place meanwhile
      state.replay.hash = `#replay=${encoded}`;
      syncUrl();
    });
  return true;
}

function chooseScenario(id) {
  state.replay = null;
  const scenario = scenarioById(id) ?? SCENARIOS[0];
  state.scenarioId = scenario.id;
  state.baseId = scenario.id;
  state.def = localizeDef(scenario.def, getLang());
  fillScenarioSelect();
  setEditorText(state.def);
  newRun();
}

const actions = {
  run: () => leaveChecked() && state.run?.run(),
  step: () => leaveChecked() && state.run?.step(),
  pause: () => state.run?.pause(),
  reset: () => newRun(),
  abort: () => state.run?.abort(),
};

/** Run/Step act on the run: if a pasted transcript is on screen, go back to the run's views first. */
function leaveChecked() {
  if (state.checked) {
    state.checked = null;
    state.selection = null;
    render();
  }
  return true;
}

function select(token, { toggle = false } = {}) {
  state.selection = toggle && state.selection === token ? null : token;
  state.inspect = null;
  state.uncarried = null;
  // A tool result picked: the inspector shows a request that carries it (the one shown, if it does; else the first
  // that does), not the request whose response made the call; when none carried it, it says so and keeps the one shown.
  const run = state.run;
  const index = state.selection?.startsWith("m:") ? Number(state.selection.slice(2)) : -1;
  const message = run && !state.checked ? run.transcript[index] : undefined;
  if (message?.role === "toolResult") {
    const pick = requestForMessage(run.sent, message, state.shown);
    state.inspect = pick.request;
    if (!pick.carried) state.uncarried = { token: state.selection, message };
  }
  render();
}

// --- what the page shows, derived from the run (or a pasted transcript) ---------------------------------

function safely(fn) {
  try {
    return fn();
  } catch (err) {
    return { error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
  }
}

/** The response (final assistant message) of request n of this run, once the loop has emitted it. */
function responseOf(run, n) {
  return run.events.find((r) => r.type === "assistant_message" && r.request === n)?.event.message;
}

/** The requests a run's transcript already holds (a resumed or continued run's `startSteps`): the page numbers the
 * run's own requests after them, as `steps` counts them. */
function requestsBefore(run) {
  return run.def.startSteps ?? 0;
}

/** What the explanations need about the batch an event belongs to (its response's calls, or those a run starts
 * from): whether it runs one call at a time, whether it pauses for a decision. */
function batchOf(run, rec) {
  const response = responseOf(run, rec.request);
  const calls = response ? toolCalls(response) : unansweredCalls(run.api, run.def.messages, run.def.customRoles);
  return { response, sequential: isSequential(run.def, calls), approval: awaitsApproval(run.def, calls) };
}

/** The tokens and cost the model reported up to event `seq` (each response's usage, a failed attempt's too): what
 * the loop checks a budget against (SPEC §11). */
function usageSoFar(run, seq) {
  const sum = { totalTokens: 0, cost: 0 };
  for (const rec of run.events.slice(0, seq)) {
    const message = rec.type === "assistant_message" ? rec.event.message : rec.type === "model_event" && rec.dropped && rec.event.event?.type === "error" ? rec.event.event.error : null;
    const tokens = message ? tokensOf(message) : null;
    sum.totalTokens += tokens?.totalTokens ?? 0;
    sum.cost += tokens?.cost ?? 0;
  }
  return sum;
}

/** The queues a run's definition has (SPEC §7): what the loop asks after a batch and after a stop answer. */
function queuesOf(run) {
  return { steering: run.def.steering !== undefined, followUp: run.def.followUp !== undefined };
}

/** What the explanations of part three need: the definition's options, the usage so far, where an entry stands. */
function partThreeOf(run, rec) {
  return { retry: run.def.retry ?? null, budget: run.def.budget ?? null, compaction: run.def.compaction ?? null, usage: usageSoFar(run, rec.seq), index: rec.entryIndex ?? "?" };
}

/** A replay's first difference from the course's run, in words: what the learner's loop did there, what the
 * correct loop does, and which of the two is missing, repeated or out of order. */
function differenceText({ key, vars, parts, at, order }) {
  const say = (part) => (part ? t(part.key, part.vars) : "");
  const fields = Array.isArray(vars.fields) ? { fields: vars.fields.join(t("diff.fieldSeparator")) } : {};
  const words = { ...vars, ...fields, actual: say(parts.actual), expected: say(parts.expected), actualNote: say(parts.actualNote), expectedNote: say(parts.expectedNote) };
  // Where the loop's transcript held it: a request it sent (said as such), or only the transcript it returned.
  const sent = at?.request !== undefined && key === "diff.message" ? { key: "diff.message.sent", request: requestsBefore(state.run) + at.request } : null;
  if (order) {
    const where = sent ? t("diff.at.request", { request: sent.request }) : t("diff.at.result");
    return t(order.completion ? "diff.order.completion" : "diff.order.other", { ...words, got: order.got.join(" → "), want: order.want.join(" → "), where });
  }
  return t(sent ? sent.key : key, { ...words, request: sent?.request });
}

/** Where a replay says its first difference: at the event that differs; when the loop's events stopped short of it,
 * or only the transcript it returned differs, at its last event once the replay is over. */
function showsDifference(run, rec) {
  const diff = state.replay?.difference;
  if (!diff || !run.replay) return false;
  if ((diff.where === "event" || diff.where === "exec") && diff.index < run.replay.events.length) return rec.seq === diff.index + 1;
  // A transcript the loop sent with a model request held it already: from the event the page shows that transcript.
  if (diff.where === "message" && diff.at?.request !== undefined) {
    const first = run.events.find((r) => r.adopted?.request === diff.at.request);
    if (first) return rec.seq === first.seq;
  }
  return (run.status === "done" || run.status === "failed") && rec.seq === run.events.length;
}

function explainEvent(run, rec) {
  // A replayed loop's batch done: the results are in the transcript in the loop's order, said as such when it is not
  // the calls' order.
  const loopOrder = run.replay && rec.batchDone && rec.loopOrder && canonical(rec.loopOrder) !== canonical(rec.batchDone) ? rec.loopOrder : null;
  const ended = rec.type === "tool_end" && rec.batchDone ? t("why.tool_end.replayLast", { call: callLabel(rec.event.result?.toolName, rec.event.result?.toolCallId) }) : "";
  if (showsDifference(run, rec)) return `${ended}${differenceText(state.replay.difference)}`;
  if (loopOrder) {
    const finished = run.events.filter((r) => r.type === "tool_end" && rec.batchDone.includes(r.callId) && r.seq <= rec.seq).map((r) => r.callId);
    const completion = canonical(finished) === canonical(loopOrder);
    return `${ended}${t(completion ? "why.tool_end.loopOrder.completion" : "why.tool_end.loopOrder.other", { got: loopOrder.join(" → "), order: rec.batchDone.join(" → ") })}`;
  }
  // The last request maxSteps allows: after its batch the run ends (it does not ask the model again).
  const last = requestsBefore(run) + rec.request >= (run.def.maxSteps ?? 32);
  const context = { ...batchOf(run, rec), ...partThreeOf(run, rec), last, requestOf: (n) => run.requestOf(n), requestsBefore: requestsBefore(run), queues: queuesOf(run) };
  const why = whyOf(rec, context);
  return tFirst(why.keys, why.vars);
}

/** Everything the views need, computed once per render. */
function derive() {
  const { api, run, checked } = state;
  const messages = checked ? checked.messages : run.transcript;
  const events = checked ? [] : run.events;
  const keys = views.messageKeys(messages, checked ? messages.length : run.def.messages.length);
  const live = !checked && run.status === "active";
  const customRoles = run.def.customRoles ?? [];
  const validation = safely(() => api.validateTranscript(messages, { customRoles }));
  const problems = validation.problems ?? [];
  const rows = views.pairRows(messages, problems);
  // Mid-run, the current response's calls are waiting for the loop, not missing: the loop answers every call
  // before its next request or the end of the run. A paused run's calls (and those a run is about to start from)
  // wait for decisions: validateTranscript's `pending` lists them (SPEC §8).
  const lastAssistant = messages.findLastIndex((m) => m?.role === "assistant");
  const pending = checked ? [] : pendingCalls(run);
  // While paused: the ids of the calls that wait for a decision (the others wait for their batch to resume).
  let paused = pending.length ? new Set(pending.filter((p) => p.needsApproval).map((p) => p.toolCallId)) : null;
  const held = () => safely(() => api.validateTranscript(messages, { customRoles, allowPending: true })).pending ?? [];
  let waiting = paused ? held() : live ? problems.filter((p) => p.kind === "missing_result" && p.index === lastAssistant) : [];
  if (checked) {
    // A pasted transcript that ends as a paused run ends (SPEC §8: its last calls wait, one of them for a decision)
    // is shown paused, as importing it shows. Any other call without a result stays missing, as validateTranscript says.
    const needsApproval = (p) => run.def.tools?.[toolCalls(messages[p.index]).find((c) => c.id === p.toolCallId)?.name]?.needsApproval === true;
    const waits = held();
    const decisions = waits.filter(needsApproval);
    if (decisions.length) [waiting, paused] = [waits, new Set(decisions.map((p) => p.toolCallId))];
  }
  const inProgress = new Set(waiting.map((p) => `${p.index}:${p.toolCallId}`));
  const trace = messages.length === 0 ? null : safely(() => buildTrace(messages, keys, events, customRoles));
  const inProgressIds = new Set();
  for (const { record, msgIndex, ids } of trace?.records ?? [])
    for (const id of ids) if (inProgress.has(`${msgIndex}:${id}`)) inProgressIds.add(`${record.seq}:${id}`);
  const links = buildLinks({ messages, keys, events, rows, trace: trace?.error ? null : trace });
  const heldSeq = !checked && run.held ? run.hold.seq : null;
  const selection = state.selection ?? (heldSeq ? `e:${heldSeq}` : null);
  const selectedSeq = selection?.startsWith("e:") ? Number(selection.slice(2)) : null;
  // The step explained: the selected event; for a selected message, call or record, the last event that made it.
  const related = selection && selectedSeq === null ? [...links.related(selection)].filter((x) => x.startsWith("e:")).map((x) => Number(x.slice(2))) : [];
  const currentSeq = selectedSeq ?? (related.length ? Math.max(...related) : heldSeq);
  const current = events.find((r) => r.seq === currentSeq) ?? events.at(-1);
  return { messages, events, keys, live, paused, validation, problems, rows, inProgress, trace, inProgressIds, links, heldSeq, selection, selectedSeq, current };
}

/** The chapter-00 trace of the transcript's user, assistant and toolResult messages (a custom-role message and a
 * compaction entry are no milestone: prologueTrace makes no record for them), each record pointing at its message's
 * index in the whole transcript. No record stands for something that did not happen (prologueTrace, orderTrace), and
 * validateTrace names each problem as validateTranscript does. */
function buildTrace(messages, keys, events, customRoles) {
  const { api } = state;
  const at = messages.flatMap((m, i) => (customRoles.includes(m?.role) || m?.role === "compaction" ? [] : [i]));
  const ordered = orderTrace(api.prologueTrace(at.map((i) => messages[i])), at.map((i) => keys[i]), events);
  // Each record's call ids, read from its message (an assistant_message record's toolCallId joins them).
  const idsOf = ({ record, msgIndex }) => (record.kind === "assistant_message" ? toolCalls(messages[msgIndex]).map((c) => c.id) : record.toolCallId === undefined ? [] : [record.toolCallId]);
  ordered.records = ordered.records.map((r) => ({ ...r, msgIndex: at[r.msgIndex] })).map((r) => ({ ...r, ids: idsOf(r) }));
  const records = ordered.records.map((r) => r.record);
  return { ...ordered, formatted: api.formatTrace(records), validation: api.validateTrace(records) };
}

/**
 * The calls that wait for a decision (SPEC §8): a paused run's `pending`, or, before a run that starts from a
 * transcript ending with unanswered calls, those calls (the script's tools say which need approval). Empty when
 * none of them needs one.
 */
function pendingCalls(run) {
  if (state.checked) return [];
  let pending = [];
  if (run.status === "done" && run.reason === "paused") pending = run.result?.pending ?? [];
  else if (run.status === "ready")
    pending = unansweredCalls(run.api, run.def.messages, run.def.customRoles).map((c) => ({ toolCallId: c.id, toolName: c.name, arguments: c.arguments, needsApproval: run.def.tools[c.name]?.needsApproval === true }));
  return pending.some((p) => p.needsApproval) ? pending : [];
}

// --- rendering -------------------------------------------------------------------------------------

function statusText(run) {
  if (state.checked) return t("status.checked");
  const names = (list) => list.join(", ");
  switch (run.status) {
    case "ready":
      return LIVE && !state.replay && !liveReady() ? t("live.setupFirst") : t("status.ready");
    case "done": {
      if (run.aborted?.by === "hand") {
        const after = run.execs.slice(run.aborted.execs).map((x) => callLabel(x.name, x.callId));
        const tools = [
          run.aborted.running.length ? t("status.abort.ranOn", { names: names(run.aborted.running) }) : null,
          after.length ? t("status.abort.ranAfter", { names: names(after) }) : null,
        ].filter(Boolean);
        if (!tools.length) tools.push(t("status.abort.noTools"));
        return t("status.doneAborted", { reason: run.reason, steps: run.steps, seq: run.aborted.seq, tools: tools.join(" ") });
      }
      if (run.reason === "paused") return t("status.paused", { steps: run.steps, n: pendingCalls(run).filter((p) => p.needsApproval).length });
      return t("status.done", { reason: run.reason, steps: run.steps });
    }
    case "failed":
      if (run.stopped) return t("replay.stopped", run.stopped);
      return state.replay ? t("replay.failed", { error: run.failure }) : t("status.failed", { error: run.failure });
    default: {
      if (run.aborted?.by === "hand" && run.pendingTools.length)
        return t("status.abortWaiting", { seq: run.aborted.seq, names: names(run.pendingTools.map((x) => callLabel(x.name, x.callId))) });
      if (run.held && run.mode === "step") {
        const rec = run.events[run.hold.seq - 1];
        const wait = waitOf(rec, { ...batchOf(run, rec), retry: run.def.retry ?? null, requestsBefore: requestsBefore(run), budget: run.def.budget ?? null, queues: queuesOf(run) });
        return t("status.held", { seq: rec.seq, label: views.eventLabel(rec), wait: tFirst(wait.keys, wait.vars) });
      }
      // Between a retry and the next call of the model the loop waits on a timer.
      if (run.retrying) return t("status.retryWait", { ms: run.events[run.retrying.seq - 1].event.delayMs, n: requestsBefore(run) + run.request });
      const gated = run.execs.filter((x) => x.state === "gated");
      // A link's release order that names a call not waiting (or none) while others wait: the run cannot go on by itself.
      if (run.stuck && gated.length) {
        const vars = { order: `[${run.autoRelease.map((id) => JSON.stringify(id)).join(", ")}]`, names: names(gated.map((x) => callLabel(x.name, x.callId))), next: run.stuck.next };
        return t(run.stuck.next === undefined ? "status.linkStuckEnd" : "status.linkStuck", vars);
      }
      if (gated.length) return t("status.waitingTools", { names: names(gated.map((x) => callLabel(x.name, x.callId))) });
      return run.mode === "run" ? t("status.running") : t("status.waiting");
    }
  }
}

function renderControls(run) {
  const { checked } = state;
  const active = run.status === "active";
  // The live page runs nothing until its endpoint is set up (a base URL and a model saved).
  const unset = LIVE && !state.replay && !liveReady() && run.status === "ready";
  $("run").disabled = unset || (!checked && !(run.status === "ready" || (active && (run.mode === "step" || run.held))));
  // While only gates wait (none a timeout answers), the loop emits nothing until the learner releases one: Step has
  // no event to go to.
  const gated = !checked && run.waitsForRelease;
  $("step").disabled = unset || gated || (!checked && !(run.status === "ready" || active));
  $("step").title = gated ? t("step.waitsForRelease") : "";
  $("pause").disabled = checked || !(active && run.mode === "run");
  $("reset").disabled = false;
  $("abort").disabled = checked || !active || run.controller.signal.aborted;
}

function renderCounters(run) {
  const { checked } = state;
  // A live model's run is not the course's scripted one: nothing to compare it with.
  const scenario = LIVE && !state.replay ? null : scenarioById(state.scenarioId);
  const byHand = run.aborted?.by === "hand";
  $("about").textContent = checked
    ? t("status.checked")
    : state.replay
      ? t(state.replay.name ? "replay.about" : "replay.about.unnamed", { name: state.replay.name, id: state.replay.id })
      : LIVE
        ? t("live.about")
        : scenario
          ? scenario.about[getLang()]
          : customText("about", run.def);
  $("about").dataset.replay = state.replay ? state.replay.id : "";
  // A resume or a fork of a course scenario teaches what that scenario teaches.
  const from = scenario ?? (state.scenarioId === "custom" && state.origin && !LIVE ? scenarioById(state.baseId) : null);
  const step = checked ? null : from ? from.step : isPartTwo(run.def) ? "two" : null;
  $("chapter-step").hidden = step === null;
  $("chapter-step").dataset.step = step ?? "";
  $("chapter-step").textContent = step === null ? "" : t("step.line", { step: t(`step.${step}`) });
  $("expected").textContent = checked || !scenario ? "–" : byHand ? t("expected.abortedByHand", { seq: run.aborted.seq }) : t("expected.line", scenario.expect);
  $("expected").dataset.state = byHand && !checked ? "aborted-by-hand" : "";
  $("requests").textContent = String(run.requests);
  // A resumed or continued run counts its own requests; steps count those its transcript held too.
  $("requests-before").hidden = checked || requestsBefore(run) === 0;
  $("requests-before").textContent = $("requests-before").hidden ? "" : t("counters.requestsBefore", { n: requestsBefore(run), next: requestsBefore(run) + 1 });
  $("executions").textContent = String(run.executions);
  $("steps").textContent = run.steps ?? "–";
  $("reason").textContent = run.reason ?? "–";
  const compared = [];
  for (const id of ["requests", "executions", "steps", "reason"]) {
    const node = $(id);
    // A run aborted by hand is not the course's run: its counts are not compared.
    if (scenario && run.status === "done" && !checked && !byHand) compared.push((node.dataset.match = String(String(scenario.expect[id]) === node.textContent)));
    else delete node.dataset.match;
  }
  // A learner's loop on a case the kit failed: a count equal to the course's is no pass (marked =, not ✓), and when
  // every count is equal, a note says where the difference is instead.
  const failedCase = !checked && state.replay?.failed === true;
  document.querySelector('[data-panel="counters"]').dataset.verdict = failedCase ? "failed" : "";
  $("counts-note").hidden = !(failedCase && compared.length > 0 && compared.every((m) => m === "true"));
  $("counts-note").textContent = $("counts-note").hidden ? "" : t("counters.failedCase");
  const notes = [];
  if (!checked && run.result?.error) notes.push(t("result.error", { error: run.result.error }));
  if (!checked && run.result?.observerError) notes.push(t("result.observerError", { error: run.result.observerError }));
  if (!checked && run.mismatch) notes.push(t("result.mismatch"));
  $("result-note").textContent = notes.join(" · ");
}

/** The rows of the decision table that fired for this run's responses (or a pasted transcript's), by request, each
 * numbered as the page numbers it (after the requests the run's transcript already holds). */
function firedRows(run, d) {
  const fired = new Map();
  const responses = state.checked
    ? d.messages.filter((m) => m?.role === "assistant").map((message, i) => ({ message, n: i + 1 }))
    : run.events.filter((r) => r.type === "assistant_message").map((r) => ({ message: r.event.message, n: requestsBefore(run) + r.request }));
  for (const { message, n } of responses) {
    const row = decisionRow(message)?.id;
    if (row) fired.set(row, [...(fired.get(row) ?? []), n]);
  }
  return fired;
}

function render() {
  const run = state.run;
  if (!run) return;
  renderViews(run);
  syncUrl();
  if (embed.on) reportHeight(state.scenarioId);
}

/** The address of what is on screen: scenario (or the learner's loop replayed on it), language, how far the run
 * went, a custom script or a replay's recording in the hash. */
function syncUrl() {
  const run = state.run;
  const replay = state.replay;
  const point = !run || state.checked ? { step: null, wait: false } : runPoint(run);
  const url = stateUrl(location.href, {
    // A replay is not the plain scenario: a link to it never claims to be one (see showReplay).
    scenario: replay || state.scenarioId === "custom" ? null : state.scenarioId,
    replay: replay ? replay.id : null,
    lang: getLang(),
    // The speed chosen, when it is not the normal one (a link opens at the speed its sender chose).
    speed: state.speed === "normal" ? null : state.speed,
    step: point.step,
    wait: point.wait ? "tools" : null,
    release: !replay && run?.released.length ? run.released : null,
    abort: !replay && run && !state.checked ? abortOf(run) : null,
    hash: replay ? replay.hash : state.scenarioId === "custom" ? state.customHash : null,
  });
  if (url !== location.href) history.replaceState(null, "", url);
}

/** Where the learner aborted the run by hand ({seq, tools}, as the address's abort= says it), or null; a link's run on
 * its way to its abort already says it. */
function abortOf(run) {
  if (run.aborted?.by === "hand") return { seq: run.aborted.seq, tools: run.aborted.tools === true };
  return run.abortAt && !run.controller.signal.aborted ? { ...run.abortAt } : null;
}

/**
 * Where a run stands, as the address says it: `step` the event it is held right after ("end" once it is over), with
 * `wait` when the loop went on past that event and its tools wait at their gates for the learner; a link's run on
 * its way stands where the link says. `step` null while it runs between events, and before it starts.
 */
function runPoint(run) {
  if (run.status === "done" || run.status === "failed") return { step: "end", wait: false };
  if (run.status !== "active") return { step: null, wait: false };
  if (run.target !== null) return { step: run.target, wait: run.passTarget };
  if (run.held && run.mode === "step") return { step: run.hold.seq, wait: false };
  if (run.waitsForRelease && run.events.length > 0) return { step: run.events.length, wait: true };
  return { step: null, wait: false };
}

function renderViews(run) {
  const { checked } = state;
  // Views are rebuilt on every event: keep keyboard focus on the same item (or move it where the arrows asked).
  const forced = state.focusNext;
  state.focusNext = null;
  const focusKey = forced ?? (document.activeElement instanceof HTMLElement ? document.activeElement.dataset.focusKey : undefined);
  const d = derive();
  const highlight = d.selection ? d.links.related(d.selection) : new Set();

  renderControls(run);
  renderCounters(run);
  const status = statusText(run);
  if ($("status").textContent !== status) $("status").textContent = status;
  $("status").dataset.run = checked ? "checked" : run.status;
  $("why").textContent = checked ? t("why.checked") : d.current ? explainEvent(run, d.current) : t("why.ready");

  const onSelect = (token) => select(token, { toggle: true });
  const now = run.startedAt === null ? 0 : performance.now() - run.startedAt;
  const waterfall = checked ? [] : views.waterfallRows(run.events, run.times, now, run.goneOn);
  views.renderTimeline($("timeline"), d.events, {
    waits: waterfall.filter((r) => r.kind === "wait"),
    heldSeq: d.heldSeq,
    selectedSeq: d.selectedSeq,
    activeSeq: d.selectedSeq ?? d.heldSeq ?? d.events.at(-1)?.seq,
    highlight,
    aborted: checked ? null : run.aborted,
    requestsBefore: requestsBefore(run),
    onSelect: (seq, { toggle = false, focus = false } = {}) => {
      if (focus) state.focusNext = `e:${seq}`;
      select(`e:${seq}`, { toggle });
    },
  });
  views.renderTranscript($("transcript"), d.messages, d.keys, { highlight, selected: d.selection, problems: d.problems, inProgress: d.inProgress, paused: d.paused, onSelect, onFork: checked || LIVE || state.replay || !panelShown("fork") ? null : openFork, requestsBefore: requestsBefore(run) });
  views.renderPairing($("pairing"), d.rows, { execs: checked ? [] : run.execs, live: d.live, paused: d.paused, inProgress: d.inProgress, highlight, selected: d.selection, onSelect });
  views.renderFindings($("findings"), d.validation, { inProgress: d.inProgress, paused: d.paused });
  renderApprovalPanel(run);
  views.renderTools($("tools"), checked ? [] : run.execs, (exec) => run.release(exec));
  $("toolbar").hidden = checked || run.execs.length === 0;

  const sent = checked ? [] : run.sent;
  const open = state.inspect ?? (d.current?.request || sent.length);
  state.shown = open;
  // The picked tool result no request carried (until a later request of a run still going carries it).
  const uncarried = !checked && state.uncarried && state.uncarried.token === state.selection && !requestsCarrying(sent, state.uncarried.message).length
    ? { id: String(state.uncarried.message?.toolCallId), ended: run.status === "done" || run.status === "failed" }
    : null;
  renderInspector($("inspector"), sent, open, {
    uncarried,
    // A learner's loop replayed: what it sent is the kit's case as written, never translated.
    originals: !checked && Boolean(state.replay),
    context: checked ? null : run.contexts[open - 1],
    customRoles: run.def.customRoles ?? [],
    raw: state.raw,
    onRaw: (on) => {
      state.raw = on;
      render();
    },
    response: checked ? null : responseOf(run, open),
    payload: checked || !LIVE ? undefined : run.payloads[open - 1],
    // A retried request: each failed attempt, as its retry event tells it.
    retries: checked ? [] : run.events.filter((r) => r.type === "retry" && r.request === open).map((r) => ({ ...r.event, same: run.calls.find((c) => c.request === open && c.attempt === r.event.attempt + 1)?.same })),
    // The tokens so far once this request's response is in, against the budget.
    running: checked ? null : runningAt(run, open),
    budget: run.def.budget ?? null,
    requestsBefore: requestsBefore(run),
    onPick: (n) => {
      state.inspect = n;
      state.uncarried = null;
      render();
    },
  });
  const currentResponse = d.current ? responseOf(run, d.current.request) : undefined;
  renderDecisionTable($("decision"), firedRows(run, d), currentResponse ? decisionRow(currentResponse)?.id : null, d.current ? phaseOf(d.current) : null, {
    partTwo: isPartTwo(run.def),
    partThree: isPartThree(run.def),
    currentAround: d.current ? aroundOf(d.current) : null,
  });
  views.renderTrace($("trace"), d.trace, { highlight, selected: d.selection, inProgressIds: d.inProgressIds, paused: d.paused, problems: d.problems, onSelect });

  if (LIVE) diagnoseLive(run);
  views.renderWaterfall($("waterfall-box"), waterfall, { tokensOf, tokensText, budget: checked ? null : (run.def.budget ?? null), usage: checked ? null : (run.result?.usage ?? null), requestsBefore: requestsBefore(run) });
  renderFork($("fork-box"), checked ? null : state.fork, {
    tools: Object.keys(run.def.tools ?? {}),
    requestsBefore: requestsBefore(run),
    onChange: render,
    onRun: runFork,
    onCancel: () => {
      state.fork = null;
      render();
    },
  });
  if (state.compare && state.compare.run === run && run.status === "done" && !state.compare.fork) state.compare.fork = summaryOf(run);
  renderCompare($("compare-box"), checked ? null : state.compare, {
    diff: (a, b) => transcriptDiff(withoutResultTimes(a), withoutResultTimes(b)),
    requestsBefore: state.compare?.def.startSteps ?? 0, // the fork's own transcript's, whatever run is shown
  });

  markOverflow();

  const lost = !document.activeElement || document.activeElement === document.body;
  if (focusKey && (forced || lost)) document.querySelector(`[data-focus-key="${CSS.escape(focusKey)}"]`)?.focus({ preventScroll: true });
}

/** The tokens the model reported up to the response of request n (failed attempts included), once it is in. */
function runningAt(run, n) {
  const rec = run.events.find((r) => r.type === "assistant_message" && r.request === n);
  return rec ? usageSoFar(run, rec.seq) : null;
}

/** Whether the page shows a panel: every one, or, embedded, the ones the lesson named (a button that opens a panel
 * not shown would do nothing). */
function panelShown(name) {
  return !embed.on || embed.panels.includes(name);
}

/** A table wider than its box is marked (a shadow at its edge) and its hint shown: its last columns are to the right. */
function markOverflow() {
  for (const wrap of document.querySelectorAll(".table-wrap")) {
    const over = wrap.scrollWidth > wrap.clientWidth + 1;
    wrap.dataset.overflow = String(over);
    const hint = wrap.previousElementSibling;
    if (hint?.classList.contains("scroll-hint")) hint.dataset.shown = String(over);
  }
}

// --- the live model: why a request failed --------------------------------------------------------------

const diagnosed = new WeakSet();

/**
 * A live run that ended because the endpoint could not be read ("Connection error.", a fetch that failed): find out
 * why, once per run, and say what fixes it (CORS, nothing answering, an address the page may not reach).
 */
function diagnoseLive(run) {
  const box = $("live-diagnosis");
  if (run.status !== "done" || diagnosed.has(run)) {
    if (run.status !== "done" && !diagnosed.has(run)) box.hidden = true;
    return;
  }
  diagnosed.add(run);
  const last = run.transcript.findLast((m) => m?.role === "assistant");
  const error = run.result?.error ?? last?.errorMessage ?? "";
  if (run.reason !== "error" || !/connection error|failed to fetch|networkerror|load failed|fetch/i.test(error)) return;
  let settings = null;
  try {
    settings = JSON.parse(sessionStorage.getItem("tiny-pi-live") ?? "null");
  } catch {
    // storage blocked: the form holds the URL
  }
  const baseUrl = settings?.baseUrl ?? $("live-base-url").value;
  diagnoseConnection(baseUrl).then(({ kind, vars }) => {
    if (state.run !== run) return;
    box.hidden = false;
    box.dataset.kind = kind;
    box.replaceChildren(views.h("p", {}, t(`live.diagnosis.${kind}`, vars)), views.h("p", { class: "help" }, t("live.diagnosis.error", { error })));
    // Not a live region (the page has one, the run's status): the diagnosis takes the focus.
    box.focus();
  });
}

// --- what if: fork a response and compare --------------------------------------------------------------

/** What a finished run came to, as the comparison shows it. */
function summaryOf(run) {
  const fired = [...firedRows(run, { messages: run.transcript })].flatMap(([row, ns]) => ns.map((n) => ({ row, n }))).sort((a, b) => a.n - b.n);
  return {
    reason: run.reason,
    steps: run.steps,
    requests: run.requests,
    tools: run.events.filter((r) => r.type === "tool_start").map((r) => callLabel(r.event.call?.name, r.event.call?.id)),
    rows: fired.map(({ row, n }) => t("compare.rowAt", { row, n })),
    transcript: run.transcript,
  };
}

/**
 * A shared fork's comparison (`shared`: {request, original, order}, what runFork keeps): the original made again
 * off screen, its summary beside the fork's once the fork (`def`) has run. Null when `shared` is not one, or names a
 * response the original run does not have (its `request` beyond the original's requests).
 */
async function sharedCompare(shared, def) {
  const valid = Boolean(shared) && typeof shared === "object" && Number.isInteger(shared.request) && shared.request > 0 &&
    Array.isArray(shared.order) && shared.order.every((id) => typeof id === "string") && validateDefinition(shared.original).length === 0;
  if (!valid) return null;
  const original = await runOffScreen(shared.original, shared.order);
  if (!responseOf(original, shared.request)) return null;
  return { request: shared.request, def, original: summaryOf(original), fork: null, run: null, shared };
}

/** Run a definition to its end off screen (gates opening in `order`, then as they wait): a finished Run. */
function runOffScreen(def, order) {
  return new Promise((resolve) => {
    const run = new Run(state.api, cloneDef(def), {
      autoRelease: order,
      releaseRest: true,
      onUpdate: () => {
        if (run.status === "done" || run.status === "failed") resolve(run);
      },
    });
    run.run();
  });
}

/** Open the fork editor on response `request` of the run: its stop reason, text and calls, as a draft. */
function openFork(request) {
  const message = responseOf(state.run, request);
  if (!message) return;
  const blocks = Array.isArray(message.content) ? message.content : [];
  state.fork = {
    request,
    draft: {
      stopReason: message.stopReason,
      text: blocks.filter((b) => b?.type === "text").map((b) => b.text).join("\n"),
      calls: toolCalls(message).map((c) => ({ id: c.id, name: c.name, args: JSON.stringify(c.arguments) })),
    },
    error: null,
  };
  render();
  $("fork-panel").scrollIntoView({ block: "nearest" });
  $("fork-stop-reason")?.focus();
}

/**
 * The edited response: its thinking kept, its text and calls as drafted, every other field as it was. Returns
 * {response, errors, args, firstCall}: each error {field, text}, `field` the form's field it is about ("text",
 * {call: n, key: "id" | "name" | "args"}), or null for a path of the script the form does not show; `args` each
 * call's arguments as parsed (undefined where they are not JSON; the response holds {} for what is not an object);
 * `firstCall` where the first call is in the response's content (after the thinking and the text block, if any).
 */
function forkedResponse(original, draft) {
  const errors = [];
  const parsed = draft.calls.map(() => undefined);
  const calls = draft.calls.map((c, i) => {
    const n = i + 1;
    let args;
    try {
      args = JSON.parse(c.args);
    } catch {
      // Where the JSON goes wrong, in the page's words (the engine's message is in the browser's language).
      const at = jsonErrorIndex(c.args);
      const where = at === null ? null : lineCol(c.args, at);
      const error = !where ? t("fork.jsonInvalid") : at >= c.args.length ? t("fork.jsonEnd", where) : t("fork.jsonAt", where);
      errors.push({ field: { call: n, key: "args" }, text: t("fork.badArgs", { n, error }) });
      return { type: "toolCall", id: c.id, name: c.name, arguments: {} };
    }
    parsed[i] = args;
    if (!args || typeof args !== "object" || Array.isArray(args)) {
      errors.push({ field: { call: n, key: "args" }, text: t("fork.argsObject", { n }) });
      args = {};
    }
    return { type: "toolCall", id: c.id, name: c.name, arguments: args };
  });
  const thinking = (original.content ?? []).filter((b) => b?.type === "thinking");
  const text = draft.text === "" ? [] : [{ type: "text", text: draft.text }];
  const response = { ...structuredClone(original), content: [...thinking, ...text, ...calls], stopReason: draft.stopReason };
  return { response, errors, args: parsed, firstCall: thinking.length + text.length };
}

/** A call's field's own label in the form, for an error the fork has no sentence of its own for. */
function forkFieldLabel(field) {
  return t({ id: "fork.callId", name: "fork.callName", args: "fork.callArgs" }[field.key], { n: field.call });
}

/**
 * One of validateDefinition's errors for the forked script, in the words of the fork's form: a path inside one of
 * the calls of response `index` of the script (`script[index].content[j].id`, ...) becomes the field that holds it
 * ("The id of call 2 is empty"); any other path is named as it is. Only the calls can be wrong: the stop reason is
 * one of a select's, the text a string, and the rest of the response was the script's own, already valid.
 */
function forkDefError(e, index, firstCall) {
  const prefix = `script[${index}].content[`;
  let field = null;
  if (e.path.startsWith(prefix)) {
    // content: the kept thinking blocks and the text block (not calls), then the calls.
    const [, j, key] = /^(\d+)\]\.(\w+)/.exec(e.path.slice(prefix.length)) ?? [];
    if (j !== undefined && Number(j) >= firstCall && ["id", "name", "arguments"].includes(key))
      field = { call: Number(j) - firstCall + 1, key: key === "arguments" ? "args" : key };
  }
  if (field === null) return { field, text: defError(e) };
  const n = field.call;
  if (e.code === "nonEmpty" && field.key !== "args") return { field, text: t(`fork.${field.key}Empty`, { n }) };
  if (e.code === "tooDeep" && field.key === "args") return { field, text: t("fork.argsDeep", { n, ...e.vars }) };
  return { field, text: t("fork.fieldError", { field: forkFieldLabel(field), error: t(`def.${e.code}`, e.vars) }) };
}

/** Where an error's field is in the form, top to bottom: the text, then each call's id, name, arguments. */
function forkFieldRank(field) {
  if (field === null) return Number.MAX_SAFE_INTEGER;
  if (field === "text") return 0;
  return 1 + (field.call - 1) * 3 + ["id", "name", "args"].indexOf(field.key);
}

/**
 * What keeps the fork from running, in the form's words, every problem at once: arguments that are not a JSON
 * object, what validateDefinition finds in the script with the response edited, and a lone surrogate in what the
 * learner typed (the package refuses the whole script for one): in the text, each id and tool name, and each call's
 * arguments that parsed. Returns {def, errors: [text]}, in the form's order.
 */
function forkProblems(run, fork) {
  const index = run.scriptIndexOf(fork.request);
  const { response, errors, args, firstCall } = forkedResponse(responseOf(run, fork.request), fork.draft);
  const def = cloneDef(run.def);
  // The script's response that answered request k (after any attempts of it that failed and were retried).
  def.script[index] = response;
  // validateDefinition stops at arguments nested too deep and says only that: those arguments are set aside ({} in
  // this refused script) and it is asked again, so the other problems are listed too (at most once per call).
  const found = [];
  for (;;) {
    // A lone surrogate is named below in the form's words, wherever it was typed (in arguments too deep to be read too).
    const problems = validateDefinition(def).filter((e) => e.code !== "surrogate");
    const mapped = problems.map((e) => forkDefError(e, index, firstCall));
    found.push(...mapped);
    const deep = problems.length === 1 && problems[0].code === "tooDeep" ? mapped[0].field : null;
    if (deep?.key !== "args") break;
    response.content[firstCall + deep.call - 1].arguments = {};
  }
  // A field already refused (arguments that are not JSON) is not named again.
  const named = new Set(errors.map((e) => forkFieldRank(e.field)));
  errors.push(...found.filter((e) => e.field === null || !named.has(forkFieldRank(e.field))));
  const surrogates = [["text", "fork.surrogateText", loneSurrogate(fork.draft.text)]];
  fork.draft.calls.forEach((c, i) => {
    const n = i + 1;
    surrogates.push([{ call: n, key: "id" }, "fork.surrogateId", loneSurrogate(c.id)], [{ call: n, key: "name" }, "fork.surrogateName", loneSurrogate(c.name)]);
    if (args[i] !== undefined) surrogates.push([{ call: n, key: "args" }, "fork.surrogateArgs", loneSurrogates(args[i], { first: true })[0]?.code]);
  });
  for (const [field, key, code] of surrogates) if (code) errors.push({ field, text: t(key, { n: field.call, code }) });
  errors.sort((a, b) => forkFieldRank(a.field) - forkFieldRank(b.field));
  return { def, errors: errors.map((e) => e.text) };
}

/**
 * Run the fork: the same script with response k edited, made again from the start, so the run before k is replayed
 * exactly (same input and responses, gated tools opening in the order the original opened them) and goes its own
 * way from there. The original's summary is this run's, once finished (or the same script run out off screen); the
 * fork's fills in when it ends. The fork becomes the page's script (in the editor and the address). An edit that
 * cannot run is refused in the form, each problem naming its field.
 */
async function runFork() {
  const { fork, run } = state;
  if (!fork) return;
  const { def, errors } = forkProblems(run, fork);
  if (errors.length) {
    fork.error = errors.join(t("fork.errorSeparator"));
    render();
    $("fork-error")?.focus();
    return;
  }
  const order = [...new Set([...run.released, ...(run.def.release ?? [])])];
  const original = run.status === "done" ? run : await runOffScreen(run.def, order);
  state.compare = { request: fork.request, def, original: summaryOf(original), fork: null, run: null, shared: { request: fork.request, original: run.def, order } };
  setEditorText(def);
  useCustom(def, { origin: keptOrigin({ kind: "fork", request: fork.request }) });
  newRun({ autoRelease: order, releaseRest: true });
  state.run.setPace(0);
  state.run.run();
}

// --- approvals: decide, export, resume (SPEC §8) ---------------------------------------------------------

function renderApprovalPanel(run) {
  const pending = pendingCalls(run);
  const section = $("approvals-panel");
  section.hidden = pending.length === 0 || !panelShown("approvals");
  if (section.hidden) {
    $("approvals").replaceChildren();
    return;
  }
  const paused = run.status === "done";
  renderApprovals($("approvals"), pending, state.decisions, {
    paused,
    jsonl: paused ? safely(() => state.api.toJSONL(run.transcript, { customRoles: run.def.customRoles ?? [] })) : null,
    onDecide: (id, approve) => {
      state.decisions[id] = { ...state.decisions[id], approve };
      render();
    },
    onReason: (id, reason) => {
      state.decisions[id] = { ...state.decisions[id], reason };
    },
    onResume: () => resume(run, pending),
    onDownload: (text) => download("paused-run.jsonl", text, "application/x-ndjson"),
  });
}

/** How a resume or a fork is named (useCustom's `origin`): after the course scenario only when the run it was made
 * from is that scenario's or a script that already bears its name; of an edited or imported script, it stays one. */
function keptOrigin(origin) {
  return state.scenarioId !== "custom" || state.origin ? origin : null;
}

/**
 * Resume with the learner's decisions: runAgentLoop from the paused transcript with `approvals`, `steps` going on
 * from the paused run's (`startSteps`), the script going on after the responses the paused run used. A run that is
 * about to start from a transcript (an import) gets the decisions only.
 */
function resume(run, pending) {
  const approvals = Object.create(null); // no prototype: a call id may be "__proto__"
  for (const p of pending) {
    const d = state.decisions[p.toolCallId];
    if (!p.needsApproval || typeof d?.approve !== "boolean") continue;
    approvals[p.toolCallId] = d.approve ? { approve: true } : { approve: false, ...(d.reason?.trim() ? { reason: d.reason.trim() } : {}) };
  }
  const def = cloneDef(run.def);
  if (run.status === "done") Object.assign(def, { messages: cloneDef(run.transcript), script: def.script.slice(run.calls.length), startSteps: run.steps });
  def.approvals = approvals;
  setEditorText(def);
  useCustom(def, { origin: keptOrigin({ kind: "resume" }) });
  state.run.run();
}

// --- script editor ---------------------------------------------------------------------------------

/** The editor's text of a definition, as setEditorText writes it. */
function editorText(def) {
  return JSON.stringify(def, null, 2);
}

function setEditorText(def) {
  $("editor").value = editorText(def);
  showEditorMessage(null);
}

/** One of validateDefinition's errors as text: its path and what is wrong there. */
function defError(e) {
  return `${e.path}: ${t(`def.${e.code}`, e.vars)}`;
}

/** The editor's message: null, a line of text (ok), or errors [{text, line}], each a button to its line. */
function showEditorMessage(message, kind = "ok") {
  const out = $("editor-error");
  if (message === null) {
    out.replaceChildren();
    delete out.dataset.state;
    return;
  }
  out.dataset.state = kind;
  if (typeof message === "string") {
    out.replaceChildren(views.h("p", {}, message));
    return;
  }
  out.replaceChildren(
    views.h(
      "ul",
      {},
      ...message.map((e) =>
        views.h("li", { "data-line": e.line }, e.text, " ", views.h("button", { type: "button", class: "link", onclick: () => gotoLine(e.line) }, t("editor.goto", { line: e.line }))),
      ),
    ),
  );
}

/** Put the caret on a line of the editor and select it. */
function gotoLine(line) {
  const editor = $("editor");
  const lines = editor.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  editor.focus();
  editor.setSelectionRange(start, start + (lines[line - 1] ?? "").length);
  // Bring the line into view: the textarea scrolls by lines of equal height.
  editor.scrollTop = Math.max(0, ((line - 3) / Math.max(1, lines.length)) * editor.scrollHeight);
}

function lineCol(source, position) {
  const before = source.slice(0, position).split("\n");
  return { line: before.length, col: before[before.length - 1].length + 1 };
}

/** Parse and check the editor; shows each problem with its line. Returns the definition or null. */
function readEditor() {
  const source = $("editor").value;
  let def;
  try {
    def = JSON.parse(source);
  } catch (err) {
    const at = jsonErrorIndex(source);
    if (at === null) showEditorMessage(t("editor.parseErrorNoPos", { error: err.message }), "error");
    else {
      const where = lineCol(source, at);
      showEditorMessage([{ line: where.line, text: t("editor.parseError", { ...where, error: err.message }) }], "error");
    }
    return null;
  }
  const errors = validateDefinition(def);
  if (errors.length) {
    const located = errors.map((e) => {
      const line = lineOfPath(source, e.path);
      return { line, text: t("editor.schemaError", { line, path: e.path, error: t(`def.${e.code}`, e.vars) }) };
    });
    showEditorMessage(located, "error");
    return null;
  }
  showEditorMessage(t("editor.ok"));
  return { executor: "registry", maxSteps: 32, abort: "none", ...def };
}

/** Make an edited or imported definition the page's script (`origin`: how the page made it, readOrigin's), and keep
 * it for the next visit and in the URL. */
function useCustom(def, { hash = null, origin = null } = {}) {
  state.replay = null;
  state.scenarioId = "custom";
  state.def = def;
  state.custom = def;
  state.origin = origin;
  state.customHash = hash;
  save(CUSTOM_KEY, { def, base: state.baseId, ...(origin ? { origin } : {}) });
  fillScenarioSelect();
  newRun();
  if (!hash) shareCustom(def);
}

/** Put the custom script into the address (#script=…), once packed, with the comparison a fork shows beside it. */
function shareCustom(def) {
  const compare = state.compare?.def === def ? state.compare.shared : null;
  const origin = state.custom === def ? state.origin : null;
  encodeHash({ def, base: state.baseId, ...(compare ? { compare } : {}), ...(origin ? { origin } : {}) }).then((encoded) => {
    if (state.custom !== def) return; // another script took its place meanwhile
    state.customHash = `#script=${encoded}`;
    syncUrl();
  });
}

function revertEditor() {
  const scenario = scenarioById(state.baseId) ?? SCENARIOS[0];
  setEditorText(localizeDef(scenario.def, getLang()));
  showEditorMessage(t("editor.reverted", { title: scenarioTitle(scenario) }));
}

// --- pasted transcripts, import and export ------------------------------------------------------

/** The pasted (or opened) transcript: a JSON array, or JSON Lines read by the package's parseJSONL (SPEC §9). */
function readPasted() {
  const out = $("check-error");
  const source = $("check-input").value;
  try {
    const messages = source.trim().startsWith("[") ? parseTranscript(source) : state.api.parseJSONL(source, { customRoles: state.def.customRoles ?? [] });
    out.textContent = "";
    return messages;
  } catch (err) {
    if (err instanceof TypeError) out.textContent = t("check.jsonlError", { error: err.message });
    else out.textContent = err.notArray ? t("check.notArray") : t("check.parseError", { line: err.line ?? 1, error: err.message });
    return null;
  }
}

/**
 * Continue from a transcript: it becomes the input of the next run, and the script goes on after the responses
 * it already holds (it is not replayed from its start on top of them). A transcript that ends with unanswered
 * calls is passed as it is: answering them first is the loop's job (SPEC §8), not the page's.
 */
function continueFrom(messages, extra = {}) {
  const a = responsesIn(messages);
  // The script that goes on is the page's: an edited one keeps its tools, custom roles and the rest of its script
  // (one made by an import, the script it was imported into); else the course scenario's.
  const custom = state.scenarioId === "custom";
  const again = custom && state.continued?.def === state.def;
  const scenario = again ? state.continued.scenario : custom ? null : (scenarioById(state.baseId) ?? null);
  const base = again ? cloneDef(state.continued.base) : scenario ? localizeDef(scenario.def, getLang()) : cloneDef(state.def);
  delete base.approvals; // decisions are about the calls of one transcript
  // The script answers the requests after the responses its own input holds: the transcript's others used it up.
  const used = Math.max(0, a - responsesIn(base.messages));
  // The responses the transcript holds were requests of the conversation: steps (and maxSteps) go on from them.
  const def = { ...base, messages, script: base.script.slice(used), ...(a > 0 ? { startSteps: a } : {}), ...extra };
  if (a === 0) delete def.startSteps;
  // Nothing is kept that cannot run: the page's checks, then the package's (allowPending: a paused run's calls wait).
  const errors = validateDefinition(def).map(defError);
  if (!errors.length) {
    const check = safely(() => state.api.validateTranscript(messages, { customRoles: def.customRoles ?? [], allowPending: true }));
    if (check.error) errors.push(check.error);
    else for (const p of check.problems) errors.push(t("findings.item", { kindText: t(`kind.${p.kind}`), kind: p.kind, id: p.toolCallId, index: p.index }));
  }
  if (errors.length) return { errors };
  setEditorText(def);
  useCustom(def);
  state.continued = { def, base, scenario };
  return { a, next: used + 1, title: scenario ? scenarioTitle(scenario) : t("scenario.custom") };
}

function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = views.h("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  // The download has started by the time this runs; only the object URL is released.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** Tool results carry the time they were made; two runs of one script differ only there, which is no difference. */
function withoutResultTimes(messages) {
  return messages.map((m) => {
    if (m?.role !== "toolResult") return m;
    const { timestamp, ...rest } = m;
    return rest;
  });
}

function currentMessages() {
  return state.checked ? state.checked.messages : state.run.transcript;
}

// --- wiring ----------------------------------------------------------------------------------------

function wire() {
  $("lang-toggle").addEventListener("click", switchLang);
  $("scenario-select").addEventListener("change", (ev) => {
    if (ev.target.value !== "custom") chooseScenario(ev.target.value);
    else if (state.custom) {
      setEditorText(state.custom);
      useCustom(state.custom, { origin: state.origin });
    }
  });
  for (const name of Object.keys(actions)) $(name).addEventListener("click", actions[name]);
  $("speed").value = state.speed;
  $("speed").addEventListener("change", (ev) => {
    state.speed = Object.hasOwn(SPEEDS, ev.target.value) ? ev.target.value : "normal";
    state.run?.setPace(SPEEDS[state.speed]);
    syncUrl();
  });

  $("editor").addEventListener("input", () => readEditor());
  $("editor-apply").addEventListener("click", () => {
    const def = readEditor();
    if (!def) return;
    useCustom(def);
    showEditorMessage(t("editor.saved"));
    state.run.run();
  });
  $("editor-revert").addEventListener("click", revertEditor);

  $("check-button").addEventListener("click", () => {
    const messages = readPasted();
    if (!messages) return;
    state.checked = { messages };
    state.selection = null;
    render();
  });
  $("import-button").addEventListener("click", () => {
    const messages = readPasted();
    if (!messages) return;
    // A paused transcript's responses count toward maxSteps: the run that finishes its batch goes on from them.
    const imported = continueFrom(messages);
    $("check-error").textContent = imported.errors
      ? t("check.notImported", { error: imported.errors.join(t("sep.list")) })
      : t("check.imported", { n: messages.length, a: imported.a, next: imported.next, title: imported.title });
  });
  $("check-file").addEventListener("change", async (ev) => {
    const file = ev.target.files?.[0];
    if (file) $("check-input").value = await file.text();
  });
  $("export-transcript").addEventListener("click", () => {
    download("transcript.jsonl", state.api.toJSONL(currentMessages(), { customRoles: state.def.customRoles ?? [] }), "application/x-ndjson");
  });
  $("export-events").addEventListener("click", () => {
    download("events.json", `${JSON.stringify(state.run.events.map((r) => r.event), null, 2)}\n`, "application/json");
  });

  // Keyboard: space = step, r = run, Esc = pause; never while typing in a field, and a key does nothing while its
  // button is disabled (Step while the tools wait for a release, Run before the live model is set up).
  const typing = (target) => target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  const press = (name) => $(name).disabled || actions[name]();
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target) || !state.run) return;
    if (ev.key === " ") {
      ev.preventDefault(); // no page scroll, and no click of a focused button on top of the step
      press("step");
    } else if (ev.key === "r" || ev.key === "R") press("run");
    else if (ev.key === "Escape") press("pause");
  });
  window.addEventListener("resize", markOverflow);
  document.addEventListener("keyup", (ev) => {
    if (ev.key === " " && ev.target instanceof HTMLButtonElement) ev.preventDefault();
  });
}

function showError(text, kind, state = "error") {
  const banner = $("banner");
  banner.hidden = false;
  banner.textContent = text;
  banner.dataset.state = state;
  banner.dataset.error = kind;
}

/**
 * The script to start with: a script in the URL's hash, else the URL's scenario, else the script edited on an
 * earlier visit, else the README one. Returns false (and says why) when the URL names something that is not there.
 */
async function startScript() {
  const packed = new URLSearchParams(location.hash.slice(1));
  // A learner's loop stepped through: its recording is in the hash; without it the link shows nothing else instead.
  const replay = params.get("replay");
  if (replay !== null) {
    const shared = packed.has("replay") ? await decodeHash(packed.get("replay")).catch(() => null) : null;
    if (!shared || !showReplay({ name: shared.name, id: replay, run: shared.run, failed: shared.failed }, { hash: location.hash })) {
      showError(t("url.badReplay", { id: replay }), "bad-replay");
      return false;
    }
    return true;
  }
  const hash = packed.get("script");
  if (hash !== null) {
    const shared = await decodeHash(hash).catch(() => null);
    const valid = shared && validateDefinition(shared.def).length === 0;
    if (!valid) {
      showError(t("url.badScript"), "bad-script");
      return false;
    }
    // A fork's link brings its comparison back: the original made again, the fork's side once it runs. A comparison
    // that cannot be made again leaves the script alone: it is shown without it, and the banner says so.
    const compare = shared.compare !== undefined ? await sharedCompare(shared.compare, shared.def) : null;
    if (shared.compare !== undefined && !compare) showError(t("url.badCompare"), "bad-compare", "notice");
    if (scenarioById(shared.base)) state.baseId = shared.base;
    setEditorText(shared.def);
    state.compare = compare;
    useCustom(shared.def, { hash: location.hash, origin: readOrigin(shared.origin) });
    return true;
  }
  const wanted = params.get("scenario");
  if (wanted !== null && !scenarioById(wanted)) {
    showError(t("url.unknownScenario", { id: wanted, list: SCENARIOS.map((s) => s.id).join(", ") }), "unknown-scenario");
    return false;
  }
  const saved = load(CUSTOM_KEY);
  const problems = saved === null ? [] : saved && typeof saved === "object" ? validateDefinition(saved.def) : [{ path: "$", code: "object" }];
  const valid = saved !== null && problems.length === 0;
  if (saved !== null && !valid) dropSaved(defError(problems[0]));
  if (valid) {
    state.custom = saved.def;
    state.origin = readOrigin(saved.origin);
    if (scenarioById(saved.base)) state.baseId = saved.base;
  }
  if (wanted || !valid || embed.on) return chooseScenario(wanted ?? "readme"), true;
  try {
    state.scenarioId = "custom";
    state.def = cloneDef(saved.def);
    fillScenarioSelect();
    setEditorText(state.def);
    newRun();
  } catch (err) {
    // The page stays usable: the script goes, the README scenario takes its place.
    dropSaved(err instanceof Error ? err.message : String(err));
    chooseScenario("readme");
    return true;
  }
  shareCustom(state.custom);
  return true;
}

/** Forget the script saved on an earlier visit that cannot be loaded, and say so (the page goes on without it). */
function dropSaved(error) {
  forget(CUSTOM_KEY);
  state.custom = null;
  state.origin = null;
  showError(t("storage.dropped", { error }), "dropped-script", "notice");
}

/** Where the URL says the run was (`step`, `wait`, `release`, `abort`; see restoreRun). `autoplay=1` runs it at the
 * chosen speed, gates opening in the script's release order. */
function resumeFromUrl() {
  const step = params.get("step");
  const release = params.get("release");
  const order = release !== null ? readRelease(release) : null;
  const abort = readAbort(params.get("abort"));
  if (step === "end" || /^[1-9]\d*$/.test(step ?? "")) restoreRun({ step: step === "end" ? "end" : Number(step), wait: params.get("wait") === "tools", order, abort });
  else if (embed.autoplay) {
    newRun({ autoRelease: order ?? state.def.release ?? null });
    state.run.run();
  }
}

/**
 * Make the run again to a point (runPoint's, or an address's): `step` "end" runs it out; `step` n holds it right
 * after event n or, with `wait`, lets the loop go on past it so that its tools wait at their gates. Gates open in
 * `order` (the gates the learner opened, in order), all of it; without one, in the script's own `release` order,
 * which `step=end` follows to the end but `step` n only on the way to event n: from there every gate that waits is
 * the learner's to release. A run gets there by its order alone: an order it cannot follow is said in the status.
 * `abort` ({seq, tools}, readAbort's) aborts it by hand on the way, where the learner did: right after event seq, or
 * once the loop went on past it and its tools wait at their gates.
 */
function restoreRun({ step, wait = false, order = null, abort = null }) {
  const autoRelease = order ?? state.def.release ?? null;
  if (step === "end") {
    newRun({ autoRelease, followOrder: true, abortAt: abort });
    state.run.setPace(0);
    state.run.run();
  } else {
    newRun({ autoRelease, followOrder: true, releaseToTarget: order === null, abortAt: abort });
    state.run.stepTo(step, { wait });
  }
}

async function main() {
  setLang(initialLang());
  applyLang();
  const embedError = applyEmbed(embed);
  fillScenarioSelect();
  wire();
  loopCheck = wireLoopCheck({ onStep: stepThroughLoop });
  await wireLive({ onSaved: () => state.api && newRun() });
  const banner = $("banner");
  banner.textContent = t("loading");
  try {
    const api = await import(PKG_URL);
    await api.default();
    state.api = api;
  } catch (err) {
    banner.textContent = t("load.failed", { url: PKG_URL, error: err instanceof Error ? err.message : String(err) });
    banner.dataset.state = "error";
    return;
  }
  banner.hidden = true;
  if (embedError) {
    showError(t(embedError.key, embedError.vars), "bad-panels");
    return;
  }
  if (!(await startScript())) return;
  document.body.dataset.ready = "true";
  resumeFromUrl();
}

main();
