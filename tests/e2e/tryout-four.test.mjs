// A learner's third tryout of the page, one test per point, each written once and run in Chromium (playwright-core)
// and in Firefox (firefox-esr through geckodriver) through the shared page API:
// 1. an abort by hand is part of the address (abort=<n>, or <n>-tools when the tools were out waiting), and a
//    reload, the language switch and the link make it again at the same place;
// 2. the why-line and the status name the real cause: a response that was aborted is not a signal aborted, an error
//    end says which row, and a run with queues or a budget says it checks them;
// 3. the speed chosen is written to the address;
// 4. the Chinese page's visible text has no half-width : ; ( next to a Chinese character.
// Run: node --test tests/e2e/tryout-four.test.mjs   (needs dist/ built; E2E_BROWSERS=chromium or firefox runs one)

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { BROWSERS, browserSuite } from "./browsers.mjs";
import { $, addressOf, heldAt, params, waitingAt } from "./page-waits.mjs";

/** Wait until the address's parameter `name` reads `value`. */
const addressSays = (P, name, value) => P.waitUntil((name, value) => new URLSearchParams(location.search).get(name) === value, name, value);

/** Press Step until the run is over. */
async function stepToEnd(P) {
  for (;;) {
    const run = await P.evaluate(() => document.querySelector('[data-testid="status"]').dataset.run);
    if (run === "done" || run === "failed") return;
    const seq = await P.evaluate(() => document.querySelectorAll('[data-testid="timeline"] > li').length);
    await P.tap("step");
    await P.waitUntil(
      (seq) => ["done", "failed"].includes(document.querySelector('[data-testid="status"]').dataset.run) || document.querySelector(`[data-testid="timeline"] > li.held[data-seq="${seq + 1}"]`) !== null,
      seq,
    );
  }
}

/** Half-width : ; ( next to a Chinese character, a space after full-width punctuation before one, and a quote's
 * full stop doubled: what Chinese text must not show (code such as `runAgentLoop(options) 的` is not matched). */
const HALF_WIDTH = /\p{Script=Han}[:;(]|[:;(]\p{Script=Han}|\p{Script=Han} [(:;]|[：；，。] (?=\p{Script=Han})|） (?=\p{Script=Han})|[。.]”[。.]/u;

/** The lines of the page's visible text (every panel opened) that break HALF_WIDTH. */
const badLines = (P, re) =>
  P.evaluate((source) => {
    for (const d of document.querySelectorAll("details")) d.open = true;
    const re = new RegExp(source, "u");
    return document.body.innerText.split("\n").filter((line) => re.test(line));
  }, re.source);

/** Press Step until the run is held right after an event of `type` (the first after the one held now): its seq. */
async function stepUntil(P, type) {
  for (;;) {
    const seq = await P.evaluate(() => Number(document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq ?? 0));
    await P.tap("step");
    await heldAt(P, seq + 1);
    if ((await P.attr(`${$("timeline")} > li[data-seq="${seq + 1}"]`, "data-type")) === type) return seq + 1;
  }
}

/** What the page shows of a run aborted by hand: its reason and steps, the requests made, the marked event. */
const abortedRun = (P) =>
  P.evaluate(() => ({
    reason: document.querySelector('[data-testid="reason"]').textContent,
    steps: document.querySelector('[data-testid="steps"]').textContent,
    requests: document.querySelector('[data-testid="requests"]').textContent,
    marked: [...document.querySelectorAll('[data-testid="timeline"] > li[data-aborted="hand"]')].map((li) => li.dataset.seq),
  }));

for (const browser of BROWSERS) {
  describe(browser, () => {
    const suite = browserSuite(browser);
    const open = (query, fn, options) => suite.open(query, fn, options);

    test("1a. readme aborted by hand after event 7: abort=7 in the address; the language switch, a reload and the link make it again", () =>
      open("?scenario=readme&lang=zh&step=7", async (P) => {
        await heldAt(P, 7);
        await P.tap("abort");
        await addressSays(P, "abort", "7");
        // The language switch right after the abort keeps it, still held at 7.
        await P.tap("lang-toggle");
        await P.waitUntil(() => document.documentElement.lang === "en");
        await heldAt(P, 7);
        assert.deepEqual((await abortedRun(P)).marked, ["7"]);
        assert.equal((await params(P)).abort, "7");
        await stepToEnd(P);
        const aborted = { reason: "aborted", steps: "1", requests: "1", marked: ["7"] };
        assert.deepEqual(await abortedRun(P), aborted);
        await addressSays(P, "step", "end");
        assert.deepEqual(await params(P), { scenario: "readme", lang: "en", step: "end", abort: "7" });
        const link = await addressOf(P);

        await P.reload();
        await P.waitUntil(() => document.body.dataset.ready === "true");
        await P.waitForDone();
        assert.deepEqual(await abortedRun(P), aborted);
        assert.match(await P.text($("status")), /You aborted the run by hand after event 7\./);

        await P.tap("lang-toggle");
        await P.waitUntil(() => document.documentElement.lang === "zh-CN");
        await P.waitForDone();
        assert.deepEqual(await abortedRun(P), aborted);
        assert.match(await P.text($("timeline")), /你在这里手动取消/);

        await P.open(link);
        await P.waitForDone();
        assert.deepEqual(await abortedRun(P), aborted);
        assert.deepEqual(await params(P), { scenario: "readme", lang: "en", step: "end", abort: "7" });
      }));

    test("1b. concurrency aborted while its tools wait: abort=9-tools with the releases after it; a reload, the language switch and the link make it again", () =>
      open("?scenario=concurrency&lang=zh&step=9", async (P) => {
        await heldAt(P, 9);
        await P.tap("step");
        await waitingAt(P, 9, ["slow-call", "fast-call"]);
        await P.tap("abort");
        await addressSays(P, "abort", "9-tools");
        assert.deepEqual(await params(P), { scenario: "concurrency", lang: "zh", step: "9", wait: "tools", abort: "9-tools" });
        const waiting = await P.text($("status"));
        assert.match(waiting, /^已在事件 9 之后取消/);
        // The language switch while they wait: the same abort, the same gates.
        await P.tap("lang-toggle");
        await P.waitUntil(() => document.documentElement.lang === "en");
        await waitingAt(P, 9, ["slow-call", "fast-call"]);
        assert.match(await P.text($("status")), /^Aborted after event 9\. .*waits for slow\(slow-call\), fast\(fast-call\)/);
        await P.tap("release-slow-call");
        await heldAt(P, 10);
        await P.tap("step");
        await waitingAt(P, 10, ["fast-call"]);
        await P.tap("release-fast-call");
        await heldAt(P, 11);
        await stepToEnd(P);
        await addressSays(P, "step", "end");
        assert.deepEqual(await params(P), { scenario: "concurrency", lang: "en", step: "end", release: "slow-call,fast-call", abort: "9-tools" });
        const status = await P.text($("status"));
        assert.match(status, /^Finished: reason = aborted, steps = 1\. You aborted the run by hand after event 9\. slow\(slow-call\), fast\(fast-call\) were already running/);
        const done = await abortedRun(P);
        assert.deepEqual(done, { reason: "aborted", steps: "1", requests: "1", marked: ["9"] });
        const link = await addressOf(P);

        await P.reload();
        await P.waitUntil(() => document.body.dataset.ready === "true");
        await P.waitForDone();
        assert.deepEqual(await abortedRun(P), done);
        assert.equal(await P.text($("status")), status);

        await P.open(link);
        await P.waitForDone();
        assert.deepEqual(await abortedRun(P), done);
        assert.equal(await P.text($("status")), status);
        assert.deepEqual(await P.attrs(`${$("timeline")} > li[data-type="tool_end"]`, "data-call-id"), ["slow-call", "fast-call"]);

        // A link to the wait itself: aborted, both gates still the learner's.
        await P.open("?scenario=concurrency&lang=zh&step=9&wait=tools&abort=9-tools");
        await waitingAt(P, 9, ["slow-call", "fast-call"]);
        assert.equal(await P.text($("status")), waiting);
      }));

    test("2a. an aborted response is not an aborted signal: the why-line names the aborted row, and a real abort still names the signal", async () => {
      await open("?scenario=aborted&lang=zh&step=end", async (P) => {
        await P.waitForDone();
        const why = await P.text($("why"));
        assert.match(why, /^运行以 aborted 结束：模型的回复本身以 stopReason aborted 结束（决策表的 aborted 行）/);
        assert.doesNotMatch(why, /检查 signal/);
      });
      await open("?scenario=abort-during-tool&lang=en&step=end", async (P) => {
        await P.waitForDone();
        assert.match(await P.text($("why")), /^The run is over, aborted: the loop checks the signal before each model request/);
      });
    });

    test("2b. an error end says its cause: the row of the last response", async () => {
      for (const [id, zh, en] of [
        ["stop-with-calls", /stopReason 是 stop，却带着工具调用（stop-calls 行）/, /stopReason stop yet asks for tools \(row stop-calls\)/],
        ["tooluse-no-calls", /stopReason 是 toolUse，却没有任何工具调用（tooluse-no-calls 行）/, /stopReason toolUse but asks for no tool \(row tooluse-no-calls\)/],
        ["repeated-id", /两个调用共用一个 id（tooluse-repeated-id 行）/, /share an id \(row tooluse-repeated-id\)/],
        ["error", /模型的回复出错了（stopReason 为 error/, /the model's response failed \(stopReason error/],
      ]) {
        await open(`?scenario=${id}&lang=zh&step=end`, async (P) => {
          await P.waitForDone();
          const why = await P.text($("why"));
          assert.match(why, zh, id);
          assert.doesNotMatch(why, /或者模型流失败了/, id);
          await P.tap("lang-toggle");
          await P.waitUntil(() => document.documentElement.lang === "en");
          await P.waitForDone();
          assert.match(await P.text($("why")), en, id);
        });
      }
      // tooluse-no-calls: held at its response, the status does not speak of calls it does not have.
      await open("?scenario=tooluse-no-calls&lang=zh", async (P) => {
        await stepUntil(P, "assistant_message");
        const status = await P.text($("status"));
        assert.match(status, /tooluse-no-calls 行/);
        assert.doesNotMatch(status, /如有调用/);
      });
    });

    test("2c. a run with queues or a budget: the status and why-line say the loop asks the queues (or checks the budget) before it ends or asks again", async () => {
      await open("?scenario=follow-up&lang=zh&step=4", async (P) => {
        await heldAt(P, 4);
        assert.equal(await P.attr(`${$("timeline")} > li[data-seq="4"]`, "data-type"), "assistant_message");
        const status = await P.text($("status"));
        assert.match(status, /loop 先询问 getFollowUpMessages：有消息就追加并再次请求模型，都没有才结束运行（stop 行）/);
        assert.match(await P.text($("why")), /结束之前先询问 getFollowUpMessages/);
        await P.tap("step");
        await heldAt(P, 5);
        assert.equal(await P.attr(`${$("timeline")} > li[data-seq="5"]`, "data-type"), "queued_message");
      });
      for (const [id, zh, en] of [
        ["steering", /先询问 getSteeringMessages（steering 队列）/, /it asks getSteeringMessages \(the steering queue\)/],
        ["budget", /依次检查 signal、budget 和 maxSteps/, /checks the signal, the budget and maxSteps, in that order/],
      ]) {
        await open(`?scenario=${id}&lang=zh`, async (P) => {
          const seq = await stepUntil(P, "tool_end");
          assert.match(await P.text($("status")), zh, id);
          await P.tap("lang-toggle");
          await P.waitUntil(() => document.documentElement.lang === "en");
          await heldAt(P, seq);
          assert.match(await P.text($("status")), en, id);
        });
      }
    });

    test("3. the speed chosen is written to the address, and a reload or the link opens at it", () =>
      open("?scenario=readme&lang=zh", async (P) => {
        assert.equal((await params(P)).speed, undefined, "normal is the default, left out");
        await P.select($("speed"), "slow");
        await addressSays(P, "speed", "slow");
        await P.select($("speed"), "instant");
        await addressSays(P, "speed", "instant");
        const link = await addressOf(P);
        await P.reload();
        await P.waitUntil(() => document.body.dataset.ready === "true");
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="speed"]').value), "instant");
        assert.equal((await params(P)).speed, "instant");
        await P.select($("speed"), "normal");
        await P.waitUntil(() => !new URLSearchParams(location.search).has("speed"));
        await P.open(link);
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="speed"]').value), "instant");
        // The speed stays in the address as the run goes on.
        await P.tap("run");
        await P.waitForDone();
        await addressSays(P, "step", "end");
        assert.deepEqual(await params(P), { scenario: "readme", lang: "zh", speed: "instant", step: "end" });
      }));

    test("4. the Chinese page's visible text: full-width punctuation next to Chinese, no stray spaces, no doubled full stops", async () => {
      const checks = [
        ["?scenario=readme&lang=zh&step=end", null],
        ["?scenario=executor-rejects&lang=zh&step=end", null],
        ["?scenario=concurrency&lang=zh&step=9&wait=tools", null],
        ["?scenario=timeout&lang=zh&step=end", null],
        ["?scenario=approval&lang=zh&step=end", null],
        ["?scenario=steering&lang=zh&step=end", "queued_message"],
        ["?scenario=blocked&lang=zh&step=end", "tool_skipped"],
        ["?scenario=stop-with-calls&lang=zh&step=end", null],
      ];
      for (const [query, pick] of checks) {
        await open(query, async (P) => {
          await P.waitUntil(() => {
            const run = document.querySelector('[data-testid="status"]').dataset.run;
            return run === "done" || document.querySelector('[data-testid="timeline"] > li') !== null;
          });
          if (query.includes("step=end")) await P.waitForDone();
          if (query.includes("wait=tools")) await P.waitFor('[data-testid^="release-"]');
          if (pick) await P.click(`${$("timeline")} > li[data-type="${pick}"]`);
          assert.deepEqual(await badLines(P, HALF_WIDTH), [], query);
        });
      }
      // A pasted transcript with a call left unanswered, checked; then refused as an input, every problem named.
      await open("?scenario=readme&lang=zh", async (P) => {
        const messages = [
          { role: "user", content: "读取 README.md。", timestamp: 1 },
          { role: "assistant", content: [{ type: "toolCall", id: "a", name: "read", arguments: {} }, { type: "toolCall", id: "a", name: "read", arguments: {} }], stopReason: "toolUse", timestamp: 2 },
          { role: "toolResult", toolCallId: "b", toolName: "read", content: [{ type: "text", text: "?" }], isError: true, timestamp: 3 },
        ];
        await P.evaluate(() => (document.querySelector('details[data-panel="check"]').open = true));
        await P.fill($("check-input"), JSON.stringify(messages));
        await P.tap("check-button");
        await P.waitFor(`${$("status")}[data-run="checked"]`);
        assert.deepEqual(await badLines(P, HALF_WIDTH), [], "the checked transcript");
        await P.tap("import-button");
        await P.waitUntil(() => document.querySelector('[data-testid="check-error"]').textContent.startsWith("没有导入"));
        const refusal = await P.text($("check-error"));
        assert.doesNotMatch(refusal, /; /);
        assert.deepEqual(await badLines(P, HALF_WIDTH), [], "the refusal");
      });
    });
  });
}
