// What the page does for a learner working through it in Chinese or English, one test per point:
// 1. the scenarios' system prompt and tool descriptions show in the page's language;
// 2. stepping through the learner's own loop, the why-line at its first difference says what that loop did there and
//    what the correct loop does (or, when its events and transcript agree, where else the kit found the difference);
// 3. during that replay the address names the replay (a copied link opens the same loop at the same event);
// 4. a shared fork link restores the fork and its comparison (a comparison that cannot be made again leaves the fork);
// 5. the pairing rows say pair #n and message #i;
// 6. the script editor refuses a lone surrogate in place, naming its line and field.
// Run: node --test tests/e2e/tryout.test.mjs   (needs dist/ built: node scripts/site.mjs)

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pageSuite, waitForDone, stepTo } from "./harness.mjs";
import { scenarioById, localizeDef, CASES } from "../../www/scenarios.js";
import { checkCase } from "../../www/conformance/check.js";
import { encodeHash } from "../../www/shareable.js";
import { createLoop } from "../conformance/reference-loop.mjs";

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const REFERENCE = fs.readFileSync(path.join(ROOT, "tests", "conformance", "reference-loop.mjs"), "utf8");
const loopWith = (bugs) => REFERENCE.replace("export const runAgentLoop = createLoop();", `export const runAgentLoop = createLoop(${JSON.stringify(bugs)});`);

const suite = pageSuite();
const withPage = (query, fn) => suite.withPage(query, fn);
const $ = (id) => `[data-testid="${id}"]`;
const text = (page, selector) => page.textContent(selector);

/** The address of the page as it stands, relative to the server (what a learner copies). */
const addressOf = (page) => page.evaluate(() => location.search + location.hash);

test("1. the zh page shows the system prompt and the tool descriptions in Chinese, the en page in English", async () => {
  await withPage("?scenario=readme&lang=zh&speed=instant", async (page) => {
    await page.click($("run"));
    await waitForDone(page);
    const system = `${$("request-inspector")} pre.system`;
    const tool = `${$("request-inspector")} li[data-name="read"]`;
    assert.equal(await text(page, system), "你是 tiny-pi，一个小型 agent。用工具读取文件。");
    assert.match(await text(page, tool), /读取内存工作区里的一个文件（一份固定的 README）。/);
    // The language switched: the run is made again, in English.
    await page.click($("lang-toggle"));
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === "You are tiny-pi, a small agent. Use tools to read files.", system);
    await waitForDone(page);
    assert.match(await text(page, tool), /Read a file of the in-memory workspace \(a fixed README\)\./);
  });
});

/** Pick a module in "Check your own loop" and wait until the kit has checked it. */
async function checkLoop(page, name, source) {
  await page.$eval('details[data-panel="loop"]', (d) => (d.open = true));
  await page.setInputFiles($("loop-file"), { name, mimeType: "text/javascript", buffer: Buffer.from(source) });
  await page.waitForFunction(() => !document.querySelector('[data-testid="loop-check"]').disabled);
  await page.click($("loop-check"));
  await page.waitForFunction(() => ["passed", "failed", "error"].includes(document.querySelector('[data-testid="loop-status"]').dataset.state), null, { timeout: 90_000 });
}

const LENGTH_EN = "At event #9 your loop starts read(call-1) (the correct loop never does that); the correct loop emits a skipped result for read(call-1) (reason length) here (your loop never does: it is missing).";
const LENGTH_ZH = "第 9 个事件：你的 loop 开始执行 read(call-1)（正确的 loop 从不这样做）；正确的 loop 在这里为 read(call-1) 发出 skipped 结果（reason length）（你的 loop 从没这样做，缺了这一步）。";

test("2 and 3. a learner's loop stepped through: the why-line says where it first differs; the address names the replay, and a copied link shows it again", async () => {
  let link;
  await withPage("?scenario=readme&lang=en", async (page) => {
    await checkLoop(page, "broken.mjs", loopWith({ lengthRunsTools: true }));
    await page.click(`${$("kit-cases")} > li[data-case="length"] ${$("kit-step")}`);
    await stepTo(page, 8);
    // Before the difference the loop did what the course's does: the usual explanation.
    assert.match(await text(page, $("why")), /Row length fired/);
    await stepTo(page, 9);
    assert.equal(await text(page, $("why")), LENGTH_EN);
    // The address: the replay (its recording in the hash), held at event 9; never the plain scenario.
    await page.waitForFunction(() => location.hash.startsWith("#replay="));
    const params = await page.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));
    assert.deepEqual(params, { replay: "length", lang: "en", step: "9" });
    link = await addressOf(page);
    // In Chinese, the same place in the page's words.
    await page.click($("lang-toggle"));
    await page.waitForFunction((want) => document.querySelector('[data-testid="why"]').textContent === want, LENGTH_ZH);
  });
  // The link opens the same replay at the same event, with the same why-line.
  await withPage(link, async (page) => {
    assert.equal(await page.getAttribute($("about"), "data-replay"), "length");
    await page.waitForSelector(`${$("timeline")} > li.held[data-seq="9"]`);
    assert.equal(await page.getAttribute(`${$("timeline")} > li[data-seq="9"]`, "data-type"), "tool_start");
    assert.equal(await text(page, $("why")), LENGTH_EN);
    await page.click($("run"));
    await waitForDone(page);
    assert.equal(await text(page, $("executions")), "2", "the learner's loop, not the course's (which runs nothing)");
  });
  // A link cut short (no recording): said on the banner, and no scenario shown in its place (the page does not start).
  await assert.rejects(withPage("?replay=length&lang=en", async () => {}), /This link replays a loop's run on case length, but its recording \(#replay=…\) cannot be read/);
});

test("2. a loop whose transcript alone differs: at the event its transcript takes the results, the why-line names them out of order and their call ids", async () => {
  await withPage("?scenario=readme&lang=en", async (page) => {
    await checkLoop(page, "order.mjs", loopWith({ completionOrder: true }));
    await page.click(`${$("kit-cases")} > li[data-case="concurrency"] ${$("kit-step")}`);
    await page.click($("run"));
    await waitForDone(page);
    // The batch's last tool_end (event 11): the loop's transcript (what it sent with request 2) holds them there.
    await page.click(`${$("timeline")} > li[data-seq="11"]`);
    assert.equal(
      await text(page, $("why")),
      "slow(slow-call) ended, the last of its batch. Your loop appended this batch's tool results in completion order (fast-call → slow-call; that is how it sent them with model request 2), so message #2 is the result of fast(fast-call). The chapter's step 4 asks for call order (slow-call → fast-call): the correct loop's message #2 is the result of slow(slow-call). Only tool_end follows completion order.",
    );
  });
});

test("2. a loop the kit fails whose events and transcript agree: once the replay is over, the why-line says the difference is elsewhere, in both languages", async () => {
  await withPage("?scenario=readme&lang=en", async (page) => {
    await checkLoop(page, "unawaited.mjs", loopWith({ batchNotAwaited: true }));
    assert.equal(await page.getAttribute(`${$("kit-cases")} > li[data-case="readme"]`, "data-pass"), "false");
    await page.click(`${$("kit-cases")} > li[data-case="readme"] ${$("kit-step")}`);
    await page.click($("run"));
    await waitForDone(page);
    assert.equal(
      await text(page, $("why")),
      'Your loop\'s events and the transcript it returned agree with the correct loop\'s; what differs is elsewhere: in the requests its model received, the tool calls it ran, or the input messages it was handed. The evidence is under this case in the report of "Check your own loop".',
    );
    await page.click($("lang-toggle"));
    await page.waitForFunction(
      (want) => document.querySelector('[data-testid="why"]').textContent === want,
      "你的 loop 发出的事件和它返回的 transcript 都与正确的 loop 一致；不同之处在别处：模型收到的请求、执行的工具调用，或传给它的输入消息。证据见“检查你自己的 loop”报告里的这个用例。",
    );
  });
});

test("2. the same event with other fields: the why-line names the fields, joined with 、 in Chinese", async () => {
  const renamed = REFERENCE.replace(
    "export const runAgentLoop = createLoop();",
    'const inner = createLoop();\nexport const runAgentLoop = (options) => inner({ ...options, onEvent: (e) => options.onEvent(e.type === "tool_start" ? { ...e, call: { ...e.call, name: "other", arguments: {} } } : e) });',
  );
  await withPage("?scenario=readme&lang=zh", async (page) => {
    await checkLoop(page, "renamed.mjs", renamed);
    await page.click(`${$("kit-cases")} > li[data-case="readme"] ${$("kit-step")}`);
    await stepTo(page, 7);
    assert.equal(await text(page, $("why")), "第 7 个事件：你的 loop 开始执行 other(call-1)；正确的 loop 在这里开始执行 read(call-1)：是同一个事件，但 name、arguments 不同。");
    await page.click($("lang-toggle"));
    await page.waitForFunction(
      (want) => document.querySelector('[data-testid="why"]').textContent === want,
      "At event #7 your loop starts other(call-1); the correct loop starts read(call-1) here: the same event, with another name, arguments.",
    );
  });
});

test("3. a replay link whose recording has no name: the page says what the loop did without naming it", async () => {
  const kase = CASES.find((c) => c.id === "length");
  const report = await checkCase(createLoop({ lengthRunsTools: true }), kase, { record: true });
  const hash = await encodeHash({ run: report.run, failed: !report.pass });
  await withPage(`?replay=length&lang=en#replay=${hash}`, async (page) => {
    assert.equal(await page.getAttribute($("about"), "data-replay"), "length");
    const about = await text(page, $("about"));
    assert.match(about, /What your loop did on case length:/);
    assert.doesNotMatch(about, /undefined|\(\)/);
  });
});

test("4. a fork link whose comparison cannot be made again shows the forked script without it, and says so", async () => {
  const def = scenarioById("readme").def;
  for (const compare of [{ request: 5, original: def, order: [] }, "not a comparison"]) {
    const hash = await encodeHash({ def, base: "readme", compare });
    await withPage(`?lang=en#script=${hash}`, async (page) => {
      assert.equal(await page.getAttribute($("banner"), "data-error"), "bad-compare");
      assert.equal(await page.getAttribute($("banner"), "data-state"), "notice");
      assert.match(await text(page, $("banner")), /The comparison in this link cannot be made again/);
      assert.equal(await page.inputValue($("scenario-select")), "custom");
      assert.deepEqual(JSON.parse(await page.inputValue($("editor"))).script, def.script);
      await page.click($("run"));
      await waitForDone(page);
      assert.equal(await page.$(`${$("compare")}`), null, "no comparison");
    });
  }
});

test("4. a shared fork link restores the comparison that was shown, not only the fork", async () => {
  let link;
  let shown;
  const compareTexts = (page) =>
    page.evaluate(() => ({
      title: document.querySelector('[data-testid="compare"] h3').textContent,
      rows: [...document.querySelectorAll('[data-testid="compare"] tr[data-field]')].map((tr) => tr.textContent),
      diff: [...document.querySelectorAll('[data-testid="compare-diff"] > li')].map((li) => `${li.dataset.op} ${li.textContent.replace(/"timestamp":\d+/g, "")}`),
    }));
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.click($("run"));
    await waitForDone(page);
    await page.click(`${$("transcript")} ${$("fork")}[data-request="1"]`);
    await page.selectOption($("fork-stop-reason"), "length");
    await page.click($("fork-run"));
    await page.waitForSelector(`${$("compare")}[data-state="done"]`);
    await page.waitForFunction(() => location.hash.startsWith("#script="));
    shown = await compareTexts(page);
    assert.match(shown.rows.find((r) => r.startsWith("reason")) ?? "", /^reason\s*stop\s*length$/);
    link = await addressOf(page);
  });
  await withPage(link, async (page) => {
    await page.waitForSelector(`${$("compare")}[data-state="done"]`);
    assert.deepEqual(await compareTexts(page), shown);
  });
});

test("5. the pairing rows say pair #n and message #i, in both languages", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.click($("run"));
    await waitForDone(page);
    const row = `${$("pairing")} > li[data-call-id="call-1"]`;
    assert.equal(await text(page, `${row} button`), "pair #1: call read(call-1) in message #1");
    assert.match(await text(page, `${row} .result`), /^paired: the result in message #2 · /);
    await page.click($("lang-toggle"));
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === "配对 #1：消息 #1 的调用 read(call-1)", `${row} button`);
    assert.match(await text(page, `${row} .result`), /^已配对：消息 #2 的结果 · /);
  });
  // A result that answers no call: where it stands, not a pair.
  await withPage("?scenario=readme&lang=en", async (page) => {
    const lines = [
      { role: "user", content: "hi", timestamp: 1 },
      { role: "assistant", content: [{ type: "toolCall", id: "call-1", name: "read", arguments: {} }], stopReason: "toolUse", timestamp: 2 },
      { role: "toolResult", toolCallId: "call-9", toolName: "read", content: [{ type: "text", text: "?" }], isError: false, timestamp: 3 },
    ].map((m) => JSON.stringify(m));
    await page.$eval('details[data-panel="check"]', (d) => (d.open = true));
    await page.fill($("check-input"), lines.join("\n"));
    await page.click($("check-button"));
    await page.waitForSelector(`${$("pairing")} > li[data-call-id="call-9"]`);
    assert.match(await text(page, `${$("pairing")} > li[data-call-id="call-9"] .result`), /^the result read\(call-9\) in message #2/);
    assert.equal(await text(page, `${$("pairing")} > li[data-call-id="call-1"] button`), "pair #1: call read(call-1) in message #1");
  });
});

test("6. the script editor refuses a lone surrogate in place, naming its line and field, in both languages", async () => {
  for (const [lang, words] of [
    ["en", (line) => `line ${line}: script[0].content[0].text: holds a lone surrogate (\\ud800, half of a UTF-16 character pair), which tiny-pi cannot keep: it would refuse the whole script`],
    ["zh", (line) => `第 ${line} 行：script[0].content[0].text：含有一个孤立的代理项（\\ud800，半个 UTF-16 字符对），tiny-pi 无法保存，会拒绝整个脚本`],
  ]) {
    await withPage(`?scenario=readme&lang=${lang}`, async (page) => {
      const def = structuredClone(localizeDef(scenarioById("readme").def, lang));
      def.script[0].content[0].text = "half \ud800";
      const source = JSON.stringify(def, null, 2);
      const line = source.split("\n").findIndex((l) => l.includes("half \\ud800")) + 1;
      assert.ok(line > 1);
      await page.evaluate(() => localStorage.removeItem("tiny-pi-custom")); // an earlier test's fork
      await page.$eval('details[data-panel="editor"]', (d) => (d.open = true));
      await page.fill($("editor"), source);
      await page.waitForSelector(`${$("editor-error")}[data-state="error"]`);
      assert.equal(await page.getAttribute(`${$("editor-error")} li`, "data-line"), String(line));
      const said = await text(page, `${$("editor-error")} li`);
      assert.ok(said.startsWith(words(line)), said);
      // Apply takes nothing: the page keeps the scenario, nothing runs, nothing is saved.
      await page.click($("editor-apply"));
      assert.equal(await page.inputValue($("scenario-select")), "readme");
      assert.equal(await page.getAttribute($("status"), "data-run"), "ready");
      assert.equal(await page.evaluate(() => localStorage.getItem("tiny-pi-custom")), null);
    });
  }
});
