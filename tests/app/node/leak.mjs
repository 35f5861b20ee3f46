// Issue 5, item 4: 10,000 back-to-back README round trips in one instance, sampling the wasm memory
// and the JS heap (after a forced GC) every 1,000 runs. Run with `node --expose-gc leak.mjs [runs] [--no-free]`
// (--no-free: never call free(), leaving the wasm objects to the package's finalizers);
// prints one JSON line: { samples: [{ runs, wasm, heap }], ok }.
import { readmeRoundTrip } from "../round-trip.mjs";

// The nodejs glue instantiates its module synchronously on import; keep the instance to read its memory.
const instances = [];
const Original = WebAssembly.Instance;
WebAssembly.Instance = function Instance(module, imports) {
  const instance = new Original(module, imports);
  instances.push(instance);
  return instance;
};
WebAssembly.Instance.prototype = Original.prototype;

const tinyPi = { ...(await import("tiny-pi")), ScriptedModel: (await import("tiny-pi/lesson")).ScriptedModel };
// Both instances' memory: the run's (tiny-pi) and its ScriptedModel's (tiny-pi/lesson).
const memory = () => {
  const memories = instances.map((i) => i.exports.memory).filter((m) => m instanceof WebAssembly.Memory);
  if (memories.length !== 2) throw new Error(`found ${memories.length} wasm memories, not tiny-pi's and tiny-pi/lesson's`);
  return memories.reduce((sum, m) => sum + m.buffer.byteLength, 0);
};

const total = Number(process.argv[2] ?? 10_000);
const free = !process.argv.includes("--no-free");
const every = Math.max(1, Math.floor(total / 10));
const samples = [];
let failures = 0;
for (let i = 1; i <= total; i += 1) {
  const { problems } = await readmeRoundTrip(tinyPi, { free });
  if (problems.length) failures += 1;
  if (i % every === 0) {
    globalThis.gc();
    await new Promise((r) => setImmediate(r)); // let finalizers run
    globalThis.gc();
    samples.push({ runs: i, wasm: memory(), heap: process.memoryUsage().heapUsed });
  }
}
console.log(JSON.stringify({ samples, failures }));
