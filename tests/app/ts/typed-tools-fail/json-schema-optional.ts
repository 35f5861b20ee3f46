// expect: TS2345 Argument of type 'string | undefined' is not assignable to parameter of type 'string'.
// A property the schema does not require may be missing.
import { ToolRegistry } from "tiny-pi";
const open = (path: string) => path;
new ToolRegistry().register({
  name: "read",
  parameters: { type: "object", properties: { path: { type: "string" } } },
  execute: async ({ path }) => ({ content: [{ type: "text", text: open(path) }] }),
});
