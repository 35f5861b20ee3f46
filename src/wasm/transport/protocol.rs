//! The numbers `glue.js` and Rust exchange, each set an enum here and a frozen object of the same name in
//! `glue.js` (`Opened`, `StepKind`, `EventShape`, `OutputBit`). The test below reads the JS objects and
//! checks that the two agree, name for name and number for number. A number neither names is an error
//! (`Unknown`), never taken for one of the variants.

use std::fmt;

/// A number the other side of the bridge sent that names nothing: a bug in the bridge, reported as an error
/// (the run ends with it, or the event's observer error carries it), never a trap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unknown {
    pub protocol: &'static str,
    pub number: u32,
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tiny-pi bridge: {} {} is not known",
            self.protocol, self.number
        )
    }
}

/// Declares a protocol's enum, its reading from a number, and (for the test) its names.
macro_rules! protocol {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $value:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u32)]
        pub enum $name {
            $($(#[$vdoc])* $variant = $value,)*
        }

        impl $name {
            /// The variant numbered `number`. (`EventShape` only goes out to JS: its reading serves the test.)
            #[allow(dead_code)]
            pub fn from_u32(number: u32) -> Result<Self, Unknown> {
                match number {
                    $($value => Ok($name::$variant),)*
                    _ => Err(Unknown { protocol: stringify!($name), number }),
                }
            }

            /// Every variant with its name, as `glue.js`'s object of the same name spells it.
            #[cfg(test)]
            pub const ALL: &'static [($name, &'static str)] = &[$(($name::$variant, stringify!($variant)),)*];
        }
    };
}

protocol! {
    /// How `openStream` answered: the stream opened, or the step that failed (`model.rs` words each).
    Opened {
        Stream = 0,
        StreamWithResult = 1,
        StreamThrew = 2,
        NotIterable = 3,
        IteratorThrew = 4,
        NextUnreadable = 5,
        NoNext = 6,
        ResultUnreadable = 7,
        /// `stream()` gave a promise (it is `async`, say): SPEC's `stream()` is synchronous.
        Promise = 8,
    }
}

protocol! {
    /// What one `next()` of a stream `pump` pulls gave.
    StepKind {
        /// `{ done: false, value }`
        Value = 0,
        /// `{ done: true }`
        Done = 1,
        /// `next()` threw or its promise rejected.
        Threw = 2,
        /// Something that is not an iterator result.
        NotResult = 3,
    }
}

protocol! {
    /// Which object literal `emit` makes for an event: `{ type, ...fields }`.
    EventShape {
        /// `{ type, event }`
        Event = 0,
        /// `{ type, message }`
        Message = 1,
        /// `{ type, call }`
        Call = 2,
        /// `{ type, callId, content }`
        Progress = 3,
        /// `{ type, result }`
        Result = 4,
        /// `{ type, reason, steps }`
        TurnEnd = 5,
        /// `{ type, message, queue }`
        Queued = 6,
    }
}

protocol! {
    /// The bits `simpleOutput` answers with, besides 0 for an output not of the simple shape.
    OutputBit {
        /// Set in every answer but 0.
        Simple = 1,
        /// `details: {}`.
        EmptyDetails = 2,
        /// `isError: true`.
        IsError = 4,
        /// Other details, their JSON text kept for `takeSimpleDetails`.
        DetailsJson = 8,
        /// A text shorter than `SHORT_TEXT_UNITS`, for wasm-bindgen's own string return.
        ShortText = 16,
    }
}

protocol! {
    /// What each block of a final message `adoptParts` took apart is (`takePartNumbers`); the strings it
    /// names follow in the message's text, in order.
    BlockPart {
        /// A text block: its text.
        Text = 1,
        /// A thinking block: its thinking.
        Thinking = 2,
        /// A tool call: its id, its name and the JSON of its arguments (`{}` where JSON leaves them out, as
        /// the core reads a call without them).
        Call = 3,
    }
}

/// A text this short (UTF-16 units) crosses by wasm-bindgen's own string return: below it, the two extra
/// calls of `convert::rust_string`'s long path cost more than wasm-bindgen's character loop.
pub const SHORT_TEXT_UNITS: u32 = 64;

impl OutputBit {
    /// `bits` read as a set of `OutputBit`s; a bit that names none is `Unknown`.
    pub fn set(bits: u32) -> Result<OutputBits, Unknown> {
        let known = OutputBit::Simple as u32
            | OutputBit::EmptyDetails as u32
            | OutputBit::IsError as u32
            | OutputBit::DetailsJson as u32
            | OutputBit::ShortText as u32;
        match bits & !known {
            0 => Ok(OutputBits(bits)),
            other => Err(Unknown {
                protocol: "OutputBit",
                number: other,
            }),
        }
    }
}

protocol! {
    /// The `Agent`'s state, as `glue.js`'s `Agent` keeps it (the core's `AgentState`).
    AgentState {
        Idle = 0,
        Running = 1,
        Paused = 2,
    }
}

protocol! {
    /// What is asked of an `Agent` (the core's `AgentAction`).
    AgentAction {
        Prompt = 0,
        Resume = 1,
        /// `steer` or `followUp`.
        Queue = 2,
        Abort = 3,
        Reset = 4,
        /// The run ended, with any reason but `paused`.
        RunEnded = 5,
        /// The run ended with reason `paused`.
        RunPaused = 6,
    }
}

protocol! {
    /// What the `Agent` does about an action (the core's `AgentEffect`, a refusal aside: that is thrown).
    /// `__agentTransition` answers `effect << AGENT_STATE_BITS | next state`.
    AgentEffect {
        Run = 0,
        Queue = 1,
        AbortRun = 2,
        Interrupt = 3,
        Clear = 4,
        Settle = 5,
        Nothing = 6,
    }
}

/// How many low bits of `__agentTransition`'s answer hold the next `AgentState`.
pub const AGENT_STATE_BITS: u32 = 2;

/// A set of `OutputBit`s, every one of them known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputBits(u32);

impl OutputBits {
    pub fn has(self, bit: OutputBit) -> bool {
        self.0 & bit as u32 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use js_sys::{Object, Reflect};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    #[wasm_bindgen(module = "/src/wasm/transport/glue.js")]
    extern "C" {
        #[wasm_bindgen(thread_local_v2, js_name = Opened)]
        static OPENED: Object;
        #[wasm_bindgen(thread_local_v2, js_name = StepKind)]
        static STEP_KIND: Object;
        #[wasm_bindgen(thread_local_v2, js_name = EventShape)]
        static EVENT_SHAPE: Object;
        #[wasm_bindgen(thread_local_v2, js_name = OutputBit)]
        static OUTPUT_BIT: Object;
        #[wasm_bindgen(thread_local_v2, js_name = BlockPart)]
        static BLOCK_PART: Object;
        #[wasm_bindgen(thread_local_v2, js_name = SHORT_TEXT_UNITS)]
        static JS_SHORT_TEXT_UNITS: JsValue;
        #[wasm_bindgen(thread_local_v2, js_name = AgentState)]
        static AGENT_STATE: Object;
        #[wasm_bindgen(thread_local_v2, js_name = AgentAction)]
        static AGENT_ACTION: Object;
        #[wasm_bindgen(thread_local_v2, js_name = AgentEffect)]
        static AGENT_EFFECT: Object;
        #[wasm_bindgen(thread_local_v2, js_name = AGENT_STATE_BITS)]
        static JS_AGENT_STATE_BITS: JsValue;
    }

    /// The JS object names exactly the variants, each with its number, and nothing else.
    fn agree<T: Copy + Into<u32>>(js: &Object, all: &[(T, &str)], what: &str) {
        let keys = Object::keys(js);
        assert_eq!(
            keys.length() as usize,
            all.len(),
            "{what}: glue.js names {:?}",
            keys.to_vec()
        );
        for &(variant, name) in all {
            let number = Reflect::get(js, &JsValue::from_str(name)).unwrap();
            assert_eq!(
                number.as_f64(),
                Some(f64::from(variant.into())),
                "{what}.{name}"
            );
        }
    }

    macro_rules! into_u32 {
        ($($name:ident),*) => {$(impl From<$name> for u32 { fn from(v: $name) -> u32 { v as u32 } })*};
    }
    into_u32!(
        Opened,
        StepKind,
        EventShape,
        OutputBit,
        BlockPart,
        AgentState,
        AgentAction,
        AgentEffect
    );

    #[wasm_bindgen_test]
    fn glue_js_names_the_same_numbers() {
        OPENED.with(|js| agree(js, Opened::ALL, "Opened"));
        STEP_KIND.with(|js| agree(js, StepKind::ALL, "StepKind"));
        EVENT_SHAPE.with(|js| agree(js, EventShape::ALL, "EventShape"));
        OUTPUT_BIT.with(|js| agree(js, OutputBit::ALL, "OutputBit"));
        BLOCK_PART.with(|js| agree(js, BlockPart::ALL, "BlockPart"));
        JS_SHORT_TEXT_UNITS.with(|js| assert_eq!(js.as_f64(), Some(f64::from(SHORT_TEXT_UNITS))));
        AGENT_STATE.with(|js| agree(js, AgentState::ALL, "AgentState"));
        AGENT_ACTION.with(|js| agree(js, AgentAction::ALL, "AgentAction"));
        AGENT_EFFECT.with(|js| agree(js, AgentEffect::ALL, "AgentEffect"));
        JS_AGENT_STATE_BITS.with(|js| assert_eq!(js.as_f64(), Some(f64::from(AGENT_STATE_BITS))));
    }

    #[wasm_bindgen_test]
    fn a_number_no_variant_names_is_an_error() {
        assert_eq!(Opened::from_u32(8), Ok(Opened::Promise));
        assert_eq!(
            Opened::from_u32(9),
            Err(Unknown {
                protocol: "Opened",
                number: 9
            })
        );
        assert!(StepKind::from_u32(4).is_err());
        assert!(EventShape::from_u32(7).is_err());
        assert!(BlockPart::from_u32(0).is_err() && BlockPart::from_u32(4).is_err());
        assert!(OutputBit::set(1 | 16).is_ok());
        assert_eq!(OutputBit::set(1 | 32).unwrap_err().number, 32);
    }
}
