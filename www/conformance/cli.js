#!/usr/bin/env node
// tiny-pi-conformance: checks any JS module that exports runAgentLoop(options) against the conformance cases
// (cases.json, the playground's scenarios with their expected events, transcript, reason and steps).
//
//   npx tiny-pi-conformance ./my-loop.mjs [--case <id>]... [--timeout <ms>] [--lang zh|en] [--json]
//
// Prints each case as PASS or FAIL: a failing case leads with the rule of chapter 07 it broke (one sentence, with the
// chapter's step), names the playground scenario to step through, then gives the evidence (the first differing event,
// a diff of the transcript). Ends with `N passed, N failed`; exits 1 when a required case fails (an optional one, the
// chapter's repeated call id, only gets a note), 2 when the module cannot be checked at all. The module runs
// in a worker thread: a case that does not settle within the time limit fails, and a loop stuck in synchronous
// code is stopped (the worker is terminated) and the remaining cases go on in a fresh one.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { DEFAULT_TIME_LIMIT_MS, formatCase, formatSummary, stepName, summarize, superviseCases } from "./check.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));

const USAGE = `usage: tiny-pi-conformance <module> [--case <id>]... [--timeout <ms>] [--lang zh|en] [--json]

  <module>        a JS module (ESM or CommonJS) exporting runAgentLoop(options), or a default export that is it
  --case <id>     check only this case (repeatable); --list prints the ids
  --timeout <ms>  time limit of one case (default ${DEFAULT_TIME_LIMIT_MS})
  --lang zh|en    the language of the report (default: zh when LANG starts with zh, else en)
  --json          print the reports as JSON instead of text`;

function parseArgs(argv) {
  const args = { cases: [], timeLimitMs: DEFAULT_TIME_LIMIT_MS, json: false, list: false, module: null, lang: (process.env.LANG ?? "").startsWith("zh") ? "zh" : "en" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--case") args.cases.push(argv[++i]);
    else if (a === "--timeout") args.timeLimitMs = Number(argv[++i]);
    else if (a === "--json") args.json = true;
    else if (a === "--lang") args.lang = argv[++i];
    else if (a === "--list") args.list = true;
    else if (a === "--help" || a === "-h") args.help = true;
    else if (a.startsWith("--")) throw new Error(`unknown option ${a}`);
    else if (args.module === null) args.module = a;
    else throw new Error(`one module at a time (got ${args.module} and ${a})`);
  }
  if (!(Number.isFinite(args.timeLimitMs) && args.timeLimitMs > 0)) throw new Error("--timeout must be a positive number of milliseconds");
  if (args.lang !== "zh" && args.lang !== "en") throw new Error("--lang must be zh or en");
  return args;
}

/** A worker thread on `cases` (superviseCases' spawn). */
function spawnWorker(modulePath, timeLimitMs) {
  return (cases, onMessage) => {
    const worker = new Worker(path.join(HERE, "node-worker.js"), { workerData: { modulePath, cases, timeLimitMs } });
    worker.on("message", onMessage);
    worker.on("error", (err) => onMessage({ type: "crash", error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) }));
    worker.on("exit", (code) => onMessage({ type: "crash", error: `the worker exited (${code})` }));
    return { terminate: () => worker.terminate() };
  };
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`tiny-pi-conformance: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  const { cases: all } = JSON.parse(fs.readFileSync(path.join(HERE, "cases.json"), "utf8"));
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  if (args.list) {
    for (const c of all) console.log(`${c.id}\t${stepName(c.step, args.lang)}${c.optional ? "\t(optional)" : ""}`);
    return 0;
  }
  if (!args.module) {
    console.error(`tiny-pi-conformance: which module? \n\n${USAGE}`);
    return 2;
  }
  const unknown = args.cases.filter((id) => !all.some((c) => c.id === id));
  if (unknown.length) {
    console.error(`tiny-pi-conformance: no case ${unknown.join(", ")} (--list shows them)`);
    return 2;
  }
  const modulePath = path.resolve(args.module);
  if (!fs.existsSync(modulePath)) {
    console.error(`tiny-pi-conformance: ${modulePath} does not exist`);
    return 2;
  }
  const todo = args.cases.length ? all.filter((c) => args.cases.includes(c.id)) : all;
  if (!args.json) console.log(`tiny-pi-conformance: ${path.relative(process.cwd(), modulePath) || modulePath}, ${todo.length} case(s), ${args.timeLimitMs} ms each\n`);
  const outcome = await superviseCases(spawnWorker(modulePath, args.timeLimitMs), todo, {
    timeLimitMs: args.timeLimitMs,
    onCase: (report) => args.json || console.log(formatCase(report, { lang: args.lang })),
  });
  if (outcome.loadError) {
    console.error(`tiny-pi-conformance: cannot check ${modulePath}: ${outcome.loadError}`);
    return 2;
  }
  const { reports } = outcome;
  const summary = summarize(reports);
  if (args.json) console.log(JSON.stringify({ ...summary, reports }, null, 2));
  else console.log(`\n${formatSummary(summary, { lang: args.lang })}`);
  return summary.failed === 0 && reports.length > 0 ? 0 : 1;
}

process.exitCode = await main();
