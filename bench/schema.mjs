// What checking a tool call's arguments against its JSON Schema costs (issue 20), next to what a turn of the
// bench's workload costs, in one process: `node bench/schema.mjs` after `npm run build`.
//
// - per call: ToolRegistry.execute of a typical call (10 properties, one with a `pattern`, one a `$ref` to
//   `$defs`) minus the same call to a tool whose parameters are `{ type: "object" }` (the validation and
//   nothing else differs): the median over 21 samples of the difference of two back-to-back blocks of
//   2,000 calls (paired, so that a change of machine load between samples cancels);
// - per turn: runAgentLoop over bench/workload.mjs's N = 200 turns (10 text deltas, 3 tool calls each, as
//   `npm run bench` times its tiny leg), median of 7 runs / (N + 1).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SYSTEM_PROMPT, Script, WORKLOADS, toolSpecs, userMessage } from "./workload.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const pkgJson = path.join(ROOT, "pkg/package.json");
if (!fs.existsSync(pkgJson)) {
  console.error("bench/schema: pkg/ is not built (run `npm run build`)");
  process.exit(1);
}
const exportsNode = JSON.parse(fs.readFileSync(pkgJson, "utf8")).exports["."].node;
const tp = await import(pathToFileURL(path.join(ROOT, "pkg", exportsNode.import?.default ?? exportsNode.default)).href);
const { ToolRegistry, runAgentLoop } = tp.runAgentLoop ? tp : tp.default;

const TYPICAL = {
  type: "object",
  $defs: { range: { type: "object", properties: { start: { type: "integer", minimum: 1 }, end: { type: "integer", minimum: 1 } }, required: ["start"] } },
  properties: {
    path: { type: "string", pattern: "^[A-Za-z0-9_./-]+$" },
    lines: { $ref: "#/$defs/range" },
    encoding: { enum: ["utf8", "latin1", "base64"] },
    follow: { type: "boolean" },
    maxBytes: { type: "integer", minimum: 0, maximum: 1048576 },
    query: { type: "string", minLength: 1, maxLength: 200 },
    tags: { type: "array", items: { type: "string" }, maxItems: 8 },
    context: { type: "integer", minimum: 0 },
    mode: { type: "string" },
    caseSensitive: { anyOf: [{ type: "boolean" }, { type: "null" }] },
  },
  required: ["path", "query"],
  additionalProperties: false,
};
const ARGUMENTS = {
  path: "src/schema/compile.rs", lines: { start: 10, end: 40 }, encoding: "utf8", follow: false, maxBytes: 65536,
  query: "fn resolve", tags: ["rust", "schema"], context: 2, mode: "read", caseSensitive: null,
};

const registry = new ToolRegistry();
const answer = () => ({ content: [{ type: "text", text: "ok" }] });
registry.register({ name: "typical", parameters: TYPICAL, execute: answer });
registry.register({ name: "plain", parameters: { type: "object" }, execute: answer });
const call = (name) => ({ type: "toolCall", id: "c1", name, arguments: ARGUMENTS });
for (const name of ["typical", "plain"]) {
  const result = await registry.execute(call(name), {});
  if (result.isError) throw new Error(`bench/schema: the typical call was refused: ${result.content[0].text}`);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const CALLS = 2000;
async function perCall(name) {
  const c = call(name);
  const start = performance.now();
  for (let i = 0; i < CALLS; i++) await registry.execute(c, {});
  return ((performance.now() - start) * 1000) / CALLS;
}
const tools = new ToolRegistry();
for (const t of toolSpecs(WORKLOADS.full)) tools.register({ name: t.name, description: t.description, parameters: t.parameters, execute: async (a) => t.run(a) });
const TURNS = 200;
async function perTurn() {
  const script = new Script(TURNS, WORKLOADS.full);
  const start = performance.now();
  const r = await runAgentLoop({
    context: { systemPrompt: SYSTEM_PROMPT, messages: [userMessage()] },
    model: { stream: () => script.nextStream() }, tools, maxSteps: TURNS + 1, onEvent: () => {},
  });
  if (r.reason !== "stop") throw new Error(`bench/schema: the workload ended with ${r.reason}`);
  return ((performance.now() - start) * 1000) / (TURNS + 1);
}

// Warm-up, then interleaved samples.
await perCall("typical"), await perCall("plain"), await perTurn();
const samples = { typical: [], plain: [], validation: [], turn: [] };
for (let s = 0; s < 21; s++) {
  const [typical, plain] = [await perCall("typical"), await perCall("plain")];
  samples.typical.push(typical);
  samples.plain.push(plain);
  samples.validation.push(typical - plain);
  if (s % 3 === 0) samples.turn.push(await perTurn());
}
const [typical, plain, validation, turn] = ["typical", "plain", "validation", "turn"].map((k) => median(samples[k]));
console.log(`ToolRegistry.execute, typical call (10 properties, a pattern, a $ref): ${typical.toFixed(2)} µs`);
console.log(`ToolRegistry.execute, same call, parameters { type: "object" }:       ${plain.toFixed(2)} µs`);
console.log(`=> validating the typical call's arguments (median of paired differences): ${validation.toFixed(2)} µs`);
console.log(`one turn of the bench's full workload (N = ${TURNS}, 10 deltas + 3 tool calls): ${turn.toFixed(2)} µs`);
console.log(`=> validation of one typical call / one turn: ${((100 * validation) / turn).toFixed(1)} %`);
