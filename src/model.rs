//! The model boundary (SPEC §2): a `Model` turns a request into a stream of events and one final message.
//! `ScriptedModel` is the offline, deterministic model of the course.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};

use crate::message::{
    tagged, AgentMessage, AssistantBlock, AssistantMessage, StopReason, ToolCall,
};
use crate::signal::AbortSignal;
use crate::tools::ToolDefinition;

/// What the loop sends on each request. Borrowed: a model that keeps it must copy it (each request
/// sees its own snapshot; later appends cannot change it).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<&'a str>,
    pub messages: &'a [AgentMessage],
    pub tools: &'a [ToolDefinition],
}

pub trait Model {
    type Stream: ModelStream;
    /// Starts one response. An `Err` (a model that throws) ends the run with reason `error`.
    fn stream(
        &self,
        request: ModelRequest<'_>,
        signal: &AbortSignal,
    ) -> Result<Self::Stream, String>;
}

/// A response in progress: events in order, then the final message.
#[allow(async_fn_in_trait)] // single-threaded by design (wasm); no Send bound wanted
pub trait ModelStream {
    type Event: StreamEvent;
    /// The next event, `None` at the end; an `Err` is a stream that threw.
    async fn next(&mut self) -> Option<Result<Self::Event, String>>;
    /// Whether `result()` gives the final message (pi-ai's `EventStream.result()`); without it the loop
    /// takes the message from the terminal `done`/`error` event.
    fn has_result(&self) -> bool;
    async fn result(&mut self) -> Result<AssistantMessage, String>;
}

pub trait StreamEvent {
    /// The final message a terminal event (`done` / `error`) carries; `None` for every other event.
    fn final_message(&self) -> Option<Result<AssistantMessage, String>>;
}

/// pi-ai's `AssistantMessageEvent`, for models written in Rust.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ModelEvent {
    Start,
    TextStart {
        content_index: usize,
    },
    TextDelta {
        content_index: usize,
        delta: String,
    },
    TextEnd {
        content_index: usize,
        content: String,
    },
    ThinkingStart {
        content_index: usize,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
    },
    ThinkingEnd {
        content_index: usize,
        content: String,
    },
    ToolcallStart {
        content_index: usize,
    },
    ToolcallDelta {
        content_index: usize,
        delta: String,
    },
    ToolcallEnd {
        content_index: usize,
        #[serde(serialize_with = "tagged::tool_call")]
        tool_call: ToolCall,
    },
    Done {
        reason: StopReason,
        #[serde(serialize_with = "tagged::assistant")]
        message: AssistantMessage,
    },
    Error {
        reason: StopReason,
        #[serde(serialize_with = "tagged::assistant")]
        error: AssistantMessage,
    },
}

impl StreamEvent for ModelEvent {
    fn final_message(&self) -> Option<Result<AssistantMessage, String>> {
        match self {
            ModelEvent::Done { message, .. } => Some(Ok(message.clone())),
            ModelEvent::Error { error, .. } => Some(Ok(error.clone())),
            _ => None,
        }
    }
}

impl ModelEvent {
    /// The exact event sequence `ScriptedModel` replays for `message` (SPEC §2).
    pub fn script(message: &AssistantMessage) -> Vec<ModelEvent> {
        let mut events = vec![ModelEvent::Start];
        for (content_index, block) in message.content.iter().enumerate() {
            match block {
                AssistantBlock::Text(t) => events.push(ModelEvent::TextDelta {
                    content_index,
                    delta: t.text.clone(),
                }),
                AssistantBlock::Thinking(t) => events.push(ModelEvent::ThinkingDelta {
                    content_index,
                    delta: t.thinking.clone(),
                }),
                AssistantBlock::ToolCall(call) => {
                    events.push(ModelEvent::ToolcallDelta {
                        content_index,
                        delta: call.arguments.to_string(),
                    });
                    events.push(ModelEvent::ToolcallEnd {
                        content_index,
                        tool_call: call.clone(),
                    });
                }
            }
        }
        let reason = message.stop_reason;
        events.push(match reason {
            StopReason::Stop | StopReason::Length | StopReason::ToolUse => ModelEvent::Done {
                reason,
                message: message.clone(),
            },
            StopReason::Error | StopReason::Aborted => ModelEvent::Error {
                reason,
                error: message.clone(),
            },
        });
        events
    }
}

/// One request as a `ScriptedModel` saw it (owned copies).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    pub messages: Vec<AgentMessage>,
    pub tools: Vec<ToolDefinition>,
}

/// Replays a list of assistant messages, one per request, and records what each request saw.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    script: Vec<AssistantMessage>,
    requests: RefCell<Vec<RecordedRequest>>,
}

impl ScriptedModel {
    pub fn new(script: Vec<AssistantMessage>) -> Self {
        ScriptedModel {
            script,
            requests: RefCell::new(Vec::new()),
        }
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.borrow().clone()
    }

    pub fn request_count(&self) -> usize {
        self.requests.borrow().len()
    }
}

impl Model for ScriptedModel {
    type Stream = ScriptedStream;

    fn stream(
        &self,
        request: ModelRequest<'_>,
        _signal: &AbortSignal,
    ) -> Result<ScriptedStream, String> {
        let mut requests = self.requests.borrow_mut();
        requests.push(RecordedRequest {
            system_prompt: request.system_prompt.map(str::to_owned),
            messages: request.messages.to_vec(),
            tools: request.tools.to_vec(),
        });
        let n = requests.len();
        let message = self.script.get(n - 1).ok_or_else(|| {
            format!(
                "ScriptedModel: request {n} has no scripted response (the script has {})",
                self.script.len()
            )
        })?;
        Ok(ScriptedStream {
            events: ModelEvent::script(message).into_iter(),
            message: message.clone(),
        })
    }
}

pub struct ScriptedStream {
    events: std::vec::IntoIter<ModelEvent>,
    message: AssistantMessage,
}

impl ScriptedStream {
    /// The next event without awaiting (the script is already in memory).
    pub fn next_now(&mut self) -> Option<ModelEvent> {
        self.events.next()
    }

    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }
}

impl ModelStream for ScriptedStream {
    type Event = ModelEvent;

    async fn next(&mut self) -> Option<Result<ModelEvent, String>> {
        self.events.next().map(Ok)
    }

    fn has_result(&self) -> bool {
        true
    }

    async fn result(&mut self) -> Result<AssistantMessage, String> {
        Ok(self.message.clone())
    }
}
