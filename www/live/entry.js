// The live model's client, bundled by scripts/site.mjs (Vite) into dist/live/pi-openai.js: pi-ai's
// openai-completions provider and nothing else of pi-ai (its SSE parsing is the openai SDK's).
export { streamSimpleOpenAICompletions } from "@mariozechner/pi-ai/openai-completions";
