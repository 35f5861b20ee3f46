// The page's address as its state, so a learner can send a link to exactly what they see: the scenario, the
// language, the speed (when not the normal one), how far the run went (step, and wait=tools when its tools wait there to be released by hand), the order
// tools were released, where the learner aborted the run by hand (abort=<n>, or <n>-tools), a custom script in the hash
// (#script=<base64url of the deflate-raw JSON {def, base, compare?}>, `compare` the fork's comparison), and a learner's
// loop stepped through (replay=<case id>, #replay=<the same packing of {name, run, failed}>, what the kit recorded and
// whether it failed the case); a hash is
// never sent to a server.

const KEYS = ["scenario", "replay", "lang", "speed", "step", "wait", "release", "abort"];

/** `href` with the state's parameters set (others, such as embed or panels, kept) and its hash. */
export function stateUrl(href, { scenario, replay = null, lang, speed = null, step, wait = null, release, abort = null, hash }) {
  const url = new URL(href);
  const values = { scenario, replay, lang, speed, step, wait, release: release ? releaseParam(release) : null, abort: abort ? abortParam(abort) : null };
  for (const key of KEYS) {
    if (values[key] === null || values[key] === undefined) url.searchParams.delete(key);
    else url.searchParams.set(key, String(values[key]));
  }
  url.hash = hash ?? "";
  return url.href;
}

/** The release order as one parameter: call ids joined by commas, a comma or a % inside an id written %2C or %25,
 * so that every id reads back as it was (readRelease). */
export function releaseParam(ids) {
  return ids.map((id) => id.replace(/[%,]/g, (c) => (c === "%" ? "%25" : "%2C"))).join(",");
}

/** The call ids of a release parameter, in order (a link written before ids were escaped reads the same, unless
 * one of its ids holds "%2C" or "%25"). */
export function readRelease(text) {
  return text
    .split(",")
    .filter(Boolean)
    .map((id) => id.replace(/%(2C|25)/gi, (_, code) => (code === "25" ? "%" : ",")));
}

/** Where the learner aborted the run by hand, as one parameter: `<n>` (held right after event n), `<n>-tools` (the
 * loop had gone on past event n and its tools were out, waiting at their gates). */
export function abortParam({ seq, tools = false }) {
  return `${seq}${tools ? "-tools" : ""}`;
}

/** An abort parameter read back ({seq, tools}), or null when it is none. */
export function readAbort(text) {
  const match = /^(0|[1-9]\d*)(-tools)?$/.exec(text ?? "");
  return match ? { seq: Number(match[1]), tools: match[2] !== undefined } : null;
}

async function pipe(bytes, transform) {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(transform)).arrayBuffer());
}

const toBase64Url = (bytes) => {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};
const fromBase64Url = (text) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

/** A JSON value packed for the hash (#script=, #replay=): base64url of its deflate-raw JSON. */
export async function encodeHash(value) {
  return toBase64Url(await pipe(new TextEncoder().encode(JSON.stringify(value)), new CompressionStream("deflate-raw")));
}

/** The object a hash value packs (a script's {def, base, compare?}, a replay's {name, run, failed}); rejects when it is none. */
export async function decodeHash(text) {
  const value = JSON.parse(new TextDecoder().decode(await pipe(fromBase64Url(text), new DecompressionStream("deflate-raw"))));
  if (!value || typeof value !== "object") throw new Error("not a shared state");
  return value;
}
