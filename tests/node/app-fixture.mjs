// A throwaway Node app that installs the BUILT package by path, the way a user would
// (`npm install ../../pkg`), so the tests exercise pkg/ through its package.json "exports" map
// and not through files in the repo.
//
// Where: .cache/app-fixture/ (git-ignored). Installing is done once per change of pkg/: a stamp
// holds a hash of pkg/'s files, and a run whose pkg/ is unchanged reuses the install.
// How: `npm install --install-links --prefer-offline` — --install-links copies the package the
// way a tarball install does (honouring its "files"), instead of symlinking the repo folder.
// Dev tools (pi-ai, typescript, vite, playwright-core) come from the repo's node_modules when
// the infra's `npm ci` put them there (Node resolves parent folders); missing ones are installed
// into the fixture from the npm cache.
// TINY_PI_PKG=/some/dir points the fixture at another package folder (e.g. an experiment).

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
export const pkgDir = path.resolve(process.env.TINY_PI_PKG ?? path.join(repoRoot, "pkg"));
export const appSrcDir = path.join(repoRoot, "tests", "app");
export const fixtureDir = path.join(repoRoot, ".cache", "app-fixture");

// Tools the app targets need, with the versions the project chose.
const TOOLS = {
  "@mariozechner/pi-ai": "0.73.1",
  typescript: "5",
  vite: "*",
  "playwright-core": "*",
};

const log = (msg) => process.stderr.write(`[app-fixture] ${msg}\n`);

function hashDir(dir) {
  const h = createHash("sha256");
  const walk = (d) => {
    for (const name of fs.readdirSync(d).sort()) {
      if (name === "node_modules") continue;
      const p = path.join(d, name);
      const st = fs.statSync(p);
      if (st.isDirectory()) walk(p);
      else h.update(path.relative(dir, p)).update("\0").update(fs.readFileSync(p)).update("\0");
    }
  };
  walk(dir);
  return h.digest("hex");
}

function versionOk(installedDir, range) {
  try {
    const v = JSON.parse(fs.readFileSync(path.join(installedDir, "package.json"), "utf8")).version;
    return range === "*" || v === range || v.startsWith(`${range}.`);
  } catch {
    return false;
  }
}

// A tool the fixture can already resolve (its own node_modules or the repo's).
function toolPresent(name, range) {
  return [fixtureDir, repoRoot].some((d) => versionOk(path.join(d, "node_modules", name), range));
}

async function withLock(fn) {
  // node --test may run several test files at once; only one of them installs.
  const lock = path.join(repoRoot, ".cache", "app-fixture.lock");
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
      // A lock left by a killed run is stale after 5 minutes.
      if (Date.now() - fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs > 300_000) fs.rmSync(lock, { recursive: true, force: true });
      await delay(100);
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

function npm(args) {
  execFileSync("npm", args, { cwd: fixtureDir, stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" });
}

function readStamp(file) {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

let ready;
/** Installs (if needed) and returns the fixture folder. */
export function ensureFixture() {
  ready ??= withLock(async () => {
    if (!fs.existsSync(path.join(pkgDir, "package.json"))) {
      throw new Error(`app-fixture: no built package at ${pkgDir}; build it first with \`node scripts/build.mjs\``);
    }
    fs.mkdirSync(fixtureDir, { recursive: true });
    const pkgJson = path.join(fixtureDir, "package.json");
    if (!fs.existsSync(pkgJson)) {
      fs.writeFileSync(pkgJson, JSON.stringify({ name: "tiny-pi-app-fixture", private: true, type: "module" }, null, 2));
    }
    const stampFile = path.join(fixtureDir, ".stamp");
    const stamp = `${pkgDir}\n${hashDir(pkgDir)}`;
    const installed = path.join(fixtureDir, "node_modules", "tiny-pi");
    const missingTools = Object.entries(TOOLS).filter(([n, r]) => !toolPresent(n, r)).map(([n, r]) => `${n}@${r}`);
    if (fs.existsSync(installed) && readStamp(stampFile) === stamp && missingTools.length === 0) {
      log(`tiny-pi already installed from ${path.relative(repoRoot, pkgDir) || pkgDir} (pkg/ unchanged)`);
      return fixtureDir;
    }
    const rel = path.relative(fixtureDir, pkgDir);
    const t0 = performance.now();
    fs.rmSync(installed, { recursive: true, force: true });
    const args = ["install", "--install-links", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", rel, ...missingTools];
    log(`npm ${args.join(" ")} (in .cache/app-fixture) ...`);
    try {
      npm(args);
    } catch (e) {
      throw new Error(`app-fixture: npm install failed (${e.stderr?.trim() || e.message}); check that pkg/ builds and the npm cache or registry is reachable`);
    }
    if (fs.lstatSync(installed).isSymbolicLink()) throw new Error("app-fixture: tiny-pi was linked, not installed");
    fs.writeFileSync(stampFile, stamp);
    log(`installed in ${((performance.now() - t0) / 1000).toFixed(1)}s`);
    return fixtureDir;
  });
  return ready;
}

/** Writes a module into the fixture and imports it, so its bare imports resolve as the app's would. */
export async function importFromApp(name, source) {
  const dir = await ensureFixture();
  const file = path.join(dir, name);
  if (!fs.existsSync(file) || fs.readFileSync(file, "utf8") !== source) fs.writeFileSync(file, source);
  return import(pathToFileURL(file).href);
}

/** The tiny-pi exports, imported by name from inside the app (a missing export fails to link): the main
 * entry's, and ScriptedModel and the trace checks from the lesson entry (`tiny-pi/lesson`), as an app's tests
 * would. */
export function loadTinyPi() {
  return importFromApp(
    "tiny-pi-entry.mjs",
    `export { Agent, runAgentLoop, ToolRegistry, validateTranscript } from "tiny-pi";\n` +
      `export { ScriptedModel, prologueTrace, formatTrace, validateTrace } from "tiny-pi/lesson";\n` +
      `export const resolved = import.meta.resolve("tiny-pi");\n` +
      `export const lessonResolved = import.meta.resolve("tiny-pi/lesson");\n`,
  );
}

/** @mariozechner/pi-ai as the app resolves it. */
export function loadPiAi() {
  return importFromApp("pi-ai-entry.mjs", `export * from "@mariozechner/pi-ai";\n`);
}

/** Path of a tool's file as resolved from the fixture (fixture's node_modules, then the repo's). */
export async function toolPath(rel) {
  const dir = await ensureFixture();
  for (const base of [dir, repoRoot]) {
    const p = path.join(base, "node_modules", rel);
    if (fs.existsSync(p)) return p;
  }
  throw new Error(`app-fixture: ${rel} not found in the fixture or the repo's node_modules`);
}

/** The exports of SPEC §8/§9 (approvals, sessions, the Agent) with the loop's, imported by name from inside
 * the app. */
export function loadTinyPiSessions() {
  return importFromApp(
    "tiny-pi-sessions-entry.mjs",
    `export { Agent, parseJSONL, repairTranscript, runAgentLoop, toJSONL, ToolRegistry, validateTranscript } from "tiny-pi";\n` +
      `export { ScriptedModel } from "tiny-pi/lesson";\n`,
  );
}
