// The request inspector against the transcript, as a learner met it: picking a tool result shows a request that
// carries it (the one shown if it does, else the first that does), never the request whose response made the call;
// a result no request carried says so. A request that left nothing out says only that every message was sent.
// Run: node --test tests/e2e/inspector-picks.test.mjs   (needs dist/ built: node scripts/site.mjs)

import { test } from "node:test";
import assert from "node:assert/strict";
import { pageSuite, waitForDone } from "./harness.mjs";

const suite = pageSuite();
const withPage = (query, fn) => suite.withPage(query, fn);
const $ = (id) => `[data-testid="${id}"]`;
const shown = (page) => page.getAttribute($("request-inspector"), "data-request");
const pick = (page, n) => page.click(`${$("inspector")} button[data-request="${n}"]`);
const clickMessage = (page, index) => page.click(`${$("transcript")} li[data-index="${index}"] .message-head button.link`);
/** Wait until the inspector shows request n. */
const showing = (page, n) => page.waitForSelector(`${$("request-inspector")}[data-request="${n}"]`);

const WORDS = {
  en: {
    none: "Every message of the transcript was sent.",
    heading: /left out of this request/,
    ended: "No model request carried tool result call-1: the run ended after it without asking the model again. The request below is the one you were looking at.",
  },
  zh: {
    none: "transcript 中的每条消息都发送了。",
    heading: /省略了/,
    ended: "没有哪次模型请求带上工具结果 call-1：运行在它之后就结束了，没有再请求模型。下面仍是你之前看的请求。",
  },
};

test("readme: picking the tool result keeps request 2, which carries it; from request 1 it moves to request 2", async () => {
  await withPage("?scenario=readme&lang=zh&step=end", async (page) => {
    await waitForDone(page);
    assert.equal(await page.getAttribute(`${$("transcript")} li[data-index="2"]`, "data-role"), "toolResult");
    await pick(page, 2);
    await showing(page, 2);
    await clickMessage(page, 2);
    await page.waitForSelector(`${$("transcript")} li[data-index="2"] .message-head button.link[aria-pressed="true"]`);
    assert.equal(await shown(page), "2", "request 2 carries the result: it stays");
    assert.equal(await page.$($("inspector-uncarried")), null);
    // The result is among request 2's messages.
    assert.deepEqual(await page.$$eval(`${$("request-inspector")} .request-messages > li`, (l) => l.map((x) => x.dataset.role)), ["user", "assistant", "toolResult"]);
    // From request 1 (which does not carry it), picking the result again moves to request 2.
    await pick(page, 1);
    await showing(page, 1);
    await clickMessage(page, 0); // another message first, so the result is picked anew
    await clickMessage(page, 2);
    await showing(page, 2);
    assert.equal(await page.$($("inspector-uncarried")), null);
  });
});

for (const lang of ["en", "zh"]) {
  test(`${lang}: a tool result no request carried (the run ended) is said, and the request shown stays`, async () => {
    const words = WORDS[lang];
    await withPage(`?scenario=max-steps-1&lang=${lang}&step=end`, async (page) => {
      await waitForDone(page);
      await showing(page, 1);
      assert.equal(await page.getAttribute(`${$("transcript")} li[data-index="2"]`, "data-role"), "toolResult");
      await clickMessage(page, 2);
      await page.waitForSelector($("inspector-uncarried"));
      assert.equal(await page.textContent($("inspector-uncarried")), words.ended);
      assert.equal(await shown(page), "1");
      // Picking a request by hand clears the note.
      await pick(page, 1);
      await page.waitForFunction(() => !document.querySelector('[data-testid="inspector-uncarried"]'));
    });
  });

  test(`${lang}: a request that left nothing out says only that every message was sent`, async () => {
    const words = WORDS[lang];
    await withPage(`?scenario=readme&lang=${lang}&step=end`, async (page) => {
      await waitForDone(page);
      for (const n of [1, 2]) {
        await pick(page, n);
        await showing(page, n);
        assert.equal(await page.textContent($("request-left-out")), words.none);
        assert.doesNotMatch(await page.textContent($("request-inspector")), words.heading, `request ${n}: no "0 of N" heading`);
      }
    });
  });
}
