// Issue 5, item 2, in headless Chromium: the same generator (tests/node/garbage-gen.mjs) against the browser
// build pkg/web, served by scripts/serve.mjs. Each case is followed by a good README round trip on the same
// instance; when a case poisons the instance the page is reloaded (a fresh instance) and the run goes on.
//
//   node --test tests/e2e/garbage.test.mjs                        # 500 cases (GARBAGE_BROWSER_CASES or GARBAGE_CASES for more)
//   GARBAGE_SEED=7 GARBAGE_CASE=123 node --test tests/e2e/garbage.test.mjs   # replay one case
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join, dirname, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { test, before, after } from "node:test";
import { startPageServer, launchBrowser } from "./harness.mjs";
import { REGRESSIONS, tally, summary } from "../node/garbage-gen.mjs";

const TESTS = join(dirname(fileURLToPath(import.meta.url)), "..");
const seedEnv = process.env.GARBAGE_SEED;
const SEED = seedEnv === "random" ? Math.floor(Math.random() * 2 ** 31) : Number(seedEnv ?? 1);
const SINGLE = process.env.GARBAGE_CASE !== undefined ? Number(process.env.GARBAGE_CASE) : undefined;
const CASES = Number(process.env.GARBAGE_BROWSER_CASES ?? process.env.GARBAGE_CASES ?? 500);
const BATCH = 50;
const DEADLINE_MS = Number(process.env.GARBAGE_DEADLINE_MS ?? 5_000);
// A batch that has not come back by then is stuck in a synchronous loop inside the page.
const WATCHDOG_MS = Number(process.env.GARBAGE_WATCHDOG_MS ?? 60_000);

let server;
let browser;

before(async () => {
  server = await startPageServer();
  browser = await launchBrowser();
  // The generator and the round trip live under tests/, which the page server does not serve: the browser
  // context serves them itself under /__garbage/, on the page's origin, next to /pkg/.
  await browser.context.route(`${server.url}__garbage/**`, async (route) => {
    const rel = decodeURIComponent(new URL(route.request().url()).pathname.slice("/__garbage/".length));
    if (rel === "index.html") {
      return route.fulfill({ contentType: "text/html", body: "<!doctype html><meta charset=utf-8><title>garbage</title><body>garbage cases</body>" });
    }
    const file = normalize(join(TESTS, rel));
    if (!file.startsWith(TESTS + sep) || !file.endsWith(".mjs")) return route.fulfill({ status: 403, body: "forbidden" });
    return route.fulfill({ contentType: "text/javascript", body: await readFile(file, "utf8") });
  });
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens a fresh page (a fresh wasm instance) with the generator loaded and an escape hook installed. */
async function openPage() {
  const page = await browser.context.newPage();
  // Every report line comes over the console as it happens, so a page that freezes mid-batch loses none.
  const progress = { current: null, lines: [] };
  page.on("console", (m) => {
    const t = m.text();
    if (!t.startsWith("__garbage ")) return;
    const line = JSON.parse(t.slice("__garbage ".length));
    if ("start" in line) progress.current = { i: line.start, what: line.what };
    else progress.lines.push(line);
  });
  await page.goto(`${server.url}__garbage/index.html`);
  await page.evaluate(async () => {
    const init = await import("/pkg/web/tiny_pi.js");
    const lesson = await import("/pkg/lesson/tiny_pi_lesson.js");
    await Promise.all([init.default(), lesson.default()]);
    const gen = await import("/__garbage/node/garbage-gen.mjs");
    const listeners = new Set();
    const onError = (m) => {
      for (const l of listeners) l(m);
    };
    // Counted, and kept off the console: an escaped exception is reported as a finding of its case.
    addEventListener("error", (e) => {
      e.preventDefault();
      onError(`${e.error?.constructor?.name ?? "Error"}: ${e.message}`);
    });
    addEventListener("unhandledrejection", (e) => {
      e.preventDefault();
      onError(`unhandled rejection: ${e.reason?.message ?? String(e.reason)}`);
    });
    const channel = new MessageChannel();
    const waiting = [];
    channel.port1.onmessage = () => waiting.shift()?.();
    window.__garbage = {
      gen,
      env: {
        // The main entry's exports, and the lesson entry's own (ScriptedModel, the trace checks) beside them.
        tp: { ...lesson, ...init },
        // A macrotask without setTimeout's 4 ms clamp.
        macrotask: () => new Promise((r) => {
          waiting.push(r);
          channel.port2.postMessage(0);
        }),
        onEscape: (l) => (listeners.add(l), () => listeners.delete(l)),
      },
    };
  });
  return { page, progress };
}

/** Runs cases [from, to) in batches; reopens the page after a poisoned instance or a stuck batch. */
async function campaign({ from, to, regressions = false, watchdogMs = WATCHDOG_MS }) {
  const lines = [];
  let pages = 1;
  let { page, progress } = await openPage();
  let next = from;
  try {
    while (next < to) {
      const end = Math.min(next + BATCH, to);
      const run = page.evaluate(async ({ seed, from, to, regressions, deadlineMs }) => {
        const { gen, env } = window.__garbage;
        const report = (l) => console.log(`__garbage ${JSON.stringify(l)}`);
        return gen.runCases({ ...env, deadlineMs, report }, { seed, from, to, regressions });
      }, { seed: SEED, from: next, to: end, regressions, deadlineMs: DEADLINE_MS });
      let timer;
      const stuck = new Promise((resolve) => (timer = setTimeout(() => resolve(null), watchdogMs)));
      const batch = await Promise.race([run.catch((e) => ({ error: e })), stuck]);
      clearTimeout(timer);
      lines.push(...progress.lines.splice(0));
      if (batch && !batch.error) {
        next = batch.next;
        if (!batch.poisoned) continue;
      } else {
        const c = progress.current ?? { i: next, what: `case ${next}` };
        if (lines.at(-1)?.i === c.i) c.i += 1; // it froze between cases
        const why = batch ? `the page failed: ${batch.error.message.split("\n")[0]}` : `no answer for ${watchdogMs / 1000}s: a synchronous hang`;
        lines.push({ i: c.i, outcome: batch ? "trap" : "hang", what: c.what, message: why });
        next = c.i + 1;
      }
      // A poisoned or stuck instance: go on with a fresh one.
      await page.close({ runBeforeUnload: false }).catch(() => {});
      ({ page, progress } = await openPage());
      pages += 1;
    }
  } finally {
    await page.close().catch(() => {});
  }
  return { lines, pages };
}

function printFindings(findings, seed) {
  if (!findings.length) return;
  const groups = new Map();
  for (const f of findings) {
    const key = `${f.outcome}: ${(f.message ?? "").replace(/\d+/g, "N").slice(0, 120)}`;
    if (!groups.has(key)) groups.set(key, { first: f, n: 0 });
    groups.get(key).n += 1;
  }
  console.log(`garbage findings in Chromium (${findings.length} cases, ${groups.size} kinds); replay one with GARBAGE_SEED=${seed} GARBAGE_CASE=<i>:`);
  for (const { first, n } of groups.values()) console.log(`  ${n}x #${first.i} ${first.outcome}: ${first.what} -> ${first.message ?? ""}`.slice(0, 600));
}

test(`garbage in Chromium: ${SINGLE !== undefined ? `generated case ${SINGLE}` : `${CASES} generated cases`} (seed ${SEED}), each followed by a good run on the same instance`, { timeout: 30 * 60_000 }, async (t) => {
  const t0 = performance.now();
  const [from, to] = SINGLE !== undefined ? [SINGLE, SINGLE + 1] : [0, CASES];
  const { lines, pages } = await campaign({ from, to });
  const counts = tally(lines);
  const text = `${summary(counts, "Chromium", SEED, (performance.now() - t0) / 1000)} (${pages} page${pages === 1 ? "" : "s"})`;
  console.log(text);
  t.diagnostic(text);
  if (SINGLE !== undefined) for (const l of lines) console.log(JSON.stringify(l));
  printFindings(counts.findings, SEED);
  assert.equal(counts.total, to - from, "every case ran");
  assert.equal(counts.findings.length, 0, `${counts.findings.length} cases trapped, hung, escaped or gave an unhelpful error (listed above)`);
});

test("garbage in Chromium: the inputs the generator found, as fixed cases, each followed by a good run", { timeout: 10 * 60_000 }, async () => {
  // The fixed cases run in one batch, and some repeat their call thousands of times (20,000 calls in all):
  // on a loaded 2-core machine that batch took more than 10 s, so the watchdog is the campaign's own (a
  // synchronous hang still stops the page's answers for good, and is reported as one).
  const { lines } = await campaign({ from: 0, to: REGRESSIONS.length, regressions: true });
  const counts = tally(lines);
  for (const l of lines) console.log(`  ${l.outcome.padEnd(9)} ${l.what}${l.message ? ` -> ${l.message}` : ""}`);
  assert.equal(counts.total, REGRESSIONS.length);
  assert.equal(counts.findings.length, 0, `${counts.findings.length} of ${REGRESSIONS.length} fixed cases still trap, hang, escape or give an unhelpful error (listed above)`);
});
