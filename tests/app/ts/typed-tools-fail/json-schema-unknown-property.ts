// expect: TS2345 Argument of type 'unknown' is not assignable to parameter of type 'string'.
// A property the schema does not declare is unknown: it cannot be used as a string without a check.
import { ToolRegistry } from "tiny-pi";
const open = (path: string) => path;
new ToolRegistry().register({
  name: "read",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: async (args) => ({ content: [{ type: "text", text: open(args.file) }] }),
});
