import { Script, TOOL_SPECS, userMessage } from "./workload.mjs";
const tp = await import("/work/main/pkg/node/tiny_pi.mjs");
const tools = new tp.ToolRegistry();
for (const t of TOOL_SPECS) tools.register({ name: t.name, description: t.description, parameters: t.parameters, execute: (a) => t.run(a) });
const N = 100;
async function once(calls) { const t0 = performance.now(); for (let b = 0; b < 4; b++) { const s = new Script(N, { deltas: 0, calls }); const x = await tp.runAgentLoop({ context: { messages: [userMessage()] }, model: { stream: () => s.nextStream() }, tools, maxSteps: N + 1, onEvent: () => {} }); if (x.reason !== "stop") throw new Error(x.error); } return (performance.now() - t0) * 1000 / 4 / (N + 1); }
const d = []; for (let r = 0; r < 25; r++) { const a = await once(1), b = await once(6); if (r > 4) d.push((b - a) / 5); }
d.sort((x, y) => x - y); console.log(`per call ${d[d.length >> 1].toFixed(2)} us (p25 ${d[d.length >> 2].toFixed(2)})`);
