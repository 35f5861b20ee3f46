#!/usr/bin/env node
// Issue 4 benchmark: pi-agent-core's agentLoop vs a hand-written floor loop vs tiny-pi's runAgentLoop,
// same scripted workload, one process, legs interleaved. See bench/README.md.
//
//   node bench/run.mjs                  full run (N = 50, 200, 1000; 7 reps; 10,000-run memory check)
//   node bench/run.mjs --quick          smoke run (also BENCH_QUICK=1): small N, 3 reps, 1,000-run memory check
//   node bench/run.mjs --write-results  also rewrite the figures in bench/RESULTS.md
//   node bench/run.mjs --n=50,200 --reps=5   other sizes / repetitions
//   node bench/run.mjs --workload=thinking    one workload (full, compact, thinking; default all three)
//   node bench/run.mjs --timing-only          the timing tables alone (no cost split, prompt, bundle, memory or feel steps)
//   node bench/run.mjs --legs=tiny,parts,again   only these legs beside pi (again = the tiny leg twice: the noise floor)
//   BENCH_BASE=/other/pkg/node/tiny_pi.js node bench/run.mjs --legs=tiny,base --timing-only --split   two builds, A/B, with the cost split
//   node bench/run.mjs --profile=tiny [--workload=full] [--n=1000] [--reps=5]
//                                       one leg alone under the CPU profiler -> bench/out/prof/tiny-full-n1000.cpuprofile
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import zlib from "node:zlib";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..");
const OUT = path.join(HERE, "out");

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const m = /^--([^=]+)(?:=(.*))?$/.exec(a);
  if (!m) fail("arguments", `unknown argument ${a}`, "see the usage at the top of bench/run.mjs");
  return [m[1], m[2] ?? true];
}));
const QUICK = !!args.quick || process.env.BENCH_QUICK === "1";
const PROFILE = args.profile;
// Only the timing tables (no cost split, bundle or memory phase): for iterating on speed.
const TIMING_ONLY = !!args["timing-only"];
if (QUICK && args["write-results"]) fail("write-results", "quick-mode figures are not results", "run without --quick");
if (TIMING_ONLY && args["write-results"]) fail("write-results", "a timing-only run has no figures for the other targets", "run without --timing-only");

// Heap figures need global.gc: re-run this script under --expose-gc (keeping any other node flags).
if (typeof globalThis.gc !== "function" && !PROFILE) {
  const r = spawnSync(process.execPath, ["--expose-gc", ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit" });
  process.exit(r.status ?? 1);
}

function fail(step, what, todo) {
  console.error(`bench: ${step} failed: ${what}\n  -> ${todo}`);
  process.exit(1);
}

// --- loading the three implementations -----------------------------------------------------------

// The wasm-bindgen nodejs glue instantiates synchronously; keep the instance so its memory can be read
// even if the glue does not expose `__wasm`.
const wasmInstances = [];
{
  const Original = WebAssembly.Instance;
  const Capturing = function Instance(module, imports) {
    const instance = new Original(module, imports);
    wasmInstances.push(instance);
    return instance;
  };
  Capturing.prototype = Original.prototype;
  WebAssembly.Instance = Capturing;
}

let piAi, piCore;
try {
  piAi = await import("@mariozechner/pi-ai");
  piCore = await import("@mariozechner/pi-agent-core");
} catch (err) {
  fail("loading pi-agent-core", err.message, "run `npm install` at the repository root (devDependencies @mariozechner/pi-ai and pi-agent-core 0.73.1)");
}
const { Script, WORKLOADS, toolSpecs, SYSTEM_PROMPT, userMessage, transcriptShape, expectedMessageCount, loopEventCount } =
  await import("./workload.mjs");
const { floorLoop, FloorTools } = await import("./floor-loop.mjs");

const { loadTiny, PI_MODEL } = await import("./legs.mjs");
const tiny = await loadTiny().catch((err) => fail("loading tiny-pi", err.message, "rebuild with `npm run build`"));
// BENCH_BASE=/path/to/tiny_pi.js: another build (main's, or one with a step switched off) timed as one more leg,
// `base`, interleaved with the others in this process: a two-build A/B without a second process's noise.
const base = process.env.BENCH_BASE
  ? await import(pathToFileURL(path.resolve(process.env.BENCH_BASE)).href).then((m) => ({ mod: m.runAgentLoop ? m : m.default, via: `BENCH_BASE=${process.env.BENCH_BASE}` }))
  : null;
const wasmMemory = () => {
  const exp = tiny?.mod.__wasm ?? wasmInstances.at(-1)?.exports;
  return exp?.memory instanceof WebAssembly.Memory ? exp.memory : null;
};

// --- the three legs ------------------------------------------------------------------------------
// Each leg: run(turns, workload, shape?) -> { messages, events }. Tools and registries are built once per
// workload, as an app would build them once.


const setups = new Map();
/** The tools of each leg and pi's config, for one workload (made on first use, then kept). */
function setup(workload) {
  let s = setups.get(workload);
  if (s) return s;
  const specs = toolSpecs(workload);
  const piTools = specs.map((t) => ({
    name: t.name, label: t.name, description: t.description, parameters: t.parameters,
    execute: async (_id, params) => t.run(params),
  }));
  const floorTools = new FloorTools();
  for (const t of specs) floorTools.register({ name: t.name, description: t.description, parameters: t.parameters, execute: async (a) => t.run(a) });
  // A registry per build of tiny-pi (one build's registry is not another's).
  const registry = (build) => {
    if (!build) return undefined;
    const tools = new build.mod.ToolRegistry();
    for (const t of specs) tools.register({ name: t.name, description: t.description, parameters: t.parameters, execute: async (a) => t.run(a) });
    return tools;
  };
  s = { piTools, piConfig: { model: PI_MODEL, convertToLlm: workload.convertToLlm }, floorTools, tinyTools: registry(tiny), baseTools: registry(base) };
  setups.set(workload, s);
  return s;
}

const NOOP_HOOKS = { afterToolCall: () => undefined, prepareRequest: () => undefined };
// SPEC part three set but never triggered (issue 28, item 6): a budget no run reaches, a retry policy for errors
// that never come, compaction above any context (the core's own token estimate, as an app that gives none).
const { UNTRIGGERED_PARTS, partsCost, partsLines } = await import("./parts.mjs");
const LEGS = [
  {
    name: "pi",
    label: "pi-agent-core agentLoop",
    async run(turns, workload, shape) {
      const { piTools, piConfig } = setup(workload);
      const script = new Script(turns, workload, shape);
      const context = { systemPrompt: SYSTEM_PROMPT, messages: [], tools: piTools };
      const stream = piCore.agentLoop([userMessage()], context, piConfig, undefined, () => script.nextStream());
      let events = 0;
      for await (const _ of stream) events++;
      return { messages: await stream.result(), events };
    },
  },
  floorLeg("floor", "hand-written floor loop"),
  // The floor with SPEC §10's copies (bench/floor-loop.mjs, `copies`), only when --legs names it: what the
  // read-once rule and frozen objects cost in plain JS, against pi (floor10/pi).
  args.legs && String(args.legs).split(",").includes("floor10") &&
    floorLeg("floor10", "hand-written floor loop with SPEC §10's copies (read once, frozen)", true),
  tiny && tinyLeg("tiny", "tiny-pi runAgentLoop", tiny, "tinyTools"),
  // SPEC §7's hooks at their cheapest: an afterToolCall and a prepareRequest that return nothing, so each call
  // and each request crosses to JS once more (with its frozen context) and changes nothing.
  tiny && tinyLeg("hooks", "tiny-pi runAgentLoop with an afterToolCall and a prepareRequest that return nothing", tiny, "tinyTools", NOOP_HOOKS),
  tiny && tinyLeg("parts", "tiny-pi runAgentLoop with budget, retry and compaction set, never triggered", tiny, "tinyTools", UNTRIGGERED_PARTS),
  // The tiny leg once more, only when --legs names it: again/tiny is this run's noise floor for a ratio of two
  // tiny legs (what parts/tiny and hooks/tiny can resolve).
  tiny && args.legs && String(args.legs).split(",").includes("again") && tinyLeg("again", "tiny-pi runAgentLoop, the tiny leg again (A/A)", tiny, "tinyTools"),
  base && tinyLeg("base", `tiny-pi runAgentLoop, the build at ${process.env.BENCH_BASE}`, base, "baseTools"),
  // The same hooks on the other build: hooks/bhooks is the two builds' A/B of what the hooks cost.
  base && tinyLeg("bhooks", `tiny-pi runAgentLoop with the no-op hooks, the build at ${process.env.BENCH_BASE}`, base, "baseTools", NOOP_HOOKS),
].filter(Boolean).filter((l) => !args.legs || ["pi", ...String(args.legs).split(",")].includes(l.name));
const leg = (name) => LEGS.find((l) => l.name === name);
// The legs of the cost split, the collector's share and the memory phase: the loops themselves.
const LOOPS = LEGS.filter((l) => ["pi", "floor", "tiny"].includes(l.name));

/** A leg running the hand-written floor loop (`copies`: with SPEC §10's copies). */
function floorLeg(name, label, copies = false) {
  return {
    name,
    label,
    async run(turns, workload, shape) {
      const { floorTools } = setup(workload);
      const script = new Script(turns, workload, shape);
      let events = 0;
      const r = await floorLoop({
        context: { systemPrompt: SYSTEM_PROMPT, messages: [userMessage()] },
        model: { stream: () => script.nextStream() },
        tools: floorTools, maxSteps: turns + 1, onEvent: () => { events++; }, copies,
      });
      return { messages: r.messages, events, reason: r.reason, error: r.error };
    },
  };
}

/** A leg running `build`'s runAgentLoop with its registry (`setup(workload)[tools]`) and `options`. */
function tinyLeg(name, label, build, tools, options = {}) {
  return {
    name,
    label,
    async run(turns, workload, shape) {
      const registry = setup(workload)[tools];
      const script = new Script(turns, workload, shape);
      let events = 0;
      const r = await build.mod.runAgentLoop({
        context: { systemPrompt: SYSTEM_PROMPT, messages: [userMessage()] },
        model: { stream: () => script.nextStream() },
        tools: registry, maxSteps: turns + 1, onEvent: () => { events++; },
        ...options,
      });
      return { messages: r.messages, events, reason: r.reason, error: r.error };
    },
  };
}

// --- helpers -------------------------------------------------------------------------------------

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const fmt = (x, d = 2) => (x === undefined || x === null || Number.isNaN(x) ? "-" : x.toFixed(d));
const kb = (b) => (b / 1000).toFixed(1);
// Let wasm-bindgen's FinalizationRegistry callbacks run between collections (they run as tasks).
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await new Promise((r) => setImmediate(r));
  }
  globalThis.gc();
};
const step = (what) => {
  const t0 = Date.now();
  process.stdout.write(`- ${what} ... `);
  return () => console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s`);
};

// Every leg must do the same work: same transcript (roles, call ids, tool results) and, for the two SPEC
// loops, the same number of LoopEvents. A bench that compares different work is wrong, so this stops it.
async function checkShape(turns, workload) {
  const expectMsgs = expectedMessageCount(turns, workload);
  const specEvents = loopEventCount(turns, workload);
  let reference;
  const events = {};
  for (const l of LEGS) {
    const r = await l.run(turns, workload);
    if (r.reason !== undefined && r.reason !== "stop") fail(`shape check (${workload.name}, ${l.name}, N=${turns})`, `run ended with reason ${r.reason}${r.error ? `: ${r.error}` : ""}`, "the leg must finish the script with reason stop");
    if (r.messages.length !== expectMsgs) fail(`shape check (${workload.name}, ${l.name}, N=${turns})`, `${r.messages.length} messages, expected ${expectMsgs}`, "the leg is not doing the scripted work");
    const shape = transcriptShape(r.messages);
    if (reference === undefined) reference = { leg: l.name, shape };
    else if (shape !== reference.shape) {
      const a = reference.shape.split("\n"), b = shape.split("\n");
      const i = a.findIndex((x, k) => x !== b[k]);
      fail(`shape check (${workload.name}, N=${turns})`, `${l.name} differs from ${reference.leg} at message ${i}: ${JSON.stringify(b[i])} vs ${JSON.stringify(a[i])}`, "fix the leg so all legs run the same workload");
    }
    if (l.name !== "pi" && r.events !== specEvents) fail(`shape check (${workload.name}, ${l.name}, N=${turns})`, `${r.events} LoopEvents, expected ${specEvents}`, "a SPEC §4 loop must emit every model event, each message, tool start/end and one turn_end");
    events[l.name] = r.events;
  }
  return events;
}

// --- timing --------------------------------------------------------------------------------------

// One sample = the mean of `batch` back-to-back runs, so a sample lasts ~1,000 turns whatever N is: short
// runs would otherwise be timer- and scheduler-noise.
const batchFor = (n) => Math.max(1, Math.round(1000 / n));

async function timeAll(workloads, Ns, reps, warmup, warmTurns) {
  // JIT warm-up first, so the smallest N is not measured in V8's baseline tiers.
  const warm = step(`JIT warm-up: ${warmTurns} turns per leg and workload, interleaved`);
  for (let i = 0; i < warmTurns / 50; i++) for (const w of workloads) for (const l of LEGS) await l.run(50, w);
  warm();
  const out = {};
  for (const w of workloads) out[w.name] = await timeWorkload(w, Ns, reps, warmup);
  return out;
}

async function timeWorkload(workload, Ns, reps, warmup) {
  const out = {};
  for (const n of Ns) {
    const batch = batchFor(n);
    const done = step(`${workload.name}, N=${n}: shape check, ${warmup} warm-up + ${reps} timed rounds of ${LEGS.map((l) => l.name).join(", ")} (a sample = mean of ${batch} run${batch > 1 ? "s" : ""})`);
    const events = await checkShape(n, workload);
    const samples = Object.fromEntries(LEGS.map((l) => [l.name, []]));
    // The process's own CPU time too (user + system, all its threads): on a shared machine, time spent
    // waiting for a core counts in the wall time of whichever leg it fell on, but not here.
    const cpu = Object.fromEntries(LEGS.map((l) => [l.name, []]));
    for (let rep = -warmup; rep < reps; rep++) {
      // Interleaved: A, B, C, then C, B, A, ..., so that no leg always runs right after the same one (whose
      // garbage it would collect). No gc() before a run: a forced full GC shrinks V8's young generation,
      // and the next run then pays 3-4x in scavenges (measured on the floor leg at N=1000).
      for (const l of rep % 2 ? [...LEGS].reverse() : LEGS) {
        const t0 = nowMs();
        const c0 = process.cpuUsage();
        for (let b = 0; b < batch; b++) {
          const r = await l.run(n, workload);
          if (r.messages.length !== expectedMessageCount(n, workload)) fail(`timed run (${workload.name}, ${l.name}, N=${n})`, `${r.messages.length} messages`, "the leg became inconsistent between runs");
        }
        const dt = (nowMs() - t0) / batch;
        const c = process.cpuUsage(c0);
        if (rep >= 0) {
          samples[l.name].push(dt);
          cpu[l.name].push((c.user + c.system) / 1000 / batch);
        }
      }
    }
    done();
    const legs = {};
    for (const l of LEGS) {
      const med = median(samples[l.name]);
      const cpuMed = median(cpu[l.name]);
      legs[l.name] = { median_ms: med, per_turn_us: (med * 1000) / (n + 1), min_ms: Math.min(...samples[l.name]),
        max_ms: Math.max(...samples[l.name]), samples_ms: samples[l.name], events: events[l.name],
        cpu_median_ms: cpuMed, cpu_per_turn_us: (cpuMed * 1000) / (n + 1), cpu_samples_ms: cpu[l.name] };
    }
    const ratio = (a, b, key = "median_ms") => (legs[a] && legs[b] ? legs[a][key] / legs[b][key] : null);
    const cpuRatio = (a, b) => ratio(a, b, "cpu_median_ms");
    // Runs of one round ran back to back, so their ratio is less exposed to load drift than medians are.
    const paired = (a, b) => (legs[a] && legs[b] ? median(samples[a].map((x, i) => x / samples[b][i])) : null);
    const cpuPaired = (a, b) => (legs[a] && legs[b] ? median(cpu[a].map((x, i) => x / cpu[b][i])) : null);
    out[n] = {
      legs,
      ratios: { tiny_pi: ratio("tiny", "pi"), tiny_floor: ratio("tiny", "floor"), pi_floor: ratio("pi", "floor"), hooks_tiny: ratio("hooks", "tiny"), parts_tiny: ratio("parts", "tiny"), again_tiny: ratio("again", "tiny"), tiny_base: ratio("tiny", "base"), base_pi: ratio("base", "pi") },
      paired_ratios: { tiny_pi: paired("tiny", "pi"), tiny_floor: paired("tiny", "floor"), pi_floor: paired("pi", "floor"), hooks_tiny: paired("hooks", "tiny"), tiny_base: paired("tiny", "base") },
      cpu_ratios: { tiny_pi: cpuRatio("tiny", "pi"), tiny_floor: cpuRatio("tiny", "floor"), hooks_tiny: cpuRatio("hooks", "tiny"), parts_tiny: cpuRatio("parts", "tiny"), again_tiny: cpuRatio("again", "tiny"), tiny_base: cpuRatio("tiny", "base"), base_pi: cpuRatio("base", "pi"), floor10_pi: cpuRatio("floor10", "pi"), floor10_floor: cpuRatio("floor10", "floor"), hooks_bhooks: cpuRatio("hooks", "bhooks"), bhooks_base: cpuRatio("bhooks", "base") },
      cpu_paired_ratios: { tiny_pi: cpuPaired("tiny", "pi"), tiny_floor: cpuPaired("tiny", "floor"), hooks_tiny: cpuPaired("hooks", "tiny"), parts_tiny: cpuPaired("parts", "tiny"), again_tiny: cpuPaired("again", "tiny"), tiny_base: cpuPaired("tiny", "base"), floor10_pi: cpuPaired("floor10", "pi"), floor10_floor: cpuPaired("floor10", "floor") },
    };
  }
  return out;
}

// --- cost split ----------------------------------------------------------------------------------

// Where a turn's time goes, per leg: the same N-turn run with other turn shapes, interleaved like the
// timing, in CPU time. From three shapes: per text delta = (10 deltas, 1 call) - (0, 1) over 10; per tool call =
// (0 deltas, 3 calls) - (0, 1) over 2; the rest of a turn = (0, 1) - one call. It says which part of the
// loop a ratio comes from (RESULTS.md reads it).
const SPLIT_SHAPES = { base: { deltas: 0, calls: 1 }, deltas: { deltas: 10, calls: 1 }, calls: { deltas: 0, calls: 3 } };

async function costSplit(workload, n, reps) {
  const legs = LEGS.filter((l) => ["pi", "tiny", "base"].includes(l.name));
  const samples = {};
  for (const l of legs) for (const k of Object.keys(SPLIT_SHAPES)) samples[`${l.name}:${k}`] = [];
  const batch = batchFor(n);
  for (let rep = -1; rep < reps; rep++) {
    for (const [k, shape] of Object.entries(SPLIT_SHAPES)) {
      for (const l of legs) {
        const c0 = process.cpuUsage();
        for (let b = 0; b < batch; b++) {
          const r = await l.run(n, workload, shape);
          if (r.reason !== undefined && r.reason !== "stop") fail(`cost split (${workload.name}, ${l.name}, ${k})`, `run ended with ${r.reason}`, "the leg must finish the script");
        }
        const c = process.cpuUsage(c0);
        if (rep >= 0) samples[`${l.name}:${k}`].push((c.user + c.system) / batch / (n + 1));
      }
    }
  }
  const out = {};
  for (const l of legs) {
    const m = (k) => median(samples[`${l.name}:${k}`]);
    const perCall = (m("calls") - m("base")) / 2;
    out[l.name] = { per_delta_us: (m("deltas") - m("base")) / 10, per_call_us: perCall, rest_of_turn_us: m("base") - perCall };
  }
  return out;
}

// --- garbage collection --------------------------------------------------------------------------

// How much of a turn is the collector's pause, per leg, at the smallest and the largest N: where the growth of
// a turn with N comes from. Runs of ~`turns` turns per leg and N, interleaved; the pauses are V8's `gc`
// performance entries (main-thread time), summed over the runs.
async function gcShare(workload, Ns, turns) {
  const { PerformanceObserver } = await import("node:perf_hooks");
  let pauseMs = 0;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauseMs += e.duration;
  });
  observer.observe({ entryTypes: ["gc"] });
  // The entries arrive as tasks, after the microtasks a run is made of.
  const flush = () => new Promise((r) => setTimeout(r, 10));
  const out = Object.fromEntries(LOOPS.map((l) => [l.name, {}]));
  for (const n of Ns) {
    const runs = Math.max(1, Math.round(turns / n));
    for (const l of LOOPS) {
      await l.run(n, workload);
      await flush();
      pauseMs = 0;
      const t0 = nowMs();
      for (let i = 0; i < runs; i++) await l.run(n, workload);
      const ms = nowMs() - t0;
      await flush();
      const perTurn = (x) => (x * 1000) / (runs * (n + 1));
      out[l.name][n] = { turn_us: perTurn(ms), gc_us: perTurn(pauseMs) };
    }
  }
  observer.disconnect();
  return out;
}

// --- sizes ---------------------------------------------------------------------------------------

function sizes() {
  const targets = {};
  const list = (dir) => (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).filter((f) => /\.(wasm|js|mjs)$/.test(f)) : []);
  for (const target of ["node", "web", "bundler"]) {
    const dir = path.join(ROOT, "pkg", target);
    if (!fs.existsSync(dir)) continue;
    // Recursive: the bridge's JS helpers sit in snippets/. The folders share web/'s .wasm (and bundler/ its
    // glue): what a folder does not hold itself it loads from web/.
    const own = list(dir);
    const shared = list(path.join(ROOT, "pkg", "web")).filter((f) => target !== "web" && !own.includes(f)).map((f) => `../web/${f}`);
    const entry = { files: {}, raw: 0, gzip: 0 };
    for (const f of [...own, ...shared]) {
      const buf = fs.readFileSync(path.join(dir, f));
      const gz = zlib.gzipSync(buf, { level: 9 }).length;
      entry.files[f] = { raw: buf.length, gzip: gz };
      entry.raw += buf.length;
      entry.gzip += gz;
    }
    targets[target] = entry;
  }
  return targets;
}

// What an app ships for the loop: each library's loop entry bundled for the browser by Vite (the
// workspace's pinned devDependency), minified, as `vite build` would put it in an app. "eager" is what
// loads before the loop can run (the entry chunk, its static imports, and the assets they name, such as
// tiny-pi's .wasm); "all" adds the chunks loaded later on demand (pi-ai's provider SDKs).
const BUNDLES = {
  tiny: `import { runAgentLoop, ToolRegistry } from "tiny-pi";\nglobalThis.loop = [runAgentLoop, ToolRegistry];\n`,
  pi: `import { agentLoop } from "@mariozechner/pi-agent-core";\nglobalThis.loop = agentLoop;\n`,
};

async function bundledSizes() {
  const { build } = await import("vite");
  const dir = path.join(OUT, "bundle");
  fs.mkdirSync(dir, { recursive: true });
  const out = {};
  for (const [name, source] of Object.entries(BUNDLES)) {
    if (name === "tiny" && !fs.existsSync(path.join(ROOT, "pkg/package.json"))) continue;
    const entry = path.join(dir, `${name}-entry.mjs`);
    fs.writeFileSync(entry, source);
    const result = await build({
      configFile: false, root: dir, logLevel: "silent",
      // The package as built (its exports pick the browser folder), not whatever bench/node_modules links.
      resolve: { alias: { "tiny-pi": path.join(ROOT, "pkg") } },
      build: {
        write: false, target: "es2022", minify: true,
        // @opentelemetry/api is an optional peer of @mistralai/mistralai (a lazy pi-ai provider), not installed.
        rollupOptions: { input: entry, external: [/^@opentelemetry\//] },
      },
    });
    const files = (Array.isArray(result) ? result : [result]).flatMap((r) => r.output);
    const byName = new Map(files.map((f) => [f.fileName, f]));
    const bytes = (f) => (f.type === "chunk" ? Buffer.from(f.code) : Buffer.from(f.source));
    const eager = new Set();
    const visit = (f) => {
      if (!f || eager.has(f.fileName)) return;
      eager.add(f.fileName);
      if (f.type !== "chunk") return;
      f.imports.forEach((i) => visit(byName.get(i)));
      for (const a of files) if (a.type === "asset" && f.code.includes(path.basename(a.fileName))) visit(a);
    };
    files.filter((f) => f.type === "chunk" && f.isEntry).forEach(visit);
    const sum = (list) => list.reduce((acc, f) => {
      const b = bytes(f);
      return { raw: acc.raw + b.length, gzip: acc.gzip + zlib.gzipSync(b, { level: 9 }).length };
    }, { raw: 0, gzip: 0 });
    const shipped = files.filter((f) => !f.fileName.endsWith(".map"));
    out[name] = { eager: sum(shipped.filter((f) => eager.has(f.fileName))), all: sum(shipped), files: shipped.length };
  }
  return out;
}

// --- memory (run in a fresh child process: wasm memory only grows, so earlier big runs would hide a leak)

async function memoryPhase(base, total) {
  const out = {};
  const order = ["tiny", "floor", "pi"].map(leg).filter(Boolean);
  for (const l of order) {
    for (let i = 0; i < base; i++) await l.run(1, WORKLOADS.full);
    await settle();
    const atBase = { heap: process.memoryUsage().heapUsed, wasm: l.name === "tiny" ? wasmMemory()?.buffer.byteLength ?? null : null };
    for (let i = base; i < total; i++) await l.run(1, WORKLOADS.full);
    await settle();
    const atTotal = { heap: process.memoryUsage().heapUsed, wasm: l.name === "tiny" ? wasmMemory()?.buffer.byteLength ?? null : null };
    out[l.name] = { runs_base: base, runs_total: total, heap_base: atBase.heap, heap_total: atTotal.heap, heap_delta: atTotal.heap - atBase.heap,
      wasm_base: atBase.wasm, wasm_total: atTotal.wasm, wasm_delta: atBase.wasm === null ? null : atTotal.wasm - atBase.wasm };
  }
  return out;
}

if (args.phase === "memory") {
  const r = await memoryPhase(Number(args.base), Number(args.total));
  fs.writeFileSync(args.out, JSON.stringify(r));
  process.exit(0);
}

function runMemoryChild(base, total) {
  fs.mkdirSync(OUT, { recursive: true });
  const file = path.join(OUT, `memory-${process.pid}.json`);
  const r = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--phase=memory", `--base=${base}`, `--total=${total}`, `--out=${file}`], { stdio: "inherit" });
  if (r.status !== 0) fail("memory phase", `child exited with ${r.status}`, "run `node --expose-gc bench/run.mjs --phase=memory --base=100 --total=10000 --out=/tmp/m.json` to see why");
  const data = JSON.parse(fs.readFileSync(file, "utf8"));
  fs.rmSync(file);
  return data;
}

// --- profile mode --------------------------------------------------------------------------------

// One leg alone, warmed up, profiled in-process with the inspector so module loading stays out of it.
if (PROFILE) {
  const l = leg(PROFILE);
  if (!l) fail("profile", `no leg named ${PROFILE}`, `choose one of ${LEGS.map((x) => x.name).join(", ")}`);
  const n = Number(args.n ?? 1000), reps = Number(args.reps ?? 5);
  const workload = WORKLOADS[args.workload ?? "full"];
  if (!workload) fail("profile", `no workload named ${args.workload}`, `choose one of ${Object.keys(WORKLOADS).join(", ")}`);
  const { Session } = await import("node:inspector/promises");
  for (let i = 0; i < 2; i++) await l.run(n, workload);
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
  for (let i = 0; i < reps; i++) {
    const t0 = nowMs();
    await l.run(n, workload);
    console.log(`${l.name} (${workload.name}) N=${n} run ${i + 1}/${reps}: ${fmt(nowMs() - t0)} ms`);
  }
  const { profile } = await session.post("Profiler.stop");
  session.disconnect();
  const dir = path.join(OUT, "prof");
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${l.name}-${workload.name}-n${n}.cpuprofile`);
  fs.writeFileSync(file, JSON.stringify(profile));
  console.log(`wrote ${path.relative(ROOT, file)}; summary: node bench/profile-summary.mjs ${path.relative(ROOT, file)}`);
  process.exit(0);
}

// --- main ----------------------------------------------------------------------------------------

const cfg = QUICK
  ? { Ns: [10, 40], reps: 3, warmup: 1, warmTurns: 500, memBase: 20, memTotal: 1000, splitN: 20, feelSamples: 2, inFlight: 100, gcTurns: 2000, promptSizes: [40, 400], partsN: 20, partsQuads: 3 }
  : { Ns: [50, 200, 1000], reps: 5, warmup: 2, warmTurns: 5000, memBase: 100, memTotal: 10000, splitN: 100, feelSamples: 5, inFlight: 1000, gcTurns: 20000, promptSizes: [40, 4000], partsN: 200, partsQuads: 15 };
if (args.n) cfg.Ns = String(args.n).split(",").map(Number);
if (args.reps) cfg.reps = Number(args.reps);
if (!cfg.Ns.length || cfg.Ns.some((n) => !(n >= 1)) || !(cfg.reps >= 1)) fail("arguments", "--n needs positive turn counts, --reps a positive count", "e.g. --n=50,200 --reps=5");
cfg.workloads = String(args.workload ?? Object.keys(WORKLOADS).join(",")).split(",");
if (cfg.workloads.some((w) => !WORKLOADS[w])) fail("arguments", `--workload names ${args.workload}`, `choose from ${Object.keys(WORKLOADS).join(", ")}`);
const workloads = cfg.workloads.map((w) => WORKLOADS[w]);
cfg.smallN = Math.min(...cfg.Ns);
cfg.bigN = Math.max(...cfg.Ns);
const command = `node bench/run.mjs${process.argv.slice(2).length ? " " + process.argv.slice(2).join(" ") : ""}`;

console.log(`tiny-pi bench${QUICK ? " (quick mode: figures are a smoke test, not results)" : ""}`);
console.log(`node ${process.version} on ${os.cpus()[0]?.model ?? "?"} x${os.cpus().length}, ${os.platform()}`);
// Other work on a shared 2-core machine swamps millisecond timings; ask for a higher priority (root may).
let niced = false;
try { os.setPriority(-10); niced = true; } catch { /* not permitted: run at normal priority */ }
const load = os.loadavg()[0];
console.log(`load average ${load.toFixed(2)}, ${niced ? "priority raised (nice -10)" : "normal priority"}${load > os.cpus().length / 2 ? "  WARNING: the machine is busy; timings will be noisy (medians and per-round ratios absorb some of it)" : ""}`);
console.log(`legs: ${LEGS.map((l) => `${l.name} = ${l.label}`).join("; ")}`);
console.log(tiny ? `tiny-pi loaded via ${tiny.via}` : "tiny-pi: pkg/node not built (run `npm run build`); timing pi and floor only");
if (base) console.log(`base build loaded via ${base.via}`);
console.log("workloads: N tool turns + 1 stop turn, a fresh pi-ai EventStream per request (bench/workload.mjs):");
for (const w of workloads) console.log(`  ${w.name}: ${w.describe}`);
console.log();

if (args["write-results"] && !tiny) fail("write-results", "tiny-pi was not loaded, so there is nothing to compare", "build pkg/ with `npm run build` (and wait for a running build to finish), then rerun");

// Which build was measured: the commit checked out and when pkg/ was built.
const gitHead = (() => {
  const r = spawnSync("git", ["-C", ROOT, "rev-parse", "--short", "HEAD"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
})();
const wasmFile = path.join(ROOT, "pkg/web/tiny_pi_bg.wasm");
const pkgBuilt = fs.existsSync(wasmFile) ? fs.statSync(wasmFile).mtime.toISOString() : null;
console.log(`commit ${gitHead ?? "?"}${pkgBuilt ? `, pkg/ built ${pkgBuilt}` : ""}`);
const started = Date.now();
const timing = await timeAll(workloads, cfg.Ns, cfg.reps, cfg.warmup, cfg.warmTurns);
const { promptCost, promptLines } = await import("./prompt.mjs");
const { appLines } = await import("./feel-app.mjs");
let prompt = null, parts = null;
if (tiny && !TIMING_ONLY && workloads.includes(WORKLOADS.full)) {
  const done = step(`part three set, never triggered: ${cfg.partsQuads} ABBA quads of N=${cfg.partsN} runs on full, with and without, and an A/A`);
  parts = await partsCost({ workload: WORKLOADS.full, n: cfg.partsN, quads: cfg.partsQuads });
  done();
}
if (tiny && !TIMING_ONLY) {
  const done = step(`Agent.prompt at ${cfg.promptSizes.join(" and ")} messages: ${cfg.reps} rounds of fresh agents, tiny and pi interleaved`);
  prompt = await promptCost({ sizes: cfg.promptSizes, rounds: cfg.reps });
  done();
}
const split = {};
if (tiny && (!TIMING_ONLY || args.split)) {
  for (const w of workloads) {
    const done = step(`cost split (${w.name}): N=${cfg.splitN}, ${cfg.reps} rounds of 3 turn shapes, ${LEGS.filter((l) => ["pi", "tiny", "base"].includes(l.name)).map((l) => l.name).join(", ")}`);
    split[w.name] = await costSplit(w, cfg.splitN, cfg.reps);
    done();
  }
}
const gc = {};
if (!TIMING_ONLY && cfg.bigN > cfg.smallN) {
  for (const w of workloads) {
    const done = step(`collector's share (${w.name}): ~${cfg.gcTurns} turns per leg at N=${cfg.smallN} and N=${cfg.bigN}`);
    gc[w.name] = await gcShare(w, [cfg.smallN, cfg.bigN], cfg.gcTurns);
    done();
  }
}
const size = sizes();
let bundled = null;
if (!TIMING_ONLY) {
  const done = step("bundle sizes: each loop's entry built for the browser by Vite");
  try {
    bundled = await bundledSizes();
    done();
  } catch (e) {
    // A size that cannot be measured is reported as such; it does not void the timings.
    console.log(`not measured: ${String(e?.message ?? e).split("\n")[0]}`);
  }
}
let memory = null;
if (!TIMING_ONLY) {
  const done = step(`memory: ${cfg.memTotal} back-to-back one-turn runs per leg (fresh process), compared at run ${cfg.memBase}`);
  memory = runMemoryChild(cfg.memBase, cfg.memTotal);
  done();
}

// What users feel (issue 14, item 4): import to first run in Node and in Chromium, memory per run in flight.
let feel = null;
if (!TIMING_ONLY && tiny) {
  const { startupNode, startupBrowser, inFlight } = await import("./feel.mjs");
  const { appNode, appBrowser } = await import("./feel-app.mjs");
  feel = {};
  let done = step(`import to first run, Node: ${cfg.feelSamples} fresh processes per loop, interleaved`);
  feel.node = startupNode(tiny.entry, cfg.feelSamples);
  done();
  done = step(`import to first run, Chromium: ${cfg.feelSamples} fresh contexts per loop, interleaved (pages built by Vite)`);
  try {
    feel.browser = await startupBrowser(cfg.feelSamples);
    done();
  } catch (e) {
    console.log(`not measured: ${String(e?.message ?? e).split("\n")[0]}`);
  }
  feel.app = {};
  done = step(`an app on pi-ai, import to first run, Node: ${cfg.feelSamples} fresh processes per app against a local OpenAI-compatible server`);
  feel.app.node = await appNode(tiny.entry, cfg.feelSamples);
  done();
  done = step(`an app on pi-ai, import to first run and bytes loaded, Chromium: ${cfg.feelSamples} fresh contexts per app (pages built by Vite)`);
  try {
    feel.app.browser = await appBrowser(cfg.feelSamples);
    done();
  } catch (e) {
    console.log(`not measured: ${String(e?.message ?? e).split("\n")[0]}`);
  }
  done = step(`memory per run: ${cfg.inFlight} runs in flight at once, each waiting on its tool (fresh process per loop)`);
  feel.in_flight = inFlight(tiny.entry, cfg.inFlight);
  done();
}

// A build landing mid-run would make the sizes (read at the end) describe another build than the one timed.
const pkgRebuilt = pkgBuilt !== null && (!fs.existsSync(wasmFile) || fs.statSync(wasmFile).mtime.toISOString() !== pkgBuilt);
if (pkgRebuilt) console.log("WARNING: pkg/ was rebuilt during this run; timings and sizes may describe different builds");
if (pkgRebuilt && args["write-results"]) fail("write-results", "pkg/ was rebuilt during the run", "rerun when no build is running");

// --- report --------------------------------------------------------------------------------------

const lines = [];
const p = (s = "") => lines.push(s);
const signed = (x, d = 1) => `${x >= 0 ? "+" : ""}${fmt(x, d)}`;
p(`\nTiming: CPU time of this process (process.cpuUsage) per run, median of ${cfg.reps} interleaved rounds (a round's sample` +
  ` averages ~1000/N runs); µs/turn = that / (N + 1) model requests; wall time beside it. Ratios: of the medians, and` +
  ` (in brackets) the median of the per-round ratios.`);
const flat = {}, growth = {};
for (const w of workloads) {
  const t = timing[w.name];
  p(`\nWorkload ${w.name}: ${w.describe}`);
  p("     N  leg     CPU ms/run   CPU µs/turn   wall ms/run (min..max)      events");
  for (const n of cfg.Ns) {
    for (const l of LEGS) {
      const x = t[n].legs[l.name];
      p(`  ${String(n).padStart(4)}  ${l.name.padEnd(6)} ${fmt(x.cpu_median_ms).padStart(10)} ${fmt(x.cpu_per_turn_us, 1).padStart(13)}   ${`${fmt(x.median_ms)} (${fmt(x.min_ms)}..${fmt(x.max_ms)})`.padEnd(26)} ${x.events}`);
    }
    const c = t[n].cpu_ratios, q = t[n].cpu_paired_ratios;
    const r = (key, label) => (c[key] === null ? "" : `   ${label} ${fmt(c[key])} (${fmt(q[key])})`);
    p(`        CPU:${r("tiny_pi", "tiny/pi")}${r("tiny_floor", "tiny/floor")}${r("hooks_tiny", "hooks/tiny")}${r("parts_tiny", "parts/tiny")}${r("again_tiny", "again/tiny")}${r("tiny_base", "tiny/base")}${r("floor10_pi", "floor10/pi")}${r("floor10_floor", "floor10/floor")}` +
      `   wall: tiny/pi ${fmt(t[n].ratios.tiny_pi)}`);
  }
  flat[w.name] = {}, growth[w.name] = {};
  for (const l of LOOPS) {
    const big = t[cfg.bigN].legs[l.name], small = t[cfg.smallN].legs[l.name];
    flat[w.name][l.name] = big.cpu_per_turn_us / small.cpu_per_turn_us;
    growth[w.name][l.name] = big.cpu_per_turn_us - small.cpu_per_turn_us;
  }
  if (cfg.bigN > cfg.smallN) {
    p(`  a turn at N=${cfg.bigN} / at N=${cfg.smallN} (CPU): ${LOOPS.map((l) => `${l.name} ${fmt(flat[w.name][l.name])}x (${signed(growth[w.name][l.name])} µs)`).join("   ")}`);
  }
  const g = gc[w.name];
  if (g) {
    p(`  the collector's pause in a turn, µs of a turn's wall time (~${cfg.gcTurns} turns per leg and N, apart from the timed runs):`);
    for (const l of LOOPS) {
      const a = g[l.name][cfg.smallN], b = g[l.name][cfg.bigN];
      p(`    ${l.name.padEnd(6)} N=${cfg.smallN}: ${fmt(a.gc_us, 1)} of ${fmt(a.turn_us, 1)}   N=${cfg.bigN}: ${fmt(b.gc_us, 1)} of ${fmt(b.turn_us, 1)}`);
    }
  }
  const sp = split[w.name];
  if (sp) {
    p(`  cost split at N=${cfg.splitN}, CPU µs (turn shapes of 0/10 text deltas and 1/3 calls; costSplit in bench/run.mjs):`);
    for (const [key, label] of [["per_delta_us", "a text delta"], ["per_call_us", "a tool call"], ["rest_of_turn_us", "the rest of a turn"]]) {
      p(`    ${label.padEnd(18)} pi ${fmt(sp.pi[key]).padStart(6)}   tiny ${fmt(sp.tiny[key]).padStart(7)}   tiny/pi ${fmt(sp.tiny[key] / sp.pi[key])}` +
        (sp.base ? `   base ${fmt(sp.base[key]).padStart(7)}   tiny/base ${fmt(sp.tiny[key] / sp.base[key])}` : ""));
    }
  }
}

if (parts) {
  p(`\nPart three set but never triggered (bench/parts.mjs):`);
  for (const l of partsLines(parts)) p(l);
}
if (prompt) {
  p(`\nAgent.prompt (bench/prompt.mjs): CPU ms of one prompt (one request answered at once), medians of ${cfg.reps} rounds; "next" is an`);
  p(`agent's second prompt (the steady state), "first" its first after construction:`);
  for (const l of promptLines(prompt, cfg.promptSizes)) p(l);
}

p("\nSize (gzip -9), each pkg/ folder's .wasm + JS as it loads them (.d.ts excluded):");
for (const [t, e] of Object.entries(size)) {
  p(`  pkg/${t}/: ${kb(e.raw)} KB raw, ${kb(e.gzip)} KB gz (${Object.entries(e.files).map(([f, s]) => `${path.basename(f)} ${kb(s.gzip)}`).join(", ")})`);
}
if (!Object.keys(size).length) p("  pkg/ not built");
if (bundled) {
  p("\nBundled by Vite for the browser, minified, as an app ships the loop (gzip -9; eager = loaded before the first run):");
  for (const [name, b] of Object.entries(bundled)) {
    p(`  ${name.padEnd(5)} eager ${kb(b.eager.raw).padStart(6)} KB (${kb(b.eager.gzip)} gz)   all ${b.files} files ${kb(b.all.raw).padStart(7)} KB (${kb(b.all.gzip)} gz)`);
  }
  if (bundled.tiny && bundled.pi) p(`  tiny/pi eager gzipped: ${fmt(bundled.tiny.eager.gzip / bundled.pi.eager.gzip)}   all: ${fmt(bundled.tiny.all.gzip / bundled.pi.all.gzip)}`);
}

if (memory) p(`\nMemory retained, after ${cfg.memTotal} runs minus after ${cfg.memBase} runs (after gc):`);
for (const [name, m] of Object.entries(memory ?? {})) {
  const w = m.wasm_base === null ? "" : `   wasm memory ${kb(m.wasm_base)} -> ${kb(m.wasm_total)} KB (${signed(m.wasm_delta / 1000)} KB)`;
  p(`  ${name.padEnd(6)} JS heap ${kb(m.heap_base)} -> ${kb(m.heap_total)} KB (${signed(m.heap_delta / 1000)} KB)${w}`);
}

if (feel) {
  const ms = (x, key) => `${fmt(x[key], 0)} ms (${fmt(x[`${key}_min`], 0)}..${fmt(x[`${key}_max`], 0)})`;
  const line = (x) => `${ms(x, "total_ms")}: import ${fmt(x.import_ms, 0)} + first run ${fmt(x.first_run_ms, 0)}`;
  p(`\nWhat users feel (medians of ${cfg.feelSamples} fresh starts per loop, min..max):`);
  p(`  import to first run, Node (a fresh process each):`);
  p(`    tiny ${line(feel.node.tiny)}`);
  p(`    pi   ${line(feel.node.pi)}`);
  p(`    tiny/pi ${fmt(feel.node.tiny.total_ms / feel.node.pi.total_ms)}`);
  if (feel.browser) {
    p(`  import to first run, Chromium (a fresh context each; the page bundled by Vite, served no-store):`);
    p(`    tiny ${line(feel.browser.tiny)}; from navigation ${fmt(feel.browser.tiny.since_navigation_ms, 0)} ms`);
    p(`    pi   ${line(feel.browser.pi)}; from navigation ${fmt(feel.browser.pi.since_navigation_ms, 0)} ms`);
    p(`    tiny/pi ${fmt(feel.browser.tiny.total_ms / feel.browser.pi.total_ms)}`);
  }
  if (feel.app) for (const l of appLines(feel.app)) p(l);
  const t = feel.in_flight.tiny, q = feel.in_flight.pi;
  const tinyPerRun = t.heap_per_run_bytes + (t.wasm_per_run_bytes ?? 0);
  p(`  memory per run, ${t.runs} runs in flight at once, each waiting on its tool (JS heap after gc, and wasm memory):`);
  p(`    tiny ${kb(tinyPerRun)} KB (JS heap ${kb(t.heap_per_run_bytes)} + wasm ${kb(t.wasm_per_run_bytes ?? 0)}; wasm memory ${kb(t.wasm_before_bytes)} -> ${kb(t.wasm_during_bytes)} KB)`);
  p(`    pi   ${kb(q.heap_per_run_bytes)} KB (JS heap)`);
  p(`    tiny/pi ${fmt(tinyPerRun / q.heap_per_run_bytes)}`);
}

// The targets this run measures, with the issue that set each.
const targets = [];
const target = (name, value, limit, shown) => {
  const met = value === null || value === undefined || Number.isNaN(value) ? null : value <= limit;
  const by = met === false ? ` (missed by ${fmt(((value - limit) / limit) * 100, 0)}%)` : "";
  targets.push({ name, value, limit, met, text: met === null ? "not measured" : `${shown}${by}` });
};
for (const w of workloads) {
  const t = timing[w.name];
  for (const n of (QUICK ? [cfg.bigN] : [200, 1000]).filter((x) => t[x])) {
    target(`${w.name}: tiny/pi <= 1.0 at N=${n}, CPU (issue 26; goal 0.8)`, t[n].cpu_ratios.tiny_pi, 1.0, fmt(t[n].cpu_ratios.tiny_pi));
  }
  for (const n of cfg.Ns.filter((x) => x >= 200 || QUICK)) {
    target(`${w.name}: hooks/tiny <= 1.10 at N=${n}, CPU (issue 15)`, t[n].cpu_ratios.hooks_tiny, 1.1, fmt(t[n].cpu_ratios.hooks_tiny));
  }
  const flatTiny = cfg.bigN > cfg.smallN ? flat[w.name].tiny : null;
  target(`${w.name}: a turn at N=${cfg.bigN} <= 1.2x at N=${cfg.smallN}, CPU (tiny; issue 4)`, flatTiny, 1.2, `${fmt(flatTiny)}x`);
}
if (parts) {
  // Read as met or missed only when the run resolves 2%: the A/A within 1% of 1, and the quartiles of the quads
  // narrow enough that their median is good to 2% (half the spread over the square root of the count).
  const resolved = Math.abs(parts.aa.median - 1) <= 0.01 && (parts.parts.q3 - parts.parts.q1) / 2 / Math.sqrt(parts.quads) <= 0.02;
  const shown = `${fmt(parts.parts.median, 3)} (quartiles ${fmt(parts.parts.q1, 3)}..${fmt(parts.parts.q3, 3)}; A/A ${fmt(parts.aa.median, 3)})`;
  target(`full: with part three set / without <= 1.02, N=${parts.n}, CPU, ABBA (issue 28)`, resolved ? parts.parts.median : null, 1.02, shown);
  if (!resolved) targets.at(-1).text = `${shown}: not resolved at this load`;
}
if (prompt) {
  const big = Math.max(...cfg.promptSizes), small = Math.min(...cfg.promptSizes);
  const x = prompt.tiny[big].next_cpu_ms / prompt.tiny[small].next_cpu_ms;
  target(`Agent.prompt at ${big} messages <= 3x at ${small}, CPU (issue 26)`, x, 3, `${fmt(x, 1)}x`);
}
const gzWeb = size.web?.gzip ?? null;
target("web target (wasm + JS) <= 110 KB gzipped (issue 26)", gzWeb, 110000, gzWeb === null ? "-" : `${kb(gzWeb)} KB`);
const tm = memory?.tiny;
target(`wasm memory after ${cfg.memTotal} runs within 1 MB of after ${cfg.memBase} (issue 4)`, tm ? tm.wasm_delta : null, 1e6, tm ? `${kb(tm.wasm_delta)} KB` : "-");
target(`JS heap after ${cfg.memTotal} runs within 1 MB of after ${cfg.memBase}, tiny (issue 4)`, tm ? tm.heap_delta : null, 1e6, tm ? `${kb(tm.heap_delta)} KB` : "-");
p("\nTargets" + (QUICK ? " (quick mode: indicative only)" : "") + ":");
for (const t of targets) p(`  ${t.met === null ? "n/a   " : t.met ? "met   " : "MISSED"}  ${t.name.padEnd(66)} ${t.text}`);
p(`\n${command}  (${((Date.now() - started) / 1000).toFixed(0)} s; load average ${load.toFixed(2)} at start, ${os.loadavg()[0].toFixed(2)} at the end)`);
console.log(lines.join("\n"));

const result = {
  date: new Date().toISOString(), command, quick: QUICK, load_average_at_start: load, node: process.version, cpu: os.cpus()[0]?.model, cores: os.cpus().length,
  tiny_via: tiny?.via ?? null, commit: gitHead, pkg_built: pkgBuilt, config: cfg, timing, flatness: flat, growth_per_turn_us: growth, cost_split: split, gc_share: gc, parts, prompt, sizes: size, bundled, memory, feel, targets, load_average_at_end: os.loadavg()[0],
};
fs.mkdirSync(OUT, { recursive: true });
fs.writeFileSync(path.join(OUT, "latest.json"), JSON.stringify(result, null, 2));
console.log(`wrote ${path.relative(ROOT, path.join(OUT, "latest.json"))}`);

// The whole report, every run: bench/out/latest.txt (git-ignored).
fs.writeFileSync(path.join(OUT, "latest.txt"), `${lines.join("\n")}\n`);

// RESULTS.md: a compact block of figures between markers (the whole report is bench/out/latest.txt); the
// hand-written text around it is kept.
if (args["write-results"]) {
  const file = path.join(HERE, "RESULTS.md");
  const START = "<!-- figures:start (written by bench/run.mjs --write-results) -->", END = "<!-- figures:end -->";
  const f0 = (x) => fmt(x, 0), kbs = (b) => `${kb(b)} KB`;
  const speed = ["| workload | N | tiny µs/turn | pi µs/turn | floor µs/turn | tiny/pi (per round) | tiny/floor |", "|---|---:|---:|---:|---:|---:|---:|"];
  for (const w of workloads) for (const n of cfg.Ns) {
    const t = timing[w.name][n], us = (l) => fmt(t.legs[l]?.cpu_per_turn_us, 0);
    speed.push(`| ${w.name} | ${n} | ${us("tiny")} | ${us("pi")} | ${us("floor")} | ${fmt(t.cpu_ratios.tiny_pi)} (${fmt(t.cpu_paired_ratios.tiny_pi)}) | ${fmt(t.cpu_ratios.tiny_floor)} |`);
  }
  const feelRows = [];
  if (feel) {
    const row = (what, x, unit = " ms") => feelRows.push(`| ${what} | ${x.tiny}${unit} | ${x.pi}${unit} | ${fmt(x.r)} |`);
    const ms = (o, key = "total_ms") => ({ tiny: f0(o.tiny[key]), pi: f0(o.pi[key]), r: o.tiny[key] / o.pi[key] });
    row("import to the end of a first run, Node (`feel.mjs`)", ms(feel.node));
    if (feel.browser) row("the same, Chromium, a Vite-built page", ms(feel.browser));
    if (feel.app?.node) row("an app on pi-ai (`feel-app.mjs`): import to a first tool round trip, Node", ms(feel.app.node));
    if (feel.app?.browser) {
      const b = feel.app.browser;
      row("the same, Chromium", ms(b));
      feelRows.push(`| that page's bytes loaded up front / by the end of the first run, gzip -9 | ${kbs(b.tiny.up_front_gz_bytes)} / ${kbs(b.tiny.first_run_gz_bytes)} | ${kbs(b.pi.up_front_gz_bytes)} / ${kbs(b.pi.first_run_gz_bytes)} | ${fmt(b.tiny.up_front_gz_bytes / b.pi.up_front_gz_bytes)} |`);
    }
    const t = feel.in_flight.tiny, q = feel.in_flight.pi, per = t.heap_per_run_bytes + (t.wasm_per_run_bytes ?? 0);
    feelRows.push(`| memory a run holds while its tool runs (${t.runs} in flight; JS heap + wasm) | ${kbs(per)} | ${kbs(q.heap_per_run_bytes)} | ${fmt(per / q.heap_per_run_bytes)} |`);
    if (bundled) feelRows.push(`| the loop alone bundled by Vite, gzip -9: up front / all | ${kbs(bundled.tiny.eager.gzip)} / ${kbs(bundled.tiny.all.gzip)} | ${kbs(bundled.pi.eager.gzip)} / ${kbs(bundled.pi.all.gzip)} | ${fmt(bundled.tiny.eager.gzip / bundled.pi.eager.gzip)} |`);
  }
  const body = [START, "",
    `Measured ${result.date} with \`${command}\` (${result.node}, ${result.cpu} x${result.cores}, load average ${load.toFixed(2)} at the start and ${os.loadavg()[0].toFixed(2)} at the end;` +
      ` commit ${gitHead}, pkg/ built ${pkgBuilt}). Every sample: bench/out/latest.json; the whole report: bench/out/latest.txt.`, "",
    "| target | measured | status |", "|---|---|---|",
    ...targets.map((t) => `| ${t.name} | ${t.text} | ${t.met === null ? "n/a" : t.met ? "met" : "**missed**"} |`), "",
    `A turn, CPU time (medians of ${cfg.reps} interleaved rounds; the ratio in brackets is the median of the per-round ratios):`, "", ...speed, "",
    ...(feelRows.length ? [`What users feel (medians of ${cfg.feelSamples} fresh processes or browser contexts each):`, "", "| | tiny-pi | pi-agent-core | tiny/pi |", "|---|---:|---:|---:|", ...feelRows, ""] : []),
    END].join("\n");
  const old = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : `# Benchmark results\n\n${START}\n${END}\n`;
  const i = old.indexOf(START), j = old.indexOf(END);
  fs.writeFileSync(file, i >= 0 && j > i ? old.slice(0, i) + body + old.slice(j + END.length) : old + "\n" + body + "\n");
  console.log(`wrote ${path.relative(ROOT, file)}`);
}
