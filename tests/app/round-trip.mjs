// The README round trip of the course (seed "Agent Loop: 一次 README 往返"), written once and run
// unchanged by every app target: the Node app, the Vite page and the plain browser page.
// It takes the tiny-pi exports as an argument so each target imports them its own way.
// It returns a plain JSON summary plus a list of problems; an empty list means the run matched the seed.

export const EXPECTED_EVENTS = [
  "model_event:start",
  "model_event:text_delta",
  "model_event:toolcall_delta",
  "model_event:toolcall_end",
  "model_event:done",
  "assistant_message",
  "tool_start",
  "tool_end",
  "model_event:start",
  "model_event:text_delta",
  "model_event:done",
  "assistant_message",
  "turn_end",
];

export function readmeScript() {
  const readCall = { type: "toolCall", id: "call-1", name: "read", arguments: { path: "README.md" } };
  return {
    readCall,
    input: [{ role: "user", content: "请读取 README.md，并告诉我项目名。", timestamp: 1 }],
    script: [
      { role: "assistant", content: [{ type: "text", text: "我先读取项目说明。" }, readCall], stopReason: "toolUse", timestamp: 2 },
      { role: "assistant", content: [{ type: "text", text: "项目名是 tiny-pi。" }], stopReason: "stop", timestamp: 4 },
    ],
    readme: "# tiny-pi\nA small agent runtime.",
  };
}

// `free: false` leaves the ScriptedModel and ToolRegistry to the garbage collector, as a careless app would.
export async function readmeRoundTrip({ runAgentLoop, ScriptedModel, ToolRegistry, validateTranscript }, { free = true } = {}) {
  const { input, script, readme, readCall } = readmeScript();
  const snapshot = JSON.stringify(input);
  const model = new ScriptedModel(script);
  const tools = new ToolRegistry();
  let executions = 0;
  tools.register({
    name: "read",
    description: "Read a file (in-memory fixture)",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    execute: async (args) => {
      executions += 1;
      return { content: [{ type: "text", text: args.path === "README.md" ? readme : "no such file" }] };
    },
  });
  const events = [];
  const result = await runAgentLoop({
    context: { systemPrompt: "You are a helpful agent.", messages: input },
    model,
    tools,
    onEvent: (e) => { events.push(e); },
  });
  const labels = events.map((e) => (e.type === "model_event" ? `model_event:${e.event.type}` : e.type));
  const requests = model.requests.length;
  const problems = [];
  const check = (ok, what) => { if (!ok) problems.push(what); };
  check(JSON.stringify(labels) === JSON.stringify(EXPECTED_EVENTS), `event order: ${labels.join(",")}`);
  check(result.reason === "stop", `reason ${result.reason}`);
  check(result.steps === 2, `steps ${result.steps}`);
  check(requests === 2, `requests ${requests}`);
  check(executions === 1, `executions ${executions}`);
  const roles = result.messages.map((m) => m.role).join(",");
  check(roles === "user,assistant,toolResult,assistant", `roles ${roles}`);
  check(JSON.stringify(input) === snapshot, "caller's input was modified");
  const toolResult = result.messages[2] ?? {};
  check(toolResult.toolCallId === readCall.id && toolResult.toolName === "read" && toolResult.isError === false,
    `tool result ${JSON.stringify(toolResult)}`);
  check(toolResult.content?.[0]?.text === readme, "tool result text");
  check(model.requests[1]?.messages?.length === 3, "second request saw user, assistant, toolResult");
  const final = result.messages[3] ?? {};
  check(final.content?.[0]?.text === "项目名是 tiny-pi。", "final answer text");
  const valid = validateTranscript(result.messages);
  check(valid.ok === true && valid.problems.length === 0, `validateTranscript ${JSON.stringify(valid)}`);
  if (free) {
    model.free?.();
    tools.free?.();
  }
  return {
    problems,
    summary: { events: labels, reason: result.reason, steps: result.steps, requests, executions, roles },
  };
}
