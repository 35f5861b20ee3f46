// End-to-end tests of the playground page (www/) in Debian's headless Chromium, against the real wasm package.
// Run: node --test tests/e2e/   (needs pkg/ built: node scripts/build.mjs)
// Every wait is on a DOM condition; screenshots of each end state go to test-results/screenshots/.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { pageSuite, runToEnd, screenshot, childValues, count, waitForCount, waitForText } from "./harness.mjs";
import { SCENARIOS } from "../../www/scenarios.js";
import { EXPECTED_EVENTS } from "../app/round-trip.mjs";

/** Open the page and fail the test if anything reached the console as an error (or a dialog opened). */
const suite = pageSuite();
const withPage = (query, fn) => suite.withPage(query, fn);

// The seed's 13 events of the README round trip, as every app target checks them.
const README_EVENTS = EXPECTED_EVENTS;

function timelineTypes(page) {
  return page.$$eval('[data-testid="timeline"] > *', (nodes) =>
    nodes.map((n) => (n.dataset.event ? `${n.dataset.type}:${n.dataset.event}` : n.dataset.type)),
  );
}

test("README round trip, stepped one loop event at a time: 13 events, 4 messages, 7 milestones", async () => {
  await withPage("?scenario=readme&lang=en", async (page) => {
    await waitForCount(page, "timeline", 0, "li");
    for (let n = 1; n <= README_EVENTS.length; n++) {
      await page.click('[data-testid="step"]');
      // The loop is held right after event n: exactly n events, the last one marked as held.
      await page.waitForSelector(`[data-testid="timeline"] > li.held[data-seq="${n}"]`);
      assert.equal(await count(page, "timeline"), n, `after step ${n}`);
      assert.deepEqual(await timelineTypes(page), README_EVENTS.slice(0, n), `event order after step ${n}`);
      if (n === 8) {
        // Held on tool_end: the batch is complete, so the result is in the transcript as a toolResult message.
        assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult"], "after tool_end");
      }
    }
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult", "assistant"]);
    assert.equal(await page.textContent('[data-testid="reason"]'), "stop", "turn_end carries the reason");
    assert.equal(await page.textContent('[data-testid="steps"]'), "2");

    // Releasing the hold on turn_end lets runAgentLoop resolve; the result agrees with the events.
    await page.click('[data-testid="step"]');
    await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith("Finished"));
    assert.equal(await page.textContent('[data-testid="requests"]'), "2");
    assert.equal(await page.textContent('[data-testid="executions"]'), "1");
    assert.equal(await count(page, "timeline"), 13, "no event after turn_end");
    assert.equal(await page.textContent('[data-testid="result-note"]'), "", "events and returned messages agree");
    assert.deepEqual(await childValues(page, "pairing", "data-call-id"), ["call-1"]);
    assert.deepEqual(await childValues(page, "pairing", "data-paired"), ["true"]);
    const transcript = await childValues(page, "transcript");
    assert.match(transcript[2], /# tiny-pi\s+A small agent runtime\./);
    // In English, the scenario's own words are English too.
    assert.match(transcript[3], /The project is called tiny-pi\./);

    // Chapter 00: seven records with owners user / model / model / loop / tool / model / model.
    const owners = await page.$$eval('[data-testid="trace-table"] tbody tr', (rows) => rows.map((r) => r.dataset.owner));
    assert.deepEqual(owners, ["user", "model", "model", "loop", "tool", "model", "model"]);

    // Selecting the tool_end event highlights the result message it produced.
    await page.click('[data-testid="timeline"] > li[data-type="tool_end"]');
    await page.waitForSelector('[data-testid="transcript"] > li.highlight');
    assert.deepEqual(await page.$$eval('[data-testid="transcript"] > li.highlight', (n) => n.map((x) => x.dataset.index)), ["2"]);
    await screenshot(page, "readme-1280x720");

    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "readme-390", { fullPage: true });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `the page scrolls sideways at 390px by ${overflow}px`);
  });
});

test("concurrency: fast released before slow; tool_end follows completion order, the transcript keeps call order", async () => {
  await withPage("?scenario=concurrency&lang=en&speed=instant", async (page) => {
    await page.click('[data-testid="run"]');
    await page.waitForSelector('[data-testid="release-fast-call"]');
    await page.waitForSelector('[data-testid="release-slow-call"]');
    assert.deepEqual(await childValues(page, "pairing", "data-paired"), ["false", "false"], "both calls are waiting for results");

    await page.click('[data-testid="release-fast-call"]');
    await page.waitForSelector('[data-testid="timeline"] > li[data-type="tool_end"][data-call-id="fast-call"]');
    // fast is done, but results are appended only after the whole batch: the transcript has none yet.
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant"]);
    assert.equal(await page.getAttribute('[data-testid="pairing"] > li[data-call-id="fast-call"]', "data-state"), "finished");

    await page.click('[data-testid="release-slow-call"]');
    await waitForText(page, "reason", "stop");
    await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith("Finished"));

    const toolEnds = await page.$$eval('[data-testid="timeline"] > li[data-type="tool_end"]', (n) => n.map((x) => x.dataset.callId));
    assert.deepEqual(toolEnds, ["fast-call", "slow-call"], "tool_end in completion order");
    const toolStarts = await page.$$eval('[data-testid="timeline"] > li[data-type="tool_start"]', (n) => n.map((x) => x.dataset.seq));
    const firstEnd = await page.$eval('[data-testid="timeline"] > li[data-type="tool_end"]', (x) => x.dataset.seq);
    assert.ok(toolStarts.every((s) => Number(s) < Number(firstEnd)), "every tool_start comes before any tool_end");
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult", "toolResult", "assistant"]);
    const resultIds = await page.$$eval('[data-testid="transcript"] > li[data-role="toolResult"]', (n) => n.map((x) => x.dataset.key.split(":").pop()));
    assert.deepEqual(resultIds, ["slow-call", "fast-call"], "results appended in call order");
    assert.deepEqual(await childValues(page, "pairing", "data-paired"), ["true", "true"]);
    assert.equal(await page.textContent('[data-testid="executions"]'), "2");
    await screenshot(page, "concurrency-1280x720");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "concurrency-390", { fullPage: true });
  });
});

test("length: no tool executes and every call gets a skipped result", async () => {
  await withPage("?scenario=length&lang=en&speed=instant", async (page) => {
    await page.click('[data-testid="run"]');
    await waitForText(page, "reason", "length");
    await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith("Finished"));
    assert.equal(await page.textContent('[data-testid="executions"]'), "0");
    assert.equal(await page.textContent('[data-testid="steps"]'), "1");
    assert.equal(await count(page, "timeline", '[data-type="tool_start"]'), 0);
    assert.equal(await count(page, "timeline", '[data-type="tool_end"]'), 0);
    assert.deepEqual(
      await page.$$eval('[data-testid="timeline"] > li[data-type="tool_skipped"]', (n) => n.map((x) => x.dataset.callId)),
      ["call-1", "call-2"],
    );
    const results = await page.$$eval('[data-testid="transcript"] > li[data-role="toolResult"]', (n) => n.map((x) => x.textContent));
    assert.equal(results.length, 2);
    for (const r of results) {
      assert.match(r, /skipped: length/);
      assert.match(r, /Tool call was not executed because the model response was truncated\./);
    }
    assert.deepEqual(await childValues(page, "pairing", "data-paired"), ["true", "true"]);
    assert.deepEqual(await childValues(page, "pairing", "data-state"), ["skipped", "skipped"]);
    await screenshot(page, "length-1280x720");
  });
});

test("model and tool text is shown as text: <img src=x onerror=alert(1)> runs nothing", async () => {
  const XSS = "<img src=x onerror=alert(1)>";
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.click('summary:has-text("Edit the script")');
    const def = JSON.parse(await page.inputValue('[data-testid="editor"]'));

    // A parse error and a schema error are both shown in place, and nothing runs.
    await page.fill('[data-testid="editor"]', '{"script": [}');
    await page.waitForSelector('[data-testid="editor-error"][data-state="error"]');
    assert.match(await page.textContent('[data-testid="editor-error"]'), /JSON parse error \(line 1, column \d+\)/);
    await page.fill('[data-testid="editor"]', JSON.stringify({ ...def, script: [{ ...def.script[0], stopReason: "maybe" }] }));
    assert.match(await page.textContent('[data-testid="editor-error"]'), /script\[0\]\.stopReason: must be one of/);

    def.script[0].content[0].text = XSS;
    def.script[1].content[0].text = XSS;
    def.tools.read.answer = XSS;
    def.messages[0].content = XSS;
    await page.fill('[data-testid="editor"]', JSON.stringify(def, null, 2));
    await page.waitForSelector('[data-testid="editor-error"][data-state="ok"]');
    await page.click('[data-testid="editor-apply"]');
    await waitForText(page, "reason", "stop");
    await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith("Finished"));

    const texts = await childValues(page, "transcript");
    assert.equal(texts.length, 4);
    for (const text of texts) assert.ok(text.includes(XSS), `message shows the characters: ${text}`);
    assert.ok((await page.textContent('[data-testid="timeline"]')).includes(XSS), "the text_delta shows the characters");
    assert.equal(await page.$$eval("img", (n) => n.length), 0, "no <img> element was created");
    assert.equal(await page.$eval('[data-testid="scenario-select"]', (s) => s.value), "custom");
    await screenshot(page, "xss-1280x720");
  });
});

test("every scenario runs to the end the course expects", async () => {
  await withPage("?lang=en&speed=instant", async (page) => {
    for (const scenario of SCENARIOS) {
      await page.selectOption('[data-testid="scenario-select"]', scenario.id);
      await waitForCount(page, "timeline", 0, "li");
      // Gated tools wait for the learner: release each one as it appears.
      await runToEnd(page);
      assert.match(await page.textContent('[data-testid="status"]'), /^Finished/);
      const { expect } = scenario;
      for (const id of ["reason", "steps", "requests", "executions"]) {
        assert.equal(await page.textContent(`[data-testid="${id}"]`), String(expect[id]), `${scenario.id}: ${id}`);
      }
      assert.equal(await count(page, "transcript"), expect.messages, `${scenario.id}: messages`);
      // The transcript derived from the events equals the messages runAgentLoop returned (no note about a difference).
      assert.equal(await page.textContent('[data-testid="result-note"]').then((t) => t.includes("differs")), false, `${scenario.id}: events and result agree`);
      assert.equal(await page.$$eval('[data-testid="timeline"] > li[data-type="turn_end"]', (n) => n.length), 1, `${scenario.id}: one turn_end`);
      assert.equal(await page.$eval('[data-testid="timeline"] > li:last-child', (n) => n.dataset.type), "turn_end", `${scenario.id}: turn_end last`);
      // Whatever the row, the final transcript has no unpaired call, except a paused run's last batch (SPEC §8).
      const paired = await childValues(page, "pairing", "data-paired");
      if (expect.reason === "paused") assert.deepEqual(await childValues(page, "pairing", "data-state"), paired.map(() => "paused"), `${scenario.id}: the paused batch waits`);
      else assert.ok(!paired.includes("false"), `${scenario.id}: every call paired`);
      await screenshot(page, `scenario-${scenario.id}-1280x720`);
    }
  });
});

test("a pasted transcript is checked with validateTranscript and shown on the pairing view", async () => {
  await withPage("?scenario=readme&lang=en", async (page) => {
    const lines = [
      { role: "user", content: "请读取 README.md，并告诉我项目名。", timestamp: 1 },
      { role: "assistant", content: [{ type: "toolCall", id: "call-1", name: "read", arguments: { path: "README.md" } }], stopReason: "toolUse", timestamp: 2 },
      { role: "toolResult", toolCallId: "call-9", toolName: "read", content: [{ type: "text", text: "?" }], isError: false, timestamp: 3 },
    ].map((m) => JSON.stringify(m));
    await page.click('summary:has-text("Check a transcript")');
    await page.fill('[data-testid="check-input"]', lines.join("\n"));
    await page.click('[data-testid="check-button"]');
    await page.waitForSelector('[data-testid="pairing"] > li[data-call-id="call-9"]');
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult"]);
    assert.equal(await page.getAttribute('[data-testid="pairing"] > li[data-call-id="call-1"]', "data-paired"), "false");
    assert.equal(await page.getAttribute('[data-testid="pairing"] > li[data-call-id="call-9"]', "data-orphan"), "true");
    const kinds = await page.$$eval('[data-testid="findings"] li', (n) => n.map((x) => x.dataset.kind).sort());
    assert.deepEqual(kinds, ["missing_result", "orphan_result"]);

    await page.fill('[data-testid="check-input"]', "[1, 2");
    await page.click('[data-testid="check-button"]');
    assert.match(await page.textContent('[data-testid="check-error"]'), /does not parse/);
    await screenshot(page, "check-1280x720");
  });
});

test("keyboard and language: space steps, r runs, the UI switches between Chinese and English", async () => {
  await withPage("?scenario=plain-stop&lang=zh&speed=instant", async (page) => {
    assert.equal(await page.textContent('[data-testid="step"]'), "单步");
    await page.keyboard.press(" ");
    await page.waitForSelector('[data-testid="timeline"] > li.held[data-seq="1"]');
    await page.keyboard.press(" ");
    await page.waitForSelector('[data-testid="timeline"] > li.held[data-seq="2"]');
    await page.keyboard.press("r");
    await waitForText(page, "reason", "stop");
    await page.click('[data-testid="lang-toggle"]');
    assert.equal(await page.textContent('[data-testid="step"]'), "Step");
    assert.equal(await page.getAttribute("html", "lang"), "en");
  });
});

test("import a transcript, continue from it, and export transcript and events", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    const input = [
      { role: "user", content: "请读取 README.md，并告诉我项目名。", timestamp: 1 },
      { role: "assistant", content: [{ type: "toolCall", id: "call-1", name: "read", arguments: { path: "README.md" } }], stopReason: "toolUse", timestamp: 2 },
      { role: "toolResult", toolCallId: "call-1", toolName: "read", content: [{ type: "text", text: "# tiny-pi\nA small agent runtime." }], isError: false, timestamp: 3 },
    ];
    await page.click('summary:has-text("Check a transcript")');
    await page.fill('[data-testid="check-input"]', JSON.stringify(input));
    await page.click('[data-testid="import-button"]');
    await page.waitForFunction(() => document.querySelector('[data-testid="scenario-select"]').value === "custom");
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult"]);
    assert.equal(await count(page, "timeline"), 0, "imported, not run yet");

    // The imported messages are the input, and the script goes on after the response they already hold
    // (issue 18: continuing never replays the script from its start): only the final answer is left.
    await page.click('summary:has-text("Edit the script")');
    const def = JSON.parse(await page.inputValue('[data-testid="editor"]'));
    assert.equal(def.messages.length, 3, "the editor shows the imported input");
    assert.deepEqual(def.script.map((m) => m.stopReason), ["stop"], "the script left after one response");
    await page.click('[data-testid="run"]');
    await waitForText(page, "reason", "stop");
    await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith("Finished"));
    // steps counts the conversation's requests: the response the transcript holds, then this run's one.
    assert.equal(def.startSteps, 1, "steps go on from the transcript's one response");
    assert.equal(await page.textContent('[data-testid="steps"]'), "2");
    assert.equal(await page.textContent('[data-testid="requests"]'), "1", "one new model request");
    assert.equal(await page.textContent('[data-testid="executions"]'), "0");
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult", "assistant"]);

    await page.click('summary:has-text("Export")');
    const [transcriptFile] = await Promise.all([page.waitForEvent("download"), page.click('[data-testid="export-transcript"]')]);
    assert.equal(transcriptFile.suggestedFilename(), "transcript.jsonl");
    const lines = (await readFile(await transcriptFile.path(), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
    assert.deepEqual(lines.slice(0, 3), input, "the input messages come back unchanged");
    const [eventsFile] = await Promise.all([page.waitForEvent("download"), page.click('[data-testid="export-events"]')]);
    const events = JSON.parse(await readFile(await eventsFile.path(), "utf8"));
    assert.deepEqual(events.map((e) => e.type), ["model_event", "model_event", "model_event", "assistant_message", "turn_end"]);
    await screenshot(page, "import-continue-1280x720");
  });
});

test("bad input from the editor is reported in place, and the next run works", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.click('summary:has-text("Edit the script")');
    const def = JSON.parse(await page.inputValue('[data-testid="editor"]'));
    // A JSON Schema the registry refuses: the package answers with a TypeError naming the field.
    await page.fill('[data-testid="editor"]', JSON.stringify({ ...def, tools: { read: { ...def.tools.read, parameters: { type: 5 } } } }));
    await page.click('[data-testid="editor-apply"]');
    await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.includes("rejected the input"));
    assert.match(await page.textContent('[data-testid="status"]'), /TypeError: .*parameters\.type/);

    // A script that runs out: the run ends with error, and says why.
    await page.fill('[data-testid="editor"]', JSON.stringify({ ...def, script: [] }));
    await page.click('[data-testid="editor-apply"]');
    await waitForText(page, "reason", "error");
    assert.match(await page.textContent('[data-testid="result-note"]'), /error: .*no scripted response/);

    await page.selectOption('[data-testid="scenario-select"]', "readme");
    await page.click('[data-testid="run"]');
    await waitForText(page, "reason", "stop");
    assert.equal(await count(page, "transcript"), 4);
  });
});

test("Esc pauses a running loop on the event it is at; space then advances exactly one", async () => {
  await withPage("?scenario=readme&lang=en&speed=slow", async (page) => {
    await page.keyboard.press("r");
    await page.waitForSelector('[data-testid="timeline"] > li.held');
    await page.keyboard.press("Escape");
    await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith("Held after event"));
    const held = Number(await page.getAttribute('[data-testid="timeline"] > li.held', "data-seq"));
    assert.equal(await count(page, "timeline"), held);
    await page.keyboard.press(" ");
    await page.waitForSelector(`[data-testid="timeline"] > li.held[data-seq="${held + 1}"]`);
    assert.equal(await count(page, "timeline"), held + 1);
    assert.equal(await page.isDisabled('[data-testid="pause"]'), true, "paused: nothing to pause");
    await page.selectOption('[data-testid="speed"]', "instant");
    await page.keyboard.press("r");
    await waitForText(page, "reason", "stop");
    assert.equal(await count(page, "timeline"), 13);
  });
});

test("Abort while both tools wait: the loop waits for them, keeps both results, and makes no second request", async () => {
  await withPage("?scenario=concurrency&lang=en&speed=instant", async (page) => {
    await page.click('[data-testid="run"]');
    await page.waitForSelector('[data-testid="release-slow-call"]');
    await page.waitForSelector('[data-testid="release-fast-call"]');
    await page.click('[data-testid="abort"]');
    await page.waitForSelector('[data-testid="abort"]:disabled');
    assert.equal(await page.textContent('[data-testid="reason"]'), "–", "the loop does not kill running tools");
    await page.click('[data-testid="release-slow-call"]');
    await page.click('[data-testid="release-fast-call"]');
    await waitForText(page, "reason", "aborted");
    await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith("Finished"));
    assert.equal(await page.textContent('[data-testid="steps"]'), "1");
    assert.equal(await page.textContent('[data-testid="requests"]'), "1");
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult", "toolResult"]);
    assert.deepEqual(await childValues(page, "pairing", "data-paired"), ["true", "true"]);
    await screenshot(page, "abort-gated-1280x720");
  });
});
