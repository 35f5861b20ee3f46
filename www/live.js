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
  $("live-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const value = Object.fromEntries(Object.entries(fields).map(([name, input]) => [name, input.value.trim()]));
    try {
      sessionStorage.setItem(KEY, JSON.stringify(value));
    } catch {
      // storage blocked: this tab's run uses the values all the same
    }
    current = value;
    $("live-status").textContent = t("live.saved", { model: value.model, url: value.baseUrl });
    $("live-status").focus();
    onSaved();
  });
  current = saved;
  provider = (await import("./live/pi-openai.js")).streamSimpleOpenAICompletions;
}

let current = null;

/** A Model (SPEC §2) that streams from the endpoint the user entered. */
export function liveModel() {
  return {
    stream(request, options) {
      const s = current;
      if (!s?.baseUrl || !s?.model) throw new Error(t("live.missing"));
      const piModel = {
        id: s.model, name: s.model, api: "openai-completions", provider: "openai-compatible", baseUrl: s.baseUrl, reasoning: false,
        input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens: 4096,
      };
      // pi-ai refuses to run without a key; an endpoint that needs none gets a placeholder.
      return provider(piModel, request, { signal: options?.signal, apiKey: s.apiKey || "none" });
    },
  };
}
