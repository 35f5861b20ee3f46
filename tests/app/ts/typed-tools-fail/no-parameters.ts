// expect: TS2345 Argument of type 'unknown' is not assignable to parameter of type 'string'.
// A tool without parameters gets Record<string, unknown>: each argument is unknown until checked.
import { ToolRegistry } from "tiny-pi";
const open = (path: string) => path;
new ToolRegistry().register({
  name: "read",
  execute: async (args) => ({ content: [{ type: "text", text: open(args.path) }] }),
});
