// Preloaded (`node --import`) to run the README's example as it is, offline: pi-ai's own faux provider
// answers for the OpenAI Responses API that getModel("openai", "gpt-4o-mini") names, so the example's
// pi-ai model streams pi-ai events with no network and no key. The script: read README.md, then say
// what the tool answered.
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";

const faux = registerFauxProvider({ api: "openai-responses", provider: "openai", models: [{ id: "gpt-4o-mini" }] });
faux.setResponses([
  fauxAssistantMessage([fauxToolCall("read", { path: "README.md" }, { id: "call-1" })], { stopReason: "toolUse" }),
  (context) => {
    const result = context.messages.at(-1);
    return fauxAssistantMessage(`README.md says: ${result.content.map((c) => c.text).join("")}`);
  },
]);
