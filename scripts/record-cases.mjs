#!/usr/bin/env node
// Fills in the expectations of the conformance cases (www/conformance/cases.json) from a run of tiny-pi's
// runAgentLoop (pkg/node, build it first): `expect` = { reason, steps, events, messages }. Only cases whose
// `expect` is null, or the ids named on the command line, are recorded. What it writes is a claim about SPEC:
// read it against SPEC §4 before committing (the reference loop in tests/conformance/ must pass it too).
//
//   node scripts/record-cases.mjs            # cases without expectations
//   node scripts/record-cases.mjs length     # re-record one case
import fs from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { runCase } from "../www/conformance/check.js";

const file = fileURLToPath(new URL("../www/conformance/cases.json", import.meta.url));
const { runAgentLoop } = createRequire(import.meta.url)("../pkg/node/tiny_pi.js");
const data = JSON.parse(fs.readFileSync(file, "utf8"));
const wanted = new Set(process.argv.slice(2));

for (const kase of data.cases) {
  if (wanted.size ? !wanted.has(kase.id) : kase.expect) continue;
  const out = await runCase(runAgentLoop, kase);
  if (!out.result) throw new Error(`${kase.id}: tiny-pi did not finish (${out.timedOut ? "timed out" : out.threw})`);
  const { reason, steps, messages } = out.result;
  kase.expect = { reason, steps, events: out.seen.events, messages };
  console.log(`recorded ${kase.id}: ${reason}, ${steps} step(s), ${out.seen.events.length} events, ${messages.length} messages`);
}
fs.writeFileSync(file, format(data));

/** Pretty JSON, except that each item of a list of messages or events stands on one line (a diff per message). */
function format(value, indent = "", key = "") {
  const inner = indent + "  ";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    const oneLine = ["events", "messages", "script", "release"].includes(key);
    return `[\n${value.map((v) => inner + (oneLine ? JSON.stringify(v) : format(v, inner))).join(",\n")}\n${indent}]`;
  }
  if (value && typeof value === "object") {
    const entries = Object.entries(value);
    if (entries.length === 0) return "{}";
    return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${format(v, inner, k)}`).join(",\n")}\n${indent}}`;
  }
  return JSON.stringify(value);
}
