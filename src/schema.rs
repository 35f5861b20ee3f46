//! The JSON Schema subset tool parameters use: `type`, `properties`, `required`, `enum`, `const`, `items`,
//! `additionalProperties`, numeric and string/array bounds, and `anyOf`/`oneOf`/`allOf` (what TypeBox emits).
//! Hand-written because a full validator crate (and its regex engine) would outweigh the whole wasm module;
//! other keywords are ignored, as JSON Schema prescribes for unknown ones.

use std::fmt;

use serde_json::{Map, Value};

const TYPES: [&str; 7] = [
    "null", "boolean", "integer", "number", "string", "array", "object",
];

/// Checks `value` against `schema`; the error names the failing path (`arguments.items[2].id: ...`).
pub fn validate(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    check(schema, schema, value, &Path::Root(path))
}

/// `validate` of `schema` found inside the document `root`, against which `$ref: "#/$defs/name"` resolves.
pub fn validate_in(root: &Value, schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    check(root, schema, value, &Path::Root(path))
}

/// Where a value sits in the document, written out only when an error names it: formatting the path of
/// every property and item checked would cost more than checking them.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root(name) => f.write_str(name),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// The keywords of one schema object this validator applies, found in one pass over its keys: probing
/// the map once for each of twenty keywords, most of them absent, cost more than the checks themselves.
#[derive(Default)]
struct Keywords<'a> {
    reference: Option<&'a Value>,
    kind: Option<&'a Value>,
    discriminator: Option<&'a Value>,
    enumeration: Option<&'a Value>,
    constant: Option<&'a Value>,
    required: Option<&'a Value>,
    properties: Option<&'a Value>,
    additional_properties: Option<&'a Value>,
    items: Option<&'a Value>,
    min_properties: Option<&'a Value>,
    max_properties: Option<&'a Value>,
    min_items: Option<&'a Value>,
    max_items: Option<&'a Value>,
    min_length: Option<&'a Value>,
    max_length: Option<&'a Value>,
    minimum: Option<&'a Value>,
    maximum: Option<&'a Value>,
    exclusive_minimum: Option<&'a Value>,
    exclusive_maximum: Option<&'a Value>,
    all_of: Option<&'a Value>,
    any_of: Option<&'a Value>,
    one_of: Option<&'a Value>,
}

impl<'a> Keywords<'a> {
    fn of(schema: &'a Map<String, Value>) -> Self {
        let mut k = Keywords::default();
        for (key, value) in schema {
            let slot = match key.as_str() {
                "$ref" => &mut k.reference,
                "type" => &mut k.kind,
                "discriminator" => &mut k.discriminator,
                "enum" => &mut k.enumeration,
                "const" => &mut k.constant,
                "required" => &mut k.required,
                "properties" => &mut k.properties,
                "additionalProperties" => &mut k.additional_properties,
                "items" => &mut k.items,
                "minProperties" => &mut k.min_properties,
                "maxProperties" => &mut k.max_properties,
                "minItems" => &mut k.min_items,
                "maxItems" => &mut k.max_items,
                "minLength" => &mut k.min_length,
                "maxLength" => &mut k.max_length,
                "minimum" => &mut k.minimum,
                "maximum" => &mut k.maximum,
                "exclusiveMinimum" => &mut k.exclusive_minimum,
                "exclusiveMaximum" => &mut k.exclusive_maximum,
                "allOf" => &mut k.all_of,
                "anyOf" => &mut k.any_of,
                "oneOf" => &mut k.one_of,
                _ => continue,
            };
            *slot = Some(value);
        }
        k
    }
}

fn check(root: &Value, schema: &Value, value: &Value, path: &Path<'_>) -> Result<(), String> {
    let schema = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{path}: no value is allowed here")),
        Value::Object(schema) => Keywords::of(schema),
        _ => return Ok(()),
    };
    if let Some(target) = schema
        .reference
        .and_then(Value::as_str)
        .and_then(|r| resolve(root, r))
    {
        check(root, target, value, path)?;
    }
    if let Some(expected) = schema.kind {
        check_type(expected, value, path)?;
    }
    if let Some(Value::Array(options)) = schema.enumeration {
        if !options.contains(value) {
            return Err(format!(
                "{path}: must be one of {}, got {}",
                Value::Array(options.clone()),
                value
            ));
        }
    }
    if let Some(constant) = schema.constant {
        if constant != value {
            return Err(format!("{path}: must be {constant}, got {value}"));
        }
    }
    match value {
        Value::Object(object) => validate_object(root, &schema, object, path)?,
        Value::Array(items) => validate_array(root, &schema, items, path)?,
        // Counting characters walks the whole string; only a length bound needs it.
        Value::String(s) if schema.min_length.is_some() || schema.max_length.is_some() => {
            let len = s.chars().count() as f64;
            bound(
                schema.min_length,
                |min| len >= min,
                |min| format!("{path}: must be at least {min} characters long"),
            )?;
            bound(
                schema.max_length,
                |max| len <= max,
                |max| format!("{path}: must be at most {max} characters long"),
            )?;
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            bound(
                schema.minimum,
                |m| x >= m,
                |m| format!("{path}: must be >= {m}, got {n}"),
            )?;
            bound(
                schema.maximum,
                |m| x <= m,
                |m| format!("{path}: must be <= {m}, got {n}"),
            )?;
            bound(
                schema.exclusive_minimum,
                |m| x > m,
                |m| format!("{path}: must be > {m}, got {n}"),
            )?;
            bound(
                schema.exclusive_maximum,
                |m| x < m,
                |m| format!("{path}: must be < {m}, got {n}"),
            )?;
        }
        _ => {}
    }
    if let Some(Value::Array(all)) = schema.all_of {
        for s in all {
            check(root, s, value, path)?;
        }
    }
    // Each branch is validated once: re-validating to explain a failure doubles the work per nesting level.
    if let Some(Value::Array(any)) = schema.any_of {
        let (matching, failures) = branches(root, any, value, path);
        if matching == 0 {
            return Err(none_matched(failures, path, "anyOf"));
        }
    }
    let tag = schema
        .discriminator
        .and_then(|d| d.get("propertyName"))
        .and_then(Value::as_str);
    if let (Some(tag), Some(Value::Array(variants)), Value::Object(object)) =
        (tag, schema.one_of, value)
    {
        // In place of the generic oneOf below, not instead of the rest of this schema: its `required`,
        // `properties` and `additionalProperties` were checked above like any other keyword.
        check_tagged(root, tag, variants, object, value, path)?;
    } else if let Some(Value::Array(one)) = schema.one_of {
        let (matching, failures) = branches(root, one, value, path);
        if matching == 0 {
            return Err(none_matched(failures, path, "oneOf"));
        }
        if matching > 1 {
            return Err(format!(
                "{path}: matches {matching} schemas of oneOf, expected exactly one"
            ));
        }
    }
    Ok(())
}

fn validate_object(
    root: &Value,
    schema: &Keywords<'_>,
    object: &Map<String, Value>,
    path: &Path<'_>,
) -> Result<(), String> {
    if let Some(Value::Array(required)) = schema.required {
        for key in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(key) {
                return Err(format!("{path}: missing required property \"{key}\""));
            }
        }
    }
    let properties = schema.properties.and_then(Value::as_object);
    for (key, item) in object {
        let item_path = Path::Key(path, key);
        match properties.and_then(|p| p.get(key)) {
            Some(property) => check(root, property, item, &item_path)?,
            None => match schema.additional_properties {
                Some(Value::Bool(false)) => {
                    return Err(format!("{path}: unexpected property \"{key}\""))
                }
                Some(extra @ Value::Object(_)) => check(root, extra, item, &item_path)?,
                _ => {}
            },
        }
    }
    let count = object.len() as f64;
    bound(
        schema.min_properties,
        |m| count >= m,
        |m| format!("{path}: must have at least {m} properties"),
    )?;
    bound(
        schema.max_properties,
        |m| count <= m,
        |m| format!("{path}: must have at most {m} properties"),
    )
}

fn validate_array(
    root: &Value,
    schema: &Keywords<'_>,
    items: &[Value],
    path: &Path<'_>,
) -> Result<(), String> {
    if let Some(item_schema) = schema.items {
        for (i, item) in items.iter().enumerate() {
            check(root, item_schema, item, &Path::Index(path, i))?;
        }
    }
    let count = items.len() as f64;
    bound(
        schema.min_items,
        |m| count >= m,
        |m| format!("{path}: must have at least {m} items"),
    )?;
    bound(
        schema.max_items,
        |m| count <= m,
        |m| format!("{path}: must have at most {m} items"),
    )
}

fn bound(
    limit: Option<&Value>,
    holds: impl Fn(f64) -> bool,
    message: impl Fn(f64) -> String,
) -> Result<(), String> {
    match limit.and_then(Value::as_f64) {
        Some(limit) if !holds(limit) => Err(message(limit)),
        _ => Ok(()),
    }
}

/// `#/$defs/name` (or `#/definitions/name`) inside `root`; other references are not followed.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    root.get("$defs")
        .or_else(|| root.get("definitions"))?
        .get(name)
}

/// `oneOf` with a `discriminator` (OpenAPI's keyword): the tag picks the one variant to check, so an error
/// names the field inside it instead of listing why every variant failed.
fn check_tagged(
    root: &Value,
    tag: &str,
    variants: &[Value],
    object: &Map<String, Value>,
    value: &Value,
    path: &Path<'_>,
) -> Result<(), String> {
    let tag_of = |v: &Value| {
        let v = v
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve(root, r))
            .unwrap_or(v);
        v.get("properties")?
            .get(tag)?
            .get("const")?
            .as_str()
            .map(str::to_owned)
    };
    let given = match object.get(tag) {
        None => return Err(format!("{path}: missing required property \"{tag}\"")),
        Some(Value::String(given)) => given,
        Some(other) => {
            return Err(format!(
                "{path}.{tag}: expected string, got {}",
                type_name(other)
            ))
        }
    };
    match variants
        .iter()
        .find(|v| tag_of(v).as_deref() == Some(given.as_str()))
    {
        Some(variant) => check(root, variant, value, path),
        None => {
            let expected: Vec<String> = variants.iter().filter_map(tag_of).collect();
            Err(format!(
                "{path}.{tag}: unknown {tag} \"{given}\", expected one of {}",
                expected.join(", ")
            ))
        }
    }
}

/// How many of `schemas` accept `value`, and why the others do not.
fn branches(
    root: &Value,
    schemas: &[Value],
    value: &Value,
    path: &Path<'_>,
) -> (usize, Vec<String>) {
    let mut matching = 0;
    let mut failures = Vec::new();
    for schema in schemas {
        match check(root, schema, value, path) {
            Ok(()) => matching += 1,
            Err(failure) => failures.push(failure),
        }
    }
    (matching, failures)
}

/// The reasons of the first few branches, kept short: a nested schema must not grow the message without end.
fn none_matched(failures: Vec<String>, path: &Path<'_>, keyword: &str) -> String {
    let mut reasons: Vec<String> = failures
        .iter()
        .take(3)
        .map(|f| f.chars().take(300).collect())
        .collect();
    if failures.len() > 3 {
        reasons.push(format!("and {} more", failures.len() - 3));
    }
    format!("{path}: matches none of {keyword} ({})", reasons.join("; "))
}

fn check_type(expected: &Value, value: &Value, path: &Path<'_>) -> Result<(), String> {
    let matches = |name: &str| type_matches(name, value);
    let ok = match expected {
        Value::String(name) => matches(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(matches),
        _ => true,
    };
    if ok {
        return Ok(());
    }
    let wanted = match expected {
        Value::String(name) => name.clone(),
        other => other
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
    };
    Err(format!(
        "{path}: expected {wanted}, got {}",
        type_name(value)
    ))
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|x| x.fract() == 0.0),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// The JSON type of a value, in schema words.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.as_f64().is_some_and(|x| x.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks that a tool's `parameters` is a schema this validator can apply, naming the bad part.
pub fn check_schema(schema: &Value, path: &str) -> Result<(), String> {
    let object = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(object) => object,
        other => {
            return Err(format!(
                "{path} must be a JSON Schema object, got {}",
                type_name(other)
            ))
        }
    };
    match object.get("type") {
        None => {}
        Some(Value::String(name)) if TYPES.contains(&name.as_str()) => {}
        Some(Value::Array(names))
            if names
                .iter()
                .all(|n| n.as_str().is_some_and(|n| TYPES.contains(&n))) => {}
        Some(other) => {
            return Err(format!(
                "{path}.type: unknown type {other} (expected one of {})",
                TYPES.join(", ")
            ))
        }
    }
    if let Some(properties) = object.get("properties") {
        let Some(properties) = properties.as_object() else {
            return Err(format!("{path}.properties must be an object"));
        };
        for (key, property) in properties {
            check_schema(property, &format!("{path}.properties.{key}"))?;
        }
    }
    if let Some(required) = object.get("required") {
        if !required
            .as_array()
            .is_some_and(|r| r.iter().all(Value::is_string))
        {
            return Err(format!("{path}.required must be an array of strings"));
        }
    }
    if let Some(options) = object.get("enum") {
        if !options.is_array() {
            return Err(format!("{path}.enum must be an array"));
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = object.get(key) {
            check_schema(sub, &format!("{path}.{key}"))?;
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(list) = object.get(key) {
            let Some(list) = list.as_array() else {
                return Err(format!("{path}.{key} must be an array of schemas"));
            };
            for (i, sub) in list.iter().enumerate() {
                check_schema(sub, &format!("{path}.{key}[{i}]"))?;
            }
        }
    }
    for key in [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
    ] {
        if object.get(key).is_some_and(|v| !v.is_number()) {
            return Err(format!("{path}.{key} must be a number"));
        }
    }
    Ok(())
}
