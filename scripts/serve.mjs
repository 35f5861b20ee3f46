#!/usr/bin/env node
// Static server for the playground: www/ at "/", the built package pkg/ at "/pkg/".
// Node built-ins only, 127.0.0.1 only. Importable: startServer({ port, root }) -> { url, port, close }.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const MIME = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".wasm": "application/wasm",
  ".ts": "text/plain; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

// The built package's folder is declared in wasm-pack.toml ([package] out_dir);
// a regex keeps this server free of dependencies.
function packageDir(root) {
  try {
    const toml = fs.readFileSync(path.join(root, "wasm-pack.toml"), "utf8");
    return toml.match(/^out_dir\s*=\s*"([^"]+)"/m)?.[1] ?? "pkg";
  } catch {
    return "pkg";
  }
}

// URL prefix -> folder under root. Longest prefix first.
const mounts = (root) => [
  ["/pkg/", packageDir(root)],
  ["/", "www"],
];

function resolveFile(root, mountList, urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes("\0")) return null;
  for (const [prefix, folder] of mountList) {
    if (!decoded.startsWith(prefix)) continue;
    const base = path.join(root, folder);
    const file = path.join(base, decoded.slice(prefix.length));
    // path.join normalises "..": anything that lands outside the mount is refused.
    if (file !== base && !file.startsWith(base + path.sep)) return null;
    return file;
  }
  return null;
}

function handler(root) {
  const mountList = mounts(root);
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    const urlPath = new URL(req.url, "http://x").pathname;
    if (mountList.some(([prefix]) => prefix === urlPath + "/")) {
      res.writeHead(301, { location: urlPath + "/" }).end();
      return;
    }
    let file = resolveFile(root, mountList, urlPath);
    if (!file) {
      res.writeHead(403, { "content-type": "text/plain" }).end("forbidden\n");
      return;
    }
    fs.stat(file, (err, st) => {
      if (!err && st.isDirectory()) {
        if (!urlPath.endsWith("/")) {
          res.writeHead(301, { location: urlPath + "/" }).end();
          return;
        }
        file = path.join(file, "index.html");
        st = fs.existsSync(file) ? fs.statSync(file) : null;
      }
      if (err || !st || !st.isFile()) {
        res.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${urlPath}\n`);
        return;
      }
      res.writeHead(200, {
        "content-type": MIME[path.extname(file).toLowerCase()] ?? "application/octet-stream",
        "content-length": st.size,
        // The playground is rebuilt often; never serve a stale pkg/.
        "cache-control": "no-store",
      });
      if (req.method === "HEAD") res.end();
      else fs.createReadStream(file).pipe(res);
    });
  };
}

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
 * Start the server. port: number (0 = any free port); when the port is taken,
 * falls back to a free one. root: the repo folder holding www/ and pkg/.
 */
export async function startServer({ port = 8080, root = repoRoot } = {}) {
  const server = http.createServer(handler(path.resolve(root)));
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
  const wanted = Number(process.env.PORT ?? 8080);
  const { url, port } = await startServer({ port: wanted });
  if (port !== wanted) console.log(`port ${wanted} is taken; using ${port}`);
  if (!fs.existsSync(path.join(repoRoot, packageDir(repoRoot), "package.json"))) console.log("note: the package is not built yet (node scripts/build.mjs)");
  console.log(`serving www/ at ${url} and pkg/ at ${url}pkg/  (Ctrl-C to stop)`);
}
