// SPEC part two on the playground (issue 15 item 4, issue 16 item 5) in headless Chromium, against the real wasm
// package: one scenario per §7 rule, each run and stepped to the counts it promises, and what the page shows about
// it (why-lines, the phase table, the request inspector against the transcript, the timeline's order).
// Run: node --test tests/e2e/part-two.test.mjs   (needs dist/ built: node scripts/build.mjs && node scripts/site.mjs)

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { pageSuite, childValues, count, waitForDone, runToEnd, screenshot, axeFindings } from "./harness.mjs";
import { SCENARIOS } from "../../www/scenarios.js";

const suite = pageSuite();
const withPage = (query, fn, options) => suite.withPage(query, fn, options);
const text = (page, testid) => page.textContent(`[data-testid="${testid}"]`);
const attrs = (page, selector, attr) => page.$$eval(selector, (nodes, a) => nodes.map((n) => n.getAttribute(a)), attr);
/** The timeline as `type(callId)` entries, model events left out. */
const loopEvents = (page) =>
  page.$$eval('[data-testid="timeline"] > li', (n) => n.filter((x) => x.dataset.type !== "model_event").map((x) => (x.dataset.callId ? `${x.dataset.type}(${x.dataset.callId})` : x.dataset.type)));

/** Press Step until the loop is held right after the first event of `type` (about `callId`, when given). */
async function stepToEvent(page, type, callId) {
  const wanted = `[data-testid="timeline"] > li.held[data-type="${type}"]${callId ? `[data-call-id="${callId}"]` : ""}`;
  for (let guard = 0; guard < 60 && !(await page.$(wanted)); guard++) {
    const held = await page.evaluate(() => document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq ?? "0");
    await page.click('[data-testid="step"]');
    await page.waitForSelector(`[data-testid="timeline"] > li.held[data-seq="${Number(held) + 1}"]`);
  }
  await page.waitForSelector(wanted);
}

const PART_TWO = ["blocked", "sequential", "timeout", "terminate", "steering", "follow-up", "prepare-request", "notification"];

async function assertCounts(page, scenario, how) {
  for (const id of ["reason", "steps", "requests", "executions"])
    assert.equal(await text(page, id), String(scenario.expect[id]), `${scenario.id} (${how}): ${id}`);
  assert.equal(await count(page, "transcript"), scenario.expect.messages, `${scenario.id} (${how}): messages`);
  assert.equal(await text(page, "result-note"), "", `${scenario.id} (${how}): the events tell the result's story`);
  assert.equal(await page.$eval('[data-testid="timeline"] > li:last-child', (n) => n.dataset.type), "turn_end", `${scenario.id} (${how}): turn_end last`);
  assert.ok(!(await childValues(page, "pairing", "data-paired")).includes("false"), `${scenario.id} (${how}): every call paired`);
  assert.match(await text(page, "findings"), /validateTranscript: ok/, `${scenario.id} (${how}): a valid transcript`);
}

/** Step one event at a time to the end, releasing a gated tool whenever the loop is not held (so it waits for it). */
async function stepToEnd(page) {
  for (let guard = 0; guard < 80; guard++) {
    const { run, held, gate } = await page.evaluate(() => ({
      run: document.querySelector('[data-testid="status"]').dataset.run,
      held: document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq ?? null,
      gate: document.querySelector('[data-testid^="release-"]')?.dataset.testid ?? null,
    }));
    if (run === "done" || run === "failed") return;
    const events = await count(page, "timeline");
    if (gate && !held) await page.click(`[data-testid="${gate}"]`);
    else await page.click('[data-testid="step"]');
    await page.waitForFunction(
      ([before, n]) =>
        ["done", "failed"].includes(document.querySelector('[data-testid="status"]').dataset.run) ||
        (document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq ?? null) !== before ||
        document.querySelectorAll('[data-testid="timeline"] > li').length !== n,
      [held, events],
    );
  }
  assert.fail("the run did not end within 80 steps");
}

test("each §7 scenario runs to the counts it promises, run and stepped one event at a time", async () => {
  await withPage("?lang=en&speed=instant", async (page) => {
    for (const id of PART_TWO) {
      const scenario = SCENARIOS.find((s) => s.id === id);
      await page.selectOption('[data-testid="scenario-select"]', id);
      await page.waitForSelector('[data-testid="status"][data-run="ready"]');
      await runToEnd(page);
      await waitForDone(page);
      await assertCounts(page, scenario, "run");
      await page.click('[data-testid="reset"]');
      await page.waitForSelector('[data-testid="status"][data-run="ready"]');
      await stepToEnd(page);
      await assertCounts(page, scenario, "stepped");
    }
  });
});

test("blocked: beforeToolCall's block is a tool_skipped in the prepare phase, its why-line gives the hook's reason", async () => {
  await withPage("?scenario=blocked&lang=en", async (page) => {
    await stepToEvent(page, "tool_skipped", "call-1");
    assert.deepEqual(await loopEvents(page), ["assistant_message", "tool_skipped(call-1)"], "blocked before anything of the batch runs");
    assert.match(await text(page, "why"), /beforeToolCall blocked delete\(call-1\) in the prepare phase: .*“delete is not allowed in the playground\.”/);
    assert.equal(await page.getAttribute('[data-testid="phase-table"] tr[data-current="true"]', "data-phase"), "prepare");
    assert.equal(await count(page, "timeline", '[data-type="tool_start"]'), 0, "blocked before anything runs");
    await page.click('[data-testid="run"]');
    await waitForDone(page);
    assert.deepEqual(await loopEvents(page), ["assistant_message", "tool_skipped(call-1)", "tool_start(call-2)", "tool_end(call-2)", "assistant_message", "turn_end"]);
    // Both results in call order; the blocked one is the loop's, with the hook's reason as its text.
    const results = await page.$$eval('[data-testid="transcript"] > li[data-role="toolResult"]', (n) => n.map((x) => ({ key: x.dataset.key, owner: x.dataset.owner, text: x.textContent })));
    assert.deepEqual(results.map((r) => r.key), ["r:1:call-1", "r:1:call-2"]);
    assert.equal(results[0].owner, "loop");
    assert.match(results[0].text, /skipped: blocked.*delete is not allowed in the playground\./s);
    assert.equal(await page.getAttribute('[data-testid="pairing"] > li[data-call-id="call-1"]', "data-state"), "skipped");
    await page.click('[data-testid="timeline"] > li[data-type="tool_end"]');
    assert.equal(await page.getAttribute('[data-testid="phase-table"] tr[data-current="true"]', "data-phase"), "finish");
    await screenshot(page, "part2-blocked-1280x720");
  });
});

test("sequential: one tool_start/tool_end pair at a time, the next call starting only after the last one ended", async () => {
  await withPage("?scenario=sequential&lang=en&speed=instant", async (page) => {
    await page.click('[data-testid="run"]');
    await page.waitForSelector('[data-testid="release-call-1"]');
    assert.deepEqual(await attrs(page, '[data-testid="timeline"] > li[data-type="tool_start"]', "data-call-id"), ["call-1"], "call-2 has not started");
    assert.equal(await page.$('[data-testid="release-call-2"]'), null);
    await page.click('[data-testid="release-call-1"]');
    await page.waitForSelector('[data-testid="release-call-2"]');
    assert.deepEqual(await loopEvents(page), ["assistant_message", "tool_start(call-1)", "tool_end(call-1)", "tool_start(call-2)"]);
    await page.click('[data-testid="release-call-2"]');
    await waitForDone(page);
    assert.deepEqual(await loopEvents(page), ["assistant_message", "tool_start(call-1)", "tool_end(call-1)", "tool_start(call-2)", "tool_end(call-2)", "assistant_message", "turn_end"]);
    await page.click('[data-testid="timeline"] > li[data-type="tool_start"][data-call-id="call-2"]');
    assert.match(await text(page, "why"), /The loop starts read\(call-2\), and only it: this batch runs one call at a time/);
    assert.equal(await page.getAttribute('[data-testid="phase-table"] tr[data-current="true"]', "data-phase"), "execute");
  });
  // Stepping: the status says what releasing a held tool_start does in a sequential batch.
  await withPage("?scenario=sequential&lang=en", async (page) => {
    await stepToEvent(page, "tool_start", "call-1");
    assert.match(await text(page, "status"), /runs this call alone; the next call waits for its tool_end/);
  });
});

test("timeout: the held tool is answered after 2 s by the page's real timer, its sibling's result kept", async () => {
  await withPage("?scenario=timeout&lang=en&speed=instant", async (page) => {
    await page.click('[data-testid="run"]');
    await page.waitForSelector('[data-testid="release-call-1"]');
    await page.waitForSelector('[data-testid="timeline"] > li[data-type="tool_end"][data-call-id="call-2"]');
    // Nobody releases slow: the loop's timer answers it.
    await page.waitForSelector('[data-testid="timeline"] > li[data-type="tool_end"][data-call-id="call-1"]', { timeout: 10_000 });
    await waitForDone(page);
    assert.equal(await page.$('[data-testid="release-call-1"]'), null, "the timed-out call's gate is gone");
    assert.equal(await page.getAttribute('[data-testid="tools"] > li[data-call-id="call-1"]', "data-state"), "timedOut");
    assert.deepEqual(await loopEvents(page), ["assistant_message", "tool_start(call-1)", "tool_start(call-2)", "tool_end(call-2)", "tool_end(call-1)", "assistant_message", "turn_end"]);
    const results = await page.$$eval('[data-testid="transcript"] > li[data-role="toolResult"]', (n) => n.map((x) => x.textContent));
    assert.match(results[0], /isError.*Tool call timed out after 2000 ms\./s);
    assert.match(results[1], /fast done/);
    await page.click('[data-testid="timeline"] > li[data-type="tool_end"][data-call-id="call-1"]');
    assert.match(await text(page, "why"), /slow\(call-1\) timed out after 2000 ms, the last of its batch: .*call order \(call-1 → call-2\)/);
    assert.equal(await text(page, "reason"), "stop");
    await screenshot(page, "part2-timeout-1280x720");
  });
});

test("terminate: the run ends terminated after the batch, with no further request", async () => {
  await withPage("?scenario=terminate&lang=en&speed=instant", async (page) => {
    await runToEnd(page);
    assert.equal(await text(page, "reason"), "terminated");
    assert.equal(await text(page, "requests"), "1");
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult", "toolResult"]);
    await page.click('[data-testid="timeline"] > li[data-type="turn_end"]');
    assert.match(await text(page, "why"), /terminated: a call of the last batch returned terminate: true/);
    assert.equal(await page.getAttribute('[data-testid="phase-table"] tr[data-current="true"]', "data-phase"), "checks");
    assert.doesNotMatch(await page.$eval('[data-testid="transcript"] > li:last-child', (n) => n.textContent), /terminate/, "terminate is not stored");
  });
});

test("steering and follow-up: queued_message events, each message appended and carried by the next request", async () => {
  await withPage("?scenario=steering&lang=en&speed=instant", async (page) => {
    await runToEnd(page);
    assert.deepEqual(await loopEvents(page), ["assistant_message", "tool_start(call-1)", "tool_end(call-1)", "queued_message", "assistant_message", "turn_end"]);
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult", "user", "assistant"]);
    await page.click('[data-testid="timeline"] > li[data-type="queued_message"]');
    assert.match(await text(page, "why"), /asked getSteeringMessages .* got a user message: “Also, say in one sentence what it is\.”/);
    assert.match(await page.textContent('[data-testid="timeline"] > li[data-type="queued_message"]'), /steering: user/);
    await page.click('[data-testid="inspector"] button[data-request="2"]');
    assert.deepEqual(await attrs(page, '[data-testid="request-inspector"] .request-messages > [data-role]', "data-diff"), ["same", "new", "new", "new"]);
    assert.match(await page.textContent('[data-testid="request-inspector"] .request-messages > li:last-child'), /Also, say in one sentence what it is/);
  });
  await withPage("?scenario=follow-up&lang=en&speed=instant", async (page) => {
    await runToEnd(page);
    assert.deepEqual(await loopEvents(page), ["assistant_message", "queued_message", "assistant_message", "turn_end"]);
    await page.click('[data-testid="timeline"] > li[data-type="queued_message"]');
    assert.match(await text(page, "why"), /asked getFollowUpMessages and got a user message: “Now introduce it in one sentence\.”/);
    assert.match(await page.textContent('[data-testid="timeline"] > li[data-type="queued_message"]'), /followUp: user/);
  });
});

test("the request inspector shows what the model received against the transcript: trimmed turns, a custom message left out", async () => {
  await withPage("?scenario=prepare-request&lang=en&speed=instant", async (page) => {
    await runToEnd(page);
    assert.equal(await count(page, "transcript"), 8, "the transcript keeps every turn");
    await page.click('[data-testid="inspector"] button[data-request="1"]');
    const inspector = '[data-testid="request-inspector"]';
    assert.deepEqual(await attrs(page, `${inspector} .request-messages > [data-role]`, "data-role"), ["user"]);
    assert.match(await page.textContent(`${inspector} .request-messages`), /Now read CHANGELOG\.md/);
    assert.deepEqual(await attrs(page, '[data-testid="request-left-out"] > li', "data-index"), ["0", "1", "2", "3"]);
    assert.deepEqual(await attrs(page, '[data-testid="request-left-out"] > li', "data-reason"), ["prepareRequest", "prepareRequest", "prepareRequest", "prepareRequest"]);
    assert.match(await page.textContent(inspector), /left out of this request: 4 of the transcript's 5 messages/);
    await page.click('[data-testid="inspector"] button[data-request="2"]');
    assert.deepEqual(await attrs(page, `${inspector} .request-messages > [data-role]`, "data-role"), ["user", "assistant", "toolResult"]);
    assert.match(await page.textContent(inspector), /left out of this request: 4 of the transcript's 7 messages/);
    await screenshot(page, "part2-prepare-request-1280x720");
  });
  await withPage("?scenario=notification&lang=en&speed=instant", async (page) => {
    await runToEnd(page);
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "notification", "assistant", "toolResult", "assistant"]);
    assert.equal(await page.getAttribute('[data-testid="transcript"] > li[data-role="notification"]', "data-owner"), "custom");
    for (const n of ["1", "2"]) {
      await page.click(`[data-testid="inspector"] button[data-request="${n}"]`);
      assert.ok(!(await attrs(page, '[data-testid="request-inspector"] .request-messages > [data-role]', "data-role")).includes("notification"), `request ${n} carries no notification`);
      assert.deepEqual(await page.$$eval('[data-testid="request-left-out"] > li', (x) => x.map((l) => `${l.dataset.index} ${l.dataset.role} ${l.dataset.reason}`)), ["1 notification custom"]);
    }
    // The pairing rules ignore it: the transcript is valid, and the trace has no milestone for it.
    assert.match(await text(page, "findings"), /validateTranscript: ok/);
    assert.equal(await page.$$eval('[data-testid="trace-table"] tbody tr', (n) => n.length), 7);
    await screenshot(page, "part2-notification-1280x720");
  });
});

// --- approvals (SPEC §8): pause, export JSON Lines, reload, import, resume -----------------------------------

/** A transcript as the package's JSON Lines give it, with the timestamps the loop writes for tool results left
 * out (they are the clock's, not the run's). */
const comparable = (jsonl) =>
  jsonl
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line))
    .map((m) => (m.role === "toolResult" ? { ...m, timestamp: 0 } : m));

async function exportTranscript(page) {
  await page.click('summary:has-text("Export")');
  const [file] = await Promise.all([page.waitForEvent("download"), page.click('[data-testid="export-transcript"]')]);
  return readFile(await file.path(), "utf8");
}

async function decide(page, id, approve, reason) {
  await page.click(`[data-testid="${approve ? "approve" : "deny"}-${id}"]`);
  await page.waitForSelector(`[data-testid="approvals-list"] > li[data-call-id="${id}"][data-decision="${approve ? "approve" : "deny"}"]`);
  if (reason !== undefined) await page.fill(`[data-testid="deny-reason-${id}"]`, reason);
}

test("approvals: pause, export the JSON Lines, reload, import them, approve one call and deny another, resume to the uninterrupted run's transcript", async () => {
  let jsonl;
  let resumed;
  await withPage("?scenario=approval&lang=en&speed=instant", async (page) => {
    await page.click('[data-testid="run"]');
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "paused");
    assert.match(await text(page, "status"), /^Finished: reason = paused, steps = 1\. 2 calls wait for a decision/);
    assert.deepEqual(await loopEvents(page), ["assistant_message", "turn_end"], "nothing of the batch ran");
    assert.deepEqual(await attrs(page, '[data-testid="approvals-list"] > li', "data-call-id"), ["call-1", "call-2", "call-3"]);
    assert.deepEqual(await attrs(page, '[data-testid="approvals-list"] > li', "data-needs-approval"), ["true", "true", "false"]);
    // The paused view: validateTranscript's pending, never a red error.
    assert.match(await text(page, "findings"), /paused: call-1 is waiting for a decision/);
    assert.match(await text(page, "findings"), /paused: call-3 needs no approval and runs with its batch on resume/);
    assert.equal(await page.$$eval('[data-testid="findings"] .bad, [data-testid="pairing"] .problem, [data-testid="transcript"] .problem, [data-testid="trace"] .bad', (n) => n.length), 0);
    assert.deepEqual(await childValues(page, "pairing", "data-state"), ["paused", "paused", "paused"]);
    await page.click('[data-testid="timeline"] > li[data-type="turn_end"]');
    assert.match(await text(page, "why"), /The run is paused: .*result\.pending lists its calls/);
    assert.equal(await page.getAttribute('[data-testid="phase-table"] tr[data-current="true"]', "data-phase"), "approve");
    assert.equal(await page.isDisabled('[data-testid="resume"]'), true, "no decision yet");

    // Export: a download and the same text to copy.
    const [file] = await Promise.all([page.waitForEvent("download"), page.click('[data-testid="export-jsonl"]')]);
    assert.equal(file.suggestedFilename(), "paused-run.jsonl");
    jsonl = await readFile(await file.path(), "utf8");
    assert.equal(await page.inputValue('[data-testid="jsonl-text"]'), jsonl);
    assert.deepEqual(jsonl.trim().split("\n").map((l) => JSON.parse(l).role), ["user", "assistant"]);
    const path = await file.path();

    // Reload, then import the file under "Check a transcript": the run starts from it, its calls wait for decisions.
    await page.reload();
    await page.waitForSelector("body[data-ready='true']");
    // The address kept the state: the reloaded page runs the scenario to where it was, paused.
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "paused");
    assert.match(page.url(), /scenario=approval.*step=end/);
    await page.click('summary:has-text("Check a transcript")');
    await page.fill('[data-testid="check-input"]', '{"role": "user"}\nnot json');
    await page.click('[data-testid="import-button"]');
    assert.match(await text(page, "check-error"), /cannot be read \(parseJSONL\): .*line 1/);
    await page.setInputFiles('[data-testid="check-file"]', path);
    await page.waitForFunction((want) => document.querySelector('[data-testid="check-input"]').value === want, jsonl);
    await page.click('[data-testid="import-button"]');
    await page.waitForFunction(() => document.querySelector('[data-testid="scenario-select"]').value === "custom");
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant"]);
    assert.deepEqual(await attrs(page, '[data-testid="approvals-list"] > li', "data-decision"), ["undecided", "undecided", "none"]);
    assert.match(await text(page, "findings"), /paused: call-2 is waiting for a decision/);
    // Run without decisions: the batch pauses again at once, its steps counted from the imported responses.
    await page.click('[data-testid="run"]');
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "paused");
    assert.equal(await text(page, "steps"), "1");
    assert.deepEqual(await loopEvents(page), ["turn_end"]);

    await decide(page, "call-1", true);
    await decide(page, "call-2", false, "not in the playground");
    await page.click('[data-testid="resume"]');
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "stop");
    assert.equal(await text(page, "steps"), "2", "steps go on from startSteps");
    assert.equal(await text(page, "requests"), "1", "one request in the resumed run");
    assert.deepEqual(await loopEvents(page), ["tool_skipped(call-2)", "tool_start(call-1)", "tool_start(call-3)", "tool_end(call-1)", "tool_end(call-3)", "assistant_message", "turn_end"]);
    assert.match(await text(page, "findings"), /validateTranscript: ok/);
    assert.equal(await page.isHidden('[data-testid="approvals-panel"]'), true, "nothing waits any more");
    await page.click('[data-testid="timeline"] > li[data-type="tool_skipped"]');
    assert.match(await text(page, "why"), /delete\(call-2\) was denied: .*“not in the playground”/);
    const skipped = await page.$eval('[data-testid="transcript"] > li[data-key$=":call-2"]', (n) => n.textContent);
    assert.match(skipped, /skipped: denied.*not in the playground/s);
    resumed = await exportTranscript(page);
  });

  // The same decisions given up front: the run never pauses, and makes the same transcript.
  await withPage("?scenario=approval&lang=en&speed=instant", async (page) => {
    await page.click('summary:has-text("Edit the script")');
    const def = JSON.parse(await page.inputValue('[data-testid="editor"]'));
    def.approvals = { "call-1": { approve: true }, "call-2": { approve: false, reason: "not in the playground" } };
    await page.fill('[data-testid="editor"]', JSON.stringify(def, null, 2));
    await page.click('[data-testid="editor-apply"]');
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "stop");
    assert.equal(await text(page, "steps"), "2");
    const uninterrupted = await exportTranscript(page);
    assert.deepEqual(comparable(resumed), comparable(uninterrupted));
    assert.equal(comparable(resumed).length, 6);
  });
});

test("approvals view: axe-clean and screenshotted at 1280 and 390 px in both languages", async () => {
  for (const lang of ["en", "zh"]) {
    for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
      await withPage(
        `?scenario=approval&lang=${lang}&speed=instant`,
        async (page) => {
          await page.click('[data-testid="run"]');
          await waitForDone(page);
          await decide(page, "call-1", true);
          await decide(page, "call-2", false, lang === "zh" ? "演练场里不允许删除" : "not in the playground");
          const paused = await axeFindings(page);
          const name = `approvals-${lang}-${viewport.width}`;
          if (viewport.width < 1280) await page.$eval('[data-testid="approvals-list"]', (el) => el.scrollIntoView({ block: "center" }));
          await screenshot(page, name, { fullPage: viewport.width === 1280 });
          const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
          assert.ok(overflow <= 0, `${name}: the page scrolls sideways by ${overflow}px`);
          await page.click('[data-testid="resume"]');
          await waitForDone(page);
          for (const summary of await page.$$("details:not([open]) > summary")) await summary.click();
          const resumedFindings = await axeFindings(page);
          assert.deepEqual([...paused, ...resumedFindings], [], `${name}: axe findings`);
          const missing = await page.evaluate(async () => (await import(new URL("i18n.js", document.baseURI).href)).missingKeys());
          assert.deepEqual(missing, [], `${name}: keys with no text`);
        },
        { viewport },
      );
    }
  }
});

test("the new scenarios embed and share like the others: autoplay in a lesson's frame, step=end and step=<n> in a link", async () => {
  // Embedded: the steering scenario autoplays; the approval scenario pauses and shows its decisions when named.
  // (The status line is not among the panels: wait for the run's end on its attribute.)
  const ended = (page) => page.waitForSelector('[data-testid="status"][data-run="done"]', { state: "attached" });
  await withPage("?embed=1&scenario=steering&panels=timeline,transcript&autoplay=1&lang=zh", async (page) => {
    await ended(page);
    assert.ok((await loopEvents(page)).includes("queued_message"));
    assert.equal(await page.isHidden('[data-testid="approvals-panel"]'), true);
  });
  await withPage("?embed=1&scenario=approval&panels=timeline,approvals&autoplay=1&lang=zh", async (page) => {
    await ended(page);
    assert.equal(await page.isVisible('[data-testid="approve-call-1"]'), true);
    assert.equal(await page.isHidden('[data-panel="transcript"]'), true);
  });
  // A link to the end of a sequential run opens its gates one by one, in the script's release order.
  await withPage("?scenario=sequential&lang=en&step=end", async (page) => {
    await waitForDone(page);
    assert.deepEqual(await loopEvents(page), ["assistant_message", "tool_start(call-1)", "tool_end(call-1)", "tool_start(call-2)", "tool_end(call-2)", "assistant_message", "turn_end"]);
  });
  // A link to event n holds the run there: here the blocked call's tool_skipped.
  await withPage("?scenario=blocked&lang=en&step=end", async (page) => {
    await waitForDone(page);
    const seq = await page.getAttribute('[data-testid="timeline"] > li[data-type="tool_skipped"]', "data-seq");
    await page.goto(page.url().replace("step=end", `step=${seq}`));
    await page.waitForSelector(`[data-testid="timeline"] > li.held[data-seq="${seq}"]`);
    assert.match(await text(page, "why"), /beforeToolCall blocked delete\(call-1\)/);
  });
});

test("stepping explains a pause and a resume: the held assistant message says the batch will pause, a held denial what comes next", async () => {
  await withPage("?scenario=approval&lang=en", async (page) => {
    await stepToEvent(page, "assistant_message");
    assert.match(await text(page, "why"), /Row tooluse fired, but a call of it needs approval .*the run pauses before anything of the batch happens/);
    assert.match(await text(page, "status"), /finds a call that needs a decision and ends the run paused/);
    await stepToEvent(page, "turn_end");
    await page.click('[data-testid="step"]');
    await waitForDone(page);
    await decide(page, "call-1", true);
    await decide(page, "call-2", false);
    await page.click('[data-testid="resume"]');
    await waitForDone(page); // the resumed run goes on in run mode
    await page.click('[data-testid="reset"]'); // the same resumed script, now stepped
    await stepToEvent(page, "tool_skipped", "call-2");
    assert.match(await text(page, "why"), /delete\(call-2\) was denied: .*“Tool call was denied\.”/);
    assert.match(await text(page, "status"), /goes on with the batch: the next call's decision, or the approved calls run/);
    assert.equal(await page.getAttribute('[data-testid="phase-table"] tr[data-current="true"]', "data-phase"), "approve");
  });
});

test("the §7 views are axe-clean in both languages: the left-out list, a custom message, queued messages, a timed-out tool, the phase table", async () => {
  for (const lang of ["en", "zh"]) {
    for (const id of ["notification", "prepare-request", "steering", "timeout", "blocked"]) {
      await withPage(`?scenario=${id}&lang=${lang}&speed=instant`, async (page) => {
        await page.click('[data-testid="run"]');
        await waitForDone(page); // the timeout scenario's slow tool is left to its timer
        await page.click('[data-testid="timeline"] > li:nth-last-child(2)');
        await page.click('[data-testid="inspector"] button[data-request="1"]');
        assert.deepEqual(await axeFindings(page), [], `${id} (${lang}): axe findings`);
        const missing = await page.evaluate(async () => (await import(new URL("i18n.js", document.baseURI).href)).missingKeys());
        assert.deepEqual(missing, [], `${id} (${lang}): keys with no text`);
        if (lang === "zh") {
          await page.evaluate(() => window.scrollTo(0, 0)); // the sticky dock stays at the top of a full-page picture
          await screenshot(page, `part2-${id}-zh-1280`, { fullPage: true });
        }
      });
    }
  }
});
