//! Argument validation: each keyword, and an error that names the failing path.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

use serde_json::json;
use tiny_pi::schema::{check_schema, validate};

#[test]
fn valid_arguments_pass() {
    let schema = json!({"type": "object", "properties": {
        "path": {"type": "string", "minLength": 1},
        "mode": {"enum": ["r", "w"]},
        "lines": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 3}
    }, "required": ["path"], "additionalProperties": false});
    assert_eq!(
        validate(
            &schema,
            &json!({"path": "a", "mode": "r", "lines": [0, 2]}),
            "arguments"
        ),
        Ok(())
    );
}

#[test]
fn failures_name_the_path() {
    let schema = json!({"type": "object", "properties": {
        "path": {"type": "string", "maxLength": 3},
        "mode": {"enum": ["r", "w"]},
        "n": {"type": "number", "exclusiveMaximum": 10},
        "lines": {"type": "array", "items": {"type": "integer", "minimum": 0}}
    }, "required": ["path"], "additionalProperties": false});
    let cases = [
        (json!({}), "arguments: missing required property \"path\""),
        (
            json!({"path": 1}),
            "arguments.path: expected string, got integer",
        ),
        (
            json!({"path": "long!"}),
            "arguments.path: must be at most 3 characters long",
        ),
        (
            json!({"path": "a", "mode": "x"}),
            "arguments.mode: must be one of [\"r\",\"w\"], got \"x\"",
        ),
        (
            json!({"path": "a", "n": 10}),
            "arguments.n: must be < 10, got 10",
        ),
        (
            json!({"path": "a", "lines": [1, -1]}),
            "arguments.lines[1]: must be >= 0, got -1",
        ),
        (
            json!({"path": "a", "lines": [1.5]}),
            "arguments.lines[0]: expected integer, got number",
        ),
        (
            json!({"path": "a", "extra": true}),
            "arguments: unexpected property \"extra\"",
        ),
        (json!([]), "arguments: expected object, got array"),
    ];
    for (value, message) in cases {
        assert_eq!(
            validate(&schema, &value, "arguments"),
            Err(message.to_string()),
            "{value}"
        );
    }
}

#[test]
fn any_of_and_nullable_types() {
    let schema = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
    assert!(validate(&schema, &json!(null), "a").is_ok());
    assert!(validate(&schema, &json!(3), "a")
        .unwrap_err()
        .starts_with("a: matches none of anyOf"));
    assert!(validate(&json!({"type": ["string", "null"]}), &json!(null), "a").is_ok());
}

#[test]
fn unusable_schemas_are_refused_at_registration() {
    assert_eq!(
        check_schema(&json!("object"), "tool.parameters"),
        Err("tool.parameters must be a JSON Schema object, got string".into())
    );
    assert!(check_schema(&json!({"type": "strnig"}), "p")
        .unwrap_err()
        .starts_with("p.type: unknown type \"strnig\""));
    assert_eq!(
        check_schema(&json!({"properties": {"a": {"type": 3}}}), "p")
            .unwrap_err()
            .split(':')
            .next(),
        Some("p.properties.a.type")
    );
    assert_eq!(
        check_schema(&json!({"required": "a"}), "p"),
        Err("p.required must be an array of strings".into())
    );
}

#[test]
fn deeply_nested_any_of_is_validated_once_per_branch() {
    // Re-validating a failed branch to explain it doubled the work per level: 40 levels never finished.
    for keyword in ["anyOf", "oneOf"] {
        let mut schema = json!({"type": "integer"});
        for _ in 0..40 {
            schema = json!({ keyword: [schema] });
        }
        let error = validate(&schema, &json!("README.md"), "arguments.path").unwrap_err();
        assert!(
            error.starts_with(&format!("arguments.path: matches none of {keyword}")),
            "{error}"
        );
        assert!(
            error.chars().count() < 400,
            "nested reasons are cut short: {error}"
        );
    }
}

#[test]
fn discriminated_one_of_picks_the_variant_and_keeps_the_outer_keywords() {
    let schema = json!({
        "type": "object",
        "required": ["id"],
        "properties": {"id": {"type": "string"}, "kind": {"type": "string"}, "size": {}, "text": {}},
        "additionalProperties": false,
        "discriminator": {"propertyName": "kind"},
        "oneOf": [
            {"properties": {"kind": {"const": "box"}, "size": {"type": "integer"}}, "required": ["size"]},
            {"properties": {"kind": {"const": "note"}, "text": {"type": "string"}}, "required": ["text"]}
        ]
    });
    assert_eq!(
        validate(&schema, &json!({"id": "a", "kind": "box", "size": 2}), "a"),
        Ok(())
    );
    let cases = [
        // The tag picks one variant, and the error names the field inside it.
        (
            json!({"id": "a", "kind": "box", "size": "big"}),
            "a.size: expected integer, got string",
        ),
        (
            json!({"id": "a", "kind": "cup"}),
            "a.kind: unknown kind \"cup\", expected one of box, note",
        ),
        (json!({"id": "a"}), "a: missing required property \"kind\""),
        // The schema's own keywords still hold beside the discriminator.
        (
            json!({"kind": "note", "text": "hi"}),
            "a: missing required property \"id\"",
        ),
        (
            json!({"id": "a", "kind": "note", "text": "hi", "zzz": 1}),
            "a: unexpected property \"zzz\"",
        ),
        (
            json!({"id": 7, "kind": "note", "text": "hi"}),
            "a.id: expected string, got integer",
        ),
    ];
    for (value, message) in cases {
        assert_eq!(
            validate(&schema, &value, "a"),
            Err(message.to_string()),
            "{value}"
        );
    }
}
