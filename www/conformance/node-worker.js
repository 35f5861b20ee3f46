// The worker thread of cli.js: loads the module under test and checks the cases, reporting each as it ends.
import { parentPort, workerData } from "node:worker_threads";
import { pathToFileURL } from "node:url";
import { serveCases } from "./check.js";

const { modulePath, cases, timeLimitMs } = workerData;
await serveCases(() => import(pathToFileURL(modulePath).href), cases, { timeLimitMs }, (msg) => parentPort.postMessage(msg));
// A loop may leave timers or handles behind; the worker's job is done.
process.exit(0);
