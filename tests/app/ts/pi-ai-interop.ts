// A TypeScript app that wires pi-ai to tiny-pi: pi-ai messages go into a ScriptedModel, and pi-ai's own
// stream (streamSimple over the faux provider) is a tiny-pi model with no cast on the stream side.
import { runAgentLoop, ScriptedModel } from "tiny-pi";
import type { AgentMessage, ModelStream } from "tiny-pi";
import { fauxAssistantMessage, registerFauxProvider, streamSimple } from "@mariozechner/pi-ai";
import type { AssistantMessageEventStream, Context as PiContext } from "@mariozechner/pi-ai";

const input: AgentMessage[] = [{ role: "user", content: "hi", timestamp: 1 }];

new ScriptedModel([fauxAssistantMessage("hi from pi-ai")]);

const faux = registerFauxProvider();
const piStream: AssistantMessageEventStream = streamSimple(faux.getModel(), { messages: [] });
const asModelStream: ModelStream = piStream;

await runAgentLoop({
  context: { messages: input },
  model: {
    // The request's messages and tools are handed to pi-ai as its Context (tiny-pi's message types
    // are a subset of pi-ai's, so this direction needs a cast); the stream comes back with no cast.
    stream: (req, opts) => streamSimple(faux.getModel(), { systemPrompt: req.systemPrompt, messages: req.messages, tools: req.tools } as PiContext, { signal: opts.signal }),
  },
});

export { asModelStream };
