// The course scenarios: the cases of the conformance kit (conformance/cases.json, one JSON file shared with the
// `tiny-pi-conformance` command), each with its script (the assistant messages ScriptedModel replays, one per model
// request), its tools' behaviour and what SPEC says the run yields. app.js runs them through the real
// runAgentLoop; nothing here imitates it.

const CASES_URL = new URL("./conformance/cases.json", import.meta.url);
// The page's own scenarios, in the same format: SPEC parts two and three (hooks, queues, custom roles, approvals;
// budgets, retries, compaction), which the kit (SPEC §4 only) does not check. Their `expect` holds the counts the
// page shows, not every event.
const PAGE_CASES_URL = new URL("./scenarios.json", import.meta.url);

async function loadCases(url) {
  if (url.protocol === "file:") {
    // The page's modules tested in Node, without a browser.
    const { readFile } = await import("node:fs/promises");
    return JSON.parse(await readFile(url, "utf8"));
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url.pathname}: HTTP ${response.status}`);
  return response.json();
}

// The scenarios' own words (messages, answers, progress) in English: exact string for exact string (the kit checks
// the Chinese originals).
const TEXT_URL = new URL("./scenario-text.json", import.meta.url);

const [kit, own, text] = await Promise.all([loadCases(CASES_URL), loadCases(PAGE_CASES_URL), loadCases(TEXT_URL)]);

/** The cases as the kit has them: { id, spec, title, about, def, expect: { reason, steps, events, messages } }. */
export const CASES = kit.cases;

/** What the course says the run ends with (shown next to the live counters), read off a case's expectations
 * (the page's own cases state the counts themselves). */
function expectOf({ expect }) {
  if (!expect.events) return { ...expect };
  const count = (test) => expect.events.filter(test).length;
  return {
    reason: expect.reason,
    steps: expect.steps,
    requests: count((e) => e.type === "model_event" && e.event.type === "start"),
    executions: count((e) => e.type === "tool_start"),
    messages: expect.messages.length,
  };
}

/** Each scenario with the chapter step it teaches (`step`: "1" to "5", "optional"; "two" for the page's own, which go
 * beyond the chapter) and whether a learner's loop may leave it (`optional`). */
export const SCENARIOS = [
  ...CASES.map((c) => ({ ...c, part: "chapter" })),
  ...own.cases.map((c) => ({ ...c, step: "two", part: "two" })),
].map((c) => ({ id: c.id, spec: c.spec, step: c.step, optional: c.optional === true, part: c.part, title: c.title, about: c.about, rule: c.rule, expect: expectOf(c), def: c.def }));

/**
 * A definition in the page's language (`lang`, zh or en), both ways through scenario-text.json's table for that
 * language, exact string for exact string: in English, every string the course wrote in Chinese (messages, answers,
 * progress) becomes its English text (`en`); in Chinese, the system prompt and tool descriptions, written in English,
 * become their Chinese (`zh`). A string the table lacks, keys, ids and anything else stay as they are. A new copy.
 */
export function localizeDef(def, lang) {
  const table = text[lang];
  const walk = (v) => {
    if (typeof v === "string") return table && Object.hasOwn(table, v) ? table[v] : v;
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(structuredClone(def));
}

export function scenarioById(id) {
  return SCENARIOS.find((s) => s.id === id);
}

/** A deep copy, so edits and runs never change the definitions above. */
export function cloneDef(value) {
  return structuredClone(value);
}

// --- the script editor's schema -------------------------------------------------------------

// A new field is one entry here, its check below, and its use in runner.js (and conformance/check.js when the kit's
// cases use it). SPEC part two's options are data too: `hooks` names what each hook does (runner.js turns it into
// the function), `steering`/`followUp` list what the queues give each time they are asked. Part three's `budget` and
// `retry` are runAgentLoop's own options; `compaction` is its limits and the `summary` the page's summarizer writes.
const DEF_KEYS = [
  "systemPrompt", "messages", "script", "tools", "executor", "maxSteps", "abort", "release",
  "toolExecution", "toolTimeoutMs", "hooks", "steering", "followUp", "customRoles", "approvals", "startSteps",
  "budget", "retry", "compaction",
];
const BUDGET_KEYS = ["maxTokens", "maxCost"];
const RETRY_KEYS = ["maxRetries", "baseDelayMs", "maxDelayMs"];
const COMPACTION_KEYS = ["maxContextTokens", "keepRecentTokens", "summary"];
const TOOL_KEYS = ["description", "parameters", "answer", "details", "isError", "delay", "gate", "reject", "progress", "executionMode", "timeoutMs", "terminate", "needsApproval"];
const HOOK_KEYS = ["beforeToolCall", "prepareRequest"];
const EXECUTION_MODES = ["parallel", "sequential"];
const STOP_REASONS = ["stop", "length", "toolUse", "error", "aborted"];
const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);

function checkContent(value, path, errors) {
  if (typeof value === "string") return;
  if (!Array.isArray(value)) return errors.push({ path, code: "contentBlocks" });
  value.forEach((block, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(block)) return errors.push({ path: p, code: "object" });
    if (block.type === "text" && typeof block.text !== "string") errors.push({ path: `${p}.text`, code: "string" });
    else if (block.type === "image" && (typeof block.data !== "string" || typeof block.mimeType !== "string"))
      errors.push({ path: p, code: "image" });
    else if (block.type !== "text" && block.type !== "image") errors.push({ path: `${p}.type`, code: "oneOf", vars: { list: '"text", "image"' } });
  });
}

function checkAssistant(msg, path, errors) {
  if (!isObject(msg)) return errors.push({ path, code: "object" });
  if (msg.role !== "assistant") errors.push({ path: `${path}.role`, code: "oneOf", vars: { list: '"assistant"' } });
  if (!STOP_REASONS.includes(msg.stopReason))
    errors.push({ path: `${path}.stopReason`, code: "oneOf", vars: { list: STOP_REASONS.join(", ") } });
  if (!Array.isArray(msg.content)) return errors.push({ path: `${path}.content`, code: "array" });
  msg.content.forEach((block, i) => {
    const p = `${path}.content[${i}]`;
    if (!isObject(block)) return errors.push({ path: p, code: "object" });
    if (block.type === "text") {
      if (typeof block.text !== "string") errors.push({ path: `${p}.text`, code: "string" });
    } else if (block.type === "thinking") {
      if (typeof block.thinking !== "string") errors.push({ path: `${p}.thinking`, code: "string" });
    } else if (block.type === "toolCall") {
      if (typeof block.id !== "string" || block.id === "") errors.push({ path: `${p}.id`, code: "nonEmpty" });
      if (typeof block.name !== "string" || block.name === "") errors.push({ path: `${p}.name`, code: "nonEmpty" });
      if (!isObject(block.arguments)) errors.push({ path: `${p}.arguments`, code: "object" });
    } else errors.push({ path: `${p}.type`, code: "oneOf", vars: { list: '"text", "thinking", "toolCall"' } });
  });
  if (msg.timestamp !== undefined && typeof msg.timestamp !== "number")
    errors.push({ path: `${path}.timestamp`, code: "number" });
}

function checkMessage(msg, path, errors, customRoles = []) {
  if (!isObject(msg)) return errors.push({ path, code: "object" });
  if (customRoles.includes(msg.role)) return; // kept verbatim by the loop: any fields
  if (msg.role === "assistant") return checkAssistant(msg, path, errors);
  if (msg.role === "compaction") {
    // A compaction entry a restored conversation keeps (SPEC §13); the package checks where its cut may be.
    if (typeof msg.summary !== "string") errors.push({ path: `${path}.summary`, code: "string" });
    if (!(Number.isInteger(msg.firstKeptIndex) && msg.firstKeptIndex >= 0)) errors.push({ path: `${path}.firstKeptIndex`, code: "nonNegInt" });
    return;
  }
  if (msg.role === "user") return checkContent(msg.content, `${path}.content`, errors);
  if (msg.role === "toolResult") {
    if (typeof msg.toolCallId !== "string") errors.push({ path: `${path}.toolCallId`, code: "string" });
    if (typeof msg.toolName !== "string") errors.push({ path: `${path}.toolName`, code: "string" });
    if (!Array.isArray(msg.content)) errors.push({ path: `${path}.content`, code: "array" });
    else checkContent(msg.content, `${path}.content`, errors);
    return;
  }
  const roles = ["user", "assistant", "toolResult", "compaction", ...customRoles].map((r) => JSON.stringify(r));
  errors.push({ path: `${path}.role`, code: "oneOf", vars: { list: roles.join(", ") } });
}

const isTimeout = (v) => Number.isInteger(v) && v > 0 && v <= 2 ** 31 - 1;

/** What a queue gives each time it is asked: an array of arrays of user (or custom-role) messages. */
function checkQueue(value, path, errors, customRoles) {
  if (!Array.isArray(value) || !value.every(Array.isArray)) return errors.push({ path, code: "queue" });
  value.forEach((batch, i) =>
    batch.forEach((m, j) => {
      const p = `${path}[${i}][${j}]`;
      if (isObject(m) && m.role !== "user" && !customRoles.includes(m.role)) errors.push({ path: `${p}.role`, code: "queued" });
      else checkMessage(m, p, errors, customRoles);
    }),
  );
}

/** The part-two options of a definition: execution, timeouts, hooks as data, queues, custom roles, decisions. */
function checkControl(d, errors) {
  const customRoles = Array.isArray(d.customRoles) ? d.customRoles : [];
  if (d.customRoles !== undefined && !(Array.isArray(d.customRoles) && d.customRoles.every((r) => typeof r === "string" && r !== "" && !["user", "assistant", "toolResult", "compaction"].includes(r))))
    errors.push({ path: "customRoles", code: "customRoles" });
  if (d.toolExecution !== undefined && !EXECUTION_MODES.includes(d.toolExecution)) errors.push({ path: "toolExecution", code: "oneOf", vars: { list: '"parallel", "sequential"' } });
  if (d.toolTimeoutMs !== undefined && !isTimeout(d.toolTimeoutMs)) errors.push({ path: "toolTimeoutMs", code: "timeout" });
  if (d.startSteps !== undefined && !(Number.isInteger(d.startSteps) && d.startSteps >= 0)) errors.push({ path: "startSteps", code: "nonNegInt" });
  if (d.hooks !== undefined) {
    if (!isObject(d.hooks)) errors.push({ path: "hooks", code: "object" });
    else {
      for (const key of Object.keys(d.hooks)) if (!HOOK_KEYS.includes(key)) errors.push({ path: `hooks.${key}`, code: "unknownField", vars: { list: HOOK_KEYS.join(", ") } });
      const before = d.hooks.beforeToolCall;
      if (before !== undefined) {
        if (!isObject(before) || !Array.isArray(before.block) || !before.block.every((n) => typeof n === "string")) errors.push({ path: "hooks.beforeToolCall", code: "blockHook" });
        else if (before.reason !== undefined && typeof before.reason !== "string") errors.push({ path: "hooks.beforeToolCall.reason", code: "string" });
      }
      const prepare = d.hooks.prepareRequest;
      if (prepare !== undefined && !(isObject(prepare) && Number.isInteger(prepare.keepTurns) && prepare.keepTurns > 0)) errors.push({ path: "hooks.prepareRequest", code: "keepTurns" });
    }
  }
  for (const queue of ["steering", "followUp"]) if (d[queue] !== undefined) checkQueue(d[queue], queue, errors, customRoles);
  if (d.approvals !== undefined) {
    if (!isObject(d.approvals)) errors.push({ path: "approvals", code: "object" });
    else
      for (const [id, a] of Object.entries(d.approvals))
        if (!isObject(a) || typeof a.approve !== "boolean" || (a.reason !== undefined && typeof a.reason !== "string")) errors.push({ path: `approvals.${id}`, code: "approval" });
  }
  checkPartThree(d, errors);
  return customRoles;
}

const isPositive = (v) => typeof v === "number" && Number.isFinite(v) && v > 0;
const isDelay = (v) => typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 60000;

/** An object option with only `keys`, each checked by `check(value) -> code | null`. */
function checkOption(value, path, keys, check, errors) {
  if (value === undefined) return;
  if (!isObject(value)) return errors.push({ path, code: "object" });
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) errors.push({ path: `${path}.${key}`, code: "unknownField", vars: { list: keys.join(", ") } });
    else if (value[key] !== undefined) {
      const code = check(key, value[key]);
      if (code) errors.push({ path: `${path}.${key}`, code });
    }
  }
}

/** SPEC part three: a budget, a retry policy, compaction (its limits and the summary the page's summarizer gives). */
function checkPartThree(d, errors) {
  checkOption(d.budget, "budget", BUDGET_KEYS, (_, v) => (isPositive(v) ? null : "positive"), errors);
  checkOption(d.retry, "retry", RETRY_KEYS, (k, v) => (k === "maxRetries" ? (Number.isInteger(v) && v >= 0 ? null : "nonNegInt") : isDelay(v) ? null : "delay"), errors);
  checkOption(d.compaction, "compaction", COMPACTION_KEYS, (k, v) => (k === "summary" ? (typeof v === "string" ? null : "string") : isPositive(v) ? null : "positive"), errors);
  if (isObject(d.compaction)) for (const key of ["maxContextTokens", "summary"]) if (d.compaction[key] === undefined) errors.push({ path: `compaction.${key}`, code: "required" });
}

/** How deep tiny-pi reads JSON (serde_json's limit): a definition nested deeper, counted from its top, is refused
 * before anything copies it (structuredClone, the package) and fails half-way. */
export const MAX_DEPTH = 128;

/**
 * The field of a value nested more than MAX_DEPTH levels deep (its first keys on the way down, such as
 * `tools.read.details` or `messages[0]`), or null when none is. A loop, not recursion: the value may be deeper than
 * the call stack.
 */
function tooDeepPath(root) {
  const stack = [{ value: root, depth: 1, up: null, step: "" }];
  while (stack.length) {
    const node = stack.pop();
    if (node.depth > MAX_DEPTH) {
      const steps = [];
      for (let n = node; n.up; n = n.up) steps.unshift(n.step);
      const named = steps.slice(0, 5);
      while (named.length > 2 && named.at(-1).startsWith("[")) named.pop();
      return named.join("").replace(/^\./, "");
    }
    const entries = Array.isArray(node.value) ? node.value.map((v, i) => [`[${i}]`, v]) : Object.entries(node.value).map(([k, v]) => [`.${k}`, v]);
    for (const [step, value] of entries) if (value && typeof value === "object") stack.push({ value, depth: node.depth + 1, up: node, step });
  }
  return null;
}

/** The first lone surrogate of a string as `\uXXXX`, or null (the package refuses a string that holds one). */
export function loneSurrogate(s) {
  const m = /\p{Cs}/u.exec(s);
  return m ? `\\u${m[0].charCodeAt(0).toString(16).padStart(4, "0")}` : null;
}

/**
 * Each lone surrogate in a parsed JSON value's keys and strings, in the order the JSON text has them: [{path, code}],
 * `path` named as validateDefinition names a field (`script[0].content[1].text`; a key, the path of its value),
 * `code` as loneSurrogate gives it; with `first`, at most one. A loop over a stack of its own, not recursion: it is
 * run on values whatever their depth (a fork's arguments), and JSON.parse gives values nested deeper than the call
 * stack goes. Each part links to its parent and a path is written only for what is found, so a deep value costs
 * as many steps as it has parts. A parsed value has no cycles: each key and value is visited once.
 */
export function loneSurrogates(value, { first = false } = {}) {
  const found = [];
  const pathOf = (node) => {
    const steps = [];
    for (let n = node; n.up; n = n.up) steps.push(n.step);
    return steps.reverse().join("").replace(/^\./, "") || "$";
  };
  const stack = [{ value, up: null, step: "" }];
  while (stack.length) {
    const node = stack.pop();
    const v = node.value;
    if (typeof v === "string") {
      const code = loneSurrogate(v);
      if (code) {
        found.push({ path: pathOf(node), code });
        if (first) break;
      }
    } else if (v && typeof v === "object") {
      // An object's [k1, v1, k2, v2, ...] (a key is a string too, named by its value's path), pushed last first.
      const parts = Array.isArray(v)
        ? v.map((x, i) => ({ value: x, up: node, step: `[${i}]` }))
        : Object.entries(v).flatMap(([k, x]) => [{ value: k, up: node, step: `.${k}` }, { value: x, up: node, step: `.${k}` }]);
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    }
  }
  return found;
}

/**
 * Check an edited definition before it is run. Returns [{path, code, vars?}] (empty when valid); the text of
 * each code is `def.<code>` in i18n.js.
 * Deeper rules (JSON Schema of parameters, message fields) are left to the package, whose errors the page also shows.
 */
export function validateDefinition(d) {
  const errors = [];
  if (!isObject(d)) return [{ path: "$", code: "object" }];
  const deep = tooDeepPath(d);
  if (deep !== null) return [{ path: deep, code: "tooDeep", vars: { max: MAX_DEPTH } }];
  for (const key of Object.keys(d)) if (!DEF_KEYS.includes(key)) errors.push({ path: key, code: "unknownField", vars: { list: DEF_KEYS.join(", ") } });
  if (d.systemPrompt !== undefined && typeof d.systemPrompt !== "string") errors.push({ path: "systemPrompt", code: "string" });
  const customRoles = checkControl(d, errors);
  if (!Array.isArray(d.messages)) errors.push({ path: "messages", code: "array" });
  else d.messages.forEach((m, i) => checkMessage(m, `messages[${i}]`, errors, customRoles));
  if (!Array.isArray(d.script)) errors.push({ path: "script", code: "scriptArray" });
  else d.script.forEach((m, i) => checkAssistant(m, `script[${i}]`, errors));
  if (!isObject(d.tools)) errors.push({ path: "tools", code: "toolsObject" });
  else {
    for (const [name, b] of Object.entries(d.tools)) {
      const p = `tools.${name}`;
      if (!isObject(b)) { errors.push({ path: p, code: "object" }); continue; }
      for (const key of Object.keys(b)) if (!TOOL_KEYS.includes(key)) errors.push({ path: `${p}.${key}`, code: "unknownField", vars: { list: TOOL_KEYS.join(", ") } });
      if (b.description !== undefined && typeof b.description !== "string") errors.push({ path: `${p}.description`, code: "string" });
      if (b.parameters !== undefined && !isObject(b.parameters)) errors.push({ path: `${p}.parameters`, code: "schemaObject" });
      if (b.answer !== undefined) checkContent(b.answer, `${p}.answer`, errors);
      if (b.progress !== undefined) checkContent(b.progress, `${p}.progress`, errors);
      if (b.isError !== undefined && typeof b.isError !== "boolean") errors.push({ path: `${p}.isError`, code: "boolean" });
      if (b.gate !== undefined && typeof b.gate !== "boolean") errors.push({ path: `${p}.gate`, code: "boolean" });
      if (b.delay !== undefined && !(Number.isFinite(b.delay) && b.delay >= 0 && b.delay <= 60000))
        errors.push({ path: `${p}.delay`, code: "delay" });
      if (b.reject !== undefined && b.reject !== null && typeof b.reject !== "string") errors.push({ path: `${p}.reject`, code: "reject" });
      if (b.executionMode !== undefined && !EXECUTION_MODES.includes(b.executionMode)) errors.push({ path: `${p}.executionMode`, code: "oneOf", vars: { list: '"parallel", "sequential"' } });
      if (b.timeoutMs !== undefined && !isTimeout(b.timeoutMs)) errors.push({ path: `${p}.timeoutMs`, code: "timeout" });
      for (const key of ["terminate", "needsApproval"]) if (b[key] !== undefined && typeof b[key] !== "boolean") errors.push({ path: `${p}.${key}`, code: "boolean" });
    }
  }
  if (d.executor !== undefined && d.executor !== "registry" && d.executor !== "custom") errors.push({ path: "executor", code: "oneOf", vars: { list: '"registry", "custom"' } });
  if (d.maxSteps !== undefined && !(Number.isInteger(d.maxSteps) && d.maxSteps >= 0)) errors.push({ path: "maxSteps", code: "nonNegInt" });
  if (d.release !== undefined && !(Array.isArray(d.release) && d.release.every((id) => typeof id === "string")))
    errors.push({ path: "release", code: "stringArray" });
  if (d.abort !== undefined && !["none", "before-start", "during-tool"].includes(d.abort))
    errors.push({ path: "abort", code: "oneOf", vars: { list: '"none", "before-start", "during-tool"' } });
  // The package refuses a whole script for one lone surrogate in any of its strings or keys: named here, at its field.
  for (const { path, code } of loneSurrogates(d)) errors.push({ path, code: "surrogate", vars: { code } });
  return errors;
}

/** Parse a pasted transcript: a JSON array, or JSONL (one message per line). Throws {line, message} on failure. */
export function parseTranscript(source) {
  const trimmed = source.trim();
  if (trimmed === "") return [];
  if (trimmed.startsWith("[")) {
    let value;
    try {
      value = JSON.parse(trimmed);
    } catch (err) {
      // V8's message does not always say where: the line is where the text stops being JSON.
      const at = jsonErrorIndex(source);
      throw Object.assign(new Error(err.message), { line: source.slice(0, at ?? 0).split("\n").length });
    }
    if (!Array.isArray(value)) throw Object.assign(new Error("not an array"), { notArray: true });
    return value;
  }
  const messages = [];
  trimmed.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") return;
    try {
      messages.push(JSON.parse(line));
    } catch (err) {
      throw Object.assign(new Error(err.message), { line: i + 1 });
    }
  });
  return messages;
}

/** A JSON number, true, false or null, matched where its `lastIndex` is set (the scanners below). */
const JSON_LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;

/**
 * Where JSON.parse gives up in `source` (an index), or null when it parses; V8's messages do not always say.
 * The containers open at each point are a list, not the call stack: a text may nest deeper than the stack goes.
 */
export function jsonErrorIndex(source) {
  let i = 0;
  const fail = () => {
    throw { at: i };
  };
  const ws = () => {
    while (i < source.length && " \t\n\r".includes(source[i])) i++;
  };
  const string = () => {
    i++;
    while (i < source.length) {
      const c = source[i];
      if (c === '"') return void i++;
      if (c < " ") fail();
      i++;
      if (c !== "\\") continue;
      // An escape: one of JSON's, \u with four hex digits.
      if (source[i] === "u") {
        i++;
        for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(source[i] ?? "")) fail();
      } else if (i < source.length && '"\\/bfnrt'.includes(source[i])) i++;
      else fail();
    }
    fail();
  };
  const key = () => {
    ws();
    if (source[i] !== '"') fail();
    string();
    ws();
    if (source[i] !== ":") fail();
    i++;
  };
  const open = []; // "{" or "[" for each container around i, innermost last
  try {
    for (;;) {
      // A value starts here.
      ws();
      const c = source[i];
      if (c === "{" || c === "[") {
        i++;
        ws();
        if (source[i] === (c === "{" ? "}" : "]")) i++;
        else {
          open.push(c);
          if (c === "{") key();
          continue;
        }
      } else if (c === '"') string();
      else {
        JSON_LITERAL.lastIndex = i;
        const m = JSON_LITERAL.exec(source);
        if (!m) fail();
        i += m[0].length;
      }
      // After a value: the next entry of the innermost container, its end, or the end of the text.
      for (;;) {
        ws();
        const top = open.at(-1);
        if (top === undefined) {
          if (i < source.length) fail();
          return null;
        }
        if (source[i] === ",") {
          i++;
          if (top === "{") key();
          break;
        }
        if (source[i] !== (top === "{" ? "}" : "]")) fail();
        i++;
        open.pop();
      }
    }
  } catch (err) {
    if (err && typeof err.at === "number") return err.at;
    throw err;
  }
}

/**
 * Where each value of a JSON text starts, by the path validateDefinition names it with (`script[0].stopReason`,
 * `tools.read.delay`, `$` for the whole), down to MAX_DEPTH levels. Returns null when the text does not parse.
 */
export function jsonPaths(source) {
  if (jsonErrorIndex(source) !== null) return null;
  const paths = new Map();
  let i = 0;
  const ws = () => {
    while (i < source.length && " \t\n\r".includes(source[i])) i++;
  };
  const string = () => {
    const start = i;
    i++;
    while (source[i] !== '"') i += source[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(source.slice(start, i));
  };
  const open = []; // each container around i, innermost last: {c, path, n (its entries so far)}
  let path = "";
  for (;;) {
    ws();
    if (path !== null) paths.set(path || "$", i);
    const c = source[i];
    if (c === "{" || c === "[") {
      i++;
      open.push({ c, path, n: 0 });
    } else if (c === '"') string();
    else {
      JSON_LITERAL.lastIndex = i;
      i += JSON_LITERAL.exec(source)[0].length;
    }
    // The next entry of the innermost container, or its end.
    for (;;) {
      const top = open.at(-1);
      if (top === undefined) return paths;
      ws();
      if (source[i] === "}" || source[i] === "]") {
        i++;
        open.pop();
        continue;
      }
      if (top.n > 0) {
        i++; // the comma
        ws();
      }
      const key = top.c === "{" ? string() : null;
      if (key !== null) {
        ws();
        i++; // the colon
      }
      // Deeper than tiny-pi reads, values get no path (validateDefinition names their field).
      if (top.path === null || open.length > MAX_DEPTH) path = null;
      else path = key === null ? `${top.path}[${top.n}]` : top.path ? `${top.path}.${key}` : key;
      top.n++;
      break;
    }
  }
}

/** The line (from 1) of the value a path names, or of its nearest parent that exists in the text. */
export function lineOfPath(source, path) {
  const paths = jsonPaths(source);
  if (!paths) return 1;
  let p = path;
  while (p && !paths.has(p)) {
    const parent = p.replace(/(\.[^.[\]]*|\[\d+\])$/, "");
    p = parent === p ? "" : parent;
  }
  const at = paths.get(p || "$") ?? 0;
  return source.slice(0, at).split("\n").length;
}

/** How many model responses (assistant messages) a transcript already holds: where the script goes on from. */
export function responsesIn(messages) {
  return messages.filter((m) => m?.role === "assistant").length;
}
