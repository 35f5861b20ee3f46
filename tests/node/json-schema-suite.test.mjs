// The official JSON Schema Test Suite (draft 2020-12, vendored in tests/json-schema-test-suite/) through the
// built package, as a model's tool calls meet it: each schema is registered as a tool's `parameters` with
// ToolRegistry.register, each datum is sent as a call's arguments with ToolRegistry.execute. A valid datum
// must reach the tool; an invalid one must get an error result and never run it. The groups in skips.json
// (but any marked `"only": "native"`; none is, the core validates alike in every target) must be refused at
// register with a TypeError naming the keyword. The native run is tests/json_schema_suite.rs.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadTinyPi } from "./app-fixture.mjs";

const suite = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "json-schema-test-suite");
const skips = JSON.parse(fs.readFileSync(path.join(suite, "skips.json"), "utf8")).filter((s) => s.only !== "native");
const files = fs.readdirSync(path.join(suite, "draft2020-12")).filter((f) => f.endsWith(".json")).sort();

let tp;
before(async () => {
  tp = await loadTinyPi();
});

const totals = { passed: 0, refused: 0 };

for (const file of files) {
  test(`draft2020-12/${file}`, async () => {
    const groups = JSON.parse(fs.readFileSync(path.join(suite, "draft2020-12", file), "utf8"));
    const failures = [];
    for (const group of groups) {
      let ran = 0;
      const tools = new tp.ToolRegistry();
      const skip = skips.find((s) => s.file === file && s.group === group.description);
      let refusal;
      try {
        tools.register({ name: "t", parameters: group.schema, execute: () => ((ran += 1), { content: [] }) });
      } catch (error) {
        refusal = error;
      }
      if (skip || refusal) {
        if (!skip) failures.push(`${group.description}: refused: ${refusal.message}`);
        else if (!refusal) failures.push(`${group.description}: listed in skips.json but registered`);
        else if (!(refusal instanceof TypeError) || !refusal.message.includes(skip.keyword)) {
          failures.push(`${group.description}: refused without a TypeError naming ${skip.keyword}: ${refusal}`);
        } else totals.refused += group.tests.length;
        continue;
      }
      for (const t of group.tests) {
        const before = ran;
        const result = await tools.execute({ type: "toolCall", id: "c1", name: "t", arguments: t.data }, {});
        const reached = ran > before;
        if (result.isError === !t.valid && reached === t.valid) totals.passed += 1;
        else failures.push(`${group.description} / ${t.description}: expected ${t.valid ? "valid" : "invalid"}, got ${JSON.stringify(result.content)}`);
      }
    }
    assert.deepEqual(failures, []);
  });
}

test("the whole suite ran", () => {
  assert.ok(totals.passed > 1000, `only ${totals.passed} cases passed`);
  console.log(`JSON Schema Test Suite, draft 2020-12, through the package: ${totals.passed} passed, ${totals.refused} refused at register as listed`);
});
