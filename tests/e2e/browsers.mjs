// One page API over two browsers, so that each end-to-end check is written once and runs in both: Debian's Chromium
// through playwright-core, and Debian's firefox-esr through geckodriver (installed by `scripts/setup.sh test`) with
// selenium-webdriver over WebDriver BiDi (console errors, viewport, full-page screenshots).
//
//   for (const browser of BROWSERS) describe(browser, () => {
//     const suite = browserSuite(browser);
//     test("...", () => suite.open("?scenario=readme", async (P) => { await P.click(...); ... }));
//   });
//
// `P` has: goto, click, fill, select, setFiles, text, attr, attrs, texts, count, visible, waitFor, waitUntil,
// evaluate, setViewport, screenshot, axe, reload, url. Selectors are CSS. Every wait is on a condition in the page.

import { mkdtemp, mkdir, rm, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, after } from "node:test";
import { execFileSync } from "node:child_process";
import { chromium } from "playwright-core";
import { Builder, By } from "selenium-webdriver";
import firefox from "selenium-webdriver/firefox.js";
import logInspector from "selenium-webdriver/bidi/logInspector.js";
import browsingContext from "selenium-webdriver/bidi/browsingContext.js";
import { CaptureScreenshotParameters } from "selenium-webdriver/bidi/captureScreenshotParameters.js";
import { startPageServer, SCREENSHOTS } from "./harness.mjs";

export const BROWSERS = (process.env.E2E_BROWSERS ?? "chromium,firefox").split(",").filter(Boolean);
const WAIT_MS = 20_000;
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const FIREFOX = process.env.FIREFOX_PATH ?? "/usr/bin/firefox-esr";
const log = (msg) => process.stderr.write(`[e2e] ${msg}\n`);
const AXE = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** A function (or its source) as the text of an expression, for a page to call with its arguments. */
const source = (fn) => (typeof fn === "function" ? fn.toString() : fn);

/** axe-core's serious and critical violations, each with where it was found (run in the page). */
const AXE_RUN = `return (async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations
  .filter((v) => v.impact === "serious" || v.impact === "critical")
  .map((v) => v.impact + " " + v.id + ": " + v.help + " (" + v.nodes.length + "x, e.g. " + v.nodes[0].target.join(" ") + ": " + v.nodes[0].failureSummary + ")"))()`;

// --- Chromium (playwright-core) --------------------------------------------------------------------------

async function chromiumBrowser() {
  const profile = await mkdtemp(join(tmpdir(), "tiny-pi-e2e-"));
  const args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"];
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args, viewport: { width: 1280, height: 720 }, acceptDownloads: true });
  } catch (err) {
    await rm(profile, { recursive: true, force: true });
    throw new Error(`could not start ${CHROMIUM} (install Debian's chromium package: bash scripts/setup.sh test): ${err.message}`);
  }
  return {
    async page() {
      const page = await context.newPage();
      const problems = [];
      page.on("console", (msg) => msg.type() === "error" && problems.push(`console.error: ${msg.text()}`));
      page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
      page.on("dialog", async (d) => {
        problems.push(`dialog(${d.type()}): ${d.message()}`);
        await d.dismiss();
      });
      // A call as an expression: evaluated by the DevTools protocol, which the page's CSP (no eval) does not govern.
      // (a Function built here, whose source playwright sends; a string would be eval'd by the page, which its CSP refuses).
      const call = (fn, args) => new Function(`return (${source(fn)})(...${JSON.stringify(args)});`);
      return {
        problems,
        goto: (url) => page.goto(url),
        url: () => page.url(),
        reload: () => page.reload(),
        click: (sel) => page.click(sel),
        fill: (sel, value) => page.fill(sel, value),
        select: (sel, value) => page.selectOption(sel, value).then(() => undefined),
        setFiles: (sel, files) => page.setInputFiles(sel, files),
        evaluate: (fn, ...args) => page.evaluate(call(fn, args)),
        waitUntil: async (fn, ...args) => (await page.waitForFunction(call(fn, args), null, { timeout: WAIT_MS })).jsonValue(),
        setViewport: (width, height) => page.setViewportSize({ width, height }),
        screenshot: (path) => page.screenshot({ path, fullPage: true }),
        async axe() {
          await page.evaluate(AXE);
          return page.evaluate(`(async () => { ${AXE_RUN.replace(/^return /, "return await ")} })()`);
        },
        close: () => page.close(),
      };
    },
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

// --- Firefox (geckodriver + selenium-webdriver, WebDriver BiDi) -----------------------------------------------

function geckodriverPath() {
  if (process.env.GECKODRIVER) return process.env.GECKODRIVER;
  try {
    return execFileSync("sh", ["-c", `command -v geckodriver || ls "\${CARGO_HOME:-$HOME/.cargo}/bin/geckodriver"`], { encoding: "utf8" }).trim().split("\n")[0];
  } catch {
    throw new Error("geckodriver is missing: run `bash scripts/setup.sh test` (it installs it with cargo install)");
  }
}

async function firefoxBrowser() {
  const options = new firefox.Options().setBinary(FIREFOX).addArguments("-headless").enableBidi();
  // No update checks, telemetry or other calls out of this machine.
  for (const [k, v] of Object.entries({ "app.update.enabled": false, "datareporting.policy.dataSubmissionEnabled": false, "toolkit.telemetry.enabled": false, "network.captive-portal-service.enabled": false, "browser.safebrowsing.malware.enabled": false, "browser.safebrowsing.phishing.enabled": false, "extensions.update.enabled": false, "dom.disable_open_during_load": false }))
    options.setPreference(k, v);
  let driver;
  try {
    driver = await new Builder().forBrowser("firefox").setFirefoxOptions(options).setFirefoxService(new firefox.ServiceBuilder(geckodriverPath())).build();
  } catch (err) {
    throw new Error(`could not start ${FIREFOX} through geckodriver (bash scripts/setup.sh test installs both): ${err.message}`);
  }
  const problems = [];
  const inspector = await logInspector(driver);
  await inspector.onConsoleEntry((entry) => entry.level === "error" && problems.push(`console.error: ${entry.text}`));
  await inspector.onJavascriptException((entry) => problems.push(`pageerror: ${entry.text}`));
  const context = await browsingContext(driver, { browsingContextId: await driver.getWindowHandle() });
  let viewport = { width: 1280, height: 720 };
  await context.setViewport(viewport.width, viewport.height);
  const find = (sel) => driver.findElement(By.css(sel));
  const run = (fn, args) => driver.executeScript(`return (${source(fn)})(...arguments)`, ...args);
  const page = {
    problems,
    async goto(url) {
      problems.length = 0;
      await driver.get(url);
    },
    url: () => driver.getCurrentUrl(),
    reload: () => driver.navigate().refresh(),
    async click(sel) {
      await page.waitUntil((sel) => document.querySelector(sel) !== null, sel);
      const el = await find(sel);
      // Into the middle of the view, clear of the sticky run bar, then a real click.
      await driver.executeScript("arguments[0].scrollIntoView({ block: 'center', inline: 'nearest' })", el);
      await el.click();
    },
    // The value set as typing would leave it, with the events typing fires (fast for long JSON).
    fill: (sel, value) =>
      run(
        (sel, value) => {
          const el = document.querySelector(sel);
          el.focus();
          el.value = value;
          el.dispatchEvent(new Event("input", { bubbles: true }));
          el.dispatchEvent(new Event("change", { bubbles: true }));
        },
        [sel, value],
      ),
    select: (sel, value) =>
      run(
        (sel, value) => {
          const el = document.querySelector(sel);
          el.value = value;
          el.dispatchEvent(new Event("input", { bubbles: true }));
          el.dispatchEvent(new Event("change", { bubbles: true }));
        },
        [sel, value],
      ),
    async setFiles(sel, files) {
      const input = await find(sel);
      // geckodriver adds to a multiple input's files: empty it first (Element Clear), as a new pick would.
      await input.clear();
      await input.sendKeys([files].flat().join("\n"));
    },
    evaluate: (fn, ...args) => run(fn, args),
    async waitUntil(fn, ...args) {
      let value;
      await driver.wait(async () => {
        value = await run(fn, args);
        return Boolean(value);
      }, WAIT_MS, `waited ${WAIT_MS} ms for ${source(fn).slice(0, 200)} (${JSON.stringify(args).slice(0, 200)})`);
      return value;
    },
    async setViewport(width, height) {
      viewport = { width, height };
      await context.setViewport(width, height);
    },
    async screenshot(path) {
      const data = await context.captureScreenshot(new CaptureScreenshotParameters().origin("document"));
      await writeFile(path, Buffer.from(data, "base64"));
    },
    async axe() {
      await driver.executeScript(AXE);
      return driver.executeScript(AXE_RUN);
    },
    close: async () => {},
  };
  return {
    page: async () => {
      if (viewport.width !== 1280 || viewport.height !== 720) await page.setViewport(1280, 720);
      return page;
    },
    close: () => driver.quit(),
  };
}

// --- shared -----------------------------------------------------------------------------------------------

/** The page helpers every spec uses, over either browser's page. */
function helpers(p, base, name) {
  const P = {
    ...p,
    browser: name,
    base,
    /** Open a path of the site (`?scenario=…`, `live.html?…`) and wait until the page has loaded the package. */
    async open(path) {
      await p.goto(new URL(`/${path.replace(/^\//, "")}`, base).href);
      const state = await p.waitUntil(() => (document.body?.dataset.ready === "true" ? "ready" : document.querySelector('[data-testid="banner"]')?.dataset.state === "error" ? "error" : false));
      if (state !== "ready") throw new Error(`the page could not load the package: ${await P.text('[data-testid="banner"]')}`);
    },
    waitFor: (sel) => p.waitUntil((sel) => document.querySelector(sel) !== null, sel),
    waitForGone: (sel) => p.waitUntil((sel) => document.querySelector(sel) === null, sel),
    text: (sel) => p.evaluate((sel) => document.querySelector(sel)?.textContent ?? null, sel),
    texts: (sel) => p.evaluate((sel) => [...document.querySelectorAll(sel)].map((n) => n.textContent), sel),
    attr: (sel, name) => p.evaluate((sel, name) => document.querySelector(sel)?.getAttribute(name) ?? null, sel, name),
    attrs: (sel, name) => p.evaluate((sel, name) => [...document.querySelectorAll(sel)].map((n) => n.getAttribute(name)), sel, name),
    count: (sel) => p.evaluate((sel) => document.querySelectorAll(sel).length, sel),
    visible: (sel) =>
      p.evaluate((sel) => {
        const n = document.querySelector(sel);
        if (!n) return false;
        const r = n.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && getComputedStyle(n).visibility !== "hidden";
      }, sel),
    /** Click a test hook (`data-testid`). */
    tap: (testid) => p.click(`[data-testid="${testid}"]`),
    byId: (testid) => `[data-testid="${testid}"]`,
    /** Press Step until the loop is held right after event `seq`. */
    async stepTo(seq) {
      for (;;) {
        const held = Number(await p.evaluate(() => document.querySelector('[data-testid="timeline"] > li.held')?.dataset.seq ?? 0));
        if (held >= seq) return;
        await p.click('[data-testid="step"]');
        await P.waitFor(`[data-testid="timeline"] > li.held[data-seq="${held + 1}"]`);
      }
    },
    /** Wait until the run is over (the status line's data-run says so). */
    waitForDone: () => P.waitFor('[data-testid="status"][data-run="done"], [data-testid="status"][data-run="failed"]'),
    /** Press Run and release every gated tool as it appears, until the run is over. */
    async runToEnd() {
      await p.click('[data-testid="run"]');
      for (;;) {
        const what = await p.waitUntil(() => {
          const gate = document.querySelector('[data-testid^="release-"]');
          if (gate) return gate.dataset.testid;
          const run = document.querySelector('[data-testid="status"]').dataset.run;
          return run === "done" || run === "failed" ? "done" : false;
        });
        if (what === "done") return;
        await p.click(`[data-testid="${what}"]`);
      }
    },
    /** No horizontal scroll of the page itself. */
    overflow: () => p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth),
    async shot(name) {
      await mkdir(SCREENSHOTS, { recursive: true });
      await p.screenshot(join(SCREENSHOTS, `${name}-${P.browser}.png`));
    },
  };
  return P;
}

/**
 * The server and one browser for a group of tests (started before them, closed after them). `open(path, fn)` loads a
 * path of the site in a page of that browser, runs `fn(P)`, and fails if the page logged an error or opened a dialog
 * (errors matching `expectErrors` excepted: a failed request the test provokes, which Firefox reports as a page error).
 */
export function browserSuite(name) {
  const suite = {
    name,
    async open(path, fn, { viewport, expectErrors = null } = {}) {
      const p = await suite.browser.page();
      const P = helpers(p, suite.server.url, name);
      try {
        if (viewport) await p.setViewport(viewport.width, viewport.height);
        await P.open(path);
        await fn(P);
        const problems = p.problems.filter((m) => !(expectErrors && !m.startsWith("dialog") && expectErrors.test(m)));
        if (problems.length) throw new Error(`the page logged errors or opened a dialog: ${problems.join("; ")}`);
      } finally {
        await p.close();
      }
    },
  };
  before(async () => {
    suite.server = await startPageServer();
    const started = Date.now();
    suite.browser = name === "firefox" ? await firefoxBrowser() : await chromiumBrowser();
    log(`${name} started in ${Date.now() - started} ms`);
  });
  after(async () => {
    await suite.browser?.close();
    await suite.server?.close();
  });
  return suite;
}
