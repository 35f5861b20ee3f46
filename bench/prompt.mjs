// What an `Agent.prompt` costs in a long conversation (issue 26, item 7): tiny-pi's Agent and pi-agent-core's,
// at 40 and at 4,000 messages, in one process, interleaved. A prompt here is one request whose model answers at
// once with a short `stop` message (a pi-ai event stream: start, 3 text deltas, done), so what is timed is what
// the Agent does with the conversation around one exchange.
//
// Each sample: for each loop and size, a fresh Agent over the conversation (not timed), a first prompt (timed
// apart: it is the first time the conversation crosses into JS objects for tiny-pi), then a second prompt (the
// steady state of a long-running app). CPU time of this process (process.cpuUsage) and wall time per prompt;
// a sample is the mean of `batch` agents; medians of `rounds` samples.
//
//   node bench/prompt.mjs [--rounds=5] [--sizes=40,4000]
//   node bench/prompt.mjs --profile [--sizes=4000]   30 steady-state prompts of tiny-pi's Agent at the largest size under
//                                                   the CPU profiler -> bench/out/prof/prompt-<size>.cpuprofile
import * as piCore from "@mariozechner/pi-agent-core";
import { createAssistantMessageEventStream } from "@mariozechner/pi-ai";
import { loadTiny, PI_MODEL } from "./legs.mjs";
import { toolSpecs, WORKLOADS } from "./workload.mjs";

const USAGE = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const META = { api: "bench", provider: "bench", model: "bench-model", usage: USAGE };
const SYSTEM_PROMPT = "You are a benchmark.";

/** A conversation of `size` messages (size a multiple of 4): exchanges of a question, an answer with a call,
 * its result, and a closing answer; texts of ~100 characters, as a chat with a tool-using assistant holds. */
export function conversation(size) {
  const out = [];
  for (let i = 0; out.length < size; i++) {
    const t = 1000 + i * 10;
    const call = { type: "toolCall", id: `call_${i}`, name: "read", arguments: { path: `/src/file_${i}.rs` } };
    out.push({ role: "user", content: `Question ${i}: what does /src/file_${i}.rs do, and is it tested anywhere in this repository?`, timestamp: t });
    out.push({ role: "assistant", content: [{ type: "text", text: `Let me read /src/file_${i}.rs before answering question ${i}.` }, call], stopReason: "toolUse", timestamp: t + 1, ...META });
    out.push({ role: "toolResult", toolCallId: call.id, toolName: "read", content: [{ type: "text", text: `// file ${i}\npub fn run() -> Result<(), Error> { Ok(()) }\n#[test] fn runs() { run().unwrap() }` }], isError: false, timestamp: t + 2 });
    out.push({ role: "assistant", content: [{ type: "text", text: `It defines run(), which returns Ok(()), and a test named runs exercises it (answer ${i}).` }], stopReason: "stop", timestamp: t + 3, ...META });
  }
  return out.slice(0, size);
}

/** The model's answer to every prompt: a fresh pi-ai stream, all events pushed at once. */
function answer() {
  const stream = createAssistantMessageEventStream();
  const partial = { role: "assistant", content: [], stopReason: "stop", timestamp: 5, ...META };
  stream.push({ type: "start", partial });
  const text = { type: "text", text: "" };
  partial.content.push(text);
  for (const delta of ["Sure, ", "here it ", "is."]) {
    text.text += delta;
    stream.push({ type: "text_delta", contentIndex: 0, delta, partial });
  }
  stream.push({ type: "done", reason: "stop", message: partial });
  return stream;
}

/** Makers of a fresh Agent over `messages` with `.prompt(text)` answering when the run is over. */
export async function agents() {
  const specs = toolSpecs(WORKLOADS.full);
  const loaded = await loadTiny();
  if (!loaded) throw new Error("pkg/ is not built: run `npm run build`");
  const { mod } = loaded;
  const tools = new mod.ToolRegistry();
  for (const t of specs) tools.register({ name: t.name, description: t.description, parameters: t.parameters, execute: async (a) => t.run(a) });
  const piTools = specs.map((t) => ({ name: t.name, label: t.name, description: t.description, parameters: t.parameters, execute: async (_id, p) => t.run(p) }));
  return {
    tiny: (messages) => {
      const agent = new mod.Agent({ systemPrompt: SYSTEM_PROMPT, model: { stream: () => answer() }, tools, messages });
      return async (text) => {
        const r = await agent.prompt(text);
        if (r.reason !== "stop") throw new Error(`tiny-pi Agent: ${r.reason} ${r.error ?? ""}`);
        return agent.messages.length;
      };
    },
    pi: (messages) => {
      const agent = new piCore.Agent({
        initialState: { systemPrompt: SYSTEM_PROMPT, model: PI_MODEL, tools: piTools, messages },
        streamFn: () => answer(),
      });
      return async (text) => {
        await agent.prompt(text);
        if (agent.state.errorMessage) throw new Error(`pi-agent-core Agent: ${agent.state.errorMessage}`);
        return agent.state.messages.length;
      };
    },
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const cpuMs = (c) => (c.user + c.system) / 1000;

/** Medians over `rounds` samples, per loop and size: { tiny: { 40: { first_cpu_ms, next_cpu_ms, next_wall_ms, ... } } }. */
export async function promptCost({ sizes = [40, 4000], rounds = 5, progress = () => {} } = {}) {
  const make = await agents();
  const convs = Object.fromEntries(sizes.map((n) => [n, conversation(n)]));
  const batch = (n) => Math.max(2, Math.round(4000 / n)); // ~4,000 messages of agents a sample, at least 2
  const samples = {};
  const sample = async (lib, n) => {
    const s = { first_cpu: 0, next_cpu: 0, next_wall: 0 };
    const b = batch(n);
    for (let i = 0; i < b; i++) {
      const prompt = make[lib](convs[n]);
      let c0 = process.cpuUsage();
      let length = await prompt("And the next file?");
      s.first_cpu += cpuMs(process.cpuUsage(c0));
      const t0 = performance.now();
      c0 = process.cpuUsage();
      length = await prompt("And the one after it?");
      s.next_cpu += cpuMs(process.cpuUsage(c0));
      s.next_wall += performance.now() - t0;
      if (length !== n + 4) throw new Error(`${lib}: ${length} messages after two prompts on ${n}, expected ${n + 4}`);
    }
    return { first_cpu: s.first_cpu / b, next_cpu: s.next_cpu / b, next_wall: s.next_wall / b };
  };
  const libs = Object.keys(make);
  for (let r = -1; r < rounds; r++) {
    progress(r);
    const order = r % 2 ? [...libs].reverse() : libs;
    for (const n of sizes) for (const lib of order) {
      const x = await sample(lib, n);
      if (r >= 0) ((samples[lib] ??= {})[n] ??= []).push(x);
    }
  }
  const out = {};
  for (const lib of libs) {
    out[lib] = {};
    for (const n of sizes) {
      const xs = samples[lib][n];
      out[lib][n] = {
        first_cpu_ms: median(xs.map((x) => x.first_cpu)), next_cpu_ms: median(xs.map((x) => x.next_cpu)),
        next_wall_ms: median(xs.map((x) => x.next_wall)), next_cpu_min_ms: Math.min(...xs.map((x) => x.next_cpu)),
        next_cpu_max_ms: Math.max(...xs.map((x) => x.next_cpu)), agents_per_sample: batch(n),
      };
    }
  }
  return out;
}

/** The report's lines. */
export function promptLines(r, sizes = [40, 4000]) {
  const [small, big] = [Math.min(...sizes), Math.max(...sizes)];
  const f = (x) => x.toFixed(2);
  const lines = [];
  for (const lib of Object.keys(r)) {
    const a = r[lib][small], b = r[lib][big];
    lines.push(`    ${lib.padEnd(5)} ${sizes.map((n) => `${n} msgs: next ${f(r[lib][n].next_cpu_ms)} ms (${f(r[lib][n].next_cpu_min_ms)}..${f(r[lib][n].next_cpu_max_ms)}; wall ${f(r[lib][n].next_wall_ms)}), first ${f(r[lib][n].first_cpu_ms)} ms`).join(";  ")}` +
      `;  ${big}/${small}: next ${f(b.next_cpu_ms / a.next_cpu_ms)}x, first ${f(b.first_cpu_ms / a.first_cpu_ms)}x`);
  }
  if (r.tiny && r.pi) lines.push(`    tiny/pi, next prompt: ${sizes.map((n) => `${n} msgs ${f(r.tiny[n].next_cpu_ms / r.pi[n].next_cpu_ms)}`).join(", ")}`);
  return lines;
}

/** 30 prompts of one tiny-pi Agent over `size` messages, after one, under the inspector's CPU profiler. */
async function profilePrompts(size) {
  const fs = await import("node:fs");
  const path = await import("node:path");
  const { Session } = await import("node:inspector/promises");
  const prompt = (await agents()).tiny(conversation(size));
  await prompt("warm up");
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
  const t0 = performance.now();
  for (let i = 0; i < 30; i++) await prompt(`next ${i}`);
  const ms = (performance.now() - t0) / 30;
  const { profile } = await session.post("Profiler.stop");
  session.disconnect();
  const dir = new URL("./out/prof/", import.meta.url).pathname;
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `prompt-${size}.cpuprofile`);
  fs.writeFileSync(file, JSON.stringify(profile));
  console.log(`30 prompts at ${size}+ messages, ${ms.toFixed(1)} ms each (profiled); wrote ${file}; summary: node bench/profile-summary.mjs ${file}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = Object.fromEntries(process.argv.slice(2).map((a) => {
    const [key, value] = a.replace(/^--/, "").split("=");
    return [key, value ?? true];
  }));
  if (args.profile) {
    await profilePrompts(Math.max(...String(args.sizes ?? "4000").split(",").map(Number)));
    process.exit(0);
  }
  const sizes = String(args.sizes ?? "40,4000").split(",").map(Number);
  const rounds = Number(args.rounds ?? 5);
  const t0 = Date.now();
  const r = await promptCost({ sizes, rounds, progress: (i) => process.stderr.write(i < 0 ? "warm-up round ... " : `round ${i + 1}/${rounds} ... `) });
  process.stderr.write(`${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  console.log(`Agent.prompt, CPU ms per prompt (medians of ${rounds} rounds; "next" = the second prompt on an agent, "first" = its first):`);
  for (const l of promptLines(r, sizes)) console.log(l);
}
