// The package README as a new user meets it (issue 17): its TypeScript blocks, taken verbatim from the README
// installed with the package, compile under `tsc --strict` in a Node ES-module app, and run: the example
// offline (pi-ai's faux provider answering for the OpenAI model it names), and the pi-ai adapter with
// pi-ai's openai-completions provider against a local server, where the tool schema arrives with its keys
// in the declared order.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { appSrcDir, ensureFixture, loadTinyPi, loadTinyPiSessions, toolPath } from "./app-fixture.mjs";

const run = promisify(execFile);
const T = { timeout: 120_000 };

/** The fenced block after each `<!-- readme-check: NAME -->` line, as { NAME: code }. */
function readmeBlocks(markdown) {
  const blocks = {};
  for (const m of markdown.matchAll(/^<!-- readme-check: (\S+) -->\n```\w*\n([\s\S]*?)^```$/gm)) blocks[m[1]] = m[2];
  return blocks;
}

let appDir; // the fixture's copy of tests/app/readme/, with the README's blocks written in
let compiled; // tsc's outcome: { ok, output }
before(async () => {
  const fixture = await ensureFixture();
  appDir = path.join(fixture, "readme-app");
  fs.rmSync(appDir, { recursive: true, force: true });
  fs.cpSync(path.join(appSrcDir, "readme"), appDir, { recursive: true });
  const readme = fs.readFileSync(path.join(fixture, "node_modules", "tiny-pi", "README.md"), "utf8");
  const blocks = readmeBlocks(readme);
  assert.deepEqual(Object.keys(blocks).sort(), ["agent.ts", "approve.ts", "conversation.ts", "pi-model.ts"], "the README marks its examples and its adapter");
  for (const [name, code] of Object.entries(blocks)) fs.writeFileSync(path.join(appDir, name), code);
  const tsc = await toolPath("typescript/bin/tsc");
  compiled = await run(process.execPath, [tsc, "-p", path.join(appDir, "tsconfig.json")], { cwd: appDir }).then(
    () => ({ ok: true }),
    (e) => ({ ok: false, output: `${e.stdout}${e.stderr}` }),
  );
});

test("the README's example and pi-ai adapter compile under tsc --strict, verbatim", T, () => {
  assert.ok(compiled.ok, compiled.output);
  assert.ok(fs.existsSync(path.join(appDir, "out", "agent.js")) && fs.existsSync(path.join(appDir, "out", "pi-model.js")));
});

test("the README's example runs: the model asks for README.md, the tool reads it, the answer streams out", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-readme-"));
  try {
    fs.writeFileSync(path.join(cwd, "README.md"), "# hello from the fixture");
    const { stdout } = await run(
      process.execPath,
      ["--import", pathToFileURL(path.join(appDir, "offline-openai.mjs")).href, path.join(appDir, "out", "agent.js")],
      { cwd },
    );
    assert.equal(stdout, "README.md says: # hello from the fixture\n[stop after 2 requests]\n");
  } finally {
    fs.rmSync(cwd, { recursive: true, force: true });
  }
});

/** A local OpenAI chat-completions endpoint: answers request i with `replies[i]` as SSE chunks, keeps each body. */
async function openAiServer(replies) {
  const bodies = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      bodies.push(JSON.parse(body));
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const choice of replies[bodies.length - 1] ?? []) {
        res.write(`data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 0, model: "local", choices: [choice] })}\n\n`);
      }
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { bodies, url: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((r) => server.close(r)) };
}

test("the README's adapter drives pi-ai's openai-completions provider: schema, arguments and details keep their key order", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const tp = await loadTinyPi();
  const { fromPiAi } = await import(pathToFileURL(path.join(appDir, "out", "pi-model.js")).href);
  const args = '{"zeta":"z","alpha":1}';
  const server = await openAiServer([
    [
      { index: 0, delta: { role: "assistant", content: null, tool_calls: [{ index: 0, id: "call-1", type: "function", function: { name: "pick", arguments: "" } }] }, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: args } }] }, finish_reason: null },
      { index: 0, delta: {}, finish_reason: "tool_calls" },
    ],
    [
      { index: 0, delta: { role: "assistant", content: "picked" }, finish_reason: null },
      { index: 0, delta: {}, finish_reason: "stop" },
    ],
  ]);
  const apiKey = process.env.OPENAI_API_KEY;
  process.env.OPENAI_API_KEY = "sk-local-test"; // read by pi-ai for provider "openai"; the server ignores it
  try {
    const piModel = {
      id: "local", name: "local", api: "openai-completions", provider: "openai", baseUrl: server.url, reasoning: false,
      input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 8000, maxTokens: 1000,
    };
    const tools = new tp.ToolRegistry();
    const seen = [];
    tools.register({
      name: "pick",
      description: "Pick",
      parameters: { type: "object", properties: { zeta: { type: "string" }, alpha: { type: "integer" } }, required: ["zeta", "alpha"] },
      execute: async (a) => {
        seen.push(Object.keys(a));
        return { content: [{ type: "text", text: "ok" }], details: { zulu: 1, alpha: 2 } };
      },
    });
    const result = await tp.runAgentLoop({ context: { messages: [{ role: "user", content: "pick", timestamp: 1 }] }, model: fromPiAi(piModel), tools });
    assert.equal(result.reason, "stop", result.error);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
    assert.deepEqual([result.messages[1].api, result.messages[1].provider, typeof result.messages[1].usage], ["openai-completions", "openai", "object"]);
    assert.equal(result.messages[3].content[0].text, "picked");

    // On the wire: the schema as declared, on both requests.
    assert.equal(server.bodies.length, 2);
    for (const body of server.bodies) {
      const parameters = body.tools[0].function.parameters;
      assert.deepEqual(Object.keys(parameters), ["type", "properties", "required"]);
      assert.deepEqual(Object.keys(parameters.properties), ["zeta", "alpha"]);
    }
    // The arguments reached the tool, and went back to the model, in the model's order.
    assert.deepEqual(seen, [["zeta", "alpha"]]);
    assert.deepEqual(Object.keys(result.messages[1].content[0].arguments), ["zeta", "alpha"]);
    const echoed = server.bodies[1].messages.find((m) => m.role === "assistant").tool_calls[0].function.arguments;
    assert.equal(echoed, args);
    assert.deepEqual(Object.keys(result.messages[2].details), ["zulu", "alpha"]);
    tools.free();
  } finally {
    if (apiKey === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = apiKey;
    await server.close();
  }
});

/** Runs a compiled README example in a fresh folder with `preload` answering for the model; its stdout. */
function runExample(name, preload, input = "") {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-readme-"));
  const args = ["--import", pathToFileURL(path.join(appDir, preload)).href, path.join(appDir, "out", name)];
  const child = spawnSync(process.execPath, args, { cwd, input, encoding: "utf8", timeout: 60_000 });
  assert.equal(child.status, 0, child.stderr);
  return { stdout: child.stdout, cwd };
}

test("the README's approval example pauses, asks, and resumes with the answer", T, () => {
  assert.ok(compiled.ok, "compiled");
  const approved = runExample("approve.js", "offline-approve.mjs", "y\n");
  assert.equal(approved.stdout, 'delete {"path":"old.log"}? [y/n] \n[the model was told: Deleted old.log.]\n');
  const denied = runExample("approve.js", "offline-approve.mjs", "n\n");
  assert.equal(denied.stdout, 'delete {"path":"old.log"}? [y/n] \n[the model was told: Tool call was denied.]\n');
  for (const { cwd } of [approved, denied]) fs.rmSync(cwd, { recursive: true, force: true });
});

test("the README's Agent example keeps the conversation and saves it as JSON Lines", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const { stdout, cwd } = runExample("conversation.js", "offline-conversation.mjs");
  try {
    assert.equal(stdout, "Hello, Ada.\nYour name is Ada.\n");
    const { parseJSONL } = await loadTinyPiSessions();
    const saved = parseJSONL(fs.readFileSync(path.join(cwd, "chat.jsonl"), "utf8"));
    assert.deepEqual(saved.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
    assert.equal(saved[3].content[0].text, "Your name is Ada.");
  } finally {
    fs.rmSync(cwd, { recursive: true, force: true });
  }
});
