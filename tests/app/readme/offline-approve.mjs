// Preloaded (`node --import`) to run the README's approval example offline, as offline-openai.mjs does for its
// first example: pi-ai's faux provider answers for getModel("openai", "gpt-4o-mini"). The model asks to delete
// old.log, then repeats what it was told, which is printed for the test to see.
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";

const faux = registerFauxProvider({ api: "openai-responses", provider: "openai", models: [{ id: "gpt-4o-mini" }] });
faux.setResponses([
  fauxAssistantMessage([fauxToolCall("delete", { path: "old.log" }, { id: "call-1" })], { stopReason: "toolUse" }),
  (context) => {
    const told = context.messages.at(-1).content.map((c) => c.text).join("");
    process.stdout.write(`\n[the model was told: ${told}]\n`);
    return fauxAssistantMessage(told);
  },
]);
