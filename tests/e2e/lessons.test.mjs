// Issue 19: the playground in lessons. The static site served from a sub-path by a plain static server (sirv, no
// project code); one scenario embedded in an iframe on another origin with the README's snippet, its height sent
// to the lesson; the address that restores what a learner sees (a custom script in the hash, a step); unknown
// ids refused; a learner's own loop checked in the page (sandboxed, a hanging one stopped); the live model
// against a local OpenAI chat-completions mock.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sirv from "sirv";
import { pageSuite, openPage, waitForDone, runToEnd, screenshot, count, axeFindings } from "./harness.mjs";

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const DIST = path.join(ROOT, "dist");
const REFERENCE = fs.readFileSync(path.join(ROOT, "tests", "conformance", "reference-loop.mjs"), "utf8");
const suite = pageSuite();
const { withPage } = suite;

/** A plain HTTP server on 127.0.0.1 (any free port) for `handler`: {url, close()}. */
async function listen(handler, host = "127.0.0.1") {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://${host}:${server.address().port}/`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

test("the static site works from a sub-path of a plain static server, with relative URLs only", async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-site-"));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  fs.cpSync(DIST, path.join(root, "lessons", "tiny-pi"), { recursive: true });
  const serve = sirv(root);
  const host = await listen((req, res) => serve(req, res, () => res.writeHead(404).end()));
  t.after(() => host.close());
  const base = new URL("lessons/tiny-pi/", host.url).href;
  const requested = [];
  const problems = [];
  const p = await suite.browser.context.newPage();
  p.on("request", (r) => requested.push(r.url()));
  p.on("pageerror", (e) => problems.push(e.message));
  await p.goto(`${base}?scenario=readme&lang=en&speed=instant`);
  await p.waitForSelector("body[data-ready='true']");
  await runToEnd(p);
  assert.equal(await p.textContent('[data-testid="reason"]'), "stop");
  assert.equal(await count(p, "timeline"), 13);
  await p.goto(`${base}live.html?scenario=plain-stop&lang=en`);
  await p.waitForSelector("body[data-ready='true']");
  assert.equal(await p.getAttribute("body", "data-mode"), "live");
  await p.close();
  const outside = requested.filter((u) => !u.startsWith(base));
  assert.deepEqual(outside, [], "every file came from below the sub-path");
  for (const file of ["pkg/lesson/tiny_pi_lesson_bg.wasm", "conformance/cases.json", "live/pi-openai.js"]) assert.ok(requested.includes(base + file), file);
  assert.deepEqual([...new Set(requested.filter((u) => u.endsWith(".wasm") && !u.includes("esbuild")))], [base + "pkg/lesson/tiny_pi_lesson_bg.wasm"], "the page loads one module of the package");
  assert.deepEqual(problems, []);
});

/** The README's two snippets, the iframe pointed at `site`. */
function lessonPage(site) {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("### Embed one scenario in a lesson"));
  const [iframe, script] = [...section.matchAll(/```html\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.match(iframe, /^<iframe src="https:\/\/YOUR-HOST\/tiny-pi\/\?embed=1&scenario=length/);
  return `<!doctype html><meta charset="utf-8"><title>Lesson</title><h1>Chapter 07</h1>
${iframe.replace("https://YOUR-HOST/tiny-pi/", site)}
<script>window.heights = []; addEventListener("message", (e) => { if (e.data?.type === "tiny-pi:height") window.heights.push(e.data); });</script>
${script}`;
}

test("embed: the README's iframe line on another origin shows one scenario, autoplays it, and the lesson gets its height", async (t) => {
  const lesson = await listen((req, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(lessonPage(suite.server.url)), "localhost");
  t.after(() => lesson.close());
  assert.notEqual(new URL(lesson.url).origin, new URL(suite.server.url).origin);
  const page = await suite.browser.context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(e.message));
  page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
  try {
    await page.goto(lesson.url);
    const frame = await (await page.waitForSelector("iframe")).contentFrame();
    await frame.waitForSelector('[data-testid="status"][data-run="done"]', { state: "attached" });
    assert.equal(await frame.textContent('[data-testid="reason"]'), "length");
    assert.equal(await frame.$$eval('[data-testid="timeline"] > li', (n) => n.length), 11);
    assert.equal(await frame.getAttribute("html", "lang"), "zh-CN");
    const shown = await frame.$$eval("[data-panel]", (n) => n.filter((x) => x.getClientRects().length > 0).map((x) => x.dataset.panel));
    assert.deepEqual(shown, ["timeline", "transcript"], "only the named panels");
    assert.equal(await frame.isVisible('[data-testid="run"]'), true, "the run's buttons stay");
    assert.equal(await frame.isVisible('[data-testid="scenario-select"]'), false, "no scenario picker");
    // The last height sent is the frame's: the lesson sized it, and nothing scrolls inside it.
    await page.waitForFunction(() => {
      const last = window.heights.at(-1);
      const frame = document.querySelector("iframe");
      return last && frame.style.height === `${last.height}px` && Math.abs(frame.getBoundingClientRect().height - last.height) < 1;
    });
    const heights = await page.evaluate(() => window.heights);
    assert.ok(heights.every((h) => h.type === "tiny-pi:height" && h.scenario === "length" && Number.isInteger(h.height)));
    const last = heights.at(-1).height;
    assert.ok(last > 200, `a real height (${last})`);
    const inner = await frame.evaluate(() => ({ scroll: document.documentElement.scrollHeight, view: innerHeight }));
    assert.ok(inner.scroll <= inner.view + 1, `no scrollbar inside the frame (${inner.scroll} > ${inner.view})`);
    await screenshot(page, "embed-length-zh", { fullPage: true });
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test("embed: an unknown scenario id or panel name is an error, not another scenario", async () => {
  for (const [query, kind, words] of [
    ["?embed=1&scenario=nope&lang=en", "unknown-scenario", ["nope", "readme", "repeated-id"]],
    ["?scenario=nope&lang=en", "unknown-scenario", ["nope"]],
    ["?embed=1&scenario=readme&panels=timeline,bogus&lang=en", "bad-panels", ["bogus", "transcript"]],
    ["?scenario=readme&lang=en#script=not-a-script", "bad-script", ["#script="]],
  ]) {
    const page = await suite.browser.context.newPage();
    try {
      await page.goto(new URL(query, suite.server.url).href);
      await page.waitForSelector('[data-testid="banner"][data-state="error"]');
      assert.equal(await page.getAttribute('[data-testid="banner"]', "data-error"), kind, query);
      const text = await page.textContent('[data-testid="banner"]');
      for (const w of words) assert.ok(text.includes(w), `${query}: the error names ${w}: ${text}`);
      assert.equal(await count(page, "timeline"), 0, `${query}: no run`);
      assert.equal(await page.getAttribute("body", "data-ready"), null);
    } finally {
      await page.close();
    }
  }
});

test("the address follows the state: a shared link restores an edited script (hash), its run and the language", async () => {
  let shared;
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.click('details[data-panel="editor"] > summary');
    const edited = (await page.inputValue('[data-testid="editor"]')).replace("The project is called tiny-pi.", "SHARED ANSWER");
    await page.fill('[data-testid="editor"]', edited);
    await page.click('[data-testid="editor-apply"]');
    await waitForDone(page);
    await page.waitForFunction(() => location.hash.startsWith("#script=") && new URLSearchParams(location.search).get("step") === "end");
    await page.click('[data-testid="lang-toggle"]');
    shared = page.url();
    const url = new URL(shared);
    assert.equal(url.searchParams.get("lang"), "zh");
    assert.equal(url.searchParams.get("scenario"), null, "a custom script has no scenario id");
    assert.ok(!shared.includes("SHARED"), "the script is packed, not spelled out");
    // A script reopened from this browser's storage (no scenario in the address) is put in the address too.
    await page.goto(new URL("?lang=en", suite.server.url).href);
    await page.waitForFunction(() => location.hash.startsWith("#script="));
    assert.equal(await page.inputValue('[data-testid="scenario-select"]'), "custom");
    await page.evaluate(() => localStorage.clear()); // the link alone must carry it
  });
  await withPage(shared.slice(shared.indexOf("?")), async (page) => {
    await waitForDone(page);
    assert.equal(await page.inputValue('[data-testid="scenario-select"]'), "custom");
    assert.match(await page.inputValue('[data-testid="editor"]'), /SHARED ANSWER/);
    assert.match(await page.textContent('[data-testid="transcript"]'), /SHARED ANSWER/);
    assert.equal(await page.getAttribute("html", "lang"), "zh-CN");
    assert.equal(page.url(), shared, "the restored page has the same address");
  });
});

test("the address follows the step: a link with step=5 holds the run right after event 5", async () => {
  await withPage("?scenario=readme&lang=en&step=5", async (page) => {
    await page.waitForSelector('[data-testid="timeline"] > li.held[data-seq="5"]');
    assert.equal(await count(page, "timeline"), 5);
    await page.click('[data-testid="step"]');
    await page.waitForSelector('[data-testid="timeline"] > li.held[data-seq="6"]');
    await page.waitForFunction(() => new URLSearchParams(location.search).get("step") === "6");
  });
  await withPage("?scenario=concurrency&lang=en&step=end&release=slow-call,fast-call", async (page) => {
    await waitForDone(page);
    const ends = await page.$$eval('[data-testid="timeline"] > li', (n) => n.map((x) => x.textContent).filter((s) => s.includes("tool_end")));
    assert.equal(ends.length, 2);
    assert.match(ends[0], /slow-call/, "released in the link's order: slow first");
  });
});

/** Pick a module in "Check your own loop" and wait for the outcome: {state, status, report}. */
async function checkLoop(page, name, source) {
  await page.$eval('details[data-panel="loop"]', (d) => (d.open = true));
  await page.setInputFiles('[data-testid="loop-file"]', { name, mimeType: "text/javascript", buffer: Buffer.from(source) });
  await page.click('[data-testid="loop-check"]');
  await page.waitForFunction(() => ["passed", "failed", "error"].includes(document.querySelector('[data-testid="loop-status"]').dataset.state), null, { timeout: 90_000 });
  return page.evaluate(() => ({
    state: document.querySelector('[data-testid="loop-status"]').dataset.state,
    status: document.querySelector('[data-testid="loop-status"]').textContent,
    report: document.querySelector('[data-testid="loop-report"]').textContent,
    cases: [...document.querySelectorAll('[data-testid="kit-cases"] > li')].map((li) => ({
      id: li.dataset.case,
      pass: li.dataset.pass === "true",
      rule: li.querySelector('[data-testid="kit-rule"]')?.textContent ?? null,
      evidence: li.querySelector(".kit-evidence")?.textContent ?? "",
    })),
  }));
}

test("check your own loop in the page: the reference loop passes, a broken copy fails its case with the first differing event", async () => {
  await withPage("?scenario=readme&lang=en", async (page) => {
    const good = await checkLoop(page, "my-loop.mjs", REFERENCE);
    assert.equal(good.state, "passed", good.report);
    assert.match(good.status, /15 passed, 0 failed/);
    assert.equal(good.cases.filter((c) => c.pass).length, 15);
    const broken = REFERENCE.replace("export const runAgentLoop = createLoop();", "export const runAgentLoop = createLoop({ lengthRunsTools: true });");
    assert.notEqual(broken, REFERENCE);
    const bad = await checkLoop(page, "broken-loop.mjs", broken);
    assert.equal(bad.state, "failed");
    assert.match(bad.status, /14 passed, 1 failed/);
    const length = bad.cases.find((c) => c.id === "length");
    assert.equal(length.pass, false);
    assert.match(length.rule, /No call of a response whose stopReason is length may run/);
    assert.match(length.evidence, /First differing event \(#9\)/);
    assert.match(length.evidence, /calls executed: expected \[\], the loop ran \[call-1, call-2\]/);
    await screenshot(page, "loop-check-broken-en", { fullPage: true });
  });
});

test("a learner's loop that blocks its thread is stopped after the time limit; the page stays responsive", async () => {
  // Written from the chapter, except that it spins forever when the run is aborted before it starts.
  const hang = REFERENCE.replace(
    "export const runAgentLoop = createLoop();",
    "const loop = createLoop();\nexport function runAgentLoop(options) {\n  if (options.signal?.aborted) for (;;) {}\n  return loop(options);\n}",
  );
  assert.notEqual(hang, REFERENCE);
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.$eval('details[data-panel="loop"]', (d) => (d.open = true));
    await page.setInputFiles('[data-testid="loop-file"]', { name: "hangs.mjs", mimeType: "text/javascript", buffer: Buffer.from(hang) });
    await page.click('[data-testid="loop-check"]');
    // While the sandbox's worker spins on abort-before-start, the page runs a scenario.
    await page.waitForFunction(() => document.querySelector('[data-testid="loop-report"]').textContent.includes("executor-rejects"));
    await runToEnd(page);
    assert.equal(await page.textContent('[data-testid="reason"]'), "stop");
    await page.waitForFunction(() => document.querySelector('[data-testid="loop-status"]').dataset.state === "failed", null, { timeout: 30_000 });
    const report = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('[data-testid="kit-cases"] > li')].map((li) => [li.dataset.case, li.dataset.pass === "true" ? "pass" : li.textContent])));
    assert.match(report["abort-before-start"], /stopped after 3000 ms: the loop blocked its thread/);
    assert.equal(report["abort-during-tool"], "pass", "the next cases ran in a fresh worker");
    assert.match(await page.textContent('[data-testid="loop-status"]'), /14 passed, 1 failed/);
  });
});

test("the sandbox: the learner's module reaches no network, storage or page, and the page keeps its strict CSP", async () => {
  const probe = `export async function runAgentLoop() {
  const out = [];
  try { await fetch(${JSON.stringify(suite.server.url)}); out.push("fetch reached"); } catch { out.push("fetch blocked"); }
  try { localStorage.length; out.push("storage reached"); } catch { out.push("storage blocked"); }
  try { parent.document.title; out.push("page reached"); } catch { out.push("page blocked"); }
  throw new Error(out.join(", "));
}`;
  const { page } = await openPage(suite.browser.context, suite.server.url, "?scenario=readme&lang=en");
  try {
    const out = await checkLoop(page, "probe.mjs", probe);
    assert.match(out.report, /runAgentLoop threw: Error: fetch blocked, storage blocked, page blocked/);
    const csp = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', "content");
    assert.match(csp, /script-src 'self' 'wasm-unsafe-eval';/);
    assert.match(csp, /connect-src 'self';/);
  } finally {
    await page.close();
  }
});

// --- the live model -------------------------------------------------------------------------------

/** A local OpenAI chat-completions endpoint (CORS open): a tool call, then an answer, as SSE chunks. */
async function mockOpenAi() {
  const requests = [];
  const replies = [
    [
      { index: 0, delta: { role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_live_1", type: "function", function: { name: "read", arguments: "" } }] }, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"path":"README.md"}' } }] }, finish_reason: null },
      { index: 0, delta: {}, finish_reason: "tool_calls" },
    ],
    [
      { index: 0, delta: { role: "assistant", content: "The project is " }, finish_reason: null },
      { index: 0, delta: { content: "tiny-pi (from the mock)." }, finish_reason: null },
      { index: 0, delta: {}, finish_reason: "stop" },
    ],
  ];
  const server = await listen((req, res) => {
    res.setHeader("access-control-allow-origin", "*");
    res.setHeader("access-control-allow-methods", "POST, OPTIONS");
    res.setHeader("access-control-allow-headers", req.headers["access-control-request-headers"] ?? "*");
    if (req.method === "OPTIONS") return res.writeHead(204).end();
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      requests.push({ url: req.url, authorization: req.headers.authorization, body: JSON.parse(body) });
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const choice of replies[requests.length - 1] ?? []) res.write(`data: ${JSON.stringify({ id: "chatcmpl-live", object: "chat.completion.chunk", created: 0, model: "mock-model", choices: [choice] })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  return { ...server, requests };
}

test("the live model: the page streams a tool call and an answer from a local chat-completions endpoint; the key stays in sessionStorage", async (t) => {
  const mock = await mockOpenAi();
  t.after(() => mock.close());
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.click('[data-testid="mode-link"]');
    await page.waitForURL(/live\.html\?scenario=readme&lang=en/);
    await page.waitForSelector("body[data-ready='true']");
    assert.equal(await page.isVisible('[data-testid="live"]'), true);
    await page.fill('[data-testid="live-base-url"]', `${mock.url}v1`);
    await page.fill('[data-testid="live-model"]', "mock-model");
    await page.fill('[data-testid="live-key"]', "sk-live-test-123");
    await page.click('[data-testid="live-save"]');
    await runToEnd(page);
    assert.equal(await page.textContent('[data-testid="reason"]'), "stop", await page.textContent('[data-testid="result-note"]'));
    assert.equal(await page.textContent('[data-testid="steps"]'), "2");
    assert.equal(await page.textContent('[data-testid="executions"]'), "1");
    assert.match(await page.textContent('[data-testid="transcript"]'), /tiny-pi \(from the mock\)\./);
    assert.equal(await count(page, "transcript"), 4);
    // On the wire: the model, the key, the tools, and the tool's result in the second request.
    assert.equal(mock.requests.length, 2);
    for (const r of mock.requests) {
      assert.equal(r.url, "/v1/chat/completions");
      assert.equal(r.authorization, "Bearer sk-live-test-123");
      assert.equal(r.body.model, "mock-model");
      assert.deepEqual(r.body.tools.map((x) => x.function.name), ["read"]);
    }
    const toolMessage = mock.requests[1].body.messages.find((m) => m.role === "tool");
    assert.equal(toolMessage.tool_call_id, "call_live_1");
    assert.match(JSON.stringify(toolMessage.content), /A small agent runtime/);
    // The key: in this tab's sessionStorage, nowhere else.
    assert.match(await page.evaluate(() => sessionStorage.getItem("tiny-pi-live")), /sk-live-test-123/);
    assert.ok(!page.url().includes("sk-live"), "not in the address");
    assert.ok(!(await page.evaluate(() => JSON.stringify({ ...localStorage }))).includes("sk-live"), "not in localStorage");
    await screenshot(page, "live-model-en", { fullPage: true });
  });
  // The scripted page keeps connect-src 'self': it cannot reach the endpoint.
  const { page } = await openPage(suite.browser.context, suite.server.url, "?scenario=readme&lang=en");
  try {
    const blocked = await page.evaluate((url) => fetch(url, { method: "POST" }).then(() => false, () => true), `${mock.url}v1/chat/completions`);
    assert.equal(blocked, true);
    assert.equal(mock.requests.length, 2);
  } finally {
    await page.close();
  }
});

test("axe-core finds nothing serious or critical on the live page, in embed mode and with a loop report, in Chinese", async () => {
  await withPage("live.html?scenario=readme&lang=zh&speed=instant", async (page) => {
    assert.deepEqual(await axeFindings(page), [], "live.html");
    await screenshot(page, "live-zh-1280", { fullPage: true });
  });
  await withPage("?embed=1&scenario=concurrency&panels=counters,why,timeline,transcript,pairing&lang=zh&autoplay=1", async (page) => {
    await waitForDone(page);
    assert.deepEqual(await axeFindings(page), [], "embed");
    await screenshot(page, "embed-concurrency-zh", { fullPage: true });
  });
  await withPage("?scenario=readme&lang=zh", async (page) => {
    const broken = REFERENCE.replace("export const runAgentLoop = createLoop();", "export const runAgentLoop = createLoop({ errorLeavesCallsOpen: true });");
    const out = await checkLoop(page, "我的-loop.mjs", broken);
    assert.match(out.status, /14 个通过，1 个失败/);
    assert.deepEqual(await axeFindings(page), [], "loop report");
    await page.$eval('[data-testid="loop-report"]', (n) => n.scrollIntoView());
    await screenshot(page, "loop-check-zh", { fullPage: false });
  });
});
