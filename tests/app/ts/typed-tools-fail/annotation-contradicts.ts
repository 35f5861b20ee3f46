// expect: TS2322 Type '(args: { count: number; }) => Promise<{ content: { type: "text"; text: string; }[]; }>' is not assignable to type '((args: { count: number; }, context: ExecuteContext & { callId: string; }) => ToolOutput<unknown> | Promise<ToolOutput<unknown>>) & { "its arguments' annotation contradicts parameters at": "count"; }'.
// An annotation of the arguments may narrow what the schema says, never contradict it: `count` arrives a string.
import { ToolRegistry } from "tiny-pi";
new ToolRegistry().register({
  name: "count",
  parameters: { type: "object", properties: { count: { type: "string" } }, required: ["count"] },
  execute: async (args: { count: number }) => ({ content: [{ type: "text", text: args.count.toFixed(0) }] }),
});
