//! The canonical transcript (SPEC §1), in pi-ai's JSON shapes, with the app's custom-role messages (§7) and
//! compaction entries (§13).
//!
//! Every struct keeps unknown fields in `extra` so that provider data (usage, api, model, signatures, ...)
//! survives a run unchanged. How each shape is read from JSON is `crate::reading`.

use std::ops::{Deref, DerefMut};

use crate::invalid::Invalid;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// Fields a message or block carried that tiny-pi does not interpret, written back verbatim after its own;
/// and, when the object as read had its fields in another order than its type writes them, that order,
/// which writing keeps (SPEC §9: a round trip keeps the field order; pi-ai's assistant messages put
/// `api`, `provider`, `model` and `usage` before `stopReason`). The order is how the data is shown, not
/// the data: two messages that differ only in it are equal.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    fields: Map<String, Value>,
    /// Every field's key in the order read, when that is not the order written without it (boxed: most
    /// objects have none, and every message and block holds an `Extra`: one word, not a slice's two).
    #[allow(clippy::box_collection)]
    order: Option<Box<Vec<Box<str>>>>,
}

impl Extra {
    pub fn new() -> Self {
        Self::default()
    }

    /// `fields`, written in the order `order` gives (keys of the shape's own fields among them).
    pub(crate) fn in_order(fields: Map<String, Value>, order: Vec<Box<str>>) -> Self {
        Extra {
            fields,
            order: Some(Box::new(order)),
        }
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(fields: Map<String, Value>) -> Self {
        Extra {
            fields,
            order: None,
        }
    }
}

impl Deref for Extra {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Self::Target {
        &self.fields
    }
}

impl DerefMut for Extra {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.fields
    }
}

impl PartialEq for Extra {
    fn eq(&self, other: &Self) -> bool {
        self.fields == other.fields
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Map::deserialize(d).map(Extra::from)
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.fields.serialize(s)
    }
}

/// One of a shape's own fields, as it writes it.
pub(crate) enum Field<'a> {
    Str(&'a str),
    Number(f64),
    Bool(bool),
    Index(usize),
    Value(&'a Value),
    User(&'a UserContent),
    Blocks(&'a [AssistantBlock]),
    Media(&'a [MediaBlock]),
}

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Str(text) => text.serialize(s),
            Field::Number(n) => n.serialize(s),
            Field::Bool(b) => b.serialize(s),
            Field::Index(n) => n.serialize(s),
            Field::Value(value) => value.serialize(s),
            Field::User(content) => content.serialize(s),
            Field::Blocks(blocks) => blocks.serialize(s),
            Field::Media(blocks) => blocks.serialize(s),
        }
    }
}

/// The own fields of a shape, by key, in the order it writes them (a `None` is left out): at most
/// `OWN` of them (a tool result's seven and its role), on the stack.
pub(crate) struct Fields<'a> {
    own: [(&'static str, Option<Field<'a>>); OWN],
    len: usize,
}

const OWN: usize = 8;

impl<'a> Fields<'a> {
    fn push(&mut self, field: (&'static str, Option<Field<'a>>)) {
        self.own[self.len] = field;
        self.len += 1;
    }

    fn all(&self) -> &[(&'static str, Option<Field<'a>>)] {
        &self.own[..self.len]
    }
}

/// A message or block: its own fields, and the rest.
pub(crate) trait Shape {
    fn own<'a>(&'a self, fields: &mut Fields<'a>);
    fn extra(&self) -> &Extra;
}

/// `shape` as a JSON object, with `tag` (`("role", "user")`) as its first own field when given: its own
/// fields, then the extra ones, or every field in the order `extra` kept.
fn write_shape<S: Serializer>(
    s: S,
    tag: Option<(&'static str, &'static str)>,
    shape: &dyn Shape,
) -> Result<S::Ok, S::Error> {
    let mut fields = Fields {
        own: [const { ("", None) }; OWN],
        len: 0,
    };
    if let Some((key, value)) = tag {
        fields.push((key, Some(Field::Str(value))));
    }
    shape.own(&mut fields);
    let own = fields.all();
    let extra = shape.extra();
    let mut map = s.serialize_map(None)?;
    let order: &[Box<str>] = extra.order.as_deref().map_or(&[], Vec::as_slice);
    // An own field that is set is written as the shape has it; one that is not may be among the rest
    // (an optional own field that came as `null`, kept so).
    let set = |key: &str| {
        own.iter()
            .find_map(|(k, value)| (*k == key).then_some(value.as_ref())?)
    };
    for key in order {
        match set(key) {
            Some(value) => map.serialize_entry(key, value)?,
            None => {
                if let Some(value) = extra.fields.get(&**key) {
                    map.serialize_entry(key, value)?;
                }
            }
        }
    }
    // The fields no kept order names: all of them without one, else those set since it was read.
    let unordered = |key: &str| !order.iter().any(|k| &**k == key);
    for (key, value) in own {
        if let (Some(value), true) = (value, unordered(key)) {
            map.serialize_entry(key, value)?;
        }
    }
    for (key, value) in &extra.fields {
        if unordered(key) && set(key).is_none() {
            map.serialize_entry(key, value)?;
        }
    }
    map.end()
}

/// Implements `Serialize` through `write_shape`, untagged.
macro_rules! serialize_shape {
    ($($ty:ty),*) => {$(
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                write_shape(s, None, self)
            }
        }
    )*};
}

#[derive(Debug, Clone, PartialEq)]
pub struct TextContent {
    pub text: String,
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ThinkingContent {
    pub thinking: String,
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImageContent {
    pub data: String,
    pub mime_type: String,
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// A JSON object in well-formed calls; kept as any value so a malformed call still reaches
    /// the executor, which answers it with an error result instead of losing it. `None`: the call came
    /// without any; it is kept so, and run as if they were `{}` (`arguments_or_empty`).
    pub arguments: Option<Value>,
    pub extra: Extra,
}

/// The arguments of a call that came without any.
static NO_ARGUMENTS: std::sync::LazyLock<Value> = std::sync::LazyLock::new(empty_object);

impl ToolCall {
    /// The arguments as the executor, the schema and `needsApproval` read them: `{}` for a call that came
    /// without any.
    pub fn arguments_or_empty(&self) -> &Value {
        self.arguments.as_ref().unwrap_or(&NO_ARGUMENTS)
    }

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
#[derive(Debug, Clone, PartialEq)]
pub enum MediaBlock {
    Text(TextContent),
    Image(ImageContent),
}

/// A block of assistant content.
#[derive(Debug, Clone, PartialEq)]
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

#[derive(Debug, Clone, PartialEq)]
pub struct UserMessage {
    pub content: UserContent,
    /// Required on input: a message without one is refused, naming the field (`timestamp is missing`).
    pub timestamp: f64,
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AssistantMessage {
    pub content: Vec<AssistantBlock>,
    pub stop_reason: StopReason,
    pub error_message: Option<String>,
    /// Required on input: a message without one is refused, naming the field (`timestamp is missing`).
    pub timestamp: f64,
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

#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<MediaBlock>,
    pub details: Option<Value>,
    pub is_error: bool,
    /// Required on input: a message without one is refused, naming the field (`timestamp is missing`).
    pub timestamp: f64,
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
pub fn check_custom_roles(custom_roles: &[String], path: &str) -> Result<(), Invalid> {
    for (index, role) in custom_roles.iter().enumerate() {
        if role.is_empty() {
            return Err(Invalid::from(format!(
                "{path}[{index}] must be a non-empty string (got \"\")"
            )));
        }
        if SPEC_ROLES.contains(&role.as_str()) {
            return Err(Invalid::from(format!(
                "{path}[{index}]: \"{role}\" is one of SPEC's own roles (user, assistant, toolResult, \
                 compaction), not a custom one"
            )));
        }
    }
    Ok(())
}

/// A message of a role the app defines (SPEC §7 `customRoles`, e.g. a `notification`), kept verbatim: the
/// loop stores it in the transcript, leaves it out of every model request and of the pairing rules. Read only
/// where the run's custom roles list its role (`AgentMessage::from_value_with_roles`).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomMessage {
    pub role: String,
    /// Every other field of the message, as read.
    pub fields: Extra,
}

/// A compaction entry (SPEC §13), a built-in role: the loop appends one when it compacts the context. It
/// records the cut: requests after it carry `summary` (as a user message) and the transcript's messages from
/// `first_kept_index` on, while the transcript itself keeps every message. Never sent to the model, and no
/// part of the pairing rules.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionEntry {
    /// What `summarize` wrote of the messages before the cut.
    pub summary: String,
    /// The transcript index of the first message requests still carry (a user or assistant message).
    pub first_kept_index: usize,
    /// The estimated tokens of the request the entry shortened, before the cut (the loop's entries always
    /// say; an entry handed in without it is kept without it).
    pub tokens_before: Option<f64>,
    /// Required on input, as every message's.
    pub timestamp: f64,
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

#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    /// A compaction entry (SPEC §13): `{"role": "compaction", ...}`.
    Compaction(CompactionEntry),
    /// Written as it was read: its own `role` and fields.
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
            arguments: Some(arguments),
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
pub struct WithRole<'a, T> {
    role: &'static str,
    inner: &'a T,
}

pub struct WithType<'a, T> {
    kind: &'static str,
    inner: &'a T,
}

#[allow(private_bounds)]
impl<T: Shape> Serialize for WithRole<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write_shape(s, Some(("role", self.role)), self.inner)
    }
}

#[allow(private_bounds)]
impl<T: Shape> Serialize for WithType<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write_shape(s, Some(("type", self.kind)), self.inner)
    }
}

impl Serialize for MediaBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MediaBlock::Text(text) => write_shape(s, Some(("type", "text")), text),
            MediaBlock::Image(image) => write_shape(s, Some(("type", "image")), image),
        }
    }
}

impl Serialize for AssistantBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AssistantBlock::Text(text) => write_shape(s, Some(("type", "text")), text),
            AssistantBlock::Thinking(thinking) => {
                write_shape(s, Some(("type", "thinking")), thinking)
            }
            AssistantBlock::ToolCall(call) => write_shape(s, Some(("type", "toolCall")), call),
        }
    }
}

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentMessage::User(m) => write_shape(s, Some(("role", "user")), m),
            AgentMessage::Assistant(m) => write_shape(s, Some(("role", "assistant")), m),
            AgentMessage::ToolResult(m) => write_shape(s, Some(("role", "toolResult")), m),
            AgentMessage::Compaction(m) => write_shape(s, Some(("role", "compaction")), m),
            AgentMessage::Custom(m) => write_shape(s, None, m),
        }
    }
}

serialize_shape!(
    TextContent,
    ThinkingContent,
    ImageContent,
    ToolCall,
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    CompactionEntry,
    CustomMessage
);

impl Shape for TextContent {
    fn own<'a>(&'a self, fields: &mut Fields<'a>) {
        fields.push(("text", Some(Field::Str(&self.text))));
    }
    fn extra(&self) -> &Extra {
        &self.extra
    }
}

impl Shape for ThinkingContent {
    fn own<'a>(&'a self, fields: &mut Fields<'a>) {
        fields.push(("thinking", Some(Field::Str(&self.thinking))));
    }
    fn extra(&self) -> &Extra {
        &self.extra
    }
}

impl Shape for ImageContent {
    fn own<'a>(&'a self, fields: &mut Fields<'a>) {
        fields.push(("data", Some(Field::Str(&self.data))));
        fields.push(("mimeType", Some(Field::Str(&self.mime_type))));
    }
    fn extra(&self) -> &Extra {
        &self.extra
    }
}

impl Shape for ToolCall {
    fn own<'a>(&'a self, fields: &mut Fields<'a>) {
        fields.push(("id", Some(Field::Str(&self.id))));
        fields.push(("name", Some(Field::Str(&self.name))));
        fields.push(("arguments", self.arguments.as_ref().map(Field::Value)));
    }
    fn extra(&self) -> &Extra {
        &self.extra
    }
}

impl Shape for UserMessage {
    fn own<'a>(&'a self, fields: &mut Fields<'a>) {
        fields.push(("content", Some(Field::User(&self.content))));
        fields.push(("timestamp", Some(Field::Number(self.timestamp))));
    }
    fn extra(&self) -> &Extra {
        &self.extra
    }
}

impl Shape for AssistantMessage {
    fn own<'a>(&'a self, fields: &mut Fields<'a>) {
        fields.push(("content", Some(Field::Blocks(&self.content))));
        fields.push(("stopReason", Some(Field::Str(self.stop_reason.as_str()))));
        let error = self.error_message.as_deref().map(Field::Str);
        fields.push(("errorMessage", error));
        fields.push(("timestamp", Some(Field::Number(self.timestamp))));
    }
    fn extra(&self) -> &Extra {
        &self.extra
    }
}

impl Shape for ToolResultMessage {
    fn own<'a>(&'a self, fields: &mut Fields<'a>) {
        fields.push(("toolCallId", Some(Field::Str(&self.tool_call_id))));
        fields.push(("toolName", Some(Field::Str(&self.tool_name))));
        fields.push(("content", Some(Field::Media(&self.content))));
        fields.push(("details", self.details.as_ref().map(Field::Value)));
        fields.push(("isError", Some(Field::Bool(self.is_error))));
        fields.push(("timestamp", Some(Field::Number(self.timestamp))));
    }
    fn extra(&self) -> &Extra {
        &self.extra
    }
}

impl Shape for CompactionEntry {
    fn own<'a>(&'a self, fields: &mut Fields<'a>) {
        fields.push(("summary", Some(Field::Str(&self.summary))));
        fields.push(("firstKeptIndex", Some(Field::Index(self.first_kept_index))));
        fields.push(("tokensBefore", self.tokens_before.map(Field::Number)));
        fields.push(("timestamp", Some(Field::Number(self.timestamp))));
    }
    fn extra(&self) -> &Extra {
        &self.extra
    }
}

impl Shape for CustomMessage {
    fn own<'a>(&'a self, fields: &mut Fields<'a>) {
        fields.push(("role", Some(Field::Str(&self.role))));
    }
    fn extra(&self) -> &Extra {
        &self.fields
    }
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
