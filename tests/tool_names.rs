//! A tool's name is checked when it is registered against what providers accept, `^[a-zA-Z0-9_-]{1,64}$`
//! (issue 17): a name a provider would reject fails at `register`, not at the first request. A custom tool
//! source's definitions pass the same checks (`check_definitions`, issue 27).

#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

use std::rc::Rc;

use serde_json::{json, Value};
use tiny_pi::*;

fn tool(name: &str) -> Tool {
    Tool::new(
        ToolDefinition {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        },
        Rc::new(|_args: Value, _ctx: ToolCallContext| async { Ok(ToolOutput::default()) }),
    )
}

#[test]
fn names_providers_accept_register() {
    let mut registry = ToolRegistry::new();
    let longest = "a".repeat(64);
    for name in [
        "read",
        "read_file",
        "read-file",
        "Read2",
        "_",
        "-",
        longest.as_str(),
    ] {
        registry.register(tool(name)).unwrap();
    }
    assert_eq!(registry.len(), 7);
}

#[test]
fn names_providers_reject_are_refused_naming_the_rule() {
    let mut registry = ToolRegistry::new();
    for (name, got) in [
        ("has space!", "\"has space!\""),
        ("read.file", "\"read.file\""),
        ("读取", "\"读取\""),
        ("tab\there", "\"tab\there\""),
    ] {
        let error = registry.register(tool(name)).unwrap_err();
        assert_eq!(
            error,
            format!("tool.name must match ^[a-zA-Z0-9_-]{{1,64}}$ (got {got})")
        );
    }
    // A long name is not echoed back whole.
    let error = registry.register(tool(&"a".repeat(65))).unwrap_err();
    assert_eq!(
        error,
        "tool.name must match ^[a-zA-Z0-9_-]{1,64}$ (got 65 characters)"
    );
    assert_eq!(
        registry.register(tool("")).unwrap_err(),
        "tool.name must be a non-empty string"
    );
    assert!(registry.is_empty());
}

fn definition(name: &str, parameters: Value) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: String::new(),
        parameters,
    }
}

#[test]
fn a_name_registered_twice_is_refused() {
    let mut registry = ToolRegistry::new();
    registry.register(tool("read")).unwrap();
    assert_eq!(
        registry.register(tool("read")).unwrap_err(),
        "tool.name must be unique (got \"read\", already registered)"
    );
    assert_eq!(registry.len(), 1);
}

/// A check's error is a `std::error::Error` (`Invalid`): `?` takes it into an app's boxed error (as into
/// `anyhow`'s), its text unchanged, and it is `Send + Sync` for an error that crosses threads.
#[test]
fn a_refusal_is_an_error_that_question_mark_takes() {
    fn setup(registry: &mut ToolRegistry) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        registry.register(tool("read"))?;
        registry.register(tool("read"))?;
        unreachable!("the second register is refused");
    }
    let error = setup(&mut ToolRegistry::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool.name must be unique (got \"read\", already registered)"
    );
    let invalid = error
        .downcast::<Invalid>()
        .expect("the registry's own error type");
    assert_eq!(
        String::from(*invalid),
        "tool.name must be unique (got \"read\", already registered)"
    );
    let read = reading::from_json::<AgentMessage>("{\"role\": \"user\"}").unwrap_err();
    assert_eq!(read.message(), "content is missing");
}

/// A custom tool source's `definitions()` (the bridge's `options.tools`) are checked as `register` checks a
/// tool: names, duplicates, schemas, each error naming the field.
#[test]
fn a_tool_sources_definitions_are_checked_as_register_checks_a_tool() {
    let at = "options.tools.definitions()";
    let object = || json!({"type": "object"});
    assert_eq!(
        check_definitions(
            &[
                definition(
                    "read",
                    json!({"type": "object", "properties": {"path": {"type": "string", "pattern": "^[a-z/]+$"}}})
                ),
                definition("write", object()),
                definition("any", json!(true)),
            ],
            at
        ),
        Ok(())
    );
    assert_eq!(check_definitions(&[], at), Ok(()));
    let cases: Vec<(Vec<ToolDefinition>, &str)> = vec![
        (
            vec![definition("read", object()), definition("read file", object())],
            "options.tools.definitions()[1].name must match ^[a-zA-Z0-9_-]{1,64}$ (got \"read file\")",
        ),
        (
            vec![definition("", object())],
            "options.tools.definitions()[0].name must be a non-empty string",
        ),
        (
            vec![
                definition("read", object()),
                definition("write", object()),
                definition("read", object()),
            ],
            "options.tools.definitions()[2].name must be unique (got \"read\", the name of \
             options.tools.definitions()[0] too)",
        ),
        (
            vec![definition("read", object()), definition("write", json!("x"))],
            "options.tools.definitions()[1].parameters must be a JSON Schema, an object or a boolean (got \
             string)",
        ),
        (
            vec![definition(
                "read",
                json!({"properties": {"q": {"type": "string", "pattern": "(?=a)"}}}),
            )],
            "options.tools.definitions()[0].parameters.properties.q.pattern is not supported (a lookahead \
             at index 0)",
        ),
        (
            vec![definition("read", json!({"type": "strnig"}))],
            "options.tools.definitions()[0].parameters.type",
        ),
    ];
    for (definitions, error) in cases {
        let refused = check_definitions(&definitions, at).unwrap_err();
        assert!(refused.message().starts_with(error), "{refused}");
    }
}
