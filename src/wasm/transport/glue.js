// The bridge's only JavaScript: what Rust cannot do in one call through wasm-bindgen; no rule of the loop lives
// here. `glue.rs` declares each function; the sections follow the modules that call them. It imports nothing (JS
// snippets cannot), and scripts/build.mjs turns its `export`s into `module.exports` for the CommonJS (Node) build.

// ---- convert.rs: values across, and errors ---------------------------------------------------------------

/** `JSON.parse` of JSON text Rust wrote, deeply frozen (SPEC §10). */
export function parseFrozen(text) {
  return deepFreeze(JSON.parse(text));
}

/** Freezes `value` and everything in it. Only for the loop's own objects (plain JSON data). */
function deepFreeze(value) {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze(value[key]);
  }
  return value;
}

// A thrown object's text is cut here (before it crosses into wasm): an error result is read by a model.
const SHOWN = 200;

/** `text` cut to `SHOWN` characters, never between the halves of a surrogate pair. */
const cut = (text) => (text.length <= SHOWN ? text : `${text.slice(0, /[\uD800-\uDBFF]/.test(text[SHOWN - 1]) ? SHOWN - 1 : SHOWN)}…`);

/**
 * A thrown value that is not an `Error`, as text: a primitive as `String(value)` writes it, an object as its
 * JSON or its `Object.prototype.toString` tag, cut to `SHOWN` characters. Never throws.
 */
export function show(value) {
  try {
    if ((typeof value !== "object" && typeof value !== "function") || value === null) return String(value);
    let text;
    try {
      text = JSON.stringify(value);
    } catch {
      // no JSON: the tag below
    }
    return cut(typeof text === "string" ? text : Object.prototype.toString.call(value));
  } catch {
    return typeof value;
  }
}

/** What a value that JSON writes differently (or not at all) is, for errors: `NaN`, `Infinity`, `undefined`,
 * `a function`, `a bigint`, ...; `undefined` for a value JSON writes as it is. Never throws. */
export function unwritable(value) {
  switch (typeof value) {
    case "number":
      return Number.isFinite(value) ? undefined : String(value);
    case "function":
    case "symbol":
    case "bigint":
      return `a ${typeof value}`;
    case "undefined":
      return "undefined";
    default:
      return undefined;
  }
}

/** The path (`.details.n`, `[2]`, `["a b"]`) to the first bigint `JSON.stringify(value)` meets after `toJSON`s,
 * cut to `SHOWN` characters, or "". Reads `value` again: only to name the field in an error. */
export function bigintAt(value) {
  let found = "";
  try {
    const paths = new Map();
    JSON.stringify(value, function (key, v) {
      const step = Array.isArray(this) ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
      const path = paths.has(this) ? `${paths.get(this)}${step}` : "";
      if (typeof v === "bigint" || Object.prototype.toString.call(v) === "[object BigInt]") throw (found = path);
      if (typeof v === "object" && v !== null) paths.set(v, path);
      return v;
    });
  } catch {
    // found, or the app's own throw before any bigint
  }
  return cut(found);
}

// Errors the package throws start their stack at the app's line: the frames of the package's own files
// (its JS and its wasm) are left out, so the first frame is the caller's.
const ownFrames = (() => {
  const at = /(?:file|https?|blob):\/\/[^\s)]*|\/[^\s):]+/.exec(new Error().stack?.split("\n").slice(1).join("\n") ?? "");
  if (!at) return null;
  // As the package ships, this file is <target folder>/snippets/<crate>/src/wasm/transport/glue.js: the
  // package's frames are those under the target folder. Bundled into an app's file, only the wasm frames
  // can be told apart.
  const cut = at[0].indexOf("/snippets/");
  return cut >= 0 ? at[0].slice(0, cut + 1) : null;
})();

/** Never throws: an app's `Error.prepareStackTrace` that throws, or a host whose stack cannot be replaced, keeps its own. */
function fromApp(error) {
  try {
    const stack = error.stack;
    if (typeof stack !== "string") return error;
    const lines = stack.split("\n");
    // V8 writes "Name: message" first, then "    at ..." frames; Firefox and Safari write frames only.
    const head = /^\s*at |@/.test(lines[0]) ? [] : [lines.shift()];
    const own = (line) => /wasm-function|wasm:\/\/|\.wasm:/.test(line) || (ownFrames !== null && line.includes(ownFrames));
    const frames = lines.filter((line) => line.trim() !== "" && !own(line));
    Object.defineProperty(error, "stack", { value: [...head, ...frames].join("\n"), writable: true, configurable: true });
  } catch {}
  return error;
}

// V8 records 10 frames by default, and the package's own can fill them: it records 64 more for its errors. A host
// whose limit cannot be read or set (a frozen `Error`), or an app that turned stacks off (0), keeps its own.
function made(Kind, message) {
  let limit;
  try {
    limit = Error.stackTraceLimit;
    if (typeof limit === "number" && limit > 0) Error.stackTraceLimit = limit + 64;
    else limit = undefined;
  } catch {
    limit = undefined;
  }
  try {
    return new Kind(message);
  } finally {
    if (limit !== undefined) {
      try {
        Error.stackTraceLimit = limit;
      } catch {}
    }
  }
}

/** A `TypeError` with this message, its stack starting at the app's line. */
export const typeError = (message) => fromApp(made(TypeError, message));

/** An `Error` with this message, its stack starting at the app's line. */
export const plainError = (message) => fromApp(made(Error, message));

// ---- model.rs: a model stream ----------------------------------------------------------------------------

/**
 * Calls `model.stream(request, options)` and opens its iterator: `{ stream, iterator, next, result }` (`result` the stream's
 * `result` function, if it has one), or the text of what went wrong: what the app's code threw is its message as it
 * is (SPEC §12: the failure's `error`). Never throws.
 */
export function openStream(model, stream, request, signal) {
  try {
    const opened = stream.call(model, request, signal === undefined ? {} : { signal });
    let method;
    // Only an object is iterable here (a string has a `Symbol.iterator` too).
    if (typeof opened === "object" && opened !== null) {
      for (const symbol of [Symbol.asyncIterator, Symbol.iterator]) {
        try {
          if (typeof opened[symbol] === "function") {
            method = opened[symbol];
            break;
          }
        } catch {
          // a throwing getter: try the next symbol
        }
      }
    }
    if (method === undefined) {
      if (isThenable(opened)) {
        opened.then(undefined, () => {});
        return "model.stream() must return an async iterable, not a promise of one (is it an async function?)";
      }
      return `model.stream() must return an async iterable (got ${typeName(opened)})`;
    }
    const iterator = method.call(opened);
    const next = iterator.next;
    if (typeof next !== "function") {
      // An `async [Symbol.asyncIterator]()` gives a promise: its rejection is taken here, or the host would
      // report it as unhandled.
      if (isThenable(iterator)) iterator.then(undefined, () => {});
      return "model stream iterator has no next() method";
    }
    const result = opened.result;
    return { stream: opened, iterator, next, result: typeof result === "function" ? result : undefined, closed: false };
  } catch (error) {
    return messageOf(error);
  }
}

/**
 * Pulls the next event of an opened stream and hands it to `deliver(value, Pulled.*)`: the event, the end, or
 * the text of what went wrong (what `next()` threw, or a `next()` that gives no iterator result). One
 * `deliver` serves a stream's every pull (no function made per event); nothing is handed over once the
 * stream is closed (`closeDelivery`). Never throws, never rejects. A speed path: a promise and two closures
 * per event cost `full` 3.8 -> 2.5 and `compact` 4.5 -> 3.1 tiny/pi (bench/RESULTS.md, "A turn", the paragraph
 * on `transport/calls.rs`).
 */
export function pull(opened, deliver) {
  (async () => {
    let value;
    let kind = Pulled.Threw;
    try {
      const result = await opened.next.call(opened.iterator);
      if (typeof result !== "object" || result === null) {
        value = `model stream next() gave ${typeName(result)} instead of an iterator result`;
      } else if (result.done) {
        kind = Pulled.End;
      } else {
        value = result.value;
        kind = Pulled.Event;
      }
    } catch (error) {
      value = messageOf(error);
    }
    if (!opened.closed) deliver(value, kind);
  })();
}

/** What `pull` hands over (`model.rs` reads the same numbers). */
const Pulled = Object.freeze({ Event: 0, End: 1, Threw: 2 });

/** Ends the deliveries of a stream (`pull`) or of a tool's calls (`callTool`): their reader is gone. */
export function closeDelivery(source) {
  source.closed = true;
}

/** `opened.result()`, as a promise. */
export const streamResult = async (opened) => opened.result.call(opened.stream);

/** The final message a terminal event carries and where (`done`: `message`, `error`: `error`), as
 * `[message, "done.message"]`, or undefined for any other event. Throws what a getter throws. */
export function finalOf(event) {
  const type = event?.type;
  return type === "done" ? [event.message, "done.message"] : type === "error" ? [event.error, "error.error"] : undefined;
}

// ---- hooks.rs, approval.rs, tools.rs: calls into the app --------------------------------------------------

/** `f.call(self, a, b, c)`: `{ value }` for what it returned, or `{ wait }` with a promise of it if that is a
 * promise or thenable; `{ wait }` with a rejected promise if it threw. Never throws. */
export function invoke(f, self, a, b, c) {
  try {
    const value = f.call(self, a, b, c);
    const wait = settled(value);
    return wait === undefined ? { value } : { wait };
  } catch (error) {
    return { wait: Promise.reject(error) };
  }
}

/** A tool's own copy of its call's arguments (`{}` when there are none): plain JSON data, as the loop read it. */
export function argumentsOf(call) {
  const args = call.arguments;
  return args === undefined ? {} : JSON.parse(JSON.stringify(args));
}

/** A hook's context (SPEC §7), frozen; its prototype too, so that a hook cannot change what later contexts
 * (or, through Object.prototype, any object) read. Its fields are defined, not assigned (as `defineAt`). */
class HookContext {
  signal; step; messages;
  constructor(signal, step, messages) {
    this.signal = signal;
    this.step = step;
    this.messages = messages;
    Object.freeze(this);
  }
}
Object.freeze(HookContext.prototype);

export const hookContext = (signal, step, messages) => new HookContext(signal, step, messages);

/** The request a model or `prepareRequest` is shown, frozen: `{ systemPrompt, messages, tools }`, the system
 * prompt left out when undefined. */
export const request = (systemPrompt, messages, tools) => Object.freeze(systemPrompt === undefined ? { messages, tools } : { systemPrompt, messages, tools });

// ---- calls.rs: a JS tool's calls in flight -----------------------------------------------------------------

/** What `callTool` hands a sink (`calls.rs` reads the same numbers). */
const Delivered = Object.freeze({ Report: 0, Returned: 1, Threw: 2 });

/** Where the calls of one tool (or executor) deliver: `deliver(token, Delivered.*, value)`, until `closeDelivery`. */
export const callSink = (deliver) => ({ deliver, closed: false });

/**
 * Calls `f.call(self, arg, context)` with a context (one literal, as `defineAt`) of `callId` and `signal` (each left out when undefined) and a
 * `reportProgress` that hands each report to `sink` under `token` (throwing what reading it throws); then hands
 * `sink` what `f` returned or resolved with, or what it threw or rejected with: at once for a value, once settled
 * for a promise or thenable (adopted as `await` adopts it). Never throws.
 */
export function callTool(f, self, arg, callId, signal, sink, token) {
  const reportProgress = (content) => void (sink.closed || sink.deliver(token, Delivered.Report, content));
  const context = callId === undefined ? (signal === undefined ? { reportProgress } : { signal, reportProgress }) : signal === undefined ? { callId, reportProgress } : { callId, signal, reportProgress };
  (async () => {
    let kind = Delivered.Returned;
    let value;
    try {
      value = f.call(self, arg, context);
      const wait = settled(value);
      if (wait !== undefined) value = await wait;
    } catch (error) {
      kind = Delivered.Threw;
      value = error;
    }
    if (!sink.closed) sink.deliver(token, kind, value);
  })();
}

// ---- events.rs: an event, made and handed over ------------------------------------------------------------

// Each calls `onEvent` with its event, the object literal written out (no key crosses from Rust), and answers
// a promise of what it returned if that is a promise or thenable, else undefined; they throw what it throws.

export const emitModelEvent = (onEvent, event) => settled(onEvent({ type: "model_event", event }));
export const emitAssistant = (onEvent, message) => settled(onEvent({ type: "assistant_message", message }));
export const emitToolStart = (onEvent, call) => settled(onEvent({ type: "tool_start", call }));
export const emitProgress = (onEvent, callId, content) => settled(onEvent({ type: "tool_progress", callId, content }));
export const emitResult = (onEvent, skipped, result) => settled(onEvent({ type: skipped ? "tool_skipped" : "tool_end", result }));
export const emitQueued = (onEvent, message, steering) => settled(onEvent({ type: "queued_message", message, queue: steering ? "steering" : "followUp" }));
export const emitRetry = (onEvent, attempt, delayMs, error) => settled(onEvent({ type: "retry", attempt, delayMs, error }));
export const emitCompaction = (onEvent, entry) => settled(onEvent({ type: "compaction", entry }));
export const emitTurnEnd = (onEvent, reason, steps) => settled(onEvent({ type: "turn_end", reason, steps }));

/** A new promise of `value` if it is a promise or thenable (one whose `then` cannot be read is not), else
 * undefined. Never throws, and the promise is the host's own: its `then` never runs the caller's code, so
 * awaiting it from Rust cannot throw (a promise with a throwing own `then`, or an object made from
 * `Promise.prototype`, rejects instead). */
function settled(value) {
  // As `await` adopts it: a native promise by the engine itself (its own `then`, patched or not, is not asked).
  return isThenable(value) ? (async () => await value)() : undefined;
}

// ---- the API layer: its exports' turn, the caller's clock, a scripted stream's steps, JSON Lines -----------

let turn = 0;
let ending = false;
const resolved = Promise.resolve();
const then = Promise.prototype.then; // an app's fake timers or patched `then` do not hold the turn
/** A number that changes once the code running now returns to the host (a promise job later, when `end` asks
 * for it): every export nested in another sees the same one, so a count an exception left is stale after it. */
export function currentTurn(end) {
  if (end && !ending) then.call(resolved, () => ((ending = false), (turn = (turn + 1) | 0)));
  ending ||= end;
  return turn;
}

/** What `clock()` (the caller's `now`) gives, if it is a finite number; else undefined. Never throws. */
export function readClock(clock) {
  try {
    const time = clock();
    if (typeof time === "number" && Number.isFinite(time)) return time;
    if (isThenable(time)) time.then(undefined, () => {});
  } catch {
    // a throwing clock: Date.now() stands in
  }
  return undefined;
}

/** `target[key] = value` made a definition: no setter an app put on a prototype runs mid-work, no read-only one refuses it. */
export const defineAt = (array, index, value) => Object.defineProperty(array, index, { value, writable: true, enumerable: true, configurable: true });

const toSpliced = Array.prototype.toSpliced;
/** The first `n` elements of `array`, in a new plain array, by the `toSpliced` this module found: unlike `slice`, it
 * asks no `Symbol.species`, so none an app put on `Array` runs in the middle of the bridge's work (and, unlike an own
 * `constructor` on the array, it leaves V8's fast `slice` alone for the whole process). */
export const prefix = (array, n) => toSpliced.call(array, n);

/** `Array.isArray(value)`; false for a revoked proxy (which throws). Never throws. */
export function isArray(value) {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}

/** Whether `value`'s prototype is a plain object of no class: what `value["__proto__"] = {...}` makes. */
export function prototypeSet(value) {
  try {
    const prototype = Object.getPrototypeOf(value);
    return isPlainObject(prototype) && !Object.hasOwn(prototype, "constructor");
  } catch {
    return false;
  }
}

/** Whether `value` is a plain object (of an `Object.prototype`, this realm's or another's, or none). Never throws. */
export function isPlainObject(value) {
  try {
    if (typeof value !== "object" || value === null) return false;
    const prototype = Object.getPrototypeOf(value);
    return prototype === null || (Object.getPrototypeOf(prototype) === null && Object.prototype.toString.call(value) === "[object Object]");
  } catch {
    return false;
  }
}

/** `{ value, done: false }`, or `{ done: true }` for no value: one step of a scripted stream's iterator. */
export const iteratorResult = (value) => (value === undefined ? { done: true } : { value, done: false });

/** Each message's JSON on a line of its own (JS's writer keeps field order and numbers exactly), `null` for
 * one JSON has no text for (as `JSON.stringify` writes it in an array); or, where `JSON.stringify` threw,
 * `[index, the message it read, what it threw]`. */
export function jsonLines(messages) {
  let text = "";
  for (let i = 0; i < messages.length; i += 1) {
    const message = messages[i];
    try {
      text += `${JSON.stringify(message) ?? "null"}\n`;
    } catch (error) {
      return [i, message, error];
    }
  }
  return text;
}

// ---- shared -----------------------------------------------------------------------------------------------

function isThenable(value) {
  try {
    return typeof value === "object" && value !== null && typeof value.then === "function";
  } catch {
    return false;
  }
}

const typeName = (value) => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value);

/** The message of a thrown value, for an error text: its `message` when that is a string (read once), a
 * string as it is, else `show(error)`. Never throws, whatever `message` is or does. A message with a lone
 * surrogate is refused (SPEC §10: tiny-pi never changes a string and cannot keep that one): the text says so
 * in its place. `convert.rs`'s `error_message` is this function. */
export function messageOf(error) {
  let message;
  try {
    if (typeof error === "string") message = error;
    else if ((typeof error === "object" && error !== null) || typeof error === "function") {
      const read = error.message;
      if (typeof read === "string") message = read;
    }
  } catch {
    // a `message` getter or proxy trap that throws: shown below
  }
  if (message === undefined) message = show(error);
  return message.isWellFormed() ? message : "(an error whose message holds a lone surrogate, which tiny-pi never changes and cannot keep)";
}
