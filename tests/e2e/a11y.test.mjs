// The playground for every reader (issue 18, items 6 and 7): keyboard focus, names and live regions, a 390 px
// phone, an axe-core scan, and both languages complete. Screenshots at 1280 and 390 px in both languages go to
// test-results/screenshots/.
// Run: node --test tests/e2e/a11y.test.mjs   (needs pkg/ built: node scripts/build.mjs)

import { test } from "node:test";
import assert from "node:assert/strict";
import { pageSuite, waitForDone, runToEnd, stepTo, screenshot, axeFindings } from "./harness.mjs";
import { SCENARIOS, scenarioById } from "../../www/scenarios.js";

const suite = pageSuite();
const withPage = (query, fn, options) => suite.withPage(query, fn, options);
const text = (page, testid) => page.textContent(`[data-testid="${testid}"]`);

/** What has keyboard focus: its test hook, its focus key, or its tag. */
const focused = (page) =>
  page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return "body";
    const where = el.closest("[data-testid]")?.dataset.testid;
    return el.dataset.testid ?? (el.dataset.focusKey ? `${where} ${el.dataset.focusKey}` : `${where ?? ""} ${el.tagName.toLowerCase()}`.trim());
  });

test("keyboard: the timeline is one tab stop, the arrows move and select, and the selection is announced", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await runToEnd(page);
    assert.deepEqual(
      await page.$$eval('[data-testid="timeline"] > li', (n) => n.filter((x) => x.tabIndex === 0).map((x) => x.dataset.seq)),
      ["13"],
      "one tab stop: the last event",
    );
    assert.equal(await page.getAttribute('[data-testid="timeline"]', "role"), "listbox");
    assert.equal(await page.$$eval('[data-testid="timeline"] > li[role="option"]', (n) => n.length), 13);

    // Tab from the top: the controls in reading order, then one stop in the timeline, then the transcript.
    await page.click("h1"); // sequential focus starts from here
    const stops = [];
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press("Tab");
      stops.push(await focused(page));
    }
    assert.deepEqual(stops.slice(0, 4), ["lang-toggle", "scenario-select", "speed", "reset"], "disabled buttons are skipped");
    const inTimeline = stops.filter((s) => s.startsWith("timeline "));
    assert.deepEqual(inTimeline, ["timeline e:13"], "exactly one stop in the timeline");
    assert.match(stops[stops.indexOf("timeline e:13") + 1], /^transcript /, "Tab leaves the timeline for the transcript");

    await page.focus('[data-testid="timeline"] > li[data-seq="13"]');
    await page.keyboard.press("Home");
    assert.equal(await focused(page), "timeline e:1");
    await page.keyboard.press("ArrowDown");
    assert.equal(await focused(page), "timeline e:2");
    assert.deepEqual(await page.$$eval('[data-testid="timeline"] > li[aria-selected="true"]', (n) => n.map((x) => x.dataset.seq)), ["2"]);
    assert.match(await text(page, "why"), /streams text/, "the why-line follows the selection");
    await page.keyboard.press("End");
    assert.equal(await focused(page), "timeline e:13");
    await page.keyboard.press("ArrowUp");
    assert.equal(await focused(page), "timeline e:12");
    assert.deepEqual(
      await page.$$eval('[data-testid="timeline"] > li', (n) => n.filter((x) => x.tabIndex === 0).map((x) => x.dataset.seq)),
      ["12"],
      "the tab stop moved with the focus",
    );
  });
});

test("names and live regions: only the status line is live, every textarea is named, the language button has lang", async () => {
  for (const lang of ["en", "zh"]) {
    await withPage(`?scenario=readme&lang=${lang}&speed=instant`, async (page) => {
      const live = await page.$$eval('[aria-live], [role="status"], [role="alert"], [role="log"], [role="timer"], [role="marquee"], output', (n) => n.map((x) => x.dataset.testid));
      assert.deepEqual(live, ["status"], `${lang}: the one live region`);
      const names = await page.$$eval("textarea", (n) => n.map((x) => x.getAttribute("aria-label") ?? ""));
      assert.equal(names.length, 2);
      for (const name of names) assert.ok(name.trim(), `${lang}: a textarea without a name`);
      const button = await page.$eval('[data-testid="lang-toggle"]', (b) => ({ text: b.textContent, lang: b.lang }));
      assert.deepEqual(button, lang === "en" ? { text: "中文", lang: "zh-CN" } : { text: "English", lang: "en" });
      assert.equal(await page.getAttribute("html", "lang"), lang === "zh" ? "zh-CN" : "en");
      assert.equal(await page.title(), lang === "zh" ? "tiny-pi 演练场：一步一步看 Agent Loop" : "tiny-pi playground: the agent loop, step by step");
      if (lang === "zh") {
        assert.match(names.join(" "), /脚本/);
        assert.equal(await page.getAttribute("section.controls", "aria-label"), "运行控制");
      }
    });
  }
});

/** Whether a control is on screen and not covered: the element at its centre is the control itself. */
const reachable = (page, testid) =>
  page.$eval(`[data-testid="${testid}"]`, (el) => {
    const r = el.getBoundingClientRect();
    const inView = r.top >= 0 && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth;
    return inView && document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2)?.closest("button") === el;
  });

test("390 px: Step and Release stay in view while each view is read, and tables scroll inside themselves", async () => {
  const phone = { width: 390, height: 844 };
  const views = ['[data-testid="timeline"]', '[data-testid="transcript"]', '[data-testid="pairing"]', '[data-testid="inspector"]', '[data-testid="decision-table"]', '[data-testid="trace-table"]'];
  await withPage(
    "?scenario=readme&lang=en",
    async (page) => {
      for (const [i, view] of views.entries()) {
        await page.$eval(view, (el) => el.scrollIntoView({ block: "center" }));
        assert.ok(await reachable(page, "step"), `Step is in view while reading ${view}`);
        assert.ok(await reachable(page, "run"), `Run is in view while reading ${view}`);
        await page.click('[data-testid="step"]', { noWaitAfter: true });
        await page.waitForSelector(`[data-testid="timeline"] > li.held[data-seq="${i + 1}"]`);
      }
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `the page scrolls sideways at 390px by ${overflow}px`);
      for (const table of ['[data-testid="decision-table"]', '[data-testid="trace-table"]']) {
        const box = await page.$eval(table, (t) => t.closest(".table-wrap").getBoundingClientRect().right);
        assert.ok(box <= phone.width, `${table} scrolls inside its own box`);
      }
      await screenshot(page, "phone-stepping-390", { fullPage: false });
    },
    { viewport: phone },
  );
  await withPage(
    "?scenario=concurrency&lang=zh&speed=instant",
    async (page) => {
      await page.click('[data-testid="run"]');
      await page.waitForSelector('[data-testid="release-slow-call"]');
      await page.$eval('[data-testid="trace"]', (el) => el.scrollIntoView({ block: "center" }));
      assert.ok(await reachable(page, "release-slow-call"), "Release stays in view");
      assert.ok(await reachable(page, "release-fast-call"), "Release stays in view");
      await screenshot(page, "phone-release-zh-390", { fullPage: false });
      await page.click('[data-testid="release-fast-call"]');
      await page.click('[data-testid="release-slow-call"]');
      await waitForDone(page);
    },
    { viewport: phone },
  );
});

test("axe-core finds nothing serious or critical, in both languages at 1280 and 390 px (screenshots of each)", async () => {
  for (const lang of ["en", "zh"]) {
    for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
      await withPage(
        `?scenario=readme&lang=${lang}&speed=instant`,
        async (page) => {
          // Mid-run first: held, with the in-progress wording on screen.
          await stepTo(page, 7);
          const held = await axeFindings(page);
          await runToEnd(page);
          await page.click('[data-testid="pairing"] > li[data-call-id="call-1"] button');
          for (const summary of await page.$$("details:not([open]) > summary")) await summary.click();
          const done = await axeFindings(page);
          const name = `playground-${lang}-${viewport.width}`;
          await screenshot(page, name, { fullPage: true });
          assert.deepEqual([...held, ...done], [], `${name}: axe findings`);
        },
        { viewport },
      );
    }
  }
  // A run with tools waiting for release and a manual abort, in Chinese.
  await withPage("?scenario=concurrency&lang=zh&speed=instant", async (page) => {
    await page.click('[data-testid="run"]');
    await page.waitForSelector('[data-testid="release-slow-call"]');
    await page.click('[data-testid="abort"]');
    assert.deepEqual(await axeFindings(page), []);
    await screenshot(page, "playground-zh-abort-1280", { fullPage: true });
  });
});

test("both languages are complete: no string the page shows lacks a translation", async () => {
  for (const lang of ["zh", "en"]) {
    await withPage(`?lang=${lang}&speed=instant`, async (page) => {
      for (const scenario of SCENARIOS) {
        await page.selectOption('[data-testid="scenario-select"]', scenario.id);
        await page.waitForSelector('[data-testid="status"][data-run="ready"]');
        await stepTo(page, 1);
        await runToEnd(page);
        // Select each event in turn: each has its why-line.
        for (const seq of await page.$$eval('[data-testid="timeline"] > li', (n) => n.map((x) => x.dataset.seq))) {
          await page.click(`[data-testid="timeline"] > li[data-seq="${seq}"]`);
        }
        for (const n of await page.$$eval('[data-testid="inspector"] .picks button[data-request]', (b) => b.map((x) => x.dataset.request))) {
          await page.click(`[data-testid="inspector"] .picks button[data-request="${n}"]`);
        }
        // The raw request, and the fork editor on the first response.
        if (await page.$('[data-testid="request-raw"]')) {
          await page.click('[data-testid="request-raw"]');
          await page.click('[data-testid="request-raw"]');
        }
        if (await page.$('[data-testid="fork"]')) {
          await page.click('[data-testid="fork"]');
          await page.click('[data-testid="fork-cancel"]');
        }
      }
      // A manual abort, an editor error and a pasted transcript with every kind of problem.
      await page.selectOption('[data-testid="scenario-select"]', "concurrency");
      await page.click('[data-testid="run"]');
      await page.waitForSelector('[data-testid="release-slow-call"]');
      await page.click('[data-testid="abort"]');
      await page.click('[data-testid="release-slow-call"]');
      await page.click('[data-testid="release-fast-call"]');
      await waitForDone(page);
      for (const summary of await page.$$("details:not([open]) > summary")) await summary.click();
      await page.fill('[data-testid="editor"]', '{"script": [}');
      await page.fill('[data-testid="editor"]', JSON.stringify({ script: [{ role: "x" }], tools: 1, extra: true }));
      await page.click('[data-testid="editor-revert"]');
      const readme = scenarioById("readme").def;
      const call = { type: "toolCall", id: "c", name: "read", arguments: {} };
      const result = (id) => ({ role: "toolResult", toolCallId: id, toolName: "read", content: [], isError: false, timestamp: 1 });
      await page.fill('[data-testid="check-input"]', JSON.stringify([readme.messages[0], result("c"), { role: "assistant", content: [call, call], stopReason: "toolUse", timestamp: 2 }, result("c"), result("c"), result("z"), { role: "assistant", content: [{ ...call, id: "d" }], stopReason: "toolUse", timestamp: 3 }]));
      await page.click('[data-testid="check-button"]');
      await page.fill('[data-testid="check-input"]', "{oops");
      await page.click('[data-testid="check-button"]');
      await page.click('[data-testid="lang-toggle"]');
      await page.click('[data-testid="lang-toggle"]');
      const missing = await page.evaluate(async () => (await import(new URL("i18n.js", document.baseURI).href)).missingKeys());
      assert.deepEqual(missing, [], `${lang}: keys with no text`);
    });
  }
});
