// The package as npm would publish it (issue 17): `npm pack --dry-run` of pkg/ lists exactly the files a user
// needs, one .wasm that every entry point loads, a package.json with engines/files/sideEffects/keywords/license
// and no placeholder, and the package's own README, whose links all work from npm.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, test } from "node:test";
import { pkgDir } from "./app-fixture.mjs";

let pack; // npm's report: { size, unpackedSize, files: [{ path, size }] }
let pkg; // pkg/package.json
let files; // path -> size
before(() => {
  [pack] = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts", pkgDir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
  files = new Map(pack.files.map((f) => [f.path, f.size]));
  pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
});

const read = (file) => fs.readFileSync(path.join(pkgDir, file), "utf8");

test("the tarball holds the three entry points, one .wasm and the conformance kit, nothing else", () => {
  // The bridge's JS snippets sit under a folder named by a hash of the crate; it is not a fixed name.
  const listed = [...files.keys()].map((f) => f.replace(/snippets\/[^/]+\//, "snippets/<crate>/")).sort();
  assert.deepEqual(listed, [
    "README.md",
    "bundler/index.d.ts",
    "bundler/index.js",
    "conformance/cases.json",
    "conformance/check.js",
    "conformance/cli.js",
    "conformance/node-worker.js",
    "lesson/index.d.ts",
    "lesson/index.js",
    "lesson/node.js",
    "lesson/snippets/<crate>/src/wasm/transport/glue.js",
    "lesson/tiny_pi_lesson.d.ts",
    "lesson/tiny_pi_lesson.js",
    "lesson/tiny_pi_lesson_bg.wasm",
    "lesson/tiny_pi_lesson_bg.wasm.d.ts",
    "node/package.json",
    "node/snippets/<crate>/src/wasm/transport/glue.js",
    "node/tiny_pi.d.mts",
    "node/tiny_pi.d.ts",
    "node/tiny_pi.js",
    "node/tiny_pi.mjs",
    "package.json",
    "web/snippets/<crate>/src/wasm/transport/glue.js",
    "web/tiny_pi.d.ts",
    "web/tiny_pi.js",
    "web/tiny_pi_bg.wasm",
    "web/tiny_pi_bg.wasm.d.ts",
  ]);
});

test("every entry point loads the one .wasm in web/; it is most of the package", () => {
  const wasm = files.get("web/tiny_pi_bg.wasm");
  assert.ok(wasm > 100_000, `the .wasm is there (${wasm} bytes)`);
  assert.match(read("node/tiny_pi.js"), /const wasmPath = `\$\{__dirname\}\/\.\.\/web\/tiny_pi_bg\.wasm`;/);
  assert.match(read("bundler/index.js"), /new URL\("\.\.\/web\/tiny_pi_bg\.wasm", import\.meta\.url\)/);
  assert.match(read("bundler/index.js"), /from "\.\.\/web\/tiny_pi\.js"/);
  // The lesson entry's own .wasm, loaded only by `tiny-pi/lesson` (both of its entry files): the main one's
  // exports and the lesson's, so larger.
  const lesson = files.get("lesson/tiny_pi_lesson_bg.wasm");
  assert.ok(lesson > wasm, `the lesson .wasm (${lesson} bytes) holds more than the main one (${wasm})`);
  for (const file of ["lesson/index.js", "lesson/node.js"]) assert.match(read(file), /"\.\/tiny_pi_lesson_bg\.wasm", import\.meta\.url/, file);
  for (const file of ["node/tiny_pi.js", "bundler/index.js", "web/tiny_pi.js"]) assert.doesNotMatch(read(file), /tiny_pi_lesson/, file);
  // The .wasm shipped once: everything else together weighs less than it does, so a second copy would make
  // the package more than twice the .wasm (three copies made it 3.5 times).
  // (The conformance kit, plain JS and JSON beside the entry points, and the lesson entry are not part of what
  // loads the main .wasm.)
  const kit = [...files].filter(([f]) => /^(conformance|lesson)\//.test(f)).reduce((n, [, size]) => n + size, 0);
  assert.ok(pack.unpackedSize - kit < 2 * wasm, `unpacked ${pack.unpackedSize - kit} bytes (without the kit and the lesson entry, ${kit}) for a ${wasm}-byte .wasm`);
  assert.ok(pack.size < wasm + lesson, `packed ${pack.size} bytes`);
});

test("the shipped JS has no comments (js_comments = false), the .d.ts keeps the docs, the types pragma stays", () => {
  const js = [...files.keys()].filter((f) => /^(node|web|lesson)\/(tiny_pi(_lesson)?\.js|snippets\/.*\.js)$/.test(f));
  assert.equal(js.length, 6, js.join(", "));
  for (const file of js) {
    const text = read(file);
    // A comment line, a JSDoc block, or a comment after code (`glue.js` and wasm-bindgen's glue have many).
    assert.doesNotMatch(text, /^\s*(\/\/|\/\*\*)|;\s+\/\/ /m, file);
  }
  for (const file of ["web/tiny_pi.js", "node/tiny_pi.js"]) assert.match(read(file), /^\/\* @ts-self-types="\.\/tiny_pi\.d\.ts" \*\/$/m, file);
  assert.match(read("lesson/tiny_pi_lesson.js"), /^\/\* @ts-self-types="\.\/tiny_pi_lesson\.d\.ts" \*\/$/m);
  assert.match(read("web/tiny_pi.d.ts"), /\/\*\*\n/, "the declarations keep their doc comments");
});

test("package.json: engines, files, sideEffects, keywords, license, and no placeholder URL", () => {
  assert.deepEqual(pkg.engines, { node: ">=20.19" });
  assert.equal(pkg.license, "MIT");
  assert.ok(Array.isArray(pkg.keywords) && pkg.keywords.length > 0 && pkg.keywords.every((k) => typeof k === "string"));
  assert.deepEqual(pkg.files, ["node", "bundler", "web", "lesson", "conformance", "README.md"]);
  assert.deepEqual(pkg.bin, { "tiny-pi-conformance": "./conformance/cli.js" });
  assert.ok(!JSON.stringify(pkg).includes("example.invalid"), "no placeholder URL");
  if (pkg.repository) assert.match(pkg.repository.url, /^(git\+)?https:\/\//);
  // Every file package.json points at is in the tarball, and every sideEffects pattern matches one.
  const targets = [pkg.main, pkg.module, pkg.types, ...Object.values(pkg.bin)];
  const walk = (v) => (typeof v === "string" ? targets.push(v) : Object.values(v).forEach(walk));
  walk(pkg.exports);
  const glob = (pattern) => new RegExp(`^${pattern.replace(/^\.\//, "").replace(/[.]/g, "\\.").replace(/\*/g, ".*")}$`);
  const matched = (pattern) => [...files.keys()].filter((f) => glob(pattern).test(f));
  for (const t of targets) assert.ok(matched(t).length > 0, `${t} is in the tarball`);
  assert.deepEqual(matched("./*.wasm").sort(), ["lesson/tiny_pi_lesson_bg.wasm", "web/tiny_pi_bg.wasm"], "an export by path for each .wasm");
  assert.ok(Array.isArray(pkg.sideEffects) && pkg.sideEffects.length > 0);
  for (const pattern of pkg.sideEffects) assert.ok(matched(pattern).length > 0, `sideEffects ${pattern} matches a file`);
});

/** GitHub's (and npm's) heading anchor: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");

test("the README is the package's own, for users, and its links work from npm", () => {
  const readme = read("README.md");
  assert.equal(readme, fs.readFileSync(new URL("../../scripts/package-README.md", import.meta.url), "utf8"), "built from scripts/package-README.md");
  assert.match(readme, /^# tiny-pi\n/);
  assert.match(readme, /npm install tiny-pi/);
  for (const devOnly of ["npm start", "cargo ", "apt-get", "wasm-pack", "RELIABILITY.md", "bench/"]) {
    assert.ok(!readme.includes(devOnly), `no developer instructions (${devOnly})`);
  }
  for (const section of ["Install", "Entry points", "Options", "Events", "Errors", "Limits", "pi-ai models"]) {
    assert.match(readme, new RegExp(`^## ${section}$`, "m"));
  }
  const anchors = new Set([...readme.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1])));
  const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
  assert.ok(links.length > 5);
  for (const link of links) {
    if (link.startsWith("#")) assert.ok(anchors.has(link.slice(1)), `${link} names a heading`);
    else if (/^https:\/\//.test(link)) continue;
    else assert.ok(files.has(link.replace(/^\.\//, "").split("#")[0]), `${link} is a file in the package`);
  }
});
