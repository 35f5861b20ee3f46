// The bridge's only JavaScript: what Rust cannot do cheaply through wasm-bindgen. No logic of the loop.
// Rust imports it in `glue.rs`; each section below serves the Rust module it is named after, in the order
// of the module map (`src/wasm/mod.rs`). It imports nothing (wasm-bindgen's JS snippets cannot), and
// scripts/build.mjs turns its `export`s into `module.exports` for the CommonJS (Node) build.
//
// Nothing here throws into Rust: wasm-bindgen wraps an import that may throw (`catch`) in a closure and an
// `arguments` object per call, so what may throw is caught here and handed over as a rejection or a number.

// ---- protocol.rs: the numbers exchanged with Rust, by name ----------------------------------------------
// Each object is the twin of the Rust enum of the same name in `protocol.rs`; a test there checks that the
// two agree, name for name and number for number. A number neither side knows is an error on both.

/** How `openStream` answered: the stream opened, or the step that failed. */
export const Opened = Object.freeze({
  Stream: 0,
  StreamWithResult: 1,
  StreamThrew: 2,
  NotIterable: 3,
  IteratorThrew: 4,
  NextUnreadable: 5,
  NoNext: 6,
  ResultUnreadable: 7,
  Promise: 8,
});

/** What one `next()` of a pumped stream gave. */
export const StepKind = Object.freeze({ Value: 0, Done: 1, Threw: 2, NotResult: 3 });

/** Which event literal `emit` makes. */
export const EventShape = Object.freeze({ Event: 0, Message: 1, Call: 2, Progress: 3, Result: 4, TurnEnd: 5, Queued: 6 });

/** The bits of `simpleOutput`'s answer (0: not of the simple shape). */
export const OutputBit = Object.freeze({ Simple: 1, EmptyDetails: 2, IsError: 4, DetailsJson: 8, ShortText: 16 });

/** What each block of a final message `adoptParts` took apart is. */
export const BlockPart = Object.freeze({ Text: 1, Thinking: 2, Call: 3 });

/** A text shorter than this (UTF-16 units) crosses by wasm-bindgen's own string return. */
export const SHORT_TEXT_UNITS = 64;

// ---- waiter.rs: awaiting, and values left for Rust to take ----------------------------------------------
// Each function hands its outcome to `waiter` (one object for the whole module, the `Waiter` of
// `waiter.rs`) under the `id` Rust gave it, so an await costs a plain async function and one call into
// wasm, with no closure made per await. `await` adopts promises and thenables as JS would, and anything
// thrown or rejected (a throwing `then`, a revoked proxy) arrives as a rejection, never as an exception
// unwinding through wasm.

/**
 * Awaits `value` and reports how it settled, if it is a promise or a thenable object; answers whether it
 * is (when it is not, Rust takes the value as it is, without a trip through the microtask queue).
 */
export function settle(value, waiter, id) {
  const thenable = awaitable(value);
  if (thenable) settleLater(value, waiter, id);
  return thenable;
}

/** Whether `value` is an object with a `then` method (reading `then` may throw: callers catch). */
function isThenable(value) {
  return typeof value === "object" && value !== null && typeof value.then === "function";
}

/** Whether `value` is a promise or thenable to await: not a revoked proxy or a throwing `then` getter. Never throws. */
function awaitable(value) {
  try {
    return value instanceof Promise || isThenable(value);
  } catch {
    return false;
  }
}

async function settleLater(value, waiter, id) {
  let ok = true;
  let outcome;
  try {
    outcome = await value;
  } catch (error) {
    ok = false;
    outcome = error;
  }
  waiter.settled(id, ok, outcome);
}

/** `settle(returned, waiter, id)`; when there is nothing to await, `false`, with `returned` left for `takeKept`. */
function settleOrKeep(returned, waiter, id) {
  if (settle(returned, waiter, id)) return true;
  kept = returned;
  return false;
}

/**
 * Pulls `next.call(iterator)` results (of a stream `openStream` opened) for as long as Rust asks for the
 * next one as soon as it gets one. Each result is handed over as a `StepKind` and one value, so reading an
 * iterator result costs no further calls into JS.
 */
export async function pump(opened, waiter, id) {
  const { iterator, next } = opened;
  let kind;
  let value;
  do {
    try {
      const result = await next.call(iterator);
      if (typeof result !== "object" || result === null) {
        kind = StepKind.NotResult;
        value = result;
      } else if (result.done) {
        kind = StepKind.Done;
        value = undefined;
      } else {
        kind = StepKind.Value;
        value = result.value;
      }
    } catch (error) {
      kind = StepKind.Threw;
      value = error;
    }
  } while (waiter.delivered(id, kind, value));
}

// A value an answer of `true`/`false` (or a number) left behind for Rust to take (`takeKept`): most calls
// have nothing to hand back, and a plain answer costs Rust no further call to find that out.
let kept;

/** What the last `emit` (answering `true`), `openStream`, `callTool`/`callResult`/`callHook` (answering `false`) or
 * `stringify` (answering `null`) left, once. */
export function takeKept() {
  const value = kept;
  kept = undefined;
  return value;
}

/** If `value` is a promise or thenable that is not awaited, takes its rejection so that the page does not
 * report it as unhandled (the caller hears of the mistake another way). Never throws. */
function takeRejection(value) {
  try {
    if (isThenable(value)) value.then(undefined, () => {});
  } catch {
    // a throwing `then`: nothing to take
  }
}

// ---- convert.rs: values across ------------------------------------------------------------------------

/** `JSON.stringify(value)` (undefined for a function or undefined); `null` if it threw, with what it threw
 * left for `takeKept`. Never throws, so it needs no `catch` wrapper (js-sys's `JSON.stringify` has one). */
export function stringify(value) {
  try {
    return JSON.stringify(value);
  } catch (error) {
    kept = error;
    return null;
  }
}

/** `JSON.parse` of JSON text Rust wrote (it cannot throw, so it is imported without a `catch` wrapper). */
export function parseJson(text) {
  return JSON.parse(text);
}

// Strings in: wasm-bindgen copies a string into wasm with a JS loop over its characters; `encodeInto` does
// it natively, which pays off for long texts (SHORT_TEXT_UNITS and longer).
const encoder = new TextEncoder();

/**
 * Writes `text` as UTF-8 into `memory` at `ptr` (at most `capacity` bytes Rust set aside); answers how
 * many bytes. The view is made here, right before the write: no wasm code runs in between, so memory
 * cannot grow and detach it.
 */
export function encodeInto(text, memory, ptr, capacity) {
  return encoder.encodeInto(text, new Uint8Array(memory.buffer, ptr, capacity)).written;
}

// A thrown object's text is cut here (before it crosses into wasm): an error result is read by a model.
const SHOWN = 200;

/**
 * A value that is not an `Error`, as text: a primitive as JS's `String(value)` writes it (`42`, `1e+21`,
 * `null`, `Symbol(s)`; wasm-bindgen's `Debug` would wrap it in `JsValue(...)`); an object or a function as its
 * JSON, or as `Object.prototype.toString` gives it (`[object Function]`) when it has none (a function, a cycle,
 * a BigInt, a throwing `toJSON`), cut to `SHOWN` characters with `…`. Never throws (a revoked proxy gives its
 * type).
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
    if (typeof text !== "string") text = Object.prototype.toString.call(value);
    if (text.length <= SHOWN) return text;
    // Not between the halves of a surrogate pair.
    const end = /[\uD800-\uDBFF]/.test(text[SHOWN - 1]) ? SHOWN - 1 : SHOWN;
    return `${text.slice(0, end)}…`;
  } catch {
    return typeof value;
  }
}

// ---- signal.rs: signals handed to JS, and the run's signal listened to ----------------------------------

/** A new `AbortController`: a call's own signal (SPEC §7), or the one that never aborts, for hooks. */
export function newController() {
  return new AbortController();
}

/** `controller.abort()`. Never throws: what an abort listener throws is the host's to report, not Rust's. */
export function abortController(controller) {
  try {
    controller.abort();
  } catch {
    // a listener's error: reported by the host
  }
}

/** Adds (`on`) or removes `listener` as an abort listener of `signal`. Never throws. */
export function listenAbort(signal, listener, on) {
  try {
    if (on) signal.addEventListener("abort", listener, { once: true });
    else signal.removeEventListener("abort", listener);
  } catch {
    // something that only claims to be an AbortSignal: the child reads its parent's flag instead
  }
}

// ---- model.rs: a model stream, opened in one call -------------------------------------------------------
// `model.stream(request, options)`, its iterator and `next`, and whether it has a `result()`. Rust words the
// errors; this only says which step failed (an `Opened` number).

/**
 * Calls `model.stream({ systemPrompt, messages, tools }, { signal })` (an undefined field left out), and
 * answers `Opened.Stream` (`Opened.StreamWithResult` if the stream has a `result()` method) with
 * `{ stream, iterator, next, result }` left for `takeKept`; else the step that failed, with what it threw or
 * gave left for `takeKept`. Never throws. `kept` is set last on every path: the caller's code it runs (a
 * getter, say) may have made a nested call that used it.
 */
export function openStream(model, streamMethod, systemPrompt, messages, tools, signal) {
  let step = Opened.StreamThrew;
  try {
    const request = modelRequest(systemPrompt, messages, tools);
    const stream = streamMethod.call(model, request, signal === undefined ? {} : { signal });
    let method;
    // Only an object is iterable here (a string has a `Symbol.iterator` too).
    if (typeof stream === "object" && stream !== null) {
      for (const symbol of [Symbol.asyncIterator, Symbol.iterator]) {
        try {
          const found = stream[symbol];
          if (typeof found === "function") {
            method = found;
            break;
          }
        } catch {
          // a throwing getter: try the next symbol
        }
      }
    }
    if (method === undefined) {
      // A promise (an `async stream()`) is not awaited, as SPEC's stream() is synchronous, but its
      // rejection is taken here, or the page would report it as unhandled.
      const promise = isThenable(stream);
      if (promise) takeRejection(stream);
      kept = stream;
      return promise ? Opened.Promise : Opened.NotIterable;
    }
    step = Opened.IteratorThrew;
    const iterator = method.call(stream);
    step = Opened.NextUnreadable;
    const next = Reflect.get(iterator, "next");
    if (typeof next !== "function") {
      takeRejection(iterator); // an `async [Symbol.asyncIterator]()`
      kept = undefined;
      return Opened.NoNext;
    }
    step = Opened.ResultUnreadable;
    const result = Reflect.get(stream, "result");
    kept = { stream, iterator, next, result };
    return typeof result === "function" ? Opened.StreamWithResult : Opened.Stream;
  } catch (error) {
    kept = error;
    return step;
  }
}

/** `{ systemPrompt, messages, tools }`, the system prompt left out when undefined. */
function modelRequest(systemPrompt, messages, tools) {
  return systemPrompt === undefined ? { messages, tools } : { systemPrompt, messages, tools };
}

/** `opened.result()` of a stream `openStream` opened, settled under `id` as `callTool` settles. */
export function callResult(opened, waiter, id) {
  let returned;
  try {
    returned = opened.result.call(opened.stream);
  } catch (error) {
    returned = Promise.reject(error);
  }
  return settleOrKeep(returned, waiter, id);
}

const { propertyIsEnumerable } = Object.prototype;

// The model's final message is the one value of a turn the core must read. The usual one (SPEC §1's fields
// as strings, `null` or a number, blocks of the three kinds) crosses without a JSON text of it, whose keys
// cost more to write and parse than the strings themselves: `adoptParts` makes it the loop's own (frozen in
// place, deeply, as `adoptMessage` does) and hands Rust its strings joined in one text, with their lengths
// and each block's `BlockPart` as numbers; a call's arguments cross as their JSON. The provider's fields the
// core never reads (usage, costs, names) stay in the object. Anything else answers 0 and crosses whole as
// JSON, which the core's readers decide on: what is taken apart here is what the lean reader reads.
let partsText;
let partNumbers;

/** A string that crosses as it is: not half a surrogate pair (the JSON readers refuse those). An engine
 * without `isWellFormed` leaves every message to the JSON path. */
const wellFormed = typeof String.prototype.isWellFormed === "function" ? (text) => text.isWellFormed() : () => false;

/** Left out, `null` (the lean reader reads both as none) or a string. */
const absentOrString = (value) => value == null || (typeof value === "string" && wellFormed(value));

/**
 * Adopts a plain final message and keeps its parts for Rust (`takePartNumbers`, `takePartsText`): the text
 * of its strings joined (`stopReason`, the `errorMessage` if any, then each block's text, thinking, or a
 * call's id, name and arguments' JSON), and the numbers `[timestamp, has an errorMessage, each block's
 * BlockPart..., each string's length in UTF-16 units...]`. Answers the number of blocks plus 1, or 0 when the
 * message is not of that shape or holds what `JSON.stringify` refuses or rewrites (a bigint, a cycle, a
 * `toJSON`), which the whole message's JSON then reports (the walk may have frozen part of it: it is the
 * loop's own either way; a cycle ends the walk by overflowing the stack, caught here). Never throws.
 */
export function adoptParts(message) {
  partsText = undefined;
  partNumbers = undefined;
  try {
    if (!isPlain(message) || !propertyIsEnumerable.call(message, "role") || message.role !== "assistant" || !deepFreeze(message, true)) return 0;
    // Own enumerable fields only, read once each, as JSON.stringify reads them.
    let content, stopReason, errorMessage, timestamp;
    for (const key of Object.keys(message)) {
      if (key === "content") content = message.content;
      else if (key === "stopReason") stopReason = message.stopReason;
      else if (key === "errorMessage") errorMessage = message.errorMessage;
      else if (key === "timestamp") timestamp = message.timestamp;
    }
    if (!Array.isArray(content) || typeof stopReason !== "string" || !wellFormed(stopReason) || !absentOrString(errorMessage)) return 0;
    if (timestamp !== undefined && !(typeof timestamp === "number" && Number.isFinite(timestamp))) return 0;
    // -0 is written 0; no timestamp reads as 0.
    const numbers = [timestamp === undefined ? 0 : timestamp + 0, errorMessage == null ? 0 : 1];
    const strings = errorMessage == null ? [stopReason] : [stopReason, errorMessage];
    for (let i = 0; i < content.length; i += 1) {
      const block = content[i];
      if (!isPlain(block)) return 0;
      let type, text, thinking, id, name, args;
      for (const key of Object.keys(block)) {
        if (key === "type") type = block.type;
        else if (key === "text") text = block.text;
        else if (key === "thinking") thinking = block.thinking;
        else if (key === "id") id = block.id;
        else if (key === "name") name = block.name;
        else if (key === "arguments") args = block.arguments;
      }
      // The lean reader reads these four of every block, whatever its type.
      if (!absentOrString(text) || !absentOrString(thinking) || !absentOrString(id) || !absentOrString(name)) return 0;
      if (type === "text" && text != null) {
        numbers.push(BlockPart.Text);
        strings.push(text);
      } else if (type === "thinking" && thinking != null) {
        numbers.push(BlockPart.Thinking);
        strings.push(thinking);
      } else if (type === "toolCall" && id != null && name != null) {
        numbers.push(BlockPart.Call);
        strings.push(id, name, JSON.stringify(args) ?? "{}"); // undefined where JSON leaves the arguments out
      } else {
        return 0;
      }
    }
    for (const text of strings) numbers.push(text.length);
    partNumbers = numbers;
    partsText = strings.join("");
    return content.length + 1;
  } catch {
    return 0;
  }
}

/** The numbers of the message `adoptParts` took apart, once (a plain array: wasm-bindgen copies it into
 * wasm memory with `Float64Array.prototype.set`, which takes one as it is). */
export function takePartNumbers() {
  const numbers = partNumbers;
  partNumbers = undefined;
  return numbers;
}

/** Its strings, joined, once. */
export function takePartsText() {
  const text = partsText;
  partsText = undefined;
  return text;
}

// A tool is handed its own copy of its call's arguments (the call is frozen; the copy is the tool's to
// change), equal to what `JSON.parse(JSON.stringify(value))` makes: what the core read and validated.
const NOT_PLAIN = Symbol("not plain");

/** A call's arguments as the core read them from the message's JSON: `{}` where JSON leaves them out (none,
 * a function), else `JSON.parse(JSON.stringify(value))`, by a walk while the value is plain JSON data. */
function argumentsCopy(value) {
  const copy = plainCopy(value);
  if (copy !== NOT_PLAIN) return copy;
  const json = JSON.stringify(value);
  return json === undefined ? {} : JSON.parse(json);
}

/** The copy `JSON.stringify` then `JSON.parse` would make of a string, boolean, finite number, `null`, an
 * array or an object of Object's prototype without `toJSON` (and no key `__proto__`, which `JSON.parse` makes
 * an own property), holding only such values; else `NOT_PLAIN`. */
function plainCopy(value) {
  if (typeof value === "string" || typeof value === "boolean" || value === null) return value;
  if (typeof value === "number") return Number.isFinite(value) ? value + 0 : NOT_PLAIN; // -0 is written 0
  const array = Array.isArray(value);
  if (array ? Object.getPrototypeOf(value) !== Array.prototype || value.toJSON !== undefined : !isPlain(value)) return NOT_PLAIN;
  const keys = array ? null : Object.keys(value);
  const copy = array ? [] : {};
  for (let i = 0; i < (array ? value.length : keys.length); i += 1) {
    const key = array ? i : keys[i];
    const item = key === "__proto__" ? NOT_PLAIN : plainCopy(value[key]);
    if (item === NOT_PLAIN) return NOT_PLAIN;
    copy[key] = item;
  }
  return copy;
}

// ---- tools.rs: a tool call, made in one call ------------------------------------------------------------

/** A tool call's context: `reportProgress` reports to `progress` under the call's `route` (a plain closure). */
function toolContext(callId, signal, progress, route) {
  const context = callId === undefined ? {} : { callId };
  if (signal !== undefined) context.signal = signal;
  context.reportProgress = (content) => progress.report(route, content);
  return context;
}

/**
 * `f.call(thisArg, args, context)` for a tool call, and `settle` of what it returned under `id`: answers
 * `true` if that is being awaited, else `false` with the value left for `takeKept`. With the run's `call`
 * object, `args` is a copy of its arguments (`{}` when it has none, as the core reads it) and the context
 * `toolContext(call.id, ...)`; else `args` is `JSON.parse(argJson)` and the context `toolContext(callId,
 * ...)`. A throw is settled as a rejection, so nothing unwinds through wasm.
 */
export function callTool(f, thisArg, call, argJson, callId, signal, progress, route, waiter, id) {
  let returned;
  try {
    let args;
    if (call === undefined) {
      args = JSON.parse(argJson);
    } else {
      args = argumentsCopy(call.arguments);
      callId = call.id;
    }
    returned = f.call(thisArg, args, toolContext(callId, signal, progress, route));
  } catch (error) {
    returned = Promise.reject(error);
  }
  return settleOrKeep(returned, waiter, id);
}

// ---- approval.rs: a tool's needsApproval, asked in one call ---------------------------------------------

/** `f.call(thisArg, JSON.parse(argJson))` settled under `id`, as `callTool` settles. */
export function callCheck(f, thisArg, argJson, waiter, id) {
  let returned;
  try {
    returned = f.call(thisArg, JSON.parse(argJson));
  } catch (error) {
    returned = Promise.reject(error);
  }
  return settleOrKeep(returned, waiter, id);
}

// ---- tool_output.rs: the usual tool output, taken apart without JSON ------------------------------------
// Most outputs are `{ content: [{ type: "text", text }] }`, perhaps with `details` (a plain object) or a
// boolean `isError`. For exactly that shape, `simpleOutput` hands Rust the text alone, and the details as
// their own JSON text: what `JSON.stringify` would write for the whole output is known, and writing and
// parsing it cost more than the rest of a tool call. Anything else, down to a prototype other than
// Object's or a `toJSON` (which `JSON.stringify` would call), is left to the JSON path, where the core's
// readers decide.

let simpleText;
let simpleDetails;

const isPlain = (value) => typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype && value.toJSON === undefined;

/**
 * 0 when `output` is not of the simple shape; else `OutputBit.Simple`, plus `EmptyDetails` for
 * `details: {}`, `IsError` for `isError: true`, `DetailsJson` for other details and `ShortText` for a text
 * of fewer than `SHORT_TEXT_UNITS` UTF-16 units, with the text kept for `takeSimpleText` and those
 * details' JSON for `takeSimpleDetails`. Never throws (a throwing getter or proxy, a BigInt or a cycle in
 * the details give 0, and the JSON path then reports them).
 */
export function simpleOutput(output) {
  try {
    if (!isPlain(output)) return 0;
    // Own keys only, as JSON.stringify reads them (an inherited `content` is no content).
    let content, details, isError;
    for (const key of Object.keys(output)) {
      if (key === "content") content = output.content;
      else if (key === "details") details = output.details;
      else if (key === "isError") isError = output.isError;
      else return 0;
    }
    if (!Array.isArray(content) || Object.getPrototypeOf(content) !== Array.prototype || content.toJSON !== undefined || content.length !== 1) return 0;
    const block = content[0];
    if (!isPlain(block)) return 0;
    const keys = Object.keys(block);
    if (keys.length !== 2 || !keys.includes("type") || !keys.includes("text") || block.type !== "text") return 0;
    const text = block.text; // read once, as JSON.stringify would
    if (typeof text !== "string") return 0;
    let shape = OutputBit.Simple;
    if (details !== undefined && details !== null) {
      // Plain, so no `toJSON` is asked with a different key than in the whole output's JSON.
      if (!isPlain(details)) return 0;
      if (Object.keys(details).length === 0) {
        shape |= OutputBit.EmptyDetails;
      } else {
        simpleDetails = JSON.stringify(details);
        shape |= OutputBit.DetailsJson;
      }
    }
    if (isError !== undefined && typeof isError !== "boolean") return 0;
    if (isError === true) shape |= OutputBit.IsError;
    simpleText = text;
    return text.length < SHORT_TEXT_UNITS ? shape | OutputBit.ShortText : shape;
  } catch {
    return 0;
  }
}

/** The text `simpleOutput` found, once. */
export function takeSimpleText() {
  const text = simpleText;
  simpleText = undefined;
  return text;
}

/** The JSON of the details `simpleOutput` found, once. */
export function takeSimpleDetails() {
  const details = simpleDetails;
  simpleDetails = undefined;
  return details;
}

// ---- mirror.rs: the JS objects of a run's transcript ----------------------------------------------------
// Objects are made as literals, one per shape (keys stored one by one make each store megamorphic).
// Every message, call and result handed out is frozen, deeply, once, where it is made or adopted (SPEC §10).

/** Freezes `value` and every object reachable through its own enumerable properties: an array walked by
 * index, an object by its `Object.keys` (`Object.values` copied every value out first; `for...in` would
 * also walk what a polluted `Object.prototype` adds). With `asJson`, stops at the first value below `value`
 * that `JSON.stringify` refuses or rewrites (a bigint, a `toJSON`) and answers false (`adoptParts`). */
function deepFreeze(value, asJson = false) {
  Object.freeze(value);
  const keys = Array.isArray(value) ? null : Object.keys(value);
  const length = keys === null ? value.length : keys.length;
  for (let i = 0; i < length; i += 1) {
    const item = keys === null ? value[i] : value[keys[i]];
    if (typeof item === "object" && item !== null) {
      if (asJson && typeof item.toJSON === "function") return false;
      if (!deepFreeze(item, asJson)) return false;
    } else if (asJson && typeof item === "bigint") {
      return false;
    }
  }
  return true;
}

/** `JSON.parse` of JSON text Rust wrote, deeply frozen (our own objects: nothing here can throw). */
export function parseFrozen(text) {
  const value = JSON.parse(text);
  if (typeof value === "object" && value !== null) deepFreeze(value);
  return value;
}

/** `array.slice()`, frozen: a request's own messages array, or a hook context's transcript. */
export function frozenCopy(array) {
  return Object.freeze(array.slice());
}

/**
 * Makes the model's final message the loop's own: frozen in place, deeply, if it says it is an assistant
 * message. False when it does not, or cannot be frozen (a proxy that refuses; then Rust makes its own copy).
 * Never throws.
 */
export function adoptMessage(message) {
  try {
    if (typeof message !== "object" || message === null || message.role !== "assistant") return false;
    deepFreeze(message);
    return true;
  } catch {
    return false;
  }
}

/**
 * `message.content[index]` if it is the tool call `id` (`type: "toolCall"`), else undefined. The message is
 * frozen, so this checks only that it is the message the call was read from; a throwing getter or proxy
 * counts as another.
 */
export function callBlock(message, index, id) {
  try {
    const block = message.content[index];
    return typeof block === "object" && block !== null && block.type === "toolCall" && block.id === id ? block : undefined;
  } catch {
    return undefined;
  }
}

/** A tool result as `serde` would write it (`role`, `toolCallId`, `toolName`, `content`, `details` when
 * there are some, `isError`, `timestamp`), made in one call instead of a JSON text parsed again; deeply
 * frozen when `frozen` (one the loop hands out), walking only what Rust made. Without a `toolCallId`, the
 * id is that of `call`, the run's object of the call it answers. */
export function toolResult(toolCallId, call, toolName, text, content, details, emptyDetails, isError, timestamp, frozen) {
  if (toolCallId === undefined) toolCallId = call.id;
  // `text`: the content is that one text block (the usual case).
  if (text !== undefined) content = [{ type: "text", text }];
  const result = { role: "toolResult", toolCallId, toolName, content };
  if (emptyDetails) result.details = {};
  else if (details !== undefined) result.details = details;
  result.isError = isError;
  result.timestamp = timestamp;
  if (frozen) {
    if (text === undefined) deepFreeze(content);
    else Object.freeze(Object.freeze(content)[0]);
    if (result.details) deepFreeze(result.details);
    Object.freeze(result);
  }
  return result;
}

// ---- events.rs: an event, made and handed to `onEvent` in one call --------------------------------------

/** An event object of each `EventShape`, its keys written out. */
function eventObject(shape, type, a, b) {
  switch (shape) {
    case EventShape.Event:
      return { type, event: a };
    case EventShape.Message:
      return { type, message: a };
    case EventShape.Call:
      return { type, call: a };
    case EventShape.Progress:
      return { type, callId: a, content: b };
    case EventShape.Result:
      return { type, result: a };
    case EventShape.TurnEnd:
      return { type, reason: a, steps: b };
    case EventShape.Queued:
      return { type, message: a, queue: b };
    default:
      throw new TypeError(`tiny-pi bridge: no event shape numbered ${shape}`);
  }
}

/**
 * Calls `onEvent` with a fresh event object; answers whether it returned an object (a promise to await,
 * perhaps), left for `takeKept`. A throw is kept as a rejected promise: the loop treats both alike (SPEC:
 * the error is kept, the run goes on), and a call that cannot throw needs no wrapper.
 */
export function emit(onEvent, shape, type, a, b) {
  let returned;
  try {
    returned = onEvent(eventObject(shape, type, a, b));
  } catch (error) {
    returned = Promise.reject(error);
  }
  if (typeof returned !== "object" || returned === null) return false;
  kept = returned;
  return true;
}

// ---- hooks.rs: a hook called, in one call ----------------------------------------------------------------

/** The transcript as hook contexts see it: `sent[0..length]`, copied and frozen when a hook first reads it
 * (`made`: that copy, already made for a request), then shared by every context of this view. */
export function transcriptView(sent, length, made) {
  return { sent, length, made };
}

/**
 * A hook's context (SPEC §7), frozen: `signal` and `step` its own, `messages` read from the run's transcript
 * view when asked. A hook that never reads it costs no copy of the transcript; contexts of one view share
 * one frozen array.
 */
class HookContext {
  #view;

  constructor(signal, step, view) {
    this.signal = signal;
    this.step = step;
    this.#view = view;
    Object.freeze(this);
  }

  get messages() {
    const view = this.#view;
    return (view.made ??= Object.freeze(view.sent.slice(0, view.length)));
  }
}
// Frozen too: a hook that could redefine `messages` here would change every later context's.
Object.freeze(HookContext.prototype);

/**
 * Calls hook `f` with `arity` arguments: `f()` (0, a queue), `f(a, context)` (2) or `f(a, b, context)` (3),
 * the context a `HookContext` over `view`; settles what it returns under `id` as `callTool` does (a throw
 * is settled as a rejection).
 */
export function callHook(f, arity, a, b, signal, step, view, waiter, id) {
  let returned;
  try {
    if (arity === 0) {
      returned = f();
    } else {
      const context = new HookContext(signal, step, view);
      returned = arity === 2 ? f(a, context) : f(a, b, context);
    }
  } catch (error) {
    returned = Promise.reject(error);
  }
  return settleOrKeep(returned, waiter, id);
}

/** The request `prepareRequest` is shown, frozen: `{ systemPrompt, messages, tools }` as the model gets it. */
export function frozenRequest(systemPrompt, messages, tools) {
  return Object.freeze(modelRequest(systemPrompt, messages, tools));
}

// ---- for the API layer: the caller's clock, and a scripted stream's steps -------------------------------

/**
 * What `clock()` (the caller's `now`) gives, if it is a number; else undefined, and Rust takes `Date.now()`.
 * A clock is synchronous: a promise it gives is not awaited, but its rejection is taken here, or the page
 * would report it as unhandled. Never throws.
 */
export function readClock(clock) {
  try {
    const time = clock();
    if (typeof time === "number") return time;
    takeRejection(time);
  } catch {
    // a throwing clock: Date.now() stands in
  }
  return undefined;
}

/** `{ value, done: false }`, or `{ done: true }` for no value: one step of a scripted stream's iterator. */
export function iteratorResult(value) {
  return value === undefined ? { done: true } : { value, done: false };
}

/** Checked `messages` as JSON Lines (JS's writer keeps field order and numbers exact); `null` if that threw
 * (what it threw left for `takeKept`). Never throws. */
export function jsonLines(messages) {
  try {
    let text = "";
    for (let i = 0; i < messages.length; i += 1) text += `${JSON.stringify(messages[i])}\n`;
    return text;
  } catch (error) {
    kept = error;
    return null;
  }
}

// ---- api/agent.rs: the Agent (SPEC §9), thin JS over runAgentLoop ---------------------------------------
// Every rule is the core's: the state table (`__agentTransition`), the starting state and transcript
// (`__agentRestore`), the messages a prompt appends or a queue takes (`__agentInput`), the listeners' rule
// (`Listeners` in src/agent.rs, which `#emit` follows). glue.js imports nothing: scripts/build.mjs calls `agentClass` with
// each entry point's exports.

/** `protocol.rs`'s numbers. */
export const AgentState = Object.freeze({ Idle: 0, Running: 1, Paused: 2 });
export const AgentAction = Object.freeze({ Prompt: 0, Resume: 1, Queue: 2, Abort: 3, Reset: 4, RunEnded: 5, RunPaused: 6 });
export const AgentEffect = Object.freeze({ Run: 0, Queue: 1, AbortRun: 2, Interrupt: 3, Clear: 4, Settle: 5, Nothing: 6 });
/** `__agentTransition` answers `effect << AGENT_STATE_BITS | next state`. */
export const AGENT_STATE_BITS = 2;

/** `pending` when nothing waits. */
const NONE = Object.freeze([]);

/** Awaits each listener's promise in order; the first error (thrown, then rejected) is the event's. */
async function settleListeners(waits, failed) {
  for (const wait of waits) {
    try {
      await wait;
    } catch (error) {
      failed ??= { error };
    }
  }
  if (failed) throw failed.error;
}

/** The `Agent` class over `tinyPi`, the package's exports. */
export function agentClass(tinyPi) {
  return class Agent {
    #options;
    #state;
    #messages;
    /** Paused: the calls that wait, and the paused run's steps. */
    #pending;
    #steps = 0;
    #steering = [];
    #followUp = [];
    /** Replaced, not changed: a listener may (un)subscribe during a call. */
    #listeners = [];
    #controller;
    #idle = [];

    constructor(options) {
      const { state, pending, messages } = tinyPi.__agentRestore(options);
      this.#options = { ...options };
      this.#state = state;
      this.#settle(messages, pending);
    }

    static fromJSONL(text, options) {
      return new this({ ...options, messages: tinyPi.parseJSONL(text, { customRoles: options?.customRoles }) });
    }

    get messages() {
      return this.#messages;
    }

    get isRunning() {
      return this.#state === AgentState.Running;
    }

    get pending() {
      return this.#state === AgentState.Paused ? this.#pending : undefined;
    }

    async prompt(input) {
      return this.#act(AgentAction.Prompt, { input: tinyPi.__agentInput(input, this.#options) });
    }

    async resume(approvals) {
      return this.#act(AgentAction.Resume, { decisions: { approvals, startSteps: this.#steps } });
    }

    steer(message) {
      this.#queue(this.#steering, message);
    }

    followUp(message) {
      this.#queue(this.#followUp, message);
    }

    abort() {
      this.#act(AgentAction.Abort);
    }

    waitForIdle() {
      return this.isRunning ? new Promise((resolve) => this.#idle.push(resolve)) : Promise.resolve();
    }

    subscribe(listener) {
      if (typeof listener !== "function") throw new TypeError(`listener must be a function (got ${typeof listener})`);
      const entry = { listener };
      this.#listeners = [...this.#listeners, entry];
      return () => {
        this.#listeners = this.#listeners.filter((other) => other !== entry);
      };
    }

    reset() {
      this.#act(AgentAction.Reset);
    }

    toJSONL() {
      return tinyPi.toJSONL(this.#messages, { customRoles: this.#options.customRoles });
    }

    /**
     * The core's table for `action` (a refusal throws), then what its effect says, with what the method
     * hands it: the `input` to append or the `decisions` (Run), the `queue` and `message` (Queue), the run's
     * `result` (Settle). Answers a run's promise.
     */
    #act(action, work = {}) {
      const before = this.#state;
      const answer = tinyPi.__agentTransition(before, action);
      this.#state = answer & ((1 << AGENT_STATE_BITS) - 1);
      switch (answer >> AGENT_STATE_BITS) {
        case AgentEffect.Run: {
          const messages = work.input ? [...this.#messages, ...work.input] : this.#messages;
          return this.#run(before, messages, work.decisions);
        }
        case AgentEffect.Queue:
          work.queue.push(work.message);
          break;
        case AgentEffect.AbortRun:
          this.#controller.abort();
          break;
        case AgentEffect.Interrupt: {
          const { now, customRoles } = this.#options;
          const { messages } = tinyPi.repairTranscript(this.#messages, { now, customRoles });
          deepFreeze(messages);
          this.#settle(messages, NONE);
          break;
        }
        case AgentEffect.Clear:
          this.#settle([], NONE);
          this.#steering = [];
          this.#followUp = [];
          break;
        case AgentEffect.Settle: {
          // Frozen by the bridge (SPEC §10); the array is the result's.
          const { result } = work;
          this.#settle(result.messages, result.pending ?? NONE, result.steps);
        }
      }
    }

    #queue(queue, message) {
      const [copy] = tinyPi.__agentInput([message], this.#options);
      this.#act(AgentAction.Queue, { queue, message: copy });
    }

    /** `messages`, each frozen already, in a frozen array of its own; `pending` frozen. */
    #settle(messages, pending, steps = 0) {
      this.#messages = Object.freeze(messages.slice());
      this.#pending = pending;
      this.#steps = steps;
    }

    async #run(before, messages, decisions) {
      const previous = this.#messages;
      const controller = (this.#controller = new AbortController());
      this.#messages = Object.freeze(messages);
      let result;
      try {
        result = await tinyPi.runAgentLoop({
          ...this.#options,
          ...decisions,
          context: { systemPrompt: this.#options.systemPrompt, messages },
          signal: controller.signal,
          onEvent: this.#emit,
          getSteeringMessages: () => this.#steering.splice(0),
          getFollowUpMessages: () => this.#followUp.splice(0),
        });
      } catch (error) {
        // Refused before it began (a malformed option): as it was.
        this.#state = before;
        this.#messages = previous;
        this.#ended();
        throw error;
      }
      this.#act(result.reason === "paused" ? AgentAction.RunPaused : AgentAction.RunEnded, { result });
      this.#ended();
      return result;
    }

    #ended() {
      this.#controller = undefined;
      for (const wake of this.#idle.splice(0)) wake();
    }

    /**
     * Every event to every listener, as the core's `Listeners` does: each in turn gets it, then what they
     * returned is awaited in the same order; the first error (thrown, then rejected) is the event's. One
     * listener is `onEvent` itself.
     */
    #emit = (event) => {
      const listeners = this.#listeners;
      if (listeners.length === 1) return listeners[0].listener(event);
      let waits;
      let failed;
      for (const { listener } of listeners) {
        try {
          const returned = listener(event);
          if (awaitable(returned)) (waits ??= []).push(returned);
        } catch (error) {
          failed ??= { error };
        }
      }
      if (waits) return settleListeners(waits, failed);
      if (failed) throw failed.error;
    };
  };
}
