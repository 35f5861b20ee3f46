// Shared setup for the playground's end-to-end tests: the static server, Debian's Chromium through
// playwright-core (no browser download), console-error capture and screenshots.

import { mkdtemp, mkdir, rm, access, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { before, after } from "node:test";
import { chromium } from "playwright-core";
import { startServer } from "../../scripts/serve.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const SCREENSHOTS = join(ROOT, "test-results", "screenshots");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
// Without the background-networking flags Chromium keeps dialing out, and this machine's network refuses it.
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
  "--disable-quic",
];

const log = (msg) => process.stderr.write(`[e2e] ${msg}\n`);

async function timed(what, fn) {
  const started = Date.now();
  log(`${what}…`);
  const value = await fn();
  log(`${what}: done in ${Date.now() - started} ms`);
  return value;
}

/** Start scripts/serve.mjs (the static site dist/: the page at /, the package's lesson entry at /pkg/lesson/, its browser build at /pkg/web/) on a free port: {url, close()}. */
export async function startPageServer() {
  const pkgEntry = join(ROOT, "dist", "pkg", "lesson", "tiny_pi_lesson.js");
  try {
    await access(pkgEntry);
  } catch {
    throw new Error(`${pkgEntry} is missing: build the package and the site first (node scripts/build.mjs && node scripts/site.mjs), then run the e2e tests again.`);
  }
  return timed("starting the page server", () => startServer({ port: 0 }));
}

/** Launch Debian's Chromium headless with a fresh profile; returns {context, close}. */
export async function launchBrowser() {
  const profile = await mkdtemp(join(tmpdir(), "tiny-pi-e2e-"));
  let context;
  try {
    context = await timed("launching headless Chromium", () =>
      chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: CHROMIUM_ARGS,
        viewport: { width: 1280, height: 720 },
        acceptDownloads: true,
      }),
    );
  } catch (err) {
    await rm(profile, { recursive: true, force: true });
    throw new Error(`could not start ${CHROMIUM} (install Debian's chromium package): ${err.message}`);
  }
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Open the page with every console error, page error and dialog recorded in `problems`
 * (a test asserts it stays empty: an alert() from the XSS case would land here too).
 */
export async function openPage(context, baseUrl, query = "", { viewport } = {}) {
  const page = await context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  const problems = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console.error: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
  page.on("dialog", async (dialog) => {
    problems.push(`dialog(${dialog.type()}): ${dialog.message()}`);
    await dialog.dismiss();
  });
  await page.goto(new URL(`/${query}`, baseUrl).href);
  // The page marks itself ready once the wasm module has been initialised, or shows why it could not load it.
  await page.waitForSelector("body[data-ready='true'], [data-testid='banner'][data-state='error']");
  if ((await page.getAttribute("body", "data-ready")) !== "true") {
    throw new Error(`the page could not load the package: ${await page.textContent("[data-testid='banner']")} ${problems.join("; ")}`);
  }
  return { page, problems };
}

export async function screenshot(page, name, options = {}) {
  await mkdir(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, ...options });
  return path;
}

/** The text content of each direct child of a test hook, or one of its attributes. */
export function childValues(page, testid, attribute) {
  return page.$$eval(
    `[data-testid="${testid}"] > *`,
    (nodes, attr) => nodes.map((n) => (attr ? n.getAttribute(attr) : n.textContent)),
    attribute ?? null,
  );
}

export function count(page, testid, selector = "*") {
  return page.$$eval(`[data-testid="${testid}"] > ${selector}`, (nodes) => nodes.length);
}

/** Wait until a test hook's direct children matching `selector` number exactly n. */
export function waitForCount(page, testid, n, selector = "*") {
  return page.waitForFunction(
    ([id, sel, want]) => document.querySelectorAll(`[data-testid="${id}"] > ${sel}`).length === want,
    [testid, selector, n],
  );
}

export function waitForText(page, testid, text) {
  return page.waitForFunction(([id, want]) => document.querySelector(`[data-testid="${id}"]`)?.textContent === want, [testid, text]);
}

/**
 * Open the page, run fn(page), and fail if anything reached the console as an error (or a dialog opened).
 * An optional viewport {width, height} applies before the page loads.
 */
export async function withPage(context, baseUrl, query, fn, { viewport } = {}) {
  const { page, problems } = await openPage(context, baseUrl, query, { viewport });
  try {
    await fn(page);
    if (problems.length) throw new Error(`the page logged errors or opened a dialog: ${problems.join("; ")}`);
  } finally {
    await page.close();
  }
}

/** Wait until the run is over (the status line's data-run says so). */
export function waitForDone(page) {
  return page.waitForSelector('[data-testid="status"][data-run="done"], [data-testid="status"][data-run="failed"]');
}

/** Press Run and release every gated tool as it appears, until the run is over. */
export async function runToEnd(page) {
  await page.click('[data-testid="run"]');
  while (true) {
    const state = await page.waitForFunction(() => {
      const gate = document.querySelector('[data-testid^="release-"]');
      if (gate) return gate.dataset.testid;
      const run = document.querySelector('[data-testid="status"]').dataset.run;
      return run === "done" || run === "failed" ? "done" : false;
    });
    const what = await state.jsonValue();
    if (what === "done") return;
    await page.click(`[data-testid="${what}"]`);
  }
}

/** Press Step until the loop is held right after event `seq`. */
export async function stepTo(page, seq) {
  for (;;) {
    const held = Number(await page.evaluate(() => document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq ?? 0));
    if (held >= seq) return;
    await page.click('[data-testid="step"]');
    await page.waitForSelector(`[data-testid="timeline"] > li.held[data-seq="${held + 1}"]`);
  }
}

/**
 * The server and browser of one test file: started before its tests, closed after them.
 * `withPage(query, fn, options)` opens a page of it (see withPage above).
 */
export function pageSuite() {
  const suite = {
    withPage: (query, fn, options) => withPage(suite.browser.context, suite.server.url, query, fn, options),
  };
  before(async () => {
    suite.server = await startPageServer();
    suite.browser = await launchBrowser();
  });
  after(async () => {
    await suite.browser?.close();
    await suite.server?.close();
  });
  return suite;
}

const AXE = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Run axe-core in the page (or frame); returns its serious and critical violations, each with where it was found. */
export async function axeFindings(page) {
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations);
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.length}x, e.g. ${v.nodes[0].target.join(" ")}: ${v.nodes[0].failureSummary})`);
}
