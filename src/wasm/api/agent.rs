//! `Agent` (SPEC §9): the core's `Agent` as a JS class. Its state table, queues, listeners and runs are the
//! core's (`src/agent.rs`); this converts what JS hands over and the results it gets back. The JS objects of
//! the conversation are kept across runs (`Objects`), so a prompt converts only what is new.

use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::approvals::approvals;
use super::options;
use super::run::{run_result, Setup};
use crate::agent::{read_input, Agent, AgentError, AgentOptions, AgentState};
use crate::message::AgentMessage;
use crate::wasm::transport::convert::{
    each_from_js, expect_object, frozen_js, get, is_array, is_object, messages_from_js, must_be,
    optional_string, plain_error, promise, read_js, string_of, type_error, type_of,
};
use crate::wasm::transport::events::JsObserver;
use crate::wasm::transport::model::JsModel;
use crate::wasm::transport::objects::SharedObjects;
use crate::wasm::transport::timers::JsTimers;

/// A conversation over `runAgentLoop`: the same rules, its transcript kept between runs. (Declared in
/// `types.d.ts`.)
#[wasm_bindgen(js_name = Agent, skip_typescript)]
pub struct JsAgent {
    agent: Agent<JsModel>,
    objects: SharedObjects,
    custom_roles: Vec<String>,
}

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// Throws a `TypeError` naming a malformed option, or a transcript problem in `options.messages`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsAgent, JsValue> {
        let _entered = super::enter()?;
        let start = |mut made: AgentOptions<JsModel>| -> Result<_, String> {
            let messages = get(&options, "messages", "options.messages")?;
            if !messages.is_null_or_undefined() {
                made.messages =
                    messages_from_js(&messages, "options.messages", &made.custom_roles)?;
            }
            Agent::new(made).map_err(|e| e.to_string())
        };
        Self::make(&options, &start).map_err(type_error)
    }

    /// An agent over `toJSONL`'s text; paused when its last message has unanswered calls.
    #[wasm_bindgen(js_name = fromJSONL)]
    pub fn from_jsonl(text: JsValue, options: JsValue) -> Result<JsAgent, JsValue> {
        let _entered = super::enter()?;
        let start = |made: AgentOptions<JsModel>| -> Result<_, String> {
            let text = string_of(&text, "text")?
                .ok_or_else(|| must_be("text", "a string", type_of(&text)))?;
            Agent::from_jsonl(&text, made).map_err(|e| e.to_string())
        };
        Self::make(&options, &start).map_err(type_error)
    }

    /// An agent over `options` (checked here, all of them), made by `start` from the core's options.
    fn make(
        options: &JsValue,
        start: &dyn Fn(AgentOptions<JsModel>) -> Result<Agent<JsModel>, String>,
    ) -> Result<JsAgent, String> {
        expect_object(options, "options", "an object with a model")?;
        // runAgentLoop's options that an Agent takes another way: named, never ignored.
        let elsewhere = [
            ("context", "give the conversation as options.messages"),
            ("signal", "abort its run with agent.abort()"),
            ("onEvent", "listen with agent.subscribe(listener)"),
            ("approvals", "decide with agent.resume(approvals)"),
            ("getSteeringMessages", "queue with agent.steer(message)"),
            ("getFollowUpMessages", "queue with agent.followUp(message)"),
        ];
        for (key, instead) in elsewhere {
            if !get(options, key, key)?.is_undefined() {
                return Err(format!(
                    "options.{key} is runAgentLoop's, not an Agent option: {instead}"
                ));
            }
        }
        let setup = Setup::read(options)?;
        let control = setup.control;
        let hook = |hook: Option<_>| hook.map(Rc::new);
        let agent = start(AgentOptions {
            model: setup.model,
            tools: setup.definitions,
            executor: Rc::new(setup.executor),
            clock: setup.clock,
            system_prompt: optional_string(options, "systemPrompt", "options.systemPrompt")?,
            max_steps: setup.max_steps,
            messages: Vec::new(),
            tool_execution: control.tool_execution,
            tool_timeout_ms: control.tool_timeout_ms,
            before_tool_call: hook(control.before_tool_call).map(|h| h as _),
            after_tool_call: hook(control.after_tool_call).map(|h| h as _),
            prepare_request: hook(control.prepare_request).map(|h| h as _),
            custom_roles: setup.custom_roles.clone(),
            timers: Rc::new(JsTimers),
            budget: control.budget,
            retry: control.retry,
            compaction: control.compaction,
            start_steps: options::count(
                &get(options, "startSteps", "options.startSteps")?,
                "options.startSteps",
                0,
            )?,
        })?;
        Ok(JsAgent {
            agent,
            objects: setup.objects,
            custom_roles: setup.custom_roles,
        })
    }

    /// The conversation, frozen: during a run, with its input and what it has appended yet.
    #[wasm_bindgen(getter)]
    pub fn messages(&self) -> JsValue {
        self.agent
            .with_messages(|messages| self.objects.borrow_mut().view(messages))
            .into()
    }

    #[wasm_bindgen(getter, js_name = isRunning)]
    pub fn is_running(&self) -> bool {
        self.agent.is_running()
    }

    /// When paused: the calls of the last message.
    #[wasm_bindgen(getter)]
    pub fn pending(&self) -> JsValue {
        self.agent
            .pending()
            .map_or(JsValue::UNDEFINED, |pending| frozen_js(&pending))
    }

    /// Appends the input (a string is a user message) and runs.
    pub fn prompt(&self, input: JsValue) -> Promise {
        super::entered(|| {
            let input = self.input(&input).map_err(AgentError::Input);
            self.settle(input.and_then(|input| self.agent.prompt_with(input, false)))
        })
    }

    /// Goes on from a pause with these decisions.
    pub fn resume(&self, decisions: JsValue) -> Promise {
        super::entered(|| {
            if self.agent.state() == AgentState::Paused {
                (self.agent).with_messages(|messages| self.objects.borrow_mut().resuming(messages));
            }
            let decisions = approvals(&decisions, "approvals").map_err(AgentError::Input);
            self.settle(decisions.and_then(|decisions| self.agent.resume_with(decisions, false)))
        })
    }

    pub fn steer(&self, message: JsValue) -> Result<(), JsValue> {
        let _entered = super::enter()?;
        let message = self.one(&message)?;
        self.agent.steer(message).map_err(agent_error)
    }

    #[wasm_bindgen(js_name = followUp)]
    pub fn follow_up(&self, message: JsValue) -> Result<(), JsValue> {
        let _entered = super::enter()?;
        let message = self.one(&message)?;
        self.agent.follow_up(message).map_err(agent_error)
    }

    pub fn abort(&self) -> Result<(), JsValue> {
        let _entered = super::enter()?;
        let paused = self.agent.state() == AgentState::Paused;
        self.agent.abort();
        if paused {
            // The pending calls were answered in place: the transcript changed other than by growing.
            self.objects.borrow_mut().clear();
        }
        Ok(())
    }

    #[wasm_bindgen(js_name = waitForIdle)]
    pub fn wait_for_idle(&self) -> Promise {
        let idle = self.agent.wait_for_idle();
        promise(async move {
            idle.await;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Every event of every run; answers the function that unsubscribes.
    pub fn subscribe(&self, listener: JsValue) -> Result<JsValue, JsValue> {
        let listener = listener
            .dyn_into::<js_sys::Function>()
            .map_err(|other| type_error(must_be("listener", "a function", type_of(&other))))?;
        let id = self.agent.subscribe(Rc::new(JsObserver {
            on_event: Some(listener),
            objects: self.objects.clone(),
        }));
        // The function holds the agent weakly: a listener never unsubscribed keeps nothing alive.
        let agent = self.agent.downgrade();
        let unsubscribe = move || {
            if let Some(agent) = agent.upgrade() {
                agent.unsubscribe(id);
            }
        };
        Ok(Closure::<dyn FnMut()>::new(unsubscribe).into_js_value())
    }

    pub fn reset(&self) -> Result<(), JsValue> {
        self.agent.reset().map_err(agent_error)?;
        self.objects.borrow_mut().clear();
        Ok(())
    }

    #[wasm_bindgen(js_name = toJSONL)]
    pub fn to_jsonl(&self) -> String {
        self.agent.to_jsonl()
    }
}

impl JsAgent {
    /// What `prompt` is given: one message (as `message` reads it) or an array of messages, each a user
    /// message or one of a custom role (the core's `read_input`).
    fn input(&self, input: &JsValue) -> Result<Vec<AgentMessage>, String> {
        if is_array(input) {
            return each_from_js(input, "input", |value| {
                read_input(value, &self.custom_roles)
            });
        }
        let expected = "a string, a message or an array of messages";
        Ok(vec![self.message(input, "input", expected)?])
    }

    /// What `steer` and `followUp` are given: one message.
    fn one(&self, message: &JsValue) -> Result<AgentMessage, JsValue> {
        (self.message(message, "message", "a string or one message")).map_err(type_error)
    }

    /// A string (a user message stamped by the agent's clock) or one message object (the core's
    /// `read_input`); anything else is "`what` must be `expected`".
    fn message(&self, value: &JsValue, what: &str, expected: &str) -> Result<AgentMessage, String> {
        if let Some(text) = string_of(value, what)? {
            return Ok(AgentMessage::user(text, self.agent.now()));
        }
        if is_array(value) || !is_object(value) {
            return Err(must_be(what, expected, type_of(value)));
        }
        read_js(value, what, |value| read_input(value, &self.custom_roles))
    }

    /// A run's promise: its result object (its messages the conversation's, read in place), or the agent's
    /// refusal. It holds the agent until the run settles, so an agent freed while it runs still answers
    /// with its whole transcript.
    /// A refusal (bad input, a state that does not allow it) rejects at once, its error made now: its stack
    /// starts at the app's line (made in the run's future, it would hold only the host's microtask frames).
    fn settle(&self, run: crate::agent::RunStart) -> Promise {
        let run = match run {
            Ok(run) => run,
            Err(refused) => return Promise::reject(&agent_error(refused)),
        };
        let (objects, agent) = (self.objects.clone(), self.agent.clone());
        promise(async move {
            let result = run.await.map_err(agent_error)?;
            let messages = agent.with_messages(|messages| objects.borrow_mut().array(messages));
            Ok(run_result(&result, &messages))
        })
    }
}

/// An agent's refusal: a `TypeError` for bad input, an `Error` for a call the state does not allow.
fn agent_error(error: AgentError) -> JsValue {
    match error {
        AgentError::Input(message) => type_error(message),
        other => plain_error(other),
    }
}
