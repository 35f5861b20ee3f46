// "Check your own loop": the learner picks a JS module exporting runAgentLoop(options); it is checked against
// the conformance cases (the same as `npx tiny-pi-conformance`) in a sandboxed frame (sandbox.html), never in
// this page, whose CSP stays as strict as it is.

import { t } from "./i18n.js";
import { CASES } from "./scenarios.js";
import { DEFAULT_TIME_LIMIT_MS, formatCase, formatSummary } from "./conformance/check.js";

const CHECK_URL = new URL("./conformance/check.js", import.meta.url);
const SANDBOX_URL = new URL("./sandbox.html", import.meta.url);
const $ = (id) => document.querySelector(`[data-testid="${id}"]`);

/**
 * Checks a loop module (its source text) in a fresh sandboxed frame. `onCase(report)` hears each case as it ends.
 * Resolves to {passed, failed, reports} or {loadError}.
 */
export async function checkLoopSource(source, { timeLimitMs = DEFAULT_TIME_LIMIT_MS, onCase } = {}) {
  const check = await (await fetch(CHECK_URL)).text();
  return new Promise((resolve) => {
    const frame = document.createElement("iframe");
    frame.sandbox = "allow-scripts";
    frame.hidden = true;
    frame.title = "sandbox";
    frame.dataset.testid = "loop-sandbox";
    const channel = new MessageChannel();
    channel.port1.onmessage = ({ data }) => {
      if (data.type === "case") onCase?.(data.report);
      else if (data.type === "result") {
        channel.port1.close();
        frame.remove();
        resolve(data.result);
      }
    };
    frame.addEventListener("load", () => frame.contentWindow.postMessage({ check, loop: source, cases: CASES, timeLimitMs }, "*", [channel.port2]), { once: true });
    frame.src = SANDBOX_URL.href;
    document.body.append(frame);
  });
}

export function wireLoopCheck() {
  const file = $("loop-file");
  const button = $("loop-check");
  const out = $("loop-report");
  const status = $("loop-status");
  file.addEventListener("change", () => {
    button.disabled = !file.files?.length;
  });
  button.addEventListener("click", async () => {
    const picked = file.files?.[0];
    if (!picked) return;
    button.disabled = true;
    out.textContent = "";
    status.dataset.state = "running";
    status.textContent = t("loop.running", { name: picked.name, n: CASES.length });
    const lines = [];
    const result = await checkLoopSource(await picked.text(), {
      onCase: (report) => {
        lines.push(formatCase(report));
        out.textContent = lines.join("\n");
      },
    });
    button.disabled = false;
    if (result.loadError) {
      status.dataset.state = "error";
      status.textContent = t("loop.loadError", { error: result.loadError });
      status.focus();
      return;
    }
    status.dataset.state = result.failed ? "failed" : "passed";
    status.textContent = `${t("loop.done", { name: picked.name })} ${formatSummary(result)}`;
    // Not a live region (the page has one, the run's status): the outcome takes the focus instead.
    status.focus();
  });
}
