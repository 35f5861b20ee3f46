// The live model (live.html, the same page with a CSP that may connect out): the loop talks to a real
// OpenAI-compatible chat-completions endpoint through pi-ai's openai-completions provider, bundled into
// live/pi-openai.js by scripts/site.mjs. Base URL, model and key are what the user enters; they are kept in
// sessionStorage only (gone with the tab), never in the URL or localStorage. The scenario's input, system prompt and
// tools are used; its script is not.

import { t } from "./i18n.js";

export const LIVE = document.body.dataset.mode === "live";
const KEY = "tiny-pi-live";
const $ = (id) => document.querySelector(`[data-testid="${id}"]`);
let provider = null; // pi-ai's streamSimpleOpenAICompletions, loaded in live mode only

function settings() {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? "null");
  } catch {
    return null;
  }
}

/** Whether the live model can run: a base URL and a model saved. */
export function liveReady() {
  return Boolean(current?.baseUrl && current?.model);
}

/** Where the key goes: the origin of the base URL typed (or null while it is no URL). */
function keyTarget(baseUrl) {
  try {
    return new URL(baseUrl).origin;
  } catch {
    return null;
  }
}

/** Whether this page may connect to a URL at all (its CSP: https, or plain http on this machine). */
export function allowedByPage(url) {
  try {
    const u = new URL(url);
    return u.protocol === "https:" || (u.protocol === "http:" && ["localhost", "127.0.0.1"].includes(u.hostname));
  } catch {
    return false;
  }
}

/**
 * Why a request to the endpoint failed with no answer the page could read ("Connection error."): the page asks once
 * more, in `no-cors` mode, whose answer the browser hides but does not refuse. If that one is answered, the server is
 * there and the browser kept its answer from the page: CORS. If not, nothing answered. Resolves to {kind, vars}:
 * kind "cors" | "unreachable" | "blocked" (the page may not connect there at all).
 */
export async function diagnoseConnection(baseUrl) {
  const url = `${String(baseUrl).replace(/\/+$/, "")}/chat/completions`;
  const here = location.origin;
  if (!allowedByPage(url)) return { kind: "blocked", vars: { url, here } };
  try {
    await fetch(url, { method: "POST", mode: "no-cors", cache: "no-store", credentials: "omit", body: "{}" });
    return { kind: "cors", vars: { url, origin: new URL(url).origin, here } };
  } catch {
    return { kind: "unreachable", vars: { url, here } };
  }
}

/** The mode link, and in live mode the endpoint form; `onSaved` runs after the settings changed. */
export async function wireLive({ onSaved = () => {} } = {}) {
  const link = $("mode-link");
  link.dataset.i18n = LIVE ? "mode.scripted" : "mode.live";
  link.textContent = t(link.dataset.i18n);
  // The other page, with this page's state (read when clicked: the address follows the run).
  link.addEventListener("click", () => {
    link.href = `${LIVE ? "./index.html" : "./live.html"}${location.search}${location.hash}`;
  });
  if (!LIVE) return;
  $("live").hidden = false;
  const fields = { baseUrl: $("live-base-url"), model: $("live-model"), apiKey: $("live-key") };
  const saved = settings();
  for (const [name, input] of Object.entries(fields)) input.value = saved?.[name] ?? "";
  // The key goes, in a header, to whatever base URL is typed: say where, as it is typed.
  const showTarget = () => {
    const target = keyTarget(fields.baseUrl.value.trim());
    const out = $("live-key-target");
    out.dataset.target = target ?? "";
    out.textContent = target ? t("live.keyTarget", { origin: target }) : t("live.keyTargetNone");
  };
  fields.baseUrl.addEventListener("input", showTarget);
  showTarget();
  $("live-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const value = Object.fromEntries(Object.entries(fields).map(([name, input]) => [name, input.value.trim()]));
    try {
      sessionStorage.setItem(KEY, JSON.stringify(value));
    } catch {
      // storage blocked: this tab's run uses the values all the same
    }
    current = value;
    $("live-diagnosis").hidden = true;
    $("live-status").textContent = liveReady() ? t("live.saved", { model: value.model, url: value.baseUrl }) : t("live.missing");
    $("live-status").focus();
    onSaved();
  });
  current = saved;
  provider = (await import("./live/pi-openai.js")).streamSimpleOpenAICompletions;
}

let current = null;

/** A Model that streams from the endpoint the user entered; `onPayload(body)` hears each HTTP request body the
 * provider sends (pi-ai's `onPayload`), before it is sent. */
export function liveModel({ onPayload = () => {} } = {}) {
  return {
    stream(request, options) {
      const s = current;
      if (!s?.baseUrl || !s?.model) throw new Error(t("live.missing"));
      const piModel = {
        id: s.model, name: s.model, api: "openai-completions", provider: "openai-compatible", baseUrl: s.baseUrl, reasoning: false,
        input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens: 4096,
      };
      // pi-ai refuses to run without a key; an endpoint that needs none gets a placeholder.
      return provider(piModel, request, {
        signal: options?.signal,
        apiKey: s.apiKey || "none",
        onPayload: (payload) => {
          onPayload(structuredClone(payload));
          return undefined; // sent as it is
        },
      });
    },
  };
}
