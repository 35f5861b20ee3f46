//! From a schema document to `Schema`'s nodes, once, at `register`: every keyword is checked (a malformed
//! one is an error naming it), every `$ref` is resolved to the node it reaches, and every pattern is
//! compiled. Two passes: a walk of the document finds each subschema's base URI and the `$id`s and
//! `$anchor`s that references can reach; then the nodes are compiled from the entry, one location at a
//! time, each reference adding its target to the queue (so recursive schemas compile to a cycle of ids).

use fluent_uri::{Iri, IriRef};
use serde_json::{Map, Value};

use super::{
    type_name, Bound, Check, Count, Id, Kind, Node, PatternEngine, Properties, Schema, Tagged,
};

/// The base URI of a document without `$id`: RFC 3986 needs one to resolve relative references against.
const DEFAULT_BASE: &str = "tiny-pi:/parameters.json";
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
const DRAFT_07: &str = "http://json-schema.org/draft-07/schema";

/// The keywords whose value is a schema, an object of schemas, or an array of schemas.
const SCHEMA: [&str; 11] = [
    "additionalItems",
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];
const SCHEMA_MAPS: [&str; 6] = [
    "$defs",
    "definitions",
    "dependencies",
    "dependentSchemas",
    "patternProperties",
    "properties",
];
const SCHEMA_LISTS: [&str; 5] = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];

const TYPES: [(&str, Kind); 7] = [
    ("null", Kind::Null),
    ("boolean", Kind::Boolean),
    ("integer", Kind::Integer),
    ("number", Kind::Number),
    ("string", Kind::String),
    ("array", Kind::Array),
    ("object", Kind::Object),
];

struct Compiler<'a> {
    document: &'a Value,
    patterns: &'a dyn PatternEngine,
    /// How errors name the document's root (`tool.parameters`).
    name: &'a str,
    /// `$schema` is draft-07: `items` may be an array, `dependencies` and `additionalItems` apply, and
    /// `$ref` replaces its siblings.
    draft7: bool,
    /// Each schema object the walk found (a JSON pointer), with the base URI in effect there.
    bases: Vec<(String, String)>,
    /// What a reference can name: each `$id` (absolute, no fragment) and `$anchor` (`uri#name`), with
    /// its location.
    targets: Vec<(String, String)>,
    /// The location of each node, by id; nodes past `nodes.len()` are queued.
    locations: Vec<String>,
    nodes: Vec<Node>,
}

pub(super) fn compile(
    document: &Value,
    entry: &str,
    patterns: &dyn PatternEngine,
    name: &str,
) -> Result<Schema, String> {
    let mut c = Compiler {
        document,
        patterns,
        name,
        draft7: false,
        bases: Vec::new(),
        targets: vec![(DEFAULT_BASE.into(), String::new())],
        locations: Vec::new(),
        nodes: Vec::new(),
    };
    if let Some(dialect) = document.get("$schema") {
        c.draft7 = c.dialect(dialect, "")?;
    }
    c.walk(document, String::new(), DEFAULT_BASE.into())?;
    let entry = c.node(entry)?;
    while c.nodes.len() < c.locations.len() {
        let node = c.compile_node(c.nodes.len())?;
        c.nodes.push(node);
    }
    c.check_cycles()?;
    Ok(Schema {
        nodes: c.nodes,
        entry,
    })
}

impl Compiler<'_> {
    /// `tool.parameters.properties.path` for the pointer `/properties/path`.
    fn path(&self, pointer: &str) -> String {
        let mut path = self.name.to_string();
        let mut list = false;
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            match list && token.bytes().all(|b| b.is_ascii_digit()) {
                true => path += &format!("[{token}]"),
                false => path += &format!(".{token}"),
            }
            list = SCHEMA_LISTS.contains(&token.as_str());
        }
        path
    }

    /// `<path>.<keyword> <problem>`: a malformed keyword.
    fn bad(&self, pointer: &str, keyword: &str, problem: &str) -> String {
        format!("{}.{keyword} {problem}", self.path(pointer))
    }

    /// Whether `$schema` names draft-07 (else 2020-12); any other dialect is refused.
    fn dialect(&self, dialect: &Value, pointer: &str) -> Result<bool, String> {
        let uri = dialect.as_str().unwrap_or_default();
        let uri = uri.strip_suffix('#').unwrap_or(uri);
        match uri {
            DRAFT_2020_12 => Ok(false),
            DRAFT_07 => Ok(true),
            _ => Err(self.bad(
                pointer,
                "$schema",
                &format!(
                    "{dialect} is not supported (supported: {DRAFT_2020_12}, {DRAFT_07}, or no $schema)"
                ),
            )),
        }
    }

    /// Finds the base URI of every schema object and what references can name.
    fn walk(&mut self, value: &Value, pointer: String, base: String) -> Result<(), String> {
        let Value::Object(map) = value else {
            return Ok(());
        };
        if let Some(dialect) = map.get("$schema") {
            if self.dialect(dialect, &pointer)? != self.draft7 {
                return Err(self.bad(&pointer, "$schema", "differs from the root's $schema"));
            }
        }
        let mut base = base;
        if self.draft7 && map.contains_key("$ref") {
            // Draft-07: `$ref` replaces its siblings, `$id` included.
            self.bases.push((pointer, base));
            return Ok(());
        }
        if let Some(id) = map.get("$id") {
            let id = id
                .as_str()
                .ok_or_else(|| self.bad(&pointer, "$id", "must be a string"))?;
            let (uri, fragment) = resolve(&base, id).map_err(|e| self.bad(&pointer, "$id", &e))?;
            match fragment.as_deref() {
                None | Some("") => {
                    base = uri;
                    self.targets.push((base.clone(), pointer.clone()));
                }
                // Draft-07's `"$id": "#name"` is an anchor.
                Some(name) if self.draft7 && id.starts_with('#') => self
                    .targets
                    .push((format!("{base}#{name}"), pointer.clone())),
                Some(_) => {
                    return Err(self.bad(
                        &pointer,
                        "$id",
                        "must not have a fragment (name a subschema with $anchor)",
                    ))
                }
            }
        }
        for keyword in ["$anchor", "$dynamicAnchor"] {
            if let Some(anchor) = map.get(keyword) {
                let anchor = anchor
                    .as_str()
                    .ok_or_else(|| self.bad(&pointer, keyword, "must be a string"))?;
                self.targets
                    .push((format!("{base}#{anchor}"), pointer.clone()));
            }
        }
        for (key, sub) in map {
            let here = format!("{pointer}/{}", escape(key));
            let key = key.as_str();
            if SCHEMA.contains(&key) {
                self.walk(sub, here.clone(), base.clone())?;
            }
            if let (true, Value::Object(subs)) = (SCHEMA_MAPS.contains(&key), sub) {
                for (name, sub) in subs {
                    self.walk(sub, format!("{here}/{}", escape(name)), base.clone())?;
                }
            }
            if let (true, Value::Array(subs)) = (SCHEMA_LISTS.contains(&key), sub) {
                for (i, sub) in subs.iter().enumerate() {
                    self.walk(sub, format!("{here}/{i}"), base.clone())?;
                }
            }
        }
        self.bases.push((pointer, base));
        Ok(())
    }

    /// The base URI in effect at `pointer`: the nearest schema object's at or above it.
    fn base(&self, pointer: &str) -> &str {
        let mut at = pointer;
        loop {
            if let Some((_, base)) = self.bases.iter().find(|(p, _)| p == at) {
                return base;
            }
            match at.rfind('/') {
                Some(end) => at = &at[..end],
                None => return DEFAULT_BASE,
            }
        }
    }

    /// The node for the schema at `pointer`, queued for compiling if new.
    fn node(&mut self, pointer: &str) -> Result<Id, String> {
        if let Some(id) = self.locations.iter().position(|p| p == pointer) {
            return Ok(id);
        }
        self.locations.push(pointer.to_string());
        Ok(self.locations.len() - 1)
    }

    /// The node for the subschema at `<pointer>/<keyword>`.
    fn sub(&mut self, pointer: &str, keyword: &str) -> Result<Id, String> {
        self.node(&format!("{pointer}/{}", escape(keyword)))
    }

    /// The nodes for an array of subschemas (`allOf`, `prefixItems`).
    fn subs(&mut self, pointer: &str, keyword: &str, list: &Value) -> Result<Vec<Id>, String> {
        match list.as_array() {
            Some(list) if !list.is_empty() => (0..list.len())
                .map(|i| self.node(&format!("{pointer}/{keyword}/{i}")))
                .collect(),
            _ => Err(self.bad(pointer, keyword, "must be a non-empty array of schemas")),
        }
    }

    /// The nodes for an object of subschemas (`properties`), by name.
    fn named_subs(
        &mut self,
        pointer: &str,
        keyword: &str,
        map: &Value,
    ) -> Result<Vec<(String, Id)>, String> {
        let map = map
            .as_object()
            .ok_or_else(|| self.bad(pointer, keyword, "must be an object of schemas"))?;
        map.keys()
            .map(|name| {
                let at = format!("{pointer}/{}/{}", escape(keyword), escape(name));
                Ok((name.clone(), self.node(&at)?))
            })
            .collect()
    }

    /// The node a `$ref` reaches, or why it reaches none.
    fn reference(&mut self, pointer: &str, reference: &Value) -> Result<Id, String> {
        let reference = reference
            .as_str()
            .ok_or_else(|| self.bad(pointer, "$ref", "must be a string"))?;
        let problem = |what: &str| self.bad(pointer, "$ref", &format!("\"{reference}\" {what}"));
        let (resource, fragment) =
            resolve(self.base(pointer), reference).map_err(|e| problem(&e))?;
        let fragment = fragment.unwrap_or_default();
        let by_pointer = fragment.is_empty() || fragment.starts_with('/');
        let name = match by_pointer {
            true => resource.clone(),
            false => format!("{resource}#{fragment}"),
        };
        if !self
            .targets
            .iter()
            .any(|(uri, _)| uri.split('#').next() == Some(&resource))
        {
            return Err(problem(
                "is not in this schema (remote references are not supported; use $defs)",
            ));
        }
        let target = match self.targets.iter().find(|(uri, _)| *uri == name) {
            Some((_, at)) if by_pointer => at.clone() + &fragment,
            Some((_, at)) => at.clone(),
            None => return Err(problem("names no $anchor in this schema")),
        };
        match self.document.pointer(&target) {
            Some(_) => self.node(&target),
            None => Err(problem("points to nothing in this schema")),
        }
    }

    fn compile_node(&mut self, id: Id) -> Result<Node, String> {
        let pointer = self.locations[id].clone();
        let document = self.document;
        let schema = match document.pointer(&pointer) {
            Some(Value::Bool(true)) => return Ok(node(Vec::new())),
            Some(Value::Bool(false)) => return Ok(node(vec![Check::Never])),
            Some(Value::Object(schema)) => schema,
            other => {
                return Err(format!(
                    "{} must be a JSON Schema object, got {}",
                    self.path(&pointer),
                    other.map_or("nothing", type_name)
                ))
            }
        };
        for keyword in ["$dynamicRef", "$recursiveRef"] {
            if schema.contains_key(keyword) {
                return Err(self.bad(&pointer, keyword, "is not supported (use $ref)"));
            }
        }
        let mut checks = Vec::new();
        if let Some(reference) = schema.get("$ref") {
            checks.push(Check::Ref(self.reference(&pointer, reference)?));
            if self.draft7 {
                return Ok(node(checks));
            }
        }
        let p = pointer.as_str();
        self.generic(p, schema, &mut checks)?;
        self.numeric(p, schema, &mut checks)?;
        self.string(p, schema, &mut checks)?;
        self.array(p, schema, &mut checks)?;
        self.object(p, schema, &mut checks)?;
        self.in_place(p, schema, &mut checks)?;
        // Last: they see what every other keyword of this schema evaluated.
        let mut collects = false;
        for (keyword, make) in [
            (
                "unevaluatedItems",
                Check::UnevaluatedItems as fn(Id) -> Check,
            ),
            ("unevaluatedProperties", Check::UnevaluatedProperties),
        ] {
            if schema.contains_key(keyword) {
                checks.push(make(self.sub(p, keyword)?));
                collects = true;
            }
        }
        Ok(Node { checks, collects })
    }

    fn generic(
        &mut self,
        p: &str,
        schema: &Map<String, Value>,
        checks: &mut Vec<Check>,
    ) -> Result<(), String> {
        if let Some(kind) = schema.get("type") {
            let one = |name: &Value| {
                TYPES
                    .iter()
                    .find(|(n, _)| Some(*n) == name.as_str())
                    .map(|(_, kind)| *kind)
            };
            let kinds: Option<Vec<Kind>> = match kind {
                Value::Array(names) => names.iter().map(one).collect(),
                name => one(name).map(|k| vec![k]),
            };
            let kinds = kinds.ok_or_else(|| {
                let names: Vec<&str> = TYPES.iter().map(|(n, _)| *n).collect();
                format!(
                    "{}.type: unknown type {kind} (expected one of {})",
                    self.path(p),
                    names.join(", ")
                )
            })?;
            checks.push(Check::Type(kinds));
        }
        if let Some(options) = schema.get("enum") {
            if !options.is_array() {
                return Err(self.bad(p, "enum", "must be an array"));
            }
            checks.push(Check::Enum(options.clone()));
        }
        if let Some(constant) = schema.get("const") {
            checks.push(Check::Const(constant.clone()));
        }
        Ok(())
    }

    fn numeric(
        &mut self,
        p: &str,
        schema: &Map<String, Value>,
        checks: &mut Vec<Check>,
    ) -> Result<(), String> {
        for (keyword, bound) in [
            ("minimum", Bound::Min),
            ("maximum", Bound::Max),
            ("exclusiveMinimum", Bound::ExclusiveMin),
            ("exclusiveMaximum", Bound::ExclusiveMax),
        ] {
            if let Some(limit) = schema.get(keyword) {
                let limit = limit
                    .as_f64()
                    .ok_or_else(|| self.bad(p, keyword, "must be a number"))?;
                checks.push(Check::Bound(bound, limit));
            }
        }
        if let Some(divisor) = schema.get("multipleOf") {
            match divisor.as_f64() {
                Some(divisor) if divisor > 0.0 => checks.push(Check::MultipleOf(divisor)),
                _ => return Err(self.bad(p, "multipleOf", "must be a number greater than 0")),
            }
        }
        Ok(())
    }

    fn string(
        &mut self,
        p: &str,
        schema: &Map<String, Value>,
        checks: &mut Vec<Check>,
    ) -> Result<(), String> {
        self.counts(
            p,
            schema,
            checks,
            [
                ("minLength", Count::MinLength),
                ("maxLength", Count::MaxLength),
            ],
        )?;
        if let Some(pattern) = schema.get("pattern") {
            let source = pattern
                .as_str()
                .ok_or_else(|| self.bad(p, "pattern", "must be a string"))?;
            checks.push(Check::Pattern(
                self.pattern(p, "pattern", source)?,
                source.into(),
            ));
        }
        Ok(())
    }

    fn array(
        &mut self,
        p: &str,
        schema: &Map<String, Value>,
        checks: &mut Vec<Check>,
    ) -> Result<(), String> {
        // Draft-07 wrote a tuple as an `items` array, and the schema for the rest as `additionalItems`.
        let (prefix, rest) =
            match (self.draft7, schema.get("items")) {
                (true, Some(Value::Array(_))) => ("items", "additionalItems"),
                (false, Some(Value::Array(_))) => return Err(self.bad(
                    p,
                    "items",
                    "must be a schema (an array of schemas is draft-07's tuple: use prefixItems)",
                )),
                _ => ("prefixItems", "items"),
            };
        let prefix = match schema.get(prefix) {
            Some(list) => self.subs(p, prefix, list)?,
            None => Vec::new(),
        };
        let rest = match schema.contains_key(rest) && (!prefix.is_empty() || rest == "items") {
            true => Some(self.sub(p, rest)?),
            false => None,
        };
        if !prefix.is_empty() || rest.is_some() {
            checks.push(Check::Items(prefix, rest));
        }
        self.counts(
            p,
            schema,
            checks,
            [("minItems", Count::MinItems), ("maxItems", Count::MaxItems)],
        )?;
        match schema.get("uniqueItems") {
            Some(Value::Bool(true)) => checks.push(Check::UniqueItems),
            None | Some(Value::Bool(false)) => {}
            Some(_) => return Err(self.bad(p, "uniqueItems", "must be a boolean")),
        }
        let min = self.count(p, schema, "minContains")?;
        let max = self.count(p, schema, "maxContains")?;
        if schema.contains_key("contains") {
            checks.push(Check::Contains(
                self.sub(p, "contains")?,
                min.unwrap_or(1),
                max,
            ));
        }
        Ok(())
    }

    fn object(
        &mut self,
        p: &str,
        schema: &Map<String, Value>,
        checks: &mut Vec<Check>,
    ) -> Result<(), String> {
        if let Some(required) = schema.get("required") {
            checks.push(Check::Required(self.names(p, "required", required)?));
        }
        let named = match schema.get("properties") {
            Some(map) => self.named_subs(p, "properties", map)?,
            None => Vec::new(),
        };
        let mut patterns = Vec::new();
        for (source, id) in match schema.get("patternProperties") {
            Some(map) => self.named_subs(p, "patternProperties", map)?,
            None => Vec::new(),
        } {
            let at = format!("{p}/patternProperties");
            patterns.push((self.pattern(&at, &source, &source)?, id));
        }
        let additional = match schema.contains_key("additionalProperties") {
            true => Some(self.sub(p, "additionalProperties")?),
            false => None,
        };
        if !named.is_empty() || !patterns.is_empty() || additional.is_some() {
            checks.push(Check::Properties(Properties {
                named,
                patterns,
                additional,
            }));
        }
        self.counts(
            p,
            schema,
            checks,
            [
                ("minProperties", Count::MinProperties),
                ("maxProperties", Count::MaxProperties),
            ],
        )?;
        if schema.contains_key("propertyNames") {
            checks.push(Check::PropertyNames(self.sub(p, "propertyNames")?));
        }
        // Draft-07's `dependencies` is both: an array of names, or a schema.
        let mut required = Vec::new();
        let mut schemas = Vec::new();
        for keyword in ["dependentRequired", "dependentSchemas", "dependencies"] {
            let Some(map) = schema.get(keyword) else {
                continue;
            };
            if keyword == "dependencies" && !self.draft7 {
                continue;
            }
            let map = map
                .as_object()
                .ok_or_else(|| self.bad(p, keyword, "must be an object"))?;
            for (name, dependency) in map {
                let at = format!("{p}/{}", escape(keyword));
                match (keyword, dependency) {
                    ("dependentSchemas", _)
                    | ("dependencies", Value::Object(_) | Value::Bool(_)) => {
                        schemas.push((name.clone(), self.sub(&at, name)?))
                    }
                    _ => required.push((name.clone(), self.names(&at, name, dependency)?)),
                }
            }
        }
        if !required.is_empty() {
            checks.push(Check::DependentRequired(required));
        }
        if !schemas.is_empty() {
            checks.push(Check::DependentSchemas(schemas));
        }
        Ok(())
    }

    /// The keywords that apply subschemas to the same value.
    fn in_place(
        &mut self,
        p: &str,
        schema: &Map<String, Value>,
        checks: &mut Vec<Check>,
    ) -> Result<(), String> {
        for (keyword, make) in [
            ("allOf", Check::AllOf as fn(Vec<Id>) -> Check),
            ("anyOf", Check::AnyOf),
        ] {
            if let Some(list) = schema.get(keyword) {
                checks.push(make(self.subs(p, keyword, list)?));
            }
        }
        if let Some(list) = schema.get("oneOf") {
            let one_of = self.subs(p, "oneOf", list)?;
            let tag = schema
                .get("discriminator")
                .and_then(|d| d.get("propertyName"))
                .and_then(Value::as_str);
            checks.push(match tag {
                Some(tag) => Check::Tagged(Tagged {
                    tag: tag.into(),
                    variants: self.variants(tag, &one_of),
                    one_of,
                }),
                None => Check::OneOf(one_of),
            });
        }
        if schema.contains_key("not") {
            checks.push(Check::Not(self.sub(p, "not")?));
        }
        if schema.contains_key("if") {
            let mut branch = |keyword| match schema.contains_key(keyword) {
                true => self.sub(p, keyword).map(Some),
                false => Ok(None),
            };
            let (then, otherwise) = (branch("then")?, branch("else")?);
            checks.push(Check::If(self.sub(p, "if")?, then, otherwise));
        }
        Ok(())
    }

    /// Each `oneOf` variant's tag: the `const` its `properties.<tag>` has (after a `$ref`, if it is one).
    fn variants(&self, tag: &str, one_of: &[Id]) -> Vec<(String, Id)> {
        let mut variants = Vec::new();
        for &id in one_of {
            let mut schema = self.document.pointer(&self.locations[id]);
            let reference = schema.and_then(|s| s.get("$ref")).and_then(Value::as_str);
            if let Some(at) = reference.and_then(|r| r.strip_prefix('#')) {
                schema = self.document.pointer(at);
            }
            let value = schema.and_then(|s| s.get("properties")?.get(tag)?.get("const")?.as_str());
            if let Some(value) = value {
                variants.push((value.to_string(), id));
            }
        }
        variants
    }

    fn pattern(
        &self,
        p: &str,
        keyword: &str,
        source: &str,
    ) -> Result<Box<dyn super::Pattern>, String> {
        self.patterns.compile(source).map_err(|e| {
            let first = e.lines().next().unwrap_or_default();
            self.bad(
                p,
                keyword,
                &format!("is not a valid regular expression ({first})"),
            )
        })
    }

    fn names(&self, p: &str, keyword: &str, names: &Value) -> Result<Vec<String>, String> {
        let names: Option<Vec<String>> = names
            .as_array()
            .and_then(|a| a.iter().map(|n| n.as_str().map(str::to_owned)).collect());
        names.ok_or_else(|| self.bad(p, keyword, "must be an array of strings"))
    }

    /// A non-negative integer keyword.
    fn count(
        &self,
        p: &str,
        schema: &Map<String, Value>,
        keyword: &str,
    ) -> Result<Option<u64>, String> {
        match schema.get(keyword) {
            None => Ok(None),
            Some(n) => match n.as_f64() {
                Some(x) if x >= 0.0 && x.fract() == 0.0 => Ok(Some(x as u64)),
                _ => Err(self.bad(p, keyword, "must be a non-negative integer")),
            },
        }
    }

    fn counts<const N: usize>(
        &self,
        p: &str,
        schema: &Map<String, Value>,
        checks: &mut Vec<Check>,
        keywords: [(&str, Count); N],
    ) -> Result<(), String> {
        for (keyword, count) in keywords {
            if let Some(limit) = self.count(p, schema, keyword)? {
                checks.push(Check::Count(count, limit));
            }
        }
        Ok(())
    }

    /// Refuses a cycle of references that never reaches into the value (`{"$ref": "#"}`): validating
    /// against it would never end.
    fn check_cycles(&self) -> Result<(), String> {
        // 0: not visited, 1: on the current path, 2: done.
        let mut state = vec![0u8; self.nodes.len()];
        let mut stack: Vec<(Id, usize)> = Vec::new();
        for start in 0..self.nodes.len() {
            if state[start] != 0 {
                continue;
            }
            stack.push((start, 0));
            state[start] = 1;
            while let Some(&(id, next)) = stack.last() {
                match in_place(&self.nodes[id]).nth(next) {
                    Some(child) => {
                        if let Some(top) = stack.last_mut() {
                            top.1 += 1;
                        }
                        match state[child] {
                            0 => {
                                state[child] = 1;
                                stack.push((child, 0));
                            }
                            1 => {
                                return Err(self.bad(
                                    &self.locations[id],
                                    "$ref",
                                    "leads back to itself without reaching into the value (an endless loop)",
                                ))
                            }
                            _ => {}
                        }
                    }
                    None => {
                        state[id] = 2;
                        stack.pop();
                    }
                }
            }
        }
        Ok(())
    }
}

fn node(checks: Vec<Check>) -> Node {
    Node {
        checks,
        collects: false,
    }
}

/// The subschemas a node applies to the value itself (not to its items or properties).
fn in_place(node: &Node) -> impl Iterator<Item = Id> + '_ {
    node.checks.iter().flat_map(|check| -> Vec<Id> {
        match check {
            Check::Ref(id) | Check::Not(id) => vec![*id],
            Check::AllOf(ids) | Check::AnyOf(ids) | Check::OneOf(ids) => ids.clone(),
            Check::Tagged(t) => t.one_of.clone(),
            Check::If(test, then, otherwise) => [Some(*test), *then, *otherwise]
                .into_iter()
                .flatten()
                .collect(),
            Check::DependentSchemas(subs) => subs.iter().map(|(_, id)| *id).collect(),
            _ => Vec::new(),
        }
    })
}

/// `reference` resolved against `base` (RFC 3986 §5.2): the absolute URI without its fragment, and the
/// fragment, percent-decoded.
fn resolve(base: &str, reference: &str) -> Result<(String, Option<String>), String> {
    let base = Iri::parse(base).map_err(|e| e.to_string())?;
    let reference =
        IriRef::parse(reference).map_err(|e| format!("is not a valid URI reference ({e})"))?;
    let uri = reference
        .resolve_against(&base)
        .map_err(|e| format!("cannot be resolved ({e})"))?;
    let fragment = uri
        .fragment()
        .map(|f| f.decode().to_string_lossy().into_owned());
    Ok((uri.strip_fragment().as_str().to_string(), fragment))
}

/// A JSON pointer token for `key` (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
