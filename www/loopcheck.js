// "Check your own loop": the learner picks their loop, one file or several (or a folder), exporting
// runAgentLoop(options); it is checked against the conformance cases (the same as `npx tiny-pi-conformance`) in a
// sandboxed frame (sandbox.html), never in this page, whose CSP stays as strict as it is. Several files (or one in
// TypeScript) are bundled into one module first, in this page, by esbuild-wasm (bundling reads the code, it does not
// run it). The report leads each failing case with the rule it broke, in the page's language, links its scenario, and
// lets the learner step through what their loop did in the page's views.

import { t, getLang } from "./i18n.js";
import { CASES } from "./scenarios.js";
import { DEFAULT_TIME_LIMIT_MS, evidenceText, ruleText, stepName, summarize } from "./conformance/check.js";
import { h } from "./views.js";

const CHECK_URL = new URL("./conformance/check.js", import.meta.url);
const SANDBOX_URL = new URL("./sandbox.html", import.meta.url);
const ESBUILD_URL = new URL("./vendor/esbuild-wasm/browser.min.js", import.meta.url);
const ESBUILD_WASM_URL = new URL("./vendor/esbuild-wasm/esbuild.wasm", import.meta.url);
const $ = (id) => document.querySelector(`[data-testid="${id}"]`);

/**
 * Checks a loop module (its source text) in a fresh sandboxed frame. `onCase(report)` hears each case as it ends;
 * each report carries what the loop did (`run`), to step through. Resolves to {passed, failed, optionalFailed,
 * reports} or {loadError}.
 */
export async function checkLoopSource(source, { timeLimitMs = DEFAULT_TIME_LIMIT_MS, onCase } = {}) {
  const check = await (await fetch(CHECK_URL)).text();
  return new Promise((resolve) => {
    const frame = document.createElement("iframe");
    frame.sandbox = "allow-scripts";
    frame.hidden = true;
    frame.title = "sandbox";
    frame.dataset.testid = "loop-sandbox";
    const channel = new MessageChannel();
    channel.port1.onmessage = ({ data }) => {
      if (data.type === "case") onCase?.(data.report);
      else if (data.type === "result") {
        channel.port1.close();
        frame.remove();
        resolve(data.result);
      }
    };
    frame.addEventListener("load", () => frame.contentWindow.postMessage({ check, loop: source, cases: CASES, timeLimitMs, record: true }, "*", [channel.port2]), { once: true });
    frame.src = SANDBOX_URL.href;
    document.body.append(frame);
  });
}

// --- several files: one module ---------------------------------------------------------------------------

/** A relative import of a file of the learner's (`./x`, `../y/z.js`), not a package. */
const isRelative = (spec) => spec.startsWith("./") || spec.startsWith("../");
/** The import specifiers of a module's text (static and dynamic), good enough to tell whether it needs bundling. */
export function importsOf(source) {
  const specs = [];
  for (const m of source.matchAll(/(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|(?:^|[\s;])import\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm)) specs.push(m[1] ?? m[2] ?? m[3]);
  return specs;
}

function normalize(path) {
  const out = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return out.join("/");
}

const dirOf = (path) => path.split("/").slice(0, -1).join("/");

/** The file a relative import names, the way Node and TypeScript find it: as written, with an extension, a `.js`
 * that stands for a `.ts`, or a folder's index. */
export function resolveIn(files, from, spec) {
  const base = normalize(`${dirOf(from)}/${spec}`);
  const candidates = [base, ...["ts", "js", "mjs", "mts", "tsx", "jsx"].map((x) => `${base}.${x}`), base.replace(/\.(m?)js$/, ".$1ts"), ...["index.ts", "index.js", "index.mjs"].map((x) => `${base}/${x}`)];
  return candidates.find((c) => files.has(c)) ?? null;
}

/** The file that exports runAgentLoop: the only one that does, or among several, the one named agent-loop. */
export function entryOf(files) {
  const exporting = [...files.keys()].filter((p) => /export\s+(async\s+)?function\s+runAgentLoop\b|export\s+(const|let|var)\s+runAgentLoop\b|export\s*\{[^}]*\brunAgentLoop\b[^}]*\}|export\s+default\b/.test(files.get(p)));
  if (exporting.length === 1) return exporting[0];
  return exporting.find((p) => /(^|\/)agent-loop\.[cm]?[jt]s$/.test(p)) ?? exporting[0] ?? null;
}

class LoopFilesError extends Error {}

/**
 * The learner's files as one module's text. One JavaScript file that imports nothing of its own is used as it is;
 * anything else (several files, TypeScript, a file that imports another) is bundled by esbuild-wasm, each relative
 * import looked up among the files picked. A file that imports one not picked, or a package, is an error that says
 * exactly what to do.
 */
export async function moduleOf(picked) {
  const files = new Map(picked.map((f) => [normalize(f.path), f.text]));
  const entry = entryOf(files);
  if (!entry) throw new LoopFilesError(t("loop.noEntry", { files: [...files.keys()].join(", ") }));
  const single = files.size === 1 && /\.[cm]?js$/.test(entry) && !importsOf(files.get(entry)).some(isRelative);
  if (single) return { source: files.get(entry), entry, bundled: false };
  for (const [path, text] of files)
    for (const spec of importsOf(text)) if (isRelative(spec) && !resolveIn(files, path, spec)) throw new LoopFilesError(t("loop.missingImport", { file: path, spec }));
  const esbuild = await loadEsbuild();
  const plugin = {
    name: "learner-files",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point") return { path: entry, namespace: "learner" };
        if (!isRelative(args.path)) return { errors: [{ text: t("loop.packageImport", { file: args.importer, spec: args.path }) }] };
        const found = resolveIn(files, args.importer, args.path);
        return found ? { path: found, namespace: "learner" } : { errors: [{ text: t("loop.missingImport", { file: args.importer, spec: args.path }) }] };
      });
      build.onLoad({ filter: /.*/, namespace: "learner" }, (args) => ({ contents: files.get(args.path), loader: /\.m?tsx?$/.test(args.path) ? "ts" : "js" }));
    },
  };
  try {
    const out = await esbuild.build({ entryPoints: [entry], bundle: true, write: false, format: "esm", platform: "neutral", target: "es2022", plugins: [plugin], logLevel: "silent" });
    return { source: out.outputFiles[0].text, entry, bundled: true };
  } catch (err) {
    const first = err?.errors?.[0];
    throw new LoopFilesError(first ? `${first.location ? `${first.location.file}:${first.location.line}: ` : ""}${first.text}` : String(err?.message ?? err));
  }
}

let esbuildReady = null;
/** esbuild-wasm, started once, in this thread (no worker: the page's CSP allows no blob: worker). */
function loadEsbuild() {
  esbuildReady ??= import(ESBUILD_URL.href).then(async (esbuild) => {
    await esbuild.initialize({ wasmURL: ESBUILD_WASM_URL.href, worker: false });
    return esbuild;
  });
  return esbuildReady;
}

// --- the report ------------------------------------------------------------------------------------------

/**
 * The kit's reports as the page shows them: one item per case (`data-case`, `data-pass`, `data-optional`); a failing
 * case leads with the rule it broke (`kit-rule`, in the page's language, with its chapter step), then a link to its
 * scenario (`kit-scenario`) and a button to step through what the learner's loop did (`kit-step`), then the
 * evidence, folded.
 */
export function renderKitReport(box, reports, { onStep }) {
  const lang = getLang();
  const items = reports.map((r) => {
    const kase = CASES.find((c) => c.id === r.id);
    const title = kase?.title?.[lang] ?? r.id;
    const verdict = r.pass ? t("kit.pass") : r.optional ? t("kit.optionalFail") : t("kit.fail");
    const head = h("p", { class: "kit-head" }, h("span", { class: "verdict" }, verdict), " ", h("code", {}, r.id), " ", title, r.step ? h("span", { class: "kit-step-name" }, ` · ${stepName(r.step, lang)}`) : null);
    const step = h("button", { type: "button", class: "link", "data-testid": "kit-step", "data-case": r.id, onclick: () => onStep(r) }, t("kit.stepThrough"));
    const link = h("a", { "data-testid": "kit-scenario", href: `index.html?scenario=${encodeURIComponent(r.id)}&lang=${lang}`, target: "_blank", rel: "noopener" }, t("kit.scenario", { id: r.id }));
    if (r.pass) return h("li", { "data-case": r.id, "data-pass": "true", "data-optional": String(r.optional === true) }, head, h("p", { class: "kit-links" }, step));
    const evidence = (r.evidence ?? []).map((e) => h("li", {}, evidenceText(e, lang)));
    const details = [];
    if (r.firstEvent) details.push(h("p", {}, t("kit.firstEvent", { n: r.firstEvent.index + 1 })), h("pre", { tabindex: "0" }, `${t("kit.expected")} ${JSON.stringify(r.firstEvent.expected)}\n${t("kit.actual")} ${r.firstEvent.actual === undefined ? "–" : JSON.stringify(r.firstEvent.actual)}`));
    if (r.transcriptDiff) details.push(h("p", {}, t("kit.diff")), h("pre", { tabindex: "0" }, r.transcriptDiff.join("\n")));
    return h(
      "li",
      { "data-case": r.id, "data-pass": "false", "data-optional": String(r.optional === true), "data-rule": r.rule?.id },
      head,
      h("p", { class: "kit-rule", "data-testid": "kit-rule", "data-step": r.rule?.step ?? "" }, h("strong", {}, r.optional ? t("kit.ruleOptional") : t("kit.rule")), lang === "zh" ? "" : " ", ruleText(r.rule, lang), r.rule?.step && r.rule.step !== r.step ? (lang === "zh" ? `（${stepName(r.rule.step, lang)}）` : ` (${stepName(r.rule.step, lang)})`) : ""),
      h("p", { class: "kit-links" }, link, " · ", step),
      h("details", { class: "kit-evidence" }, h("summary", {}, t("kit.evidence", { n: evidence.length })), h("ul", {}, ...evidence), ...details),
    );
  });
  box.replaceChildren(h("ul", { class: "kit-cases", "data-testid": "kit-cases" }, ...items));
}

/**
 * The outcome line: `N passed, N failed`, and the optional cases that failed: the loop passes all the same only when
 * every required case passed; otherwise the note names the required cases that failed.
 */
export function summaryText(result) {
  const { passed, failed, optionalFailed, requiredFailed } = summarize(result.reports);
  const line = t("kit.summary", { passed, failed });
  if (!optionalFailed.length) return line;
  const ids = optionalFailed.join(", ");
  const note = requiredFailed.length ? t("kit.optionalNoteFailing", { ids, required: requiredFailed.join(", ") }) : t("kit.optionalNote", { ids });
  return `${line}${gap()}${note}`;
}

/** What goes between two sentences, or after a label: nothing in Chinese (full-width punctuation ends them), a space in English. */
const gap = () => (getLang() === "zh" ? "" : " ");

/** Reads the picked files as {path, text}: a folder's files keep their paths inside it. */
async function readPicked(list) {
  const wanted = [...list].filter((f) => /\.(m?[jt]s|cjs)$/.test(f.name) && !/(^|\/)node_modules\//.test(f.webkitRelativePath ?? ""));
  return Promise.all(wanted.map(async (f) => ({ path: f.webkitRelativePath || f.name, text: await f.text() })));
}

/** Wires the panel; `onStep(report, name)` steps through what the loop did on one case, in the page's views. */
export function wireLoopCheck({ onStep = () => {} } = {}) {
  const file = $("loop-file");
  const folder = $("loop-folder");
  const button = $("loop-check");
  const out = $("loop-report");
  const status = $("loop-status");
  let picked = null;
  let last = null; // the last run's reports, re-rendered when the language changes
  for (const input of [file, folder])
    input.addEventListener("change", () => {
      picked = input.files?.length ? input.files : null;
      (input === file ? folder : file).value = "";
      button.disabled = !picked;
    });
  const show = (reports, name) => renderKitReport(out, reports, { onStep: (report) => onStep(report, name) });
  button.addEventListener("click", async () => {
    if (!picked) return;
    button.disabled = true;
    out.replaceChildren();
    last = null;
    status.dataset.state = "running";
    const files = await readPicked(picked);
    const name = files.length === 1 ? files[0].path : t("loop.files", { n: files.length });
    let module;
    try {
      if (!files.length) throw new LoopFilesError(t("loop.noFiles"));
      status.textContent = t("loop.preparing", { name });
      module = await moduleOf(files);
    } catch (err) {
      button.disabled = false;
      status.dataset.state = "error";
      status.textContent = t("loop.loadError", { error: err instanceof LoopFilesError ? err.message : String(err?.message ?? err) });
      status.focus();
      return;
    }
    status.textContent = t(module.bundled ? "loop.runningBundled" : "loop.running", { name, n: CASES.length, entry: module.entry });
    const reports = [];
    const result = await checkLoopSource(module.source, {
      onCase: (report) => {
        reports.push(report);
        show(reports, name);
      },
    });
    button.disabled = false;
    if (result.loadError) {
      status.dataset.state = "error";
      status.textContent = t("loop.loadError", { error: result.loadError });
      status.focus();
      return;
    }
    last = { reports: result.reports, name, result };
    show(result.reports, name);
    status.dataset.state = result.failed ? "failed" : "passed";
    status.textContent = `${t("loop.done", { name })}${gap()}${summaryText(result)}`;
    // Not a live region (the page has one, the run's status): the outcome takes the focus instead.
    status.focus();
  });
  return {
    /** The language changed: the report is said again in it. */
    relabel() {
      if (!last) return;
      show(last.reports, last.name);
      status.textContent = `${t("loop.done", { name: last.name })}${gap()}${summaryText(last.result)}`;
    },
  };
}
