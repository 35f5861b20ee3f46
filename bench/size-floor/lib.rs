//! The size floor of tiny-pi's core: what its Rust code costs in wasm before any JS bridge is added.
//! One export, so that everything the measured path does not reach is dropped by the linker.

use wasm_bindgen::prelude::wasm_bindgen;

#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

#[cfg(not(any(feature = "loop", feature = "logic")))]
#[wasm_bindgen]
pub fn run(messages: &str) -> Result<String, String> {
    let messages: Vec<tiny_pi::AgentMessage> =
        serde_json::from_str(messages).map_err(|e| e.to_string())?;
    serde_json::to_string(&messages).map_err(|e| e.to_string())
}

#[cfg(feature = "loop")]
#[wasm_bindgen]
pub fn run(messages: &str, script: &str) -> Result<String, String> {
    use futures::FutureExt;
    use serde_json::{json, Value};
    use std::{cell::RefCell, rc::Rc};
    use tiny_pi::*;

    struct Log(RefCell<Vec<String>>);
    impl Observer<ModelEvent> for Log {
        fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> Observed {
            let text = serde_json::to_string(&event).map_err(|e| e.to_string())?;
            self.0.borrow_mut().push(text);
            Ok(None)
        }
    }

    let messages: Vec<AgentMessage> = serde_json::from_str(messages).map_err(|e| e.to_string())?;
    let script: Vec<AssistantMessage> = serde_json::from_str(script).map_err(|e| e.to_string())?;
    let mut registry = ToolRegistry::new();
    registry.register(Tool::new(
        ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        },
        Rc::new(|_args: Value, _ctx: ToolCallContext| async {
            Ok(ToolOutput {
                content: vec![MediaBlock::text("# tiny-pi")],
                ..ToolOutput::default()
            })
        }),
    ))?;
    let model = ScriptedModel::new(script);
    let log = Log(RefCell::new(Vec::new()));
    let result = run_agent_loop(LoopOptions {
        context: AgentContext {
            system_prompt: None,
            messages,
        },
        model: &model,
        tools: registry.definitions(),
        executor: &registry,
        signal: AbortSignal::none(),
        max_steps: DEFAULT_MAX_STEPS,
        observer: &log,
        clock: Rc::new(|| 0.0),
        control: LoopControl::default(),
    })
    // A scripted model and a Rust tool never wait, so the run finishes in one poll.
    .now_or_never()
    .ok_or("the run did not finish in one poll")?
    .map_err(|e| e.to_string())?;
    let mut out = serde_json::to_string(&result).map_err(|e| e.to_string())?;
    for event in log.0.borrow().iter() {
        out.push('\n');
        out.push_str(event);
    }
    Ok(out)
}

/// The loop's own logic: the same run, with the messages made in Rust and the events counted, so that no
/// JSON is read or written but what the core itself does (a scripted call's arguments, schema errors).
#[cfg(feature = "logic")]
#[wasm_bindgen]
pub fn run(text: &str) -> Result<u32, String> {
    use futures::FutureExt;
    use serde_json::{json, Value};
    use std::{cell::Cell, rc::Rc};
    use tiny_pi::*;

    struct Count(Cell<u32>);
    impl Observer<ModelEvent> for Count {
        fn on_event(&self, _: LoopEvent<'_, ModelEvent>) -> Observed {
            self.0.set(self.0.get() + 1);
            Ok(None)
        }
    }

    let mut registry = ToolRegistry::new();
    registry.register(Tool::new(
        ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        },
        Rc::new(|_args: Value, _ctx: ToolCallContext| async {
            Ok(ToolOutput {
                content: vec![MediaBlock::text("# tiny-pi")],
                ..ToolOutput::default()
            })
        }),
    ))?;
    let model = ScriptedModel::new(vec![
        AssistantMessage::new(
            vec![AssistantBlock::tool_call(
                "c1",
                "read",
                json!({"path": text}),
            )],
            StopReason::ToolUse,
        ),
        AssistantMessage::new(vec![AssistantBlock::text("done")], StopReason::Stop),
    ]);
    let count = Count(Cell::new(0));
    let result = run_agent_loop(LoopOptions {
        context: AgentContext {
            system_prompt: None,
            messages: vec![AgentMessage::user(text, 0.0)],
        },
        model: &model,
        tools: registry.definitions(),
        executor: &registry,
        signal: AbortSignal::none(),
        max_steps: DEFAULT_MAX_STEPS,
        observer: &count,
        clock: Rc::new(|| 0.0),
        control: LoopControl::default(),
    })
    .now_or_never()
    .ok_or("the run did not finish in one poll")?
    .map_err(|e| e.to_string())?;
    // user, assistant with the call, its result, the final assistant message
    if result.reason == RunReason::Stop && result.messages.len() == 4 {
        Ok(count.0.get())
    } else {
        Err("the run did not end with stop after one tool call".into())
    }
}
