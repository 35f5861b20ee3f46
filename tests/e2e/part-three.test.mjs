// SPEC part three on the playground (issue 28, item 1's playground scenarios), each check written once and run in
// Chromium (playwright-core) and in Firefox (firefox-esr through geckodriver) through the shared page API: a budget
// stop with each request's usage and the running total, a retry after a provider error with its wait on the timeline
// and the same request sent again, a compaction with its entry in the transcript and the shortened request in the
// inspector; every view clean at every step, and axe-core clean at 1280 and 390 px in both languages.
// Run: node --test tests/e2e/part-three.test.mjs   (needs dist/ built; E2E_BROWSERS=chromium or firefox runs one)

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { BROWSERS, browserSuite } from "./browsers.mjs";
import { scenarioById, localizeDef } from "../../www/scenarios.js";

const $ = (id) => `[data-testid="${id}"]`;
const PART_THREE = ["budget", "retry", "compaction"];
const SUMMARY_PREFIX = "The conversation so far, summarised:\n\n";

/** The counters and the transcript agree with what the scenario states, and the events tell the result's story. */
async function assertCounts(P, id, how) {
  const { expect } = scenarioById(id);
  for (const key of ["reason", "steps", "requests", "executions"]) assert.equal(await P.text($(key)), String(expect[key]), `${id} (${how}): ${key}`);
  assert.equal(await P.count(`${$("transcript")} > li`), expect.messages, `${id} (${how}): messages`);
  assert.equal(await P.text($("result-note")), "", `${id} (${how}): the transcript the page follows is the result's`);
  assert.equal(await P.attr(`${$("timeline")} > li:last-child`, "data-type"), "turn_end", `${id} (${how}): turn_end last`);
}

/** The loop's events in order, model events left out: `type(callId)` or `type`. */
const loopEvents = (P) =>
  P.evaluate(() => [...document.querySelectorAll('[data-testid="timeline"] > li')].filter((n) => n.dataset.type !== "model_event").map((n) => (n.dataset.callId ? `${n.dataset.type}(${n.dataset.callId})` : n.dataset.type)));

/** Pick request n in the inspector. */
const inspect = (P, n) => P.click(`${$("inspector")} .picks button[data-request="${n}"]`);

for (const browser of BROWSERS) {
  describe(browser, () => {
    const suite = browserSuite(browser);
    const open = (query, fn, options) => suite.open(query, fn, options);

    test("budget: the run ends with budget after the second batch, no further request; usage per request and the running total", () =>
      open("?scenario=budget&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitForDone();
        await assertCounts(P, "budget", "run");
        // Both batches ran and were appended; after the second, the budget check ended the run: no third request.
        assert.deepEqual(await loopEvents(P), ["assistant_message", "tool_start(call-1)", "tool_end(call-1)", "assistant_message", "tool_start(call-2)", "tool_end(call-2)", "turn_end"]);
        assert.equal(await P.count(`${$("timeline")} > li[data-event="start"]`), 2);
        assert.match(await P.text(`${$("timeline")} > li:last-child`), /reason=budget steps=2/);
        // The waterfall: each request's tokens and the running total against the budget, the package's own sum.
        assert.deepEqual(await P.attrs(`${$("waterfall")} > li[data-request]`, "data-tokens"), ["1200", "1400"]);
        assert.deepEqual(await P.attrs(`${$("waterfall")} > li[data-request]`, "data-running"), ["1200", "2600"]);
        assert.match(await P.text(`${$("waterfall")} > li[data-request="2"]`), /running total 2600 of 2000/);
        assert.equal(await P.attr($("usage"), "data-total"), "2600", "result.usage.totalTokens");
        assert.equal(await P.attr($("budget"), "data-spent"), "true");
        // The inspector: request 2's response, its tokens and the total so far against the budget.
        await inspect(P, 2);
        assert.equal(await P.attr($("request-tokens"), "data-total"), "1400");
        assert.equal(await P.attr($("request-running"), "data-total"), "2600");
        assert.match(await P.text($("request-running")), /2600 tokens in all up to this response; budget\.maxTokens is 2000/);
        await inspect(P, 1);
        assert.equal(await P.attr($("request-running"), "data-total"), "1200");
        // The why-lines: the second tooluse response checks the budget; turn_end says why the run ended.
        await P.click(`${$("timeline")} > li[data-type="assistant_message"][data-request="2"]`);
        assert.match(await P.text($("why")), /Then it checks the budget: up to this response the model reported 2600 tokens in all, against budget\.maxTokens 2000/);
        await P.click(`${$("timeline")} > li[data-type="turn_end"]`);
        assert.match(await P.text($("why")), /ends with budget: the usage the model reported so far adds up to 2600 tokens, which reaches budget\.maxTokens 2000/);
        assert.equal(await P.attr(`${$("around-table")} tr[data-around="budget"]`, "data-current"), "true");
        assert.equal(await P.attr(`${$("phase-table")} tr[data-phase="checks"]`, "data-current"), "true");
      }));

    test("retry: the failed response is dropped, the loop waits on its timer (a span on the timeline), then sends the same request again", () =>
      open("?scenario=retry&lang=en", async (P) => {
        // Held at the retry event: the failed attempt's events are marked dropped, nothing of it was appended.
        await P.stepTo(6);
        const retry = `${$("timeline")} > li[data-seq="6"]`;
        assert.equal(await P.attr(retry, "data-type"), "retry");
        assert.equal(await P.attr(retry, "data-attempt"), "1");
        assert.match(await P.text(retry), /attempt=1 delayMs=1000 "503 Service Unavailable: the model is overloaded"/);
        assert.deepEqual(await P.attrs(`${$("timeline")} > li[data-dropped="true"]`, "data-seq"), ["1", "2", "3", "4", "5"]);
        assert.equal(await P.attr(`${retry} ${$("retry-wait")}`, "data-state"), "planned", "held: the loop has not begun to wait");
        assert.match(await P.text($("why")), /this is retry 1\. Nothing of the failed response is appended: its calls never run and get no skipped result/);
        assert.match(await P.text($("why")), /waits 1000 ms on the host's timer/);
        assert.match(await P.text($("status")), /the loop waits 1000 ms on a timer, then sends request 1 again/);
        assert.deepEqual(await P.attrs(`${$("transcript")} > li`, "data-role"), ["user"], "the failed response is not in the transcript");
        assert.equal(await P.attr(`${$("around-table")} tr[data-around="retry"]`, "data-current"), "true");
        // Released: the loop waits 1000 ms on a real timer, then calls the model again with request 1 (attempt 2).
        await P.stepTo(7);
        const again = `${$("timeline")} > li[data-seq="7"]`;
        assert.deepEqual([await P.attr(again, "data-event"), await P.attr(again, "data-request"), await P.attr(again, "data-attempt"), await P.attr(again, "data-dropped")], ["start", "1", "2", null]);
        assert.match(await P.text(again), /Model request 1 · attempt 2/);
        assert.match(await P.text($("why")), /Attempt 2 of model request 1 begins: the loop sends the same request again, unchanged/);
        const wait = `${retry} ${$("retry-wait")}`;
        assert.equal(await P.attr(wait, "data-state"), "waited");
        const [start, end] = [Number(await P.attr(wait, "data-start")), Number(await P.attr(wait, "data-end"))];
        assert.ok(end - start >= 990, `the wait lasted the retry's delay on the page's clock (${end - start} ms)`);
        const row = `${$("waterfall")} > li[data-wait="1"]`;
        assert.deepEqual([await P.attr(row, "data-delay"), await P.attr(row, "data-start"), await P.attr(row, "data-end")], ["1000", String(start), String(end)]);
        // Run out: the counts, and no trace of the failed response but its events.
        await P.tap("run");
        await P.waitForDone();
        await assertCounts(P, "retry", "stepped, then run");
        assert.deepEqual(await loopEvents(P), ["retry", "assistant_message", "tool_start(call-2)", "tool_end(call-2)", "assistant_message", "turn_end"]);
        const transcript = await P.text($("transcript"));
        assert.doesNotMatch(transcript, /503|call-1/, "the failed response, and its call, never enter the transcript");
        assert.deepEqual(await P.attrs(`${$("pairing")} > li`, "data-call-id"), ["call-2"]);
        assert.equal(await P.attr(`${$("decision")} tr[data-row="error"]`, "data-fired"), "false", "the table never saw the failed response");
        assert.match(await P.text(`${$("findings")}`), /validateTranscript: ok/);
        // The inspector: request 1 was sent twice, the same request each time.
        await inspect(P, 1);
        assert.match(await P.text($("request-attempts")), /Attempt 1 failed: 503 Service Unavailable: the model is overloaded\. Its response was dropped/);
        assert.equal(await P.attr(`${$("request-attempts")} > li[data-attempt="1"]`, "data-same"), "true");
        // The failed attempt's tokens count too: the page's running total is the package's result.usage.
        assert.deepEqual(await P.attrs(`${$("waterfall")} > li[data-request]:not([data-wait])`, "data-attempt"), ["1", "2", "1"]);
        assert.deepEqual(await P.attrs(`${$("waterfall")} > li[data-request]:not([data-wait])`, "data-running"), ["312", "632", "1002"]);
        assert.equal(await P.attr($("usage"), "data-total"), "1002");
      }));

    test("compaction: the entry in the transcript (nothing removed), the request opening with its summary, then the kept messages", () =>
      open("?scenario=compaction&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitForDone();
        await assertCounts(P, "compaction", "run");
        const summary = localizeDef(scenarioById("compaction").def, "en").compaction.summary;
        // The compaction event comes before request 1; its entry is the transcript's #5, after the input.
        const first = `${$("timeline")} > li:first-child`;
        assert.equal(await P.attr(first, "data-type"), "compaction");
        assert.match(await P.text(first), /firstKeptIndex=3 tokensBefore=\d+/);
        const tokensBefore = (await P.text(first)).match(/tokensBefore=(\d+)/)[1];
        const entry = `${$("transcript")} > li[data-index="5"]`;
        assert.equal(await P.attr(entry, "data-role"), "compaction");
        assert.equal(await P.attr(entry, "data-owner"), "loop");
        assert.equal(await P.text(`${entry} ${$("compaction-summary")}`), `summary${summary}`);
        assert.match(await P.text(entry), new RegExp(`firstKeptIndex=3.*tokensBefore=${tokensBefore}`));
        assert.deepEqual(await P.attrs(`${$("transcript")} > li[data-compacted]`, "data-index"), ["0", "1", "2"]);
        assert.deepEqual(await P.attrs(`${$("transcript")} > li`, "data-role"), ["user", "assistant", "toolResult", "assistant", "user", "compaction", "assistant", "toolResult", "assistant"]);
        // Request 1: the summary as a user message, then #3 and #4; #0 to #2 and the entry left out, and why.
        await inspect(P, 1);
        const sent = `${$("request-inspector")} .request-messages > li`;
        assert.deepEqual(await P.attrs(sent, "data-role"), ["user", "assistant", "user"]);
        assert.equal(await P.attr(`${sent}:first-child`, "data-source"), "summary");
        assert.match(await P.text($("request-summary")), /summary of compaction entry #5: stands for #0–#2/);
        assert.match(await P.text(`${sent}:nth-child(2)`), /README's title is tiny-pi\./);
        assert.deepEqual(await P.attrs(`${$("request-left-out")} > li`, "data-index"), ["0", "1", "2", "5"]);
        assert.deepEqual(await P.attrs(`${$("request-left-out")} > li`, "data-reason"), ["compacted", "compacted", "compacted", "compaction"]);
        await P.tap("request-raw");
        const raw = JSON.parse(await P.text($("request-raw-json")));
        assert.equal(raw.messages[0].content[0].text, SUMMARY_PREFIX + summary);
        assert.equal(raw.messages.length, 3);
        await P.tap("request-raw");
        // Request 2 carries the summary, the kept messages and this run's batch: no second compaction.
        await inspect(P, 2);
        assert.deepEqual(await P.attrs(sent, "data-role"), ["user", "assistant", "user", "assistant", "toolResult"]);
        assert.equal(await P.count(`${$("timeline")} > li[data-type="compaction"]`), 1);
        // The trace makes no record for the entry, and the views stay clean.
        assert.deepEqual(await P.attrs(`${$("trace-table")} tbody tr`, "data-kind"), [
          "user_message", "model_start", "assistant_message", "tool_start", "tool_result", "model_start", "assistant_message", "user_message",
          "model_start", "assistant_message", "tool_start", "tool_result", "model_start", "assistant_message",
        ]);
        assert.match(await P.text($("trace-check")), /validateTrace: ok/);
        assert.match(await P.text($("findings")), /validateTranscript: ok/);
        // The why-line of the compaction event, and the step around the table it belongs to.
        await P.click(first);
        assert.match(await P.text($("why")), new RegExp(`Before request 1, the loop estimated the messages it would carry at ${tokensBefore} tokens, more than maxContextTokens 200`));
        assert.match(await P.text($("why")), /appended at the end of the transcript \(#5\); nothing is removed/);
        assert.equal(await P.attr(`${$("around-table")} tr[data-around="compaction"]`, "data-current"), "true");
        // Selecting the event highlights its entry.
        assert.ok((await P.attr(entry, "class")).includes("highlight"), "the entry belongs to its event");
      }));

    test("each part-three scenario stepped one event at a time: no view reports a problem at any step, and the counts at the end", async () => {
      for (const id of PART_THREE) {
        await open(`?scenario=${id}&lang=en`, async (P) => {
          for (let step = 0; step < 40; step++) {
            const seen = await P.evaluate(() => ({
              run: document.querySelector('[data-testid="status"]').dataset.run,
              bad: [...document.querySelectorAll('[data-testid="findings"] .bad, [data-testid="trace-check"].bad, [data-testid="transcript"] .badge.problem')].map((n) => n.textContent),
              held: document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq ?? "0",
            }));
            assert.deepEqual(seen.bad, [], `${id} after ${step} steps`);
            if (seen.run === "done") break;
            await P.tap("step");
            await P.waitUntil((held) => document.querySelector('[data-testid="status"]').dataset.run === "done" || (document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq ?? "0") !== held, seen.held);
          }
          await assertCounts(P, id, "stepped");
        });
      }
    });

    test("axe-core: the part-three views are clean at 1280 and 390 px in both languages", async () => {
      for (const lang of ["zh", "en"]) {
        for (const width of [1280, 390]) {
          for (const [id, event, request] of [["budget", "turn_end", 2], ["retry", "retry", 1], ["compaction", "compaction", 1]]) {
            await open(
              `?scenario=${id}&lang=${lang}&speed=instant`,
              async (P) => {
                await P.tap("run");
                await P.waitForDone();
                await P.click(`${$("timeline")} > li[data-type="${event}"]`);
                await inspect(P, request);
                assert.equal(await P.attr(`${$("around-table")} tr[data-around="${id}"]`, "data-current"), "true");
                assert.deepEqual(await P.axe(), [], `${id} ${lang} ${width}`);
                if (width === 390) assert.ok((await P.overflow()) <= 0, `${id} ${lang}: no sideways scroll at 390 px`);
                await P.shot(`part-three-${id}-${lang}-${width}`);
              },
              { viewport: { width, height: width === 390 ? 844 : 720 } },
            );
          }
        }
      }
    });
  });
}
