//! A JS model: `stream(request, {signal})` returning any async iterable (a pi-ai `EventStream` included),
//! with or without `result()`. Events stay JS values: they reach `onEvent` as the objects the model yielded.
//!
//! The final message is read once, as data (SPEC §10): the JSON `JSON.stringify` writes of it (a getter or
//! `toJSON` runs once) is what the core decides on, stores and hands out. The model's own object is never
//! kept.

use std::cell::RefCell;
use std::rc::Rc;
use std::task::{Poll, Waker};

use js_sys::{Function, Promise};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::convert::{error_message, from_js, frozen_js};
use super::glue::{
    close_delivery_js, define_at_js, final_of_js, open_stream_js, pull_js, request_js,
    stream_result_js,
};
use super::objects::SharedObjects;
use super::signal::handed;
use crate::message::AssistantMessage;
use crate::model::{Model, ModelRequest, ModelStream, Sources, StreamEvent};
use crate::signal::{AbortSignal, Registration};
use crate::tools::ToolDefinition;

pub struct JsModel {
    pub model: JsValue,
    pub stream: Function,
    pub requests: Requests,
    /// The object of the request streamed last: a retry of it is streamed the same object (SPEC §12).
    pub streamed: RefCell<JsValue>,
}

/// How a run's requests are shown to JS (the model, `prepareRequest`).
#[derive(Clone)]
pub struct Requests {
    /// The run's tool definitions, and the same as one frozen JS array, which every request shares
    /// unless `prepareRequest` replaced them.
    pub definitions: Rc<[ToolDefinition]>,
    pub tools: JsValue,
    pub objects: SharedObjects,
    /// The last request made of the transcript as it is (its view and system prompt): `prepareRequest`
    /// and the model are shown the same object when the hook changes nothing.
    pub last: Rc<RefCell<Option<LastRequest>>>,
}

/// A request made of the whole transcript: the transcript's view (`Objects::view`), its system prompt, and
/// the frozen JS object.
type LastRequest = (JsValue, Option<String>, JsValue);

impl Requests {
    pub fn new(definitions: Vec<ToolDefinition>, objects: SharedObjects) -> Self {
        Requests {
            // Frozen, deeply: every request shares these objects.
            tools: frozen_js(&definitions),
            definitions: definitions.into(),
            objects,
            last: Rc::default(),
        }
    }

    /// The frozen JS request for `request` (SPEC §10): its messages the transcript's objects, in an array
    /// that never changes.
    pub fn js(&self, request: &ModelRequest<'_>) -> JsValue {
        let own_tools = request.tools == &*self.definitions;
        let whole = request.sources == Sources::Transcript && own_tools;
        let messages = request_messages(&self.objects, request);
        let prompt = request.system_prompt.map(str::to_owned);
        if let Some((view, last_prompt, made)) = &*self.last.borrow() {
            // The same view of the transcript (`Objects` makes a new one when it grows or is cleared).
            if whole && js_sys::Object::is(view, &messages) && *last_prompt == prompt {
                return made.clone();
            }
        }
        let tools = match own_tools {
            true => self.tools.clone(),
            false => frozen_js(request.tools),
        };
        let made = request_js(prompt.clone(), &messages, &tools);
        if whole {
            *self.last.borrow_mut() = Some((messages, prompt, made.clone()));
        }
        made
    }
}

/// A request's messages as a frozen JS array: the transcript's objects where the core says the messages
/// are the transcript's (the array every look at the transcript shares until it grows), else objects
/// made for this request.
pub fn request_messages(objects: &SharedObjects, request: &ModelRequest<'_>) -> JsValue {
    let mut objects = objects.borrow_mut();
    let array = match request.sources {
        Sources::Transcript => return objects.view(request.messages).into(),
        Sources::Picked(picked) => picked_messages(&mut objects, request.messages, picked, 0),
        // The summary message is made for this request; the rest are the transcript's.
        Sources::Summarized(picked) => {
            let array = picked_messages(&mut objects, &request.messages[1..], picked, 1);
            define_at_js(&array, 0, &frozen_js(&request.messages[0]));
            array
        }
        Sources::Other => return frozen_js(request.messages),
    };
    js_sys::Object::freeze(&array);
    array.into()
}

/// The objects of the transcript messages at `picked` (each also in `messages`, in order), from `offset` on
/// in a new array.
fn picked_messages(
    objects: &mut super::objects::Objects,
    messages: &[crate::message::AgentMessage],
    picked: &[usize],
    offset: u32,
) -> js_sys::Array {
    let array = js_sys::Array::new_with_length(offset + picked.len() as u32);
    for (at, (&index, message)) in picked.iter().zip(messages).enumerate() {
        define_at_js(&array, offset + at as u32, &objects.message(index, message));
    }
    array
}

impl Model for JsModel {
    type Stream = JsStream;

    fn stream(&self, request: ModelRequest<'_>, signal: &AbortSignal) -> Result<JsStream, String> {
        // The caller's JS signal, else one that follows the run's (an Agent's own controller).
        let (signal, following) =
            handed(signal).unwrap_or((JsValue::UNDEFINED, Registration::none()));
        let shown = match request.attempt {
            0 => self.requests.js(&request),
            _ => self.streamed.borrow().clone(),
        };
        self.streamed.replace(shown.clone());
        let opened = open_stream_js(&self.model, &self.stream, &shown, &signal);
        if let Some(error) = opened.as_string() {
            return Err(error);
        }
        let has_result = !js_sys::Reflect::get(&opened, &JsValue::from_str("result"))
            .unwrap_or_default()
            .is_undefined();
        Ok(JsStream::new(opened, has_result, following))
    }
}

pub struct JsStream {
    /// `{ stream, iterator, next, result }`, as `glue.js`'s `openStream` made it.
    opened: JsValue,
    has_result: bool,
    /// Where `glue.js`'s `pull` hands each event (through `deliver`, one function for the stream's life).
    pulled: Rc<RefCell<Pulled>>,
    deliver: Closure<dyn FnMut(JsValue, u32)>,
    /// Keeps the signal handed to the model following the run's.
    _following: Registration,
}

/// The stream's next item, once `pull` handed it over, and who waits for it.
#[derive(Default)]
struct Pulled {
    item: Option<Option<Result<JsEvent, String>>>,
    waker: Option<Waker>,
    pulling: bool,
}

impl JsStream {
    fn new(opened: JsValue, has_result: bool, _following: Registration) -> JsStream {
        let pulled = Rc::new(RefCell::new(Pulled::default()));
        let to = pulled.clone();
        // `glue.js`'s numbers: 0 an event, 1 the end, 2 the text of what went wrong.
        let deliver = Closure::new(move |value: JsValue, kind: u32| {
            let mut pulled = to.borrow_mut();
            pulled.pulling = false;
            pulled.item = Some(match kind {
                0 => Some(Ok(JsEvent(value))),
                1 => None,
                _ => Some(Err(value.as_string().unwrap_or_default())),
            });
            let waker = pulled.waker.take();
            drop(pulled);
            if let Some(waker) = waker {
                waker.wake();
            }
        });
        JsStream {
            opened,
            has_result,
            pulled,
            deliver,
            _following,
        }
    }
}

impl Drop for JsStream {
    fn drop(&mut self) {
        close_delivery_js(&self.opened);
    }
}

impl ModelStream for JsStream {
    type Event = JsEvent;

    async fn next(&mut self) -> Option<Result<JsEvent, String>> {
        std::future::poll_fn(|cx| {
            let mut pulled = self.pulled.borrow_mut();
            if let Some(item) = pulled.item.take() {
                return Poll::Ready(item);
            }
            pulled.waker = Some(cx.waker().clone());
            if !std::mem::replace(&mut pulled.pulling, true) {
                drop(pulled);
                pull_js(&self.opened, self.deliver.as_ref().unchecked_ref());
            }
            Poll::Pending
        })
        .await
    }

    fn has_result(&self) -> bool {
        self.has_result
    }

    async fn result(&mut self) -> Result<AssistantMessage, String> {
        let promise: Promise = stream_result_js(&self.opened);
        // What it threw or rejected with is the failure's `error`, as it is (SPEC §12).
        let message = JsFuture::from(promise)
            .await
            .map_err(|e| error_message(&e))?;
        from_js(&message, "model stream result()")
    }
}

/// A model event exactly as JS produced it.
pub struct JsEvent(pub JsValue);

impl StreamEvent for JsEvent {
    fn final_message(&self) -> Option<Result<AssistantMessage, String>> {
        match final_of_js(&self.0) {
            Ok(None) => None,
            Ok(Some(found)) => {
                let field = found.get(1).as_string().unwrap_or_default();
                Some(from_js(&found.get(0), &format!("model event {field}")))
            }
            Err(thrown) => Some(Err(format!("model event: {}", error_message(&thrown)))),
        }
    }
}
