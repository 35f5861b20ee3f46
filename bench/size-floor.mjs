#!/usr/bin/env node
// What bounds the size of tiny-pi's wasm (issue 26: the web target, wasm + JS, <= 110 KB gzipped).
//
// Builds bench/size-floor/, a cdylib over tiny-pi's core with the JS bridge turned off (tiny-pi's `js`
// feature), in two variants and two profiles, and sizes each as the package is sized: wasm-bindgen
// `--target web`, then wasm-opt with wasm-pack.toml's flags, then gzip -9.
//   transcript  the messages of SPEC §1 as serde-typed Rust values: parsed from JSON text, written back
//   core        that, plus the loop, a ToolRegistry with one schema-checked Rust tool, and every event written
//   logic       the same run with no JSON read or written around it: messages made in Rust, events counted
//   profile release   as the package is built ("s" everywhere, talc, wasm-pack.toml's rustflags)
//   profile smallest  "z" everywhere, the smallest code rustc makes
// Each build is run once in Node on a two-step script before it is sized, so what is measured is working code.
//
//   node bench/size-floor.mjs      (~1.5 min cold, on a 2-core machine; needs `npm run build`'s tools)
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { fileURLToPath, pathToFileURL } from "node:url";
import zlib from "node:zlib";
import { parse as parseToml } from "smol-toml";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const crateDir = path.join(root, "bench", "size-floor");
const outRoot = path.join(crateDir, "target", "sized");
const binDirs = [path.join(root, "node_modules", ".bin"), path.join(process.env.CARGO_HOME ?? path.join(process.env.HOME ?? "", ".cargo"), "bin")];
const env = { ...process.env, PATH: [...binDirs, process.env.PATH].join(path.delimiter) };

function fail(step, message, hint) {
  console.error(`\nsize-floor: FAILED at step "${step}": ${message}`);
  if (hint) console.error(`size-floor: what to do: ${hint}`);
  process.exit(1);
}

async function step(name, fn) {
  const start = performance.now();
  console.log(`==> ${name}`);
  let result;
  try {
    result = await fn();
  } catch (err) {
    fail(name, err?.message ?? String(err), err?.hint);
  }
  console.log(`    ${name}: ${((performance.now() - start) / 1000).toFixed(1)}s`);
  return result;
}

function run(cmd, args, cwd = root, extraEnv = {}) {
  const r = spawnSync(cmd, args, { cwd, env: { ...env, ...extraEnv }, stdio: ["ignore", "inherit", "inherit"] });
  if (r.error) throw Object.assign(new Error(`${cmd}: ${r.error.message}`), { hint: "run `npm run build` once: it installs the tools" });
  if (r.status !== 0) throw new Error(`\`${cmd} ${args.join(" ")}\` exited with ${r.status ?? r.signal}`);
}

const t0 = performance.now();
const kb = (n) => (n / 1000).toFixed(1); // as bench/run.mjs: KB = 1000 bytes
const gz = (buf) => zlib.gzipSync(buf, { level: 9 }).length;
const packConfig = parseToml(fs.readFileSync(path.join(root, "wasm-pack.toml"), "utf8"));
const wasmOptArgs = packConfig.profile?.wasm_opt;
// The package's own rustc flags (LLVM's inlining limits), for the "release" profile as the package is built.
const packRustflags = packConfig.profile?.rustflags ?? [];
if (!Array.isArray(wasmOptArgs)) fail("read wasm-pack.toml", "[profile] wasm_opt is not a list of flags", "size-floor sizes as the package is built, with wasm-opt");

await step("copy Cargo.lock (the shipped versions)", () => {
  fs.copyFileSync(path.join(root, "Cargo.lock"), path.join(crateDir, "Cargo.lock"));
});

// One turn with a tool call, then a stop: the core's whole path runs.
const messages = JSON.stringify([{ role: "user", content: "read the README", timestamp: 1 }]);
const script = JSON.stringify([
  { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "read", arguments: { path: "README.md" } }], stopReason: "toolUse", timestamp: 2 },
  { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop", timestamp: 3 },
]);

const rows = [];
let coreEvents = null;
for (const profile of ["release", "smallest"]) {
  for (const variant of ["transcript", "core", "logic"]) {
    const name = `${variant}, profile ${profile}`;
    const out = path.join(outRoot, `${variant}-${profile}`);
    const row = await step(`build and size: ${name}`, async () => {
      const features = { transcript: [], core: ["--features", "loop"], logic: ["--features", "logic"] }[variant];
      const rustflags = [process.env.RUSTFLAGS, ...(profile === "release" ? packRustflags : [])].filter(Boolean).join(" ");
      run("cargo", ["build", "--quiet", "--lib", "--target", "wasm32-unknown-unknown", "--profile", profile, ...features], crateDir, { RUSTFLAGS: rustflags });
      const built = path.join(crateDir, "target", "wasm32-unknown-unknown", profile, "tiny_pi_size_floor.wasm");
      fs.rmSync(out, { recursive: true, force: true });
      run("wasm-bindgen", ["--target", "web", "--out-dir", out, built]);
      const wasm = path.join(out, "tiny_pi_size_floor_bg.wasm");
      run("wasm-opt", [wasm, "-o", wasm, ...wasmOptArgs]);
      // Working code only: the build must do what it claims before its size counts.
      const glue = await import(pathToFileURL(path.join(out, "tiny_pi_size_floor.js")).href + `?${variant}-${profile}`);
      glue.initSync({ module: fs.readFileSync(wasm) });
      const answer = { transcript: () => glue.run(messages), core: () => glue.run(messages, script), logic: () => glue.run("README.md") }[variant]();
      const ok = {
        transcript: () => isDeepStrictEqual(JSON.parse(answer), JSON.parse(messages)),
        core: () => /"reason":"stop"/.test(answer) && /"toolCallId":"c1"/.test(answer),
        // the same run, so as many events as the core build wrote out (one per line after the result)
        logic: () => answer === coreEvents,
      }[variant]();
      if (!ok) throw new Error(`the ${name} build answered: ${String(answer).slice(0, 300)}`);
      if (variant === "core") coreEvents = answer.split("\n").length - 1;
      const w = fs.readFileSync(wasm);
      const j = fs.readFileSync(path.join(out, "tiny_pi_size_floor.js"));
      return { name, wasm: w.length, wasmGz: gz(w), js: j.length, jsGz: gz(j) };
    });
    rows.push(row);
  }
}

let shipped = null;
// The package's one .wasm (every folder of pkg/ loads web/'s).
const pkgDir = path.join(root, "pkg", "web");
if (fs.existsSync(pkgDir)) {
  const w = fs.readFileSync(path.join(pkgDir, "tiny_pi_bg.wasm"));
  shipped = { name: "tiny-pi as shipped (pkg/web, with the bridge)", wasm: w.length, wasmGz: gz(w) };
}

console.log("\nSize floor of tiny-pi's core, no JS bridge (wasm-opt as wasm-pack.toml; gzip -9):");
console.log(`  ${"build".padEnd(52)} ${"wasm raw".padStart(9)} ${"wasm gz".padStart(8)} ${"with its JS, gz".padStart(20)}`);
for (const r of [...rows, ...(shipped ? [shipped] : [])]) {
  const js = r.jsGz === undefined ? "" : `${kb(r.wasmGz + r.jsGz)} KB`;
  console.log(`  ${r.name.padEnd(52)} ${kb(r.wasm).padStart(6)} KB ${kb(r.wasmGz).padStart(5)} KB ${js.padStart(20)}`);
}
console.log("  target (issue 26): the web target, wasm + JS, <= 110 KB gzipped");
const latest = path.join(root, "bench", "out");
fs.mkdirSync(latest, { recursive: true });
fs.writeFileSync(path.join(latest, "size-floor.json"), JSON.stringify({ rows, shipped }, null, 2) + "\n");
console.log(`\nnode bench/size-floor.mjs  (${((performance.now() - t0) / 1000).toFixed(0)} s)\nwrote bench/out/size-floor.json`);
