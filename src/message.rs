//! The canonical transcript (SPEC §1), in pi-ai's JSON shapes, with the app's custom-role messages (§7) and
//! compaction entries (§13).
//!
//! Every struct keeps unknown fields in `extra` so that provider data (usage, api, model, signatures, ...)
//! survives a run unchanged. How each shape is read from JSON is `crate::reading`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Fields a message or block carried that tiny-pi does not interpret; written back verbatim.
pub type Extra = Map<String, Value>;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextContent {
    pub text: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThinkingContent {
    pub thinking: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    pub data: String,
    pub mime_type: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// A JSON object in well-formed calls; kept as any value so a malformed call still reaches
    /// the executor, which answers it with an error result instead of losing it.
    pub arguments: Value,
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolCall {
    /// This call with `"type": "toolCall"`, as it looks on its own.
    pub fn tagged(&self) -> WithType<'_, Self> {
        WithType {
            kind: "toolCall",
            inner: self,
        }
    }
}

pub(crate) fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// A block of user or tool-result content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum MediaBlock {
    Text(TextContent),
    Image(ImageContent),
}

/// A block of assistant content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantBlock {
    Text(TextContent),
    Thinking(ThinkingContent),
    ToolCall(ToolCall),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<MediaBlock>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

impl StopReason {
    pub const ALL: [StopReason; 5] = [
        StopReason::Stop,
        StopReason::Length,
        StopReason::ToolUse,
        StopReason::Error,
        StopReason::Aborted,
    ];

    /// The stop reason named `text` in pi-ai's JSON.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserMessage {
    pub content: UserContent,
    /// Required on input: a message without one is refused, naming the field (`timestamp is missing`).
    pub timestamp: f64,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<AssistantBlock>,
    pub stop_reason: StopReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Required on input: a message without one is refused, naming the field (`timestamp is missing`).
    pub timestamp: f64,
    #[serde(flatten)]
    pub extra: Extra,
}

impl AssistantMessage {
    /// This message with `"role": "assistant"`, as it looks on its own.
    pub fn tagged(&self) -> WithRole<'_, Self> {
        WithRole {
            role: "assistant",
            inner: self,
        }
    }

    /// A message with no provider fields, handy for scripts and tests.
    pub fn new(content: Vec<AssistantBlock>, stop_reason: StopReason) -> Self {
        AssistantMessage {
            content,
            stop_reason,
            error_message: None,
            timestamp: 0.0,
            extra: Extra::new(),
        }
    }

    /// The tool calls of this message, in content order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            AssistantBlock::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<MediaBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    /// Required on input: a message without one is refused, naming the field (`timestamp is missing`).
    pub timestamp: f64,
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolResultMessage {
    /// This result with `"role": "toolResult"`, as it looks on its own.
    pub fn tagged(&self) -> WithRole<'_, Self> {
        WithRole {
            role: "toolResult",
            inner: self,
        }
    }

    /// An error result answering `call`: the text is kept, nothing else (never a stack).
    pub fn error(call: &ToolCall, text: impl Into<String>, timestamp: f64) -> Self {
        ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![MediaBlock::text(text)],
            details: None,
            is_error: true,
            timestamp,
            extra: Extra::new(),
        }
    }

    /// A skipped result answering `call` (the call never ran): `details: {skipped: true, reason}`, its text
    /// the reason's one-sentence explanation.
    pub fn skipped(call: &ToolCall, reason: SkipReason, timestamp: f64) -> Self {
        Self::skipped_with(call, reason, reason.explanation(), timestamp)
    }

    /// A skipped result with its own text (a blocking hook's reason, a denial's).
    pub fn skipped_with(
        call: &ToolCall,
        reason: SkipReason,
        text: impl Into<String>,
        timestamp: f64,
    ) -> Self {
        ToolResultMessage {
            details: Some(serde_json::json!({ "skipped": true, "reason": reason.as_str() })),
            ..ToolResultMessage::error(call, text, timestamp)
        }
    }

    /// The result answering a call that ran longer than its timeout of `ms` milliseconds.
    pub fn timed_out(call: &ToolCall, ms: u32, timestamp: f64) -> Self {
        ToolResultMessage {
            details: Some(serde_json::json!({ "timedOut": true, "timeoutMs": ms })),
            ..ToolResultMessage::error(
                call,
                format!("Tool call timed out after {ms} ms."),
                timestamp,
            )
        }
    }
}

/// Why a tool call was answered without running (`details.reason` of a skipped result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    Length,
    Error,
    Aborted,
    UnexpectedStop,
    DuplicateCallId,
    /// `beforeToolCall` blocked the call, or threw (SPEC §7).
    Blocked,
    /// The call was denied approval (SPEC §8).
    Denied,
    /// `repair_transcript` answered a call the run never finished (SPEC §8).
    Interrupted,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Length => "length",
            SkipReason::Error => "error",
            SkipReason::Aborted => "aborted",
            SkipReason::UnexpectedStop => "unexpected-stop",
            SkipReason::DuplicateCallId => "duplicate-call-id",
            SkipReason::Blocked => "blocked",
            SkipReason::Denied => "denied",
            SkipReason::Interrupted => "interrupted",
        }
    }

    /// The one sentence a skipped result carries (`Blocked`, `Denied`: when no reason was given).
    pub fn explanation(self) -> &'static str {
        match self {
            SkipReason::Length => "Tool call was not executed because the model response was truncated.",
            SkipReason::Error => "Tool call was not executed because the model response ended with an error.",
            SkipReason::Aborted => "Tool call was not executed because the run was aborted.",
            SkipReason::UnexpectedStop => {
                "Tool call was not executed because the model stopped instead of requesting tool use."
            }
            SkipReason::DuplicateCallId => {
                "Tool call was not executed because its id was used by more than one call in the same message."
            }
            SkipReason::Blocked => "Tool call was blocked.",
            SkipReason::Denied => "Tool call was denied.",
            SkipReason::Interrupted => {
                "Tool call was not executed because the run was interrupted."
            }
        }
    }
}

/// SPEC's own roles: none of them may be a custom role.
pub const SPEC_ROLES: [&str; 4] = ["user", "assistant", "toolResult", "compaction"];

/// `custom_roles` as SPEC §7 allows them: each non-empty and none of SPEC's own roles. The error names the
/// entry under `path` (`options.customRoles[1]: "toolResult" is one of SPEC's own roles ...`).
pub fn check_custom_roles(custom_roles: &[String], path: &str) -> Result<(), String> {
    for (index, role) in custom_roles.iter().enumerate() {
        if role.is_empty() {
            return Err(format!(
                "{path}[{index}] must be a non-empty string (got \"\")"
            ));
        }
        if SPEC_ROLES.contains(&role.as_str()) {
            return Err(format!(
                "{path}[{index}]: \"{role}\" is one of SPEC's own roles (user, assistant, toolResult, \
                 compaction), not a custom one"
            ));
        }
    }
    Ok(())
}

/// A message of a role the app defines (SPEC §7 `customRoles`, e.g. a `notification`), kept verbatim: the
/// loop stores it in the transcript, leaves it out of every model request and of the pairing rules. Read only
/// where the run's custom roles list its role (`AgentMessage::from_value_with_roles`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CustomMessage {
    pub role: String,
    /// Every other field of the message, as read.
    #[serde(flatten)]
    pub fields: Extra,
}

/// A compaction entry (SPEC §13), a built-in role: the loop appends one when it compacts the context. It
/// records the cut: requests after it carry `summary` (as a user message) and the transcript's messages from
/// `first_kept_index` on, while the transcript itself keeps every message. Never sent to the model, and no
/// part of the pairing rules.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEntry {
    /// What `summarize` wrote of the messages before the cut.
    pub summary: String,
    /// The transcript index of the first message requests still carry (a user or assistant message).
    pub first_kept_index: usize,
    /// The estimated tokens of the request the entry shortened, before the cut (the loop's entries always
    /// say; an entry handed in without it is kept without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<f64>,
    /// Required on input, as every message's.
    pub timestamp: f64,
    #[serde(flatten)]
    pub extra: Extra,
}

impl CompactionEntry {
    /// This entry with `"role": "compaction"`, as it looks on its own.
    pub fn tagged(&self) -> WithRole<'_, Self> {
        WithRole {
            role: "compaction",
            inner: self,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum AgentMessage {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    /// A compaction entry (SPEC §13): `{"role": "compaction", ...}`.
    Compaction(CompactionEntry),
    /// Written as it was read: its own `role` and fields.
    #[serde(untagged)]
    Custom(CustomMessage),
}

impl MediaBlock {
    pub fn text(text: impl Into<String>) -> Self {
        MediaBlock::Text(TextContent {
            text: text.into(),
            extra: Extra::new(),
        })
    }
}

impl AssistantBlock {
    pub fn text(text: impl Into<String>) -> Self {
        AssistantBlock::Text(TextContent {
            text: text.into(),
            extra: Extra::new(),
        })
    }

    pub fn thinking(thinking: impl Into<String>) -> Self {
        AssistantBlock::Thinking(ThinkingContent {
            thinking: thinking.into(),
            extra: Extra::new(),
        })
    }

    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        AssistantBlock::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            extra: Extra::new(),
        })
    }
}

impl AgentMessage {
    pub fn user(text: impl Into<String>, timestamp: f64) -> Self {
        AgentMessage::User(UserMessage {
            content: UserContent::Text(text.into()),
            timestamp,
            extra: Extra::new(),
        })
    }

    pub fn role(&self) -> &str {
        match self {
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
            AgentMessage::Compaction(_) => "compaction",
            AgentMessage::Custom(custom) => &custom.role,
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Writing: a message or block on its own carries the tag its enum would write.

/// A struct serialized on its own with the tag its enum would write, so that it has pi-ai's JSON shape:
/// `{"role": "toolResult", ...}`, `{"type": "toolCall", ...}`.
#[derive(Serialize)]
pub struct WithRole<'a, T> {
    role: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

#[derive(Serialize)]
pub struct WithType<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

/// `serialize_with` helpers for fields that hold one message or call.
pub mod tagged {
    use std::borrow::Borrow;

    use serde::{Serialize, Serializer};

    use super::{AssistantMessage, CompactionEntry, ToolCall, ToolResultMessage};

    pub fn assistant<S: Serializer>(
        m: &impl Borrow<AssistantMessage>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        m.borrow().tagged().serialize(s)
    }

    pub fn tool_result<S: Serializer>(
        m: &impl Borrow<ToolResultMessage>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        m.borrow().tagged().serialize(s)
    }

    pub fn tool_call<S: Serializer>(c: &impl Borrow<ToolCall>, s: S) -> Result<S::Ok, S::Error> {
        c.borrow().tagged().serialize(s)
    }

    pub fn compaction<S: Serializer>(
        e: &impl Borrow<CompactionEntry>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        e.borrow().tagged().serialize(s)
    }
}
