// The lesson entry's types are the main entry's: `tiny-pi/lesson` sits beside `tiny-pi/web` in the package.
import type { AgentMessage, AssistantMessage, ModelRequest, ModelStream, ScriptedModelOptions, TraceRecord, TraceValidation } from "../web/tiny_pi.js";
export type { ScriptedModelOptions, TraceRecord, TraceValidation };
