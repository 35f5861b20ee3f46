#!/usr/bin/env node
// Serves the static site dist/ (scripts/site.mjs builds it) with sirv, on 127.0.0.1 only.
// Importable: startServer({ port, dir }) -> { url, port, close }.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import sirv from "sirv";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const DIST = path.join(repoRoot, "dist");

function listen(server, port) {
  return new Promise((resolve, reject) => {
    const onError = (err) => reject(err);
    server.once("error", onError);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", onError);
      resolve(server.address().port);
    });
  });
}

/**
 * Start the server. port: number (0 = any free port); when the port is taken, falls back to a free one.
 * dir: the folder to serve (default dist/).
 */
export async function startServer({ port = 8080, dir = DIST } = {}) {
  // dev: files are read on each request (the site is rebuilt often), never cached by the browser.
  const serve = sirv(dir, { dev: true, etag: false });
  const server = http.createServer((req, res) =>
    serve(req, res, () => {
      res.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${req.url}\n`);
    }),
  );
  let actual;
  try {
    actual = await listen(server, port);
  } catch (err) {
    if (err.code !== "EADDRINUSE") throw err;
    actual = await listen(server, 0);
  }
  return {
    url: `http://127.0.0.1:${actual}/`,
    port: actual,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  if (!fs.existsSync(path.join(DIST, "index.html"))) {
    console.error("serve: dist/ is not built yet: run `npm run build` (or node scripts/build.mjs && node scripts/site.mjs)");
    process.exit(1);
  }
  const wanted = Number(process.env.PORT ?? 8080);
  const { url, port } = await startServer({ port: wanted });
  if (port !== wanted) console.log(`port ${wanted} is taken; using ${port}`);
  console.log(`serving dist/ (the playground and the package's browser build) at ${url}  (Ctrl-C to stop)`);
}
