// expect: TS2339 Property 'file' does not exist on type '{ path: string; }'.
// A TypeBox object holds the properties it declares.
import { ToolRegistry } from "tiny-pi";
import { Type } from "@mariozechner/pi-ai";
new ToolRegistry().register({
  name: "read",
  parameters: Type.Object({ path: Type.String() }),
  execute: async (args) => ({ content: [{ type: "text", text: args.file }] }),
});
