#!/usr/bin/env node
// Summarise a V8 .cpuprofile: self time per function and per source file, top first.
//   node bench/run.mjs --profile=tiny      (or any node --cpu-prof output)
//   node bench/profile-summary.mjs [file.cpuprofile] [--top=25] [--match=REGEX  inclusive time of matching functions] [--callers=REGEX  who pays for them]
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const top = Number((argv.find((a) => a.startsWith("--top=")) ?? "--top=25").slice(6));
let file = argv.find((a) => !a.startsWith("--"));
if (!file) {
  const dir = path.join(HERE, "out/prof");
  const all = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")) : [];
  if (!all.length) {
    console.error(`profile-summary: no .cpuprofile in ${dir}\n  -> node bench/run.mjs --profile=tiny`);
    process.exit(1);
  }
  file = path.join(dir, all.map((f) => [f, fs.statSync(path.join(dir, f)).mtimeMs]).sort((a, b) => b[1] - a[1])[0][0]);
}

const prof = JSON.parse(fs.readFileSync(file, "utf8"));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
// Sample counts weighted by the time delta that follows each sample.
const selfUs = new Map();
for (let i = 0; i < prof.samples.length; i++) {
  const id = prof.samples[i];
  selfUs.set(id, (selfUs.get(id) ?? 0) + (prof.timeDeltas[i + 1] ?? 0));
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const where = (cf) => {
  if (!cf.url) return "(native)";
  if (cf.url.startsWith("wasm://")) return "wasm";
  const u = cf.url.replace(/^file:\/\//, "");
  const nm = u.lastIndexOf("node_modules/");
  return nm >= 0 ? u.slice(nm + 13) : path.relative(path.resolve(HERE, ".."), u);
};

const label = (cf) => `${cf.functionName || "(anonymous)"}  ${where(cf)}${cf.url ? `:${cf.lineNumber + 1}` : ""}`;
const fns = new Map(), files = new Map();
for (const [id, us] of selfUs) {
  const cf = byId.get(id).callFrame;
  const key = label(cf);
  fns.set(key, (fns.get(key) ?? 0) + us);
  const f = where(cf);
  files.set(f, (files.get(f) ?? 0) + us);
}
const show = (title, m, n) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    console.log(`${((us / total) * 100).toFixed(1).padStart(6)}%  ${(us / 1000).toFixed(1).padStart(9)} ms  ${k}`);
  }
};
// Inclusive time: each sample counts once for every distinct function on its stack.
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const incl = new Map();
for (const [id, us] of selfUs) {
  const seen = new Set();
  for (let n = id; n !== undefined; n = parent.get(n)) seen.add(label(byId.get(n).callFrame));
  for (const k of seen) incl.set(k, (incl.get(k) ?? 0) + us);
}
const match = argv.find((a) => a.startsWith("--match="))?.slice(8);

console.log(`${path.relative(process.cwd(), file)}: ${(total / 1000).toFixed(0)} ms sampled`);
show("Self time by source file:", files, 12);
show(`Self time by function (top ${top}):`, fns, top);
if (match) show(`Inclusive time of functions matching /${match}/ (top ${top}):`, [...incl].filter(([k]) => new RegExp(match).test(k)), top);
// --callers=REGEX: who pays for the matching function (the nearest enclosing tiny_pi:: frame that does not match).
const callersOf = argv.find((a) => a.startsWith("--callers="))?.slice(10);
if (callersOf) {
  const re = new RegExp(callersOf), owner = /tiny_pi::(?!wasm::convert::)/;
  const by = new Map();
  for (const [id, us] of selfUs) {
    let n = id;
    while (n !== undefined && !re.test(label(byId.get(n).callFrame))) n = parent.get(n);
    if (n === undefined) continue;
    let c = parent.get(n);
    while (c !== undefined && (re.test(label(byId.get(c).callFrame)) || !owner.test(label(byId.get(c).callFrame)))) c = parent.get(c);
    const k = c === undefined ? "(no tiny_pi caller)" : label(byId.get(c).callFrame);
    by.set(k, (by.get(k) ?? 0) + us);
  }
  show(`Time in /${callersOf}/ by nearest tiny_pi:: caller:`, by, top);
}
