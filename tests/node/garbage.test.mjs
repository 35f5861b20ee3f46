// Issue 5, item 2, in Node: the generated garbage cases of garbage-gen.mjs against the installed package,
// each followed by a good README round trip on the same instance; then the findings kept as fixed cases.
//
// The cases run in a child Node process (this file, with TINY_PI_GARBAGE_CHILD=1), so that an exception
// escaping from the wasm bridge, a trap, or a synchronous hang is observed and counted instead of taking the
// test runner down. When a case poisons the instance the child stops, and a fresh child goes on with the
// next case (each case replays alone from its seed and index).
//
//   GARBAGE_CASES=20000 node --test tests/node/garbage.test.mjs    # a longer campaign (default 2,000)
//   GARBAGE_SEED=7 ... / GARBAGE_SEED=random                       # another seed (default 1); the seed is printed
//   GARBAGE_CASE=123 GARBAGE_SEED=7 ...                            # replay one case, printing what it did
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = fileURLToPath(import.meta.url);
// A child that prints nothing for this long is stuck in a synchronous loop (a timer could not fire).
const WATCHDOG_MS = Number(process.env.GARBAGE_WATCHDOG_MS ?? 30_000);
const DEADLINE_MS = Number(process.env.GARBAGE_DEADLINE_MS ?? 5_000);
const MAX_CHILDREN = 200;

if (process.env.TINY_PI_GARBAGE_CHILD) {
  await child();
} else {
  parentTests();
}

// --- the child: runs cases and prints one JSON line per event ------------------------------------

async function child() {
  const { runCases } = await import("./garbage-gen.mjs");
  const tp = await import(pathToFileURL(process.env.TINY_PI_ENTRY).href);
  const listeners = new Set();
  const onError = (e) => {
    const m = `${e?.constructor?.name ?? typeof e}: ${e?.message ?? String(e)}`;
    for (const l of listeners) l(m);
  };
  // With these listeners an escaped exception is counted and the process lives on.
  process.on("uncaughtException", onError);
  process.on("unhandledRejection", onError);
  const out = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
  const result = await runCases(
    {
      tp,
      macrotask: () => new Promise((r) => setImmediate(r)),
      onEscape: (l) => (listeners.add(l), () => listeners.delete(l)),
      deadlineMs: DEADLINE_MS,
      report: out,
    },
    { seed: Number(process.env.GARBAGE_SEED_VALUE), from: Number(process.env.GARBAGE_FROM), to: Number(process.env.GARBAGE_TO), regressions: process.env.GARBAGE_REGRESSIONS === "1" },
  );
  out({ done: true, ...result });
  // Cases that never settled may keep the event loop alive.
  process.exit(0);
}

// --- the parent: the tests -----------------------------------------------------------------------

function parentTests() {
  const seedEnv = process.env.GARBAGE_SEED;
  const seed = seedEnv === "random" ? Math.floor(Math.random() * 2 ** 31) : Number(seedEnv ?? 1);
  const single = process.env.GARBAGE_CASE !== undefined ? Number(process.env.GARBAGE_CASE) : undefined;
  const cases = Number(process.env.GARBAGE_CASES ?? 2_000);

  let entry;
  const setup = async () => {
    const { loadTinyPi, fixtureDir } = await import("./app-fixture.mjs");
    await loadTinyPi(); // installs pkg/ into the app fixture and writes the entry module the child imports
    entry = path.join(fixtureDir, "tiny-pi-entry.mjs");
  };

  test(`garbage: ${single !== undefined ? `generated case ${single}` : `${cases} generated cases`} (seed ${seed}), each followed by a good run on the same instance`, { timeout: 30 * 60_000 }, async (t) => {
    await setup();
    const { tally, summary } = await import("./garbage-gen.mjs");
    const t0 = performance.now();
    const [from, to] = single !== undefined ? [single, single + 1] : [0, cases];
    const { lines, children } = await campaign({ entry, seed, from, to, verbose: single !== undefined });
    const seconds = (performance.now() - t0) / 1000;
    const counts = tally(lines);
    const text = summary(counts, "Node", seed, seconds);
    console.log(`${text} (${children} child process${children === 1 ? "" : "es"})`);
    t.diagnostic(text);
    printFindings(counts.findings, seed);
    assert.equal(counts.total, to - from, "every case ran");
    assert.equal(counts.findings.length, 0, `${counts.findings.length} cases trapped, hung, escaped or gave an unhelpful error (listed above; replay one with GARBAGE_SEED=${seed} GARBAGE_CASE=<i>)`);
  });

  test("garbage: the inputs the generator found, as fixed cases, each followed by a good run", { timeout: 10 * 60_000 }, async (t) => {
    await setup();
    const { REGRESSIONS, tally } = await import("./garbage-gen.mjs");
    // Each of these settles in microseconds when handled; 10 s of silence is a synchronous hang.
    const { lines } = await campaign({ entry, seed: 0, from: 0, to: REGRESSIONS.length, regressions: true, watchdogMs: 10_000 });
    const counts = tally(lines);
    for (const l of lines.filter((l) => "outcome" in l)) console.log(`  ${l.outcome.padEnd(9)} ${l.what}${l.message ? ` -> ${l.message}` : ""}`);
    assert.equal(counts.total, REGRESSIONS.length);
    assert.equal(counts.findings.length, 0, `${counts.findings.length} of ${REGRESSIONS.length} fixed cases still trap, hang, escape or give an unhelpful error (listed above)`);
  });
}

const brief = (l) => `#${l.i} ${l.outcome}: ${l.what} -> ${l.message ?? ""}`.slice(0, 600);

function printFindings(findings, seed) {
  if (!findings.length) return;
  // Group by outcome and message shape so a bug found a hundred times prints once, with its first case.
  const groups = new Map();
  for (const f of findings) {
    const key = `${f.outcome}: ${(f.message ?? "").replace(/\d+/g, "N").slice(0, 120)}`;
    if (!groups.has(key)) groups.set(key, { first: f, n: 0 });
    groups.get(key).n += 1;
  }
  console.log(`garbage findings (${findings.length} cases, ${groups.size} kinds); replay one with GARBAGE_SEED=${seed} GARBAGE_CASE=<i>:`);
  for (const { first, n } of groups.values()) console.log(`  ${n}x ${brief(first)}`);
}

/** Runs cases [from, to) in as many children as it takes (one more after each poisoned instance). */
async function campaign({ entry, seed, from, to, regressions = false, verbose = false, watchdogMs = WATCHDOG_MS }) {
  const lines = [];
  let next = from;
  let children = 0;
  while (next < to && children < MAX_CHILDREN) {
    children += 1;
    const reached = await runChild({ entry, seed, from: next, to, regressions, verbose, watchdogMs }, lines);
    next = Math.max(reached, next + 1);
  }
  return { lines, children };
}

/** One child from case `from`; resolves with the first case it did not finish. */
function runChild({ entry, seed, from, to, regressions, verbose, watchdogMs }, lines) {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [HERE], {
      env: {
        ...process.env,
        TINY_PI_GARBAGE_CHILD: "1",
        TINY_PI_ENTRY: entry,
        GARBAGE_SEED_VALUE: String(seed),
        GARBAGE_FROM: String(from),
        GARBAGE_TO: String(to),
        GARBAGE_REGRESSIONS: regressions ? "1" : "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let current = { i: from, what: `case ${from}` };
    let finished = false;
    let next = from;
    let stderr = "";
    proc.stderr.on("data", (d) => (stderr = (stderr + d).slice(-2000)));
    let watchdog;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        lines.push({ i: current.i, outcome: "hang", what: current.what, message: `no progress for ${watchdogMs / 1000}s: a synchronous hang (the child was killed)` });
        finished = true;
        next = current.i + 1;
        proc.kill("SIGKILL");
      }, watchdogMs);
    };
    arm();
    readline.createInterface({ input: proc.stdout }).on("line", (raw) => {
      arm();
      let line;
      try {
        line = JSON.parse(raw);
      } catch {
        return; // stray output from the package or the fixture
      }
      if (verbose) console.log(raw);
      if ("start" in line) current = { i: line.start, what: line.what };
      else if ("done" in line) {
        finished = true;
        next = line.next;
      } else if ("outcome" in line) {
        lines.push(line);
        next = line.i + 1;
      }
    });
    proc.on("exit", (code, signal) => {
      clearTimeout(watchdog);
      if (!finished) {
        // The process died: count it against the case that was running (or had just been reported).
        const reported = lines.findLast((l) => l.i === current.i && "outcome" in l);
        if (reported) {
          reported.outcome = "trap";
          reported.message = `${reported.message ?? ""}; then the child process died (${signal ?? `exit ${code}`})`;
        } else lines.push({ i: current.i, outcome: "trap", what: current.what, message: `the child process died (${signal ?? `exit ${code}`}): ${stderr.trim().split("\n").slice(-3).join(" | ")}` });
        next = current.i + 1;
      }
      resolve(next);
    });
  });
}
