//! The JSON shapes of SPEC §1 as one JSON Schema document, used to say which field of a malformed value is
//! wrong (`messages[1].content[0].id must be a string (got integer)`), in the readers' words
//! (`crate::reading`), which name the field themselves; for a host that checks a value before it reads it.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;

use crate::schema::Schema;

/// The shapes by name: `message`, `messages`, `assistant`, `assistants`, `mediaBlocks`, `toolCall`,
/// `toolOutput`, `toolReply`, `toolDefinitions`, `modelRequest`, `traceRecords`.
pub const SHAPES: &str = r##"{
  "$defs": {
    "text": { "type": "object", "required": ["type", "text"],
      "properties": { "type": { "const": "text" }, "text": { "type": "string" } } },
    "thinking": { "type": "object", "required": ["type", "thinking"],
      "properties": { "type": { "const": "thinking" }, "thinking": { "type": "string" } } },
    "image": { "type": "object", "required": ["type", "data", "mimeType"],
      "properties": { "type": { "const": "image" }, "data": { "type": "string" }, "mimeType": { "type": "string" } } },
    "toolCall": { "type": "object", "required": ["id", "name"],
      "properties": { "type": { "const": "toolCall" }, "id": { "type": "string" }, "name": { "type": "string" } } },
    "mediaBlock": { "type": "object", "discriminator": { "propertyName": "type" },
      "oneOf": [{ "$ref": "#/$defs/text" }, { "$ref": "#/$defs/image" }] },
    "assistantBlock": { "type": "object", "discriminator": { "propertyName": "type" },
      "oneOf": [{ "$ref": "#/$defs/text" }, { "$ref": "#/$defs/thinking" }, { "$ref": "#/$defs/toolCall" }] },
    "mediaBlocks": { "type": "array", "items": { "$ref": "#/$defs/mediaBlock" } },
    "stamped": { "required": ["timestamp"] },
    "user": { "type": "object", "required": ["content"], "allOf": [{ "$ref": "#/$defs/stamped" }],
      "properties": { "role": { "const": "user" }, "timestamp": { "type": "number" },
        "content": { "type": ["string", "array"], "items": { "$ref": "#/$defs/mediaBlock" } } } },
    "assistant": { "type": "object", "required": ["content", "stopReason"], "allOf": [{ "$ref": "#/$defs/stamped" }],
      "properties": { "role": { "const": "assistant" }, "timestamp": { "type": "number" },
        "content": { "type": "array", "items": { "$ref": "#/$defs/assistantBlock" } },
        "stopReason": { "enum": ["stop", "length", "toolUse", "error", "aborted"] },
        "errorMessage": { "type": ["string", "null"] } } },
    "toolResult": { "type": "object", "required": ["toolCallId", "toolName", "content", "isError"],
      "allOf": [{ "$ref": "#/$defs/stamped" }],
      "properties": { "role": { "const": "toolResult" }, "timestamp": { "type": "number" },
        "toolCallId": { "type": "string" }, "toolName": { "type": "string" },
        "content": { "$ref": "#/$defs/mediaBlocks" }, "isError": { "type": "boolean" } } },
    "compaction": { "type": "object", "required": ["summary", "firstKeptIndex"],
      "properties": { "role": { "const": "compaction" }, "summary": { "type": "string" },
        "firstKeptIndex": { "type": "integer", "minimum": 0 }, "tokensBefore": { "type": "number" },
        "timestamp": { "type": ["number", "null"] } } },
    "message": { "type": "object", "discriminator": { "propertyName": "role" },
      "oneOf": [{ "$ref": "#/$defs/user" }, { "$ref": "#/$defs/assistant" }, { "$ref": "#/$defs/toolResult" },
        { "$ref": "#/$defs/compaction" }] },
    "messages": { "type": "array", "items": { "$ref": "#/$defs/message" } },
    "assistants": { "type": "array", "items": { "$ref": "#/$defs/assistant" } },
    "toolOutput": { "type": "object", "required": ["content"],
      "properties": { "content": { "$ref": "#/$defs/mediaBlocks" }, "isError": { "type": "boolean" },
        "terminate": { "type": "boolean" } } },
    "toolReply": { "type": "object",
      "properties": { "content": { "$ref": "#/$defs/mediaBlocks" }, "isError": { "type": "boolean" },
        "timestamp": { "type": ["number", "null"] }, "terminate": { "type": "boolean" } } },
    "toolDefinition": { "type": "object", "required": ["name"],
      "properties": { "name": { "type": "string" }, "description": { "type": "string" } } },
    "toolDefinitions": { "type": "array", "items": { "$ref": "#/$defs/toolDefinition" } },
    "modelRequest": { "type": "object", "required": ["messages"],
      "properties": { "systemPrompt": { "type": ["string", "null"] }, "messages": { "$ref": "#/$defs/messages" },
        "tools": { "type": "array", "items": { "$ref": "#/$defs/toolDefinition" } } } },
    "traceRecords": { "type": "array", "items": { "type": "object", "required": ["seq", "kind", "owner", "detail"],
      "properties": { "seq": { "type": "integer", "minimum": 0 },
        "kind": { "enum": ["user_message", "model_start", "assistant_message", "tool_start", "tool_result"] },
        "owner": { "enum": ["user", "model", "loop", "tool"] }, "detail": { "type": "string" },
        "toolCallId": { "type": ["string", "null"] } } } }
  }
}"##;

thread_local! {
    /// The shapes document, read once (only a refused value needs it) and kept.
    static DOCUMENT: Option<Value> = serde_json::from_str(SHAPES).ok();
    /// Each shape compiled the first time a refused value of it is explained, and kept.
    static COMPILED: RefCell<Vec<(String, Rc<Schema>)>> = const { RefCell::new(Vec::new()) };
}

/// The first field of `value` that breaks the shape `name`, as `path.to.field: what is wrong`, with `path`
/// as the root; `None` when the value has the shape (or there is no such shape). Only a value that was
/// refused comes here.
pub fn explain(name: &str, value: &Value, path: &str) -> Option<String> {
    let shape = compiled(name)?;
    shape.validate(value, path).err().map(String::from)
}

/// The shape `name`, compiled once.
fn compiled(name: &str) -> Option<Rc<Schema>> {
    let known = COMPILED.with(|c| {
        c.borrow()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
    });
    if known.is_some() {
        return known;
    }
    let pointer = format!("/$defs/{name}");
    let shape = DOCUMENT.with(|document| {
        let document = document.as_ref()?;
        Schema::compile_at(document, &pointer, "shape").ok()
    })?;
    let shape = Rc::new(shape);
    COMPILED.with(|c| c.borrow_mut().push((name.to_owned(), shape.clone())));
    Some(shape)
}
