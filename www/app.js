// The playground page: loads the tiny-pi wasm package, runs a scenario with the real runAgentLoop (runner.js)
// and keeps the timeline, transcript, pairing, tools and trace views in step with it.
// URL parameters (for lessons that embed the page): ?scenario=<id>&lang=zh|en&speed=instant|normal|slow

import { t, setLang, getLang, applyI18n, detectLang } from "./i18n.js";
import { SCENARIOS, scenarioById, cloneDef, validateDefinition, parseTranscript, jsonErrorIndex } from "./scenarios.js";
import { Run } from "./runner.js";
import * as views from "./views.js";

// Relative to this file, so it resolves to /pkg/web/ both when www/ is served at / (scripts/serve.mjs)
// and when the repository root is served as is (/www/ beside /pkg/).
const PKG_URL = new URL("../pkg/web/tiny_pi.js", import.meta.url).href;
const SPEEDS = { instant: 0, normal: 350, slow: 1000 };
const params = new URLSearchParams(location.search);

const $ = (id) => document.querySelector(`[data-testid="${id}"]`);

const state = {
  api: null,
  scenarioId: "readme", // a scenario id, or "custom" for an edited/imported script
  def: null, // the definition the next run uses
  run: null,
  selectedSeq: null,
  checked: null, // a pasted transcript being shown instead of the run: {messages}
  speed: SPEEDS[params.get("speed")] !== undefined ? params.get("speed") : "normal",
};

// --- language --------------------------------------------------------------------------------------

function initialLang() {
  const fromUrl = params.get("lang");
  if (fromUrl === "zh" || fromUrl === "en") return fromUrl;
  try {
    const saved = localStorage.getItem("tiny-pi-lang");
    if (saved === "zh" || saved === "en") return saved;
  } catch {
    // storage may be blocked in an embedded frame; fall back to the browser's language
  }
  return detectLang(navigator.languages?.length ? navigator.languages : [navigator.language]);
}

function switchLang() {
  setLang(getLang() === "zh" ? "en" : "zh");
  try {
    localStorage.setItem("tiny-pi-lang", getLang());
  } catch {
    // not persisted; the switch still applies to this page
  }
  fillScenarioSelect();
  applyI18n();
  render();
}

function scenarioTitle(s) {
  return s.title[getLang()] ?? s.title.en;
}

function fillScenarioSelect() {
  const select = $("scenario-select");
  const options = SCENARIOS.map((s) => views.h("option", { value: s.id }, scenarioTitle(s)));
  if (state.scenarioId === "custom") options.push(views.h("option", { value: "custom" }, t("scenario.custom")));
  select.replaceChildren(...options);
  select.value = state.scenarioId;
}

// --- runs ------------------------------------------------------------------------------------------

function newRun() {
  state.run?.dispose();
  state.selectedSeq = null;
  state.checked = null;
  state.run = new Run(state.api, cloneDef(state.def), { onUpdate: render, pace: SPEEDS[state.speed] });
  render();
}

function chooseScenario(id) {
  const scenario = scenarioById(id) ?? SCENARIOS[0];
  state.scenarioId = scenario.id;
  state.def = cloneDef(scenario.def);
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
    render();
  }
  return true;
}

// --- rendering -------------------------------------------------------------------------------------

function statusText(run) {
  if (state.checked) return t("status.checked");
  switch (run.status) {
    case "ready":
      return t("status.ready");
    case "done":
      return t("status.done", { reason: run.reason, steps: run.steps });
    case "failed":
      return t("status.failed", { error: run.failure });
    default: {
      if (run.held && run.mode === "step") {
        const rec = run.events[run.hold.seq - 1];
        return t("status.held", { seq: rec.seq, type: rec.type });
      }
      const gated = run.execs.filter((x) => x.state === "gated");
      if (gated.length) return t("status.waitingTools", { names: gated.map((x) => `${x.name}(${x.callId})`).join(", ") });
      return run.mode === "run" ? t("status.running") : t("status.waiting");
    }
  }
}

function safely(fn) {
  try {
    return fn();
  } catch (err) {
    return { error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
  }
}

function render() {
  const run = state.run;
  if (!run) return;
  const { api } = state;
  const checked = state.checked;
  const messages = checked ? checked.messages : run.transcript;
  const keys = views.messageKeys(messages, checked ? messages.length : run.def.messages.length);
  const records = checked ? [] : run.events;
  const selected = records.find((r) => r.seq === state.selectedSeq);
  const highlight = new Set(selected ? [views.eventKey(selected)].filter(Boolean) : []);

  // Controls
  const active = run.status === "active";
  $("run").disabled = !checked && !(run.status === "ready" || (active && (run.mode === "step" || run.held)));
  $("step").disabled = !checked && !(run.status === "ready" || active);
  $("pause").disabled = checked || !(active && run.mode === "run");
  $("reset").disabled = false;
  $("abort").disabled = checked || !active || run.controller.signal.aborted;

  // Scenario description and counters
  const scenario = scenarioById(state.scenarioId);
  $("about").textContent = checked ? t("status.checked") : scenario ? scenario.about[getLang()] : t("scenario.custom");
  $("expected").textContent = scenario && !checked ? t("expected.line", scenario.expect) : "–";
  $("requests").textContent = String(run.requests);
  $("executions").textContent = String(run.executions);
  $("steps").textContent = run.steps ?? "–";
  $("reason").textContent = run.reason ?? "–";
  for (const id of ["requests", "executions", "steps", "reason"]) {
    const node = $(id);
    if (scenario && run.status === "done" && !checked) node.dataset.match = String(String(scenario.expect[id]) === node.textContent);
    else delete node.dataset.match;
  }
  $("status").textContent = statusText(run);
  const notes = [];
  if (!checked && run.result?.error) notes.push(t("result.error", { error: run.result.error }));
  if (!checked && run.result?.observerError) notes.push(t("result.observerError", { error: run.result.observerError }));
  if (!checked && run.mismatch) notes.push(t("result.mismatch"));
  $("result-note").textContent = notes.join(" · ");

  // The three views
  views.renderTimeline($("timeline"), records, {
    heldSeq: run.held ? run.hold.seq : null,
    selectedSeq: state.selectedSeq,
    onSelect: (seq) => {
      state.selectedSeq = state.selectedSeq === seq ? null : seq;
      render();
    },
  });
  views.renderTranscript($("transcript"), messages, keys, { highlight });
  const validation = safely(() => api.validateTranscript(messages));
  views.renderPairing($("pairing"), messages, keys, {
    execs: checked ? [] : run.execs,
    active: !checked && (active || run.status === "ready"),
    problems: validation.problems ?? [],
    highlight,
  });
  views.renderFindings($("findings"), validation, { live: !checked && active });
  views.renderTools($("tools"), checked ? [] : run.execs, (exec) => run.release(exec));
  $("toolbar").hidden = checked || run.execs.length === 0;

  // Chapter 00: the milestone trace of whatever transcript is on screen
  const trace =
    messages.length === 0
      ? null
      : safely(() => {
          const records = api.prologueTrace(messages);
          return { records, formatted: api.formatTrace(records), validation: api.validateTrace(records) };
        });
  views.renderTrace($("trace"), trace);
}

// --- script editor ---------------------------------------------------------------------------------

function setEditorText(def) {
  $("editor").value = JSON.stringify(def, null, 2);
  $("editor-error").textContent = "";
  delete $("editor-error").dataset.state;
}

function lineCol(source, position) {
  const before = source.slice(0, position).split("\n");
  return { line: before.length, col: before[before.length - 1].length + 1 };
}

/** Parse and check the editor; shows the first problem under it. Returns the definition or null. */
function readEditor() {
  const source = $("editor").value;
  const out = $("editor-error");
  let def;
  try {
    def = JSON.parse(source);
  } catch (err) {
    const at = jsonErrorIndex(source);
    out.textContent = at !== null ? t("editor.parseError", { ...lineCol(source, at), error: err.message }) : t("editor.parseErrorNoPos", { error: err.message });
    out.dataset.state = "error";
    return null;
  }
  const errors = validateDefinition(def);
  if (errors.length) {
    out.textContent = errors.map((e) => t("editor.schemaError", e)).join("\n");
    out.dataset.state = "error";
    return null;
  }
  out.textContent = t("editor.ok");
  out.dataset.state = "ok";
  return { executor: "registry", maxSteps: 32, abort: "none", ...def };
}

function useCustom(def) {
  state.scenarioId = "custom";
  state.def = def;
  fillScenarioSelect();
  newRun();
}

// --- pasted transcripts, import and export ------------------------------------------------------

function readPasted() {
  const out = $("check-error");
  try {
    const messages = parseTranscript($("check-input").value);
    out.textContent = "";
    return messages;
  } catch (err) {
    out.textContent = err.notArray ? t("check.notArray") : t("check.parseError", { line: err.line ?? 1, error: err.message });
    return null;
  }
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

function currentMessages() {
  return state.checked ? state.checked.messages : state.run.transcript;
}

// --- wiring ----------------------------------------------------------------------------------------

function wire() {
  $("lang-toggle").addEventListener("click", switchLang);
  $("scenario-select").addEventListener("change", (ev) => {
    if (ev.target.value !== "custom") chooseScenario(ev.target.value);
  });
  for (const name of Object.keys(actions)) $(name).addEventListener("click", actions[name]);
  $("speed").value = state.speed;
  $("speed").addEventListener("change", (ev) => {
    state.speed = ev.target.value;
    state.run?.setPace(SPEEDS[state.speed]);
  });

  $("editor").addEventListener("input", () => readEditor());
  $("editor-apply").addEventListener("click", () => {
    const def = readEditor();
    if (!def) return;
    useCustom(def);
    state.run.run();
  });
  $("editor-revert").addEventListener("click", () => setEditorText(state.def));

  $("check-button").addEventListener("click", () => {
    const messages = readPasted();
    if (!messages) return;
    state.checked = { messages };
    state.selectedSeq = null;
    render();
  });
  $("import-button").addEventListener("click", () => {
    const messages = readPasted();
    if (!messages) return;
    const def = { ...cloneDef(state.def), messages };
    setEditorText(def);
    useCustom(def);
    $("check-error").textContent = t("check.imported", { n: messages.length });
  });
  $("export-transcript").addEventListener("click", () => {
    const text = currentMessages().map((m) => JSON.stringify(m)).join("\n");
    download("transcript.jsonl", `${text}\n`, "application/x-ndjson");
  });
  $("export-events").addEventListener("click", () => {
    download("events.json", `${JSON.stringify(state.run.events.map((r) => r.event), null, 2)}\n`, "application/json");
  });

  // Keyboard: space = step, r = run, Esc = pause; never while typing in a field.
  const typing = (target) => target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target) || !state.run) return;
    if (ev.key === " ") {
      ev.preventDefault(); // no page scroll, and no click of a focused button on top of the step
      actions.step();
    } else if (ev.key === "r" || ev.key === "R") actions.run();
    else if (ev.key === "Escape") actions.pause();
  });
  document.addEventListener("keyup", (ev) => {
    if (ev.key === " " && ev.target instanceof HTMLButtonElement) ev.preventDefault();
  });
}

async function main() {
  setLang(initialLang());
  applyI18n();
  fillScenarioSelect();
  wire();
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
  document.body.dataset.ready = "true";
  chooseScenario(params.get("scenario") ?? "readme");
}

main();
