//! The bridge's layout, as `src/wasm/mod.rs` states it: two layers, the transport never using the API, no
//! module cycle (Rust `use` and the JS glue's imports both counted), `glue.rs` only declarations, and a
//! module map that names every file. The sources are read as text; nothing is compiled for wasm here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

const WASM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/wasm");

/// Each layer's Rust modules, by name, with the modules (`layer/name`) each one uses.
fn modules() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for layer in ["api", "transport"] {
        for entry in fs::read_dir(Path::new(WASM).join(layer)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_str().unwrap().to_string();
            if path.extension().is_some_and(|e| e == "rs") && name != "mod" {
                let uses = uses(layer, &fs::read_to_string(&path).unwrap());
                graph.insert(format!("{layer}/{name}"), uses);
            }
        }
    }
    graph
}

/// The bridge modules a source names: `super::x` (its own layer) and `crate::wasm::layer::x`.
fn uses(layer: &str, source: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let words = |after: &str| -> Vec<String> {
        source
            .match_indices(after)
            .map(|(at, _)| {
                source[at + after.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            })
            .collect()
    };
    for name in words("super::") {
        found.insert(format!("{layer}/{name}"));
    }
    for other in ["api", "transport"] {
        for name in words(&format!("crate::wasm::{other}::")) {
            found.insert(format!("{other}/{name}"));
        }
    }
    // `use super::*` in a test module, and a module's own name, are not dependencies.
    found.retain(|m| !m.ends_with('/'));
    found
}

#[test]
fn the_transport_never_uses_the_api() {
    for (module, uses) in modules() {
        if module.starts_with("transport/") {
            let api: Vec<_> = uses.iter().filter(|m| m.starts_with("api/")).collect();
            assert!(api.is_empty(), "{module} uses {api:?}");
        }
    }
}

#[test]
fn no_module_cycle() {
    let graph = modules();
    // Depth-first search with the path kept: a module met again on its own path closes a cycle.
    fn visit<'a>(
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        module: &'a str,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(module) {
            return;
        }
        if let Some(at) = path.iter().position(|m| *m == module) {
            panic!("module cycle: {} -> {module}", path[at..].join(" -> "));
        }
        path.push(module);
        for next in graph.get(module).into_iter().flatten() {
            if next != module {
                visit(graph, next, path, done);
            }
        }
        path.pop();
        done.insert(module);
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        visit(&graph, module, &mut Vec::new(), &mut done);
    }
}

#[test]
fn glue_rs_is_only_declarations_and_glue_js_imports_nothing() {
    let glue = fs::read_to_string(Path::new(WASM).join("transport/glue.rs")).unwrap();
    assert!(
        uses("transport", &glue).is_empty(),
        "glue.rs uses other bridge modules"
    );
    for word in [
        "fn main",
        "impl ",
        "struct ",
        "enum ",
        "thread_local!",
        "static ",
    ] {
        assert!(
            !glue.contains(word),
            "glue.rs holds `{word}`: only extern blocks belong there"
        );
    }
    assert!(
        glue.lines()
            .filter(|l| l.contains(" fn "))
            .all(|l| l.trim_end().ends_with(';')
                || l.trim_end().ends_with('(')
                || l.trim_end().ends_with(',')),
        "glue.rs defines a function body"
    );
    let js = fs::read_to_string(Path::new(WASM).join("transport/glue.js")).unwrap();
    assert!(
        !js.lines()
            .any(|l| l.starts_with("import ") || l.contains("require(")),
        "glue.js imports a module"
    );
}

#[test]
fn the_module_map_names_every_file() {
    let map = fs::read_to_string(Path::new(WASM).join("mod.rs")).unwrap();
    for layer in ["api", "transport"] {
        for entry in fs::read_dir(Path::new(WASM).join(layer)).unwrap() {
            let file = entry.unwrap().file_name().into_string().unwrap();
            if file != "mod.rs" {
                // A row of the map's tables, not a mention in its prose.
                let row = format!("//! | `{layer}/{file}` |");
                assert!(
                    map.lines().any(|l| l.starts_with(&row)),
                    "the module map in src/wasm/mod.rs has no row for {layer}/{file}"
                );
            }
        }
    }
}
