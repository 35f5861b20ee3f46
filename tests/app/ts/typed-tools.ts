// Typed tools (issue 28): `execute`'s arguments are typed from the tool's `parameters`, with no annotation, under
// `tsc --strict`: a JSON Schema written inline or `as const` (json-schema-to-ts's FromSchema), a TypeBox schema
// as pi-agent-core users write it (`Type` from pi-ai; TypeBox's Static), and no schema at all. An annotation
// still decides. Each `same<A, B>(true)` compiles only when the two types are the same type, not merely
// assignable; the files in typed-tools-fail/ must not compile (tests/node/typed-tools.test.mjs).
import { ToolRegistry, type PendingCall, type RunResult, type ToolArguments, type ToolParameters, type ToolSpec } from "tiny-pi";
import { Type } from "@mariozechner/pi-ai";

/** `true` when X and Y are the same type. */
type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
const same = <X, Y>(proof: Equal<X, Y>) => proof;
const open = (path: string, limit = 1) => `${path}:${limit}`;

const tools = new ToolRegistry();

// A JSON Schema written inline: required properties are required, the others optional, and JSON Schema lets a
// call carry other properties (unknown) unless `additionalProperties: false`.
tools.register({
  name: "read",
  parameters: {
    type: "object",
    properties: { path: { type: "string" }, limit: { type: "integer", minimum: 1 }, encoding: { enum: ["utf8", "base64"] } },
    required: ["path"],
  },
  execute: async (args) => {
    same<typeof args, { [x: string]: unknown; path: string; limit?: number; encoding?: "utf8" | "base64" }>(true);
    return { content: [{ type: "text", text: open(args.path, args.limit) }] };
  },
});

// The same schema kept in a constant, `as const`; destructured arguments are typed too.
const writeSchema = {
  type: "object",
  properties: { path: { type: "string" }, lines: { type: "array", items: { type: "string" } } },
  required: ["path", "lines"],
  additionalProperties: false,
} as const;
tools.register({
  name: "write",
  parameters: writeSchema,
  needsApproval: ({ path }) => path.startsWith("/"),
  execute: async ({ path, lines }) => {
    same<typeof lines, string[]>(true);
    return { content: [{ type: "text", text: `${path}: ${lines.join("\n")}` }] };
  },
});
same<ToolArguments<typeof writeSchema>, { path: string; lines: string[] }>(true);

// A TypeBox schema, as a pi-agent-core tool declares it: `Type` re-exported by pi-ai.
tools.register({
  name: "search",
  parameters: Type.Object({
    query: Type.String({ description: "what to look for" }),
    limit: Type.Optional(Type.Integer({ minimum: 1 })),
    mode: Type.Union([Type.Literal("exact"), Type.Literal("fuzzy")]),
  }),
  execute: async (args, { signal }) => {
    same<typeof args, { query: string; limit?: number; mode: "exact" | "fuzzy" }>(true);
    signal?.throwIfAborted();
    return { content: [{ type: "text", text: `${args.mode} ${args.query.toUpperCase()} ${args.limit ?? 10}` }], details: { hits: 0 } };
  },
});

// No parameters: any object of arguments, each unknown until checked.
tools.register({
  name: "now",
  execute: async (args) => {
    same<typeof args, Record<string, unknown>>(true);
    return { content: [{ type: "text", text: typeof args.zone === "string" ? args.zone : "UTC" }] };
  },
});

// A schema whose literal types were widened (no `as const`) tells TypeScript nothing: Record<string, unknown>.
const widened = { type: "object", properties: { path: { type: "string" } } };
tools.register({
  name: "stat",
  parameters: widened,
  execute: async (args) => {
    same<typeof args, Record<string, unknown>>(true);
    return { content: [] };
  },
});

// An annotation still decides: on `execute`'s arguments (narrowing what the schema says, never contradicting it;
// typed-tools-fail/annotation-contradicts.ts), or a ToolSpec typed whole.
interface MoveArgs {
  from: string;
  to: string;
}
tools.register({
  name: "move",
  parameters: { type: "object" },
  execute: async (args: MoveArgs) => ({ content: [{ type: "text", text: `${args.from} -> ${args.to}` }] }),
});
tools.register({
  name: "mode",
  parameters: { type: "object", properties: { mode: { type: "string" }, limit: { type: "integer" } }, required: ["mode"] },
  execute: async (args: { mode: "fast" | "slow"; limit?: number }) => ({ content: [{ type: "text", text: `${args.mode} ${args.limit}` }] }),
});
tools.register({
  name: "widen",
  parameters: { type: "object", properties: { q: { type: "string" }, xs: { type: "array", items: { type: "string" } } }, required: ["q", "xs"] },
  execute: async (args: { q: string | number; xs: readonly string[]; limit?: number }) => ({ content: [{ type: "text", text: `${args.q} ${args.xs.length}` }] }),
});
// Wrappers that pass a ToolSpec on, generic over its arguments or over its schema.
export function registerSpec<T>(spec: ToolSpec<T>): void {
  tools.register(spec);
}
export function registerTyped<const S extends ToolParameters>(spec: ToolSpec<ToolArguments<S>, unknown, S>): void {
  tools.register(spec);
}
const remove: ToolSpec<{ path: string }> = {
  name: "remove",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: async ({ path }) => ({ content: [{ type: "text", text: `removed ${path}` }] }),
};
tools.register(remove);

// The details a tool returns are typed as it returns them.
tools.register({
  name: "count",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  execute: async ({ text }) => ({ content: [], details: { length: text.length } }),
});

export { tools };

// A run's result: testing its reason narrows what the reason decides (`pending` with `paused`, `error` with
// `error`, and only then).
declare const result: RunResult;
if (result.reason === "paused") same<typeof result.pending, readonly PendingCall[]>(true);
if (result.reason === "error") same<typeof result.error, string>(true);
if (result.reason === "stop") same<typeof result.pending | typeof result.error, undefined>(true);
