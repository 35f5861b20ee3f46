// Input that once broke the playground (a review's reproductions, /work/pageattack): JSON nested deeper than the call
// stack, a null message, a learner's loop that emits null, call ids with commas in a shared link, an import of a
// custom script's transcript, a paused transcript pasted for Check, a language switch over unsaved work, and some
// odd addresses. Each is refused or shown in place, nothing the learner typed is lost, and the page stays usable.
// Run: node --test tests/e2e/hostile-input.test.mjs   (needs dist/ built: node scripts/site.mjs)

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pageSuite, childValues, waitForDone, count } from "./harness.mjs";
import { scenarioById, localizeDef } from "../../www/scenarios.js";

const suite = pageSuite();
const withPage = (query, fn) => suite.withPage(query, fn);
const $ = (id) => `[data-testid="${id}"]`;
const text = (page, testid) => page.textContent($(testid));
const attrs = (page, selector, attr) => page.$$eval(selector, (nodes, a) => nodes.map((n) => n.getAttribute(a)), attr);
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const README_EN = localizeDef(scenarioById("readme").def, "en");

async function openPanels(page) {
  await page.evaluate(() => {
    for (const panel of ["editor", "check", "export"]) document.querySelector(`details[data-panel="${panel}"]`).open = true;
  });
}

/** The line (from 1) of the first line of `source` that holds `needle`. */
const lineOf = (source, needle) => source.split("\n").findIndex((l) => l.includes(needle)) + 1;

const user = { role: "user", content: "go", timestamp: 1 };
const call = (id) => ({ type: "toolCall", id, name: "read", arguments: { path: "README.md" } });

const DEEP = JSON.stringify({ ...README_EN, tools: { read: { ...README_EN.tools.read, details: "@@" } } }, null, 2).replace('"@@"', "[".repeat(5000) + "]".repeat(5000));

test("deep JSON in the editor: refused in place naming the field and its line, never run or saved", async () => {
  const deep = DEEP;
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await openPanels(page);
    // Invalid, 20,000 deep: a parse error at its place.
    await page.fill($("editor"), "[".repeat(20000));
    await page.waitForSelector(`${$("editor-error")}[data-state="error"]`);
    assert.match(await text(page, "editor-error"), /JSON parse error \(line 1, column 20001\)/);
    // Valid, 5,000 deep in a tool's details: the field and its line, and Apply runs nothing and keeps nothing.
    await page.fill($("editor"), deep);
    await page.waitForFunction(() => /details/.test(document.querySelector('[data-testid="editor-error"]').textContent));
    const line = lineOf(deep, '"details"');
    assert.equal(await text(page, "editor-error"), `line ${line}: tools.read.details: is nested more than 128 levels deep (the most tiny-pi reads) Go to line ${line}`);
    await page.click($("editor-apply"));
    assert.equal(await page.inputValue($("scenario-select")), "readme");
    assert.equal(await page.evaluate(() => localStorage.getItem("tiny-pi-custom")), null, "nothing saved");
    assert.equal(await page.inputValue($("editor")), deep, "the text typed stays");
    await page.click($("run"));
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "stop", "the page still runs");
  });
});

test("a pasted array nested 5,000 deep is not imported, and the page says why", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await openPanels(page);
    await page.fill($("check-input"), `[${"[".repeat(5000)}${"]".repeat(5000)}]`);
    await page.click($("import-button"));
    assert.match(await text(page, "check-error"), /^Not imported: this transcript cannot be the input of a run \(messages\[0\]: is nested more than 128 levels deep/);
    assert.equal(await page.inputValue($("scenario-select")), "readme");
    await page.click($("run"));
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "stop", "the page still runs");
  });
});

test("a script saved on an earlier visit that cannot load is dropped with a banner saying so, and the page works", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.evaluate((def) => localStorage.setItem("tiny-pi-custom", `{"def": ${def}, "base": "readme"}`), DEEP);
  });
  await withPage("?lang=en&speed=instant", async (page) => {
    assert.equal(await page.getAttribute($("banner"), "data-state"), "notice");
    assert.equal(await page.isVisible($("banner")), true);
    assert.match(await text(page, "banner"), /^The script saved in this browser could not be loaded \(tools\.read\.details: is nested more than 128 levels deep .*\), so it was removed/);
    assert.equal(await page.evaluate(() => localStorage.getItem("tiny-pi-custom")), null);
    assert.equal(await page.inputValue($("scenario-select")), "readme");
    await page.click($("run"));
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "stop");
  });
});

test("Check of a transcript holding null: the message is named as the package names it, the views do not throw", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await openPanels(page);
    await page.fill($("check-input"), JSON.stringify([user]));
    await page.click($("check-button"));
    await page.waitForFunction(() => /validateTranscript: ok/.test(document.querySelector('[data-testid="findings"]').textContent));
    await page.fill($("check-input"), JSON.stringify([user, null]));
    await page.click($("check-button"));
    await page.waitForFunction(() => !/validateTranscript: ok/.test(document.querySelector('[data-testid="findings"]').textContent));
    assert.match(await text(page, "findings"), /messages\[1\] must be an object \(got null\)/);
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "undefined"]);
  });
});

test("Import of a transcript runAgentLoop would refuse: nothing is imported or saved, and the page says why", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await openPanels(page);
    // An orphan result: runAgentLoop would refuse it, so Import keeps the page as it was and says why.
    const orphan = [user, { role: "toolResult", toolCallId: "x", toolName: "read", content: [], isError: false, timestamp: 2 }];
    await page.fill($("check-input"), JSON.stringify(orphan));
    await page.click($("import-button"));
    assert.match(await text(page, "check-error"), /^Not imported: .*result without a call \(orphan_result\): x \(message #1\)/);
    assert.equal(await page.inputValue($("scenario-select")), "readme");
    assert.equal(await page.evaluate(() => localStorage.getItem("tiny-pi-custom")), null, "nothing saved");
  });
});

test("stepping through a learner's loop that emitted null: the replay stops at that event and the status says why", async () => {
  const reference = fs.readFileSync(path.join(ROOT, "tests", "conformance", "reference-loop.mjs"), "utf8");
  const loop = reference.replace(
    "export const runAgentLoop = createLoop();",
    `const loop = createLoop();
export function runAgentLoop(options) {
  let n = 0;
  return loop({ ...options, onEvent: (e) => (++n === 2 && options.onEvent?.(null), options.onEvent?.(e)) });
}`,
  );
  assert.notEqual(loop, reference);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-null-loop-"));
  fs.writeFileSync(path.join(dir, "null-loop.mjs"), loop);
  await withPage("?scenario=readme&lang=en", async (page) => {
    await page.evaluate(() => (document.querySelector('details[data-panel="loop"]').open = true));
    await page.setInputFiles($("loop-file"), [path.join(dir, "null-loop.mjs")]);
    await page.waitForFunction(() => !document.querySelector('[data-testid="loop-check"]').disabled);
    await page.click($("loop-check"));
    await page.waitForFunction(() => ["passed", "failed", "error"].includes(document.querySelector('[data-testid="loop-status"]').dataset.state), null, { timeout: 120_000 });
    await page.click(`${$("kit-cases")} > li[data-case="readme"] ${$("kit-step")}`);
    await page.click($("run"));
    await page.waitForSelector(`${$("status")}[data-run="failed"]`);
    assert.equal(await text(page, "status"), "The replay stopped at event 2: your loop emitted null, which is not an event (an object with a string type), so the replay cannot go on.");
    assert.equal(await count(page, "timeline", "li"), 1, "the event before it is shown");
  });
});

test("a shared link's release order: call ids with commas read back as they were", async () => {
  const def = {
    ...structuredClone(README_EN),
    tools: { read: { ...README_EN.tools.read, gate: true } },
    script: [{ role: "assistant", content: [call("a,b"), call("c")], stopReason: "toolUse", timestamp: 2 }, README_EN.script[1]],
  };
  let link;
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await openPanels(page);
    await page.fill($("editor"), JSON.stringify(def, null, 2));
    await page.click($("editor-apply"));
    await page.waitForSelector('[data-testid="release-c"]');
    await page.waitForSelector('[data-testid="release-a,b"]');
    await page.click('[data-testid="release-c"]');
    await page.waitForSelector('[data-testid="timeline"] > li[data-type="tool_end"][data-call-id="c"]');
    await page.click('[data-testid="release-a,b"]');
    await waitForDone(page);
    await page.waitForFunction(() => location.hash.startsWith("#script="));
    link = new URL(page.url());
    assert.equal(link.searchParams.get("release"), "c,a%2Cb");
  });
  await withPage(`${link.search}${link.hash}`, async (page) => {
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "stop");
    assert.deepEqual(await attrs(page, '[data-testid="timeline"] > li[data-type="tool_end"]', "data-call-id"), ["c", "a,b"], "the gates opened in the link's order");
    assert.equal(new URL(page.url()).searchParams.get("step"), "end");
  });
});

test("a shared link's release order that cannot be followed is said in the status; old links read as before", async () => {
  await withPage("?scenario=sequential&lang=en&step=end&release=call-1,call-2", async (page) => {
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "stop");
  });
  for (const [release, said] of [["nope", /^This link's release order \["nope"\] cannot be followed: the loop waits for write\(call-1\), and the order names nope next/], ["", /^This link's release order \[\] cannot be followed: the loop waits for write\(call-1\), and the order names no more calls/]]) {
    await withPage(`?scenario=sequential&lang=en&step=end&release=${release}`, async (page) => {
      await page.waitForFunction(() => /cannot be followed/.test(document.querySelector('[data-testid="status"]').textContent));
      assert.match(await text(page, "status"), said);
      // Released by hand, the run goes on.
      await page.click('[data-testid="release-call-1"]');
      await page.waitForSelector('[data-testid="release-call-2"]');
      await page.click('[data-testid="release-call-2"]');
      await waitForDone(page);
      assert.equal(await text(page, "reason"), "stop");
    });
  }
});

test("importing a custom script's transcript keeps its custom roles, tools and script, and says which script goes on", async () => {
  const def = {
    ...structuredClone(README_EN),
    customRoles: ["note"],
    messages: [user, { role: "note", text: "kept by the app" }],
  };
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await openPanels(page);
    await page.fill($("editor"), JSON.stringify(def, null, 2));
    await page.click($("editor-apply"));
    await waitForDone(page);
    const [file] = await Promise.all([page.waitForEvent("download"), page.click($("export-transcript"))]);
    const lines = fs.readFileSync(await file.path(), "utf8").trim().split("\n");
    assert.deepEqual(lines.map((l) => JSON.parse(l).role), ["user", "note", "assistant", "toolResult", "assistant"]);
    // Up to the tool's result: the script's second response answers the next request.
    await page.fill($("check-input"), lines.slice(0, 4).join("\n"));
    await page.click($("import-button"));
    assert.match(await text(page, "check-error"), /^Imported 4 messages holding 1 model response: .*goes on with response 2 of the script of “Edited script”/);
    const edited = JSON.parse(await page.inputValue($("editor")));
    assert.deepEqual(edited.customRoles, ["note"]);
    await page.click($("run"));
    await waitForDone(page);
    assert.equal(await text(page, "reason"), "stop", await text(page, "status"));
    assert.deepEqual(await childValues(page, "transcript", "data-role"), ["user", "note", "assistant", "toolResult", "assistant"]);
  });
});

test("Check on a paused run's JSON Lines: its calls wait for decisions, as every view and the import say", async () => {
  await withPage("?scenario=approval&lang=en&step=end", async (page) => {
    await waitForDone(page);
    const jsonl = await page.inputValue($("jsonl-text"));
    await openPanels(page);
    await page.fill($("check-input"), jsonl);
    await page.click($("check-button"));
    await page.waitForSelector(`${$("status")}[data-run="checked"]`);
    assert.match(await text(page, "findings"), /paused: call-1 is waiting for a decision/);
    assert.match(await text(page, "findings"), /paused: call-3 needs no approval and runs with its batch on resume/);
    assert.equal(await page.$$eval('[data-testid="findings"] .bad, [data-testid="pairing"] .problem, [data-testid="transcript"] .problem, [data-testid="trace"] .bad', (n) => n.length), 0);
    assert.deepEqual(await childValues(page, "pairing", "data-state"), ["paused", "paused", "paused"]);
  });
});

test("switching the language keeps editor edits not yet applied", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await openPanels(page);
    await page.click($("step"));
    await page.click($("step"));
    await page.waitForSelector('[data-testid="timeline"] > li.held[data-seq="2"]');
    const edited = (await page.inputValue($("editor"))).replace('"maxSteps": 32', '"maxSteps": 5');
    await page.fill($("editor"), edited);
    await page.click($("lang-toggle"));
    await page.waitForFunction(() => document.documentElement.lang.startsWith("zh"));
    assert.equal(await page.inputValue($("editor")), edited);
    assert.equal(await text(page, "editor-error"), "脚本有效。");
    await page.waitForSelector('[data-testid="timeline"] > li.held[data-seq="2"]');
  });
});

test("switching the language keeps the decisions taken in Approvals and a deny reason typed", async () => {
  await withPage("?scenario=approval&lang=en&step=end", async (page) => {
    await waitForDone(page);
    await page.click($("approve-call-1"));
    await page.click($("deny-call-2"));
    await page.fill($("deny-reason-call-2"), "not here");
    await page.click($("lang-toggle"));
    await page.waitForFunction(() => document.documentElement.lang.startsWith("zh") && document.querySelector('[data-testid="status"]').dataset.run === "done");
    await page.waitForSelector($("approvals-list"));
    assert.deepEqual(await attrs(page, '[data-testid="approvals-list"] > li', "data-decision"), ["approve", "deny", "none"]);
    assert.equal(await page.inputValue($("deny-reason-call-2")), "not here");
  });
});

test("a pasted array that does not parse: the error names the line it is on, a bad escape too", async () => {
  await withPage("?scenario=readme&lang=en", async (page) => {
    await openPanels(page);
    await page.fill($("check-input"), `[\n${JSON.stringify(user)},\n\n  }]`);
    await page.click($("check-button"));
    assert.match(await text(page, "check-error"), /^line 4 does not parse/);
    await page.fill($("check-input"), `[\n${JSON.stringify(user)},\n{"role": "user", "content": "a\\qb", "timestamp": 1}]`);
    await page.click($("check-button"));
    assert.match(await text(page, "check-error"), /^line 3 does not parse/);
  });
});

test("a compaction entry whose cut lies past the end marks no message after it as summarised", async () => {
  await withPage("?scenario=readme&lang=en", async (page) => {
    await openPanels(page);
    // An entry whose cut lies past its own index summarises only the messages before it.
    const entry = { role: "compaction", summary: "s", firstKeptIndex: 99, tokensBefore: 5, timestamp: 3 };
    await page.fill($("check-input"), JSON.stringify([user, { role: "assistant", content: [{ type: "text", text: "hi" }], stopReason: "stop", timestamp: 2 }, entry, user]));
    await page.click($("check-button"));
    await page.waitForSelector(`${$("status")}[data-run="checked"]`);
    assert.deepEqual(await attrs(page, '[data-testid="transcript"] > li', "data-compacted"), ["2", "2", null, null]);
  });
});

test("odd addresses: speed=constructor shows the normal speed, embed=true is embed", async () => {
  await withPage("?scenario=readme&lang=en&speed=constructor", async (page) => {
    assert.equal(await page.inputValue($("speed")), "normal");
  });
  await withPage("?embed=true&scenario=readme&lang=en", async (page) => {
    assert.equal(await page.getAttribute("body", "data-embed"), "1");
  });
});
