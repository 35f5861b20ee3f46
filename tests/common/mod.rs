//! Shared fixtures for the native tests: the course's README round trip, recording observers, and tools
//! whose completion is driven by explicit gates (never by sleeps).
#![allow(dead_code)]

pub mod control;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use tiny_pi::*;

pub fn text(t: &str) -> AssistantBlock {
    AssistantBlock::text(t)
}

pub fn call(id: &str, name: &str, args: Value) -> AssistantBlock {
    AssistantBlock::tool_call(id, name, args)
}

pub fn assistant(content: Vec<AssistantBlock>, stop: StopReason) -> AssistantMessage {
    AssistantMessage::new(content, stop)
}

pub fn user(t: &str) -> AgentMessage {
    AgentMessage::user(t, 1.0)
}

/// Chapter 07's README round trip: read(call-1) then the final answer.
pub fn readme_script() -> Vec<AssistantMessage> {
    vec![
        assistant(
            vec![
                text("我先读取项目说明。"),
                call("call-1", "read", json!({"path": "README.md"})),
            ],
            StopReason::ToolUse,
        ),
        assistant(vec![text("项目名是 tiny-pi。")], StopReason::Stop),
    ]
}

pub fn readme_context() -> AgentContext {
    AgentContext {
        system_prompt: Some("You are a helpful assistant.".into()),
        messages: vec![user("请读取 README.md，并告诉我项目名。")],
    }
}

/// Records each event as a short line, e.g. `model_event:text_delta`, `tool_end:call-1`.
#[derive(Default)]
pub struct Recorder {
    pub lines: RefCell<Vec<String>>,
    pub fail_with: Option<String>,
}

impl Recorder {
    pub fn lines(&self) -> Vec<String> {
        self.lines.borrow().clone()
    }
}

pub fn describe(event: &LoopEvent<'_, ModelEvent>) -> String {
    match event {
        LoopEvent::ModelEvent { event } => {
            let value = serde_json::to_value(event).unwrap();
            format!("model_event:{}", value["type"].as_str().unwrap())
        }
        LoopEvent::AssistantMessage { message, .. } => {
            format!("assistant_message:{}", message.stop_reason.as_str())
        }
        LoopEvent::ToolStart { call } => format!("tool_start:{}", call.id),
        LoopEvent::ToolProgress { call_id, .. } => format!("tool_progress:{call_id}"),
        LoopEvent::ToolEnd { result, .. } => format!("tool_end:{}", result.tool_call_id),
        LoopEvent::ToolSkipped { result, .. } => format!("tool_skipped:{}", result.tool_call_id),
        LoopEvent::QueuedMessage { message, queue, .. } => {
            format!("queued_message:{}:{}", queue.as_str(), message.role())
        }
        LoopEvent::Retry {
            attempt,
            delay_ms,
            error,
        } => format!("retry:{attempt}:{delay_ms}:{error}"),
        LoopEvent::Compaction { entry, .. } => format!(
            "compaction:{}:{}",
            entry.first_kept_index,
            entry.tokens_before.unwrap_or(f64::NAN)
        ),
        LoopEvent::TurnEnd { reason, steps } => format!(
            "turn_end:{}:{steps}",
            serde_json::to_value(reason).unwrap().as_str().unwrap()
        ),
    }
}

impl Observer<ModelEvent> for Recorder {
    fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> tiny_pi::agent_loop::Observed {
        self.lines.borrow_mut().push(describe(&event));
        match &self.fail_with {
            Some(message) => Err(message.clone()),
            None => Ok(None),
        }
    }
}

/// What a gated call answers: its text, or the message it rejects with.
pub type Outcome = Result<String, String>;

/// A tool whose every call waits for its gate; counts executions and records the order they began.
#[derive(Default, Clone)]
pub struct GatedTools {
    pub gates: Rc<RefCell<HashMap<String, oneshot::Receiver<Outcome>>>>,
    pub senders: Rc<RefCell<HashMap<String, oneshot::Sender<Outcome>>>>,
    pub started: Rc<RefCell<Vec<String>>>,
}

impl GatedTools {
    /// Creates the gate for `call_id`; `release` opens it.
    pub fn gate(&self, call_id: &str) {
        let (tx, rx) = oneshot::channel();
        self.gates.borrow_mut().insert(call_id.into(), rx);
        self.senders.borrow_mut().insert(call_id.into(), tx);
    }

    pub fn release(&self, call_id: &str, outcome: Result<&str, &str>) {
        let tx = self
            .senders
            .borrow_mut()
            .remove(call_id)
            .expect("no such gate");
        let _ = tx.send(outcome.map(str::to_owned).map_err(str::to_owned));
    }

    pub fn executions(&self) -> usize {
        self.started.borrow().len()
    }
}

/// A custom executor (the seeds' probe): answers at once unless a gate exists for the call.
impl ToolExecutor for GatedTools {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        _context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        self.started.borrow_mut().push(call.id.clone());
        let gate = self.gates.borrow_mut().remove(&call.id);
        async move {
            let outcome = match gate {
                Some(rx) => rx.await.map_err(|_| "gate dropped".to_string())?,
                None => Ok(format!("{} ok", call.name)),
            };
            outcome.map(|text| ToolReply {
                content: vec![MediaBlock::text(text)],
                details: None,
                is_error: false,
                timestamp: None,
                extra: Default::default(),
                terminate: false,
            })
        }
        .boxed_local()
    }
}

/// A registry with the in-memory `read` of chapter 07 (fixed README content).
pub fn readme_registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry
        .register(Tool::new(
            ToolDefinition {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            Rc::new(|_args: Value, _ctx: ToolCallContext| async {
                Ok(ToolOutput { content: vec![MediaBlock::text("# tiny-pi\nA small agent runtime.")], details: None, is_error: false, terminate: false })
            }),
        ))
        .unwrap();
    registry
}

pub fn fixed_clock() -> Clock {
    Rc::new(|| 42.0)
}

pub struct Setup<'a> {
    pub context: AgentContext,
    pub model: &'a ScriptedModel,
    pub registry: &'a ToolRegistry,
    pub executor: Option<&'a dyn ToolExecutor>,
    pub observer: &'a dyn Observer<ModelEvent>,
    pub signal: AbortSignal,
    pub max_steps: u32,
    /// SPEC §7's options; none by default.
    pub control: LoopControl<'a>,
}

impl<'a> Setup<'a> {
    pub fn new(
        model: &'a ScriptedModel,
        registry: &'a ToolRegistry,
        observer: &'a dyn Observer<ModelEvent>,
    ) -> Self {
        Setup {
            context: readme_context(),
            model,
            registry,
            executor: None,
            observer,
            signal: AbortSignal::none(),
            max_steps: DEFAULT_MAX_STEPS,
            control: LoopControl::default(),
        }
    }

    pub fn options(self) -> LoopOptions<'a, ScriptedModel> {
        LoopOptions {
            context: self.context,
            model: self.model,
            tools: self.registry.definitions(),
            executor: self.executor.unwrap_or(self.registry),
            signal: self.signal,
            max_steps: self.max_steps,
            observer: self.observer,
            clock: fixed_clock(),
            control: self.control,
        }
    }

    pub fn run(self) -> RunResult {
        futures::executor::block_on(run_agent_loop(self.options())).expect("a whole transcript")
    }
}

pub fn roles(messages: &[AgentMessage]) -> Vec<&str> {
    messages.iter().map(AgentMessage::role).collect()
}

pub fn results(messages: &[AgentMessage]) -> Vec<&ToolResultMessage> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect()
}
