#!/usr/bin/env node
// Builds the static site dist/: the playground (www/), the package's lesson entry and browser build (pkg/lesson/, pkg/web/), the conformance
// kit the page shares with the package (cases.json, check.js), esbuild-wasm (bundles a learner's loop of several
// files) and the live model's client (pi-ai's
// openai-completions provider, bundled by Vite). Relative URLs only, so any static host serves the folder as it
// is, at any path. dist/live.html is index.html with the one CSP change the live model needs (connect-src).
// Needs pkg/ (node scripts/build.mjs).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const www = path.join(root, "www");
const dist = path.join(root, "dist");
const staging = `${dist}.staging-${process.pid}`;

/** Files of www/ the page does not load: this folder's notes, the kit's Node command, the bundler's entry. */
const NOT_SERVED = ["README.md", "conformance/cli.js", "conformance/node-worker.js", "live/entry.js"];
/** What the live model may connect to: any https endpoint, and plain http on this machine only. */
export const LIVE_CONNECT_SRC = "'self' https: http://127.0.0.1:* http://localhost:*";

function fail(message) {
  console.error(`site: FAILED: ${message}`);
  process.exit(1);
}

const copy = (from, to) => {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(from, to);
};
const files = (dir) => fs.readdirSync(dir, { recursive: true }).filter((f) => fs.statSync(path.join(dir, f)).isFile());

const t0 = performance.now();
fs.rmSync(staging, { recursive: true, force: true });
process.on("exit", () => fs.rmSync(staging, { recursive: true, force: true }));

// The page and its scripts.
for (const f of files(www)) if (!NOT_SERVED.includes(f.split(path.sep).join("/"))) copy(path.join(www, f), path.join(staging, f));
// The package's lesson entry, which the page loads, and its browser build, which the browser tests load: their
// glue, snippets and .wasm (not their declarations).
for (const folder of ["web", "lesson"]) {
  const from = path.join(root, "pkg", folder);
  if (!fs.existsSync(from) || !files(from).some((f) => f.endsWith(".wasm"))) fail(`pkg/${folder}/ is missing: build the package first (node scripts/build.mjs)`);
  for (const f of files(from)) if (!f.endsWith(".d.ts")) copy(path.join(from, f), path.join(staging, "pkg", folder, f));
}

// esbuild-wasm's browser build, loaded by "Check your own loop" only when a learner's loop is several files (or
// TypeScript): it bundles them into one module in the page.
const esbuildDir = path.join(root, "node_modules", "esbuild-wasm");
for (const f of ["esm/browser.min.js", "esbuild.wasm", "LICENSE.md"]) {
  const from = path.join(esbuildDir, f);
  if (!fs.existsSync(from)) fail(`${from} is missing: run npm ci`);
  copy(from, path.join(staging, "vendor", "esbuild-wasm", path.basename(f)));
}

// The live model's client: one ES module, minified. pi-ai's model catalogue (models.generated.js, ~540 KB, read
// only by getModel() and friends at load) is left out: the user names the endpoint and model, and the provider
// reads nothing from the catalogue.
const NO_CATALOGUE = "\0tiny-pi:no-model-catalogue";
const noCatalogue = {
  name: "tiny-pi-no-model-catalogue",
  enforce: "pre",
  resolveId: (id, importer) => (id === "./models.generated.js" && importer?.includes("pi-ai") ? NO_CATALOGUE : null),
  load: (id) => (id === NO_CATALOGUE ? "export const MODELS = {};" : null),
};
const { build, createLogger } = await import("vite");
// pi-ai's env-api-keys.js names node:fs for Node and Bun only (never run in a browser); Vite says it stubbed it.
// That one notice is expected; every other warning is shown.
const logger = createLogger("warn");
const warn = logger.warn;
logger.warn = (msg, options) => (/"node:fs" has been externalized .*pi-ai\/dist\/env-api-keys\.js/.test(msg) ? undefined : warn(msg, options));
await build({
  configFile: false,
  customLogger: logger,
  logLevel: "warn",
  root,
  plugins: [noCatalogue],
  build: {
    outDir: path.join(staging, "live"),
    emptyOutDir: false,
    minify: true,
    target: "es2022",
    lib: { entry: path.join(www, "live", "entry.js"), formats: ["es"], fileName: () => "pi-openai.js" },
    rolldownOptions: { output: { codeSplitting: false } },
  },
});

// live.html: the same page, marked live, whose CSP may connect to the endpoint the user names.
const index = fs.readFileSync(path.join(www, "index.html"), "utf8");
const csp = index.match(/connect-src 'self';/g) ?? [];
const mode = index.match(/<body data-mode="scripted">/g) ?? [];
if (csp.length !== 1 || mode.length !== 1) fail("www/index.html must hold `connect-src 'self';` and `<body data-mode=\"scripted\">` once each");
fs.writeFileSync(
  path.join(staging, "live.html"),
  index.replace("connect-src 'self';", `connect-src ${LIVE_CONNECT_SRC};`).replace('<body data-mode="scripted">', '<body data-mode="live">'),
);

fs.rmSync(dist, { recursive: true, force: true });
fs.renameSync(staging, dist);
const bundle = fs.readFileSync(path.join(dist, "live", "pi-openai.js"));
const all = files(dist);
const total = all.reduce((n, f) => n + fs.statSync(path.join(dist, f)).size, 0);
console.log(`site: dist/ ready (${all.length} files, ${total} bytes) in ${((performance.now() - t0) / 1000).toFixed(1)}s; live/pi-openai.js ${bundle.length} bytes, ${gzipSync(bundle).length} gzipped`);
