// An app with a real provider, beside pi-agent-core (issue 26, item 10): what the README's "What it costs" says
// about an app that talks to a model through pi-ai.
//
// - tiny: `tiny-pi` + `@mariozechner/pi-ai`, the README's `fromPiAi` adapter (the app's stream options, here the
//   API key, passed through), `runAgentLoop` with one tool;
// - pi: `@mariozechner/pi-agent-core`'s `Agent` (whose default stream is pi-ai's `streamSimple`) with the same
//   tool and `getApiKey`.
// Both run the same first exchange against a local OpenAI-compatible server (`/v1/chat/completions`, streamed,
// a bearer key required): a request answered with a call of `read`, the tool, a request answered with text.
// pi-ai loads its OpenAI provider (and the `openai` SDK) on the first request, in both apps.
//
// Measured, each sample in a fresh Node process or a fresh Chromium context (Vite-built pages, served no-store
// by the same local server, so the endpoint is same-origin): the time from the first `import` to the end of
// the first run; and for the browser the bytes (gzip -9) of the files the page fetched before its first run
// could start ("up front": the entry chunk, its static imports and the .wasm) and by the end of it (plus the
// chunks pi-ai loads on demand).
//
// Alone: `node bench/feel-app.mjs [--samples=5]`; bench/run.mjs runs it in its "what users feel" step.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import zlib from "node:zlib";
import { API_KEY, piApp, tinyApp } from "./feel-app-run.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..");
const OUT = path.join(HERE, "out", "feel-app");
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// --- the local OpenAI-compatible server (and the pages' static files) ----------------------------------------

const chunk = (delta, finish = null, extra = {}) =>
  `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1, model: "local-model", choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;

/** The two answers: a call of `read` while the conversation has no tool result, then text. */
function completion(body) {
  const answered = body.messages?.some((m) => m.role === "tool");
  const usage = { usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 } };
  if (!answered) {
    return [
      chunk({ role: "assistant", content: "Reading it." }),
      chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "read", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":"README.md"}' } }] }),
      chunk({}, "tool_calls", usage),
      "data: [DONE]\n\n",
    ];
  }
  return [chunk({ role: "assistant", content: "It is " }), chunk({ content: "tiny." }), chunk({}, "stop", usage), "data: [DONE]\n\n"];
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".css": "text/css", ".json": "application/json" };

/** Serves `/v1/chat/completions` and, when `root` is given, its files (no-store); records the files fetched. */
export async function startServer(root) {
  const fetched = [];
  const server = http.createServer((req, res) => {
    if (req.method === "POST" && req.url.endsWith("/chat/completions")) {
      if (req.headers.authorization !== `Bearer ${API_KEY}`) {
        res.writeHead(401, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "bad key" } }));
        return;
      }
      let text = "";
      req.on("data", (d) => (text += d));
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
        for (const part of completion(JSON.parse(text))) res.write(part);
        res.end();
      });
      return;
    }
    const rel = decodeURIComponent(new URL(req.url, "http://x").pathname).replace(/^\/+/, "") || "index.html";
    const file = root && path.join(root, rel);
    if (!file || !file.startsWith(root) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404);
      res.end();
      return;
    }
    fetched.push(rel);
    res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
    res.end(fs.readFileSync(file));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, fetched, close: () => new Promise((r) => server.close(r)) };
}

// --- Node: a fresh process per sample -------------------------------------------------------------------------

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const m = /^--([^=]+)(?:=(.*))?$/.exec(a);
  return m ? [m[1], m[2] ?? true] : [a, true];
}));

if (args.child) {
  const t0 = performance.now();
  let length;
  let t1;
  if (args.child === "tiny") {
    const [tp, ai] = await Promise.all([import(args.entry), import("@mariozechner/pi-ai")]);
    t1 = performance.now();
    length = await tinyApp(tp.runAgentLoop ? tp : tp.default, ai, args.url);
  } else {
    const core = await import("@mariozechner/pi-agent-core");
    t1 = performance.now();
    length = await piApp(core, args.url);
  }
  const t2 = performance.now();
  process.stdout.write(JSON.stringify({ import_ms: t1 - t0, first_run_ms: t2 - t1, total_ms: t2 - t0, messages: length }));
  process.exit(0);
}

function child(argv) {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [fileURLToPath(import.meta.url), ...argv], { cwd: HERE });
    let out = "", err = "";
    c.stdout.on("data", (d) => (out += d));
    c.stderr.on("data", (d) => (err += d));
    c.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`feel-app child ${argv.join(" ")} exited with ${code}: ${err.slice(-1500)}`))));
  });
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
    for (const key of Object.keys(list[0] ?? {}).filter((k) => k.endsWith("_bytes"))) out[lib][key] = median(list.map((s) => s[key]));
  }
  return out;
}

/** Import to first run in Node, `samples` fresh processes per app, interleaved. */
export async function appNode(tinyEntry, samples) {
  const server = await startServer(null);
  const out = { tiny: [], pi: [] };
  try {
    for (let i = 0; i < samples; i++) {
      out.tiny.push(await child(["--child=tiny", `--entry=${pathToFileURL(tinyEntry).href}`, `--url=${server.url}`]));
      out.pi.push(await child(["--child=pi", `--url=${server.url}`]));
    }
  } finally {
    await server.close();
  }
  for (const [lib, list] of Object.entries(out)) if (list.some((s) => s.messages !== 4)) throw new Error(`${lib} app: a run ended with ${list.find((s) => s.messages !== 4).messages} messages`);
  return summarize(out);
}

// --- the browser: Vite-built pages, a fresh context per sample --------------------------------------------------

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>feel-app</title>
<script>window.__t0 = performance.now();</script>
<script type="module" src="./entry.mjs"></script>
<body></body>
`;
const ENTRY = {
  tiny: `import * as tp from "tiny-pi";
import * as ai from "@mariozechner/pi-ai";
import { tinyApp } from ${JSON.stringify(path.join(HERE, "feel-app-run.mjs"))};
const t1 = performance.now();
const messages = await tinyApp(tp, ai, location.origin);
const t2 = performance.now();
window.__feel = { import_ms: t1 - window.__t0, first_run_ms: t2 - t1, total_ms: t2 - window.__t0, messages };
`,
  pi: `import * as core from "@mariozechner/pi-agent-core";
import { piApp } from ${JSON.stringify(path.join(HERE, "feel-app-run.mjs"))};
const t1 = performance.now();
const messages = await piApp(core, location.origin);
const t2 = performance.now();
window.__feel = { import_ms: t1 - window.__t0, first_run_ms: t2 - t1, total_ms: t2 - window.__t0, messages };
`,
};

/** Builds both apps' pages with Vite (minified, as an app ships) into bench/out/feel-app/<lib>/dist. */
async function buildPages() {
  const { build } = await import("vite");
  const dirs = {};
  for (const lib of ["tiny", "pi"]) {
    const dir = path.join(OUT, lib);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "index.html"), PAGE);
    fs.writeFileSync(path.join(dir, "entry.mjs"), ENTRY[lib]);
    await build({
      configFile: false, root: dir, logLevel: "silent",
      resolve: { alias: { "tiny-pi": path.join(ROOT, "pkg") } },
      build: {
        outDir: path.join(dir, "dist"), target: "es2022", minify: true,
        // @opentelemetry/api is an optional peer of pi-ai's Mistral SDK, not installed: left out of the bundle.
        rollupOptions: { external: [/^@opentelemetry\//] },
      },
    });
    dirs[lib] = path.join(dir, "dist");
  }
  return dirs;
}

const gzipSize = (file) => zlib.gzipSync(fs.readFileSync(file), { level: 9 }).length;

/** Import to first run in Chromium, and the bytes fetched up front and by the end of the first run. */
export async function appBrowser(samples) {
  const dirs = await buildPages();
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"] });
  const servers = {};
  const out = { tiny: [], pi: [] };
  try {
    for (const [lib, dir] of Object.entries(dirs)) servers[lib] = await startServer(dir);
    for (let i = 0; i < samples; i++) {
      for (const lib of Object.keys(out)) {
        const server = servers[lib];
        const context = await browser.newContext();
        const page = await context.newPage();
        const errors = [];
        page.on("pageerror", (e) => errors.push(e.message));
        server.fetched.length = 0;
        await page.goto(`${server.url}/index.html`);
        await page.waitForFunction(() => window.__feel !== undefined, undefined, { timeout: 30_000 }).catch(() => {});
        const result = await page.evaluate(() => window.__feel ?? null);
        await context.close();
        if (!result || errors.length) throw new Error(`${lib} app page: ${errors.join("; ") || "no result"}`);
        const all = [...new Set(server.fetched)];
        out[lib].push({ ...result, fetched: all });
      }
    }
  } finally {
    await browser.close();
    for (const s of Object.values(servers)) await s.close();
  }
  const summary = summarize(Object.fromEntries(Object.entries(out).map(([lib, list]) => [lib, list.map(({ fetched, ...r }) => r)])));
  for (const [lib, dir] of Object.entries(dirs)) {
    const eager = eagerFiles(dir);
    const fetched = out[lib][0].fetched.filter((f) => f !== "index.html");
    summary[lib].up_front_gz_bytes = eager.reduce((a, f) => a + gzipSize(path.join(dir, f)), 0);
    summary[lib].first_run_gz_bytes = [...new Set([...eager, ...fetched])].reduce((a, f) => a + gzipSize(path.join(dir, f)), 0);
    summary[lib].up_front_files = eager;
    summary[lib].first_run_files = fetched;
  }
  return summary;
}

/** The files a page loads before its entry runs: the entry chunk, its static imports, the assets they name. */
function eagerFiles(dir) {
  const html = fs.readFileSync(path.join(dir, "index.html"), "utf8");
  const files = new Set();
  const visit = (rel) => {
    if (files.has(rel) || !fs.existsSync(path.join(dir, rel))) return;
    files.add(rel);
    if (!rel.endsWith(".js")) return;
    const code = fs.readFileSync(path.join(dir, rel), "utf8");
    // Static imports only (`import ... from "./x.js"`, `import "./x.js"`): dynamic `import("./x.js")` loads later.
    for (const m of code.matchAll(/(?:^|[;\s}])import(?:[\w\s{},*$]*from)?\s*["'](\.\/[^"']+)["']/g)) visit(path.posix.join(path.posix.dirname(rel), m[1]));
    // Assets the chunk names by URL (the .wasm, fetched when the module is initialised).
    for (const m of code.matchAll(/["'`](?:\.\/|\/)?(assets\/[^"'`]+\.wasm)["'`]/g)) visit(m[1]);
    for (const m of code.matchAll(/["'`]\.\/([^"'`/]+\.wasm)["'`]/g)) visit(path.posix.join(path.posix.dirname(rel), m[1]));
  };
  for (const m of html.matchAll(/<(?:script[^>]*src|link[^>]*href)="\/?([^"]+)"/g)) visit(m[1]);
  return [...files];
}

/** The report's lines for `appNode` and `appBrowser`. */
export function appLines(app) {
  const fmt = (x) => x.toFixed(0);
  const ms = (x) => `${fmt(x.total_ms)} ms (${fmt(x.total_ms_min)}..${fmt(x.total_ms_max)}): import ${fmt(x.import_ms)} + first run ${fmt(x.first_run_ms)}`;
  const lines = ["  an app on a real provider (tiny: tiny-pi + pi-ai via the README's fromPiAi; pi: pi-agent-core's Agent), a local",
    "  OpenAI-compatible server; import to the end of a first tool round trip (bench/feel-app.mjs):"];
  if (app.node) {
    lines.push(`    Node     tiny ${ms(app.node.tiny)}`, `             pi   ${ms(app.node.pi)}`, `             tiny/pi ${(app.node.tiny.total_ms / app.node.pi.total_ms).toFixed(2)}`);
  }
  if (app.browser) {
    const b = app.browser;
    lines.push(`    Chromium tiny ${ms(b.tiny)}`, `             pi   ${ms(b.pi)}`, `             tiny/pi ${(b.tiny.total_ms / b.pi.total_ms).toFixed(2)}`);
    const kb = (x) => (x / 1000).toFixed(1);
    lines.push(`    bytes a page loads, gzip -9: up front tiny ${kb(b.tiny.up_front_gz_bytes)} KB, pi ${kb(b.pi.up_front_gz_bytes)} KB (tiny/pi ${(b.tiny.up_front_gz_bytes / b.pi.up_front_gz_bytes).toFixed(2)});` +
      ` by the end of the first run tiny ${kb(b.tiny.first_run_gz_bytes)} KB, pi ${kb(b.pi.first_run_gz_bytes)} KB`);
  }
  return lines;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const tinyEntry = path.resolve(args.tiny ?? path.join(ROOT, "pkg/node/tiny_pi.mjs"));
  const samples = Number(args.samples ?? 5);
  const t0 = Date.now();
  const app = { node: await appNode(tinyEntry, samples), browser: await appBrowser(samples) };
  console.log(appLines(app).join("\n"));
  console.error(`(${((Date.now() - t0) / 1000).toFixed(1)} s; bench/out/feel-app/ holds the pages)`);
}
