// The sandbox of the playground's "Check your own loop": runs a learner's loop module against the conformance
// cases. The frame is sandboxed (allow-scripts only) and its CSP (sandbox.html) allows no connection; the module
// and the kit (conformance/check.js, whose text the page sends) run in a worker made from blob: URLs, so a loop
// that blocks its thread is stopped after the time limit (the worker is terminated) and the page never freezes.
// Protocol: the page posts {check, loop, cases, timeLimitMs, record} with a MessagePort; this frame answers on the port
// {type: "case", report} per case and then {type: "result", result} ({passed, failed, reports} or {loadError}).
"use strict";

(() => {
  const WORKER = `self.onmessage = async ({ data }) => {
  const kit = await import(data.checkUrl);
  await kit.serveCases(() => import(data.loopUrl), data.cases, { timeLimitMs: data.timeLimitMs, record: data.record }, (msg) => self.postMessage(msg));
};`;
  const blobUrl = (text) => URL.createObjectURL(new Blob([text], { type: "text/javascript" }));

  addEventListener("message", async (event) => {
    const port = event.ports[0];
    if (event.source !== parent || !port) return;
    const { check, loop, cases, timeLimitMs, record = false } = event.data;
    const checkUrl = blobUrl(check);
    const loopUrl = blobUrl(loop);
    const workerUrl = blobUrl(WORKER);
    try {
      const kit = await import(checkUrl);
      const spawn = (todo, onMessage) => {
        // A classic worker: a module worker cannot start from a blob: URL in an opaque origin (Chromium); a classic
        // one can, and import() the kit and the module from there.
        const worker = new Worker(workerUrl);
        worker.onmessage = ({ data }) => onMessage(data);
        worker.onerror = (e) => {
          e.preventDefault();
          onMessage({ type: "crash", error: e.message || "the worker failed" });
        };
        worker.postMessage({ checkUrl, loopUrl, cases: todo, timeLimitMs, record });
        return { terminate: () => worker.terminate() };
      };
      const result = await kit.superviseCases(spawn, cases, { timeLimitMs, onCase: (report) => port.postMessage({ type: "case", report }) });
      port.postMessage({ type: "result", result });
    } catch (err) {
      port.postMessage({ type: "result", result: { loadError: String(err?.message ?? err) } });
    } finally {
      for (const url of [checkUrl, loopUrl, workerUrl]) URL.revokeObjectURL(url);
    }
  });
})();
