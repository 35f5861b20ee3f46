// Typed tools (issue 28): against the installed package's .d.ts, `tsc --strict` types a tool's `execute`
// arguments from its `parameters` (a JSON Schema literal through json-schema-to-ts, a TypeBox schema through
// TypeBox's Static, Record<string, unknown> without one): tests/app/ts/typed-tools.ts compiles, and each file of
// tests/app/ts/typed-tools-fail/ fails with exactly the error its first line names, on the line that misuses
// an argument.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, test } from "node:test";
import { promisify } from "node:util";
import { appSrcDir, ensureFixture, toolPath } from "./app-fixture.mjs";

const run = promisify(execFile);
const T = { timeout: 180_000 };

let appDir; // the fixture's copy of tests/app/ts/
let tsc;
before(async () => {
  const fixture = await ensureFixture();
  appDir = path.join(fixture, "typed-tools-app");
  fs.rmSync(appDir, { recursive: true, force: true });
  fs.cpSync(path.join(appSrcDir, "ts"), appDir, { recursive: true });
  tsc = await toolPath("typescript/bin/tsc");
});

/** tsc's diagnostics for a project: [{ file, line, code, message }], and its exit status. */
async function compile(config) {
  const out = await run(process.execPath, [tsc, "-p", path.join(appDir, config), "--pretty", "false"], { cwd: appDir }).then(
    (r) => ({ ok: true, text: r.stdout }),
    (e) => ({ ok: false, text: `${e.stdout}${e.stderr}` }),
  );
  const errors = [...out.text.matchAll(/^(.+?)\((\d+),\d+\): error (TS\d+): (.*)$/gm)].map(([, file, line, code, message]) => ({
    file: path.basename(file), line: Number(line), code, message,
  }));
  return { ...out, errors };
}

test("the typed-tools program compiles under tsc --strict: arguments typed from a JSON Schema, a TypeBox schema, or none", T, async () => {
  const { ok, text } = await compile("tsconfig.typed-tools.json");
  assert.ok(ok, text);
});

test("each typed-tools-fail file fails with the error it names, where it misuses an argument", T, async () => {
  const dir = path.join(appDir, "typed-tools-fail");
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".ts")).sort();
  assert.ok(files.length >= 7, files.join(", "));
  const { ok, errors, text } = await compile("tsconfig.typed-tools-fail.json");
  assert.equal(ok, false, "the failing files compiled");
  for (const file of files) {
    const source = fs.readFileSync(path.join(dir, file), "utf8").split("\n");
    const [, code, message] = source[0].match(/^\/\/ expect: (TS\d+) (.*)$/) ?? assert.fail(`${file}: no "// expect: TSnnnn message" first line`);
    const mine = errors.filter((e) => e.file === file);
    assert.deepEqual(mine.map((e) => [e.code, e.message]), [[code, message]], `${file}:\n${text}`);
    // The error is on the line of `execute`, the one that uses the arguments.
    assert.match(source[mine[0].line - 1], /execute/, `${file}: error on line ${mine[0].line}`);
  }
  assert.deepEqual(errors.filter((e) => !files.includes(e.file)), [], "no error outside the failing files");
});
