//! A value against a compiled `Schema`: the checks of each node in order, stopping at the first failure,
//! which names the path of the failing value, in one wording per kind of problem (as the message readers
//! word theirs): `arguments.path must be a string (got integer)`, `arguments.path is missing`,
//! `arguments.mode must be one of "r", "w" (got "x")`, `arguments.n must be >= 0 (got -1)`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;

use serde_json::{Map, Number, Value};

use super::{type_name, Check, Id, Limit, Properties, Schema, Tagged};

/// Where a value sits in the document, written out only when an error names it: formatting the path of
/// every property and item checked would cost more than checking them.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
    /// A property's name, checked by `propertyNames`.
    Name(&'a Path<'a>, &'a str),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root(name) => f.write_str(name),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
            Path::Name(parent, key) => write!(f, "{parent} (property name \"{key}\")"),
        }
    }
}

/// A bound, written as Rust's `{}` writes an `f64` (the shortest digits that read back the same, never
/// an exponent), from serde_json's float writer: Rust's own float formatting is not linked into the wasm
/// module for these messages alone.
struct Plain(f64);

impl fmt::Display for Plain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // "-1.5e-7", "25.0", "1e21": a sign, digits around a point, an exponent.
        let Some(number) = Number::from_f64(self.0) else {
            return f.write_str(match self.0 {
                x if x.is_nan() => "NaN",
                x if x > 0.0 => "inf",
                _ => "-inf",
            });
        };
        let text = number.to_string();
        let (sign, text) = match text.strip_prefix('-') {
            Some(rest) => ("-", rest),
            None => ("", text.as_str()),
        };
        let (mantissa, exponent) = match text.split_once('e') {
            Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
            None => (text, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all = format!("{whole}{fraction}");
        // The digits without the zeros at either end, and where the point goes among them.
        let first = all.find(|c| c != '0').unwrap_or(all.len());
        let digits = all[first..].trim_end_matches('0');
        let point = whole.len() as i64 + exponent - first as i64;
        let zeros = |n: i64| "0".repeat(n.max(0) as usize);
        f.write_str(sign)?;
        match point {
            _ if digits.is_empty() => f.write_str("0"),
            p if p <= 0 => write!(f, "0.{}{digits}", zeros(-p)),
            p if p as usize >= digits.len() => {
                write!(f, "{digits}{}", zeros(p - digits.len() as i64))
            }
            p => write!(f, "{}.{}", &digits[..p as usize], &digits[p as usize..]),
        }
    }
}

pub(super) fn validate(schema: &Schema, value: &Value, path: &str) -> Result<(), String> {
    let validation = Validation {
        schema,
        answered: RefCell::default(),
    };
    validation.check(schema.entry, value, &Path::Root(path))
}

/// What a check answers: nothing, or why the value fails.
type Answer = Result<(), String>;

/// One document checked against a schema, with what each `$ref` answered for it.
struct Validation<'s> {
    schema: &'s Schema,
    /// What a `$ref` answered, by the node it points to and the address of the array or object it was
    /// checked on. A schema that reaches one node by several ways (`anyOf` branches, two `allOf` mixins,
    /// `if`/`then`, each through `$ref`) checks each value against it once, not once per way, which grows as
    /// 2^depth in a recursive schema with a document the model wrote. Only arrays and objects: they stay in
    /// the document for the whole check (a `propertyNames` string is made for its check and dropped).
    answered: RefCell<HashMap<(Id, *const Value), Answer>>,
}

impl Deref for Validation<'_> {
    type Target = Schema;

    fn deref(&self) -> &Schema {
        self.schema
    }
}

impl Validation<'_> {
    fn check(&self, id: Id, value: &Value, path: &Path<'_>) -> Result<(), String> {
        for check in &self.nodes[id] {
            self.one(check, value, path)?;
        }
        Ok(())
    }

    /// A `$ref`: an array or object is checked against the node once, then answered as it was.
    fn reference(&self, id: Id, value: &Value, path: &Path<'_>) -> Answer {
        if !matches!(value, Value::Array(_) | Value::Object(_)) {
            return self.check(id, value, path);
        }
        let key = (id, value as *const Value);
        if let Some(answer) = self.answered.borrow().get(&key) {
            return answer.clone();
        }
        let answer = self.check(id, value, path);
        self.answered.borrow_mut().insert(key, answer.clone());
        answer
    }

    fn one(&self, check: &Check, value: &Value, path: &Path<'_>) -> Result<(), String> {
        match (check, value) {
            (Check::Never, _) => Err(format!("{path} is not allowed")),
            (Check::Ref(id), _) => self.reference(*id, value, path),
            (Check::Type(kinds), _) => check_type(kinds, value, path),
            (Check::Enum(Value::Array(options)), _) => {
                match options.iter().any(|o| equal(o, value)) {
                    true => Ok(()),
                    false => Err(format!(
                        "{path} must be one of {} (got {value})",
                        listed(options)
                    )),
                }
            }
            (Check::Const(constant), _) => match equal(constant, value) {
                true => Ok(()),
                false => Err(format!("{path} must be {constant} (got {value})")),
            },
            (Check::Limit(limit, bound), _) => check_limit(*limit, *bound, value, path),
            (Check::MultipleOf(divisor), Value::Number(n)) => match multiple_of(n, *divisor) {
                true => Ok(()),
                false => Err(format!(
                    "{path} must be a multiple of {} (got {n})",
                    Plain(*divisor)
                )),
            },
            (Check::Pattern(pattern, source), Value::String(s)) => match pattern.is_match(s) {
                true => Ok(()),
                false => Err(format!("{path} must match {source}")),
            },
            (Check::Items(prefix, rest), Value::Array(items)) => {
                self.items(prefix, *rest, items, path)
            }
            (Check::UniqueItems, Value::Array(items)) => unique(items, path),
            (Check::Contains(id, min, max), Value::Array(items)) => {
                self.contains(*id, *min, *max, items, path)
            }
            (Check::Required(names), Value::Object(_)) => {
                match names.iter().find(|n| value.get(n).is_none()) {
                    Some(name) => Err(format!("{} is missing", Path::Key(path, name))),
                    None => Ok(()),
                }
            }
            (Check::Properties(properties), Value::Object(object)) => {
                self.properties(properties, object, path)
            }
            (Check::PropertyNames(id), Value::Object(object)) => {
                object.keys().try_for_each(|key| {
                    self.check(*id, &Value::String(key.clone()), &Path::Name(path, key))
                })
            }
            (Check::DependentRequired(dependencies), Value::Object(_)) => {
                for (name, required) in dependencies.iter().filter(|(n, _)| value.get(n).is_some())
                {
                    if let Some(missing) = required.iter().find(|r| value.get(r).is_none()) {
                        return Err(format!(
                            "{} is missing (required with {})",
                            Path::Key(path, missing),
                            Path::Key(path, name)
                        ));
                    }
                }
                Ok(())
            }
            (Check::DependentSchemas(dependencies), Value::Object(_)) => {
                for (_, id) in dependencies.iter().filter(|(n, _)| value.get(n).is_some()) {
                    self.check(*id, value, path)?;
                }
                Ok(())
            }
            (Check::AllOf(all), _) => all.iter().try_for_each(|id| self.check(*id, value, path)),
            (Check::AnyOf(any), _) => self.any_of(any, value, path),
            (Check::OneOf(one), _) => self.one_of(one, value, path),
            (Check::Tagged(tagged), Value::Object(_)) => self.tagged(tagged, value, path),
            (Check::Tagged(tagged), _) => self.one_of(&tagged.one_of, value, path),
            (Check::Not(id), _) => match self.check(*id, value, path) {
                Ok(()) => Err(format!("{path} must not match the schema in \"not\"")),
                Err(_) => Ok(()),
            },
            (Check::If(test, then, otherwise), _) => {
                let branch = match self.check(*test, value, path) {
                    Ok(()) => then,
                    Err(_) => otherwise,
                };
                match branch {
                    Some(id) => self.check(*id, value, path),
                    None => Ok(()),
                }
            }
            // A keyword for another type of value.
            _ => Ok(()),
        }
    }

    fn is_false(&self, id: Id) -> bool {
        matches!(self.nodes[id].as_slice(), [Check::Never])
    }

    #[inline(never)]
    fn items(
        &self,
        prefix: &[Id],
        rest: Option<Id>,
        items: &[Value],
        path: &Path<'_>,
    ) -> Result<(), String> {
        for (i, item) in items.iter().enumerate() {
            let id = match prefix.get(i) {
                Some(id) => *id,
                None => match rest {
                    Some(id) if self.is_false(id) => {
                        return Err(format!(
                            "{path} must have at most {} items (got {})",
                            prefix.len(),
                            items.len()
                        ))
                    }
                    Some(id) => id,
                    None => break,
                },
            };
            self.check(id, item, &Path::Index(path, i))?;
        }
        Ok(())
    }

    #[inline(never)]
    fn contains(
        &self,
        id: Id,
        min: u64,
        max: Option<u64>,
        items: &[Value],
        path: &Path<'_>,
    ) -> Result<(), String> {
        let mut found = 0;
        for (i, item) in items.iter().enumerate() {
            if self.check(id, item, &Path::Index(path, i)).is_ok() {
                found += 1;
            }
        }
        if found < min {
            return Err(format!(
                "{path} must contain at least {min} item{} matching \"contains\" (got {found})",
                if min == 1 { "" } else { "s" }
            ));
        }
        match max {
            Some(max) if found > max => Err(format!(
                "{path} must contain at most {max} items matching \"contains\" (got {found})"
            )),
            _ => Ok(()),
        }
    }

    #[inline(never)]
    fn properties(
        &self,
        properties: &Properties,
        object: &Map<String, Value>,
        path: &Path<'_>,
    ) -> Result<(), String> {
        for (key, item) in object {
            let item_path = Path::Key(path, key);
            let mut matched = false;
            if let Some((_, id)) = properties.named.iter().find(|(name, _)| name == key) {
                self.check(*id, item, &item_path)?;
                matched = true;
            }
            for (pattern, id) in &properties.patterns {
                if pattern.is_match(key) {
                    self.check(*id, item, &item_path)?;
                    matched = true;
                }
            }
            match (matched, properties.additional) {
                (false, Some(id)) if self.is_false(id) => {
                    return Err(format!("{item_path} is not allowed"))
                }
                (false, Some(id)) => self.check(id, item, &item_path)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Each branch is validated once: re-validating to explain a failure doubles the work per nesting level.
    #[inline(never)]
    fn any_of(&self, any: &[Id], value: &Value, path: &Path<'_>) -> Result<(), String> {
        let mut failures = Vec::new();
        for id in any {
            match self.check(*id, value, path) {
                Ok(()) => return Ok(()),
                Err(failure) => failures.push(failure),
            }
        }
        Err(none_matched(failures, path, "anyOf"))
    }

    #[inline(never)]
    fn one_of(&self, one: &[Id], value: &Value, path: &Path<'_>) -> Result<(), String> {
        let mut failures = Vec::new();
        let mut matching = 0;
        for id in one {
            match self.check(*id, value, path) {
                Ok(()) => matching += 1,
                Err(failure) => failures.push(failure),
            }
        }
        match matching {
            0 => Err(none_matched(failures, path, "oneOf")),
            1 => Ok(()),
            n => Err(format!(
                "{path} must match exactly one schema of oneOf (got {n})"
            )),
        }
    }

    /// `oneOf` with a `discriminator` (OpenAPI's keyword): the tag picks the one variant to check, so an
    /// error names the field inside it instead of listing why every variant failed.
    #[inline(never)]
    fn tagged(&self, tagged: &Tagged, value: &Value, path: &Path<'_>) -> Result<(), String> {
        let tag = &tagged.tag;
        let at = Path::Key(path, tag);
        let given = match value.get(tag) {
            None => return Err(format!("{at} is missing")),
            Some(Value::String(given)) => given,
            Some(other) => return Err(format!("{at} must be a string (got {})", type_name(other))),
        };
        match tagged.variants.iter().find(|(name, _)| name == given) {
            Some((_, id)) => self.check(*id, value, path),
            None => {
                let names = tagged
                    .variants
                    .iter()
                    .map(|(n, _)| Value::String(n.clone()));
                let names: Vec<Value> = names.collect();
                Err(format!(
                    "{at} must be one of {} (got {})",
                    listed(&names),
                    Value::String(given.clone())
                ))
            }
        }
    }
}

/// The first branch's reason, kept short (a nested schema must not grow the message without end), and how
/// many others failed.
#[inline(never)]
fn none_matched(failures: Vec<String>, path: &Path<'_>, keyword: &str) -> String {
    let first: String = failures
        .first()
        .map_or("", |f| f)
        .chars()
        .take(300)
        .collect();
    let others = match failures.len() {
        0 | 1 => String::new(),
        n => format!("; and {} more", n - 1),
    };
    format!("{path} must match a schema of {keyword} (none does: {first}{others})")
}

/// Values as a list: `"r", "w"`; past the first 20, how many there are in all (the model reads this text,
/// and an `enum` may hold thousands).
fn listed(values: &[Value]) -> String {
    const SHOWN: usize = 20;
    let mut written: Vec<String> = values.iter().take(SHOWN).map(Value::to_string).collect();
    if values.len() > SHOWN {
        written.push(format!("… ({} in all)", values.len()));
    }
    written.join(", ")
}

/// A JSON type as a phrase: `a string`, `an integer`, `null`.
fn a(kind: &str) -> &'static str {
    match kind {
        "null" => "null",
        "boolean" => "a boolean",
        "integer" => "an integer",
        "number" => "a number",
        "string" => "a string",
        "array" => "an array",
        _ => "an object",
    }
}

#[inline(never)]
fn check_type(kinds: &[&str], value: &Value, path: &Path<'_>) -> Result<(), String> {
    let got = type_name(value);
    match kinds
        .iter()
        .any(|k| *k == got || (*k == "number" && got == "integer"))
    {
        true => Ok(()),
        false => {
            let expected: Vec<&str> = kinds.iter().map(|kind| a(kind)).collect();
            Err(format!(
                "{path} must be {} (got {got})",
                expected.join(" or ")
            ))
        }
    }
}

#[inline(never)]
fn check_limit(limit: Limit, bound: f64, value: &Value, path: &Path<'_>) -> Result<(), String> {
    let (size, what) = match (limit, value) {
        (
            Limit::Minimum | Limit::Maximum | Limit::ExclusiveMinimum | Limit::ExclusiveMaximum,
            Value::Number(n),
        ) => (n.as_f64().unwrap_or(f64::NAN), ""),
        (Limit::MinLength | Limit::MaxLength, Value::String(s)) => {
            (s.chars().count() as f64, "characters long")
        }
        (Limit::MinItems | Limit::MaxItems, Value::Array(a)) => (a.len() as f64, "items"),
        (Limit::MinProperties | Limit::MaxProperties, Value::Object(o)) => {
            (o.len() as f64, "properties")
        }
        _ => return Ok(()),
    };
    let (holds, relation) = match limit {
        Limit::Minimum => (size >= bound, ">="),
        Limit::Maximum => (size <= bound, "<="),
        Limit::ExclusiveMinimum => (size > bound, ">"),
        Limit::ExclusiveMaximum => (size < bound, "<"),
        Limit::MinLength | Limit::MinItems | Limit::MinProperties => (size >= bound, "at least"),
        _ => (size <= bound, "at most"),
    };
    let (bound, size) = (Plain(bound), Plain(size));
    match (holds, what) {
        (true, _) => Ok(()),
        (false, "") => Err(format!("{path} must be {relation} {bound} (got {value})")),
        (false, "characters long") => Err(format!(
            "{path} must be {relation} {bound} {what} (got {size})"
        )),
        (false, _) => Err(format!(
            "{path} must have {relation} {bound} {what} (got {size})"
        )),
    }
}

/// Exact for integers; for fractions, the quotient is an integer up to a few units of float rounding
/// (0.0075 / 0.0001 is 74.99999999999999 in binary floating point).
#[inline(never)]
fn multiple_of(n: &Number, divisor: f64) -> bool {
    // An integral divisor (it converts back unchanged) and an integer: exactly.
    let whole = divisor as i64;
    if let (Some(x), true) = (n.as_i64(), whole as f64 == divisor) {
        return x % whole == 0;
    }
    let quotient = n.as_f64().unwrap_or(f64::NAN) / divisor;
    quotient.is_finite()
        && (quotient - quotient.round()).abs() <= quotient.abs() * 4.0 * f64::EPSILON
}

#[inline(never)]
fn unique(items: &[Value], path: &Path<'_>) -> Result<(), String> {
    for (j, item) in items.iter().enumerate() {
        if let Some(i) = items[..j].iter().position(|earlier| equal(earlier, item)) {
            return Err(format!(
                "{path} must have unique items ({} and {} are equal)",
                Path::Index(path, i),
                Path::Index(path, j)
            ));
        }
    }
    Ok(())
}

/// JSON equality: numbers by value (`1` equals `1.0`), objects regardless of key order.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y || x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| b.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use proptest::prelude::*;

    use super::Plain;

    #[test]
    fn bounds_are_written_as_rust_writes_them() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            10.0,
            1e21,
            1e-7,
            1.5e300,
            -2.5e-10,
            123.456,
            1e15,
            1e16,
            0.1,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            9007199254740993.0,
        ] {
            assert_eq!(Plain(x).to_string(), format!("{x}"), "{x:e}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20000))]

        /// Any float reads back as itself, in plain decimals, with Rust's digits but perhaps the last
        /// (where two shortest texts read back the same, the writers may pick either).
        #[test]
        fn any_float_is_written_plainly_and_reads_back(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            let (ours, rusts) = (Plain(x).to_string(), format!("{x}"));
            if x.is_finite() {
                prop_assert_eq!(ours.parse::<f64>().ok(), Some(x), "{}", ours);
            }
            prop_assert_eq!(ours.len(), rusts.len(), "{} {}", ours, rusts);
            prop_assert_eq!(&ours[..ours.len() - 1], &rusts[..rusts.len() - 1]);
        }
    }
}
