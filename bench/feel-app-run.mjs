// The two apps of bench/feel-app.mjs, the same code in Node and (bundled by Vite) in the browser: a first tool round
// trip against a local OpenAI-compatible server at `baseUrl`, through pi-ai.
export const API_KEY = "bench-key";

/** The pi-ai model description of the local server. */
export const localModel = (baseUrl) => ({
  id: "local-model", name: "Local model", api: "openai-completions", provider: "local", baseUrl: `${baseUrl}/v1`,
  reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 32000, maxTokens: 4096,
});
const SCHEMA = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
const read = async ({ path: p }) => ({ content: [{ type: "text", text: `${p}: # tiny-pi` }] });

/** tiny-pi + pi-ai through the README's adapter; answers the transcript's length. */
export async function tinyApp({ runAgentLoop, ToolRegistry }, { streamSimple }, baseUrl) {
  // The README's adapter, with the app's stream options (the API key) passed through.
  const fromPiAi = (piModel, options = {}) => ({ stream: (req, opts) => streamSimple(piModel, req, { ...options, ...opts }) });
  const tools = new ToolRegistry();
  tools.register({ name: "read", description: "Read a file", parameters: SCHEMA, execute: read });
  const result = await runAgentLoop({
    context: { systemPrompt: "You are terse.", messages: [{ role: "user", content: "What is in README.md?", timestamp: Date.now() }] },
    model: fromPiAi(localModel(baseUrl), { apiKey: API_KEY }),
    tools,
  });
  if (result.reason !== "stop") throw new Error(`tiny-pi app: ${result.reason} ${result.error ?? ""}`);
  return result.messages.length;
}

/** pi-agent-core's Agent over the same server. */
export async function piApp({ Agent }, baseUrl) {
  const agent = new Agent({
    initialState: { systemPrompt: "You are terse.", model: localModel(baseUrl),
      tools: [{ name: "read", label: "read", description: "Read a file", parameters: SCHEMA, execute: (_id, args) => read(args) }] },
    getApiKey: () => API_KEY,
  });
  await agent.prompt("What is in README.md?");
  if (agent.state.errorMessage) throw new Error(`pi-agent-core app: ${agent.state.errorMessage}`);
  return agent.state.messages.length;
}

