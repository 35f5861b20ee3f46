//! The prologue trace of chapter 00: a run seen as milestones, each with the party it comes from.
//!
//! `user_message` (user) · `model_start` (model, `turn=N`) · `assistant_message` (model) · `tool_start`
//! (loop) · `tool_result` (tool). Built from a transcript, so any saved run can be traced.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::message::{AgentMessage, MediaBlock, UserContent};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    UserMessage,
    ModelStart,
    AssistantMessage,
    ToolStart,
    ToolResult,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    User,
    Model,
    Loop,
    Tool,
}

impl TraceKind {
    pub const ALL: [TraceKind; 5] = [
        TraceKind::UserMessage,
        TraceKind::ModelStart,
        TraceKind::AssistantMessage,
        TraceKind::ToolStart,
        TraceKind::ToolResult,
    ];

    /// The kind named `text` in a trace's JSON.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TraceKind::UserMessage => "user_message",
            TraceKind::ModelStart => "model_start",
            TraceKind::AssistantMessage => "assistant_message",
            TraceKind::ToolStart => "tool_start",
            TraceKind::ToolResult => "tool_result",
        }
    }
}

impl Owner {
    pub const ALL: [Owner; 4] = [Owner::User, Owner::Model, Owner::Loop, Owner::Tool];

    /// The owner named `text` in a trace's JSON.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|owner| owner.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Owner::User => "user",
            Owner::Model => "model",
            Owner::Loop => "loop",
            Owner::Tool => "tool",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceRecord {
    pub seq: usize,
    pub kind: TraceKind,
    pub owner: Owner,
    pub detail: String,
    /// The call a record is about; several ids, comma-separated, for a message with several calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// The milestones of a transcript, numbered from 1. A skipped result is the loop's record, not a tool's,
/// and has no `tool_start` before it.
pub fn prologue_trace(messages: &[AgentMessage]) -> Vec<TraceRecord> {
    let mut records = Vec::new();
    let mut push = |kind, owner, detail: String, tool_call_id: Option<String>| {
        let seq = records.len() + 1;
        records.push(TraceRecord {
            seq,
            kind,
            owner,
            detail,
            tool_call_id,
        });
    };
    let mut turn = 0;
    for message in messages {
        match message {
            AgentMessage::User(user) => push(
                TraceKind::UserMessage,
                Owner::User,
                user_text(&user.content),
                None,
            ),
            AgentMessage::Assistant(assistant) => {
                turn += 1;
                push(
                    TraceKind::ModelStart,
                    Owner::Model,
                    format!("turn={turn}"),
                    None,
                );
                let ids: Vec<&str> = assistant.tool_calls().map(|c| c.id.as_str()).collect();
                let names: Vec<&str> = assistant.tool_calls().map(|c| c.name.as_str()).collect();
                let mut detail = format!("stopReason={}", assistant.stop_reason.as_str());
                if !names.is_empty() {
                    write!(detail, " name={}", names.join(",")).ok();
                }
                let ids = (!ids.is_empty()).then(|| ids.join(","));
                push(TraceKind::AssistantMessage, Owner::Model, detail, ids);
            }
            AgentMessage::ToolResult(result) => {
                let id = Some(result.tool_call_id.clone());
                let skipped =
                    result.details.as_ref().and_then(|d| d.get("skipped")) == Some(&true.into());
                if skipped {
                    let reason = result
                        .details
                        .as_ref()
                        .and_then(|d| d.get("reason"))
                        .and_then(|r| r.as_str());
                    push(
                        TraceKind::ToolResult,
                        Owner::Loop,
                        format!("skipped reason={}", reason.unwrap_or("?")),
                        id,
                    );
                } else {
                    push(
                        TraceKind::ToolStart,
                        Owner::Loop,
                        format!("name={}", result.tool_name),
                        id.clone(),
                    );
                    let mut detail = first_line(&blocks_text(&result.content));
                    if result.is_error {
                        detail = format!("isError=true {detail}");
                    }
                    push(TraceKind::ToolResult, Owner::Tool, detail, id);
                }
            }
            // An app's own message (SPEC §7 custom roles) and a compaction entry (§13) are none of the
            // seven milestones.
            AgentMessage::Compaction(_) | AgentMessage::Custom(_) => {}
        }
    }
    records
}

/// One line per record: `03 assistant_message owner=model detail="stopReason=toolUse name=read" toolCallId=call_1`.
pub fn format_trace(records: &[TraceRecord]) -> String {
    let mut out = String::new();
    for r in records {
        write!(
            out,
            "{:02} {} owner={} detail={}",
            r.seq,
            r.kind.as_str(),
            r.owner.as_str(),
            quote(&r.detail)
        )
        .ok();
        if let Some(id) = &r.tool_call_id {
            write!(out, " toolCallId={id}").ok();
        }
        out.push('\n');
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceProblemKind {
    MissingResult,
    ResultBeforeCall,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceProblem {
    pub kind: TraceProblemKind,
    pub tool_call_id: String,
    pub seq: usize,
    /// "missing paired result" or "result before call".
    pub message: String,
}

/// What `validate_trace` found, in the shape of `validate_transcript`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceValidation {
    pub ok: bool,
    pub problems: Vec<TraceProblem>,
}

/// Reports a call without a `tool_result`, and a `tool_result` before its call.
pub fn validate_trace(records: &[TraceRecord]) -> TraceValidation {
    // Where each id is first called and last answered, found in one pass: a check that scanned the whole
    // trace for each record was quadratic, and a long trace froze the page.
    let mut first_call: BTreeMap<&str, usize> = BTreeMap::new();
    let mut last_result: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, record) in records.iter().enumerate() {
        match (record.kind, record.tool_call_id.as_deref()) {
            (TraceKind::AssistantMessage, _) => {
                for id in call_ids(record) {
                    first_call.entry(id).or_insert(i);
                }
            }
            (TraceKind::ToolResult, Some(id)) => {
                last_result.insert(id, i);
            }
            _ => {}
        }
    }
    let mut problems = Vec::new();
    for (i, record) in records.iter().enumerate() {
        match (record.kind, record.tool_call_id.as_deref()) {
            (TraceKind::AssistantMessage, _) => {
                for id in call_ids(record) {
                    if last_result.get(id).map_or(true, |&answer| answer < i) {
                        problems.push(TraceProblem {
                            kind: TraceProblemKind::MissingResult,
                            seq: record.seq,
                            message: "missing paired result".into(),
                            tool_call_id: id.to_owned(),
                        });
                    }
                }
            }
            (TraceKind::ToolResult, Some(id))
                if first_call.get(id).map_or(true, |&call| call > i) =>
            {
                problems.push(TraceProblem {
                    kind: TraceProblemKind::ResultBeforeCall,
                    seq: record.seq,
                    message: "result before call".into(),
                    tool_call_id: id.to_owned(),
                });
            }
            _ => {}
        }
    }
    TraceValidation {
        ok: problems.is_empty(),
        problems,
    }
}

/// The ids of an assistant message's record (comma-separated in `toolCallId`).
fn call_ids(record: &TraceRecord) -> impl Iterator<Item = &str> {
    record
        .tool_call_id
        .as_deref()
        .into_iter()
        .flat_map(|ids| ids.split(','))
}

fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(text) => first_line(text),
        UserContent::Blocks(blocks) => first_line(&blocks_text(blocks)),
    }
}

fn blocks_text(blocks: &[MediaBlock]) -> String {
    let parts: Vec<&str> = blocks
        .iter()
        .map(|b| match b {
            MediaBlock::Text(t) => t.text.as_str(),
            MediaBlock::Image(_) => "[image]",
        })
        .collect();
    parts.join(" ")
}

/// A short one-line summary: the first line, at most 60 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut short: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        short.push('…');
    }
    short
}

fn quote(detail: &str) -> String {
    format!("\"{}\"", detail.replace('\\', "\\\\").replace('"', "\\\""))
}
