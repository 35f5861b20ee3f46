// What the bench's scripts share about the loops they time: tiny-pi loaded as an app loads it, and the model
// description pi-agent-core is given.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** pi-agent-core's model: a description only (the bench's script is the stream). */
export const PI_MODEL = { id: "bench-model", name: "bench", api: "bench", provider: "bench", baseUrl: "", reasoning: false,
  input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1e6, maxTokens: 1e5 };

/**
 * tiny-pi as an app imports it: `import ... from "tiny-pi"` (linked by `npm install --prefix bench`); if the
 * name is not linked, the same entry resolved by hand from pkg/package.json's exports (condition "node");
 * `null` when there is no pkg/. BENCH_TINY=/path/to/tiny_pi.js: another build of the glue, e.g. to profile with
 * wasm function names: `BENCH_TINY=bench/out/size-table/web/tiny_pi.js BENCH_TINY_WASM=bench/out/size-table/tiny_pi_named.wasm`
 * (after `node bench/size-table.mjs`: pkg/web's code with its names). Throws when pkg/package.json names no node entry.
 */
export async function loadTiny() {
  if (process.env.BENCH_TINY) {
    const file = path.resolve(process.env.BENCH_TINY);
    const mod = await import(pathToFileURL(file).href);
    // A `--target web` glue (e.g. bench/size-table.mjs's, over its module with names): initialised here with
    // BENCH_TINY_WASM's bytes, else the .wasm beside it.
    if (typeof mod.initSync === "function") {
      const wasm = path.resolve(process.env.BENCH_TINY_WASM ?? file.replace(/\.js$/, "_bg.wasm"));
      mod.initSync({ module: fs.readFileSync(wasm) });
    }
    return { mod: mod.runAgentLoop ? mod : mod.default, via: `BENCH_TINY=${process.env.BENCH_TINY}${process.env.BENCH_TINY_WASM ? ` BENCH_TINY_WASM=${process.env.BENCH_TINY_WASM}` : ""}`, entry: file };
  }
  try {
    const mod = await import("tiny-pi");
    return { mod: mod.runAgentLoop ? mod : mod.default, via: 'import "tiny-pi"', entry: fileURLToPath(import.meta.resolve("tiny-pi")) };
  } catch (err) {
    if (err.code !== "ERR_MODULE_NOT_FOUND" && err.code !== "MODULE_NOT_FOUND") throw err;
  }
  const pkgJson = path.join(ROOT, "pkg/package.json");
  if (!fs.existsSync(pkgJson)) return null;
  const pj = JSON.parse(fs.readFileSync(pkgJson, "utf8"));
  const node = pj.exports?.["."]?.node;
  const entry = node?.import?.default ?? node?.default ?? pj.main;
  if (!entry) throw new Error("pkg/package.json names no node entry");
  const file = path.join(ROOT, "pkg", entry);
  const mod = await import(pathToFileURL(file).href);
  return { mod: mod.runAgentLoop ? mod : mod.default, via: path.relative(ROOT, file), entry: file };
}
