#!/usr/bin/env node
// What the web target holds (issue 26, item 5): pkg/web's .wasm by crate, by function group and by tiny-pi module,
// and its JS by file. The shipped .wasm has no names, so this rebuilds its names from the module cargo wrote:
//
//   1. wasm-bindgen --target web on target/wasm32-unknown-unknown/release/tiny_pi.wasm (un-stripped: names kept);
//   2. wasm-opt with wasm-pack.toml's flags and -g (the same code as pkg/web's, with its names section kept);
//   3. checks that its code and data are pkg/web/tiny_pi_bg.wasm's, byte for byte in size (else the target/ module
//      is not the build in pkg/: rebuild);
//   4. twiggy top (`cargo install twiggy --locked`, in ~/.cargo/bin) lists every function and data segment with its size;
//      each is put in its crate (the crate of the code's `Self` type for `<T as Trait>::f`, of `T` for
//      `drop_in_place<T>`), a tiny_pi one also in its module (the longest module path of src/ its name starts with).
//
// Sizes are raw bytes of the optimised module; "gz" is that share of the shipped .wasm's gzip -9 size (a group's
// bytes compress about as the module does; data compresses better than code, so data's gz share is an upper bound).
//
//   node bench/size-table.mjs [--wasm=path/to/tiny_pi.wasm] [--json] [--write-results]   (~20 s to 1 min: wasm-opt is most of it)
// Needs a build first: `node scripts/build.mjs` (its cargo target dir: CARGO_TARGET_DIR, else target/).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import zlib from "node:zlib";
import { parse as parseToml } from "smol-toml";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..");
const OUT = path.join(HERE, "out", "size-table");
const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const m = /^--([^=]+)(?:=(.*))?$/.exec(a);
  return m ? [m[1], m[2] ?? true] : [a, true];
}));
const CARGO_BIN = path.join(process.env.CARGO_HOME ?? path.join(os.homedir(), ".cargo"), "bin");
const PATH = [path.join(ROOT, "node_modules", ".bin"), CARGO_BIN, process.env.PATH].join(path.delimiter);

function fail(step, what, todo) {
  console.error(`size-table: ${step} failed: ${what}\n  -> ${todo}`);
  process.exit(1);
}
const log = (s) => process.stderr.write(s);
function step(what, fn) {
  const t0 = Date.now();
  log(`- ${what} ... `);
  const r = fn();
  log(`${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  return r;
}
function run(cmd, argv, opts = {}) {
  const r = spawnSync(cmd, argv, { encoding: "utf8", maxBuffer: 1 << 28, env: { ...process.env, PATH }, ...opts });
  if (r.error) fail(cmd, r.error.message, cmd === "twiggy" ? "`cargo install twiggy --locked` (~3 min)" : "run `bash scripts/setup.sh build` and `npm ci`");
  if (r.status !== 0) fail(cmd, `exit ${r.status}: ${r.stderr.slice(-1500)}`, "see the message above");
  return r.stdout;
}

// --- 1-3: the named module -----------------------------------------------------------------------------------

const targetDir = process.env.CARGO_TARGET_DIR ? path.resolve(process.env.CARGO_TARGET_DIR) : path.join(ROOT, "target");
const input = path.resolve(args.wasm ?? path.join(targetDir, "wasm32-unknown-unknown", "release", "tiny_pi.wasm"));
const shipped = path.join(ROOT, "pkg", "web", "tiny_pi_bg.wasm");
if (!fs.existsSync(input)) fail("finding cargo's module", `${input} does not exist`, "build first: `node scripts/build.mjs` (set CARGO_TARGET_DIR as the build had it, or pass --wasm=)");
if (!fs.existsSync(shipped)) fail("finding pkg/web", `${shipped} does not exist`, "build first: `node scripts/build.mjs`");
fs.mkdirSync(OUT, { recursive: true });

const wasmOptFlags = parseToml(fs.readFileSync(path.join(ROOT, "wasm-pack.toml"), "utf8")).profile?.wasm_opt ?? [];
const named = path.join(OUT, "tiny_pi_named.wasm");
step(`wasm-bindgen --target web (names kept) on ${path.relative(ROOT, input)}`, () => run("wasm-bindgen", ["--target", "web", "--out-dir", path.join(OUT, "web"), input]));
step(`wasm-opt ${wasmOptFlags.join(" ")} -g (as scripts/build.mjs, names kept)`, () => run("wasm-opt", [path.join(OUT, "web", "tiny_pi_bg.wasm"), "-o", named, "-g", ...wasmOptFlags]));

const twiggy = (file) => JSON.parse(run("twiggy", ["top", "-n", "1000000", "-f", "json", file]));
const isCustom = (name) => /subsection$|^custom section /.test(name);
const items = step("twiggy top on the named module and on pkg/web's", () => twiggy(named));
const shippedItems = twiggy(shipped);
const codeAndData = (list) => list.filter((i) => !isCustom(i.name)).reduce((a, i) => a + i.shallow_size, 0);
const namedBytes = codeAndData(items), shippedBytes = codeAndData(shippedItems);
const sameBuild = namedBytes === shippedBytes;
if (!sameBuild) log(`WARNING: the named module's code and data are ${namedBytes} bytes, pkg/web's ${shippedBytes}: target/ holds another build than pkg/ (rebuild with node scripts/build.mjs); the table describes target/'s\n`);

// --- 4: grouping ---------------------------------------------------------------------------------------------

// tiny_pi's modules, from the source tree: src/a/b.rs and src/a/b/mod.rs are a::b.
const modules = new Set(fs.readdirSync(path.join(ROOT, "src"), { recursive: true })
  .filter((f) => f.endsWith(".rs") && f !== "lib.rs")
  .map((f) => f.replace(/\.rs$/, "").replace(/\/mod$/, "").split(path.sep).join("::")));

/** The path a (demangled) function name's code belongs to: `<T as Trait>::f` -> T, `drop_in_place<T>` -> T. */
function ownerPath(name) {
  let n = name.replace(/::h[0-9a-f]{16}$/, "");
  const drop = /^core::ptr::drop_in_place<(.*)>$/.exec(n);
  if (drop) n = drop[1];
  for (;;) {
    const s = n.replace(/^(<|&|\(|mut |dyn |\*const |\*mut )/, "");
    if (s === n) break;
    n = s;
  }
  return n.replace(/\[[0-9a-f]+\]/g, "");
}
const BUILTINS = /^(__|memcpy|memmove|memset|memcmp|round|fmod|ceil|floor|trunc|sqrt|pow|exp|log)/;
/** { crate, module } of one twiggy item; crate names also cover what is not a function. */
function classify(name) {
  if (/^data segment /.test(name)) return { crate: "(data segments)" };
  if (/^(export |import |type\[|elem\[|table\[|memory\[|global\[|func\[|start)/.test(name) || name === "code section headers") return { crate: "(module structure)" };
  if (!name.includes("::")) {
    if (/^__wbg|^__wbindgen|^__externref/.test(name)) return { crate: "wasm_bindgen" };
    if (BUILTINS.test(name)) return { crate: "compiler_builtins" };
    // #[wasm_bindgen] export shims (agent_prompt, runAgentLoop, ...): tiny_pi's bridge.
    return { crate: "tiny_pi", module: "wasm (export shims)" };
  }
  const owner = ownerPath(name);
  const m = /^([A-Za-z_][A-Za-z0-9_]*)::/.exec(owner);
  if (!m) return { crate: "core" }; // [T], str, u8, ...: core's impls
  const crate = m[1];
  if (crate !== "tiny_pi") return { crate, forTiny: name.includes("tiny_pi::") };
  const segs = owner.slice("tiny_pi::".length).split(/::|[\s<>]/);
  let module = "(crate root)";
  for (let k = 1; k <= segs.length; k++) if (modules.has(segs.slice(0, k).join("::"))) module = segs.slice(0, k).join("::");
  return { crate, module };
}

// Function groups: what each part of the module is for.
const GROUPS = [
  ["the loop (agent_loop, event, control, approval, signal)", (c) => c.crate === "tiny_pi" && /^(agent_loop|event|control|approval|signal)\b/.test(c.module)],
  ["the Agent and sessions (agent, session)", (c) => c.crate === "tiny_pi" && /^(agent|session)$/.test(c.module)],
  ["messages: types, readers, shapes, transcript checks (message, reading, shape, transcript, model)", (c) => c.crate === "tiny_pi" && /^(message|reading|shape|transcript|model)$/.test(c.module)],
  ["part three (usage, retry, compaction, estimate)", (c) => c.crate === "tiny_pi" && /^(usage|retry|compaction|estimate)$/.test(c.module)],
  ["tools and the registry (tools)", (c) => c.crate === "tiny_pi" && /^tools\b/.test(c.module)],
  ["JSON Schema validation (schema, without patterns)", (c) => c.crate === "tiny_pi" && /^schema\b/.test(c.module) && c.module !== "schema::pattern"],
  ["schema patterns (schema::pattern + regex_lite)", (c) => (c.crate === "tiny_pi" && c.module === "schema::pattern") || c.crate === "regex_lite"],
  ["trace checks (trace)", (c) => c.crate === "tiny_pi" && c.module === "trace"],
  ["bridge: exports and options (wasm::api, export shims)", (c) => c.crate === "tiny_pi" && /^wasm(::api| \()/.test(c.module)],
  ["bridge: conversion and transport (wasm::transport, wasm)", (c) => c.crate === "tiny_pi" && /^wasm/.test(c.module)],
  ["other tiny_pi", (c) => c.crate === "tiny_pi"],
  ["JSON (serde, serde_json, indexmap for key order, number formatting)", (c) => /^(serde|serde_core|serde_json|serde_wasm_bindgen|zmij|itoa|ryu|memchr|indexmap)$/.test(c.crate)],
  ["the JS boundary's runtime (wasm_bindgen, js_sys, futures, gloo)", (c) => /^(wasm_bindgen|wasm_bindgen_futures|js_sys|futures\w*|gloo\w*|pin_project\w*|slab)$/.test(c.crate)],
  ["Rust's std (core, alloc, std, hashbrown: formatting, collections, sorting, panics)", (c) => /^(core|alloc|std|__rustc|hashbrown|foldhash|compiler_builtins)$/.test(c.crate)],
  ["the allocator (talc)", (c) => c.crate === "talc"],
  ["data segments (strings, tables)", (c) => c.crate === "(data segments)"],
  ["module structure (types, imports, exports, tables)", (c) => c.crate === "(module structure)"],
  ["other crates", () => true],
];

const code = items.filter((i) => !isCustom(i.name));
const shippedRaw = fs.statSync(shipped).size;
const shippedGz = zlib.gzipSync(fs.readFileSync(shipped), { level: 9 }).length;
const gzOf = (bytes) => (bytes / namedBytes) * shippedGz;
const add = (map, key, bytes, extra = 0) => {
  const e = map.get(key) ?? { bytes: 0, items: 0, for_tiny: 0 };
  e.bytes += bytes;
  e.items += 1;
  e.for_tiny += extra;
  map.set(key, e);
};
const byCrate = new Map(), byModule = new Map(), byGroup = new Map();
for (const i of code) {
  const c = classify(i.name);
  add(byCrate, c.crate, i.shallow_size, c.forTiny ? i.shallow_size : 0);
  if (c.crate === "tiny_pi") add(byModule, c.module, i.shallow_size);
  add(byGroup, GROUPS.find(([, test]) => test(c))[0], i.shallow_size);
}
const sorted = (map) => [...map].sort((a, b) => b[1].bytes - a[1].bytes).map(([key, e]) => ({ key, ...e, gz: gzOf(e.bytes) }));

// The JS a page loads with it: wasm-bindgen's glue and the bridge's snippets.
const webDir = path.join(ROOT, "pkg", "web");
const js = fs.readdirSync(webDir, { recursive: true }).filter((f) => /\.(js|mjs)$/.test(f)).map((f) => {
  const buf = fs.readFileSync(path.join(webDir, f));
  return { file: f, raw: buf.length, gz: zlib.gzipSync(buf, { level: 9 }).length };
});
const jsGz = js.reduce((a, f) => a + f.gz, 0), jsRaw = js.reduce((a, f) => a + f.raw, 0);

// The lesson entry (pkg/lesson: all of the above, ScriptedModel and the trace checks, in one module), which a
// lesson page loads instead of pkg/web: its .wasm and JS, gzip -9.
const lessonDir = path.join(ROOT, "pkg", "lesson");
const lessonGz = fs.existsSync(lessonDir)
  ? fs.readdirSync(lessonDir, { recursive: true }).filter((f) => /\.(js|wasm)$/.test(f) && !/^(index|node)\.js$/.test(f))
    .reduce((a, f) => a + zlib.gzipSync(fs.readFileSync(path.join(lessonDir, f)), { level: 9 }).length, 0)
  : null;

const result = {
  date: new Date().toISOString(), input: path.relative(ROOT, input), same_build_as_pkg: sameBuild,
  wasm: { raw: shippedRaw, gz: shippedGz, code_and_data: shippedBytes }, js: { files: js, raw: jsRaw, gz: jsGz },
  total_gz: shippedGz + jsGz, lesson_gz: lessonGz, by_group: sorted(byGroup), by_crate: sorted(byCrate), by_module: sorted(byModule),
  top_functions: code.slice().sort((a, b) => b.shallow_size - a.shallow_size).slice(0, 25).map((i) => ({ name: i.name, bytes: i.shallow_size })),
};
fs.writeFileSync(path.join(OUT, "size-table.json"), JSON.stringify(result, null, 2));

// --- report --------------------------------------------------------------------------------------------------

const kb = (b) => (b / 1000).toFixed(1);
const pct = (b) => `${((b / namedBytes) * 100).toFixed(1)}%`;
const table = (title, rows, extra) => {
  const out = [`| ${title} | raw KB | share | ~gz KB |${extra ? ` ${extra[0]} |` : ""}`, `|---|---:|---:|---:|${extra ? "---:|" : ""}`];
  for (const r of rows) out.push(`| ${r.key} | ${kb(r.bytes)} | ${pct(r.bytes)} | ${kb(r.gz)} |${extra ? ` ${extra[1](r)} |` : ""}`);
  return out.join("\n");
};
const lines = [
  `The web target (pkg/web), gzip -9: ${kb(shippedGz + jsGz)} KB = tiny_pi_bg.wasm ${kb(shippedGz)} KB (${kb(shippedRaw)} KB raw) + JS ${kb(jsGz)} KB (${js.map((f) => `${path.basename(f.file)} ${kb(f.gz)}`).join(", ")}).` +
    (lessonGz === null ? "" : ` The lesson entry (pkg/lesson: all of it with ScriptedModel and the trace checks, what a lesson page loads instead): ${kb(lessonGz)} KB.`),
  `The .wasm's code and data, ${kb(namedBytes)} KB raw${sameBuild ? " (the same sizes as pkg/web's module)" : " (NOT pkg/web's build: rebuild)"}:`,
  "",
  table("function group", sorted(byGroup)),
  "",
  table("crate", sorted(byCrate).filter((r) => r.bytes >= 500), ["of it generic code for tiny_pi's types, KB", (r) => (r.for_tiny ? kb(r.for_tiny) : "")]),
  `(crates under 0.5 KB: ${sorted(byCrate).filter((r) => r.bytes < 500).map((r) => r.key).join(", ") || "none"})`,
  "",
  table("tiny_pi module", sorted(byModule).filter((r) => r.bytes >= 1000)),
  `(modules under 1 KB: ${sorted(byModule).filter((r) => r.bytes < 1000).map((r) => `${r.key} ${kb(r.bytes)}`).join(", ") || "none"})`,
];
if (args.json) console.log(JSON.stringify(result, null, 2));
else console.log(lines.join("\n"));

// --write-results: the tables into bench/RESULTS.md, between markers (crates of 3 KB or more, modules of 6 KB or more).
if (args["write-results"]) {
  if (!sameBuild) fail("write-results", "target/'s module is not the build in pkg/", "rebuild with `node scripts/build.mjs`, then rerun");
  const file = path.join(HERE, "RESULTS.md");
  const START = "<!-- size-table:start (written by bench/size-table.mjs --write-results) -->", END = "<!-- size-table:end -->";
  const small = (rows, limit) => rows.filter((r) => r.bytes < limit).map((r) => r.key).join(", ");
  const body = [START, "", `Measured ${result.date} with \`node bench/size-table.mjs --write-results\`. ${lines[0]}`,
    `The .wasm's code and data: ${kb(namedBytes)} KB raw; "~gz" is each part's share of the .wasm's ${kb(shippedGz)} KB gzipped.`, "",
    table("function group", sorted(byGroup)), "",
    table("crate", sorted(byCrate).filter((r) => r.bytes >= 3000), ["of it, generic code for tiny_pi's types", (r) => (r.for_tiny ? kb(r.for_tiny) : "")]),
    `(under 3 KB: ${small(sorted(byCrate), 3000)})`, "",
    table("tiny_pi module", sorted(byModule).filter((r) => r.bytes >= 6000)),
    `(under 6 KB each, of ${kb(sorted(byModule).reduce((a, r) => a + r.bytes, 0))} KB for all modules: ${small(sorted(byModule), 6000)})`, "", END].join("\n");
  const old = fs.readFileSync(file, "utf8");
  const i = old.indexOf(START), j = old.indexOf(END);
  fs.writeFileSync(file, i >= 0 && j > i ? old.slice(0, i) + body + old.slice(j + END.length) : old + "\n" + body + "\n");
  log(`wrote ${path.relative(ROOT, file)}\n`);
}
log(`wrote ${path.relative(ROOT, path.join(OUT, "size-table.json"))}; the named module is ${path.relative(ROOT, named)} (twiggy top/dominators/paths on it for more)\n`);
