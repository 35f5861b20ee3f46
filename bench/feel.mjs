// What users feel, beside pi-agent-core (issue 14, item 4), for bench/run.mjs:
// - import to first run: from the `import` of the loop library to the end of a first small run
//   (`feel-run.mjs`), in a fresh Node process per sample, and in a fresh Chromium context per sample (each
//   loop's page bundled by Vite as an app ships it, served with `no-store`, so every sample loads cold);
// - memory per run in flight: 1,000 runs started at once, each waiting on its tool, in a fresh Node process;
//   the JS heap after `gc()` (and tiny-pi's wasm memory) against before they started, over 1,000.
// Alone: `node bench/feel.mjs [--samples=7]` (it finds tiny-pi as run.mjs does: pass --tiny=<entry>).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..");
const OUT = path.join(HERE, "out", "feel");
const PI = "@mariozechner/pi-agent-core";
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// --- child processes -----------------------------------------------------------------------------

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const m = /^--([^=]+)(?:=(.*))?$/.exec(a);
  return m ? [m[1], m[2] ?? true] : [a, true];
}));

/** Node, one sample: times `import` and the first run, in this fresh process. */
async function childStartup(lib, entry) {
  const { tinySetup, piSetup } = await import("./feel-run.mjs");
  const t0 = performance.now();
  const mod = await import(entry);
  const t1 = performance.now();
  const run = (lib === "tiny" ? tinySetup : piSetup)(mod.runAgentLoop || mod.agentLoop ? mod : mod.default);
  const messages = await run();
  const t2 = performance.now();
  return { import_ms: t1 - t0, first_run_ms: t2 - t1, total_ms: t2 - t0, since_process_start_ms: t2, messages };
}

/** Node, 1,000 runs in flight: memory held per run while every run waits on its tool. */
async function childInFlight(lib, entry, runs) {
  const instances = [];
  const Original = WebAssembly.Instance;
  WebAssembly.Instance = function Instance(module, imports) {
    const instance = new Original(module, imports);
    instances.push(instance);
    return instance;
  };
  WebAssembly.Instance.prototype = Original.prototype;
  const { tinySetup, piSetup } = await import("./feel-run.mjs");
  const mod = await import(entry);
  const setup = lib === "tiny" ? tinySetup : piSetup;
  let release;
  const gate = new Promise((r) => (release = r));
  let waiting = 0;
  let allWaiting;
  const all = new Promise((r) => (allWaiting = r));
  const run = setup(mod.runAgentLoop || mod.agentLoop ? mod : mod.default, { gate, onTool: () => ++waiting === runs && allWaiting() });
  // Warm up the code paths (and let a first run allocate what every run shares), then measure from there.
  await setup(mod.runAgentLoop || mod.agentLoop ? mod : mod.default)();
  const wasm = () => instances.at(-1)?.exports.memory?.buffer.byteLength ?? null;
  const settle = async () => {
    for (let i = 0; i < 4; i++) {
      globalThis.gc();
      await new Promise((r) => setImmediate(r));
    }
  };
  await settle();
  const before = { heap: process.memoryUsage().heapUsed, wasm: wasm() };
  const done = Array.from({ length: runs }, (_, i) => run(i + 1));
  await all;
  await settle();
  const during = { heap: process.memoryUsage().heapUsed, wasm: wasm() };
  release();
  const lengths = await Promise.all(done);
  if (lengths.some((n) => n !== 4)) throw new Error(`a run ended with ${lengths.find((n) => n !== 4)} messages`);
  return {
    runs,
    heap_per_run_bytes: (during.heap - before.heap) / runs,
    wasm_per_run_bytes: before.wasm === null ? null : (during.wasm - before.wasm) / runs,
    wasm_before_bytes: before.wasm,
    wasm_during_bytes: during.wasm,
  };
}

if (args.child) {
  const out = args.child === "startup"
    ? await childStartup(args.lib, args.entry)
    : await childInFlight(args.lib, args.entry, Number(args.runs));
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
}

function child(flags, nodeFlags = []) {
  const r = spawnSync(process.execPath, [...nodeFlags, fileURLToPath(import.meta.url), ...flags], { encoding: "utf8", cwd: HERE });
  if (r.status !== 0) throw new Error(`feel child ${flags.join(" ")} exited with ${r.status}: ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout);
}

const entries = (tinyEntry) => ({ tiny: pathToFileURL(tinyEntry).href, pi: PI });

/** Import to first run in Node: `samples` fresh processes per loop, interleaved; medians. */
export function startupNode(tinyEntry, samples) {
  const out = { tiny: [], pi: [] };
  for (let i = 0; i < samples; i++) {
    for (const [lib, entry] of Object.entries(entries(tinyEntry))) out[lib].push(child(["--child=startup", `--lib=${lib}`, `--entry=${entry}`]));
  }
  return summarize(out);
}

/** Memory per run with `runs` runs in flight, one fresh process per loop. */
export function inFlight(tinyEntry, runs) {
  const out = {};
  for (const [lib, entry] of Object.entries(entries(tinyEntry))) out[lib] = child(["--child=inflight", `--lib=${lib}`, `--entry=${entry}`, `--runs=${runs}`], ["--expose-gc"]);
  return out;
}

function summarize(samples) {
  const out = {};
  for (const [lib, list] of Object.entries(samples)) {
    out[lib] = { samples: list.length };
    for (const key of Object.keys(list[0] ?? {}).filter((k) => k.endsWith("_ms"))) {
      out[lib][key] = median(list.map((s) => s[key]));
      out[lib][`${key}_min`] = Math.min(...list.map((s) => s[key]));
      out[lib][`${key}_max`] = Math.max(...list.map((s) => s[key]));
    }
  }
  return out;
}

// --- the browser ---------------------------------------------------------------------------------

const PAGE = (lib) => `<!doctype html>
<meta charset="utf-8">
<title>feel: ${lib}</title>
<script>window.__t0 = performance.now();</script>
<script type="module" src="./entry.mjs"></script>
<body></body>
`;

const ENTRY = (lib) => `import * as mod from "${lib === "tiny" ? "tiny-pi" : PI}";
import { ${lib}Setup } from ${JSON.stringify(path.join(HERE, "feel-run.mjs"))};
const t1 = performance.now();
const messages = await ${lib}Setup(mod)();
const t2 = performance.now();
window.__feel = { import_ms: t1 - window.__t0, first_run_ms: t2 - t1, total_ms: t2 - window.__t0, since_navigation_ms: t2, messages };
`;

/** Builds each loop's page with Vite (as an app ships it, minified) into bench/out/feel/<lib>/dist. */
async function buildPages() {
  const { build } = await import("vite");
  const dirs = {};
  for (const lib of ["tiny", "pi"]) {
    const dir = path.join(OUT, lib);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "index.html"), PAGE(lib));
    fs.writeFileSync(path.join(dir, "entry.mjs"), ENTRY(lib));
    await build({
      configFile: false, root: dir, logLevel: "silent",
      resolve: { alias: { "tiny-pi": path.join(ROOT, "pkg") } },
      build: {
        outDir: path.join(dir, "dist"), target: "es2022", minify: true,
        // @opentelemetry/api is an optional peer of @mariozechner/mistralai (a lazy pi-ai provider), not installed.
        rollupOptions: { external: [/^@opentelemetry\//] },
      },
    });
    dirs[lib] = path.join(dir, "dist");
  }
  return dirs;
}

/** Import to first run in Chromium: `samples` fresh contexts per loop, interleaved; medians. */
export async function startupBrowser(samples) {
  const dirs = await buildPages();
  const { serveStatic } = await import("../tests/node/static-server.mjs");
  const { chromium } = await import("playwright-core");
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  const browser = await chromium.launch({ executablePath, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"] });
  const servers = {};
  const out = { tiny: [], pi: [] };
  try {
    for (const [lib, dir] of Object.entries(dirs)) servers[lib] = await serveStatic(dir);
    for (let i = 0; i < samples; i++) {
      for (const lib of Object.keys(out)) {
        const context = await browser.newContext();
        const page = await context.newPage();
        const errors = [];
        page.on("pageerror", (e) => errors.push(e.message));
        await page.goto(`${servers[lib].url}/index.html`);
        await page.waitForFunction(() => window.__feel !== undefined, undefined, { timeout: 30_000 }).catch(() => {});
        const result = await page.evaluate(() => window.__feel ?? null);
        await context.close();
        if (!result || errors.length) throw new Error(`${lib} page: ${errors.join("; ") || "no result"}`);
        out[lib].push(result);
      }
    }
  } finally {
    await browser.close();
    for (const s of Object.values(servers)) await s.close();
  }
  return summarize(out);
}

// --- alone ---------------------------------------------------------------------------------------

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const tinyEntry = path.resolve(args.tiny ?? path.join(ROOT, "pkg/node/tiny_pi.mjs"));
  const samples = Number(args.samples ?? 7);
  console.log(JSON.stringify({ node: startupNode(tinyEntry, samples), browser: await startupBrowser(samples), in_flight: inFlight(tinyEntry, 1000) }, null, 2));
}
