// An app that approves a tool call after a restart (SPEC §8, issue 16), run by tests/node/sessions.test.mjs
// as separate processes, with the installed package:
//   node resume-later.mjs pause FILE               runs until the run pauses, saves the transcript to FILE as
//                                                  JSON Lines, prints { reason, steps, pending }, and exits
//   node resume-later.mjs resume FILE DECISIONS    a new process: reads FILE back, resumes with the decisions
//                                                  (JSON), prints { reason, steps, messages }
//   node resume-later.mjs whole - DECISIONS        the same conversation in one run, decisions given up front
import fs from "node:fs";
import { parseJSONL, runAgentLoop, toJSONL, ToolRegistry } from "tiny-pi";
import { ScriptedModel } from "tiny-pi/lesson";

const [phase, file, decisions = "{}"] = process.argv.slice(2);

const call = (id, name, args) => ({ type: "toolCall", id, name, arguments: args });
// The model's answers, by how many it gave before: what a provider would say at that point of the conversation.
const ANSWERS = [
  { role: "assistant", content: [{ type: "text", text: "Cleaning up." }, call("c1", "delete", { path: "/tmp/old.log" }), call("c2", "read", { path: "notes.txt" })], stopReason: "toolUse", timestamp: 1700000000001, usage: { input: 12, output: 30, cost: { total: 0.000003 } } },
  { role: "assistant", content: [{ type: "text", text: "Done: the notes say 3.5 GB, ratio 0.1." }], stopReason: "stop", timestamp: 1700000000002.5 },
];

const tools = new ToolRegistry();
tools.register({
  name: "delete",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  needsApproval: true,
  execute: async ({ path }) => ({ content: [{ type: "text", text: `deleted ${path}` }], details: { bytes: 1e21, ratio: 0.1 + 0.2 } }),
});
tools.register({ name: "read", execute: async ({ path }) => ({ content: [{ type: "text", text: `${path}: 3.5 GB 😀` }] }) });

/** One run from `messages`: the model picks up where the conversation is. */
function run(messages, options = {}) {
  const answered = messages.filter((m) => m.role === "assistant").length;
  return runAgentLoop({ context: { systemPrompt: "Be careful.", messages }, model: new ScriptedModel(ANSWERS.slice(answered)), tools, now: () => 1700000000100, ...options });
}

const start = [{ role: "user", content: "Clean up /tmp, then read my notes.", timestamp: 1700000000000 }];
let out;
if (phase === "pause") {
  const result = await run(start);
  fs.writeFileSync(file, toJSONL(result.messages));
  out = { reason: result.reason, steps: result.steps, pending: result.pending, pid: process.pid };
} else if (phase === "resume") {
  const result = await run(parseJSONL(fs.readFileSync(file, "utf8")), { approvals: JSON.parse(decisions) });
  out = { reason: result.reason, steps: result.steps, messages: result.messages, pid: process.pid };
} else if (phase === "whole") {
  const result = await run(start, { approvals: JSON.parse(decisions) });
  out = { reason: result.reason, steps: result.steps, messages: result.messages, pid: process.pid };
} else {
  throw new Error(`unknown phase ${phase}`);
}
process.stdout.write(JSON.stringify(out));
