// expect: TS2339 Property 'toUpperCase' does not exist on type 'number'.
// An integer property is a number.
import { ToolRegistry } from "tiny-pi";
new ToolRegistry().register({
  name: "head",
  parameters: { type: "object", properties: { lines: { type: "integer" } }, required: ["lines"] },
  execute: async ({ lines }) => ({ content: [{ type: "text", text: lines.toUpperCase() }] }),
});
