// A Vite app with tiny-pi and pi-ai installed side by side (tests/node/app-targets.test.mjs builds it in a folder
// of its own): the package README's `fromPiAi` adapter, in JS, over pi-ai's faux provider, one tool round.
import { runAgentLoop, ToolRegistry, validateTranscript } from "tiny-pi";
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider, streamSimple } from "@mariozechner/pi-ai";
import { show } from "../../show.mjs";

const fromPiAi = (piModel, options = {}) => ({ stream: (req, { signal }) => streamSimple(piModel, req, { ...options, signal }) });

const faux = registerFauxProvider();
faux.setResponses([
  fauxAssistantMessage([fauxToolCall("read", { path: "README.md" }, { id: "call-1" })], { stopReason: "toolUse" }),
  (context) => fauxAssistantMessage(`read: ${context.messages.at(-1).content[0].text}`),
]);
const tools = new ToolRegistry();
tools.register({
  name: "read",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: async ({ path }) => ({ content: [{ type: "text", text: `# ${path}` }] }),
});

show(
  (async () => {
    const result = await runAgentLoop({
      context: { messages: [{ role: "user", content: "What is in README.md?", timestamp: 1 }] },
      model: fromPiAi(faux.getModel()),
      tools,
    });
    const answer = result.messages.at(-1);
    return {
      problems: validateTranscript(result.messages).problems,
      summary: { reason: result.reason, steps: result.steps, roles: result.messages.map((m) => m.role).join(","), piAiMessage: answer.api === faux.getModel().api && typeof answer.usage === "object", text: answer.content[0].text },
    };
  })(),
);
