// A learner's third tryout of the page, stepping through their own loop (the kit's `kit-step` replay), one test per
// point, each written once and run in Chromium (playwright-core) and in Firefox (firefox-esr through geckodriver):
// 1. a loop that appends a batch's results in completion order: from the event its transcript differs, the transcript
//    and pairing show the loop's own messages (what it sent), and the why-line there says what it did and that step 4
//    asks for call order;
// 2. a loop that runs each call twice: the executions counter is the kit's record of what it ran, marked as
//    differing, and the why-line names the double run;
// 3. on a zh page, the request inspector shows what the loop sent (the kit's cases give it an English system prompt
//    and English tool descriptions) and says so, while the scenario view says the same.
// The loops are in tests/e2e/loops/. Run: node --test tests/e2e/tryout-three.test.mjs (needs dist/ built;
// E2E_BROWSERS=chromium or firefox runs one).

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BROWSERS, browserSuite } from "./browsers.mjs";

const LOOPS = path.join(path.dirname(fileURLToPath(import.meta.url)), "loops");
const $ = (id) => `[data-testid="${id}"]`;

/** Pick a loop file of tests/e2e/loops in "Check your own loop", check it, and wait for the outcome. */
async function checkLoop(P, name) {
  await P.evaluate(() => (document.querySelector('details[data-panel="loop"]').open = true));
  await P.setFiles($("loop-file"), [path.join(LOOPS, name)]);
  await P.waitUntil(() => !document.querySelector('[data-testid="loop-check"]').disabled);
  await P.tap("loop-check");
  return P.waitUntil(() => {
    const s = document.querySelector('[data-testid="loop-status"]');
    return ["passed", "failed", "error"].includes(s.dataset.state) && s.dataset.state;
  });
}

/** Step through what the checked loop did on kit case `id`: the replay is on screen, nothing stepped yet. */
async function stepThrough(P, id) {
  await P.click(`${$("kit-cases")} > li[data-case="${id}"] ${$("kit-step")}`);
  await P.waitUntil((id) => document.querySelector('[data-testid="about"]')?.dataset.replay === id, id);
}

/** The transcript's tool results, in order: [index, call id]. */
const results = (P) => P.evaluate(() => [...document.querySelectorAll('[data-testid="transcript"] > li[data-role="toolResult"]')].map((li) => [Number(li.dataset.index), li.querySelector("[data-call-id]")?.dataset.callId ?? li.textContent]));

/** The pairing rows: call id → its text. */
const pairs = (P) => P.evaluate(() => Object.fromEntries([...document.querySelectorAll('[data-testid="pairing"] > li')].map((li) => [li.dataset.callId, li.textContent])));

for (const browser of BROWSERS) {
  describe(browser, () => {
    const suite = browserSuite(browser);
    const open = (query, fn, options) => suite.open(query, fn, options);

    test("1. a loop appending results in completion order: from the event its transcript differs, the views show its own messages and the why-line says what it did", () =>
      open("?scenario=readme&lang=zh", async (P) => {
        assert.equal(await checkLoop(P, "completion.js"), "failed");
        await stepThrough(P, "concurrency");
        await P.stepTo(11);
        // Event 11: slow-call, the batch's last call, ended. The loop appended fast's result first (what it sent in
        // request 2), and the page says so, not the course's call order.
        const why = await P.text($("why"));
        assert.match(why, /完成顺序/);
        assert.match(why, /第四步/);
        assert.match(why, /fast-call → slow-call/);
        assert.doesNotMatch(why, /现在按调用顺序（slow-call → fast-call）追加工具结果/);
        const order = await P.evaluate(() => [...document.querySelectorAll('[data-testid="transcript"] > li[data-role="toolResult"]')].map((li) => li.dataset.index + ":" + (li.textContent.includes("fast") && !li.textContent.includes("slow") ? "fast" : "slow")));
        assert.deepEqual(order, ["2:fast", "3:slow"]);
        const rows = await pairs(P);
        assert.match(rows["fast-call"], /消息 #2 的结果/);
        assert.match(rows["slow-call"], /消息 #3 的结果/);
        // Stepping on, the transcript stays the loop's, and the pairing with it.
        await P.stepTo(13);
        assert.deepEqual(await P.evaluate(() => [...document.querySelectorAll('[data-testid="transcript"] > li[data-role="toolResult"]')].map((li) => li.dataset.index + ":" + (li.textContent.includes("fast") && !li.textContent.includes("slow") ? "fast" : "slow"))), ["2:fast", "3:slow"]);
        assert.match((await pairs(P))["fast-call"], /消息 #2 的结果/);
        // The same in English.
        await P.tap("lang-toggle");
        await P.click(`${$("timeline")} > li[data-seq="11"]`);
        await P.waitUntil(() => /completion order/.test(document.querySelector('[data-testid="why"]').textContent));
        const en = await P.text($("why"));
        assert.match(en, /step 4 asks for call order/);
        assert.match(en, /fast-call → slow-call/);
      }));

    test("2. a loop that runs each call twice: the executions counter is what the kit recorded it ran, marked as differing, and the why-line names the double run", () =>
      open("?scenario=readme&lang=zh", async (P) => {
        assert.equal(await checkLoop(P, "twice.js"), "failed");
        await stepThrough(P, "readme");
        // Event 7: the loop's tool_start of call-1; it ran the call twice (the kit recorded both).
        await P.stepTo(7);
        assert.equal(await P.text($("executions")), "2");
        const why = await P.text($("why"));
        assert.match(why, /read\(call-1\)/);
        assert.match(why, /执行了 2 次/);
        assert.match(why, /\[call-1, call-1\]/);
        await P.tap("run");
        await P.waitForDone();
        assert.equal(await P.text($("executions")), "2");
        assert.equal(await P.attr($("executions"), "data-match"), "false");
        assert.equal(await P.visible($("counts-note")), false, "the counts do not agree: no note saying they do");
        // The same in English.
        await P.tap("lang-toggle");
        await P.click(`${$("timeline")} > li[data-seq="7"]`);
        await P.waitUntil(() => /ran that call 2 times/.test(document.querySelector('[data-testid="why"]').textContent));
        assert.match(await P.text($("why")), /\[call-1, call-1\]/);
      }));

    test("3. on a zh page, the replay's inspector shows what the loop really sent (the kit's English system prompt and tool descriptions), says so, and the script shown is the same", () =>
      open("?scenario=readme&lang=zh", async (P) => {
        assert.equal(await checkLoop(P, "completion.js"), "failed");
        await stepThrough(P, "concurrency");
        await P.stepTo(1);
        await P.waitFor(`${$("inspector")} ${$("request-inspector")}`);
        const system = "You are tiny-pi, a small agent. Use tools to read files.";
        assert.equal(await P.text(`${$("inspector")} pre.system`), system, "what the loop sent, as it sent it");
        // Said, in the page's language: the kit's cases are written that way, and the page does not translate them.
        const note = await P.text($("inspector-originals"));
        assert.match(note, /英文/);
        assert.match(note, /不翻译/);
        // The script the page shows for this replay is the case as the loop got it, not its translation.
        const editor = await P.evaluate(() => document.querySelector('[data-testid="editor"]').value);
        assert.ok(editor.includes(system), "the editor shows the kit's system prompt");
        assert.ok(!editor.includes("你是 tiny-pi"), "not a translation the loop never received");
        // In English, the user message the loop got is the kit's Chinese one, in the transcript as in the request.
        await P.tap("lang-toggle");
        await P.waitUntil(() => /does not translate/.test(document.querySelector('[data-testid="inspector-originals"]')?.textContent ?? ""));
        const first = await P.text(`${$("transcript")} > li[data-index="0"]`);
        assert.match(first, /同时运行 slow 和 fast。/);
        assert.match(await P.text(`${$("inspector")} .request-messages > li[data-index="0"]`), /同时运行 slow 和 fast。/);
      }));
  });
}
