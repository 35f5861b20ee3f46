// Issue 5, item 4: no leaks. 10,000 README round trips in one instance (a child Node process, run
// inside the app fixture with --expose-gc), the wasm memory and the JS heap sampled every 1,000 runs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, test } from "node:test";
import { promisify } from "node:util";
import { appSrcDir, ensureFixture } from "./app-fixture.mjs";

const RUNS = 10_000;
const PAGE = 64 * 1024; // one wasm page: the allocator may take one more page once, not keep taking them
const MB = 1024 * 1024;

let dir;
before(async () => {
  const fixture = await ensureFixture();
  dir = path.join(fixture, "leak-app");
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "node"), { recursive: true });
  fs.copyFileSync(path.join(appSrcDir, "round-trip.mjs"), path.join(dir, "round-trip.mjs"));
  fs.copyFileSync(path.join(appSrcDir, "node", "leak.mjs"), path.join(dir, "node", "leak.mjs"));
});

async function sample(...flags) {
  const t0 = performance.now();
  const { stdout } = await promisify(execFile)(process.execPath, ["--expose-gc", "leak.mjs", String(RUNS), ...flags], { cwd: path.join(dir, "node") });
  const out = JSON.parse(stdout);
  const kb = (b) => `${Math.round(b / 1024)} KB`;
  process.stderr.write(`[leak] ${RUNS} runs${flags.length ? ` (${flags.join(" ")})` : ""} in ${((performance.now() - t0) / 1000).toFixed(1)}s: ` +
    `${out.samples.map((s) => `${s.runs}: wasm ${kb(s.wasm)} heap ${kb(s.heap)}`).join("; ")}\n`);
  assert.equal(out.failures, 0, "every run was a correct README round trip");
  return out.samples;
}

test("runs that free() their objects: wasm memory and JS heap flat after the first 1,000 runs", { timeout: 300_000 }, async () => {
  const s = await sample();
  const [first, last] = [s[0], s.at(-1)];
  assert.ok(last.wasm - first.wasm <= PAGE, `wasm memory grew ${last.wasm - first.wasm} bytes from run ${first.runs} to ${last.runs}`);
  assert.ok(last.heap - first.heap <= MB, `JS heap grew ${last.heap - first.heap} bytes from run ${first.runs} to ${last.runs}`);
});

test("runs that never call free(): finalizers bound the memory (no growth over the last 3,000 runs)", { timeout: 300_000 }, async () => {
  // Finalizers run some time after a GC, so memory climbs for a while (each run leaves ~6 KB of model and
  // registry to them); it must stop climbing. The allocator may still take a few pages while it settles;
  // a leak of 100 bytes a run would take more than these four over the last 3,000 runs.
  const s = await sample("--no-free");
  const early = s.filter((x) => x.runs <= RUNS - 3_000);
  const maxOf = (xs, k) => Math.max(...xs.map((x) => x[k]));
  assert.ok(s.at(-1).wasm <= maxOf(early, "wasm") + 4 * PAGE, `wasm memory still growing: ${s.map((x) => x.wasm).join(", ")}`);
  assert.ok(s.at(-1).heap <= maxOf(early, "heap") + MB, `JS heap still growing: ${s.map((x) => x.heap).join(", ")}`);
});
