// Runs a scenario in a page and writes its outcome where the test reads it:
// <pre id="result"> gets the JSON, <body data-status> becomes "done" or "error".
export async function show(scenario) {
  const out = document.getElementById("result");
  try {
    const { problems, summary } = await scenario;
    out.textContent = JSON.stringify({ problems, summary });
    document.body.dataset.status = "done";
  } catch (e) {
    out.textContent = JSON.stringify({ error: String(e?.stack ?? e) });
    document.body.dataset.status = "error";
  }
}
