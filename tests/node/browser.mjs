// Debian's Chromium, headless, driven by playwright-core (no browser download).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { toolPath } from "./app-fixture.mjs";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
  "--no-first-run", "--disable-sync", "--disable-quic"];

/** Launches Chromium with a fresh profile; resolves to { context, close() }. */
export async function launchChromium() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (scripts/setup.sh does)`);
  const { chromium } = await import(await toolPath("playwright-core/index.mjs"));
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "tiny-pi-chromium-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens `url`, waits for <body data-status>, and returns the page's JSON result and any console errors. */
export async function runPage(context, url) {
  const page = await context.newPage();
  const errors = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("requestfailed", (r) => errors.push(`requestfailed: ${r.url()}`));
  try {
    await page.goto(url);
    await page.waitForSelector("body[data-status]", { timeout: 20_000 }).catch(() => {});
    const status = await page.evaluate(() => document.body.dataset.status ?? "no status (the page script did not finish)");
    const raw = await page.textContent("#result");
    let result = raw;
    try {
      result = JSON.parse(raw);
    } catch {}
    return { status, result, errors };
  } catch (e) {
    return { status: `navigation failed: ${e.message}`, result: null, errors };
  } finally {
    await page.close();
  }
}
