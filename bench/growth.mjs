// How a turn's cost grows with the transcript, one loop alone in this process (issue 14's growth target):
// N = 50 and N = 1000 runs of one workload, interleaved, each sample's process CPU time per model request;
// medians over the rounds. `bench/run.mjs` reads the same growth with every leg sharing one V8 heap, so a
// leg's samples also pay for the collector's work on what the other legs left (its floor loop, which keeps
// nothing but the transcript, grows 1.6-2.2x there); here the heap holds this loop's runs only.
//
//   node bench/growth.mjs [tiny|pi] [full|compact|thinking] [rounds=15]
import * as piCore from "@mariozechner/pi-agent-core";
import { WORKLOADS, Script, toolSpecs, userMessage, SYSTEM_PROMPT } from "./workload.mjs";
import { loadTiny, PI_MODEL } from "./legs.mjs";

const [legName = "tiny", workloadName = "full", roundsArg = "15"] = process.argv.slice(2);
const workload = WORKLOADS[workloadName];
const rounds = Number(roundsArg);
if (!workload || !["tiny", "pi"].includes(legName) || !(rounds >= 1)) {
  console.error("usage: node bench/growth.mjs [tiny|pi] [full|compact|thinking] [rounds=15]");
  process.exit(2);
}
const specs = toolSpecs(workload);
let run;
if (legName === "tiny") {
  const { mod } = await loadTiny();
  const tools = new mod.ToolRegistry();
  for (const t of specs) tools.register({ name: t.name, description: t.description, parameters: t.parameters, execute: async (a) => t.run(a) });
  run = async (n) => {
    const script = new Script(n, workload);
    const r = await mod.runAgentLoop({ context: { systemPrompt: SYSTEM_PROMPT, messages: [userMessage()] }, model: { stream: () => script.nextStream() }, tools, maxSteps: n + 1, onEvent: () => {} });
    if (r.reason !== "stop") throw new Error(`tiny: ${r.reason} ${r.error ?? ""}`);
  };
} else {
  const tools = specs.map((t) => ({ name: t.name, label: t.name, description: t.description, parameters: t.parameters, execute: async (_id, p) => t.run(p) }));
  run = async (n) => {
    const script = new Script(n, workload);
    const stream = piCore.agentLoop([userMessage()], { systemPrompt: SYSTEM_PROMPT, messages: [], tools }, { model: PI_MODEL, convertToLlm: workload.convertToLlm }, undefined, () => script.nextStream());
    for await (const _ of stream);
  };
}

/** CPU µs per model request, over ~1,000 turns of runs of `n` turns. */
async function sample(n) {
  const batch = Math.max(1, Math.round(1000 / n));
  const start = process.cpuUsage();
  for (let i = 0; i < batch; i++) await run(n);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / batch / (n + 1);
}

for (let i = 0; i < 3; i++) await sample(50), await sample(1000); // warm-up
const small = [], large = [];
for (let r = 0; r < rounds; r++) small.push(await sample(50)), large.push(await sample(1000));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${legName} ${workload.name}: a turn costs ${median(small).toFixed(1)} µs (CPU) at N=50, ${median(large).toFixed(1)} µs at N=1000: growth ${(median(large) / median(small)).toFixed(2)}x (${rounds} rounds)`);
