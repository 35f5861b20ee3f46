// The package used unchanged by five kinds of app, each installed-by-path (see app-fixture.mjs):
// a Node app (ESM and CommonJS, run as child processes), a TypeScript app (tsc --strict against the
// installed .d.ts), a Vite app (vite build, and the dev server, loaded in headless Chromium; and a Vite app with pi-ai,
// in a folder of its own, which needs @opentelemetry/api, an optional peer of pi-ai's Mistral SDK), an esbuild app (the
// web builds, each .wasm imported by its path) and a plain browser page (the package's web build + init(), served
// statically, loaded in headless Chromium).
// The app sources live in tests/app/ and are copied next to the fixture's node_modules.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { EXPECTED_EVENTS } from "../app/round-trip.mjs";
import { appSrcDir, ensureFixture, pkgDir, repoRoot, toolPath } from "./app-fixture.mjs";
import { launchChromium, runPage } from "./browser.mjs";
import { serveStatic } from "./static-server.mjs";

const run = promisify(execFile);
const EXPECTED = {
  problems: [],
  summary: { events: EXPECTED_EVENTS, reason: "stop", steps: 2, requests: 2, executions: 1, roles: "user,assistant,toolResult,assistant" },
};

let fixture;
let appDir;
before(async () => {
  fixture = await ensureFixture();
  appDir = path.join(fixture, "app");
  fs.rmSync(appDir, { recursive: true, force: true });
  fs.cpSync(appSrcDir, appDir, { recursive: true });
});

/** Runs a step, printing what it does and how long it took; a failure says which step. */
async function step(what, fn) {
  const t0 = performance.now();
  try {
    return await fn();
  } catch (e) {
    const out = [e.stdout, e.stderr].filter(Boolean).join("\n").trim();
    throw new Error(`${what} failed${out ? `:\n${out}` : `: ${e.message}`}`);
  } finally {
    process.stderr.write(`[app-targets] ${what}: ${((performance.now() - t0) / 1000).toFixed(1)}s\n`);
  }
}

describe("Node app", () => {
  for (const entry of ["main.mjs", "main.cjs"]) {
    test(`node ${entry} (no flags, no init) runs the README round trip`, { timeout: 60_000 }, async () => {
      const { stdout } = await step(`node app/node/${entry}`, () => run(process.execPath, [entry], { cwd: path.join(appDir, "node") }));
      assert.deepEqual(JSON.parse(stdout), EXPECTED);
    });
  }
});

describe("TypeScript app", () => {
  for (const config of ["tsconfig.json", "tsconfig.bundler.json", "tsconfig.pi-ai.json"]) {
    test(`tsc --strict --noEmit (${config}) passes against the installed .d.ts`, { timeout: 120_000 }, async () => {
      const tsc = await toolPath("typescript/bin/tsc");
      await step(`tsc -p app/ts/${config}`, () => run(process.execPath, [tsc, "-p", path.join(appDir, "ts", config)], { cwd: fixture }));
    });
  }

  test("the @ts-expect-error lines are load-bearing: without them tsc reports each one", { timeout: 120_000 }, async () => {
    // Strip the directives: every one of them must turn into a real type error.
    const src = fs.readFileSync(path.join(appDir, "ts", "app.ts"), "utf8");
    const expected = (src.match(/^\s*\/\/ @ts-expect-error/gm) ?? []).length;
    fs.writeFileSync(path.join(appDir, "ts", "loose.ts"), src.replace(/^\s*\/\/ @ts-expect-error.*$/gm, ""));
    fs.writeFileSync(path.join(appDir, "ts", "tsconfig.loose.json"), JSON.stringify({ extends: "./tsconfig.json", files: ["loose.ts"] }));
    const tsc = await toolPath("typescript/bin/tsc");
    const out = await run(process.execPath, [tsc, "-p", path.join(appDir, "ts", "tsconfig.loose.json")], { cwd: fixture }).then(
      () => "",
      (e) => e.stdout,
    );
    const errors = out.split("\n").filter((l) => /loose\.ts\(\d+,\d+\): error/.test(l));
    assert.equal(errors.length, expected, `each of the ${expected} directives marks a real error:\n${out}`);
  });
});

describe("browser apps in headless Chromium", () => {
  let browser;
  before(async () => {
    browser = await step("launch Chromium", launchChromium);
  });
  after(async () => browser?.close());

  test("Vite: `vite build` of a page importing tiny-pi, loaded from a static server", { timeout: 180_000 }, async () => {
    const vite = await toolPath("vite/bin/vite.js");
    const root = path.join(appDir, "vite");
    const outDir = path.join(fixture, "vite-dist");
    await step("vite build app/vite", () => run(process.execPath, [vite, "build", root, "--outDir", outDir, "--emptyOutDir", "--logLevel", "warn"], { cwd: fixture }));
    const assets = fs.readdirSync(path.join(outDir, "assets"));
    assert.ok(assets.some((f) => f.endsWith(".wasm")), `the .wasm is emitted as an asset: ${assets}`);
    const server = await serveStatic(outDir);
    try {
      const page = await step("load the Vite build in Chromium", () => runPage(browser.context, `${server.url}/index.html`));
      assert.deepEqual(page.errors, []);
      assert.equal(page.status, "done", JSON.stringify(page.result));
      assert.deepEqual(page.result, EXPECTED);
    } finally {
      await server.close();
    }
  });

  test("esbuild: the web builds with each .wasm imported by its path (the file loader), handed to init", { timeout: 180_000 }, async () => {
    const esbuild = await import(pathToFileURL(await toolPath("esbuild-wasm/lib/main.js")).href);
    const root = path.join(appDir, "esbuild");
    const outDir = path.join(fixture, "esbuild-dist");
    fs.rmSync(outDir, { recursive: true, force: true });
    await step("esbuild app/esbuild/main.js", () =>
      esbuild.build({ entryPoints: [path.join(root, "main.js")], bundle: true, format: "esm", outdir: outDir, loader: { ".wasm": "file" }, logLevel: "warning", absWorkingDir: fixture }));
    fs.copyFileSync(path.join(root, "index.html"), path.join(outDir, "index.html"));
    const emitted = fs.readdirSync(outDir).filter((f) => f.endsWith(".wasm"));
    assert.equal(emitted.length, 2, `both .wasm files are emitted: ${emitted}`);
    const server = await serveStatic(outDir);
    try {
      const page = await step("load the esbuild bundle in Chromium", () => runPage(browser.context, `${server.url}/index.html`));
      assert.deepEqual(page.errors, []);
      assert.equal(page.status, "done", JSON.stringify(page.result));
      assert.deepEqual(page.result, EXPECTED);
    } finally {
      await server.close();
    }
  });

  test("Vite dev server: the same page served by `vite` (dependency pre-bundling and all), no config", { timeout: 120_000 }, async () => {
    const { createServer } = await import(pathToFileURL(await toolPath("vite/dist/node/index.js")).href);
    // `force`: Vite keeps its pre-bundled deps across runs by lockfile hash; a rebuilt tiny-pi of the same
    // version would be served stale.
    const server = await createServer({
      root: path.join(appDir, "vite"), configFile: false, logLevel: "warn",
      optimizeDeps: { force: true }, server: { host: "127.0.0.1", port: 0 },
    });
    await server.listen();
    try {
      const page = await step("load the Vite dev server's page in Chromium", () => runPage(browser.context, `${server.resolvedUrls.local[0]}index.html`));
      assert.deepEqual(page.errors, []);
      assert.equal(page.status, "done", JSON.stringify(page.result));
      assert.deepEqual(page.result, EXPECTED);
    } finally {
      await server.close();
    }
  });

  test("Vite + pi-ai: `vite build` needs @opentelemetry/api (an optional peer of pi-ai's Mistral SDK); with it the app builds and runs", { timeout: 300_000 }, async () => {
    // A folder of its own outside the repository, as a user's app: tiny-pi, pi-ai and vite in its node_modules
    // (resolved from there, not from the repository's), installed from the npm cache when it has them.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-vite-pi-ai-"));
    try {
      fs.cpSync(appSrcDir, path.join(dir, "app"), { recursive: true });
      fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "vite-pi-ai-app", private: true, type: "module" }));
      const version = (name) => JSON.parse(fs.readFileSync(path.join(repoRoot, "node_modules", name, "package.json"), "utf8")).version;
      const npm = (...args) => run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", ...args], { cwd: dir });
      await step("npm install tiny-pi, pi-ai and vite (a new app)", () =>
        npm("--install-links", path.relative(dir, pkgDir), `@mariozechner/pi-ai@${version("@mariozechner/pi-ai")}`, `vite@${version("vite")}`));
      const root = path.join(dir, "app", "vite", "pi-ai");
      const outDir = path.join(dir, "dist");
      const build = () => run(process.execPath, [path.join(dir, "node_modules", "vite", "bin", "vite.js"), "build", root, "--outDir", outDir, "--emptyOutDir", "--logLevel", "warn"], { cwd: dir, env: { ...process.env, NO_COLOR: "1" } });

      const without = await step("vite build without @opentelemetry/api", () => build().then(() => "", (e) => `${e.stdout}${e.stderr}`));
      assert.match(without, /"trace" is not exported by "__vite-optional-peer-dep:@opentelemetry\/api:@mistralai\/mistralai"/, "the build fails as the README says");

      await step("npm install @opentelemetry/api", () => npm("@opentelemetry/api@1"));
      await step("vite build with @opentelemetry/api", build);
      const server = await serveStatic(outDir);
      try {
        const page = await step("load the pi-ai Vite build in Chromium", () => runPage(browser.context, `${server.url}/index.html`));
        assert.deepEqual(page.errors, []);
        assert.equal(page.status, "done", JSON.stringify(page.result));
        assert.deepEqual(page.result, {
          problems: [],
          summary: { reason: "stop", steps: 2, roles: "user,assistant,toolResult,assistant", piAiMessage: true, text: "read: # README.md" },
        });
      } finally {
        await server.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("plain page: `import init from .../tiny-pi/web/tiny_pi.js; await init()`", { timeout: 60_000 }, async () => {
    // Serve the fixture so the page loads the npm-installed package at /node_modules/tiny-pi/web/.
    assert.ok(fs.existsSync(path.join(fixture, "node_modules", "tiny-pi", "web", "tiny_pi.js")), "the installed package has web/tiny_pi.js");
    const server = await serveStatic(fixture);
    try {
      const page = await step("load the plain page in Chromium", () => runPage(browser.context, `${server.url}/app/web/index.html`));
      assert.deepEqual(page.errors, []);
      assert.equal(page.status, "done", JSON.stringify(page.result));
      assert.deepEqual(page.result, EXPECTED);
    } finally {
      await server.close();
    }
  });
});
