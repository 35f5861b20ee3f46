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
        (json!({}), "arguments.path is missing"),
        (
            json!({"path": 1}),
            "arguments.path must be a string (got integer)",
        ),
        (
            json!({"path": "long!"}),
            "arguments.path must be at most 3 characters long (got 5)",
        ),
        (
            json!({"path": "a", "mode": "x"}),
            "arguments.mode must be one of \"r\", \"w\" (got \"x\")",
        ),
        (
            json!({"path": "a", "n": 10}),
            "arguments.n must be < 10 (got 10)",
        ),
        (
            json!({"path": "a", "lines": [1, -1]}),
            "arguments.lines[1] must be >= 0 (got -1)",
        ),
        (
            json!({"path": "a", "lines": [1.5]}),
            "arguments.lines[0] must be an integer (got number)",
        ),
        (
            json!({"path": "a", "extra": true}),
            "arguments.extra is not allowed",
        ),
        (json!([]), "arguments must be an object (got array)"),
    ];
    for (value, message) in cases {
        assert_eq!(
            validate(&schema, &value, "arguments"),
            Err(message.into()),
            "{value}"
        );
    }
}

#[test]
fn a_long_enum_is_named_by_its_first_twenty_values_and_its_count() {
    let values: Vec<String> = (0..5000).map(|i| format!("v{i}")).collect();
    let schema = json!({"enum": values});
    let error = validate(&schema, &json!("x"), "arguments").unwrap_err();
    let first: Vec<String> = (0..20).map(|i| format!("\"v{i}\"")).collect();
    assert_eq!(
        error,
        format!(
            "arguments must be one of {}, … (5000 in all) (got \"x\")",
            first.join(", ")
        )
    );
    let twenty = json!({"enum": values[..20]});
    assert!(!validate(&twenty, &json!("x"), "arguments")
        .unwrap_err()
        .message()
        .contains("in all"));
}

#[test]
fn any_of_and_nullable_types() {
    let schema = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
    assert!(validate(&schema, &json!(null), "a").is_ok());
    assert!(validate(&schema, &json!(3), "a")
        .unwrap_err()
        .message()
        .starts_with("a must match a schema of anyOf"));
    assert!(validate(&json!({"type": ["string", "null"]}), &json!(null), "a").is_ok());
}

#[test]
fn unusable_schemas_are_refused_at_registration() {
    assert_eq!(
        check_schema(&json!("object"), "tool.parameters"),
        Err("tool.parameters must be a JSON Schema, an object or a boolean (got string)".into())
    );
    assert!(check_schema(&json!({"type": "strnig"}), "p")
        .unwrap_err()
        .message()
        .starts_with("p.type must be one of"));
    assert!(
        check_schema(&json!({"properties": {"a": {"type": 3}}}), "p")
            .unwrap_err()
            .message()
            .starts_with("p.properties.a.type must be one of")
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
            error
                .message()
                .starts_with(&format!("arguments.path must match a schema of {keyword}")),
            "{error}"
        );
        assert!(
            error.message().chars().count() < 400,
            "nested reasons are cut short: {error}"
        );
    }
}

#[test]
fn a_recursive_schema_checks_each_value_once_against_each_reference() {
    // Two ways to one `$ref` per level (anyOf branches, allOf mixins, if/then) checked the document's
    // subtree once per way: 2^depth, 10 s at depth 20 in wasm, for a tool call the model writes.
    let expr = json!({"$defs": {"e": {"anyOf": [
        {"type": "object", "properties": {"op": {"const": "and"}, "args": {"type": "array", "items": {"$ref": "#/$defs/e"}}}, "required": ["op"]},
        {"type": "object", "properties": {"op": {"const": "or"}, "args": {"type": "array", "items": {"$ref": "#/$defs/e"}}}, "required": ["op"]},
        {"type": "string"}
    ]}}, "$ref": "#/$defs/e"});
    let mixins = json!({"$defs": {"node": {"allOf": [
        {"properties": {"next": {"$ref": "#/$defs/node"}}},
        {"properties": {"next": {"$ref": "#/$defs/node"}}}
    ], "properties": {"leaf": {"type": "integer"}}}}, "$ref": "#/$defs/node"});
    let conditional = json!({"$defs": {"node": {
        "if": {"properties": {"next": {"$ref": "#/$defs/node"}}},
        "then": {"properties": {"next": {"$ref": "#/$defs/node"}}},
        "properties": {"leaf": {"type": "integer"}}
    }}, "$ref": "#/$defs/node"});
    // The argument's keys in the order that rules a branch out last: `args` before `op`.
    let (mut or_tree, mut chain) = (json!("x"), json!({"leaf": 1}));
    let mut bad_chain = json!({"leaf": "one"});
    for _ in 0..60 {
        let mut node = serde_json::Map::new();
        node.insert("args".into(), json!([or_tree]));
        node.insert("op".into(), json!("or"));
        or_tree = node.into();
        chain = json!({ "next": chain });
        bad_chain = json!({ "next": bad_chain });
    }
    assert_eq!(validate(&expr, &or_tree, "arguments"), Ok(()));
    assert_eq!(validate(&mixins, &chain, "arguments"), Ok(()));
    assert_eq!(validate(&conditional, &chain, "arguments"), Ok(()));
    let leaf = format!("arguments{}.leaf", ".next".repeat(60));
    let error = validate(&mixins, &bad_chain, "arguments").unwrap_err();
    assert_eq!(
        error,
        format!("{leaf} must be an integer (got string)").as_str()
    );
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
            "a.size must be an integer (got string)",
        ),
        (
            json!({"id": "a", "kind": "cup"}),
            "a.kind must be one of \"box\", \"note\" (got \"cup\")",
        ),
        (json!({"id": "a"}), "a.kind is missing"),
        // The schema's own keywords still hold beside the discriminator.
        (json!({"kind": "note", "text": "hi"}), "a.id is missing"),
        (
            json!({"id": "a", "kind": "note", "text": "hi", "zzz": 1}),
            "a.zzz is not allowed",
        ),
        (
            json!({"id": 7, "kind": "note", "text": "hi"}),
            "a.id must be a string (got integer)",
        ),
    ];
    for (value, message) in cases {
        assert_eq!(
            validate(&schema, &value, "a"),
            Err(message.into()),
            "{value}"
        );
    }
}

/// `(schema, arguments, the error)`: each keyword's message names the failing path, one reason only.
fn assert_errors(cases: &[(serde_json::Value, serde_json::Value, &str)]) {
    for (schema, value, message) in cases {
        assert_eq!(
            validate(schema, value, "arguments"),
            Err((*message).into()),
            "{schema} / {value}"
        );
    }
}

#[test]
fn each_keyword_names_the_failing_path() {
    let path = json!({"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"path": {"type": "string", "pattern": "^[a-z/]+$"}}}}}});
    assert_errors(&[
        (
            path.clone(),
            json!({"items": [{"path": "a"}, {"path": "b/c"}, {"path": "../../etc/passwd"}]}),
            "arguments.items[2].path must match ^[a-z/]+$",
        ),
        (json!({"not": {"type": "string"}}), json!("x"), "arguments must not match the schema in \"not\""),
        (
            json!({"uniqueItems": true}),
            json!([1, {"a": [2]}, 3, {"a": [2.0]}]),
            "arguments must have unique items (arguments[1] and arguments[3] are equal)",
        ),
        (
            json!({"contains": {"type": "integer"}}),
            json!(["a", 1.5]),
            "arguments must contain at least 1 item matching \"contains\" (got 0)",
        ),
        (
            json!({"contains": {"type": "integer"}, "minContains": 2}),
            json!([1, "a"]),
            "arguments must contain at least 2 items matching \"contains\" (got 1)",
        ),
        (
            json!({"contains": {"type": "integer"}, "maxContains": 1}),
            json!([1, 2]),
            "arguments must contain at most 1 items matching \"contains\" (got 2)",
        ),
        (
            json!({"dependentRequired": {"card": ["cvc"]}}),
            json!({"card": 1}),
            "arguments.cvc is missing (required with arguments.card)",
        ),
        (
            json!({"dependentSchemas": {"card": {"properties": {"cvc": {"maxLength": 3}}}}}),
            json!({"card": 1, "cvc": "1234"}),
            "arguments.cvc must be at most 3 characters long (got 4)",
        ),
        (
            json!({"if": {"properties": {"kind": {"const": "n"}}}, "then": {"properties": {"v": {"type": "number"}}},
                   "else": {"properties": {"v": {"type": "string"}}}}),
            json!({"kind": "n", "v": "1"}),
            "arguments.v must be a number (got string)",
        ),
        (
            json!({"if": {"properties": {"kind": {"const": "n"}}}, "then": {"properties": {"v": {"type": "number"}}},
                   "else": {"properties": {"v": {"type": "string"}}}}),
            json!({"kind": "s", "v": 1}),
            "arguments.v must be a string (got integer)",
        ),
        (
            json!({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": false}),
            json!({"x-a": 1, "x-b": "2"}),
            "arguments.x-b must be an integer (got string)",
        ),
        (
            json!({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": false}),
            json!({"x-a": 1, "y": 2}),
            "arguments.y is not allowed",
        ),
        (
            json!({"propertyNames": {"pattern": "^[a-z]+$"}}),
            json!({"ok": 1, "Bad": 2}),
            "arguments (property name \"Bad\") must match ^[a-z]+$",
        ),
        (json!({"multipleOf": 0.5}), json!(1.25), "arguments must be a multiple of 0.5 (got 1.25)"),
        (json!({"multipleOf": 3}), json!(10), "arguments must be a multiple of 3 (got 10)"),
        (
            json!({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}),
            json!(["a", 1, 2]),
            "arguments must have at most 2 items (got 3)",
        ),
        (
            json!({"prefixItems": [{"type": "string"}, {"type": "integer"}]}),
            json!(["a", "b"]),
            "arguments[1] must be an integer (got string)",
        ),
        (
            json!({"items": {"type": "integer"}, "prefixItems": [{"type": "string"}]}),
            json!(["a", 1, "c"]),
            "arguments[2] must be an integer (got string)",
        ),
        (
            json!({"$defs": {"name": {"type": "string", "minLength": 2}}, "properties": {"who": {"$ref": "#/$defs/name"}}}),
            json!({"who": "a"}),
            "arguments.who must be at least 2 characters long (got 1)",
        ),
        (json!({"const": {"a": [1]}}), json!({"a": [2]}), "arguments must be {\"a\":[1]} (got {\"a\":[2]})"),
        (json!(false), json!(1), "arguments is not allowed"),
        (json!({"properties": {"a": false}}), json!({"a": 1}), "arguments.a is not allowed"),
        (json!({"allOf": [{"minimum": 1}, {"maximum": 3}]}), json!(4), "arguments must be <= 3 (got 4)"),
        (json!({"allOf": [{"minimum": 1}, {"maximum": 3}]}), json!(0), "arguments must be >= 1 (got 0)"),
        (json!({"exclusiveMinimum": 1}), json!(1), "arguments must be > 1 (got 1)"),
        (json!({"minItems": 2}), json!([1]), "arguments must have at least 2 items (got 1)"),
        (json!({"maxItems": 1}), json!([1, 2]), "arguments must have at most 1 items (got 2)"),
        (json!({"minProperties": 1}), json!({}), "arguments must have at least 1 properties (got 0)"),
        (json!({"maxProperties": 0}), json!({"a": 1}), "arguments must have at most 0 properties (got 1)"),
        (json!({"minLength": 2}), json!("é"), "arguments must be at least 2 characters long (got 1)"),
        (
            json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]}),
            json!(1),
            "arguments must match exactly one schema of oneOf (got 2)",
        ),
        (
            json!({"anyOf": [{"type": "string"}, {"type": "null"}, {"minimum": 5}]}),
            json!(3),
            "arguments must match a schema of anyOf (none does: arguments must be a string (got integer); and 2 more)",
        ),
    ]);
}

#[test]
fn bounds_hold_at_the_limit_and_fail_past_it() {
    for (keyword, holds, fails) in [
        ("minimum", 2, 1),
        ("maximum", 2, 3),
        ("exclusiveMinimum", 3, 2),
        ("exclusiveMaximum", 1, 2),
    ] {
        let schema = json!({ keyword: 2 });
        assert_eq!(
            validate(&schema, &json!(holds), "a"),
            Ok(()),
            "{keyword} {holds}"
        );
        assert!(
            validate(&schema, &json!(fails), "a").is_err(),
            "{keyword} {fails}"
        );
    }
    for (keyword, holds, fails) in [("minLength", "ab", "a"), ("maxLength", "ab", "abc")] {
        let schema = json!({ keyword: 2 });
        assert_eq!(validate(&schema, &json!(holds), "a"), Ok(()), "{keyword}");
        assert!(validate(&schema, &json!(fails), "a").is_err(), "{keyword}");
    }
    for (keyword, holds, fails) in [
        ("minItems", json!([1, 2]), json!([1])),
        ("maxItems", json!([1, 2]), json!([1, 2, 3])),
        ("minProperties", json!({"a": 1, "b": 2}), json!({"a": 1})),
        (
            "maxProperties",
            json!({"a": 1, "b": 2}),
            json!({"a": 1, "b": 2, "c": 3}),
        ),
    ] {
        let schema = json!({ keyword: 2 });
        assert_eq!(validate(&schema, &holds, "a"), Ok(()), "{keyword}");
        assert!(validate(&schema, &fails, "a").is_err(), "{keyword}");
    }
    // Keywords for another type of value pass it.
    assert_eq!(
        validate(
            &json!({"minLength": 5, "minimum": 9, "pattern": "x"}),
            &json!([]),
            "a"
        ),
        Ok(())
    );
}

#[test]
fn numbers_compare_by_value() {
    assert_eq!(
        validate(&json!({"type": "integer"}), &json!(1.0), "a"),
        Ok(())
    );
    assert_eq!(
        validate(&json!({"enum": [1, "x"]}), &json!(1.0), "a"),
        Ok(())
    );
    assert_eq!(
        validate(&json!({"const": {"n": [2]}}), &json!({"n": [2.0]}), "a"),
        Ok(())
    );
    assert_eq!(
        validate(&json!({"multipleOf": 0.01}), &json!(0.07), "a"),
        Ok(())
    );
    assert_eq!(
        validate(&json!({"multipleOf": 0.0001}), &json!(0.0075), "a"),
        Ok(())
    );
    assert!(validate(&json!({"multipleOf": 0.0001}), &json!(0.00751), "a").is_err());
    assert!(validate(&json!({"enum": [false]}), &json!(0), "a").is_err());
    // Integers beyond 2^53 are compared exactly, not as the float they round to.
    assert!(validate(
        &json!({"enum": [9007199254740993_u64]}),
        &json!(9007199254740992_u64),
        "a"
    )
    .is_err());
    assert_eq!(
        validate(&json!({"multipleOf": 3}), &json!(9007199254740993_u64), "a"),
        Ok(())
    );
    assert!(validate(&json!({"multipleOf": 2}), &json!(9007199254740993_u64), "a").is_err());
    assert!(validate(&json!({"uniqueItems": true}), &json!([1, true]), "a").is_ok());
}

#[test]
fn references_resolve_inside_the_document() {
    let schema = json!({
        "$id": "https://example.com/tools/read.json",
        "$defs": {
            "path": {"$anchor": "path", "type": "string", "pattern": "^[a-z/]+$"},
            "a/b~c": {"type": "integer"},
            "nested": {"$id": "nested/lines.json", "$defs": {"n": {"type": "integer", "minimum": 0}}}
        },
        "type": "object",
        "properties": {
            "path": {"$ref": "#path"},
            "alias": {"$ref": "read.json#/$defs/path"},
            "escaped": {"$ref": "#/$defs/a~1b~0c"},
            "percent": {"$ref": "#/%24defs/a~1b~0c"},
            "lines": {"$ref": "nested/lines.json#/$defs/n"},
            "absolute": {"$ref": "https://example.com/tools/nested/lines.json#/$defs/n"},
            "tree": {"type": "array", "items": {"$ref": "#"}}
        }
    });
    let ok = json!({"path": "a/b", "alias": "c", "escaped": 1, "percent": 2, "lines": 3, "absolute": 4,
                    "tree": [{"path": "x", "tree": []}]});
    assert_eq!(validate(&schema, &ok, "arguments"), Ok(()));
    assert_errors(&[
        (
            schema.clone(),
            json!({"path": "A"}),
            "arguments.path must match ^[a-z/]+$",
        ),
        (
            schema.clone(),
            json!({"alias": 1}),
            "arguments.alias must be a string (got integer)",
        ),
        (
            schema.clone(),
            json!({"escaped": "1"}),
            "arguments.escaped must be an integer (got string)",
        ),
        (
            schema.clone(),
            json!({"percent": "1"}),
            "arguments.percent must be an integer (got string)",
        ),
        (
            schema.clone(),
            json!({"lines": -1}),
            "arguments.lines must be >= 0 (got -1)",
        ),
        (
            schema.clone(),
            json!({"absolute": -1}),
            "arguments.absolute must be >= 0 (got -1)",
        ),
        (
            schema,
            json!({"tree": [{"tree": [{"path": 7}]}]}),
            "arguments.tree[0].tree[0].path must be a string (got integer)",
        ),
    ]);
}

#[test]
fn what_the_validator_cannot_apply_is_refused_naming_the_keyword() {
    let cases = [
        (
            json!({"$ref": "https://example.com/other.json"}),
            "p.$ref \"https://example.com/other.json\" is not in this schema",
        ),
        (
            json!({"properties": {"a": {"$ref": "other.json#/x"}}}),
            "p.properties.a.$ref \"other.json#/x\" is not in this schema",
        ),
        (
            json!({"$ref": "#/$defs/missing"}),
            "p.$ref \"#/$defs/missing\" points to nothing in this schema",
        ),
        (
            json!({"$ref": "#nowhere"}),
            "p.$ref \"#nowhere\" points to nothing in this schema",
        ),
        (json!({"$ref": 5}), "p.$ref must be a string"),
        (
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
            "leads back to itself without reaching into the value",
        ),
        (
            json!({"$dynamicRef": "#node"}),
            "p.$dynamicRef is not supported",
        ),
        (
            json!({"unevaluatedProperties": false}),
            "p.unevaluatedProperties is not supported (use additionalProperties)",
        ),
        (
            json!({"prefixItems": [true], "unevaluatedItems": false}),
            "p.unevaluatedItems is not supported (use items)",
        ),
        (
            json!({"$schema": "http://json-schema.org/draft-04/schema#"}),
            "p.$schema \"http://json-schema.org/draft-04/schema#\" is not supported",
        ),
        (
            json!({"properties": {"a": {"$schema": "http://json-schema.org/draft-07/schema#"}}}),
            "p.properties.a.$schema differs from the root's $schema",
        ),
        (
            json!({"$id": "https://example.com/a.json#frag"}),
            "p.$id must not have a fragment",
        ),
        (
            json!({"$defs": {"a": {"$id": "#name"}}}),
            "p.$defs.a.$id must not have a fragment (name a subschema with $anchor)",
        ),
        (
            json!({"pattern": "(unclosed"}),
            "p.pattern is not a valid regular expression",
        ),
        (
            json!({"patternProperties": {"[z-a]": true}}),
            "p.patternProperties[\"[z-a]\"] is not a valid regular expression (range out of order in character class at index 1)",
        ),
        (json!({"pattern": 5}), "p.pattern must be a string"),
        (
            json!({"items": [{"type": "string"}]}),
            "p.items must be a schema (an array of schemas is draft-07's tuple: use prefixItems)",
        ),
        (
            json!({"minLength": -1}),
            "p.minLength must be a non-negative integer",
        ),
        (
            json!({"maxItems": 1.5}),
            "p.maxItems must be a non-negative integer",
        ),
        (
            json!({"minContains": "1"}),
            "p.minContains must be a non-negative integer",
        ),
        (json!({"maximum": "9"}), "p.maximum must be a number"),
        (
            json!({"multipleOf": 0}),
            "p.multipleOf must be greater than 0",
        ),
        (
            json!({"anyOf": []}),
            "p.anyOf must be a non-empty array of schemas",
        ),
        (
            json!({"allOf": {"type": "string"}}),
            "p.allOf must be a non-empty array of schemas",
        ),
        (
            json!({"properties": []}),
            "p.properties must be an object of schemas",
        ),
        (
            json!({"dependentRequired": {"a": "b"}}),
            "p.dependentRequired must be an array of strings",
        ),
        (
            json!({"dependentSchemas": []}),
            "p.dependentSchemas must be an object",
        ),
        (
            json!({"uniqueItems": "yes"}),
            "p.uniqueItems must be a boolean",
        ),
        (json!({"enum": "a"}), "p.enum must be an array"),
        (
            json!({"not": 5}),
            "p.not must be a JSON Schema, an object or a boolean (got integer)",
        ),
        (json!({"$anchor": 5}), "p.$anchor must be a string"),
    ];
    for (schema, message) in cases {
        let error = check_schema(&schema, "p").unwrap_err();
        assert!(error.message().contains(message), "{schema}: {error}");
    }
}

#[test]
fn format_and_unknown_keywords_are_annotations() {
    let schema = json!({"type": "string", "format": "email", "contentMediaType": "application/json", "x-unknown": {"minLength": 9}});
    assert_eq!(validate(&schema, &json!("not an email"), "a"), Ok(()));
    // A keyword's object that is not a schema is never taken for one.
    assert_eq!(
        validate(
            &json!({"enum": [{"$ref": "#/nowhere"}]}),
            &json!({"$ref": "#/nowhere"}),
            "a"
        ),
        Ok(())
    );
    assert_eq!(
        validate(
            &json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"}),
            &json!(2),
            "a"
        ),
        Ok(())
    );
}

#[test]
fn relative_references_resolve_as_rfc_3986_says() {
    // Each `$id` is relative to the one above it; each reference names the same place absolutely.
    let schema = json!({
        "$id": "https://example.com/a/b/root.json",
        "$defs": {
            "dots": {"$id": "../c/./x.json", "type": "integer"},
            "above_root": {"$id": "../../../../z.json", "type": "string"},
            "trailing": {"$id": "d/e/..", "type": "boolean"},
            "not_a_scheme": {"$id": "x_y:z.json", "type": "null"},
            "no_authority": {"$id": "file:/folder/root.json", "$defs": {"sub": {"$id": "sub/x.json", "type": "array"}}}
        },
        "properties": {
            "dots": {"$ref": "https://example.com/a/c/x.json"},
            "above_root": {"$ref": "https://example.com/z.json"},
            "trailing": {"$ref": "https://example.com/a/b/d/"},
            "not_a_scheme": {"$ref": "https://example.com/a/b/x_y:z.json"},
            "no_authority": {"$ref": "file:/folder/sub/x.json"}
        }
    });
    let ok = json!({"dots": 1, "above_root": "s", "trailing": true, "not_a_scheme": null, "no_authority": []});
    assert_eq!(validate(&schema, &ok, "a"), Ok(()));
    for key in [
        "dots",
        "above_root",
        "trailing",
        "not_a_scheme",
        "no_authority",
    ] {
        let mut bad = ok.clone();
        bad[key] = json!({});
        assert!(
            validate(&schema, &bad, "a")
                .unwrap_err()
                .message()
                .starts_with(&format!("a.{key} must be")),
            "{key}"
        );
    }
    // A reference into a value that is not a schema (here an `enum` item) resolves against the base of the
    // resource it was reached through.
    let into_enum = json!({
        "$id": "https://example.com/a/root.json",
        "$defs": {"lib": {"enum": [{"$ref": "b.json"}]}, "b": {"$id": "b.json", "type": "integer"}},
        "properties": {"x": {"$ref": "#/$defs/lib/enum/0"}}
    });
    assert_eq!(validate(&into_enum, &json!({"x": 1}), "a"), Ok(()));
    assert_eq!(
        validate(&into_enum, &json!({"x": "1"}), "a"),
        Err("a.x must be an integer (got string)".into())
    );
    assert_eq!(
        check_schema(&json!({"properties": {"x": {"$ref": "#/enum/0"}}, "enum": [{"$ref": "b.json"}]}), "p"),
        Err("p.enum[0].$ref \"b.json\" is not in this schema (remote references are not supported; use $defs)".into())
    );
    // Values of `enum` and `const` are not schemas: what looks like an `$id` in them names nothing.
    assert_eq!(
        check_schema(
            &json!({"enum": [{"$id": "a.json#frag"}], "const": {"$id": "b.json#frag"}}),
            "p"
        ),
        Ok(())
    );
}

#[test]
fn every_cycle_of_subschemas_on_the_same_value_is_refused() {
    for schema in [
        json!({"$defs": {"a": {"if": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"if": true, "then": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"if": false, "else": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}),
        json!({"dependentSchemas": {"x": {"$ref": "#"}}}),
        json!({"discriminator": {"propertyName": "k"}, "oneOf": [{"$ref": "#"}]}),
        json!({"not": {"anyOf": [{"oneOf": [{"$ref": "#"}]}]}}),
    ] {
        let error = check_schema(&schema, "p").unwrap_err();
        assert!(
            error.message().ends_with(
                "leads back to itself without reaching into the value (an endless loop)"
            ),
            "{schema}: {error}"
        );
    }
    // Through the value's items or properties it is recursion, not a cycle.
    assert_eq!(
        check_schema(
            &json!({"items": {"$ref": "#"}, "properties": {"a": {"$ref": "#"}}}),
            "p"
        ),
        Ok(())
    );
}

#[test]
fn register_errors_name_the_path_through_arrays() {
    assert_eq!(
        check_schema(
            &json!({"anyOf": [{"type": "string"}, {"items": {"minLength": -1}}]}),
            "p"
        ),
        Err("p.anyOf[1].items.minLength must be a non-negative integer".into())
    );
}

#[test]
fn a_discriminated_one_of_is_a_plain_one_of_for_a_value_that_is_not_an_object() {
    let schema = json!({"discriminator": {"propertyName": "kind"}, "oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}}},
        {"type": "array"}
    ]});
    assert_eq!(validate(&schema, &json!([]), "a"), Ok(()));
    assert!(validate(&schema, &json!(5), "a")
        .unwrap_err()
        .message()
        .starts_with("a must match a schema of oneOf"));
}

#[test]
fn draft_07_is_applied_as_draft_07_says() {
    let draft7 = |schema: serde_json::Value| {
        let mut schema = schema;
        schema["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        schema
    };
    let tuple = draft7(
        json!({"items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false}),
    );
    assert_eq!(validate(&tuple, &json!(["a", 1]), "a"), Ok(()));
    assert_eq!(
        validate(&tuple, &json!(["a", 1, 2]), "a"),
        Err("a must have at most 2 items (got 3)".into())
    );
    assert_eq!(
        validate(&tuple, &json!([1]), "a"),
        Err("a[0] must be a string (got integer)".into())
    );
    // `additionalItems` only applies after a tuple.
    assert_eq!(
        validate(
            &draft7(json!({"items": {"type": "string"}, "additionalItems": false})),
            &json!(["a", "b"]),
            "a"
        ),
        Ok(())
    );
    let dependencies = draft7(json!({"dependencies": {"a": ["b"], "c": {"required": ["d"]}}}));
    assert_eq!(
        validate(&dependencies, &json!({"a": 1, "b": 2, "c": 3, "d": 4}), "a"),
        Ok(())
    );
    assert_eq!(
        validate(&dependencies, &json!({"a": 1}), "a"),
        Err("a.b is missing (required with a.a)".into())
    );
    assert_eq!(
        validate(&dependencies, &json!({"c": 1}), "a"),
        Err("a.d is missing".into())
    );
    // `$ref` replaces its siblings in draft-07; in 2020-12 both apply.
    let with_sibling = json!({"definitions": {"s": {"type": "string"}}, "properties": {"x": {"$ref": "#/definitions/s", "maxLength": 1}}});
    assert_eq!(
        validate(&draft7(with_sibling.clone()), &json!({"x": "long"}), "a"),
        Ok(())
    );
    assert_eq!(
        validate(&with_sibling, &json!({"x": "long"}), "a"),
        Err("a.x must be at most 1 characters long (got 4)".into())
    );
    // Draft-07 names a subschema with a fragment `$id` (2020-12's `$anchor`).
    let anchored = draft7(
        json!({"definitions": {"n": {"$id": "#num", "type": "number"}}, "properties": {"x": {"$ref": "#num"}}}),
    );
    assert_eq!(validate(&anchored, &json!({"x": 1}), "a"), Ok(()));
    assert_eq!(
        validate(&anchored, &json!({"x": "1"}), "a"),
        Err("a.x must be a number (got string)".into())
    );
    // In 2020-12, `dependencies` and `additionalItems` are not keywords.
    assert_eq!(
        validate(
            &json!({"dependencies": {"a": ["b"]}}),
            &json!({"a": 1}),
            "a"
        ),
        Ok(())
    );
}

mod through_the_registry {
    use std::cell::Cell;
    use std::rc::Rc;

    use futures::executor::block_on;
    use serde_json::{json, Value};
    use tiny_pi::*;

    fn tool(name: &str, parameters: Value, ran: Rc<Cell<usize>>) -> Tool {
        Tool::new(
            ToolDefinition {
                name: name.into(),
                description: String::new(),
                parameters,
            },
            Rc::new(move |_: Value, _: ToolCallContext| {
                ran.set(ran.get() + 1);
                async {
                    Ok(ToolOutput {
                        content: vec![MediaBlock::text("ok")],
                        ..Default::default()
                    })
                }
            }),
        )
    }

    fn run(registry: &ToolRegistry, arguments: Value) -> ToolResultMessage {
        let call = ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: Some(arguments),
            extra: Default::default(),
        };
        let context = ExecutionContext {
            signal: AbortSignal::none(),
            progress: Rc::new(|_| {}),
            clock: Rc::new(|| 0.0),
            host: None,
        };
        block_on(registry.execute(&call, context))
    }

    fn text(result: &ToolResultMessage) -> String {
        serde_json::to_value(&result.content).unwrap()[0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn arguments_that_fail_the_pattern_never_reach_the_tool() {
        let ran = Rc::new(Cell::new(0));
        let mut registry = ToolRegistry::new();
        let schema = json!({"type": "object", "properties": {"path": {"type": "string", "pattern": "^[a-z/]+$"}}, "required": ["path"]});
        registry
            .register(tool("read", schema, ran.clone()))
            .unwrap();
        let refused = run(&registry, json!({"path": "../../etc/passwd"}));
        assert!(refused.is_error);
        assert_eq!(
            text(&refused),
            "Invalid arguments for tool \"read\": arguments.path must match ^[a-z/]+$"
        );
        assert_eq!(ran.get(), 0);
        let accepted = run(&registry, json!({"path": "etc/hosts"}));
        assert!(!accepted.is_error);
        assert_eq!(ran.get(), 1);
    }

    #[test]
    fn a_pattern_the_engine_refuses_is_a_register_error_naming_its_keyword() {
        let mut registry = ToolRegistry::new();
        registry
            .register(tool(
                "read",
                json!({"type": "object"}),
                Rc::new(Cell::new(0)),
            ))
            .unwrap();
        for (parameters, error) in [
            (
                json!({"properties": {"name": {"pattern": "^(?=a)"}}}),
                "tool.parameters.properties.name.pattern is not supported (a lookahead at index 1)",
            ),
            (
                json!({"patternProperties": {"(a)\\1": true}}),
                "tool.parameters.patternProperties[\"(a)\\\\1\"] is not supported (a backreference at index 3)",
            ),
            (
                json!({"items": {"pattern": "a{"}}),
                "tool.parameters.items.pattern is not a valid regular expression (incomplete quantifier at index 1)",
            ),
        ] {
            let refused = registry
                .register(tool("b", parameters, Rc::new(Cell::new(0))))
                .unwrap_err();
            assert!(refused.message().starts_with(error), "{refused}");
        }
        assert_eq!(registry.len(), 1, "the registry is unchanged");
    }
}
