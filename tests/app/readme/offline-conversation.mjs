// Preloaded (`node --import`) to run the README's Agent example offline: pi-ai's faux provider answers for
// getModel("openai", "gpt-4o-mini"), and knows the name only if the second request carries the first exchange.
import { fauxAssistantMessage, registerFauxProvider } from "@mariozechner/pi-ai";

const faux = registerFauxProvider({ api: "openai-responses", provider: "openai", models: [{ id: "gpt-4o-mini" }] });
faux.setResponses([
  fauxAssistantMessage("Hello, Ada."),
  (context) => fauxAssistantMessage(context.messages.length === 3 && context.systemPrompt === "You are terse." ? "Your name is Ada." : "I do not know."),
]);
