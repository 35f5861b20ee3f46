//! The core's half of the JS `Agent` (SPEC §9). The class itself is thin JS over `runAgentLoop` (the
//! `Agent` section of `glue.js`, made into the package's `Agent` export by `scripts/build.mjs`); every rule it
//! follows is asked here: what each method does in each state (`AgentState::on`, through
//! `__agentTransition`), the state a conversation starts in (`__agentRestore`), and the messages a prompt
//! appends or a queue takes (`__agentInput`). None of these exports is part of the API: they are typed nowhere.

use std::rc::Rc;

use js_sys::{Array, Object};
use wasm_bindgen::prelude::*;

use super::approvals::pending_js;
use super::options;
use super::registry::registry_snapshot;
use crate::agent::{
    check_input, starting_state, AgentAction as Action, AgentEffect as Effect, AgentState as State,
};
use crate::tools::ToolRegistry;
use crate::wasm::transport::convert::{
    get, is_array, is_object, key, messages_and_json, optional_function, set, type_error, type_of,
};
use crate::wasm::transport::glue::parse_frozen_json_js;
use crate::wasm::transport::protocol::{AgentAction, AgentEffect, AgentState, AGENT_STATE_BITS};

/// The core's state table for the JS `Agent`: the next `AgentState` and the `AgentEffect` of `action` in
/// `state` (all `protocol.rs` numbers), as `effect << AGENT_STATE_BITS | next`. A refusal (a prompt while a
/// run is in progress, say) throws an `Error` with the core's words, and nothing changes.
#[wasm_bindgen(js_name = __agentTransition, skip_typescript)]
pub fn agent_transition_js(state: u32, action: u32) -> Result<u32, JsValue> {
    let unknown = |e: crate::wasm::transport::protocol::Unknown| type_error(e.to_string());
    let state = match AgentState::from_u32(state).map_err(unknown)? {
        AgentState::Idle => State::Idle,
        AgentState::Running => State::Running,
        AgentState::Paused => State::Paused,
    };
    let action = match AgentAction::from_u32(action).map_err(unknown)? {
        AgentAction::Prompt => Action::Prompt,
        AgentAction::Resume => Action::Resume,
        AgentAction::Queue => Action::Queue,
        AgentAction::Abort => Action::Abort,
        AgentAction::Reset => Action::Reset,
        AgentAction::RunEnded => Action::RunEnded { paused: false },
        AgentAction::RunPaused => Action::RunEnded { paused: true },
    };
    let (next, effect) = state.on(action);
    let effect = match effect {
        Effect::Run => AgentEffect::Run,
        Effect::Queue => AgentEffect::Queue,
        Effect::AbortRun => AgentEffect::AbortRun,
        Effect::Interrupt => AgentEffect::Interrupt,
        Effect::Clear => AgentEffect::Clear,
        Effect::Settle => AgentEffect::Settle,
        Effect::Nothing => AgentEffect::Nothing,
        Effect::Refuse(error) => return Err(js_sys::Error::new(&error.to_string()).into()),
    };
    Ok((effect as u32) << AGENT_STATE_BITS | state_number(next) as u32)
}

fn state_number(state: State) -> AgentState {
    match state {
        State::Idle => AgentState::Idle,
        State::Running => AgentState::Running,
        State::Paused => AgentState::Paused,
    }
}

/// `new Agent(options)`'s checks and starting state: `{ state, pending, messages }`, paused with the calls of
/// the last message when `options.messages` ends with calls that have no result (their need for approval
/// asked of `options.tools` at once); `messages` is the agent's copy of `options.messages`, deeply frozen,
/// parsed from the JSON text they were checked in.
/// Throws a `TypeError` naming the field: `options`, `options.model`, `options.customRoles`,
/// `options.messages` (a call without a result anywhere else, too).
#[wasm_bindgen(js_name = __agentRestore, skip_typescript)]
pub fn agent_restore_js(agent_options: JsValue) -> Result<JsValue, JsValue> {
    restore(&agent_options).map_err(type_error)
}

fn restore(agent_options: &JsValue) -> Result<JsValue, String> {
    if !is_object(agent_options) {
        return Err(format!(
            "options must be an object with a model (got {})",
            type_of(agent_options)
        ));
    }
    options::model(get(agent_options, "model", "options.model")?)?;
    let roles = get(agent_options, "customRoles", "options.customRoles")?;
    let roles = options::custom_roles(&roles)?;
    let messages = get(agent_options, "messages", "options.messages")?;
    let (messages, json) = match messages.is_null_or_undefined() {
        true => (Vec::new(), JsValue::from_str("[]")),
        false => messages_and_json(&messages, "options.messages", &roles)?,
    };
    let tools = get(agent_options, "tools", "options.tools")?;
    // Only a registry says which calls need approval (a custom executor's runs ask it too).
    let registry = registry_snapshot(&tools)
        .flatten()
        .unwrap_or_else(|| Rc::new(ToolRegistry::new()));
    let (state, pending) = starting_state(&*registry, &messages).map_err(|e| e.to_string())?;
    let started: JsValue = Object::new().into();
    set(
        &started,
        "state",
        &JsValue::from(state_number(state) as u32),
    );
    set(&started, "messages", &parse_frozen_json_js(&json));
    set(&started, "pending", &pending_js(&pending));
    Ok(started)
}

/// What `prompt`, `steer` or `followUp` is given (`input`: a string, a message or an array of them), as the
/// messages the agent appends or queues, deeply frozen. A string is one user message stamped by the run's
/// clock (`options.now` when it gives a number, else `Date.now()`); messages must be well-formed, and only
/// user messages or messages of a role in `options.customRoles` (the agent's `options`) may be given. The
/// copy is parsed from the JSON text they were checked in: they cross as JSON once. Throws a `TypeError`
/// naming the message (`input[0]...`).
#[wasm_bindgen(js_name = __agentInput, skip_typescript)]
pub fn agent_input_js(input: JsValue, agent_options: JsValue) -> Result<JsValue, JsValue> {
    let read = || -> Result<JsValue, String> {
        let roles = get(&agent_options, "customRoles", "options.customRoles")?;
        let roles = options::custom_roles(&roles)?;
        let list = match is_array(&input) {
            true => input.clone(),
            false => {
                let message = match input.is_string() {
                    true => user_message(&input, &agent_options)?,
                    false => input.clone(),
                };
                let list = Array::new();
                list.push(&message);
                list.into()
            }
        };
        let (messages, json) = messages_and_json(&list, "input", &roles)?;
        check_input(&messages, &roles).map_err(|e| e.to_string())?;
        Ok(json)
    };
    read()
        .map(|json| parse_frozen_json_js(&json))
        .map_err(type_error)
}

/// A prompt's string as a user message, stamped as the run's clock would stamp it.
fn user_message(content: &JsValue, agent_options: &JsValue) -> Result<JsValue, String> {
    let now = optional_function(agent_options, "now", "options.now")?;
    let message = Object::new().into();
    set(&message, "role", key("user"));
    set(&message, "content", content);
    set(&message, "timestamp", &options::time(now.as_ref()).into());
    Ok(message)
}
