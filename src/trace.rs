//! The prologue trace of chapter 00: a run seen as milestones, each with the party it comes from.
//!
//! `user_message` (user) · `model_start` (model, `turn=N`) · `assistant_message` (model) · `tool_start`
//! (loop) · `tool_result` (tool). Built from a transcript, so any saved run can be traced; the trace never
//! invents a milestone: a `tool_start` stands only before a result that answers a call before it. An app's
//! custom-role messages (SPEC §7) and compaction entries (§13) make no record. Its check, `validate_trace`,
//! names each problem as `validate_transcript` names it.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::message::{
    AgentMessage, AssistantBlock, AssistantMessage, Extra, MediaBlock, StopReason, ToolCall,
    ToolResultMessage, UserContent,
};
use crate::transcript::{validate_transcript, ProblemKind};

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
    /// The call a record is about. An `assistant_message` record lists its message's ids separated by `,`,
    /// a `,` or `\` inside an id written `\,` or `\\` (`join_call_ids`); a `tool_result` record holds its id as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// The milestones of a transcript, numbered from 1. A skipped result is the loop's record, not a tool's,
/// and has no `tool_start` before it. Nor has a result that answers no call before it (`validate_transcript`'s
/// orphan result, result before call, or second result): nobody started it. Custom-role messages and
/// compaction entries make no record.
pub fn prologue_trace(messages: &[AgentMessage]) -> Vec<TraceRecord> {
    let unstarted: BTreeSet<usize> = validate_transcript(messages)
        .problems
        .into_iter()
        .filter(|p| {
            matches!(
                p.kind,
                ProblemKind::OrphanResult
                    | ProblemKind::ResultBeforeCall
                    | ProblemKind::DuplicateResult
            )
        })
        .map(|p| p.index)
        .collect();
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
    for (index, message) in messages.iter().enumerate() {
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
                let ids = (!ids.is_empty()).then(|| join_call_ids(&ids));
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
                    if !unstarted.contains(&index) {
                        push(
                            TraceKind::ToolStart,
                            Owner::Loop,
                            format!("name={}", result.tool_name),
                            id.clone(),
                        );
                    }
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
            let plain = !id.is_empty()
                && !id.contains(|c: char| c.is_whitespace() || c.is_control() || c == '"');
            match plain {
                true => write!(out, " toolCallId={id}").ok(),
                false => write!(out, " toolCallId={}", quote(id)).ok(),
            };
        }
        out.push('\n');
    }
    out
}

/// A problem `validate_trace` found: its kind is `validate_transcript`'s for the same pairing, at the record that
/// stands for the message the transcript's problem is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceProblem {
    pub kind: ProblemKind,
    pub tool_call_id: String,
    /// The `assistant_message` record of a call, the `tool_result` record of a result.
    pub seq: usize,
    /// The problem in words: chapter 00's "missing paired result" and "result before call" for its two
    /// kinds (`trace_wording`).
    pub message: String,
}

/// What `validate_trace` found, in the shape of `validate_transcript`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceValidation {
    pub ok: bool,
    pub problems: Vec<TraceProblem>,
}

/// How a trace names a kind of problem: chapter 00's words for the two it teaches, then the words the
/// other three kinds have wherever they are shown.
pub fn trace_wording(kind: ProblemKind) -> &'static str {
    match kind {
        ProblemKind::MissingResult => "missing paired result",
        ProblemKind::ResultBeforeCall => "result before call",
        ProblemKind::OrphanResult => "result without a call",
        ProblemKind::DuplicateResult => "more than one result for a call",
        ProblemKind::DuplicateCallId => "repeated call id",
    }
}

/// The pairing problems of a trace, as `validate_transcript` finds them in the transcript the trace stands for:
/// a `user_message` record is a user message, an `assistant_message` record a message calling the ids of its
/// `toolCallId` (comma-separated), a `tool_result` record with a `toolCallId` a result for it (a skipped one
/// when its owner is the loop). `model_start` and `tool_start` records, and a `tool_result` without an id,
/// take no part in the pairing. So the trace of a transcript has that transcript's problems, each at its
/// message's record, and a kind of problem has one name in both checks.
pub fn validate_trace(records: &[TraceRecord]) -> TraceValidation {
    let mut messages = Vec::new();
    let mut seqs = Vec::new();
    for record in records {
        let message = match (record.kind, record.tool_call_id.as_deref()) {
            (TraceKind::UserMessage, _) => AgentMessage::user("", 0.0),
            (TraceKind::AssistantMessage, _) => {
                let calls = call_ids(record).into_iter().map(|id| {
                    AssistantBlock::ToolCall(ToolCall {
                        id,
                        name: String::new(),
                        arguments: None,
                        extra: Extra::new(),
                    })
                });
                AgentMessage::Assistant(AssistantMessage::new(calls.collect(), StopReason::ToolUse))
            }
            (TraceKind::ToolResult, Some(id)) => AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: id.to_owned(),
                tool_name: String::new(),
                content: Vec::new(),
                details: (record.owner == Owner::Loop).then(|| json!({ "skipped": true })),
                is_error: record.owner == Owner::Loop,
                timestamp: 0.0,
                extra: Extra::new(),
            }),
            _ => continue,
        };
        messages.push(message);
        seqs.push(record.seq);
    }
    let problems: Vec<TraceProblem> = validate_transcript(&messages)
        .problems
        .into_iter()
        .map(|p| TraceProblem {
            kind: p.kind,
            seq: seqs[p.index],
            message: trace_wording(p.kind).into(),
            tool_call_id: p.tool_call_id,
        })
        .collect();
    TraceValidation {
        ok: problems.is_empty(),
        problems,
    }
}

/// An assistant message's ids as its record's `toolCallId`: separated by `,`, with `\` before a `,` or `\`
/// inside an id, so that `call_ids` gives each id back whole.
pub fn join_call_ids(ids: &[&str]) -> String {
    let escaped: Vec<String> = ids
        .iter()
        .map(|id| id.replace('\\', "\\\\").replace(',', "\\,"))
        .collect();
    escaped.join(",")
}

/// The ids of an assistant message's record: its `toolCallId` split at each `,` not written `\,`; `\,` and
/// `\\` stand for `,` and `\`, and any other `\` for itself (a hand-made record's `a\b` is the id `a\b`).
pub fn call_ids(record: &TraceRecord) -> Vec<String> {
    let Some(joined) = record.tool_call_id.as_deref() else {
        return Vec::new();
    };
    let (mut ids, mut id) = (Vec::new(), String::new());
    let mut chars = joined.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => id.push(
                chars
                    .next_if(|&next| next == ',' || next == '\\')
                    .unwrap_or(c),
            ),
            ',' => ids.push(std::mem::take(&mut id)),
            c => id.push(c),
        }
    }
    ids.push(id);
    ids
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

/// A detail or an odd id as a JSON string: quotes, backslashes and control characters (a newline in a tool's
/// name or id) escaped, so each record stays one line.
fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("a string is written")
}
