//! Compaction (SPEC §13): the option a run is given, what a request carries once the transcript holds
//! compaction entries, and where the loop may cut. The loop's step is `agent_loop/compact.rs`.
//!
//! **A request's messages** are, when the transcript holds compaction entries, the last entry's summary as
//! a user message (`summary_message`) followed by the transcript's messages from its `first_kept_index` on;
//! custom-role messages and compaction entries are never sent (`request_messages`).
//!
//! **Where to cut** (`find_cut`): at a user or assistant message after the previous entry's
//! `first_kept_index` (after 0 when there is none): the smallest such index whose messages from it on (as
//! sent) estimate at most `keep_recent_tokens`, or else the largest. A user message that stands between a
//! call and its result (a hand-written transcript may have one; the loop never writes one) is not a cut, so
//! a cut never separates a call from its result.
//!
//! **Entries an app hands in** (`check_entries`): an entry keeps messages from before it, so its
//! `first_kept_index` is at most its own index, and names a user or assistant message that is a cut as above
//! (or the entry itself). The reader already holds `summary` to a string and `first_kept_index` to a
//! non-negative integer.

use std::borrow::Cow;
use std::rc::Rc;

use crate::invalid::Invalid;
use crate::message::{AgentMessage, CompactionEntry, MediaBlock, UserContent, UserMessage};
use crate::model::Sources;
use crate::signal::AbortSignal;
use crate::tools::executor::HookFuture;
use crate::usage::positive;

pub use crate::estimate::default_estimate;

/// The text before the summary in the user message that stands for the messages before the cut.
pub const SUMMARY_PREFIX: &str = "The conversation so far, summarised:\n\n";

/// `options.compaction`.
#[derive(Clone)]
pub struct CompactionOptions {
    /// The loop compacts before a request whose messages estimate more than this.
    pub max_context_tokens: f64,
    /// How much of the end of the conversation a compaction keeps; `None`: `max_context_tokens / 2`.
    pub keep_recent_tokens: Option<f64>,
    /// Writes the summary of the messages before the cut.
    pub summarize: Rc<dyn Summarize>,
    /// `None`: `default_estimate`, `ceil(JSON.stringify(message).length / 4)`.
    pub estimate_tokens: Option<Rc<dyn EstimateTokens>>,
}

/// The limits, and whether there is an `estimate_tokens` of the app's own.
impl std::fmt::Debug for CompactionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionOptions")
            .field("max_context_tokens", &self.max_context_tokens)
            .field("keep_recent_tokens", &self.keep_recent_tokens)
            .field("estimate_tokens", &self.estimate_tokens.is_some())
            .finish_non_exhaustive()
    }
}

/// `summarize`: the summary of `messages` (what the request would have carried before the cut: the previous
/// summary message first, if any). `Err` (a JS function that threw or returned no string) ends the run with
/// reason `error`, `compaction failed: <message>`.
pub trait Summarize {
    fn summarize<'a>(
        &'a self,
        messages: &'a [AgentMessage],
        signal: &'a AbortSignal,
    ) -> HookFuture<'a, String>;
}

/// A function or closure is a `summarize` that answers at once.
impl<F> Summarize for F
where
    F: Fn(&[AgentMessage]) -> Result<String, String>,
{
    fn summarize<'a>(
        &'a self,
        messages: &'a [AgentMessage],
        _signal: &'a AbortSignal,
    ) -> HookFuture<'a, String> {
        Box::pin(std::future::ready(self(messages)))
    }
}

/// `estimateTokens`: the tokens one message costs in a request. Asked once per message a request carries
/// (the loop keeps each answer). An `Err`, or an answer that is not a non-negative finite number, ends the
/// run like a `summarize` that fails.
pub trait EstimateTokens {
    fn estimate_tokens(&self, message: &AgentMessage) -> Result<f64, String>;
}

/// A function or closure is an `estimateTokens`.
impl<F> EstimateTokens for F
where
    F: Fn(&AgentMessage) -> Result<f64, String>,
{
    fn estimate_tokens(&self, message: &AgentMessage) -> Result<f64, String> {
        self(message)
    }
}

impl CompactionOptions {
    /// `keep_recent_tokens`, or its default.
    pub fn keep_recent(&self) -> f64 {
        (self.keep_recent_tokens).unwrap_or(self.max_context_tokens / 2.0)
    }

    /// `max_context_tokens` and `keep_recent_tokens` must be positive finite numbers; the error names the
    /// field under `path` (`options.compaction.maxContextTokens must be a positive number (got 0)`).
    pub fn check(&self, path: &str) -> Result<(), Invalid> {
        positive(Some(self.max_context_tokens), path, "maxContextTokens")?;
        positive(self.keep_recent_tokens, path, "keepRecentTokens")
    }
}

/// The user message that stands for everything before `entry`'s cut.
pub fn summary_message(entry: &CompactionEntry) -> AgentMessage {
    AgentMessage::User(UserMessage {
        content: UserContent::Blocks(vec![MediaBlock::text(format!(
            "{SUMMARY_PREFIX}{}",
            entry.summary
        ))]),
        timestamp: entry.timestamp,
        extra: Default::default(),
    })
}

/// Whether `message` is ever sent to a model (custom-role messages and compaction entries are not).
pub fn is_sent(message: &AgentMessage) -> bool {
    !matches!(
        message,
        AgentMessage::Custom(_) | AgentMessage::Compaction(_)
    )
}

/// The index of the last compaction entry of `messages`.
pub fn last_entry(messages: &[AgentMessage]) -> Option<usize> {
    (messages.iter()).rposition(|m| matches!(m, AgentMessage::Compaction(_)))
}

/// The messages a request built from `messages` carries (before `prepareRequest`).
pub fn request_messages(messages: &[AgentMessage]) -> Cow<'_, [AgentMessage]> {
    let has_custom = (messages.iter()).any(|m| matches!(m, AgentMessage::Custom(_)));
    view(messages, has_custom, last_entry(messages)).0
}

/// Where the messages of a request's view come from in the transcript (for `Sources`).
pub(crate) enum Picked {
    /// The view is the transcript.
    All,
    /// `view[i]` is message `at[i]`.
    Filtered(Vec<usize>),
    /// `view[0]` is the last entry's summary message, `view[1 + i]` message `at[i]`.
    AfterSummary(Vec<usize>),
}

impl Picked {
    pub(crate) fn sources(&self) -> Sources<'_> {
        match self {
            Picked::All => Sources::Transcript,
            Picked::Filtered(at) => Sources::Picked(at),
            Picked::AfterSummary(at) => Sources::Summarized(at),
        }
    }
}

/// `request_messages`, told whether `messages` hold a custom-role message and where the last entry is, and
/// where each message comes from: borrowed when there is neither, so a run without them copies nothing.
pub(crate) fn view(
    messages: &[AgentMessage],
    has_custom: bool,
    last_entry: Option<usize>,
) -> (Cow<'_, [AgentMessage]>, Picked) {
    let (first, entry) = match last_entry.map(|at| &messages[at]) {
        Some(AgentMessage::Compaction(entry)) => (entry.first_kept_index, Some(entry)),
        _ if !has_custom => return (Cow::Borrowed(messages), Picked::All),
        _ => (0, None),
    };
    let sent = (messages.iter().enumerate().skip(first)).filter(|(_, m)| is_sent(m));
    let (at, kept): (Vec<usize>, Vec<AgentMessage>) = sent.map(|(i, m)| (i, m.clone())).unzip();
    match entry {
        None => (Cow::Owned(kept), Picked::Filtered(at)),
        Some(entry) => {
            let view = std::iter::once(summary_message(entry)).chain(kept);
            (Cow::Owned(view.collect()), Picked::AfterSummary(at))
        }
    }
}

/// Where to cut (see the module): `after` is the previous entry's `first_kept_index` (0 when none), `sent`
/// each message's estimate (0 for those never sent), `keep` the tokens to keep. `None` when no index after
/// `after` is a cut. One pass from the end: the messages from a cut on estimate less the later the cut.
pub fn find_cut(messages: &[AgentMessage], after: usize, sent: &[f64], keep: f64) -> Option<usize> {
    let mut suffix = 0.0;
    let mut found = None;
    let mut largest = None;
    // Whether a result stands between this index and the next assistant message: a user message here
    // would separate it from its call.
    let mut result_ahead = false;
    for k in (after + 1..messages.len()).rev() {
        suffix += sent.get(k).copied().unwrap_or(0.0);
        let cut = match &messages[k] {
            AgentMessage::Assistant(_) => {
                result_ahead = false;
                true
            }
            AgentMessage::User(_) => !result_ahead,
            AgentMessage::ToolResult(_) => {
                result_ahead = true;
                false
            }
            AgentMessage::Compaction(_) | AgentMessage::Custom(_) => false,
        };
        if !cut {
            continue;
        }
        largest.get_or_insert(k);
        match suffix <= keep {
            true => found = Some(k),
            // Every cut before this one keeps more still.
            false => break,
        }
    }
    found.or(largest)
}

/// A compaction entry whose cut no run could make (`entry_problem`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryProblem {
    /// The entry's index in the transcript.
    pub index: usize,
    /// Its `firstKeptIndex`.
    pub first_kept_index: usize,
    /// What is wrong with the cut, in words (`is after the entry (...)`).
    pub what: &'static str,
}

impl EntryProblem {
    /// The problem, naming the entry by `name(index)`: `messages[7].firstKeptIndex: 9 is after the entry`.
    pub fn describe(&self, name: &dyn Fn(usize) -> String) -> String {
        let EntryProblem {
            index,
            first_kept_index: k,
            what,
        } = self;
        format!("{}.firstKeptIndex: {k} {what}", name(*index))
    }
}

/// Every compaction entry of `messages` keeps messages from before it, cut where a cut may be (see the
/// module). The error names the entry and the field: `messages[7].firstKeptIndex: 9 is after the entry`.
pub fn check_entries(messages: &[AgentMessage]) -> Result<(), Invalid> {
    Ok(check_entries_named(messages, &|at| {
        format!("messages[{at}]")
    })?)
}

/// `check_entries`, naming the entry by `name(index)` (`line 8: message` for a JSONL line).
pub fn check_entries_named(
    messages: &[AgentMessage],
    name: &dyn Fn(usize) -> String,
) -> Result<(), String> {
    entry_problem(messages).map_or(Ok(()), |problem| Err(problem.describe(name)))
}

/// The first compaction entry of `messages` whose cut no run could make, if any. The results a run will
/// append for the calls that wait for one (the last assistant message's, SPEC §8) count as results after
/// every entry: an entry after that message must keep it.
pub fn entry_problem(messages: &[AgentMessage]) -> Option<EntryProblem> {
    last_entry(messages)?;
    // For each index, whether a cut may be there: one pass from the end, as `find_cut` goes.
    let mut cuts = vec![false; messages.len()];
    let mut result_ahead = waits_for_results(messages);
    for (k, message) in messages.iter().enumerate().rev() {
        cuts[k] = match message {
            AgentMessage::Assistant(_) => {
                result_ahead = false;
                true
            }
            AgentMessage::User(_) => !result_ahead,
            AgentMessage::ToolResult(_) => {
                result_ahead = true;
                false
            }
            // An entry may keep nothing from before it (a cut at itself) unless a result after it
            // answers a call before it.
            AgentMessage::Compaction(_) => !result_ahead,
            AgentMessage::Custom(_) => false,
        };
    }
    messages.iter().enumerate().find_map(|(index, message)| {
        let AgentMessage::Compaction(entry) = message else {
            return None;
        };
        let k = entry.first_kept_index;
        let what = match k {
            k if k > index => "is after the entry (an entry keeps messages from before it)",
            k if cuts[k] => return None,
            k if k == index => {
                "keeps nothing from before the entry, but a tool result after it (or one a run will \
                 append) answers a call before it"
            }
            k if matches!(messages[k], AgentMessage::User(_)) => {
                "is a user message between a tool call and its result (a cut there would separate them)"
            }
            _ => "is not a user or assistant message",
        };
        Some(EntryProblem {
            index,
            first_kept_index: k,
            what,
        })
    })
}

/// Whether a call of the last assistant message has no result after it: a run appends its result at
/// the end of the transcript.
fn waits_for_results(messages: &[AgentMessage]) -> bool {
    let Some(at) = (messages.iter()).rposition(|m| matches!(m, AgentMessage::Assistant(_))) else {
        return false;
    };
    let AgentMessage::Assistant(message) = &messages[at] else {
        return false;
    };
    let answered = |id: &str| {
        messages[at + 1..].iter().any(|m| match m {
            AgentMessage::ToolResult(result) => result.tool_call_id == id,
            _ => false,
        })
    };
    message.tool_calls().any(|call| !answered(&call.id))
}
