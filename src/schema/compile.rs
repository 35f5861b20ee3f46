//! From a schema document to `Schema`'s nodes, once, at `register`: every keyword is checked (a malformed
//! one is an error naming it), every `$ref` is resolved to the node it reaches, and every pattern is
//! compiled. Two passes: a walk of the document finds each subschema's base URI and the `$id`s and
//! `$anchor`s that references can name; then nodes are compiled from the entry, one subschema at a time,
//! each reference queueing its target (so a recursive schema compiles to a cycle of ids).
//!
//! Subschemas are known by address (they all live in the one document); the path an error names is only
//! looked for when there is an error.

use std::fmt::Write;
use std::ptr;

use serde_json::Value;

use super::{type_name, Check, Id, Limit, Node, Pattern, Properties, Schema, Tagged};

/// The base URI of a document without `$id`: RFC 3986 needs one to resolve relative references against.
const DEFAULT_BASE: &str = "tiny-pi:/parameters.json";
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
const DRAFT_07: &str = "http://json-schema.org/draft-07/schema";

const TYPES: [&str; 7] = [
    "null", "boolean", "integer", "number", "string", "array", "object",
];

/// The bounds, in the order they are checked; all but the first four are counts.
const LIMITS: [(&str, Limit); 10] = [
    ("minimum", Limit::Minimum),
    ("maximum", Limit::Maximum),
    ("exclusiveMinimum", Limit::ExclusiveMinimum),
    ("exclusiveMaximum", Limit::ExclusiveMaximum),
    ("minLength", Limit::MinLength),
    ("maxLength", Limit::MaxLength),
    ("minItems", Limit::MinItems),
    ("maxItems", Limit::MaxItems),
    ("minProperties", Limit::MinProperties),
    ("maxProperties", Limit::MaxProperties),
];

/// A base URI, by its index in `Compiler::uris`.
type Base = usize;

struct Compiler<'a> {
    document: &'a Value,
    /// How errors name the document's root (`tool.parameters`).
    name: &'a str,
    /// The first problem found. Recorded instead of returned, so that compiling goes on with a stand-in
    /// and no early return has to drop what was built (that code weighed as much as the rest).
    error: Option<String>,
    /// `$schema` is draft-07: `items` may be a tuple, `additionalItems` and `dependencies` apply, and
    /// `$ref` replaces its siblings.
    draft7: bool,
    /// The base URIs in effect somewhere (the first is `DEFAULT_BASE`).
    uris: Vec<String>,
    /// Each schema object the walk found, with the base URI in effect there.
    bases: Vec<(&'a Value, Base)>,
    /// What a reference can name: each `$id` (absolute, no fragment) and `$anchor` (`uri#name`).
    targets: Vec<(String, &'a Value)>,
    /// Each node's schema and base URI, by id; those past `nodes.len()` are queued.
    queue: Vec<(&'a Value, Base)>,
    nodes: Vec<Node>,
}

pub(super) fn compile(document: &Value, entry: &Value, name: &str) -> Result<Schema, String> {
    let mut c = Compiler {
        document,
        name,
        error: None,
        draft7: false,
        uris: vec![DEFAULT_BASE.into()],
        bases: Vec::new(),
        targets: vec![(DEFAULT_BASE.into(), document)],
        queue: Vec::new(),
        nodes: Vec::new(),
    };
    c.draft7 = c.dialect(document) == Some(true);
    c.walk(document, 0);
    let entry = c.node(entry, 0);
    while c.nodes.len() < c.queue.len() && c.error.is_none() {
        let node = c.compile_node(c.nodes.len());
        c.nodes.push(node);
    }
    // Only once every node is compiled (a recorded problem stops compiling).
    if c.error.is_none() {
        let mut state = vec![0; c.nodes.len()];
        if let Some(id) = (0..c.nodes.len()).find_map(|id| c.cycle(id, &mut state)) {
            let problem = "leads back to itself without reaching into the value (an endless loop)";
            c.fail(c.queue[id].0, "", problem);
        }
    }
    match c.error {
        Some(error) => Err(error),
        None => Ok(Schema {
            nodes: c.nodes,
            entry,
        }),
    }
}

impl<'a> Compiler<'a> {
    /// Records `<path>.<keyword> <problem>` (the first only), the path being where `at` sits.
    #[cold]
    #[inline(never)]
    fn fail(&mut self, at: &Value, keyword: &str, problem: &str) {
        fn find(value: &Value, target: &Value, path: &mut String) -> bool {
            let len = path.len();
            let found = ptr::eq(value, target)
                || match value {
                    Value::Object(_) => entries(value).into_iter().any(|(key, v)| {
                        path.truncate(len);
                        let _ = write!(path, ".{key}");
                        find(v, target, path)
                    }),
                    Value::Array(items) => items.iter().enumerate().any(|(i, v)| {
                        path.truncate(len);
                        let _ = write!(path, "[{i}]");
                        find(v, target, path)
                    }),
                    _ => false,
                };
            if !found {
                path.truncate(len);
            }
            found
        }
        if self.error.is_none() {
            let mut path = self.name.to_string();
            find(self.document, at, &mut path);
            let gap = if keyword.is_empty() { "" } else { "." };
            self.error = Some(format!("{path}{gap}{keyword} {problem}"));
        }
    }

    /// The `$schema` of `schema`: `Some(true)` for draft-07, `Some(false)` for 2020-12, `None` if absent;
    /// any other dialect is refused.
    fn dialect(&mut self, schema: &Value) -> Option<bool> {
        let dialect = schema.get("$schema")?;
        let uri = dialect.as_str().unwrap_or_default();
        match uri.strip_suffix('#').unwrap_or(uri) {
            DRAFT_2020_12 => Some(false),
            DRAFT_07 => Some(true),
            _ => {
                let problem = format!("{dialect} is not supported (supported: {DRAFT_2020_12}, {DRAFT_07}, or no $schema)");
                self.fail(schema, "$schema", &problem);
                None
            }
        }
    }

    /// A string keyword, `None` if absent or not a string (which is recorded).
    #[inline(never)]
    fn string(&mut self, schema: &'a Value, keyword: &str) -> Option<&'a str> {
        let value = schema.get(keyword)?;
        if !value.is_string() {
            self.fail(schema, keyword, "must be a string");
        }
        value.as_str()
    }

    /// Finds the base URI of every schema object and what references can name. Every object is looked
    /// at but those of `enum` and `const` (which are values, not schemas): a map of schemas such as
    /// `properties` may be taken for a schema here, which only records a base nothing asks for (a
    /// property named `$id` or `$anchor` has an object for a value, and only strings count).
    fn walk(&mut self, value: &'a Value, mut base: Base) {
        match value {
            Value::Object(_) => {}
            Value::Array(items) => return items.iter().for_each(|v| self.walk(v, base)),
            _ => return,
        }
        if self
            .dialect(value)
            .is_some_and(|draft7| draft7 != self.draft7)
        {
            self.fail(value, "$schema", "differs from the root's $schema");
        }
        // Draft-07: `$ref` replaces its siblings, `$id` included.
        if self.draft7 && value.get("$ref").is_some() {
            self.bases.push((value, base));
            return;
        }
        if let Some(id) = value.get("$id").and_then(Value::as_str) {
            let (uri, fragment) = resolve(&self.uris[base], id);
            match fragment.is_empty() {
                true => {
                    self.targets.push((uri.clone(), value));
                    self.uris.push(uri);
                    base = self.uris.len() - 1;
                }
                // Draft-07's `"$id": "#name"` is an anchor.
                false if self.draft7 && id.starts_with('#') => self
                    .targets
                    .push((format!("{}{id}", self.uris[base]), value)),
                false => self.fail(
                    value,
                    "$id",
                    "must not have a fragment (name a subschema with $anchor)",
                ),
            }
        }
        for keyword in ["$anchor", "$dynamicAnchor"] {
            if let Some(anchor) = value.get(keyword).and_then(Value::as_str) {
                self.targets
                    .push((format!("{}#{anchor}", self.uris[base]), value));
            }
        }
        self.bases.push((value, base));
        for (key, sub) in entries(value) {
            if key != "enum" && key != "const" {
                self.walk(sub, base);
            }
        }
    }

    /// The node for `schema`, queued for compiling if new. `base` is for a schema the walk did not reach
    /// (a reference may point anywhere in the document).
    fn node(&mut self, schema: &'a Value, base: Base) -> Id {
        if let Some(id) = self.queue.iter().position(|(s, _)| ptr::eq(*s, schema)) {
            return id;
        }
        let base = match self.bases.iter().find(|(s, _)| ptr::eq(*s, schema)) {
            Some((_, walked)) => *walked,
            None => base,
        };
        self.queue.push((schema, base));
        self.queue.len() - 1
    }

    /// The node `schema`'s `$ref` reaches (the `true` schema's if it reaches none, which is recorded).
    fn reference(&mut self, schema: &'a Value, base: Base, reference: &str) -> Id {
        let (resource, fragment) = resolve(&self.uris[base], reference);
        let named = |name: &str| {
            self.targets
                .iter()
                .find(|(uri, _)| uri == name)
                .map(|(_, s)| *s)
        };
        let target = match named(&resource) {
            Some(root) if fragment.is_empty() || fragment.starts_with('/') => {
                pointer(root, &fragment)
            }
            Some(_) => named(&format!("{resource}#{fragment}")),
            None => Some(&TRUE),
        };
        let problem = match target {
            Some(target) if !ptr::eq(target, &TRUE) => {
                self.uris.push(resource);
                return self.node(target, self.uris.len() - 1);
            }
            Some(_) => "is not in this schema (remote references are not supported; use $defs)",
            None => "points to nothing in this schema",
        };
        self.fail(schema, "$ref", &format!("\"{reference}\" {problem}"));
        self.node(&TRUE, 0)
    }

    fn compile_node(&mut self, id: Id) -> Node {
        let (schema, base) = self.queue[id];
        match schema {
            Value::Bool(true) => return Node::new(),
            Value::Bool(false) => return vec![Check::Never],
            Value::Object(_) => {}
            other => {
                let problem = format!(
                    "must be a JSON Schema, an object or a boolean (got {})",
                    type_name(other)
                );
                self.fail(schema, "", &problem);
                return Node::new();
            }
        };
        // `unevaluated*` would need every keyword to record what it evaluated: its size in the wasm module
        // was not worth it for tool arguments (`additionalProperties`/`items` say the same in one schema).
        for (keyword, instead) in [
            ("$dynamicRef", "$ref"),
            ("$recursiveRef", "$ref"),
            ("unevaluatedProperties", "additionalProperties"),
            ("unevaluatedItems", "items"),
        ] {
            if schema.get(keyword).is_some() {
                self.fail(
                    schema,
                    keyword,
                    &format!("is not supported (use {instead})"),
                );
            }
        }
        for keyword in ["$id", "$anchor", "$dynamicAnchor"] {
            self.string(schema, keyword);
        }
        let mut checks = Vec::new();
        if let Some(reference) = self.string(schema, "$ref") {
            checks.push(Check::Ref(self.reference(schema, base, reference)));
            if self.draft7 {
                return checks;
            }
        }
        let mut keywords = Keywords {
            compiler: self,
            schema,
            base,
            checks,
        };
        keywords.generic();
        keywords.array();
        keywords.object();
        keywords.in_place();
        keywords.checks
    }

    /// A node on a cycle of subschemas applied to the same value (`{"$ref": "#"}`), against which
    /// validating would never end. `state`: 0 not visited, 1 being visited, 2 done.
    fn cycle(&self, id: Id, state: &mut [u8]) -> Option<Id> {
        match state[id] {
            1 => return Some(id),
            2 => return None,
            _ => state[id] = 1,
        }
        for check in &self.nodes[id] {
            let mut visit = |next: &Id| self.cycle(*next, state);
            let found = match check {
                Check::Ref(next) | Check::Not(next) => visit(next),
                Check::AllOf(all) | Check::AnyOf(all) | Check::OneOf(all) => {
                    all.iter().find_map(visit)
                }
                Check::Tagged(t) => t.one_of.iter().find_map(visit),
                Check::If(test, then, otherwise) => [Some(test), then.as_ref(), otherwise.as_ref()]
                    .into_iter()
                    .flatten()
                    .find_map(visit),
                Check::DependentSchemas(subs) => subs.iter().find_map(|(_, next)| visit(next)),
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        state[id] = 2;
        None
    }
}

/// What an unresolvable reference compiles to, the problem being recorded.
static TRUE: Value = Value::Bool(true);

/// The keywords of one schema object, being compiled into `checks` (in the order they are checked).
struct Keywords<'c, 'a> {
    compiler: &'c mut Compiler<'a>,
    schema: &'a Value,
    base: Base,
    checks: Vec<Check>,
}

impl<'a> Keywords<'_, 'a> {
    /// Not inlined: each lookup is a search of the map, and there are some forty.
    #[inline(never)]
    fn get(&self, keyword: &str) -> Option<&'a Value> {
        self.schema.get(keyword)
    }

    /// Not inlined: a `Check` is large, and there are some thirty places that add one.
    #[inline(never)]
    fn add(&mut self, check: Check) {
        self.checks.push(check);
    }

    #[inline(never)]
    fn fail(&mut self, keyword: &str, problem: &str) {
        self.compiler.fail(self.schema, keyword, problem);
    }

    /// The node for the subschema at `keyword`.
    #[inline(never)]
    fn sub(&mut self, keyword: &str) -> Option<Id> {
        let sub = self.get(keyword)?;
        Some(self.compiler.node(sub, self.base))
    }

    /// The nodes for the array of subschemas at `keyword` (`allOf`, `prefixItems`).
    #[inline(never)]
    fn subs(&mut self, keyword: &str) -> Option<Vec<Id>> {
        match self.get(keyword)? {
            Value::Array(list) if !list.is_empty() => Some(
                list.iter()
                    .map(|s| self.compiler.node(s, self.base))
                    .collect(),
            ),
            _ => {
                self.fail(keyword, "must be a non-empty array of schemas");
                None
            }
        }
    }

    /// The nodes for the object of subschemas at `keyword` (`properties`), by name.
    #[inline(never)]
    fn named(&mut self, keyword: &str) -> Vec<(&'a String, Id)> {
        match self.get(keyword) {
            None => Vec::new(),
            Some(map @ Value::Object(_)) => entries(map)
                .into_iter()
                .map(|(name, s)| (name, self.compiler.node(s, self.base)))
                .collect(),
            Some(_) => {
                self.fail(keyword, "must be an object of schemas");
                Vec::new()
            }
        }
    }

    #[inline(never)]
    fn number(&mut self, keyword: &str) -> Option<f64> {
        let number = self.get(keyword)?.as_f64();
        if number.is_none() {
            self.fail(keyword, "must be a number");
        }
        number
    }

    /// A non-negative integer keyword.
    #[inline(never)]
    fn count(&mut self, keyword: &str) -> Option<u64> {
        let count = self
            .get(keyword)?
            .as_f64()
            .filter(|x| *x >= 0.0 && x.fract() == 0.0);
        if count.is_none() {
            self.fail(keyword, "must be a non-negative integer");
        }
        count.map(|x| x as u64)
    }

    #[inline(never)]
    fn limit(&mut self, keyword: &str, limit: Limit) {
        let bound = match limit {
            Limit::Minimum | Limit::Maximum | Limit::ExclusiveMinimum | Limit::ExclusiveMaximum => {
                self.number(keyword)
            }
            _ => self.count(keyword).map(|n| n as f64),
        };
        if let Some(bound) = bound {
            self.add(Check::Limit(limit, bound));
        }
    }

    fn names(&mut self, keyword: &str, names: &Value) -> Vec<String> {
        let names: Option<Vec<String>> = names
            .as_array()
            .and_then(|a| a.iter().map(|n| n.as_str().map(str::to_owned)).collect());
        if names.is_none() {
            self.fail(keyword, "must be an array of strings");
        }
        names.unwrap_or_default()
    }

    /// An ECMA-262 pattern, compiled; a pattern refused is recorded under `keyword` (for
    /// `patternProperties`, with the pattern: `patternProperties["^x-(?=a)"]`).
    fn pattern(&mut self, keyword: &str, source: &str) -> Option<Pattern> {
        match Pattern::new(source) {
            Ok(pattern) => Some(pattern),
            Err(error) => {
                let keyword = match keyword {
                    "pattern" => keyword.to_string(),
                    _ => format!("{keyword}[{}]", Value::String(source.into())),
                };
                self.fail(&keyword, &error.to_string());
                None
            }
        }
    }

    /// `type`, `enum`, `const`, and the keywords for numbers and strings.
    fn generic(&mut self) {
        if let Some(kind) = self.get("type") {
            let one = |name: &Value| match name.as_str()? {
                "null" => Some("null"),
                "boolean" => Some("boolean"),
                "integer" => Some("integer"),
                "number" => Some("number"),
                "string" => Some("string"),
                "array" => Some("array"),
                "object" => Some("object"),
                _ => None,
            };
            let kinds: Option<Vec<&str>> = match kind {
                Value::Array(names) => names.iter().map(one).collect(),
                name => one(name).map(|k| vec![k]),
            };
            match kinds {
                Some(kinds) => self.add(Check::Type(kinds)),
                None => {
                    let names: Vec<String> = TYPES.iter().map(|t| format!("\"{t}\"")).collect();
                    let problem = format!(
                        "must be one of {}, or an array of them (got {kind})",
                        names.join(", ")
                    );
                    self.fail("type", &problem);
                }
            }
        }
        match self.get("enum") {
            Some(options @ Value::Array(_)) => self.add(Check::Enum(options.clone())),
            Some(_) => self.fail("enum", "must be an array"),
            None => {}
        }
        if let Some(constant) = self.get("const") {
            self.add(Check::Const(constant.clone()));
        }
        for (keyword, limit) in LIMITS {
            self.limit(keyword, limit);
        }
        match self.number("multipleOf") {
            Some(divisor) if divisor > 0.0 => self.add(Check::MultipleOf(divisor)),
            Some(_) => self.fail("multipleOf", "must be greater than 0"),
            None => {}
        }
        if let Some(source) = self.compiler.string(self.schema, "pattern") {
            if let Some(pattern) = self.pattern("pattern", source) {
                self.add(Check::Pattern(pattern, source.into()));
            }
        }
    }

    fn array(&mut self) {
        // Draft-07 wrote a tuple as an `items` array, and the schema for the rest as `additionalItems`.
        let (prefix, rest) = match (self.compiler.draft7, self.get("items")) {
            (true, Some(Value::Array(_))) => ("items", "additionalItems"),
            (false, Some(Value::Array(_))) => {
                self.fail(
                    "items",
                    "must be a schema (an array of schemas is draft-07's tuple: use prefixItems)",
                );
                return;
            }
            _ => ("prefixItems", "items"),
        };
        let prefix = self.subs(prefix).unwrap_or_default();
        // `additionalItems` applies only after a tuple.
        let rest = match prefix.is_empty() && rest == "additionalItems" {
            true => None,
            false => self.sub(rest),
        };
        if !prefix.is_empty() || rest.is_some() {
            self.add(Check::Items(prefix, rest));
        }
        match self.get("uniqueItems") {
            Some(Value::Bool(true)) => self.add(Check::UniqueItems),
            None | Some(Value::Bool(false)) => {}
            Some(_) => self.fail("uniqueItems", "must be a boolean"),
        }
        let (min, max) = (self.count("minContains"), self.count("maxContains"));
        if let Some(contains) = self.sub("contains") {
            self.add(Check::Contains(contains, min.unwrap_or(1), max));
        }
    }

    fn object(&mut self) {
        if let Some(required) = self.get("required") {
            let names = self.names("required", required);
            self.add(Check::Required(names));
        }
        let named = self.named("properties");
        let mut patterns = Vec::new();
        for (source, id) in self.named("patternProperties") {
            patterns.extend(self.pattern("patternProperties", source).map(|p| (p, id)));
        }
        let additional = self.sub("additionalProperties");
        if !named.is_empty() || !patterns.is_empty() || additional.is_some() {
            self.add(Check::Properties(Properties {
                named: named.into_iter().map(|(n, id)| (n.clone(), id)).collect(),
                patterns,
                additional,
            }));
        }
        if let Some(names) = self.sub("propertyNames") {
            self.add(Check::PropertyNames(names));
        }
        // Draft-07's `dependencies` is either: an array of names, or a schema.
        let mut required = Vec::new();
        let mut schemas = Vec::new();
        let keywords: &[&str] = match self.compiler.draft7 {
            true => &["dependentRequired", "dependentSchemas", "dependencies"],
            false => &["dependentRequired", "dependentSchemas"],
        };
        for &keyword in keywords {
            let map = match self.get(keyword) {
                None => continue,
                Some(map @ Value::Object(_)) => map,
                Some(_) => {
                    self.fail(keyword, "must be an object");
                    continue;
                }
            };
            for (name, dependency) in entries(map) {
                match (keyword, dependency) {
                    ("dependentRequired", _) | ("dependencies", Value::Array(_)) => {
                        let names = self.names(keyword, dependency);
                        required.push((name.clone(), names));
                    }
                    _ => schemas.push((name.clone(), self.compiler.node(dependency, self.base))),
                }
            }
        }
        if !required.is_empty() {
            self.add(Check::DependentRequired(required));
        }
        if !schemas.is_empty() {
            self.add(Check::DependentSchemas(schemas));
        }
    }

    /// The keywords that apply subschemas to the value itself.
    fn in_place(&mut self) {
        if let Some(all) = self.subs("allOf") {
            self.add(Check::AllOf(all));
        }
        if let Some(any) = self.subs("anyOf") {
            self.add(Check::AnyOf(any));
        }
        if let Some(one_of) = self.subs("oneOf") {
            let tag = self
                .get("discriminator")
                .and_then(|d| d.get("propertyName"));
            let check = match tag.and_then(Value::as_str) {
                Some(tag) => Check::Tagged(Tagged {
                    tag: tag.into(),
                    variants: self.variants(tag, &one_of),
                    one_of,
                }),
                None => Check::OneOf(one_of),
            };
            self.add(check);
        }
        if let Some(not) = self.sub("not") {
            self.add(Check::Not(not));
        }
        if let Some(test) = self.sub("if") {
            let (then, otherwise) = (self.sub("then"), self.sub("else"));
            self.add(Check::If(test, then, otherwise));
        }
    }

    /// Each `oneOf` variant's tag: the `const` of its `properties.<tag>`, after a local `$ref`.
    fn variants(&self, tag: &str, one_of: &[Id]) -> Vec<(String, Id)> {
        let mut variants = Vec::new();
        for &id in one_of {
            let mut schema = self.compiler.queue[id].0;
            if let Some(at) = schema
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix('#'))
            {
                schema = pointer(self.compiler.document, at).unwrap_or(schema);
            }
            let value = schema
                .get("properties")
                .and_then(|p| p.get(tag)?.get("const")?.as_str());
            if let Some(value) = value {
                variants.push((value.to_string(), id));
            }
        }
        variants
    }
}

/// `reference` resolved against the absolute URI `base` (RFC 3986 §5.2), without its fragment, and the
/// fragment, percent-decoded. Written out because the URI crates parse and check every component, which
/// costs more in the wasm module than the rest of the validator. References are not validated, and a
/// network-path (`//host`) or query-only (`?q`) reference, never local, resolves only approximately.
fn resolve(base: &str, reference: &str) -> (String, String) {
    let (reference, fragment) = reference.split_once('#').unwrap_or((reference, ""));
    let fragment = percent_decode(fragment);
    if reference.is_empty() {
        return (base.to_string(), fragment);
    }
    if scheme(reference).is_some() {
        return (reference.to_string(), fragment);
    }
    // `scheme:` or `scheme://authority`: what the reference keeps of the base.
    let origin = scheme(base).map_or(0, |colon| {
        let rest = &base[colon + 1..];
        match rest.strip_prefix("//") {
            Some(authority) => colon + 3 + authority.find('/').unwrap_or(authority.len()),
            None => colon + 1,
        }
    });
    let (origin, base_path) = base.split_at(origin);
    let directory = match reference.starts_with('/') {
        true => "",
        false => &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)],
    };
    let path = format!("{directory}{reference}");
    // Dot segments (RFC 3986 §5.2.4); a path that ends in one ends in "/".
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "." => {}
            ".." if segments.len() > 1 => drop(segments.pop()),
            ".." => {}
            segment => segments.push(segment),
        }
    }
    if path.ends_with("/.") || path.ends_with("/..") {
        segments.push("");
    }
    let slash = match origin.ends_with(':') || path.starts_with('/') {
        true => "",
        false => "/",
    };
    (format!("{origin}{slash}{}", segments.join("/")), fragment)
}

/// Where the scheme of `uri` ends (its `:`), if it has one.
fn scheme(uri: &str) -> Option<usize> {
    let colon = uri.find(':')?;
    let name = &uri[..colon];
    (!name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)))
    .then_some(colon)
}

/// The value the JSON pointer (RFC 6901) names inside `at`.
pub(super) fn pointer<'v>(mut at: &'v Value, pointer: &str) -> Option<&'v Value> {
    for token in pointer.split('/').skip(1) {
        let mut key = String::new();
        let mut rest = token;
        while let Some(tilde) = rest.find('~') {
            key.push_str(&rest[..tilde]);
            key.push(if rest[tilde + 1..].starts_with('1') {
                '/'
            } else {
                '~'
            });
            rest = rest.get(tilde + 2..).unwrap_or_default();
        }
        key.push_str(rest);
        at = match at {
            Value::Object(_) => at.get(&key)?,
            Value::Array(items) => items.get(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// The properties of an object, in order. Not inlined: each walk of a map is sizable code.
#[inline(never)]
fn entries(value: &Value) -> Vec<(&String, &Value)> {
    value
        .as_object()
        .map_or_else(Vec::new, |map| map.iter().collect())
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}
