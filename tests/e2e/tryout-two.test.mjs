// A learner's second tryout of the page, one test per point, each written once and run in Chromium (playwright-core)
// and in Firefox (firefox-esr through geckodriver) through the shared page API:
// 1. while the concurrency scenario's tools wait for a release by hand, the address keeps the run where it is (the
//    event, the gates released so far, in order), and the language switch, a reload and the link restore that wait;
// 2. a step= link opens gates in its release= order, or without one in the script's own order only on its way to the
//    step: from there the gates that wait show their Release buttons;
// 3. while the run waits for a release, Step is disabled and says why;
// 4. a resumed approval and a fork keep the scenario's name, and a resumed run numbers its requests after the ones
//    its transcript already holds;
// 5. an embed without the fork panel has no fork buttons;
// 6. stepping through a case the kit failed, counters equal to the course's do not read as a pass;
// 7. a fork or a resume of an edited script stays "Edited script" (only the course scenario's, or a script that
//    already has its name, keeps the scenario's name);
// 8. after a resume, the comparison of a fork numbers its request as the rest of the page does;
// 9. while a gate with a timeout waits, Step stays enabled (the timeout answers it) and the address says no wait.
// Run: node --test tests/e2e/tryout-two.test.mjs   (needs dist/ built; E2E_BROWSERS=chromium or firefox runs one)

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BROWSERS, browserSuite } from "./browsers.mjs";
import { $, addressOf, heldAt, params, waitingAt } from "./page-waits.mjs";

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const REFERENCE = fs.readFileSync(path.join(ROOT, "tests", "conformance", "reference-loop.mjs"), "utf8");

/** The reference loop (written from chapter 07) with some of its bugs switched on, as a module's text. */
const loopWith = (bugs) => REFERENCE.replace("export const runAgentLoop = createLoop();", `export const runAgentLoop = createLoop(${JSON.stringify(bugs)});`);

/** The call ids of the tool_end events so far, in order. */
const toolEnds = (P) => P.attrs(`${$("timeline")} > li[data-type="tool_end"]`, "data-call-id");

/** Files in a fresh temp folder: their paths, in the order given. */
function tempFiles(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-tryout-"));
  return Object.entries(files).map(([name, text]) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  });
}

/** Pick loop files in "Check your own loop", check them, and wait for the outcome. */
async function checkLoop(P, files) {
  await P.evaluate(() => (document.querySelector('details[data-panel="loop"]').open = true));
  await P.setFiles($("loop-file"), tempFiles(files));
  await P.waitUntil(() => !document.querySelector('[data-testid="loop-check"]').disabled);
  await P.tap("loop-check");
  return P.waitUntil(() => {
    const s = document.querySelector('[data-testid="loop-status"]');
    return ["passed", "failed", "error"].includes(s.dataset.state) && s.dataset.state;
  });
}

for (const browser of BROWSERS) {
  describe(browser, () => {
    const suite = browserSuite(browser);
    const open = (query, fn, options) => suite.open(query, fn, options);

    test("1. tools waiting for a release by hand: the address keeps the event and the gates released so far; the language switch, a reload and the link restore the wait", () =>
      open("?scenario=concurrency&lang=zh&speed=instant", async (P) => {
        await P.stepTo(9);
        await P.tap("step");
        await waitingAt(P, 9, ["slow-call", "fast-call"]);
        await P.waitUntil(() => new URLSearchParams(location.search).get("step") === "9");
        assert.equal((await params(P)).release, undefined, "nothing released yet");
        await P.tap("release-fast-call");
        await heldAt(P, 10);
        await P.tap("step");
        await waitingAt(P, 10, ["slow-call"]);
        await P.waitUntil(() => new URLSearchParams(location.search).get("step") === "10");
        const link = await addressOf(P);
        assert.deepEqual(await params(P), { scenario: "concurrency", lang: "zh", speed: "instant", step: "10", wait: "tools", release: "fast-call" });

        // The other language: the same wait, slow's gate still closed, in English.
        await P.tap("lang-toggle");
        await P.waitUntil(() => document.documentElement.lang === "en");
        await waitingAt(P, 10, ["slow-call"]);
        assert.match(await P.text($("status")), /^The loop is waiting for tools: slow\(slow-call\)\./);
        assert.deepEqual(await toolEnds(P), ["fast-call"]);
        assert.equal((await params(P)).step, "10");

        // A reload: the same again.
        await P.reload();
        await P.waitUntil(() => document.body.dataset.ready === "true");
        await waitingAt(P, 10, ["slow-call"]);
        assert.deepEqual(await toolEnds(P), ["fast-call"]);
        assert.deepEqual(await params(P), { scenario: "concurrency", lang: "en", speed: "instant", step: "10", wait: "tools", release: "fast-call" });

        // The link, opened: the same wait in Chinese; the learner releases slow, and the run goes on from there.
        await P.open(link);
        await waitingAt(P, 10, ["slow-call"]);
        assert.match(await P.text($("status")), /^loop 正在等待工具：slow\(slow-call\)/);
        await P.tap("release-slow-call");
        await heldAt(P, 11);
        assert.deepEqual(await toolEnds(P), ["fast-call", "slow-call"]);
        await P.waitUntil(() => new URLSearchParams(location.search).get("release") === "fast-call,slow-call");
        await P.tap("run");
        await P.waitForDone();
        assert.equal(await P.text($("reason")), "stop");
      }));

    test("2. a step= link: without release= the gates that wait at its step show their Release buttons; with release= it follows that order", async () => {
      // Held after event 9 (both tool_start): one Step, and both tools wait for the learner, none opened by the script.
      await open("?scenario=concurrency&lang=en&step=9", async (P) => {
        await heldAt(P, 9);
        await P.tap("step");
        await waitingAt(P, 9, ["slow-call", "fast-call"]);
        assert.deepEqual(await toolEnds(P), []);
      });
      // To event 10 the script's own order opens fast; from there slow waits, its button shown.
      await open("?scenario=concurrency&lang=en&step=10", async (P) => {
        await heldAt(P, 10);
        await P.waitFor($("release-slow-call"));
        await P.tap("step");
        await waitingAt(P, 10, ["slow-call"]);
        assert.deepEqual(await toolEnds(P), ["fast-call"]);
        assert.equal((await params(P)).release, "fast-call", "the address says which gate the script's order opened");
      });
      // The link's own order: slow first, then fast waits.
      await open("?scenario=concurrency&lang=en&step=10&release=slow-call", async (P) => {
        await heldAt(P, 10);
        await P.tap("step");
        await waitingAt(P, 10, ["fast-call"]);
        assert.deepEqual(await toolEnds(P), ["slow-call"]);
      });
      // A step past both gates still gets there, in the script's order.
      await open("?scenario=concurrency&lang=en&step=12", async (P) => {
        await heldAt(P, 12);
        assert.deepEqual(await toolEnds(P), ["fast-call", "slow-call"]);
      });
    });

    test("3. while the run waits for a release, Step is disabled and its title says why, in both languages", () =>
      open("?scenario=concurrency&lang=en&step=9", async (P) => {
        await heldAt(P, 9);
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="step"]').disabled), false);
        await P.tap("step");
        await waitingAt(P, 9, ["slow-call", "fast-call"]);
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="step"]').disabled), true);
        assert.match(await P.attr($("step"), "title"), /release one in the Tools bar/i);
        await P.tap("lang-toggle");
        await P.waitUntil(() => document.documentElement.lang === "zh-CN");
        await waitingAt(P, 9, ["slow-call", "fast-call"]);
        assert.match(await P.attr($("step"), "title"), /放行/);
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="step"]').disabled), true);
        // Released: the loop emits the next event and Step steps again.
        await P.tap("release-fast-call");
        await heldAt(P, 10);
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="step"]').disabled), false);
        assert.equal(await P.attr($("step"), "title"), "");
      }));

    /** Run the approval scenario to its pause, approve call-1, deny call-2 and resume, to the end. */
    async function resumeApproval(P) {
      await P.tap("run");
      await P.waitForDone();
      await P.tap("approve-call-1");
      await P.tap("deny-call-2");
      await P.waitFor(`${$("approvals-list")} > li[data-call-id="call-2"][data-decision="deny"]`);
      await P.tap("resume");
      await P.waitUntil(() => document.querySelector('[data-testid="status"]').dataset.run === "done" && document.querySelector('[data-testid="reason"]').textContent === "stop");
    }

    test("4. a resumed approval keeps the scenario's name, in both languages and after a reload", () =>
      open("?scenario=approval&lang=en&speed=instant", async (P) => {
        const title = "Approvals: the run pauses, and resumes with your decisions (needsApproval)";
        await resumeApproval(P);
        const named = async () => {
          assert.equal(await P.evaluate(() => document.querySelector('[data-testid="scenario-select"]').value), "custom");
          assert.equal(await P.evaluate(() => document.querySelector('[data-testid="scenario-select"]').selectedOptions[0].textContent), `${title} (resumed with your decisions)`);
          assert.match(await P.text($("about")), /^“Approvals: .*”, resumed with your decisions: .*steps go on from the 1 before/);
          assert.equal(await P.attr($("chapter-step"), "data-step"), "two");
        };
        await named();
        // The address holds the resumed script and step=end: the reloaded page runs it out at once.
        await P.waitUntil(() => location.hash.startsWith("#script="));
        await P.reload();
        await P.waitUntil(() => document.body.dataset.ready === "true");
        await P.waitForDone();
        await named();
        await P.tap("lang-toggle");
        await P.waitUntil(() => document.querySelector('[data-testid="scenario-select"]').selectedOptions[0].textContent === "“批准：运行暂停，决定后继续（needsApproval）”（按你的决定继续）");
      }));

    test("4. a resumed run numbers its request after the paused run's, as steps counts it, in every view", () =>
      open("?scenario=approval&lang=en&speed=instant", async (P) => {
        await resumeApproval(P);
        // steps = 2: the paused run's request and this run's, which is request 2 wherever it is named.
        assert.equal(await P.text($("steps")), "2");
        assert.deepEqual(await P.texts(`${$("timeline")} .request-label`), ["Model request 2"]);
        assert.equal(await P.text($("requests")), "1", "one request in this run");
        assert.match(await P.text($("requests-before")), /1 before it, so they are numbered from 2/);
        assert.deepEqual(await P.texts(`${$("inspector")} .picks button[data-request]`), ["Request 2"]);
        assert.equal(await P.text(`${$("waterfall")} > li[data-request="1"] .wf-label`), "Model request 2");
        assert.match(await P.text(`${$("decision")} tr[data-row="stop"] th`), /request 2/);
        assert.equal(await P.attr(`${$("transcript")} ${$("fork")}`, "aria-label"), "fork from the response to model request 2");
        await P.click(`${$("timeline")} > li[data-event="start"]`);
        assert.match(await P.text($("why")), /^Model request 2 begins: /);
        await P.tap("lang-toggle");
        await P.waitUntil(() => document.querySelector('[data-testid="timeline"] .request-label')?.textContent === "模型请求 2");
        assert.match(await P.text($("requests-before")), /已有 1 次请求，所以本次从请求 2 开始编号/);
      }));

    test("4. a fork keeps the scenario's name: the fork of it, and which response was edited; so does its link", () =>
      open("?scenario=readme&lang=en&speed=instant", async (P) => {
        await P.tap("run");
        await P.waitForDone();
        await P.click(`${$("transcript")} ${$("fork")}[data-request="2"]`);
        await P.fill($("fork-text"), "A different answer.");
        await P.tap("fork-run");
        await P.waitFor(`${$("compare")}[data-state="done"]`);
        const named = async () => {
          assert.equal(await P.evaluate(() => document.querySelector('[data-testid="scenario-select"]').selectedOptions[0].textContent), "Fork of README round trip (two model requests) (the response to model request 2 edited)");
          assert.match(await P.text($("about")), /^A fork of “README round trip \(two model requests\)”: the response to model request 2 as you edited it/);
          assert.equal(await P.attr($("chapter-step"), "data-step"), "2");
        };
        await named();
        await P.waitUntil(() => location.hash.startsWith("#script="));
        const link = await addressOf(P);
        await P.evaluate(() => localStorage.clear()); // the link alone carries it
        await P.open(link);
        await P.waitFor(`${$("compare")}[data-state="done"]`);
        await named();
      }));

    test("5. an embed without the fork panel shows no fork button; with it, the button opens the fork editor", async () => {
      const ended = (P) => P.waitFor('[data-testid="status"][data-run="done"]');
      await open("?embed=1&scenario=readme&panels=timeline,transcript&autoplay=1&lang=zh", async (P) => {
        await ended(P);
        assert.equal(await P.count(`${$("transcript")} > li`), 4);
        assert.equal(await P.count(`${$("transcript")} ${$("fork")}`), 0);
      });
      await open("?embed=1&scenario=readme&panels=transcript,fork&autoplay=1&lang=en", async (P) => {
        await ended(P);
        assert.equal(await P.count(`${$("transcript")} ${$("fork")}`), 2);
        await P.click(`${$("transcript")} ${$("fork")}[data-request="1"]`);
        await P.waitFor($("fork-stop-reason"));
        assert.equal(await P.visible($("fork-stop-reason")), true);
      });
    });

    test("6. stepping through a case the kit failed: counters equal to the course's do not read as a pass", () =>
      open("?scenario=readme&lang=en", async (P) => {
        assert.equal(await checkLoop(P, { "order.mjs": loopWith({ completionOrder: true }) }), "failed");
        assert.equal(await P.attr(`${$("kit-cases")} > li[data-case="concurrency"]`, "data-pass"), "false");
        await P.click(`${$("kit-cases")} > li[data-case="concurrency"] ${$("kit-step")}`);
        await P.tap("run");
        await P.waitForDone();
        // Every count is the course's (the loop only appended the results in another order), yet the case failed.
        for (const id of ["requests", "executions", "steps", "reason"]) {
          const mark = await P.evaluate((id) => getComputedStyle(document.querySelector(`[data-testid="${id}"]`), "::after").content, id);
          assert.doesNotMatch(mark, /✓/, `${id}: no check mark beside a failed case`);
          assert.equal(mark, '" ="', `${id}: the count is marked equal to the course's (=)`);
        }
        assert.match(await P.text($("counts-note")), /The counts are the course's, but the kit failed this case/);
        await P.tap("lang-toggle");
        await P.waitUntil(() => /计数与课程一致，但检查没有通过这个用例/.test(document.querySelector('[data-testid="counts-note"]')?.textContent ?? ""));
        // A case the loop passed keeps its check marks.
        await P.click(`${$("kit-cases")} > li[data-case="readme"] ${$("kit-step")}`);
        await P.tap("run");
        await P.waitForDone();
        const mark = await P.evaluate(() => getComputedStyle(document.querySelector('[data-testid="steps"]'), "::after").content);
        assert.match(mark, /✓/);
        assert.equal(await P.visible($("counts-note")), false);
      }));

    /** Open the editor, put `edit` of its script there and apply it (the picker then says "custom"; the run goes on). */
    async function applyEdited(P, edit) {
      await P.evaluate(() => (document.querySelector('details[data-panel="editor"]').open = true));
      const def = JSON.parse(await P.evaluate(() => document.querySelector('[data-testid="editor"]').value));
      edit(def);
      await P.fill($("editor"), JSON.stringify(def, null, 2));
      await P.tap("editor-apply");
      await P.waitUntil(() => document.querySelector('[data-testid="scenario-select"]').value === "custom");
    }

    /** The page names the run as an edited script: the picker, the about line, the chapter badge its own (`step`:
     * "two" for a script with part two's options, none for the README's). */
    async function namedEdited(P, step = "") {
      assert.equal(await P.evaluate(() => document.querySelector('[data-testid="scenario-select"]').selectedOptions[0].textContent), "Edited script");
      assert.doesNotMatch(await P.text($("about")), /fork|resumed/i);
      assert.equal(await P.attr($("chapter-step"), "data-step"), step);
    }

    test("7. a fork of an edited script is not named after the course scenario", () =>
      open("?scenario=readme&lang=en&speed=instant", async (P) => {
        await applyEdited(P, (def) => {
          def.script.at(-1).content = [{ type: "text", text: "Edited: not the course's answer." }];
        });
        await P.waitForDone();
        await namedEdited(P);
        await P.click(`${$("transcript")} ${$("fork")}[data-request="2"]`);
        await P.fill($("fork-text"), "A different answer.");
        await P.tap("fork-run");
        await P.waitFor(`${$("compare")}[data-state="done"]`);
        await namedEdited(P);
        // A fork of that fork: still the edited script.
        await P.click(`${$("transcript")} ${$("fork")}[data-request="2"]`);
        await P.fill($("fork-text"), "Yet another answer.");
        await P.tap("fork-run");
        await P.waitUntil(() => document.querySelector('[data-testid="compare"]')?.dataset.state === "done" && /Yet another/.test(document.querySelector('[data-testid="transcript"]').textContent));
        await namedEdited(P);
      }));

    test("7. a resume of an edited script is not named after the course scenario", () =>
      open("?scenario=approval&lang=en&speed=instant", async (P) => {
        await applyEdited(P, (def) => {
          def.script.at(-1).content = [{ type: "text", text: "Edited: not the course's answer." }];
        });
        await P.waitForDone();
        await namedEdited(P, "two");
        await P.tap("approve-call-1");
        await P.tap("deny-call-2");
        await P.waitFor(`${$("approvals-list")} > li[data-call-id="call-2"][data-decision="deny"]`);
        await P.tap("resume");
        await P.waitUntil(() => document.querySelector('[data-testid="status"]').dataset.run === "done" && document.querySelector('[data-testid="reason"]').textContent === "stop");
        await namedEdited(P, "two");
      }));

    test("8. after a resume, the comparison of a fork numbers its request after the paused run's", () =>
      open("?scenario=approval&lang=en&speed=instant", async (P) => {
        await resumeApproval(P);
        assert.equal(await P.attr(`${$("transcript")} ${$("fork")}`, "aria-label"), "fork from the response to model request 2");
        await P.click(`${$("transcript")} ${$("fork")}`);
        await P.fill($("fork-text"), "A different answer.");
        await P.tap("fork-run");
        await P.waitFor(`${$("compare")}[data-state="done"]`);
        assert.equal(await P.text(`${$("compare")} > h3`), "The original run and the fork from request 2");
        assert.equal(await P.text(`${$("compare")} thead th:last-child`), "fork (request 2 edited)");
        assert.match(await P.text(`${$("compare")} tr[data-field="rows"] td[data-side="fork"]`), /\(request 2\)/, "the rows fired, numbered the same way");
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="scenario-select"]').selectedOptions[0].textContent), "Fork of Approvals: the run pauses, and resumes with your decisions (needsApproval) (the response to model request 2 edited)");
        await P.tap("lang-toggle");
        await P.waitUntil(() => document.querySelector('[data-testid="compare"] > h3')?.textContent === "原来的运行与从请求 2 分叉的运行");
      }));

    test("9. the timeout scenario: while slow waits for its timeout, Step stays enabled and the address says no wait; Step goes on when the timeout answers it", () =>
      open("?scenario=timeout&lang=en", async (P) => {
        await P.stepTo(10);
        await P.tap("step");
        // Past event 10, only slow is out, at its gate: its 2 s timeout will answer it, no release needed.
        await P.waitUntil(() => document.querySelector('[data-testid="status"]').dataset.run === "active" && !document.querySelector('[data-testid="timeline"] > li.held') && document.querySelector('[data-testid="release-call-1"]') !== null);
        assert.equal(await P.evaluate(() => document.querySelector('[data-testid="step"]').disabled), false);
        assert.equal(await P.attr($("step"), "title"), "");
        assert.notEqual((await params(P)).wait, "tools");
        // The timeout fires: the loop answers slow and the run is held at the next event.
        await heldAt(P, 11);
        assert.equal((await params(P)).wait, undefined);
        assert.deepEqual(await toolEnds(P), ["call-2", "call-1"]);
        await P.tap("run");
        await P.waitForDone();
        assert.equal(await P.text($("reason")), "stop");
      }));
  });
}
