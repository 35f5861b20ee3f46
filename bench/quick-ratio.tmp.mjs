// quick A/B: tiny vs pi on the full workload (not committed)
import * as piCore from "@mariozechner/pi-agent-core";
import { Script, WORKLOADS, toolSpecs, userMessage, SYSTEM_PROMPT } from "./workload.mjs";
import { PI_MODEL } from "./legs.mjs";
const tp = await import(process.env.TINY ?? "/work/main/pkg/node/tiny_pi.mjs");
const workload = WORKLOADS[process.env.W ?? "full"];
const specs = toolSpecs(workload);
const piTools = specs.map((t) => ({ name: t.name, label: t.name, description: t.description, parameters: t.parameters, execute: async (_id, p) => t.run(p) }));
const reg = new tp.ToolRegistry();
for (const t of specs) reg.register({ name: t.name, description: t.description, parameters: t.parameters, execute: async (a) => t.run(a) });
const N = Number(process.env.N ?? 200);
async function pi() { const script = new Script(N, workload); const ctx = { systemPrompt: SYSTEM_PROMPT, messages: [], tools: piTools };
  const s = piCore.agentLoop([userMessage()], ctx, { model: PI_MODEL, convertToLlm: workload.convertToLlm }, undefined, () => script.nextStream()); for await (const _ of s); await s.result(); }
async function tiny() { const script = new Script(N, workload); let ev = 0; const r = await tp.runAgentLoop({ context: { systemPrompt: SYSTEM_PROMPT, messages: [userMessage()] }, model: { stream: () => script.nextStream() }, tools: reg, maxSteps: N + 1, onEvent: () => { ev++; } }); if (r.reason !== "stop") throw new Error(r.reason + r.error); }
const cpu = async (f) => { const c = process.cpuUsage(); await f(); const d = process.cpuUsage(c); return (d.user + d.system) / 1000; };
for (let i = 0; i < 3; i++) { await pi(); await tiny(); }
const a = [], b = [];
for (let i = 0; i < 7; i++) { a.push(await cpu(pi)); b.push(await cpu(tiny)); }
const med = (x) => x.sort((p, q) => p - q)[x.length >> 1];
console.log(`N=${N} ${workload.name}: pi ${med(a).toFixed(1)} ms, tiny ${med(b).toFixed(1)} ms, tiny/pi ${(med(b) / med(a)).toFixed(2)}`);
