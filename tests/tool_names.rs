//! A tool's name is checked when it is registered against what providers accept, `^[a-zA-Z0-9_-]{1,64}$`
//! (issue 17): a name a provider would reject fails at `register`, not at the first request.

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
