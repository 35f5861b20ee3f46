#!/usr/bin/env node
// Builds the npm package `tiny-pi` into pkg/ as declared by wasm-pack.toml.
// One `wasm-pack build` per [[build]] with a target (cargo's build is shared, so
// only the first one compiles); the folders share one .wasm (wasm-bindgen writes
// the same bytes for every target, which is checked), optimised once by wasm-opt
// from the npm `binaryen` package; then the wrappers and pkg/package.json.
// wasm-pack runs with `--mode no-install --no-opt`, so it never downloads a tool.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parse as parseToml } from "smol-toml";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const binDirs = [path.join(root, "node_modules", ".bin"), path.join(process.env.CARGO_HOME ?? path.join(process.env.HOME ?? "", ".cargo"), "bin")];
const env = { ...process.env, PATH: [...binDirs, process.env.PATH].join(path.delimiter) };

function fail(step, message, hint) {
  console.error(`\nbuild: FAILED at step "${step}": ${message}`);
  if (hint) console.error(`build: what to do: ${hint}`);
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

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, env, stdio: "inherit", ...opts });
  if (r.error) throw Object.assign(new Error(`${cmd}: ${r.error.message}`), { hint: "run `bash scripts/setup.sh build` to install the tools" });
  if (r.status !== 0) throw new Error(`\`${cmd} ${args.join(" ")}\` exited with ${r.status ?? r.signal}`);
  return r;
}

function output(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, env, encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
}

const listFiles = (dir) => (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).map((f) => path.join(dir, f)) : []);

// The snippets are ours (src/wasm/transport/glue.js): only `export function`, `export async function` and
// `export const` declarations, which this turns into `module.exports`; anything else is refused rather
// than half converted.
function esmToCommonJs(text, name) {
  const names = [];
  const body = text.replace(/^export (async function|function|const) ([A-Za-z_$][\w$]*)/gm, (_, kind, id) => {
    names.push(id);
    return `${kind} ${id}`;
  });
  if (/^\s*(import|export)\b/m.test(body)) throw new Error(`${name}: only \`export function\` can be converted to CommonJS`);
  return `"use strict";\n${body}\nmodule.exports = { ${names.join(", ")} };\n`;
}

// Node 20's V8 (11.x) dies in its deoptimizer ("Fatal error ... unreachable code" in
// Deoptimizer::DoComputeBuiltinContinuation, SIGTRAP) when optimized JS that inlined a call into wasm is
// deoptimized while that call runs; any long run with garbage collection in between can hit it
// (RELIABILITY.md, "Node 20"). Turning that one inlining off is the cure; later V8s are left alone.
// A runtime that only looks like Node (or cannot set flags) loads the package all the same. `v8` is how the
// entry reaches node:v8 (CommonJS: require; the lesson entry's ES module: its import).
const nodeV8Guard = (v8) => `try {
  if (/^11\\./.test(process.versions.v8 || "")) ${v8}.setFlagsFromString("--no-turbo-inline-js-wasm-calls");
} catch (_) {}
`;
const NODE_V8_GUARD = nodeV8Guard(`require("node:v8")`);

const readToml = (file) => parseToml(fs.readFileSync(path.join(root, file), "utf8"));
const write = (file, text) => fs.writeFileSync(file, text.endsWith("\n") ? text : text + "\n");
const rel = (...parts) => "./" + path.posix.join(...parts);

const t0 = performance.now();

// ---- configuration --------------------------------------------------------
const { config, crate } = await step("read wasm-pack.toml and Cargo.toml", () => {
  const config = readToml("wasm-pack.toml");
  const cargo = readToml("Cargo.toml");
  const builds = config.build ?? [];
  if (!config.package?.name) throw new Error("wasm-pack.toml: [package] name is missing");
  if (builds.length === 0) throw new Error("wasm-pack.toml: no [[build]] entries");
  const folders = new Set();
  for (const b of builds) {
    if (!b.folder || !b.target === !b.from) throw new Error("wasm-pack.toml: every [[build]] needs `folder` and either `target` or `from`");
    if (folders.has(b.folder)) throw new Error(`wasm-pack.toml: folder "${b.folder}" appears twice`);
    folders.add(b.folder);
  }
  const built = new Map(builds.filter((b) => b.target).map((b) => [b.folder, b]));
  for (const b of builds.filter((x) => x.from)) {
    // A folder made from another one's build holds only its self-initialising entry.
    if (!built.has(b.from)) throw new Error(`wasm-pack.toml: [[build]] ${b.folder}: from = "${b.from}" names no [[build]] with a target`);
    if (!b.self_init) throw new Error(`wasm-pack.toml: [[build]] ${b.folder}: a folder built \`from\` another needs self_init = true`);
    b.target = built.get(b.from).target;
  }
  for (const key of ["main", "module", "types"]) {
    const f = config.package[key];
    if (f !== undefined && !folders.has(f)) throw new Error(`wasm-pack.toml: [package] ${key} = "${f}" names no [[build]] folder`);
  }
  const lesson = config.lesson;
  if (lesson) {
    if (!lesson.folder || !lesson.out_name || !Array.isArray(lesson.features)) throw new Error("wasm-pack.toml: [lesson] needs `folder`, `out_name` and a `features` list");
    if (folders.has(lesson.folder)) throw new Error(`wasm-pack.toml: [lesson] folder "${lesson.folder}" is also a [[build]] folder`);
  }
  if (config.package.features !== undefined && !Array.isArray(config.package.features)) throw new Error("wasm-pack.toml: [package] features must be a list");
  config.package.wasm ??= built.keys().next().value;
  if (!built.has(config.package.wasm)) throw new Error(`wasm-pack.toml: [package] wasm = "${config.package.wasm}" names no [[build]] with a target`);
  // wasm-bindgen names its files after the crate, with `-` turned into `_`.
  return { config, crate: { stem: cargo.package.name.replace(/-/g, "_"), version: cargo.package.version, cargo } };
});

const finalDir = path.join(root, config.package.out_dir ?? "pkg");
// Build into a staging folder and swap it in at the end: a failed build keeps
// the previous package, and tests reading pkg/ meanwhile never see it half-built.
const outDir = `${finalDir}.staging-${process.pid}`;
const shown = path.relative(root, finalDir);
const profile = config.profile?.cargo ?? "release";
const wasmOptArgs = config.profile?.wasm_opt ?? false;
const stem = crate.stem;
// The folders wasm-pack writes, and the one that keeps the package's only .wasm.
const builtFolders = config.build.filter((b) => !b.from);
const wasmHome = config.package.wasm;
const wasmFile = `${stem}_bg.wasm`;
/** The .wasm as a path relative to `folder` (posix: it goes into JS source and URLs). */
const wasmFrom = (folder) => path.posix.join(path.posix.relative(folder, wasmHome) || ".", wasmFile);

// ---- tools ----------------------------------------------------------------
const wasmOptVersion = await step("check tools (wasm-pack, wasm-bindgen, wasm-opt)", () => {
  const hint = "run `bash scripts/setup.sh build`";
  if (!fs.existsSync(path.join(root, "Cargo.lock"))) run("cargo", ["generate-lockfile"]);
  const lock = fs.readFileSync(path.join(root, "Cargo.lock"), "utf8");
  const want = lock.match(/name = "wasm-bindgen"\nversion = "([^"]+)"/)?.[1];
  if (!want) throw Object.assign(new Error("wasm-bindgen is not in Cargo.lock"), { hint: "check Cargo.toml's wasm32 dependencies" });
  if (!output("wasm-pack", ["--version"])) throw Object.assign(new Error("wasm-pack is not installed"), { hint });
  const have = output("wasm-bindgen", ["--version"]);
  if (have !== `wasm-bindgen ${want}`) {
    throw Object.assign(new Error(`need wasm-bindgen ${want} on PATH (Cargo.lock), found: ${have ?? "none"}`), { hint });
  }
  const opt = wasmOptArgs ? output("wasm-opt", ["--version"]) : null;
  if (wasmOptArgs && !opt) {
    throw Object.assign(new Error("wasm-opt (npm binaryen) not found in node_modules/.bin"), { hint: "run `npm ci`" });
  }
  console.log(`    wasm-bindgen ${want}, ${opt ?? "wasm-opt disabled"}`);
  return opt;
});

// ---- wasm-pack, one run per folder with a target -----------------------------
fs.rmSync(outDir, { recursive: true, force: true });
process.on("exit", () => fs.rmSync(outDir, { recursive: true, force: true }));
// `rustflags` (wasm-pack.toml): flags for this build's rustc only, after any RUSTFLAGS of the caller's.
const rustflags = config.profile?.rustflags ?? [];
if (rustflags.length) console.log(`rustc flags (wasm-pack.toml): ${rustflags.join(" ")}`);
const wasmPackEnv = { ...env, RUSTFLAGS: [process.env.RUSTFLAGS, ...rustflags].filter(Boolean).join(" ") };
/** cargo's arguments for a module built with exactly `features` (none: the crate's defaults). */
const cargoFeatures = (features) => (features ? ["--", "--no-default-features", "--features", features.join(",")] : []);
function wasmPack(target, folder, name, features) {
  run("wasm-pack", [
    "--log-level", "warn",
    "build", "--mode", "no-install", "--no-opt", "--no-pack", "--no-gitignore",
    `--${profile}`, "--target", target,
    "--out-dir", path.join(outDir, folder), "--out-name", name,
    root,
    ...cargoFeatures(features),
  ], { env: wasmPackEnv });
}
// The lesson entry first: cargo's own output (target/wasm32-unknown-unknown/<profile>/tiny_pi.wasm, which
// bench/size-table.mjs reads) is then the main module's.
const lesson = config.lesson;
if (lesson) {
  await step(`wasm-pack build --target web (features ${lesson.features.join(", ")}) -> ${shown}/${lesson.folder}`, () =>
    wasmPack("web", lesson.folder, lesson.out_name, lesson.features));
}
const mainFeatures = config.package.features;
for (const b of builtFolders) {
  const shownFeatures = mainFeatures ? ` (features ${mainFeatures.join(", ")})` : "";
  await step(`wasm-pack build --target ${b.target}${shownFeatures} -> ${shown}/${b.folder}`, () => wasmPack(b.target, b.folder, stem, mainFeatures));
}

// ---- one .wasm for every folder ---------------------------------------------
// wasm-bindgen writes the same module for --target nodejs and --target web (the
// targets differ in their JS glue only), so the package ships it once, in the
// [package] wasm folder, and the other folders load it from there.
await step(`share ${shown}/${wasmHome}/${wasmFile} with every folder`, () => {
  const home = fs.readFileSync(path.join(outDir, wasmHome, wasmFile));
  for (const b of builtFolders.filter((x) => x.folder !== wasmHome)) {
    const own = path.join(outDir, b.folder, wasmFile);
    if (!fs.readFileSync(own).equals(home)) {
      throw Object.assign(new Error(`wasm-bindgen wrote different .wasm files for ${b.folder}/ (--target ${b.target}) and ${wasmHome}/`), {
        hint: "one .wasm serves every folder only while wasm-bindgen writes the same module for each target; compare the two (e.g. their import sections) and give the folders their own .wasm again if they must differ",
      });
    }
    fs.rmSync(own);
    // Declarations of the .wasm's raw exports, for the file that is no longer here.
    fs.rmSync(`${own}.d.ts`, { force: true });
  }
});

// ---- wasm-opt ---------------------------------------------------------------
if (wasmOptArgs) {
  // wasm-opt (binaryen compiled to JS) takes ~10 s; its output depends only on
  // the input bytes, the flags and its version, so keep results under target/.
  const cacheDir = path.join(root, "target", "wasm-opt-cache");
  fs.mkdirSync(cacheDir, { recursive: true });
  console.log(`wasm-opt flags (wasm-pack.toml): ${wasmOptArgs.join(" ")}`);
  const modules = [path.join(wasmHome, wasmFile), ...(lesson ? [path.join(lesson.folder, `${lesson.out_name}_bg.wasm`)] : [])];
  for (const file of modules) {
    const wasm = path.join(outDir, file);
    const key = createHash("sha256").update(fs.readFileSync(wasm)).update(JSON.stringify([wasmOptArgs, wasmOptVersion])).digest("hex");
    const cached = path.join(cacheDir, `${key}.wasm`);
    await step(`wasm-opt ${file}`, () => {
      const before = fs.statSync(wasm).size;
      if (fs.existsSync(cached)) {
        console.log("    unchanged input: reusing the optimised file from target/wasm-opt-cache/");
      } else {
        run("wasm-opt", [wasm, "-o", cached + ".tmp", ...wasmOptArgs]);
        fs.renameSync(cached + ".tmp", cached);
      }
      fs.copyFileSync(cached, wasm);
      console.log(`    ${before} -> ${fs.statSync(wasm).size} bytes`);
    });
  }
}

// ---- a freed object's error ---------------------------------------------------
// A method of an object whose free() was called reaches wasm-bindgen's own check, which throws
// `Error("null pointer passed to rust")` from inside the .wasm. The JS that throws it (wasm-bindgen's
// `__wbindgen_throw` import) throws the bridge's `typeError` instead: a TypeError saying what happened,
// its stack starting at the app's line. Any other message wasm-bindgen throws is left as it is.
const WBG_THROW = "throw new Error(getStringFromWasm0(arg0, arg1));";
const FREED = "this tiny-pi object (an Agent, a ToolRegistry or a ScriptedModel) was used after its free() was called: make a new one";
await step("name the error of a freed object in the shipped JS", () => {
  const built = [...builtFolders.map((b) => [b.folder, stem]), ...(lesson ? [[lesson.folder, lesson.out_name]] : [])];
  for (const [folder, name] of built) {
    const file = path.join(outDir, folder, `${name}.js`);
    const text = fs.readFileSync(file, "utf8");
    const at = text.indexOf("__wbindgen_throw_");
    const line = at < 0 ? -1 : text.indexOf(WBG_THROW, at);
    if (line < 0 || !/\btypeError\b/.test(text.slice(0, at))) {
      throw Object.assign(new Error(`${folder}/${name}.js: wasm-bindgen's __wbindgen_throw (${WBG_THROW}) or the bridge's typeError import was not found`), {
        hint: "wasm-bindgen's generated JS changed: find where it throws a string from the .wasm and point this step at it",
      });
    }
    const named = `{ const message = getStringFromWasm0(arg0, arg1); throw message === "null pointer passed to rust" ? typeError(${JSON.stringify(FREED)}) : new Error(message); }`;
    fs.writeFileSync(file, text.slice(0, line) + named + text.slice(line + WBG_THROW.length));
  }
});

// ---- JS without comments ----------------------------------------------------
// `js_comments = false` (wasm-pack.toml): the JS the package ships (wasm-bindgen's glue and the bridge's
// snippets) loses its comments, written out again by the TypeScript compiler, which drops comments and
// keeps the code. A page that loads web/ as it is (the in-browser lessons) downloads 40% less JS
// (measured in `git show 1817a52:bench/RESULTS.md`); the doc comments stay in the .d.ts, and the sources keep theirs. wasm-bindgen's first-line
// `@ts-self-types` pragma tells TypeScript and Deno where the types are: it is kept.
if (config.profile?.js_comments === false) {
  await step("remove comments from the shipped JS", async () => {
    const ts = (await import("typescript")).default;
    const built = [...builtFolders.map((b) => [b.folder, stem]), ...(lesson ? [[lesson.folder, lesson.out_name]] : [])];
    for (const [folder, name] of built) {
      const dir = path.join(outDir, folder);
      const files = [path.join(dir, `${name}.js`), ...listFiles(path.join(dir, "snippets")).filter((f) => f.endsWith(".js"))];
      for (const file of files) {
        const text = fs.readFileSync(file, "utf8");
        const pragma = text.match(/^\/\* @ts-self-types="[^"]*" \*\/\n/)?.[0] ?? "";
        const { outputText } = ts.transpileModule(text, {
          fileName: path.basename(file),
          compilerOptions: { target: ts.ScriptTarget.ESNext, module: ts.ModuleKind.Preserve, verbatimModuleSyntax: true, removeComments: true },
        });
        fs.writeFileSync(file, pragma + outputText);
      }
    }
  });
}

// ---- per-folder entries -----------------------------------------------------
// entry[folder] = what the folder exports: { types, import, require? }
// wasm-pack's own package.json/README/LICENSE would make each folder look like a separate package; the top
// pkg/package.json is the only one. wasm-bindgen declares `[Symbol.dispose]()` on every class; the .d.ts says
// which lib that needs, so apps with e.g. lib es2022 and skipLibCheck off still compile.
function tidy(dir, name) {
  for (const f of ["package.json", ".gitignore", "README.md", "LICENSE", "LICENSE-MIT", "LICENSE-APACHE"]) {
    fs.rmSync(path.join(dir, f), { force: true });
  }
  const dts = path.join(dir, `${name}.d.ts`);
  const text = fs.existsSync(dts) ? fs.readFileSync(dts, "utf8") : "";
  if (text.includes("[Symbol.dispose]")) {
    fs.writeFileSync(dts, `/// <reference lib="esnext.disposable" />\n${text}`);
  }
}

const entries = await step("write wrappers and remove stray wasm-pack files", async () => {
  const entries = {};
  for (const b of config.build) {
    const dir = path.join(outDir, b.folder);
    fs.mkdirSync(dir, { recursive: true });
    tidy(dir, stem);
    const plainEntry = { types: rel(b.folder, `${stem}.d.ts`), default: rel(b.folder, `${stem}.js`) };
    if (b.target === "nodejs") {
      // pkg/package.json says "type": "module"; this folder is CommonJS.
      write(path.join(dir, "package.json"), JSON.stringify({ type: "commonjs" }));
      // wasm-bindgen `require`s the bridge's JS snippets as they are written (ES modules); Node before
      // 20.19 cannot require an ES module, so they become CommonJS here.
      for (const file of listFiles(path.join(dir, "snippets")).filter((f) => f.endsWith(".js"))) {
        fs.writeFileSync(file, esmToCommonJs(fs.readFileSync(file, "utf8"), path.relative(root, file)));
      }
      const glue = path.join(dir, `${stem}.js`);
      let glueText = fs.readFileSync(glue, "utf8");
      if (b.folder !== wasmHome) {
        // wasm-bindgen's nodejs glue reads the .wasm beside it; point it at the shared one.
        const line = `const wasmPath = \`\${__dirname}/${wasmFile}\`;`;
        if (!glueText.includes(line)) throw new Error(`${b.folder}/${stem}.js: wasm-bindgen's line reading the .wasm (${line}) was not found, so it cannot be pointed at ${wasmHome}/`);
        glueText = glueText.replace(line, `const wasmPath = \`\${__dirname}/${wasmFrom(b.folder)}\`;`);
      }
      fs.writeFileSync(glue, NODE_V8_GUARD + glueText);
      let entry = plainEntry;
      if (b.esm_wrapper) {
        // Named ESM exports of a CommonJS file depend on Node's static lexer
        // guessing them; list them explicitly instead (read from the module).
        const names = Object.keys(createRequire(import.meta.url)(glue)).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n) && n !== "default");
        if (names.length === 0) console.log("    note: the crate exports nothing yet");
        write(path.join(dir, `${stem}.mjs`), [
          "// ES module face of the CommonJS build: Node loads the .wasm synchronously, no init needed.",
          `import cjs from "./${stem}.js";`,
          ...(names.length ? [`export const { ${names.join(", ")} } = cjs;`] : []),
        ].join("\n"));
        write(path.join(dir, `${stem}.d.mts`), `export * from "./${stem}.js";`);
        entry = { import: { types: rel(b.folder, `${stem}.d.mts`), default: rel(b.folder, `${stem}.mjs`) }, require: entry };
      }
      entries[b.folder] = entry;
    } else if (b.self_init) {
      if (b.target !== "web") throw new Error(`[[build]] ${b.folder}: self_init needs target = "web"`);
      // Top-level await + new URL(..., import.meta.url): Vite and webpack 5
      // both turn this into an emitted asset and an async module.
      const glue = b.from ? `${path.posix.relative(b.folder, b.from)}/${stem}.js` : `./${stem}.js`;
      write(path.join(dir, "index.js"), [
        "// Self-initialising entry for bundlers: importing it loads the .wasm once.",
        `import init from "${glue}";`,
        `await init({ module_or_path: new URL("${wasmFrom(b.folder)}", import.meta.url) });`,
        `export * from "${glue}";`,
      ].join("\n"));
      write(path.join(dir, "index.d.ts"), `export * from "${glue}";`);
      entries[b.folder] = { types: rel(b.folder, "index.d.ts"), default: rel(b.folder, "index.js") };
    } else {
      entries[b.folder] = plainEntry;
    }
  }
  if (lesson) {
    // The lesson entry: --target web glue, initialised by top-level await where `fetch` reads a URL
    // (browsers, bundlers: index.js) and synchronously from the file in Node (node.js, which has no top-level
    // await, so `require()` loads it too).
    const dir = path.join(outDir, lesson.folder);
    const name = lesson.out_name;
    tidy(dir, name);
    write(path.join(dir, "index.js"), [
      "// Self-initialising entry: importing it loads the lesson .wasm once.",
      `import init from "./${name}.js";`,
      `await init({ module_or_path: new URL("./${name}_bg.wasm", import.meta.url) });`,
      `export * from "./${name}.js";`,
    ].join("\n"));
    write(path.join(dir, "node.js"), [
      "// Node's entry: the lesson .wasm read from its file and compiled synchronously.",
      `import { readFileSync } from "node:fs";`,
      `import v8 from "node:v8";`,
      `import { initSync } from "./${name}.js";`,
      nodeV8Guard("v8"),
      `initSync({ module: readFileSync(new URL("./${name}_bg.wasm", import.meta.url)) });`,
      `export * from "./${name}.js";`,
    ].join("\n"));
    write(path.join(dir, "index.d.ts"), `export * from "./${name}.js";`);
    const types = rel(lesson.folder, "index.d.ts");
    entries[lesson.folder] = { node: { types, default: rel(lesson.folder, "node.js") }, default: { types, default: rel(lesson.folder, "index.js") } };
  }
  return entries;
});

// ---- plain files ([[files]]) ----------------------------------------------------
await step("copy plain files ([[files]])", () => {
  for (const f of config.files ?? []) {
    if (!f.folder || !f.from || !Array.isArray(f.include)) throw new Error("wasm-pack.toml: every [[files]] needs `folder`, `from` and an `include` list");
    if (config.build.some((b) => b.folder === f.folder)) throw new Error(`wasm-pack.toml: [[files]] ${f.folder} is also a [[build]] folder`);
    fs.mkdirSync(path.join(outDir, f.folder), { recursive: true });
    for (const name of f.include) {
      const from = path.join(root, f.from, name);
      if (!fs.existsSync(from)) throw new Error(`wasm-pack.toml: [[files]] ${f.folder}: ${path.relative(root, from)} does not exist`);
      fs.copyFileSync(from, path.join(outDir, f.folder, name));
    }
  }
  for (const [command, file] of Object.entries(config.bin ?? {})) {
    const target = path.join(outDir, file);
    if (!fs.existsSync(target)) throw new Error(`wasm-pack.toml: [bin] ${command} = "${file}" is not a file of the package`);
    fs.chmodSync(target, 0o755);
  }
});

// ---- pkg/package.json -------------------------------------------------------
// `[peer_dependencies]`: `name = "range"`, or `name = { version = "range", optional = true }`.
function peers(table) {
  if (!table) return {};
  const peerDependencies = {};
  const peerDependenciesMeta = {};
  for (const [name, spec] of Object.entries(table)) {
    const version = typeof spec === "string" ? spec : spec?.version;
    if (typeof version !== "string") throw new Error(`wasm-pack.toml: [peer_dependencies] ${name} needs a version range`);
    peerDependencies[name] = version;
    if (spec.optional === true) peerDependenciesMeta[name] = { optional: true };
  }
  return { peerDependencies, ...(Object.keys(peerDependenciesMeta).length ? { peerDependenciesMeta } : {}) };
}

await step(`write ${shown}/package.json and README`, () => {
  const p = config.package;
  // main = a require()-able file, module = an ES module, types = declarations.
  const pick = (folder, kind) => {
    const e = entries[folder];
    if (kind === "types") return (e.require ?? e).types;
    return ((kind === "main" ? e.require : e.import) ?? e).default;
  };
  const exports = { ".": {} };
  for (const b of config.build) {
    for (const c of b.conditions ?? []) {
      if (c in exports["."]) throw new Error(`condition "${c}" is served by two folders`);
      exports["."][c] = entries[b.folder];
    }
  }
  for (const b of config.build) exports[`./${b.folder}`] = entries[b.folder];
  if (config.lesson) {
    const { folder, out_name: name } = config.lesson;
    exports[`./${folder}`] = entries[folder];
    // The lesson entry's web build, for a bundler that leaves `new URL(..., import.meta.url)` as it is (esbuild).
    exports[`./${folder}/web`] = { types: rel(folder, `${name}.d.ts`), default: rel(folder, `${name}.js`) };
  }
  // Each .wasm by its path: such a bundler emits it from an import (esbuild's file loader) and the app gives init its URL.
  exports["./*.wasm"] = "./*.wasm";
  exports["./package.json"] = "./package.json";

  const sideEffects = config.build.flatMap((b) => [
    // Importing these runs code (loads the .wasm); bundlers must keep them.
    ...(b.self_init ? [rel(b.folder, "index.js")] : []),
    ...(b.target === "nodejs" ? [rel(b.folder, "*")] : []),
    ...(b.from ? [] : [rel(b.folder, "snippets", "*")]),
  ]);
  if (config.lesson) sideEffects.push(...["index.js", "node.js", "snippets/*"].map((f) => rel(config.lesson.folder, f)));
  const cargo = crate.cargo.package;
  const pkg = {
    name: p.name,
    version: crate.version,
    description: cargo.description,
    ...(cargo.keywords ? { keywords: cargo.keywords } : {}),
    license: cargo.license,
    ...(cargo.repository ? { repository: { type: "git", url: cargo.repository } } : {}),
    ...(p.engines ? { engines: p.engines } : {}),
    type: "module",
    ...(p.main ? { main: pick(p.main, "main") } : {}),
    ...(p.module ? { module: pick(p.module, "module") } : {}),
    ...(p.types ? { types: pick(p.types, "types") } : {}),
    ...(config.bin ? { bin: Object.fromEntries(Object.entries(config.bin).map(([command, file]) => [command, rel(file)])) } : {}),
    ...(config.dependencies ? { dependencies: config.dependencies } : {}),
    ...peers(config.peer_dependencies),
    exports,
    files: [...config.build.map((b) => b.folder), ...(config.lesson ? [config.lesson.folder] : []), ...(config.files ?? []).map((f) => f.folder), "README.md"],
    sideEffects,
  };
  write(path.join(outDir, "package.json"), JSON.stringify(pkg, null, 2));
  if (p.readme) fs.copyFileSync(path.join(root, p.readme), path.join(outDir, "README.md"));
});

// ---- smoke check ------------------------------------------------------------
await step("smoke check: Node loads the package", async () => {
  for (const b of config.build.filter((x) => x.target === "nodejs")) {
    const e = entries[b.folder];
    const cjs = createRequire(import.meta.url)(path.join(outDir, (e.require ?? e).default));
    if (e.import) {
      const esm = await import(pathToFileURL(path.join(outDir, e.import.default)).href);
      const missing = Object.keys(cjs).filter((n) => n !== "default" && !(n in esm));
      if (missing.length) throw new Error(`${e.import.default} lacks ${missing.join(", ")}`);
    }
  }
  if (config.lesson) {
    const e = entries[config.lesson.folder].node.default;
    const module = await import(pathToFileURL(path.join(outDir, e)).href);
    if (typeof module.ScriptedModel !== "function") throw new Error(`${e} does not export ScriptedModel`);
    const required = createRequire(import.meta.url)(path.join(outDir, e));
    if (required.ScriptedModel !== module.ScriptedModel) throw new Error(`require() of ${e} is not its import`);
  }
});

await step(`replace ${shown}/ with the new build`, () => {
  const old = `${finalDir}.old-${process.pid}`;
  if (fs.existsSync(finalDir)) fs.renameSync(finalDir, old);
  fs.renameSync(outDir, finalDir);
  fs.rmSync(old, { recursive: true, force: true });
});

const files = fs.readdirSync(finalDir, { recursive: true }).filter((f) => fs.statSync(path.join(finalDir, f)).isFile());
console.log(`build: ${shown}/ ready (${files.length} files) in ${((performance.now() - t0) / 1000).toFixed(1)}s`);
