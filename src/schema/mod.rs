//! JSON Schema (draft 2020-12) for tool arguments: a schema is checked and compiled once, when the tool is
//! registered, and every call's arguments are validated against the compiled form; the first failure is
//! named by its path (`arguments.items[2].path: does not match ^[a-z/]+$`), one clear reason for the model.
//!
//! Every assertion of the applicator and validation vocabularies is applied; `$ref` resolves inside the
//! document (`$defs`, JSON pointers, `$id`, `$anchor`); `format` and the content keywords are annotations
//! (the spec's default), and unknown keywords are ignored, as the spec says. A draft-07 `$schema` is read
//! as draft-07 (tuple `items`, `additionalItems`, `dependencies`, `$ref` replacing its siblings). Refused
//! at compile time, naming the keyword: remote references, `$dynamicRef`/`$recursiveRef`,
//! `unevaluatedProperties`/`unevaluatedItems` (they need every keyword to record what it evaluated, which
//! did not fit the wasm size budget), another `$schema`, and malformed keywords. OpenAPI's
//! `discriminator` picks the `oneOf` variant by its tag (so an error names the field inside it).
//!
//! `pattern` is ECMA-262, as JSON Schema specifies, matched in linear time in every target (`pattern.rs`:
//! ECMA-262's meaning written out for `regex-lite`; what no linear-time engine runs is refused at compile
//! time, naming the keyword).

mod compile;
mod pattern;
mod validate;

use crate::invalid::Invalid;
use serde_json::Value;

pub use pattern::{Pattern, PatternError, SIZE_LIMIT as PATTERN_SIZE_LIMIT};

/// A compiled schema: what `register` keeps with the tool.
pub struct Schema {
    nodes: Vec<Node>,
    entry: Id,
}

/// One schema object (or boolean schema), as the checks its keywords make.
type Node = Vec<Check>;

/// Index of a node in `Schema::nodes`.
type Id = usize;

/// A bound on a number, or on the length of a string, an array or an object.
#[derive(Clone, Copy, PartialEq)]
enum Limit {
    Minimum,
    Maximum,
    ExclusiveMinimum,
    ExclusiveMaximum,
    MinLength,
    MaxLength,
    MinItems,
    MaxItems,
    MinProperties,
    MaxProperties,
}

/// One keyword's check, in the order the node makes them (the first failure is the one reported).
enum Check {
    /// The `false` schema.
    Never,
    Ref(Id),
    /// The type names, as `type_name` names a value's type.
    Type(Vec<&'static str>),
    /// The `enum` array, kept whole for the message.
    Enum(Value),
    Const(Value),
    Limit(Limit, f64),
    MultipleOf(f64),
    Pattern(Pattern, String),
    /// `prefixItems` and `items` (the schema for the items after the prefix).
    Items(Vec<Id>, Option<Id>),
    UniqueItems,
    /// `contains` with `minContains` (default 1) and `maxContains`.
    Contains(Id, u64, Option<u64>),
    Required(Vec<String>),
    /// `properties`, `patternProperties` and `additionalProperties`, which depend on each other.
    Properties(Properties),
    PropertyNames(Id),
    DependentRequired(Vec<(String, Vec<String>)>),
    DependentSchemas(Vec<(String, Id)>),
    AllOf(Vec<Id>),
    AnyOf(Vec<Id>),
    OneOf(Vec<Id>),
    /// `oneOf` with a `discriminator`: the tag property's value picks the variant.
    Tagged(Tagged),
    Not(Id),
    /// `if`, `then`, `else`.
    If(Id, Option<Id>, Option<Id>),
}

struct Properties {
    named: Vec<(String, Id)>,
    patterns: Vec<(Pattern, Id)>,
    additional: Option<Id>,
}

struct Tagged {
    tag: String,
    variants: Vec<(String, Id)>,
    /// The plain `oneOf`, for a value that is not an object.
    one_of: Vec<Id>,
}

impl Schema {
    /// Checks and compiles `schema`; the error names the bad keyword under `path` (`tool.parameters`).
    pub fn compile(schema: &Value, path: &str) -> Result<Schema, Invalid> {
        Ok(compile::compile(schema, schema, path)?)
    }

    /// Compiles the schema at JSON pointer `pointer` of `document` (`/$defs/message`), against which its
    /// references resolve.
    pub fn compile_at(document: &Value, pointer: &str, path: &str) -> Result<Schema, Invalid> {
        let entry = compile::pointer(document, pointer)
            .ok_or_else(|| format!("{path}: no schema at {pointer}"))?;
        Ok(compile::compile(document, entry, path)?)
    }

    /// Validates `value`; the error names the first failing path, with `path` as the root (`arguments`).
    pub fn validate(&self, value: &Value, path: &str) -> Result<(), Invalid> {
        Ok(validate::validate(self, value, path)?)
    }
}

/// Compiles `schema` and validates `value` against it.
pub fn validate(schema: &Value, value: &Value, path: &str) -> Result<(), Invalid> {
    Schema::compile(schema, "schema")?.validate(value, path)
}

/// Checks that a tool's `parameters` is a schema this validator can apply, naming the bad part.
pub fn check_schema(schema: &Value, path: &str) -> Result<(), Invalid> {
    Schema::compile(schema, path).map(drop)
}

/// The JSON type of a value, in schema words.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(n: &serde_json::Number) -> bool {
    n.as_f64().is_some_and(|x| x.fract() == 0.0)
}
