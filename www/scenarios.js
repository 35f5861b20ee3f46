// The course scenarios as data: input messages, the assistant messages ScriptedModel replays (one per model
// request) and each tool's behaviour. app.js runs them through the real runAgentLoop; nothing here imitates it.

const text = (t) => ({ type: "text", text: t });
const call = (id, name, args) => ({ type: "toolCall", id, name, arguments: args });
const assistant = (content, stopReason, timestamp, extra = {}) => ({ role: "assistant", content, stopReason, timestamp, ...extra });

const README_USER = { role: "user", content: "请读取 README.md，并告诉我项目名。", timestamp: 1 };
const README_CALL = call("call-1", "read", { path: "README.md" });
const README_TEXT = "# tiny-pi\nA small agent runtime.";
const FIRST_ANSWER = assistant([text("我先读取项目说明。"), README_CALL], "toolUse", 2);
const FINAL_ANSWER = assistant([text("项目名是 tiny-pi。")], "stop", 4);

const READ_TOOL = {
  description: "Read a file of the in-memory workspace (a fixed README).",
  parameters: {
    type: "object",
    properties: { path: { type: "string" } },
    required: ["path"],
    additionalProperties: false,
  },
  answer: README_TEXT,
};

const NOTE_TOOL = (answer) => ({
  description: "Returns a fixed note.",
  parameters: { type: "object", properties: { name: { type: "string" } } },
  answer,
});

function def(overrides) {
  return {
    systemPrompt: "You are tiny-pi, a small agent. Use tools to read files.",
    messages: [README_USER],
    script: [],
    tools: { read: READ_TOOL },
    executor: "registry",
    maxSteps: 32,
    abort: "none",
    ...overrides,
  };
}

/** expect: what the course says the run ends with (shown next to the live counters). */
export const SCENARIOS = [
  {
    id: "readme",
    title: { zh: "README 往返（两次模型请求）", en: "README round trip (two model requests)" },
    about: {
      zh: "模型先提出 read(call-1)，工具返回 README，第二次请求看到配对结果后回答项目名。13 个事件，4 条消息。",
      en: "The model first asks for read(call-1); the tool returns the README; the second request sees the paired result and answers. 13 events, 4 messages.",
    },
    expect: { reason: "stop", steps: 2, requests: 2, executions: 1, messages: 4 },
    def: def({ script: [FIRST_ANSWER, FINAL_ANSWER] }),
  },
  {
    id: "plain-stop",
    title: { zh: "纯文本 stop", en: "Plain stop" },
    about: {
      zh: "模型直接以 stop 回答，没有工具调用：一次请求，messages = [user, assistant]。",
      en: "The model answers with stop and no tool call: one request, messages = [user, assistant].",
    },
    expect: { reason: "stop", steps: 1, requests: 1, executions: 0, messages: 2 },
    def: def({ script: [assistant([text("项目名是 tiny-pi。")], "stop", 2)] }),
  },
  {
    id: "length",
    title: { zh: "length：截断的回复，工具不启动", en: "length: truncated response, no tool starts" },
    about: {
      zh: "回复因长度上限而结束，参数可能不完整：两个调用都不执行，每个都得到 skipped 结果（reason length）。",
      en: "The response was cut at the length limit, so arguments may be incomplete: neither call runs, each gets a skipped result (reason length).",
    },
    expect: { reason: "length", steps: 1, requests: 1, executions: 0, messages: 4 },
    def: def({
      script: [
        assistant([text("我先读取项目说明。"), README_CALL, call("call-2", "read", { path: "Cargo.to" })], "length", 2),
      ],
    }),
  },
  {
    id: "error",
    title: { zh: "error：模型出错", en: "error: the model failed" },
    about: {
      zh: "stopReason 为 error 的回复中的调用不执行，得到 skipped 结果（reason error），运行以 error 结束。",
      en: "Calls in a response whose stopReason is error do not run; they get skipped results (reason error) and the run ends with error.",
    },
    expect: { reason: "error", steps: 1, requests: 1, executions: 0, messages: 3 },
    def: def({
      script: [assistant([README_CALL], "error", 2, { errorMessage: "provider connection reset" })],
    }),
  },
  {
    id: "aborted",
    title: { zh: "aborted：模型被取消", en: "aborted: the model was cancelled" },
    about: {
      zh: "stopReason 为 aborted 的回复：调用不执行，得到 skipped 结果（reason aborted），运行以 aborted 结束。",
      en: "A response whose stopReason is aborted: calls do not run, they get skipped results (reason aborted), and the run ends aborted.",
    },
    expect: { reason: "aborted", steps: 1, requests: 1, executions: 0, messages: 3 },
    def: def({
      script: [assistant([README_CALL], "aborted", 2, { errorMessage: "Request was aborted" })],
    }),
  },
  {
    id: "stop-with-calls",
    title: { zh: "stop 却带着调用（协议矛盾）", en: "stop with calls (a contradiction)" },
    about: {
      zh: "stop 中出现工具调用：不执行，写入 unexpected-stop 的 skipped 结果，运行以 error 结束。",
      en: "A stop response that contains a tool call: it does not run, an unexpected-stop skipped result is written, the run ends with error.",
    },
    expect: { reason: "error", steps: 1, requests: 1, executions: 0, messages: 3 },
    def: def({ script: [assistant([text("我先读取项目说明。"), README_CALL], "stop", 2)] }),
  },
  {
    id: "tooluse-no-calls",
    title: { zh: "toolUse 却没有调用", en: "toolUse without calls" },
    about: {
      zh: "toolUse 但 content 中没有任何调用：没有可执行的批次，也没有需要配对的调用，运行以 error 结束。",
      en: "toolUse with no call in the content: nothing to run and nothing to pair; the run ends with error.",
    },
    expect: { reason: "error", steps: 1, requests: 1, executions: 0, messages: 2 },
    def: def({ script: [assistant([text("我先读取项目说明。")], "toolUse", 2)] }),
  },
  {
    id: "concurrency",
    title: { zh: "两个并发工具：slow 与 fast（手动放行）", en: "Two concurrent tools: slow and fast (released by hand)" },
    about: {
      zh: "两个 tool_start 先出现，然后两个工具同时运行。按任意顺序放行 fast 和 slow：tool_end 跟随完成顺序，transcript 仍按调用顺序 slow → fast 写入。",
      en: "Both tool_start events come first, then both tools run at once. Release fast and slow in any order: tool_end follows completion order, the transcript keeps call order slow → fast.",
    },
    expect: { reason: "stop", steps: 2, requests: 2, executions: 2, messages: 5 },
    def: def({
      messages: [{ role: "user", content: "同时运行 slow 和 fast。", timestamp: 1 }],
      script: [
        assistant([call("slow-call", "slow", {}), call("fast-call", "fast", {})], "toolUse", 2),
        assistant([text("两个工具都完成了。")], "stop", 5),
      ],
      tools: {
        slow: { ...NOTE_TOOL("slow done"), gate: true },
        fast: { ...NOTE_TOOL("fast done"), gate: true },
      },
    }),
  },
  {
    id: "executor-rejects",
    title: { zh: "executor reject", en: "An executor that rejects" },
    about: {
      zh: "注入的 executeToolCall 对 search 以 Error reject：它变成同 id、同名的错误结果（保留 message，不含 stack），同批的 read 结果不丢失。",
      en: "The injected executeToolCall rejects search with an Error: it becomes an error result with the same id and name (message kept, no stack); the read result of the same batch is not lost.",
    },
    expect: { reason: "stop", steps: 2, requests: 2, executions: 2, messages: 5 },
    def: def({
      script: [
        assistant([README_CALL, call("call-2", "search", { query: "tiny-pi" })], "toolUse", 2),
        assistant([text("README 可读，搜索失败了；项目名是 tiny-pi。")], "stop", 5),
      ],
      tools: {
        read: READ_TOOL,
        search: {
          description: "Search the workspace.",
          parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
          reject: "search index unavailable",
        },
      },
      executor: "custom",
    }),
  },
  {
    id: "abort-before-start",
    title: { zh: "开始前已取消", en: "Aborted before the start" },
    about: {
      zh: "signal 在运行前已 aborted：不调用模型，steps 0，messages 就是输入。",
      en: "The signal is aborted before the run: the model is never called, steps 0, messages = the input.",
    },
    expect: { reason: "aborted", steps: 0, requests: 0, executions: 0, messages: 1 },
    def: def({ script: [FIRST_ANSWER, FINAL_ANSWER], abort: "before-start" }),
  },
  {
    id: "abort-during-tool",
    title: { zh: "工具执行中取消", en: "Aborted during a tool" },
    about: {
      zh: "read 开始执行时页面调用 abort()。loop 等 read 返回并保留它的结果，然后以 aborted 结束，不再发起第二次请求。",
      en: "The page calls abort() when read starts. The loop waits for read, keeps its result, then ends aborted without a second request.",
    },
    expect: { reason: "aborted", steps: 1, requests: 1, executions: 1, messages: 3 },
    def: def({ script: [FIRST_ANSWER, FINAL_ANSWER], abort: "during-tool" }),
  },
  {
    id: "max-steps-1",
    title: { zh: "maxSteps: 1", en: "maxSteps: 1" },
    about: {
      zh: "第一轮仍执行 read 并追加结果，然后达到上限：reason maxSteps，不会伪造最终回答。",
      en: "The first round still runs read and appends its result, then the cap is reached: reason maxSteps, no final answer is made up.",
    },
    expect: { reason: "maxSteps", steps: 1, requests: 1, executions: 1, messages: 3 },
    def: def({ script: [FIRST_ANSWER, FINAL_ANSWER], maxSteps: 1 }),
  },
  {
    id: "repeated-id",
    title: { zh: "重复的调用 id", en: "A repeated call id" },
    about: {
      zh: "同一条 assistant 中两个调用都用 call-1：都不执行，每个不同的 id 得到一条 skipped 结果（duplicate-call-id），运行以 error 结束。",
      en: "Two calls in one assistant message share call-1: neither runs, each distinct id gets one skipped result (duplicate-call-id), the run ends with error.",
    },
    expect: { reason: "error", steps: 1, requests: 1, executions: 0, messages: 3 },
    def: def({
      script: [assistant([README_CALL, call("call-1", "read", { path: "Cargo.toml" })], "toolUse", 2)],
    }),
  },
];

export function scenarioById(id) {
  return SCENARIOS.find((s) => s.id === id);
}

/** A deep copy, so edits and runs never change the definitions above. */
export function cloneDef(value) {
  return structuredClone(value);
}

// --- the script editor's schema -------------------------------------------------------------

const DEF_KEYS = ["systemPrompt", "messages", "script", "tools", "executor", "maxSteps", "abort"];
const TOOL_KEYS = ["description", "parameters", "answer", "isError", "delay", "gate", "reject", "progress"];
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

function checkMessage(msg, path, errors) {
  if (!isObject(msg)) return errors.push({ path, code: "object" });
  if (msg.role === "assistant") return checkAssistant(msg, path, errors);
  if (msg.role === "user") return checkContent(msg.content, `${path}.content`, errors);
  if (msg.role === "toolResult") {
    if (typeof msg.toolCallId !== "string") errors.push({ path: `${path}.toolCallId`, code: "string" });
    if (typeof msg.toolName !== "string") errors.push({ path: `${path}.toolName`, code: "string" });
    if (!Array.isArray(msg.content)) errors.push({ path: `${path}.content`, code: "array" });
    else checkContent(msg.content, `${path}.content`, errors);
    return;
  }
  errors.push({ path: `${path}.role`, code: "oneOf", vars: { list: '"user", "assistant", "toolResult"' } });
}

/**
 * Check an edited definition before it is run. Returns [{path, code, vars?}] (empty when valid); the text of
 * each code is `def.<code>` in i18n.js.
 * Deeper rules (JSON Schema of parameters, message fields) are left to the package, whose errors the page also shows.
 */
export function validateDefinition(d) {
  const errors = [];
  if (!isObject(d)) return [{ path: "$", code: "object" }];
  for (const key of Object.keys(d)) if (!DEF_KEYS.includes(key)) errors.push({ path: key, code: "unknownField", vars: { list: DEF_KEYS.join(", ") } });
  if (d.systemPrompt !== undefined && typeof d.systemPrompt !== "string") errors.push({ path: "systemPrompt", code: "string" });
  if (!Array.isArray(d.messages)) errors.push({ path: "messages", code: "array" });
  else d.messages.forEach((m, i) => checkMessage(m, `messages[${i}]`, errors));
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
    }
  }
  if (d.executor !== undefined && d.executor !== "registry" && d.executor !== "custom") errors.push({ path: "executor", code: "oneOf", vars: { list: '"registry", "custom"' } });
  if (d.maxSteps !== undefined && !(Number.isInteger(d.maxSteps) && d.maxSteps >= 0)) errors.push({ path: "maxSteps", code: "nonNegInt" });
  if (d.abort !== undefined && !["none", "before-start", "during-tool"].includes(d.abort))
    errors.push({ path: "abort", code: "oneOf", vars: { list: '"none", "before-start", "during-tool"' } });
  return errors;
}

/** Parse a pasted transcript: a JSON array, or JSONL (one message per line). Throws {line, message} on failure. */
export function parseTranscript(source) {
  const trimmed = source.trim();
  if (trimmed === "") return [];
  if (trimmed.startsWith("[")) {
    const value = JSON.parse(trimmed);
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

/** Where JSON.parse gives up in `source` (an index), or null when it parses; V8's messages do not always say. */
export function jsonErrorIndex(source) {
  let i = 0;
  const fail = () => {
    throw { at: i };
  };
  const ws = () => {
    while (i < source.length && " \t\n\r".includes(source[i])) i++;
  };
  const literal = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;
  const string = () => {
    i++;
    while (i < source.length) {
      const c = source[i];
      if (c === '"') return void i++;
      if (c < " ") fail();
      i += c === "\\" ? 2 : 1;
    }
    fail();
  };
  const value = () => {
    ws();
    const c = source[i];
    if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]";
      i++;
      ws();
      if (source[i] === close) return void i++;
      for (;;) {
        if (c === "{") {
          ws();
          if (source[i] !== '"') fail();
          string();
          ws();
          if (source[i] !== ":") fail();
          i++;
        }
        value();
        ws();
        if (source[i] === ",") i++;
        else if (source[i] === close) return void i++;
        else fail();
      }
    }
    if (c === '"') return string();
    literal.lastIndex = i;
    const m = literal.exec(source);
    if (!m) fail();
    i += m[0].length;
  };
  try {
    value();
    ws();
    if (i < source.length) fail();
    return null;
  } catch (err) {
    if (err && typeof err.at === "number") return err.at;
    throw err;
  }
}

/**
 * Where each value of a JSON text starts, by the path validateDefinition names it with (`script[0].stopReason`,
 * `tools.read.delay`, `$` for the whole). Returns null when the text does not parse.
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
  const value = (path) => {
    ws();
    paths.set(path || "$", i);
    const c = source[i];
    if (c === "{" || c === "[") {
      i++;
      for (let n = 0; ; n++) {
        ws();
        if (source[i] === "}" || source[i] === "]") return void i++;
        if (source[i] === ",") {
          i++;
          ws();
        }
        if (c === "{") {
          const key = string();
          ws();
          i++; // the colon
          value(path ? `${path}.${key}` : key);
        } else value(`${path}[${n}]`);
      }
    }
    if (c === '"') return void string();
    const m = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;
    m.lastIndex = i;
    i += m.exec(source)[0].length;
  };
  value("");
  return paths;
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
