// The package README's loop-control examples (SPEC §7: approval by beforeToolCall, sequential tools with
// timeouts, steering and follow-ups), taken verbatim from the README installed with the package: each block,
// between a prelude that gives it its `context`, `model`, `tools` (and `askUser`), compiles under `tsc --strict`
// in a Node ES-module app, runs, and does what the README says.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { appSrcDir, ensureFixture, toolPath } from "./app-fixture.mjs";

const run = promisify(execFile);
const T = { timeout: 120_000 };

/** The fenced block after each `<!-- readme-control: NAME -->` line, as { NAME: code }. */
function controlBlocks(markdown) {
  const blocks = {};
  for (const m of markdown.matchAll(/^<!-- readme-control: (\S+) -->\n```\w*\n([\s\S]*?)^```$/gm)) blocks[m[1]] = m[2];
  return blocks;
}

const PRELUDE = `import { runAgentLoop, ToolRegistry } from "tiny-pi";
import { ScriptedModel } from "tiny-pi/lesson";
import type { AgentMessage, AssistantMessage, UserMessage } from "tiny-pi";
const say = (text: string): AssistantMessage => ({ role: "assistant", content: [{ type: "text", text }], stopReason: "stop", timestamp: 2 });
const ask = (...calls: [string, string, Record<string, unknown>][]): AssistantMessage => ({
  role: "assistant", content: calls.map(([id, name, args]) => ({ type: "toolCall" as const, id, name, arguments: args })), stopReason: "toolUse", timestamp: 2,
});
const context = { messages: [{ role: "user", content: "go", timestamp: 1 }] as AgentMessage[] };
const tools = new ToolRegistry();
`;

/** What each example gets around it: the script its model plays, and what the test reads back. */
const SETUPS = {
  "approval.ts": {
    before: `const deleted: string[] = [];
const asked: string[] = [];
async function askUser(question: string, signal: AbortSignal): Promise<boolean> {
  asked.push(question + (signal instanceof AbortSignal ? "" : " (no signal)"));
  return false;
}
tools.register({ name: "delete", parameters: { type: "object" }, execute: async ({ path }) => (deleted.push(String(path)), { content: [{ type: "text", text: "deleted" }] }) });
tools.register({ name: "read", parameters: { type: "object" }, execute: async () => ({ content: [{ type: "text", text: "read" }] }) });
const model = new ScriptedModel([ask(["c1", "delete", { path: "a.txt" }], ["c2", "read", { path: "b.txt" }]), say("Left a.txt alone.")]);
`,
    after: "export { result, asked, deleted };\n",
  },
  "sequential.ts": {
    before: `const model = new ScriptedModel([ask(["w1", "write_file", { path: "a.txt", text: "1" }], ["w2", "write_file", { path: "b.txt", text: "2" }]), say("Wrote both.")]);
`,
    after: "export { result, files };\n",
  },
  "steering.ts": {
    before: `const logged: string[] = [];
const log = console.log;
console.log = (...args: unknown[]) => void logged.push(args.join(" "));
const scripted = new ScriptedModel([say("first"), say("second"), say("third")]);
let requests = 0;
// The user types while the first answer streams.
const model: typeof scripted = Object.assign(Object.create(scripted), {
  stream: (request: Parameters<typeof scripted.stream>[0], options: Parameters<typeof scripted.stream>[1]) => {
    if (requests++ === 0) steer("Use TypeScript, not JavaScript.");
    return scripted.stream(request, options);
  },
});
`,
    after: "console.log = log;\nexport { result, logged };\n",
  },
};

let appDir;
let compiled;
before(async () => {
  const fixture = await ensureFixture();
  appDir = path.join(fixture, "readme-control-app");
  fs.rmSync(appDir, { recursive: true, force: true });
  fs.mkdirSync(appDir, { recursive: true });
  fs.copyFileSync(path.join(appSrcDir, "readme", "tsconfig.json"), path.join(appDir, "tsconfig.json"));
  const readme = fs.readFileSync(path.join(fixture, "node_modules", "tiny-pi", "README.md"), "utf8");
  const blocks = controlBlocks(readme);
  assert.deepEqual(Object.keys(blocks).sort(), Object.keys(SETUPS).sort(), "the README marks its loop-control examples");
  for (const [name, code] of Object.entries(blocks)) {
    fs.writeFileSync(path.join(appDir, name), PRELUDE + SETUPS[name].before + code + SETUPS[name].after);
  }
  const tsc = await toolPath("typescript/bin/tsc");
  compiled = await run(process.execPath, [tsc, "-p", path.join(appDir, "tsconfig.json")], { cwd: appDir }).then(
    () => ({ ok: true }),
    (e) => ({ ok: false, output: `${e.stdout}${e.stderr}` }),
  );
});

const load = (name) => import(pathToFileURL(path.join(appDir, "out", name.replace(/\.ts$/, ".js"))).href);
const texts = (messages) => messages.filter((m) => m.role === "toolResult").map((m) => m.content[0].text);

test("the README's loop-control examples compile under tsc --strict, verbatim", T, () => {
  assert.ok(compiled.ok, compiled.output);
});

test("approval: the call the user declines is blocked with the README's reason; the other runs", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const { result, asked, deleted } = await load("approval.ts");
  assert.equal(result.reason, "stop");
  assert.deepEqual(asked, ["Delete a.txt?"]);
  assert.deepEqual(deleted, []);
  assert.deepEqual(texts(result.messages), ["The user declined: do not delete it.", "read"]);
  assert.deepEqual(result.messages[2].details, { skipped: true, reason: "blocked" });
});

test("sequential: both writes run, one after the other, with their results in call order", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const { result, files } = await load("sequential.ts");
  assert.equal(result.reason, "stop");
  assert.deepEqual([...files], [["a.txt", "1"], ["b.txt", "2"]]);
  assert.deepEqual(texts(result.messages), ["wrote a.txt", "wrote b.txt"]);
});

test("steering: the message typed mid-run goes in before the next request, the follow-up after the model stops", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const { result, logged } = await load("steering.ts");
  assert.equal(result.reason, "stop");
  assert.deepEqual(result.messages.map((m) => [m.role, m.role === "user" ? m.content : m.content[0].text]), [
    ["user", "go"],
    ["assistant", "first"],
    ["user", "Use TypeScript, not JavaScript."],
    ["assistant", "second"],
    ["user", "Now write the tests."],
    ["assistant", "third"],
  ]);
  assert.deepEqual(logged, ["[steering] Use TypeScript, not JavaScript.", "[followUp] Now write the tests."]);
});
