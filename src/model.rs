//! The model boundary (SPEC §2): a `Model` turns a request into a stream of events and one final message.
//! `ScriptedModel` is the offline, deterministic model of the course.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};

use crate::message::{
    empty_object, tagged, AgentMessage, AssistantBlock, AssistantMessage, StopReason, ToolCall,
};
use crate::signal::AbortSignal;
use crate::tools::definition::ToolDefinition;

/// What the loop sends on each request. Borrowed: a model that keeps it must copy it (each request
/// sees its own snapshot; later appends cannot change it).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<&'a str>,
    pub messages: &'a [AgentMessage],
    pub tools: &'a [ToolDefinition],
    /// Where `messages` come from in the run's transcript (never serialized): a host that keeps its own
    /// form of each transcript message (the wasm bridge's frozen JS objects) reuses it.
    #[serde(skip)]
    pub sources: Sources<'a>,
    /// 0 the first time the loop makes this request, `n` for its `n`-th retry (SPEC §12: the same request
    /// again; a host that made an object of it hands the model that object again). Never serialized.
    #[serde(skip)]
    pub attempt: u32,
}

/// Where a request's messages come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sources<'a> {
    /// `messages[i]` is the transcript's message `i`.
    Transcript,
    /// `messages[i]` is the transcript's message `at[i]`.
    Picked(&'a [usize]),
    /// `messages[0]` is the summary message of the transcript's last compaction entry (SPEC §13), made for
    /// this request; `messages[1 + i]` is the transcript's message `at[i]`.
    Summarized(&'a [usize]),
    /// Messages the transcript does not hold as they are (`prepareRequest` replaced them, or a caller
    /// built the request).
    #[default]
    Other,
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

/// pi-ai's `AssistantMessageEvent`, for models written in Rust. `partial` (the message so far) is what
/// pi-ai's providers put on every event but the last; the compact grammar leaves it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ModelEvent {
    Start {
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
    },
    TextStart {
        content_index: usize,
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
    },
    TextDelta {
        content_index: usize,
        delta: String,
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
    },
    TextEnd {
        content_index: usize,
        content: String,
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
    },
    ThinkingStart {
        content_index: usize,
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
    },
    ThinkingEnd {
        content_index: usize,
        content: String,
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
    },
    ToolcallStart {
        content_index: usize,
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
    },
    ToolcallDelta {
        content_index: usize,
        delta: String,
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
    },
    ToolcallEnd {
        content_index: usize,
        #[serde(serialize_with = "tagged::tool_call")]
        tool_call: ToolCall,
        #[serde(default, skip_serializing_if = "Partial::is_none")]
        partial: Partial,
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

/// The message as streamed so far, on an event of pi-ai's full grammar; `None` in the compact grammar.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Partial(pub Option<Box<AssistantMessage>>);

impl Partial {
    pub fn is_none(&self) -> bool {
        self.0.is_none()
    }

    fn of(message: &AssistantMessage) -> Self {
        Partial(Some(Box::new(message.clone())))
    }
}

impl Serialize for Partial {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0
            .as_deref()
            .map(AssistantMessage::tagged)
            .serialize(serializer)
    }
}

/// Which events a `ScriptedModel` replays for a message (SPEC §2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventGrammar {
    /// The seeds' grammar: `start`, one delta per block (and `toolcall_end` per call), then the end.
    #[default]
    Compact,
    /// pi-ai's: `*_start`, `*_delta` and `*_end` per block, each with the `partial` message, as a provider
    /// streams it.
    PiAi,
}

impl EventGrammar {
    /// The grammar named `name` in JS (`"compact"`, `"pi-ai"`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "compact" => Some(EventGrammar::Compact),
            "pi-ai" => Some(EventGrammar::PiAi),
            _ => None,
        }
    }
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
    /// The exact event sequence `ScriptedModel` replays for `message` (SPEC §2), in the compact grammar.
    pub fn script(message: &AssistantMessage) -> Vec<ModelEvent> {
        Self::script_in(EventGrammar::Compact, message)
    }

    /// The event sequence of `message` in `grammar`.
    pub fn script_in(grammar: EventGrammar, message: &AssistantMessage) -> Vec<ModelEvent> {
        let mut events = match grammar {
            EventGrammar::Compact => Self::compact(message),
            EventGrammar::PiAi => Self::pi_ai(message),
        };
        events.push(Self::end(message));
        events
    }

    /// `start`, then per text block one `text_delta` (whole text), per thinking block one
    /// `thinking_delta`, per tool call one `toolcall_delta` (arguments as JSON text) and one `toolcall_end`.
    fn compact(message: &AssistantMessage) -> Vec<ModelEvent> {
        let mut events = vec![ModelEvent::Start {
            partial: Partial::default(),
        }];
        for (content_index, block) in message.content.iter().enumerate() {
            match block {
                AssistantBlock::Text(t) => events.push(ModelEvent::TextDelta {
                    content_index,
                    delta: t.text.clone(),
                    partial: Partial::default(),
                }),
                AssistantBlock::Thinking(t) => events.push(ModelEvent::ThinkingDelta {
                    content_index,
                    delta: t.thinking.clone(),
                    partial: Partial::default(),
                }),
                AssistantBlock::ToolCall(call) => {
                    events.push(ModelEvent::ToolcallDelta {
                        content_index,
                        delta: call.arguments_or_empty().to_string(),
                        partial: Partial::default(),
                    });
                    events.push(ModelEvent::ToolcallEnd {
                        content_index,
                        tool_call: call.clone(),
                        partial: Partial::default(),
                    });
                }
            }
        }
        events
    }

    /// pi-ai's grammar as its providers stream a message: the `partial` message has the final message's
    /// fields and the blocks so far; a block starts empty (a call with `arguments: {}`), gets its one delta,
    /// and is complete (signatures and all) at its `*_end`.
    fn pi_ai(message: &AssistantMessage) -> Vec<ModelEvent> {
        let mut partial = AssistantMessage {
            content: Vec::with_capacity(message.content.len()),
            ..message.clone()
        };
        let mut events = vec![ModelEvent::Start {
            partial: Partial::of(&partial),
        }];
        for (content_index, block) in message.content.iter().enumerate() {
            let (started, streamed) = match block {
                AssistantBlock::Text(t) => {
                    (AssistantBlock::text(""), AssistantBlock::text(&t.text))
                }
                AssistantBlock::Thinking(t) => (
                    AssistantBlock::thinking(""),
                    AssistantBlock::thinking(&t.thinking),
                ),
                AssistantBlock::ToolCall(call) => {
                    let started = AssistantBlock::tool_call(&call.id, &call.name, empty_object());
                    (started.clone(), started)
                }
            };
            partial.content.push(started);
            events.push(block_event(Phase::Start, block, content_index, &partial));
            partial.content[content_index] = streamed;
            events.push(block_event(Phase::Delta, block, content_index, &partial));
            partial.content[content_index] = block.clone();
            events.push(block_event(Phase::End, block, content_index, &partial));
        }
        events
    }

    /// `done` (stop, length, toolUse) or `error` (error, aborted), carrying the final message.
    fn end(message: &AssistantMessage) -> ModelEvent {
        let reason = message.stop_reason;
        match reason {
            StopReason::Stop | StopReason::Length | StopReason::ToolUse => ModelEvent::Done {
                reason,
                message: message.clone(),
            },
            StopReason::Error | StopReason::Aborted => ModelEvent::Error {
                reason,
                error: message.clone(),
            },
        }
    }
}

#[derive(Clone, Copy)]
enum Phase {
    Start,
    Delta,
    End,
}

/// The pi-ai event of `phase` for `block`, carrying `partial` as it is now.
fn block_event(
    phase: Phase,
    block: &AssistantBlock,
    content_index: usize,
    partial: &AssistantMessage,
) -> ModelEvent {
    let partial = Partial::of(partial);
    match (block, phase) {
        (AssistantBlock::Text(_), Phase::Start) => ModelEvent::TextStart {
            content_index,
            partial,
        },
        (AssistantBlock::Text(t), Phase::Delta) => ModelEvent::TextDelta {
            content_index,
            delta: t.text.clone(),
            partial,
        },
        (AssistantBlock::Text(t), Phase::End) => ModelEvent::TextEnd {
            content_index,
            content: t.text.clone(),
            partial,
        },
        (AssistantBlock::Thinking(_), Phase::Start) => ModelEvent::ThinkingStart {
            content_index,
            partial,
        },
        (AssistantBlock::Thinking(t), Phase::Delta) => ModelEvent::ThinkingDelta {
            content_index,
            delta: t.thinking.clone(),
            partial,
        },
        (AssistantBlock::Thinking(t), Phase::End) => ModelEvent::ThinkingEnd {
            content_index,
            content: t.thinking.clone(),
            partial,
        },
        (AssistantBlock::ToolCall(_), Phase::Start) => ModelEvent::ToolcallStart {
            content_index,
            partial,
        },
        (AssistantBlock::ToolCall(call), Phase::Delta) => ModelEvent::ToolcallDelta {
            content_index,
            delta: call.arguments_or_empty().to_string(),
            partial,
        },
        (AssistantBlock::ToolCall(call), Phase::End) => ModelEvent::ToolcallEnd {
            content_index,
            tool_call: call.clone(),
            partial,
        },
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
    grammar: EventGrammar,
    requests: RefCell<Vec<RecordedRequest>>,
}

impl ScriptedModel {
    /// Replays `script` in the compact grammar.
    pub fn new(script: Vec<AssistantMessage>) -> Self {
        ScriptedModel {
            script,
            grammar: EventGrammar::Compact,
            requests: RefCell::new(Vec::new()),
        }
    }

    /// This model, replaying its script in `grammar`.
    pub fn with_grammar(self, grammar: EventGrammar) -> Self {
        ScriptedModel { grammar, ..self }
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
            events: ModelEvent::script_in(self.grammar, message).into_iter(),
            message: message.clone(),
        })
    }
}

pub struct ScriptedStream {
    events: std::vec::IntoIter<ModelEvent>,
    message: AssistantMessage,
}

impl ScriptedStream {
    /// The next event without awaiting (the script is already in memory). After the last one the events'
    /// buffer is let go: a finished stream a host has not dropped yet (a JS one waits for its finalizer)
    /// holds its message only.
    pub fn next_now(&mut self) -> Option<ModelEvent> {
        let event = self.events.next();
        if self.events.len() == 0 {
            self.events = Vec::new().into_iter();
        }
        event
    }

    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }
}

impl ModelStream for ScriptedStream {
    type Event = ModelEvent;

    async fn next(&mut self) -> Option<Result<ModelEvent, String>> {
        self.next_now().map(Ok)
    }

    fn has_result(&self) -> bool {
        true
    }

    async fn result(&mut self) -> Result<AssistantMessage, String> {
        Ok(self.message.clone())
    }
}
