// The package README's pi-ai examples (issue 28), taken verbatim from the README installed with the package,
// compiled under `tsc --strict` and run against a local OpenAI-compatible chat-completions server (node:http,
// streaming SSE chunks) that requires a key and answers 401 without it: the `fromPiAi` adapter passing the app's
// key and headers (the adapter that dropped them fails with "No API key for provider: local"), a local model,
// a typed TypeBox tool, a budget, a retry policy, compaction with a pi-ai summarizer, an Agent asked again after
// an error, and a paused conversation saved with its steps. Each fragment runs as its own Node process, between a
// prelude that gives it `piModel`, `apiKey`, `model`, `context` and `tools`.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { appSrcDir, ensureFixture, loadPiAi, loadTinyPi, toolPath } from "./app-fixture.mjs";

const exec = promisify(execFile);
const T = { timeout: 120_000 };
const KEY = "sk-local-1234";

/** The fenced blocks after `<!-- readme-check: pi-model.ts -->` and each `<!-- readme-pi-ai: NAME -->`. */
function blocks(markdown) {
  const found = {};
  for (const m of markdown.matchAll(/^<!-- readme-(check|pi-ai): (\S+) -->\n```\w*\n([\s\S]*?)^```$/gm)) {
    if (m[1] === "pi-ai" || m[2] === "pi-model.ts") found[m[2]] = m[3];
  }
  return found;
}

const PRELUDE = `import { Agent, runAgentLoop, ToolRegistry, type AgentMessage } from "tiny-pi";
import type { AssistantMessage as PiAssistantMessage, Model as PiModel } from "@mariozechner/pi-ai";
import { fromPiAi } from "./pi-model.js";
const apiKey = process.env.LOCAL_API_KEY;
const piModel: PiModel<"openai-completions"> = {
  id: "local-model", name: "Local model", api: "openai-completions", provider: "local", baseUrl: process.env.LOCAL_BASE_URL!,
  reasoning: false, input: ["text"], cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, contextWindow: 200_000, maxTokens: 4_096,
};
const tools = new ToolRegistry();
const go = { messages: [{ role: "user" as const, content: "Go.", timestamp: 1 }] };
`;

/** What each fragment gets around it. */
const SETUPS = {
  "typebox-tool.ts": {
    before: `async function grep(pattern: string, path: string, limit: number): Promise<string> {
  return \`\${pattern} in \${path}, at most \${limit}\`;
}
`,
    after: `for (const args of [{ pattern: "TODO" }, { pattern: "TODO", path: "src", limit: 0 }]) {
  const result = await tools.execute({ type: "toolCall", id: "c1", name: "grep", arguments: args }, {});
  console.log(\`\${result.isError ? "error" : "ok"}: \${result.content.map((c) => (c.type === "text" ? c.text : "")).join("")}\`);
}
`,
  },
  "budget.ts": {
    before: `const model = fromPiAi(piModel, { apiKey });
const context = go;
tools.register({ name: "next", execute: async () => ({ content: [{ type: "text", text: "more to do" }] }) });
`,
    after: "",
  },
  "retry.ts": {
    before: "const context = go;\n",
    after: "",
  },
  "compaction.ts": {
    before: `const model = fromPiAi(piModel, { apiKey });
const said = (text: string): PiAssistantMessage => ({
  role: "assistant", content: [{ type: "text", text }], api: "openai-completions", provider: "local", model: "local-model",
  usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
  stopReason: "stop", timestamp: 2,
});
const history: AgentMessage<PiAssistantMessage>[] = [];
for (let i = 1; i <= 12; i++) history.push({ role: "user", content: \`Step \${i}: \${"notes ".repeat(1300)}\`, timestamp: 1 }, said(\`Done with step \${i}: \${"result ".repeat(1100)}\`));
history.push({ role: "user", content: "Now write the report.", timestamp: 3 });
const context = { messages: history };
`,
    after: `console.log(JSON.stringify({ reason: result.reason, roles: result.messages.map((m) => m.role), entry: result.messages.find((m) => m.role === "compaction") }));
`,
  },
  "agent-retry.ts": {
    before: "const model = fromPiAi(piModel, { apiKey });\n",
    after: `console.log(JSON.stringify(agent.messages.map((m) => (m.role === "assistant" ? m.stopReason : m.role))));
`,
  },
  "save-paused.ts": {
    before: `const model = fromPiAi(piModel, { apiKey });
const deleted: string[] = [];
tools.register({
  name: "delete", needsApproval: true,
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: async ({ path }) => (deleted.push(path), { content: [{ type: "text", text: \`Deleted \${path}.\` }] }),
});
`,
    after: `console.log(JSON.stringify({ deleted, steps: JSON.parse(readFileSync("chat.json", "utf8")).steps }));
`,
  },
};
const PROGRAMS = ["pi-model.ts", "local.ts"]; // whole modules, written as they are

/** A local OpenAI-compatible chat-completions endpoint that requires `Authorization: Bearer KEY` (401 without
 * it). `answer(request, n)` gives the n-th request's reply: `{ text }` or `{ call: { id, name, arguments } }`
 * (with `usage: { prompt_tokens, completion_tokens }`), streamed as SSE chunks, or `{ status, message }`, an
 * HTTP error that the OpenAI SDK does not retry itself. Every request is kept: `{ headers, body }`. */
async function localServer(answer) {
  const requests = [];
  const fail = (res, status, message) => {
    res.writeHead(status, { "content-type": "application/json", "x-should-retry": "false" });
    res.end(JSON.stringify({ error: { message, type: "invalid_request_error" } }));
  };
  const server = http.createServer((req, res) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      const request = { headers: req.headers, body: JSON.parse(text) };
      requests.push(request);
      if (req.headers.authorization !== `Bearer ${KEY}`) return fail(res, 401, "Invalid API key");
      const reply = answer(request, requests.length);
      if (reply.status) return fail(res, reply.status, reply.message);
      const chunk = (choices, extra = {}) => `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 0, model: "local-model", choices, ...extra })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (reply.call) {
        const call = { index: 0, id: reply.call.id, type: "function", function: { name: reply.call.name, arguments: JSON.stringify(reply.call.arguments) } };
        res.write(chunk([{ index: 0, delta: { role: "assistant", content: null, tool_calls: [call] }, finish_reason: null }]));
        res.write(chunk([{ index: 0, delta: {}, finish_reason: "tool_calls" }]));
      } else {
        res.write(chunk([{ index: 0, delta: { role: "assistant", content: reply.text }, finish_reason: null }]));
        res.write(chunk([{ index: 0, delta: {}, finish_reason: "stop" }]));
      }
      const usage = reply.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
      res.write(chunk([], { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }));
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { requests, url: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((r) => server.close(r)) };
}

let appDir;
let compiled;
const servers = [];
before(async () => {
  const fixture = await ensureFixture();
  appDir = path.join(fixture, "readme-pi-ai-app");
  fs.rmSync(appDir, { recursive: true, force: true });
  fs.mkdirSync(appDir, { recursive: true });
  fs.copyFileSync(path.join(appSrcDir, "readme", "tsconfig.json"), path.join(appDir, "tsconfig.json"));
  const readme = fs.readFileSync(path.join(fixture, "node_modules", "tiny-pi", "README.md"), "utf8");
  const found = blocks(readme);
  assert.deepEqual(Object.keys(found).sort(), [...PROGRAMS, ...Object.keys(SETUPS)].sort(), "the README marks its pi-ai examples");
  for (const [name, code] of Object.entries(found)) {
    fs.writeFileSync(path.join(appDir, name), PROGRAMS.includes(name) ? code : PRELUDE + SETUPS[name].before + code + SETUPS[name].after);
  }
  const tsc = await toolPath("typescript/bin/tsc");
  compiled = await exec(process.execPath, [tsc, "-p", path.join(appDir, "tsconfig.json")], { cwd: appDir }).then(
    () => ({ ok: true }),
    (e) => ({ ok: false, output: `${e.stdout}${e.stderr}` }),
  );
});
after(() => Promise.all(servers.map((s) => s.close())));

/** A server for one test (closed after all of them). */
async function serve(answer) {
  const server = await localServer(answer);
  servers.push(server);
  return server;
}

/** Runs a compiled example in a fresh folder, against `server`, with `key` as LOCAL_API_KEY (none: null); its
 * stdout lines. */
async function runExample(name, server, key = KEY) {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-readme-pi-ai-"));
  try {
    const env = { ...process.env, LOCAL_BASE_URL: server.url };
    if (key === null) delete env.LOCAL_API_KEY;
    else env.LOCAL_API_KEY = key;
    const { stdout } = await exec(process.execPath, [path.join(appDir, "out", name.replace(/\.ts$/, ".js"))], { cwd, env, timeout: 60_000 });
    return stdout.trimEnd().split("\n");
  } finally {
    fs.rmSync(cwd, { recursive: true, force: true });
  }
}

const sentText = (message) => (typeof message.content === "string" ? message.content : message.content.map((c) => c.text ?? "").join(""));

test("the README's pi-ai examples compile under tsc --strict, verbatim", T, () => {
  assert.ok(compiled.ok, compiled.output);
});

test("fromPiAi passes the app's key: the key-requiring server answers, where the adapter that dropped it failed", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const server = await serve(() => ({ text: "Hi from the local server." }));
  const tp = await loadTinyPi();
  const { streamSimple } = await loadPiAi();
  const { fromPiAi } = await import(pathToFileURL(path.join(appDir, "out", "pi-model.js")).href);
  const piModel = {
    id: "local-model", name: "Local model", api: "openai-completions", provider: "local", baseUrl: server.url, reasoning: false,
    input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 8000, maxTokens: 1000,
  };
  const context = { messages: [{ role: "user", content: "Say hi.", timestamp: 1 }] };

  // The adapter as the README had it: the app's options never reach pi-ai, which knows no key for "local".
  const dropped = await tp.runAgentLoop({ context, model: { stream: (req, opts) => streamSimple(piModel, req, opts) } });
  assert.deepEqual([dropped.reason, dropped.error], ["error", "No API key for provider: local"]);
  assert.equal(server.requests.length, 0, "no request was made");

  const result = await tp.runAgentLoop({ context, model: fromPiAi(piModel, { apiKey: KEY, headers: { "X-Trace": "t-1" } }) });
  assert.equal(result.reason, "stop", result.error);
  assert.equal(result.messages.at(-1).content[0].text, "Hi from the local server.");
  assert.equal(server.requests.length, 1);
  assert.equal(server.requests[0].headers.authorization, `Bearer ${KEY}`);
  assert.equal(server.requests[0].headers["x-trace"], "t-1");
});

test("the README's local model: with the key it answers; without it pi-ai refuses; a wrong key is the server's 401", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const server = await serve(() => ({ text: "Hi from the local server." }));
  assert.deepEqual(await runExample("local.ts", server), ["Hi from the local server."]);
  assert.equal(server.requests[0].headers["x-client"], "tiny-pi", "the README's header went with the request");
  assert.deepEqual(await runExample("local.ts", server, null), ["[error] No API key for provider: local"]);
  assert.deepEqual(await runExample("local.ts", server, "sk-wrong"), ["[error] 401 Invalid API key"]);
  assert.equal(server.requests.length, 2, "the refused run made no request");
});

test("the README's TypeBox tool: typed arguments, checked by the registry against the TypeBox schema", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const server = await serve(() => ({ text: "unused" }));
  assert.deepEqual(await runExample("typebox-tool.ts", server), [
    "ok: TODO in ., at most 20",
    'error: Invalid arguments for tool "grep": arguments.limit must be >= 1 (got 0)',
  ]);
});

test("the README's budget: the run stops once the cost reaches maxCost, with the usage summed", T, async () => {
  assert.ok(compiled.ok, "compiled");
  // Each response: 50,000 tokens in, 2,000 out, at $3 and $15 a million: $0.18, 52,000 tokens.
  const server = await serve(() => ({ call: { id: "call-1", name: "next", arguments: {} }, usage: { prompt_tokens: 50_000, completion_tokens: 2_000 } }));
  assert.deepEqual(await runExample("budget.ts", server), ["[budget] 156000 tokens, $0.54 in 3 requests"]);
  assert.equal(server.requests.length, 3, "no request after the budget was spent");
});

test("the README's retry policy: two 503s retried with growing waits; a 401 is not retried", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const server = await serve((_, n) => (n <= 2 ? { status: 503, message: "The server is overloaded" } : { text: "Done." }));
  assert.deepEqual(await runExample("retry.ts", server), [
    "retry 1 in 500 ms: 503 The server is overloaded",
    "retry 2 in 1000 ms: 503 The server is overloaded",
    "[stop] after 2 retries",
  ]);
  assert.equal(server.requests.length, 3);
  assert.deepEqual(server.requests[2].body.messages, server.requests[0].body.messages, "the same request, asked again");

  const refused = await serve(() => ({ text: "unused" }));
  assert.deepEqual(await runExample("retry.ts", refused, "sk-wrong"), ["[error] after 0 retries"]);
  assert.equal(refused.requests.length, 1);
});

test("the README's compaction: a pi-ai summarizer's summary replaces the older messages in the request", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const summarizing = (request) => request.body.messages[0]?.role === "system" && sentText(request.body.messages[0]).startsWith("Summarise this conversation");
  const server = await serve((request) => (summarizing(request) ? { text: "Twelve steps done; the report is left." } : { text: "Report written." }));
  const lines = await runExample("compaction.ts", server);
  assert.equal(lines.length, 2, lines.join("\n"));
  const { reason, roles, entry } = JSON.parse(lines[1]);
  assert.equal(reason, "stop");
  assert.deepEqual(roles, [...Array(12).fill(["user", "assistant"]).flat(), "user", "compaction", "assistant"]);
  assert.equal(entry.summary, "Twelve steps done; the report is left.");
  assert.equal(lines[0], `compacted ${entry.tokensBefore} tokens: messages before ${entry.firstKeptIndex} summarised`);
  assert.ok(entry.tokensBefore > 24_000, `over maxContextTokens: ${entry.tokensBefore}`);

  // Two requests: the summarizer's (the messages before the cut, then the instruction), then the model's
  // (the summary, then the messages from the cut on).
  const [summary, main] = server.requests;
  assert.equal(server.requests.length, 2);
  assert.ok(summarizing(summary), "the summarizer's request comes first");
  assert.equal(summary.headers.authorization, `Bearer ${KEY}`);
  const before = summary.body.messages.slice(1, -1);
  assert.equal(before.length, entry.firstKeptIndex);
  assert.equal(sentText(summary.body.messages.at(-1)), "Summarise the conversation so far.");
  assert.equal(sentText(main.body.messages[0]), "The conversation so far, summarised:\n\nTwelve steps done; the report is left.");
  assert.equal(main.body.messages.length, 1 + (25 - entry.firstKeptIndex));
  assert.equal(sentText(main.body.messages.at(-1)), "Now write the report.");
});

test("the README's Agent retried after an error: prompt([]) asks again from the conversation", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const server = await serve((_, n) => (n <= 2 ? { status: 503, message: "The server is overloaded" } : { text: "Tidied." }));
  assert.deepEqual(await runExample("agent-retry.ts", server), [
    "failed: 503 The server is overloaded; asking again",
    "[stop] 3 messages",
    JSON.stringify(["user", "error", "stop"]),
  ]);
  assert.equal(server.requests.length, 3, "one request, one retry, then prompt([])");
});

test("the README's paused conversation, saved with its steps and restored: the resumed run counts on", T, async () => {
  assert.ok(compiled.ok, "compiled");
  const server = await serve((_, n) => (n === 1 ? { call: { id: "call-1", name: "delete", arguments: { path: "old.log" } } } : { text: "Deleted old.log." }));
  assert.deepEqual(await runExample("save-paused.ts", server), ["[stop] 2 of at most 8 requests", JSON.stringify({ deleted: ["old.log"], steps: 1 })]);
  assert.equal(server.requests.length, 2);
});
