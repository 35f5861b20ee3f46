// What the tryout suites ask of the page's state: its address, and where a run stands (waiting at its
// gates or held after an event). Each wait polls the page (the harness's waitUntil), never a sleep.

export const $ = (id) => `[data-testid="${id}"]`;

/** The address's parameters, as an object. */
export const params = (P) => P.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));

/** The address of the page as it stands, relative to the server (what a learner copies). */
export const addressOf = (P) => P.evaluate(() => location.search + location.hash);

/** Wait until the run stands after event n, not held, its tools waiting at their gates: exactly `gates` (call ids)
 * have a Release button. */
export const waitingAt = (P, n, gates) =>
  P.waitUntil(
    (n, gates) => {
      const shown = [...document.querySelectorAll('[data-testid^="release-"]')].map((b) => b.dataset.testid.slice("release-".length)).sort();
      return (
        document.querySelector('[data-testid="status"]').dataset.run === "active" &&
        document.querySelectorAll('[data-testid="timeline"] > li').length === n &&
        !document.querySelector('[data-testid="timeline"] > li.held') &&
        JSON.stringify(shown) === JSON.stringify([...gates].sort())
      );
    },
    n,
    gates,
  );

/** Wait until the run is held right after event n. */
export const heldAt = (P, n) => P.waitFor(`${$("timeline")} > li.held[data-seq="${n}"]`);
