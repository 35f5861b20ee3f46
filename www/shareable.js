// The page's address as its state, so a learner can send a link to exactly what they see: the scenario, the
// language, how far the run went (step), the order tools were released, and a custom script in the hash
// (#script=<base64url of the deflate-raw JSON {def, base}>, never sent to a server).

const KEYS = ["scenario", "lang", "step", "release"];

/** `href` with the state's parameters set (others, such as embed or panels, kept) and its hash. */
export function stateUrl(href, { scenario, lang, step, release, hash }) {
  const url = new URL(href);
  const values = { scenario, lang, step, release: release?.join(",") };
  for (const key of KEYS) {
    if (values[key] === null || values[key] === undefined) url.searchParams.delete(key);
    else url.searchParams.set(key, String(values[key]));
  }
  url.hash = hash ?? "";
  return url.href;
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

export async function encodeScript(value) {
  return toBase64Url(await pipe(new TextEncoder().encode(JSON.stringify(value)), new CompressionStream("deflate-raw")));
}

/** The {def, base} a #script= value carries; rejects when it is not one. */
export async function decodeScript(text) {
  const value = JSON.parse(new TextDecoder().decode(await pipe(fromBase64Url(text), new DecompressionStream("deflate-raw"))));
  if (!value || typeof value !== "object") throw new Error("not a shared script");
  return value;
}
