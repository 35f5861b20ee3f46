//! The official JSON Schema Test Suite (draft 2020-12, vendored in tests/json-schema-test-suite/) through the
//! registry, as a model's tool calls meet it: each schema is registered as a tool's `parameters` and each
//! datum is sent as a call's arguments. A valid datum must reach the tool; an invalid one must get an error
//! result and never run it. The groups listed in `skips.json` must instead be refused at `register`, with a
//! message naming the keyword. tests/node/json-schema-suite.test.mjs runs the same through the package.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

use std::cell::Cell;
use std::fs;
use std::rc::Rc;

use futures::executor::block_on;
use serde_json::Value;
use tiny_pi::*;

const SUITE: &str = "tests/json-schema-test-suite";

fn no_progress() -> ExecutionContext {
    ExecutionContext {
        signal: AbortSignal::none(),
        progress: Rc::new(|_| {}),
        clock: Rc::new(|| 0.0),
        host: None,
    }
}

/// The expected refusal of a group, if `skips.json` lists it (an entry marked `"only": "native"` would not
/// apply in wasm; none is: the core validates alike in every target).
fn skip<'a>(skips: &'a [Value], file: &str, group: &str) -> Option<&'a Value> {
    skips
        .iter()
        .find(|s| s["file"] == file && s["group"] == group)
}

#[test]
fn draft2020_12_passes_through_the_registry() {
    let skips: Value =
        serde_json::from_str(&fs::read_to_string(format!("{SUITE}/skips.json")).unwrap()).unwrap();
    let skips = skips.as_array().unwrap();
    let mut files: Vec<_> = fs::read_dir(format!("{SUITE}/draft2020-12"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let (mut passed, mut refused, mut failures) = (0, 0, Vec::new());
    for path in &files {
        let file = path.file_name().unwrap().to_str().unwrap();
        let groups: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        for group in groups.as_array().unwrap() {
            let description = group["description"].as_str().unwrap();
            let ran = Rc::new(Cell::new(0));
            let counter = ran.clone();
            let mut registry = ToolRegistry::new();
            let registered = registry.register(Tool::new(
                ToolDefinition {
                    name: "t".into(),
                    description: String::new(),
                    parameters: group["schema"].clone(),
                },
                Rc::new(move |_: Value, _: ToolCallContext| {
                    counter.set(counter.get() + 1);
                    async { Ok(ToolOutput::default()) }
                }),
            ));
            match (registered, skip(skips, file, description)) {
                (Err(error), Some(skip)) => {
                    let keyword = skip["keyword"].as_str().unwrap();
                    if error.message().contains(keyword) {
                        refused += group["tests"].as_array().unwrap().len();
                    } else {
                        failures.push(format!(
                            "{file} / {description}: refused without naming {keyword}: {error}"
                        ));
                    }
                    continue;
                }
                (Ok(()), Some(_)) => {
                    failures.push(format!(
                        "{file} / {description}: listed in skips.json but registered"
                    ));
                    continue;
                }
                (Err(error), None) => {
                    failures.push(format!("{file} / {description}: refused: {error}"));
                    continue;
                }
                (Ok(()), None) => {}
            }
            for test in group["tests"].as_array().unwrap() {
                let valid = test["valid"].as_bool().unwrap();
                let call = ToolCall {
                    id: "c1".into(),
                    name: "t".into(),
                    arguments: Some(test["data"].clone()),
                    extra: Default::default(),
                };
                let before = ran.get();
                let result = block_on(registry.execute(&call, no_progress()));
                let reached = ran.get() > before;
                if result.is_error != valid && reached == valid {
                    passed += 1;
                } else {
                    failures.push(format!(
                        "{file} / {description} / {}: expected {}, got {}",
                        test["description"].as_str().unwrap(),
                        if valid { "valid" } else { "invalid" },
                        serde_json::to_string(&result.content).unwrap()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(passed > 1000, "only {passed} cases ran");
    println!("JSON Schema Test Suite, draft 2020-12: {passed} passed, {refused} refused at register as listed");
}
