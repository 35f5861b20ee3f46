// The "what if" fork editor's errors name the form's own fields ("The id of call 2 is empty"), never a path of the
// script the learner does not see (`script[0].content[1].id`), in both languages: an empty id or tool name, arguments
// that are not a JSON object or nest too deep, a lone surrogate (which the package would refuse the whole run for).
// A refused fork runs nothing; what the loop itself handles (a repeated call id, toolUse with no calls) still runs.
// Run: node --test tests/e2e/fork-errors.test.mjs   (needs dist/ built: node scripts/site.mjs)

import { test } from "node:test";
import assert from "node:assert/strict";
import { pageSuite, waitForDone } from "./harness.mjs";

const suite = pageSuite();
const withPage = (query, fn) => suite.withPage(query, fn);
const $ = (id) => `[data-testid="${id}"]`;
const call = (i, field) => `${$("fork-call")}[data-index="${i}"] ${$(`fork-call-${field}`)}`;

/** Run the scenario to its end and open the fork editor on response `request`. */
async function openFork(page, request) {
  await page.click($("run"));
  await waitForDone(page);
  await page.click(`${$("transcript")} ${$("fork")}[data-request="${request}"]`);
  await page.waitForSelector($("fork-run"));
}

/** Press the fork's run and return its error as shown (it takes the focus), asserting nothing ran. */
async function refused(page) {
  const before = await page.evaluate(() => document.querySelector('[data-testid="fork-error"]')?.textContent ?? null);
  await page.click($("fork-run"));
  await page.waitForFunction((was) => {
    const error = document.querySelector('[data-testid="fork-error"]');
    return error && document.activeElement === error && error.textContent !== was;
  }, before);
  assert.equal(await page.$($("compare")), null, "a refused fork runs nothing");
  return page.textContent($("fork-error"));
}

/** Press the fork's run and wait for the comparison to show the fork ending with `reason`: the fork ran. */
async function ran(page, reason) {
  await page.click($("fork-run"));
  await page.waitForFunction(
    (want) => document.querySelector('[data-testid="compare"][data-state="done"] tr[data-field="reason"] td[data-side="fork"]')?.textContent === want,
    reason,
  );
  assert.equal(await page.$($("fork-error")), null);
}

const WORDS = {
  en: {
    emptyId: "The id of call 1 is empty",
    several: "The arguments of call 1 must be a JSON object; The id of call 2 is empty; The tool name of call 2 is empty",
    surrogate: "The arguments of call 1 hold a lone surrogate (\\ud800, half of a UTF-16 character pair), which tiny-pi cannot keep",
    deep: "The arguments of call 1 are nested more than 128 levels deep (the most tiny-pi reads)",
    nameAndDeep: "The tool name of call 1 is empty; The arguments of call 1 are nested more than 128 levels deep (the most tiny-pi reads)",
    text: "The text holds a lone surrogate (\\udc00, half of a UTF-16 character pair), which tiny-pi cannot keep",
    textAndId: "The text holds a lone surrogate (\\udc00, half of a UTF-16 character pair), which tiny-pi cannot keep; The id of call 1 is empty",
  },
  zh: {
    emptyId: "调用 1 的 id 为空",
    several: "调用 1 的参数必须是 JSON 对象；调用 2 的 id 为空；调用 2 的工具名为空",
    surrogate: "调用 1 的参数里有一个孤立的代理项（\\ud800，半个 UTF-16 字符对），tiny-pi 无法保存",
    deep: "调用 1 的参数嵌套超过 128 层（tiny-pi 最多只读这么深）",
    nameAndDeep: "调用 1 的工具名为空；调用 1 的参数嵌套超过 128 层（tiny-pi 最多只读这么深）",
    text: "文本里有一个孤立的代理项（\\udc00，半个 UTF-16 字符对），tiny-pi 无法保存",
    textAndId: "文本里有一个孤立的代理项（\\udc00，半个 UTF-16 字符对），tiny-pi 无法保存；调用 1 的 id 为空",
  },
};

for (const lang of ["en", "zh"]) {
  test(`${lang}: each refused fork names the form's field, never a path of the script; fixed, it runs`, async () => {
    const words = WORDS[lang];
    await withPage(`?scenario=readme&lang=${lang}&speed=instant`, async (page) => {
      await openFork(page, 1);
      // The id emptied.
      await page.fill(call(0, "id"), "");
      assert.equal(await refused(page), words.emptyId);
      // Several at once, in the form's order: call 1's arguments, then call 2's id and tool name.
      await page.fill(call(0, "id"), "call-1");
      await page.fill(call(0, "args"), "[1]");
      await page.click($("fork-call-add"));
      await page.fill(call(1, "id"), "");
      await page.fill(call(1, "name"), "");
      assert.equal(await refused(page), words.several);
      assert.doesNotMatch(await page.textContent($("fork-error")), /script\[|content\[/);
      await page.click(`${$("fork-call")}[data-index="1"] ${$("fork-call-remove")}`);
      // A lone surrogate written as a JSON escape: the package would refuse the whole run for it.
      await page.fill(call(0, "args"), '{"path": "README\\ud800.md"}');
      assert.equal(await refused(page), words.surrogate);
      // Arguments deeper than tiny-pi reads.
      await page.fill(call(0, "args"), `{"path": ${"[".repeat(200)}${"]".repeat(200)}}`);
      assert.equal(await refused(page), words.deep);
      // Too deep and an empty tool name at once: the depth does not hide the rest.
      const name = await page.inputValue(call(0, "name"));
      await page.fill(call(0, "name"), "");
      assert.equal(await refused(page), words.nameAndDeep);
      await page.fill(call(0, "name"), name);
      // A lone surrogate in the text (pasted; a keyboard cannot type one).
      await page.fill(call(0, "args"), '{"path": "README.md"}');
      await page.evaluate(() => {
        const text = document.querySelector('[data-testid="fork-text"]');
        text.value = "\udc00";
        text.dispatchEvent(new Event("input"));
      });
      assert.equal(await refused(page), words.text);
      // The lone surrogate and an empty id at once: both listed, in the form's order, not one after the other is fixed.
      await page.fill(call(0, "id"), "");
      assert.equal(await refused(page), words.textAndId);
      await page.fill(call(0, "id"), "call-1");
      // Fixed (a surrogate pair is a character, not a lone half): the fork runs.
      await page.fill($("fork-text"), "😀");
      await page.fill(call(0, "args"), '{"path": "README\\ud83d\\ude00.md"}');
      await ran(page, "stop");
    });
  });
}

test("calls are counted as the form counts them: after the response's thinking and its text, whichever response of the script it is", async () => {
  const def = {
    messages: [{ role: "user", content: "go", timestamp: 1 }],
    script: [
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Two files." },
          { type: "text", text: "Reading both." },
          { type: "toolCall", id: "a", name: "read", arguments: { path: "README.md" } },
          { type: "toolCall", id: "b", name: "read", arguments: { path: "Cargo.toml" } },
        ],
        stopReason: "toolUse",
        timestamp: 2,
      },
      { role: "assistant", content: [{ type: "text", text: "Done." }], stopReason: "stop", timestamp: 3 },
    ],
    tools: { read: { answer: "ok" } },
  };
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    await page.evaluate(() => (document.querySelector('details[data-panel="editor"]').open = true));
    await page.fill($("editor"), JSON.stringify(def, null, 2));
    await page.click($("editor-apply"));
    await waitForDone(page);
    await page.click(`${$("transcript")} ${$("fork")}[data-request="1"]`);
    await page.fill(call(1, "id"), "");
    assert.equal(await refused(page), "The id of call 2 is empty");
    // No text: no text block, the calls move up one place in the response; still call 1 and call 2 in the form.
    await page.fill(call(1, "id"), "b");
    await page.fill($("fork-text"), "");
    await page.fill(call(0, "name"), "");
    assert.equal(await refused(page), "The tool name of call 1 is empty");
  });
  // The retry scenario: request 1 was answered by the script's second response (the first failed and was retried).
  await withPage("?scenario=retry&lang=zh&speed=instant", async (page) => {
    await openFork(page, 1);
    assert.equal(await page.inputValue(call(0, "id")), "call-2");
    await page.fill(call(0, "id"), "");
    assert.equal(await refused(page), "调用 1 的 id 为空");
  });
});

test("what the loop handles is not refused: a repeated call id, a tool no one has, toolUse with no calls", async () => {
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    // The same id twice in one response: the chapter's optional repeated-id row, the run ends with error.
    await openFork(page, 1);
    await page.click($("fork-call-add"));
    await page.fill(call(1, "id"), "call-1");
    await ran(page, "error");
    assert.match(await page.textContent($("compare-diff")), /duplicate-call-id/);
  });
  await withPage("?scenario=readme&lang=en&speed=instant", async (page) => {
    // An unknown tool: the loop answers it with an error result and goes on.
    await openFork(page, 1);
    await page.fill(call(0, "name"), "nope");
    await ran(page, "stop");
    // Then, in the fork's run, response 1 with no calls while it still says toolUse.
    await page.click(`${$("transcript")} ${$("fork")}[data-request="1"]`);
    await page.click(`${$("fork-call")}[data-index="0"] ${$("fork-call-remove")}`);
    await ran(page, "error");
  });
});

const JSON_WORDS = {
  en: {
    near: "The arguments of call 1 are not valid JSON: near line 1, column 2",
    nearLine2: "The arguments of call 1 are not valid JSON: near line 2, column 11",
    end: "The arguments of call 1 are not valid JSON: it ends too early, at line 1, column 10",
  },
  zh: {
    near: "调用 1 的参数不是合法的 JSON：第 1 行第 2 列附近",
    nearLine2: "调用 1 的参数不是合法的 JSON：第 2 行第 11 列附近",
    end: "调用 1 的参数不是合法的 JSON：在第 1 行第 10 列提前结束",
  },
};

for (const lang of ["en", "zh"]) {
  test(`${lang}: arguments that are not JSON are placed in the page's own words (line and column), never the browser's message`, async () => {
    const words = JSON_WORDS[lang];
    await withPage(`?scenario=readme&lang=${lang}&speed=instant`, async (page) => {
      await openFork(page, 1);
      await page.fill(call(0, "args"), "{a");
      assert.equal(await refused(page), words.near);
      await page.fill(call(0, "args"), '{\n  "path": x}');
      assert.equal(await refused(page), words.nearLine2);
      await page.fill(call(0, "args"), '{"path": ');
      assert.equal(await refused(page), words.end);
      assert.doesNotMatch(await page.textContent($("fork-error")), /Expected|Unexpected|position|JSON at/);
    });
  });
}
