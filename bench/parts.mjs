// What SPEC part three costs when it is set but never triggered (issue 28, item 6): tiny-pi's runAgentLoop on one
// workload, without and with `budget`, `retry` and `compaction` (as bench/run.mjs's `parts` leg: a budget no
// run reaches, a retry policy for errors that never come, compaction above any context with the core's own
// token estimate).
//
// A 2% target is below what interleaved medians resolve on a shared machine (bench/run.mjs's A/A leg `again`
// reads 0.94-1.09 against `tiny`), so this times the two in ABBA quads: plain, parts, parts, plain, each sample
// ~1,000 turns of CPU time (process.cpuUsage); a quad's ratio (b1 + b2) / (a1 + a2) cancels a linear drift in
// load and the order. The same quads of plain against plain (an A/A) give the noise floor of that ratio.
//
//   node bench/parts.mjs [--workload=full] [--n=200] [--quads=25]
import { loadTiny } from "./legs.mjs";
import { Script, SYSTEM_PROMPT, toolSpecs, userMessage, WORKLOADS } from "./workload.mjs";

export const UNTRIGGERED_PARTS = {
  budget: { maxTokens: 1e12, maxCost: 1e9 },
  retry: { maxRetries: 3 },
  compaction: { maxContextTokens: 1e12, summarize: async () => { throw new Error("compaction must not run in the bench"); } },
};

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

/** { parts: { median, q1, q3 }, aa: { ... }, plain_us } for `quads` ABBA quads of N-turn runs. */
export async function partsCost({ workload = WORKLOADS.full, n = 200, quads = 25, progress = () => {} } = {}) {
  const loaded = await loadTiny();
  if (!loaded) throw new Error("pkg/ is not built: run `npm run build`");
  const { mod } = loaded;
  const tools = new mod.ToolRegistry();
  for (const t of toolSpecs(workload)) tools.register({ name: t.name, description: t.description, parameters: t.parameters, execute: async (a) => t.run(a) });
  const run = async (options) => {
    const script = new Script(n, workload);
    const r = await mod.runAgentLoop({
      context: { systemPrompt: SYSTEM_PROMPT, messages: [userMessage()] },
      model: { stream: () => script.nextStream() }, tools, maxSteps: n + 1, onEvent: () => {}, ...options,
    });
    if (r.reason !== "stop") throw new Error(`parts bench: the run ended with ${r.reason} ${r.error ?? ""}`);
  };
  const batch = Math.max(1, Math.round(1000 / n));
  /** CPU µs per turn over `batch` runs. */
  const sample = async (options) => {
    const c0 = process.cpuUsage();
    for (let i = 0; i < batch; i++) await run(options);
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / batch / (n + 1);
  };
  const plain = {}, plainToo = {};
  for (let i = 0; i < 3; i++) await sample(plain), await sample(UNTRIGGERED_PARTS); // JIT warm-up
  const ratios = { parts: [], aa: [] }, plainUs = [];
  const quad = async (a, b) => {
    const a1 = await sample(a), b1 = await sample(b), b2 = await sample(b), a2 = await sample(a);
    plainUs.push(a1, a2);
    return (b1 + b2) / (a1 + a2);
  };
  for (let q = 0; q < quads; q++) {
    progress(q);
    ratios.parts.push(await quad(plain, UNTRIGGERED_PARTS));
    ratios.aa.push(await quad(plain, plainToo));
  }
  const summary = (xs) => ({ median: median(xs), q1: quantile(xs, 0.25), q3: quantile(xs, 0.75) });
  return { workload: workload.name, n, quads, parts: summary(ratios.parts), aa: summary(ratios.aa), plain_us: median(plainUs) };
}

export function partsLines(r) {
  const f = (x) => x.toFixed(3);
  return [
    `  ${r.workload}, N=${r.n}, ${r.quads} ABBA quads (CPU time; a turn without them ${r.plain_us.toFixed(1)} µs):`,
    `    with / without budget, retry and compaction: ${f(r.parts.median)} (quartiles ${f(r.parts.q1)}..${f(r.parts.q3)})`,
    `    the same options twice (A/A, the noise floor): ${f(r.aa.median)} (quartiles ${f(r.aa.q1)}..${f(r.aa.q3)})`,
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = Object.fromEntries(process.argv.slice(2).map((a) => {
    const [key, value] = a.replace(/^--/, "").split("=");
    return [key, value ?? true];
  }));
  const workload = WORKLOADS[args.workload ?? "full"];
  if (!workload) throw new Error(`no workload ${args.workload}: choose one of ${Object.keys(WORKLOADS).join(", ")}`);
  const t0 = Date.now();
  const r = await partsCost({ workload, n: Number(args.n ?? 200), quads: Number(args.quads ?? 25), progress: (q) => process.stderr.write(`\rquad ${q + 1} `) });
  process.stderr.write(`(${((Date.now() - t0) / 1000).toFixed(1)} s)\n`);
  console.log("Part three set but never triggered (bench/parts.mjs):");
  for (const l of partsLines(r)) console.log(l);
}
