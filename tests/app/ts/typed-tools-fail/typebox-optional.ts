// expect: TS18048 'args.limit' is possibly 'undefined'.
// A TypeBox optional property may be missing.
import { ToolRegistry } from "tiny-pi";
import { Type } from "@mariozechner/pi-ai";
new ToolRegistry().register({
  name: "head",
  parameters: Type.Object({ path: Type.String(), limit: Type.Optional(Type.Integer()) }),
  execute: async (args) => ({ content: [{ type: "text", text: args.limit.toFixed(0) }] }),
});
