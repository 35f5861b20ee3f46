// A TypeScript app that wires pi-ai to tiny-pi with no cast either way: pi-ai messages go into a ScriptedModel,
// and pi-ai's own stream (streamSimple over the faux provider) is a tiny-pi model. (The README's adapter is
// compiled verbatim by tests/node/readme.test.mjs.)
import { Agent, runAgentLoop } from "tiny-pi";
import { ScriptedModel } from "tiny-pi/lesson";
import type { AgentMessage, Model, ModelRequest, ModelStream, RunResult, UserMessage } from "tiny-pi";
import { fauxAssistantMessage, registerFauxProvider, streamSimple } from "@mariozechner/pi-ai";
import type { AssistantMessage as PiAssistantMessage, AssistantMessageEventStream, Context, Message } from "@mariozechner/pi-ai";

// A question only: it fits a transcript of any assistant message type.
const input: UserMessage[] = [{ role: "user", content: "hi", timestamp: 1 }];

new ScriptedModel([fauxAssistantMessage("hi from pi-ai")]);

const faux = registerFauxProvider();
const piStream: AssistantMessageEventStream = streamSimple(faux.getModel(), { messages: [] });
const asModelStream: ModelStream<PiAssistantMessage> = piStream;

// A request to a pi-ai model is a pi-ai Context, and a pi-ai transcript is a tiny-pi one.
const asContext = (request: ModelRequest<PiAssistantMessage>): Context => request;
const piMessages: Message[] = [];
const asTranscript: AgentMessage<PiAssistantMessage>[] = piMessages;

// The model typed by its assistant messages: the adapter needs no cast, and the run is typed with pi-ai's messages.
const model: Model<PiAssistantMessage> = { stream: (req, opts) => streamSimple(faux.getModel(), req, opts) };
const result: RunResult<PiAssistantMessage> = await runAgentLoop({
  context: { messages: input },
  model,
  onEvent: (e) => {
    if (e.type === "assistant_message") console.log(e.message.usage.totalTokens);
  },
});
for (const m of result.messages) if (m.role === "assistant") console.log(m.provider, m.usage.output);

// The model alone says what a run answers with: a context held in a variable of plain literals infers nothing.
const context = { messages: [{ role: "user" as const, content: "hi", timestamp: 1 }] };
const inferred = await runAgentLoop({ context, model });
for (const m of inferred.messages) if (m.role === "assistant") console.log(m.usage.totalTokens);
const agent = new Agent({ model, messages: context.messages });
for (const m of agent.messages) if (m.role === "assistant") console.log(m.usage.totalTokens);

// Inline, the type argument says what the model answers with.
await runAgentLoop<PiAssistantMessage>({
  context: { messages: input },
  model: { stream: (req, opts) => streamSimple(faux.getModel(), req, opts) },
});

export { asContext, asModelStream, asTranscript };
