// Issue 29, "the page teaches", point by point, each written once and run in Chromium (playwright-core) and in
// Firefox (firefox-esr through geckodriver): the inspector shows every field and the raw request (1), fork and compare
// (2), kit reports that teach (3), views that agree (4), the chapter's words (5), time and tokens (6), the live page's
// help (7), the minor fixes, and axe-core at 1280 and 390 px in both languages.
// Run: node --test tests/e2e/teach.test.mjs   (needs dist/ built; E2E_BROWSERS=chromium or firefox runs one)

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BROWSERS, browserSuite } from "./browsers.mjs";
import { SCENARIOS, scenarioById, localizeDef } from "../../www/scenarios.js";

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const REFERENCE = fs.readFileSync(path.join(ROOT, "tests", "conformance", "reference-loop.mjs"), "utf8");
const CJK = /[\u3400-\u9fff\uff01-\uff5e\u3000-\u303f]/;
const CHAPTER = SCENARIOS.filter((s) => s.part === "chapter");
const README_EN = localizeDef(scenarioById("readme").def, "en");
const $ = (id) => `[data-testid="${id}"]`;

/** The reference loop (written from chapter 07) with some of its bugs switched on, as a module's text. */
const loopWith = (bugs) => REFERENCE.replace("export const runAgentLoop = createLoop();", `export const runAgentLoop = createLoop(${JSON.stringify(bugs)});`);

/** Files in a fresh temp folder: their paths, in the order given. */
function tempFiles(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-teach-"));
  return Object.entries(files).map(([name, text]) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  });
}

/** A server on 127.0.0.1 for one test: {url, requests, close()}. */
async function listen(handler) {
  const requests = [];
  const server = http.createServer((req, res) => handler(req, res, requests));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/`, requests, close: () => new Promise((r) => server.close(r)) };
}

/** A chat-completions endpoint that streams one answer with its usage; `cors` decides whether it lets pages read it. */
function chatServer({ cors }) {
  return listen((req, res, requests) => {
    if (cors) {
      res.setHeader("access-control-allow-origin", "*");
      res.setHeader("access-control-allow-headers", req.headers["access-control-request-headers"] ?? "*");
      res.setHeader("access-control-allow-methods", "POST, OPTIONS");
    }
    if (req.method === "OPTIONS") return res.writeHead(204).end();
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      requests.push({ url: req.url, body: body ? JSON.parse(body) : null });
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (choices, extra = {}) => res.write(`data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model: "mock", choices, ...extra })}\n\n`);
      chunk([{ index: 0, delta: { role: "assistant", content: "tiny-pi, live." }, finish_reason: null }]);
      chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
      chunk([], { usage: { prompt_tokens: 31, completion_tokens: 11, total_tokens: 42 } });
      res.end("data: [DONE]\n\n");
    });
  });
}

/** The readme script with pi-ai's usage on each response, as the editor takes it. */
function readmeWithUsage() {
  const def = structuredClone(README_EN);
  def.script[0].usage = { input: 30, output: 12, cacheRead: 0, cacheWrite: 0, totalTokens: 42, cost: { total: 0.001 } };
  def.script[1].usage = { input: 60, output: 8, cacheRead: 0, cacheWrite: 0, totalTokens: 68, cost: { total: 0.002 } };
  return def;
}

/** Open the editor, put a definition in it and run it. */
async function runEdited(P, def) {
  await P.evaluate(() => (document.querySelector('details[data-panel="editor"]').open = true));
  await P.fill($("editor"), JSON.stringify(def, null, 2));
  await P.tap("editor-apply");
  await P.waitForDone();
}

/** Pick loop files in "Check your own loop", check them, and wait for the outcome. */
async function checkLoop(P, files) {
  await P.evaluate(() => (document.querySelector('details[data-panel="loop"]').open = true));
  await P.setFiles($("loop-file"), tempFiles(files));
  await P.waitUntil(() => !document.querySelector('[data-testid="loop-check"]').disabled);
  await P.tap("loop-check");
  return P.waitUntil(() => {
    const s = document.querySelector('[data-testid="loop-status"]');
    return ["passed", "failed", "error"].includes(s.dataset.state) && { state: s.dataset.state, status: s.textContent };
  });
}

/** What every view says about the pairing of each call, as text: transcript badges, pairing rows, findings, trace. */
function viewTexts(P) {
  return P.evaluate(() => {
    const texts = (sel) => [...document.querySelectorAll(sel)].map((n) => n.textContent);
    return {
      transcript: texts('[data-testid="transcript"] .badge[data-kind]'),
      transcriptStates: [...document.querySelectorAll('[data-testid="transcript"] .badge[data-kind]')].map((n) => n.dataset.state ?? "problem"),
      pairing: texts('[data-testid="pairing"] > li'),
      findings: document.querySelector('[data-testid="findings"]').textContent,
      traceBadges: texts('[data-testid="trace-table"] .badge[data-kind]'),
      traceCheck: document.querySelector('[data-testid="trace-check"]')?.textContent ?? "",
    };
  });
}

for (const browser of BROWSERS) {
  describe(browser, () => {
    const suite = browserSuite(browser);
    const open = (query, fn, options) => suite.open(query, fn, options);

    // --- 1. the inspector ----------------------------------------------------------------------------------

    test("1. inspector: every field of each message a request carried, and the exact request as raw JSON", () =>
      open("?scenario=readme&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitForDone();
        await P.click(`${$("inspector")} .picks button[data-request="2"]`);
        const msg = (role) => `${$("request-inspector")} .request-messages > li[data-role="${role}"]`;
        // The pairing key and the rest: request 2 carries toolResult(toolCallId=call-1).
        assert.equal(await P.text(`${msg("toolResult")} [data-field="toolCallId"] dd`), "call-1");
        assert.equal(await P.text(`${msg("toolResult")} [data-field="toolName"] dd`), "read");
        assert.equal(await P.text(`${msg("toolResult")} [data-field="isError"] dd`), "false");
        assert.equal(await P.text(`${msg("assistant")} [data-field="stopReason"] dd`), "toolUse");
        assert.equal(await P.text(`${msg("assistant")} [data-field="timestamp"] dd`), "2");
        // The raw request: exactly what the model received.
        assert.equal(await P.count($("request-raw-json")), 0, "folded until asked for");
        await P.tap("request-raw");
        assert.equal(await P.attr($("request-raw"), "aria-pressed"), "true");
        const raw = JSON.parse(await P.text($("request-raw-json")));
        assert.equal(raw.systemPrompt, README_EN.systemPrompt);
        assert.deepEqual(raw.messages[0], README_EN.messages[0]);
        assert.deepEqual(raw.messages[1], README_EN.script[0]);
        const { timestamp, ...result } = raw.messages[2];
        assert.equal(typeof timestamp, "number");
        assert.deepEqual(result, { role: "toolResult", toolCallId: "call-1", toolName: "read", content: [{ type: "text", text: "# tiny-pi\nA small agent runtime." }], isError: false });
        assert.deepEqual(raw.tools, [{ name: "read", description: README_EN.tools.read.description, parameters: README_EN.tools.read.parameters }]);
        // The toggle stays on when another request is opened; request 1 carried the user message only.
        await P.click(`${$("inspector")} .picks button[data-request="1"]`);
        assert.deepEqual(JSON.parse(await P.text($("request-raw-json"))).messages, [README_EN.messages[0]]);
        assert.match(await P.text($("request-response")), /stopReason=toolUse/);
      }));

    test("1. inspector: a skipped result's details, and each response's usage when it has one", async () => {
      await open("?scenario=blocked&lang=en&speed=instant", async (P) => {
        await P.runToEnd();
        await P.click(`${$("inspector")} .picks button[data-request="2"]`);
        const skipped = `${$("request-inspector")} .request-messages > li[data-role="toolResult"]`;
        const details = await P.texts(`${skipped} [data-field="details"] dd`);
        assert.ok(details.some((d) => d === '{"skipped":true,"reason":"blocked"}'), details.join(" | "));
        const errors = await P.texts(`${skipped} [data-field="isError"] dd`);
        assert.ok(errors.includes("true"));
      });
      await open("?scenario=readme&lang=en&speed=instant", async (P) => {
        await runEdited(P, readmeWithUsage());
        await P.click(`${$("inspector")} .picks button[data-request="1"]`);
        assert.equal(await P.attr($("request-tokens"), "data-total"), "42");
        assert.match(await P.text($("request-tokens")), /input 30 · output 12 .*total 42 tokens/);
        await P.click(`${$("inspector")} .picks button[data-request="2"]`);
        // The assistant message request 2 carried keeps its usage, shown as a field.
        assert.match(await P.text(`${$("request-inspector")} li[data-role="assistant"] [data-field="usage"] dd`), /"totalTokens":42/);
        assert.equal(await P.attr($("request-tokens"), "data-total"), "68");
      });
    });

    // --- 2. fork from here -----------------------------------------------------------------------------------

    test("2. fork: request 1 stopped with length instead; the run before is replayed and the comparison says what changed", () =>
      open("?scenario=readme&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitForDone();
        // A fork button on each response of the run (two), none on the user's or the tool's messages.
        assert.deepEqual(await P.attrs(`${$("transcript")} > li ${$("fork")}`, "data-request"), ["1", "2"]);
        await P.click(`${$("transcript")} ${$("fork")}[data-request="1"]`);
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="fork-stop-reason"]').value), "toolUse");
        assert.deepEqual(await P.evaluate(() => [...document.querySelectorAll('[data-testid="fork-call-id"]')].map((n) => n.value)), ["call-1"]);
        await P.select($("fork-stop-reason"), "length");
        await P.tap("fork-run");
        await P.waitFor(`${$("compare")}[data-state="done"]`);
        const side = (field, s) => P.text(`${$("compare")} tr[data-field="${field}"] td[data-side="${s}"]`);
        assert.equal(await side("reason", "original"), "stop");
        assert.equal(await side("reason", "fork"), "length");
        assert.equal(await side("steps", "original"), "2");
        assert.equal(await side("steps", "fork"), "1");
        assert.equal(await side("tools", "original"), "read(call-1)");
        assert.equal(await side("tools", "fork"), "–", "length: nothing ran");
        assert.equal(await side("rows", "original"), "tooluse (request 1), stop (request 2)");
        assert.equal(await side("rows", "fork"), "length (request 1)");
        // The transcript difference: the user message the same; the response changed; a skipped result instead.
        const diff = await P.evaluate(() => [...document.querySelectorAll('[data-testid="compare-diff"] > li')].map((n) => [n.dataset.op, n.textContent]));
        assert.deepEqual(diff[0], ["same", `  0: ${JSON.stringify(README_EN.messages[0])}`]);
        assert.ok(diff.some(([op, line]) => op === "added" && /"skipped":true,"reason":"length"/.test(line)), "the fork's skipped result");
        assert.ok(diff.some(([op, line]) => op === "removed" && /"stopReason":"stop"/.test(line)), "the original's answer");
        // The page now runs the fork: its views show it, and the editor holds the forked script.
        assert.equal(await P.text($("reason")), "length");
        assert.equal(await P.evaluate(() => JSON.parse(document.querySelector('[data-testid="editor"]').value).script[0].stopReason), "length");
        await P.shot("fork-length-1280");
      }));

    test("2. fork: a later response edited replays everything before it exactly; a call removed does not run", async () => {
      await open("?scenario=readme&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitForDone();
        await P.click(`${$("transcript")} ${$("fork")}[data-request="2"]`);
        await P.fill($("fork-text"), "A different answer.");
        await P.tap("fork-run");
        await P.waitFor(`${$("compare")}[data-state="done"]`);
        const ops = await P.attrs(`${$("compare-diff")} > li`, "data-op");
        assert.deepEqual(ops.slice(0, 3), ["same", "same", "same"], "everything before the edited response is the same");
        assert.deepEqual(ops.slice(3).sort(), ["added", "removed"], "only the edited response differs");
        assert.equal(await P.text(`${$("compare")} tr[data-field="tools"] td[data-side="fork"]`), "read(call-1)");
      });
      await open("?scenario=concurrency&lang=en&speed=instant", async (P) => {
        await P.runToEnd();
        await P.click(`${$("transcript")} ${$("fork")}[data-request="1"]`);
        assert.equal(await P.count($("fork-call")), 2);
        await P.click(`${$("fork-call")}[data-index="1"] ${$("fork-call-remove")}`);
        assert.equal(await P.count($("fork-call")), 1);
        await P.tap("fork-run");
        await P.waitFor(`${$("compare")}[data-state="done"]`);
        assert.equal(await P.text(`${$("compare")} tr[data-field="tools"] td[data-side="original"]`), "slow(slow-call), fast(fast-call)");
        assert.equal(await P.text(`${$("compare")} tr[data-field="tools"] td[data-side="fork"]`), "slow(slow-call)");
        // Bad arguments are named, and nothing runs.
        await P.click(`${$("transcript")} ${$("fork")}[data-request="1"]`);
        await P.fill(`${$("fork-call")}[data-index="0"] ${$("fork-call-args")}`, "{oops");
        await P.tap("fork-run");
        assert.match(await P.text($("fork-error")), /The arguments of call 1 are not valid JSON/);
      });
    });

    // --- 3. kit reports that teach --------------------------------------------------------------------------

    test("3. kit: a loop that runs calls on length is told the rule first, in Chinese, with its step and scenario link", () =>
      open("?scenario=readme&lang=zh", async (P) => {
        const out = await checkLoop(P, { "我的-loop.mjs": loopWith({ lengthRunsTools: true }) });
        assert.equal(out.state, "failed");
        assert.match(out.status, /14 个通过，1 个失败/);
        const item = `${$("kit-cases")} > li[data-case="length"]`;
        assert.equal(await P.attr(item, "data-pass"), "false");
        // The rule comes first, before any evidence, in the page's language and tied to the chapter's step.
        const order = await P.evaluate((sel) => [...document.querySelector(sel).children].map((n) => n.dataset.testid ?? n.className), item);
        assert.deepEqual(order, ["kit-head", "kit-rule", "kit-links", "kit-evidence"]);
        assert.match(await P.text(`${item} ${$("kit-rule")}`), /^违反的规则：stopReason 为 length 的回复里的调用一个都不得执行/);
        assert.match(await P.text(`${item} .kit-head`), /第三步：给不会执行的调用也配对/);
        assert.equal(await P.attr(`${item} ${$("kit-rule")}`, "data-step"), "3");
        const href = await P.attr(`${item} a${$("kit-scenario")}`, "href");
        assert.equal(new URL(href, "http://x/").searchParams.get("scenario"), "length");
        // The evidence is Chinese too.
        const evidence = await P.text(`${item} .kit-evidence`);
        assert.match(evidence, /执行过的调用：应为 \[\]，你的 loop 执行了 \[call-1, call-2\]/);
        assert.doesNotMatch(evidence, /calls executed|events differ/);
        // A loop that appends in completion order is told "append in call order"; one whose executor rejection
        // escapes is told to turn it into an error result.
        await checkLoop(P, { "order.mjs": loopWith({ completionOrder: true, rejectionEscapes: true }) });
        assert.match(await P.text(`${$("kit-cases")} > li[data-case="concurrency"] ${$("kit-rule")}`), /按调用顺序写回/);
        assert.match(await P.text(`${$("kit-cases")} > li[data-case="executor-rejects"] ${$("kit-rule")}`), /每个调用单独捕获 rejection，把它变成同 id、同 name 的错误结果/);
      }));

    test("3. kit: repeated-id is optional; the report reads at 390 px; the same report in English", () =>
      open("?scenario=readme&lang=en", async (P) => {
        const out = await checkLoop(P, { "dup.mjs": loopWith({ duplicateIdsRun: true }) });
        assert.equal(out.state, "passed", "failing only an optional case passes");
        assert.match(out.status, /14 passed, 0 failed\. The optional case\(s\) repeated-id failed: the chapter leaves this design choice to you/);
        const item = `${$("kit-cases")} > li[data-case="repeated-id"]`;
        assert.equal(await P.attr(item, "data-optional"), "true");
        assert.match(await P.text(`${item} ${$("kit-rule")}`), /^Optional exercise; the loop passes without it:/);
        await P.setViewport(390, 844);
        await P.evaluate(() => document.querySelector('[data-testid="loop-report"]').scrollIntoView());
        assert.ok((await P.overflow()) <= 0, "no sideways scroll at 390 px");
        const wide = await P.evaluate(() => [...document.querySelectorAll('[data-testid="kit-cases"] > li')].filter((li) => li.scrollWidth > li.clientWidth + 1).map((li) => li.dataset.case));
        assert.deepEqual(wide, [], "no case wider than its box");
        await P.shot("kit-report-390");
        // The report, its status line included, follows the page's language.
        await P.tap("lang-toggle");
        await P.waitUntil(() => /可选迁移练习/.test(document.querySelector('[data-testid="loop-report"]').textContent));
        assert.match(await P.text($("loop-status")), /14 个通过，0 个失败。可选用例 repeated-id 没有通过/);
      }));

    test("3. kit: a loop of several files (TypeScript, one importing another) is bundled and checked; a missing file is named", () =>
      open("?scenario=readme&lang=en", async (P) => {
        const entry = `import { createLoop } from "./reference.js";\nimport type { Unused } from "./types";\nconst options: { lengthRunsTools: boolean } = { lengthRunsTools: true };\nexport const runAgentLoop = createLoop(options);\n`;
        const out = await checkLoop(P, { "agent-loop.ts": entry, "reference.ts": REFERENCE, "types.ts": "export type Unused = number;\n" });
        assert.equal(out.state, "failed", out.status);
        assert.match(out.status, /14 passed, 1 failed/);
        assert.equal(await P.attr(`${$("kit-cases")} > li[data-case="length"]`, "data-pass"), "false", "the bundled loop's own bug");
        // One file that imports another it was not given with: the page says what to do.
        const alone = await checkLoop(P, { "agent-loop.mjs": `export { runAgentLoop } from "./executor.mjs";\n` });
        assert.equal(alone.state, "error");
        assert.match(alone.status, /agent-loop\.mjs imports “\.\/executor\.mjs”, which you did not pick\. Pick every file your loop uses together/);
      }));

    test("3. kit: step through what the learner's loop did on a case, in the page's views", () =>
      open("?scenario=readme&lang=en", async (P) => {
        await checkLoop(P, { "broken.mjs": loopWith({ lengthRunsTools: true }) });
        await P.click(`${$("kit-cases")} > li[data-case="length"] ${$("kit-step")}`);
        assert.equal(await P.attr($("about"), "data-replay"), "length");
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="scenario-select"]').value), "length");
        await P.stepTo(8);
        assert.equal(await P.count(`${$("timeline")} > li`), 8, "held after the eighth event the loop emitted");
        assert.equal(await P.attr(`${$("timeline")} > li[data-seq="8"]`, "data-type"), "assistant_message");
        assert.match(await P.text($("why")), /Row length fired/);
        await P.stepTo(9);
        // The learner's loop started a tool on a length response (the kit's first differing event, #9), in the views.
        assert.equal(await P.attr(`${$("timeline")} > li[data-seq="9"]`, "data-type"), "tool_start");
        await P.tap("run");
        await P.waitForDone();
        assert.equal(await P.text($("executions")), "2");
        assert.equal(await P.attr($("executions"), "data-match"), "false", "the course expects none");
        assert.equal(await P.attr($("reason"), "data-match"), "true");
      }));

    // --- 4. views agree ------------------------------------------------------------------------------------

    test("4. views agree mid-run: what one view calls in progress, no other calls missing", () =>
      open("?scenario=readme&lang=en", async (P) => {
        await P.stepTo(7);
        const v = await viewTexts(P);
        assert.deepEqual(v.transcript, ["run in progress: call-1 has no result yet"]);
        assert.deepEqual(v.transcriptStates, ["in-progress"]);
        assert.deepEqual(v.traceBadges, ["run in progress: call-1 has no result yet"]);
        assert.match(v.findings, /run in progress: call-1 has no result yet/);
        assert.match(v.traceCheck, /run in progress: call-1 has no tool_result yet/);
        for (const [view, text] of Object.entries(v)) assert.doesNotMatch(JSON.stringify(text), /missing paired result/, view);
        // And at every later step until the result is in, then no waiting anywhere.
        await P.stepTo(8);
        const after = await viewTexts(P);
        assert.deepEqual(after.transcript, []);
        assert.match(after.findings, /ok: every tool call has exactly one tool result, after it/);
      }));

    test("4. views agree at every step: no call is waiting in one view and missing in another", async () => {
      for (const id of ["readme", "concurrency", "length", "abort-during-tool", "approval", "budget", "retry", "compaction"]) {
        await open(`?scenario=${id}&lang=en`, async (P) => {
          for (let step = 0; step < 60; step++) {
            const views = await P.evaluate(() => {
              const of = (nodes, waiting) => {
                const out = { waiting: [], missing: [] };
                for (const n of nodes) (waiting(n) ? out.waiting : out.missing).push(n.dataset.callId);
                return out;
              };
              const calm = ["pending", "running", "gated", "finished", "rejected", "paused", "timedOut"];
              return {
                transcript: of(document.querySelectorAll('[data-testid="transcript"] .badge[data-kind="missing_result"]'), (n) => n.dataset.state !== undefined),
                trace: of(document.querySelectorAll('[data-testid="trace-table"] .badge[data-kind="missing_result"]'), (n) => n.dataset.state !== undefined),
                pairing: of([...document.querySelectorAll('[data-testid="pairing"] > li')].filter((n) => (n.dataset.kinds ?? "").split(" ").includes("missing_result")), (n) => calm.includes(n.dataset.state)),
                findings: of(document.querySelectorAll('[data-testid="findings"] li[data-kind="missing_result"]'), (n) => n.dataset.state !== undefined),
                run: document.querySelector('[data-testid="status"]').dataset.run,
              };
            });
            const waiting = new Set(["transcript", "trace", "pairing", "findings"].flatMap((v) => views[v].waiting));
            const missing = new Set(["transcript", "trace", "pairing", "findings"].flatMap((v) => views[v].missing));
            for (const call of waiting) assert.ok(!missing.has(call), `${id} after ${step} steps: ${call} is waiting in one view and missing in another: ${JSON.stringify(views)}`);
            if (views.run === "done") break;
            const gate = await P.evaluate(() => document.querySelector('[data-testid^="release-"]')?.dataset.testid ?? null);
            const held = await P.evaluate(() => document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq ?? null);
            const before = await P.count(`${$("timeline")} > li`);
            if (gate && !held) await P.tap(gate);
            else await P.tap("step");
            await P.waitUntil(
              (held, n) => {
                const s = document.querySelector('[data-testid="status"]').dataset.run;
                const now = document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq;
                return s === "done" || (now && now !== held) || document.querySelectorAll('[data-testid="timeline"] > li').length !== n || document.querySelector('[data-testid^="release-"]');
              },
              held,
              before,
            );
          }
        });
      }
    });

    test("4. views agree on a paused run: its calls wait for a decision, none is called missing", () =>
      open("?scenario=approval&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitForDone();
        const v = await viewTexts(P);
        assert.equal(v.transcript.length, 3);
        assert.deepEqual(v.transcriptStates, ["paused", "paused", "paused"]);
        assert.deepEqual(v.transcript.filter((x) => /waiting for a decision/.test(x)).length, 2, "write and delete wait for a decision");
        for (const [view, text] of Object.entries(v)) assert.doesNotMatch(JSON.stringify(text), /missing paired result/, view);
      }));

    test("4. an orphan result has one name in every view, and the trace invents no milestone", async () => {
      const user = README_EN.messages[0];
      const call = { type: "toolCall", id: "call-1", name: "read", arguments: {} };
      const result = (id) => ({ role: "toolResult", toolCallId: id, toolName: "read", content: [{ type: "text", text: "ok" }], isError: false, timestamp: 3 });
      await open("?scenario=readme&lang=en", async (P) => {
        await P.evaluate(() => (document.querySelector('details[data-panel="check"]').open = true));
        await P.fill($("check-input"), JSON.stringify([user, { role: "assistant", content: [call], stopReason: "toolUse", timestamp: 2 }, result("call-1"), result("x")]));
        await P.tap("check-button");
        await P.waitFor(`${$("findings")} .bad`);
        const v = await viewTexts(P);
        const all = JSON.stringify(v);
        assert.doesNotMatch(all, /result before call/, "one name for it");
        assert.match(v.transcript.join(), /result without a call: x/);
        assert.match(v.traceCheck, /result without a call \(orphan_result\): x/);
        assert.ok(v.pairing.some((p) => /result without a call/.test(p)));
        // The orphan's trace has its result record and no tool_start: nobody started it.
        assert.deepEqual(await P.attrs(`${$("trace-table")} tbody tr`, "data-kind"), ["user_message", "model_start", "assistant_message", "tool_start", "tool_result", "tool_result"]);
      });
      await open("?scenario=length&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitForDone();
        // Two skipped calls: results, and no tool_start, as the timeline has none.
        assert.equal(await P.count(`${$("timeline")} > li[data-type="tool_start"]`), 0);
        assert.deepEqual(await P.attrs(`${$("trace-table")} tbody tr`, "data-kind"), ["user_message", "model_start", "assistant_message", "tool_result", "tool_result"]);
      });
    });

    // --- 5. the chapter's words ------------------------------------------------------------------------------

    test("5. chapter scenarios: no SPEC §, the chapter's step names, no part-two tables, status lines true to the chapter", async () => {
      for (const lang of ["zh", "en"]) {
        await open(`?scenario=readme&lang=${lang}&speed=instant`, async (P) => {
          for (const s of CHAPTER) {
            await P.select($("scenario-select"), s.id);
            await P.waitFor(`${$("status")}[data-run="ready"]`);
            await P.stepTo(1);
            const status = await P.text($("status"));
            assert.doesNotMatch(status, /awaits the promise|等待 onEvent/, `${s.id} ${lang}: ${status}`);
            await P.runToEnd();
            const page = await P.evaluate(() => document.body.innerText);
            assert.doesNotMatch(page, /SPEC|§/, `${s.id} ${lang}`);
            assert.equal(await P.count($("phase-table")), 0, `${s.id}: no part-two table`);
            assert.equal(await P.attr($("chapter-step"), "data-step"), s.step);
            if (lang === "en") {
              const data = await P.evaluate(() => ["timeline", "transcript", "inspector", "trace"].map((id) => document.querySelector(`[data-testid="${id}"]`).textContent).join("\n"));
              assert.doesNotMatch(data, CJK, `${s.id}: English scenario data`);
            }
          }
          // The decision table names the step that teaches each row.
          assert.equal(await P.text(`${$("decision-table")} tr[data-row="length"] td[data-step]`), lang === "zh" ? "第三步：给不会执行的调用也配对" : "Step 3: pair the calls that will not run, too");
          // A part-two scenario shows its phases.
          await P.select($("scenario-select"), "blocked");
          await P.waitFor($("phase-table"));
          assert.equal(await P.attr($("chapter-step"), "data-step"), "two");
        });
      }
    });

    test("5. the tooluse row never promises another request the run will not make", async () => {
      for (const [id, pattern] of [
        ["max-steps-1", /This was the last request maxSteps allows, so no request follows/],
        ["abort-during-tool", /asks the model again unless the signal was aborted or maxSteps is reached/],
      ]) {
        await open(`?scenario=${id}&lang=en`, async (P) => {
          const seq = await P.evaluate(() => null);
          assert.equal(seq, null);
          await P.stepTo(6);
          assert.equal(await P.attr(`${$("timeline")} > li[data-seq="6"]`, "data-type"), "assistant_message");
          assert.match(await P.text($("why")), pattern, id);
        });
      }
    });

    test("5. switching language mid-run keeps the step and speaks the scenario's words in the new language", () =>
      open("?scenario=readme&lang=zh", async (P) => {
        await P.stepTo(5);
        assert.match(await P.text($("transcript")), /请读取 README\.md/);
        await P.tap("lang-toggle");
        await P.waitFor(`${$("timeline")} > li.held[data-seq="5"]`);
        assert.equal(await P.count(`${$("timeline")} > li`), 5);
        assert.match(await P.text($("transcript")), /Please read README\.md and tell me the project's name\./);
        assert.doesNotMatch(await P.text($("timeline")), CJK);
      }));

    // --- 6. time and tokens -----------------------------------------------------------------------------------

    test("6. waterfall: a concurrent batch overlaps on the run's clock, a sequential one does not; tokens per request", async () => {
      await open("?scenario=concurrency&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitFor($("release-fast-call"));
        await P.waitFor($("release-slow-call"));
        await P.tap("release-fast-call");
        await P.waitFor(`${$("timeline")} > li[data-type="tool_end"][data-call-id="fast-call"]`);
        await P.tap("release-slow-call");
        await P.waitForDone();
        const bar = async (id) => ({ start: Number(await P.attr(`${$("waterfall")} > li[data-call="${id}"]`, "data-start")), end: Number(await P.attr(`${$("waterfall")} > li[data-call="${id}"]`, "data-end")) });
        const slow = await bar("slow-call");
        const fast = await bar("fast-call");
        for (const b of [slow, fast]) assert.ok(b.start >= 0 && b.end >= b.start, JSON.stringify(b));
        assert.ok(fast.start <= slow.end && slow.start <= fast.end, `the batch runs at once: ${JSON.stringify({ slow, fast })}`);
        assert.ok(fast.end <= slow.end, "fast was released first");
        assert.deepEqual(await P.attrs(`${$("waterfall")} > li[data-request]`, "data-request"), ["1", "2"]);
      });
      await open("?scenario=sequential&lang=en&speed=instant", async (P) => {
        await P.runToEnd();
        const calls = await P.evaluate(() => [...document.querySelectorAll('[data-testid="waterfall"] > li[data-call]')].map((n) => ({ id: n.dataset.call, start: Number(n.dataset.start), end: Number(n.dataset.end) })));
        assert.equal(calls.length, 2);
        assert.ok(calls[1].start >= calls[0].end, `one call at a time: ${JSON.stringify(calls)}`);
      });
      await open("?scenario=readme&lang=en&speed=instant", async (P) => {
        await runEdited(P, readmeWithUsage());
        assert.deepEqual(await P.attrs(`${$("waterfall")} > li[data-request]`, "data-tokens"), ["42", "68"]);
        assert.match(await P.text($("tokens-total")), /110 tokens in all \(2 requests with usage\)/);
      });
    });

    // --- 7. the live page -----------------------------------------------------------------------------------------

    test("7. live page: Run waits for setup, the key's destination is named, the payload and usage are shown", async () => {
      const server = await chatServer({ cors: true });
      try {
        await open("live.html?scenario=plain-stop&lang=en&speed=instant", async (P) => {
          await P.evaluate(() => sessionStorage.removeItem("tiny-pi-live"));
          await P.reload();
          await P.waitUntil(() => document.body.dataset.ready === "true");
          assert.equal(await P.evaluate(() => document.querySelector('[data-testid="run"]').disabled), true, "Run before setup");
          assert.equal(await P.evaluate(() => document.querySelector('[data-testid="step"]').disabled), true, "Step before setup");
          assert.match(await P.text($("status")), /The live model is not set up/);
          assert.match(await P.text($("live-key-warning")), /sent, in the Authorization header, to the base URL typed above/);
          await P.fill($("live-base-url"), `${server.url}v1`);
          assert.equal(await P.attr($("live-key-target"), "data-target"), server.url.replace(/\/$/, ""));
          await P.fill($("live-model"), "mock-model");
          await P.fill($("live-key"), "sk-test");
          await P.tap("live-save");
          await P.waitUntil(() => !document.querySelector('[data-testid="run"]').disabled);
          await P.tap("run");
          await P.waitForDone();
          assert.equal(await P.text($("reason")), "stop");
          const payload = JSON.parse(await P.text($("request-payload")));
          assert.equal(payload.model, "mock-model");
          assert.deepEqual(payload, server.requests[0].body, "the body the provider sent");
          assert.equal(await P.attr($("request-tokens"), "data-total"), "42");
        });
      } finally {
        await server.close();
      }
    });

    test("7. live page: a CORS failure names the fix; nothing listening is told apart", async () => {
      const closed = await chatServer({ cors: false });
      const gone = await listen(() => {});
      const goneUrl = gone.url;
      await gone.close();
      try {
        for (const [url, kind, pattern] of [
          [`${closed.url}v1`, "cors", /answered, but the browser kept its answer from this page.*\(CORS\)\. The fix: make the server answer .* with Access-Control-Allow-Origin/],
          [`${goneUrl}v1`, "unreachable", /Nothing answered at .*: check the base URL/],
        ]) {
          // The browser reports the failed request in its console: expected here.
          const failed = /CORS|Failed to load resource|ERR_|NetworkError|Cross-Origin|127\.0\.0\.1/;
          await open("live.html?scenario=plain-stop&lang=en&speed=instant", async (P) => {
            await P.fill($("live-base-url"), url);
            await P.fill($("live-model"), "mock-model");
            await P.tap("live-save");
            await P.waitUntil(() => !document.querySelector('[data-testid="run"]').disabled);
            await P.tap("run");
            await P.waitForDone();
            assert.equal(await P.text($("reason")), "error");
            await P.waitFor(`${$("live-diagnosis")}[data-kind]`);
            assert.equal(await P.attr($("live-diagnosis"), "data-kind"), kind);
            assert.match(await P.text($("live-diagnosis")), pattern);
            if (kind === "cors") await P.shot("live-cors");
          }, { expectErrors: failed });
        }
      } finally {
        await closed.close();
      }
    });

    // --- minor ------------------------------------------------------------------------------------------------------

    test("minor: at 390 px the decision table says it scrolls; the abort mark draws its stop sign; steps go on after continue", async () => {
      await open("?scenario=abort-before-start&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitForDone();
        const mark = `${$("timeline")} .abort-mark`;
        assert.doesNotMatch(await P.text(mark), /\u23f9/);
        const icon = await P.evaluate((sel) => document.querySelector(`${sel} .stop-icon`).getBoundingClientRect().width, mark);
        assert.ok(icon > 4, `a visible stop sign (${icon}px)`);
        await P.setViewport(390, 844);
        await P.waitUntil(() => document.querySelector('[data-testid="decision-scroll-hint"]')?.dataset.shown === "true");
        assert.equal(await P.attr(`${$("decision")} .table-wrap`, "data-overflow"), "true");
        assert.ok(await P.visible($("decision-scroll-hint")));
        await P.setViewport(1280, 720);
        await P.waitUntil(() => document.querySelector('[data-testid="decision-scroll-hint"]')?.dataset.shown === "false");
      });
      await open("?scenario=readme&lang=en&speed=instant", async (P) => {
        const input = [README_EN.messages[0], README_EN.script[0], { role: "toolResult", toolCallId: "call-1", toolName: "read", content: [{ type: "text", text: "# tiny-pi" }], isError: false, timestamp: 3 }];
        await P.evaluate(() => (document.querySelector('details[data-panel="check"]').open = true));
        await P.fill($("check-input"), JSON.stringify(input));
        await P.tap("import-button");
        await P.tap("run");
        await P.waitForDone();
        assert.equal(await P.text($("requests")), "1");
        assert.equal(await P.text($("steps")), "2", "the transcript's response and this run's");
      });
    });

    // --- 8. accessibility ---------------------------------------------------------------------------------------------

    test("axe-core: the new views are clean at 1280 and 390 px in both languages", async () => {
      for (const lang of ["zh", "en"]) {
        for (const width of [1280, 390]) {
          await open(
            `?scenario=concurrency&lang=${lang}&speed=instant`,
            async (P) => {
              await P.runToEnd();
              await P.tap("request-raw");
              await P.click(`${$("transcript")} ${$("fork")}[data-request="1"]`);
              assert.deepEqual(await P.axe(), [], `${lang} ${width}: fork editor, raw request, waterfall`);
              await P.select($("fork-stop-reason"), "length");
              await P.tap("fork-run");
              await P.waitFor(`${$("compare")}[data-state="done"]`);
              await checkLoop(P, { "loop.mjs": loopWith({ lengthRunsTools: true, duplicateIdsRun: true }) });
              await P.evaluate(() => document.querySelectorAll(".kit-evidence").forEach((d) => (d.open = true)));
              assert.deepEqual(await P.axe(), [], `${lang} ${width}: comparison, kit report`);
              if (width === 390) assert.ok((await P.overflow()) <= 0, `${lang}: no sideways scroll at 390 px`);
              await P.shot(`teach-${lang}-${width}`);
            },
            { viewport: { width, height: width === 390 ? 844 : 720 } },
          );
          await open(
            `live.html?scenario=readme&lang=${lang}`,
            async (P) => {
              assert.deepEqual(await P.axe(), [], `${lang} ${width}: live page`);
            },
            { viewport: { width, height: width === 390 ? 844 : 720 } },
          );
        }
      }
    });
  });
}
