// Embed mode, for a lesson's iframe: ?embed=1&scenario=<id>&panels=timeline,transcript&autoplay=1&lang=zh shows
// one scenario with only the named panels (the run's buttons always), without the page's header and pickers,
// and tells the parent page its height whenever it changes:
//
//   parent.postMessage({ type: "tiny-pi:height", height: <CSS px>, scenario: "<id>" }, "*")

/** The panels a lesson may name, each a [data-panel] element of index.html. */
export const PANELS = ["about", "counters", "approvals", "why", "timeline", "transcript", "pairing", "inspector", "decision", "waterfall", "fork", "trace", "editor", "check", "export", "loop"];
export const DEFAULT_PANELS = ["timeline", "transcript"];

export function readEmbed(params) {
  const on = ["1", "true"].includes(params.get("embed"));
  const panels = (params.get("panels") ?? "").split(",").map((p) => p.trim()).filter(Boolean);
  return { on, panels: panels.length ? panels : DEFAULT_PANELS, autoplay: params.get("autoplay") === "1", scenario: params.get("scenario") };
}

/** Show only the named panels. Returns an error ({key, vars}) when a name is unknown, else null. */
export function applyEmbed(embed) {
  if (!embed.on) return null;
  document.body.dataset.embed = "1";
  lastScenario = embed.scenario;
  const unknown = embed.panels.filter((p) => !PANELS.includes(p));
  for (const node of document.querySelectorAll("[data-panel]")) node.hidden = !embed.panels.includes(node.dataset.panel);
  // A group of panels with none shown takes no room.
  for (const group of document.querySelectorAll("[data-panel-group]")) group.hidden = ![...group.querySelectorAll("[data-panel]")].some((n) => !n.hidden);
  for (const node of document.querySelectorAll("details[data-panel]")) node.open = true;
  if (window.parent !== window) new ResizeObserver(() => reportHeight()).observe(document.body);
  return unknown.length ? { key: "url.unknownPanels", vars: { names: unknown.join(", "), list: PANELS.join(", ") } } : null;
}

let lastHeight = 0;
let lastScenario = null;

/** Tell the parent page how tall the page is now (only when it changed). */
export function reportHeight(scenario = lastScenario) {
  if (window.parent === window) return;
  lastScenario = scenario;
  const height = Math.ceil(document.body.getBoundingClientRect().height);
  if (height === lastHeight) return;
  lastHeight = height;
  window.parent.postMessage({ type: "tiny-pi:height", height, scenario }, "*");
}
