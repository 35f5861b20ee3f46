// Issue 18 in headless Chromium: the playground explains each step (request inspector, why-lines, decision
// table), its views agree with validateTranscript, continuing from a transcript really continues, a manual
// abort is a result, the views link both ways, and the editor keeps its place.
// Run: node --test tests/e2e/explain.test.mjs   (needs pkg/ built: node scripts/build.mjs)

import { test } from "node:test";
import assert from "node:assert/strict";
import { pageSuite, childValues, waitForDone, runToEnd, stepTo, screenshot } from "./harness.mjs";
import { SCENARIOS, scenarioById, localizeDef } from "../../www/scenarios.js";

const suite = pageSuite();
const withPage = (query, fn) => suite.withPage(query, fn);
const text = (page, testid) => page.textContent(`[data-testid="${testid}"]`);
const attrs = (page, selector, attr) => page.$$eval(selector, (nodes, a) => nodes.map((n) => n.getAttribute(a)), attr);
// The page in English shows the scenario in English (its own words translated).
const README = localizeDef(scenarioById("readme").def, "en");

test("request inspector: Model request 2 of the README round trip is exactly what the model received, what is new marked", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    // Held on the start of request 2, the inspector opens that request by itself.
    await stepTo(page, 9);
    assert.equal(await page.getAttribute('[data-testid="request-inspector"]', "data-request"), "2");
    assert.match(await text(page, "why"), /Model request 2 begins: the loop called model\.stream\(\) with the system prompt, 3 messages and 1 tool definition/);

    await page.click('[data-testid="run"]');
    await waitForDone(page);
    await page.click('[data-testid="timeline"] >> text=Model request 1');
    assert.equal(await page.getAttribute('[data-testid="request-inspector"]', "data-request"), "1");
    assert.deepEqual(await attrs(page, '[data-testid="request-inspector"] [data-role]', "data-role"), ["user"]);

    await page.click('[data-testid="timeline"] >> text=Model request 2');
    const inspector = '[data-testid="request-inspector"]';
    assert.equal(await page.getAttribute(inspector, "data-request"), "2");
    assert.deepEqual(await attrs(page, `${inspector} [data-role]`, "data-role"), ["user", "assistant", "toolResult"]);
    assert.deepEqual(await attrs(page, `${inspector} [data-role]`, "data-diff"), ["same", "new", "new"], "new since request 1");
    assert.equal(await page.$$eval(`${inspector} [data-diff="new"] .badge.new`, (n) => n.length), 2);
    assert.deepEqual(await attrs(page, '[data-testid="request-tools"] > li', "data-name"), ["read"]);
    assert.equal(await page.textContent(`${inspector} pre.system`), README.systemPrompt);
    const sent = await page.$$eval(`${inspector} [data-role]`, (n) => n.map((x) => x.textContent));
    assert.match(sent[1], /read\(call-1\)/);
    assert.match(sent[2], /# tiny-pi\s+A small agent runtime\./);
    // The picker opens the other request without changing the selection.
    await page.click('[data-testid="inspector"] button[data-request="1"]');
    assert.equal(await page.getAttribute(inspector, "data-request"), "1");
    await screenshot(page, "inspector-request-1280x720");
  });
});

test("decision table: the length scenario fires row length, and each skipped call's why-line names it", async () => {
  await withPage("?scenario=length&lang=en&speed=instant", async (page) => {
    assert.deepEqual(
      await attrs(page, '[data-testid="decision-table"] tbody tr', "data-row"),
      ["stop", "stop-calls", "tooluse", "tooluse-repeated-id", "tooluse-no-calls", "length", "error", "aborted"],
    );
    assert.deepEqual(await attrs(page, '[data-testid="decision-table"] tr[data-fired="true"]', "data-row"), [], "nothing fired before the run");
    await stepTo(page, 8);
    assert.match(await text(page, "why"), /Row length fired: the response was cut at the length limit/);
    assert.deepEqual(await attrs(page, '[data-testid="decision-table"] tr[data-fired="true"]', "data-row"), ["length"]);
    assert.equal(await page.getAttribute('[data-testid="decision-table"] tr[data-row="length"]', "data-current"), "true");
    await stepTo(page, 9);
    assert.match(await text(page, "why"), /The loop did not run read\(call-1\) \(row length\): the response was cut at the length limit/);
    assert.match(await text(page, "status"), /^Held after event 9, tool_skipped\. Next,/);
    await page.click('[data-testid="run"]');
    await waitForDone(page);
    assert.deepEqual(await attrs(page, '[data-testid="decision-table"] tr[data-fired="true"]', "data-row"), ["length"]);
    await page.click('[data-testid="timeline"] > li[data-type="tool_skipped"][data-call-id="call-2"]');
    assert.match(await text(page, "why"), /The loop did not run read\(call-2\) \(row length\)/);
    // A skipped result is the loop's: one colour for it in the transcript, the timeline, the trace and the legend.
    assert.deepEqual(await attrs(page, '[data-testid="transcript"] > li[data-role="toolResult"]', "data-owner"), ["loop", "loop"]);
    const colours = await page.evaluate(() => {
      const of = (selector, property) => getComputedStyle(document.querySelector(selector))[property];
      return [
        of('[data-testid="transcript"] > li[data-role="toolResult"]', "borderLeftColor"),
        of('[data-testid="timeline"] > li[data-type="tool_skipped"]', "borderLeftColor"),
        of('[data-testid="trace-table"] tr[data-kind="tool_result"] .owner', "color"),
      ];
    });
    const legend = await page.$eval('[data-testid="legend"] .swatch.owner-loop', (n) => getComputedStyle(n).backgroundColor);
    assert.deepEqual(colours, [legend, legend, legend]);
  });
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await runToEnd(page);
    assert.deepEqual(await attrs(page, '[data-testid="decision-table"] tr[data-fired="true"]', "data-row"), ["stop", "tooluse"]);
    assert.deepEqual(await page.$$eval('[data-testid="decision-table"] tr[data-row="tooluse"] .fired-tag', (n) => n.map((x) => x.textContent)), ["request 1"]);
    assert.deepEqual(await page.$$eval('[data-testid="decision-table"] tr[data-row="stop"] .fired-tag', (n) => n.map((x) => x.textContent)), ["request 2"]);
  });
});

test("stepping explains every event, and the status names the held event and its sub-type", async () => {
  const expected = [
    [/Model request 1 begins/, /event 1, model_event › start\. Next, the loop reads the next model event\./],
    [/streams text/, /event 2, model_event › text_delta/],
    [/arguments as JSON text/, /event 3, model_event › toolcall_delta/],
    [/finished the call read\(call-1\)/, /event 4, model_event › toolcall_end/],
    [/stopReason toolUse/, /event 5, model_event › done \(toolUse\)\. Next, .*takes the final message/],
    [/Row tooluse fired/, /event 6, assistant_message\. Next, .*starts the calls \(row tooluse\)/],
    [/starts read\(call-1\)/, /event 7, tool_start/],
    [/read\(call-1\) finished, the last of its batch: .*call order \(call-1\)/, /event 8, tool_end/],
    [/Model request 2 begins/, /event 9, model_event › start/],
    [/streams text/, /event 10, model_event › text_delta/],
    [/stopReason stop/, /event 11, model_event › done \(stop\)/],
    [/Row stop of the decision table fired/, /event 12, assistant_message\. Next, .*ends the run \(row stop\)/],
    [/The run is over: reason stop after 2 model request/, /event 13, turn_end\. Next, runAgentLoop resolves/],
  ];
  await withPage("?scenario=readme&lang=en", async (page) => {
    assert.match(await text(page, "why"), /Nothing has happened yet/);
    for (const [i, [why, status]] of expected.entries()) {
      await stepTo(page, i + 1);
      assert.match(await text(page, "why"), why, `why after event ${i + 1}`);
      assert.match(await text(page, "status"), status, `status after event ${i + 1}`);
    }
  });
});

test("mid-run, the checks say the run is in progress instead of reporting errors", async () => {
  await withPage("?scenario=readme&lang=en", async (page) => {
    await stepTo(page, 7); // held on tool_start: call-1 is in the transcript, its result is not yet
    assert.match(await text(page, "findings"), /run in progress: call-1 has no result yet/);
    assert.equal(await page.$$eval('[data-testid="findings"] .bad', (n) => n.length), 0, "no red finding");
    assert.equal(await page.getAttribute('[data-testid="findings"] li', "data-kind"), "missing_result", "still the validator's kind");
    assert.equal(await page.getAttribute('[data-testid="pairing"] > li[data-call-id="call-1"]', "data-state"), "pending");
    assert.match(await text(page, "trace-check"), /run in progress: call-1 has no tool_result yet/);
    assert.equal(await page.$$eval('[data-testid="trace"] .bad', (n) => n.length), 0);
    await stepTo(page, 8);
    assert.match(await text(page, "findings"), /validateTranscript: ok/);
    await page.click('[data-testid="run"]');
    await waitForDone(page);
    assert.match(await text(page, "trace-check"), /validateTrace: ok/);
  });
  // A transcript that is not a run keeps its problems red.
  await withPage("?scenario=readme&lang=en", async (page) => {
    await page.click('summary:has-text("Check a transcript")');
    await page.fill('[data-testid="check-input"]', JSON.stringify([README.messages[0], README.script[0]]));
    await page.click('[data-testid="check-button"]');
    await page.waitForSelector('[data-testid="findings"] .bad');
    assert.match(await text(page, "findings"), /missing paired result \(missing_result\): call-1/);
    assert.equal(await page.getAttribute('[data-testid="pairing"] > li', "data-state"), "missing");
  });
});

/** What each view says about pairing problems, as sorted "kind id" lines. */
function viewsProblems(page) {
  return page.evaluate(() => {
    const lines = (nodes, kindsOf) => [...nodes].flatMap((n) => kindsOf(n).map((k) => `${k} ${n.dataset.callId}`)).sort();
    const split = (n) => (n.dataset.kinds ?? "").split(" ").filter(Boolean);
    return {
      findings: lines(document.querySelectorAll('[data-testid="findings"] li[data-kind]'), (n) => [n.dataset.kind]),
      pairing: lines(document.querySelectorAll('[data-testid="pairing"] > li'), split),
      transcript: lines(document.querySelectorAll('[data-testid="transcript"] .badge[data-kind]'), (n) => [n.dataset.kind]),
      // validateTrace names a repeated id once per call of the record: compared as a set.
      trace: [...new Set(lines(document.querySelectorAll('[data-testid="trace-check"] [data-kind]'), (n) => [n.dataset.kind]))],
      traceRows: [...new Set(lines(document.querySelectorAll('[data-testid="trace-table"] .badge[data-kind]'), (n) => [n.dataset.kind]))],
      run: document.querySelector('[data-testid="status"]').dataset.run,
    };
  });
}

/**
 * Every view shows validateTranscript's kinds, and validateTrace (which reads the trace as the transcript it stands
 * for) finds the same problems with the same kinds: one name per kind of problem, in every view.
 */
function assertAgree(p, where) {
  assert.deepEqual(p.pairing, p.findings, `${where}: pairing view vs validateTranscript`);
  assert.deepEqual(p.transcript, p.findings, `${where}: transcript badges vs validateTranscript`);
  assert.deepEqual(p.traceRows, p.findings, `${where}: trace rows vs validateTranscript`);
  assert.deepEqual(p.trace, [...new Set(p.findings)].sort(), `${where}: validateTrace vs validateTranscript`);
}

test("validateTranscript, the pairing view and the trace agree at every step of every scenario", async () => {
  await withPage("?lang=en", async (page) => {
    for (const scenario of SCENARIOS) {
      await page.selectOption('[data-testid="scenario-select"]', scenario.id);
      await page.waitForSelector('[data-testid="status"][data-run="ready"]');
      for (let step = 0; ; step++) {
        const p = await viewsProblems(page);
        assertAgree(p, `${scenario.id} after ${step} steps`);
        if (p.run === "done") break;
        const gate = await page.$('[data-testid^="release-"]');
        const held = await page.evaluate(() => document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq);
        if (gate && !held) await gate.click();
        else await page.click('[data-testid="step"]');
        await page.waitForFunction(
          ([before, n]) => {
            const s = document.querySelector('[data-testid="status"]').dataset.run;
            const held = document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq;
            return s === "done" || (held && held !== before) || document.querySelectorAll('[data-testid="timeline"] > li').length !== n || document.querySelector('[data-testid^="release-"]');
          },
          [held, await page.$$eval('[data-testid="timeline"] > li', (n) => n.length)],
        );
        assert.ok(step < 60, `${scenario.id}: the run ends`);
      }
    }
  });
});

test("a repeated id, an orphan and a result before its call show the same kind in every view", async () => {
  const call = (id) => ({ type: "toolCall", id, name: "read", arguments: {} });
  const result = (id) => ({ role: "toolResult", toolCallId: id, toolName: "read", content: [{ type: "text", text: "ok" }], isError: false, timestamp: 3 });
  const user = README.messages[0];
  const pasted = {
    repeated: [user, { role: "assistant", content: [call("call-1"), call("call-1")], stopReason: "toolUse", timestamp: 2 }, result("call-1")],
    misplaced: [user, result("call-9"), { role: "assistant", content: [call("call-9")], stopReason: "toolUse", timestamp: 2 }, result("call-9"), result("x"), result("call-9")],
  };
  await withPage("?scenario=repeated-id&lang=en", async (page) => {
    // The scenario: the loop answers the repeated id with one skipped result, and every view says ok.
    await runToEnd(page);
    assertAgree(await viewsProblems(page), "repeated-id run");
    assert.match(await page.textContent('[data-testid="pairing"] > li[data-call-id="call-1"]'), /2 calls share this id/);
    assert.match(await page.textContent('[data-testid="pairing"] > li[data-call-id="call-1"]'), /a repeated call id \(duplicate-call-id\)/);

    await page.click('summary:has-text("Check a transcript")');
    for (const [name, messages] of Object.entries(pasted)) {
      await page.fill('[data-testid="check-input"]', JSON.stringify(messages));
      await page.click('[data-testid="check-button"]');
      await page.waitForSelector('[data-testid="findings"] .bad');
      const p = await viewsProblems(page);
      assertAgree(p, name);
      if (name === "repeated") assert.deepEqual(p.findings, ["duplicate_call_id call-1"]);
      else assert.deepEqual(p.findings, ["duplicate_result call-9", "orphan_result x", "result_before_call call-9"]);
    }
    await screenshot(page, "agree-pasted-1280x720");
  });
});

test("continue from an imported transcript: the loop starts from it and the transcript it makes is valid", async () => {
  const input = [README.messages[0], README.script[0], { role: "toolResult", toolCallId: "call-1", toolName: "read", content: [{ type: "text", text: "# tiny-pi\nA small agent runtime." }], isError: false, timestamp: 3 }];
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.click('summary:has-text("Check a transcript")');
    await page.fill('[data-testid="check-input"]', JSON.stringify(input));
    await page.click('[data-testid="import-button"]');
    assert.match(await text(page, "check-error"), /Imported 3 messages holding 1 model response: .*response 2 of the script/);
    await runToEnd(page);
    assert.equal(await text(page, "reason"), "stop");
    assert.equal(await text(page, "requests"), "1", "one request: the script's second response");
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult", "assistant"]);
    assert.match((await childValues(page, "transcript"))[3], /The project is called tiny-pi\./);
    assert.match(await text(page, "findings"), /validateTranscript: ok/);
    assert.deepEqual(await attrs(page, '[data-testid="request-inspector"] [data-role]', "data-role"), ["user", "assistant", "toolResult"], "the request held the imported messages");
    assert.equal(await page.$$eval('[data-testid="timeline"] > li[data-type^="tool_"]', (n) => n.length), 0);

    // Only the question: the script starts at its first response.
    await page.fill('[data-testid="check-input"]', JSON.stringify(input.slice(0, 1)));
    await page.click('[data-testid="import-button"]');
    await runToEnd(page);
    assert.equal(await text(page, "requests"), "2");
    assert.match(await text(page, "findings"), /validateTranscript: ok/);
  });
});

test("continue from a transcript that ends with an unanswered call: the loop answers it first", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.click('summary:has-text("Check a transcript")');
    await page.fill('[data-testid="check-input"]', JSON.stringify([README.messages[0], README.script[0]]));
    await page.click('[data-testid="import-button"]');
    await runToEnd(page);
    assert.equal(await text(page, "reason"), "stop");
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "assistant", "toolResult", "assistant"]);
    assert.equal(await text(page, "executions"), "1", "read(call-1) ran before any request");
    assert.match(await text(page, "findings"), /validateTranscript: ok/);
  });
});

test("a manual abort is a result: marked where it happened, and the status says why the running tools finished", async () => {
  await withPage("?scenario=concurrency&lang=en&speed=instant", async (page) => {
    await page.click('[data-testid="run"]');
    await page.waitForSelector('[data-testid="release-slow-call"]');
    await page.waitForSelector('[data-testid="release-fast-call"]');
    const at = await page.$$eval('[data-testid="timeline"] > li', (n) => n.length);
    await page.click('[data-testid="abort"]');
    assert.match(await text(page, "status"), /Aborted after event \d+\. The loop never kills a running tool: .*slow\(slow-call\), fast\(fast-call\)/);
    assert.deepEqual(await attrs(page, '[data-testid="timeline"] > li[data-aborted]', "data-seq"), [String(at)]);
    assert.equal(await page.getAttribute('[data-testid="timeline"] > li[data-aborted]', "data-aborted"), "hand");
    assert.match(await text(page, "timeline"), /you aborted here/);
    assert.match(await text(page, "expected"), /You aborted this run by hand after event \d+/);
    await page.click('[data-testid="release-fast-call"]');
    await page.click('[data-testid="release-slow-call"]');
    await waitForDone(page);
    const status = await text(page, "status");
    assert.match(status, /^Finished: reason = aborted, steps = 1\. You aborted the run by hand after event \d+\./);
    assert.match(status, /slow\(slow-call\), fast\(fast-call\) were already running and still finished: the loop never kills a running tool/);
    assert.equal(await page.$$eval("[data-testid=requests][data-match], [data-testid=reason][data-match]", (n) => n.length), 0, "no ✗ against the course's uninterrupted run");
    await screenshot(page, "abort-by-hand-1280x720");
  });
  await withPage("?scenario=readme&lang=en", async (page) => {
    await stepTo(page, 3);
    await page.click('[data-testid="abort"]');
    await page.click('[data-testid="run"]');
    await waitForDone(page);
    // The loop checks the signal before a request and after a batch: the response under way is finished,
    // its batch runs, and then the run ends.
    assert.equal(await text(page, "reason"), "aborted");
    assert.equal(await text(page, "executions"), "1");
    assert.match(await text(page, "status"), /read\(call-1\) started after the abort and ran: the loop checks the signal only before a model request and after a batch/);
    assert.deepEqual(await attrs(page, '[data-testid="timeline"] > li[data-aborted="hand"]', "data-seq"), ["3"]);
  });
});

/** The link tokens highlighted in each view. */
function highlighted(page) {
  return page.evaluate(() => {
    const of = (sel, attr) => [...document.querySelectorAll(sel)].map((n) => n.getAttribute(attr));
    return {
      events: of('[data-testid="timeline"] > li.highlight', "data-seq").map(Number),
      messages: of('[data-testid="transcript"] > li.highlight', "data-index").map(Number),
      calls: of('[data-testid="transcript"] .block.toolcall.highlight', "data-call-id"),
      pairs: of('[data-testid="pairing"] > li.highlight', "data-call-id"),
      trace: of('[data-testid="trace-table"] tbody tr.highlight', "data-kind"),
    };
  });
}

test("linking: an event, a message, a call, a pairing row and a trace row each highlight what belongs to them", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await runToEnd(page);
    const call = { events: [7, 8], messages: [2], calls: ["call-1"], pairs: ["call-1"], trace: ["tool_start", "tool_result"] };
    const request2 = { events: [9, 10, 11, 12], messages: [3], calls: [], pairs: [], trace: ["model_start", "assistant_message"] };
    const clicks = [
      ['[data-testid="pairing"] > li[data-call-id="call-1"] button', call, "from the pairing row"],
      ['[data-testid="pairing"] > li[data-call-id="call-1"] button', { events: [], messages: [], calls: [], pairs: [], trace: [] }, "a second click clears it"],
      ['[data-testid="transcript"] .block.toolcall button', call, "from the call block"],
      ['[data-testid="trace-table"] tbody tr[data-kind="tool_result"] button', call, "from the trace row"],
      ['[data-testid="timeline"] > li[data-type="tool_start"]', call, "from the event"],
      ['[data-testid="transcript"] > li[data-index="3"] .message-head button', request2, "from the message"],
      ['[data-testid="trace-table"] tbody tr:nth-child(6) button', request2, "from the trace's model_start of turn 2"],
      ['[data-testid="timeline"] > li[data-seq="10"]', request2, "from a text_delta of request 2"],
    ];
    for (const [selector, want, what] of clicks) {
      await page.click(selector);
      assert.deepEqual(await highlighted(page), want, what);
    }
    await screenshot(page, "linked-1280x720");
  });
  await withPage("?scenario=readme&lang=en", async (page) => {
    await stepTo(page, 6);
    assert.deepEqual((await highlighted(page)).messages, [1], "the held assistant_message's message");
    await stepTo(page, 8);
    assert.deepEqual((await highlighted(page)).messages, [2], "the held tool_end's result");
  });
});

test("editor: each error points at its line, Revert restores the scenario's script, and an edited script survives a reload", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.evaluate(() => localStorage.removeItem("tiny-pi-custom"));
    await page.click('summary:has-text("Edit the script")');
    const source = await page.inputValue('[data-testid="editor"]');
    const def = JSON.parse(source);
    def.script[1].stopReason = "maybe";
    const broken = JSON.stringify(def, null, 2);
    await page.fill('[data-testid="editor"]', broken);
    const line = broken.split("\n").findIndex((l) => l.includes('"maybe"')) + 1;
    assert.match(await text(page, "editor-error"), new RegExp(`line ${line}: script\\[1\\]\\.stopReason: must be one of`));
    await page.click('[data-testid="editor-error"] button');
    const selected = await page.$eval('[data-testid="editor"]', (e) => e.value.slice(e.selectionStart, e.selectionEnd));
    assert.match(selected, /"stopReason": "maybe"/, "Go to line selects the line");

    def.script[1].stopReason = "stop";
    def.script[1].content[0].text = "edited answer";
    await page.fill('[data-testid="editor"]', JSON.stringify(def, null, 2));
    await page.click('[data-testid="editor-apply"]');
    await waitForDone(page);
    assert.match((await childValues(page, "transcript"))[3], /edited answer/);

    // The edited script is still the page's after a reload.
    await page.goto(new URL("/?lang=en&speed=instant", suite.server.url).href);
    await page.waitForSelector("body[data-ready='true']");
    assert.equal(await page.$eval('[data-testid="scenario-select"]', (s) => s.value), "custom");
    assert.match(await page.inputValue('[data-testid="editor"]'), /edited answer/);
    await runToEnd(page);
    assert.match((await childValues(page, "transcript"))[3], /edited answer/);

    // Revert: the scenario's own script, not the edited one.
    await page.click('summary:has-text("Edit the script")');
    await page.click('[data-testid="editor-revert"]');
    assert.deepEqual(JSON.parse(await page.inputValue('[data-testid="editor"]')), README);
    assert.match(await text(page, "editor-error"), /Reverted to the script of “README round trip/);
    await page.evaluate(() => localStorage.removeItem("tiny-pi-custom"));
  });
});

test("the chapter-00 trace follows the run's events: a concurrent batch shows its real start and end order", async () => {
  await withPage("?scenario=concurrency&lang=en&speed=instant", async (page) => {
    await page.click('[data-testid="run"]');
    await page.click('[data-testid="release-fast-call"]');
    await page.click('[data-testid="release-slow-call"]');
    await waitForDone(page);
    assert.equal(await page.getAttribute('[data-testid="trace-source"]', "data-source"), "events");
    const rows = await page.$$eval('[data-testid="trace-table"] tbody tr', (n) => n.map((r) => `${r.dataset.kind} ${r.cells[4].textContent}`.trim()));
    assert.deepEqual(rows, [
      "user_message",
      "model_start",
      "assistant_message slow-call,fast-call",
      "tool_start slow-call",
      "tool_start fast-call",
      "tool_result fast-call",
      "tool_result slow-call",
      "model_start",
      "assistant_message",
    ]);
    assert.match(await text(page, "trace-text"), /^01 user_message owner=user/);
    assert.match(await text(page, "trace-check"), /validateTrace: ok/);
    // A pasted transcript has no events: the trace says it is derived from the transcript.
    await page.click('summary:has-text("Check a transcript")');
    await page.fill('[data-testid="check-input"]', JSON.stringify(README.messages));
    await page.click('[data-testid="check-button"]');
    await page.waitForSelector('[data-testid="trace-source"][data-source="transcript"]');
    assert.match(await text(page, "trace-source"), /Derived from the transcript/);
  });
});
