// The worker thread of cli.js: loads the module under test and runs the cases, reporting each as it ends.
import { parentPort, workerData } from "node:worker_threads";
import { pathToFileURL } from "node:url";
import { checkCase, loopOf } from "./check.js";

const { modulePath, cases, timeLimitMs } = workerData;
let loop;
try {
  loop = loopOf(await import(pathToFileURL(modulePath).href));
} catch (err) {
  parentPort.postMessage({ type: "load-error", error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
}
if (loop) {
  for (const kase of cases) {
    parentPort.postMessage({ type: "start", id: kase.id });
    parentPort.postMessage({ type: "case", report: await checkCase(loop, kase, { timeLimitMs }) });
  }
  parentPort.postMessage({ type: "done" });
}
// A loop may leave timers or handles behind; the worker's job is done.
process.exit(0);
