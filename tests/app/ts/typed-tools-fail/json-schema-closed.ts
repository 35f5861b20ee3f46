// expect: TS2339 Property 'file' does not exist on type '{ path: string; }'.
// With `additionalProperties: false` the arguments hold the declared properties only.
import { ToolRegistry } from "tiny-pi";
const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"], additionalProperties: false } as const;
new ToolRegistry().register({
  name: "read",
  parameters: schema,
  execute: async (args) => ({ content: [{ type: "text", text: args.file }] }),
});
